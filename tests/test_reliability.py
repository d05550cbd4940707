"""Idle timeout, deadlines, Retry-After limits and back-pressure.

Through :func:`agentcore.run`, both adapters, against the real local server:

* ``idle_timeout`` ends a stream that sends only pings as ``TRANSIENT``;
* ``Context(timeout=...)`` bounds a whole run: retry waits (a server hint or
  the computed backoff), a stalled read, many steps, a slow tool (the
  deadlines are on a ManualClock that the test moves, so none is waited for);
* ``retry_after_limit`` refuses a hint longer than the limit, in each
  Retry-After form, at once and with the error; a shorter hint is waited;
* a consumer that stops reading holds the producer at the queue bound, and a
  million parts pass through with flat memory.
"""

from __future__ import annotations

import email.utils
import sys
import threading
import time
from typing import Any

import pytest

from agentcore import (
    Canceled,
    Context,
    DeadlineExceeded,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    RunError,
    StreamPartKind,
    ToolDefinition,
    Usage,
    run,
    user_message,
)
from agentcore.context import ManualClock
from agentcore.transport import Timeout
from tests.faults import DIALECTS, U1, U2, Dialect
from tests.faults.measure import back_pressure, million_parts
from tests.localserver import LocalServer, Pause, Reply, Stall, json_reply
from tests.loop_helpers import SEND, asleep_in, wait_until

DIALECT_IDS = [d.name for d in DIALECTS]


@pytest.fixture
def server(shared_server: LocalServer) -> LocalServer:
    """The module's one server, reset for each test (tests/conftest.py)."""
    return shared_server


def stream(*actions: Any) -> Reply:
    flat: list[Any] = []
    for action in actions:
        flat.extend(action) if isinstance(action, list) else flat.append(action)
    return Reply(actions=flat)


def failed(reader: Any) -> RunError:
    with pytest.raises(RunError) as info:
        reader.result()
    return info.value


def blocked_reading() -> bool:
    """True while the run's worker is blocked in a socket read."""
    frames = sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1) if thread.name == "agentcore-stream" else None
        if (
            frame is not None
            and frame.f_code.co_name == "readinto"
            and frame.f_code.co_filename.endswith("socket.py")
        ):
            return True
    return False


class Sleeper:
    """A tool that waits on the context for up to 30 s."""

    definition = ToolDefinition(name="sleep", description="Sleep.", input_schema='{"type":"object"}')

    def __init__(self) -> None:
        self.started = threading.Event()

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        self.started.set()
        return "interrupted" if ctx.wait(30.0) else "slept"


class Quick:
    definition = ToolDefinition(name="echo", description="Echo.", input_schema='{"type":"object"}')

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "ok"


# --- idle timeout --------------------------------------------------------------------------------


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_idle_timeout_ends_a_ping_only_stream_as_transient(server: LocalServer, d: Dialect) -> None:
    pings: list[Any] = []
    for _ in range(60):
        pings += [d.ping(), Pause(0.05)]
    server.add(stream(*pings, Stall()))
    # The read timeout alone would never fire: a ping arrives every 50 ms.
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=5.0, idle=0.4))
    start = time.monotonic()
    error = failed(run(LoopOptions(model=model, messages=[user_message("hi")], max_retries=0)))
    elapsed = time.monotonic() - start
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.TRANSIENT
    assert "idle" in str(error.err)
    assert 0.4 <= elapsed < 2.0
    assert server.hits == 1


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_idle_timeout_is_retried_like_any_transient_failure(server: LocalServer, d: Dialect) -> None:
    server.add(stream(d.ping(), Pause(0.05), d.ping(), Stall()), stream(d.text_step(U2, "back")))
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=5.0, idle=0.3))
    result = run(LoopOptions(model=model, messages=[user_message("hi")], retry_base_delay=0.01)).result()
    assert (result.text, result.usage, server.hits) == ("back", U2, 2)


# --- the deadline bounds the whole run -----------------------------------------------------------


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_deadline_bounds_retry_waits_on_server_hints(server: LocalServer, d: Dialect) -> None:
    server.add(json_reply(503, d.error_body("overloaded_error", "busy"), {"retry-after-ms": "300"}))
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=5.0))
    clock = ManualClock()
    waits: list[float] = []

    def wait(seconds: float) -> None:  # each retry wait moves the deadline's clock instead of sleeping
        waits.append(seconds)
        clock.advance(seconds)

    options = LoopOptions(model=model, messages=[user_message("hi")], max_retries=50, retry_sleep=wait)
    error = failed(run(options, Context(timeout=1.0, clock=clock)))
    # Three 0.3 s hints fit in the 1 s deadline; a fourth would outlast it, so
    # the run gives up with the server's error at once, without that wait.
    assert waits == [0.3, 0.3, 0.3]
    assert server.hits == 4
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.OVERLOADED


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_deadline_bounds_the_computed_backoff(server: LocalServer, d: Dialect) -> None:
    server.add(json_reply(502, d.error_body("api_error", "bad gateway")))
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=5.0))
    start = time.monotonic()
    options = LoopOptions(model=model, messages=[user_message("hi")], retry_base_delay=5.0)
    error = failed(run(options, Context(timeout=1.0)))
    assert time.monotonic() - start < 0.8  # a 3.75 to 5 s wait cannot fit: no wait at all
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.TRANSIENT
    assert server.hits == 1


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_deadline_interrupts_a_stalled_read(server: LocalServer, d: Dialect) -> None:
    server.add(stream(d.head(U2), d.text("Hi"), Stall()))
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=30.0, idle=30.0))
    clock = ManualClock()
    reader = run(LoopOptions(model=model, messages=[user_message("hi")]), Context(timeout=0.5, clock=clock))
    assert next(reader).text == "Hi"
    assert wait_until(blocked_reading)
    clock.advance(0.5)  # the deadline passes while the worker is blocked reading
    start = time.monotonic()
    error = failed(reader)
    assert time.monotonic() - start < 1.0
    assert isinstance(error.err, DeadlineExceeded)
    assert error.finish_reason is FinishReason.CANCELED


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_deadline_bounds_a_run_of_many_steps_and_keeps_their_usage(server: LocalServer, d: Dialect) -> None:
    # Every step calls a tool, forever; the deadline passes after the third step.
    server.add(stream(d.tool_step("call_x", "echo", ["{}"], U1)))
    model = d.model(server.url, timeout=Timeout(connect=2.0, read=5.0))
    options = LoopOptions(model=model, messages=[user_message("hi")], tools=[Quick()], step_limit=100)
    clock = ManualClock()
    reader = run(options, Context(timeout=0.8, clock=clock))
    parts = []
    for part in reader:
        parts.append(part)
        if sum(p.kind is StreamPartKind.STEP_FINISH for p in parts) == 3:
            clock.advance(0.8)
    steps = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    assert 3 <= len(steps) < 100
    terminal = parts[-1]
    assert terminal.finish_reason is FinishReason.CANCELED
    assert isinstance(terminal.err, DeadlineExceeded)
    assert terminal.total_usage == sum((s.usage for s in steps), Usage())


def test_deadline_interrupts_a_slow_tool(server: LocalServer) -> None:
    d = DIALECTS[0]
    server.add(stream(d.tool_step("call_s", "sleep", ["{}"], U1)))
    sleeper = Sleeper()
    options = LoopOptions(model=d.model(server.url), messages=[user_message("hi")], tools=[sleeper])
    clock = ManualClock()
    reader = run(options, Context(timeout=0.5, clock=clock))
    assert sleeper.started.wait(5)
    clock.advance(0.5)  # the deadline passes while the tool waits
    start = time.monotonic()
    error = failed(reader)
    assert time.monotonic() - start < 1.0
    assert isinstance(error.err, Canceled)
    assert error.usage == U1  # step 1 completed before the tool ran


# --- retry_after_limit ----------------------------------------------------------------------------


def _date(seconds: float) -> str:
    return email.utils.formatdate(time.time() + seconds, usegmt=True)


HINTS = {
    "seconds": lambda: {"Retry-After": "3600"},
    "http-date": lambda: {"Retry-After": _date(3600)},
    "retry-after-ms": lambda: {"retry-after-ms": "3600000"},
}


@pytest.mark.parametrize("form", sorted(HINTS))
@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_retry_after_limit_refuses_a_long_hint_at_once(server: LocalServer, d: Dialect, form: str) -> None:
    server.add(json_reply(429, d.error_body("rate_limit_error", "slow down"), HINTS[form]()))
    options = LoopOptions(model=d.model(server.url), messages=[user_message("hi")], retry_after_limit=10.0)
    start = time.monotonic()
    error = failed(run(options))
    assert time.monotonic() - start < 0.8
    assert server.hits == 1
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.RATE_LIMITED
    assert 3590 <= error.err.retry_after <= 3600
    assert error.finish_reason is FinishReason.ERROR


@pytest.mark.parametrize("d", DIALECTS, ids=DIALECT_IDS)
def test_retry_after_limit_waits_for_a_shorter_hint(server: LocalServer, d: Dialect) -> None:
    server.add(
        json_reply(429, d.error_body("rate_limit_error", "slow down"), {"retry-after-ms": "200"}),
        stream(d.text_step(U2, "ok")),
    )
    options = LoopOptions(model=d.model(server.url), messages=[user_message("hi")], retry_after_limit=1.0)
    result = run(options).result()
    assert result.text == "ok"
    assert server.requests[1]["at"] - server.requests[0]["at"] >= 0.2


# --- back-pressure -----------------------------------------------------------------------------------


@pytest.mark.parametrize("queue_size", [1, 8, 64])
def test_a_reader_that_stops_holds_the_producer_at_the_queue_bound(queue_size: int) -> None:
    figures = back_pressure(queue_size, pause=0.05)
    # A full queue and one part waiting in send(), plus the batch the reader
    # took with the part it read (the whole queue of that moment: 0 to
    # queue_size parts).
    assert queue_size + 1 <= figures.offered_after_stop <= 2 * queue_size + 1
    assert figures.offered_later == figures.offered_after_stop, "the producer kept going"


def test_the_producer_resumes_when_the_reader_does() -> None:
    from agentcore.testing import ScriptedModel
    from tests.faults.measure import Offer

    offer = Offer(limit=1000)
    reader = run(LoopOptions(model=ScriptedModel([offer]), messages=[user_message("go")], queue_size=4))
    next(reader)
    # Held at the bound: asleep on the queue it filled again after the reader's take.
    assert wait_until(lambda: offer.offered >= 4 + 2 and asleep_in("agentcore-stream", SEND))
    assert offer.offered <= 9
    parts = list(reader)
    assert offer.offered == 1000
    assert len(parts) == 1000 - 1 + 2  # the rest of the deltas, step-finish, finish


@pytest.mark.slow
def test_a_million_parts_pass_with_flat_memory() -> None:
    figures = million_parts(1_000_000)
    growth = figures.rss_peak - figures.rss_start
    # The history keeps the step's text (about 9 bytes a part); parts waiting
    # in a queue would cost over 100 bytes each (more than 100 MB here).
    assert growth < 40 * 1024 * 1024, growth
    assert figures.rss_end - figures.rss_start < 20 * 1024 * 1024
