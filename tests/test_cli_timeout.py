"""The command's ``--timeout SECONDS``: one deadline for the whole run, retry
waits and tool calls included; when it passes the run is cancelled and the
command exits with status 124 and one line on stderr."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    ModelError,
    StreamPart,
    ToolCall,
    ToolDefinition,
    Usage,
    cli,
)
from agentcore.testing import ScriptedModel, TestModel
from tests.conftest import wait_for_threads

TIMED_OUT = "agentcore: timed out after 0.3 s (--timeout)"


def silent_step(cancelled: threading.Event) -> Callable[[Any, Context], Iterator[StreamPart]]:
    """A step that sends nothing for 30 s unless its context is cancelled first."""

    def step(request: Any, ctx: Context) -> Iterator[StreamPart]:
        if ctx.wait(30):
            cancelled.set()
        ctx.check()
        yield StreamPart.step_finish(FinishReason.STOP, Usage(input=1, output=1))

    return step


def test_a_silent_model_is_cut_off_with_status_124_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    cancelled = threading.Event()
    started = time.monotonic()
    code = cli.main(["--timeout", "0.3", "hi"], model=ScriptedModel([silent_step(cancelled)]))
    elapsed = time.monotonic() - started
    out, err = capsys.readouterr()
    assert code == cli.EXIT_TIMEOUT == 124
    assert (out, err) == ("", TIMED_OUT + "\n")
    assert 0.3 <= elapsed < 5
    assert cancelled.wait(5)
    assert wait_for_threads("agentcore-stream") == 0


def test_with_json_the_last_object_is_the_deadline_error(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["--json", "--timeout", "0.3", "hi"], model=ScriptedModel([silent_step(threading.Event())])
    )
    out, err = capsys.readouterr()
    assert code == 124
    last = json.loads(out.splitlines()[-1])
    assert (last["kind"], last["finish_reason"], last["error_type"]) == (
        "error",
        "canceled",
        "DeadlineExceeded",
    )
    assert err == TIMED_OUT + "\n"


def test_the_deadline_covers_retries(capsys: pytest.CaptureFixture[str]) -> None:
    """A retry runs inside the deadline: the second attempt is cut off."""
    cancelled = threading.Event()
    model = ScriptedModel(
        [
            # A 10 ms hint: the retry fits the 0.3 s deadline even when the first
            # attempt is slow on a loaded machine (with 0.1 s it once did not).
            ModelError(ErrorClass.RATE_LIMITED, retry_after=0.01, message="slow down", status=429),
            silent_step(cancelled),
        ]
    )
    code = cli.main(["--timeout", "0.3", "hi"], model=model)
    assert code == 124
    assert capsys.readouterr().err.splitlines()[-1] == TIMED_OUT
    assert len(model.requests) == 2
    assert cancelled.wait(5)


def test_a_retry_wait_longer_than_the_time_left_ends_the_run_with_the_error_at_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The loop does not start a wait the deadline would cut short: the
    server's error is the outcome (status 1), not the deadline."""
    model = ScriptedModel(
        [
            ModelError(ErrorClass.RATE_LIMITED, retry_after=60.0, message="slow down", status=429),
            [StreamPart.text_delta("late"), StreamPart.step_finish(FinishReason.STOP)],
        ]
    )
    started = time.monotonic()
    code = cli.main(["--timeout", "30", "hi"], model=model)
    assert time.monotonic() - started < 5
    assert code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "agentcore: error: rate limited: slow down (HTTP 429) (retry after 60 s)"
    )
    assert len(model.requests) == 1


def test_the_deadline_covers_a_slow_tool(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cancelled = threading.Event()

    class Slow:
        definition = ToolDefinition(name="calculator")

        def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
            if ctx.wait(30):
                cancelled.set()
            return "done"

    call = ToolCall(id="c1", name="calculator", input="{}")
    model = ScriptedModel(
        [[StreamPart.tool_call_event(call), StreamPart.step_finish(FinishReason.TOOL_CALLS)]]
    )
    monkeypatch.setattr(cli, "demo_tools", lambda: [Slow()])
    code = cli.main(["--timeout", "0.3", "hi"], model=model)
    assert code == 124
    assert capsys.readouterr().err.splitlines()[-1] == TIMED_OUT
    assert cancelled.wait(5)


def test_a_run_that_ends_in_time_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--timeout", "60", "hi"], model=TestModel()) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("finish: stop · usage: ")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["--timeout", value, "hi"], model=TestModel()) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"agentcore: error: argument --timeout: must be a positive number of seconds, got {value!r}"
    )
