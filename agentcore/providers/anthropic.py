"""The Anthropic Messages API adapter: :class:`AnthropicModel`.

A thin shell (:meth:`AnthropicModel.stream`) over small pure functions, each
following the documented API and tested on its own:

* :func:`request_body` builds the JSON body of ``POST /v1/messages``
  (https://docs.anthropic.com/en/api/messages);
* :mod:`agentcore.providers._anthropic_stream` maps the response:
  :class:`_StepState` turns the decoded stream events into parts,
  :func:`map_stop_reason` maps ``stop_reason`` onto :class:`FinishReason`,
  :func:`merge_usage` / :func:`usage_from` normalize token counts and
  :func:`classify_error` / :func:`error_from_event` classify error objects
  (its docstring holds the decisions about the stream). They are re-exported
  here.

Decisions (DESIGN.md leaves these to the adapter):

* Request: the API rejects empty text blocks and needs user and assistant
  turns to alternate, so blank text parts and turns left empty are dropped,
  ``tool`` messages become ``user`` turns of ``tool_result`` blocks, and
  neighbouring turns of one role are merged (``tool_result`` blocks first). A
  call whose input is not a JSON object is sent with ``input: {}``. An empty
  tool result is sent without ``content`` (the field is optional).
* An API key (8 characters or longer) that the server echoes in an error
  message is replaced with ``[REDACTED]``.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Mapping
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

from agentcore import _http
from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers import _options, _sse
from agentcore.providers._anthropic_stream import _StepState as _StepState  # re-exported for the tests
from agentcore.providers._anthropic_stream import (
    classify_error,
    error_from_event,
    map_stop_reason,
    merge_usage,
    usage_from,
)
from agentcore.types import ContentPart, Message, Request, Role, StreamPart

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The Anthropic API origin; requests go to ``{base_url}/v1/messages``."""
DEFAULT_MAX_TOKENS = 4096
"""Output token cap sent when ``Request.max_output_tokens`` is 0 (the API requires one)."""
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value (the current stable API version)."""


__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "AnthropicModel",
    "classify_error",
    "error_from_event",
    "map_stop_reason",
    "merge_usage",
    "request_body",
    "tool_input",
    "usage_from",
]


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


# --- the adapter ----------------------------------------------------------


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
            None for no limit (the read timeout alone then bounds each read).
        max_tokens: the output token cap when ``Request.max_output_tokens``
            is 0 (the API requires one).
        anthropic_version: the ``anthropic-version`` header.
        headers: extra headers for every request (``anthropic-beta``, gateway
            headers); they override the defaults, and ``Request.headers``
            override them.

    Raises:
        ConfigError: an empty model id, a ``timeout`` that is not a
            ``(connect, read)`` pair, a non-positive timeout or max_tokens,
            ``headers`` that are not a mapping of ``str`` to ``str``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (_http.DEFAULT_CONNECT_TIMEOUT, _http.DEFAULT_READ_TIMEOUT),
        idle_timeout: float | None = _http.DEFAULT_IDLE_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        anthropic_version: str = ANTHROPIC_VERSION,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a non-empty model id")
        if not isinstance(api_key, str):
            raise ConfigError("api_key must be a str")
        _options.credential("api_key", api_key)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"max_tokens must be a positive int, got {max_tokens!r}")
        self._timeout, self._idle_timeout = _options.timeouts(timeout, idle_timeout)
        self._extra_headers = _options.header_dict(headers)
        self._model = model
        self._api_key = api_key
        self._base_url = _options.check_base_url(base_url)
        self._url = f"{self._base_url}/v1/messages"
        self._session = session if session is not None else _http.new_session()
        self._max_tokens = max_tokens
        self._version = anthropic_version

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
        headers = self._headers(request)
        yield from _http.redacted(self._stream(request, headers, ctx), headers)

    def _stream(self, request: Request, headers: dict[str, str], ctx: Context) -> Iterator[StreamPart]:
        body = request_body(request, self._model, self._max_tokens)
        response = _http.open_stream(
            self._session,
            self._url,
            headers=headers,
            body=body,
            timeout=self._timeout,
            ctx=ctx,
        )
        state = _StepState()

        def complete() -> None:  # the step is whole: the rest of the body may be drained for reuse
            response.complete = True

        try:
            events = _sse.iter_events(_http.iter_body(response), idle_timeout=self._idle_timeout)
            try:
                yield from state.parts(events, complete)
            except ModelError as exc:
                # A connection lost after message_delta said why the model stopped
                # ends a complete step (DESIGN.md): finish it, keep its usage.
                if exc.error_class is not ErrorClass.TRANSIENT or not state.has_stop_reason:
                    raise
                yield from state.end_of_stream()
                return
            if not state.finished:
                parts = state.end_of_stream()
                complete()
                yield from parts
        finally:
            response.close()
