"""``OpenAIResponsesModel.count_tokens``: ``POST /v1/responses/input_tokens``
(https://developers.openai.com/api/docs/guides/token-counting) with the
step's own body less what the endpoint does not take, against a fake API that
refuses what the real one refuses: a path other than the endpoint's, a
missing bearer key, a parameter the endpoint does not document (OpenAI's
400 ``unknown_parameter``). It answers ``{"object": "response.input_tokens",
"input_tokens": N}``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import ModelSettings, Request, user_message
from agentcore.errors import ConfigError
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import (
    Message,
    Reasoning,
    Role,
    ToolResult,
    reasoning_part,
    tool_call_part,
    tool_result_part,
)
from tests.test_count_tokens_anthropic import CALL, HISTORY, WEATHER, count_once, json_reply, step_and_count

KEY = "sk-proj-count-0123456789"
DOCUMENTED = {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning"}
DOCUMENTED |= {"text", "previous_response_id", "conversation", "truncation"}
"""The body parameters of the input-token count reference."""


def api_error(status: int, message: str, *, kind: str = "invalid_request_error", param: str = "") -> Reply:
    error = {"message": message, "type": kind, "param": param or None, "code": "unknown_parameter"}
    return json_reply(status, {"error": error})


def counted(body: dict[str, Any]) -> int:
    """The fake API's count: any rule of the body will do, as long as the test knows it."""
    return 5 + len(json.dumps([body.get("instructions"), body.get("input"), body.get("tools")])) // 4


def count_api(sent: SentRequest) -> Reply:
    """Answer a count request as the API does, refusing what it refuses."""
    if sent.method != "POST" or sent.url != "https://api.openai.com/v1/responses/input_tokens":
        return api_error(404, f"Invalid URL (POST {sent.url})")
    headers = {name.lower(): value for name, value in sent.headers.items()}
    if headers.get("authorization") != f"Bearer {KEY}":
        return api_error(401, "Incorrect API key provided.", kind="invalid_api_key")
    if headers.get("content-type") != "application/json":
        return api_error(400, "Unsupported content type")
    body = sent.json()
    extra = sorted(set(body) - DOCUMENTED)
    if extra:
        return api_error(400, f"Unknown parameter: '{extra[0]}'.", param=extra[0])
    return json_reply(200, {"object": "response.input_tokens", "input_tokens": counted(body)})


def model_for(transport: MemoryTransport, **options: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5", api_key=KEY, transport=transport, **options)


def test_a_count_posts_the_steps_input_to_the_endpoint_and_returns_the_apis_count() -> None:
    sent, body, count = count_once(model_for, count_api)
    assert count == counted(body)
    assert (sent.url, body["model"]) == ("https://api.openai.com/v1/responses/input_tokens", "gpt-5")
    assert body["instructions"] == "Be brief."
    kinds = ["message", "message", "function_call", "function_call_output"]
    assert [item.get("type") for item in body["input"]] == kinds
    assert body["tools"][0]["name"] == "weather"


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ({}, None),
        ({"reasoning_summary": None}, ModelSettings(reasoning_effort="high")),
        ({}, ModelSettings(temperature=0.5, top_p=0.9, tool_choice="weather", parallel_tool_calls=False)),
        ({"extra_body": {"service_tier": "flex", "metadata": {"run": "1"}}}, None),
        ({"reasoning": False, "system_role": "developer"}, ModelSettings(cache_key="k1")),
        ({"server_state": True}, None),
    ],
    ids=[
        "defaults",
        "effort",
        "sampling and tool choice",
        "extra body",
        "developer role, cache key",
        "server state",
    ],
)
def test_the_count_body_is_the_step_body_less_what_the_endpoint_refuses(
    options: dict[str, Any], settings: ModelSettings | None
) -> None:
    history = [
        *HISTORY[:1],
        Message(
            Role.ASSISTANT,
            [
                reasoning_part(
                    Reasoning(
                        text="", data="ENC", id="rs_1", format="openai-responses", origin="api.openai.com"
                    )
                ),
                tool_call_part(CALL),
            ],
        ),
        Message(Role.TOOL, [tool_result_part(ToolResult(CALL.id, CALL.name, "Sunny"))]),
    ]
    request = Request(system="Be brief.", messages=history, tools=(WEATHER,), settings=settings)
    step, body, count = step_and_count(
        model_for, count_api, api_error(500, "The server had an error"), request, **options
    )
    assert body == {name: value for name, value in step.items() if name in DOCUMENTED}
    assert {"stream", "store"} <= set(step) - set(body)
    assert [item["type"] for item in body["input"]].count("reasoning") == 1  # it goes with the count
    assert count == counted(body)


def test_a_history_the_api_refuses_is_the_steps_config_error_and_nothing_is_sent() -> None:
    transport = MemoryTransport(respond=count_api)
    orphan = Message(Role.TOOL, [tool_result_part(ToolResult("call_9", "weather", "?"))])
    with pytest.raises(ConfigError, match=r"messages\[1\]"):
        model_for(transport).count_tokens([user_message("hi"), orphan])
    assert transport.sent == []
