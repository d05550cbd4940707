"""What ``AnthropicModel`` sends: URL, JSON body, headers and timeout,
checked on the in-memory transport (``agentcore.transport.memory``)."""

from __future__ import annotations

import pytest

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.model import ANTHROPIC_VERSION
from agentcore.providers.anthropic.request import DEFAULT_MAX_TOKENS
from agentcore.transport import Timeout
from agentcore.transport.http import HTTPTransport
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import (
    FinishReason,
    Message,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
)

URL = "https://api.anthropic.com/v1/messages"
KEY = "sk-ant-api03-request-shape-secret"
OK_BODY = sse(
    message_start(input_tokens=3, output_tokens=1),
    text_start(0),
    text_delta(0, "ok"),
    message_delta("end_turn", output_tokens=2),
    MESSAGE_STOP,
)
HI = Request(messages=[user_message("Hi")])


def step(model: AnthropicModel, transport: MemoryTransport, request: Request = HI) -> SentRequest:
    """Run one step answered with :data:`OK_BODY`; the request it sent."""
    transport.add(Reply.of(OK_BODY))
    parts = list(model.stream(request, Context()))
    assert parts[-1].finish_reason is FinishReason.STOP
    return transport.sent[-1]


def test_posts_a_streaming_body_and_reads_the_answer() -> None:
    transport = MemoryTransport(Reply.of(OK_BODY))
    model = AnthropicModel("claude-sonnet-4-5", api_key=KEY, transport=transport)
    parts = list(model.stream(HI, Context()))
    assert parts == [
        StreamPart.text_delta("ok"),
        StreamPart.step_finish(FinishReason.STOP, Usage(3, 2, 0, 0)),
    ]
    [sent] = transport.sent
    assert (sent.method, sent.url) == ("POST", URL)
    assert sent.json() == {
        "model": "claude-sonnet-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "cache_control": {"type": "ephemeral"},  # automatic prompt caching, on by default
    }
    assert sent.headers == {
        "anthropic-version": ANTHROPIC_VERSION,
        "content-type": "application/json",
        "accept": "text/event-stream",
        "x-api-key": KEY,
    }
    assert ANTHROPIC_VERSION == "2023-06-01"
    assert sent.timeout == Timeout()
    assert sent.reused is True  # read to its end: the connection may be reused


def test_full_history_system_tools_and_max_tokens_override() -> None:
    transport = MemoryTransport()
    weather = ToolDefinition(
        name="get_weather",
        description="Weather for a city.",
        input_schema='{"type":"object","properties":{"city":{"type":"string"}}}',
    )
    history = [
        user_message("Weather in Oslo?"),
        Message(
            role=Role.ASSISTANT,
            content=[
                text_part("Let me check."),
                tool_call_part(ToolCall(id="toolu_1", name="get_weather", input='{"city":"Oslo"}')),
                tool_call_part(ToolCall(id="toolu_2", name="get_weather", input='{"city": "Os')),
            ],
        ),
        Message(
            role=Role.TOOL,
            content=[
                tool_result_part(ToolResult(tool_call_id="toolu_1", name="get_weather", content="rain")),
                tool_result_part(
                    ToolResult(tool_call_id="toolu_2", name="get_weather", content="bad JSON", is_error=True)
                ),
            ],
        ),
        user_message("Thanks. And Lima?"),
    ]
    model = AnthropicModel("claude-test", api_key=KEY, max_tokens=999, transport=transport)
    request = Request(system="You are terse.", messages=history, tools=[weather], max_output_tokens=123)
    assert step(model, transport, request).json() == {
        "model": "claude-test",
        "max_tokens": 123,
        "stream": True,
        "cache_control": {"type": "ephemeral"},
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "bad JSON",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Thanks. And Lima?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather for a city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
    }


def test_adapter_default_max_tokens_applies_when_request_has_none() -> None:
    transport = MemoryTransport()
    model = AnthropicModel("claude-test", api_key=KEY, max_tokens=999, transport=transport)
    assert step(model, transport).json()["max_tokens"] == 999


def test_non_ascii_is_sent_as_utf8() -> None:
    transport = MemoryTransport()
    model = AnthropicModel("claude-test", api_key=KEY, transport=transport)
    sent = step(model, transport, Request(messages=[user_message("Zürich 👋")]))
    assert "Zürich 👋".encode() in sent.body


def test_header_order_defaults_then_adapter_extras_then_request_headers() -> None:
    transport = MemoryTransport()
    model = AnthropicModel(
        "claude-test",
        api_key=KEY,
        anthropic_version="2099-01-01",
        headers={"anthropic-beta": "fine-grained-tool-streaming-2025-05-14", "X-Gateway": "adapter"},
        transport=transport,
    )
    request = Request(messages=[user_message("Hi")], headers={"x-gateway": "request", "x-title": "demo"})
    assert step(model, transport, request).headers == {
        "anthropic-version": "2099-01-01",
        "content-type": "application/json",
        "accept": "text/event-stream",
        "x-api-key": KEY,
        "anthropic-beta": "fine-grained-tool-streaming-2025-05-14",
        "x-gateway": "request",
        "x-title": "demo",
    }


def test_extra_headers_override_defaults_case_insensitively() -> None:
    transport = MemoryTransport()
    model = AnthropicModel(
        "claude-test", api_key=KEY, headers={"Anthropic-Version": "2023-01-01"}, transport=transport
    )
    headers = step(model, transport).headers
    assert [(k, v) for k, v in headers.items() if k.lower() == "anthropic-version"] == [
        ("Anthropic-Version", "2023-01-01")
    ]


@pytest.mark.parametrize("api_key", [None, ""], ids=["none", "empty"])
def test_no_api_key_sends_no_key_header(api_key: str | None) -> None:
    transport = MemoryTransport()
    model = AnthropicModel(
        "claude-test", api_key=api_key, headers={"authorization": "Bearer gateway-token"}, transport=transport
    )
    headers = step(model, transport).headers
    assert "x-api-key" not in headers
    assert headers["authorization"] == "Bearer gateway-token"


def test_base_url_trailing_slash_and_path() -> None:
    transport = MemoryTransport()
    model = AnthropicModel(
        "claude-test", api_key=KEY, base_url="http://gateway.test/anthropic/", transport=transport
    )
    assert step(model, transport).url == "http://gateway.test/anthropic/v1/messages"


def test_the_timeout_reaches_every_request() -> None:
    transport = MemoryTransport()
    timeout = Timeout(connect=3.0, read=42.0, idle=None)
    model = AnthropicModel("claude-test", api_key=KEY, timeout=timeout, transport=transport)
    assert [step(model, transport).timeout for _ in range(2)] == [timeout, timeout]


def test_own_transport_ignores_the_environment() -> None:
    assert HTTPTransport().session.trust_env is False


def test_model_id() -> None:
    assert AnthropicModel("claude-haiku-4-5", api_key=KEY).model_id == "claude-haiku-4-5"


@pytest.mark.parametrize("max_tokens", [0, -5, True, 1.5], ids=repr)
def test_a_bad_max_tokens_is_a_config_error(max_tokens: object) -> None:
    with pytest.raises(ConfigError, match=r"^max_tokens must be a positive int, got "):
        AnthropicModel("claude-test", api_key=KEY, max_tokens=max_tokens)  # type: ignore[arg-type]  # wrong on purpose
