"""Where an MCP server is and how to reach it: a command line over stdio or a
URL over streamable HTTP, checked when given, named in messages without its
credentials, and opened into the SDK's read and write streams.

A stdio server's environment is the SDK's allowlist
(:data:`INHERITED_ENVIRONMENT`), not this process's environment, so API keys
do not leak into tool processes; ``env`` adds to it (:func:`server_environment`
builds a wider allowlist, with the locale, from an environment you pass). HTTP
header values that are credentials are ``[REDACTED]`` in ``repr`` and in error
messages (:func:`agentcore.redaction.redact`). A stdio server is stopped by the SDK: it closes its
stdin, waits :data:`STDIN_GRACE` seconds, sends SIGTERM to its process group
and, :data:`TERM_GRACE` seconds later, SIGKILL.
"""

from __future__ import annotations

import functools
import shlex
import ssl
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from os import PathLike, fspath
from typing import Any, TextIO, cast
from urllib.parse import urlsplit

import attrs
import httpx2
import mcp.client.stdio as sdk_stdio
from mcp import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from agentcore.errors import ConfigError
from agentcore.redaction import headers_repr, secret_values
from agentcore.transport.headers import header_dict

__all__ = [
    "ENVIRONMENT_ALLOWLIST",
    "INHERITED_ENVIRONMENT",
    "STDIN_GRACE",
    "TERM_GRACE",
    "HttpServer",
    "Server",
    "StdioServer",
    "http_server",
    "server_environment",
    "stdio_server",
]

STDIN_GRACE: float = sdk_stdio.PROCESS_TERMINATION_TIMEOUT
"""Seconds a stdio server has to exit after its stdin is closed, before
SIGTERM (the SDK's ``PROCESS_TERMINATION_TIMEOUT``, 2 s)."""
TERM_GRACE: float = sdk_stdio.FORCE_KILL_TIMEOUT
"""Seconds between SIGTERM and SIGKILL (the SDK's ``FORCE_KILL_TIMEOUT``, 2 s)."""

INHERITED_ENVIRONMENT: tuple[str, ...] = tuple(sdk_stdio.DEFAULT_INHERITED_ENV_VARS)
"""The variables a stdio server inherits from this process, read by the SDK
(its ``DEFAULT_INHERITED_ENV_VARS``; on POSIX ``HOME``, ``LOGNAME``,
``PATH``, ``SHELL``, ``TERM`` and ``USER``)."""
ENVIRONMENT_ALLOWLIST = (*INHERITED_ENVIRONMENT, "TMPDIR", "TZ", "LANG", "LANGUAGE")
"""The variables :func:`server_environment` keeps, with every ``LC_*`` locale variable."""

_SESSION_HEADER = "mcp-session-id"

Streams = tuple[Any, Any]
"""The SDK's read and write streams of one session."""


def server_environment(environ: Mapping[str, str], env: Mapping[str, str] | None = None) -> dict[str, str]:
    """An ``env`` for :meth:`~agentcore.integrations.mcp.MCPTools.stdio` that
    also passes on the locale: the variables of ``environ`` (the caller's
    environment, which agentcore does not read itself) named in
    :data:`ENVIRONMENT_ALLOWLIST` or starting with ``LC_``, then ``env`` on top."""
    kept = {k: v for k, v in environ.items() if k in ENVIRONMENT_ALLOWLIST or k.startswith("LC_")}
    return {**kept, **(env or {})}


@attrs.frozen
class StdioServer:
    """A server this process starts, speaking over the child's stdin and stdout
    (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#stdio)."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str] = attrs.field(repr=False)
    cwd: str | None
    stderr: TextIO | None = attrs.field(repr=False)

    @property
    def label(self) -> str:
        """The server as messages name it: ``MCP server 'python server.py'``."""
        return f"MCP server {shlex.join([self.command, *self.args])!r}"

    @property
    def secrets(self) -> list[str]:
        """None: a command line carries no credential agentcore knows of."""
        return []

    def describe(self) -> str:
        """The ``repr`` of the tools built on it."""
        return f"MCPTools.stdio({shlex.join([self.command, *self.args])!r})"

    async def open(self, stack: AsyncExitStack, on_lost: Callable[[bool], None]) -> Streams:
        """Start the process; ``stack`` stops it (``on_lost`` is for HTTP only)."""
        params = StdioServerParameters(command=self.command, args=list(self.args), env=self.env, cwd=self.cwd)
        # errlog None: the server's stderr is this process's (the SDK passes it to the process as is).
        return await stack.enter_async_context(stdio_client(params, errlog=cast(TextIO, self.stderr)))


@attrs.frozen
class HttpServer:
    """A server reached over streamable HTTP
    (https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http)."""

    url: str
    headers: dict[str, str] = attrs.field(repr=False)
    connect_timeout: float

    @property
    def label(self) -> str:
        """The server as messages name it, its URL without user info or query."""
        return f"MCP server {_display_url(self.url)!r}"

    @property
    def secrets(self) -> list[str]:
        """The credentials among the headers, to redact from messages."""
        return secret_values(self.headers)

    def describe(self) -> str:
        """The ``repr`` of the tools built on it (credential headers redacted)."""
        headers = f", headers={headers_repr(self.headers)}" if self.headers else ""
        return f"MCPTools.http({_display_url(self.url)!r}{headers})"

    async def open(self, stack: AsyncExitStack, on_lost: Callable[[bool], None]) -> Streams:
        """Connect; ``stack`` ends the session. ``on_lost(post)`` is called when
        the server answers 404 to a request carrying the session id: it no
        longer knows the session (``post``: the request was a POST, which it
        then did not handle)."""

        async def on_response(response: httpx2.Response) -> None:
            # https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#session-management
            if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
                on_lost(response.request.method == "POST")

        client = httpx2.AsyncClient(
            headers=self.headers,
            timeout=httpx2.Timeout(self.connect_timeout, read=None),
            verify=_tls_context(),
            event_hooks={"response": [on_response]},
        )
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(self.url, http_client=client))


Server = StdioServer | HttpServer


def stdio_server(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | PathLike[str] | None,
    stderr: TextIO | None,
) -> StdioServer:
    """A :class:`StdioServer` of the arguments
    :meth:`~agentcore.integrations.mcp.MCPTools.stdio` takes.

    Raises:
        ConfigError: ``command`` is not a non-empty str, ``args`` is one str
            or holds something else, ``env`` is not a str -> str mapping.
    """
    if not isinstance(command, str) or not command:
        raise ConfigError(f"command must be a non-empty str, got {command!r}")
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"args must be a sequence of str (not one str), got {args!r}")
    if env is not None and not (
        isinstance(env, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise ConfigError("env must be a mapping of str names to str values")
    return StdioServer(command, tuple(args), dict(env or {}), None if cwd is None else fspath(cwd), stderr)


def http_server(url: str, headers: Mapping[str, str] | None, connect_timeout: float) -> HttpServer:
    """An :class:`HttpServer` of the arguments
    :meth:`~agentcore.integrations.mcp.MCPTools.http` takes
    (``connect_timeout`` in seconds, already checked).

    Raises:
        ConfigError: ``url`` is not an http(s) URL with a host and a valid
            port (one out of range or a broken IPv6 host would otherwise hang
            the SDK's client), or a header is not a str -> str pair.
    """
    if not _is_http_url(url):
        raise ConfigError(f"url must be an http:// or https:// URL with a host and a valid port, got {url!r}")
    return HttpServer(url, header_dict(headers, "headers"), connect_timeout)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx2's default TLS settings, made once: building them takes about 0.1 s,
    which every new session would pay."""
    return httpx2.create_ssl_context()


def _is_http_url(url: object) -> bool:
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
