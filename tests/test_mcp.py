"""MCPTools over stdio, against a real MCP server written with the SDK
(tests/mcp_servers/tools_server.py, one child process per session), driven
by full runs of the loop with a ScriptedModel: listing, calls, errors, a slow
call past its timeout, a server killed mid-run, a tool list change, cancel
with its latency, close, the environment, and a server that will not stop.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import mcp.client.stdio
import pytest

from agentcore import (
    Canceled,
    ConfigError,
    Context,
    File,
    FinishReason,
    RunError,
    generate,
    run,
    tool,
)
from agentcore.errors import MCPServerError, MCPToolError
from agentcore.integrations.mcp import MCPTool, MCPTools, combine
from agentcore.integrations.mcp.servers import STDIN_GRACE, TERM_GRACE, server_environment
from agentcore.testing import ScriptedModel
from tests.loop_helpers import call, options, text_step, tool_step
from tests.mcp_servers.support import PYTHON, TOOLS_SERVER, ServerLog, children

CLOSE_BOUND = 0.5  # seconds, as for a blocked model stream (tests/test_loop_cancel.py)
SERVER_TOOLS = ["add", "echo", "files_read", "fail", "slow", "grow", "media", "environment", "crash"]


@pytest.fixture
def log() -> Iterator[ServerLog]:
    server_log = ServerLog()
    yield server_log
    server_log.close()


@pytest.fixture
def others() -> set[int]:
    """The child processes that were there before the test (another test's server)."""
    return {pid for pid, _ in children()}


@pytest.fixture
def tools(log: ServerLog, others: set[int]) -> Iterator[MCPTools]:
    with MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer, timeout=20) as mcp_tools:
        yield mcp_tools
    assert children(others) == [], "the server process (or a zombie) outlived close()"


class Shared:
    """One server for the tests that leave it as they found it (a server start costs about a second)."""

    def __init__(self, log: ServerLog, tools: MCPTools) -> None:
        self.log = log
        self.tools = tools


@pytest.fixture(scope="module")
def shared() -> Iterator[Shared]:
    server_log = ServerLog()
    with MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=server_log.writer, timeout=20) as mcp_tools:
        yield Shared(server_log, mcp_tools)
    server_log.close()


def results(result: Any) -> list[tuple[str, str, bool]]:
    return [(r.name, r.content, r.is_error) for step in result.steps for r in step.tool_results]


def test_the_servers_tools_become_definitions_and_tool_objects(shared: Shared) -> None:
    tools = shared.tools
    assert list(tools) == SERVER_TOOLS
    assert len(tools) == len(SERVER_TOOLS)
    definitions = {d.name: d for d in tools.definitions()}
    assert definitions["add"].description == "Add two integers."
    assert '"a": {"title": "A", "type": "integer"}' in definitions["add"].input_schema
    assert definitions["files_read"].description == "A tool whose MCP name has a dot."
    add = tools["add"]
    assert isinstance(add, MCPTool)
    assert add.name == "add"
    assert add.annotations == {"title": "Adder", "readOnlyHint": True}
    assert add.output_schema is not None
    assert tools["echo"].annotations == {}
    assert tools["files_read"].name == "files.read"
    assert repr(tools) == f"MCPTools.stdio({PYTHON + ' ' + TOOLS_SERVER!r})"
    assert tools.label == f"MCP server {PYTHON + ' ' + TOOLS_SERVER!r}"
    assert "nope" not in tools


def test_a_run_calls_the_tools_and_sees_results_and_errors(shared: Shared) -> None:
    tools = shared.tools
    model = ScriptedModel(
        [
            tool_step(
                call("1", "add", '{"a": 2, "b": 40}'),
                call("2", "echo", '{"text": "héllo"}'),
                call("3", "files_read", '{"path": "/etc/motd"}'),
                call("4", "fail", '{"message": "no such city"}'),
                call("5", "media"),
                call("6", "add", '{"a": "two"}'),
            ),
            text_step("done"),
        ]
    )
    result = generate(options(model, tools=tools))
    assert result.text == "done"
    assert [d.name for d in model.requests[0].tools] == SERVER_TOOLS
    assert results(result)[:5] == [
        ("add", '{"result": 42}', False),
        ("echo", "héllo", False),
        ("files_read", "contents of /etc/motd", False),
        ("fail", "Error: MCPToolError: Error executing tool fail: no such city", True),
        (
            "media",
            "a picture:\n[audio: audio/wav, 3 bytes, not shown]\n"
            "[resource link: file:///tmp/report.pdf (report, application/pdf)]\n"
            "[resource: memo://1, text/plain]\nmemo text",
            False,
        ),
    ]
    media = result.steps[0].tool_results[4]
    assert media.files == (
        File(media_type="image/png", data=b"\x89PNG\r\n\x1a\n"),
        File(media_type="application/pdf", data=b"%PDF-1.4", filename="brief.pdf"),
    )
    assert model.requests[1].messages[-1].tool_results[4].files == media.files  # sent to the model
    name, content, is_error = results(result)[5]
    assert (name, is_error) == ("add", True)
    assert content.startswith("Error: MCPToolError: ")
    assert "validation error" in content


def test_calls_run_in_parallel_over_one_session(shared: Shared) -> None:
    model = ScriptedModel(
        [tool_step(*(call(str(i), "slow", '{"seconds": 0.3}') for i in range(4))), text_step("ok")]
    )
    start = time.monotonic()
    result = generate(options(model, tools=shared.tools, parallel_tools=True))
    assert time.monotonic() - start < 1.1  # four 0.3 s calls at once, not one after another
    assert results(result) == [("slow", "slept", False)] * 4
    for _ in range(4):
        shared.log.wait_for("slow started")


def test_a_call_past_its_timeout_is_an_error_result_and_the_server_cancels_it(log: ServerLog) -> None:
    with MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer, timeout=0.5) as tools:
        model = ScriptedModel(
            [
                tool_step(call("1", "slow", '{"seconds": 30}')),
                tool_step(call("2", "add", '{"a": 1, "b": 1}')),
                text_step("ok"),
            ]
        )
        start = time.monotonic()
        result = generate(options(model, tools=tools))
        assert time.monotonic() - start < 5
        assert results(result) == [
            (
                "slow",
                f"Error: TimeoutError: {tools.label}: the tool 'slow' did not answer within 0.5 s; "
                "the server was told to cancel the call",
                True,
            ),
            ("add", '{"result": 2}', False),  # the same session goes on
        ]
        log.wait_for("slow started")
        log.wait_for("slow cancelled")


def test_a_server_that_crashes_mid_run_is_restarted_on_the_next_call(
    tools: MCPTools, others: set[int]
) -> None:
    before = {pid for pid, _ in children(others)}
    model = ScriptedModel(
        [
            tool_step(call("1", "crash")),
            tool_step(call("2", "add", '{"a": 1, "b": 2}')),
            text_step("survived"),
        ]
    )
    result = generate(options(model, tools=tools))
    assert result.text == "survived"
    assert results(result) == [
        (
            "crash",
            f"Error: MCPServerError: {tools.label}: the connection broke during the call to 'crash' "
            "(Connection closed); it is opened again on the next call",
            True,
        ),
        ("add", '{"result": 3}', False),
    ]
    [(pid, state)] = children(others)  # the dead process was reaped: no zombie
    assert pid not in before
    assert state != "Z"


def test_a_server_killed_during_a_call_fails_that_call_only(
    tools: MCPTools, log: ServerLog, others: set[int]
) -> None:
    def kill_when_started() -> None:
        pid = int(log.wait_for("slow started").split()[-1])
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_started)
    killer.start()
    model = ScriptedModel(
        [
            tool_step(call("1", "slow", '{"seconds": 30}')),
            tool_step(call("2", "echo", '{"text": "back"}')),
            text_step("ok"),
        ]
    )
    result = generate(options(model, tools=tools))
    killer.join()
    [(name, content, is_error), second] = results(result)
    assert (name, is_error) == ("slow", True)
    assert content.startswith(
        f"Error: MCPServerError: {tools.label}: the connection broke during the call to 'slow'"
    )
    assert second == ("echo", "back", False)
    [(_, state)] = children(others)  # the restarted server; the killed one was reaped
    assert state != "Z"


def test_a_changed_tool_list_is_listed_again_for_the_next_run_and_lookups(tools: MCPTools) -> None:
    model = ScriptedModel([tool_step(call("1", "grow")), tool_step(call("2", "extra")), text_step("grown")])
    result = generate(options(model, tools=tools))
    # a lookup by name lists again: the new tool runs in the same run
    assert results(result) == [("grow", "grown", False), ("extra", "extra ran", False)]
    assert "extra" in tools
    second = ScriptedModel([text_step("hi")])
    generate(options(second, tools=tools))
    assert [d.name for d in second.requests[0].tools] == [*SERVER_TOOLS, "extra"]


def test_a_changed_tool_list_is_offered_at_the_next_step(tools: MCPTools) -> None:
    model = ScriptedModel([tool_step(call("1", "grow")), text_step("grown")])
    generate(options(model, tools=tools))
    assert [d.name for d in model.requests[1].tools] == [*SERVER_TOOLS, "extra"]


def test_closing_the_reader_cancels_the_call_at_once_and_the_server_stops_it(shared: Shared) -> None:
    tools, log = shared.tools, shared.log
    before = set(threading.enumerate())
    model = ScriptedModel([tool_step(call("1", "slow", '{"seconds": 60}')), text_step("never")])
    reader = run(options(model, tools=tools))
    log.wait_for("slow started")
    [worker] = [t for t in threading.enumerate() if t.name == "agentcore-stream" and t not in before]
    start = time.monotonic()
    reader.close()
    closed = time.monotonic() - start
    worker.join(CLOSE_BOUND)
    returned = time.monotonic() - start
    assert closed < CLOSE_BOUND
    assert not worker.is_alive()
    assert returned < CLOSE_BOUND
    log.wait_for("slow cancelled")  # notifications/cancelled reached the server
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert tools["add"].execute({"a": 1, "b": 1}, Context()) == '{"result": 2}'


def test_a_cancelled_context_stops_a_direct_call(shared: Shared) -> None:
    tools, log = shared.tools, shared.log
    ctx = Context()
    failure: list[BaseException] = []

    def call_slow() -> None:
        try:
            tools["slow"].execute({"seconds": 60}, ctx)
        except BaseException as exc:
            failure.append(exc)

    caller = threading.Thread(target=call_slow)
    caller.start()
    log.wait_for("slow started")
    start = time.monotonic()
    ctx.cancel()
    caller.join(CLOSE_BOUND)
    assert time.monotonic() - start < CLOSE_BOUND
    assert [type(e) for e in failure] == [Canceled]
    log.wait_for("slow cancelled")


def test_close_is_idempotent_and_a_closed_set_refuses_use(log: ServerLog) -> None:
    tools = MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer)
    add = tools["add"]
    tools.close()
    tools.close()
    assert tools.closed
    assert repr(tools).endswith(" (closed)")
    with pytest.raises(ConfigError, match="is closed"):
        tools.definitions()
    with pytest.raises(ConfigError, match="is closed"):
        add.execute({"a": 1, "b": 1}, Context())
    model = ScriptedModel([text_step("never")])
    with pytest.raises(RunError) as info:
        generate(options(model, tools=tools))
    assert isinstance(info.value.err, ConfigError)


def test_closing_the_tools_ends_a_call_in_flight(log: ServerLog, others: set[int]) -> None:
    tools = MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer)
    failure: list[BaseException] = []

    def call_slow() -> None:
        try:
            tools["slow"].execute({"seconds": 60}, Context())
        except BaseException as exc:
            failure.append(exc)

    caller = threading.Thread(target=call_slow)
    caller.start()
    log.wait_for("slow started")
    tools.close()
    caller.join(5)
    assert [str(e) for e in failure] == [f"{tools.label}: the tools were closed during the call"]
    assert children(others) == []


def test_the_server_gets_an_allowlisted_environment_plus_env(
    log: ServerLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCORE_TEST_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("LC_TIME", "C")
    ctx = Context()
    with MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer, env={"GIVEN": "yes"}) as tools:
        read = tools["environment"]
        assert read.execute({"name": "AGENTCORE_TEST_API_KEY"}, ctx) == "<unset>"
        assert read.execute({"name": "GIVEN"}, ctx) == "yes"
        assert read.execute({"name": "PATH"}, ctx) == os.environ["PATH"]  # the SDK's allowlist
        assert read.execute({"name": "LC_TIME"}, ctx) == "<unset>"
    with MCPTools.stdio(
        PYTHON, [TOOLS_SERVER], stderr=log.writer, env=server_environment(os.environ)
    ) as tools:
        read = tools["environment"]
        assert read.execute({"name": "LC_TIME"}, ctx) == "C"
        assert read.execute({"name": "AGENTCORE_TEST_API_KEY"}, ctx) == "<unset>"


def test_a_prefix_tells_two_servers_apart_and_a_clash_names_both(log: ServerLog) -> None:
    @tool
    def echo(text: str) -> str:
        """A function tool that clashes with the server's echo."""
        return text

    with (
        MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer) as one,
        MCPTools.stdio(PYTHON, [TOOLS_SERVER], stderr=log.writer, prefix="two_") as two,
    ):
        both = combine(one, two)
        assert list(both) == [*SERVER_TOOLS, *(f"two_{n}" for n in SERVER_TOOLS)]
        assert both["two_add"].execute({"a": 1, "b": 2}, Context()) == '{"result": 3}'
        assert repr(both) == f"combine({one!r}, {two!r})"
        with pytest.raises(ConfigError) as info:
            combine(one, [echo])
        assert str(info.value) == (
            f"two tools are named 'echo': the tool 'echo' of {one.label} and FunctionTool('echo'); "
            "give an MCP server a prefix (prefix='...')"
        )


def test_a_server_that_cannot_start_is_an_error_at_construction(others: set[int]) -> None:
    with pytest.raises(MCPServerError) as info:
        MCPTools.stdio("/nonexistent/mcp-server")
    assert str(info.value).startswith(
        "could not start MCP server '/nonexistent/mcp-server': FileNotFoundError"
    )
    with pytest.raises(MCPServerError) as info:
        MCPTools.stdio(f"{PYTHON} {TOOLS_SERVER}")
    assert str(info.value).endswith("(the command is one program; pass its arguments in args)")
    with pytest.raises(MCPServerError) as info:
        MCPTools.stdio(PYTHON, ["-c", "import sys; sys.exit(3)"])
    assert "could not start MCP server" in str(info.value)
    assert children(others) == []


def test_a_server_that_never_answers_times_out_at_construction(others: set[int]) -> None:
    start = time.monotonic()
    with pytest.raises(MCPServerError) as info:
        MCPTools.stdio(PYTHON, ["-c", "import sys; sys.stdin.read()"], connect_timeout=0.5)
    assert str(info.value).endswith("it did not answer within 0.5 s")
    assert time.monotonic() - start < 5
    assert children(others) == []


@pytest.mark.slow
def test_a_server_that_ignores_stdin_closing_is_terminated_then_killed(
    log: ServerLog, monkeypatch: pytest.MonkeyPatch, others: set[int]
) -> None:
    assert (STDIN_GRACE, TERM_GRACE) == (2.0, 2.0)  # the documented defaults (docs/mcp.md)
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", 0.3)
    monkeypatch.setattr(mcp.client.stdio, "FORCE_KILL_TIMEOUT", 0.3)
    tools = MCPTools.stdio(PYTHON, [TOOLS_SERVER, "--linger"], stderr=log.writer)
    [(pid, _)] = children(others)
    start = time.monotonic()
    tools.close()
    took = time.monotonic() - start
    log.wait_for("lingering")  # it outlived its stdin
    assert 0.6 <= took < 3  # both grace periods ran out: SIGTERM was ignored, SIGKILL was not
    assert children(others) == []
    assert not os.path.exists(f"/proc/{pid}")


def test_a_direct_execute_raises_what_the_loop_feeds_back(shared: Shared) -> None:
    tools = shared.tools
    ctx = Context()
    with pytest.raises(MCPToolError) as info:
        tools["fail"].execute({"message": "no such city"}, ctx)
    assert str(info.value) == "Error executing tool fail: no such city"
    with pytest.raises(MCPToolError, match="validation error"):
        tools["echo"].execute({}, ctx)  # the server refuses the missing text
