"""Work done off the calling thread and waited for under a :class:`Context`.

Three pieces, shared by everything in agentcore that waits for work on
another thread:

* :func:`start_thread` runs a function on a new daemon thread (in a copy of
  the caller's :mod:`contextvars` context) and gives its ``Future``: parallel
  tool calls, and a synchronous tool with a time limit;
* :class:`LoopThread` is an asyncio event loop running on a daemon thread of
  its own; :meth:`LoopThread.submit` schedules a coroutine on it from any
  thread (in a copy of the caller's :mod:`contextvars` context). Each MCP
  server's session has one (:mod:`agentcore.integrations.mcp.session`);
  async function tools share one for the process, :func:`tool_loop`
  (docs/design.md, "Async tools" gives the choice and its numbers);
* :func:`wait` waits for such a future until it is done or a context is
  cancelled, whichever comes first; at a cancel it cancels the future (a
  coroutine's task is cancelled on its loop: the coroutine sees
  ``asyncio.CancelledError``; a thread cannot be stopped and runs on) and
  raises the context's error at once. On the main thread the wait is
  :func:`~agentcore.context.interruptible_wait`'s, so a Ctrl-C ends it.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from agentcore.context import Context, interruptible_wait

if TYPE_CHECKING:
    import asyncio

__all__ = ["LoopThread", "start_thread", "tool_loop", "wait"]

_T = TypeVar("_T")


def start_thread(func: Callable[[], _T], name: str) -> concurrent.futures.Future[_T]:
    """Run ``func()`` on a new daemon thread named ``name``, in a copy of the
    caller's :mod:`contextvars` context (what it sets stays its own).

    A daemon thread: one stuck in a function that ignores its context never
    keeps the interpreter from exiting.

    Returns:
        The future of ``func``'s result (or of what it raised, any
        ``BaseException`` included).
    """
    future: concurrent.futures.Future[_T] = concurrent.futures.Future()

    def work() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(func())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            future.set_exception(exc)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name=name, daemon=True).start()
    return future


def wait(future: concurrent.futures.Future[_T], ctx: Context | None = None) -> _T:
    """Wait for ``future``; with ``ctx``, stop waiting as soon as ``ctx`` is
    cancelled (or its deadline passes), cancel the future and raise.

    Returns:
        The future's result.

    Raises:
        Canceled: ``ctx`` was cancelled before the future was done
            (:class:`~agentcore.errors.DeadlineExceeded` for its deadline).
        concurrent.futures.CancelledError: the future was cancelled by
            someone else (its loop was closed).
        BaseException: what the work raised.
    """
    if ctx is None:
        interruptible_wait(lambda timeout: bool(concurrent.futures.wait([future], timeout).done))
        return future.result()
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    remove = ctx.add_callback(done.set)
    try:
        interruptible_wait(done.wait)  # a Ctrl-C on the main thread ends it
    except BaseException:
        future.cancel()  # the KeyboardInterrupt: the work is not waited for, so it is stopped
        raise
    finally:
        remove()
    if not future.done():
        future.cancel()  # a task is cancelled on its loop; a running thread runs on
        ctx.check()
    return future.result()


class LoopThread:
    """An asyncio event loop on a daemon thread of its own.

    Args:
        name: the thread's name (``agentcore-mcp``, ``agentcore-async-tools``).

    Thread-safe: any thread may submit to it; :meth:`close` once it is no
    longer needed (tasks left on it are cancelled and run to their end).
    ``asyncio`` is imported by the first one made, not by ``import
    agentcore``.
    """

    def __init__(self, name: str) -> None:
        import asyncio  # here: import agentcore stays without asyncio until a loop is needed

        self.loop: asyncio.AbstractEventLoop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import asyncio  # imported already by __init__

        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            left = asyncio.all_tasks(self.loop)
            for task in left:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    @property
    def on_loop(self) -> bool:
        """True when called on the loop's own thread."""
        return threading.current_thread() is self._thread

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Schedule ``coro`` as a task on the loop, in a copy of the caller's
        :mod:`contextvars` context; cancelling the returned future cancels
        the task.

        Raises:
            RuntimeError: the loop was closed (``coro`` is closed unrun).
        """
        import asyncio  # imported already by __init__

        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:
            coro.close()
            raise

    def close(self) -> None:
        """Stop the loop (its tasks are cancelled and run to their end) and,
        from another thread, wait for its thread to end. Idempotent."""
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:  # closed in the meantime
            return
        if not self.on_loop:
            self._thread.join()


_tool_loop: LoopThread | None = None
_tool_loop_lock = threading.Lock()


def tool_loop() -> LoopThread:
    """The event loop the coroutines of async function tools run on: one for
    the process, started at the first call, never closed (its daemon thread
    ends with the interpreter). A client an async tool keeps (an
    ``httpx.AsyncClient``, an ``asyncpg`` pool made in the tool) stays usable
    by every later call, from every run."""
    global _tool_loop
    with _tool_loop_lock:
        if _tool_loop is None:
            _tool_loop = LoopThread("agentcore-async-tools")
        return _tool_loop
