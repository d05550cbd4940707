"""agentcore.integrations.mcp's pure parts, table by table: names, definitions, results,
the server environment, argument checks and ``combine`` (no server needed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from mcp.types import Tool as SDKTool

from agentcore import ConfigError, File, ToolSet, tool
from agentcore.integrations.mcp import MCPTools, combine
from agentcore.integrations.mcp.mapping import (
    block_file,
    describe_block,
    result_content,
    tool_definition,
    tool_name,
)
from agentcore.integrations.mcp.servers import ENVIRONMENT_ALLOWLIST, server_environment
from agentcore.types import ToolDefinition


@pytest.mark.parametrize(
    ("prefix", "name", "expected"),
    [
        ("", "add", "add"),
        ("fs_", "read", "fs_read"),
        ("", "files.read", "files_read"),
        ("", "a/b c", "a_b_c"),
        ("x-", "naïve", "x-na_ve"),
        ("", "n" * 70, "n" * 64),
        ("p_", "n" * 63, "p_" + "n" * 62),
    ],
)
def test_tool_name(prefix: str, name: str, expected: str) -> None:
    assert tool_name(prefix, name) == expected


SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "Città"}},
    "required": ["city"],
}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"description": "Weather now.", "title": "Weather"},
            ToolDefinition("w", "Weather now.", json.dumps(SCHEMA, ensure_ascii=False)),
        ),
        ({"title": "Weather"}, ToolDefinition("w", "Weather", json.dumps(SCHEMA, ensure_ascii=False))),
        ({}, ToolDefinition("w", "", json.dumps(SCHEMA, ensure_ascii=False))),
    ],
)
def test_tool_definition(fields: dict[str, Any], expected: ToolDefinition) -> None:
    definition = tool_definition(SDKTool(name="weather.now", input_schema=SCHEMA, **fields), "w")
    assert definition == expected
    assert json.loads(definition.input_schema) == SCHEMA
    assert "Città" in definition.input_schema  # not escaped to \u00e0


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (TextContent(text="plain"), "plain"),
        (ImageContent(data="MTIzNDU=", mime_type="image/png"), "[image: image/png, 5 bytes, not shown]"),
        (ImageContent(data="MTIz\nNDU2", mime_type="image/jpeg"), "[image: image/jpeg, 6 bytes, not shown]"),
        (AudioContent(data="MTIzNDU2Nw==", mime_type="audio/wav"), "[audio: audio/wav, 7 bytes, not shown]"),
        (ResourceLink(uri="file:///r.pdf", name="r"), "[resource link: file:///r.pdf (r)]"),
        (
            ResourceLink(
                uri="file:///r.pdf", name="r", title="Report", mime_type="application/pdf", description="Q3"
            ),
            "[resource link: file:///r.pdf (Report, application/pdf, Q3)]",
        ),
        (
            EmbeddedResource(
                resource=TextResourceContents(uri="memo://1", text="note", mime_type="text/plain")
            ),
            "[resource: memo://1, text/plain]\nnote",
        ),
        (
            EmbeddedResource(resource=TextResourceContents(uri="memo://2", text="x")),
            "[resource: memo://2]\nx",
        ),
        (
            EmbeddedResource(resource=BlobResourceContents(uri="db://1", blob="MTIzNDU2", mime_type="app/x")),
            "[resource: db://1, app/x, 6 bytes, not shown]",
        ),
    ],
)
def test_describe_block(block: ContentBlock, expected: str) -> None:
    assert describe_block(block) == expected


PNG = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
PNG_FILE = File(media_type="image/png", data=b"\x89PNG\r\n\x1a\n")
TIFF = ImageContent(data="MTIzNDU=", mime_type="image/tiff")


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (PNG, PNG_FILE),
        (ImageContent(data="iVBO\nRw0KGgo=", mime_type="IMAGE/PNG"), PNG_FILE),
        (ImageContent(data="MTIz", mime_type="image/jpeg"), File(media_type="image/jpeg", data=b"123")),
        (ImageContent(data="R0lG", mime_type="image/gif"), File(media_type="image/gif", data=b"GIF")),
        (ImageContent(data="UklG", mime_type="image/webp"), File(media_type="image/webp", data=b"RIF")),
        (
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///a/b.pdf", blob="JVBE", mime_type="application/pdf")
            ),
            File(media_type="application/pdf", data=b"%PD", filename="b.pdf"),
        ),
        (TIFF, None),  # a type not every adapter takes
        (ImageContent(data="not base64!", mime_type="image/png"), None),
        (ImageContent(data="MTIz", mime_type="png"), None),  # not a media type
        (
            EmbeddedResource(
                resource=BlobResourceContents(uri="db://1", blob="MTIz", mime_type="application/zip")
            ),
            None,
        ),
        (EmbeddedResource(resource=BlobResourceContents(uri="db://1", blob="MTIz")), None),  # no type
        (EmbeddedResource(resource=TextResourceContents(uri="memo://1", text="x")), None),
        (AudioContent(data="MTIz", mime_type="audio/wav"), None),
        (TextContent(text="t"), None),
    ],
)
def test_block_file(block: ContentBlock, expected: File | None) -> None:
    assert block_file(block) == expected


@pytest.mark.parametrize(
    ("result", "text", "files"),
    [
        (CallToolResult(content=[]), "", ()),
        (CallToolResult(content=[TextContent(text="one")]), "one", ()),
        (CallToolResult(content=[TextContent(text="one"), TextContent(text="two")]), "one\ntwo", ()),
        (CallToolResult(content=[TextContent(text="see:"), PNG]), "see:", (PNG_FILE,)),
        (CallToolResult(content=[PNG, PNG]), "", (PNG_FILE, PNG_FILE)),
        (
            CallToolResult(content=[TextContent(text="see:"), TIFF]),
            "see:\n[image: image/tiff, 5 bytes, not shown]",
            (),
        ),
        # structured content replaces the text blocks that repeat it
        (
            CallToolResult(
                content=[TextContent(text='{"t": 21}')], structured_content={"t": 21, "city": "Köln"}
            ),
            '{"t": 21, "city": "Köln"}',
            (),
        ),
        (
            CallToolResult(content=[TextContent(text="x"), PNG, TIFF], structured_content={"ok": True}),
            '{"ok": true}\n[image: image/tiff, 5 bytes, not shown]',
            (PNG_FILE,),
        ),
        (CallToolResult(content=[], structured_content={}), "{}", ()),
        # isError does not change the text (MCPTool.execute raises MCPToolError with it)
        (CallToolResult(content=[TextContent(text="no such city")], is_error=True), "no such city", ()),
    ],
)
def test_result_content(result: CallToolResult, text: str, files: tuple[File, ...]) -> None:
    assert result_content(result) == (text, files)


def test_server_environment_is_an_allowlist_with_env_on_top() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "de_DE.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TZ": "Europe/Berlin",
        "OPENAI_API_KEY": "sk-1",
        "ANTHROPIC_API_KEY": "sk-ant-1",
        "AWS_SECRET_ACCESS_KEY": "s",
        "GITHUB_TOKEN": "ghp",
        "PYTHONPATH": "/src",
        "MY_SETTING": "1",
    }
    assert server_environment(environ, None) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "de_DE.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_TIME": "en_GB.UTF-8",
        "TZ": "Europe/Berlin",
    }
    given = server_environment(environ, {"MY_SETTING": "2", "PATH": "/opt/bin"})
    assert given["MY_SETTING"] == "2"
    assert given["PATH"] == "/opt/bin"
    assert "OPENAI_API_KEY" not in given
    assert {"PATH", "HOME", "LANG", "TZ"} <= set(ENVIRONMENT_ALLOWLIST)


# --- argument checks: a ConfigError before any process starts or socket opens ---


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: MCPTools.stdio(""), "command must be a non-empty str"),
        (lambda: MCPTools.stdio(["python", "s.py"]), "command must be a non-empty str"),  # type: ignore[arg-type]  # a wrong type on purpose: refused
        (lambda: MCPTools.stdio("python", "s.py"), "args must be a sequence of str (not one str)"),
        (lambda: MCPTools.stdio("python", [1]), "args must be a sequence of str"),  # type: ignore[list-item]  # a wrong type on purpose: refused
        (lambda: MCPTools.stdio("python", env={"A": 1}), "env must be a mapping of str"),  # type: ignore[dict-item]  # a wrong type on purpose: refused
        (lambda: MCPTools.stdio("python", timeout=0), "timeout must be a number of seconds > 0, got 0"),
        (lambda: MCPTools.stdio("python", timeout=-1.0), "timeout must be a number of seconds > 0"),
        (lambda: MCPTools.stdio("python", timeout=True), "timeout must be a number of seconds > 0, got True"),
        (lambda: MCPTools.stdio("python", timeout=float("inf")), "timeout must be a number of seconds > 0"),
        (lambda: MCPTools.stdio("python", timeout="5"), "timeout must be a number"),  # type: ignore[arg-type]  # a wrong type on purpose: refused
        (
            lambda: MCPTools.stdio("python", connect_timeout=0),
            "connect_timeout must be a number of seconds > 0",
        ),
        (lambda: MCPTools.stdio("python", prefix="a.b"), "prefix must be up to 63 letters, digits"),
        (lambda: MCPTools.stdio("python", prefix="p" * 64), "prefix must be up to 63 letters"),
        (lambda: MCPTools.http("ftp://host/mcp"), "url must be an http:// or https:// URL"),
        (lambda: MCPTools.http("localhost:8000/mcp"), "url must be an http:// or https:// URL"),
        # a port out of range or a broken IPv6 host hung the SDK's client forever
        (lambda: MCPTools.http("http://127.0.0.1:abc/mcp"), "url must be an http:// or https:// URL"),
        (lambda: MCPTools.http("http://[::1/mcp"), "url must be an http:// or https:// URL"),
        (lambda: MCPTools.http("http://:80/mcp"), "url must be an http:// or https:// URL"),
        (lambda: MCPTools.http("http://h/mcp", headers={"X": 1}), "'X' has a int value"),  # type: ignore[dict-item]  # a wrong type on purpose: refused
        (
            lambda: MCPTools.http("http://h/mcp", connect_timeout=-2),
            "connect_timeout must be a number of seconds",
        ),
    ],
)
def test_bad_arguments_are_a_config_error(call: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        call()
    assert message in str(info.value)


def test_a_header_with_a_line_break_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as info:
        MCPTools.http("http://h/mcp", headers={"Authorization": "Bearer sk-secret-value\n"})
    assert "Authorization" in str(info.value)
    assert "sk-secret-value" not in str(info.value)


# --- combine -----------------------------------------------------------------


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Lower-case the text."""
    return text.lower()


@tool(name="shout")
def another_shout(text: str) -> str:
    """Another tool named shout."""
    return text


def test_combine_joins_tools_tool_sets_and_mappings_in_order() -> None:
    tools = combine(ToolSet([shout]), whisper, {"shout2": tool(another_shout.func, name="shout2")})
    assert list(tools) == ["shout", "whisper", "shout2"]
    assert [d.name for d in tools.definitions()] == ["shout", "whisper", "shout2"]
    assert tools["whisper"] is whisper
    assert tools.get("nope") is None
    assert len(tools) == 3
    with pytest.raises(ConfigError) as info:
        combine([shout], [another_shout])
    assert str(info.value) == (
        "two tools are named 'shout': FunctionTool('shout') and FunctionTool('shout'); "
        "give an MCP server a prefix (prefix='...')"
    )


def test_combine_refuses_what_is_not_a_tool() -> None:
    with pytest.raises(ConfigError, match="is not a Tool"):
        combine([object()])  # type: ignore[list-item]  # a wrong type on purpose: refused


def test_import_agentcore_does_not_import_the_sdk() -> None:
    code = (
        "import sys, agentcore, agentcore.engine.loop, agentcore.cli, agentcore.testing; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'anyio', 'httpx2'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
