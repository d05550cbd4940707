"""``ModelSettings``: the provider-neutral sampling, tool and reasoning settings.

One value type, given to an adapter (``settings=``, its defaults for every
request) and to a run (``LoopOptions(settings=...)``, which override the
adapter's field by field). Each adapter maps the fields onto its API and
raises :class:`ConfigError` naming a field its API does not support, before
any HTTP call: nothing is dropped silently. ``extra_body`` carries whatever
has no field here, merged into the request body last.

Every field defaults to None, "not set": the adapter sends nothing for it
and the provider's default applies.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from agentcore.errors import ConfigError

TOOL_CHOICES = ("auto", "none", "required")
"""The ``tool_choice`` values that are not a tool name."""
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
"""The ``reasoning_effort`` values; each adapter says which its API takes."""
CACHE_TTLS = ("5m", "1h")
"""The ``cache_ttl`` values: Anthropic's cache lifetimes (5 minutes, 1 hour)."""
CACHE_RETENTIONS = ("in_memory", "24h")
"""The ``cache_retention`` values: OpenAI's ``prompt_cache_retention`` policies."""


def extra_body_dict(extra_body: Mapping[str, Any] | None, option: str = "extra_body") -> dict[str, Any]:
    """A copy of an ``extra_body`` option, once it is None or a mapping of
    ``str`` keys that serializes as JSON (checked now, not at the first request).

    Raises:
        ConfigError: naming ``option``, for any other value.
    """
    if extra_body is None:
        return {}
    if not isinstance(extra_body, Mapping):
        raise ConfigError(
            f"{option} must be a mapping of str keys to JSON values, got {type(extra_body).__name__}"
        )
    for key in extra_body:
        if not isinstance(key, str):
            raise ConfigError(
                f"{option} must be a mapping of str keys to JSON values; the key {key!r} is not a str"
            )
    body = dict(extra_body)
    try:
        json.dumps(body, allow_nan=False)  # NaN and Infinity are not JSON
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{option} must be JSON-serializable: {exc}") from None
    return body


def _number(low: float, high: float) -> Any:
    def check(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"ModelSettings.{attribute.name} must be a number, got {value!r}")
        if not low <= value <= high:
            raise ConfigError(
                f"ModelSettings.{attribute.name} must be between {low} and {high}, got {value!r}"
            )

    return check


def _int(minimum: int) -> Any:
    def check(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"ModelSettings.{attribute.name} must be an int >= {minimum}, got {value!r}")

    return check


def _stop_sequences(value: object) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise ConfigError(
            f"ModelSettings.stop_sequences must be a list of str, got {type(value).__name__}"
            + (" (wrap it: [...])" if isinstance(value, str) else "")
        )
    for item in value:
        if not isinstance(item, str) or not item:
            raise ConfigError(f"ModelSettings.stop_sequences must hold non-empty str, got {item!r}")
    return tuple(value)


def _tool_choice(_instance: Any, _attribute: Any, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(
            f"ModelSettings.tool_choice must be 'auto', 'none', 'required' or a tool name, got {value!r}"
        )


def _one_of(values: tuple[str, ...]) -> Any:
    def check(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and value not in values:
            raise ConfigError(
                f"ModelSettings.{attribute.name} must be one of {', '.join(values)}, got {value!r}"
            )

    return check


def _cache_key(_instance: Any, _attribute: Any, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"ModelSettings.cache_key must be a non-empty str, got {value!r}")


def _optional_bool(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"ModelSettings.{attribute.name} must be True, False or None, got {value!r}")


def _extra_body(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else extra_body_dict(value, "ModelSettings.extra_body")


@attrs.frozen
class ModelSettings:
    """Provider-neutral model settings; None means "not set" for every field.

    Attributes:
        temperature: sampling temperature, 0 to 2 (Anthropic accepts 0 to 1).
        top_p: nucleus sampling mass, 0 to 1.
        stop_sequences: strings that end generation when produced.
        seed: a sampling seed, for providers that offer best-effort determinism.
        tool_choice: ``"auto"`` (the model decides), ``"none"`` (no tool
            calls), ``"required"`` (at least one call) or a tool's name (a
            call to that tool).
        parallel_tool_calls: whether the model may make several calls in one
            step (False: at most one).
        reasoning_effort: how hard a reasoning model thinks: one of
            :data:`REASONING_EFFORTS`; each adapter documents which it accepts.
        thinking: turn the model's reasoning on (True) or off (False).
        thinking_budget: the most tokens the model may spend reasoning in one
            step, with ``thinking=True`` (Anthropic's ``budget_tokens``).
        cache: automatic prompt caching (Anthropic's request-level
            ``cache_control``: the provider caches the prompt up to its last
            block, a breakpoint that moves forward as the loop's history
            grows). ``AnthropicModel`` turns it on by default; False turns
            it off (``docs/caching.md``).
        cache_ttl: how long cached prefixes live: ``"5m"`` (the provider's
            default) or ``"1h"`` (writes cost more); Anthropic.
        cache_system: also put a cache breakpoint on the system prompt
            (Anthropic), so it stays cached when the messages change.
        cache_tools: also put a cache breakpoint on the tool definitions
            (Anthropic).
        cache_key: a key the provider uses with the prompt's prefix to route
            requests to the same cache (OpenAI's ``prompt_cache_key``).
        cache_retention: how long the provider keeps cached prefixes:
            ``"in_memory"`` or ``"24h"`` (OpenAI's ``prompt_cache_retention``).
        compaction_trigger: the provider's own compaction, in input tokens:
            once a request's prompt reaches this many tokens, the provider
            summarizes the history itself and returns the summary as a
            compaction block (a :class:`agentcore.ProviderItem` the loop keeps
            and sends back). Anthropic's compaction edit (at least 50,000)
            and OpenAI Responses' ``compact_threshold``;
            ``docs/providers.md``, "Provider compaction".
        clear_tool_uses: True asks the provider to clear old tool results
            from the prompt it reads once it grows long (Anthropic context
            editing, ``clear_tool_uses_20250919`` with its defaults: from
            100,000 input tokens, the last 3 tool uses kept); the history
            you keep is not changed.
        clear_thinking: True asks the provider to clear the thinking blocks
            of earlier turns from the prompt it reads (Anthropic context
            editing, ``clear_thinking_20251015`` with its default: the last
            turn's kept); needs thinking on.
        extra_body: fields merged into the request body last (they win), for
            what has no field here.

    For the provider's own compaction and context editing, leave a field
    None to ask for nothing: False is a setting too, and an adapter whose API
    has no such field refuses any value but None.

    Raises:
        ConfigError: a value of the wrong type or out of range, naming the field.
    """

    temperature: float | None = attrs.field(default=None, validator=_number(0.0, 2.0))
    top_p: float | None = attrs.field(default=None, validator=_number(0.0, 1.0))
    stop_sequences: tuple[str, ...] | None = attrs.field(default=None, converter=_stop_sequences)
    seed: int | None = attrs.field(default=None, validator=_int(-(2**63)))
    tool_choice: str | None = attrs.field(default=None, validator=_tool_choice)
    parallel_tool_calls: bool | None = attrs.field(default=None, validator=_optional_bool)
    reasoning_effort: str | None = attrs.field(default=None, validator=_one_of(REASONING_EFFORTS))
    thinking: bool | None = attrs.field(default=None, validator=_optional_bool)
    thinking_budget: int | None = attrs.field(default=None, validator=_int(1))
    cache: bool | None = attrs.field(default=None, validator=_optional_bool)
    cache_ttl: str | None = attrs.field(default=None, validator=_one_of(CACHE_TTLS))
    cache_system: bool | None = attrs.field(default=None, validator=_optional_bool)
    cache_tools: bool | None = attrs.field(default=None, validator=_optional_bool)
    cache_key: str | None = attrs.field(default=None, validator=_cache_key)
    cache_retention: str | None = attrs.field(default=None, validator=_one_of(CACHE_RETENTIONS))
    compaction_trigger: int | None = attrs.field(default=None, validator=_int(1))
    clear_tool_uses: bool | None = attrs.field(default=None, validator=_optional_bool)
    clear_thinking: bool | None = attrs.field(default=None, validator=_optional_bool)
    extra_body: Mapping[str, Any] | None = attrs.field(default=None, converter=_extra_body)

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with every field that ``override`` sets replacing
        this one's; ``extra_body`` mappings are merged key by key (the
        override's keys win)."""
        if override is None:
            return self
        changes: dict[str, Any] = {
            field.name: getattr(override, field.name)
            for field in attrs.fields(ModelSettings)
            if getattr(override, field.name) is not None
        }
        if self.extra_body is not None and override.extra_body is not None:
            changes["extra_body"] = {**self.extra_body, **override.extra_body}
        return attrs.evolve(self, **changes) if changes else self

    def set_fields(self) -> list[str]:
        """The names of the fields that are set (not None), in declaration order."""
        return [field.name for field in attrs.fields(ModelSettings) if getattr(self, field.name) is not None]


def unsupported(settings: ModelSettings, supported: set[str], api: str) -> None:
    """Raise :class:`ConfigError` for the first set field not in ``supported``.

    Args:
        settings: the merged settings of one request.
        supported: the field names the adapter maps.
        api: the API's name for the message (``"the Anthropic Messages API"``).
    """
    for name in settings.set_fields():
        if name not in supported:
            raise ConfigError(
                f"ModelSettings.{name} is not supported by {api}; leave it unset or use extra_body"
            )
