"""The AWS layer (:mod:`agentcore.providers.aws`) and the signer hook of the
shell: the event-stream framing against frames checked by botocore, the
error classes of Bedrock's exceptions, SigV4 against the local Bedrock's
own check of the signature, and what a :class:`Signer` is given."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from botocore.credentials import Credentials, RefreshableCredentials
from botocore.eventstream import EventStreamBuffer

from agentcore import Context, ErrorClass, ModelError, Request, user_message
from agentcore.errors import ConfigError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.aws import EVENT_STREAM, SigV4, bedrock_base_url, event_stream, invoke_events
from agentcore.providers.endpoint import Endpoint, Signer, TokenCache
from agentcore.transport.errors import error_from_body
from agentcore.transport.sse import Event
from tests import bedrock_server as bedrock
from tests.bedrock_server import BedrockServer, chunk_frame, event_frame, exception_frame, frame
from tests.localserver import LocalServer, Reply, json_reply

HELLO: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_bdrk_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "claude",
            "stop_reason": None,
            "usage": {"input_tokens": 9, "output_tokens": 1},
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {
        "type": "message_stop",
        "amazon-bedrock-invocationMetrics": {"inputTokenCount": 9, "outputTokenCount": 2},
    },
]
INVOKE = "/model/{model}/invoke-with-response-stream"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def events(body: bytes, piece: int, **options: Any) -> list[Event]:
    reads = [body[i : i + piece] for i in range(0, len(body), piece)]
    return list(event_stream(iter(reads), idle_timeout=options.pop("idle_timeout", None), **options))


# --- the encoder of the test server, checked by botocore --------------------------------------


def test_the_servers_frames_decode_with_botocore() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(
        event_frame("chunk", {"bytes": "e30=", "p": "ab"}) + exception_frame("throttlingException", "slow")
    )
    first, second = list(buffer)
    assert first.headers == {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(first.payload) == {"bytes": "e30=", "p": "ab"}
    assert second.headers[":exception-type"] == "throttlingException"
    assert json.loads(second.payload) == {"message": "slow"}


# --- event_stream ---------------------------------------------------------------------------------


@pytest.mark.parametrize("piece", [1, 7, 64, 10_000])
def test_messages_spanning_reads_are_decoded_whole(piece: int) -> None:
    body = event_frame("messageStart", {"role": "assistant"}) + event_frame(
        "contentBlockDelta", {"delta": {"text": "é"}}
    )
    assert events(body, piece) == [
        Event("messageStart", {"role": "assistant"}),
        Event("contentBlockDelta", {"delta": {"text": "é"}}),
    ]


@pytest.mark.parametrize(
    ("exception", "error_class"),
    [
        ("throttlingException", ErrorClass.RATE_LIMITED),
        ("serviceUnavailableException", ErrorClass.OVERLOADED),
        ("modelStreamErrorException", ErrorClass.TRANSIENT),
        ("modelTimeoutException", ErrorClass.TRANSIENT),
        ("internalServerException", ErrorClass.UPSTREAM),
        ("validationException", ErrorClass.INVALID_REQUEST),
        ("somethingNewException", ErrorClass.UPSTREAM),
    ],
)
def test_an_exception_message_is_classified_by_its_type(exception: str, error_class: ErrorClass) -> None:
    body = event_frame("messageStart", {"role": "assistant"}) + exception_frame(
        exception, "Please wait before trying again."
    )
    stream = event_stream(iter([body]), idle_timeout=None)
    assert next(stream) == Event("messageStart", {"role": "assistant"})
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is error_class
    assert str(caught.value).endswith(f"{exception}: Please wait before trying again.")


def test_a_validation_exception_saying_the_input_is_too_long_is_context_length() -> None:
    body = exception_frame("validationException", "Input is too long for requested model.")
    with pytest.raises(ModelError) as caught:
        events(body, 100)
    assert caught.value.error_class is ErrorClass.CONTEXT_LENGTH


def test_an_error_message_is_classified_by_its_code() -> None:
    body = frame(
        {":message-type": "error", ":error-code": "ThrottlingException", ":error-message": "slow down"}, b""
    )
    with pytest.raises(ModelError) as caught:
        events(body, 100)
    assert (caught.value.error_class, caught.value.message) == (
        ErrorClass.RATE_LIMITED,
        "ThrottlingException: slow down",
    )


@pytest.mark.parametrize("cut", [1, 11, 12, 30, -1])
def test_a_message_cut_at_the_end_of_the_body_is_transient(cut: int) -> None:
    whole = event_frame("messageStart", {"role": "assistant"})
    body = whole + event_frame("messageStop", {"stopReason": "end_turn"})[:cut]
    stream = event_stream(iter([body]), idle_timeout=None)
    assert next(stream).event == "messageStart"
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "cut" in caught.value.message


@pytest.mark.parametrize("where", [10, -2])
def test_a_crc_mismatch_is_upstream(where: int) -> None:
    body = bytearray(event_frame("messageStart", {"role": "assistant"}))
    body[where] ^= 0xFF  # the prelude's CRC, or the message's
    with pytest.raises(ModelError) as caught:
        events(bytes(body), 100)
    assert caught.value.error_class is ErrorClass.UPSTREAM
    assert "ChecksumMismatch" in caught.value.message


def test_a_payload_that_is_not_json_is_upstream() -> None:
    body = frame({":event-type": "chunk", ":message-type": "event"}, b"{not json")
    with pytest.raises(ModelError) as caught:
        events(body, 100)
    assert caught.value.error_class is ErrorClass.UPSTREAM


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_idle_timeout_counts_from_the_last_read_with_a_message() -> None:
    clock = Clock()
    message = event_frame("contentBlockDelta", {"delta": {"text": "hi"}})

    def reads() -> Iterator[bytes]:  # the network's time
        yield message
        clock.now += 0.6
        yield message[:5]
        clock.now += 0.3
        yield message[5:]
        clock.now += 0.5
        yield message[:5]
        clock.now += 0.6
        yield message[5:]

    stream = event_stream(reads(), idle_timeout=1.0, clock=clock)
    assert next(stream).event == "contentBlockDelta"
    clock.now += 50  # the consumer's time over an event does not count
    assert next(stream).event == "contentBlockDelta"  # 0.9 s over a message in two reads: in time
    with pytest.raises(ModelError) as caught:
        next(stream)  # 1.1 s
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in caught.value.message


# --- invoke_events --------------------------------------------------------------------------------


def test_invoke_events_yields_the_anthropic_events_inside_the_chunks() -> None:
    body = b"".join(chunk_frame(e) for e in HELLO)
    got = list(invoke_events(iter([body[:33], body[33:]]), idle_timeout=None))
    assert got == [Event(e["type"], e) for e in HELLO]


@pytest.mark.parametrize(
    "payload", [{"bytes": "not base64!"}, {"bytes": base64.b64encode(b"[1]").decode()}, {"p": "x"}]
)
def test_a_chunk_without_an_event_is_upstream(payload: dict[str, str]) -> None:
    with pytest.raises(ModelError) as caught:
        list(invoke_events(iter([event_frame("chunk", payload)]), idle_timeout=None))
    assert caught.value.error_class is ErrorClass.UPSTREAM


# --- bedrock_base_url -----------------------------------------------------------------------------


def test_the_base_url_of_a_region() -> None:
    assert bedrock_base_url("eu-central-1", None) == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    assert bedrock_base_url("us-gov-west-1", None) == "https://bedrock-runtime.us-gov-west-1.amazonaws.com"
    assert bedrock_base_url(None, "http://127.0.0.1:9") == "http://127.0.0.1:9"
    assert bedrock_base_url("us-east-1", "http://127.0.0.1:9") == "http://127.0.0.1:9"  # the Region signs


@pytest.mark.parametrize(
    ("region", "base_url", "words"),
    [
        (None, None, "region= (the AWS Region"),
        ("US East", None, "AWS Region code"),
        ("bedrock-runtime.us-east-1.amazonaws.com", None, "AWS Region code"),
    ],
)
def test_a_base_url_needs_one_region_or_url(region: str | None, base_url: str | None, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        bedrock_base_url(region, base_url)


# --- HTTP error bodies --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "message", "error_class"),
    [
        (
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
            ErrorClass.RATE_LIMITED,
        ),
        (429, "ModelNotReadyException", "Model is not ready.", ErrorClass.OVERLOADED),
        (
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
            ErrorClass.OVERLOADED,
        ),
        (
            408,
            "ModelTimeoutException",
            "Model has timed out in processing the request.",
            ErrorClass.TRANSIENT,
        ),
        (400, "ValidationException", "The provided model identifier is invalid.", ErrorClass.INVALID_REQUEST),
        (400, "ValidationException", "Input is too long for requested model.", ErrorClass.CONTEXT_LENGTH),
        (
            400,
            "ServiceQuotaExceededException",
            "Your request exceeds the service quota.",
            ErrorClass.INVALID_REQUEST,
        ),
        (403, "AccessDeniedException", "You don't have access to the model.", ErrorClass.AUTH),
        (404, "ResourceNotFoundException", "Model not found.", ErrorClass.INVALID_REQUEST),
        (500, "InternalServerException", "Internal server error.", ErrorClass.UPSTREAM),
        (424, "ModelErrorException", "The model failed.", ErrorClass.UPSTREAM),
        (424, "ModelStreamErrorException", "Stream error.", ErrorClass.TRANSIENT),
    ],
)
def test_a_bedrock_error_body_is_classified_by_its_type(
    status: int, error_type: str, message: str, error_class: ErrorClass
) -> None:
    raw = json.dumps({"message": message}).encode()
    err = error_from_body(
        status, raw, error_type=f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    )
    assert (err.error_class, err.status, err.message) == (error_class, status, f"{error_type}: {message}")


# --- SigV4 and the signer hook ------------------------------------------------------------------


def endpoint() -> Endpoint:
    return Endpoint(
        INVOKE,
        headers={"content-type": "application/json", "accept": EVENT_STREAM},
        body={"anthropic_version": "bedrock-2023-05-31"},
        omit=("model", "stream"),
        framing=invoke_events,
        media_type=EVENT_STREAM,
    )


def claude(url: str, signer: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, base_url=url, credentials=signer, endpoint=endpoint())


def hello(record: dict[str, Any], model: str, operation: str) -> Reply:
    assert (model, operation) == (MODEL, "invoke-with-response-stream")
    return bedrock.stream_reply([chunk_frame(e) for e in HELLO], piece=41)


@pytest.fixture
def aws() -> Iterator[BedrockServer]:
    fake = BedrockServer(hello)
    try:
        yield fake
    finally:
        fake.close()


def text_of(model: AnthropicModel) -> str:
    parts = list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    return "".join(p.text for p in parts if p.text)


@pytest.mark.parametrize("session", [False, True])
def test_sigv4_signs_what_the_server_checks(aws: BedrockServer, session: bool) -> None:
    assert text_of(claude(aws.url, SigV4("us-east-1", bedrock.credentials(session)))) == "Hello"
    sent = aws.server.requests[0]
    assert sent["path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
    assert sent["headers"]["Authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={sent['headers']['Authorization'][28:48]}/"
    )
    assert ("X-Amz-Security-Token" in sent["headers"]) is session
    assert sent["body"]["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in sent["body"]
    assert "stream" not in sent["body"]


def test_a_signature_the_server_computes_otherwise_is_refused(aws: BedrockServer) -> None:
    wrong = Credentials(bedrock.ACCESS_KEY, "not-the-secret")
    with pytest.raises(ModelError) as caught:
        text_of(claude(aws.url, SigV4("us-east-1", wrong)))
    assert (caught.value.error_class, caught.value.status) == (ErrorClass.AUTH, 403)
    assert caught.value.message == f"InvalidSignatureException: {bedrock.SIGNATURE_MISMATCH}"
    assert aws.server.hits == 1  # a 403 that is not an expired token is not signed again
    with pytest.raises(ModelError) as caught:
        text_of(claude(aws.url, SigV4("eu-west-1", bedrock.credentials())))  # signed for another region
    assert caught.value.message.startswith("InvalidSignatureException")


class Recording:
    """A signer that records what it is given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str], bytes]] = []
        self.refusals: list[dict[str, str]] = []

    def sign(self, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        self.calls.append((url, dict(headers), body))
        return {"Authorization": f"Bearer {bedrock.API_KEY}", "X-Signed": str(len(self.calls))}

    def refused(self, signed: Mapping[str, str]) -> None:
        self.refusals.append(dict(signed))


def test_a_signer_gets_the_exact_url_and_body_sent(aws: BedrockServer) -> None:
    signer = Recording()
    assert isinstance(signer, Signer)
    model = AnthropicModel(
        MODEL, base_url=aws.url, credentials=signer, endpoint=endpoint(), headers={"x-team": "a"}
    )
    assert text_of(model) == "Hello"
    [(url, headers, body)] = signer.calls
    sent = aws.server.requests[0]
    assert url == aws.url + sent["path"]
    assert body == sent["raw"]
    assert signer.refusals == []
    assert headers == {"content-type": "application/json", "accept": EVENT_STREAM, "x-team": "a"}
    assert sent["headers"]["X-Signed"] == "1"


def test_an_expired_token_is_signed_once_more_with_refreshed_credentials(aws: BedrockServer) -> None:
    issued: list[str] = []

    def refresh() -> dict[str, str]:
        issued.append(f"IQoJb3JpZ2luX2VjEXAMPLE-session-token-{len(issued) + 1}")
        aws.keys[bedrock.SESSION_ACCESS_KEY] = (bedrock.SESSION_SECRET_KEY, issued[-1])
        return {
            "access_key": bedrock.SESSION_ACCESS_KEY,
            "secret_key": bedrock.SESSION_SECRET_KEY,
            "token": issued[-1],
            "expiry_time": "2999-01-01T00:00:00Z",
        }

    refreshable = RefreshableCredentials.create_from_metadata(refresh(), refresh, "test")
    aws.expired_tokens.add(issued[0])  # expired early (revoked, clock skew): botocore does not know
    model = claude(aws.url, SigV4("us-east-1", refreshable))
    assert text_of(model) == "Hello"
    tokens = [r["headers"].get("X-Amz-Security-Token") for r in aws.server.requests]
    assert tokens == [issued[0], issued[1]]
    assert aws.refused == 1
    aws.expired_tokens.add(issued[1])
    aws.expired_tokens.add("IQoJb3JpZ2luX2VjEXAMPLE-session-token-3")  # the refreshed token is refused too
    with pytest.raises(ModelError) as caught:
        text_of(model)
    assert (caught.value.error_class, caught.value.message) == (
        ErrorClass.AUTH,
        f"ExpiredTokenException: {bedrock.EXPIRED}",
    )
    assert aws.server.hits == 4  # signed once more, never twice


def test_the_token_cache_is_a_signer_that_keeps_its_token() -> None:
    calls: list[int] = []

    def token() -> str:
        calls.append(1)
        return "tok"

    cache = TokenCache(token, ("Authorization", "Bearer {token}"))
    assert isinstance(cache, Signer)
    assert cache.sign("http://x/y", {}, b"{}") == {"Authorization": "Bearer tok"}
    assert len(calls) == 1


def test_signed_headers_echoed_in_an_error_are_redacted(server: LocalServer) -> None:
    def echo(record: dict[str, Any]) -> Reply:
        said = f"{record['headers']['Authorization']} / {record['headers']['X-Amz-Security-Token']}"
        return json_reply(
            400, {"message": f"bad request: {said}"}, {"x-amzn-ErrorType": "ValidationException"}
        )

    server.responder = echo
    with pytest.raises(ModelError) as caught:
        text_of(claude(server.url, SigV4("us-east-1", bedrock.credentials(session=True))))
    sent = server.requests[0]["headers"]
    assert caught.value.error_class is ErrorClass.INVALID_REQUEST
    assert sent["Authorization"] not in str(caught.value)
    assert bedrock.SESSION_TOKEN not in str(caught.value)
    assert "[REDACTED]" in str(caught.value)


def test_sigv4_wants_credentials() -> None:
    with pytest.raises(ConfigError, match=r"aws_credentials must be botocore credentials .* got NoneType"):
        SigV4("us-east-1", None)
    with pytest.raises(ConfigError, match="got str"):
        SigV4("us-east-1", "AKIAIOSFODNN7EXAMPLE")


def test_a_bearer_key_is_accepted_and_a_wrong_one_refused(aws: BedrockServer) -> None:
    endpoint_ = endpoint()
    ok = AnthropicModel(MODEL, base_url=aws.url, api_key=bedrock.API_KEY, endpoint=endpoint_)
    assert text_of(ok) == "Hello"
    assert aws.server.requests[0]["headers"]["Authorization"] == f"Bearer {bedrock.API_KEY}"
    wrong = AnthropicModel(MODEL, base_url=aws.url, api_key="ABSKwrong", endpoint=endpoint_)
    with pytest.raises(ModelError) as caught:
        text_of(wrong)
    assert caught.value.message == f"UnrecognizedClientException: {bedrock.UNRECOGNIZED}"
    assert "ABSKwrong" not in str(caught.value)
