"""Tools from Model Context Protocol servers, for synchronous code.

:meth:`MCPTools.stdio` starts an MCP server as a child process and talks to
it over the process's stdin and stdout; :meth:`MCPTools.http` connects to one
over streamable HTTP. Either is a :class:`~agentcore.tools.ToolSet` of the
server's tools, usable as ``LoopOptions(tools=...)``; :func:`combine` joins
several servers and function tools into one tool set. The protocol:
https://modelcontextprotocol.io/specification/2025-11-25

Needs the optional ``mcp`` package, the official SDK
(``pip install 'agentcore[mcp]'``); ``import agentcore`` never imports it.
The SDK's asynchronous client runs on one background thread per
:class:`MCPTools`, with its own event loop; callers never see it.

Supervision (the defaults are the constants below):

* Every call has a time limit (``timeout``, :data:`DEFAULT_TIMEOUT`); a call
  past it fails with ``TimeoutError``, which the loop feeds back to the model
  as an error result, and the server is told to cancel the call
  (``notifications/cancelled``). Starting the server, the ``initialize``
  handshake and each ``tools/list`` have ``connect_timeout``
  (:data:`DEFAULT_CONNECT_TIMEOUT`).
* Cancelling the run (closing its reader, a deadline, the caller's context)
  stops waiting for the call at once and tells the server to cancel it.
* A stdio server that dies is started again on the next call; the call that
  was running when it died fails (an error result the model sees). An HTTP
  session that breaks is opened again on the next call; a call the server
  refused because it no longer knows the session (HTTP 404) was not run, so
  it is sent once more on a new session at once.
* A server that sends ``notifications/tools/list_changed`` is listed again the
  next time its tools are read (``definitions()``, a lookup by name).
* :meth:`MCPTools.close` stops the server: the SDK closes a stdio server's
  stdin, waits :data:`STDIN_GRACE` seconds for it to exit, then sends SIGTERM
  to its process group and, :data:`TERM_GRACE` seconds later, SIGKILL; the
  process is reaped and the background thread ends. No process, zombie or
  thread is left behind.
* A stdio server's environment is the SDK's allowlist
  (:data:`INHERITED_ENVIRONMENT`), not this process's environment, so API
  keys do not leak into tool processes; ``env`` adds to it
  (:func:`server_environment` builds a wider allowlist, with the locale, from
  an environment you pass). HTTP header values that are credentials are
  ``[REDACTED]`` in ``repr`` and in error messages.

Results: the text of a result's text blocks; its structured content as JSON
text instead when the server sends one (its text blocks then repeat it, as
the protocol recommends); images and binary resources of the types every
adapter takes (:data:`FILE_TYPES`: JPEG, PNG, GIF, WebP, PDF) as files; audio,
resource links, text resources and other types described in text. A result
with ``isError`` raises :class:`MCPToolError`, which the loop feeds back to
the model as an error result. See :func:`result_content`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import functools
import json
import logging
import math
import re
import shlex
import ssl
import threading
import weakref
from collections.abc import Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from os import PathLike, fspath
from pathlib import PurePosixPath
from types import TracebackType
from typing import Any, TextIO, TypeVar, cast
from urllib.parse import urlsplit

import attrs

try:
    import anyio
    import httpx2
    import mcp.client.stdio as _sdk_stdio
    import mcp.types as mcp_types
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # pragma: no cover - the test extra installs the SDK
    raise ImportError("agentcore.integrations.mcp needs the MCP SDK: pip install 'agentcore[mcp]'") from exc

from agentcore.context import Context
from agentcore.errors import AgentcoreError, ConfigError
from agentcore.providers.attachments import IMAGE_TYPES, PDF
from agentcore.tools import Tool, ToolInputError, ToolSet
from agentcore.transport.errors import REDACTED, secret_values
from agentcore.transport.headers import header_dict
from agentcore.types import File, ToolDefinition, ToolOutput, headers_repr

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "ENVIRONMENT_ALLOWLIST",
    "INHERITED_ENVIRONMENT",
    "STDIN_GRACE",
    "TERM_GRACE",
    "MCPServerError",
    "MCPTool",
    "MCPToolError",
    "MCPTools",
    "combine",
    "FILE_TYPES",
    "block_file",
    "describe_block",
    "open_servers",
    "result_content",
    "server_environment",
    "tool_definition",
    "tool_name",
]

_log = logging.getLogger("agentcore")
_T = TypeVar("_T")

DEFAULT_TIMEOUT = 60.0
"""Seconds one tool call may take once sent, unless ``timeout`` says otherwise."""
DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds for each step of (re)connecting: the ``initialize`` handshake and
each page of ``tools/list``."""
STDIN_GRACE: float = _sdk_stdio.PROCESS_TERMINATION_TIMEOUT
"""Seconds a stdio server has to exit after its stdin is closed, before
SIGTERM (the SDK's ``PROCESS_TERMINATION_TIMEOUT``, 2 s)."""
TERM_GRACE: float = _sdk_stdio.FORCE_KILL_TIMEOUT
"""Seconds between SIGTERM and SIGKILL (the SDK's ``FORCE_KILL_TIMEOUT``, 2 s)."""

INHERITED_ENVIRONMENT: tuple[str, ...] = tuple(_sdk_stdio.DEFAULT_INHERITED_ENV_VARS)
"""The variables a stdio server inherits from this process, read by the SDK
(its ``DEFAULT_INHERITED_ENV_VARS``; on POSIX ``HOME``, ``LOGNAME``,
``PATH``, ``SHELL``, ``TERM`` and ``USER``)."""
ENVIRONMENT_ALLOWLIST = (*INHERITED_ENVIRONMENT, "TMPDIR", "TZ", "LANG", "LANGUAGE")
"""The variables :func:`server_environment` keeps, with every ``LC_*`` locale variable."""

_MAX_PAGES = 100
"""The most ``tools/list`` pages read in one listing."""
_CLIENT_INFO = mcp_types.Implementation(name="agentcore", version="0.1.0")
_INVALID_NAME_CHARACTER = re.compile(r"[^A-Za-z0-9_-]")
_PREFIX = re.compile(r"[A-Za-z0-9_-]{0,63}")
_SESSION_HEADER = "mcp-session-id"


class MCPServerError(AgentcoreError):
    """An MCP server could not be started or reached, refused a request, or
    the connection broke during a call. Raised from a tool call, the loop
    feeds it back to the model as an error result."""


class MCPToolError(AgentcoreError):
    """A tool's result had ``isError`` set; the message is the result's text,
    fed back to the model as an error result."""


# --- mapping: pure functions ---------------------------------------------------------


def tool_name(prefix: str, name: str) -> str:
    """The name the model sees for the server's tool ``name``: ``prefix`` +
    ``name`` with every character other than a letter, digit, ``_`` or ``-``
    replaced by ``_``, cut to 64 characters (the rule of the Anthropic and
    OpenAI APIs; MCP names may also hold ``.``, see
    https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names)."""
    return (prefix + _INVALID_NAME_CHARACTER.sub("_", name))[:64]


def tool_definition(tool: mcp_types.Tool, name: str) -> ToolDefinition:
    """The :class:`ToolDefinition` of an MCP tool, named ``name`` for the model.

    The description is the tool's ``description`` (its ``title`` when it has
    none); the input schema is its ``inputSchema`` as JSON text, unchanged
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool).
    """
    description = tool.description or tool.title or ""
    return ToolDefinition(name, description, json.dumps(tool.input_schema, ensure_ascii=False))


FILE_TYPES = frozenset((*IMAGE_TYPES, PDF))
"""The media types of image blocks and binary embedded resources that go to
the model as files: those every adapter takes in a tool result
(``docs/files.md``). Other binary blocks are described in text."""


def result_content(result: mcp_types.CallToolResult) -> tuple[str, tuple[File, ...]]:
    """The text and the files the model gets for a tool result (``isError`` aside).

    Text blocks are joined with newlines. When the result has structured
    content, that content as JSON text takes the place of the text blocks,
    which the protocol says should repeat it
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#structured-content).
    An image or binary resource of a type in :data:`FILE_TYPES` is a file
    (:func:`block_file`); every other block is a line of text
    (:func:`describe_block`).
    """
    parts: list[str] = []
    files: list[File] = []
    if result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            if result.structured_content is None:
                parts.append(block.text)
            continue
        file = block_file(block)
        if file is None:
            parts.append(describe_block(block))
        else:
            files.append(file)
    return "\n".join(parts), tuple(files)


def block_file(block: mcp_types.ContentBlock) -> File | None:
    """The file an image block or an embedded binary resource holds, when
    its type is in :data:`FILE_TYPES` and its data is base64; else None. A
    resource's file is named after the last segment of its URI."""
    if isinstance(block, mcp_types.ImageContent):
        media_type, data, name = block.mime_type, block.data, ""
    elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
        block.resource, mcp_types.BlobResourceContents
    ):
        resource = block.resource
        media_type, data = resource.mime_type or "", resource.blob
        name = PurePosixPath(urlsplit(str(resource.uri)).path).name
    else:
        return None
    try:
        file = File(
            media_type=media_type, data=base64.b64decode("".join(data.split()), validate=True), filename=name
        )
    except (ValueError, binascii.Error):
        return None
    return file if file.media_type in FILE_TYPES else None


def describe_block(block: mcp_types.ContentBlock) -> str:
    """A line of text that stands for a block the model gets no file for:
    audio, a resource link, an embedded resource (a text one's text follows
    its description), an image or binary resource of another type. Binary
    data is not passed on: the line names its MIME type and size
    (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result)."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, (mcp_types.ImageContent, mcp_types.AudioContent)):
        kind = "image" if isinstance(block, mcp_types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, mcp_types.ResourceLink):
        about = ", ".join(
            str(v) for v in (block.title or block.name, block.mime_type, block.description) if v
        )
        return f"[resource link: {block.uri}" + (f" ({about})" if about else "") + "]"
    resource = block.resource
    mime = f", {resource.mime_type}" if resource.mime_type else ""
    if isinstance(resource, mcp_types.TextResourceContents):
        return f"[resource: {resource.uri}{mime}]\n{resource.text}"
    return f"[resource: {resource.uri}{mime}, {_decoded_size(resource.blob)} bytes, not shown]"


def _decoded_size(data: str) -> int:
    """The byte length of base64 text, without decoding it."""
    text = "".join(data.split())
    return max(0, len(text) * 3 // 4 - (len(text) - len(text.rstrip("="))))


def server_environment(environ: Mapping[str, str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """An ``env`` for :meth:`MCPTools.stdio` that also passes on the locale:
    the variables of ``environ`` (the caller's environment, which agentcore
    does not read itself) named in :data:`ENVIRONMENT_ALLOWLIST` or starting
    with ``LC_``, then ``env`` on top."""
    kept = {k: v for k, v in environ.items() if k in ENVIRONMENT_ALLOWLIST or k.startswith("LC_")}
    return {**kept, **(env or {})}


# --- the servers ---------------------------------------------------------------------


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


def _retrieve(future: asyncio.Future[None]) -> None:
    """Mark a future's exception as seen (a connection that failed before anyone waited)."""
    if not future.cancelled():
        future.exception()


_Streams = tuple[Any, Any]


@attrs.frozen
class _Stdio:
    command: str
    args: tuple[str, ...]
    env: dict[str, str] = attrs.field(repr=False)
    cwd: str | None
    stderr: TextIO | None = attrs.field(repr=False)

    @property
    def label(self) -> str:
        return f"MCP server {shlex.join([self.command, *self.args])!r}"

    @property
    def secrets(self) -> list[str]:
        return []

    def describe(self) -> str:
        return f"MCPTools.stdio({shlex.join([self.command, *self.args])!r})"

    async def open(self, stack: AsyncExitStack, conn: _Connection) -> _Streams:
        params = StdioServerParameters(command=self.command, args=list(self.args), env=self.env, cwd=self.cwd)
        # errlog None: the server's stderr is this process's (the SDK passes it to the process as is).
        return await stack.enter_async_context(stdio_client(params, errlog=cast(TextIO, self.stderr)))


@attrs.frozen
class _Http:
    url: str
    headers: dict[str, str] = attrs.field(repr=False)
    connect_timeout: float

    @property
    def label(self) -> str:
        return f"MCP server {_display_url(self.url)!r}"

    @property
    def secrets(self) -> list[str]:
        return secret_values(self.headers)

    def describe(self) -> str:
        headers = f", headers={headers_repr(self.headers)}" if self.headers else ""
        return f"MCPTools.http({_display_url(self.url)!r}{headers})"

    async def open(self, stack: AsyncExitStack, conn: _Connection) -> _Streams:
        async def on_response(response: httpx2.Response) -> None:
            # https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#session-management
            if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
                conn.dead = True
                conn.lost = conn.lost or response.request.method == "POST"

        client = httpx2.AsyncClient(
            headers=self.headers,
            timeout=httpx2.Timeout(self.connect_timeout, read=None),
            verify=_tls_context(),
            event_hooks={"response": [on_response]},
        )
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(self.url, http_client=client))


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx2's default TLS settings, made once: building them takes about 0.1 s,
    which every new session would pay."""
    return httpx2.create_ssl_context()


def _is_http_url(url: object) -> bool:
    """Whether ``url`` is an http(s) URL with a host and a valid port (a port
    out of range or a broken IPv6 host would otherwise hang the SDK's client)."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks the port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def _display_url(url: str) -> str:
    """``url`` without user info, query or fragment (they may hold credentials)."""
    parsed = httpx2.URL(url)
    return str(parsed.copy_with(userinfo=b"", query=None, fragment=None))


_Server = _Stdio | _Http


class _Watched:
    """The transport's read stream, watched in wire order: a
    ``tools/list_changed`` notification marks the listing stale before the
    response after it is handled, and the stream's end marks the session dead."""

    def __init__(self, inner: Any, conn: _Connection, supervisor: _Supervisor) -> None:
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


class _Supervisor:
    """The session with one server, on a background thread's event loop."""

    def __init__(self, server: _Server, timeout: float, connect_timeout: float) -> None:
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
        self._loop = asyncio.new_event_loop()
        self._lock = asyncio.Lock()
        self._thread = threading.Thread(target=self._serve, name="agentcore-mcp", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            left = asyncio.all_tasks(self._loop)
            for task in left:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    # --- called from any thread ---

    def run(self, coro: Coroutine[Any, Any, _T], ctx: Context | None = None) -> _T:
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
            future = asyncio.run_coroutine_threadsafe(self._tracked(coro), self._loop)
        if ctx is not None:
            done = threading.Event()
            future.add_done_callback(lambda _f: done.set())
            remove = ctx.add_callback(done.set)
            try:
                done.wait()
            finally:
                remove()
            if not future.done():
                future.cancel()  # the task is cancelled on the loop; the SDK sends notifications/cancelled
                ctx.check()
        try:
            return future.result()
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
        if threading.current_thread() is self._thread:  # collected on this thread: it cannot wait for itself
            self._loop.create_task(self._shutdown(stop=True))
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()

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
                read, write = await self.server.open(stack, conn)
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
        starts = isinstance(self.server, _Stdio)
        what = f"could not {'start' if starts else 'connect to'} {self.server.label}"
        leaf = _leaf(exc)
        if isinstance(leaf, MCPError) and leaf.code == mcp_types.REQUEST_TIMEOUT:
            return MCPServerError(f"{what}: it did not answer within {self.connect_timeout:g} s")
        hint = ""
        if (
            isinstance(self.server, _Stdio)
            and isinstance(leaf, FileNotFoundError)
            and " " in self.server.command
        ):
            hint = " (the command is one program; pass its arguments in args)"
        return MCPServerError(f"{what}: {_describe(exc, self.server)}{hint}")

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

    async def connect(self) -> None:
        await self._session()

    async def relist(self) -> None:
        conn = await self._session()
        assert conn.session is not None
        await self._list(conn.session)

    async def call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
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


def _describe(exc: BaseException, server: _Server) -> str:
    leaf = _leaf(exc)
    text = f"{type(leaf).__name__}: {leaf}" if str(leaf) else type(leaf).__name__
    return _redact(text, server.secrets)[:500]


def _redact(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted((s for s in secrets if len(s) >= 8), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def _redacted(exc: Exception, secrets: list[str]) -> Exception:
    """``exc``, or an :class:`MCPServerError` with its message redacted when it quotes a credential."""
    text = str(exc)
    clean = _redact(text, secrets)
    return exc if clean == text else MCPServerError(clean)


# --- the tools -----------------------------------------------------------------------


class MCPTool:
    """One tool of an MCP server, as a :class:`~agentcore.tools.Tool`.

    Attributes:
        name: the tool's name on the server (``definition.name`` is the name
            the model sees: with the prefix, see :func:`tool_name`).
        title: the tool's display title, or None.
        annotations: the server's hints about the tool, with the protocol's
            names (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
            ``openWorldHint``, ``title``); empty when it sent none. Hints
            from a server you do not trust are not guarantees.
        output_schema: the JSON Schema of its structured content, or None.
    """

    def __init__(self, supervisor: _Supervisor, tool: mcp_types.Tool, name: str) -> None:
        self._supervisor = supervisor
        self._definition = tool_definition(tool, name)
        self.name = tool.name
        self.title = tool.title
        annotations = tool.annotations
        self.annotations: dict[str, Any] = (
            {} if annotations is None else annotations.model_dump(by_alias=True, exclude_none=True)
        )
        self.output_schema = tool.output_schema

    @property
    def definition(self) -> ToolDefinition:
        """The model-facing name, description and input schema."""
        return self._definition

    def __repr__(self) -> str:
        return f"MCPTool({self._definition.name!r} of {self._supervisor.server.label})"

    def execute(self, input: str, ctx: Context) -> ToolOutput:
        """Call the tool on the server and return its result.

        Args:
            input: the arguments as JSON text (a JSON object; blank means ``{}``).
            ctx: the run's context; cancelling it stops waiting at once and
                tells the server to cancel the call.

        Returns:
            The result's text, or a list of its text and files when it has
            files (see :func:`result_content`).

        Raises:
            ToolInputError: ``input`` is not a JSON object.
            MCPToolError: the result had ``isError`` set.
            TimeoutError: no answer within the call's ``timeout``.
            MCPServerError: the server could not be reached or restarted,
                refused the call, or the connection broke during it.
            Canceled: ``ctx`` was cancelled.
            ConfigError: the tools were closed.
        """
        try:
            arguments = json.loads(input) if input.strip() else {}
        except ValueError as exc:
            raise ToolInputError(f"the arguments for {self.name!r} are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ToolInputError(f"the arguments for {self.name!r} must be a JSON object")
        supervisor = self._supervisor
        result = supervisor.run(supervisor.call(self.name, arguments), ctx)
        text, files = result_content(result)
        if result.is_error:  # an error result is text: its files are dropped
            message = _redact(text, supervisor.server.secrets)
            raise MCPToolError(message or "the tool reported an error without a message")
        return [*([text] if text else []), *files] if files else text


def _seconds(option: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise ConfigError(f"{option} must be a number of seconds > 0, got {value!r}")
    return float(value)


class MCPTools(ToolSet):
    """The tools of one MCP server, as a live :class:`~agentcore.tools.ToolSet`.

    Build it with :meth:`stdio` or :meth:`http`; both connect at once, list
    the server's tools and raise if they cannot. Use it as
    ``LoopOptions(tools=mcp_tools)``, or join it with other tools with
    :func:`combine`. It is a context manager; :meth:`close` is idempotent.

    Thread-safe: one instance may serve many runs and threads at once (a
    Flask app shares one); calls run concurrently over one session. Reading
    it (``definitions()``, ``tools[name]``, iteration) gives the server's
    current tools: when the server announced a change, they are listed again
    first (a failed listing keeps the previous list and logs a warning).

    Raises (from reading it):
        ConfigError: two of the server's tools get the same name for the
            model (see :func:`tool_name`), or the tools were closed.
    """

    def __init__(self, server: _Server, *, timeout: float, connect_timeout: float, prefix: str) -> None:
        super().__init__()
        timeout = _seconds("timeout", timeout)
        connect_timeout = _seconds("connect_timeout", connect_timeout)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ConfigError(f"prefix must be up to 63 letters, digits, '_' or '-', got {prefix!r}")
        self._server = server
        self._prefix = prefix
        self._view: dict[str, MCPTool] = {}
        self._view_of: tuple[mcp_types.Tool, ...] | None = None
        self._view_lock = threading.Lock()
        self._supervisor = _Supervisor(server, timeout, connect_timeout)
        self._close = weakref.finalize(self, self._supervisor.close)
        try:
            self._supervisor.run(self._supervisor.connect())
            self._current()
        except BaseException:
            self.close()
            raise

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None,
        stderr: TextIO | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        prefix: str = "",
    ) -> MCPTools:
        """Start ``command`` as an MCP server speaking over its stdin and
        stdout (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio).

        Args:
            command: the program, e.g. ``"python"`` or ``"npx"``.
            args: its arguments, e.g. ``["server.py"]``.
            env: variables for the server, on top of the ones it inherits
                (:data:`INHERITED_ENVIRONMENT`); :func:`server_environment`
                of your environment adds the locale; all of your environment
                gives the server all of it.
            cwd: the server's working directory; None: this process's.
            stderr: where the server's stderr goes: a file with a file
                descriptor; None: this process's stderr.
            timeout: seconds one tool call may take once sent.
            connect_timeout: seconds for the handshake and each tool listing.
            prefix: put before each tool's name (``"files_"``), to tell
                servers apart or avoid a clash.

        Raises:
            ConfigError: an argument is of the wrong type or out of range.
            MCPServerError: the server could not be started, or failed the
                handshake or the tool listing.
        """
        if not isinstance(command, str) or not command:
            raise ConfigError(f"command must be a non-empty str, got {command!r}")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"args must be a sequence of str (not one str), got {args!r}")
        if env is not None and not (
            isinstance(env, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ConfigError("env must be a mapping of str names to str values")
        return cls(
            _Stdio(command, tuple(args), dict(env or {}), None if cwd is None else fspath(cwd), stderr),
            timeout=timeout,
            connect_timeout=connect_timeout,
            prefix=prefix,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        prefix: str = "",
    ) -> MCPTools:
        """Connect to an MCP server over streamable HTTP
        (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http).

        Args:
            url: the server's MCP endpoint, e.g. ``"https://example.com/mcp"``.
            headers: sent with every request, e.g. ``{"Authorization":
                "Bearer ..."}``; credential values never show in ``repr``
                or error messages.
            timeout: seconds one tool call may take once sent.
            connect_timeout: seconds to connect, and for the handshake and
                each tool listing.
            prefix: put before each tool's name.

        Raises:
            ConfigError: an argument is of the wrong type or out of range.
            MCPServerError: the server could not be reached, or failed the
                handshake or the tool listing.
        """
        if not _is_http_url(url):
            raise ConfigError(
                f"url must be an http:// or https:// URL with a host and a valid port, got {url!r}"
            )
        checked = header_dict(headers, "headers")
        seconds = _seconds("connect_timeout", connect_timeout)
        return cls(_Http(url, checked, seconds), timeout=timeout, connect_timeout=seconds, prefix=prefix)

    def __repr__(self) -> str:
        return self._server.describe() + (" (closed)" if self.closed else "")

    @property
    def label(self) -> str:
        """The server as error messages name it, e.g. ``MCP server 'python server.py'``."""
        return self._server.label

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return not self._close.alive

    def close(self) -> None:
        """Cancel the calls in flight, stop the server (see the module
        docstring for the grace periods) and end the background thread.
        Idempotent; also run when the object is collected or at exit."""
        self._close()

    def __enter__(self) -> MCPTools:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _current(self) -> dict[str, MCPTool]:
        if self.closed:
            raise ConfigError(f"{self._server.describe()} is closed")
        supervisor = self._supervisor
        if supervisor.stale:
            try:
                supervisor.run(supervisor.relist())
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - the previous list stays usable
                _log.warning(
                    "agentcore: listing the tools of %s again failed: %s",
                    self.label,
                    _describe(exc, self._server),
                )
        listing = supervisor.listing
        with self._view_lock:
            if listing is not self._view_of:
                view: dict[str, MCPTool] = {}
                for tool in listing:
                    name = tool_name(self._prefix, tool.name)
                    if name in view:
                        raise ConfigError(
                            f"{self.label}: its tools {view[name].name!r} and {tool.name!r} are both "
                            f"named {name!r} for the model"
                        )
                    view[name] = MCPTool(supervisor, tool, name)
                self._view, self._view_of = view, listing
            return self._view

    def __getitem__(self, name: str) -> MCPTool:
        return self._current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._current()))

    def __len__(self) -> int:
        return len(self._current())

    def definitions(self) -> list[ToolDefinition]:
        """The server's tools' definitions, in the server's order (listed
        again first when the server announced a change)."""
        return [tool.definition for tool in self._current().values()]


# --- combining tool sets -------------------------------------------------------------


class _Combined(ToolSet):
    """The union of several tool sets, read live from them."""

    def __init__(self, sources: list[ToolSet]) -> None:
        super().__init__()
        self._sources = sources
        self._union()

    def _union(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = {}
        owners: dict[str, ToolSet] = {}
        for source in self._sources:
            for name, tool in source.items():
                if name in tools:
                    raise ConfigError(
                        f"two tools are named {name!r}: {_origin(owners[name], tools[name])} and "
                        f"{_origin(source, tool)}; give an MCP server a prefix (prefix='...')"
                    )
                tools[name] = tool
                owners[name] = source
        return tools

    def __getitem__(self, name: str) -> Tool:
        for source in self._sources:
            tool = source.get(name)
            if tool is not None:
                return tool
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._union()))

    def __len__(self) -> int:
        return len(self._union())

    def __repr__(self) -> str:
        return f"combine({', '.join(map(repr, self._sources))})"

    def definitions(self) -> list[ToolDefinition]:
        """The definitions of every source's tools, in source order."""
        return [tool.definition for tool in self._union().values()]


def _origin(source: ToolSet, tool: Tool) -> str:
    if isinstance(source, MCPTools):
        return f"the tool {cast(MCPTool, tool).name!r} of {source.label}"
    return repr(tool)


def combine(*sources: ToolSet | Tool | Iterable[Tool] | Mapping[str, Tool]) -> ToolSet:
    """One tool set of several: MCP servers, function tools, tool sets.

    The result reads its sources live, so an :class:`MCPTools` among them
    still shows its server's current tools. Use it as ``LoopOptions(tools=...)``.

    Args:
        sources: each a :class:`ToolSet` (an :class:`MCPTools` included), a
            single :class:`~agentcore.tools.Tool`, an iterable of tools or a
            name -> tool mapping.

    Raises:
        ConfigError: two tools have the same name (the message names both and
            where they come from), now or when it is read after a server's
            tools changed; or a source is not a tool or tool set.
    """
    sets = [s if isinstance(s, ToolSet) else ToolSet([s] if isinstance(s, Tool) else s) for s in sources]
    return _Combined(sets)


def open_servers(
    commands: Iterable[str] = (), urls: Iterable[str] = (), *, env: Mapping[str, str] | None = None
) -> list[MCPTools]:
    """Start a stdio server per command line and connect to an HTTP server
    per URL, with the defaults (what the ``agentcore`` command's ``--mcp``
    and ``--mcp-url`` options do).

    Args:
        commands: command lines, split as a POSIX shell would
            (:func:`shlex.split`): ``"npx -y @modelcontextprotocol/server-everything"``.
        urls: streamable HTTP endpoints.
        env: for each stdio server, as :meth:`MCPTools.stdio` takes it.

    Returns:
        The opened servers, stdio ones first, each in the order given.

    Raises:
        ConfigError: a command line is empty or cannot be split (an unclosed
            quote), or a URL is not http(s).
        MCPServerError: a server could not be started or reached; the ones
            opened before it are closed first.
    """
    opened: list[MCPTools] = []
    try:
        for line in commands:
            try:
                words = shlex.split(line)
            except ValueError as exc:
                raise ConfigError(f"cannot split the MCP server command line {line!r}: {exc}") from None
            if not words:
                raise ConfigError("an MCP server command line is empty")
            opened.append(MCPTools.stdio(words[0], words[1:], env=env))
        for url in urls:
            opened.append(MCPTools.http(url))
    except BaseException:
        for server in opened:
            server.close()
        raise
    return opened
