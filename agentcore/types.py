"""The provider-neutral value types of agentcore.

Every value type of the public API as a frozen ``attrs`` class with
snake_case fields, and its string constants as ``str``-valued enums whose
values are the wire strings (design.md, "Shape"). Validators
reject values that do not fit the type (a :class:`StreamPart` whose fields do
not match its kind is a ``ValueError``); named constructors build the common
shapes. Token counts are ``int``; JSON payloads are ``str`` holding JSON text.

A :class:`~agentcore.files.File` and its I/O live in :mod:`agentcore.files`;
the rule that shows credential headers as ``[REDACTED]`` in a ``repr`` in
:mod:`agentcore.redaction`.
"""

from __future__ import annotations

import enum
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from agentcore.errors import ConfigError
from agentcore.files import MAX_FILE_BYTES, File
from agentcore.redaction import headers_repr
from agentcore.server_tools import ServerTool, server_tools

if TYPE_CHECKING:
    from agentcore.caching import CacheReport
    from agentcore.settings import ModelSettings


class ContentPartKind(str, enum.Enum):
    """Discriminates the variants of :class:`ContentPart`."""

    TEXT = "text"
    REASONING = "reasoning"
    TOOL_CALL = "tool-call"
    TOOL_RESULT = "tool-result"
    FILE = "file"
    CACHE_POINT = "cache-point"
    PROVIDER_ITEM = "provider-item"


class Role(str, enum.Enum):
    """The author of a :class:`Message`. The loop emits exactly one ``TOOL``
    message per step, holding all of that step's tool results."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class FinishReason(str, enum.Enum):
    """Why a model step, or the whole run, stopped."""

    STOP = "stop"
    TOOL_CALLS = "tool-calls"
    LENGTH = "length"
    STEP_LIMIT = "step-limit"
    APPROVAL_REQUIRED = "approval-required"
    """The run stopped before tool calls that wait for a human's decision
    (``RunResult.pending``); resume it with ``LoopOptions(approvals=...)``."""
    CANCELED = "canceled"
    ERROR = "error"
    CONTENT_FILTER = "content-filter"
    """The provider stopped the answer for its content (Anthropic's
    ``refusal`` stop reason, OpenAI's ``content_filter``); what text came is
    still the answer text. It ends the run like ``stop``."""
    PAUSED = "paused"
    """A step the provider paused in a long turn of its own tools (Anthropic's
    ``pause_turn``): the loop sends the history back with the paused turn
    unchanged and the model goes on (``docs/server-tools.md``). A run never
    ends with it."""
    GUARDRAIL = "guardrail"
    """A guardrail tripped (``LoopOptions.guardrails``, :mod:`agentcore.guardrails`):
    the run ended with an ``error`` part whose error is a
    :class:`~agentcore.guardrails.GuardrailTripped` (``docs/controls.md``)."""
    LIMIT = "limit"
    """The run reached one of its usage limits (``LoopOptions.limits``,
    :class:`agentcore.UsageLimits`; ``RunResult.limit`` says which). A
    normal finish, like ``step-limit``."""


class StreamPartKind(str, enum.Enum):
    """Discriminates the variants of :class:`StreamPart`. Adapters emit
    ``TEXT_DELTA``, ``REASONING_DELTA``, ``REASONING``, ``TOOL_CALL``,
    ``TOOL_CALL_DELTA``, ``CITATION``, ``PROVIDER_ITEM`` and ``STEP_FINISH``; the loop adds ``TOOL_RESULT``,
    ``COMPACTION``, ``FINISH`` and ``ERROR``; agent tools and handoffs
    (:mod:`agentcore.agent`) add ``NESTED`` and ``HANDOFF``."""

    TEXT_DELTA = "text-delta"
    REASONING_DELTA = "reasoning-delta"
    REASONING = "reasoning"
    TOOL_CALL = "tool-call"
    TOOL_CALL_DELTA = "tool-call-delta"
    """A fragment of a tool call's JSON arguments as the model writes them
    (``LoopOptions(stream_tool_input=True)`` only), for display: the whole
    ``tool-call`` part follows."""
    CITATION = "citation"
    """A source the answer text cites (:class:`Citation`); it belongs to the
    text around it."""
    PROVIDER_ITEM = "provider-item"
    TOOL_RESULT = "tool-result"
    STEP_FINISH = "step-finish"
    COMPACTION = "compaction"
    """A history policy changed the run's history before a step
    (:class:`Compaction`; ``docs/long-runs.md``)."""
    FINISH = "finish"
    ERROR = "error"
    NESTED = "nested"
    """A part of a sub-run (an agent used as a tool, ``Agent.as_tool``):
    ``path`` and ``nested`` (``docs/agents.md``)."""
    HANDOFF = "handoff"
    """The run moved to another agent (``agentcore.handoff``): ``agent``
    names the agent now in charge."""


def _non_negative(_instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{attribute.name} must be a non-negative int, got {value!r}")


def _positive(_instance: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{attribute.name} must be an int >= 1, got {value!r}")


@attrs.frozen
class Usage:
    """Token accounting for one step or, summed, for a whole run.

    Normalized across providers (design.md, "Usage"):

    Attributes:
        input: prompt tokens billed as input, INCLUDING tokens read from the
            prompt cache and EXCLUDING tokens written to it.
        output: generated (completion) tokens.
        cache_read: the part of ``input`` served from the prompt cache.
        cache_write: tokens written to the prompt cache (billed on their own).
        web_search_requests: searches a provider's web search tool ran
            (billed per search; ``docs/server-tools.md``).
        web_fetch_requests: pages a provider's web fetch tool fetched.
        code_execution_requests: code runs of a provider's code execution
            tool (where the API reports or lists them).
        file_search_requests: searches of a provider's file search tool.
    """

    input: int = attrs.field(default=0, validator=_non_negative)
    output: int = attrs.field(default=0, validator=_non_negative)
    cache_read: int = attrs.field(default=0, validator=_non_negative)
    cache_write: int = attrs.field(default=0, validator=_non_negative)
    web_search_requests: int = attrs.field(default=0, validator=_non_negative)
    web_fetch_requests: int = attrs.field(default=0, validator=_non_negative)
    code_execution_requests: int = attrs.field(default=0, validator=_non_negative)
    file_search_requests: int = attrs.field(default=0, validator=_non_negative)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.web_search_requests + other.web_search_requests,
            self.web_fetch_requests + other.web_fetch_requests,
            self.code_execution_requests + other.code_execution_requests,
            self.file_search_requests + other.file_search_requests,
        )

    def add(self, other: Usage) -> Usage:
        """Return the field-wise sum of ``self`` and ``other`` (same as ``+``)."""
        return self + other

    def __repr__(self) -> str:
        # The server-tool counts only when not 0, as in to_dict: a log line or
        # a notebook of a run without server tools reads as it always did.
        return "Usage(" + ", ".join(f"{name}={count}" for name, count in self.to_dict().items()) + ")"

    def to_dict(self) -> dict[str, int]:
        """Return ``{"input", "output", "cache_read", "cache_write"}`` as ints,
        plus each server-tool count (``web_search_requests`` ...) that is
        not 0."""
        fields = attrs.asdict(self)
        for name in _SERVER_TOOL_COUNTS:
            if not fields[name]:
                del fields[name]
        return fields

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """Build from :meth:`to_dict`'s shape; missing keys count as 0."""
        return cls(**{f: int(data.get(f, 0)) for f in _USAGE_FIELDS})


_SERVER_TOOL_COUNTS = (
    "web_search_requests",
    "web_fetch_requests",
    "code_execution_requests",
    "file_search_requests",
)
_USAGE_FIELDS = ("input", "output", "cache_read", "cache_write", *_SERVER_TOOL_COUNTS)


def _text_or_empty(_instance: Any, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str, got {type(value).__name__}")


def _without_empty(fields: dict[str, Any], optional: Iterable[str]) -> dict[str, Any]:
    """``fields`` without the ``optional`` keys whose value is ""."""
    for name in optional:
        if fields.get(name) == "":
            del fields[name]
    return fields


def _json_text(_instance: Any, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be JSON text (str), got {type(value).__name__}")


@attrs.frozen
class ToolCall:
    """A model's request to run a tool.

    Attributes:
        id: the provider-assigned id that correlates the call with its result.
        name: the tool's name.
        input: the call's arguments as raw JSON text, exactly as the model
            sent them (it may be malformed; the loop checks before running).
        provider_data: JSON text of the provider's opaque per-call data that
            must go back with the call, byte for byte (Gemini's
            ``extra_content.google.thought_signature``, a Responses ``fc_``
            item id); "" when there is none. Only the adapter that wrote it
            reads it.
        origin: the service that produced ``provider_data`` (see
            :attr:`Reasoning.origin`); an adapter sends the data back only to
            the same origin.
    """

    id: str
    name: str
    input: str = attrs.field(default="{}", validator=_json_text)
    provider_data: str = attrs.field(default="", validator=_text_or_empty)
    origin: str = attrs.field(default="", validator=_text_or_empty)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"id", "name", "input"}`` (input stays JSON text), plus
        ``provider_data`` and ``origin`` when they are set."""
        return _without_empty(attrs.asdict(self), ("provider_data", "origin"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Inverse of :meth:`to_dict`."""
        return cls(
            id=data["id"],
            name=data["name"],
            input=data.get("input", "{}"),
            provider_data=data.get("provider_data", ""),
            origin=data.get("origin", ""),
        )


@attrs.frozen
class Reasoning:
    """One complete block of a model's reasoning, kept byte for byte.

    A reasoning model's thinking must often go back to the provider exactly
    as it came (signed or encrypted), before the tool calls it preceded; this
    value holds everything needed for that, and the text people read. Which
    fields an adapter fills depends on the wire format (``docs/reasoning.md``
    has the table); all are JSON-safe text, so a history saved with
    :meth:`Message.to_dict` sends the same bytes after a restart.

    Attributes:
        text: the visible reasoning (Anthropic ``thinking``, a Chat
            Completions ``reasoning_content``, a Responses summary); "" when the
            provider sent none (redacted or encrypted-only reasoning).
        signature: the provider's signature over the text (Anthropic
            ``signature``); "" when none.
        data: opaque reasoning data as the provider sent it (Anthropic
            ``redacted_thinking.data``, Responses ``encrypted_content``);
            already base64 text on every wire format agentcore speaks.
        id: the provider's item id (Responses ``rs_...``); "" when none.
        format: the wire format that produced the block, as its adapter
            names it (``"anthropic"``, ``"openai-chat"``, ...).
        origin: the service that produced it (the API's host, with its port
            when not the default); signed or encrypted reasoning is sent back
            only to the same ``format`` and ``origin`` (``docs/reasoning.md``,
            "Switching providers").
        provider_data: JSON text of any other provider object that must go
            back verbatim (OpenRouter's ``reasoning_details`` entries); "" when
            none.
    """

    text: str = attrs.field(default="", validator=_text_or_empty)
    signature: str = attrs.field(default="", validator=_text_or_empty)
    data: str = attrs.field(default="", validator=_text_or_empty)
    id: str = attrs.field(default="", validator=_text_or_empty)
    format: str = attrs.field(default="", validator=_text_or_empty)
    origin: str = attrs.field(default="", validator=_text_or_empty)
    provider_data: str = attrs.field(default="", validator=_text_or_empty)

    def to_dict(self) -> dict[str, str]:
        """Return the fields that are set (``text`` always), as JSON-safe strings."""
        return _without_empty(attrs.asdict(self), _REASONING_OPTIONAL)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reasoning:
        """Inverse of :meth:`to_dict`; missing fields are ""."""
        return cls(**{name: data.get(name, "") for name in _REASONING_FIELDS})


_REASONING_FIELDS = tuple(field.name for field in attrs.fields(Reasoning))
_REASONING_OPTIONAL = _REASONING_FIELDS[1:]


def _item_type(_instance: Any, _attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"ProviderItem.type must be a non-empty str (the block's type), got {value!r}")


def _json_object_text(_instance: Any, attribute: attrs.Attribute[str], value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"ProviderItem.{attribute.name} must be JSON text (str), got {type(value).__name__}")
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        raise ValueError(f"ProviderItem.{attribute.name} must be the JSON text of an object: {value[:80]!r}")


@attrs.frozen
class Citation:
    """A source the answer text cites: a web page a search or fetch found, a
    file a search read, a passage of a document. It belongs to the text part
    it came with (:attr:`ContentPart.citations`; the text it supports is
    that part's text) and stays in the history; it is not sent back
    (``docs/server-tools.md``, "Citations").

    Attributes:
        url: the cited page's URL; "" for a file or a document.
        title: the source's title; "" when the provider gives none.
        cited_text: the passage cited; "" when the provider gives none.
        type: the provider's name for the citation
            (``"web_search_result_location"``, ``"url_citation"``,
            ``"file_citation"`` ...).
        data: the citation's JSON text as the provider gave it (an object:
            its file ids, character offsets, encrypted index); "" for none.

    Raises:
        TypeError: a field that is not a ``str``.
    """

    url: str = attrs.field(default="", validator=_text_or_empty)
    title: str = attrs.field(default="", validator=_text_or_empty)
    cited_text: str = attrs.field(default="", validator=_text_or_empty)
    type: str = attrs.field(default="", validator=_text_or_empty)
    data: str = attrs.field(default="", validator=_text_or_empty)

    def to_dict(self) -> dict[str, str]:
        """Return ``{"url", "title", "cited_text", "type", "data"}`` without
        the fields that are ""."""
        return _without_empty(attrs.asdict(self), ("url", "title", "cited_text", "type", "data"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Citation:
        """Inverse of :meth:`to_dict`; a missing field is ""."""
        return cls(**{name: data.get(name, "") for name in ("url", "title", "cited_text", "type", "data")})


@attrs.frozen
class ProviderItem:
    """A block or item a provider returned that must go back to it byte for
    byte, and that is not text, reasoning or a tool call: an Anthropic
    ``compaction`` block, a Responses ``compaction`` item.

    The loop keeps it in the assistant message where the model produced it;
    the adapter that read it sends it back in place, unchanged, but only to
    the same ``format`` and ``origin`` (another provider could not read it),
    and leaves it out, with a log line at INFO, everywhere else
    (``docs/providers.md``, "Provider compaction"). Every field is text, so a
    history saved with :meth:`Message.to_dict` sends the same bytes after a
    restart.

    Attributes:
        type: the provider's name for the block or item (``"compaction"``).
        data: the block's JSON text, exactly as the provider wants it back
            (an object: ``{"type": "compaction", "content": "..."}``).
        format: the wire format that produced it, as its adapter names it
            (``"anthropic"``, ``"openai-responses"``).
        origin: the service that produced it (the API's host, with its port
            when not the default), as :attr:`Reasoning.origin`.
        text: what a person may read of it (an Anthropic compaction
            summary); "" when it is opaque (encrypted). Never answer text.

    Raises:
        ValueError: an empty ``type``, or ``data`` that is not the JSON text
            of an object.
        TypeError: a field that is not a ``str``.
    """

    type: str = attrs.field(validator=_item_type)
    data: str = attrs.field(validator=_json_object_text)
    format: str = attrs.field(validator=_text_or_empty)
    origin: str = attrs.field(validator=_text_or_empty)
    text: str = attrs.field(default="", validator=_text_or_empty)

    def to_dict(self) -> dict[str, str]:
        """Return ``{"type", "data", "format", "origin"}``, plus ``text`` when
        it is set, as JSON-safe strings (``data`` stays JSON text)."""
        return _without_empty(attrs.asdict(self), ("text",))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderItem:
        """Inverse of :meth:`to_dict`; a missing ``text`` is ""."""
        return cls(
            type=data["type"],
            data=data["data"],
            format=data.get("format", ""),
            origin=data.get("origin", ""),
            text=data.get("text", ""),
        )


def _to_tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


ERROR_PREFIX = "Error: "
"""What the content of an error result made by agentcore starts with
(:meth:`ToolResult.error`); an adapter for an API without an error flag puts
it before the content of any other error result."""


@attrs.frozen
class ToolResult:
    """The outcome of running a :class:`ToolCall`.

    Attributes:
        tool_call_id: the id of the call this answers.
        name: the name of the tool that was called.
        content: the text fed back to the model.
        is_error: True when the tool failed, was unknown, or got malformed
            input; the model sees the content as an error (loop rule 6).
        files: the files the tool returned (a screenshot, a chart), sent to
            the model after ``content``; a tuple, any iterable is accepted.
    """

    tool_call_id: str
    name: str
    content: str = ""
    is_error: bool = False
    files: tuple[File, ...] = attrs.field(default=(), converter=_to_tuple)

    @classmethod
    def error(cls, call: ToolCall, message: str) -> ToolResult:
        """The error result of ``call``: ``content`` is :data:`ERROR_PREFIX`
        then ``message`` (what the model reads, also through an API without
        an error flag), ``is_error`` True."""
        return cls(call.id, call.name, ERROR_PREFIX + message, True)

    @files.validator
    def _check_files(self, _attribute: Any, value: tuple[Any, ...]) -> None:
        for file in value:
            if not isinstance(file, File):
                raise TypeError(f"ToolResult.files must hold File objects, got {type(file).__name__}")

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"tool_call_id", "name", "content", "is_error"}``, plus
        ``files`` (each as :meth:`File.to_dict`) when there are any."""
        out: dict[str, Any] = {
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "content": self.content,
            "is_error": self.is_error,
        }
        if self.files:
            out["files"] = [file.to_dict() for file in self.files]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            tool_call_id=data["tool_call_id"],
            name=data["name"],
            content=data.get("content", ""),
            is_error=bool(data.get("is_error", False)),
            files=[File.from_dict(file) for file in data.get("files", ())],
        )


def _schema_text(_instance: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str):
        raise TypeError("input_schema must be JSON text (str); use json.dumps(schema)")
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise ValueError(f"input_schema is not valid JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ValueError("input_schema must be a JSON object")


TOOL_NAME_CHARACTERS = "A-Za-z0-9_-"
"""The characters of a tool name, as a regular expression character class's body."""
TOOL_NAME_LENGTH = 64
"""The longest tool name, in characters."""
TOOL_NAME = re.compile(f"[{TOOL_NAME_CHARACTERS}]{{1,{TOOL_NAME_LENGTH}}}")
"""A valid tool name, for ``fullmatch``: 1 to 64 letters, digits, ``_`` or
``-``, the rule of both the Anthropic and the OpenAI API."""


def _tool_name(_instance: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not TOOL_NAME.fullmatch(value):
        raise ValueError(
            f"tool name {value!r} must be 1 to 64 letters, digits, '_' or '-' "
            "(the rule of both the Anthropic and the OpenAI API)"
        )


@attrs.frozen
class ToolDefinition:
    """The model-facing description of a tool.

    Attributes:
        name: the name the model uses to call the tool.
        description: natural-language description for the model.
        input_schema: a JSON Schema object, as JSON text, describing the input.
    """

    name: str = attrs.field(validator=_tool_name)
    description: str = ""
    input_schema: str = attrs.field(default='{"type":"object","properties":{}}', validator=_schema_text)


def tool_definitions(tools: Iterable[Any]) -> tuple[ToolDefinition, ...]:
    """The definitions of ``tools``: :class:`ToolDefinition` items, tools
    (items whose ``definition`` is one, as :class:`agentcore.tools.Tool`'s
    is), or a mapping of name to tool (an :class:`agentcore.tools.ToolSet`:
    its tools). Raises TypeError naming any other item (a ``str`` is a name,
    not a tool)."""
    items = tools.values() if isinstance(tools, Mapping) else tools
    if isinstance(items, str):
        items = [items]
    definitions = []
    for item in items:
        definition = item if isinstance(item, ToolDefinition) else getattr(item, "definition", None)
        if not isinstance(definition, ToolDefinition):
            raise TypeError(
                "tools: expected ToolDefinition items, tools or a ToolSet, got a "
                f"{type(item).__name__}: {item!r}"[:200]
            )
        definitions.append(definition)
    return tuple(definitions)


@attrs.frozen
class OutputSchema:
    """The shape a run's final answer must have, for an adapter's native
    structured output (``LoopOptions(output_type=...)``, see
    :mod:`agentcore.output`).

    Attributes:
        name: the schema's name, 1 to 64 letters, digits, ``_`` or ``-``
            (OpenAI requires one).
        schema: the JSON Schema, as JSON text (an object: ``{...}``).
    """

    name: str = attrs.field(validator=_tool_name)
    schema: str = attrs.field(validator=_schema_text)


def _text(_instance: Any, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a str, got {type(value).__name__}: {value!r}"[:200])


_CONTENT_FIELD = {
    ContentPartKind.TOOL_CALL: ("tool_call", ToolCall),
    ContentPartKind.TOOL_RESULT: ("tool_result", ToolResult),
    ContentPartKind.REASONING: ("reasoning", Reasoning),
    ContentPartKind.FILE: ("file", File),
    ContentPartKind.PROVIDER_ITEM: ("provider_item", ProviderItem),
}


def _content_matches_kind(instance: ContentPart, _attribute: Any, _value: Any) -> None:
    kind = instance.kind
    name, wanted = _CONTENT_FIELD.get(kind, ("text", str))
    fits = isinstance(getattr(instance, name), wanted) and all(
        getattr(instance, other) is None for other, _ in _CONTENT_FIELD.values() if other != name
    )
    if not fits or (kind is not ContentPartKind.TEXT and instance.text != ""):
        raise ValueError(f"ContentPart fields do not match its kind {kind.value!r}")


@attrs.frozen
class ContentPart:
    """One element of a :class:`Message`'s content; ``kind`` selects which
    field is meaningful (``text``, ``reasoning``, ``tool_call``,
    ``tool_result``, ``file`` or ``provider_item``; a ``cache-point`` part
    has none, see :func:`cache_point`)."""

    kind: ContentPartKind = attrs.field(converter=ContentPartKind)
    text: str = attrs.field(default="", validator=_text)
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    reasoning: Reasoning | None = attrs.field(default=None, validator=_content_matches_kind)
    file: File | None = None
    provider_item: ProviderItem | None = None
    citations: tuple[Citation, ...] = attrs.field(default=(), converter=_to_tuple)
    """The sources a text part cites (:class:`Citation`); () for none."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form: ``{"kind": ..., and "text" | "reasoning" |
        "tool_call" | "tool_result" | "file" | "provider_item"}``
        (``{"kind": "cache-point"}`` alone for a cache point); a text part
        with citations adds ``"citations"`` (:meth:`Citation.to_dict` each)."""
        if self.provider_item is not None:
            return {"kind": self.kind.value, "provider_item": self.provider_item.to_dict()}
        if self.tool_call is not None:
            return {"kind": self.kind.value, "tool_call": self.tool_call.to_dict()}
        if self.tool_result is not None:
            return {"kind": self.kind.value, "tool_result": self.tool_result.to_dict()}
        if self.reasoning is not None:
            return {"kind": self.kind.value, "reasoning": self.reasoning.to_dict()}
        if self.file is not None:
            return {"kind": self.kind.value, "file": self.file.to_dict()}
        if self.kind is ContentPartKind.CACHE_POINT:
            return {"kind": self.kind.value}
        if self.citations:
            return {
                "kind": self.kind.value,
                "text": self.text,
                "citations": [citation.to_dict() for citation in self.citations],
            }
        return {"kind": self.kind.value, "text": self.text}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContentPart:
        """Inverse of :meth:`to_dict`."""
        kind = ContentPartKind(data["kind"])
        if kind is ContentPartKind.TOOL_CALL:
            return tool_call_part(ToolCall.from_dict(data["tool_call"]))
        if kind is ContentPartKind.TOOL_RESULT:
            return tool_result_part(ToolResult.from_dict(data["tool_result"]))
        if kind is ContentPartKind.REASONING:
            return reasoning_part(Reasoning.from_dict(data["reasoning"]))
        if kind is ContentPartKind.FILE:
            return ContentPart(kind=ContentPartKind.FILE, file=File.from_dict(data["file"]))
        if kind is ContentPartKind.PROVIDER_ITEM:
            return provider_item_part(ProviderItem.from_dict(data["provider_item"]))
        if kind is ContentPartKind.CACHE_POINT:
            return cache_point()
        citations = tuple(Citation.from_dict(citation) for citation in data.get("citations", ()))
        return text_part(data.get("text", ""), citations)


def text_part(text: str, citations: Iterable[Citation] = ()) -> ContentPart:
    """A ``text`` content part, with the sources it cites."""
    return ContentPart(kind=ContentPartKind.TEXT, text=text, citations=tuple(citations))


def reasoning_part(reasoning: Reasoning) -> ContentPart:
    """A ``reasoning`` content part."""
    return ContentPart(kind=ContentPartKind.REASONING, reasoning=reasoning)


def provider_item_part(item: ProviderItem) -> ContentPart:
    """A ``provider-item`` content part: a block a provider needs back byte
    for byte (:class:`ProviderItem`)."""
    return ContentPart(kind=ContentPartKind.PROVIDER_ITEM, provider_item=item)


def tool_call_part(call: ToolCall) -> ContentPart:
    """A ``tool-call`` content part."""
    return ContentPart(kind=ContentPartKind.TOOL_CALL, tool_call=call)


def tool_result_part(result: ToolResult) -> ContentPart:
    """A ``tool-result`` content part."""
    return ContentPart(kind=ContentPartKind.TOOL_RESULT, tool_result=result)


def cache_point() -> ContentPart:
    """A ``cache-point`` content part: a prompt-cache breakpoint after the
    content before it, for providers that take explicit breakpoints.

    Put it in a message of the history (``user_message(long_document,
    cache_point())``): ``AnthropicModel`` puts ``cache_control`` on the last
    block before it, so the prompt up to there is cached and read back by
    later requests that share it, even when what follows changes. Adapters
    whose API has no breakpoints (the OpenAI ones: their caching is
    automatic) send nothing for it. It carries no content and is kept by
    :meth:`Message.to_dict` / :meth:`Message.from_dict`. ``docs/caching.md``
    has the rules (at most 4 breakpoints per Anthropic request).
    """
    return ContentPart(kind=ContentPartKind.CACHE_POINT)


def file_part(
    data: bytes | None = None, *, url: str | None = None, media_type: str, filename: str | None = None
) -> ContentPart:
    """A ``file`` content part: an image, a PDF or a text document for the model.

    Put it in a user message (``user_message("What is this?", part)``) or
    return it from a tool. Example::

        png = Path("chart.png").read_bytes()
        message = user_message("Describe the chart.", file_part(png, media_type="image/png"))

    Args:
        data: the file's bytes (or None with ``url``).
        url: an ``http(s)://`` URL the provider fetches itself.
        media_type: the MIME type, e.g. ``"image/png"``, ``"application/pdf"``,
            ``"text/plain"``.
        filename: the file's name, sent where the API has a field for it.

    Raises:
        TypeError, ValueError: as :class:`File` says (both or neither of
            ``data`` and ``url``, a malformed media type).
    """
    file = File(media_type=media_type, data=data, url=url or "", filename=filename or "")
    return ContentPart(kind=ContentPartKind.FILE, file=file)


def file_part_from_path(
    path: str | os.PathLike[str], media_type: str | None = None, *, max_bytes: int = MAX_FILE_BYTES
) -> ContentPart:
    """A ``file`` content part holding the file at ``path``, read now by
    :meth:`File.from_path` (which says how ``media_type`` is guessed and
    what is refused).

    Args:
        path: the file to read (read whole, now): a regular file, not a
            device, pipe or directory.
        media_type: its MIME type; by default guessed from the extension.
        max_bytes: the largest file accepted, in bytes.

    Returns:
        A part whose ``filename`` is the path's last component.

    Raises:
        OSError: the file cannot be read.
        ValueError: the media type cannot be guessed, the path is not a
            regular file, or the file is larger than ``max_bytes``.
    """
    return ContentPart(kind=ContentPartKind.FILE, file=File.from_path(path, media_type, max_bytes=max_bytes))


@attrs.frozen
class Message:
    """One turn of the conversation.

    Attributes:
        role: who wrote it.
        content: its parts, in order (a tuple; any iterable is accepted).
    """

    role: Role = attrs.field(converter=Role)
    content: tuple[ContentPart, ...] = attrs.field(default=(), converter=_to_tuple)

    @content.validator
    def _check_content(self, _attribute: Any, value: tuple[Any, ...]) -> None:
        for part in value:
            if not isinstance(part, ContentPart):
                raise TypeError(f"Message content must be ContentPart objects, got {type(part).__name__}")

    @property
    def text(self) -> str:
        """The message's text parts joined together."""
        return "".join(p.text for p in self.content if p.kind is ContentPartKind.TEXT)

    @property
    def reasoning(self) -> list[Reasoning]:
        """The message's reasoning blocks, in order."""
        return [p.reasoning for p in self.content if p.reasoning is not None]

    @property
    def citations(self) -> list[Citation]:
        """The citations of the message's text parts, in order."""
        return [citation for p in self.content for citation in p.citations]

    @property
    def provider_items(self) -> list[ProviderItem]:
        """The message's provider items (compaction blocks and items), in order."""
        return [p.provider_item for p in self.content if p.provider_item is not None]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The message's tool calls, in order."""
        return [p.tool_call for p in self.content if p.tool_call is not None]

    @property
    def tool_results(self) -> list[ToolResult]:
        """The message's tool results, in order."""
        return [p.tool_result for p in self.content if p.tool_result is not None]

    @property
    def files(self) -> list[File]:
        """The message's file parts' files, in order (not those inside tool results)."""
        return [p.file for p in self.content if p.file is not None]

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form ``{"role": "user", "content": [...]}``, for storing history."""
        return {"role": self.role.value, "content": [p.to_dict() for p in self.content]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Inverse of :meth:`to_dict`.

        Raises:
            ConfigError: ``data`` is not in the form :meth:`to_dict` writes (a
                missing key, an unknown role or part kind, a value of the wrong
                type); the message says which.
        """
        try:
            return cls(role=Role(data["role"]), content=[ContentPart.from_dict(p) for p in data["content"]])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise ConfigError(f"not a message in Message.to_dict() form: {detail}") from None


def user_message(text: str, *parts: ContentPart) -> Message:
    """A user message holding a text part, then ``parts`` (files, more text).

    Raises:
        TypeError: a part is not a :class:`ContentPart`.
    """
    return Message(role=Role.USER, content=(text_part(text), *parts))


def _str_mapping(value: Mapping[str, str] | None) -> Mapping[str, str]:
    return dict(value or {})


def _server_tools(value: Iterable[Any]) -> tuple[ServerTool, ...]:
    """``Request.server_tools`` checked (:func:`agentcore.server_tools.server_tools`);
    none, the common case, without a call into that module (a plain run
    stays in the modules docs/architecture.md lists)."""
    if type(value) is tuple and not value:
        return ()
    return server_tools(value)


@attrs.frozen
class Request:
    """One model inference request: what a ``Model`` receives for one step.

    Attributes:
        system: the system prompt; empty means none.
        messages: the conversation so far, oldest first.
        tools: the tool definitions available this step.
        max_output_tokens: the most tokens the model may generate (reasoning
            included), >= 1; None lets the adapter choose.
        headers: extra HTTP headers for this request (gateway attribution).
        settings: this run's :class:`agentcore.ModelSettings`; they override
            the adapter's own field by field. None for none.
        output: the JSON Schema the final answer must match, for the
            adapter's native structured output; None for a free answer.
        server_tools: the tools the provider runs itself this step
            (:mod:`agentcore.server_tools`); an adapter whose API lacks one
            raises ``ConfigError`` before any request.
        stream_tool_input: emit ``tool-call-delta`` parts as a tool call's
            arguments stream (``LoopOptions(stream_tool_input=True)``).
    """

    system: str = attrs.field(default="", validator=_text)
    messages: tuple[Message, ...] = attrs.field(default=(), converter=_to_tuple)
    tools: tuple[ToolDefinition, ...] = attrs.field(default=(), converter=tool_definitions)
    max_output_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(_positive))
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_str_mapping, repr=headers_repr)
    settings: ModelSettings | None = None
    output: OutputSchema | None = None
    server_tools: tuple[ServerTool, ...] = attrs.field(default=(), converter=_server_tools)
    stream_tool_input: bool = False


def _indexes(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


@attrs.frozen
class Compaction:
    """What one history policy changed before a step (``docs/long-runs.md``).

    Nothing a policy takes out is lost: :attr:`removed` names the messages in
    the run's full history (``RunResult.full_messages``, the history with
    nothing removed), where they stay.

    Attributes:
        policy: the policy's name: its class name (``"SlidingWindow"``).
        removed: the indexes in the run's full history of the messages the
            policy removed or replaced, ascending. A summary an earlier
            compaction wrote has no index there (its text is that
            compaction's :attr:`summary`).
        messages_before: how many messages the history had before the change,
        messages_after: and after it.
        tokens_before: the prompt's size in tokens before the change, as the
            policy saw it: the provider's count for the previous step plus
            the estimate (:func:`agentcore.tokens.estimate_tokens`) of what
            was added since.
        tokens_after: after the change: :attr:`tokens_before` less the
            estimate of the messages taken out, plus that of the messages put
            in, each in proportion when :attr:`tokens_before` is larger than
            the estimate of the prompt
            (:meth:`agentcore.compaction.HistoryState.scaled`).
        summary: the summary that replaced messages (``Summarize``); "" for none.
        usage: the usage of the model call that wrote the summary, counted in
            the run's usage; empty for none.
        refused: True when the policy ran because the provider refused the
            step's prompt as too long (the step is then tried once more).

    A policy's edit that changed no message but carried usage (a
    ``Summarize`` whose summary call answered nothing) is recorded too, so
    that ``RunResult.usage`` less the steps' usage is the sum of the
    compactions' usage: nothing :attr:`removed`, the same counts and tokens
    before and after, and the usage (:attr:`changed` is False).
    """

    policy: str
    removed: tuple[int, ...] = attrs.field(default=(), converter=_indexes)
    messages_before: int = attrs.field(default=0, validator=_non_negative)
    messages_after: int = attrs.field(default=0, validator=_non_negative)
    tokens_before: int = attrs.field(default=0, validator=_non_negative)
    tokens_after: int = attrs.field(default=0, validator=_non_negative)
    summary: str = attrs.field(default="", validator=_text_or_empty)
    usage: Usage = attrs.field(factory=Usage)
    refused: bool = False

    @property
    def changed(self) -> bool:
        """Whether the policy changed the history (removed, replaced or added
        a message); False for a record of its usage only."""
        return bool(self.removed) or self.messages_after != self.messages_before

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: every field, ``usage`` as :meth:`Usage.to_dict`."""
        out = attrs.asdict(self, recurse=False)
        out["removed"] = list(self.removed)
        out["usage"] = self.usage.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Compaction:
        """Inverse of :meth:`to_dict`."""
        return cls(
            policy=data["policy"],
            removed=data.get("removed", ()),
            messages_before=data.get("messages_before", 0),
            messages_after=data.get("messages_after", 0),
            tokens_before=data.get("tokens_before", 0),
            tokens_after=data.get("tokens_after", 0),
            summary=data.get("summary", ""),
            usage=Usage.from_dict(data.get("usage", {})),
            refused=bool(data.get("refused", False)),
        )


_PART_FIELDS: dict[StreamPartKind, frozenset[str]] = {
    StreamPartKind.TEXT_DELTA: frozenset({"text"}),
    StreamPartKind.REASONING_DELTA: frozenset({"text"}),
    StreamPartKind.REASONING: frozenset({"reasoning"}),
    StreamPartKind.TOOL_CALL: frozenset({"tool_call"}),
    StreamPartKind.TOOL_CALL_DELTA: frozenset({"tool_call"}),
    StreamPartKind.CITATION: frozenset({"citation"}),
    StreamPartKind.PROVIDER_ITEM: frozenset({"provider_item"}),
    StreamPartKind.TOOL_RESULT: frozenset({"tool_result"}),
    StreamPartKind.STEP_FINISH: frozenset({"usage", "finish_reason", "cache", "model_id"}),
    StreamPartKind.COMPACTION: frozenset({"compaction"}),
    StreamPartKind.FINISH: frozenset({"finish_reason", "total_usage"}),
    StreamPartKind.ERROR: frozenset({"err", "finish_reason", "total_usage"}),
    StreamPartKind.NESTED: frozenset({"path", "nested"}),
    StreamPartKind.HANDOFF: frozenset({"agent"}),
}
_EMPTY_USAGE = Usage()


def _part_matches_kind(part: StreamPart, _attribute: Any, _value: Any) -> None:
    kind = part.kind
    if not isinstance(part.text, str):
        raise TypeError(f"StreamPart.text must be str, got {type(part.text).__name__}")
    if (  # the hot path, once per streamed text fragment: every other field at its default
        kind is StreamPartKind.TEXT_DELTA
        and part.tool_call is None
        and part.tool_result is None
        and part.reasoning is None
        and part.usage is _EMPTY_USAGE
        and part.total_usage is _EMPTY_USAGE
        and part.finish_reason is None
        and part.err is None
        and part.cache is None
        and part.compaction is None
        and part.provider_item is None
        and part.citation is None
        and not part.model_id
        and part.nested is None
        and not part.agent
    ):
        return
    allowed = _PART_FIELDS[kind]
    present = {
        name
        for name, empty in (
            ("text", part.text == ""),
            ("tool_call", part.tool_call is None),
            ("tool_result", part.tool_result is None),
            ("reasoning", part.reasoning is None),
            ("usage", part.usage == _EMPTY_USAGE),
            ("total_usage", part.total_usage == _EMPTY_USAGE),
            ("finish_reason", part.finish_reason is None),
            ("err", part.err is None),
            ("cache", part.cache is None),
            ("compaction", part.compaction is None),
            ("provider_item", part.provider_item is None),
            ("citation", part.citation is None),
            ("model_id", part.model_id == ""),
            ("path", part.path == ()),
            ("nested", part.nested is None),
            ("agent", part.agent == ""),
        )
        if not empty
    }
    stray = present - allowed
    if stray:
        raise ValueError(f"a {kind.value!r} StreamPart cannot carry {', '.join(sorted(stray))}")
    if kind is StreamPartKind.TOOL_CALL and not isinstance(part.tool_call, ToolCall):
        raise ValueError("a 'tool-call' StreamPart needs tool_call")
    if kind is StreamPartKind.TOOL_CALL_DELTA and not isinstance(part.tool_call, ToolCall):
        raise ValueError("a 'tool-call-delta' StreamPart needs tool_call")
    if kind is StreamPartKind.CITATION and not isinstance(part.citation, Citation):
        raise ValueError("a 'citation' StreamPart needs citation")
    if kind is StreamPartKind.TOOL_RESULT and not isinstance(part.tool_result, ToolResult):
        raise ValueError("a 'tool-result' StreamPart needs tool_result")
    if kind is StreamPartKind.REASONING and not isinstance(part.reasoning, Reasoning):
        raise ValueError("a 'reasoning' StreamPart needs reasoning")
    if kind is StreamPartKind.COMPACTION and not isinstance(part.compaction, Compaction):
        raise ValueError("a 'compaction' StreamPart needs compaction")
    if kind is StreamPartKind.PROVIDER_ITEM and not isinstance(part.provider_item, ProviderItem):
        raise ValueError("a 'provider-item' StreamPart needs provider_item")
    if kind in (StreamPartKind.STEP_FINISH, StreamPartKind.FINISH) and part.finish_reason is None:
        raise ValueError(f"a {kind.value!r} StreamPart needs finish_reason")
    if kind is StreamPartKind.NESTED:
        if not isinstance(part.nested, StreamPart) or part.nested.kind is StreamPartKind.NESTED:
            raise ValueError("a 'nested' StreamPart needs nested (a StreamPart that is not itself nested)")
        if not part.path or not all(isinstance(step, str) and step for step in part.path):
            raise ValueError("a 'nested' StreamPart needs path: the tool call ids, at least one")
    if kind is StreamPartKind.HANDOFF and not (isinstance(part.agent, str) and part.agent):
        raise ValueError("a 'handoff' StreamPart needs agent (the name of the agent now in charge)")
    if kind is StreamPartKind.ERROR:
        if not isinstance(part.err, BaseException):
            raise ValueError("an 'error' StreamPart needs err (an exception)")
        if part.finish_reason not in (FinishReason.ERROR, FinishReason.CANCELED, FinishReason.GUARDRAIL):
            raise ValueError("an 'error' StreamPart's finish_reason is 'error', 'canceled' or 'guardrail'")


def _optional_reason(value: FinishReason | str | None) -> FinishReason | None:
    return None if value is None else FinishReason(value)


_new = object.__new__


@attrs.frozen(slots=False)  # a dict per part: text_delta builds it in one step (see there)
class StreamPart:
    """One event of a model or loop stream; ``kind`` selects the meaningful fields:

    ===============  =================================
    kind             fields
    ===============  =================================
    text-delta       text
    reasoning-delta  text (a fragment of reasoning, for display)
    reasoning        reasoning (one complete block)
    tool-call        tool_call
    provider-item    provider_item (one complete block)
    tool-result      tool_result
    step-finish      usage, finish_reason, cache, model_id
    compaction       compaction
    finish           finish_reason, total_usage
    error            err, finish_reason, total_usage
    nested           path, nested
    handoff          agent
    ===============  =================================

    Any other field set is a ``ValueError``. ``finish`` and ``error`` are
    terminal: every run ends with exactly one of them. A model streams a
    reasoning block as ``reasoning-delta`` parts (what a UI shows while the
    model thinks) and then one ``reasoning`` part holding the whole block
    (what goes into the history); a reader that wants only text ignores both.
    A ``provider-item`` part carries a block the provider needs back byte for
    byte (a compaction block, :class:`ProviderItem`), where the block
    completed; it goes into the history in that place, and is not answer text.
    A ``step-finish`` part from a built-in adapter carries ``cache``, the
    step's :class:`agentcore.caching.CacheReport` (None from other models);
    it is not compared by ``==``. The ``step-finish`` part the loop
    forwards carries ``model_id``, the id of the model that answered the
    step (a :class:`agentcore.FallbackModel`'s fallback, a plan's model;
    a model's own leaves it ""), not compared by ``==`` either: the same
    step is equal whichever model answered it. The loop sends a ``compaction`` part,
    before a step's first part, each time a history policy changed the
    run's history (:class:`Compaction`). A ``nested`` part carries a part of
    a sub-run (an agent used as a tool, ``docs/agents.md``): ``path`` holds
    the ids of the agent-tool calls from this run's down to the run that
    made it, ``nested`` that run's own part (never itself ``nested``); a
    reader that ignores it sees what it saw without sub-runs. A ``handoff``
    part says the run moved to the agent named ``agent``.
    """

    kind: StreamPartKind = attrs.field(converter=StreamPartKind)
    text: str = ""
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    reasoning: Reasoning | None = None
    usage: Usage = _EMPTY_USAGE
    total_usage: Usage = _EMPTY_USAGE
    finish_reason: FinishReason | None = attrs.field(default=None, converter=_optional_reason)
    err: BaseException | None = attrs.field(default=None, validator=_part_matches_kind)
    cache: CacheReport | None = attrs.field(default=None, eq=False)
    compaction: Compaction | None = None
    provider_item: ProviderItem | None = None
    citation: Citation | None = None
    model_id: str = attrs.field(default="", eq=False)
    path: tuple[str, ...] = ()
    nested: StreamPart | None = None
    agent: str = ""

    @classmethod
    def text_delta(cls, text: str) -> StreamPart:
        """A fragment of assistant text.

        The hot path of every stream: a ``str`` skips the checks it would
        pass and the part is filled from a prebuilt field dict (see
        :func:`_delta_part`), a third of what ``__init__`` costs.
        """
        if cls is StreamPart and type(text) is str:
            return _delta_part(_TEXT_DELTA_FIELDS, text)
        return cls(StreamPartKind.TEXT_DELTA, text=text)

    @classmethod
    def reasoning_delta(cls, text: str) -> StreamPart:
        """A fragment of reasoning text, as it streams (for display only);
        as fast as :meth:`text_delta`."""
        if cls is StreamPart and type(text) is str:
            return _delta_part(_REASONING_DELTA_FIELDS, text)
        return cls(StreamPartKind.REASONING_DELTA, text=text)

    @classmethod
    def reasoning_event(cls, reasoning: Reasoning) -> StreamPart:
        """A ``reasoning`` part: one complete reasoning block, as it goes
        into the history (:func:`reasoning_part` is the content part)."""
        return cls(StreamPartKind.REASONING, reasoning=reasoning)

    @classmethod
    def tool_call_event(cls, call: ToolCall) -> StreamPart:
        """A ``tool-call`` part: a fully assembled tool call
        (:func:`tool_call_part` is the content part)."""
        return cls(StreamPartKind.TOOL_CALL, tool_call=call)

    @classmethod
    def tool_call_delta(cls, call_id: str, name: str, fragment: str) -> StreamPart:
        """A ``tool-call-delta`` part: the next ``fragment`` of the JSON
        arguments of the call ``call_id`` to the tool ``name``, as it
        streams (``tool_call.input`` holds the fragment). The fragments of a
        call, joined, are its ``tool-call`` part's ``input``."""
        return cls(StreamPartKind.TOOL_CALL_DELTA, tool_call=ToolCall(call_id, name, fragment))

    @classmethod
    def citation_event(cls, citation: Citation) -> StreamPart:
        """A ``citation`` part: a source the text being streamed cites; the
        loop puts it on that text part (:attr:`ContentPart.citations`)."""
        return cls(StreamPartKind.CITATION, citation=citation)

    @classmethod
    def provider_item_event(cls, item: ProviderItem) -> StreamPart:
        """A ``provider-item`` part: one complete block the provider needs
        back byte for byte, as it goes into the history
        (:func:`provider_item_part` is the content part)."""
        return cls(StreamPartKind.PROVIDER_ITEM, provider_item=item)

    @classmethod
    def tool_result_event(cls, result: ToolResult) -> StreamPart:
        """A ``tool-result`` part: the result of running a tool, emitted by
        the loop (:func:`tool_result_part` is the content part)."""
        return cls(StreamPartKind.TOOL_RESULT, tool_result=result)

    @classmethod
    def step_finish(
        cls,
        finish_reason: FinishReason,
        usage: Usage = _EMPTY_USAGE,
        cache: CacheReport | None = None,
        model_id: str = "",
    ) -> StreamPart:
        """The end of one model step, with that step's usage (and its cache
        report); the loop's carries the id of the model that answered."""
        kind = StreamPartKind.STEP_FINISH
        return cls(kind, finish_reason=finish_reason, usage=usage, cache=cache, model_id=model_id)

    @classmethod
    def compaction_event(cls, compaction: Compaction) -> StreamPart:
        """A ``compaction`` part: a history policy changed the run's history
        before a step; emitted by the loop."""
        return cls(StreamPartKind.COMPACTION, compaction=compaction)

    @classmethod
    def finish(cls, finish_reason: FinishReason, total_usage: Usage = _EMPTY_USAGE) -> StreamPart:
        """The terminal part of a run that ended normally."""
        return cls(StreamPartKind.FINISH, finish_reason=finish_reason, total_usage=total_usage)

    @classmethod
    def error(
        cls,
        err: BaseException,
        total_usage: Usage = _EMPTY_USAGE,
        finish_reason: FinishReason = FinishReason.ERROR,
    ) -> StreamPart:
        """The terminal part of a run that failed (or, with ``CANCELED``, was cancelled)."""
        return cls(StreamPartKind.ERROR, err=err, finish_reason=finish_reason, total_usage=total_usage)

    @classmethod
    def nested_event(cls, path: Sequence[str], part: StreamPart) -> StreamPart:
        """A ``nested`` part: ``part`` of the sub-run reached through the
        agent-tool calls ``path`` (call ids, the outermost first). A
        ``nested`` ``part`` is unwrapped: its path is appended to ``path``.

        Raises:
            ValueError: an empty ``path``.
        """
        if part.kind is StreamPartKind.NESTED:
            path, part = (*path, *part.path), part.nested  # type: ignore[assignment]  # set on a nested part
        path = tuple(path)
        if (
            cls is StreamPart
            and type(part) is StreamPart
            and path
            and all(type(s) is str and s for s in path)
        ):
            # Once per part of every sub-run: filled from a prebuilt field dict, as text_delta is.
            nested: StreamPart = _new(StreamPart)
            values = nested.__dict__
            values.update(_NESTED_FIELDS)
            values["path"], values["nested"] = path, part
            return nested
        return cls(StreamPartKind.NESTED, path=path, nested=part)

    @classmethod
    def handoff_event(cls, agent: str) -> StreamPart:
        """A ``handoff`` part: the run moved to the agent named ``agent``."""
        return cls(StreamPartKind.HANDOFF, agent=agent)

    @property
    def terminal(self) -> bool:
        """True for ``finish`` and ``error`` parts."""
        return self.kind in (StreamPartKind.FINISH, StreamPartKind.ERROR)


_TEXT_DELTA_FIELDS = attrs.asdict(StreamPart(StreamPartKind.TEXT_DELTA), recurse=False)
_REASONING_DELTA_FIELDS = attrs.asdict(StreamPart(StreamPartKind.REASONING_DELTA), recurse=False)
"""Every field of a ``text-delta`` (``reasoning-delta``) part, in declaration
order (``text`` is replaced for each part)."""
_NESTED_FIELDS = attrs.asdict(
    StreamPart(StreamPartKind.NESTED, path=("-",), nested=StreamPart(StreamPartKind.TEXT_DELTA)),
    recurse=False,
)
"""Every field of a ``nested`` part (``path`` and ``nested`` are replaced for each part)."""


def _delta_part(fields: dict[str, Any], text: str) -> StreamPart:
    """A delta part with ``fields`` (a field dict above) but ``text``, made
    without ``__init__``: its converters and validators would pass for a
    ``str``, and they cost more than the rest of a part's way to the reader."""
    part: StreamPart = _new(StreamPart)
    values = part.__dict__
    values.update(fields)
    values["text"] = text
    return part
