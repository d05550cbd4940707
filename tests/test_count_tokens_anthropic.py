"""``AnthropicModel.count_tokens``: ``POST /v1/messages/count_tokens``
(https://platform.claude.com/docs/en/api/messages/count_tokens) with the
step's own body less what the endpoint does not take, against a fake API
that refuses what the real one refuses: a path other than the endpoint's, a
missing ``x-api-key`` or ``anthropic-version``, a field the endpoint does
not document (the API's 400: "Extra inputs are not permitted"), a body
without ``model`` or ``messages``. It answers ``{"input_tokens": N}``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agentcore import ModelSettings, Request, ToolDefinition, user_message
from agentcore.context import Context
from agentcore.errors import ConfigError, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import Message, Role, ToolCall, ToolResult, text_part, tool_call_part, tool_result_part

KEY = "sk-ant-count-0123456789"
BASE = "https://api.anthropic.com"
DOCUMENTED = {"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config"}
DOCUMENTED |= {"cache_control", "context_management", "mcp_servers"}
"""The body fields of the count endpoint's reference (the last two with their betas)."""
WEATHER = ToolDefinition(
    "weather",
    "The weather in a city.",
    json.dumps({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
)
CALL = ToolCall(id="toolu_01", name="weather", input='{"city": "Paris"}')
HISTORY = [
    user_message("What is the weather in Paris?"),
    Message(Role.ASSISTANT, [text_part("Let me look."), tool_call_part(CALL)]),
    Message(Role.TOOL, [tool_result_part(ToolResult(CALL.id, CALL.name, "Sunny, 21 C"))]),
]


def json_reply(status: int, payload: Any) -> Reply:
    return Reply.of(json.dumps(payload).encode(), status=status, headers={"content-type": "application/json"})


def api_error(status: int, kind: str, message: str) -> Reply:
    return json_reply(status, {"type": "error", "error": {"type": kind, "message": message}})


def counted(body: dict[str, Any]) -> int:
    """The fake API's count: any rule of the body will do, as long as the test knows it."""
    return 3 + len(json.dumps([body.get("system"), body["messages"], body.get("tools")])) // 4


def count_api(sent: SentRequest) -> Reply:
    """Answer a count request as the API does, refusing what it refuses."""
    if sent.method != "POST" or sent.url != BASE + "/v1/messages/count_tokens":
        return api_error(404, "not_found_error", f"Not found: {sent.url}")
    headers = {name.lower(): value for name, value in sent.headers.items()}
    if headers.get("x-api-key") != KEY:
        return api_error(401, "authentication_error", "invalid x-api-key")
    if headers.get("anthropic-version") != "2023-06-01" or headers.get("content-type") != "application/json":
        return api_error(400, "invalid_request_error", "anthropic-version: header is required")
    body = sent.json()
    extra = sorted(set(body) - DOCUMENTED)
    if extra:
        return api_error(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
    if "model" not in body or not body.get("messages"):
        return api_error(400, "invalid_request_error", "messages: Field required")
    return json_reply(200, {"input_tokens": counted(body)})


def model_for(transport: MemoryTransport, **options: Any) -> AnthropicModel:
    return AnthropicModel("claude-sonnet-4-5", api_key=KEY, transport=transport, **options)


def step_and_count(
    make: Callable[..., AnthropicModel | OpenAIResponsesModel],
    api: Callable[[SentRequest], Reply],
    error: Reply,
    request: Request,
    **options: Any,
) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The body a step of ``request`` sends (the stream fails with ``error``
    after sending), and the body and the result of counting the same request
    against the fake ``api`` on a model made the same way, with the request's
    settings merged into the model's."""
    stepped = MemoryTransport(error)
    with pytest.raises(ModelError):
        list(make(stepped, **options).stream(request, Context()))
    counting = MemoryTransport(respond=api)
    settings = (options.get("settings") or ModelSettings()).merged(request.settings)
    model = make(counting, **{**options, "settings": settings})
    count = model.count_tokens(request.messages, system=request.system, tools=request.tools)
    return stepped.sent[0].json(), counting.sent[0].json(), count


def count_once(
    make: Callable[..., AnthropicModel | OpenAIResponsesModel], api: Callable[[SentRequest], Reply]
) -> tuple[SentRequest, dict[str, Any], int]:
    """The one request, its body and the result of counting :data:`HISTORY`
    with a system prompt and :data:`WEATHER` against the fake ``api``; the
    request asked for JSON and its answer was read to its end."""
    transport = MemoryTransport(respond=api)
    count = make(transport).count_tokens(HISTORY, system="Be brief.", tools=[WEATHER])
    (sent,) = transport.sent
    assert (sent.headers["accept"], sent.reused) == ("application/json", True)
    return sent, sent.json(), count


def test_a_count_posts_the_steps_body_to_the_endpoint_and_returns_the_apis_count() -> None:
    sent, body, count = count_once(model_for, count_api)
    assert count == counted(body)
    assert (sent.url, body["model"]) == (
        "https://api.anthropic.com/v1/messages/count_tokens",
        "claude-sonnet-4-5",
    )
    assert body["system"] == "Be brief."
    assert [turn["role"] for turn in body["messages"]] == ["user", "assistant", "user"]
    assert body["tools"][0]["name"] == "weather"


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ({}, None),
        ({"settings": ModelSettings(thinking_budget=2048)}, None),
        ({}, ModelSettings(temperature=0.5, top_p=0.9, stop_sequences=("END",), tool_choice="weather")),
        ({"extra_body": {"top_k": 5, "metadata": {"user_id": "u1"}}}, None),
        ({"settings": ModelSettings(cache_system=True, cache_tools=True, reasoning_effort="high")}, None),
    ],
    ids=["defaults", "thinking", "sampling and tool choice", "extra body", "cache breakpoints and effort"],
)
def test_the_count_body_is_the_step_body_less_what_the_endpoint_refuses(
    options: dict[str, Any], settings: ModelSettings | None
) -> None:
    request = Request(system="Be brief.", messages=HISTORY, tools=(WEATHER,), settings=settings)
    step, body, count = step_and_count(
        model_for, count_api, api_error(500, "api_error", "down"), request, **options
    )
    assert body == {name: value for name, value in step.items() if name in DOCUMENTED}
    assert {"max_tokens", "stream"} <= set(step) - set(body)  # a count generates nothing
    assert count == counted(body)


def test_thinking_goes_with_the_count_as_with_the_step() -> None:
    transport = MemoryTransport(respond=count_api)
    model = model_for(transport, settings=ModelSettings(thinking_budget=2048))
    model.count_tokens([user_message("Think about Paris.")])
    model.count_tokens(HISTORY)  # a tool-use turn begun without thinking finishes without it
    assert transport.sent[0].json()["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "thinking" not in transport.sent[1].json()


def test_the_adapters_headers_go_with_the_count() -> None:
    transport = MemoryTransport(respond=count_api)
    beta = "context-management-2025-06-27"
    model_for(transport, headers={"anthropic-beta": beta, "X-Gateway": "g1"}).count_tokens(HISTORY)
    headers = transport.sent[0].headers
    assert (headers["anthropic-beta"], headers["X-Gateway"], headers["x-api-key"]) == (beta, "g1", KEY)


def test_a_history_the_api_refuses_is_the_steps_config_error_and_nothing_is_sent() -> None:
    transport = MemoryTransport(respond=count_api)
    orphan = Message(Role.TOOL, [tool_result_part(ToolResult("toolu_99", "weather", "?"))])
    with pytest.raises(ConfigError, match=r"messages\[1\]"):
        model_for(transport).count_tokens([user_message("hi"), orphan])
    with pytest.raises(ConfigError, match="no messages"):
        model_for(transport).count_tokens([])
    assert transport.sent == []


def test_a_base_url_with_a_path_keeps_it() -> None:
    transport = MemoryTransport(json_reply(200, {"input_tokens": 12}))
    model = AnthropicModel(
        "claude-sonnet-4-5", base_url="https://gateway.example/anthropic", transport=transport
    )
    assert model.count_tokens(HISTORY) == 12
    assert transport.sent[0].url == "https://gateway.example/anthropic/v1/messages/count_tokens"
