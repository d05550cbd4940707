"""The tools a provider runs itself: web search, web fetch, code execution
and file search, asked for in ``LoopOptions(tools=[...])`` next to function
and MCP tools.

These classes only say what is wanted; the model's adapter maps each to its
API's own tool (``docs/server-tools.md`` lists which API has which, and the
pages each mapping follows). The loop never runs them: the provider does,
within the step, and what it did comes back in the assistant message as
provider items (:class:`agentcore.ProviderItem`) that go back only to the
API that made them. An adapter whose API has no such tool raises
:class:`agentcore.ConfigError` naming the tool and the adapter before any
request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agentcore.errors import ConfigError


def _names(value: Iterable[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _domains(_instance: Any, attribute: attrs.Attribute[Any], value: tuple[str, ...] | None) -> None:
    if value is None:
        return
    if not value:
        raise ValueError(f"{attribute.name} must name at least one domain, or be None for no limit")
    for domain in value:
        if not isinstance(domain, str) or not domain.strip():
            raise ValueError(f"{attribute.name} must be non-empty strings, got {domain!r}")


def _ids(_instance: Any, attribute: attrs.Attribute[Any], value: tuple[str, ...]) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must name at least one vector store")
    for name in value:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{attribute.name} must be non-empty strings, got {name!r}")


def _uses(_instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"{attribute.name} must be an int >= 1, or None for the provider's default; got {value!r}"
        )


def _optional_text(_instance: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str or None, got {type(value).__name__}")


@attrs.frozen
class UserLocation:
    """Where the user is, so a web search can localize its results. Every
    field is optional.

    Attributes:
        city: a city name (``"San Francisco"``).
        region: a region or state (``"California"``).
        country: a two-letter ISO 3166-1 country code (``"US"``).
        timezone: an IANA time zone (``"America/Los_Angeles"``).
    """

    city: str | None = attrs.field(default=None, validator=_optional_text)
    region: str | None = attrs.field(default=None, validator=_optional_text)
    country: str | None = attrs.field(default=None, validator=_optional_text)
    timezone: str | None = attrs.field(default=None, validator=_optional_text)

    def fields(self) -> dict[str, str]:
        """The fields that are set, by name."""
        return {name: value for name, value in attrs.asdict(self).items() if value is not None}


def _location(value: UserLocation | Mapping[str, str] | None) -> UserLocation | None:
    """A :class:`UserLocation`, or a mapping of its fields made into one."""
    if value is None or isinstance(value, UserLocation):
        return value
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"city", "region", "country", "timezone"})
        if unknown:
            raise TypeError(
                f"user_location: unknown field(s) {', '.join(map(repr, unknown))}; "
                "a UserLocation has city, region, country and timezone"
            )
        return UserLocation(**value)
    raise TypeError(
        f"user_location must be a UserLocation (or a dict of its fields), got {type(value).__name__}"
    )


@attrs.frozen
class WebSearch:
    """The provider searches the web and cites what it found.

    Attributes:
        max_uses: the most searches in one request (None: the provider's
            default, no limit).
        allowed_domains: search only these domains (None: any).
        blocked_domains: never these domains (None: none blocked). Not
            together with ``allowed_domains``.
        user_location: where the user is, to localize results: a
            :class:`UserLocation`, or a dict of its fields.

    Raises:
        ValueError: ``max_uses`` below 1, an empty domain list, or both
            domain lists.
        TypeError: a ``user_location`` that is neither, or with a field a
            UserLocation lacks.
    """

    max_uses: int | None = attrs.field(default=None, validator=_uses)
    allowed_domains: tuple[str, ...] | None = attrs.field(default=None, converter=_names, validator=_domains)
    blocked_domains: tuple[str, ...] | None = attrs.field(default=None, converter=_names, validator=_domains)
    user_location: UserLocation | None = attrs.field(default=None, converter=_location)

    name = "web_search"
    """The tool's name, as the model and the history see it."""

    def __attrs_post_init__(self) -> None:
        if self.allowed_domains is not None and self.blocked_domains is not None:
            raise ValueError("WebSearch takes allowed_domains or blocked_domains, not both")


@attrs.frozen
class WebFetch:
    """The provider fetches the pages (and PDFs) the model asks for.

    Attributes:
        max_uses: the most fetches in one request (None: no limit).
        allowed_domains: fetch only from these domains (None: any).

    Raises:
        ValueError: ``max_uses`` below 1, or an empty domain list.
    """

    max_uses: int | None = attrs.field(default=None, validator=_uses)
    allowed_domains: tuple[str, ...] | None = attrs.field(default=None, converter=_names, validator=_domains)

    name = "web_fetch"
    """The tool's name, as the model and the history see it."""


@attrs.frozen
class CodeExecution:
    """The provider runs code the model writes in a sandbox of its own."""

    name = "code_execution"
    """The tool's name, as the model and the history see it."""


@attrs.frozen
class FileSearch:
    """The provider searches the vector stores named (OpenAI Responses; on
    the Gemini API each id names a File Search store, ``fileSearchStores/...``).

    Attributes:
        vector_store_ids: the ids of the vector stores to search (at least
            one).
        max_num_results: the most results to return (None: the provider's
            default).

    Raises:
        ValueError: no vector store id, an empty one, or
            ``max_num_results`` below 1.
    """

    vector_store_ids: tuple[str, ...] = attrs.field(converter=_names, validator=_ids)
    max_num_results: int | None = attrs.field(default=None, validator=_uses)

    name = "file_search"
    """The tool's name, as the model and the history see it."""


ServerTool = WebSearch | WebFetch | CodeExecution | FileSearch
"""A tool the provider runs."""

SERVER_TOOL_TYPES = (WebSearch, WebFetch, CodeExecution, FileSearch)
"""The server tool classes (for ``isinstance``)."""


def server_tools(value: Iterable[Any]) -> tuple[ServerTool, ...]:
    """``value`` as a tuple of server tools. Raises TypeError naming an item
    that is not one, ValueError for two of one kind."""
    tools = tuple(value)
    seen: set[str] = set()
    for tool in tools:
        if not isinstance(tool, SERVER_TOOL_TYPES):
            raise TypeError(
                f"server_tools: expected WebSearch, WebFetch, CodeExecution or FileSearch, "
                f"got a {type(tool).__name__}: {tool!r}"[:200]
            )
        if tool.name in seen:
            raise ValueError(f"server_tools: {type(tool).__name__} is given twice; give it once")
        seen.add(tool.name)
    return tools


def check_server_names(server_tools: Iterable[ServerTool], names: Iterable[str]) -> None:
    """Refuse a function or MCP tool named as one of ``server_tools``: the
    model could not tell which one it calls, and the providers refuse two
    tools of one name.

    Raises:
        ConfigError: naming the tool and the server tool.
    """
    taken = {tool.name: tool for tool in server_tools}
    if not taken:
        return
    for name in names:
        if name in taken:
            raise ConfigError(
                f"the tool {name!r} has the name of the server tool {type(taken[name]).__name__} given with "
                "it; rename the tool (a provider refuses two tools of one name)"
            )
