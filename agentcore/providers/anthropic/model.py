"""The Anthropic Messages API adapter, :class:`AnthropicModel`: the request
mapping (:mod:`agentcore.providers.anthropic.request`) and the stream
mapping (:mod:`agentcore.providers.anthropic.stream`) run in the shell every
adapter shares (:mod:`agentcore.providers.shell`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from agentcore.caching import CacheTracker
from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers.anthropic.request import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_SETTINGS,
    beta_features,
    betas_in_body,
    breakpoint_on_last_block,
    cache_policy,
    check_settings,
    count_body,
    request_body,
    with_betas,
)
from agentcore.providers.anthropic.stream import StreamState
from agentcore.providers.endpoint import Credentials, Endpoint, Signer
from agentcore.providers.shell import Adapter
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""The Anthropic API origin; requests go to ``{base_url}/v1/messages``."""
ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header value (the current stable API version)."""
COUNT_PATH = "/v1/messages/count_tokens"
"""Where token counts go, under ``base_url``
(:data:`agentcore.providers.anthropic.request.COUNT_DOCS`)."""


def messages_endpoint(anthropic_version: str = ANTHROPIC_VERSION) -> Endpoint:
    """The Messages API at Anthropic's own API (or a gateway that copies
    it): ``POST {base_url}/v1/messages``, the model id in the body, the key
    in ``x-api-key``, ``anthropic_version`` in the ``anthropic-version``
    header (https://platform.claude.com/docs/en/api/messages). A cloud
    that serves the same mapping passes its own :class:`Endpoint`."""
    return Endpoint(
        "/v1/messages",
        headers={
            "anthropic-version": anthropic_version,
            "content-type": "application/json",
            "accept": "text/event-stream",
        },
        key_header=("x-api-key", "{key}"),
    )


class AnthropicModel(Adapter):
    """A :class:`agentcore.Model` over the Anthropic Messages API (streaming).

    Args:
        model: the model id, e.g. ``"claude-sonnet-4-5"``.
        api_key: sent as ``x-api-key``.
        base_url: the API origin; requests go to ``{base_url}/v1/messages``.
        transport, timeout, headers, extra_body, cache_tracker,
            context_window: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`); ``headers`` carry
            ``anthropic-beta`` and gateway headers.
        settings: the model settings of every request (see
            :func:`agentcore.providers.anthropic.request.settings_fields` for
            the mapping), over the adapter's default
            ``ModelSettings(cache=True)`` (automatic prompt caching;
            ``cache=False`` turns it off). ``compaction_trigger``,
            ``clear_tool_uses`` and ``clear_thinking`` turn on the API's
            compaction and context editing, with the beta features they
            need added to the ``anthropic-beta`` header.
        credentials, endpoint: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`); None: the Messages
            API's own endpoint (:func:`messages_endpoint`). Another endpoint
            serves the same mapping elsewhere: the model id in the path,
            ``anthropic_version`` in the body
            (``Endpoint("/v1/projects/P/locations/L/publishers/anthropic/models/{model}:streamRawPredict",
            body={"anthropic_version": "vertex-2023-10-16"}, omit=("model",))``).
        max_tokens: the output token cap when ``Request.max_output_tokens``
            is None (the API requires one).
        anthropic_version: the ``anthropic-version`` header of the default
            endpoint (an ``endpoint`` says its own version).

    Raises:
        ConfigError: a ``max_tokens`` that is not a positive int, ``settings``
            that set a field the API does not support (``seed``), and as
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
        credentials: Credentials | Signer | None = None,
        endpoint: Endpoint | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        anthropic_version: str = ANTHROPIC_VERSION,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0:
            raise ConfigError(f"max_tokens must be a positive int, got {max_tokens!r}")
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
            endpoint=endpoint or messages_endpoint(anthropic_version),
            default_settings=DEFAULT_SETTINGS,
        )
        check_settings(self._settings)
        self._max_tokens = max_tokens

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Stream one step (see :class:`agentcore.Model`).

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive; a
            ``reasoning``, ``tool-call`` or ``provider-item`` (compaction)
            part as each block completes; then one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, for a history or settings the
                API would refuse (see
                :func:`agentcore.providers.anthropic.request.request_body`).
            ModelError: an HTTP error status, an ``error`` event, a transport
                failure, a timeout, a stream cut before the step completed or
                holding a second message.
            Canceled: ``ctx`` was cancelled.
        """
        headers = self._request_headers(request)
        sent: list[Any] = []
        body = self._step_body(request, headers, sent)
        headers = with_betas(headers, beta_features(body))  # compaction, context editing
        if self._betas_in_body:
            headers, body = betas_in_body(headers, body)
        policy = cache_policy(self._settings.merged(request.settings), self._model, body)
        prompt = self._digests.fingerprint(body.get("tools"), body.get("system"), request.messages, sent)
        state = StreamState(self._origin, stream_tool_input=request.stream_tool_input)
        yield from self._stream(body, headers, state, prompt, policy, ctx)

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """``POST /v1/messages/count_tokens``
        (https://platform.claude.com/docs/en/build-with-claude/token-counting;
        free, with its own rate limit) with the step's own body (the same
        mapping, settings, thinking and cache control; the adapter's headers
        and betas go with it) less what the endpoint does not take
        (:func:`agentcore.providers.anthropic.request.count_body`). The API
        calls its count an estimate that may differ from the usage a little."""
        return COUNT_PATH, count_body(self._step_body(request, self._headers, []))

    def _count_headers(self, body: Mapping[str, Any]) -> Mapping[str, str]:
        """The adapter's headers with the beta features a count body uses
        (compaction and context editing, :func:`beta_features`): the count
        endpoint reads the compaction blocks of the history, and refuses
        ``context_management`` without them."""
        return with_betas(self._headers, beta_features(body))

    def _step_body(self, request: Request, headers: Mapping[str, str], sent: list[Any]) -> dict[str, Any]:
        """The body of a step of ``request`` sent with ``headers``
        (:func:`agentcore.providers.anthropic.request.request_body`: the
        ``interleaved-thinking`` beta among the headers changes it)."""
        beta = "".join(value for name, value in headers.items() if name.lower() == "anthropic-beta")
        body = self._body(
            request_body,
            request,
            sent,
            max_tokens=self._max_tokens,
            interleaved="interleaved-thinking" in beta.lower(),
        )
        return body if self._automatic_caching else breakpoint_on_last_block(body)

    _betas_in_body = False
    """The endpoint takes the beta features in the body's ``anthropic_beta``
    rather than the ``anthropic-beta`` header
    (:func:`agentcore.providers.anthropic.request.betas_in_body`)."""

    _automatic_caching = True
    """The endpoint takes the request-level ``cache_control`` (automatic
    caching); False for a cloud that documents breakpoints on blocks only
    (:func:`agentcore.providers.anthropic.request.breakpoint_on_last_block`)."""
