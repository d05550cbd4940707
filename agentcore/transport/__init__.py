"""The transport seam: how an adapter's request reaches a server and how the
answer's bytes come back. This module is the contract; the implementations
are :class:`agentcore.transport.http.HTTPTransport` (``requests``, the
adapters' default) and :class:`agentcore.transport.memory.MemoryTransport`
(canned answers, for tests). What a model speaks (the request body, the
stream's events) is the adapters' business; a transport only moves bytes.

A :class:`Transport` sends one request and returns a :class:`Response`:

* ``send(method, url, headers=, body=, timeout=, ctx=)`` sends ``body``
  (bytes, already encoded) and returns once the response headers arrived,
  whatever the status: a 4xx is a response like a 200, for the caller to
  read and classify. It raises :class:`agentcore.errors.ModelError` when no
  response came (a refused connection, a timeout, a reset: ``TRANSIENT``; a
  malformed URL or header: ``INVALID_REQUEST``; a certificate the server
  cannot prove: ``UPSTREAM``), with the underlying exception as its cause,
  and :class:`agentcore.errors.Canceled` once ``ctx`` is cancelled.
  Redirects are never followed: a 3xx is returned as it is.
* ``Response.status`` and ``Response.headers`` (names in lower case).
* ``Response.chunks()`` yields the body in reads of any size, as they
  arrive, decoded as its ``Content-Encoding`` says; a failed read raises
  ``ModelError`` (``TRANSIENT``), and a cancelled ``ctx`` raises ``Canceled``
  (checked after every read, so a cancel stops a stream within one read).
* ``Response.read(limit, seconds)`` reads at most ``limit`` bytes of the
  rest of the body for at most ``seconds`` (an error body: a server that
  trickles it cannot hold the run); a failed read ends it early, with what
  arrived.
* ``Response.close(reuse=False)`` releases the response; safe to call
  twice, on the thread that reads. ``reuse=True`` says "complete": the body
  was read to its logical end (the step is whole), so what is left of it
  (usually nothing but the end of a chunked body) is read briefly and the
  connection goes back to the pool instead of being closed.

A cancelled ``ctx`` interrupts a blocked ``send`` or read at once, from
whatever thread cancels it (design.md, "Transport hazards").

:class:`Timeout` is the one value of every wait: ``connect``, ``read`` and
``idle``. The transport uses ``connect`` and ``read``; ``idle`` is measured
by the adapter's framing (:func:`agentcore.transport.sse.iter_events`),
which knows which events carry content.

The contract lives in the package itself so that the modules every run
loads (``import agentcore`` checks header values with
:mod:`agentcore.transport.headers`) do not load ``requests``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Protocol, runtime_checkable

import attrs

from agentcore.context import Context
from agentcore.errors import ConfigError

MAX_SECONDS = 1e9
"""The longest finite limit a :class:`Timeout` takes, in seconds (about 31
years): longer ones overflow the clocks and socket timeouts under the
transport. Pass None (or ``math.inf``) for no limit."""


def _limit(name: str, value: object) -> float | None:
    """``value`` as a float, or None for no limit (None or infinity), for the
    timeout field ``name``.

    Raises:
        ConfigError: not a number (a bool is not one), not above zero, NaN,
            or above :data:`MAX_SECONDS`.
    """
    if value is None or value == math.inf:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SECONDS:
        raise ConfigError(
            f"Timeout.{name} must be a positive number of seconds up to {MAX_SECONDS:g}, or None for "
            f"no limit, got {value!r}"
        )
    return float(value)


def _connect(value: object) -> float | None:
    return _limit("connect", value)


def _read(value: object) -> float | None:
    return _limit("read", value)


def _idle(value: object) -> float | None:
    return _limit("idle", value)


@attrs.frozen
class Timeout:
    """How long an adapter waits for the server, in seconds; None for no limit.

    Attributes:
        connect: making the TCP (and TLS) connection.
        read: the response headers, and then each single network read of
            the body: a server that sends no byte at all for this long
            fails the step.
        idle: the stream without content: events that carry none (pings,
            comments) do not count, so a server that only keeps the
            connection alive fails the step after this long.

    The two limits on reading work together: no wait may outlast ``idle``,
    so a read waits at most ``min(read, idle)`` (:attr:`read_wait`), and
    ``idle`` is checked after every read. Any limit firing is a
    ``TRANSIENT`` :class:`agentcore.errors.ModelError`, retried like any
    transient failure. The defaults each take effect: 10 s to connect;
    300 s of silence (the wait for the first byte of a long prompt, or of a
    reasoning model that streams nothing while it thinks); 600 s without
    content (a server that sends only pings). None (or ``math.inf``) is no
    limit, as for every timeout in agentcore: a run's own deadline
    (``Context(timeout=...)``) still ends it.

    Raises:
        ConfigError: a value that is not a positive number of seconds up to
            :data:`MAX_SECONDS` or None (a bool is not a number, NaN is none).
    """

    connect: float | None = attrs.field(default=10.0, converter=_connect)
    read: float | None = attrs.field(default=300.0, converter=_read)
    idle: float | None = attrs.field(default=600.0, converter=_idle)

    @property
    def read_wait(self) -> float | None:
        """Seconds a single read may wait: ``read``, or ``idle`` when shorter;
        None when neither limits it."""
        if self.read is None or self.idle is None:
            return self.idle if self.read is None else self.read
        return min(self.read, self.idle)


class Response(Protocol):
    """An HTTP response a :class:`Transport` returned (see the module docstring)."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers, their names in lower case."""
        ...

    def chunks(self) -> Iterator[bytes]:
        """The body, in reads as they arrive.

        Raises:
            ModelError: ``TRANSIENT`` for a failed read (a reset, a read
                timeout, a cut body).
            Canceled: the request's context was cancelled.
        """
        ...

    def read(self, limit: int, seconds: float) -> bytes:
        """At most ``limit`` bytes of the rest of the body, read for at most
        ``seconds``; a failed read ends it early. Raises nothing."""
        ...

    def close(self, *, reuse: bool = False) -> None:
        """Release the response (safe to call twice); ``reuse``: the body was
        read to its logical end, keep the connection for the next request."""
        ...


@runtime_checkable
class Transport(Protocol):
    """Sends one request and returns its :class:`Response` (see the module docstring)."""

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        timeout: Timeout,
        ctx: Context,
    ) -> Response:
        """Send ``body`` to ``url`` and return the response once its headers arrived.

        Raises:
            ModelError: no response came (classified as the module docstring says).
            Canceled: ``ctx`` was cancelled.
        """
        ...
