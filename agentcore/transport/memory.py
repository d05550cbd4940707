"""An in-memory :class:`agentcore.transport.Transport`, for tests: an adapter
given ``transport=MemoryTransport(...)`` sends nothing over the network,
gets the canned :class:`Reply` values in order, and every request it sent is
kept (:attr:`MemoryTransport.sent`), so a test asserts the URL, the headers
(looked up in any case: :class:`SentHeaders`), the JSON body and the
timeout it carried::

    transport = MemoryTransport(Reply.of(recorded_sse_body))
    model = AnthropicModel("claude-sonnet-4-5", api_key="k", transport=transport)
    ...
    assert transport.sent[0].json()["model"] == "claude-sonnet-4-5"

It keeps the contract's promises that a test can see: a cancelled context
raises ``Canceled`` at ``send`` and after every chunk, response header names
are in lower case, and ``close(reuse=...)`` is recorded
(:attr:`SentRequest.reused`). Sockets, pools and time are not simulated:
tests of timeouts, cancels during a blocked read and connection reuse use a
real server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.errors import ConfigError, ModelError
from agentcore.redaction import headers_repr
from agentcore.transport import Timeout


def _lower(headers: Mapping[str, str]) -> Mapping[str, str]:
    return {name.lower(): value for name, value in headers.items()}


_HINT = (
    "a transport raises only ModelError: write ModelError(ErrorClass.TRANSIENT, err={cause}, "
    "message=...) for a refused connection, a reset or a timeout, as the real transport maps them"
)


def _reads(chunks: Iterable[bytes | ModelError]) -> tuple[bytes | ModelError, ...]:
    """``chunks`` as a tuple, once each is bytes or a :class:`ModelError`.

    Raises:
        ConfigError: another item, naming its index and type.
    """
    reads = tuple(chunks)
    items: tuple[object, ...] = reads  # a caller without a type checker may pass anything
    for index, chunk in enumerate(items):
        if not isinstance(chunk, (bytes, ModelError)):
            cause = f"{type(chunk).__name__}()" if isinstance(chunk, BaseException) else "..."
            raise ConfigError(
                f"Reply(chunks=...): item {index} is a {type(chunk).__name__}, not bytes or a ModelError; "
                + _HINT.format(cause=cause)
            )
    return reads


def _failure(_instance: Any, _attribute: Any, failure: object) -> None:
    """Refuse a ``failure`` that is not a :class:`ModelError`.

    Raises:
        ConfigError: naming its type, with the spelling to use.
    """
    if failure is not None and not isinstance(failure, ModelError):
        cause = f"{type(failure).__name__}()" if isinstance(failure, BaseException) else "..."
        raise ConfigError(
            f"Reply(failure=...) must be a ModelError, got {type(failure).__name__}; "
            + _HINT.format(cause=cause)
        )


@attrs.frozen
class Reply:
    """One canned answer of a :class:`MemoryTransport`.

    Attributes:
        status: the HTTP status.
        headers: the response headers (names in any case).
        chunks: the body, one item per read: bytes, or a ``ModelError`` to
            raise at that read (a reset mid-stream).
        failure: a ``ModelError`` raised by ``send`` instead of answering (a
            refused connection, a connect timeout).

    A failure, at ``send`` or at a read, is a ``ModelError`` because that is
    all a transport raises (:mod:`agentcore.transport`): the real one maps
    ``requests``' exceptions to their classes, and a builtin such as
    ``ConnectionRefusedError`` here would reach the adapter raw, where no
    real transport would let it. The test names the class the adapter sees:
    ``ModelError(ErrorClass.TRANSIENT, err=ConnectionRefusedError(), message=...)``.

    Raises:
        ConfigError: a ``failure`` that is not a ``ModelError``, or a chunk
            that is neither bytes nor a ``ModelError``.
    """

    status: int = 200
    headers: Mapping[str, str] = attrs.field(
        factory=lambda: {"content-type": "text/event-stream"}, converter=_lower
    )
    chunks: Sequence[bytes | ModelError] = attrs.field(default=(), converter=_reads)
    failure: ModelError | None = attrs.field(default=None, validator=_failure)

    @classmethod
    def of(
        cls, body: bytes, *, piece: int = 0, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """A reply whose body is ``body`` in reads of ``piece`` bytes (0: one
        read), with ``status`` and ``headers`` (by default a
        ``text/event-stream`` content type)."""
        chunks = [body[i : i + piece] for i in range(0, len(body), piece)] if piece else [body]
        if headers is None:
            return cls(status, chunks=chunks)
        return cls(status, headers, chunks)


class SentHeaders(Mapping[str, str]):
    """The headers of a :class:`SentRequest`: a lookup finds a header
    whatever the case of its name (``headers["authorization"]`` and
    ``headers["Authorization"]`` alike: the adapters spell them differently,
    and a caller's header keeps its own spelling), iteration gives the names
    as sent, and the ``repr`` shows credentials as ``[REDACTED]``
    (:func:`agentcore.redaction.headers_repr`), so a failed ``assert`` does
    not print an API key into a test log."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._headers = dict(headers)
        self._names = {name.lower(): name for name in self._headers}

    def __getitem__(self, name: str) -> str:
        return self._headers[self._names[name.lower()]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers)

    def __len__(self) -> int:
        return len(self._headers)

    def __repr__(self) -> str:
        return headers_repr(self._headers)


@attrs.define
class SentRequest:
    """A request a :class:`MemoryTransport` was sent.

    Attributes:
        method: the HTTP method.
        url: the URL.
        headers: the request headers as sent (:class:`SentHeaders`: looked
            up in any case, credentials redacted in the ``repr``).
        body: the request body (bytes).
        timeout: the :class:`agentcore.transport.Timeout` it carried.
        reused: how its response was closed: True with ``reuse`` (the body
            was read to its logical end), False without, None while open
            (or when ``send`` raised).
    """

    method: str
    url: str
    headers: SentHeaders = attrs.field(converter=SentHeaders)
    body: bytes
    timeout: Timeout
    reused: bool | None = None

    def json(self) -> Any:
        """The body, decoded as JSON."""
        return json.loads(self.body)


class MemoryTransport:
    """A :class:`agentcore.transport.Transport` that answers from ``replies``, in order.

    Args:
        replies: the answers to the requests to come, one each; more can be
            added with :meth:`add`.
        respond: answers a request when no reply is queued: a function of
            the :class:`SentRequest` returning its :class:`Reply` (a fake
            API that checks what it is sent). Called on the sending thread.

    Safe for concurrent use: one lock guards the replies and the record.
    A request with no reply queued and no ``respond`` raises
    ``AssertionError`` (a test's mistake, as a ``ScriptedModel`` call beyond
    its script is).
    """

    def __init__(self, *replies: Reply, respond: Callable[[SentRequest], Reply] | None = None) -> None:
        self._lock = threading.Lock()
        self._replies = list(replies)
        self._respond = respond
        self.sent: list[SentRequest] = []
        """Every request sent, in order."""

    def add(self, *replies: Reply) -> None:
        """Queue more answers."""
        with self._lock:
            self._replies.extend(replies)

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,
        ctx: Context,
    ) -> MemoryResponse:
        """Record the request and answer it with the next :class:`Reply`.

        Raises:
            ModelError: the reply's ``failure``.
            Canceled: ``ctx`` was cancelled.
            AssertionError: no reply is queued and there is no ``respond``.
        """
        ctx.check()
        sent = SentRequest(method, url, headers, bytes(body), timeout)
        with self._lock:
            self.sent.append(sent)
            reply = self._replies.pop(0) if self._replies else None
            count = len(self.sent)
        if reply is None:
            if self._respond is None:
                raise AssertionError(f"MemoryTransport has no reply left for request {count}")
            reply = self._respond(sent)
        if reply.failure is not None:
            raise reply.failure
        return MemoryResponse(reply, sent, ctx)


class MemoryResponse:
    """A :class:`Reply` being read (an :class:`agentcore.transport.Response`)."""

    def __init__(self, reply: Reply, sent: SentRequest, ctx: Context) -> None:
        self._sent = sent
        self._ctx = ctx
        self._chunks = iter(reply.chunks)
        self.status = reply.status
        """The HTTP status code."""
        self.headers = reply.headers
        """The response headers, their names in lower case."""

    def chunks(self) -> Iterator[bytes]:
        """The reply's chunks in order; a ``ModelError`` among them is raised there.

        Raises:
            ModelError: the reply's, at its place among the chunks.
            Canceled: the context was cancelled (checked after every chunk).
        """
        for chunk in self._chunks:
            if isinstance(chunk, ModelError):
                raise chunk
            self._ctx.check()
            if chunk:
                yield chunk

    def read(self, limit: int, seconds: float) -> bytes:
        """The rest of the reply's chunks, joined, up to ``limit`` bytes
        (``seconds`` does not apply: nothing is slow); a ``ModelError``
        among them ends it."""
        out = b""
        for chunk in self._chunks:
            if isinstance(chunk, ModelError) or len(out) >= limit:
                break
            out += chunk
        return out[:limit]

    def close(self, *, reuse: bool = False) -> None:
        """Record how the response was closed (the first close counts)."""
        if self._sent.reused is None:
            self._sent.reused = reuse
