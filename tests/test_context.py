"""The cancellation context (agentcore/context.py)."""

from __future__ import annotations

import functools
import gc
import logging
import math
import re
import subprocess
import sys
import threading
import time
import tracemalloc
import weakref
from pathlib import Path

import pytest

from agentcore.context import (
    MAIN_THREAD_SLICE,
    Context,
    ManualClock,
    interruptible_wait,
)
from agentcore.errors import Canceled, DeadlineExceeded

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    """A callback that records the thread it ran on, once per call."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.ran = threading.Event()

    def __call__(self) -> None:
        self.threads.append(threading.get_ident())
        self.ran.set()


def test_fresh_context_is_not_cancelled() -> None:
    ctx = Context()
    assert ctx.cancelled is False
    assert ctx.err is None
    assert ctx.deadline is None
    assert ctx.remaining() is None
    ctx.check()  # does not raise
    assert ctx.wait(0.01) is False


def test_cancel_runs_callbacks_once_on_the_cancelling_thread() -> None:
    ctx = Context()
    first, second = Recorder(), Recorder()
    ctx.add_callback(first)
    ctx.add_callback(second)
    cancelling_thread: list[int] = []

    def cancel() -> None:
        cancelling_thread.append(threading.get_ident())
        ctx.cancel()
        ctx.cancel()

    worker = threading.Thread(target=cancel)
    worker.start()
    worker.join(5)
    ctx.cancel()
    assert cancelling_thread[0] != threading.get_ident()
    assert first.threads == cancelling_thread
    assert second.threads == cancelling_thread
    assert ctx.cancelled is True
    assert type(ctx.err) is Canceled
    assert str(ctx.err) == "context canceled"


def test_concurrent_cancels_run_each_callback_once() -> None:
    ctx = Context()
    calls: list[int] = []
    for i in range(20):
        ctx.add_callback(functools.partial(calls.append, i))
    barrier = threading.Barrier(8)

    def cancel() -> None:
        barrier.wait()
        ctx.cancel()

    threads = [threading.Thread(target=cancel) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(calls) == list(range(20))


def test_callbacks_run_in_registration_order() -> None:
    ctx = Context()
    order: list[str] = []
    ctx.add_callback(lambda: order.append("a"))
    ctx.add_callback(lambda: order.append("b"))
    ctx.add_callback(lambda: order.append("c"))
    ctx.cancel()
    assert order == ["a", "b", "c"]


def test_add_callback_after_cancel_runs_at_once_on_this_thread() -> None:
    ctx = Context()
    ctx.cancel()
    late = Recorder()
    remove = ctx.add_callback(late)
    assert late.threads == [threading.get_ident()]
    assert remove() is False
    ctx.cancel()
    assert late.threads == [threading.get_ident()]


def test_remover_unregisters_before_cancel() -> None:
    ctx = Context()
    kept, removed = Recorder(), Recorder()
    ctx.add_callback(kept)
    remove = ctx.add_callback(removed)
    assert remove() is True
    assert remove() is False
    ctx.cancel()
    assert removed.threads == []
    assert len(kept.threads) == 1


def test_remover_after_the_callback_ran_returns_false() -> None:
    ctx = Context()
    rec = Recorder()
    remove = ctx.add_callback(rec)
    ctx.cancel()
    assert rec.threads == [threading.get_ident()]
    assert remove() is False


def test_a_failing_callback_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    ctx = Context()
    after = Recorder()

    def boom() -> None:
        raise RuntimeError("callback failed")

    ctx.add_callback(boom)
    ctx.add_callback(after)
    with caplog.at_level(logging.ERROR, logger="agentcore"):
        ctx.cancel()
    assert len(after.threads) == 1
    assert any("cancel callback raised" in r.getMessage() for r in caplog.records)
    assert any(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in caplog.records)


@pytest.mark.parametrize("reason", [None, ValueError("why"), KeyboardInterrupt()])
def test_cancel_reason_that_is_not_canceled_becomes_canceled(reason: BaseException | None) -> None:
    ctx = Context()
    ctx.cancel(reason)
    assert type(ctx.err) is Canceled
    with pytest.raises(Canceled, match="context canceled"):
        ctx.check()


def test_cancel_with_a_canceled_reason_keeps_it() -> None:
    ctx = Context()
    reason = Canceled("reader closed")
    ctx.cancel(reason)
    assert ctx.err is reason
    with pytest.raises(Canceled) as info:
        ctx.check()
    # check() raises a fresh copy each time, so tracebacks never pile up on one object.
    assert info.value is not reason
    assert type(info.value) is Canceled
    assert str(info.value) == "reader closed"


def test_first_cancel_reason_wins() -> None:
    ctx = Context()
    first = Canceled("first")
    ctx.cancel(first)
    ctx.cancel(Canceled("second"))
    assert ctx.err is first


def test_deadline_fires_callbacks_from_the_shared_scheduler() -> None:
    """The one test of a deadline on real time: the shared thread fires it,
    not before it is due. The others drive a ManualClock."""
    names: list[str] = []
    fired = threading.Event()

    def callback() -> None:
        names.append(threading.current_thread().name)
        fired.set()

    started = time.monotonic()  # before the context: its deadline is at least 0.05 s after this
    ctx = Context(timeout=0.05)
    ctx.add_callback(callback)
    # Nobody polls ``ctx.cancelled``: the scheduler thread must fire it.
    assert fired.wait(3.0)
    elapsed = time.monotonic() - started
    assert 0.0499 <= elapsed < 3.0
    assert names == ["agentcore-deadlines"]
    assert isinstance(ctx.err, DeadlineExceeded)


def test_blocked_wait_returns_when_the_deadline_passes() -> None:
    clock = ManualClock()
    ctx = Context(timeout=5, clock=clock)
    returned: list[bool] = []
    waiter = threading.Thread(target=lambda: returned.append(ctx.wait()))
    waiter.start()
    clock.advance(4.5)
    assert ctx.cancelled is False
    assert ctx.remaining() == 0.5
    assert returned == []
    clock.advance(0.5)
    waiter.join(5)
    assert returned == [True]
    assert isinstance(ctx.err, DeadlineExceeded)


def test_wait_with_seconds_times_out_or_returns_on_cancel() -> None:
    ctx = Context()
    started = time.monotonic()
    assert ctx.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    timer = threading.Timer(0.02, ctx.cancel)
    timer.start()
    started = time.monotonic()
    assert ctx.wait(30) is True
    assert time.monotonic() - started < 3.0
    timer.join()


def test_wait_with_huge_or_infinite_seconds_still_returns_on_cancel() -> None:
    for seconds in (math.inf, 1e12):
        ctx = Context()
        timer = threading.Timer(0.02, ctx.cancel)
        timer.start()
        assert ctx.wait(seconds) is True
        timer.join()


def test_wait_with_negative_seconds_does_not_block() -> None:
    ctx = Context()
    started = time.monotonic()
    assert ctx.wait(-5) is False
    assert time.monotonic() - started < 0.5


def test_deadline_exceeded_type_and_check() -> None:
    ctx = Context(timeout=0.0)
    assert ctx.cancelled is True
    assert isinstance(ctx.err, DeadlineExceeded)
    assert isinstance(ctx.err, Canceled)
    with pytest.raises(DeadlineExceeded, match="deadline exceeded"):
        ctx.check()


def test_deadline_detected_by_polling_before_the_scheduler() -> None:
    # A ManualClock's deadlines fire only when it is advanced: here nothing
    # fires them, and reading the context finds the deadline passed.
    ctx = Context(timeout=0.0, clock=ManualClock())
    waiter = threading.Thread(target=ctx.wait)
    waiter.start()
    assert ctx.cancelled is True  # no scheduler fired it: reading found the deadline passed
    assert isinstance(ctx.err, DeadlineExceeded)
    with pytest.raises(DeadlineExceeded):
        ctx.check()
    waiter.join(5)
    assert not waiter.is_alive()  # a wait() returns once polling found it


def test_reading_cancelled_never_runs_callbacks_on_the_reading_thread() -> None:
    # The callbacks of an expired deadline run on the thread that expires it
    # (the deadline thread; here the one that advances the clock), never on a
    # thread that only looks, which may hold locks the callbacks need.
    clock = ManualClock()
    ctx = Context(timeout=0.0, clock=clock)
    rec = Recorder()
    ctx.add_callback(rec)
    assert ctx.cancelled is True
    assert ctx.err is not None
    assert ctx.wait(0) is True
    assert rec.threads == []
    expirer = threading.Thread(target=clock.advance, args=(0.0,))
    expirer.start()
    expirer.join(5)
    assert rec.threads == [expirer.ident]
    assert isinstance(ctx.err, DeadlineExceeded)


def test_cancelled_and_dropped_deadline_contexts_leave_nothing_behind() -> None:
    """Each pending deadline holds an entry of the shared scheduler; cancelled
    or collected contexts must not keep theirs until the deadline passes
    (100,000 contexts with 600 s deadlines kept 20 MB). 5,000 contexts kept
    about 1 MB that way, ten times the bound, so fewer prove the same."""
    Context(timeout=600)  # the scheduler and its thread exist before measuring
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(5_000):
            ctx = Context(timeout=600)
            if index % 2:
                ctx.cancel()
            del ctx
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < 100_000, retained


def test_cancel_before_the_deadline_is_plain_canceled() -> None:
    clock = ManualClock()
    ctx = Context(timeout=0.1, clock=clock)
    ctx.cancel()
    clock.advance(0.2)
    assert type(ctx.err) is Canceled


def test_deadline_and_remaining() -> None:
    before = time.monotonic()
    ctx = Context(timeout=10)
    after = time.monotonic()
    assert ctx.deadline is not None
    assert before + 10 <= ctx.deadline <= after + 10
    remaining = ctx.remaining()
    assert remaining is not None
    assert 9.0 < remaining <= 10.0
    expired = Context(timeout=0)
    assert expired.remaining() == 0.0


@pytest.mark.parametrize("bad", [-1.0, -0.001, math.nan])
def test_invalid_timeout_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        Context(timeout=bad)


@pytest.mark.parametrize("bad", ["5", True, None.__class__])
def test_a_timeout_that_is_not_a_number_is_a_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match=f"^timeout must be a number of seconds, got {re.escape(repr(bad))}$"):
        Context(timeout=bad)  # type: ignore[arg-type]  # the wrong type is the point


INFINITE_DEADLINES = """
import math, threading
from agentcore.context import Context
from tests.loop_helpers import asleep_in, wait_until

forever = Context(timeout=math.inf)  # the first deadline of this process: the earliest
scheduler = next(t for t in threading.enumerate() if t.name == "agentcore-deadlines")
# The scheduler thread waits for it (it crashed there with OverflowError once).
assert wait_until(lambda: asleep_in("agentcore-deadlines", "agentcore/context.py:_loop"))
far = Context(timeout=1e12)  # now the earliest
soon = Context(timeout=0.0)
fired = threading.Event()
soon.add_callback(fired.set)
assert fired.wait(5)  # the same thread is alive and expires what is due
assert [t for t in threading.enumerate() if t.name == "agentcore-deadlines"] == [scheduler]
assert forever.cancelled is False and far.cancelled is False
assert abs(far.remaining() - 1e12) < 1e6
print("ok")
"""


def test_infinite_and_huge_timeouts_do_not_break_the_scheduler() -> None:
    """A deadline past ``threading.TIMEOUT_MAX`` once crashed the scheduler
    thread with OverflowError as soon as it was the earliest one pending. A
    process of its own makes the infinite deadline the earliest; a thread
    that died would print its traceback on stderr (and a new one would have
    taken its place)."""
    child = subprocess.run(
        [sys.executable, "-c", INFINITE_DEADLINES], capture_output=True, text=True, cwd=ROOT
    )
    assert (child.stdout, child.stderr, child.returncode) == ("ok\n", "", 0)


def test_many_deadlines_fire_in_order() -> None:
    clock = ManualClock()
    fired: list[int] = []
    contexts = []
    for i, timeout in enumerate([0.3, 0.1, 0.2, 0.05, 0.25]):
        ctx = Context(timeout=timeout, clock=clock)
        ctx.add_callback(functools.partial(fired.append, i))
        contexts.append(ctx)
    clock.advance(0.1)
    assert fired == [3, 1]
    clock.advance(1.0)
    assert fired == [3, 1, 2, 4, 0]
    assert all(isinstance(ctx.err, DeadlineExceeded) for ctx in contexts)


def test_parent_cancel_propagates_to_children_and_grandchildren() -> None:
    parent = Context()
    child = Context(parent=parent)
    grandchild = Context(parent=child)
    rec = Recorder()
    grandchild.add_callback(rec)
    reason = Canceled("caller went away")
    parent.cancel(reason)
    assert child.cancelled is True
    assert grandchild.cancelled is True
    assert child.err is reason
    assert grandchild.err is reason
    assert rec.threads == [threading.get_ident()]


def test_parent_deadline_propagates_as_deadline_exceeded() -> None:
    clock = ManualClock()
    parent = Context(timeout=0.1, clock=clock)
    child = Context(parent=parent)
    assert child.deadline == parent.deadline
    clock.advance(0.1)
    assert child.wait(5) is True
    assert isinstance(child.err, DeadlineExceeded)


def test_a_manual_clock_expires_only_when_advanced_on_the_advancing_thread() -> None:
    clock = ManualClock(start=100.0)
    ctx = Context(timeout=2, clock=clock)
    assert ctx.deadline == 102.0
    rec = Recorder()
    ctx.add_callback(rec)
    assert ctx.wait(0.01) is False  # real time passing does not expire it
    clock.advance(1.999)
    assert ctx.cancelled is False
    assert ctx.remaining() == pytest.approx(0.001)
    advancer = threading.Thread(target=clock.advance, args=(0.001,))
    advancer.start()
    advancer.join(5)
    assert rec.threads == [advancer.ident]
    assert isinstance(ctx.err, DeadlineExceeded)
    assert clock() == 102.0


def test_children_take_the_parent_clock_and_refuse_another() -> None:
    clock = ManualClock()
    parent = Context(clock=clock)
    child = Context(timeout=3, parent=parent)
    assert child.deadline == 3.0
    with pytest.raises(ValueError, match="parent's clock"):
        Context(parent=parent, clock=ManualClock())
    with pytest.raises(ValueError, match="parent's clock"):
        Context(parent=Context(), clock=clock)
    assert Context(parent=parent, clock=clock).deadline is None
    clock.advance(3)
    assert isinstance(child.err, DeadlineExceeded)
    assert parent.cancelled is False


@pytest.mark.parametrize("bad", [-1.0, math.nan])
def test_a_manual_clock_only_moves_forward(bad: float) -> None:
    clock = ManualClock(start=5.0)
    with pytest.raises(ValueError, match="only moves forward"):
        clock.advance(bad)
    assert clock() == 5.0


def test_a_manual_clock_keeps_no_cancelled_or_dropped_context() -> None:
    clock = ManualClock()
    kept = Context(timeout=10, clock=clock)
    cancelled = Context(timeout=1, clock=clock)
    dropped = Context(timeout=1, clock=clock)
    ref = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert ref() is None
    cancelled.cancel(Canceled("first"))
    clock.advance(5)
    assert str(cancelled.err) == "first"
    assert kept.cancelled is False
    clock.advance(5)
    assert kept.cancelled is True


def test_child_keeps_the_earlier_of_the_two_deadlines() -> None:
    parent = Context(timeout=100)
    assert Context(timeout=10, parent=parent).deadline != parent.deadline
    assert Context(timeout=1000, parent=parent).deadline == parent.deadline
    assert Context(parent=parent).deadline == parent.deadline


def test_child_cancel_does_not_cancel_the_parent() -> None:
    parent = Context()
    child = Context(parent=parent)
    child.cancel()
    assert child.cancelled is True
    assert parent.cancelled is False


def test_child_of_a_cancelled_parent_starts_cancelled() -> None:
    parent = Context()
    reason = Canceled("already")
    parent.cancel(reason)
    child = Context(parent=parent)
    assert child.cancelled is True
    assert child.err is reason


def test_detach_stops_propagation_and_releases_the_child() -> None:
    parent = Context()
    child = Context(parent=parent)
    child.detach()
    child.detach()  # idempotent
    parent.cancel()
    assert child.cancelled is False
    assert parent.cancelled is True

    parent2 = Context()
    child2 = Context(parent=parent2)
    ref = weakref.ref(child2)
    child2.detach()
    del child2
    gc.collect()
    assert ref() is None


def test_a_cancelled_child_unlinks_itself_from_the_parent() -> None:
    parent = Context()
    child = Context(parent=parent)
    ref = weakref.ref(child)
    child.cancel()
    del child
    gc.collect()
    assert ref() is None
    parent.cancel()


def test_dropped_context_with_long_deadline_is_collected() -> None:
    ctx = Context(timeout=3600)
    ctx.add_callback(lambda: None)
    ref = weakref.ref(ctx)
    del ctx
    gc.collect()
    assert ref() is None


def test_no_thread_per_deadline_context() -> None:
    Context(timeout=3600)  # make sure the shared scheduler exists
    before = set(threading.enumerate())  # by identity: threads other tests leave may end meanwhile
    contexts = [Context(timeout=60 + i) for i in range(100)]
    assert set(threading.enumerate()) - before == set()
    assert [t.name for t in threading.enumerate()].count("agentcore-deadlines") >= 1
    assert not any(c.cancelled for c in contexts)
    refs = [weakref.ref(c) for c in contexts]
    del contexts
    gc.collect()
    assert all(r() is None for r in refs)
    assert set(threading.enumerate()) - before == set()


class Waits:
    """A ``wait(timeout)`` that records its timeouts and answers True at call ``ready_at``."""

    def __init__(self, ready_at: int) -> None:
        self.ready_at = ready_at
        self.timeouts: list[float | None] = []

    def __call__(self, timeout: float | None) -> bool:
        self.timeouts.append(timeout)
        return len(self.timeouts) >= self.ready_at


def test_interruptible_wait_waits_as_asked_off_the_main_thread() -> None:
    waits = Waits(ready_at=1)
    answers: list[bool] = []
    thread = threading.Thread(target=lambda: answers.append(interruptible_wait(waits)))
    thread.start()
    thread.join(5)
    assert (answers, waits.timeouts) == ([True], [None])


def test_interruptible_wait_on_the_main_thread_waits_in_slices() -> None:
    # A Ctrl-C is seen at the end of a slice at the latest, even one that
    # landed just before the wait began (which no lock wait would see).
    assert threading.current_thread() is threading.main_thread()
    waits = Waits(ready_at=3)
    assert interruptible_wait(waits) is True
    assert waits.timeouts == [MAIN_THREAD_SLICE] * 3
    expired = Waits(ready_at=99)
    assert interruptible_wait(expired, 0.0) is False
    assert expired.timeouts == [0.0]
