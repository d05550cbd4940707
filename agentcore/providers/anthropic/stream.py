"""The Anthropic Messages API, what a stream means: its events mapped to
agentcore parts.

No I/O here: :class:`StreamState` (a :class:`agentcore.providers.shell.StateMachine`)
is fed one decoded SSE event at a time and returns the parts it can emit;
:func:`map_finish_reason`, :func:`merge_usage` / :func:`usage_from` and
:func:`classify_error` / :func:`error_event` are small functions tested
table by table. :class:`agentcore.providers.anthropic.model.AnthropicModel`
runs it inside the shell (:mod:`agentcore.providers.shell`).

Each follows the documented API: the stream events
(https://docs.anthropic.com/en/docs/build-with-claude/streaming), thinking
blocks (https://platform.claude.com/docs/en/build-with-claude/thinking), the
stop reasons (https://docs.anthropic.com/en/api/handling-stop-reasons), the
compaction usage (https://platform.claude.com/docs/en/build-with-claude/compaction)
and the error objects (https://docs.anthropic.com/en/api/errors).

Decisions:

* Stop reasons beyond the documented four: see :func:`map_finish_reason`. A
  step that emitted a tool call is ``tool-calls`` unless it is ``length``; a
  ``tool_use`` step without a client tool call is ``stop``.
* ``tool_use`` blocks become tool calls, ``thinking`` / ``redacted_thinking``
  blocks reasoning parts and ``compaction`` blocks provider items, each at
  its ``content_block_stop``, so the parts keep the order of the blocks (a
  thinking block between two tool calls stays between them). A thinking block's text also streams as
  ``reasoning-delta`` parts; its ``signature_delta`` fragments are joined. The
  reasoning part holds the block byte for byte: ``text`` (``thinking``, ""
  when the display is omitted), ``signature``, ``data`` (a redacted block's),
  ``format="anthropic"`` and the adapter's ``origin``. Blank tool input is
  ``"{}"``. MCP connector blocks (``mcp_tool_use``, ``mcp_tool_result``) and
  unknown blocks, deltas and events are passed over.
* Server tools (:data:`SERVER_TOOLS_DOCS`): a ``server_tool_use`` block and
  each server tool's result block (a ``*_tool_result`` type other than
  ``tool_result`` and ``mcp_tool_result``: ``web_search_tool_result``,
  ``web_fetch_tool_result``, ``code_execution_tool_result``,
  ``bash_code_execution_tool_result``, ``text_editor_code_execution_tool_result``
  ...) become one ``provider-item`` part each at its ``content_block_stop``:
  a :class:`ProviderItem` whose ``type`` is the block's, whose ``data`` is
  the block as the API wants it back (every field as it came, ``caller``
  included; a call's ``input`` streamed as ``input_json_delta`` fragments is
  the object they join to, or the one ``content_block_start`` held) and
  whose ``text`` is :func:`server_item_text`. They are never answer text nor
  tool calls. A server block that never stopped is emitted at the step's end
  when its input is whole JSON, else dropped (the API could not take it back).
* Code execution's container (``message_delta.container`` ``{id,
  expires_at}``, :data:`CODE_EXECUTION_DOCS`) becomes a ``provider-item``
  part of type :data:`CONTAINER` whose ``data`` is that object: the request
  mapping sends its id as the next request's ``container`` so the sandbox
  and its files are reused.
* Citations (:data:`CITATIONS_DOCS`): each ``citations_delta`` of a text
  block, and each entry of a whole text block's ``citations``, is one
  ``citation`` part (:func:`citation_from`), before the text it supports.
* ``stream_tool_input``: :class:`StreamState` emits one ``tool-call-delta``
  part per ``input_json_delta`` fragment of a client ``tool_use`` block; the
  fragments joined are exactly the ``tool-call`` part's ``input`` (leading
  blank fragments are held back until text comes, and a call whose input
  stayed blank gets its ``"{}"`` (or its start input) as one delta at its
  stop).
* Compaction (:data:`COMPACTION_DOCS`): a ``compaction`` block (its
  ``content`` null at ``content_block_start``, the whole summary in one
  ``compaction_delta``; in a whole message, the summary as its ``content``)
  becomes one ``provider-item`` part: a :class:`ProviderItem` of type
  ``compaction`` whose ``data`` is the block as the API wants it back
  (``{"type": "compaction", "content": <the summary>}``, any other field of
  the block kept) and whose ``text`` is the summary. The summary is not
  answer text: no ``text-delta`` carries it.
* Context editing (:data:`CONTEXT_EDITING_DOCS`): the edits the API applied
  to the prompt (``context_management.applied_edits`` of ``message_delta``,
  or of a whole message) are kept in :attr:`StreamState.applied_edits` and
  logged at INFO on the ``agentcore.providers.anthropic`` logger, one line
  per step that had any; nothing streams for them. The step's cache report
  names them as the cause of a read that fell short (``compacted``).
  A call cut off by ``max_tokens`` is passed on as it is (the loop never runs
  the calls of a ``length`` step); one whose block never stopped is dropped
  on ``length`` and emitted otherwise. A reasoning block that never stopped
  is emitted at the step's end whatever the reason (nothing the model
  produced is dropped; the request side decides what can go back); so is a
  compaction block that never stopped, once its summary came.
* A ``message_start`` whose ``message`` already holds ``content`` blocks and a
  ``stop_reason`` (recorded from the API for programmatic tool calls) is read
  like the same blocks streamed one by one and a ``message_delta``.
* Exactly one message per response: the streaming docs give each stream one
  ``message_start``. A repeat of the same ``message_start`` (identical JSON)
  carries nothing new and is passed over; any other second
  ``message_start`` (another message spliced into the body) is an
  ``UPSTREAM`` :class:`ModelError`, never merged into the step.
* Usage with ``iterations`` (compaction): the documented billed total is the
  sum over all iterations, and the top-level numbers leave the compaction
  iterations out, so those are added to them (see :func:`merge_usage`).
* The step is complete once a ``stop_reason`` came (or ``message_stop``);
  nothing after ``message_stop`` is read. A body that ends before either is
  ``TRANSIENT``. An ``error`` event raises a classified :class:`ModelError`,
  also after the ``stop_reason``.
* Fields are read by their documented JSON types
  (:mod:`agentcore.providers.fields`): absent or ``null`` is absent; any
  other type (an event that is not an object, a text, thinking, signature or
  ``partial_json`` fragment that is not a string, a tool call's ``input``
  that is not an object, a usage count that is a string or a fraction) is an
  ``UPSTREAM`` :class:`ModelError` naming the field. Blocks and deltas that
  are passed over are not looked at.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Mapping
from typing import Any

from agentcore.errors import ErrorClass, ModelError, classify_status
from agentcore.providers import fields
from agentcore.transport.errors import error_fields, looks_like_context_length
from agentcore.transport.sse import Event
from agentcore.types import Citation, FinishReason, ProviderItem, Reasoning, StreamPart, ToolCall, Usage

FORMAT = "anthropic"
"""``Reasoning.format`` (and ``ProviderItem.format``) of what this wire format produces."""
COMPACTION_DOCS = "https://platform.claude.com/docs/en/build-with-claude/compaction"
"""Anthropic's compaction page: the compaction edit, its block, streaming and usage."""
CONTEXT_EDITING_DOCS = "https://platform.claude.com/docs/en/build-with-claude/context-editing"
"""Anthropic's context editing page: clearing tool uses and thinking, ``applied_edits``."""
COMPACTION = "compaction"
"""The type of a compaction block (and of the ``ProviderItem`` that holds one)."""
SERVER_TOOLS_DOCS = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools"
"""Anthropic's server tools page: ``server_tool_use`` blocks, their results, ``pause_turn``."""
CODE_EXECUTION_DOCS = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/code-execution-tool"
"""Anthropic's code execution page: its tool, result blocks and container."""
CITATIONS_DOCS = "https://platform.claude.com/docs/en/build-with-claude/citations"
"""Anthropic's citations page: citation types, ``citations_delta``."""
STOP_REASONS_DOCS = "https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons"
"""Anthropic's stop reasons page (``pause_turn``, ``refusal``)."""
SERVER_TOOL_USE = "server_tool_use"
"""The type of a server tool's call block."""
CONTAINER = "container"
"""The type of the ``ProviderItem`` holding code execution's container ``{id, expires_at}``."""
_CLIENT_RESULTS = frozenset({"tool_result", "mcp_tool_result"})


def is_server_block(kind: object) -> bool:
    """Whether a content block of type ``kind`` is a server tool's call or
    result (module docstring): ``server_tool_use``, or a ``*_tool_result``
    other than the client's ``tool_result`` and MCP's ``mcp_tool_result``."""
    if not isinstance(kind, str):
        return False
    return kind == SERVER_TOOL_USE or (kind.endswith("_tool_result") and kind not in _CLIENT_RESULTS)


def server_item_text(block: Mapping[str, Any]) -> str:
    """The readable ``text`` of a server block's :class:`ProviderItem`.

    A call: the tool's name and its input as JSON (``web_search {"query":
    "..."}``). A result: the URLs a web search found (one a line), the URL a
    web fetch read, a code run's ``stdout`` then ``stderr``, an error's
    ``error_code``; "" for anything else.
    """
    if block.get("type") == SERVER_TOOL_USE:
        return f"{block.get('name', '')} {json.dumps(block.get('input', {}), ensure_ascii=False)}"
    content = block.get("content")
    if isinstance(content, list):
        urls = [entry.get("url") for entry in content if isinstance(entry, Mapping)]
        return "\n".join(url for url in urls if isinstance(url, str))
    if not isinstance(content, Mapping):
        return ""
    if isinstance(content.get("error_code"), str):
        return f"error: {content['error_code']}"
    if isinstance(content.get("url"), str):
        return str(content["url"])
    outputs = [content.get(name) for name in ("stdout", "stderr")]
    return "\n".join(text for text in outputs if isinstance(text, str) and text)


def citation_from(value: object, field: str) -> Citation:
    """A :class:`Citation` from an Anthropic citation object (:data:`CITATIONS_DOCS`).

    ``web_search_result_location``: ``url``, ``title``, ``cited_text``; the
    document locations (``char_location``, ``page_location``,
    ``content_block_location``): ``title`` is the ``document_title``; any
    other type the same way by those field names. ``type`` is the
    citation's, ``data`` its compact JSON text.

    Raises:
        ModelError: ``UPSTREAM``, ``value`` is not an object or a field of it
            is not a string.
    """
    if not isinstance(value, Mapping):
        raise fields.wrong_shape(field, value, "an object")
    where = f" (in {field})"
    title = fields.text(value, "title", "title" + where) or fields.text(
        value, "document_title", "document_title" + where
    )
    return Citation(
        url=fields.text(value, "url", "url" + where),
        title=title,
        cited_text=fields.text(value, "cited_text", "cited_text" + where),
        type=fields.text(value, "type", "type" + where),
        data=json.dumps(value, ensure_ascii=False, separators=(",", ":")),
    )


_log = logging.getLogger("agentcore.providers.anthropic")

# --- stop reasons -----------------------------------------------------------

_STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.PAUSED,
    "refusal": FinishReason.CONTENT_FILTER,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
}


def map_finish_reason(reason: str | None) -> FinishReason:
    """Map an Anthropic ``stop_reason`` onto a :class:`FinishReason`.

    ``end_turn`` and ``stop_sequence`` -> ``stop``; ``tool_use`` ->
    ``tool-calls``; ``max_tokens`` -> ``length``; ``pause_turn`` (a server
    tool loop reached its iteration limit: send the assistant content back to
    continue, :data:`STOP_REASONS_DOCS`) -> ``paused``; ``refusal`` ->
    ``content-filter`` (the refusal text stays the answer). Decided here:
    ``model_context_window_exceeded`` (output cut off by the context window)
    -> ``length``; None or unknown -> ``stop``.
    """
    return _STOP_REASONS.get(reason or "", FinishReason.STOP)


# --- usage ------------------------------------------------------------------

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
_SERVER_COUNTS = ("web_search_requests", "web_fetch_requests")
"""The counts of ``usage.server_tool_use`` (the web search and web fetch pages, "Usage")."""
CODE_RUNS = "code_execution_runs"
"""The snapshot key of the code execution results a step held (counted, not reported)."""


def merge_usage(snapshot: Mapping[str, int], usage: object, field: str = "usage") -> dict[str, int]:
    """Fold one ``usage`` object into the step's running snapshot.

    Anthropic's ``message_start`` and ``message_delta`` usage fields are
    cumulative, so each reported field replaces the previous value (never
    added); missing or null fields (and a null ``usage``) leave it unchanged.

    Compaction: a ``usage`` whose ``iterations`` list holds ``compaction``
    entries did more sampling than its top-level numbers show. The compaction
    docs (https://platform.claude.com/docs/en/build-with-claude/compaction,
    "Usage and billing") say the top-level ``input_tokens`` and
    ``output_tokens`` leave the compaction iterations out (they are the sum of
    the other iterations) and the tokens billed for the request are the sum
    over all entries; so each ``compaction`` entry's fields are added to the
    top-level ones. Entries of other types are not added: a ``message`` entry
    is already in the top-level numbers, and an advisor's or a fallback
    model's entry (``advisor_message``, ``fallback_message``) counts another
    model's tokens, which :class:`Usage` does not mix with this one's.

    Server tools: ``usage.server_tool_use.web_search_requests`` and
    ``web_fetch_requests`` are read the same way (cumulative, the latest
    wins; the web search and web fetch pages, "Usage and pricing").

    Args:
        snapshot: the counts so far.
        usage: the decoded ``usage`` value.
        field: its name in error messages.

    Raises:
        ModelError: ``UPSTREAM``, ``usage`` is not an object or a count is
            not a whole number of at least 0 (:func:`agentcore.providers.fields.token_count`).
    """
    merged = dict(snapshot)
    if usage is None:
        return merged
    if not isinstance(usage, Mapping):
        raise fields.wrong_shape(field, usage, "an object")
    reported = _counts(usage, field)
    for position, entry in enumerate(fields.array(usage, "iterations", f"{field}.iterations")):
        if isinstance(entry, Mapping) and entry.get("type") == "compaction":
            for name, value in _counts(entry, f"{field}.iterations[{position}]").items():
                reported[name] = reported.get(name, 0) + value
    server = fields.mapping(usage, "server_tool_use", f"{field}.server_tool_use")
    for name in _SERVER_COUNTS:
        count = fields.token_count(server, name, f"{field}.server_tool_use.{name}")
        if count is not None:
            reported[name] = count
    merged.update(reported)
    return merged


def _counts(usage: Mapping[str, Any], field: str) -> dict[str, int]:
    """The token counts a usage object reports (not the absent or null ones)."""
    counts: dict[str, int] = {}
    for name in _USAGE_FIELDS:
        value = fields.token_count(usage, name, f"{field}.{name}")
        if value is not None:
            counts[name] = value
    return counts


def usage_from(snapshot: Mapping[str, int]) -> Usage:
    """Normalize Anthropic usage fields onto :class:`Usage`.

    ``input = input_tokens + cache_read_input_tokens`` (Anthropic's
    ``input_tokens`` excludes cache reads and writes),
    ``cache_read = cache_read_input_tokens``,
    ``cache_write = cache_creation_input_tokens``, ``output = output_tokens``;
    ``web_search_requests`` and ``web_fetch_requests`` from
    ``usage.server_tool_use``; ``code_execution_requests`` is the number of
    code execution result blocks the step held (the API reports no count:
    code execution is billed by container time, :data:`CODE_EXECUTION_DOCS`);
    absent fields count as 0.
    """
    cache_read = snapshot.get("cache_read_input_tokens", 0)
    return Usage(
        input=snapshot.get("input_tokens", 0) + cache_read,
        output=snapshot.get("output_tokens", 0),
        cache_read=cache_read,
        cache_write=snapshot.get("cache_creation_input_tokens", 0),
        web_search_requests=snapshot.get("web_search_requests", 0),
        web_fetch_requests=snapshot.get("web_fetch_requests", 0),
        code_execution_requests=snapshot.get(CODE_RUNS, 0),
    )


# --- errors -----------------------------------------------------------------

_ERROR_TYPES = {
    "overloaded_error": ErrorClass.OVERLOADED,
    "rate_limit_error": ErrorClass.RATE_LIMITED,
    "api_error": ErrorClass.UPSTREAM,
    "authentication_error": ErrorClass.AUTH,
    "permission_error": ErrorClass.AUTH,
    "billing_error": ErrorClass.INVALID_REQUEST,  # as its HTTP status 402 classifies
    "invalid_request_error": ErrorClass.INVALID_REQUEST,
    "not_found_error": ErrorClass.INVALID_REQUEST,
    "request_too_large": ErrorClass.CONTEXT_LENGTH,
    "timeout_error": ErrorClass.TRANSIENT,
}


def classify_error(kind: str, message: str = "", code: object = None) -> ErrorClass:
    """Classify an Anthropic error object (https://docs.anthropic.com/en/api/errors).

    A numeric ``code`` (some Anthropic-compatible gateways send one) goes
    through :func:`classify_status`. Otherwise by ``type``:
    ``overloaded_error`` overloaded, ``rate_limit_error`` rate-limited,
    ``api_error`` upstream, ``authentication_error`` / ``permission_error``
    auth, ``invalid_request_error`` invalid-request unless the message says the
    context window was exceeded (then context-length), ``request_too_large``
    context-length, ``not_found_error`` and ``billing_error`` invalid-request,
    ``timeout_error`` transient, anything else upstream.
    """
    hint = looks_like_context_length(kind, message)
    if isinstance(code, int) and not isinstance(code, bool):
        return classify_status(code, hint)
    error_class = _ERROR_TYPES.get(kind, ErrorClass.UPSTREAM)
    if error_class is ErrorClass.INVALID_REQUEST and kind == "invalid_request_error" and hint:
        return ErrorClass.CONTEXT_LENGTH
    return error_class


def error_event(payload: object) -> ModelError:
    """The :class:`ModelError` for an ``error`` event inside a 200 stream,
    ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
    kind, message, code = error_fields(payload)
    kind = "" if kind == "error" else kind  # the envelope's own type: no error object inside
    detail = ": ".join(text for text in (kind, message) if text) or "no details"
    return ModelError(
        classify_error(kind, message, code), message=f"error event in the stream: {detail[:2000]}"
    )


# --- the stream state machine -----------------------------------------------


def _index(payload: dict[str, Any]) -> object:
    """A block's ``index`` as a dict key: an int or str as sent, anything else
    (a list, an object) by its text, so a malformed event never raises."""
    index = payload.get("index")
    return index if index is None or isinstance(index, (int, str)) else repr(index)


class _ToolBlock:
    """A client ``tool_use`` block: its input's fragments as they came; with
    ``deltas``, the ``tool-call-delta`` parts they make (module docstring)."""

    def __init__(self, call_id: str, name: str, initial: Mapping[str, Any], deltas: bool = False) -> None:
        self.call_id = call_id
        self.name = name
        self.initial = initial
        self.fragments: list[str] = []
        self.deltas = deltas
        self.streamed = False
        """A ``tool-call-delta`` part went out (the fragments so far were not all blank)."""

    def add(self, fragment: str) -> list[StreamPart]:
        """Keep the next fragment; its ``tool-call-delta`` part, if any."""
        self.fragments.append(fragment)
        if not self.deltas or not fragment:
            return []
        if not self.streamed:
            so_far = "".join(self.fragments)
            if not so_far.strip():
                return []  # held back: a blank input becomes "{}" at the stop
            self.streamed = True
            fragment = so_far
        return [StreamPart.tool_call_delta(self.call_id, self.name, fragment)]

    def parts(self, _origin: str) -> list[StreamPart]:
        """The ``tool-call`` part, after the one delta of an input that stayed blank."""
        text = "".join(self.fragments)
        if not text.strip():
            try:
                text = json.dumps(self.initial, ensure_ascii=False) if self.initial else "{}"
            except RecursionError as exc:  # decoded from the event, so only depth can fail
                message = "a tool call's input in the stream is nested too deeply to keep"
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc
        call = StreamPart.tool_call_event(ToolCall(id=self.call_id, name=self.name, input=text))
        if self.deltas and not self.streamed:
            return [StreamPart.tool_call_delta(self.call_id, self.name, text), call]
        return [call]


class _ServerBlock:
    """A server tool's call or result block: the block as it started, and a
    call's ``input_json_delta`` fragments."""

    def __init__(self, start: Mapping[str, Any]) -> None:
        self.start = start
        self.fragments: list[str] = []

    def parts(self, origin: str) -> list[StreamPart]:
        """The block's ``provider-item`` part; none when its streamed input is
        not a whole JSON object (cut off: the API could not take it back)."""
        block = dict(self.start)
        text = "".join(self.fragments)
        if text.strip():
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                value = None
            if not isinstance(value, dict):
                _log.info("agentcore: a %s block whose input was cut off is left out", block.get("type"))
                return []
            block["input"] = value
        data = json.dumps(block, ensure_ascii=False, separators=(",", ":"))
        item = ProviderItem(str(block["type"]), data, FORMAT, origin, server_item_text(block))
        return [StreamPart.provider_item_event(item)]


class _ThinkingBlock:
    """A ``thinking`` block (``texts``, ``signatures``: the fragments as they
    came) or a ``redacted_thinking`` block (``data``)."""

    def __init__(self, text: str, signature: str, data: str) -> None:
        self.texts = [text] if text else []
        self.signatures = [signature] if signature else []
        self.data = data

    def part(self, origin: str) -> StreamPart:
        reasoning = Reasoning(
            text="".join(self.texts),
            signature="".join(self.signatures),
            data=self.data,
            format=FORMAT,
            origin=origin,
        )
        return StreamPart.reasoning_event(reasoning)


class _CompactionBlock:
    """A ``compaction`` block: the block as it started, and the summary's
    ``compaction_delta`` fragments as they came."""

    def __init__(self, start: Mapping[str, Any], content: str) -> None:
        self.start = start
        self.contents = [content] if content else []

    def parts(self, origin: str) -> list[StreamPart]:
        """The block's ``provider-item`` part; none for a block whose summary
        never came (nothing the API could take back)."""
        if not self.contents:
            return []
        summary = "".join(self.contents)
        block = {**self.start, "content": summary}
        data = json.dumps(block, ensure_ascii=False, separators=(",", ":"))
        return [StreamPart.provider_item_event(ProviderItem(COMPACTION, data, FORMAT, origin, summary))]


def _applied_edits(container: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
    """The ``context_management.applied_edits`` entries of ``container``
    (a ``message_delta`` or a message), each an object.

    Raises:
        ModelError: ``UPSTREAM``, a field of the wrong JSON type.
    """
    management = fields.mapping(container, "context_management", f"context_management ({where})")
    edits = fields.array(management, "applied_edits", f"context_management.applied_edits ({where})")
    for position, edit in enumerate(edits):
        if not isinstance(edit, Mapping):
            field = f"context_management.applied_edits[{position}] ({where})"
            raise fields.wrong_shape(field, edit, "an object")
    return edits


def edits_text(edits: list[Mapping[str, Any]]) -> str:
    """The applied context edits in one line: each edit's ``type`` and its
    other fields (``clear_tool_uses_20250919 (cleared_tool_uses 8,
    cleared_input_tokens 50000)``)."""
    described = []
    for edit in edits:
        details = ", ".join(f"{key} {value}" for key, value in edit.items() if key != "type")
        kind = str(edit.get("type", "an edit"))
        described.append(f"{kind} ({details})" if details else kind)
    return "; ".join(described)


_NO_MESSAGE = object()
"""The ``message`` of a ``message_start`` not seen yet."""
_text_delta = StreamPart.text_delta
_reasoning_delta = StreamPart.reasoning_delta


class StreamState:
    """One step's stream state machine (a
    :class:`agentcore.providers.shell.StateMachine`): feed it decoded events
    in order.

    :meth:`feed` returns the parts an event produces (usually none or one)
    and raises :class:`ModelError` for an ``error`` event; :attr:`complete`
    turns True with the ``stop_reason`` (or ``message_stop``), :attr:`done`
    with ``message_stop``; :meth:`finish` gives the blocks left open and the
    ``step-finish`` part.

    Args:
        origin: the service the stream comes from (``Reasoning.origin`` of
            the reasoning parts, ``ProviderItem.origin`` of the provider items).
        stream_tool_input: emit ``tool-call-delta`` parts as client tool
            calls' input streams (``Request.stream_tool_input``).
    """

    def __init__(self, origin: str = "", *, stream_tool_input: bool = False) -> None:
        self._origin = origin
        self._deltas = stream_tool_input
        self._usage: dict[str, int] = {}
        self._open: dict[object, _ToolBlock | _ThinkingBlock | _CompactionBlock | _ServerBlock] = {}
        """Blocks started and not stopped yet, by index, in the order they started."""
        self._message: object = _NO_MESSAGE
        self._calls = 0
        self._ids = itertools.count(1)
        self._stop_reason: str | None = None
        self._finished = False
        self.complete = False
        """The step said why it stopped (a ``stop_reason``, or ``message_stop``)."""
        self.done = False
        """``message_stop`` arrived: nothing after it is read."""
        self.applied_edits: list[Mapping[str, Any]] = []
        """The context edits the API applied to this step's prompt, as it
        reported them (``context_management.applied_edits``)."""

    def feed(self, event: Event) -> list[StreamPart]:
        """The parts of one event (nothing once :attr:`done`).

        A text delta and a thinking delta of an open thinking block take a
        short path (nearly every event of a long answer or a long reasoning
        is one); every other event the general one (:meth:`_event`).

        Raises:
            ModelError: an ``error`` event, a second message in the body, or
                a field of the wrong JSON type (``UPSTREAM``).
        """
        data = event[1]
        if type(data) is dict and data.get("type") == "content_block_delta" and not self.done:
            delta = data.get("delta")
            if type(delta) is dict:
                kind = delta.get("type")
                if kind == "text_delta":
                    text = delta.get("text")
                    if type(text) is str:
                        return [_text_delta(text)] if text else []
                elif kind == "thinking_delta":
                    index = data.get("index")
                    block = self._open.get(index) if type(index) is int else None
                    text = delta.get("thinking")
                    if type(block) is _ThinkingBlock and type(text) is str:  # else the general path decides
                        if not text:
                            return []
                        block.texts.append(text)
                        return [_reasoning_delta(text)]
        return self._event(event[0], data)

    def finish(self) -> list[StreamPart]:
        """The end of the stream: the blocks that never stopped and the
        ``step-finish`` part (nothing when called again).

        Raises:
            ModelError: ``TRANSIENT`` when the step never said why it stopped.
        """
        if self._finished:
            return []
        if not self.complete:
            raise ModelError(
                ErrorClass.TRANSIENT, message="the stream ended before the model said why it stopped"
            )
        self._finished = True
        reason = map_finish_reason(self._stop_reason)
        cut = reason in (FinishReason.LENGTH, FinishReason.CONTENT_FILTER)
        parts: list[StreamPart] = []
        for block in self._open.values():  # blocks that never stopped
            if isinstance(block, (_CompactionBlock, _ServerBlock)):
                parts += block.parts(self._origin)
            elif isinstance(block, _ThinkingBlock):
                parts.append(block.part(self._origin))
            elif not cut:  # a call cut off by the limit or a refusal is dropped
                self._calls += 1
                parts += block.parts(self._origin)
        self._open.clear()
        if self._calls and not cut:
            reason = FinishReason.TOOL_CALLS
        elif reason is FinishReason.TOOL_CALLS:
            reason = FinishReason.STOP  # tool_use without any client tool call
        parts.append(StreamPart.step_finish(reason, usage_from(self._usage)))
        return parts

    def _event(self, name: str, data: object) -> list[StreamPart]:
        """The general path of :meth:`feed`; ``name`` is the SSE event name.

        Raises:
            ModelError: as :meth:`feed`; ``UPSTREAM`` for a field of the wrong
                JSON type (module docstring).
        """
        if not isinstance(data, dict):
            raise fields.wrong_shape(f"the {name!r} event", data, "an object")
        payload = data
        kind = payload.get("type") or name
        if self.done or kind == "ping":
            return []
        if kind == "error":
            raise error_event(payload)
        if kind == "message_start":
            return self._message_start(payload.get("message"))
        if kind == "content_block_start":
            block = fields.mapping(payload, "content_block", "content_block (in content_block_start)")
            return self._block_start(_index(payload), block)
        if kind == "content_block_delta":
            delta = fields.mapping(payload, "delta", "delta (in content_block_delta)")
            return self._block_delta(_index(payload), delta)
        if kind == "content_block_stop":
            return self._block_stop(_index(payload))
        if kind == "message_delta":
            delta = fields.mapping(payload, "delta", "delta (in message_delta)")
            self._stop(fields.text(delta, "stop_reason", "delta.stop_reason (in message_delta)"))
            self._usage = merge_usage(self._usage, payload.get("usage"), "usage (in message_delta)")
            self._edited(_applied_edits(payload, "in message_delta"))
            return self._container(delta, "delta.container (in message_delta)")
        if kind == "message_stop":
            self.complete = self.done = True
        return []

    def _message_start(self, message: object) -> list[StreamPart]:
        if self._message is not _NO_MESSAGE:
            if message == self._message:
                return []  # the same message_start again: nothing new
            raise ModelError(
                ErrorClass.UPSTREAM,
                message="the stream holds a second message_start for another message; "
                "one response carries one message",
            )
        self._message = message
        if message is not None and not isinstance(message, Mapping):
            raise fields.wrong_shape("message (in message_start)", message, "an object")
        start = message or {}
        self._usage = merge_usage(self._usage, start.get("usage"), "message.usage (in message_start)")
        self._edited(_applied_edits(start, "message, in message_start"))
        parts: list[StreamPart] = []
        # complete blocks: as if each was streamed
        for position, block in enumerate(
            fields.array(start, "content", "message.content (in message_start)")
        ):
            if not isinstance(block, Mapping):
                raise fields.wrong_shape(
                    f"message.content[{position}] (in message_start)", block, "an object"
                )
            index = ("message_start", position)
            parts += self._block_start(index, block)
            parts += self._block_stop(index)
        self._stop(fields.text(start, "stop_reason", "message.stop_reason (in message_start)"))
        return parts + self._container(start, "message.container (in message_start)")

    def _container(self, holder: Mapping[str, Any], field: str) -> list[StreamPart]:
        """The ``provider-item`` part of code execution's container, when
        ``holder`` names one with an ``id`` (:data:`CONTAINER`)."""
        container = fields.mapping(holder, "container", field)
        if not fields.text(container, "id", f"{field}.id"):
            return []
        data = json.dumps(container, ensure_ascii=False, separators=(",", ":"))
        return [StreamPart.provider_item_event(ProviderItem(CONTAINER, data, FORMAT, self._origin))]

    @property
    def edited(self) -> str:
        """The applied context edits in words (:func:`edits_text`), "" for
        none: what the cache report names for a step that read less."""
        return edits_text(self.applied_edits)

    def _edited(self, edits: list[Mapping[str, Any]]) -> None:
        """Keep the applied context edits the API reported (the latest list
        wins: a later event repeats the earlier ones) and log them once."""
        if edits and edits != self.applied_edits:
            self.applied_edits = edits
            _log.info("agentcore: Anthropic context editing applied to the prompt: %s", edits_text(edits))

    def _stop(self, reason: str) -> None:
        if reason:
            self._stop_reason = reason
            self.complete = True

    def _block_start(self, index: object, block: Mapping[str, Any]) -> list[StreamPart]:
        kind = block.get("type")
        where = f" (in a {kind} content block)"
        if kind == "text":
            text = fields.text(block, "text", "text" + where)
            cited = [
                StreamPart.citation_event(citation_from(value, f"citations[{position}]{where}"))
                for position, value in enumerate(fields.array(block, "citations", "citations" + where))
            ]
            return [*cited, StreamPart.text_delta(text)] if text else cited
        if kind == "thinking":
            text = fields.text(block, "thinking", "thinking" + where)
            self._open[index] = _ThinkingBlock(text, fields.text(block, "signature", "signature" + where), "")
            return [StreamPart.reasoning_delta(text)] if text else []
        if kind == "redacted_thinking":
            self._open[index] = _ThinkingBlock("", "", fields.text(block, "data", "data" + where))
        elif kind == COMPACTION:
            self._open[index] = _CompactionBlock(block, fields.text(block, "content", "content" + where))
        elif kind == "tool_use":
            call_id = block.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"toolu_agentcore_{next(self._ids)}"
            name = fields.text(block, "name", "name" + where)
            initial = fields.mapping(block, "input", "input" + where)
            self._open[index] = _ToolBlock(call_id, name, initial, self._deltas)
        elif is_server_block(kind):
            self._open[index] = _ServerBlock(block)
        return []  # MCP connector blocks, unknown blocks: passed over

    def _block_delta(self, index: object, delta: Mapping[str, Any]) -> list[StreamPart]:
        kind = delta.get("type")
        where = f" (in {kind})"
        if kind == "text_delta":
            text = fields.text(delta, "text", "text" + where)
            return [StreamPart.text_delta(text)] if text else []
        if kind == "citations_delta":
            return [StreamPart.citation_event(citation_from(delta.get("citation"), "citation" + where))]
        block = self._open.get(index)
        if isinstance(block, _ToolBlock):
            if kind == "input_json_delta":
                return block.add(fields.text(delta, "partial_json", "partial_json" + where))
        elif isinstance(block, _ServerBlock):
            if kind == "input_json_delta":
                block.fragments.append(fields.text(delta, "partial_json", "partial_json" + where))
        elif isinstance(block, _ThinkingBlock):
            if kind == "thinking_delta":
                text = fields.text(delta, "thinking", "thinking" + where)
                if text:
                    block.texts.append(text)
                    return [StreamPart.reasoning_delta(text)]
            elif kind == "signature_delta":
                block.signatures.append(fields.text(delta, "signature", "signature" + where))
        elif isinstance(block, _CompactionBlock) and kind == "compaction_delta":
            content = fields.text(delta, "content", "content" + where)
            if content:
                block.contents.append(content)
        return []  # unknown deltas

    def _block_stop(self, index: object) -> list[StreamPart]:
        block = self._open.pop(index, None)
        if block is None:
            return []
        if isinstance(block, _ServerBlock):
            if "code_execution_tool_result" in str(block.start.get("type")):
                self._usage[CODE_RUNS] = self._usage.get(CODE_RUNS, 0) + 1
            return block.parts(self._origin)
        if isinstance(block, _CompactionBlock):
            return block.parts(self._origin)
        if isinstance(block, _ToolBlock):
            self._calls += 1
            return block.parts(self._origin)
        return [block.part(self._origin)]
