"""HTTP plumbing shared by the adapters: the one place where ``requests`` and
``urllib3`` exceptions and HTTP statuses become :class:`ModelError`.

What lives here:

* :func:`new_session`: the session an adapter makes when the caller gives
  none. It ignores the environment (``trust_env = False``: no proxy or netrc
  variables) and mounts :class:`CancellableHTTPAdapter`.
* :func:`open_stream`: POST a JSON body with ``stream=True`` under a
  :class:`Context`, returning the 200 event stream or raising ``ModelError``
  after reading (for a bounded time) and closing any other response, or a
  200 that is a JSON document or an HTML page (so a small pool never starves).
* :func:`iter_body`: the body in the largest reads available (``read1``), with
  read failures translated.
* Re-exported from :mod:`agentcore.transport.errors` (what a failed response
  says): :func:`parse_retry_after`, :func:`error_from_body`,
  :func:`error_fields` and :func:`looks_like_context_length`.
* :func:`redacted`: a stream's :class:`ModelError` without the request's
  credentials (:mod:`agentcore.redaction`).

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

import codecs
import contextlib
import http.client
import json
import re
import socket
import threading
import time
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
from agentcore.redaction import secret_values, without_secret
from agentcore.transport.errors import (
    error_fields,
    error_from_body,
    json_or_none,
    parse_retry_after,
)
from agentcore.types import StreamPart

DEFAULT_CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a TCP/TLS connection."""
DEFAULT_READ_TIMEOUT = 600.0
"""Seconds to wait for the response headers or for any single network read."""
DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds a stream may go without a content-bearing event (pings do not count)."""


_ERROR_BODY_LIMIT = 64 * 1024
ERROR_BODY_SECONDS = 5.0
"""Seconds allowed for reading a whole error body (or a document sent with
status 200), on top of each read's own timeout: a server that trickles it
cannot hold the run, and the error is raised with what arrived by then (the
status alone still classifies it)."""
_READ_SIZE = 64 * 1024
DRAIN_SECONDS = 0.25
"""Seconds a finished stream's body may take to drain before the connection is
closed instead of going back to the pool."""
PEEK_READS = 8
"""Reads of nothing but whitespace after which the start of a 200 body is
no longer searched for a document's first byte (the body is then streamed)."""

_local = threading.local()
_JSON = json.JSONEncoder(ensure_ascii=False)
"""The request bodies' encoder (``json.dumps`` with an option builds one per call)."""


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
    interrupts a built-in adapter's request while it waits for the response
    headers, not only while it reads the body. The sessions agentcore creates
    mount it; mount it on a session you pass to an adapter (``session=``) to
    get the same there (it takes ``HTTPAdapter``'s arguments)::

        session.mount("https://", CancellableHTTPAdapter())

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


class StreamResponse:
    """A 200 streaming response bound to the context that may cancel it.

    Use as a context manager; leaving it closes the response (draining a
    finished body briefly first, so the connection can be reused).
    """

    def __init__(self, response: requests.Response, canceller: _SocketCanceller, ctx: Context) -> None:
        self.response = response
        self._canceller = canceller
        self._ctx = ctx
        self.complete = False
        """Set by the adapter once the step is complete; the rest is then drained."""
        self.prefix = b""
        """Bytes already read that :func:`iter_body` yields first."""

    def __enter__(self) -> StreamResponse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Drain (when complete) and close; safe to call twice."""
        try:
            if self.complete and not self._ctx.cancelled:
                self._drain()
        finally:
            self._canceller.detach()
            self.response.close()

    def _drain(self) -> None:
        """Read the rest of a complete body for at most :data:`DRAIN_SECONDS`,
        so the connection goes back to the pool. Each read waits at most the
        time left, through the socket's own timeout: the drain at the end of
        every step starts no deadline and wakes no other thread."""
        raw = self.response.raw
        deadline = time.monotonic() + DRAIN_SECONDS
        with contextlib.suppress(*_READ_ERRORS):
            for _ in range(16):
                sock = getattr(raw.connection, "sock", None)
                left = deadline - time.monotonic()
                if sock is None or left <= 0:  # back in the pool already, or out of time
                    break
                sock.settimeout(left)  # urllib3 sets the read timeout again for the next request
                if not raw.read1(_READ_SIZE, decode_content=True):
                    break


_READ_ERRORS = (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException, ValueError)
"""What a failed read of a response body raises."""


@contextlib.contextmanager
def _time_limit(seconds: float, canceller: _SocketCanceller) -> Iterator[None]:
    """Shut the socket down (through ``canceller``) if the block is still
    reading after ``seconds``: the read in progress then fails at once."""
    limit = Context(timeout=seconds)  # held here: the deadline scheduler keeps only a weak reference
    remove = limit.add_callback(canceller.fire)
    try:
        yield
    finally:
        remove()


def open_stream(
    session: requests.Session,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout: tuple[float, float],
    ctx: Context,
    context_length_words: re.Pattern[str] | None = None,
) -> StreamResponse:
    """POST ``body`` as JSON with ``stream=True`` and return the 200 response.

    Args:
        session: the session to send with.
        url: the endpoint.
        headers: request headers (the API key among them; never logged here).
        body: the JSON body.
        timeout: ``(connect, read)`` seconds; read bounds the wait for headers
            and every network read.
        ctx: cancelling it interrupts the request (see the module docstring).
        context_length_words: overrides :data:`CONTEXT_LENGTH_PATTERN`.

    Returns:
        The open response, to be closed by the caller.

    Raises:
        ModelError: a non-200 status (classified, with ``retry_after``), a
            200 that is a document, not an event stream (``UPSTREAM``, see
            :func:`_refuse_a_document`), or a connection failure or timeout
            (``TRANSIENT``).
        Canceled: ``ctx`` was cancelled.
    """
    ctx.check()
    try:
        data = _JSON.encode(body).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ModelError(
            ErrorClass.INVALID_REQUEST,
            err=exc,
            message="the request holds text that is not valid Unicode (a lone surrogate, as left by "
            "bytes that are not UTF-8); nothing was sent",
        ) from exc
    canceller = _SocketCanceller(ctx)
    _local.canceller = canceller
    try:
        response = session.post(
            url, data=data, headers=dict(headers), timeout=timeout, stream=True, allow_redirects=False
        )
    except requests.RequestException as exc:
        canceller.detach()
        ctx.check()
        message = _describe_transport_error(exc, url)
        raise ModelError(_request_error_class(exc), err=exc, message=message) from exc
    except BaseException:
        canceller.detach()
        raise
    finally:
        _local.canceller = None
    _detach_before_release(response.raw, canceller)
    canceller.attach(lambda: response.raw.shutdown())
    if response.status_code != 200:
        try:
            raw = _read_error_body(response, canceller)
        finally:
            canceller.detach()
            response.close()
        ctx.check()
        if response.is_redirect:
            raise _refuse_redirect(response)
        raise error_from_body(
            response.status_code,
            raw,
            retry_after=parse_retry_after(response.headers),
            pattern=context_length_words,
        )
    stream = StreamResponse(response, canceller, ctx)
    _refuse_a_document(stream, context_length_words)
    return stream


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


def _refuse_redirect(response: requests.Response) -> ModelError:
    """A redirect is not followed: requests would re-send the request, with its
    credentials, to wherever the server says (an ``x-api-key`` header to
    another host included), and a cancel could no longer interrupt it."""
    location = response.headers.get("location", "")
    return ModelError(
        ErrorClass.INVALID_REQUEST,
        message=f"the server redirected the request (HTTP {response.status_code}) to {location[:500]!r}; "
        "redirects are not followed: use the new location as the base URL",
        status=response.status_code,
    )


_EVENT_STREAM = "text/event-stream"
_DOCUMENT_OPENINGS = {b"{": "a JSON document", b"[": "a JSON document", b"<": "an HTML page"}
_BOM = codecs.BOM_UTF8


def _refuse_a_document(stream: StreamResponse, pattern: re.Pattern[str] | None) -> None:
    """A 200 that is a JSON document or an HTML page, not an event stream: a
    server that ignored ``stream: true``, an error object sent with status 200,
    or a base URL that is not the API.

    A ``text/event-stream`` body is always streamed. Any other (whatever its
    content type says, or without one) is a document when its first bytes
    after whitespace are ``{``, ``[`` or ``<``; a body that starts like an
    event stream (``data:``, ``event:``, ``:`` ...) is streamed. What was read
    to decide is kept in :attr:`StreamResponse.prefix`.

    Raises:
        ModelError: ``UPSTREAM`` for a document (an error object's own code
            classifies it instead), or ``TRANSIENT`` when the first read fails.
        Canceled: the context was cancelled during the first read.
    """
    content_type = stream.response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == _EVENT_STREAM:
        return
    try:
        first = _first_bytes(stream)
        what = _DOCUMENT_OPENINGS.get(first.lstrip().removeprefix(_BOM).lstrip()[:1])
        if what is None:
            stream.prefix = first
            return
        raw = (first + _read_error_body(stream.response, stream._canceller))[:_ERROR_BODY_LIMIT]
    except BaseException:
        stream.close()
        raise
    stream.close()
    stream._ctx.check()  # a cancel that cut the document short is a cancel, not its error
    _, _, code = error_fields(json_or_none(raw))
    status = code if isinstance(code, int) and not isinstance(code, bool) and code != 200 else 200
    error = error_from_body(status, raw, pattern=pattern)
    if status != 200:  # an error object sent with status 200: its own code classifies it
        raise error
    raise ModelError(
        ErrorClass.UPSTREAM,
        message=f"the server answered with {what}, not an event stream (is the base URL the API's, "
        f"and does the server stream?): {error.message}"[:2000],
        status=200,
    )


def _first_bytes(stream: StreamResponse) -> bytes:
    """The body's first read, and more while all of it is whitespace (at most
    :data:`PEEK_READS` reads); empty for an empty body."""
    chunks: list[bytes] = []
    for chunk in iter_body(stream):
        chunks.append(chunk)
        if chunk.strip() or len(chunks) >= PEEK_READS:
            break
    return b"".join(chunks)


def _read_error_body(response: requests.Response, canceller: _SocketCanceller) -> bytes:
    """Up to :data:`_ERROR_BODY_LIMIT` bytes of the body, read for at most
    :data:`ERROR_BODY_SECONDS` (then ``canceller`` shuts the socket down);
    a read failure ends it early. The response is the caller's to close."""
    chunks: list[bytes] = []
    size = 0
    # A read failure ends it early: the status alone still classifies the failure.
    with _time_limit(ERROR_BODY_SECONDS, canceller), contextlib.suppress(*_READ_ERRORS):
        while size < _ERROR_BODY_LIMIT:
            chunk = response.raw.read1(_READ_SIZE, decode_content=True)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    return b"".join(chunks)[:_ERROR_BODY_LIMIT]


def iter_body(stream: StreamResponse) -> Iterator[bytes]:
    """Yield the response body in the largest reads available, decoded as its
    ``Content-Encoding`` says (``requests`` asks for gzip and deflate).

    ``read1`` returns what one network read brought (a whole chunk of a
    chunked body, or what arrived of a plain one), so parts reach the consumer
    as soon as they are sent, without the quadratic cost of tiny reads.

    Raises:
        ModelError: ``TRANSIENT`` on a reset, a read timeout or a cut body.
        Canceled: the context was cancelled (checked after every read, so
            events already read are not turned into parts after a cancel
            for longer than one read's worth).
    """
    raw = stream.response.raw
    ctx = stream._ctx
    if stream.prefix:
        yield stream.prefix
        stream.prefix = b""
    while True:
        try:
            chunk = raw.read1(_READ_SIZE, decode_content=True)
        except _READ_ERRORS as exc:
            ctx.check()
            message = _describe_transport_error(exc, stream.response.url)
            raise ModelError(ErrorClass.TRANSIENT, err=exc, message=message) from exc
        ctx.check()  # once per network read: the adapters need not check per event
        if not chunk:
            return
        yield chunk


def redacted(parts: Iterator[StreamPart], headers: Mapping[str, str]) -> Iterator[StreamPart]:
    """``parts``, with every credential of ``headers`` (:func:`secret_values`)
    redacted from a :class:`ModelError` they raise (a server may echo the key).

    The redacted error is raised outside the handler, so no chained exception
    (``__context__``) keeps the original message.
    """
    failure: ModelError | None = None
    try:
        yield from parts
    except ModelError as exc:
        failure = without_secret(exc, secret_values(headers))
        if failure is exc:
            raise
    if failure is not None:
        raise failure


def _request_error_class(exc: requests.RequestException) -> ErrorClass:
    """``TRANSIENT`` for failures a retry may cure (resets, timeouts, refused
    connections); ``INVALID_REQUEST`` for a malformed URL or header, and
    ``UPSTREAM`` for a certificate the server cannot prove, which no retry fixes."""
    if isinstance(
        exc,
        (
            requests.exceptions.InvalidURL,
            requests.exceptions.MissingSchema,
            requests.exceptions.InvalidSchema,
            requests.exceptions.InvalidHeader,
            requests.exceptions.URLRequired,
        ),
    ):
        return ErrorClass.INVALID_REQUEST
    if isinstance(exc, requests.exceptions.SSLError) and "CERTIFICATE_VERIFY_FAILED" in str(exc):
        return ErrorClass.UPSTREAM
    return ErrorClass.TRANSIENT


def _describe_transport_error(exc: BaseException, url: str) -> str:
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
