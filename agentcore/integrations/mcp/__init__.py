"""Tools from Model Context Protocol servers, for synchronous code.

:meth:`MCPTools.stdio` starts an MCP server as a child process and talks to
it over the process's stdin and stdout; :meth:`MCPTools.http` connects to one
over streamable HTTP. Either is a :class:`~agentcore.tools.ToolSet` of the
server's tools, usable as ``LoopOptions(tools=...)``; :func:`combine` joins
several servers and function tools into one tool set. The protocol:
https://modelcontextprotocol.io/specification/2025-11-25

Needs the optional ``mcp`` package, the official SDK
(``pip install 'agentcore[mcp]'``); ``import agentcore`` never imports it.
This module is the tool view; the package's other modules hold the rest:

* :mod:`agentcore.integrations.mcp.servers`: where a server is and how to
  reach it (stdio or HTTP), its environment (:func:`~agentcore.integrations.mcp.servers.server_environment`),
  the grace periods when it is stopped, credentials kept out of messages;
* :mod:`agentcore.integrations.mcp.session`: the supervised session, on one
  background thread per :class:`MCPTools` with its own event loop (callers
  never see it): time limits (:data:`DEFAULT_TIMEOUT`,
  :data:`DEFAULT_CONNECT_TIMEOUT`), cancellation, restarts, tool list
  changes, :class:`~agentcore.MCPServerError`;
* :mod:`agentcore.integrations.mcp.mapping`: what the model sees of the
  server's tools and results (names, schemas, text, files).

A result with ``isError`` raises :class:`~agentcore.MCPToolError`, which the loop feeds
back to the model as an error result.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from types import TracebackType
from typing import Any, TextIO, cast

try:
    import mcp.types as mcp_types
except ImportError as exc:  # pragma: no cover - the test extra installs the SDK
    raise ImportError("agentcore.integrations.mcp needs the MCP SDK: pip install 'agentcore[mcp]'") from exc

from agentcore.context import Context
from agentcore.errors import ConfigError, MCPToolError
from agentcore.integrations.mcp.mapping import result_content, tool_definition, tool_name
from agentcore.integrations.mcp.servers import Server, http_server, stdio_server
from agentcore.integrations.mcp.session import Supervisor
from agentcore.redaction import redact
from agentcore.server_tools import SERVER_TOOL_TYPES, ServerTool, check_server_names
from agentcore.tools import Tool, ToolOutput, ToolSet, positive_seconds
from agentcore.types import TOOL_NAME_CHARACTERS, TOOL_NAME_LENGTH, ToolDefinition

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "MCPTool",
    "MCPTools",
    "combine",
]

DEFAULT_TIMEOUT = 60.0
"""Seconds one tool call may take once sent, unless ``timeout`` says otherwise."""
DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds for each step of (re)connecting: the ``initialize`` handshake and
each page of ``tools/list``."""

_PREFIX = re.compile(f"[{TOOL_NAME_CHARACTERS}]{{0,{TOOL_NAME_LENGTH - 1}}}")
"""A tool name prefix: what a tool name may hold, leaving room for one character of the name."""


class MCPTool:
    """One tool of an MCP server, as a :class:`~agentcore.tools.Tool`.

    Attributes:
        name: the tool's name on the server (``definition.name`` is the name
            the model sees: with the prefix, see
            :func:`~agentcore.integrations.mcp.mapping.tool_name`).
        title: the tool's display title, or None.
        annotations: the server's hints about the tool, with the protocol's
            names (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``,
            ``openWorldHint``, ``title``); empty when it sent none. Hints
            from a server you do not trust are not guarantees.
        output_schema: the JSON Schema of its structured content, or None.
    """

    def __init__(self, supervisor: Supervisor, tool: mcp_types.Tool, name: str) -> None:
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

    def execute(self, arguments: dict[str, Any], ctx: Context) -> ToolOutput:
        """Call the tool on the server and return its result.

        Args:
            arguments: the call's arguments (the JSON object the model sent).
            ctx: the run's context; cancelling it stops waiting at once and
                tells the server to cancel the call.

        Returns:
            The result's text, or a list of its text and files when it has
            files (see :func:`~agentcore.integrations.mcp.mapping.result_content`).

        Raises:
            MCPToolError: the result had ``isError`` set.
            TimeoutError: no answer within the call's ``timeout``.
            MCPServerError: the server could not be reached or restarted,
                refused the call, or the connection broke during it.
            Canceled: ``ctx`` was cancelled.
            ConfigError: the tools were closed.
        """
        supervisor = self._supervisor
        result = supervisor.call(self.name, arguments, ctx)
        text, files = result_content(result)
        if result.is_error:  # an error result is text: its files are dropped
            message = redact(text, supervisor.server.secrets)
            raise MCPToolError(message or "the tool reported an error without a message")
        return [*([text] if text else []), *files] if files else text


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
            model (see :func:`~agentcore.integrations.mcp.mapping.tool_name`), or the tools were closed.
    """

    def __init__(self, server: Server, *, timeout: float, connect_timeout: float, prefix: str) -> None:
        super().__init__()
        timeout = positive_seconds("timeout", timeout)
        connect_timeout = positive_seconds("connect_timeout", connect_timeout)
        if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
            raise ConfigError(f"prefix must be up to 63 letters, digits, '_' or '-', got {prefix!r}")
        self._server = server
        self._prefix = prefix
        self._view: dict[str, MCPTool] = {}
        self._view_of: tuple[mcp_types.Tool, ...] | None = None
        self._view_lock = threading.Lock()
        self._supervisor = Supervisor(server, timeout, connect_timeout)
        self._close = weakref.finalize(self, self._supervisor.close)
        try:
            self._supervisor.start()
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
                (:data:`~agentcore.integrations.mcp.servers.INHERITED_ENVIRONMENT`);
                :func:`~agentcore.integrations.mcp.servers.server_environment`
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
        return cls(
            stdio_server(command, args, env, cwd, stderr),
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
        seconds = positive_seconds("connect_timeout", connect_timeout)
        server = http_server(url, headers, seconds)
        return cls(server, timeout=timeout, connect_timeout=seconds, prefix=prefix)

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
        """Cancel the calls in flight, stop the server (see
        :mod:`agentcore.integrations.mcp.servers` for the grace periods) and end the background thread.
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
        listing = supervisor.tools()
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
        super().__init__([tool for source in sources for tool in source.server_tools])
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
        check_server_names(self.server_tools, tools)
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


def combine(
    *sources: ToolSet | Tool | ServerTool | Iterable[Tool | ServerTool] | Mapping[str, Tool | ServerTool],
) -> ToolSet:
    """One tool set of several: MCP servers, function tools, server tools
    (:mod:`agentcore.server_tools`), tool sets.

    The result reads its sources live, so an :class:`MCPTools` among them
    still shows its server's current tools. Use it as ``LoopOptions(tools=...)``.

    Args:
        sources: each a :class:`ToolSet` (an :class:`MCPTools` included), a
            single :class:`~agentcore.tools.Tool` or server tool, an iterable
            of them or a name -> tool mapping.

    Raises:
        ConfigError: two tools have the same name (the message names both and
            where they come from), or a tool has a server tool's name, now or
            when it is read after a server's tools changed; or a source is not
            a tool or tool set.
    """
    sets = [
        s if isinstance(s, ToolSet) else ToolSet([s] if isinstance(s, (Tool, *SERVER_TOOL_TYPES)) else s)
        for s in sources
    ]
    return _Combined(sets)
