"""Loop rule 8 of design.md, cancellation in every state, and thread hygiene (engine/loop.py, channel.py).

close() must return promptly, within about 100 ms; the tests allow 0.5 s so
that a loaded machine does not make them flaky.
"""

from __future__ import annotations

import functools
import gc
import logging
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Canceled,
    Context,
    DeadlineExceeded,
    ErrorClass,
    FinishReason,
    ModelError,
    Request,
    Role,
    RunError,
    StreamPart,
    Usage,
    run,
)
from agentcore.context import ManualClock
from agentcore.testing import ScriptedModel
from tests.loop_helpers import (
    SEND,
    FuncTool,
    alive_threads,
    asleep_in,
    assert_valid_history,
    call,
    collect,
    options,
    step_finish,
    summary,
    text,
    text_step,
    tool_step,
    wait_until,
)

CLOSE_BOUND = 0.5  # seconds; close() returns within about 100 ms on an idle machine
ROOT = Path(__file__).resolve().parent.parent


class Threads:
    """The loop's threads started during a test, so leftovers of other tests do not count."""

    def __init__(self) -> None:
        self.before = set(threading.enumerate())

    def new(self, prefix: str) -> list[threading.Thread]:
        return [t for t in alive_threads(prefix) if t not in self.before]

    def wait_gone(self, prefix: str = "agentcore-", timeout: float = 5.0) -> list[threading.Thread]:
        deadline = time.monotonic() + timeout
        while True:
            alive = [t for t in self.new(prefix) if t.name != "agentcore-deadlines"]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.005)


@pytest.fixture
def threads() -> Threads:
    return Threads()


def timed_close(reader: Any) -> float:
    start = time.monotonic()
    reader.close()
    return time.monotonic() - start


def blocking_step(started: threading.Event, released: threading.Event, *first: StreamPart) -> Any:
    """A scripted step that streams ``first``, then blocks on the context like a network read."""

    def produce(_request: Request, ctx: Context) -> Iterator[StreamPart]:
        try:
            yield from first
            started.set()
            ctx.wait(30)
            yield text("never delivered")
            yield step_finish()
        finally:
            released.set()

    return produce


def assert_canceled_result(reader: Any, usage: Usage | None = None) -> RunError:
    with pytest.raises(RunError) as info:
        reader.result()
    error = info.value
    assert error.finish_reason is FinishReason.CANCELED
    assert isinstance(error.err, Canceled)
    assert error.usage == (usage or Usage())
    assert_valid_history(error.messages)
    return error


def test_close_while_the_model_is_streaming(threads: Threads) -> None:
    started, released = threading.Event(), threading.Event()
    model = ScriptedModel([blocking_step(started, released, text("a"))])
    reader = run(options(model))
    assert summary([next(reader)]) == [("text-delta", "a")]
    assert started.wait(5)
    assert timed_close(reader) < CLOSE_BOUND
    assert threads.wait_gone() == []
    assert released.is_set()  # the model's stream was closed
    assert next(reader, None) is None
    assert_canceled_result(reader)
    assert len(model.requests) == 1
    reader.close()  # a second close is a no-op


def test_close_while_waiting_to_retry(threads: Threads) -> None:
    retrying = threading.Event()

    class OnWarning(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno == logging.WARNING:
                retrying.set()

    handler = OnWarning()
    logger = logging.getLogger("agentcore")
    logger.addHandler(handler)
    try:
        model = ScriptedModel([ModelError(ErrorClass.RATE_LIMITED, retry_after=30), text_step("never")])
        reader = run(options(model))
        assert retrying.wait(5)  # logged just before the 30 s wait starts
        assert timed_close(reader) < CLOSE_BOUND
        assert threads.wait_gone() == []
    finally:
        logger.removeHandler(handler)
    assert len(model.requests) == 1
    assert_canceled_result(reader)


@pytest.mark.parametrize("parallel", [False, True])
def test_close_while_a_tool_watches_the_context(threads: Threads, parallel: bool) -> None:
    started = threading.Barrier(3 if parallel else 2, timeout=5)
    saw_cancel: list[bool] = []

    def patient(_arguments: dict[str, Any], ctx: Context) -> str:
        started.wait()
        saw_cancel.append(ctx.wait(30))
        return "stopped early"

    calls = [call("c1", "patient"), call("c2", "patient")] if parallel else [call("c1", "patient")]
    model = ScriptedModel([tool_step(*calls, usage=Usage(5, 1)), text_step("never")])
    on_step: list[Usage] = []
    reader = run(
        options(model, tools=[FuncTool("patient", patient)], parallel_tools=parallel, on_step=on_step.append)
    )
    started.wait()
    elapsed = timed_close(reader)
    assert elapsed < CLOSE_BOUND
    assert threads.wait_gone() == []
    assert saw_cancel == [True] * len(calls)
    assert on_step == [Usage(5, 1)]
    assert len(model.requests) == 1
    error = assert_canceled_result(reader, Usage(5, 1))
    assert [m.role for m in error.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert [r.tool_call_id for r in error.messages[-1].tool_results] == [
        c.tool_call.id for c in calls if c.tool_call
    ]


def test_close_while_the_producer_is_blocked_on_a_full_queue(threads: Threads) -> None:
    produced = [0]
    released = threading.Event()

    def endless(_request: Request) -> Iterator[StreamPart]:
        try:
            while True:
                produced[0] += 1
                yield text(f"x{produced[0]}")
        finally:
            released.set()

    model = ScriptedModel([endless])
    reader = run(options(model, queue_size=1))
    assert [next(reader).text, next(reader).text] == ["x1", "x2"]
    # x3 waits in the queue of one; x4 is produced and its send() sleeps.
    assert wait_until(lambda: produced[0] == 4 and asleep_in("agentcore-stream", SEND))
    assert produced[0] == 4  # the producer is stuck, not spinning
    assert timed_close(reader) < CLOSE_BOUND
    assert threads.wait_gone() == []
    assert released.wait(5)  # the worker lets go of the model right after the reader got the end
    assert next(reader, None) is None


def test_caller_cancels_its_context_from_another_thread() -> None:
    started, released = threading.Event(), threading.Event()
    model = ScriptedModel(
        [
            tool_step(call("call_1", "search"), usage=Usage(100, 20, 50, 0)),
            blocking_step(started, released, text("partial")),
            text_step("never"),
        ]
    )
    on_step: list[Usage] = []
    ctx = Context()
    reader = run(options(model, tools=[FuncTool("search", lambda _i, _c: "ok")], on_step=on_step.append), ctx)
    parts = []
    for part in reader:
        parts.append(part)
        if part.kind.value == "text-delta":
            assert started.wait(5)
            threading.Thread(target=ctx.cancel).start()
    assert summary(parts)[:-1] == [
        ("tool-call", "call_1", "search", "{}"),
        ("step-finish", "tool-calls", Usage(100, 20, 50, 0)),
        ("tool-result", "call_1", "search", "ok", False),
        ("text-delta", "partial"),
    ]
    terminal = parts[-1]
    assert terminal.kind.value == "error"
    assert terminal.finish_reason is FinishReason.CANCELED
    assert terminal.total_usage == Usage(100, 20, 50, 0)
    assert isinstance(terminal.err, Canceled)
    assert not isinstance(terminal.err, DeadlineExceeded)
    assert on_step == [Usage(100, 20, 50, 0)]
    assert len(model.requests) == 2
    assert released.wait(5)  # the worker lets go of the model right after the reader got the end
    error = assert_canceled_result(reader, Usage(100, 20, 50, 0))
    assert error.err is terminal.err
    assert [m.role for m in error.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]


def test_close_during_step_two_keeps_the_usage_of_step_one(threads: Threads) -> None:
    started, released = threading.Event(), threading.Event()
    model = ScriptedModel(
        [
            tool_step(call("call_1", "search"), usage=Usage(100, 20, 50, 0)),
            blocking_step(started, released, text("partial")),
            text_step("never"),
        ]
    )
    on_step: list[Usage] = []
    reader = run(options(model, tools=[FuncTool("search", lambda _i, _c: "ok")], on_step=on_step.append))
    for part in reader:
        if part.kind.value == "text-delta":
            break
    assert started.wait(5)
    assert timed_close(reader) < CLOSE_BOUND
    assert threads.wait_gone() == []
    assert on_step == [Usage(100, 20, 50, 0)]
    assert len(model.requests) == 2
    assert_canceled_result(reader, Usage(100, 20, 50, 0))


def test_deadline_ends_the_run_as_canceled_with_deadline_exceeded(threads: Threads) -> None:
    started, released = threading.Event(), threading.Event()
    model = ScriptedModel([blocking_step(started, released, text("a"))])
    clock = ManualClock()
    reader = run(options(model), Context(timeout=0.2, clock=clock))
    assert started.wait(5)
    clock.advance(0.2)  # the deadline passes while the model blocks
    parts = collect(reader)
    assert summary(parts)[:1] == [("text-delta", "a")]
    terminal = parts[-1]
    assert (terminal.kind.value, terminal.finish_reason) == ("error", FinishReason.CANCELED)
    assert isinstance(terminal.err, DeadlineExceeded)
    assert released.wait(5)  # the worker lets go of the model right after the reader got the end
    assert threads.wait_gone() == []


def test_a_backoff_that_would_outlast_the_deadline_ends_the_run_with_the_error(threads: Threads) -> None:
    overloaded = ModelError(ErrorClass.OVERLOADED)
    model = ScriptedModel([overloaded, text_step("never")])
    reader = run(options(model, retry_base_delay=20, retry_max_delay=20), Context(timeout=5.0))
    start = time.monotonic()
    parts = collect(reader)
    assert time.monotonic() - start < 1.0  # no 15 to 20 s wait that the deadline would cut anyway
    assert parts[-1].err is overloaded
    assert parts[-1].finish_reason is FinishReason.ERROR
    assert len(model.requests) == 1
    assert threads.wait_gone() == []


def test_an_already_cancelled_context_never_calls_the_model() -> None:
    ctx = Context()
    ctx.cancel()
    model = ScriptedModel([text_step("never")])
    parts = collect(run(options(model), ctx))
    assert len(parts) == 1
    assert (parts[0].kind.value, parts[0].finish_reason, parts[0].total_usage) == (
        "error",
        FinishReason.CANCELED,
        Usage(),
    )
    assert isinstance(parts[0].err, Canceled)
    assert model.requests == []


def test_closing_the_reader_does_not_cancel_the_callers_context(threads: Threads) -> None:
    started, released = threading.Event(), threading.Event()
    ctx = Context()
    reader = run(options(ScriptedModel([blocking_step(started, released)])), ctx)
    assert started.wait(5)
    reader.close()
    assert threads.wait_gone() == []
    assert not ctx.cancelled


def test_context_manager_closes_the_reader(threads: Threads) -> None:
    started, released = threading.Event(), threading.Event()
    with run(options(ScriptedModel([blocking_step(started, released, text("a"))]))) as reader:
        assert next(reader).text == "a"
    assert reader.closed
    assert threads.wait_gone() == []
    assert released.wait(5)  # the worker lets go of the model right after the reader got the end


def test_close_while_the_last_tool_result_is_forwarded_keeps_a_valid_history(threads: Threads) -> None:
    holder: list[Any] = []
    ready = threading.Event()

    def closes_the_reader(_arguments: dict[str, Any], _ctx: Context) -> str:
        assert ready.wait(5)
        holder[0].close()  # the reader goes away while this result is being sent
        return "done"

    model = ScriptedModel([tool_step(call("c1", "closer")), text_step("never")])
    reader = run(options(model, tools=[FuncTool("closer", closes_the_reader)]))
    holder.append(reader)
    ready.set()
    assert threads.wait_gone() == []
    history = reader.messages
    assert_valid_history(history)
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert history[-1].tool_results[0].content == "done"
    assert_canceled_result(reader)
    assert len(model.requests) == 1


def test_result_after_close_while_a_tool_ignores_the_context_is_valid(threads: Threads) -> None:
    running, release = threading.Event(), threading.Event()

    def stubborn(_arguments: dict[str, Any], _ctx: Context) -> str:
        running.set()
        assert release.wait(5)
        return "late"

    model = ScriptedModel([tool_step(call("c1", "stubborn")), text_step("never")])
    reader = run(options(model, tools=[FuncTool("stubborn", stubborn)]))
    try:
        assert running.wait(5)
        assert_valid_history(reader.messages)
        assert timed_close(reader) < CLOSE_BOUND
        assert_canceled_result(reader)  # its history is valid even though the tool still runs
    finally:
        release.set()
    assert threads.wait_gone() == []
    assert_valid_history(reader.messages)


@pytest.mark.parametrize("parallel", [False, True])
def test_a_deadline_ends_the_run_while_a_tool_ignores_the_context(threads: Threads, parallel: bool) -> None:
    release, entered = threading.Event(), threading.Event()

    def stubborn(_arguments: dict[str, Any], _ctx: Context) -> str:
        entered.set()
        assert release.wait(10)
        return "late"

    calls = [call("c1", "stubborn"), call("c2", "stubborn")] if parallel else [call("c1", "stubborn")]
    model = ScriptedModel([tool_step(*calls), text_step("never")])
    opts = options(model, tools=[FuncTool("stubborn", stubborn)], parallel_tools=parallel)
    clock = ManualClock()
    try:
        reader = run(opts, Context(timeout=0.3, clock=clock))
        assert entered.wait(5)
        clock.advance(0.3)  # the deadline passes while a tool holds on
        start = time.monotonic()
        parts = collect(reader)
        waited = time.monotonic() - start
    finally:
        release.set()
    assert waited < 2.0  # the deadline, not the tool's 10 s, ends the run
    assert parts[-1].finish_reason is FinishReason.CANCELED
    assert isinstance(parts[-1].err, DeadlineExceeded)
    assert len(model.requests) == 1
    assert threads.wait_gone() == []


def test_a_tool_that_catches_exception_does_not_swallow_the_cancel(threads: Threads) -> None:
    started = threading.Event()
    swallowed: list[str] = []

    def careless(_arguments: dict[str, Any], ctx: Context) -> str:
        started.set()
        try:
            ctx.wait(30)
            ctx.check()
        except Exception as exc:  # the broad handler many tools have
            swallowed.append(type(exc).__name__)
            return "went on"
        return "not cancelled"

    model = ScriptedModel([tool_step(call("c1", "careless")), text_step("never")])
    reader = run(options(model, tools=[FuncTool("careless", careless)]))
    assert started.wait(5)
    reader.close()
    assert threads.wait_gone() == []
    assert swallowed == []
    error = assert_canceled_result(reader)
    assert (
        error.messages[-1].tool_results[0].content == "Error: the run ended before this tool call finished."
    )


def test_a_canceled_of_a_tools_own_context_is_an_error_result() -> None:
    def own_deadline(_arguments: dict[str, Any], _ctx: Context) -> str:
        Context(timeout=0).check()  # the tool's own context, not the run's
        return "unreachable"

    model = ScriptedModel([tool_step(call("c1", "fetch")), text_step("ok")])
    reader = run(options(model, tools=[FuncTool("fetch", own_deadline)]))
    parts = collect(reader)
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert (result.is_error, result.content) == (True, "Error: DeadlineExceeded: context deadline exceeded")
    assert reader.result().text == "ok"


def pause(seconds: float, _arguments: dict[str, Any], ctx: Context) -> str:
    return "interrupted" if ctx.wait(seconds) else "slept"


# --- thread hygiene ----------------------------------------------------------------------------


def test_200_runs_closed_at_random_points_leave_no_threads(threads: Threads) -> None:
    rng = random.Random(20240611)
    for index in range(200):
        parallel = index % 2 == 1
        model = ScriptedModel(
            [
                [text("look"), call("c1", "a"), call("c2", "b"), step_finish(FinishReason.TOOL_CALLS)],
                text_step("one", " two", " three"),
            ]
        )
        delay = rng.random() / 500
        tools = [FuncTool("a", functools.partial(pause, delay)), FuncTool("b")]
        reader = run(options(model, tools=tools, parallel_tools=parallel, queue_size=rng.choice([1, 2, 64])))
        for _ in range(rng.randrange(0, 11)):
            if next(reader, None) is None:
                break
        reader.close()
    assert threads.wait_gone(timeout=10) == []


@pytest.mark.parametrize("where", ["model", "queue"])
def test_a_reader_dropped_without_close_stops_its_worker(threads: Threads, where: str) -> None:
    started, released = threading.Event(), threading.Event()

    def endless(_request: Request) -> Iterator[StreamPart]:
        try:
            while True:
                started.set()
                yield text("x")
        finally:
            released.set()

    step = blocking_step(started, released, text("a")) if where == "model" else endless
    reader = run(options(ScriptedModel([step]), queue_size=1))
    part = next(reader)
    assert part.text in ("a", "x")
    assert started.wait(5)
    del reader
    gc.collect()
    assert threads.wait_gone() == []
    assert released.wait(5)


def test_a_step_the_reader_closed_on_still_counts_its_usage() -> None:
    # The step was billed once the model finished it, even if the reader left
    # at that very moment (here: closed from on_step, before the run's end):
    # RunError keeps its usage.
    usage = Usage(100, 20, 50, 7)
    model = ScriptedModel([[StreamPart.text_delta("hi"), StreamPart.step_finish(FinishReason.STOP, usage)]])
    holder: list[Any] = []
    ready = threading.Event()

    def close_the_reader(_usage: Usage) -> None:
        assert ready.wait(5)
        holder[0].close()

    reader = run(options(model, on_step=close_the_reader))
    holder.append(reader)
    ready.set()
    error = assert_canceled_result(reader, usage)
    assert str(error.err) == "the reader was closed before the run ended"


def test_a_run_ended_by_a_deadline_still_logs_its_end(
    caplog: pytest.LogCaptureFixture, threads: Threads
) -> None:
    caplog.set_level(logging.DEBUG, logger="agentcore")
    release, logged, started = threading.Event(), threading.Event(), threading.Event()
    clock = ManualClock()

    class OnEnd(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "run ended" in record.getMessage():
                logged.set()

    def stubborn(_arguments: dict[str, Any], _ctx: Context) -> str:
        started.set()
        release.wait(10)
        return "late"

    model = ScriptedModel([tool_step(call("c1", "stubborn"), usage=Usage(7, 3)), text_step("never")])
    handler = OnEnd()
    logging.getLogger("agentcore").addHandler(handler)
    try:
        reader = run(options(model, tools=[FuncTool("stubborn", stubborn)]), Context(timeout=5, clock=clock))
        assert started.wait(5)
        clock.advance(5)  # the deadline passes while the tool holds the worker
        collect(reader)
        # The deadline's thread (here: the one that moved the clock) logs right
        # after it queued the terminal part; the worker, whose own end comes
        # later, must not log a second end.
        assert logged.wait(5)
    finally:
        release.set()
        logging.getLogger("agentcore").removeHandler(handler)
    assert threads.wait_gone() == []
    ended = [r.getMessage() for r in caplog.records if "run ended" in r.getMessage()]
    assert ended == [
        "agentcore: run ended (canceled) after 1 step; "
        "usage Usage(input=7, output=3, cache_read=0, cache_write=0)"
    ]


class CloseRaises:
    """A step's parts whose ``close()`` raises, as a body that fails to drain."""

    def __init__(self, parts: list[StreamPart]) -> None:
        self.parts = iter(parts)
        self.closed = threading.Event()

    def __iter__(self) -> CloseRaises:
        return self

    def __next__(self) -> StreamPart:
        return next(self.parts)

    def close(self) -> None:
        self.closed.set()
        raise RuntimeError("the body did not drain")


def test_a_stream_whose_close_fails_after_the_run_is_logged_and_the_result_stands(
    caplog: pytest.LogCaptureFixture, threads: Threads
) -> None:
    """The last step's stream is closed after the terminal part (so the reader
    never waits for a drain); its failure there is tidying up: one warning,
    the run's result unchanged, no exception escaping the worker thread."""
    caplog.set_level(logging.WARNING, logger="agentcore")
    step = CloseRaises(text_step("done", usage=Usage(2, 1)))
    result = run(options(ScriptedModel([step]))).result()
    assert (result.text, result.usage) == ("done", Usage(2, 1))
    assert step.closed.wait(5)
    assert threads.wait_gone() == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "agentcore"]
    assert warnings == ["agentcore: closing the model's stream failed after the run: RuntimeError"]


def test_text_yields_only_the_text_deltas_and_raises_a_failed_runs_error() -> None:
    model = ScriptedModel(
        [tool_step(call("c1", "echo"), usage=Usage(1, 1)), text_step("Hel", "lo", usage=Usage(2, 2))]
    )
    echo = FuncTool("echo", lambda _input, _ctx: "ok")
    assert list(run(options(model, tools=[echo])).text()) == ["Hel", "lo"]

    failing = ScriptedModel([[text("partial"), ModelError(ErrorClass.INVALID_REQUEST, message="bad")]])
    chunks: list[str] = []
    with pytest.raises(RunError) as info:
        chunks.extend(run(options(failing)).text())
    assert chunks == ["partial"]
    assert isinstance(info.value.err, ModelError)
    assert info.value.finish_reason is FinishReason.ERROR


def test_leaving_text_early_closes_the_reader_and_cancels_the_run(threads: Threads) -> None:
    release = threading.Event()

    def slow_parts(_request: Request, ctx: Context) -> Iterator[StreamPart]:
        yield text("first")
        ctx.wait(10)  # until the close cancels the run
        release.set()
        yield text("never")

    reader = run(options(ScriptedModel([slow_parts])))
    for chunk in reader.text():
        assert chunk == "first"
        break
    assert release.wait(5)  # the break closed the reader, which cancelled the run
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert threads.wait_gone() == []


CTRL_C_CHILD = """
import sys, threading, time
from agentcore import LoopOptions, StreamPart, ToolCall, generate, tool, user_message
from agentcore.testing import ScriptedModel

calls = []

def main_thread_in_result():
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        if frame.f_code.co_name == "result" and "agentcore" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False

@tool
def tick() -> str:
    'Count a call, slowly.'
    calls.append(time.monotonic())
    if len(calls) == 1:
        deadline = time.monotonic() + 10
        while not main_thread_in_result() and time.monotonic() < deadline:
            time.sleep(0.001)
        print("ready", flush=True)  # the run is under way and result() waits for it
    time.sleep(0.1)
    return "ok"

step = [StreamPart.tool_call_event(ToolCall("c", "tick", "{}")), StreamPart.step_finish("tool-calls")]
model = ScriptedModel([step] * 30)
options = LoopOptions(model=model, messages=[user_message("go")], tools=[tick], step_limit=30)
try:
    if sys.argv[1] == "generate":
        generate(options)
    else:
        from agentcore import run
        reader = run(options)
        reader.result()
except KeyboardInterrupt as exc:
    kept = exc  # held, as a REPL or Jupyter keeps sys.last_value: the run must stop anyway
    at_interrupt = len(calls)
    # Once the run's worker and tool threads are gone no call can come any more
    # (a run that went on would take its 30 steps, 3 s, before they end).
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(
        t.name in ("agentcore-stream", "agentcore-tool") for t in threading.enumerate()
    ):
        time.sleep(0.01)
    print("calls", at_interrupt, len(calls), flush=True)
"""


@pytest.mark.parametrize("how", ["generate", "result"])
def test_ctrl_c_while_waiting_for_the_result_stops_the_run(how: str) -> None:
    # A user presses Ctrl-C in a script or notebook while generate() or
    # result() waits: the run must stop, not keep calling tools.
    child = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CHILD, how], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=20)
    finally:
        child.kill()
    words = out.split()
    assert words[0] == "calls", out
    at_interrupt, later = int(words[1]), int(words[2])
    assert 1 <= at_interrupt < 30
    assert later <= at_interrupt + 1  # at most the call already running when Ctrl-C came


def test_ctrl_c_in_result_on_this_thread_cancels_the_run(threads: Threads) -> None:
    # The same as the child above, in this process (where coverage sees it):
    # result() closes the reader when KeyboardInterrupt reaches its wait (the
    # main thread waits in slices, so the signal is seen within one).
    started, released = threading.Event(), threading.Event()
    reader = run(options(ScriptedModel([blocking_step(started, released, text("partial"))])))
    main_thread = threading.main_thread().ident
    assert main_thread is not None
    assert threading.current_thread() is threading.main_thread()
    in_result = "agentcore/engine/channel.py:result"

    def interrupt() -> None:
        if started.wait(5) and wait_until(lambda: asleep_in("MainThread", in_result)):
            signal.pthread_kill(main_thread, signal.SIGINT)

    killer = threading.Thread(target=interrupt)
    killer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            reader.result()
    finally:
        killer.join()
    assert reader.closed is True
    assert released.wait(5)  # the run's context was cancelled: the blocked step let go
    assert threads.wait_gone() == []
