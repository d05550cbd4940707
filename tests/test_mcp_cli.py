"""The agentcore command's --mcp, --mcp-url and --mcp-prefix options (agentcore/cli.py, open_mcp_servers)."""

from __future__ import annotations

import io
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentcore import Context
from agentcore.cli import MCPServerOption, UsageError, main, open_mcp_servers
from agentcore.errors import MCPServerError
from agentcore.testing import ScriptedModel
from tests.localserver import LocalServer, Reply
from tests.loop_helpers import call, text_step, tool_step, wait_until
from tests.mcp_servers.in_thread import HttpMCPServer
from tests.mcp_servers.support import PYTHON, TOOLS_SERVER, children
from tests.test_mcp_http import closed_port


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


def test_mcp_prefix_names_the_tools_of_the_server_before_it() -> None:
    server = HttpMCPServer()
    try:
        model = ScriptedModel(
            [
                tool_step(call("1", "local_add", '{"a": 2, "b": 3}'), call("2", "add", '{"a": 1, "b": 1}')),
                text_step("done"),
            ]
        )
        command = f"{shlex.quote(PYTHON)} {shlex.quote(TOOLS_SERVER)}"
        argv = ["--mcp", command, "--mcp-prefix", "local_", "--mcp-url", server.url, "hi"]
        status, out, err = run_cli(argv, model)  # without the prefix: two tools named 'add'
        assert status == 0, err
        assert out.strip() == "done"
        offered = [d.name for d in model.requests[0].tools]
        assert "local_add" in offered
        assert "add" in offered
        assert "local_echo" in offered
        assert "echo" in offered
        assert model.requests[1].messages[-1].tool_results[0].content == '{"result": 5}'
        assert model.requests[1].messages[-1].tool_results[1].content == '{"result": 2}'
        assert children() == []
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["--mcp-prefix", "x_", "--mcp", "server", "hi"],
            "agentcore: error: --mcp-prefix must follow --mcp or --mcp-url",
        ),
        (
            ["--mcp-url", "http://127.0.0.1:9/mcp", "--mcp-prefix", "a_", "--mcp-prefix", "b_", "hi"],
            "agentcore: error: --mcp-prefix given twice for --mcp or --mcp-url http://127.0.0.1:9/mcp",
        ),
        (
            ["--mcp-url", "http://127.0.0.1:9/mcp", "--mcp-prefix", "a b", "hi"],
            "agentcore: error: prefix must be up to 63 letters, digits, '_' or '-', got 'a b'",
        ),
    ],
)
def test_an_mcp_prefix_the_command_cannot_use_is_a_usage_error(argv: list[str], line: str) -> None:
    status, out, err = run_cli(argv, ScriptedModel([]))
    assert status == 2
    assert out == ""
    assert err.splitlines()[-1] == line


def test_open_mcp_servers_opens_them_in_order_with_the_locale_and_closes_them_on_failure() -> None:
    server = HttpMCPServer()
    before = {pid for pid, _ in children()}
    command = MCPServerOption("stdio", f"{shlex.quote(PYTHON)} {shlex.quote(TOOLS_SERVER)}")
    try:
        servers = open_mcp_servers(
            [MCPServerOption("http", server.url, "web_"), command], {"LC_ALL": "C.UTF-8", "MY_KEY": "k"}
        )
        try:
            assert [repr(s) for s in servers] == [
                f"MCPTools.http({server.url!r})",
                f"MCPTools.stdio({PYTHON + ' ' + TOOLS_SERVER!r})",
            ]
            assert servers[0]["web_echo"].execute({"text": "hi"}, Context()) == "hi"
            environment = servers[1]["environment"]
            assert environment.execute({"name": "LC_ALL"}, Context()) == "C.UTF-8"
            assert environment.execute({"name": "MY_KEY"}, Context()) == "<unset>"  # not on the allowlist
        finally:
            for opened in servers:
                opened.close()
        with pytest.raises(UsageError, match="cannot split the MCP server command line"):
            open_mcp_servers([MCPServerOption("stdio", "python 'unclosed")], {})
        with pytest.raises(UsageError, match="an MCP server command line is empty"):
            open_mcp_servers([MCPServerOption("stdio", "  ")], {})
        with pytest.raises(MCPServerError, match="could not connect"):
            open_mcp_servers([command, MCPServerOption("http", f"http://127.0.0.1:{closed_port()}/mcp")], {})
        assert children(before) == []  # the server opened before the failure was closed
    finally:
        server.stop()


def test_an_mcp_server_that_cannot_start_is_an_error() -> None:
    status, _, err = run_cli(["--mcp", "/nonexistent/server", "hi"], ScriptedModel([]))
    assert status == 1
    assert "agentcore: error: could not start MCP server '/nonexistent/server': FileNotFoundError" in err
    status, _, err = run_cli(["--mcp", "python 'unclosed", "hi"], ScriptedModel([]))
    assert status == 2
    assert "cannot split the MCP server command line" in err


def test_ctrl_c_while_an_mcp_server_starts_exits_at_once_and_stops_it(tmp_path: Path) -> None:
    """A server that never answers the handshake: Ctrl-C ends the command and
    the server without waiting out the 30 s handshake timeout."""
    marker = tmp_path / "pid"
    server = f"sh -c {shlex.quote(f'echo $$ > {marker}.tmp && mv {marker}.tmp {marker} && exec sleep 300')}"
    command = [sys.executable, "-m", "agentcore", "--model", "test", "--mcp", server, "hi"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(marker.exists, timeout=20.0)
        server_pid = int(marker.read_text())
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=15.0)  # the handshake timeout is 30 s
    finally:
        child.kill()
        child.wait()
        for pipe in (child.stdout, child.stderr):  # a server left running holds them open
            assert pipe is not None
            pipe.close()
    assert child.returncode == 130
    assert err.splitlines()[-1] == "agentcore: interrupted"
    assert not Path(f"/proc/{server_pid}").exists()


def test_a_url_that_is_not_an_mcp_server_is_one_error_line(server: LocalServer) -> None:
    """The SDK logs the failure it then raises; the command shows the error once,
    on one line, and none of the SDK's own log records."""
    page = b"<html>" + b"x" * 5000 + b"</html>"
    server.add(*[Reply(actions=[page], headers={"Content-Type": "text/html"}, chunked=False)] * 4)
    command = [sys.executable, "-m", "agentcore", "--model", "test", "--mcp-url", server.url + "/mcp", "hi"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == (
        f"agentcore: error: could not connect to MCP server '{server.url}/mcp': "
        "MCPError: Unexpected content type: text/html\n"
    )
