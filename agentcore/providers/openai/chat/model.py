"""The OpenAI Chat Completions adapter, :class:`OpenAIChatModel`: the
request mapping (:mod:`agentcore.providers.openai.chat.request`) and the
stream mapping (:mod:`agentcore.providers.openai.chat.stream`) run in the
shell every adapter shares (:mod:`agentcore.providers.shell`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.context import Context
from agentcore.memo import MessageMemo
from agentcore.providers.endpoint import Credentials, Endpoint
from agentcore.providers.openai.chat.request import (
    MAX_TOKENS_FIELDS,
    REASONING_DIALECTS,
    SYSTEM_ROLES,
    check_settings,
    reasoning_dialect,
    request_body,
)
from agentcore.providers.openai.chat.stream import StreamState
from agentcore.providers.openai.shared import CHAT_ENDPOINT, DEFAULT_BASE_URL, cache_policy
from agentcore.providers.shell import Adapter, check_choice
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart


class OpenAIChatModel(Adapter):
    """A :class:`agentcore.Model` over the OpenAI Chat Completions streaming
    API, for OpenAI and every server that copies it: point ``base_url`` at
    Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's server, LM
    Studio, OpenRouter, Groq, DeepSeek, Mistral, xAI or a gateway (local
    servers need no ``api_key``).

    Args:
        model: the model id (``"gpt-4o-mini"``, ``"llama3.2"``, ...).
        api_key: sent as ``Authorization: Bearer``.
        base_url: the API root; requests go to ``{base_url}/chat/completions``.
        transport, timeout, headers, extra_body, cache_tracker,
            context_window: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`).
        credentials, endpoint: as for every adapter; None: the API's own
            endpoint at OpenAI and the servers that copy it
            (:data:`agentcore.providers.openai.shared.CHAT_ENDPOINT`).
        settings: the model's :class:`agentcore.ModelSettings`, for every
            request (see :func:`agentcore.providers.openai.chat.request.settings_fields`).
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: send ``stream_options: {"include_usage": true}``.
        reasoning_format: the field this server takes reasoning back in, one
            of :data:`agentcore.providers.openai.chat.request.REASONING_DIALECTS`:
            ``"reasoning_content"`` (DeepSeek, Kimi, GLM, Qwen), ``"reasoning"``
            (Groq), ``"reasoning_details"`` (OpenRouter), ``"mistral-thinking"``,
            ``"gemini"`` or ``"none"``; None (the default) works it out from
            the server and the history
            (:func:`agentcore.providers.openai.chat.request.reasoning_dialect`).

    Raises:
        ConfigError: an unknown ``system_role``, ``max_tokens_field`` or
            ``reasoning_format``, an ``include_usage`` that is not a bool,
            ``settings`` the server cannot take
            (:func:`agentcore.providers.openai.chat.request.check_settings`:
            ``thinking`` at api.openai.com, say), and as
            :class:`agentcore.providers.shell.Adapter` says for the options
            every adapter takes.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        transport: Transport | None = None,
        timeout: Timeout | None = None,
        headers: Mapping[str, str] | None = None,
        settings: ModelSettings | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: CacheTracker | None = None,
        context_window: int | None = None,
        credentials: Credentials | None = None,
        endpoint: Endpoint | None = None,
        system_role: str = "system",
        max_tokens_field: str = "max_tokens",
        include_usage: bool = True,
        reasoning_format: str | None = None,
    ) -> None:
        check_choice("system_role", system_role, SYSTEM_ROLES)
        check_choice("max_tokens_field", max_tokens_field, MAX_TOKENS_FIELDS)
        check_choice("include_usage", include_usage, (True, False))
        check_choice("reasoning_format", reasoning_format, (None, *REASONING_DIALECTS))
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=credentials,
            endpoint=endpoint or CHAT_ENDPOINT,
        )
        check_settings(self._settings, reasoning_dialect(self._origin, (), reasoning_format), self._origin)
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field
        self._include_usage = include_usage
        self._reasoning_format = reasoning_format
        self._mapped: MessageMemo[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = MessageMemo()
        """Each history message's Chat Completions JSON, mapped at an earlier step."""

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Run one streamed completion and yield its parts.

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive, a
            ``reasoning`` part where each reasoning block ends,
            ``tool-call-delta`` parts as the tool calls' arguments stream
            (when ``request.stream_tool_input``), then the step's
            ``tool-call`` parts in index order (each after the last of its
            deltas) and exactly one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, a server tool (the API has
                none), a history or a setting the server would refuse
                (:func:`agentcore.providers.openai.chat.request.request_body`).
            ModelError: a non-200 status, an error inside the stream, a
                transport failure, or a stream cut before the step completed.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Any] = []
        body = self._step_body(request, sent)
        system = body["messages"][0] if request.system else None
        prompt = self._digests.fingerprint(body.get("tools"), system, request.messages, sent)
        policy = self._cache_policy(self._settings.merged(request.settings))
        state = StreamState(self._origin, tool_input=request.stream_tool_input)
        yield from self._stream(body, self._request_headers(request), state, prompt, policy, ctx)

    def _cache_policy(self, settings: ModelSettings) -> CachePolicy:
        """What a step with ``settings`` asks of the server's prompt cache
        (:func:`agentcore.providers.openai.shared.cache_policy`; the Azure
        OpenAI subclasses answer with Azure's)."""
        return cache_policy(settings, self._origin)

    def _count_request(self, request: Request) -> None:
        """None: Chat Completions has no count endpoint (nor have the servers
        that copy it), so :meth:`count_tokens` estimates, once the request
        mapping accepted the request (nothing is sent)."""
        self._step_body(request, [])
        return None

    def _step_body(self, request: Request, sent: list[Any]) -> dict[str, Any]:
        """The body of a step of ``request``
        (:func:`agentcore.providers.openai.chat.request.request_body`)."""
        return self._body(
            request_body,
            request,
            sent,
            system_role=self._system_role,
            max_tokens_field=self._max_tokens_field,
            include_usage=self._include_usage,
            reasoning_format=self._reasoning_format,
            memo=self._mapped,
        )
