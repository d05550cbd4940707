"""An MCP server written with the SDK's server API (``MCPServer``), for the tests.

Over stdio: ``python tests/mcp_servers/tools_server.py [--linger]``. Over
streamable HTTP, in the test process: ``build_server(report).streamable_http_app()``.

``report(event)`` is called when ``slow`` starts (``"slow started <pid>"``)
and when it is cancelled (``"slow cancelled"``); over stdio it writes the
line to stderr, so a test reading the server's stderr knows where the call
is without sleeping. With ``--linger`` the process ignores SIGTERM and keeps
running after its stdin closes, as a stuck server would.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    ToolListChangedNotification,
)


def build_server(report: Callable[[str], None]) -> MCPServer:
    server = MCPServer("agentcore-test-tools", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, title="Adder"))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(structured_output=False)
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool(name="files.read", structured_output=False)
    def files_read(path: str) -> str:
        """A tool whose MCP name has a dot."""
        return f"contents of {path}"

    @server.tool(structured_output=False)
    def fail(message: str) -> str:
        """Always fails with the message."""
        raise ToolError(message)

    @server.tool(structured_output=False)
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        report(f"slow started {os.getpid()}")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            report("slow cancelled")
            raise
        return "slept"

    @server.tool(structured_output=False)
    async def grow(ctx: Context) -> str:
        """Add the tool ``extra`` and announce the change (before this answer)."""
        server.add_tool(
            lambda: "extra ran", name="extra", description="Added by grow.", structured_output=False
        )
        await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=ctx.request_id)
        return "grown"

    @server.tool()
    def media() -> CallToolResult:
        """Every kind of content block."""
        return CallToolResult(
            content=[
                TextContent(text="a picture:"),
                ImageContent(data="iVBORw0KGgo=", mime_type="image/png"),
                AudioContent(data="AAAA", mime_type="audio/wav"),
                ResourceLink(uri="file:///tmp/report.pdf", name="report", mime_type="application/pdf"),
                EmbeddedResource(
                    resource=TextResourceContents(uri="memo://1", text="memo text", mime_type="text/plain")
                ),
                EmbeddedResource(
                    resource=BlobResourceContents(
                        uri="file:///srv/brief.pdf", blob="JVBERi0xLjQ=", mime_type="application/pdf"
                    )
                ),
            ]
        )

    @server.tool(structured_output=False)
    def environment(name: str) -> str:
        """The server process's value of an environment variable, or <unset>."""
        return os.environ.get(name, "<unset>")

    @server.tool(structured_output=False)
    def crash() -> str:
        """End the server process at once, without answering."""
        os._exit(3)

    return server


def _stderr(event: str) -> None:
    print(event, file=sys.stderr, flush=True)


if __name__ == "__main__":
    build_server(_stderr).run("stdio")
    if "--linger" in sys.argv:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _stderr("lingering")
        while True:
            time.sleep(60)
