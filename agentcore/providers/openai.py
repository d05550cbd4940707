"""The OpenAI Chat Completions adapter, for OpenAI and every server that copies its API.

:class:`OpenAIChatModel` posts to ``{base_url}/chat/completions`` with
``"stream": true`` and reads the Server-Sent Events it gets back. The same
class talks to Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's
server, LM Studio, OpenRouter, Groq, DeepSeek, Mistral, xAI and gateways:
point ``base_url`` at them (local servers need no ``api_key``).

The adapter is a thin shell: :func:`request_body` and :func:`request_headers`
build the request, :class:`agentcore.providers._openai_stream.ChunkState`
turns decoded events into parts (its docstring lists every server quirk it
reads), and ``agentcore._http`` / ``agentcore.providers._sse`` own the
transport and its errors.

Decisions written down here so nobody "fixes" them:

* The request asks for ``stream_options: {"include_usage": true}`` by default
  (usage then arrives in a last chunk with ``"choices": []``); pass
  ``include_usage=False`` for servers that reject the field.
* Tool-call parts are emitted together with the step-finish, once the stream
  is over (``[DONE]`` or the end of the body), so that fragments arriving late
  and an error chunk sent after the finish reason are still taken into account.
* The stream is read past the finish reason, for the usage chunk. Once a
  finish reason arrived the step is complete (DESIGN.md): a connection that
  then breaks, stalls or ends without ``[DONE]`` ends the step normally with
  the usage seen so far. Before it, such a break is ``TRANSIENT``.
* An error result is sent as a ``tool`` message whose content starts with
  ``"Error: "``, since Chat Completions has no error flag.
* The read timeout given to ``requests`` is ``min(read, idle_timeout)``, so a
  stream that sends nothing at all fails within the idle timeout too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import requests

from agentcore import _http
from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers import _options, _sse
from agentcore.providers._openai_stream import ChunkState
from agentcore.settings import extra_body_dict
from agentcore.types import Message, Request, Role, StreamPart, ToolCall, ToolDefinition, ToolResult

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""OpenAI's API root; ``/chat/completions`` is appended."""
SYSTEM_ROLES = ("system", "developer")
"""Roles the system prompt can be sent as (newer OpenAI models prefer ``developer``)."""
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")
"""Body fields the output cap can be sent as (newer OpenAI models require the second)."""
ERROR_PREFIX = "Error: "
"""Put before the content of an error tool result."""


__all__ = [
    "DEFAULT_BASE_URL",
    "ERROR_PREFIX",
    "MAX_TOKENS_FIELDS",
    "SYSTEM_ROLES",
    "OpenAIChatModel",
    "request_body",
    "request_headers",
]


# --- request mapping (pure) -------------------------------------------------


def _arguments(text: str) -> str:
    """The ``arguments`` text of a call in the history: as sent when it is a
    JSON object, else ``"{}"``. Servers that render chat templates (vLLM,
    llama.cpp, Ollama) parse it and reject the whole request when it is not;
    the call's error result already told the model what was wrong."""
    try:
        value = json.loads(text)
    except ValueError:
        return "{}"
    return text if isinstance(value, dict) else "{}"


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments(call.input)},
    }


def _result_json(result: ToolResult) -> dict[str, Any]:
    content = result.content
    # The API has no error flag: mark the content, unless it already says so
    # (the loop's own error results start with "Error: ").
    if result.is_error and not content.lower().startswith("error"):
        content = ERROR_PREFIX + content
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": content}


def _message_json(message: Message) -> list[dict[str, Any]]:
    """One history message as Chat Completions messages: a ``tool`` message per
    result (whatever the role), then the user or assistant message. Text in a
    ``tool``-role message has no place in the API and is left out."""
    out = [_result_json(result) for result in message.tool_results]
    if message.role is Role.ASSISTANT:
        calls = message.tool_calls
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or (None if calls else "")}
        if calls:
            entry["tool_calls"] = [_call_json(call) for call in calls]
        out.append(entry)
    elif message.role is Role.USER and (message.text or not out):
        out.append({"role": "user", "content": message.text})
    return out


def _tool_json(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = json.loads(tool.input_schema)
    return {"type": "function", "function": function}


def request_body(
    model: str,
    request: Request,
    *,
    system_role: str = "system",
    max_tokens_field: str = "max_tokens",
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed Chat Completions request.

    Follows the OpenAI API reference ("Create chat completion"): the system
    prompt first, as a ``system_role`` message; user turns as text; assistant
    turns with ``content`` (null when empty and the turn has tool calls) and
    ``tool_calls`` whose ``function.arguments`` is JSON text; one ``tool``
    message per result with ``tool_call_id`` (an error result's content starts
    with ``"Error: "``); tools as ``{"type": "function", "function": {name,
    description, parameters}}`` (left out when there are none, since some
    servers reject an empty list); the output cap as ``max_tokens_field``,
    only when ``request.max_output_tokens`` is set. ``extra_body`` is merged
    in last and wins (temperature, seed, ``parallel_tool_calls``,
    ``tool_choice``, provider-specific keys).

    Args:
        model: the model id sent as ``model``.
        request: the step's request.
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: ask for ``stream_options: {"include_usage": true}``.
        extra_body: fields merged into the body.

    Returns:
        A JSON-serializable dict.
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": system_role, "content": request.system})
    for message in request.messages:
        messages.extend(_message_json(message))
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [_tool_json(tool) for tool in request.tools]
    if request.max_output_tokens:
        body[max_tokens_field] = request.max_output_tokens
    body.update(extra_body or {})
    return body


def _merge_headers(target: dict[str, str], extra: Mapping[str, str]) -> None:
    for name, value in extra.items():
        for existing in [k for k in target if k.lower() == name.lower()]:
            del target[existing]
        target[name] = value


def request_headers(
    api_key: str | None,
    headers: Mapping[str, str] | None = None,
    request_headers: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The HTTP headers of one request.

    ``Authorization: Bearer <key>`` only when a key is given (local servers
    need none), then the adapter's ``headers``, then the request's own
    ``headers``; a later header replaces an earlier one of the same name,
    whatever its case.
    """
    out = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    _merge_headers(out, headers or {})
    _merge_headers(out, request_headers or {})
    return out


# --- the adapter -----------------------------------------------------------


class OpenAIChatModel:
    """A :class:`agentcore.Model` over the OpenAI Chat Completions streaming API.

    Args:
        model: the model id (``"gpt-4o-mini"``, ``"llama3.2"``, ...).
        api_key: sent as ``Authorization: Bearer``; None for servers without
            authentication. Never shown in ``repr``, logs or errors.
        base_url: the API root, without ``/chat/completions``.
        session: a ``requests.Session`` to send with (its pool, proxies and
            TLS settings are the caller's policy); by default the adapter makes
            one that ignores the environment.
        timeout: ``(connect, read)`` seconds; ``read`` bounds the wait for the
            response headers and for each network read.
        idle_timeout: seconds the stream may go without a content-bearing event
            (comments and pings do not count); None for no limit.
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: send ``stream_options: {"include_usage": true}``.
        headers: extra HTTP headers on every request (a request's own headers
            come after them).
        extra_body: fields merged into every request body.

    Raises:
        ConfigError: an option is out of range or of the wrong type: a
            ``timeout`` that is not a ``(connect, read)`` pair of positive
            seconds, ``headers`` that are not a mapping of ``str`` to ``str``,
            an ``extra_body`` that is not a mapping of ``str`` keys to JSON
            values.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (_http.DEFAULT_CONNECT_TIMEOUT, _http.DEFAULT_READ_TIMEOUT),
        idle_timeout: float | None = _http.DEFAULT_IDLE_TIMEOUT,
        system_role: str = "system",
        max_tokens_field: str = "max_tokens",
        include_usage: bool = True,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a non-empty string")
        if system_role not in SYSTEM_ROLES:
            raise ConfigError(f"system_role must be one of {SYSTEM_ROLES}, got {system_role!r}")
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise ConfigError(
                f"max_tokens_field must be one of {MAX_TOKENS_FIELDS}, got {max_tokens_field!r}"
            )
        self._timeout, self._idle_timeout = _options.timeouts(timeout, idle_timeout)
        self._headers = _options.header_dict(headers)
        self._extra_body = extra_body_dict(extra_body)
        self._model = model
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError(f"api_key must be a str or None, got {type(api_key).__name__}")
        self._api_key = _options.credential("api_key", api_key) if api_key else None
        self._base_url = _options.check_base_url(base_url)
        self._url = self._base_url + "/chat/completions"
        self._origin = _options.origin(self._base_url)
        self._session = session if session is not None else _http.new_session()
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field
        self._include_usage = include_usage

    @property
    def model_id(self) -> str:
        """The model id sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._base_url

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self._model!r}, base_url={self._base_url!r})"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Run one streamed completion and yield its parts.

        Yields:
            ``text-delta`` parts as they arrive, then the step's ``tool-call``
            parts in index order and exactly one ``step-finish``.

        Raises:
            ModelError: a non-200 status, an error inside the stream, a
                transport failure, or a stream cut before the step completed.
            Canceled: ``ctx`` was cancelled.
        """
        body = request_body(
            self._model,
            request,
            system_role=self._system_role,
            max_tokens_field=self._max_tokens_field,
            include_usage=self._include_usage,
            extra_body=self._extra_body,
        )
        headers = request_headers(self._api_key, self._headers, request.headers)
        yield from _http.redacted(self._stream(body, headers, ctx), headers)

    def _stream(self, body: dict[str, Any], headers: dict[str, str], ctx: Context) -> Iterator[StreamPart]:
        response = _http.open_stream(
            self._session, self._url, headers=headers, body=body, timeout=self._timeout, ctx=ctx
        )
        state = ChunkState(origin=self._origin)

        def complete() -> None:  # a finish reason or [DONE] came: the rest may be drained for reuse
            response.complete = True

        events = _sse.iter_events(_http.iter_body(response), idle_timeout=self._idle_timeout)
        try:
            yield from state.parts(_until_broken(events, state, response), complete)
            yield from state.finish()
        finally:
            events.close()
            response.close()


def _until_broken(
    events: Iterator[_sse.Event], state: ChunkState, response: _http.StreamResponse
) -> Iterator[_sse.Event]:
    """``events``, ending quietly at a ``TRANSIENT`` read failure once a finish
    reason arrived: the step is complete then, only the usage chunk is lost
    (module docstring). The broken connection is not drained."""
    try:
        yield from events
    except ModelError as exc:
        if state.finish_reason is None or exc.error_class is not ErrorClass.TRANSIENT:
            raise
        response.complete = False
