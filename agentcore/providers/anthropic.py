"""The Anthropic Messages API adapter: :class:`AnthropicModel`.

A thin shell (:meth:`AnthropicModel.stream`) over small pure functions, each
following the documented API and tested on its own:

* :func:`request_body` builds the JSON body of ``POST /v1/messages``
  (https://docs.anthropic.com/en/api/messages);
* :class:`_StepState` turns the decoded stream events into parts
  (https://docs.anthropic.com/en/docs/build-with-claude/streaming);
* :func:`map_stop_reason` maps ``stop_reason`` onto :class:`FinishReason`
  (https://docs.anthropic.com/en/api/handling-stop-reasons);
* :func:`merge_usage` / :func:`usage_from` normalize token counts;
* :func:`classify_error` / :func:`error_from_event` classify error objects
  (https://docs.anthropic.com/en/api/errors).

Decisions (DESIGN.md leaves these to the adapter):

* Request: the API rejects empty text blocks and needs user and assistant
  turns to alternate, so blank text parts and turns left empty are dropped,
  ``tool`` messages become ``user`` turns of ``tool_result`` blocks, and
  neighbouring turns of one role are merged (``tool_result`` blocks first). A
  call whose input is not a JSON object is sent with ``input: {}``. An empty
  tool result is sent without ``content`` (the field is optional).
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
* An API key (8 characters or longer) that the server echoes in an error
  message is replaced with ``[REDACTED]``.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Generator, Iterator, Mapping
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

from agentcore import _http
from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError, classify_status
from agentcore.providers import _sse
from agentcore.types import ContentPart, FinishReason, Message, Request, Role, StreamPart, ToolCall, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The Anthropic API origin; requests go to ``{base_url}/v1/messages``."""
DEFAULT_MAX_TOKENS = 4096
"""Output token cap sent when ``Request.max_output_tokens`` is 0 (the API requires one)."""
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value (the current stable API version)."""

_REDACTED = "[REDACTED]"
_MIN_REDACT_LENGTH = 8
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


# --- request --------------------------------------------------------------


def tool_input(text: str) -> dict[str, Any]:
    """The ``input`` object of a ``tool_use`` block from a call's JSON text.

    The API requires an object; text that is empty, malformed or not an
    object gives ``{}`` so a history holding a malformed call can be sent
    again (DESIGN.md, "Decisions").
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _block(part: ContentPart) -> dict[str, Any] | None:
    if part.tool_call is not None:
        call = part.tool_call
        return {"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(call.input)}
    if part.tool_result is not None:
        result = part.tool_result
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.tool_call_id}
        if result.content:
            block["content"] = result.content
        if result.is_error:
            block["is_error"] = True
        return block
    if part.text.strip():
        return {"type": "text", "text": part.text}
    return None  # the API rejects empty and whitespace-only text blocks


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = [b for b in map(_block, message.content) if b is not None]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            blocks = turns.pop()["content"] + blocks
        if role == "user":  # tool_result blocks must open the user turn
            blocks.sort(key=lambda b: b["type"] != "tool_result")
        turns.append({"role": role, "content": blocks})
    return turns


def request_body(request: Request, model: str, max_tokens: int) -> dict[str, Any]:
    """The JSON body of a streaming ``POST /v1/messages``.

    Follows https://docs.anthropic.com/en/api/messages: ``system`` is a
    top-level string; ``messages`` alternate ``user`` and ``assistant`` (tool
    results travel in ``user`` turns as ``tool_result`` blocks); tools are
    ``{name, description, input_schema}`` with the schema as an object.

    Args:
        request: the step's request.
        model: the model id.
        max_tokens: the cap used when ``request.max_output_tokens`` is 0.

    Returns:
        A JSON-ready dict with ``stream: true``.
    """
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_output_tokens or max_tokens,
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    body["messages"] = _messages(request.messages)
    if request.tools:
        tools = []
        for tool in request.tools:
            entry: dict[str, Any] = {"name": tool.name}
            if tool.description:
                entry["description"] = tool.description
            entry["input_schema"] = json.loads(tool.input_schema)
            tools.append(entry)
        body["tools"] = tools
    return body


# --- response mapping -----------------------------------------------------

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
        self._has_stop_reason = False
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
            return self._block_start(payload.get("index"), _dict(payload.get("content_block")))
        elif kind == "content_block_delta":
            return self._block_delta(payload.get("index"), _dict(payload.get("delta")))
        elif kind == "content_block_stop":
            block = self._tools.pop(payload.get("index"), None)
            if block is not None:
                self._calls += 1
                return [StreamPart.tool_call_part(block.call())]
        elif kind == "message_delta":
            reason = _dict(payload.get("delta")).get("stop_reason")
            if isinstance(reason, str) and reason:
                self._stop_reason = reason
                self._has_stop_reason = True
            self._usage = merge_usage(self._usage, payload.get("usage"))
        elif kind == "message_stop":
            return self._finish()
        return []

    def end_of_stream(self) -> list[StreamPart]:
        """Parts owed when the body ended; raises ``TRANSIENT`` if the step
        never said why it stopped."""
        if self.finished:
            return []
        if not self._has_stop_reason:
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


# --- the adapter ----------------------------------------------------------


def _positive(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


class AnthropicModel:
    """A :class:`agentcore.Model` over the Anthropic Messages API (streaming).

    Args:
        model: the model id, e.g. ``"claude-sonnet-4-5"``.
        api_key: sent as ``x-api-key`` (omitted when empty, for gateways that
            authenticate through ``headers``); never shown in ``repr``, logs
            or error messages.
        base_url: the API origin; requests go to ``{base_url}/v1/messages``.
        session: a ``requests.Session`` to send with (the caller's policy);
            None makes one that ignores the environment and supports cancel.
        timeout: ``(connect, read)`` seconds; read bounds the wait for the
            response headers and for each network read.
        idle_timeout: seconds the stream may go without a content-bearing
            event (pings do not count); the read timeout is capped by it.
        max_tokens: the output token cap when ``Request.max_output_tokens``
            is 0 (the API requires one).
        anthropic_version: the ``anthropic-version`` header.
        headers: extra headers for every request (``anthropic-beta``, gateway
            headers); they override the defaults, and ``Request.headers``
            override them.

    Raises:
        ConfigError: an empty model id, a non-positive timeout or max_tokens.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (_http.DEFAULT_CONNECT_TIMEOUT, _http.DEFAULT_READ_TIMEOUT),
        idle_timeout: float = _http.DEFAULT_IDLE_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        anthropic_version: str = ANTHROPIC_VERSION,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a non-empty model id")
        if not isinstance(api_key, str):
            raise ConfigError("api_key must be a str")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"max_tokens must be a positive int, got {max_tokens!r}")
        connect, read = timeout
        self._model = model
        self._api_key = api_key
        self._base_url = base_url.rstrip("/")
        self._url = f"{self._base_url}/v1/messages"
        self._session = session if session is not None else _http.new_session()
        self._connect_timeout = _positive("connect timeout", connect)
        self._read_timeout = _positive("read timeout", read)
        self._idle_timeout = _positive("idle_timeout", idle_timeout)
        self._max_tokens = max_tokens
        self._version = anthropic_version
        self._extra_headers = dict(headers or {})

    @property
    def model_id(self) -> str:
        """The model id sent in every request."""
        return self._model

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self._model!r}, base_url={self._base_url!r})"

    def _headers(self, request: Request) -> dict[str, str]:
        headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
        if self._api_key:
            headers["x-api-key"] = self._api_key
        headers["anthropic-version"] = self._version
        headers["content-type"] = "application/json"
        headers["accept"] = "text/event-stream"
        headers.update(self._extra_headers)
        headers.update(request.headers)
        return dict(headers)

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Stream one step (see :class:`agentcore.Model`).

        Yields:
            ``text-delta`` and ``tool-call`` parts as they arrive, then one
            ``step-finish``.

        Raises:
            ModelError: an HTTP error status, an ``error`` event, a transport
                failure, a timeout, or a stream cut before the step completed.
            Canceled: ``ctx`` was cancelled.
        """
        failure: ModelError | None = None
        try:
            yield from self._stream(request, ctx)
        except ModelError as exc:
            failure = self._scrub(exc)
            if failure is exc:
                raise
        if failure is not None:
            raise failure  # raised outside the handler: no link to the unredacted error

    def _stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        body = request_body(request, self._model, self._max_tokens)
        response = _http.open_stream(
            self._session,
            self._url,
            headers=self._headers(request),
            body=body,
            timeout=(self._connect_timeout, min(self._read_timeout, self._idle_timeout)),
            ctx=ctx,
        )
        state = _StepState()
        try:
            events = _sse.iter_events(_http.iter_body(response), idle_timeout=self._idle_timeout)
            for event in events:
                ctx.check()
                parts = _feed(state, event)
                if state.finished:
                    response.complete = True
                yield from parts
                if state.finished:
                    return
            parts = state.end_of_stream()
            response.complete = True
            yield from parts
        finally:
            response.close()

    def _scrub(self, exc: ModelError) -> ModelError:
        key = self._api_key
        if len(key) < _MIN_REDACT_LENGTH or key not in exc.message:
            return exc
        return ModelError(
            exc.error_class,
            retry_after=exc.retry_after,
            err=exc.err,
            message=exc.message.replace(key, _REDACTED),
            status=exc.status,
        )


def _feed(state: _StepState, event: _sse.Event) -> list[StreamPart]:
    try:
        return state.feed(event.event, event.data)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a foreign shape: never escape raw
        raise ModelError(ErrorClass.UPSTREAM, err=exc, message=f"unexpected {event.event!r} event") from exc
