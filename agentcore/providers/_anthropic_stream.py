"""Pure mapping from the Anthropic Messages stream to agentcore parts.

No I/O here: :class:`_StepState` is fed one decoded SSE event at a time and
returns the parts it can emit; :func:`map_stop_reason`, :func:`merge_usage` /
:func:`usage_from` and :func:`classify_error` / :func:`error_from_event` are
small functions tested table by table. ``agentcore.providers.anthropic`` is
the HTTP shell around them.

Each follows the documented API: the stream events
(https://docs.anthropic.com/en/docs/build-with-claude/streaming), the stop
reasons (https://docs.anthropic.com/en/api/handling-stop-reasons) and the
error objects (https://docs.anthropic.com/en/api/errors).

Decisions (DESIGN.md leaves these to the adapter):

* Stop reasons beyond the documented four: see :func:`map_stop_reason`. As
  cases.md B13 says, a step that emitted a tool call is ``tool-calls`` unless
  it is ``length``; a ``tool_use`` step without a client tool call is ``stop``.
* Only ``tool_use`` blocks become tool calls, each at its
  ``content_block_stop`` (B01: blank input is ``"{}"``). Server-side blocks
  (``server_tool_use``, ``mcp_tool_use``, results), thinking, compaction and
  unknown blocks, deltas and events are passed over. A call cut off by
  ``max_tokens`` is passed on as it is (the loop never runs the calls of a
  ``length`` step, B14); one whose block never stopped is dropped on
  ``length`` and emitted otherwise.
* The step ends at ``message_stop``, or at the end of the body once a
  ``stop_reason`` came; a body that ends before either is ``TRANSIENT``. An
  ``error`` event raises a classified :class:`ModelError` (B16).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from agentcore import _http
from agentcore.errors import ErrorClass, ModelError, classify_status
from agentcore.providers._sse import Event
from agentcore.types import FinishReason, StreamPart, ToolCall, Usage

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


def map_stop_reason(reason: str | None) -> FinishReason:
    """Map an Anthropic ``stop_reason`` onto a :class:`FinishReason`.

    ``end_turn`` and ``stop_sequence`` -> ``stop``; ``tool_use`` ->
    ``tool-calls``; ``max_tokens`` -> ``length``. Decided here:
    ``model_context_window_exceeded`` (output cut off by the context window)
    -> ``length``; ``pause_turn`` (a server tool loop paused; nothing for the
    client to run) -> ``stop``; ``refusal`` -> ``stop`` (the reference has no
    content-filter reason; the refusal text is the answer); None or unknown ->
    ``stop``.
    """
    return _STOP_REASONS.get(reason or "", FinishReason.STOP)


# --- usage ------------------------------------------------------------------

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def merge_usage(snapshot: Mapping[str, int], usage: object) -> dict[str, int]:
    """Fold one ``usage`` object into the step's running snapshot.

    Anthropic's ``message_start`` and ``message_delta`` usage fields are
    cumulative, so each reported field replaces the previous value (never
    added, B09); missing, null or non-integer fields leave it unchanged.
    """
    merged = dict(snapshot)
    if isinstance(usage, dict):
        for name in _USAGE_FIELDS:
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                merged[name] = value
    return merged


def usage_from(snapshot: Mapping[str, int]) -> Usage:
    """Normalize Anthropic usage fields (DESIGN.md, "Adapters").

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
    hint = _http.looks_like_context_length(kind, message)
    if isinstance(code, int) and not isinstance(code, bool):
        return classify_status(code, hint)
    error_class = _ERROR_TYPES.get(kind, ErrorClass.UPSTREAM)
    if error_class is ErrorClass.INVALID_REQUEST and kind == "invalid_request_error" and hint:
        return ErrorClass.CONTEXT_LENGTH
    return error_class


def error_from_event(payload: object) -> ModelError:
    """The :class:`ModelError` for an ``error`` event inside a 200 stream,
    ``{"type": "error", "error": {"type": ..., "message": ...}}`` (B16)."""
    kind, message, code = _http.error_fields(payload)
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


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _ToolBlock:
    def __init__(self, call_id: str, name: str, initial: dict[str, Any]) -> None:
        self.call_id = call_id
        self.name = name
        self.initial = initial
        self.fragments: list[str] = []

    def call(self) -> ToolCall:
        text = "".join(self.fragments)
        if not text.strip():
            text = json.dumps(self.initial, ensure_ascii=False) if self.initial else "{}"
        return ToolCall(id=self.call_id, name=self.name, input=text)


class _StepState:
    """One step's stream state machine: feed it decoded events in order.

    :meth:`feed` returns the parts an event produces (usually none or one)
    and raises :class:`ModelError` for an ``error`` event; :attr:`finished`
    turns True with the ``step-finish`` part. :meth:`end_of_stream` is
    called when the body ends before ``message_stop``.
    """

    def __init__(self) -> None:
        self._usage: dict[str, int] = {}
        self._tools: dict[object, _ToolBlock] = {}
        self._calls = 0
        self._ids = itertools.count(1)
        self._stop_reason: str | None = None
        self.has_stop_reason = False
        self.finished = False

    def feed(self, name: str, data: object) -> list[StreamPart]:
        """Parts for one event; ``name`` is the SSE event name, ``data`` its JSON."""
        payload = _dict(data)
        kind = payload.get("type") or name
        if self.finished or kind == "ping":
            return []
        if kind == "error":
            raise error_from_event(payload)
        if kind == "message_start":
            self._usage = merge_usage(self._usage, _dict(payload.get("message")).get("usage"))
        elif kind == "content_block_start":
            return self._block_start(_index(payload), _dict(payload.get("content_block")))
        elif kind == "content_block_delta":
            return self._block_delta(_index(payload), _dict(payload.get("delta")))
        elif kind == "content_block_stop":
            block = self._tools.pop(_index(payload), None)
            if block is not None:
                self._calls += 1
                return [StreamPart.tool_call_part(block.call())]
        elif kind == "message_delta":
            reason = _dict(payload.get("delta")).get("stop_reason")
            if isinstance(reason, str) and reason:
                self._stop_reason = reason
                self.has_stop_reason = True
            self._usage = merge_usage(self._usage, payload.get("usage"))
        elif kind == "message_stop":
            return self._finish()
        return []

    def parts(self, events: Iterable[Event], on_finish: Callable[[], object]) -> Iterator[StreamPart]:
        """Feed ``events`` in order and yield their parts, up to and with the
        ``step-finish`` part; ``on_finish()`` is called just before that part
        is yielded. Returns early only then; otherwise when ``events`` ends.

        The same as :meth:`feed` per event, with a short path for a text
        delta (the hot path: most events are one).

        Raises:
            ModelError: an ``error`` event, or ``UPSTREAM`` for an event of a
                foreign shape; errors raised by ``events`` pass through.
        """
        text_delta = StreamPart.text_delta
        for name, data in events:
            if type(data) is dict and data.get("type") == "content_block_delta":
                delta = data.get("delta")
                if type(delta) is dict and delta.get("type") == "text_delta":
                    text = delta.get("text")
                    if type(text) is str:
                        if text:
                            yield text_delta(text)
                        continue
            try:
                parts = self.feed(name, data)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:  # never escape raw
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=f"unexpected {name!r} event") from exc
            if self.finished:
                on_finish()
                yield from parts
                return
            yield from parts

    def end_of_stream(self) -> list[StreamPart]:
        """Parts owed when the body ended; raises ``TRANSIENT`` if the step
        never said why it stopped."""
        if self.finished:
            return []
        if not self.has_stop_reason:
            raise ModelError(
                ErrorClass.TRANSIENT, message="the stream ended before the model said why it stopped"
            )
        return self._finish()

    def _block_start(self, index: object, block: dict[str, Any]) -> list[StreamPart]:
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            return [StreamPart.text_delta(text)] if isinstance(text, str) and text else []
        if kind == "tool_use":
            call_id = block.get("id")
            if not isinstance(call_id, str) or not call_id:
                call_id = f"toolu_agentcore_{next(self._ids)}"
            name = block.get("name")
            self._tools[index] = _ToolBlock(
                call_id, name if isinstance(name, str) else "", _dict(block.get("input"))
            )
        return []  # server tools, thinking, compaction, unknown blocks: passed over

    def _block_delta(self, index: object, delta: dict[str, Any]) -> list[StreamPart]:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            return [StreamPart.text_delta(text)] if isinstance(text, str) and text else []
        if kind == "input_json_delta":
            block = self._tools.get(index)
            fragment = delta.get("partial_json")
            if block is not None and isinstance(fragment, str):
                block.fragments.append(fragment)
        return []  # thinking, signature, citations, compaction, unknown deltas

    def _finish(self) -> list[StreamPart]:
        reason = map_stop_reason(self._stop_reason)
        parts: list[StreamPart] = []
        if reason is not FinishReason.LENGTH:  # calls whose block never stopped
            for block in self._tools.values():
                self._calls += 1
                parts.append(StreamPart.tool_call_part(block.call()))
        self._tools.clear()
        if self._calls and reason is not FinishReason.LENGTH:
            reason = FinishReason.TOOL_CALLS
        elif reason is FinishReason.TOOL_CALLS:
            reason = FinishReason.STOP  # tool_use without any client tool call
        self.finished = True
        parts.append(StreamPart.step_finish(reason, usage_from(self._usage)))
        return parts
