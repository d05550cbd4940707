"""A bare MCP server over stdio: ``initialize``, ``tools/list`` (one tool,
``ping``) and ``tools/call``, in plain JSON-RPC with the standard library.

For the open/close cycles of tests/test_mcp_hygiene.py only: a process that
imports the SDK spends about a second starting, so a hundred cycles with
``tools_server.py`` would take minutes. Everything else uses the SDK's
server. It exits when its stdin closes, as the protocol asks
(https://modelcontextprotocol.io/specification/2025-11-25/basic/lifecycle#shutdown).
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "ping", "description": "Answers pong.", "inputSchema": {"type": "object", "properties": {}}}


def answer(request: dict[str, object]) -> object:
    method = request["method"]
    if method == "initialize":
        params = request.get("params")
        assert isinstance(params, dict)
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "minimal", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "pong"}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
