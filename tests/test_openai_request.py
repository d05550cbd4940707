"""What the OpenAI Chat Completions adapter sends: the pure request mappers,
then the body and headers it sends (on the in-memory transport), and its
construction."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    Message,
    Request,
    Role,
    ToolCall,
    ToolDefinition,
    ToolResult,
    text_part,
    tool_call_part,
    user_message,
)
from agentcore.providers.history import MAX_ARGUMENTS_DEPTH
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat.request import request_body
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import tool_result_part
from tests.loop_helpers import nested

URL = "https://api.example.test/v1/chat/completions"
STREAM_OK = (
    b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n'
)
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city.",
    input_schema='{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}',
)


def history() -> tuple[Message, ...]:
    """A user turn, an assistant turn with text and two calls, their results."""
    return (
        user_message("Weather in Paris and the time?"),
        Message(
            role=Role.ASSISTANT,
            content=(
                text_part("Let me check."),
                tool_call_part(ToolCall("call_a", "get_weather", '{"city":"Paris"}')),
                tool_call_part(ToolCall("call_b", "get_time", "")),
            ),
        ),
        Message(
            role=Role.TOOL,
            content=(
                tool_result_part(ToolResult("call_a", "get_weather", "sunny")),
                tool_result_part(ToolResult("call_b", "get_time", "clock broke", is_error=True)),
            ),
        ),
    )


def calling(call_id: str, name: str) -> Message:
    """An assistant turn making one call."""
    return Message(role=Role.ASSISTANT, content=(tool_call_part(ToolCall(call_id, name, "{}")),))


def answer(call_id: str, name: str, content: str = "ok") -> Message:
    """The tool turn answering one call."""
    return Message(role=Role.TOOL, content=(tool_result_part(ToolResult(call_id, name, content)),))


# --- request_body -------------------------------------------------------------


def test_request_body_full_shape() -> None:
    request = Request(system="Be brief.", messages=history(), tools=(WEATHER,), max_output_tokens=256)
    assert request_body(request, "gpt-4o-mini") == {
        "model": "gpt-4o-mini",
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 256,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and the time?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_b", "content": "Error: clock broke"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
    }


def test_assistant_content_is_null_with_calls_and_no_text() -> None:
    request = Request(
        messages=(
            user_message("hi"),
            Message(role=Role.ASSISTANT, content=(tool_call_part(ToolCall("call_1", "f", "{}")),)),
            answer("call_1", "f"),
        )
    )
    assistant = request_body(request, "m")["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }


def test_assistant_without_text_or_calls_sends_empty_content() -> None:
    request = Request(messages=(user_message("hi"), Message(role=Role.ASSISTANT)))
    assert request_body(request, "m")["messages"][1] == {"role": "assistant", "content": ""}


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ('{"path":"a.txt","text":"lorem ip', "{}"),
        ("[1, 2]", "{}"),
        ("", "{}"),
        ("  ", "{}"),
        ('{"path": "a.txt"}', '{"path": "a.txt"}'),
        (nested(MAX_ARGUMENTS_DEPTH), nested(MAX_ARGUMENTS_DEPTH)),
        (nested(MAX_ARGUMENTS_DEPTH + 1), "{}"),  # the limit Anthropic's re-encoded input needs
        (nested(20_000), "{}"),  # beyond the decoder on every supported Python
    ],
    ids=["cut", "array", "empty", "blank", "object", "deepest kept", "too deep", "beyond the decoder"],
)
def test_arguments_that_are_not_a_json_object_are_sent_as_an_empty_object(arguments: str, sent: str) -> None:
    call = ToolCall("call_1", "write_file", arguments)
    request = Request(
        messages=(
            Message(role=Role.ASSISTANT, content=(tool_call_part(call),)),
            answer("call_1", "write_file"),
        )
    )
    assert request_body(request, "m")["messages"][0]["tool_calls"][0]["function"]["arguments"] == sent


@pytest.mark.parametrize(
    ("content", "is_error", "sent"),
    [
        ("ok", False, "ok"),
        ("", False, ""),
        ("disk full", True, "Error: disk full"),
        ("Error: unknown tool 'x'; tools: search", True, "Error: unknown tool 'x'; tools: search"),
        ("error running tool", True, "error running tool"),
        ("", True, "Error: "),
    ],
)
def test_tool_results_mark_errors_in_content(content: str, is_error: bool, sent: str) -> None:
    result = ToolResult("call_1", "f", content, is_error=is_error)
    request = Request(
        messages=(calling("call_1", "f"), Message(role=Role.TOOL, content=(tool_result_part(result),)))
    )
    assert request_body(request, "m")["messages"][1:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": sent}
    ]


def test_user_text_parts_are_joined_and_results_in_a_user_turn_become_tool_messages() -> None:
    message = Message(
        role=Role.USER,
        content=(tool_result_part(ToolResult("call_1", "f", "42")), text_part("and "), text_part("then?")),
    )
    assert request_body(Request(messages=(calling("call_1", "f"), message)), "m")["messages"][1:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "user", "content": "and then?"},
    ]


@pytest.mark.parametrize(
    ("options", "request_", "expected"),
    [
        (
            {},
            Request(),
            {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}},
        ),
        ({"include_usage": False}, Request(), {"model": "m", "messages": [], "stream": True}),
        (
            {"system_role": "developer", "include_usage": False},
            Request(system="rules"),
            {"model": "m", "messages": [{"role": "developer", "content": "rules"}], "stream": True},
        ),
        (
            {"max_tokens_field": "max_completion_tokens", "include_usage": False},
            Request(max_output_tokens=100),
            {"model": "m", "messages": [], "stream": True, "max_completion_tokens": 100},
        ),
        (
            {
                "extra_body": {"temperature": 0.2, "seed": 7, "parallel_tool_calls": False},
                "include_usage": False,
            },
            Request(),
            {
                "model": "m",
                "messages": [],
                "stream": True,
                "temperature": 0.2,
                "seed": 7,
                "parallel_tool_calls": False,
            },
        ),
        (
            {"extra_body": {"stream_options": {"include_usage": False}}},
            Request(),
            {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": False}},
        ),
    ],
)
def test_request_body_options(options: dict[str, Any], request_: Request, expected: dict[str, Any]) -> None:
    assert request_body(request_, "m", **options) == expected


def test_tool_without_description_leaves_it_out() -> None:
    body = request_body(Request(tools=(ToolDefinition(name="noop"),)), "m")
    assert body["tools"] == [
        {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}
    ]


@pytest.mark.parametrize(
    ("api_key", "headers", "per_request", "expected"),
    [
        (None, None, None, {"Content-Type": "application/json", "Accept": "text/event-stream"}),
        (
            "sk-1",
            None,
            None,
            {
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
                "Authorization": "Bearer sk-1",
            },
        ),
        (
            "sk-1",
            {"X-Title": "app", "authorization": "Bearer gateway"},
            {"x-title": "run 7"},
            {
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
                "authorization": "Bearer gateway",
                "x-title": "run 7",
            },
        ),
    ],
)
def test_request_headers(
    api_key: str | None,
    headers: dict[str, str] | None,
    per_request: dict[str, str] | None,
    expected: dict[str, str],
) -> None:
    transport = MemoryTransport(Reply.of(STREAM_OK))
    model = OpenAIChatModel("m", api_key=api_key, headers=headers, transport=transport)
    list(model.stream(Request(messages=(user_message("hi"),), headers=per_request or {}), Context()))
    assert transport.sent[0].headers == expected


# --- what is sent ---------------------------------------------------------------


def test_sent_body_and_headers_with_key() -> None:
    transport = MemoryTransport(Reply.of(STREAM_OK))
    model = OpenAIChatModel(
        "gpt-4o-mini",
        api_key="sk-secret",
        base_url="https://api.example.test/v1/",
        transport=transport,
        headers={"HTTP-Referer": "https://app.example"},
        extra_body={"temperature": 0},
    )
    request = Request(system="Be brief.", messages=history(), tools=(WEATHER,), headers={"X-Run": "7"})
    parts = list(model.stream(request, Context()))
    assert [p.kind.value for p in parts] == ["text-delta", "step-finish"]
    [sent] = transport.sent
    assert (sent.method, sent.url, sent.timeout) == ("POST", URL, Timeout())
    assert sent.headers == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Authorization": "Bearer sk-secret",
        "HTTP-Referer": "https://app.example",
        "X-Run": "7",
    }
    body = sent.json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["messages"][-1] == {"role": "tool", "tool_call_id": "call_b", "content": "Error: clock broke"}
    assert body["tools"][0]["function"]["name"] == "get_weather"
    assert "max_tokens" not in body


def test_no_authorization_without_key_and_developer_role() -> None:
    transport = MemoryTransport(Reply.of(STREAM_OK))
    model = OpenAIChatModel(
        "llama3.2",
        base_url="http://localhost:11434/v1",
        transport=transport,
        timeout=Timeout(connect=2.0, read=30.0),
        system_role="developer",
        max_tokens_field="max_completion_tokens",
        include_usage=False,
    )
    list(
        model.stream(Request(system="rules", messages=(user_message("hi"),), max_output_tokens=64), Context())
    )
    [sent] = transport.sent
    assert sent.url == "http://localhost:11434/v1/chat/completions"
    assert sent.timeout == Timeout(connect=2.0, read=30.0)
    assert "Authorization" not in sent.headers
    body = sent.json()
    assert body["messages"][0] == {"role": "developer", "content": "rules"}
    assert body["max_completion_tokens"] == 64
    assert "max_tokens" not in body
    assert "stream_options" not in body
    assert "tools" not in body


# --- construction -------------------------------------------------------------


def test_repr_and_errors_never_show_the_key() -> None:
    model = OpenAIChatModel("gpt-4o", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(model)
    assert "sk-very-secret" not in str(model)
    assert repr(model) == "OpenAIChatModel(model='gpt-4o', base_url='https://api.openai.com/v1')"
    assert model.model_id == "gpt-4o"
    assert model.base_url == "https://api.openai.com/v1"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"system_role": "user"}, r"^system_role must be one of 'system', 'developer'; got 'user'$"),
        (
            {"max_tokens_field": "max_output_tokens"},
            r"^max_tokens_field must be one of 'max_tokens', 'max_completion_tokens'; "
            r"got 'max_output_tokens'$",
        ),
        ({"include_usage": 1}, r"^include_usage must be one of True, False; got 1$"),
        ({"reasoning_format": "thoughts"}, r"^reasoning_format must be one of None, 'reasoning_content', "),
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OpenAIChatModel("m", **kwargs)


def _circular() -> dict[str, Any]:
    body: dict[str, Any] = {}
    body["self"] = body
    return body


@pytest.mark.parametrize(
    ("extra_body", "message"),
    [
        ([("seed", 1)], r"^extra_body must be a mapping of str keys to JSON values, got list$"),
        ([], r"^extra_body must be a mapping of str keys to JSON values, got list$"),
        ("seed=1", r"^extra_body must be a mapping of str keys to JSON values, got str$"),
        ("", r"^extra_body must be a mapping of str keys to JSON values, got str$"),
        (5, r"^extra_body must be a mapping of str keys to JSON values, got int$"),
        ({1: "x"}, r"^extra_body must be a mapping of str keys to JSON values; the key 1 is not a str$"),
        ({"stop": {"a"}}, r"^extra_body must be JSON-serializable: .*set"),
        ({"x": object()}, r"^extra_body must be JSON-serializable: .*object"),
        (_circular(), r"^extra_body must be JSON-serializable: .*[Cc]ircular"),
    ],
    ids=[
        "pairs",
        "empty-list",
        "str",
        "empty-str",
        "int",
        "int-key",
        "set-value",
        "object-value",
        "circular",
    ],
)
def test_extra_body_that_is_not_a_json_object_is_a_config_error(extra_body: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OpenAIChatModel("m", extra_body=extra_body)


def test_extra_body_is_copied_at_construction() -> None:
    extra: dict[str, Any] = {"seed": 1}
    transport = MemoryTransport(Reply.of(STREAM_OK))
    model = OpenAIChatModel("m", extra_body=extra, transport=transport)
    extra["seed"] = 2
    list(model.stream(Request(messages=(user_message("hi"),)), Context()))
    assert transport.sent[0].json()["seed"] == 1
