"""One two-step tool conversation through both adapters, provider-neutral.

Each adapter replays recorded steps from a real local HTTP server: a step with
tool calls, then a text answer. The request of step 2 must be valid for its
API, and the run's final history must be valid for BOTH APIs, so a
conversation started on one provider can continue on the other.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    FinishReason,
    LoopOptions,
    Message,
    Request,
    RunResult,
    Usage,
    run,
    tool,
    user_message,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic import request as anthropic_request
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat import request as chat_request
from tests.localserver import LocalServer, Pause, Reply, sse_reply

FIXTURES = Path(__file__).parent / "fixtures"


def body(name: str) -> bytes:
    return (FIXTURES / f"{name}.sse").read_bytes()


def anthropic_problems(payload: dict[str, Any]) -> list[str]:
    """Rules of the Messages API for a request body (docs: messages, tool use)."""
    problems: list[str] = []
    messages = payload["messages"]
    if not messages or messages[0]["role"] != "user":
        problems.append("the first message must be a user turn")
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            problems.append(f"two {before['role']} turns in a row")
    for index, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] == "text" and not block["text"].strip():
                problems.append("an empty text block")
            if block["type"] == "tool_use" and not isinstance(block["input"], dict):
                problems.append("tool_use input is not an object")
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            answer = messages[index + 1] if index + 1 < len(messages) else None
            if answer is None or answer["role"] != "user":
                problems.append("tool_use not followed by a user turn")
                continue
            results = [b["tool_use_id"] for b in answer["content"] if b["type"] == "tool_result"]
            if results != uses:
                problems.append(f"tool_result ids {results} do not answer tool_use ids {uses}")
            kinds = [b["type"] for b in answer["content"]]
            if kinds[: len(results)] != ["tool_result"] * len(results):
                problems.append("tool_result blocks must open the user turn")
    return problems


def openai_problems(payload: dict[str, Any]) -> list[str]:
    """Rules of Chat Completions for a request body: every tool call answered
    by one tool message, right after its assistant message."""
    problems: list[str] = []
    messages = payload["messages"]
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant" and not calls and not message.get("content"):
            problems.append("an assistant message with neither content nor tool calls")
        for call in calls:
            if call["type"] != "function" or not isinstance(call["function"]["arguments"], str):
                problems.append("a tool call that is not a function call with JSON text arguments")
            json.loads(call["function"]["arguments"])
        if calls:
            ids = [c["id"] for c in calls]
            answers = messages[index + 1 : index + 1 + len(ids)]
            if [m.get("role") for m in answers] != ["tool"] * len(ids):
                problems.append("tool calls not followed by one tool message each")
            elif [m["tool_call_id"] for m in answers] != ids:
                problems.append("tool messages do not answer the calls in order")
        if message["role"] == "tool" and not isinstance(message["content"], str):
            problems.append("tool message content is not text")
    return problems


def both_apis_accept(history: tuple[Message, ...]) -> None:
    request = Request(system="Be brief.", messages=history)
    assert anthropic_problems(anthropic_request.request_body(request, "claude-x", max_tokens=1024)) == []
    assert openai_problems(chat_request.request_body(request, "gpt-x")) == []


@tool
def pelican_name_generator() -> str:
    """Suggest a name for a pelican."""
    return "Charles"


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


@tool
def get_product_name() -> str:
    """The product's name."""
    return "Pydantic AI"


def run_replay(model: Any, tools: list[Any]) -> RunResult:
    options = LoopOptions(model=model, messages=[user_message("Go.")], system="Be brief.", tools=tools)
    return run(options).result()


@pytest.fixture
def anthropic_run() -> tuple[RunResult, LocalServer]:
    server = LocalServer(
        [
            sse_reply(body("anthropic/parallel_tools_empty_args"), piece=512),
            sse_reply(body("anthropic/text_after_tool_result_emoji"), piece=512),
        ]
    )
    try:
        model = AnthropicModel("claude-haiku-4-5", api_key="test-key", base_url=server.url)
        return run_replay(model, [pelican_name_generator]), server
    finally:
        server.close()


@pytest.fixture
def openai_run() -> tuple[RunResult, LocalServer]:
    server = LocalServer(
        [
            sse_reply(body("openai_chat/parallel_tools_mixed_args_gpt4o"), piece=512),
            sse_reply(body("openai_chat/text_after_tool_result_gpt4o_mini"), piece=512),
        ]
    )
    try:
        model = OpenAIChatModel("gpt-4o", api_key="test-key", base_url=server.url + "/v1")
        return run_replay(model, [get_weather, get_product_name]), server
    finally:
        server.close()


def test_anthropic_two_step_conversation(anthropic_run: tuple[RunResult, LocalServer]) -> None:
    result, server = anthropic_run
    assert server.hits == 2
    second = server.requests[1]["body"]
    assert anthropic_problems(second) == []
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in second["messages"][2]["content"]] == [
        "toolu_01LtHJmixrs9NcWQkK8hu8hj",
        "toolu_01N8a4jWyf116qKTMqKKmjyt",
    ]
    assert [b["content"] for b in second["messages"][2]["content"]] == ["Charles", "Charles"]
    assert result.finish_reason is FinishReason.STOP
    assert result.text.startswith("Here are two great names for your pet pelican:")
    assert result.usage == Usage(542 + 678, 62 + 82, 0, 0)
    both_apis_accept(result.messages)


def test_openai_two_step_conversation(openai_run: tuple[RunResult, LocalServer]) -> None:
    result, server = openai_run
    assert server.hits == 2
    second = server.requests[1]["body"]
    assert openai_problems(second) == []
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert [m["content"] for m in second["messages"][3:]] == ["sunny in Mexico City", "Pydantic AI"]
    assert [m["tool_call_id"] for m in second["messages"][3:]] == [
        "call_NS4iQj14cDFwc0BnrKqDHavt",
        "call_SkGkkGDvHQEEk0CGbnAh2AQw",
    ]
    assert result.finish_reason is FinishReason.STOP
    expected = json.loads(
        (FIXTURES / "openai_chat/text_after_tool_result_gpt4o_mini.expected.json").read_text()
    )
    assert result.text == expected["text"]
    step1 = json.loads((FIXTURES / "openai_chat/parallel_tools_mixed_args_gpt4o.expected.json").read_text())
    assert result.usage == Usage(**step1["usage"]) + Usage(**expected["usage"])
    both_apis_accept(result.messages)


def test_a_history_with_a_malformed_call_stays_valid_for_both_apis() -> None:
    from agentcore import ToolCall, ToolResult, text_part, tool_call_part, tool_result_part
    from agentcore.types import Role

    history = (
        user_message("Go."),
        Message(
            role=Role.ASSISTANT,
            content=[text_part("Calling."), tool_call_part(ToolCall("c1", "get_weather", '{"city": '))],
        ),
        Message(
            role=Role.TOOL, content=[tool_result_part(ToolResult("c1", "get_weather", "Error: bad", True))]
        ),
        user_message("Try again."),
    )
    both_apis_accept(history)


@pytest.mark.parametrize(
    ("dialect", "recording"),
    [
        ("anthropic", "anthropic/text_after_tool_result_emoji"),
        ("openai", "openai_chat/text_after_tool_result_gpt4o_mini"),
    ],
)
def test_the_end_of_a_run_is_not_held_by_a_server_that_keeps_the_body_open(
    dialect: str, recording: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After message_stop / [DONE] some servers keep the body open for a while.
    # The adapter drains it for connection reuse (here up to 2 s), but only
    # after step-finish and finish have reached the reader.
    monkeypatch.setattr("agentcore.transport.http.DRAIN_SECONDS", 2.0)
    server = LocalServer([Reply(actions=[body(recording), Pause(3.0)])])
    try:
        model: Any = (
            AnthropicModel("claude-x", api_key="k", base_url=server.url)
            if dialect == "anthropic"
            else OpenAIChatModel("gpt-x", api_key="k", base_url=server.url + "/v1")
        )
        reader = run(LoopOptions(model=model, messages=[user_message("Go.")]))
        arrivals = [(part.kind.value, time.monotonic()) for part in reader]
    finally:
        server.close()
    kinds = [kind for kind, _ in arrivals]
    assert kinds[-2:] == ["step-finish", "finish"]
    assert kinds.count("text-delta") >= 1
    first_text = next(at for kind, at in arrivals if kind == "text-delta")
    assert arrivals[-1][1] - first_text < 1.0  # not the 2 s drain
