"""Reasoning in the Anthropic adapter, mapping by mapping.

The stream side (``StreamState`` fed hand-written events in the documented
wire shapes): ``thinking`` and ``redacted_thinking`` blocks become reasoning
parts at their ``content_block_stop``, in order with the tool calls; a
``message_start`` that holds the whole message; a second ``message_start``;
compaction usage. The request side (``reasoning_block``, ``request_body``):
what goes back, where, and what never does; the history checks.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers.anthropic.request import reasoning_block, request_body, tool_use_id
from agentcore.providers.anthropic.stream import FORMAT, StreamState, merge_usage, usage_from
from agentcore.settings import ModelSettings
from agentcore.transport.sse import Event
from agentcore.types import (
    FinishReason,
    Message,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    reasoning_part,
    text_part,
    user_message,
)
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    assistant,
    block_stop,
    call,
    json_delta,
    message_delta,
    message_start,
    text_delta,
    text_start,
    tool_message,
    tool_start,
)

ORIGIN = "api.anthropic.com"

# --- event builders (https://platform.claude.com/docs/en/build-with-claude/thinking, "Streaming thinking")


def thinking_start(index: int, text: str = "", signature: str = "") -> dict[str, Any]:
    block = {"type": "thinking", "thinking": text, "signature": signature}
    return {"type": "content_block_start", "index": index, "content_block": block}


def thinking_delta(index: int, text: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "thinking_delta", "thinking": text},
    }


def signature_delta(index: int, signature: str) -> dict[str, Any]:
    delta = {"type": "signature_delta", "signature": signature}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def redacted_start(index: int, data: str) -> dict[str, Any]:
    block = {"type": "redacted_thinking", "data": data}
    return {"type": "content_block_start", "index": index, "content_block": block}


class General(dict[str, Any]):
    """An event's data that is not exactly a ``dict``: ``StreamState.feed``
    passes its short paths over and takes the general path."""


def feed(*events: dict[str, Any], origin: str = ORIGIN, general: bool = False) -> list[StreamPart]:
    state = StreamState(origin)
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(Event(event["type"], General(event) if general else event))
    return parts + state.finish()


def mine(text: str = "", signature: str = "", data: str = "") -> Reasoning:
    return Reasoning(text=text, signature=signature, data=data, format=FORMAT, origin=ORIGIN)


def delta(text: str) -> StreamPart:
    return StreamPart.reasoning_delta(text)


def tool_call(call_id: str, name: str, args: str = "{}") -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(id=call_id, name=name, input=args))


# --- the stream ------------------------------------------------------------------------------

STREAM_CASES: list[tuple[str, list[dict[str, Any]], list[StreamPart]]] = [
    (
        "thinking deltas stream, the signature is joined, the block completes at its stop",
        [
            thinking_start(0),
            thinking_delta(0, "Let me "),
            thinking_delta(0, "think. ✓"),
            signature_delta(0, "Eq"),
            signature_delta(0, "Qx=="),
            block_stop(0),
            text_start(1),
            text_delta(1, "Answer."),
            block_stop(1),
            message_delta("end_turn"),
            MESSAGE_STOP,
        ],
        [
            delta("Let me "),
            delta("think. ✓"),
            StreamPart.reasoning_event(mine("Let me think. ✓", "EqQx==")),
            StreamPart.text_delta("Answer."),
            StreamPart.step_finish(FinishReason.STOP),
        ],
    ),
    (
        "omitted display: no thinking_delta, an empty text and the signature",
        [
            thinking_start(0),
            signature_delta(0, "sig"),
            block_stop(0),
            message_delta("end_turn"),
            MESSAGE_STOP,
        ],
        [StreamPart.reasoning_event(mine("", "sig")), StreamPart.step_finish(FinishReason.STOP)],
    ),
    (
        "text and signature given whole in content_block_start",
        [thinking_start(0, "whole", "sig0"), block_stop(0), message_delta("end_turn"), MESSAGE_STOP],
        [
            delta("whole"),
            StreamPart.reasoning_event(mine("whole", "sig0")),
            StreamPart.step_finish(FinishReason.STOP),
        ],
    ),
    (
        "redacted_thinking: its data, no text",
        [redacted_start(0, "EmwKAhgB=="), block_stop(0), message_delta("end_turn"), MESSAGE_STOP],
        [StreamPart.reasoning_event(mine(data="EmwKAhgB==")), StreamPart.step_finish(FinishReason.STOP)],
    ),
    (
        "interleaved: thinking, call, thinking, call keep their order",
        [
            thinking_start(0),
            thinking_delta(0, "first"),
            signature_delta(0, "s1"),
            block_stop(0),
            tool_start(1, "toolu_a", "f"),
            json_delta(1, '{"x":1}'),
            block_stop(1),
            thinking_start(2),
            thinking_delta(2, "second"),
            signature_delta(2, "s2"),
            block_stop(2),
            redacted_start(3, "R=="),
            block_stop(3),
            tool_start(4, "toolu_b", "g"),
            block_stop(4),
            message_delta("tool_use"),
            MESSAGE_STOP,
        ],
        [
            delta("first"),
            StreamPart.reasoning_event(mine("first", "s1")),
            tool_call("toolu_a", "f", '{"x":1}'),
            delta("second"),
            StreamPart.reasoning_event(mine("second", "s2")),
            StreamPart.reasoning_event(mine(data="R==")),
            tool_call("toolu_b", "g"),
            StreamPart.step_finish(FinishReason.TOOL_CALLS),
        ],
    ),
    (
        "a thinking block that never stopped is kept at the end, whatever the reason",
        [thinking_start(0), thinking_delta(0, "cut"), message_delta("max_tokens", output_tokens=9)],
        [
            delta("cut"),
            StreamPart.reasoning_event(mine("cut")),
            StreamPart.step_finish(FinishReason.LENGTH, Usage(0, 9)),
        ],
    ),
    (
        "deltas of another kind, or for a block never started, are passed over",
        [
            thinking_start(0),
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": None},
            },
            thinking_delta(7, "orphan"),
            signature_delta(0, "ok"),
            block_stop(0),
            message_delta("end_turn"),
            MESSAGE_STOP,
        ],
        [StreamPart.reasoning_event(mine("", "ok")), StreamPart.step_finish(FinishReason.STOP)],
    ),
]


@pytest.mark.parametrize(("name", "events", "expected"), STREAM_CASES, ids=[c[0] for c in STREAM_CASES])
def test_stream(name: str, events: list[dict[str, Any]], expected: list[StreamPart]) -> None:
    assert feed(*events) == expected


@pytest.mark.parametrize(("name", "events", "expected"), STREAM_CASES, ids=[c[0] for c in STREAM_CASES])
def test_stream_through_the_general_path(
    name: str, events: list[dict[str, Any]], expected: list[StreamPart]
) -> None:
    """The short paths of ``feed`` (text and thinking deltas) give what its general path gives."""
    assert feed(*events, general=True) == expected


def test_a_thinking_delta_with_an_odd_index_or_no_open_block_takes_the_general_path() -> None:
    odd = {**thinking_delta(0, "x"), "index": [0]}  # unhashable: the short path must not look it up
    events = [thinking_start(0), odd, thinking_delta(5, "no block"), thinking_delta(0, "kept"), block_stop(0)]
    events += [message_delta("end_turn"), MESSAGE_STOP]
    parts = feed(*events)
    assert parts == feed(*events, general=True)
    assert [p.text for p in parts if p.text] == ["kept"]
    assert [p.reasoning.text for p in parts if p.reasoning is not None] == ["kept"]


def test_the_origin_given_to_the_state_machine_is_recorded() -> None:
    parts = feed(thinking_start(0, "t", "s"), block_stop(0), MESSAGE_STOP, origin="127.0.0.1:8080")
    assert parts[1].reasoning == Reasoning(
        text="t", signature="s", format="anthropic", origin="127.0.0.1:8080"
    )


def whole_message(content: list[dict[str, Any]], stop_reason: str | None, **usage: int) -> dict[str, Any]:
    event = message_start(**usage)
    event["message"] = {**event["message"], "content": content, "stop_reason": stop_reason}
    return event


def test_a_message_start_holding_the_whole_message_is_read_like_streamed_blocks() -> None:
    """As the programmatic tool calling recordings send it: every block
    complete in ``message_start``, then ``message_stop``."""
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "roll", "signature": "sig"},
        {"type": "text", "text": "Rolling."},
        {"type": "tool_use", "id": "toolu_1", "name": "rollDie", "input": {"player": "p2"}, "caller": {}},
        {"type": "redacted_thinking", "data": "D=="},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {}},
    ]
    parts = feed(whole_message(content, "tool_use", input_tokens=5, output_tokens=7), MESSAGE_STOP)
    assert parts == [
        delta("roll"),
        StreamPart.reasoning_event(mine("roll", "sig")),
        StreamPart.text_delta("Rolling."),
        tool_call("toolu_1", "rollDie", '{"player": "p2"}'),
        StreamPart.reasoning_event(mine(data="D==")),
        StreamPart.provider_item_event(
            ProviderItem(
                "server_tool_use",
                '{"type":"server_tool_use","id":"srvtoolu_1","name":"code_execution","input":{}}',
                FORMAT,
                ORIGIN,
                "code_execution {}",
            )
        ),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(5, 7)),
    ]


def test_its_stop_reason_counts_without_a_message_delta() -> None:
    content = [{"type": "text", "text": "Hi"}]
    state = StreamState(ORIGIN)
    assert state.feed(Event("message_start", whole_message(content, "max_tokens"))) == [
        StreamPart.text_delta("Hi")
    ]
    assert state.complete
    assert state.finish() == [StreamPart.step_finish(FinishReason.LENGTH)]


def test_the_same_message_start_twice_is_passed_over() -> None:
    start = message_start(input_tokens=17, output_tokens=1)
    parts = feed(
        start, start, text_start(0), text_delta(0, "Hello"), block_stop(0), message_delta("end_turn")
    )
    assert parts == [StreamPart.text_delta("Hello"), StreamPart.step_finish(FinishReason.STOP, Usage(17, 1))]


@pytest.mark.parametrize(
    "second",
    [
        {**message_start(), "message": {**message_start()["message"], "id": "msg_2"}},
        message_start(input_tokens=3),
        {"type": "message_start"},
    ],
    ids=["another message id", "other usage", "no message at all"],
)
def test_a_different_second_message_start_is_an_upstream_error(second: dict[str, Any]) -> None:
    state = StreamState(ORIGIN)
    state.feed(Event("message_start", message_start()))
    state.feed(Event("content_block_start", tool_start(0, "toolu_1", "f")))
    with pytest.raises(ModelError) as info:
        state.feed(Event("message_start", second))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert "second message_start" in str(info.value)
    assert not state.done


# --- compaction usage -----------------------------------------------------------------------------


def iteration(kind: str, input_tokens: int, output_tokens: int, cache_read: int = 0) -> dict[str, Any]:
    return {
        "type": kind,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": 0,
    }


USAGE_CASES: list[tuple[str, dict[str, Any], Usage]] = [
    (
        "the documented example: a compaction iteration the top-level numbers leave out",
        {
            "input_tokens": 23000,
            "output_tokens": 1000,
            "iterations": [iteration("compaction", 180000, 3500), iteration("message", 23000, 1000)],
        },
        Usage(input=203000, output=4500),
    ),
    (
        "cache reads of the compaction iteration count too",
        {
            "input_tokens": 181,
            "output_tokens": 8,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "iterations": [iteration("compaction", 100, 83, 55096), iteration("message", 181, 8)],
        },
        Usage(input=281 + 55096, output=91, cache_read=55096),
    ),
    (
        "no compaction: iterations add nothing (the compaction beta reports one message iteration)",
        {"input_tokens": 50, "output_tokens": 5, "iterations": [iteration("message", 50, 5)]},
        Usage(50, 5),
    ),
    (
        "an advisor's or a fallback model's iterations are another model's tokens: not added",
        {
            "input_tokens": 4727,
            "output_tokens": 3391,
            "iterations": [
                iteration("message", 1051, 35),
                iteration("advisor_message", 2728, 3880),
                iteration("fallback_message", 3676, 3356),
            ],
        },
        Usage(4727, 3391),
    ),
    (
        "iterations that are not objects, and null counts, are passed over",
        {
            "input_tokens": 10,
            "output_tokens": 2,
            "iterations": [None, "x", {"type": "compaction", "input_tokens": None}],
        },
        Usage(10, 2),
    ),
    ("null iterations", {"input_tokens": 10, "iterations": None}, Usage(10, 1)),
]


@pytest.mark.parametrize(("name", "usage", "expected"), USAGE_CASES, ids=[c[0] for c in USAGE_CASES])
def test_compaction_usage(name: str, usage: dict[str, Any], expected: Usage) -> None:
    assert usage_from(merge_usage({"input_tokens": 1, "output_tokens": 1}, usage)) == expected


# --- what goes back -------------------------------------------------------------------------------

BLOCK_CASES: list[tuple[str, Reasoning, dict[str, Any] | None]] = [
    (
        "a thinking block: text and signature as they came",
        mine(" Thinking…\n", "EqQBCkgIARABGAIiQL=="),
        {"type": "thinking", "thinking": " Thinking…\n", "signature": "EqQBCkgIARABGAIiQL=="},
    ),
    (
        "omitted display: an empty text",
        mine("", "sig"),
        {"type": "thinking", "thinking": "", "signature": "sig"},
    ),
    ("redacted: its data", mine(data="EmwKAhgB"), {"type": "redacted_thinking", "data": "EmwKAhgB"}),
    ("another origin's: not sent", Reasoning("t", "s", format=FORMAT, origin="gateway.example"), None),
    ("another format's: not sent", Reasoning("t", "s", format="openai-chat", origin=ORIGIN), None),
    ("no format at all: not sent", Reasoning("t", "s"), None),
    ("a thinking block without its signature: not sent", mine("cut off"), None),
]


@pytest.mark.parametrize(("name", "reasoning", "expected"), BLOCK_CASES, ids=[c[0] for c in BLOCK_CASES])
def test_reasoning_block(name: str, reasoning: Reasoning, expected: dict[str, Any] | None) -> None:
    assert reasoning_block(reasoning, ORIGIN) == expected


def body(*messages: Message, settings: ModelSettings | None = None, **kwargs: Any) -> dict[str, Any]:
    return request_body(
        Request(messages=messages, settings=settings), "claude-test", max_tokens=4096, origin=ORIGIN, **kwargs
    )


def results(*call_ids: str) -> Message:
    return tool_message(*[ToolResult(tool_call_id=c, name="f", content="r") for c in call_ids])


def test_reasoning_goes_back_in_place_and_byte_exact() -> None:
    history = [
        user_message("Go"),
        assistant(
            reasoning_part(mine("first ✓", "s1")),
            text_part("Checking."),
            call("toolu_a", "f", '{"x": 1}'),
            reasoning_part(mine("second", "s2")),
            reasoning_part(mine(data="R==")),
            call("toolu_b", "f", "{}"),
        ),
        results("toolu_a", "toolu_b"),
    ]
    sent = body(*history)["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "first ✓", "signature": "s1"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"x": 1}},
            {"type": "thinking", "thinking": "second", "signature": "s2"},
            {"type": "redacted_thinking", "data": "R=="},
            {"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}},
        ],
    }
    wire = json.loads(json.dumps(body(*history), ensure_ascii=False))
    assert wire["messages"][1]["content"][0]["thinking"] == "first ✓"


def test_a_blank_text_before_the_thinking_block_is_dropped_so_thinking_comes_first() -> None:
    """Adaptive thinking may answer "\\n\\n" before its thinking block; the API
    rejects a blank text block, and the turn then starts with the thinking."""
    history = [
        user_message("Go"),
        assistant(text_part("\n\n"), reasoning_part(mine("t", "s")), call("toolu_1", "f", "{}")),
        results("toolu_1"),
    ]
    content = body(*history)["messages"][1]["content"]
    assert [block["type"] for block in content] == ["thinking", "tool_use"]


def test_merged_assistant_messages_keep_their_blocks_in_order() -> None:
    history = [
        user_message("Go"),
        assistant(reasoning_part(mine("a", "s1")), text_part("Part one.")),
        assistant(reasoning_part(mine("b", "s2")), call("toolu_1", "f", "{}")),
        results("toolu_1"),
    ]
    content = body(*history)["messages"][1]["content"]
    assert [(b["type"], b.get("thinking") or b.get("text") or b.get("id")) for b in content] == [
        ("thinking", "a"),
        ("text", "Part one."),
        ("thinking", "b"),
        ("tool_use", "toolu_1"),
    ]


def test_an_assistant_message_of_foreign_reasoning_only_is_left_out() -> None:
    foreign = Reasoning("thoughts", "opaque", format="openai-chat", origin="api.deepseek.com")
    history = [user_message("a"), assistant(reasoning_part(foreign)), user_message("b")]
    assert body(*history)["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


SWITCHED = [
    user_message("Weather?"),
    Message(
        role=Role.ASSISTANT,
        content=[
            reasoning_part(Reasoning("I should call it.", format="openai-chat", origin="api.deepseek.com")),
            call("call_1", "f", "{}"),
        ],
    ),
    results("call_1"),
]
"""A tool-use turn begun on another provider: its reasoning cannot go back."""


def test_manual_thinking_is_left_out_to_continue_a_turn_that_began_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """https://platform.claude.com/docs/en/build-with-claude/thinking ("Thinking with
    tool use"): in manual mode the assistant message of the turn being continued
    must start with a thinking block; the turn ends in the mode it began in."""
    with caplog.at_level(logging.INFO, logger="agentcore.providers.anthropic"):
        sent = body(*SWITCHED, settings=ModelSettings(thinking=True, thinking_budget=2048))
    assert "thinking" not in sent
    assert "thinking left out" in caplog.text
    assert sent["messages"][1]["content"] == [{"type": "tool_use", "id": "call_1", "name": "f", "input": {}}]


def test_manual_thinking_is_kept_when_the_turn_starts_with_thinking_or_a_new_turn_begins() -> None:
    settings = ModelSettings(thinking_budget=2048)
    own = [
        SWITCHED[0],
        assistant(reasoning_part(mine("t", "s")), call("call_1", "f", "{}")),
        SWITCHED[2],
    ]
    assert body(*own, settings=settings)["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    new_turn = [*SWITCHED, assistant(text_part("Sunny.")), user_message("Tomorrow?")]
    assert body(*new_turn, settings=settings)["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize("thinking", [{"thinking": True}, {"thinking": False}])
def test_adaptive_or_disabled_thinking_is_sent_as_set(thinking: dict[str, bool]) -> None:
    sent = body(*SWITCHED, settings=ModelSettings(thinking=thinking["thinking"]))
    assert sent["thinking"] == {"type": "adaptive" if thinking["thinking"] else "disabled"}


# --- history checks ----------------------------------------------------------------------------

HISTORY_ERRORS: list[tuple[str, list[Message], ModelSettings | None, str]] = [
    ("no messages", [], None, "the request has no messages"),
    ("an empty user message", [user_message("")], None, r"messages\[0\] is a user message with nothing"),
    (
        "a blank user message later on",
        [user_message("a"), assistant(text_part("b")), user_message(" \n")],
        None,
        r"messages\[2\] is a user message with nothing",
    ),
    ("a tool message without content", [Message(role=Role.TOOL)], None, r"messages\[0\] is a tool message"),
    (
        "a tool call without its result",
        [user_message("a"), assistant(call("toolu_1", "f", "{}"))],
        None,
        r"messages\[1\] has the tool call 'toolu_1' without a result",
    ),
    (
        "reasoning in a user message",
        [Message(role=Role.USER, content=[reasoning_part(mine("t", "s"))])],
        None,
        r"messages\[0\] is a user message with a reasoning part",
    ),
    (
        "a prefill while thinking is on",
        [user_message("a"), assistant(text_part("The answer is"))],
        ModelSettings(thinking=True),
        r"messages\[1\] is an assistant message last \(a prefill\)",
    ),
]


@pytest.mark.parametrize(
    ("name", "messages", "settings", "match"), HISTORY_ERRORS, ids=[c[0] for c in HISTORY_ERRORS]
)
def test_history_the_api_refuses_is_a_config_error(
    name: str, messages: list[Message], settings: ModelSettings | None, match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        body(*messages, settings=settings)


def test_a_prefill_without_thinking_is_sent() -> None:
    sent = body(
        user_message("a"), assistant(text_part("The answer is")), settings=ModelSettings(thinking=False)
    )
    assert sent["messages"][-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "The answer is"}],
    }


# --- call ids from other providers ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call_id", "expected"),
    [
        ("toolu_01A09q90qw90lq917835lq9", "toolu_01A09q90qw90lq917835lq9"),
        ("call_Ab-9_z", "call_Ab-9_z"),
        ("functions.get_weather:0", "functions_get_weather_0_79ac1aaab216"),
        ("call_x|fc_y", "call_x_fc_y_181365a72f7f"),
        ("", "_e3b0c44298fc"),
        (
            "call_\udce9",
            "call___0a231e1453b0",
        ),  # a lone surrogate: hashed as its bytes would be (surrogatepass)
    ],
)
def test_tool_use_id(call_id: str, expected: str) -> None:
    """Valid ids as they are; others cleaned, plus the first 12 hex digits of
    the original's SHA-256."""
    assert tool_use_id(call_id) == expected


def test_ids_the_api_refuses_are_rewritten_alike_in_call_and_result_and_stay_distinct() -> None:
    ids = ["functions.get_weather:0", "functions.get_weather.0", "functions_get_weather_0", "call_x|fc_y"]
    history = [user_message("Go"), assistant(*[call(i, "f", "{}") for i in ids]), results(*ids)]
    turns = body(*history)["messages"]
    calls = [b["id"] for b in turns[1]["content"]]
    assert [b["tool_use_id"] for b in turns[2]["content"]] == calls
    assert len(set(calls)) == 4
    assert calls[2] == "functions_get_weather_0"
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in calls)
