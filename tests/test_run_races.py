"""Races between a run's end and a cancel, through the public API
(agentcore/engine/loop.py, agentcore/engine/channel.py): exactly one terminal part, last,
whoever ends the run; and an idle run's reader sleeps until something happens."""

from __future__ import annotations

import logging
import random
import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import agentcore.context
from agentcore import Context, FinishReason, Request, StreamPart, Usage, run
from agentcore.testing import ScriptedModel
from tests.loop_helpers import asleep_in, collect, options, text_step, wait_until


def text(value: str) -> StreamPart:
    return StreamPart.text_delta(value)


@pytest.fixture
def tiny_switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_stress_a_cancel_racing_the_workers_end_leaves_one_terminal_part(tiny_switch_interval: None) -> None:
    # A caller's cancel and the worker's own end race on every run; each run
    # must end with exactly one terminal part, last, whichever won.
    model_step = text_step("a", "b", usage=Usage(3, 4))
    outcomes = {"finish": 0, "error": 0}
    for _ in range(3000):
        ctx = Context()
        reader = run(options(ScriptedModel([model_step])), ctx)
        canceller = threading.Thread(target=ctx.cancel)
        canceller.start()
        parts = collect(reader)  # exactly one terminal part, last
        canceller.join()
        outcomes[parts[-1].kind.value] += 1
    # Both sides won some races (about 2,200 finishes and 800 cancels on a 2-CPU
    # machine): the race the test is about did happen.
    assert outcomes["finish"] > 0
    assert outcomes["error"] > 0


def test_a_slow_log_handler_on_the_cancelling_thread_does_not_lose_the_terminal_part() -> None:
    # The canceller ends the run and then logs; a handler that holds it until
    # the worker has finished must not leave the reader without a terminal part.
    release = threading.Event()

    class WaitForTheWorker(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "run ended" in record.getMessage() and threading.current_thread().name != "agentcore-stream":
                workers = [t for t in threading.enumerate() if t.name == "agentcore-stream"]
                release.set()
                for worker in workers:
                    worker.join(5)

    def blocking(_request: object, ctx: Context) -> Iterator[StreamPart]:
        yield text("a")
        ctx.wait(30)
        yield StreamPart.step_finish(FinishReason.STOP)

    logger = logging.getLogger("agentcore")
    handler = WaitForTheWorker()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        ctx = Context()
        reader = run(options(ScriptedModel([blocking])), ctx)
        assert next(reader).text == "a"
        ctx.cancel()
        parts = collect(reader, timeout=10)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert release.is_set()
    assert parts[-1].finish_reason is FinishReason.CANCELED


TAKE = "agentcore/engine/channel.py:take"
"""Where a reader sleeps until a part comes (see :func:`asleep_in`)."""


def silent_model(started: threading.Event) -> ScriptedModel:
    """A model that sends nothing until the run is cancelled."""

    def silent(_request: object, ctx: Context) -> Iterator[StreamPart]:
        started.set()
        ctx.wait()
        yield StreamPart.step_finish(FinishReason.STOP)

    return ScriptedModel([silent])


def test_an_idle_run_wakes_nobody() -> None:
    # A reader waiting for a model that sends nothing waits without a time
    # limit, asleep in the kernel, until a part comes: only a notify can wake
    # it (1,000 idle runs polling every 0.25 s made 4,000 wakeups a second).
    started = threading.Event()
    reader = run(options(silent_model(started)))
    parts: list[StreamPart] = []
    reading = threading.Thread(target=lambda: parts.extend(reader), name="idle-reader")
    reading.start()
    assert started.wait(5)
    assert wait_until(lambda: asleep_in("idle-reader", TAKE, untimed=True))
    reader.close()
    reading.join(5)
    assert parts == []


def test_a_main_thread_reader_never_misses_the_end_that_lands_as_its_wait_slice_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The main thread waits in slices. CPython's Condition hands a notify to a
    # waiter whose slice just ran out (its wait returns False, notified or not):
    # a reader that then waited another slice without looking at the queue
    # again slept through the run's end for good. Steps that end about when a
    # slice does make that moment come often; a watchdog turns a hang into a
    # KeyboardInterrupt on this thread instead of a stuck suite.
    assert threading.current_thread() is threading.main_thread()
    monkeypatch.setattr(agentcore.context, "MAIN_THREAD_SLICE", 0.002)
    main_thread = threading.main_thread().ident
    assert main_thread is not None

    def step(_request: Request, _ctx: Context) -> list[StreamPart]:
        time.sleep(random.uniform(0.0015, 0.0025))  # the model's work: ends near a slice's end
        return [text("hi"), StreamPart.step_finish(FinishReason.STOP, Usage(1, 1))]

    finished = 0
    for _ in range(400):
        done = threading.Event()
        watchdog = threading.Thread(target=_interrupt_unless_set, args=(done, main_thread))
        watchdog.start()
        try:
            result = run(options(ScriptedModel([step]))).result()
        except KeyboardInterrupt:
            pytest.fail(f"the reader slept through the end of run {finished + 1}")
        finally:
            done.set()
            watchdog.join()
        assert result.text == "hi"
        finished += 1
    assert finished == 400


def _interrupt_unless_set(done: threading.Event, thread: int) -> None:
    """Ctrl-C ``thread`` unless ``done`` is set within 10 s."""
    if not done.wait(10):
        signal.pthread_kill(thread, signal.SIGINT)
