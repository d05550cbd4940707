"""Vertex AI: Gemini (:class:`VertexGeminiModel`) and Claude
(:class:`VertexAnthropicModel`) at a Google Cloud project's Vertex AI
endpoint, each the existing mapping with Vertex's own
:class:`agentcore.providers.endpoint.Endpoint`.

What Google and Anthropic document:

* The host is ``https://{location}-aiplatform.googleapis.com``; the
  ``global`` location's is ``https://aiplatform.googleapis.com``
  (https://cloud.google.com/vertex-ai/generative-ai/docs/learn/locations,
  "Use the global endpoint"). The model is named in the path:
  ``/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}``
  (https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest-rpc).
* A request is signed in with an OAuth 2 access token in
  ``Authorization: Bearer`` (scope ``cloud-platform``); Vertex refuses API
  keys of the Gemini API. Tokens expire (an hour for a service account's):
  the adapters take a ``credentials`` callable, and
  :func:`agentcore.providers.vertex.credentials.google_credentials` makes one of
  google-auth's credentials.
* Gemini: ``:streamGenerateContent?alt=sse`` takes the Gemini API's
  ``GenerateContentRequest`` and streams its responses
  (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference),
  so :mod:`agentcore.providers.gemini` maps both; a file may be given by its
  Cloud Storage URI (``fileData.fileUri: gs://...``,
  https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Content#FileData),
  which Vertex fetches with the project's access; ``:countTokens`` takes the
  request's ``contents``, ``systemInstruction``, ``tools`` and
  ``generationConfig`` at its top level (not wrapped in a
  ``generateContentRequest`` as the Gemini API's) and answers
  ``totalTokens``
  (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/count-tokens).
* Claude: ``:streamRawPredict`` takes the Messages API's body with
  ``anthropic_version: vertex-2023-10-16`` in it and without ``model`` (the
  path names it) and streams the Messages API's events
  (https://platform.claude.com/docs/en/build-with-claude/claude-on-vertex-ai;
  https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude).
  Model ids carry their version after an ``@``: ``claude-sonnet-4@20250514``.
  Token counts go to the ``count-tokens:rawPredict`` model with ``model`` in
  the body
  (https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/count-tokens).
  Beta features stay in the ``anthropic-beta`` header, as Anthropic's own
  Vertex client sends them (its ``AnthropicVertex`` changes only the path,
  ``model`` and ``anthropic_version``).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from agentcore.caching import CacheTracker
from agentcore.errors import ConfigError
from agentcore.providers.anthropic.model import AnthropicModel
from agentcore.providers.anthropic.request import DEFAULT_MAX_TOKENS
from agentcore.providers.endpoint import Credentials, Endpoint
from agentcore.providers.gemini.model import HEADERS as GEMINI_HEADERS
from agentcore.providers.gemini.model import KEY_HEADER, GeminiModel
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request

ANTHROPIC_VERSION = "vertex-2023-10-16"
"""The ``anthropic_version`` Claude on Vertex AI takes in the body."""
GLOBAL = "global"
"""The location of Vertex AI's global endpoint."""
COUNT_FIELDS = ("contents", "systemInstruction", "tools", "generationConfig")
"""The fields of a step's body Vertex AI's ``:countTokens`` takes."""
_LOCATION = re.compile(r"[a-z][a-z0-9-]{0,62}")
"""A Google Cloud location: ``global``, ``us-central1``, ``europe-west4``."""
_PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]|[a-z0-9.:-]{1,100}")
"""A project id (``my-project-123``), or a project number or domain-scoped id."""


def vertex_base_url(location: str) -> str:
    """The Vertex AI host of ``location``: ``https://{location}-aiplatform.googleapis.com``,
    or ``https://aiplatform.googleapis.com`` for :data:`GLOBAL`."""
    if location == GLOBAL:
        return "https://aiplatform.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


def model_path(project: str, location: str, publisher: str) -> str:
    """``/v1/projects/{project}/locations/{location}/publishers/{publisher}/models``.

    Raises:
        ConfigError: a ``project`` or ``location`` that is not a Google Cloud name.
    """
    if not isinstance(project, str) or not _PROJECT.fullmatch(project):
        raise ConfigError(
            f"project must be a Google Cloud project id (e.g. 'my-project-123'), got {project!r}"
        )
    if not isinstance(location, str) or not _LOCATION.fullmatch(location):
        raise ConfigError(
            f"location must be a Google Cloud location ('global', 'us-central1', ...), got {location!r}"
        )
    return (
        f"/v1/projects/{urllib.parse.quote(project, safe='')}/locations/{location}"
        f"/publishers/{publisher}/models"
    )


def _signed_in(api_key: str | None, credentials: Credentials | None) -> None:
    if not api_key and credentials is None:
        raise ConfigError(
            "Vertex AI needs credentials= (a callable returning an OAuth access token: "
            "agentcore.providers.vertex.credentials.google_credentials(google.auth.default(scopes=["
            "'https://www.googleapis.com/auth/cloud-platform'])[0]))"
        )


def gemini_endpoint(project: str, location: str) -> Endpoint:
    """``:streamGenerateContent?alt=sse`` of a Gemini model in ``project`` at ``location``."""
    path = model_path(project, location, "google") + "/{model}:streamGenerateContent?alt=sse"
    return Endpoint(path, headers=GEMINI_HEADERS, key_header=KEY_HEADER)


def anthropic_endpoint(project: str, location: str) -> Endpoint:
    """``:streamRawPredict`` of a Claude model in ``project`` at ``location``:
    ``anthropic_version`` in the body, ``model`` left out of it."""
    path = model_path(project, location, "anthropic") + "/{model}:streamRawPredict"
    return Endpoint(
        path,
        headers={"content-type": "application/json", "accept": "text/event-stream"},
        key_header=KEY_HEADER,
        body={"anthropic_version": ANTHROPIC_VERSION},
        omit=("model",),
    )


class VertexGeminiModel(GeminiModel):
    """A :class:`agentcore.Model` over Gemini on Vertex AI (the module
    docstring): :class:`agentcore.providers.gemini.GeminiModel`'s mapping at
    ``{base_url}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse``.

    Args:
        model: the model id (``"gemini-2.5-flash"``, ``"gemini-3-pro-preview"``).
        api_key: a Google Cloud API key, sent as ``x-goog-api-key``; or
        credentials: a callable returning an OAuth access token
            (:func:`agentcore.providers.vertex.credentials.google_credentials`).
        base_url: None: the location's host (:func:`vertex_base_url`);
            another root (a private endpoint, a local server).
        project: the Google Cloud project id.
        location: the location (``"global"``, ``"us-central1"``).
        endpoint: None: :func:`gemini_endpoint`; or another.
        stream_arguments: ask Vertex to stream each function call's
            arguments in pieces (``toolConfig.functionCallingConfig.streamFunctionCallArguments``,
            https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/ToolConfig#FunctionCallingConfig;
            Gemini 3 models): sent with requests that offer tools; the pieces
            are assembled into the calls, and stream as ``tool-call-delta``
            parts when the request asks (``Request.stream_tool_input``).
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window: as for :class:`agentcore.providers.gemini.GeminiModel`.

    Raises:
        ConfigError: no ``project`` or ``location``, or one that is not a
            Google Cloud name; neither ``api_key`` nor ``credentials`` (or
            both); and as :class:`agentcore.providers.gemini.GeminiModel` raises.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        transport: Transport | None = None,
        timeout: Timeout | None = None,
        headers: Mapping[str, str] | None = None,
        settings: ModelSettings | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: CacheTracker | None = None,
        context_window: int | None = None,
        credentials: Credentials | None = None,
        endpoint: Endpoint | None = None,
        project: str = "",
        location: str = GLOBAL,
        stream_arguments: bool = False,
    ) -> None:
        default = gemini_endpoint(project, location)
        _signed_in(api_key, credentials)
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url or vertex_base_url(location),
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=credentials,
            endpoint=endpoint or default,
        )
        self._count_path = model_path(project, location, "google") + "/{model}:countTokens"
        self._stream_arguments = stream_arguments

    _cloud_storage = True  # Vertex AI fetches gs:// URIs (the module docstring)

    def _step_body(self, request: Request, sent: list[Any]) -> dict[str, Any]:
        """The Gemini mapping's body, with ``streamFunctionCallArguments``
        when the adapter asks for it and the request offers tools."""
        body = super()._step_body(request, sent)
        if self._stream_arguments and request.tools:
            tool_config = dict(body.get("toolConfig", {}))  # copies: extra_body's own dicts stay as given
            calling = dict(tool_config.get("functionCallingConfig", {}))
            calling["streamFunctionCallArguments"] = True
            body["toolConfig"] = {**tool_config, "functionCallingConfig": calling}
        return body

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """Vertex AI's ``:countTokens`` with the step's :data:`COUNT_FIELDS`
        (the module docstring), whose answer's ``totalTokens`` is the count."""
        body = self._step_body(request, [])
        return self._count_path, {name: body[name] for name in COUNT_FIELDS if name in body}


class VertexAnthropicModel(AnthropicModel):
    """A :class:`agentcore.Model` over Claude on Vertex AI (the module
    docstring): :class:`agentcore.providers.anthropic.AnthropicModel`'s
    mapping at
    ``{base_url}/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:streamRawPredict``.

    Args:
        model: the Vertex AI model id, its version after ``@``
            (``"claude-sonnet-4@20250514"``, ``"claude-3-7-sonnet@20250219"``).
        api_key, credentials, base_url, project, location: as for
            :class:`VertexGeminiModel`.
        endpoint: None: :func:`anthropic_endpoint`; or another.
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window, max_tokens: as for
            :class:`agentcore.providers.anthropic.AnthropicModel`.

    Raises:
        ConfigError: as :class:`VertexGeminiModel` and
            :class:`agentcore.providers.anthropic.AnthropicModel` raise.
    """

    _automatic_caching = False  # the cloud documents cache breakpoints on blocks only

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        transport: Transport | None = None,
        timeout: Timeout | None = None,
        headers: Mapping[str, str] | None = None,
        settings: ModelSettings | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: CacheTracker | None = None,
        context_window: int | None = None,
        credentials: Credentials | None = None,
        endpoint: Endpoint | None = None,
        project: str = "",
        location: str = GLOBAL,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        default = anthropic_endpoint(project, location)
        _signed_in(api_key, credentials)
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url or vertex_base_url(location),
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=credentials,
            endpoint=endpoint or default,
            max_tokens=max_tokens,
        )
        self._count_path = model_path(project, location, "anthropic") + "/count-tokens:rawPredict"

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """``count-tokens:rawPredict`` with the count body of the Messages API
        (``model`` in it), whose answer's ``input_tokens`` is the count."""
        return self._count_path, super()._count_request(request)[1]
