"""The Bedrock models.

:class:`BedrockAnthropicModel`: Claude on Amazon Bedrock through
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
from collections.abc import Iterator, Mapping
from typing import Any

from agentcore import caching
from agentcore.caching import CacheTracker
from agentcore.context import Context
from agentcore.providers import aws
from agentcore.providers.anthropic.model import AnthropicModel
from agentcore.providers.anthropic.request import BETA_HEADER, DEFAULT_MAX_TOKENS, beta_features, with_betas
from agentcore.providers.endpoint import Endpoint
from agentcore.providers.shell import StateMachine, encode_body
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart

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


def betas_in_body(
    headers: Mapping[str, str], body: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, Any]]:
    """``headers`` without their ``anthropic-beta`` header, and ``body`` with
    its features in ``anthropic_beta`` (after those already there, each
    once), as Bedrock takes them."""
    kept = {name: value for name, value in headers.items() if name.lower() != BETA_HEADER}
    named = [
        f.strip() for name, value in headers.items() if name.lower() == BETA_HEADER for f in value.split(",")
    ]
    features = list(dict.fromkeys([*body.get("anthropic_beta", ()), *(f for f in named if f)]))
    return kept, ({**body, "anthropic_beta": features} if features else dict(body))


COUNT_PATH = "/model/{model}/count-tokens"
"""Where Bedrock counts a request's input tokens."""


class BedrockAnthropicModel(AnthropicModel):
    """A :class:`agentcore.Model` over Claude on Amazon Bedrock
    (InvokeModelWithResponseStream with the Anthropic mapping: the module
    docstring).

    Args:
        model: the model id (``anthropic.claude-sonnet-4-5-20250929-v1:0``),
            an inference profile id (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
            which newer models require) or an ARN.
        region: the AWS Region (``us-east-1``); requests go to
            ``https://bedrock-runtime.{region}.amazonaws.com``; or
        base_url: another root (a VPC endpoint, a gateway, a local server).
        api_key: a Bedrock API key, sent as ``Authorization: Bearer``; or
        aws_credentials: botocore credentials
            (``botocore.session.get_session().get_credentials()``: the
            standard chain), each request signed with SigV4
            (:class:`agentcore.providers.aws.SigV4`); or a
            :class:`agentcore.providers.endpoint.Signer` (``SigV4(region,
            credentials)`` for a ``base_url`` naming no Region).
        transport, timeout, headers, settings, extra_body, cache_tracker,
            context_window, max_tokens: as for
            :class:`agentcore.providers.anthropic.AnthropicModel`; an
            ``anthropic-beta`` header is sent as the body's ``anthropic_beta``.
        endpoint: None (:data:`INVOKE_ENDPOINT`), or another.

    The adapter reads no environment: AWS's SDKs read a Bedrock API key
    from ``AWS_BEARER_TOKEN_BEDROCK``; pass it as ``api_key``.

    Raises:
        ConfigError: botocore is not installed (``pip install
            'agentcore[aws]'``); no ``region`` nor ``base_url`` (or both), a
            region that is not one; no ``api_key`` nor ``aws_credentials``
            (or both); and as :class:`agentcore.providers.anthropic.AnthropicModel`
            raises.
    """

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
        aws.require()
        root = aws.bedrock_base_url(region, base_url)
        signer = aws.bedrock_signer(api_key, aws_credentials, region, base_url)
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

    def _stream(
        self,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        state: StateMachine,
        prompt: caching.Fingerprint,
        policy: caching.CachePolicy,
        ctx: Context,
    ) -> Iterator[StreamPart]:
        """The shell's stream, the beta features moved into the body (:func:`betas_in_body`)."""
        headers, body = betas_in_body(headers, body)
        return super()._stream(body, headers, state, prompt, policy, ctx)

    def _count_request(self, request: Request) -> tuple[str, dict[str, Any]]:
        """Bedrock's CountTokens (``POST /model/{model}/count-tokens``,
        https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html)
        with the step's InvokeModel body, base64-encoded, as its
        ``input.invokeModel.body``; the answer's ``inputTokens`` is the count."""
        headers = with_betas(self._headers, [])
        body = self._step_body(request, headers, [])
        _, body = betas_in_body(with_betas(headers, beta_features(body)), body)
        invoke = {name: value for name, value in body.items() if name not in ("model", "stream")}
        invoke["anthropic_version"] = BEDROCK_ANTHROPIC_VERSION
        encoded = base64.b64encode(encode_body(invoke)).decode("ascii")
        return COUNT_PATH, {"input": {"invokeModel": {"body": encoded}}}

    def _count_headers(self, body: Mapping[str, Any]) -> Mapping[str, str]:
        """The adapter's headers, for JSON (the betas are in the body)."""
        return betas_in_body(self._headers, {})[0]
