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
  ``"{}"``. Server-side blocks (``server_tool_use``, ``mcp_tool_use``,
  results) and unknown blocks, deltas and events are passed over.
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
from agentcore.types import FinishReason, ProviderItem, Reasoning, StreamPart, ToolCall, Usage

FORMAT = "anthropic"
"""``Reasoning.format`` (and ``ProviderItem.format``) of what this wire format produces."""
COMPACTION_DOCS = "https://platform.claude.com/docs/en/build-with-claude/compaction"
"""Anthropic's compaction page: the compaction edit, its block, streaming and usage."""
CONTEXT_EDITING_DOCS = "https://platform.claude.com/docs/en/build-with-claude/context-editing"
"""Anthropic's context editing page: clearing tool uses and thinking, ``applied_edits``."""
COMPACTION = "compaction"
"""The type of a compaction block (and of the ``ProviderItem`` that holds one)."""

_log = logging.getLogger("agentcore.providers.anthropic")

# --- stop reasons -----------------------------------------------------------

_STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "pause_turn": FinishReason.STOP,
    "refusal": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
}


def map_finish_reason(reason: str | None) -> FinishReason:
    """Map an Anthropic ``stop_reason`` onto a :class:`FinishReason`.

    ``end_turn`` and ``stop_sequence`` -> ``stop``; ``tool_use`` ->
    ``tool-calls``; ``max_tokens`` -> ``length``. Decided here:
    ``model_context_window_exceeded`` (output cut off by the context window)
    -> ``length``; ``pause_turn`` (a server tool loop paused; nothing for the
    client to run) -> ``stop``; ``refusal`` -> ``stop`` (:class:`FinishReason`
    has no content-filter reason; the refusal text is the answer); None or unknown ->
    ``stop``.
    """
    return _STOP_REASONS.get(reason or "", FinishReason.STOP)


# --- usage ------------------------------------------------------------------

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


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
    absent fields count as 0.
    """
    cache_read = snapshot.get("cache_read_input_tokens", 0)
    return Usage(
        input=snapshot.get("input_tokens", 0) + cache_read,
        output=snapshot.get("output_tokens", 0),
        cache_read=cache_read,
        cache_write=snapshot.get("cache_creation_input_tokens", 0),
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
    def __init__(self, call_id: str, name: str, initial: Mapping[str, Any]) -> None:
        self.call_id = call_id
        self.name = name
        self.initial = initial
        self.fragments: list[str] = []

    def part(self, _origin: str) -> StreamPart:
        text = "".join(self.fragments)
        if not text.strip():
            try:
                text = json.dumps(self.initial, ensure_ascii=False) if self.initial else "{}"
            except RecursionError as exc:  # decoded from the event, so only depth can fail
                message = "a tool call's input in the stream is nested too deeply to keep"
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc
        return StreamPart.tool_call_event(ToolCall(id=self.call_id, name=self.name, input=text))


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
            the reasoning parts).
    """

    def __init__(self, origin: str = "") -> None:
        self._origin = origin
        self._usage: dict[str, int] = {}
        self._open: dict[object, _ToolBlock | _ThinkingBlock | _CompactionBlock] = {}
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
        parts: list[StreamPart] = []
        for block in self._open.values():  # blocks that never stopped
            if isinstance(block, _CompactionBlock):
                parts += block.parts(self._origin)
            elif isinstance(block, _ThinkingBlock):
                parts.append(block.part(self._origin))
            elif reason is not FinishReason.LENGTH:  # a call cut off by the limit is dropped
                self._calls += 1
                parts.append(block.part(self._origin))
        self._open.clear()
        if self._calls and reason is not FinishReason.LENGTH:
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
        elif kind == "message_stop":
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
        return parts

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
            return [StreamPart.text_delta(text)] if text else []
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
            self._open[index] = _ToolBlock(call_id, name, fields.mapping(block, "input", "input" + where))
        return []  # server tools, unknown blocks: passed over

    def _block_delta(self, index: object, delta: Mapping[str, Any]) -> list[StreamPart]:
        kind = delta.get("type")
        where = f" (in {kind})"
        if kind == "text_delta":
            text = fields.text(delta, "text", "text" + where)
            return [StreamPart.text_delta(text)] if text else []
        block = self._open.get(index)
        if isinstance(block, _ToolBlock):
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
        return []  # citations, unknown deltas

    def _block_stop(self, index: object) -> list[StreamPart]:
        block = self._open.pop(index, None)
        if block is None:
            return []
        if isinstance(block, _CompactionBlock):
            return block.parts(self._origin)
        if isinstance(block, _ToolBlock):
            self._calls += 1
        return [block.part(self._origin)]
