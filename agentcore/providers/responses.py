"""The OpenAI Responses API adapter: :class:`OpenAIResponsesModel`.

It posts to ``{base_url}/responses`` with ``"stream": true``
(https://platform.openai.com/docs/api-reference/responses/create) and reads
the typed events it gets back
(https://platform.openai.com/docs/api-reference/responses-streaming). The same
class talks to servers that copy the API (Azure OpenAI, vLLM, Ollama, LM
Studio, OpenRouter, xAI, DeepSeek, gateways): point ``base_url`` at them.

The adapter is a thin shell, built like
:class:`agentcore.providers.openai.OpenAIChatModel`:
:func:`agentcore.providers._responses.request_body` builds the request,
:class:`agentcore.providers._responses.ResponseState` turns decoded events
into parts (its module docstring lists every server quirk it reads), and
``agentcore._http`` / ``agentcore.providers._sse`` own the transport and its
errors.

Decisions written down here so nobody "fixes" them:

* Stateless by default (``store: false``, encrypted reasoning sent back in
  place): nothing is kept on the server, a history saved as JSON continues
  anywhere, and Zero Data Retention organizations can use it.
  ``server_state=True`` chains requests with ``previous_response_id``
  instead (see the class docstring for the trade-offs).
* Reasoning goes back only to the same wire format and origin (the API
  host): encrypted content is verifiable only by the service that issued it,
  so reasoning from another provider or host is left out of the request.
* The stream is read up to the first ``response.completed``,
  ``response.incomplete`` or ``response.failed`` (or ``[DONE]``) and no
  further; the rest of the body is drained briefly for connection reuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import requests

from agentcore import _http
from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers import _options, _sse
from agentcore.providers._responses import (
    SUMMARIES,
    SYSTEM_ROLES,
    ResponseState,
    check_settings,
    request_body,
)
from agentcore.providers.openai import DEFAULT_BASE_URL, request_headers
from agentcore.settings import ModelSettings, extra_body_dict
from agentcore.types import Request, StreamPart

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel:
    """A :class:`agentcore.Model` over the OpenAI Responses streaming API.

    Pick it over :class:`~agentcore.providers.openai.OpenAIChatModel` for
    OpenAI's reasoning models (o-series, GPT-5 and later): their reasoning is
    carried from one tool call to the next, which Chat Completions throws away.

    Args:
        model: the model id (``"gpt-5"``, ``"o4-mini"``, ...).
        api_key: sent as ``Authorization: Bearer``; None for servers without
            authentication. Never shown in ``repr``, logs or errors.
        base_url: the API root, without ``/responses``.
        session: a ``requests.Session`` to send with (its pool, proxies and
            TLS settings are the caller's policy); by default the adapter makes
            one that ignores the environment.
        timeout: ``(connect, read)`` seconds; ``read`` bounds the wait for the
            response headers and for each network read.
        idle_timeout: seconds the stream may go without a content-bearing event
            (comments and pings do not count); None for no limit.
        settings: the default :class:`agentcore.ModelSettings` of every
            request; a run's settings override them field by field.
            ``reasoning_effort`` is ``reasoning.effort`` (one of ``none``,
            ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``; each model
            takes a subset); ``stop_sequences``, ``seed``, ``thinking`` and
            ``thinking_budget`` have no field in the API and are a
            :class:`ConfigError`.
        reasoning: the model reasons (the default): ask for encrypted
            reasoning (``include: ["reasoning.encrypted_content"]``) and a
            reasoning summary. Pass False for models without reasoning
            (``gpt-4o``, ``gpt-4.1``), which answer 400 ("Encrypted content is
            not supported with this model") to that.
        reasoning_summary: ``reasoning.summary``: ``"auto"`` (the default),
            ``"concise"`` or ``"detailed"``, the reasoning text streamed as
            ``reasoning-delta`` parts; None asks for none. OpenAI requires a
            verified organization for summaries and answers 400 (``param:
            reasoning.summary``) otherwise: pass None then.
        system_role: ``"instructions"`` (the system prompt as the
            ``instructions`` field, the default) or ``"developer"`` (as a
            first ``developer`` message, for servers without ``instructions``).
        server_state: keep the conversation on the server: ``store: true``,
            and each request after a tool call names the stored response
            with ``previous_response_id`` and sends only the new items (the
            tool results). Less to upload per step, but: the stored
            responses count against the organization's data retention (30
            days by default) and are not available under Zero Data Retention;
            edits to the history before the stored response are not seen by
            the server; a chain whose stored response expired or was deleted
            fails with a 4xx; every earlier input token is still billed as
            input. The default (False) is stateless.
        headers: extra HTTP headers on every request (a request's own headers
            come after them).
        extra_body: fields merged into every request body (before the
            settings' ``extra_body``).

    Raises:
        ConfigError: an option is out of range or of the wrong type (as for
            :class:`~agentcore.providers.openai.OpenAIChatModel`), or
            ``settings`` the API cannot take.
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
        settings: ModelSettings | None = None,
        reasoning: bool = True,
        reasoning_summary: str | None = "auto",
        system_role: str = "instructions",
        server_state: bool = False,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a non-empty string")
        if settings is not None and not isinstance(settings, ModelSettings):
            raise ConfigError(f"settings must be a ModelSettings or None, got {type(settings).__name__}")
        for name, flag in (("reasoning", reasoning), ("server_state", server_state)):
            if not isinstance(flag, bool):
                raise ConfigError(f"{name} must be True or False, got {flag!r}")
        if reasoning_summary is not None and reasoning_summary not in SUMMARIES:
            raise ConfigError(
                f"reasoning_summary must be one of {SUMMARIES} or None, got {reasoning_summary!r}"
            )
        if system_role not in SYSTEM_ROLES:
            raise ConfigError(f"system_role must be one of {SYSTEM_ROLES}, got {system_role!r}")
        self._settings = settings or ModelSettings()
        check_settings(self._settings, reasoning=reasoning)
        self._timeout, self._idle_timeout = _options.timeouts(timeout, idle_timeout)
        self._headers = _options.header_dict(headers)
        self._extra_body = extra_body_dict(extra_body)
        self._model = model
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError(f"api_key must be a str or None, got {type(api_key).__name__}")
        self._api_key = _options.credential("api_key", api_key) if api_key else None
        self._base_url = _options.check_base_url(base_url)
        self._url = self._base_url + "/responses"
        self._origin = _options.origin(self._base_url)
        self._session = session if session is not None else _http.new_session()
        self._reasoning = reasoning
        self._reasoning_summary = reasoning_summary
        self._system_role = system_role
        self._server_state = server_state

    @property
    def model_id(self) -> str:
        """The model id sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._base_url

    def __repr__(self) -> str:
        return f"OpenAIResponsesModel(model={self._model!r}, base_url={self._base_url!r})"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Run one streamed response and yield its parts.

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive, a
            ``reasoning`` part as each reasoning item completes and a
            ``tool-call`` part as each function call completes (in the
            model's order), then exactly one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, for a request the API refuses
                (:func:`agentcore.providers._responses.request_body`).
            ModelError: a non-200 status, an ``error`` event or
                ``response.failed``, a transport failure, or a stream cut
                before the response completed.
            Canceled: ``ctx`` was cancelled.
        """
        body = request_body(
            self._model,
            request,
            origin=self._origin,
            settings=self._settings.merged(request.settings),
            system_role=self._system_role,
            reasoning=self._reasoning,
            reasoning_summary=self._reasoning_summary,
            server_state=self._server_state,
            extra_body=self._extra_body,
        )
        headers = request_headers(self._api_key, self._headers, request.headers)
        yield from _http.redacted(self._stream(body, headers, ctx), headers)

    def _stream(self, body: dict[str, Any], headers: dict[str, str], ctx: Context) -> Iterator[StreamPart]:
        response = _http.open_stream(
            self._session, self._url, headers=headers, body=body, timeout=self._timeout, ctx=ctx
        )
        state = ResponseState(self._origin, stored=self._server_state)

        def done() -> None:  # the response is over: the rest may be drained for reuse
            response.complete = True

        events = _sse.iter_events(_http.iter_body(response), idle_timeout=self._idle_timeout)
        try:
            yield from state.parts(events, done)
            yield from state.finish()
        finally:
            events.close()
            response.close()
