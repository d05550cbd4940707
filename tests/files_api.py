"""What each API documents for files in a request body, as checks.

Each function returns the problems it finds in a request body (an empty list
for a body the API takes), naming the path of the bad value. They check the
field names and values of the blocks that carry files, as the API references
list them:

* Anthropic Messages (https://docs.anthropic.com/en/api/messages): ``image``
  blocks with a ``base64`` (``media_type``, ``data``) or ``url`` source;
  ``document`` blocks with a ``base64`` PDF, a ``text`` source or a ``url``;
  ``tool_result`` content as a string or a list of ``text``, ``image`` and
  ``document`` blocks.
* OpenAI Responses (https://platform.openai.com/docs/api-reference/responses/create):
  ``input_text``, ``input_image`` (``image_url``, ``detail``) and
  ``input_file`` (``file_data`` with ``filename``, or ``file_url``) in user
  messages and in a ``function_call_output``'s ``output`` list.
* OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat/create):
  user content parts ``text``, ``image_url`` (``{url, detail}``) and ``file``
  (``{filename, file_data}``); a ``tool`` message's content is text only.

Used by the request-shape tests and by the local servers of the loop tests,
which answer a 400 with these problems, as the real APIs would.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
_DATA_URL = re.compile(r"data:([a-z0-9.+-]+/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=]*)")


def _base64(value: Any) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, TypeError, ValueError):
        return False
    return isinstance(value, str)


def _keys(block: dict[str, Any], allowed: set[str], required: set[str], path: str) -> list[str]:
    problems = [f"{path}.{key}: unknown field" for key in sorted(block.keys() - allowed)]
    problems += [f"{path}.{key}: required" for key in sorted(required - block.keys())]
    return problems


def _data_url(value: Any, path: str, types: set[str] | None = None) -> list[str]:
    match = _DATA_URL.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return [f"{path}: not a base64 data URL"]
    if types is not None and match.group(1) not in types:
        return [f"{path}: media type {match.group(1)} not accepted"]
    return [] if _base64(match.group(2)) else [f"{path}: bad base64"]


# --- Anthropic -------------------------------------------------------------------


def _anthropic_source(source: Any, path: str, kind: str) -> list[str]:
    if not isinstance(source, dict):
        return [f"{path}: not an object"]
    kinds = {"image": {"base64", "url"}, "document": {"base64", "url", "text"}}[kind]
    if source.get("type") not in kinds:
        return [f"{path}.type: {source.get('type')!r} not one of {sorted(kinds)}"]
    if source["type"] == "url":
        problems = _keys(source, {"type", "url"}, {"type", "url"}, path)
        return problems + (
            [] if str(source.get("url", "")).startswith("https://") else [f"{path}.url: not https"]
        )
    problems = _keys(source, {"type", "media_type", "data"}, {"type", "media_type", "data"}, path)
    media_type = source.get("media_type")
    if source["type"] == "text":
        if media_type != "text/plain" or not isinstance(source.get("data"), str):
            problems.append(f"{path}: a text source is text/plain with its text as data")
        return problems
    wanted = IMAGE_TYPES if kind == "image" else {"application/pdf"}
    if media_type not in wanted:
        problems.append(f"{path}.media_type: {media_type!r} not accepted for an {kind}")
    if not _base64(source.get("data")):
        problems.append(f"{path}.data: not base64")
    return problems


def _anthropic_block(block: Any, path: str, inside_result: bool = False) -> list[str]:
    if not isinstance(block, dict):
        return [f"{path}: not an object"]
    kind = block.get("type")
    if kind == "text":
        return _keys(block, {"type", "text", "cache_control", "citations"}, {"type", "text"}, path)
    if kind == "image":
        problems = _keys(block, {"type", "source", "cache_control"}, {"type", "source"}, path)
        return problems + _anthropic_source(block.get("source"), path + ".source", "image")
    if kind == "document":
        allowed = {"type", "source", "title", "context", "citations", "cache_control"}
        problems = _keys(block, allowed, {"type", "source"}, path)
        return problems + _anthropic_source(block.get("source"), path + ".source", "document")
    if inside_result:
        return [f"{path}.type: {kind!r} cannot be in tool_result content"]
    if kind == "tool_result":
        problems = _keys(
            block,
            {"type", "tool_use_id", "content", "is_error", "cache_control"},
            {"type", "tool_use_id"},
            path,
        )
        content = block.get("content", "")
        if isinstance(content, list):
            for i, item in enumerate(content):
                problems += _anthropic_block(item, f"{path}.content[{i}]", inside_result=True)
        elif not isinstance(content, str):
            problems.append(f"{path}.content: a string or a list of blocks")
        return problems
    return []  # tool_use, thinking: not about files


def anthropic_problems(body: dict[str, Any]) -> list[str]:
    """Problems of an Anthropic Messages request body's content blocks."""
    problems: list[str] = []
    for m, message in enumerate(body["messages"]):
        content = message["content"]
        for b, block in enumerate(content if isinstance(content, list) else []):
            path = f"messages.{m}.content.{b}"
            if (
                message["role"] == "assistant"
                and isinstance(block, dict)
                and block.get("type") in ("image", "document")
            ):
                problems.append(f"{path}: assistant messages cannot hold {block['type']} blocks")
            problems += _anthropic_block(block, path)
    return problems


# --- OpenAI Responses --------------------------------------------------------------


def _responses_part(part: Any, path: str) -> list[str]:
    if not isinstance(part, dict):
        return [f"{path}: not an object"]
    kind = part.get("type")
    if kind == "input_text":
        return _keys(part, {"type", "text"}, {"type", "text"}, path)
    if kind == "input_image":
        problems = _keys(part, {"type", "image_url", "file_id", "detail"}, {"type"}, path)
        if part.get("detail", "auto") not in ("low", "high", "auto"):
            problems.append(f"{path}.detail: not low, high or auto")
        url = part.get("image_url", "")
        if not str(url).startswith("https://"):
            problems += _data_url(url, path + ".image_url", IMAGE_TYPES)
        return problems
    if kind == "input_file":
        problems = _keys(
            part, {"type", "file_id", "file_data", "file_url", "filename", "detail"}, {"type"}, path
        )
        sources = [key for key in ("file_id", "file_data", "file_url") if key in part]
        if len(sources) != 1:
            problems.append(f"{path}: exactly one of file_id, file_data, file_url")
        if "file_data" in part:
            problems += _data_url(part["file_data"], path + ".file_data")
            if not part.get("filename"):
                problems.append(f"{path}.filename: required with file_data")
        return problems
    return [f"{path}.type: {kind!r} is not an input content type"]


def responses_problems(body: dict[str, Any]) -> list[str]:
    """Problems of a Responses request body's input items that carry content."""
    problems: list[str] = []
    for i, item in enumerate(body["input"]):
        path = f"input.{i}"
        if item.get("type") == "function_call_output":
            problems += _keys(
                item, {"type", "call_id", "output", "id", "status"}, {"type", "call_id", "output"}, path
            )
            output = item["output"]
            if isinstance(output, list):
                for p, part in enumerate(output):
                    problems += _responses_part(part, f"{path}.output.{p}")
            elif not isinstance(output, str):
                problems.append(f"{path}.output: a string or a list of input content")
        elif (
            item.get("type") == "message" and item.get("role") == "user" and isinstance(item["content"], list)
        ):
            for p, part in enumerate(item["content"]):
                problems += _responses_part(part, f"{path}.content.{p}")
    return problems


# --- OpenAI Chat Completions -------------------------------------------------------


def _chat_part(part: Any, path: str) -> list[str]:
    if not isinstance(part, dict):
        return [f"{path}: not an object"]
    kind = part.get("type")
    if kind == "text":
        return _keys(part, {"type", "text"}, {"type", "text"}, path)
    if kind == "image_url":
        problems = _keys(part, {"type", "image_url"}, {"type", "image_url"}, path)
        image = part.get("image_url")
        if not isinstance(image, dict):
            return [*problems, f"{path}.image_url: an object with url"]
        problems += _keys(image, {"url", "detail"}, {"url"}, path + ".image_url")
        if not str(image.get("url", "")).startswith("https://"):
            problems += _data_url(image.get("url"), path + ".image_url.url", IMAGE_TYPES)
        return problems
    if kind == "file":
        problems = _keys(part, {"type", "file"}, {"type", "file"}, path)
        file = part.get("file")
        if not isinstance(file, dict):
            return [*problems, f"{path}.file: an object"]
        problems += _keys(file, {"file_data", "file_id", "filename"}, set(), path + ".file")
        if "file_data" in file:
            problems += _data_url(file["file_data"], path + ".file.file_data", {"application/pdf"})
            if not file.get("filename"):
                problems.append(f"{path}.file.filename: required with file_data")
        return problems
    return [f"{path}.type: {kind!r} is not a user content part"]


def chat_problems(body: dict[str, Any]) -> list[str]:
    """Problems of a Chat Completions request body's messages that carry
    content; and an assistant message's tool calls not answered by the
    ``tool`` messages right after it (the function calling guide's rule)."""
    problems: list[str] = []
    messages = body["messages"]
    for m, message in enumerate(messages):
        calls = [call["id"] for call in message.get("tool_calls") or []]
        answers = [reply.get("tool_call_id") for reply in messages[m + 1 : m + 1 + len(calls)]]
        if message["role"] == "assistant" and sorted(answers, key=str) != sorted(calls):
            problems.append(
                f"messages.{m}: its tool calls are not answered by the tool messages right after it"
            )
    for m, message in enumerate(messages):
        path = f"messages.{m}"
        content = message.get("content")
        if message["role"] == "tool":
            parts = content if isinstance(content, list) else []
            if not isinstance(content, (str, list)) or any(p.get("type") != "text" for p in parts):
                problems.append(f"{path}.content: a tool message holds text only")
        elif message["role"] == "user" and isinstance(content, list):
            for p, part in enumerate(content):
                problems += _chat_part(part, f"{path}.content.{p}")
    return problems
