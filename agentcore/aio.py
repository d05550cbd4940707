"""Consume a run from asyncio code without blocking the event loop.

agentcore is synchronous: a run works on its own thread and hands its parts
to a :class:`~agentcore.RunReader`. :class:`AsyncRunReader` wraps that reader
for an event loop (FastAPI, Starlette, Django async views, notebooks)::

    from agentcore.aio import arun

    async def answer(options: LoopOptions) -> str:
        async with arun(options) as reader:
            async for part in reader:
                ...                       # each StreamPart, as it arrives
            result = await reader.result()
        return result.text

How it works: on first use, one daemon thread (``agentcore-aio``) reads the
run's parts and hands each to the event loop with
``loop.call_soon_threadsafe``; an ``await`` on the reader waits for such a
hand-off, never for a lock or a socket, so the loop stays free. At most
``buffer`` parts wait on the loop's side: a consumer that falls behind makes
the thread, then the run, wait (the same back-pressure as a blocking
reader). A dedicated thread rather than the loop's default executor: a run
may wait minutes on a tool or a model, and a shared pool of a few threads
would make concurrent runs wait for each other.

Cancellation: :meth:`AsyncRunReader.close` (or ``aclose()``, leaving
``async with``, or the reader being collected) closes the run's reader, which
cancels the run at once as :meth:`RunReader.close` does. A task cancelled
while it awaits the reader (``task.cancel()``, a client disconnect that the
web framework turns into a cancel, ``asyncio.timeout`` expiring) closes it
too: the run is cancelled and the ``CancelledError`` propagates. To wait for
a part with a time limit without cancelling the run, use
:meth:`AsyncRunReader.recv` with ``timeout``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

from agentcore.context import Context
from agentcore.engine.channel import RunReader
from agentcore.engine.loop import run
from agentcore.options import LoopOptions
from agentcore.result import RunResult
from agentcore.types import Message, StreamPart, StreamPartKind

__all__ = ["DEFAULT_BUFFER", "AsyncRunReader", "arun"]

DEFAULT_BUFFER = 64
"""Default number of parts that may wait on the event loop's side."""

_END = object()  # the run's reader is exhausted


class _Failed:
    """Reading the run's parts raised; the consumer raises it again."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class _Bridge:
    """The state shared by the event loop and the thread that reads the run.

    The thread holds this object, never the :class:`AsyncRunReader`, so a
    reader dropped without ``close()`` is collected and its finalizer closes
    the bridge (and so the run).
    """

    def __init__(self, reader: RunReader, buffer: int) -> None:
        self.reader = reader
        self.items: deque[Any] = deque()  # touched on the loop's thread only
        self.waiter: asyncio.Future[None] | None = None
        self.credits = threading.Semaphore(buffer)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.loop is loop:
            return
        if self.loop is not None:
            raise RuntimeError("an AsyncRunReader is bound to the event loop that first used it")
        self.loop = loop
        threading.Thread(target=self.pump, name="agentcore-aio", daemon=True).start()

    def pump(self) -> None:
        """The thread: read the run's parts and hand them to the loop."""
        item: Any = _END
        try:
            for part in self.reader:
                self.credits.acquire()
                if self.closed:
                    break  # the _END below wakes a consumer still waiting
                if not self.post(part):
                    return
        except BaseException as exc:  # noqa: BLE001 - the consumer must see every failure
            item = _Failed(exc)
        self.post(item)

    def post(self, item: Any) -> bool:
        """Hand ``item`` to the loop; False (and the run closed) when the loop is gone."""
        assert self.loop is not None
        try:
            self.loop.call_soon_threadsafe(self.deliver, item)
        except RuntimeError:  # the event loop was closed: nobody will read the run
            self.close()
            return False
        return True

    def deliver(self, item: Any) -> None:
        """On the loop's thread: queue ``item`` and wake the consumer."""
        self.items.append(item)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def close(self) -> None:
        """Close the run's reader (cancelling a run still going); from any thread, at once."""
        self.closed = True
        self.reader.close()
        self.credits.release()  # wake the thread if it waits for room


class AsyncRunReader:
    """A run's reader for asyncio: ``async for part in reader``, ``await reader.result()``.

    Args:
        reader: the reader :func:`agentcore.run` returned, not yet read.
        buffer: how many parts may wait on the event loop's side (>= 1);
            past that the run waits for the consumer.

    Bound to the event loop that first awaits it (using it from another loop
    raises ``RuntimeError``). Not safe to await from two tasks at once.

    Raises:
        ValueError: ``buffer`` is below 1.
    """

    def __init__(self, reader: RunReader, *, buffer: int = DEFAULT_BUFFER) -> None:
        if buffer < 1:
            raise ValueError(f"buffer must be >= 1, got {buffer}")
        self._bridge = _Bridge(reader, buffer)
        self._ended = False
        self._finalizer = weakref.finalize(self, self._bridge.close)

    @property
    def reader(self) -> RunReader:
        """The wrapped synchronous reader."""
        return self._bridge.reader

    @property
    def messages(self) -> list[Message]:
        """The history so far (see :attr:`RunReader.messages`); does not block."""
        return self._bridge.reader.messages

    @property
    def closed(self) -> bool:
        """True after :meth:`close` or once every part was read."""
        return self._ended or self._bridge.closed

    def __aiter__(self) -> AsyncRunReader:
        return self

    async def __anext__(self) -> StreamPart:
        while True:
            part = await self.recv()
            if part is not None:
                return part

    async def recv(self, timeout: float | None = None) -> StreamPart | None:
        """The next part, waiting at most ``timeout`` seconds.

        Args:
            timeout: seconds to wait; None waits as long as it takes.

        Returns:
            The next part, or None when ``timeout`` passed first (the run goes
            on; call again). Useful for heartbeats.

        Raises:
            StopAsyncIteration: every part was read (the terminal part last),
                or the reader was closed.
            asyncio.CancelledError: the awaiting task was cancelled; the
                reader is closed and the run cancelled first.
        """
        bridge = self._bridge
        if self.closed:
            raise StopAsyncIteration
        loop = asyncio.get_running_loop()
        bridge.start(loop)
        if not bridge.items:
            waiter: asyncio.Future[None] = loop.create_future()
            bridge.waiter = waiter
            timer = None if timeout is None else loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                self.close()
                raise
            finally:
                bridge.waiter = None
                if timer is not None:
                    timer.cancel()
            if bridge.closed:  # closed from elsewhere while this task waited
                raise StopAsyncIteration
            if not bridge.items:
                return None
        item = bridge.items.popleft()
        bridge.credits.release()
        if item is _END:
            self._ended = True
            raise StopAsyncIteration
        if isinstance(item, _Failed):
            self._ended = True
            raise item.exc
        part: StreamPart = item
        return part

    async def result(self) -> RunResult:
        """Read the remaining parts and return the run's outcome.

        Returns:
            The :class:`~agentcore.RunResult`, as :meth:`RunReader.result`.

        Raises:
            RunError: the run failed or was cancelled (also when this reader
                was closed first), as :meth:`RunReader.result`.
            asyncio.CancelledError: the awaiting task was cancelled; the run
                is cancelled first.
        """
        async for _ in self:
            pass
        return self._bridge.reader.result()  # the reader is exhausted: this does not block

    async def text(self) -> AsyncIterator[str]:
        """Iterate only the text deltas; leaving early closes the reader.

        Yields:
            Each ``text-delta`` part's text, as it arrives.

        Raises:
            RunError: at the end, when the run failed (as :meth:`result`).
        """
        try:
            async for part in self:
                if part.kind is StreamPartKind.TEXT_DELTA:
                    yield part.text
        finally:
            self.close()
        self._bridge.reader.result()

    def close(self) -> None:
        """Close the reader, cancelling the run if it is still going; returns
        at once, safe to call twice and from any thread (a task awaiting the
        reader then gets ``StopAsyncIteration``). Parts not yet read are
        dropped."""
        self._finalizer()

    async def aclose(self) -> None:
        """The same as :meth:`close`, for ``contextlib.aclosing``."""
        self.close()

    async def __aenter__(self) -> AsyncRunReader:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def arun(options: LoopOptions, ctx: Context | None = None, *, buffer: int = DEFAULT_BUFFER) -> AsyncRunReader:
    """Start a run, as :func:`agentcore.run`, and return its reader for asyncio.

    Starting a run does no I/O (the run's thread does), so this is safe to
    call on the event loop.

    Args:
        options: the run's options.
        ctx: the run's context (deadline, cancel); see :func:`agentcore.run`.
        buffer: see :class:`AsyncRunReader`.

    Raises:
        ConfigError: the options are not valid (as :func:`agentcore.run`).
    """
    return AsyncRunReader(run(options, ctx), buffer=buffer)
