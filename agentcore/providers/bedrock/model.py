"""The Amazon Bedrock adapters: :class:`BedrockConverseModel`, the Converse
mapping (:mod:`agentcore.providers.bedrock.request`,
:mod:`agentcore.providers.bedrock.stream`) in the shell every adapter shares
(:mod:`agentcore.providers.shell`), reached through the AWS layer
(:mod:`agentcore.providers.aws`: the URL, SigV4, the event-stream framing).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from agentcore.caching import CachePolicy, CacheTracker
from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers import aws
from agentcore.providers.bedrock.request import (
    CACHE_TTL_SECONDS,
    cache_points,
    check_settings,
    count_body,
    request_body,
)
from agentcore.providers.bedrock.stream import StreamState
from agentcore.providers.endpoint import Endpoint, Signer
from agentcore.providers.shell import Adapter
from agentcore.settings import ModelSettings
from agentcore.transport import Timeout, Transport
from agentcore.types import Request, StreamPart

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

COUNT_PATH = "/model/{model}/count-tokens"
"""Where a count goes (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html)."""


def bedrock_signer(
    region: str | None, base_url: str | None, api_key: str | None, aws_credentials: Any
) -> Signer | None:
    """The signer of a Bedrock model's options: SigV4 over ``aws_credentials``
    in ``region``, or None for an ``api_key`` (sent as a bearer key).

    Raises:
        ConfigError: botocore is missing (``pip install 'agentcore[aws]'``);
            both or neither of ``api_key`` and ``aws_credentials``;
            ``aws_credentials`` without a ``region`` (SigV4 signs for one:
            with ``base_url`` pass it too) or that are not botocore's.
    """
    aws.require()
    if api_key and aws_credentials is not None:
        raise ConfigError("pass api_key (a Bedrock API key) or aws_credentials (SigV4), not both")
    if not api_key and aws_credentials is None:
        raise ConfigError(
            "Bedrock needs api_key= (a Bedrock API key) or aws_credentials= (botocore credentials: "
            "botocore.session.get_session().get_credentials())"
        )
    if aws_credentials is None:
        return None
    if region is None:
        raise ConfigError("aws_credentials are signed for a region (SigV4): pass region= with base_url=")
    return aws.SigV4(region, aws_credentials)


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
            instead of the Region's; with ``aws_credentials``, pass ``region``
            too (the signature names it).
        api_key: a Bedrock API key, sent as ``Authorization: Bearer``.
        aws_credentials: botocore credentials, for SigV4
            (``botocore.session.get_session().get_credentials()``: the
            standard chain; refreshable ones refresh themselves).
        transport, timeout, headers, extra_body, cache_tracker,
            context_window, endpoint: as for every adapter
            (:class:`agentcore.providers.shell.Adapter`).
        settings: the model's :class:`agentcore.ModelSettings`, for every
            request (:func:`agentcore.providers.bedrock.request.settings_fields`).

    Raises:
        ConfigError: botocore is missing (``pip install 'agentcore[aws]'``);
            neither or both of ``region`` and ``base_url`` (``region`` may go
            with ``base_url`` only to sign); neither or both of ``api_key``
            and ``aws_credentials``; ``settings`` Converse cannot take for the
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
        signer = bedrock_signer(region, base_url, api_key, aws_credentials)
        super().__init__(
            model,
            api_key=api_key,
            base_url=aws.bedrock_base_url(None if base_url is not None else region, base_url),
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
