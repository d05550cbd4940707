"""The base URL every adapter takes: its check (a :class:`ConfigError` naming
the option) and the origin it names."""

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
