"""The OpenAI Responses API adapter, :class:`OpenAIResponsesModel`: the
request mapping (:mod:`agentcore.providers.openai.responses.request`) and
the stream mapping (:mod:`agentcore.providers.openai.responses.stream`) run
in the shell every adapter shares (:mod:`agentcore.providers.shell`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any

import attrs

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.context import Context
from agentcore.providers.endpoint import Credentials, Endpoint
from agentcore.providers.openai.responses.request import (
    SUMMARIES,
    SYSTEM_ROLES,
    check_settings,
    compact_body,
    count_body,
    request_body,
)
from agentcore.providers.openai.responses.stream import StreamState, compacted_messages
from agentcore.providers.openai.shared import DEFAULT_BASE_URL, RESPONSES_ENDPOINT, cache_policy
from agentcore.providers.shell import Adapter, check_choice, merge_headers
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Message, Request, StreamPart, Usage

COUNT_PATH = "/responses/input_tokens"
"""Where token counts go, under ``base_url``
(:data:`agentcore.providers.openai.responses.request.COUNT_DOCS`)."""
COMPACT_PATH = "/responses/compact"
"""Where a history is compacted, under ``base_url``
(https://platform.openai.com/docs/api-reference/responses/compact)."""


@attrs.frozen
class CompactedHistory:
    """What :meth:`OpenAIResponsesModel.compact` gives back.

    Attributes:
        messages: the compacted history, to continue from: the user messages
            (the very ones given), then one assistant message holding the
            compaction item (a :class:`agentcore.ProviderItem`).
        usage: the tokens the compaction was billed (input and output).
    """

    messages: tuple[Message, ...]
    usage: Usage


class OpenAIResponsesModel(Adapter):
    """A :class:`agentcore.Model` over the OpenAI Responses streaming API.

    Pick it over :class:`agentcore.providers.openai.OpenAIChatModel` for
    OpenAI's reasoning models (o-series, GPT-5 and later): their reasoning is
    carried from one tool call to the next, which Chat Completions throws away.

    Args:
        model: the model id (``"gpt-5"``, ``"o4-mini"``, ...).
        api_key: sent as ``Authorization: Bearer``.
        base_url: the API root; requests go to ``{base_url}/responses``.
        transport, timeout, headers, extra_body, cache_tracker,
            context_window: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`).
        credentials, endpoint: as for every adapter; None: the API's own
            endpoint at OpenAI and the servers that copy it
            (:data:`agentcore.providers.openai.shared.RESPONSES_ENDPOINT`).
        settings: the default :class:`agentcore.ModelSettings` of every
            request. ``reasoning_effort`` is ``reasoning.effort`` (one of
            ``none``, ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``;
            each model takes a subset); ``stop_sequences``, ``seed``,
            ``thinking`` and ``thinking_budget`` have no field in the API and
            are a :class:`ConfigError`.
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

    Raises:
        ConfigError: a ``reasoning`` or ``server_state`` that is not a bool,
            an unknown ``reasoning_summary`` or ``system_role``, ``settings``
            the API cannot take
            (:func:`agentcore.providers.openai.responses.request.check_settings`),
            and as :class:`agentcore.providers.shell.Adapter` says for the
            options every adapter takes.
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
        reasoning: bool = True,
        reasoning_summary: str | None = "auto",
        system_role: str = "instructions",
        server_state: bool = False,
    ) -> None:
        check_choice("reasoning", reasoning, (True, False))
        check_choice("reasoning_summary", reasoning_summary, (None, *SUMMARIES))
        check_choice("system_role", system_role, SYSTEM_ROLES)
        check_choice("server_state", server_state, (True, False))
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
            endpoint=endpoint or RESPONSES_ENDPOINT,
        )
        check_settings(self._settings, reasoning=reasoning)
        self._reasoning = reasoning
        self._reasoning_summary = reasoning_summary
        self._system_role = system_role
        self._server_state = server_state

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Run one streamed response and yield its parts.

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive, a
            ``citation`` part as each text annotation arrives, a
            ``reasoning`` part as each reasoning item completes, a
            ``provider-item`` part as each hosted tool's item (web search,
            file search, code interpreter) or compaction item completes and
            a ``tool-call`` part as each function call completes (after its
            ``tool-call-delta`` parts when ``request.stream_tool_input``),
            in the model's order, then exactly one ``step-finish`` (its
            usage counts the hosted tools' calls).

        Raises:
            ConfigError: before any HTTP call, for a request the API refuses
                (:func:`agentcore.providers.openai.responses.request.request_body`),
                a server tool it does not have among them
                (:func:`agentcore.providers.openai.responses.request.server_tool_json`:
                ``WebFetch``, ``WebSearch.max_uses``, ``WebSearch.blocked_domains``).
            ModelError: a non-200 status, an ``error`` event or
                ``response.failed``, a transport failure, or a stream cut
                before the response completed.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Any] = []
        body = self._step_body(request, sent)
        system = body.get("instructions")
        if self._system_role == "developer" and request.system:
            system = body["input"][0]  # the developer message comes first
        prompt = self._digests.fingerprint(body.get("tools"), system, request.messages, sent)
        policy = self._cache_policy(self._settings.merged(request.settings))
        state = StreamState(self._origin, stored=self._server_state, tool_input=request.stream_tool_input)
        yield from self._stream(body, self._request_headers(request), state, prompt, policy, ctx)

    def _cache_policy(self, settings: ModelSettings) -> CachePolicy:
        """What a step with ``settings`` asks of the server's prompt cache
        (:func:`agentcore.providers.openai.shared.cache_policy`; the Azure
        OpenAI subclasses answer with Azure's)."""
        return cache_policy(settings, self._origin)

    def compact(
        self, messages: Sequence[Message], *, system: str | None = None, ctx: Context | None = None
    ) -> CompactedHistory:
        """Compact ``messages`` with the stateless compact endpoint,
        ``POST {base_url}/responses/compact``
        (https://platform.openai.com/docs/api-reference/responses/compact;
        https://developers.openai.com/api/docs/guides/compaction, "Standalone
        compaction"): one JSON request, not streamed, of the history's input
        items as a step sends them (the same mapping), ``instructions`` from
        ``system`` and the settings' prompt-cache fields. The server answers
        the user messages and one compaction item standing for everything
        else (the assistant turns, tool calls and results, reasoning);
        continue from :attr:`CompactedHistory.messages` (with the next user
        message), which the next request sends whole, as the guide says. The
        compaction item goes back only to this server (its ``origin``).

        Use it between runs, or from ``LoopOptions(prepare_step=...)`` to
        compact the history a step is about to send. It is not retried (a
        step's retry policy does not cover it) and is billed as its
        :attr:`CompactedHistory.usage` says.

        Args:
            messages: the history, as a step would send it.
            system: the system prompt (None: none).
            ctx: cancels the call or bounds it with a deadline; None: a fresh
                :class:`agentcore.Context`.

        Raises:
            ConfigError: before any HTTP call, a history or settings the API
                would refuse, as ``stream()`` raises it.
            ModelError: an error status, a transport failure, an answer that
                is not a compacted history
                (:func:`agentcore.providers.openai.responses.stream.compacted_messages`).
            Canceled: ``ctx`` was cancelled.
        """
        request = Request(system=system or "", messages=tuple(messages))
        sent: list[Any] = []
        body = compact_body(self._body(request_body, request, sent, system_role=self._system_role))
        headers = merge_headers(self._headers, {"accept": "application/json"})
        answer = self._post(COMPACT_PATH, body, headers, Context() if ctx is None else ctx)
        history, usage = compacted_messages(answer, request.messages, sent, self._origin)
        return CompactedHistory(tuple(history), usage)

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """``POST {base_url}/responses/input_tokens``
        (https://developers.openai.com/api/docs/guides/token-counting) with
        the step's own input items, instructions, tools and reasoning
        configuration (the same mapping and settings) less what the endpoint
        does not take
        (:func:`agentcore.providers.openai.responses.request.count_body`)."""
        return COUNT_PATH, count_body(self._step_body(request, []))

    def _step_body(self, request: Request, sent: list[Any]) -> dict[str, Any]:
        """The body of a step of ``request``
        (:func:`agentcore.providers.openai.responses.request.request_body`)."""
        return self._body(
            request_body,
            request,
            sent,
            system_role=self._system_role,
            reasoning=self._reasoning,
            reasoning_summary=self._reasoning_summary,
            server_state=self._server_state,
        )
