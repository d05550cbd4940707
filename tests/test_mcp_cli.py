"""The agentcore command's --mcp and --mcp-url options (integrations/cli.py, mcp.open_servers)."""

from __future__ import annotations

import io
import shlex

from agentcore.integrations.cli import main
from agentcore.testing import ScriptedModel
from tests.loop_helpers import call, text_step, tool_step
from tests.mcp_servers.in_thread import HttpMCPServer
from tests.mcp_servers.support import PYTHON, TOOLS_SERVER, children


def run_cli(argv: list[str], model: ScriptedModel) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, model=model, env={}, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_mcp_and_mcp_url_add_the_servers_tools_to_the_demo_tools() -> None:
    server = HttpMCPServer()
    try:
        model = ScriptedModel(
            [
                tool_step(
                    call("1", "add", '{"a": 2, "b": 3}'), call("2", "calculator", '{"expression": "6*7"}')
                ),
                text_step("done"),
            ]
        )
        command = f"{shlex.quote(PYTHON)} {shlex.quote(TOOLS_SERVER)}"
        status, out, err = run_cli(["--mcp", command, "hi"], model)
        assert status == 0, err
        assert out.strip() == "done"
        offered = [d.name for d in model.requests[0].tools]
        assert offered[:3] == ["calculator", "utc_now", "word_count"]
        assert "add" in offered
        assert '{"result": 5}' in err
        assert children() == []
        clash = ScriptedModel([text_step("never")])
        status, _, err = run_cli(["--mcp", command, "--mcp-url", server.url, "hi"], clash)
        assert status == 2
        assert "two tools are named 'add'" in err
        assert children() == []
    finally:
        server.stop()


def test_an_mcp_server_that_cannot_start_is_an_error() -> None:
    status, _, err = run_cli(["--mcp", "/nonexistent/server", "hi"], ScriptedModel([]))
    assert status == 1
    assert "agentcore: error: could not start MCP server '/nonexistent/server': FileNotFoundError" in err
    status, _, err = run_cli(["--mcp", "python 'unclosed", "hi"], ScriptedModel([]))
    assert status == 2
    assert "cannot split the MCP server command line" in err
