"""The supervised session with one MCP server, run by the SDK's asynchronous
client on a background thread with its own event loop; callers on any thread
see plain blocking methods (:class:`Supervisor`).

Supervision:

* Every call has a time limit (``timeout``); a call past it fails with
  ``TimeoutError``, which the loop feeds back to the model as an error
  result, and the server is told to cancel the call
  (``notifications/cancelled``). Starting the server, the ``initialize``
  handshake and each ``tools/list`` have ``connect_timeout``.
* Cancelling the run (closing its reader, a deadline, the caller's context)
  stops waiting for the call at once and tells the server to cancel it.
* A stdio server that dies is started again on the next call; the call that
  was running when it died fails (an error result the model sees). An HTTP
  session that breaks is opened again on the next call; a call the server
  refused because it no longer knows the session (HTTP 404) was not run, so
  it is sent once more on a new session at once.
* A server that sends ``notifications/tools/list_changed`` is listed again the
  next time its tools are read (:meth:`Supervisor.tools`); a listing that
  fails keeps the previous list and logs a warning.
* :meth:`Supervisor.close` cancels the calls in flight, stops the server (see
  :mod:`agentcore.integrations.mcp.servers` for a stdio server's grace
  periods) and ends the background thread. No process, zombie or thread is
  left behind.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import anyio
import mcp.types as mcp_types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from agentcore.background import LoopThread, wait
from agentcore.context import Context
from agentcore.errors import ConfigError, MCPServerError
from agentcore.integrations.mcp.servers import Server, StdioServer
from agentcore.redaction import redact

__all__ = ["Supervisor"]

_log = logging.getLogger("agentcore")
_T = TypeVar("_T")

_MAX_PAGES = 100
"""The most ``tools/list`` pages read in one listing."""
_CLIENT_INFO = mcp_types.Implementation(name="agentcore", version="0.1.0")


class _Connection:
    """One session with the server (for stdio: one server process)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.session: ClientSession | None = None
        self.dead = False
        """The session ended or broke; the next call opens a new one."""
        self.lost = False
        """The server answered a POST with 404 for this session's id: it no
        longer knows the session, and did not handle that message."""
        self.stop = asyncio.Event()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.ready.add_done_callback(_retrieve)

    def gone(self, post: bool) -> None:
        """The server no longer knows this session (``post``: a POST it did not handle)."""
        self.dead = True
        self.lost = self.lost or post


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a future's exception as seen (a connection that failed before anyone waited)."""
    if not future.cancelled():
        future.exception()


class _Watched:
    """The transport's read stream, watched in wire order: a
    ``tools/list_changed`` notification marks the listing stale before the
    response after it is handled, and the stream's end marks the session dead."""

    def __init__(self, inner: Any, conn: _Connection, supervisor: Supervisor) -> None:
        self._inner = inner
        self._conn = conn
        self._supervisor = supervisor

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except BaseException:
            self._conn.dead = True
            raise
        if (
            isinstance(item, SessionMessage)
            and isinstance(item.message, mcp_types.JSONRPCNotification)
            and item.message.method == "notifications/tools/list_changed"
        ):
            self._supervisor.stale = True
        return item

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class Supervisor:
    """The session with one server, on a background thread's event loop.

    Args:
        server: the server to start or reach.
        timeout: seconds one tool call may take once sent.
        connect_timeout: seconds for the handshake and each page of a tool listing.
    """

    def __init__(self, server: Server, timeout: float, connect_timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.listing: tuple[mcp_types.Tool, ...] = ()
        """The server's tools as last listed (replaced whole, never changed in place)."""
        self.stale = False
        """Set when the server says its tool list changed."""
        self.closed = False
        self._state = threading.Lock()
        self._conn: _Connection | None = None
        self._connections: dict[_Connection, asyncio.Task[None]] = {}
        self._calls: set[asyncio.Task[Any]] = set()
        self._runner = LoopThread("agentcore-mcp")
        self._loop = self._runner.loop
        self._lock = asyncio.Lock()

    # --- called from any thread ---

    def start(self) -> None:
        """Open the session (start the server) and list its tools.

        Raises:
            MCPServerError: the server could not be started or reached, or
                failed the handshake or the listing.
        """
        self._run(self._session())

    def tools(self) -> tuple[mcp_types.Tool, ...]:
        """The server's tools, listed again first when the server announced a
        change (a failed listing keeps the previous list and logs a warning).

        Raises:
            ConfigError: the tools were closed.
        """
        if self.stale:
            try:
                self._run(self._relist())
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - the previous list stays usable
                _log.warning(
                    "agentcore: listing the tools of %s again failed: %s",
                    self.server.label,
                    _describe(exc, self.server),
                )
        return self.listing

    def call(self, name: str, arguments: dict[str, Any], ctx: Context) -> mcp_types.CallToolResult:
        """Call the server's tool ``name`` and wait for its result.

        Raises:
            TimeoutError: no answer within ``timeout``; the server was told to
                cancel the call.
            MCPServerError: the server could not be reached or restarted,
                refused the call, or the connection broke during it.
            Canceled: ``ctx`` was cancelled first.
            ConfigError: the tools were closed.
        """
        return self._run(self._call(name, arguments), ctx)

    def _run(self, coro: Coroutine[Any, Any, _T], ctx: Context | None = None) -> _T:
        """Run ``coro`` on the event loop and wait for it; with ``ctx``, stop
        waiting (and cancel it) as soon as ``ctx`` is cancelled.

        Raises:
            Canceled: ``ctx`` was cancelled first.
            ConfigError: the tools were closed.
            Exception: what ``coro`` raised (credentials redacted).
        """
        with self._state:
            if self.closed:
                coro.close()
                raise ConfigError(f"{self.server.describe()} is closed")
            future = self._runner.submit(self._tracked(coro))
        try:
            return wait(future, ctx)  # a cancel cancels the task: the SDK sends notifications/cancelled
        except concurrent.futures.CancelledError:
            raise MCPServerError(f"{self.server.label}: the tools were closed during the call") from None
        except Exception as exc:  # noqa: BLE001 - raised again, with any credential redacted
            raise _redacted(exc, self.server.secrets) from None

    def close(self) -> None:
        """Cancel the calls in flight, stop the server, end the thread; idempotent."""
        with self._state:
            if self.closed:
                return
            self.closed = True
        if self._runner.on_loop:  # collected on the loop's thread: it cannot wait for itself
            self._loop.create_task(self._shutdown(stop=True))
            return
        try:
            self._runner.submit(self._shutdown()).result()
        finally:
            self._runner.close()

    # --- on the event loop ---

    async def _tracked(self, coro: Coroutine[Any, Any, _T]) -> _T:
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await coro
        finally:
            self._calls.discard(task)

    async def _shutdown(self, stop: bool = False) -> None:
        calls = list(self._calls)
        for task in calls:
            task.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
        for conn, task in self._connections.items():
            conn.stop.set()
            if not conn.ready.done():
                task.cancel()  # still starting (a server that never answers): nothing to wait for
        await asyncio.gather(*self._connections.values(), return_exceptions=True)
        if stop:
            self._loop.stop()

    async def _session(self) -> _Connection:
        """The live session, opened (the server started) when there is none."""
        async with self._lock:
            conn = self._conn
            if self.closed:
                raise MCPServerError(f"{self.server.label}: the tools are closed")
            if conn is None or conn.dead:
                if conn is not None:
                    conn.stop.set()
                conn = self._conn = _Connection(self._loop)
                self._connections[conn] = self._loop.create_task(self._hold(conn))
        try:
            await asyncio.shield(conn.ready)
        except MCPServerError as exc:
            raise MCPServerError(str(exc)) from None  # a fresh exception per waiter
        return conn

    async def _hold(self, conn: _Connection) -> None:
        """Open the session, list the tools, keep it until ``conn.stop``, close it."""
        label = self.server.label
        try:
            async with AsyncExitStack() as stack:
                read, write = await self.server.open(stack, conn.gone)
                session = ClientSession(
                    _Watched(read, conn, self),
                    write,
                    read_timeout_seconds=self.connect_timeout,
                    client_info=_CLIENT_INFO,
                )
                await stack.enter_async_context(session)
                await session.initialize()
                await self._list(session)
                conn.session = session
                conn.ready.set_result(None)
                await conn.stop.wait()
        except Exception as exc:  # noqa: BLE001 - a failed start goes to the waiting calls, a later end to the log
            if conn.ready.done():
                _log.warning("agentcore: the session with %s ended: %s", label, _describe(exc, self.server))
            else:
                conn.ready.set_exception(self._start_error(exc))
        finally:
            conn.dead = True
            if not conn.ready.done():
                conn.ready.set_exception(MCPServerError(f"{label}: the tools were closed"))
            del self._connections[conn]

    def _start_error(self, exc: Exception) -> MCPServerError:
        starts = isinstance(self.server, StdioServer)
        what = f"could not {'start' if starts else 'connect to'} {self.server.label}"
        leaf = _leaf(exc)
        if isinstance(leaf, MCPError) and leaf.code == mcp_types.REQUEST_TIMEOUT:
            return MCPServerError(f"{what}: it did not answer within {self.connect_timeout:g} s")
        hint = ""
        if (
            isinstance(self.server, StdioServer)
            and isinstance(leaf, FileNotFoundError)
            and " " in self.server.command
        ):
            hint = " (the command is one program; pass its arguments in args)"
        return MCPServerError(f"{what}: {_describe(exc, self.server)}{hint}")

    async def _relist(self) -> None:
        conn = await self._session()
        assert conn.session is not None
        await self._list(conn.session)

    async def _list(self, session: ClientSession) -> None:
        self.stale = False  # before the request: a change announced during it is kept
        tools: list[mcp_types.Tool] = []
        params: mcp_types.PaginatedRequestParams | None = None
        for _ in range(_MAX_PAGES):
            page = await session.list_tools(params=params)
            tools += page.tools
            if page.next_cursor is None:
                self.listing = tuple(tools)
                return
            params = mcp_types.PaginatedRequestParams(cursor=page.next_cursor)
        raise MCPServerError(f"{self.server.label} listed more than {_MAX_PAGES} pages of tools")

    async def _call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        label = self.server.label
        for attempt in (1, 2):
            conn = await self._session()
            assert conn.session is not None
            try:
                return await conn.session.call_tool(name, arguments, read_timeout_seconds=self.timeout)
            except MCPError as exc:
                if exc.code == mcp_types.REQUEST_TIMEOUT and not conn.dead:
                    raise TimeoutError(
                        f"{label}: the tool {name!r} did not answer within {self.timeout:g} s; "
                        "the server was told to cancel the call"
                    ) from None
                if conn.lost and exc.code == mcp_types.INVALID_REQUEST and attempt == 1:
                    continue  # the SDK's error for a 404: not run, so once more on a new session
                if conn.dead or exc.code == mcp_types.CONNECTION_CLOSED:
                    conn.dead = True
                    raise MCPServerError(
                        f"{label}: the connection broke during the call to {name!r} ({exc.message}); "
                        "it is opened again on the next call"
                    ) from None
                raise MCPServerError(
                    f"{label} refused the call to {name!r}: error {exc.code}: {exc.message}"
                ) from None
        raise AssertionError("unreachable: the second attempt returns or raises")


def _leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups."""
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


def _describe(exc: BaseException, server: Server) -> str:
    leaf = _leaf(exc)
    text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
    return redact(text, server.secrets)[:500]


def _redacted(exc: Exception, secrets: list[str]) -> Exception:
    """``exc``, or an :class:`MCPServerError` with its message redacted when it quotes a credential."""
    text = str(exc)
    clean = redact(text, secrets)
    return exc if clean == text else MCPServerError(clean)
