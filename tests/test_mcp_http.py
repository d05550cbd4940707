"""MCPTools over streamable HTTP, against the SDK server of
tests/mcp_servers/tools_server.py served by uvicorn on 127.0.0.1 in a thread;
and the headline run: a stdio and an HTTP server at once, with function
tools, surviving a server crash mid-run and leaving nothing behind.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import Context, FinishReason, RunError, generate, run, tool
from agentcore.errors import MCPServerError, MCPToolError
from agentcore.integrations.mcp import MCPTools, combine
from agentcore.testing import ScriptedModel
from tests.loop_helpers import call, options, text_step, tool_step, wait_until
from tests.mcp_servers.in_thread import HttpMCPServer
from tests.mcp_servers.support import PYTHON, TOOLS_SERVER, ServerLog, children

CLOSE_BOUND = 0.5  # seconds, as for a blocked model stream (tests/test_loop_cancel.py)
TOKEN = "sk-live-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[HttpMCPServer]:
    srv = HttpMCPServer()
    yield srv
    srv.stop()


def results(result: Any) -> list[tuple[str, str, bool]]:
    return [(r.name, r.content, r.is_error) for step in result.steps for r in step.tool_results]


def sessions(server: HttpMCPServer) -> list[str]:
    """The session ids the server saw, in order of first use."""
    seen = [h["mcp-session-id"] for h in server.headers if "mcp-session-id" in h]
    return list(dict.fromkeys(seen))


def mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentcore-mcp"]


def test_tools_over_http_with_headers_redacted(server: HttpMCPServer) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Team": "blue"}
    with MCPTools.http(server.url, headers=headers, timeout=20) as tools:
        assert "add" in tools
        assert tools["add"].execute({"a": 20, "b": 22}, Context()) == '{"result": 42}'
        assert {h.get("authorization") for h in server.headers} == {f"Bearer {TOKEN}"}
        assert {h.get("x-team") for h in server.headers} == {"blue"}
        assert (
            repr(tools)
            == f"MCPTools.http({server.url!r}, headers={{'Authorization': '[REDACTED]', 'X-Team': 'blue'}})"
        )
        with pytest.raises(MCPToolError) as info:
            tools["fail"].execute({"message": f"bad token {TOKEN}"}, Context())
        assert str(info.value) == "Error executing tool fail: bad token [REDACTED]"
    assert mcp_threads() == []


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_url_is_shown_without_credentials_and_a_refused_connection_is_an_error() -> None:
    port = closed_port()
    url = f"http://user:secret-password@127.0.0.1:{port}/mcp?key=secret-query"
    with pytest.raises(MCPServerError) as info:
        MCPTools.http(url, connect_timeout=2)
    message = str(info.value)
    assert message.startswith(f"could not connect to MCP server 'http://127.0.0.1:{port}/mcp': ConnectError")
    assert "secret" not in message
    assert mcp_threads() == []


def test_a_call_past_its_timeout_over_http_is_cancelled_on_the_server(server: HttpMCPServer) -> None:
    with MCPTools.http(server.url, timeout=0.5) as tools:
        model = ScriptedModel([tool_step(call("1", "slow", '{"seconds": 30}')), text_step("ok")])
        result = generate(options(model, tools=tools))
        assert results(result) == [
            (
                "slow",
                f"Error: TimeoutError: {tools.label}: the tool 'slow' did not answer within 0.5 s; "
                "the server was told to cancel the call",
                True,
            )
        ]
        server.wait_for("slow started")
        server.wait_for("slow cancelled")


def test_a_server_that_goes_down_mid_call_fails_that_call_and_a_new_session_follows(
    server: HttpMCPServer,
) -> None:
    with MCPTools.http(server.url, timeout=20) as tools:

        def restart_when_started() -> None:
            server.wait_for("slow started")
            server.stop()
            server.start()

        restarter = threading.Thread(target=restart_when_started)
        restarter.start()

        def after_the_restart(_request: object) -> list[Any]:
            restarter.join()
            return tool_step(call("2", "add", '{"a": 1, "b": 2}'))

        model = ScriptedModel(
            [tool_step(call("1", "slow", '{"seconds": 30}')), after_the_restart, text_step("ok")]
        )
        result = generate(options(model, tools=tools))
        [(name, content, is_error), second] = results(result)
        assert (name, is_error) == ("slow", True)
        assert content.startswith(
            f"Error: MCPServerError: {tools.label}: the connection broke during the call"
        )
        assert second == ("add", '{"result": 3}', False)
        assert len(sessions(server)) == 2


def test_a_session_the_restarted_server_forgot_is_replaced_and_the_call_sent_again(
    server: HttpMCPServer,
) -> None:
    with MCPTools.http(server.url, timeout=20) as tools:
        ctx = Context()
        assert tools["add"].execute({"a": 1, "b": 1}, ctx) == '{"result": 2}'
        server.stop()
        server.start()  # the old session id now gets 404: the call was not run
        assert tools["add"].execute({"a": 2, "b": 2}, ctx) == '{"result": 4}'
        assert len(sessions(server)) == 2


def test_a_server_that_is_down_fails_calls_until_it_is_back(server: HttpMCPServer) -> None:
    with MCPTools.http(server.url, timeout=20, connect_timeout=2) as tools:
        server.stop()
        with pytest.raises(MCPServerError) as info:
            tools["add"].execute({"a": 1, "b": 1}, Context())
        assert str(info.value) == (
            f"{tools.label}: the connection broke during the call to 'add' (Connection closed); "
            "it is opened again on the next call"
        )
        with pytest.raises(MCPServerError) as info:
            tools["add"].execute({"a": 1, "b": 1}, Context())
        assert (
            str(info.value)
            == f"could not connect to {tools.label}: ConnectError: All connection attempts failed"
        )
        server.start()
        assert tools["add"].execute({"a": 1, "b": 1}, Context()) == '{"result": 2}'


def test_a_changed_tool_list_over_http(server: HttpMCPServer) -> None:
    with MCPTools.http(server.url, timeout=20) as tools:
        model = ScriptedModel([tool_step(call("1", "grow")), tool_step(call("2", "extra")), text_step("ok")])
        result = generate(options(model, tools=tools))
        assert results(result) == [("grow", "grown", False), ("extra", "extra ran", False)]
        assert [d.name for d in tools.definitions()][-1] == "extra"


def test_closing_the_reader_cancels_an_http_call_at_once(server: HttpMCPServer) -> None:
    with MCPTools.http(server.url, timeout=20) as tools:
        before = set(threading.enumerate())
        model = ScriptedModel([tool_step(call("1", "slow", '{"seconds": 60}')), text_step("never")])
        reader = run(options(model, tools=tools))
        server.wait_for("slow started")
        [worker] = [t for t in threading.enumerate() if t.name == "agentcore-stream" and t not in before]
        start = time.monotonic()
        reader.close()
        closed = time.monotonic() - start
        worker.join(CLOSE_BOUND)
        assert closed < CLOSE_BOUND
        assert not worker.is_alive()
        server.wait_for("slow cancelled")
        with pytest.raises(RunError) as info:
            reader.result()
        assert info.value.finish_reason is FinishReason.CANCELED


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def test_a_run_uses_a_stdio_and_an_http_server_survives_a_crash_and_leaves_nothing_behind(
    server: HttpMCPServer,
) -> None:
    threads_before = set(threading.enumerate())
    children_before = {pid for pid, _ in children()}
    log = ServerLog()
    try:
        with (
            MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer, prefix="local_") as local,
            MCPTools.http(server.url, prefix="remote_") as remote,
        ):
            tools = combine(local, remote, [shout])
            model = ScriptedModel(
                [
                    tool_step(
                        call("1", "local_add", '{"a": 2, "b": 3}'),
                        call("2", "remote_echo", '{"text": "from afar"}'),
                        call("3", "shout", '{"text": "hey"}'),
                    ),
                    tool_step(call("4", "local_crash"), call("5", "remote_add", '{"a": 1, "b": 1}')),
                    tool_step(call("6", "local_add", '{"a": 4, "b": 4}')),
                    text_step("all done"),
                ]
            )
            result = generate(options(model, tools=tools))
            offered = [d.name for d in model.requests[0].tools]
            assert offered[:2] == ["local_add", "local_echo"]
            assert "remote_add" in offered
            assert offered[-1] == "shout"
            assert result.text == "all done"
            assert results(result) == [
                ("local_add", '{"result": 5}', False),
                ("remote_echo", "from afar", False),
                ("shout", "HEY", False),
                (
                    "local_crash",
                    f"Error: MCPServerError: {local.label}: the connection broke during the call to 'crash' "
                    "(Connection closed); it is opened again on the next call",
                    True,
                ),
                ("remote_add", '{"result": 2}', False),
                ("local_add", '{"result": 8}', False),
            ]
    finally:
        log.close()
        server.stop()  # its threads (which run its tools) end too
    assert children(children_before) == []
    assert wait_until(lambda: set(threading.enumerate()) <= threads_before), (
        set(threading.enumerate()) - threads_before
    )
