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

The consumer takes every queued part in one lock round-trip and the producer
wakes the consumer only when the queue was empty, so a steady stream costs a
thread switch per batch, not per part (DESIGN.md, "Hazards").
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

_Reader = TypeVar("_Reader", bound="StreamReader")

SendFunc = Callable[[StreamPart], bool]
"""Delivers one part to the reader; returns False once the reader is closed."""


class _Channel:
    """The bounded queue shared by the worker (``send``) and the reader."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.items: deque[StreamPart] = deque()
        self.cond = threading.Condition(threading.Lock())
        self.closed = False
        self.done = False

    def send(self, part: StreamPart) -> bool:
        with self.cond:
            while not self.closed and not self.done and len(self.items) >= self.maxsize:
                self.cond.wait()
            if self.closed or self.done:
                return False
            self.items.append(part)
            if len(self.items) == 1:
                self.cond.notify_all()
            return True

    def finish(self) -> None:
        with self.cond:
            self.done = True
            self.cond.notify_all()

    def end_with(self, part: StreamPart) -> None:
        """Queue ``part`` as the last one, past the bound if need be, whatever
        the worker is doing; the worker's later sends return False."""
        with self.cond:
            if self.closed or self.done:
                return
            self.items.append(part)
            self.done = True
            self.cond.notify_all()

    def take_all(self) -> deque[StreamPart] | None:
        """Block until parts are queued; return them all, or None at the end."""
        with self.cond:
            while not self.items and not self.done and not self.closed:
                # Timed slices: a Ctrl-C that lands just before an untimed wait
                # would otherwise go unnoticed until the next part arrives.
                self.cond.wait(0.25)
            if self.closed or not self.items:
                return None
            batch = self.items
            self.items = deque()
            self.cond.notify_all()
            return batch

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.items.clear()
            self.cond.notify_all()


class StreamReader:
    """A forward-only iterator of :class:`StreamPart` with :meth:`close`.

    Use it as ``for part in reader`` or ``with reader: ...``; ``recv()`` is an
    alias of ``next()``. After the terminal part (``finish`` or ``error``) or
    after :meth:`close`, iteration stops.
    """

    def __init__(self, channel: _Channel, on_close: Callable[[], object] | None) -> None:
        self._channel = channel
        self._batch: deque[StreamPart] = deque()
        self._closed = False
        self._finalizer = weakref.finalize(self, _close_channel, channel, on_close)

    def __iter__(self) -> Iterator[StreamPart]:
        return self

    def __next__(self) -> StreamPart:
        try:
            return self._batch.popleft()
        except IndexError:
            pass
        if self._closed:
            raise StopIteration
        batch = self._channel.take_all()
        if batch is None or self._closed:  # the end, or close() from another thread meanwhile
            self._closed = True
            raise StopIteration
        self._batch = batch
        try:
            return batch.popleft()
        except IndexError:  # close() cleared the batch from another thread
            raise StopIteration from None

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
        self._batch.clear()
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
