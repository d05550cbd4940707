"""The Amazon Bedrock models, both reached through the AWS layer
(:mod:`agentcore.providers.aws`: the Region's URL, SigV4 or a Bedrock API
key, the event-stream framing), both counting with Bedrock's CountTokens
(:data:`COUNT_PATH`).

:class:`BedrockConverseModel`: the Converse mapping
(:mod:`agentcore.providers.bedrock.request`,
:mod:`agentcore.providers.bedrock.stream`) in the shell every adapter shares
(:mod:`agentcore.providers.shell`), for any model Bedrock serves through
Converse.

:class:`BedrockAnthropicModel`: Claude through
InvokeModelWithResponseStream
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html),
whose body is an Anthropic Messages request and whose stream carries the
Messages API's events, so the Anthropic mapping
(:mod:`agentcore.providers.anthropic`) serves it unchanged: thinking and
its signatures, prompt caching, tool use, the server tools Bedrock passes
on. What Bedrock's "Anthropic Claude Messages API" page
(https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html)
changes:

* the model id (or an inference profile id, ``us.anthropic...``, or an
  ARN) goes in the path, percent-encoded: not ``model`` in the body;
* ``anthropic_version`` is ``bedrock-2023-05-31``, in the body;
* beta features go in the body's ``anthropic_beta`` list, not in an
  ``anthropic-beta`` header;
* there is no ``stream`` field (the operation streams);
* each event arrives base64-encoded in a ``chunk`` of an AWS event stream
  (:func:`agentcore.providers.aws.invoke_events`), and ``message_stop``
  carries ``amazon-bedrock-invocationMetrics``, which is passed over: the
  usage is the Messages API's own (``message_start`` and
  ``message_delta``), as billed.

Requests are signed with SigV4 (botocore credentials) or carry a Bedrock
API key as ``Authorization: Bearer`` (:func:`agentcore.providers.aws.bedrock_signer`).
"""

from __future__ import annotations

import base64
from collections.abc import Generator, Mapping
from typing import Any

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.context import Context
from agentcore.providers import aws
from agentcore.providers.anthropic.model import AnthropicModel
from agentcore.providers.anthropic.request import DEFAULT_MAX_TOKENS, beta_features, betas_in_body, with_betas
from agentcore.providers.bedrock.request import (
    CACHE_TTL_SECONDS,
    cache_points,
    check_settings,
    count_body,
    request_body,
)
from agentcore.providers.bedrock.stream import StreamState
from agentcore.providers.endpoint import Endpoint
from agentcore.providers.shell import Adapter, encode_body
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart

COUNT_PATH = "/model/{model}/count-tokens"
"""Where Bedrock counts a request's input tokens
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html);
the answer's ``inputTokens`` is the count."""

CONVERSE_ENDPOINT = Endpoint(
    "/model/{model}/converse-stream",
    headers={"content-type": "application/json", "accept": aws.EVENT_STREAM},
    framing=aws.event_stream,
    media_type=aws.EVENT_STREAM,
)
"""Where a Converse step goes
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html):
the model id (or inference profile, or ARN) percent-encoded in the path, a
Bedrock API key as ``Authorization: Bearer``
(https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html),
the answer an AWS event stream."""


class BedrockConverseModel(Adapter):
    """A :class:`agentcore.Model` over Amazon Bedrock's Converse API,
    ``POST /model/{modelId}/converse-stream``
    (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html):
    any model Bedrock serves through Converse (Claude, Nova, Llama, Mistral,
    gpt-oss, ...). Reasoning streams as reasoning and goes back with its
    signature (or redacted data) to the same endpoint, cache points go where
    the settings and :func:`agentcore.cache_point` parts ask, and
    :meth:`count_tokens` asks Bedrock's ``CountTokens``. The request and
    stream modules' docstrings hold the mapping and its sources.

    Args:
        model: the model id or inference profile id
            (``"us.anthropic.claude-sonnet-4-20250514-v1:0"``,
            ``"openai.gpt-oss-120b-1:0"``, ``"us.amazon.nova-2-lite-v1:0"``),
            or an ARN; its family decides the reasoning fields
            (:func:`agentcore.providers.bedrock.request.settings_fields`).
        region: the AWS Region (``"us-east-1"``): requests go to
            ``https://bedrock-runtime.{region}.amazonaws.com`` and are signed
            for it.
        base_url: another root (a VPC endpoint, a gateway, a local server),
            instead of the Region's; with ``aws_credentials``, ``region``
            (or a Region in its host) says the Region to sign for.
        api_key: a Bedrock API key, sent as ``Authorization: Bearer``.
        aws_credentials: botocore credentials, for SigV4
            (``botocore.session.get_session().get_credentials()``: the
            standard chain; refreshable ones refresh themselves), or a
            :class:`agentcore.providers.endpoint.Signer`.
        transport, timeout, headers, extra_body, cache_tracker,
            context_window, endpoint: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`).
        settings: the model's :class:`agentcore.ModelSettings`, for every
            request (:func:`agentcore.providers.bedrock.request.settings_fields`).

    Raises:
        ConfigError: botocore is missing (``pip install 'agentcore[aws]'``);
            neither ``region`` nor ``base_url``, a region that is not an AWS
            Region code; neither or both of ``api_key`` and
            ``aws_credentials``, credentials without a Region to sign for;
            ``settings Converse cannot take for the
            model (:func:`agentcore.providers.bedrock.request.check_settings`);
            and as :class:`agentcore.providers.shell.Adapter` says.
    """

    _count_field = "inputTokens"  # the CountTokens response (COUNT_PATH's page)

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        aws_credentials: Any = None,
        transport: Transport | None = None,
        timeout: Timeout | None = None,
        headers: Mapping[str, str] | None = None,
        settings: ModelSettings | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: CacheTracker | None = None,
        context_window: int | None = None,
        endpoint: Endpoint | None = None,
    ) -> None:
        signer = aws.bedrock_signer(api_key, aws_credentials, region, base_url)
        super().__init__(
            model,
            api_key=api_key,
            base_url=aws.bedrock_base_url(region, base_url),
            transport=transport,
            timeout=timeout,
            headers=headers,
            settings=settings,
            extra_body=extra_body,
            cache_tracker=cache_tracker,
            context_window=context_window,
            credentials=signer,
            endpoint=endpoint or CONVERSE_ENDPOINT,
        )
        check_settings(self._settings, model)

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        """Run one streamed Converse step and yield its parts.

        Yields:
            ``reasoning-delta`` parts as reasoning streams and a
            ``reasoning`` part where each reasoning block ends,
            ``text-delta`` parts, ``tool-call`` parts as each tool use ends
            (``tool-call-delta`` parts before with
            ``Request.stream_tool_input``), ``citation`` parts,
            ``provider-item`` parts for a server tool's blocks, then exactly
            one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, a server tool, an output
                schema, a history, a file or a setting Converse would refuse
                (:func:`agentcore.providers.bedrock.request.request_body`).
            ModelError: a non-200 status (classified by its
                ``x-amzn-ErrorType``: ``ThrottlingException`` rate-limited,
                ``ValidationException`` invalid-request, ...), an exception
                in the stream, a stop reason that is an error, a transport
                failure, or a stream cut before ``messageStop``.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Any] = []
        body = self._body(request_body, request, sent)
        prompt = self._digests.fingerprint(
            (body.get("toolConfig") or {}).get("tools"), body.get("system"), request.messages, sent
        )
        # Bedrock reports cache writes; a prefix lives five minutes (the prompt caching page)
        policy = CachePolicy(
            "Bedrock", CACHE_TTL_SECONDS if cache_points(body) else None, reports_writes=True
        )
        state = StreamState(self._origin, stream_tool_input=request.stream_tool_input)
        yield from self._stream(body, self._request_headers(request), state, prompt, policy, ctx)

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """``CountTokens`` with the step's messages, system prompt, tools and
        model fields as its ``converse`` input, whose answer's ``inputTokens``
        is the count (Bedrock counts for the models it documents there; for
        another, its 400 makes :meth:`count_tokens` estimate)."""
        body = self._body(request_body, request, [])
        return COUNT_PATH, count_body(body)


BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
"""The ``anthropic_version`` Bedrock requires in the body (the Claude
Messages API page in the module docstring)."""

INVOKE_ENDPOINT = Endpoint(
    "/model/{model}/invoke-with-response-stream",
    headers={"content-type": "application/json", "accept": aws.EVENT_STREAM},
    body={"anthropic_version": BEDROCK_ANTHROPIC_VERSION},
    omit=("model", "stream"),
    framing=aws.invoke_events,
    media_type=aws.EVENT_STREAM,
)
"""InvokeModelWithResponseStream with an Anthropic Messages body."""


class BedrockAnthropicModel(AnthropicModel):
    """A :class:`agentcore.Model` over Claude on Amazon Bedrock
    (InvokeModelWithResponseStream with the Anthropic mapping: the module
    docstring).

    Args:
        model: the model id (``anthropic.claude-sonnet-4-5-20250929-v1:0``),
            an inference profile id (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
            which newer models require) or an ARN.
        region: the AWS Region (``us-east-1``); requests go to
            ``https://bedrock-runtime.{region}.amazonaws.com`` and are
            signed for it.
        base_url: another root (a VPC endpoint, a gateway, a local server),
            instead of the Region's; with ``aws_credentials``, ``region``
            (or a Region in its host) says the Region to sign for.
        api_key: a Bedrock API key, sent as ``Authorization: Bearer``; or
        aws_credentials: botocore credentials
            (``botocore.session.get_session().get_credentials()``: the
            standard chain), each request signed with SigV4
            (:class:`agentcore.providers.aws.SigV4`); or a
            :class:`agentcore.providers.endpoint.Signer`.
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window, max_tokens: as for
            :class:`agentcore.providers.anthropic.AnthropicModel`; an
            ``anthropic-beta`` header is sent as the body's ``anthropic_beta``.
        endpoint: None (:data:`INVOKE_ENDPOINT`), or another.

    The adapter reads no environment: AWS's SDKs read a Bedrock API key
    from ``AWS_BEARER_TOKEN_BEDROCK``; pass it as ``api_key``.

    Raises:
        ConfigError: botocore is not installed (``pip install
            'agentcore[aws]'``); no ``region`` nor ``base_url``, a region
            that is not one; no ``api_key`` nor ``aws_credentials`` (or
            both), credentials without a Region to sign for; and as
            :class:`agentcore.providers.anthropic.AnthropicModel` raises.
    """

    _automatic_caching = False  # the cloud documents cache breakpoints on blocks only
    _betas_in_body = True  # anthropic_beta, not the anthropic-beta header (the module docstring)

    _count_field = "inputTokens"

    def __init__(
        self,
        model: str,
        *,
        region: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        aws_credentials: Any = None,
        transport: Transport | None = None,
        timeout: Timeout | None = None,
        headers: Mapping[str, str] | None = None,
        settings: ModelSettings | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: CacheTracker | None = None,
        context_window: int | None = None,
        endpoint: Endpoint | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        signer = aws.bedrock_signer(api_key, aws_credentials, region, base_url)
        root = aws.bedrock_base_url(region, base_url)
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
            credentials=signer,
            endpoint=endpoint or INVOKE_ENDPOINT,
            max_tokens=max_tokens,
        )

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """Bedrock's CountTokens (``POST /model/{model}/count-tokens``,
        https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html)
        with the step's InvokeModel body, base64-encoded, as its
        ``input.invokeModel.body``; the answer's ``inputTokens`` is the count."""
        headers = with_betas(self._headers, [])
        body = self._step_body(request, headers, [])
        _, body = betas_in_body(with_betas(headers, beta_features(body)), body)
        encoded = base64.b64encode(encode_body(INVOKE_ENDPOINT.request_body(body))).decode("ascii")
        return COUNT_PATH, {"input": {"invokeModel": {"body": encoded}}}

    def _count_headers(self, body: Mapping[str, Any]) -> Mapping[str, str]:
        """The adapter's headers, for JSON (the betas are in the body)."""
        return betas_in_body(self._headers, {})[0]
