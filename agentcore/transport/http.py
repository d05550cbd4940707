"""The ``requests`` implementation of :class:`agentcore.transport.Transport`:
:class:`HTTPTransport`, the adapters' default, and the one place where
``requests``, ``urllib3``, ``socket`` and ``http.client`` exceptions become
:class:`ModelError` (:class:`_Translated`, around sending a request and
around every read of its body).

* :class:`HTTPTransport` sends with ``stream=True`` and never follows a
  redirect (requests would re-send the credentials to wherever the server
  says, and a cancel could no longer reach the new connection).
* :func:`new_session`: the session :class:`HTTPTransport` makes when it is
  given none. It ignores the environment (``trust_env = False``: no proxy or
  netrc variables) and mounts :class:`CancellableHTTPAdapter`, with a pool
  of :data:`DEFAULT_POOL_SIZE` connections per host.
* :class:`HTTPResponse` reads the body in the largest reads available
  (``read1``), reads an error body within a time limit, and drains a
  complete body briefly on ``close(reuse=True)`` so the connection is reused.

Cancellation (design.md, "Transport hazards"): a ``requests`` response must not be
closed from another thread, so a cancel shuts the socket down instead; the
reading thread then fails at once, sees the context is cancelled, and closes
the response itself. With :class:`CancellableHTTPAdapter` (mounted on the
sessions agentcore creates) the socket is known as soon as the request is
sent, so a cancel also ends the wait for response headers; the callback is
removed under a lock before the connection goes back to the pool. On a
caller's own session the socket is reached through the response, i.e. once
headers have arrived; before that a cancel still makes ``close()`` return at
once, but the worker thread waits until the server answers or the read
timeout fires. Mount ``CancellableHTTPAdapter`` on your session to avoid that.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import types
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.transport import Timeout, Transport

_READ_SIZE = 64 * 1024
DRAIN_SECONDS = 0.25
"""Seconds a finished stream's body may take to drain before the connection is
closed instead of going back to the pool."""

_local = threading.local()


class _SocketCanceller:
    """Shuts one request's socket down when its context is cancelled."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._shutdown: Callable[[], object] | None = None
        self._done = False
        self._remove: Callable[[], bool] | None = None

    def attach(self, shutdown: Callable[[], object]) -> None:
        with self._lock:
            if self._done or self._shutdown is not None:
                return
            self._shutdown = shutdown
        self._remove = self._ctx.add_callback(self.fire)

    def fire(self) -> None:
        with self._lock:
            if self._done or self._shutdown is None:
                return
            # OSError, ValueError, RuntimeError: already closed or released, nothing to interrupt
            with contextlib.suppress(OSError, ValueError, RuntimeError):
                self._shutdown()

    def detach(self) -> None:
        with self._lock:
            self._done = True
            self._shutdown = None
        if self._remove is not None:
            self._remove()


def _sock_shutdown(sock: socket.socket) -> Callable[[], object]:
    return lambda: sock.shutdown(socket.SHUT_RDWR)


class _CancellableConnectionMixin:
    sock: socket.socket | None
    _agentcore_canceller: _SocketCanceller | None = None

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        canceller: _SocketCanceller | None = getattr(_local, "canceller", None)
        if canceller is not None and self.sock is not None:
            self._agentcore_canceller = canceller
            canceller.attach(_sock_shutdown(self.sock))
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_CancellableConnectionMixin, HTTPConnection):
    pass


class _HTTPSConnection(_CancellableConnectionMixin, HTTPSConnection):
    pass


class _PoolMixin:
    def _put_conn(self, conn: Any) -> None:
        canceller = getattr(conn, "_agentcore_canceller", None)
        if canceller is not None:
            canceller.detach()
            conn._agentcore_canceller = None
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPPool(_PoolMixin, HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(_PoolMixin, HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


class CancellableHTTPAdapter(HTTPAdapter):
    """A ``requests`` transport adapter through which a cancelled run
    interrupts a request of :class:`HTTPTransport` while it waits for the
    response headers, not only while it reads the body. The sessions
    agentcore creates (:func:`new_session`) mount it; mount it on a session
    you give :class:`HTTPTransport` to get the same there (it takes
    ``HTTPAdapter``'s arguments)::

        session.mount("https://", CancellableHTTPAdapter())
        model = OpenAIChatModel("gpt-4o-mini", transport=HTTPTransport(session))

    Requests sent through the session by other code are not affected.
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}


DEFAULT_POOL_SIZE = 256
"""Connections :func:`new_session` keeps open per host for reuse: as many as
runs of one model are expected at once (``requests`` keeps 10, and closes
every connection beyond that when it comes back, with a "pool is full"
warning). A pooled connection the server closed is replaced on its next use."""


def new_session(pool_size: int = DEFAULT_POOL_SIZE) -> requests.Session:
    """A session that ignores the environment and supports early cancel.

    Args:
        pool_size: connections kept open per host for reuse (>= 1); more may
            be open at once, and those beyond it are closed after use.

    Raises:
        ConfigError: ``pool_size`` is not an int >= 1.
    """
    if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
        raise ConfigError(f"pool_size must be an int >= 1, got {pool_size!r}")
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", CancellableHTTPAdapter(pool_maxsize=pool_size))
    session.mount("https://", CancellableHTTPAdapter(pool_maxsize=pool_size))
    return session


class HTTPTransport:
    """A :class:`agentcore.transport.Transport` over ``requests``: the
    adapters' default (see the module docstring).

    Args:
        session: the ``requests.Session`` to send with (its pool, proxies,
            TLS settings and adapters are the caller's policy; mount
            :class:`CancellableHTTPAdapter` on it so a cancel also ends the
            wait for the response headers); None makes one with
            :func:`new_session`.

    Raises:
        ConfigError: ``session`` is not a ``requests.Session``.
    """

    def __init__(self, session: requests.Session | None = None) -> None:
        if session is not None and not isinstance(session, requests.Session):
            raise ConfigError(f"session must be a requests.Session or None, got {type(session).__name__}")
        self._session = session if session is not None else new_session()

    @property
    def session(self) -> requests.Session:
        """The session requests are sent with."""
        return self._session

    def __repr__(self) -> str:
        return "HTTPTransport()"

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,
        ctx: Context,
    ) -> HTTPResponse:
        """Send one request (see :class:`agentcore.transport.Transport`):
        ``stream=True``, no redirects, ``(timeout.connect, timeout.read_wait)``.

        Raises:
            ModelError: no response came (:class:`_Translated` classifies it).
            Canceled: ``ctx`` was cancelled.
        """
        ctx.check()
        translated = _Translated(url, ctx)
        canceller = _SocketCanceller(ctx)
        _local.canceller = canceller
        try:
            with translated:
                response = self._session.request(
                    method,
                    url,
                    data=body,
                    headers=dict(headers),
                    timeout=(timeout.connect, timeout.read_wait),
                    stream=True,
                    allow_redirects=False,
                )
        except BaseException:
            canceller.detach()
            raise
        finally:
            _local.canceller = None
        _detach_before_release(response.raw, canceller)
        canceller.attach(lambda: response.raw.shutdown())
        return HTTPResponse(response, canceller, translated, ctx)


class HTTPResponse:
    """A response of :class:`HTTPTransport`, bound to the context that may
    cancel it (an :class:`agentcore.transport.Response`)."""

    def __init__(
        self, response: requests.Response, canceller: _SocketCanceller, translated: _Translated, ctx: Context
    ) -> None:
        self._response = response
        self._canceller = canceller
        self._translated = translated
        self._ctx = ctx
        self.headers: Mapping[str, str] = {name.lower(): value for name, value in response.headers.items()}
        """The response headers, their names in lower case."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        return self._response.status_code

    def chunks(self) -> Iterator[bytes]:
        """The body in the largest reads available, decoded as its
        ``Content-Encoding`` says (``requests`` asks for gzip and deflate).

        ``read1`` returns what one network read brought (a whole chunk of a
        chunked body, or what arrived of a plain one), so data reaches the
        consumer as soon as it is sent, without the quadratic cost of tiny
        reads.

        Raises:
            ModelError: ``TRANSIENT`` on a reset, a read timeout or a cut body.
            Canceled: the context was cancelled (checked after every read).
        """
        read1 = self._response.raw.read1
        translated = self._translated
        ctx = self._ctx
        while True:
            with translated:
                chunk = read1(_READ_SIZE, decode_content=True)
            ctx.check()  # once per network read: the adapters need not check per event
            if not chunk:
                return
            yield chunk

    def read(self, limit: int, seconds: float) -> bytes:
        """Up to ``limit`` bytes of the rest of the body, read for at most
        ``seconds`` (then the socket is shut down and the read in progress
        fails); a failed read ends it early, with what arrived."""
        raw = self._response.raw
        chunks: list[bytes] = []
        size = 0
        # held here: the deadline scheduler keeps only a weak reference
        limit_ctx = Context(timeout=seconds)
        remove = limit_ctx.add_callback(self._canceller.fire)
        try:
            with contextlib.suppress(*_TRANSPORT_ERRORS):
                while size < limit:
                    chunk = raw.read1(_READ_SIZE, decode_content=True)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
        finally:
            remove()
        return b"".join(chunks)[:limit]

    def close(self, *, reuse: bool = False) -> None:
        """Release the response; safe to call twice. ``reuse``: drain what is
        left of a complete body first (unless the context was cancelled),
        so the connection goes back to the pool."""
        try:
            if reuse and not self._ctx.cancelled:
                self._drain()
        finally:
            self._canceller.detach()
            self._response.close()

    def _drain(self) -> None:
        """Read the rest of a complete body for at most :data:`DRAIN_SECONDS`,
        so the connection goes back to the pool; its failures are dropped
        (the connection is then closed). Each read waits at most the time
        left, through the socket's own timeout: the drain at the end of
        every step starts no deadline and wakes no other thread."""
        raw = self._response.raw
        deadline = time.monotonic() + DRAIN_SECONDS
        with contextlib.suppress(*_TRANSPORT_ERRORS):
            for _ in range(16):
                sock = getattr(raw.connection, "sock", None)
                left = deadline - time.monotonic()
                if sock is None or left <= 0:  # back in the pool already, or out of time
                    break
                sock.settimeout(left)  # urllib3 sets the read timeout again for the next request
                if not raw.read1(_READ_SIZE, decode_content=True):
                    break


_TRANSPORT_ERRORS = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
    ValueError,
)
"""What sending a request or reading its body raises (``ValueError``: a read
of a response already closed, a header value ``http.client`` cannot encode)."""


class _Translated:
    """The one exception-mapping point: ``with translated:`` around sending
    a request and around each read of its body turns the errors of
    ``requests``, ``urllib3``, ``socket`` and ``http.client`` into
    :class:`ModelError` (the original as its cause), or into ``Canceled``
    when the context was cancelled (a cancel shuts the socket down, which
    fails the read in progress). One instance per request."""

    __slots__ = ("_ctx", "_url")

    def __init__(self, url: str, ctx: Context) -> None:
        self._url = url
        self._ctx = ctx

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        if exc is None or not isinstance(exc, _TRANSPORT_ERRORS):
            return
        self._ctx.check()
        raise ModelError(_error_class(exc), err=exc, message=_describe(exc, self._url)) from exc


def transport_option(value: object) -> Transport:
    """An adapter's ``transport`` option: ``value``, or a new
    :class:`HTTPTransport` for None.

    Raises:
        ConfigError: ``value`` is not a transport (a ``requests.Session``,
            which adapters took as ``session=`` before, names the new spelling).
    """
    if value is None:
        return HTTPTransport()
    if isinstance(value, requests.Session):
        raise ConfigError(
            "transport must be a Transport, got a requests.Session: pass transport=HTTPTransport(session) "
            "(from agentcore.transport.http)"
        )
    if not isinstance(value, Transport):
        raise ConfigError(
            "transport must be a Transport (HTTPTransport, MemoryTransport) or None, "
            f"got {type(value).__name__}"
        )
    return value


def _detach_before_release(raw: urllib3.BaseHTTPResponse, canceller: _SocketCanceller) -> None:
    """Make ``raw`` detach ``canceller`` before it gives its connection back
    to the pool (urllib3 does at the end of the body).

    urllib3's ``shutdown()`` checks that the response still holds its
    connection and then shuts the socket; between the two, another thread
    may release the connection and another request take it. Detaching waits
    for a cancel in progress (the canceller's lock), so once the connection
    is back in the pool no cancel of this request can reach its socket. (On
    the sessions agentcore makes, the pool detaches too.)
    """
    release = raw.release_conn

    def detach_then_release() -> None:
        canceller.detach()
        release()

    raw.release_conn = detach_then_release  # type: ignore[method-assign]


def _error_class(exc: BaseException) -> ErrorClass:
    """``TRANSIENT`` for failures a retry may cure (resets, timeouts, refused
    connections); ``INVALID_REQUEST`` for a malformed URL or header (a value
    HTTP cannot encode included), and ``UPSTREAM`` for a certificate the
    server cannot prove, which no retry fixes."""
    if isinstance(
        exc,
        (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
            requests.exceptions.InvalidHeader,
            requests.exceptions.URLRequired,
            UnicodeError,
        ),
    ):
        return ErrorClass.INVALID_REQUEST
    if isinstance(exc, requests.exceptions.SSLError) and "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return ErrorClass.UPSTREAM
    return ErrorClass.TRANSIENT


def _describe(exc: BaseException, url: str) -> str:
    """What went wrong on the wire, in a few words; a failure to connect names
    ``url`` (without what may hold a credential: :func:`_shown_url`)."""
    if isinstance(exc, (requests.ConnectTimeout, urllib3.exceptions.ConnectTimeoutError)):
        return f"timed out connecting to {_shown_url(url)}"
    if isinstance(exc, (requests.Timeout, urllib3.exceptions.ReadTimeoutError, TimeoutError, socket.timeout)):
        return "timed out waiting for the server"
    text = str(exc)
    if "timed out" in text.lower():
        return "timed out waiting for the server"
    if isinstance(exc, requests.ConnectionError) and "Max retries" in text:
        return f"could not connect to {_shown_url(url)} ({_connect_failure(exc)})"
    if isinstance(exc, UnicodeError):
        return f"the request could not be encoded for HTTP: {type(exc).__name__}: {text}"[:500]
    return f"connection failed: {type(exc).__name__}: {text}"[:500]


def _shown_url(url: str) -> str:
    """``url`` as an error may show it: scheme, host, port and path, without
    user info, query or fragment (any of which may hold a credential)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def _connect_failure(exc: BaseException) -> str:
    """``"connection refused"`` when the chain of causes of ``exc`` holds a
    refused connection (a closed port), else the type name of ``exc``."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__
