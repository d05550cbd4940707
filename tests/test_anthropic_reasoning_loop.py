"""A tool loop with thinking on, through ``agentcore.run()``, against a fake
API (answering on the in-memory transport) that checks each history the way
the Anthropic docs say the Messages API does, and answers the API's real 400
when it is wrong.

The rules the server enforces (https://platform.claude.com/docs/en/build-with-claude/thinking,
"Thinking with tool use", "Preserving thinking blocks" and "Thinking
encryption"; the 400 messages are the API's own):

* every ``thinking`` block sent back carries a text and signature the server
  issued together, byte for byte, and every ``redacted_thinking`` block data
  it issued ("Invalid `signature` in `thinking` block");
* the thinking blocks of the latest assistant message are exactly those of
  the response it came from, in order: none dropped, edited or moved
  ("... cannot be modified");
* with manual extended thinking (``thinking: {"type": "enabled"}``) the
  assistant message of the tool-use turn being continued starts with a
  thinking block ("a final `assistant` message must start with a thinking
  block"); adaptive thinking has no such rule;
* the tool results of a user turn answer exactly the calls of the assistant
  message before it (https://docs.anthropic.com/en/docs/build-with-claude/tool-use),
  whose ids match ``^[a-zA-Z0-9_-]+$`` (https://docs.anthropic.com/en/api/messages).

The scripted model thinks before each step, and in the first step between its
two tool calls (interleaved thinking), with a redacted block among them.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from agentcore import LoopOptions, ModelSettings, RunError, run, tool
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import tool_use_id
from agentcore.tools import ToolSet
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import (
    ContentPartKind,
    FinishReason,
    Message,
    Reasoning,
    Role,
    StreamPartKind,
    ToolCall,
    ToolResult,
    reasoning_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from tests.canned import json_answer
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
    tool_start,
)
from tests.test_anthropic_reasoning import redacted_start, signature_delta, thinking_delta, thinking_start

KEY = "sk-ant-api03-reasoning-loop-0000"
QUESTION = "Weather in Oslo and Lima, and the time?"
SETTINGS = ModelSettings(thinking=True, thinking_budget=2048)

# The scripted model's steps: (kind, ...) blocks in the order it sends them.
STEPS: list[list[tuple[str, ...]]] = [
    [
        ("thinking", "The user wants two things. ", "First the weather in Oslo.", "EqQBCkgIARAB+/s1=="),
        ("text", "Let me check."),
        ("tool_use", "toolu_01", "get_weather", '{"city": "Oslo"}'),
        ("thinking", "While that runs, ", "I also need the time. ✓", "EqQBCkgIARAB+/s2=="),
        ("redacted_thinking", "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"),
        ("tool_use", "toolu_02", "get_time", ""),
    ],
    [
        ("thinking", "Oslo has rain. ", "Lima next.", "EqQBCkgIARAB+/s3=="),
        ("tool_use", "toolu_03", "get_weather", '{"city": "Lima"}'),
    ],
    [
        ("thinking", "I have everything: ", "rain, sun, noon.", "EqQBCkgIARAB+/s4=="),
        ("text", "Oslo: rain. Lima: sun. It is noon."),
    ],
]
FOLLOW_UP = [
    ("thinking", "Same cities, ", "tomorrow.", "EqQBCkgIARAB+/s5=="),
    ("text", "Tomorrow: sun in both."),
]


def step_body(blocks: list[tuple[str, ...]]) -> bytes:
    events: list[dict[str, Any]] = [message_start(input_tokens=40, output_tokens=1)]
    calls = False
    for index, (kind, *rest) in enumerate(blocks):
        if kind == "thinking":
            first, second, signature = rest
            events += [
                thinking_start(index),
                thinking_delta(index, first),
                thinking_delta(index, second),
                signature_delta(index, signature),
            ]
        elif kind == "redacted_thinking":
            events.append(redacted_start(index, rest[0]))
        elif kind == "text":
            events += [text_start(index), text_delta(index, rest[0])]
        else:
            call_id, name, args = rest
            events += [tool_start(index, call_id, name), json_delta(index, args)]
            calls = True
        events.append(block_stop(index))
    events += [message_delta("tool_use" if calls else "end_turn", output_tokens=30), MESSAGE_STOP]
    return sse(*events)


def issued_blocks(blocks: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """The thinking blocks of a step as the API's response content holds them."""
    out: list[dict[str, Any]] = []
    for kind, *rest in blocks:
        if kind == "thinking":
            out.append({"type": "thinking", "thinking": rest[0] + rest[1], "signature": rest[2]})
        elif kind == "redacted_thinking":
            out.append({"type": "redacted_thinking", "data": rest[0]})
    return out


def thinking_text(blocks: list[tuple[str, ...]]) -> list[str]:
    return [rest[0] + rest[1] for kind, *rest in blocks if kind == "thinking"]


def invalid(message: str) -> Reply:
    """The API's 400 body (https://docs.anthropic.com/en/api/errors)."""
    return json_answer(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


MUST_START = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. "
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding "
    "the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
    "from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation "
    "at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)


class ThinkingAPI:
    """The responder: validates each request, then answers the scripted step."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.issued: dict[str, list[dict[str, Any]]] = {}
        """Tool-use id -> the thinking blocks of the response that made the call."""
        self.signatures: dict[str, str] = {}
        """Signature -> the thinking text it was issued with."""
        self.data: set[str] = set()
        self.refusals: list[str] = []

    def __call__(self, sent: SentRequest) -> Reply:
        body = sent.json()
        with self.lock:
            problem = self.check(body)
            if problem is not None:
                self.refusals.append(problem)
                return invalid(problem)
            blocks = self.next_step(body["messages"])
            thinking = issued_blocks(blocks)
            for block in thinking:
                if block["type"] == "thinking":
                    self.signatures[block["signature"]] = block["thinking"]
                else:
                    self.data.add(block["data"])
            for kind, *rest in blocks:
                if kind == "tool_use":
                    self.issued[rest[0]] = thinking
        return Reply.of(step_body(blocks))

    @staticmethod
    def next_step(messages: list[dict[str, Any]]) -> list[tuple[str, ...]]:
        """The step after the conversation's last plain user message."""
        results = 0
        for turn in reversed(messages):
            if turn["role"] == "user" and not any(b["type"] == "tool_result" for b in turn["content"]):
                break
            results += turn["role"] == "user"
        if results == 0 and len(messages) > 1:
            return FOLLOW_UP
        return STEPS[results]

    def check(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        for i, turn in enumerate(messages):
            for j, block in enumerate(turn["content"]):
                if block["type"] == "tool_use" and not re.fullmatch(r"[a-zA-Z0-9_-]+", block["id"]):
                    where = f"messages.{i}.content.{j}.tool_use.id"
                    return f"{where}: String should match pattern '^[a-zA-Z0-9_-]+$'"
                if (
                    block["type"] == "thinking"
                    and self.signatures.get(block["signature"]) != block["thinking"]
                ):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                if block["type"] == "redacted_thinking" and block["data"] not in self.data:
                    return f"messages.{i}.content.{j}: Invalid `data` in `redacted_thinking` block"
            if turn["role"] == "user" and i > 0:
                called = [b["id"] for b in messages[i - 1]["content"] if b["type"] == "tool_use"]
                answered = [b["tool_use_id"] for b in turn["content"] if b["type"] == "tool_result"]
                if sorted(called) != sorted(answered):
                    return f"messages.{i}: tool_result blocks must answer every tool_use of messages.{i - 1}"
        latest = max((i for i, t in enumerate(messages) if t["role"] == "assistant"), default=None)
        if latest is not None:
            content = messages[latest]["content"]
            calls = [b["id"] for b in content if b["type"] == "tool_use"]
            sent = [b for b in content if b["type"] in ("thinking", "redacted_thinking")]
            if calls and sent != self.issued.get(calls[0], []):
                return (
                    f"messages.{latest}.content: `thinking` or `redacted_thinking` blocks in the latest "
                    "assistant message cannot be modified. These blocks must remain as they were in the "
                    "original response."
                )
            last = messages[-1]
            continues = last["role"] == "user" and any(b["type"] == "tool_result" for b in last["content"])
            first = content[0]["type"]
            manual = body.get("thinking", {}).get("type") == "enabled"
            if (
                manual
                and continues
                and latest == len(messages) - 2
                and first not in ("thinking", "redacted_thinking")
            ):
                return MUST_START.format(index=latest, found=first)
        return None


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return {"Oslo": "rain", "Lima": "sun"}[city]


@tool
def get_time() -> str:
    """The time now."""
    return "noon"


TOOLS = ToolSet([get_weather, get_time])


@pytest.fixture
def api() -> ThinkingAPI:
    return ThinkingAPI()


@pytest.fixture
def transport(api: ThinkingAPI) -> MemoryTransport:
    return MemoryTransport(respond=api)


def model(transport: MemoryTransport, settings: ModelSettings | None = SETTINGS) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key=KEY, transport=transport, settings=settings)


def options(
    transport: MemoryTransport,
    messages: list[Message],
    model_settings: ModelSettings | None = SETTINGS,
    **kwargs: Any,
) -> LoopOptions:
    kwargs.setdefault("retry_base_delay", 0.01)
    return LoopOptions(model=model(transport, model_settings), tools=TOOLS, messages=messages, **kwargs)


def saved(messages: Any) -> list[Message]:
    """``messages`` saved as JSON text and loaded back, as an application would."""
    text = json.dumps([message.to_dict() for message in messages])
    return [Message.from_dict(data) for data in json.loads(text)]


def test_three_steps_with_interleaved_thinking_complete_and_stream_the_reasoning(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    reader = run(options(transport, [user_message(QUESTION)]))
    parts = list(reader)
    result = reader.result()

    assert api.refusals == []
    assert len(transport.sent) == 3
    assert all(r.json()["thinking"] == {"type": "enabled", "budget_tokens": 2048} for r in transport.sent)
    assert result.finish_reason is FinishReason.STOP
    assert result.text == "Oslo: rain. Lima: sun. It is noon."
    every_thought = [text for step in STEPS for text in thinking_text(step)]
    streamed = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    assert streamed == "".join(every_thought)
    blocks = [p.reasoning for p in parts if p.reasoning is not None]
    assert [(r.text, r.signature, r.data) for r in blocks] == [
        (b.get("thinking", ""), b.get("signature", ""), b.get("data", ""))
        for step in STEPS
        for b in issued_blocks(step)
    ]
    assert {(r.format, r.origin) for r in blocks} == {("anthropic", "api.anthropic.com")}
    assert result.reasoning == (
        "The user wants two things. First the weather in Oslo.\n\nWhile that runs, I also need the time. ✓",
        "Oslo has rain. Lima next.",
        "I have everything: rain, sun, noon.",
    )
    first_step = result.messages[1]
    assert [p.kind for p in first_step.content] == [
        ContentPartKind.REASONING,
        ContentPartKind.TEXT,
        ContentPartKind.TOOL_CALL,
        ContentPartKind.REASONING,
        ContentPartKind.REASONING,
        ContentPartKind.TOOL_CALL,
    ]
    third_request = transport.sent[2].json()["messages"]
    assert [b["type"] for b in third_request[1]["content"]] == [
        "thinking",
        "text",
        "tool_use",
        "thinking",
        "redacted_thinking",
        "tool_use",
    ]


def test_a_history_saved_as_json_mid_loop_continues_in_a_new_run(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    first = run(options(transport, [user_message(QUESTION)], step_limit=1)).result()
    assert first.finish_reason is FinishReason.STEP_LIMIT
    assert [m.role for m in first.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]

    second = run(options(transport, saved(first.messages))).result()
    assert api.refusals == []
    assert second.text == "Oslo: rain. Lima: sun. It is noon."
    assert second.reasoning == ("Oslo has rain. Lima next.", "I have everything: rain, sun, noon.")

    third = run(options(transport, [*saved(second.messages), user_message("And tomorrow?")])).result()
    assert api.refusals == []
    assert third.text == "Tomorrow: sun in both."
    assert third.reasoning == ("Same cities, tomorrow.",)
    every_block = [b for turn in transport.sent[-1].json()["messages"] for b in turn["content"]]
    assert sum(b["type"] in ("thinking", "redacted_thinking") for b in every_block) == 5
    assert len(transport.sent) == 4


def test_the_server_answers_the_api_400_for_an_edited_thinking_block(transport: MemoryTransport) -> None:
    first = run(options(transport, [user_message(QUESTION)], step_limit=1)).result()
    history = list(saved(first.messages))
    edited = [
        reasoning_part(Reasoning(**{**p.reasoning.to_dict(), "text": p.reasoning.text + " "}))
        if p.reasoning is not None and p.reasoning.text
        else p
        for p in history[1].content
    ]
    history[1] = Message(role=Role.ASSISTANT, content=edited)
    with pytest.raises(RunError) as info:
        run(options(transport, history)).result()
    err = info.value.err
    assert isinstance(err, ModelError)
    assert err.error_class is ErrorClass.INVALID_REQUEST
    assert "Invalid `signature` in `thinking` block" in str(err)


FOREIGN_TURN = [
    user_message(QUESTION),
    Message(
        role=Role.ASSISTANT,
        content=[
            reasoning_part(Reasoning("Oslo first.", format="openai-chat", origin="api.deepseek.com")),
            tool_call_part(
                ToolCall(id="functions.get_weather:0", name="get_weather", input='{"city": "Oslo"}')
            ),
        ],
    ),
    Message(
        role=Role.TOOL,
        content=[
            tool_result_part(
                ToolResult(tool_call_id="functions.get_weather:0", name="get_weather", content="rain")
            )
        ],
    ),
]
"""A tool-use turn begun on another provider (Kimi-style call id; its reasoning cannot go back)."""


def test_switching_in_mid_turn_with_manual_thinking_leaves_thinking_out_and_is_accepted(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    result = run(options(transport, FOREIGN_TURN, step_limit=1)).result()
    assert api.refusals == []
    sent = transport.sent[0].json()
    assert "thinking" not in sent
    assert sent["messages"][1]["content"] == [
        {
            "type": "tool_use",
            "id": tool_use_id("functions.get_weather:0"),
            "name": "get_weather",
            "input": {"city": "Oslo"},
        }
    ]
    assert result.steps[0].reasoning  # the server still answered with thinking: the step kept it


def test_the_same_request_with_thinking_forced_on_is_the_api_400(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    """What agentcore avoids: ``extra_body`` is sent as given, so it can force
    the request the API refuses."""
    forced = ModelSettings(extra_body={"thinking": {"type": "enabled", "budget_tokens": 2048}})
    with pytest.raises(RunError) as info:
        run(options(transport, FOREIGN_TURN, settings=forced)).result()
    assert api.refusals == [MUST_START.format(index=1, found="tool_use")]
    assert isinstance(info.value.err, ModelError)
    assert info.value.err.error_class is ErrorClass.INVALID_REQUEST
    assert "a final `assistant` message must start with a thinking block" in str(info.value.err)


def test_adaptive_thinking_continues_a_switched_turn_as_it_is(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    adaptive = ModelSettings(thinking=True)
    result = run(options(transport, FOREIGN_TURN, model_settings=adaptive, step_limit=1)).result()
    assert api.refusals == []
    assert transport.sent[0].json()["thinking"] == {"type": "adaptive"}
    assert result.finish_reason is FinishReason.STEP_LIMIT


def test_reasoning_from_another_anthropic_origin_is_not_sent(
    transport: MemoryTransport, api: ThinkingAPI
) -> None:
    """Same wire format, another service (a gateway, another account's proxy):
    its signatures are not this server's to verify, so they stay home."""
    other = Reasoning(
        "Oslo first.", signature="EqQBCkgIARAB+/zz==", format="anthropic", origin="gateway.example"
    )
    history = [
        FOREIGN_TURN[0],
        Message(role=Role.ASSISTANT, content=[reasoning_part(other), *FOREIGN_TURN[1].content[1:]]),
        FOREIGN_TURN[2],
    ]
    run(options(transport, history, step_limit=1)).result()
    assert api.refusals == []
    assert [b["type"] for b in transport.sent[0].json()["messages"][1]["content"]] == ["tool_use"]
