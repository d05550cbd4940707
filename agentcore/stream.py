"""``stream_func``: run a producer in a worker thread and read its parts.

The reference API's ``StreamFunc(produce, onClose)``: ``produce(send)`` runs in
a daemon worker thread and hands parts to ``send``, which blocks while the
bounded queue is full and returns False once the reader is closed. The
:class:`StreamReader` iterates the parts, and :meth:`StreamReader.close`
returns at once whatever the worker is doing: it marks the channel closed
(waking a ``send`` blocked on a full queue) and calls ``on_close`` (the loop
cancels its context there, which shuts a blocked socket down, ends a retry
wait, and tells tools that watch the context to stop).

The worker holds only the channel, never the reader, so a reader dropped
without ``close()`` is collected and its finalizer closes the channel, which
stops the worker at its next ``send``.

An exception escaping ``produce`` (any ``BaseException``) becomes a terminal
``error`` part, so the consumer never hangs; a producer that returns without
a terminal part simply ends the stream.

Parts pass through one deque without a lock (``append`` and ``popleft`` are
atomic in CPython); the lock is taken only to sleep and to wake the other side
(the reader on an empty queue, the worker on a full one, woken again at half
full), so a steady stream costs a thread switch per batch, not a lock round
trip per part (DESIGN.md, "Hazards").
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

from agentcore.types import FinishReason, StreamPart

DEFAULT_QUEUE_SIZE = 64
"""Default bound of the queue between the worker and the reader, in parts."""

DEFAULT_RUN_QUEUE_SIZE = 1024
"""Default ``LoopOptions.queue_size``, in parts: larger than ``stream_func``'s
because a run carries one part per text delta, and a worker that finds the
queue full stops for two thread switches; at 64 that cost 16 ms per 20,000
deltas (``bench/stream_throughput.py``). 1,024 waiting parts take ~0.3 MB."""

_Reader = TypeVar("_Reader", bound="StreamReader")

SendFunc = Callable[[StreamPart], bool]
"""Delivers one part to the reader; returns False once the reader is closed."""


class _Channel:
    """The bounded queue shared by the worker (``send``) and the reader (``take``).

    No wakeup is lost: a side that is about to sleep raises its ``*_waiting``
    flag before it looks at the deque a last time, and the other side looks
    at that flag after it changed the deque (both under the GIL, so one of
    them sees the other's write).
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.items: deque[StreamPart] = deque()
        self.lock = threading.Lock()
        self.readable = threading.Condition(self.lock)
        self.writable = threading.Condition(self.lock)
        self.reader_waiting = False
        self.writer_waiting = False
        self.closed = False
        self.done = False
        self.last: StreamPart | None = None
        """The part :meth:`end_with` queued: the reader stops after it."""

    def send(self, part: StreamPart) -> bool:
        if len(self.items) >= self.maxsize:
            if not self._wait_for_room():
                return False
        elif self.closed or self.done:
            return False
        # A part appended just after end_with() or close() is never read:
        # the reader stops at ``last``, and a closed reader reads nothing.
        self.items.append(part)
        if self.reader_waiting:
            with self.lock:
                self.reader_waiting = False
                self.readable.notify()
        return True

    def _wait_for_room(self) -> bool:
        with self.lock:
            while True:
                self.writer_waiting = True
                if self.closed or self.done:
                    room = False
                    break
                if len(self.items) < self.maxsize:
                    room = True
                    break
                self.writable.wait()
            self.writer_waiting = False
        return room

    def wake_writer(self) -> None:
        """Called by the reader after a ``popleft`` while the worker waits for room."""
        if len(self.items) <= self.maxsize // 2:
            with self.lock:
                self.writer_waiting = False
                self.writable.notify()

    def take(self) -> StreamPart | None:
        """Block until a part is queued; return it, or None at the end (the
        reader then calls :meth:`wake_writer` as after any ``popleft``)."""
        with self.lock:
            while True:
                self.reader_waiting = True
                if self.items or self.done or self.closed:
                    break
                # Timed slices: a Ctrl-C that lands just before an untimed wait
                # would otherwise go unnoticed until the next part arrives.
                self.readable.wait(0.25)
            self.reader_waiting = False
            if self.closed or not self.items:
                return None
            return self.items.popleft()

    def finish(self) -> None:
        with self.lock:
            self.done = True
            self.readable.notify_all()
            self.writable.notify_all()

    def end_with(self, part: StreamPart) -> None:
        """Queue ``part`` as the last one, past the bound if need be, whatever
        the worker is doing; the worker's later sends return False."""
        with self.lock:
            if self.closed or self.done:
                return
            self.items.append(part)
            self.last = part
            self.done = True
            self.readable.notify_all()
            self.writable.notify_all()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.items.clear()
            self.readable.notify_all()
            self.writable.notify_all()


class StreamReader:
    """A forward-only iterator of :class:`StreamPart` with :meth:`close`.

    Use it as ``for part in reader`` or ``with reader: ...``; ``recv()`` is an
    alias of ``next()``. After the terminal part (``finish`` or ``error``) or
    after :meth:`close`, iteration stops.
    """

    def __init__(self, channel: _Channel, on_close: Callable[[], object] | None) -> None:
        self._channel = channel
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_channel, channel, on_close)

    def __iter__(self) -> Iterator[StreamPart]:
        return self

    def __next__(self) -> StreamPart:
        if self._closed:
            raise StopIteration
        channel = self._channel
        try:
            part = channel.items.popleft()
        except IndexError:
            taken = channel.take()
            if taken is None or self._closed:  # the end, or close() from another thread meanwhile
                self._closed = True
                raise StopIteration from None
            part = taken
        if channel.writer_waiting:
            channel.wake_writer()
        if part is channel.last:  # a terminal part queued by end_with(): nothing follows it
            self._closed = True
        return part

    def recv(self) -> StreamPart:
        """Return the next part (same as ``next(reader)``).

        Raises:
            StopIteration: the stream is exhausted or closed.
        """
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


def _close_channel(channel: _Channel, on_close: Callable[[], object] | None) -> None:
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
            stop when ``send`` returns False.
        on_close: called once when the reader is closed (or collected); it must
            not block. The loop cancels its context here.
        queue_size: how many parts may wait between worker and reader (>= 1).

    Returns:
        The reader. An exception escaping ``produce`` arrives as a terminal
        ``error`` part carrying it.
    """
    channel = new_channel(queue_size)
    reader = StreamReader(channel, on_close)
    start_worker(produce, channel)
    return reader


def new_channel(queue_size: int) -> _Channel:
    """A channel for :func:`start_worker` (for readers that extend StreamReader)."""
    if queue_size < 1:
        raise ValueError(f"queue_size must be >= 1, got {queue_size}")
    return _Channel(queue_size)


def start_worker(produce: Callable[[SendFunc], object], channel: _Channel) -> threading.Thread:
    """Start the daemon thread that runs ``produce(channel.send)``."""
    thread = threading.Thread(target=_work, args=(produce, channel), name="agentcore-stream", daemon=True)
    thread.start()
    return thread


def _work(produce: Callable[[SendFunc], object], channel: _Channel) -> None:
    try:
        produce(channel.send)
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the reader
        channel.send(StreamPart.error(exc, finish_reason=FinishReason.ERROR))
    finally:
        channel.finish()
