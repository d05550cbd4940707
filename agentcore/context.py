"""A small cancellation context, the Python stand-in for Go's ``context.Context``.

A :class:`Context` is cancelled by :meth:`Context.cancel`, by its deadline
(``Context(timeout=seconds)``), or by its parent. Code that blocks registers a
callback with :meth:`Context.add_callback` that unblocks it (an HTTP adapter
shuts its socket down), and waits with :meth:`Context.wait` instead of
``time.sleep``. Callbacks run exactly once, on the thread that cancels.

Deadlines do not start a thread per context: one shared daemon thread keeps a
heap of deadlines and holds contexts only through weak references, so a
context that is dropped before its deadline is collected. The heap entries
of contexts that were cancelled or collected are removed (in bulk, once they
are half the heap), so they do not pile up until their deadlines pass.

A :class:`ManualClock` replaces that clock and thread for a context that is
given one (``Context(timeout=5, clock=clock)``): its deadline passes when
:meth:`ManualClock.advance` moves the clock past it, so a test of a deadline
does not wait for one.

:func:`interruptible_wait` is how agentcore blocks a thread that may be the
main one (a run's reader, an MCP call): where a signal ends a lock wait, it
waits untimed, and elsewhere the main thread waits in slices, so a Ctrl-C
always ends the wait at once or within a slice.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic

from agentcore.errors import Canceled, DeadlineExceeded

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    DepsT = TypeVar("DepsT", default=Any)
else:  # a TypeVar's default needs Python 3.13 at run time; only the type checker reads it
    from typing import TypeVar

    DepsT = TypeVar("DepsT")

_log = logging.getLogger("agentcore")

MAIN_THREAD_SLICE = 0.25
"""Seconds the main thread waits at a time (:func:`wait_slice`): the longest
a Ctrl-C waits to be seen."""


def wait_slice(timeout: float | None) -> float | None:
    """The time limit of one wait of the calling thread that should end at
    a Ctrl-C: ``timeout`` (None: none) off the main thread; on the main
    thread at most :data:`MAIN_THREAD_SLICE` seconds.

    Only the main thread receives signals, and it waits in slices: where a
    signal can end a lock wait (Linux with glibc), one that lands between the
    interpreter's last look for signals and the start of an untimed wait is
    not seen until the wait ends, which for an idle run may be minutes; a
    slice bounds that (docs/design.md, "The run channel"). Every other thread
    waits as asked, so it wakes only when what it waits for happens.

    A caller waiting on a :class:`threading.Condition` waits one slice at a
    time and looks at what it waits for after each: CPython's ``Condition``
    may give a notify to a waiter whose time just ran out (its ``wait``
    returns False although it was notified), so waiting another slice
    without looking again can sleep through the one notify that was sent.
    """
    if threading.current_thread() is not threading.main_thread():
        return timeout
    return MAIN_THREAD_SLICE if timeout is None else min(timeout, MAIN_THREAD_SLICE)


def interruptible_wait(wait: Callable[[float | None], bool], timeout: float | None = None) -> bool:
    """``wait(timeout)`` in slices of :func:`wait_slice`, so that a Ctrl-C
    ends it within :data:`MAIN_THREAD_SLICE` seconds on the main thread.

    Only for a wait that looks at its own state on every call (an event's,
    a future's: True once what it waits for happened, whenever that was); a
    condition's wait is not one (see :func:`wait_slice`).

    Returns:
        ``wait``'s answer: False when ``timeout`` seconds passed first.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if wait(wait_slice(left)):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def _noop() -> bool:
    return False


class Context(Generic[DepsT]):
    """A cancellable context with an optional deadline, carrying the run's
    dependencies (:attr:`deps`).

    Args:
        timeout: seconds from now after which the context cancels itself with
            :class:`DeadlineExceeded`; None for no deadline.
        parent: a context whose cancellation also cancels this one (with the
            parent's error). The link is removed by :meth:`detach`.
        idempotency_key: see :attr:`idempotency_key`; None takes the
            parent's ("" without a parent).
        clock: the clock of the deadline: a :class:`ManualClock` (tests),
            whose :meth:`~ManualClock.advance` expires the context; None
            takes the parent's clock, or ``time.monotonic()`` with the shared
            deadline thread without a parent.
        deps: see :attr:`deps`; None takes the parent's (None without a
            parent).

    Raises:
        TypeError: ``timeout`` is not a number.
        ValueError: ``timeout`` is negative or NaN, or ``clock`` is not the
            parent's clock.

    Thread-safe: any thread may cancel, check or wait.
    """

    def __init__(
        self,
        timeout: float | None = None,
        parent: Context | None = None,
        *,
        idempotency_key: str | None = None,
        clock: ManualClock | None = None,
        deps: DepsT | None = None,
    ) -> None:
        if parent is not None:
            if clock is None:
                clock = parent._clock
            elif clock is not parent._clock:
                raise ValueError("a child context must use its parent's clock")
        self._clock: ManualClock | None = clock
        self._now: Callable[[], float] = time.monotonic if clock is None else clock
        self._scheduler = _scheduler if clock is None else clock._deadlines
        if idempotency_key is None:
            idempotency_key = "" if parent is None else parent.idempotency_key
        self._idempotency_key = idempotency_key
        self._deps: DepsT | None = parent._deps if deps is None and parent is not None else deps
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._err: Canceled | None = None
        self._fired = False
        """True once the callbacks were taken to run (by :meth:`cancel`)."""
        self._callbacks: dict[int, Callable[[], object]] = {}
        self._ids = itertools.count()
        self._deadline: float | None = None
        self._scheduled = False
        self._unlink: Callable[[], bool] = _noop
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
                raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
            if not timeout >= 0:
                raise ValueError(f"timeout must be >= 0 seconds, got {timeout!r}")
            self._deadline = self._now() + timeout
            self._scheduled = True
            self._scheduler.add(self._deadline, self)
        if parent is not None:
            if parent.deadline is not None and (self._deadline is None or parent.deadline < self._deadline):
                self._deadline = parent.deadline
            self._unlink = parent.add_callback(lambda: self.cancel(parent.err))

    @property
    def idempotency_key(self) -> str:
        """The same text every time this tool call runs, "" outside one.

        The context a tool gets in a run with ``LoopOptions.run_id`` carries
        ``"<run id>:<step>:<call id>"``: a call that runs again after a crash
        (tool calls are at-least-once, ``docs/durable.md``) has the same key,
        so a tool can make its side effect exactly-once (a payment API's
        ``Idempotency-Key`` header, a unique key in a database).
        """
        return self._idempotency_key

    @property
    def deps(self) -> DepsT:
        """The run's dependencies: the object given as ``LoopOptions(deps=...)``
        (a database pool, an HTTP client, the current user), None when none
        was given; the same object in every tool call of the run.

        Typed by the annotation: a tool that declares ``ctx: Context[MyDeps]``
        sees ``ctx.deps`` as a ``MyDeps`` (a bare ``Context`` is
        ``Context[Any]``). The annotation is a promise the run does not check.
        """
        return self._deps  # type: ignore[return-value]  # None when no deps were given

    @property
    def deadline(self) -> float | None:
        """The deadline on the context's clock (``time.monotonic()`` unless a
        :class:`ManualClock` was given), or None."""
        return self._deadline

    @property
    def cancelled(self) -> bool:
        """True once the context is cancelled (or its deadline passed).

        Reading it never runs callbacks on the reading thread: a deadline
        seen here first is recorded as the reason, and its callbacks run on
        the deadline thread.
        """
        if self._event.is_set():
            return True
        if self._deadline is not None and self._now() >= self._deadline:
            with self._lock:
                if self._err is None:
                    self._err = DeadlineExceeded("context deadline exceeded")
            self._event.set()
            return True
        return False

    @property
    def err(self) -> Canceled | None:
        """Why the context was cancelled (:class:`Canceled` or
        :class:`DeadlineExceeded`), or None while it is not."""
        return self._err if self.cancelled else None

    def remaining(self) -> float | None:
        """Seconds left before the deadline (>= 0), or None without one."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - self._now())

    def check(self) -> None:
        """Raise :attr:`err` if the context is cancelled.

        Raises:
            Canceled: the context was cancelled (DeadlineExceeded for a deadline).
        """
        if self.cancelled:
            assert self._err is not None
            # A fresh exception per raise: tracebacks never pile up on one shared object.
            raise copy.copy(self._err)

    def wait(self, seconds: float | None = None) -> bool:
        """Block up to ``seconds`` (None: until cancelled) or until cancelled.

        Returns:
            True if the context is cancelled, False if the time ran out first.
        """
        if seconds is not None:
            # Lock timeouts above TIMEOUT_MAX (about 292 years) raise OverflowError.
            self._event.wait(min(max(0.0, seconds), threading.TIMEOUT_MAX))
        else:
            self._event.wait()
        return self.cancelled

    def cancel(self, err: BaseException | None = None) -> None:
        """Cancel the context and run its callbacks; later calls do nothing.

        Args:
            err: the reason; a :class:`Canceled` is used as is, anything else
                (or None) becomes ``Canceled("context canceled")``.
        """
        reason = err if isinstance(err, Canceled) else Canceled("context canceled")
        with self._lock:
            if self._err is None:
                self._err = reason
            if self._fired:
                return
            self._fired = True
            callbacks = list(self._callbacks.values())
            self._callbacks.clear()
        self._event.set()
        self._unlink()
        if self._scheduled:
            self._scheduler.discard()
        for callback in callbacks:
            _run_callback(callback)

    def _expire(self) -> None:
        self.cancel(DeadlineExceeded("context deadline exceeded"))

    def add_callback(self, callback: Callable[[], object]) -> Callable[[], bool]:
        """Run ``callback()`` once when the context is cancelled.

        If the context is already cancelled (and its callbacks ran), the
        callback runs now, on this thread. Exceptions from callbacks are logged and swallowed.

        Returns:
            A function that unregisters the callback; it returns True when the
            callback was removed before it ran.
        """
        with self._lock:
            if not self._fired:
                key = next(self._ids)
                self._callbacks[key] = callback
                return lambda: self._callbacks.pop(key, None) is not None
        _run_callback(callback)
        return _noop

    def detach(self) -> None:
        """Unlink this context from its parent (so a long-lived parent does not
        keep it), without cancelling it."""
        self._unlink()


def _run_callback(callback: Callable[[], object]) -> None:
    try:
        callback()
    except Exception:  # noqa: BLE001 - one bad callback must not stop the others
        _log.exception("agentcore: a cancel callback raised")


class _DeadlineScheduler:
    """The pending deadlines of one clock; with ``threaded``, one daemon
    thread that expires contexts at their deadlines on ``time.monotonic()``.

    Entries of contexts that were cancelled (:meth:`discard`) or collected
    (the weak reference's callback) are counted, and the heap is rebuilt
    without them once they are half of it, so each removal costs O(1)
    amortised. A weak reference's callback may run inside a garbage
    collection on a thread that already holds the lock: it only counts, and
    rebuilds when the lock is free.
    """

    def __init__(self, *, threaded: bool = True) -> None:
        self._threaded = threaded
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, weakref.ref[Context]]] = []
        self._removed: deque[None] = deque()
        """One item per entry known to be dead (a deque: appended without the lock)."""
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, deadline: float, ctx: Context) -> None:
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), weakref.ref(ctx, self._collected)))
            if self._threaded and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._loop, name="agentcore-deadlines", daemon=True)
                self._thread.start()
            self._compact()
            self._cond.notify()

    def discard(self) -> None:
        """A scheduled context was cancelled: its entry is dead."""
        self._removed.append(None)
        with self._cond:
            self._compact()

    def _collected(self, _ref: weakref.ref[Context]) -> None:
        self._removed.append(None)
        if self._cond.acquire(blocking=False):
            try:
                self._compact()
            finally:
                self._cond.release()

    def _compact(self) -> None:
        """Drop the dead entries once they are half the heap (lock held)."""
        if 2 * len(self._removed) < len(self._heap):
            return
        self._removed.clear()
        self._heap = [entry for entry in self._heap if _pending(entry[2])]
        heapq.heapify(self._heap)

    def pop_due(self, now: float) -> list[Context]:
        """Take the contexts whose deadline is at or before ``now``, earliest first."""
        due = []
        with self._cond:
            while self._heap and self._heap[0][0] <= now:
                ctx = heapq.heappop(self._heap)[2]()
                if ctx is not None:
                    due.append(ctx)
        return due

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, _, ref = self._heap[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    self._cond.wait(min(delay, threading.TIMEOUT_MAX))
                    continue
                heapq.heappop(self._heap)
            ctx = ref()
            if ctx is not None:
                ctx._expire()


def _pending(ref: weakref.ref[Context]) -> bool:
    ctx = ref()
    return ctx is not None and not ctx._fired


_scheduler = _DeadlineScheduler()


class ManualClock:
    """A clock for deadlines that moves only when told to, for tests.

    A context made with ``Context(timeout=seconds, clock=clock)`` (and its
    children) has its deadline on this clock instead of ``time.monotonic()``:
    it passes when :meth:`advance` moves the clock to it, never by itself,
    so a test of a deadline needs no real wait. Calling the clock returns
    its time in seconds (``start`` at first). ``Context.wait(seconds)``
    still waits real seconds.

    Thread-safe: any thread may read or advance it.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._time = start
        self._deadlines = _DeadlineScheduler(threaded=False)

    def __call__(self) -> float:
        """The clock's time in seconds."""
        with self._lock:
            return self._time

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward and expire the contexts whose
        deadline it reached, earliest first: their callbacks run on this
        thread, as they would on the deadline thread.

        Raises:
            ValueError: ``seconds`` is negative or NaN.
        """
        if not seconds >= 0:
            raise ValueError(f"a clock only moves forward: seconds must be >= 0, got {seconds!r}")
        with self._lock:
            self._time += seconds
            now = self._time
        for ctx in self._deadlines.pop_due(now):
            ctx._expire()
