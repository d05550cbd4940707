"""What ``AnthropicModel`` sends: URL, JSON body and headers, checked with ``responses``."""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
import responses

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.model import Model
from agentcore.providers.anthropic import ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS, AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
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


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        yield rsps


def answer(mock: responses.RequestsMock, url: str = URL) -> None:
    mock.add(responses.POST, url, body=OK_BODY, status=200, content_type="text/event-stream")


def sent(mock: responses.RequestsMock, index: int = 0) -> tuple[dict[str, Any], Any]:
    request = mock.calls[index].request
    body = request.body
    assert isinstance(body, bytes)
    return json.loads(body.decode("utf-8")), request.headers


def test_posts_a_streaming_body_and_reads_the_answer(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-sonnet-4-5", api_key=KEY)
    parts = list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert parts == [
        StreamPart.text_delta("ok"),
        StreamPart.step_finish(FinishReason.STOP, Usage(3, 2, 0, 0)),
    ]
    body, headers = sent(mock)
    assert mock.calls[0].request.url == URL
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "cache_control": {"type": "ephemeral"},  # automatic prompt caching, on by default
    }
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "text/event-stream"


def test_full_history_system_tools_and_max_tokens_override(mock: responses.RequestsMock) -> None:
    answer(mock)
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
    model = AnthropicModel("claude-test", api_key=KEY, max_tokens=999)
    request = Request(system="You are terse.", messages=history, tools=[weather], max_output_tokens=123)
    list(model.stream(request, Context()))
    body, _ = sent(mock)
    assert body == {
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


def test_adapter_default_max_tokens_applies_when_request_has_none(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-test", api_key=KEY, max_tokens=999)
    list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert sent(mock)[0]["max_tokens"] == 999


def test_non_ascii_is_sent_as_utf8(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-test", api_key=KEY)
    list(model.stream(Request(messages=[user_message("Zürich 👋")]), Context()))
    raw = mock.calls[0].request.body
    assert isinstance(raw, bytes)
    assert "Zürich 👋".encode() in raw


def test_header_order_defaults_then_adapter_extras_then_request_headers(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel(
        "claude-test",
        api_key=KEY,
        anthropic_version="2099-01-01",
        headers={"anthropic-beta": "fine-grained-tool-streaming-2025-05-14", "X-Gateway": "adapter"},
    )
    request = Request(messages=[user_message("Hi")], headers={"x-gateway": "request", "x-title": "demo"})
    list(model.stream(request, Context()))
    headers = sent(mock)[1]
    assert headers["anthropic-version"] == "2099-01-01"
    assert headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"
    assert headers["x-gateway"] == "request"
    assert headers["x-title"] == "demo"
    assert headers["x-api-key"] == KEY


def test_extra_headers_override_defaults_case_insensitively(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-test", api_key=KEY, headers={"Anthropic-Version": "2023-01-01"})
    list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    headers = sent(mock)[1]
    assert headers["anthropic-version"] == "2023-01-01"
    assert [k for k in headers if k.lower() == "anthropic-version"] == ["Anthropic-Version"]


def test_empty_api_key_sends_no_key_header(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-test", api_key="", headers={"authorization": "Bearer gateway-token"})
    list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    headers = sent(mock)[1]
    assert "x-api-key" not in headers
    assert headers["authorization"] == "Bearer gateway-token"


def test_base_url_trailing_slash_and_path(mock: responses.RequestsMock) -> None:
    answer(mock, "http://gateway.test/anthropic/v1/messages")
    model = AnthropicModel("claude-test", api_key=KEY, base_url="http://gateway.test/anthropic/")
    list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert mock.calls[0].request.url == "http://gateway.test/anthropic/v1/messages"


def test_callers_session_is_used(mock: responses.RequestsMock) -> None:
    answer(mock)
    session = requests.Session()
    session.headers["x-from-caller-session"] = "yes"
    model = AnthropicModel("claude-test", api_key=KEY, session=session)
    list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert sent(mock)[1]["x-from-caller-session"] == "yes"
    session.close()


def test_own_session_ignores_the_environment() -> None:
    model = AnthropicModel("claude-test", api_key=KEY)
    assert model._session.trust_env is False


def test_model_id() -> None:
    assert AnthropicModel("claude-haiku-4-5", api_key=KEY).model_id == "claude-haiku-4-5"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model": ""},
        {"max_tokens": 0},
        {"max_tokens": -5},
        {"max_tokens": True},
        {"timeout": (0.0, 10.0)},
        {"timeout": (5.0, -1.0)},
        {"idle_timeout": 0},
        {"api_key": None},
    ],
)
def test_bad_construction_is_a_config_error(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"model": "claude-test", "api_key": KEY, **kwargs}
    with pytest.raises(ConfigError, match="must be"):
        AnthropicModel(**args)


# --- option checks shared with OpenAIChatModel ------------------------------------
# docs/errors.md: a caller mistake in an adapter's options is a ConfigError
# naming the option, never a plain TypeError or ValueError from deeper down.


def make_anthropic(**kwargs: Any) -> Model:
    return AnthropicModel("claude-test", api_key=KEY, **kwargs)


def make_openai(**kwargs: Any) -> Model:
    return OpenAIChatModel("gpt-test", **kwargs)


BOTH_ADAPTERS = pytest.mark.parametrize("make", [make_anthropic, make_openai], ids=["anthropic", "openai"])
Make = Callable[..., Model]


@BOTH_ADAPTERS
@pytest.mark.parametrize(
    "timeout",
    [5, 5.0, None, (1, 2, 3), (10,), (), [1, 2, 3], "12", b"12", {"connect": 1, "read": 2}],
    ids=repr,
)
def test_a_timeout_that_is_not_a_pair_is_a_config_error(make: Make, timeout: Any) -> None:
    with pytest.raises(ConfigError, match=r"^timeout must be a \(connect, read\) pair of seconds, got "):
        make(timeout=timeout)


@BOTH_ADAPTERS
@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        ((0, 10), r"^connect timeout must be a positive number of seconds, got 0$"),
        ((True, 10), r"^connect timeout must be a positive number of seconds, got True$"),
        ((5, "10"), r"^read timeout must be a positive number of seconds, got '10'$"),
        ((5, float("nan")), r"^read timeout must be a positive number of seconds, got nan$"),
    ],
)
def test_a_bad_timeout_value_is_a_config_error(make: Make, timeout: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make(timeout=timeout)


@BOTH_ADAPTERS
@pytest.mark.parametrize("timeout", [(1, 2), [1, 2], (0.5, 7.5)], ids=repr)
def test_a_timeout_pair_is_accepted(make: Make, timeout: Any) -> None:
    make(timeout=timeout)


@BOTH_ADAPTERS
@pytest.mark.parametrize("idle_timeout", [0, -1, float("nan"), "5", True], ids=repr)
def test_a_bad_idle_timeout_is_a_config_error(make: Make, idle_timeout: Any) -> None:
    with pytest.raises(ConfigError, match=r"^idle_timeout must be a positive number of seconds, got "):
        make(idle_timeout=idle_timeout)


@BOTH_ADAPTERS
def test_idle_timeout_none_means_no_idle_limit(make: Make) -> None:
    make(idle_timeout=None)


def test_anthropic_idle_timeout_none_sends_the_plain_read_timeout(mock: responses.RequestsMock) -> None:
    answer(mock)
    model = AnthropicModel("claude-test", api_key=KEY, timeout=(3.0, 42.0), idle_timeout=None)
    seen: list[Any] = []
    original = model._session.post

    def post(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["timeout"])
        return original(*args, **kwargs)

    model._session.post = post  # type: ignore[method-assign]  # spies on the session the adapter uses
    parts = list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert parts[-1].finish_reason is FinishReason.STOP
    assert seen == [(3.0, 42.0)]


@BOTH_ADAPTERS
@pytest.mark.parametrize(
    "headers",
    [
        [("x-gateway", "1")],
        [],
        "x-gateway: 1",
        "",
        b"x-gateway: 1",
        5,
        {"x-gateway": 1},
        {"x-gateway": None},
        {"x-gateway": b"1"},
        {1: "x"},
        {b"x-gateway": "1"},
    ],
    ids=repr,
)
def test_headers_that_are_not_a_str_to_str_mapping_are_a_config_error(make: Make, headers: Any) -> None:
    with pytest.raises(ConfigError, match=r"^headers must be a mapping of str header names to str values"):
        make(headers=headers)


@BOTH_ADAPTERS
@pytest.mark.parametrize(
    "headers",
    [
        [("Authorization", "Bearer sk-do-not-show-this-secret")],
        {"x-api-key": b"sk-do-not-show-this-secret"},
        {"x-api-key": ["sk-do-not-show-this-secret"]},
    ],
    ids=["pairs", "bytes-value", "list-value"],
)
def test_a_bad_header_is_named_but_its_value_never_shown(make: Make, headers: Any) -> None:
    with pytest.raises(ConfigError) as info:
        make(headers=headers)
    assert "do-not-show" not in str(info.value)
    assert "do-not-show" not in repr(info.value)
    if isinstance(headers, dict):
        assert "'x-api-key'" in str(info.value)


@BOTH_ADAPTERS
@pytest.mark.parametrize(
    "headers",
    [
        None,
        {},
        {"x-gateway": "1"},
        types.MappingProxyType({"x-gateway": "1"}),
        requests.structures.CaseInsensitiveDict({"X-Gateway": "1"}),
    ],
    ids=["none", "empty", "dict", "mapping-proxy", "case-insensitive-dict"],
)
def test_any_str_to_str_mapping_is_accepted_as_headers(make: Make, headers: Any) -> None:
    make(headers=headers)
