"""The Gemini API adapter, :class:`GeminiModel`: the request mapping
(:mod:`agentcore.providers.gemini.request`) and the stream mapping
(:mod:`agentcore.providers.gemini.stream`) run in the shell every adapter
shares (:mod:`agentcore.providers.shell`).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers import attachments
from agentcore.providers.endpoint import Credentials, Endpoint
from agentcore.providers.gemini.request import check_settings, count_body, request_body
from agentcore.providers.gemini.stream import StreamState
from agentcore.providers.shell import Adapter
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
"""The Gemini API's root (https://ai.google.dev/api)."""
HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}
KEY_HEADER = ("x-goog-api-key", "{key}")
"""The API key's header (https://ai.google.dev/gemini-api/docs/api-key)."""


STREAM_ENDPOINT = Endpoint(
    "/v1beta/models/{model}:streamGenerateContent?alt=sse", headers=HEADERS, key_header=KEY_HEADER
)
"""Where a step goes (https://ai.google.dev/api/generate-content), the model
id percent-encoded in the path."""

COUNT_PATH = "/v1beta/models/{model}:countTokens"
"""Where a count goes (https://ai.google.dev/api/tokens)."""


class GeminiModel(Adapter):
    """A :class:`agentcore.Model` over the Gemini API's
    ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``
    (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent),
    with the key in ``x-goog-api-key``. Thoughts stream as reasoning
    (``ModelSettings(thinking=True)`` asks for them), thought signatures go
    back where Gemini 3 requires them, and :meth:`count_tokens` asks
    ``:countTokens``. The request and stream modules' docstrings hold the
    mapping and its sources.

    Args:
        model: the model id (``"gemini-2.5-flash"``,
            ``"gemini-3-pro-preview"``); a ``models/`` before it (the
            resource name ListModels gives) is dropped.
        api_key: sent as ``x-goog-api-key`` (a key from Google AI Studio).
        base_url: the API root; requests go to
            ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``.
        transport, timeout, headers, extra_body, cache_tracker,
            context_window, credentials, endpoint: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`).
        settings: the model's :class:`agentcore.ModelSettings`, for every
            request (:func:`agentcore.providers.gemini.request.settings_fields`).

    Raises:
        ConfigError: ``settings`` the API cannot take for the model
            (:func:`agentcore.providers.gemini.request.check_settings`), a
            ``base_url`` ending in ``/v1beta`` (the root goes there), and
            as :class:`agentcore.providers.shell.Adapter` says for the options
            every adapter takes.
    """

    _count_field = "totalTokens"  # https://ai.google.dev/api/tokens#response-body
    _cloud_storage = False
    """Whether the endpoint fetches a file by its Cloud Storage URI (``gs://``):
    Vertex AI's does; the Gemini API takes one only once registered with its
    Files API (https://ai.google.dev/gemini-api/docs/file-input-methods)."""

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
    ) -> None:
        if isinstance(model, str):
            model = model.removeprefix("models/")  # the resource name ListModels gives
        if isinstance(base_url, str) and base_url.rstrip("/").endswith("/v1beta") and endpoint is None:
            raise ConfigError(
                f"base_url is the API's root, without /v1beta (the adapter adds the path): got {base_url!r}"
            )
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
            endpoint=endpoint or STREAM_ENDPOINT,
        )
        check_settings(self._settings, model)

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Run one streamed generation and yield its parts.

        Yields:
            ``reasoning-delta`` parts as thoughts stream and a ``reasoning``
            part where each thought block ends (and one holding a text
            part's signature), ``text-delta`` parts, ``tool-call`` parts
            (whole, as Gemini sends them), ``provider-item`` parts for the
            parts kept as they came, then exactly one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, a server tool, a history, a
                tool, a file or a setting the API would refuse
                (:func:`agentcore.providers.gemini.request.request_body`).
            ModelError: a non-200 status (a 429 with its ``RetryInfo``
                delay), an error inside the stream, a finish reason that is
                an error, a transport failure, or a stream cut before the
                finish reason.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Any] = []
        body = self._step_body(request, sent)
        system = body.get("systemInstruction")
        prompt = self._digests.fingerprint(body.get("tools"), system, request.messages, sent)
        policy = CachePolicy("Gemini", None)  # implicit caching: nothing asked, no miss claimed
        state = StreamState(self._origin, stream_tool_input=request.stream_tool_input)
        yield from self._stream(body, self._request_headers(request), state, prompt, policy, ctx)

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """``:countTokens`` with the step's body as its ``generateContentRequest``
        (https://ai.google.dev/api/tokens), whose answer's ``totalTokens`` is
        the count."""
        return COUNT_PATH, count_body(self._step_body(request, []), self._model)

    def _step_body(self, request: Request, sent: list[Any]) -> dict[str, Any]:
        """The body of a step of ``request``
        (:func:`agentcore.providers.gemini.request.request_body`), after
        refusing a Cloud Storage URI where the endpoint fetches none.

        Raises:
            ConfigError: as ``request_body``; a file given by a ``gs://`` URI
                and the endpoint does not take one (:attr:`_cloud_storage`).
        """
        if not self._cloud_storage:
            for index, message in enumerate(request.messages):
                files = [(attachments.place(index), f) for f in message.files]
                files += [(attachments.place(index, r), f) for r in message.tool_results for f in r.files]
                for where, file in files:
                    attachments.check_cloud_storage(file, where, "the Gemini API")
        return self._body(request_body, request, sent)
