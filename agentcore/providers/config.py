"""The checks every adapter applies to its options, each a :class:`ConfigError`
naming the option (never showing a header's value: it may be a credential)."""

from __future__ import annotations

import urllib.parse

from agentcore.errors import ConfigError


def check_base_url(url: str) -> str:
    """``url`` without a trailing slash, once it is an ``http``/``https`` URL
    with a host, a valid port and no query or fragment.

    Raises:
        ConfigError: anything else (a missing scheme, ``ftp://``, no host, a
            port out of range, ``?x=1``).
    """
    problem = "must be an http:// or https:// URL with a host"
    try:
        parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
        if parts is not None:
            parts.port  # noqa: B018 - reading it checks the port (a ValueError when out of range)
    except ValueError as exc:  # an IPv6 host without its bracket, a port that is not 0-65535
        raise ConfigError(f"base_url {problem}, got {url!r}: {exc}") from None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"base_url {problem}, got {url!r}")
    if parts.query or parts.fragment:
        raise ConfigError(
            f"base_url must not have a query or fragment (agentcore appends the API path), got {url!r}"
        )
    return url.rstrip("/")


def positive_seconds(name: str, value: float) -> float:
    """``value`` as a float, for a timeout option called ``name``.

    Raises:
        ConfigError: ``value`` is not a number (a bool is not one), or not
            above zero.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


def timeout_pair(value: tuple[float, float]) -> tuple[float, float]:
    """``value``, the ``timeout=(connect, read)`` option, as two floats.

    Raises:
        ConfigError: ``value`` is not a tuple or list of two items, or an item
            is not a positive number of seconds.
    """
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ConfigError(f"timeout must be a (connect, read) pair of seconds, got {value!r}")
    connect, read = value
    return positive_seconds("connect timeout", connect), positive_seconds("read timeout", read)


def timeouts(
    timeout: tuple[float, float], idle_timeout: float | None
) -> tuple[tuple[float, float], float | None]:
    """The ``(connect, read)`` pair to give ``requests`` and the idle timeout,
    from the adapters' ``timeout`` and ``idle_timeout`` options: the read
    timeout is capped by the idle timeout (None: no idle limit), so a server
    that sends nothing at all fails within it too.

    Raises:
        ConfigError: as :func:`timeout_pair`, or a non-positive idle timeout.
    """
    connect, read = timeout_pair(timeout)
    if idle_timeout is None:
        return (connect, read), None
    idle = positive_seconds("idle_timeout", idle_timeout)
    return (connect, min(read, idle)), idle


def origin(base_url: str) -> str:
    """The service a base URL names, as :attr:`agentcore.Reasoning.origin`
    records it: the host in lower case, with the port when it is not the
    scheme's default (``"api.anthropic.com"``, ``"127.0.0.1:8080"``).
    Signed or encrypted reasoning goes back only to the same origin."""
    parts = urllib.parse.urlsplit(base_url)
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is None or port == {"http": 80, "https": 443}.get(parts.scheme):
        return host
    return f"{host}:{port}"
