"""Azure OpenAI: the Chat Completions and Responses mappings at an Azure
OpenAI resource's v1 endpoint, :class:`AzureOpenAIChatModel` and
:class:`AzureOpenAIResponsesModel`.

What Azure documents (https://learn.microsoft.com/en-us/azure/foundry/openai/api-version-lifecycle,
"API evolution" and "Code changes", and the REST reference,
https://learn.microsoft.com/azure/ai-foundry/openai/reference,
"Authentication"):

* The v1 endpoint is ``https://{resource}.openai.azure.com/openai/v1/``:
  the same paths as OpenAI's (``/chat/completions``, ``/responses``), no
  ``api-version`` parameter.
* The ``model`` field of the body names the **deployment** (the name given
  when the model was deployed), not the model.
* A key goes in the ``api-key`` header; a Microsoft Entra ID token goes in
  ``Authorization: Bearer`` (the REST reference, "Authentication"; the
  identity needs the "Cognitive Services OpenAI User" role), asked for with
  the scope :data:`ENTRA_SCOPE`.
* Prompt caching (:data:`CACHE_DOCS`) is automatic for GPT-4o and newer
  deployments, with OpenAI's rules: :func:`cache_policy`.

The streams are OpenAI's, so the OpenAI mappings read them; Azure adds a
first Chat Completions chunk of prompt filter results (no choices, an
empty id) and ``content_filter_results`` on the choices, which the mapping
passes over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.errors import ConfigError
from agentcore.providers.endpoint import Credentials, Endpoint
from agentcore.providers.openai.chat.model import OpenAIChatModel
from agentcore.providers.openai.responses.model import OpenAIResponsesModel
from agentcore.providers.openai.shared import (
    CACHE_READ_GRANULARITY,
    HEADERS,
    MIN_CACHEABLE_TOKENS,
    RETENTION_SECONDS,
)
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport

KEY_HEADER = ("api-key", "{key}")
"""The header an Azure OpenAI key goes in (the REST reference, "Authentication")."""
TOKEN_HEADER = ("Authorization", "Bearer {token}")
"""The header a Microsoft Entra ID token goes in (the REST reference,
"Authentication"; https://learn.microsoft.com/en-us/azure/ai-services/authentication,
"Authentication headers": ``Authorization: Bearer <TOKEN>``)."""
ENTRA_SCOPE = "https://cognitiveservices.azure.com/.default"
"""The scope an Entra ID token for Azure OpenAI is asked for: Microsoft's
Entra ID page for Azure OpenAI
(https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/managed-identity)
and its page on moving between OpenAI and Azure OpenAI
(https://learn.microsoft.com/en-us/azure/developer/ai/how-to/switching-endpoints)
both sign the v1 endpoint in with azure-identity's
``get_bearer_token_provider(DefaultAzureCredential(), ENTRA_SCOPE)``, whose
token the OpenAI client sends as ``Authorization: Bearer``."""
CACHE_DOCS = "https://learn.microsoft.com/en-us/azure/foundry/openai/how-to/prompt-caching"
"""Azure OpenAI's prompt caching: automatic for GPT-4o and newer; prompts of
1,024 tokens or more whose first 1,024 tokens match; hits in steps of 128
tokens; in memory, caches "typically cleared within 5 to 10 minutes of
inactivity" (always within an hour of their last use); with
``prompt_cache_retention: "24h"`` up to 24 hours; the hits in
``cached_tokens``. These are OpenAI's figures
(:mod:`agentcore.providers.openai.shared`)."""
AZURE_OPENAI_HOST = ".openai.azure.com"
"""How an Azure OpenAI resource's host ends (``{resource}.openai.azure.com``)."""
PROVIDER = "Azure OpenAI"
"""The provider's name in a step's cache report."""
CHAT_ENDPOINT = Endpoint(
    "/chat/completions", headers=HEADERS, key_header=KEY_HEADER, token_header=TOKEN_HEADER
)
"""Chat Completions on the v1 endpoint: the deployment in the body's ``model``."""
RESPONSES_ENDPOINT = Endpoint("/responses", headers=HEADERS, key_header=KEY_HEADER, token_header=TOKEN_HEADER)
"""The Responses API on the v1 endpoint: the deployment in the body's ``model``."""

_RESOURCE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?")
"""An Azure resource name: letters, digits and hyphens, neither first nor last."""


def base_url_of(resource: str | None, base_url: str | None) -> str:
    """The v1 root of ``resource`` (``https://{resource}.openai.azure.com/openai/v1``),
    or ``base_url`` (another host: an Azure AI Foundry resource's
    ``https://{name}.services.ai.azure.com/openai/v1``, a gateway, a local
    server).

    Raises:
        ConfigError: neither or both given, or a resource that is not a name.
    """
    if resource is None and base_url is None:
        raise ConfigError(
            "Azure OpenAI needs resource= (the Azure OpenAI resource's name) or base_url= "
            "(https://RESOURCE.openai.azure.com/openai/v1)"
        )
    if resource is not None and base_url is not None:
        raise ConfigError("pass resource= or base_url=, not both (each says where the resource is)")
    if base_url is not None:
        return base_url
    if not isinstance(resource, str) or not _RESOURCE.fullmatch(resource):
        raise ConfigError(
            f"resource must be an Azure resource name (letters, digits and hyphens), got {resource!r}; "
            "pass a URL as base_url="
        )
    return f"https://{resource}.openai.azure.com/openai/v1"


def cache_policy(settings: ModelSettings, origin: str) -> CachePolicy:
    """What a request to ``origin`` asks of Azure OpenAI's prompt cache,
    named :data:`PROVIDER` in the step's cache report: at an Azure OpenAI
    resource (a host ending :data:`AZURE_OPENAI_HOST`), :data:`CACHE_DOCS`'s
    rules (the TTL of the retention asked for, in memory by default, the
    shorter bound; the 1,024-token minimum; reads in steps of 128; the whole
    prompt cached, writes not reported). Another host (a Foundry resource, a
    gateway) may serve models that cache otherwise, or not at all: no cache
    miss is claimed for it (the report still compares prefixes)."""
    if not origin.endswith(AZURE_OPENAI_HOST):
        return CachePolicy(PROVIDER, None)
    ttl = RETENTION_SECONDS[settings.cache_retention or "in_memory"]
    return CachePolicy(
        PROVIDER, ttl, MIN_CACHEABLE_TOKENS, reports_writes=False, granularity=CACHE_READ_GRANULARITY
    )


def _signed_in(api_key: str | None, credentials: Credentials | None) -> None:
    """Raise unless one way to sign in is given."""
    if not api_key and credentials is None:
        raise ConfigError(
            "Azure OpenAI needs api_key= (the resource's key, sent as api-key) or credentials= (a callable "
            "returning a Microsoft Entra ID token, e.g. azure.identity.get_bearer_token_provider("
            f"DefaultAzureCredential(), {ENTRA_SCOPE!r}))"
        )


class AzureOpenAIChatModel(OpenAIChatModel):
    """A :class:`agentcore.Model` over Chat Completions at an Azure OpenAI
    resource's v1 endpoint (the module docstring).

    Args:
        model: the deployment name (the body's ``model``).
        api_key: the resource's key, sent as ``api-key``; or
        credentials: a callable returning a Microsoft Entra ID token
            (:data:`agentcore.providers.endpoint.Credentials`; sent as
            ``Authorization: Bearer``): azure-identity's
            ``get_bearer_token_provider(DefaultAzureCredential(), ENTRA_SCOPE)``.
        resource: the Azure OpenAI resource's name; requests go to
            ``https://{resource}.openai.azure.com/openai/v1/chat/completions``; or
        base_url: the v1 root of another host.
        endpoint: None (the v1 endpoint, :data:`CHAT_ENDPOINT`), or another.
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window, system_role, max_tokens_field, include_usage,
            reasoning_format: as for
            :class:`agentcore.providers.openai.OpenAIChatModel` (the
            reasoning models want ``system_role="developer"`` and
            ``max_tokens_field="max_completion_tokens"``).

    Raises:
        ConfigError: no ``resource`` nor ``base_url`` (or both), no
            ``api_key`` nor ``credentials`` (or both), and as
            :class:`agentcore.providers.openai.OpenAIChatModel` raises.
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
        resource: str | None = None,
        system_role: str = "system",
        max_tokens_field: str = "max_tokens",
        include_usage: bool = True,
        reasoning_format: str | None = None,
    ) -> None:
        root = base_url_of(resource, base_url)
        _signed_in(api_key, credentials)
        super().__init__(
            model,
            api_key=api_key,
            base_url=root,
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=credentials,
            endpoint=endpoint or CHAT_ENDPOINT,
            system_role=system_role,
            max_tokens_field=max_tokens_field,
            include_usage=include_usage,
            reasoning_format=reasoning_format,
        )

    def _cache_policy(self, settings: ModelSettings) -> CachePolicy:
        """Azure OpenAI's prompt cache rules (:func:`cache_policy`)."""
        return cache_policy(settings, self._origin)


class AzureOpenAIResponsesModel(OpenAIResponsesModel):
    """A :class:`agentcore.Model` over the Responses API at an Azure OpenAI
    resource's v1 endpoint (the module docstring: the page's example is a
    Responses request whose ``model`` is the deployment).

    Args:
        model: the deployment name (the body's ``model``).
        api_key, credentials, resource, base_url: as for
            :class:`AzureOpenAIChatModel`; requests go to
            ``https://{resource}.openai.azure.com/openai/v1/responses``.
        endpoint: None (the v1 endpoint, :data:`RESPONSES_ENDPOINT`), or another.
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window, reasoning, reasoning_summary, system_role,
            server_state: as for
            :class:`agentcore.providers.openai.OpenAIResponsesModel`
            (``reasoning=False`` for a deployment of a model without
            reasoning).

    Raises:
        ConfigError: as :class:`AzureOpenAIChatModel` and
            :class:`agentcore.providers.openai.OpenAIResponsesModel` raise.
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
        resource: str | None = None,
        reasoning: bool = True,
        reasoning_summary: str | None = "auto",
        system_role: str = "instructions",
        server_state: bool = False,
    ) -> None:
        root = base_url_of(resource, base_url)
        _signed_in(api_key, credentials)
        super().__init__(
            model,
            api_key=api_key,
            base_url=root,
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=credentials,
            endpoint=endpoint or RESPONSES_ENDPOINT,
            reasoning=reasoning,
            reasoning_summary=reasoning_summary,
            system_role=system_role,
            server_state=server_state,
        )

    def _cache_policy(self, settings: ModelSettings) -> CachePolicy:
        """Azure OpenAI's prompt cache rules (:func:`cache_policy`)."""
        return cache_policy(settings, self._origin)
