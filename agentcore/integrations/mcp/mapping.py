"""What the model sees of an MCP server's tools and their results: pure
functions from the SDK's types to agentcore's.

Names keep to the characters the provider APIs take (:func:`tool_name`);
definitions keep the server's input schema (:func:`tool_definition`).
Results: the text of a result's text blocks; its structured content as JSON
text instead when the server sends one (its text blocks then repeat it, as
the protocol recommends); images and binary resources of the types every
adapter takes (:data:`FILE_TYPES`: JPEG, PNG, GIF, WebP, PDF) as files;
audio, resource links, text resources and other types described in text
(:func:`result_content`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import PurePosixPath
from urllib.parse import urlsplit

import mcp.types as mcp_types

from agentcore.files import File
from agentcore.providers.attachments import IMAGE_TYPES, PDF
from agentcore.types import TOOL_NAME_CHARACTERS, TOOL_NAME_LENGTH, ToolDefinition

__all__ = ["FILE_TYPES", "block_file", "describe_block", "result_content", "tool_definition", "tool_name"]

_INVALID_NAME_CHARACTER = re.compile(f"[^{TOOL_NAME_CHARACTERS}]")


def tool_name(prefix: str, name: str) -> str:
    """The name the model sees for the server's tool ``name``: ``prefix`` +
    ``name`` with every character other than a letter, digit, ``_`` or ``-``
    replaced by ``_``, cut to 64 characters (the rule of the Anthropic and
    OpenAI APIs; MCP names may also hold ``.``, see
    https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names)."""
    return (prefix + _INVALID_NAME_CHARACTER.sub("_", name))[:TOOL_NAME_LENGTH]


def tool_definition(tool: mcp_types.Tool, name: str) -> ToolDefinition:
    """The :class:`ToolDefinition` of an MCP tool, named ``name`` for the model.

    The description is the tool's ``description`` (its ``title`` when it has
    none); the input schema is its ``inputSchema`` as JSON text, unchanged
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool).
    """
    description = tool.description or tool.title or ""
    return ToolDefinition(name, description, json.dumps(tool.input_schema, ensure_ascii=False))


FILE_TYPES = frozenset((*IMAGE_TYPES, PDF))
"""The media types of image blocks and binary embedded resources that go to
the model as files: those every adapter takes in a tool result
(``docs/files.md``). Other binary blocks are described in text."""


def result_content(result: mcp_types.CallToolResult) -> tuple[str, tuple[File, ...]]:
    """The text and the files the model gets for a tool result (``isError`` aside).

    Text blocks are joined with newlines. When the result has structured
    content, that content as JSON text takes the place of the text blocks,
    which the protocol says should repeat it
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#structured-content).
    An image or binary resource of a type in :data:`FILE_TYPES` is a file
    (:func:`block_file`); every other block is a line of text
    (:func:`describe_block`).
    """
    parts: list[str] = []
    files: list[File] = []
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            if result.structured_content is None:
                parts.append(block.text)
            continue
        file = block_file(block)
        if file is None:
            parts.append(describe_block(block))
        else:
            files.append(file)
    return "\n".join(parts), tuple(files)


def block_file(block: mcp_types.ContentBlock) -> File | None:
    """The file an image block or an embedded binary resource holds, when
    its type is in :data:`FILE_TYPES` and its data is base64; else None. A
    resource's file is named after the last segment of its URI."""
    if isinstance(block, mcp_types.ImageContent):
        media_type, data, name = block.mime_type, block.data, ""
    elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.BlobResourceContents
    ):
        resource = block.resource
        media_type, data = resource.mime_type or "", resource.blob
        name = PurePosixPath(urlsplit(str(resource.uri)).path).name
    else:
        return None
    try:
        file = File(
            media_type=media_type, data=base64.b64decode("".join(data.split()), validate=True), filename=name
        )
    except (ValueError, binascii.Error):
        return None
    return file if file.media_type in FILE_TYPES else None


def describe_block(block: mcp_types.ContentBlock) -> str:
    """A line of text that stands for a block the model gets no file for:
    audio, a resource link, an embedded resource (a text one's text follows
    its description), an image or binary resource of another type. Binary
    data is not passed on: the line names its MIME type and size
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result)."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, (mcp_types.ImageContent, mcp_types.AudioContent)):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        about = ", ".join(
            str(v) for v in (block.title or block.name, block.mime_type, block.description) if v
        )
        return f"[resource link: {block.uri}" + (f" ({about})" if about else "") + "]"
    resource = block.resource
    mime = f", {resource.mime_type}" if resource.mime_type else ""
    if isinstance(resource, mcp_types.TextResourceContents):
        return f"[resource: {resource.uri}{mime}]\n{resource.text}"
    return f"[resource: {resource.uri}{mime}, {_decoded_size(resource.blob)} bytes, not shown]"


def _decoded_size(data: str) -> int:
    """The byte length of base64 text, without decoding it."""
    text = "".join(data.split())
    return max(0, len(text) * 3 // 4 - (len(text) - len(text.rstrip("="))))
