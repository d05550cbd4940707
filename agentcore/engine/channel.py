"""The channel between a worker thread and its reader: ``stream_func``, and
the :class:`RunReader` that :func:`agentcore.run` returns.

``produce(send)`` runs in a daemon worker thread and hands parts to ``send``,
which blocks while the bounded queue is full and returns False once the
stream has ended or the reader is closed. The :class:`StreamReader` iterates
the parts (a run's :class:`RunReader` also gives its result), and
:meth:`StreamReader.close` returns at once whatever the worker is doing: it
marks the channel closed (waking a ``send`` blocked on a full queue) and
calls ``on_close`` (the loop cancels its context there, which shuts a
blocked socket down, ends a retry wait, and tells tools that watch the
context to stop).

Between the two sides sits one :class:`Channel`. It owns the queue, the
stream's one terminal part, the snapshot a producer publishes (a run's
history, steps and usage) and the handshake between reader and worker, all
under one lock with two conditions (the reader waits for parts, the worker
for room). Every change of its state happens inside that lock, so no
argument about it relies on the GIL:

* ``send(part)`` appends a part, or returns False once the stream ended or
  the reader closed; sending a terminal part (``finish`` or ``error``) is
  :meth:`Channel.end`.
* ``end(terminal)`` queues the terminal part, past the bound if need be,
  unless the stream already ended or the reader closed: the first caller
  wins, from any thread (the worker, a canceller, a deadline). Nothing is
  queued after it.
* the reader takes everything queued in one lock acquisition and stops at
  the terminal part, so it never waits for the worker to return (a model's
  body drain, a tool that ignores a cancel).
* the reader may wait with a time limit (:meth:`Channel.wait`,
  :meth:`StreamReader.recv` with ``timeout``): a web stream sends a
  heartbeat when nothing came for a while.

The worker holds only the channel, never the reader, so a reader dropped
without ``close()`` is collected and its finalizer closes the channel, which
stops the worker at its next ``send``.

An exception escaping ``produce`` (any ``BaseException``) becomes a terminal
``error`` part, so the consumer never hangs; a producer that returns without
a terminal part simply ends the stream.
"""

from __future__ import annotations

import contextvars
import threading
import time
import traceback
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from decimal import Decimal
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar, overload

from agentcore.context import wait_slice
from agentcore.errors import Canceled, RunError
from agentcore.result import RunResult, RunSnapshot, StepResult, total_cost
from agentcore.types import FinishReason, Message, StreamPart, StreamPartKind

DEFAULT_QUEUE_SIZE = 64
"""Default bound of the queue between the worker and the reader, in parts."""

_FINISH = StreamPartKind.FINISH
_ERROR = StreamPartKind.ERROR
"""The terminal kinds, compared by identity on the per-part path (an enum
member's attribute lookup costs more than the rest of ``send``)."""

_Reader = TypeVar("_Reader", bound="StreamReader")
S = TypeVar("S")

SendFunc = Callable[[StreamPart], bool]
"""Delivers one part to the reader; returns False once the stream ended or
the reader is closed."""


class Seam(Protocol):
    """Hook points of the handshake, for tests that force an interleaving.

    A channel made with a seam calls :meth:`pause` before each of its steps
    (outside its lock: the test may hold the thread there), and
    :meth:`sleeping` / :meth:`woken` inside its lock when a side goes to
    sleep or is woken (these must not block).
    """

    def pause(self, step: str) -> None:
        """Called before ``send``, ``end``, ``take``, ``wait``, ``close``, ``finish`` and ``publish``."""

    def sleeping(self, side: str) -> None:
        """``side`` ("reader" or "writer") is about to wait on its condition."""

    def woken(self, side: str) -> None:
        """The calling thread notifies ``side``'s condition."""


class Channel(Generic[S]):
    """The queue between one worker and one reader, the stream's end and the
    worker's published snapshot, under one lock (see the module docstring).

    Args:
        maxsize: how many parts may wait in the queue (>= 1); the reader
            holds at most one more batch that it took.
        snapshot: the initial value of :attr:`snapshot`.
        seam: test hook points (see :class:`Seam`); None in production.

    Raises:
        ValueError: ``maxsize`` is below 1.
    """

    def __init__(self, maxsize: int, snapshot: S, seam: Seam | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"queue_size must be >= 1, got {maxsize}")
        self._maxsize = maxsize
        self._items: deque[StreamPart] = deque()
        self._lock = threading.Lock()
        self._readable = threading.Condition(self._lock)
        self._writable = threading.Condition(self._lock)
        self._readers_asleep = 0
        self._writers_asleep = 0
        self._readers_woken = False
        """True from a send's wakeup of the sleeping readers until one of them
        runs: later sends need not notify again (a notify per part would cost
        more than the rest of ``send``)."""
        self._terminal: StreamPart | None = None
        self._closed = False
        self._open = True
        """False once the stream ended, the producer finished or the reader closed."""
        self._snapshot = snapshot
        self._seam = seam

    # --- the worker's side -----------------------------------------------------------------------

    def send(self, part: StreamPart) -> bool:
        """Queue ``part`` for the reader, waiting while the queue is full.

        A terminal part is handed to :meth:`end`.

        Returns:
            True if the part was queued; False once the stream ended or the
            reader closed (the part is dropped).
        """
        kind = part.kind
        if kind is _FINISH or kind is _ERROR:
            return self.end(part)
        if self._seam is not None:
            self._seam.pause("send")
        with self._lock:
            if len(self._items) >= self._maxsize:
                self._wait_for_room()
            if not self._open:
                return False
            self._items.append(part)
            if self._readers_asleep and not self._readers_woken:
                self._readers_woken = True
                self._wake(self._readable, "reader")
            return True

    def _wait_for_room(self) -> None:
        """Sleep (lock held) until the queue has room or the stream is over."""
        while len(self._items) >= self._maxsize and self._open:
            self._writers_asleep += 1
            try:
                self._sleep(self._writable, "writer")
            finally:
                self._writers_asleep -= 1

    def end(self, terminal: StreamPart | Callable[[S], StreamPart]) -> bool:
        """End the stream with ``terminal``, from any thread; the first caller wins.

        Args:
            terminal: the terminal part, or a function that builds it from
                the current :attr:`snapshot` (called under the lock, so a
                canceller's part carries the usage published last; it must
                not touch the channel).

        Returns:
            True if this call ended the stream: the part is queued after
            every part sent before it (past the bound if need be) and later
            sends return False. False if the stream had already ended, the
            producer had finished or the reader was closed.
        """
        if self._seam is not None:
            self._seam.pause("end")
        with self._lock:
            if not self._open:
                return False
            part = terminal if isinstance(terminal, StreamPart) else terminal(self._snapshot)
            self._terminal = part
            self._open = False
            self._items.append(part)
            self._wake_all()
            return True

    def finish(self) -> None:
        """The producer returned: the reader ends after the parts already queued."""
        if self._seam is not None:
            self._seam.pause("finish")
        with self._lock:
            self._open = False
            self._wake_all()

    def publish(self, snapshot: S) -> None:
        """Replace the :attr:`snapshot` (one immutable value, published whole)."""
        if self._seam is not None:
            self._seam.pause("publish")
        with self._lock:
            self._snapshot = snapshot

    # --- the reader's side -----------------------------------------------------------------------

    def take(self) -> deque[StreamPart]:
        """Wait until a part is queued or the stream is over; return every
        queued part (in one lock acquisition), or an empty deque at the end
        or once the reader is closed."""
        if self._seam is not None:
            self._seam.pause("take")
        with self._lock:
            while not self._items and self._open:
                self._readers_asleep += 1
                try:
                    self._sleep(self._readable, "reader")
                finally:
                    self._readers_asleep -= 1
                    self._readers_woken = False
            if self._closed:
                return deque()
            items, self._items = self._items, deque()
            if self._writers_asleep:
                self._wake(self._writable, "writer")
            return items

    def wait(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds (>= 0) until a part is queued or
        the stream is over (ended, finished or closed).

        Returns:
            True if so (:meth:`take` then returns at once); False when the
            time passed first.
        """
        if self._seam is not None:
            self._seam.pause("wait")
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self._items and self._open:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._readers_asleep += 1
                try:
                    self._sleep(self._readable, "reader", min(left, threading.TIMEOUT_MAX))
                finally:
                    self._readers_asleep -= 1
                    self._readers_woken = False
            return True

    def close(self) -> None:
        """The reader is gone: drop what is queued; later sends and ends return False."""
        if self._seam is not None:
            self._seam.pause("close")
        with self._lock:
            self._closed = True
            self._open = False
            self._items.clear()
            self._wake_all()

    # --- state -----------------------------------------------------------------------------------

    @property
    def snapshot(self) -> S:
        """What the worker published last."""
        with self._lock:
            return self._snapshot

    @property
    def terminal(self) -> StreamPart | None:
        """The part that ended the stream, or None (still open, ended without
        one, or the reader closed first)."""
        with self._lock:
            return self._terminal

    def _sleep(self, condition: threading.Condition, side: str, timeout: float | None = None) -> None:
        """Wait on ``condition`` (lock held) until notified, or at most
        ``timeout`` seconds, or one slice on the main thread (so a Ctrl-C ends
        it): the caller looks at the queue again after every return
        (:func:`agentcore.context.wait_slice` says why)."""
        if self._seam is not None:
            self._seam.sleeping(side)
        condition.wait(wait_slice(timeout))

    def _wake(self, condition: threading.Condition, side: str) -> None:
        if self._seam is not None:
            self._seam.woken(side)
        condition.notify_all()

    def _wake_all(self) -> None:
        if self._readers_asleep:
            self._wake(self._readable, "reader")
        if self._writers_asleep:
            self._wake(self._writable, "writer")


class StreamReader:
    """A forward-only iterator of :class:`StreamPart` with :meth:`close`.

    Use it as ``for part in reader`` or ``with reader: ...``; ``recv()`` is an
    alias of ``next()``, and ``recv(timeout)`` waits for the next part at most
    ``timeout`` seconds. After the terminal part (``finish`` or ``error``) or
    after :meth:`close`, iteration stops.
    """

    def __init__(self, channel: Channel[Any], on_close: Callable[[], object] | None) -> None:
        self._channel = channel
        self._batch: deque[StreamPart] = deque()
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_channel, channel, on_close)

    def __iter__(self) -> Iterator[StreamPart]:
        return self

    def __next__(self) -> StreamPart:
        if self._closed:
            raise StopIteration
        if not self._batch:
            self._batch = self._channel.take()
            if not self._batch or self._closed:  # the end, or close() from another thread meanwhile
                self._closed = True
                raise StopIteration
        part = self._batch.popleft()
        kind = part.kind
        if kind is _FINISH or kind is _ERROR:  # the channel queues nothing after a terminal part
            self._closed = True
        return part

    @overload
    def recv(self, timeout: None = None) -> StreamPart: ...

    @overload
    def recv(self, timeout: float) -> StreamPart | None: ...

    def recv(self, timeout: float | None = None) -> StreamPart | None:
        """Return the next part (same as ``next(reader)``), waiting at most
        ``timeout`` seconds for it when given.

        Args:
            timeout: seconds to wait (>= 0); None waits as long as it takes.

        Returns:
            The next part; None when ``timeout`` passed first (the stream
            goes on: call again). A web stream sends a heartbeat then.

        Raises:
            StopIteration: the stream is exhausted or closed.
            ValueError: ``timeout`` is negative or not a number.
        """
        if timeout is not None:
            if not timeout >= 0:
                raise ValueError(f"timeout must be a number of seconds >= 0 or None, got {timeout!r}")
            if not self._batch and not self._closed and not self._channel.wait(timeout):
                return None
        return next(self)

    def close(self) -> None:
        """Stop the stream and release its resources; returns at once.

        Safe to call more than once and from any thread. Parts not yet read
        are dropped.
        """
        self._closed = True
        self._finalizer()

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or once the stream is exhausted."""
        return self._closed

    def __enter__(self: _Reader) -> _Reader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class RunReader(StreamReader):
    """The reader returned by :func:`agentcore.run`: iterate its parts, or call :meth:`result`."""

    def __init__(self, channel: Channel[RunSnapshot], on_close: Callable[[], object]) -> None:
        super().__init__(channel, on_close)
        self._run_channel = channel

    @property
    def messages(self) -> list[Message]:
        """The history so far (all of it once the run ended); every tool call in
        it has its result, so it is always valid to send again."""
        return list(self._run_channel.snapshot.messages)

    @property
    def cost(self) -> Decimal | None:
        """What the steps completed so far cost in US dollars (all of them
        once the run ended) and the sub-runs of its agent tools:
        :attr:`RunResult.cost` so far."""
        snapshot = self._run_channel.snapshot
        steps = total_cost(snapshot.steps)
        if steps is None or snapshot.sub_run_cost is None:
            return None
        return steps + snapshot.sub_run_cost

    def text(self) -> Iterator[str]:
        """Iterate only the text deltas, for notebooks and scripts::

            for chunk in run(options).text():
                sys.stdout.write(chunk)

        Leaving the loop early (``break``, an exception, Ctrl-C) closes the
        reader, which cancels the run.

        Yields:
            Each ``text-delta`` part's text, as it arrives.

        Raises:
            RunError: at the end, when the run failed (as :meth:`result`).
        """
        try:
            for part in self:
                if part.kind is StreamPartKind.TEXT_DELTA:
                    yield part.text
        finally:
            self.close()
        self.result()

    def result(self) -> RunResult:
        """Consume the rest of the stream and return the run's outcome.

        Returns:
            The :class:`RunResult` of a run that finished.

        Raises:
            RunError: the run ended in error or was cancelled (also when this
                reader was closed first); it carries ``err``, the ``usage`` of
                the completed steps, ``finish_reason``, ``messages`` and
                ``full_messages``.
            BaseException: a non-``Exception`` raised inside the run (such as
                ``KeyboardInterrupt`` from a tool; a :class:`Canceled` excepted,
                which becomes a ``RunError``) is raised again as is. A
                ``KeyboardInterrupt`` that arrives while ``result()`` waits
                closes the reader (cancelling the run) and propagates.
        """
        try:
            for _ in self:
                pass
        except BaseException:  # Ctrl-C while waiting: the run must not go on without a reader
            self.close()
            raise
        terminal = self._run_channel.terminal
        snapshot = self._run_channel.snapshot
        if terminal is None:  # the reader was closed before the run ended
            err: BaseException = Canceled("the reader was closed before the run ended")
            raise RunError(err, snapshot.usage, FinishReason.CANCELED, *_histories(snapshot))
        assert terminal.finish_reason is not None
        if terminal.kind is StreamPartKind.FINISH:
            return RunResult(
                text=turn_text(snapshot.steps),
                steps=snapshot.steps,
                usage=terminal.total_usage,
                finish_reason=terminal.finish_reason,
                messages=snapshot.messages,
                output=snapshot.output,
                pending=snapshot.pending,
                full_messages=snapshot.messages if snapshot.full_messages is None else snapshot.full_messages,
                limit=snapshot.limit,
                agent=snapshot.agent,
                sub_run_cost=snapshot.sub_run_cost,
            )
        assert terminal.err is not None
        if not isinstance(terminal.err, (Exception, Canceled)):
            raise terminal.err
        raise RunError(terminal.err, terminal.total_usage, terminal.finish_reason, *_histories(snapshot))


def turn_text(steps: tuple[StepResult, ...] | list[StepResult]) -> str:
    """The text of the last step's turn: the texts of the paused steps it
    continued (``FinishReason.PAUSED``, design.md loop rule 15), then its
    own, joined as one turn's text parts are; "" for no step."""
    start = len(steps) - 1
    while start > 0 and steps[start - 1].finish_reason is FinishReason.PAUSED:
        start -= 1
    return "".join(step.text for step in steps[max(start, 0) :])


def _histories(snapshot: RunSnapshot) -> tuple[list[Message], list[Message] | None]:
    """A failed run's ``RunError.messages`` and ``full_messages`` from its
    last snapshot (None: the same as ``messages``, no policy acted)."""
    full = snapshot.full_messages
    return list(snapshot.messages), None if full is None else list(full)


def _close_channel(channel: Channel[Any], on_close: Callable[[], object] | None) -> None:
    channel.close()
    if on_close is not None:
        on_close()


def stream_func(
    produce: Callable[[SendFunc], object],
    on_close: Callable[[], object] | None = None,
    *,
    queue_size: int = DEFAULT_QUEUE_SIZE,
) -> StreamReader:
    """Run ``produce(send)`` in a worker thread and return a reader of its parts.

    Args:
        produce: called once in a new daemon thread with ``send``; it should
            stop when ``send`` returns False. After it sends a terminal part
            (``finish`` or ``error``) the reader ends and later sends return
            False.
        on_close: called once when the reader is closed (or collected); it must
            not block. The loop cancels its context here.
        queue_size: how many parts may wait in the queue (>= 1); the reader
            holds at most one more batch that it took.

    Returns:
        The reader. An exception escaping ``produce`` arrives as a terminal
        ``error`` part carrying it.

    Raises:
        ValueError: ``queue_size`` is below 1.
    """
    channel: Channel[None] = Channel(queue_size, None)
    reader = StreamReader(channel, on_close)
    start_worker(produce, channel)
    return reader


def start_worker(produce: Callable[[SendFunc], object], channel: Channel[Any]) -> threading.Thread:
    """Start the daemon thread that runs ``produce(channel.send)`` in a copy of
    the caller's :mod:`contextvars` context (so a tracing span or a workflow
    context set by the caller is seen by the producer); an exception escaping
    it ends the stream with an ``error`` part, and its return finishes the
    stream."""
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(_work, produce, channel), name="agentcore-stream", daemon=True
    )
    thread.start()
    return thread


def _work(produce: Callable[[SendFunc], object], channel: Channel[Any]) -> None:
    try:
        produce(channel.send)
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the reader
        channel.end(StreamPart.error(exc, finish_reason=FinishReason.ERROR))
    finally:
        channel.finish()
        # The frames of a kept error's traceback link back to this one: it
        # must not hold the producer (a run's model, its HTTP session).
        del produce
    terminal = channel.terminal
    if terminal is not None and terminal.err is not None:
        _clear_frames(terminal.err)


def _clear_frames(err: BaseException) -> None:
    """Drop the local variables of the finished frames in the tracebacks of
    ``err`` and of the exceptions chained to it.

    A caller may keep a stream's error for long (``RunError.err``); its
    traceback's frames would otherwise keep what the producer held (for a
    run: the HTTP session, a response and its socket, the model). File
    names and line numbers stay, so the traceback still prints.
    """
    seen: set[int] = set()
    pending = [err]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
