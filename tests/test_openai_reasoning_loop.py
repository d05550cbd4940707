"""Three-step tool loops with thinking on, through ``agentcore.run()`` and the
OpenAI chat adapter, against fake APIs (answering on the in-memory transport)
that check every incoming history the way each provider documents and answer
with the provider's real 400 when it is wrong:

* DeepSeek (https://api-docs.deepseek.com/guides/thinking_mode, "Tool
  Calls"): between two user messages in which the model called a tool, every
  assistant message must carry ``reasoning_content`` in every later request;
* OpenRouter in front of Claude
  (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens,
  "Preserving reasoning blocks"): the ``reasoning_details`` of the last
  assistant turn with tool calls must come back, unmodified;
* Gemini's OpenAI-compatible endpoint
  (https://ai.google.dev/gemini-api/docs/thought-signatures): in the current
  turn, the first function call of every step must carry its thought
  signature (``extra_content.google.thought_signature``), or the documented
  dummy for calls Gemini did not make.

Each loop streams its reasoning to the reader; its history is saved as JSON
after two steps and continued in a new run, with a new adapter. A control
run for each validator shows it refuses a history without the reasoning.
"""

# ruff: noqa: E501  (the providers' error bodies are kept on one line, as sent)

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from agentcore import (
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    Role,
    RunError,
    RunResult,
    StreamPart,
    StreamPartKind,
    run,
    user_message,
)
from agentcore.providers.config import origin
from agentcore.providers.gemini.request import DUMMY_SIGNATURE
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat.request import GEMINI, NONE
from agentcore.providers.openai.chat.stream import REASONING_CONTENT, REASONING_DETAILS
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from tests.canned import json_answer
from tests.loop_helpers import FuncTool, collect

REASONING = (
    "The user asks about Paris. I need the weather first.",
    "Sunny in Paris. Now the local time, to say whether it is still light.",
    "It is 14:00 and sunny: a good afternoon for a walk.",
)
"""The reasoning each step streams (fragments of it, split every 9 characters)."""
ANSWER = "It is sunny in Paris and 14:00 there: go for a walk."
CALLS = (("call_w", "get_weather", '{"city":"Paris"}'), ("call_t", "get_time", '{"tz":"Europe/Paris"}'))

DEEPSEEK_400 = {
    "error": {
        "message": "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}
"""DeepSeek's answer to a tool-call turn without its reasoning (as reported
verbatim by its users, e.g. github.com/decolua/9router/issues/773)."""
ANTHROPIC_THINKING = "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
ANTHROPIC_MODIFIED = "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."


def openrouter_400(message: str) -> dict[str, Any]:
    """OpenRouter's wrapper around an upstream (Anthropic) 400."""
    raw = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    return {
        "error": {
            "message": "Provider returned error",
            "code": 400,
            "metadata": {"raw": raw, "provider_name": "Anthropic"},
        }
    }


GEMINI_400 = [
    {
        "error": {
            "code": 400,
            "message": "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:get_weather` , position 2. please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
            "status": "INVALID_ARGUMENT",
        }
    }
]
"""Gemini's OpenAI-compatible endpoint's answer to a function call without its
signature (reported verbatim at discuss.ai.google.dev/t/109823)."""


def pieces(text: str, size: int = 9) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def delta(finish: str | None = None, usage: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def tool_call(step: int, **extra: Any) -> dict[str, Any]:
    call_id, name, arguments = CALLS[step]
    return {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
        **extra,
    }


def current_turn(messages: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The (index, message) pairs after the last user message."""
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return [(i, m) for i, m in enumerate(messages) if i > last_user]


# --- the three providers ----------------------------------------------------------


def deepseek_stream(step: int) -> bytes:
    usage = {"prompt_tokens": 40 + step, "completion_tokens": 20, "prompt_cache_hit_tokens": 32}
    thinking = [delta(reasoning_content=p, content=None) for p in pieces(REASONING[step])]
    if step < 2:
        call_id, name, arguments = CALLS[step]
        head = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        args = [delta(tool_calls=[{"index": 0, "function": {"arguments": a}}]) for a in pieces(arguments, 5)]
        return sse(*thinking, delta(tool_calls=[head]), *args, delta("tool_calls", usage))
    text = [delta(content=p, reasoning_content=None) for p in pieces(ANSWER)]
    return sse(*thinking, *text, delta("stop", usage))


def deepseek_check(messages: list[dict[str, Any]]) -> Reply | None:
    """Every assistant message between two user messages in which the model
    called a tool carries ``reasoning_content`` (DeepSeek's thinking mode)."""
    spans: list[list[dict[str, Any]]] = [[]]
    for message in messages:
        if message["role"] == "user":
            spans.append([])
        elif message["role"] == "assistant":
            spans[-1].append(message)
    for span in spans:
        if any(m.get("tool_calls") for m in span) and not all(
            isinstance(m.get("reasoning_content"), str) for m in span
        ):
            return json_answer(400, DEEPSEEK_400)
    return None


SIGNATURES = ("RXRBQkNrWUlDeGdDS2tDVg==", "RXRBQkNrWUlDeGdDS2tDVw==", "RXRBQkNrWUlDeGdDS2tDWA==")


def openrouter_details(step: int) -> list[dict[str, Any]]:
    """The one entry OpenRouter streams for a step of Claude's thinking, merged."""
    return [
        {
            "type": "reasoning.text",
            "text": REASONING[step],
            "signature": SIGNATURES[step],
            "format": "anthropic-claude-v1",
            "index": 0,
        }
    ]


def openrouter_stream(step: int) -> bytes:
    fmt = "anthropic-claude-v1"
    start = delta(
        role="assistant",
        content="",
        reasoning=None,
        reasoning_details=[
            {"type": "reasoning.text", "text": "", "signature": "", "format": fmt, "index": 0}
        ],
    )
    thinking = [
        delta(
            role="assistant",
            content="",
            reasoning=p,
            reasoning_details=[{"type": "reasoning.text", "text": p, "format": fmt, "index": 0}],
        )
        for p in pieces(REASONING[step])
    ]
    signed = delta(
        role="assistant",
        content="",
        reasoning=None,
        reasoning_details=[
            {"type": "reasoning.text", "signature": SIGNATURES[step], "format": fmt, "index": 0}
        ],
    )
    usage = {"prompt_tokens": 50, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 0}}
    if step < 2:
        return sse(
            start,
            *thinking,
            signed,
            delta(tool_calls=[tool_call(step)], reasoning_details=[]),
            delta("tool_calls"),
            delta(None, usage),
        )
    text = [delta(content=p, reasoning=None, reasoning_details=[]) for p in pieces(ANSWER)]
    return sse(start, *thinking, signed, *text, delta("stop"), delta(None, usage))


def openrouter_check(messages: list[dict[str, Any]]) -> Reply | None:
    """The last assistant turn with tool calls carries its ``reasoning_details``
    exactly as streamed (Claude verifies the signature of the thinking that
    precedes the latest tool use)."""
    turns = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    if not turns:
        return None
    step = len(turns) - 1
    sent = turns[-1].get("reasoning_details")
    if not sent:
        return json_answer(400, openrouter_400(ANTHROPIC_THINKING))
    if sent != openrouter_details(step):
        return json_answer(400, openrouter_400(ANTHROPIC_MODIFIED))
    return None


def gemini_stream(step: int) -> bytes:
    thinking = [delta(role="assistant", reasoning_content=p) for p in pieces(REASONING[step])]
    usage = {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}
    if step < 2:
        signature = {"google": {"thought_signature": SIGNATURES[step]}}
        return sse(
            *thinking,
            delta(role="assistant", tool_calls=[tool_call(step, extra_content=signature)]),
            delta("tool_calls", usage),
        )
    return sse(*thinking, *[delta(role="assistant", content=p) for p in pieces(ANSWER)], delta("stop", usage))


def gemini_check(messages: list[dict[str, Any]]) -> Reply | None:
    """In the current turn, the first function call of every step carries a
    thought signature: the one Gemini issued, or the documented dummy."""
    for _, message in current_turn(messages):
        calls = message.get("tool_calls") or []
        if calls:
            signature = ((calls[0].get("extra_content") or {}).get("google") or {}).get("thought_signature")
            if signature not in (*SIGNATURES, DUMMY_SIGNATURE):
                return json_answer(400, GEMINI_400)
    return None


@attrs.frozen
class Provider:
    name: str
    stream: Callable[[int], bytes]
    check: Callable[[list[dict[str, Any]]], Reply | None]
    reasoning_format: str | None = None
    """The adapter option (None: worked out from what the history holds)."""
    settings: ModelSettings | None = None


PROVIDERS = [
    Provider(
        "deepseek",
        deepseek_stream,
        deepseek_check,
        settings=ModelSettings(thinking=True, reasoning_effort="high"),
    ),
    Provider(
        "openrouter",
        openrouter_stream,
        openrouter_check,
        reasoning_format=REASONING_DETAILS,  # the fake is not at openrouter.ai
        settings=ModelSettings(reasoning_effort="high"),
    ),
    Provider("gemini", gemini_stream, gemini_check, reasoning_format=GEMINI),
]


class Fake:
    """A provider's API answering on the in-memory transport, at a base URL of
    its own (the origin reasoning goes back to): checks each request as the
    provider does, then streams the step."""

    made = itertools.count(1)

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.url = f"https://{provider.name}-{next(self.made)}.test"
        self.transport = MemoryTransport(respond=self.respond)

    def respond(self, sent: SentRequest) -> Reply:
        messages = sent.json()["messages"]
        refused = self.provider.check(messages)
        if refused is not None:
            return refused
        step = sum(1 for _, m in current_turn(messages) if m["role"] == "assistant")
        return Reply.of(self.provider.stream(step), piece=64)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The body of every request sent, in order."""
        return [sent.json() for sent in self.transport.sent]


@pytest.fixture(params=PROVIDERS, ids=[p.name for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Provider:
    assert isinstance(request.param, Provider)
    return request.param


def model_for(provider: Provider, fake: Fake, **overrides: Any) -> OpenAIChatModel:
    options: dict[str, Any] = {"reasoning_format": provider.reasoning_format, "settings": provider.settings}
    options.update(overrides)
    return OpenAIChatModel("thinker", base_url=fake.url + "/v1", transport=fake.transport, **options)


def tools() -> list[FuncTool]:
    return [
        FuncTool("get_weather", lambda arguments, _ctx: "sunny in " + arguments["city"]),
        FuncTool("get_time", lambda _raw, _ctx: "14:00"),
    ]


def streamed_reasoning(parts: list[StreamPart]) -> list[str]:
    """The reasoning text the reader saw stream, one string per block."""
    blocks, current = [], ""
    for part in parts:
        if part.kind is StreamPartKind.REASONING_DELTA:
            current += part.text
        elif part.kind is StreamPartKind.REASONING:
            blocks.append(current)
            current = ""
    return blocks


def run_to_end(options: LoopOptions) -> tuple[list[StreamPart], RunResult]:
    reader = run(options)
    parts = collect(reader)
    return parts, reader.result()


# --- the loop ------------------------------------------------------------------------


def test_three_step_loop_with_thinking_saved_and_continued(provider: Provider) -> None:
    api = Fake(provider)
    # steps 1 and 2, then the step limit: the history is saved as JSON
    first_parts, first = run_to_end(
        LoopOptions(
            model=model_for(provider, api),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
            step_limit=2,
        )
    )
    assert first.finish_reason is FinishReason.STEP_LIMIT
    assert streamed_reasoning(first_parts) == list(REASONING[:2])
    assert first.reasoning == REASONING[:2]
    # a step's reasoning reaches the reader before its tool call
    kinds = [p.kind for p in first_parts]
    assert kinds.index(StreamPartKind.REASONING) < kinds.index(StreamPartKind.TOOL_CALL)
    saved = json.dumps([m.to_dict() for m in first.messages])

    # a new run, with a new adapter, continues from the JSON
    history = [Message.from_dict(m) for m in json.loads(saved)]
    assert history == list(first.messages)
    second_parts, second = run_to_end(
        LoopOptions(model=model_for(provider, api), messages=history, tools=tools())
    )
    assert second.finish_reason is FinishReason.STOP
    assert second.text == ANSWER
    assert streamed_reasoning(second_parts) == [REASONING[2]]
    assert second.reasoning == (REASONING[2],)

    assert len(api.transport.sent) == 3  # no request was refused
    here = origin(api.url)
    assistant = [m for m in second.messages if m.role is Role.ASSISTANT]
    assert [b.text for m in assistant for b in m.reasoning] == list(REASONING)
    assert {(b.format, b.origin) for m in assistant for b in m.reasoning} == {
        (REASONING_DETAILS if provider.name == "openrouter" else REASONING_CONTENT, here)
    }
    # each assistant turn holds its reasoning before its tool call or its text
    assert [p.kind.value for p in assistant[0].content] == ["reasoning", "tool-call"]
    assert [p.kind.value for p in assistant[2].content] == ["reasoning", "text"]
    check_sent_back(provider, api.bodies)


def check_sent_back(provider: Provider, bodies: list[dict[str, Any]]) -> None:
    """What went back, byte for byte, in the third request (after the restart)."""
    turns = [m for m in bodies[2]["messages"] if m["role"] == "assistant"]
    assert [m["tool_calls"][0]["id"] for m in turns] == ["call_w", "call_t"]
    if provider.name == "deepseek":
        assert [m["reasoning_content"] for m in turns] == list(REASONING[:2])
        # the same settings fields on every request, whatever the history holds
        assert [(b["thinking"], b["reasoning_effort"]) for b in bodies] == [({"type": "enabled"}, "high")] * 3
    elif provider.name == "openrouter":
        assert [m["reasoning_details"] for m in turns] == [openrouter_details(0), openrouter_details(1)]
        assert all("reasoning" not in m for m in turns)
        assert [b["reasoning"] for b in bodies] == [{"effort": "high"}] * 3
    else:
        signatures = [m["tool_calls"][0]["extra_content"]["google"]["thought_signature"] for m in turns]
        assert signatures == list(SIGNATURES[:2])
        assert all(set(m) == {"role", "content", "tool_calls"} for m in turns)  # no reasoning field


# --- the validators refuse what the provider refuses ---------------------------------


def test_each_validator_refuses_a_history_without_the_reasoning(provider: Provider) -> None:
    """Control: the same loop with reasoning sent back nowhere
    (``reasoning_format="none"``) gets the provider's real 400 at step 2."""
    api = Fake(provider)
    reader = run(
        LoopOptions(
            model=model_for(provider, api, reasoning_format=NONE),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
        )
    )
    parts = collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    error = caught.value.err
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.INVALID_REQUEST
    assert len(api.transport.sent) == 2
    expected = {
        "deepseek": "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "openrouter": "Provider returned error",
        "gemini": "Function call is missing a thought_signature in functionCall parts.",
    }[provider.name]
    assert expected in error.message
    assert streamed_reasoning(parts) == [REASONING[0]]


def test_openrouter_refuses_modified_reasoning_details() -> None:
    """Control: an entry changed in the saved history is refused upstream."""
    provider = PROVIDERS[1]
    api = Fake(provider)
    _, first = run_to_end(
        LoopOptions(
            model=model_for(provider, api),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
            step_limit=1,
        )
    )
    saved = json.loads(json.dumps([m.to_dict() for m in first.messages]))
    stored = saved[1]["content"][0]["reasoning"]
    stored["provider_data"] = stored["provider_data"].replace(SIGNATURES[0], SIGNATURES[1])
    reader = run(
        LoopOptions(
            model=model_for(provider, api),
            messages=[Message.from_dict(m) for m in saved],
            tools=tools(),
        )
    )
    collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class is ErrorClass.INVALID_REQUEST
    assert len(api.transport.sent) == 2


def test_gemini_takes_calls_another_model_made_with_the_dummy_signature() -> None:
    """Switching to Gemini mid-loop: the DeepSeek history's calls carry no
    signature of Gemini's; the first call of each step gets the documented
    dummy and Gemini's validator accepts the request."""
    deepseek = Fake(PROVIDERS[0])
    gemini = Fake(PROVIDERS[2])
    _, first = run_to_end(
        LoopOptions(
            model=model_for(PROVIDERS[0], deepseek),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
            step_limit=2,
        )
    )
    _, second = run_to_end(
        LoopOptions(model=model_for(PROVIDERS[2], gemini), messages=list(first.messages), tools=tools())
    )
    assert second.text == ANSWER
    sent = [m for m in gemini.bodies[0]["messages"] if m["role"] == "assistant"]
    assert [m["tool_calls"][0]["extra_content"] for m in sent] == [
        {"google": {"thought_signature": DUMMY_SIGNATURE}}
    ] * 2
    assert "Paris" not in json.dumps(
        [m.get("reasoning_content") for m in sent]
    )  # DeepSeek's reasoning has no field here


def test_deepseek_takes_a_history_another_server_made() -> None:
    """Switching to DeepSeek mid-loop: the OpenRouter turns' visible reasoning
    goes in ``reasoning_content``; their signed entries stay behind."""
    openrouter = Fake(PROVIDERS[1])
    deepseek = Fake(PROVIDERS[0])
    _, first = run_to_end(
        LoopOptions(
            model=model_for(PROVIDERS[1], openrouter),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
            step_limit=2,
        )
    )
    # the DeepSeek server is not api.deepseek.com: its field is named
    _, second = run_to_end(
        LoopOptions(
            model=model_for(PROVIDERS[0], deepseek, reasoning_format=REASONING_CONTENT),
            messages=list(first.messages),
            tools=tools(),
        )
    )
    assert second.text == ANSWER
    sent = [m for m in deepseek.bodies[0]["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in sent] == list(REASONING[:2])
    assert not any(signature in json.dumps(sent) for signature in SIGNATURES)
