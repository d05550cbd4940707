"""The in-memory transport (``agentcore.transport.memory``) as a test writer
uses it: what a request recorded, and what a canned failure may be."""

from __future__ import annotations

import pytest

from agentcore import ConfigError, Context, ErrorClass, ModelError, Request, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport, Reply, SentHeaders, SentRequest

KEY = "sk-secret-0123456789"
ANTHROPIC = (
    b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":1}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
CHAT = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def sent_by(model: AnthropicModel | OpenAIChatModel, transport: MemoryTransport) -> SentRequest:
    list(model.stream(Request(messages=[user_message("hi")], headers={"X-Trace": "t-1"}), Context()))
    return transport.sent[0]


@pytest.mark.parametrize("adapter", ["anthropic", "chat"])
def test_a_sent_header_is_found_whatever_the_case_of_its_name(adapter: str) -> None:
    transport = MemoryTransport(Reply.of(ANTHROPIC if adapter == "anthropic" else CHAT))
    if adapter == "anthropic":
        model: AnthropicModel | OpenAIChatModel = AnthropicModel("claude-x", api_key=KEY, transport=transport)
        key_header, key_value = "X-API-Key", KEY
    else:
        model = OpenAIChatModel("gpt-x", api_key=KEY, transport=transport)
        key_header, key_value = "AUTHORIZATION", f"Bearer {KEY}"
    headers = sent_by(model, transport).headers
    assert headers[key_header] == headers[key_header.lower()] == key_value
    assert headers["Content-Type"] == headers["content-type"] == "application/json"
    assert headers["x-trace"] == headers["X-TRACE"] == "t-1"  # the caller's own header, in its own case
    assert ("x-trace" in headers, "X-Trace" in headers, "x-missing" in headers) == (True, True, False)
    assert (headers.get("CONTENT-TYPE"), headers.get("x-missing")) == ("application/json", None)
    with pytest.raises(KeyError):
        headers["x-missing"]
    assert "X-Trace" in list(headers)  # iterated under the names as sent
    assert len(headers) == len(set(headers))


def test_a_sent_request_keeps_the_names_as_sent_and_equals_a_dict_of_them() -> None:
    headers = SentHeaders({"Authorization": "Bearer abc", "content-type": "application/json"})
    assert list(headers) == ["Authorization", "content-type"]
    assert headers == {"Authorization": "Bearer abc", "content-type": "application/json"}
    assert dict(headers.items()) == {"Authorization": "Bearer abc", "content-type": "application/json"}


@pytest.mark.parametrize("adapter", ["anthropic", "chat"])
def test_the_repr_of_a_sent_request_never_shows_the_key(adapter: str) -> None:
    transport = MemoryTransport(Reply.of(ANTHROPIC if adapter == "anthropic" else CHAT))
    if adapter == "anthropic":
        model: AnthropicModel | OpenAIChatModel = AnthropicModel("claude-x", api_key=KEY, transport=transport)
    else:
        model = OpenAIChatModel("gpt-x", api_key=KEY, transport=transport)
    sent = sent_by(model, transport)
    for shown in (repr(sent), str(sent), repr(sent.headers), repr(transport.sent)):
        assert KEY not in shown
        assert "[REDACTED]" in shown
        assert "'t-1'" in shown  # a header that is no credential is shown
    assert sent.timeout == Timeout()


HINT = (
    r"a transport raises only ModelError: write ModelError\(ErrorClass.TRANSIENT, err={cause}, "
    r"message=\.\.\.\) for a refused connection, a reset or a timeout, as the real transport maps them"
)


def test_a_failure_that_is_not_a_model_error_is_refused_with_the_spelling_to_use() -> None:
    match = r"Reply\(failure=\.\.\.\) must be a ModelError, got ConnectionRefusedError; " + HINT.format(
        cause=r"ConnectionRefusedError\(\)"
    )
    with pytest.raises(ConfigError, match=match):
        Reply(failure=ConnectionRefusedError())  # type: ignore[arg-type]  # a wrong type on purpose
    with pytest.raises(ConfigError, match="must be a ModelError, got KeyboardInterrupt"):
        Reply(failure=KeyboardInterrupt())  # type: ignore[arg-type]  # a wrong type on purpose


@pytest.mark.parametrize(
    ("chunk", "match"),
    [
        (
            ConnectionResetError(),
            r"item 1 is a ConnectionResetError, not bytes or a ModelError; "
            + HINT.format(cause=r"ConnectionResetError\(\)"),
        ),
        ("data: {}\n\n", r"item 1 is a str, not bytes or a ModelError; " + HINT.format(cause=r"\.\.\.")),
    ],
    ids=["an exception", "text"],
)
def test_a_read_that_is_neither_bytes_nor_a_model_error_is_refused(chunk: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        Reply(chunks=[b"data: {}\n\n", chunk])  # type: ignore[list-item]  # a wrong type on purpose


def test_a_model_error_reaches_the_adapters_caller_at_send_and_at_a_read() -> None:
    refused = ModelError(ErrorClass.TRANSIENT, err=ConnectionRefusedError(), message="connection refused")
    reset = ModelError(ErrorClass.TRANSIENT, err=ConnectionResetError(), message="connection reset")
    transport = MemoryTransport(Reply(failure=refused), Reply(chunks=[ANTHROPIC[:60], reset]))
    model = AnthropicModel("claude-x", api_key=KEY, transport=transport)
    request = Request(messages=[user_message("hi")])
    with pytest.raises(ModelError) as at_send:
        list(model.stream(request, Context()))
    assert at_send.value is refused
    with pytest.raises(ModelError) as at_read:
        list(model.stream(request, Context()))
    assert at_read.value is reset
    assert [sent.reused for sent in transport.sent] == [None, False]
