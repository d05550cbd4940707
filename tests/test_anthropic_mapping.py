"""The pure mappers of the Anthropic adapter, each table-driven on its own.

``request_body`` (request shape), ``map_finish_reason``, ``merge_usage`` /
``usage_from``, ``classify_error`` / ``error_event`` and the stream state
machine ``StreamState`` fed hand-written events (design.md's faults 1, 6, 7,
10, 11 and 12 in Anthropic streams).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic.request import DEFAULT_MAX_TOKENS, request_body, tool_input
from agentcore.providers.anthropic.stream import (
    StreamState,
    classify_error,
    error_event,
    map_finish_reason,
    merge_usage,
    usage_from,
)
from agentcore.providers.history import MAX_ARGUMENTS_DEPTH
from agentcore.transport.sse import Event
from agentcore.types import (
    FinishReason,
    Message,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from tests.loop_helpers import nested

# --- event builders (the wire shapes of the streaming docs) -----------------


def message_start(**usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        },
    }


def text_start(index: int, text: str = "") -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": text}}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def tool_start(index: int, call_id: str, name: str, kind: str = "tool_use") -> dict[str, Any]:
    block = {"type": kind, "id": call_id, "name": name, "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, partial: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": partial}
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, **usage: int) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}, "usage": usage}


MESSAGE_STOP: dict[str, Any] = {"type": "message_stop"}
PING: dict[str, Any] = {"type": "ping"}


def error_payload(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def sse(*events: dict[str, Any]) -> bytes:
    """Frame events as Anthropic sends them: ``event:`` + ``data:`` + blank line."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events
    )


def feed_all(*events: dict[str, Any], eof: bool = True) -> list[StreamPart]:
    state = StreamState()
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(Event(event["type"], event))
    if eof:
        parts += state.finish()
    return parts


def summary(parts: list[StreamPart]) -> tuple[str, list[tuple[str, str, Any]], FinishReason | None, Usage]:
    """(text, [(id, name, parsed input)], finish reason, usage); checks the
    step-finish is the single last part."""
    finishes = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    assert len(finishes) == 1
    assert parts[-1] is finishes[0]
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    calls = [
        (p.tool_call.id, p.tool_call.name, json.loads(p.tool_call.input))
        for p in parts
        if p.tool_call is not None
    ]
    return text, calls, finishes[0].finish_reason, finishes[0].usage


# --- request_body ------------------------------------------------------------

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema='{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}',
)


def assistant(*parts: Any) -> Message:
    return Message(role=Role.ASSISTANT, content=parts)


def tool_message(*results: ToolResult) -> Message:
    return Message(role=Role.TOOL, content=[tool_result_part(r) for r in results])


def call(call_id: str, name: str, args: str) -> Any:
    return tool_call_part(ToolCall(id=call_id, name=name, input=args))


REQUEST_CASES: list[tuple[str, Request, dict[str, Any]]] = [
    (
        "minimal: no system, no tools, default max_tokens",
        Request(messages=[user_message("Hi")]),
        {
            "model": "claude-test",
            "max_tokens": 1000,
            "stream": True,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        },
    ),
    (
        "system prompt is top-level; max_output_tokens overrides the default",
        Request(system="Be brief.", messages=[user_message("Hi")], max_output_tokens=77),
        {
            "model": "claude-test",
            "max_tokens": 77,
            "stream": True,
            "system": "Be brief.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        },
    ),
    (
        "tools: name, description, input_schema as an object",
        Request(
            messages=[user_message("Hi")],
            tools=[WEATHER, ToolDefinition(name="get_time")],
        ),
        {
            "model": "claude-test",
            "max_tokens": 1000,
            "stream": True,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            "tools": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "input_schema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
                {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
            ],
        },
    ),
]


@pytest.mark.parametrize(("name", "request_", "expected"), REQUEST_CASES, ids=[c[0] for c in REQUEST_CASES])
def test_request_body(name: str, request_: Request, expected: dict[str, Any]) -> None:
    assert request_body(request_, "claude-test", max_tokens=1000) == expected


MESSAGE_CASES: list[tuple[str, list[Message], list[dict[str, Any]]]] = [
    (
        "a tool round trip (fault 6): text then tool_use, results in a user turn, is_error only when true",
        [
            user_message("Weather in Oslo and Lima?"),
            assistant(
                text_part("Let me check."),
                call("toolu_1", "get_weather", '{"city":"Oslo"}'),
                call("toolu_2", "get_weather", '{"city": "Lima"}'),
            ),
            tool_message(
                ToolResult(tool_call_id="toolu_1", name="get_weather", content="rain"),
                ToolResult(tool_call_id="toolu_2", name="get_weather", content="boom", is_error=True),
            ),
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo and Lima?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Lima"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": True},
                ],
            },
        ],
    ),
    (
        "a tool message followed by a user message merges into one user turn, tool_result first",
        [
            user_message("Go"),
            assistant(call("toolu_1", "get_time", "{}")),
            tool_message(ToolResult(tool_call_id="toolu_1", name="get_time", content="noon")),
            user_message("And tomorrow?"),
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "Go"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"},
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
    ),
    (
        "a user message before the tool message: tool_result blocks still open the merged turn",
        [
            assistant(call("toolu_1", "get_time", "{}")),
            user_message("(meanwhile)"),
            tool_message(ToolResult(tool_call_id="toolu_1", name="get_time", content="noon")),
        ],
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "noon"},
                    {"type": "text", "text": "(meanwhile)"},
                ],
            },
        ],
    ),
    (
        "consecutive user and consecutive assistant messages merge; order kept",
        [user_message("a"), user_message("b"), assistant(text_part("c")), assistant(text_part("d"))],
        [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
        ],
    ),
    (
        "blank text blocks are skipped; an assistant turn left empty is dropped, its neighbours merge",
        [user_message("a"), assistant(text_part(""), text_part(" \n")), user_message("b")],
        [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
    ),
    (
        "malformed, empty, non-object call input is sent as {} so the request stays valid",
        [
            user_message("x"),
            assistant(
                call("toolu_1", "f", '{"city": "Par'),
                call("toolu_2", "f", ""),
                call("toolu_3", "f", "[1, 2]"),
                call("toolu_4", "f", '"text"'),
            ),
            tool_message(
                *[ToolResult(tool_call_id=f"toolu_{i}", name="f", content="bad") for i in range(1, 5)]
            ),
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "x"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "f", "input": {}} for i in range(1, 5)
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "bad"}
                    for i in range(1, 5)
                ],
            },
        ],
    ),
    (
        "an empty tool result is sent without content",
        [
            assistant(call("toolu_1", "f", "{}")),
            tool_message(ToolResult(tool_call_id="toolu_1", name="f", content="", is_error=True)),
        ],
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True}],
            },
        ],
    ),
    (
        "non-ASCII text passes through unchanged",
        [user_message("Zürich 你好 👋")],
        [{"role": "user", "content": [{"type": "text", "text": "Zürich 你好 👋"}]}],
    ),
]


@pytest.mark.parametrize(("name", "messages", "expected"), MESSAGE_CASES, ids=[c[0] for c in MESSAGE_CASES])
def test_request_messages(name: str, messages: list[Message], expected: list[dict[str, Any]]) -> None:
    body = request_body(Request(messages=messages), "claude-test", max_tokens=DEFAULT_MAX_TOKENS)
    assert body["messages"] == expected
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS == 4096


def test_request_messages_alternate_for_any_history() -> None:
    history = [
        user_message("a"),
        assistant(text_part(" ")),
        user_message("b"),
        assistant(text_part("c")),
        assistant(call("t2", "f", "{}")),
        tool_message(ToolResult(tool_call_id="t2", name="f", content="r2")),
        user_message("d"),
    ]
    roles = [m["role"] for m in request_body(Request(messages=history), "m", max_tokens=10)["messages"]]
    assert roles == ["user", "assistant", "user"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"city":"Oslo"}', {"city": "Oslo"}),
        ('  {"a": [1, {"b": null}]} ', {"a": [1, {"b": None}]}),
        ("{}", {}),
        ("", {}),
        ("   ", {}),
        ('{"path":"a.txt","text":"lorem ip', {}),
        ("[1]", {}),
        ("null", {}),
        ("3", {}),
        ("{}{}", {}),
        ('{"brackets": "' + "[{" * 600 + '"}', {"brackets": "[{" * 600}),  # in a string: no depth
    ],
)
def test_tool_input(text: str, expected: dict[str, Any]) -> None:
    assert tool_input(text) == expected


def test_tool_input_nested_too_deeply_is_an_empty_object() -> None:
    # the decoder stops at about 1,000 levels; a body re-encoding the input
    # a few levels deeper stops earlier: the limit leaves room for both
    assert tool_input(nested(MAX_ARGUMENTS_DEPTH)) == json.loads(nested(MAX_ARGUMENTS_DEPTH))
    assert tool_input(nested(MAX_ARGUMENTS_DEPTH + 1)) == {}
    assert tool_input(nested(20_000)) == {}  # beyond the decoder on every supported Python
    assert tool_input("[" * 20_000 + "]" * 20_000) == {}


# --- map_finish_reason -----------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("tool_use", FinishReason.TOOL_CALLS),
        ("max_tokens", FinishReason.LENGTH),
        ("model_context_window_exceeded", FinishReason.LENGTH),
        ("pause_turn", FinishReason.PAUSED),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("something_new", FinishReason.STOP),
        ("", FinishReason.STOP),
        (None, FinishReason.STOP),
    ],
)
def test_map_stop_reason(reason: str | None, expected: FinishReason) -> None:
    assert map_finish_reason(reason) is expected


# --- usage ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("snapshots", "expected"),
    [
        # design.md, fault 7: cache fields from message_start, output from message_delta; never added up
        (
            [
                {
                    "input_tokens": 12,
                    "cache_creation_input_tokens": 300,
                    "cache_read_input_tokens": 2000,
                    "output_tokens": 1,
                },
                {"output_tokens": 15},
            ],
            Usage(2012, 15, 2000, 300),
        ),
        # message_delta repeating every field: the latest wins (text_basic_sonnet45 shape)
        (
            [{"input_tokens": 10, "output_tokens": 1}, {"input_tokens": 10, "output_tokens": 20}],
            Usage(10, 20, 0, 0),
        ),
        # a compatible server reporting the real input only in message_delta
        (
            [{"input_tokens": 43, "output_tokens": 1}, {"input_tokens": 61, "output_tokens": 2}],
            Usage(61, 2, 0, 0),
        ),
        # null fields leave the previous value; a whole number as a float is that number
        (
            [
                {"input_tokens": 5, "output_tokens": 3, "cache_read_input_tokens": 7},
                {"input_tokens": None, "output_tokens": 4.0, "cache_read_input_tokens": None},
            ],
            Usage(12, 4, 7, 0),
        ),
        # a null usage, or none at all, is zeros
        ([None], Usage(0, 0, 0, 0)),
        ([], Usage(0, 0, 0, 0)),
    ],
)
def test_merge_usage_latest_value_wins(snapshots: list[Any], expected: Usage) -> None:
    merged: dict[str, int] = {}
    for snapshot in snapshots:
        merged = merge_usage(merged, snapshot)
    assert usage_from(merged) == expected


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ("not usage", "usage is the string 'not usage', not an object"),
        ({"output_tokens": "9"}, "usage.output_tokens is the string '9', not a token count"),
        ({"input_tokens": 2.5}, "usage.input_tokens is the number 2.5, not a token count"),
        ({"input_tokens": -1}, "usage.input_tokens is the number -1, not a token count"),
        ({"cache_read_input_tokens": True}, "usage.cache_read_input_tokens is true, not a token count"),
        ({"iterations": {"type": "compaction"}}, "usage.iterations is an object, not a list"),
        (
            {"iterations": [{"type": "compaction", "output_tokens": "3"}]},
            "usage.iterations[0].output_tokens is the string '3', not a token count",
        ),
    ],
)
def test_usage_of_the_wrong_shape_is_an_upstream_error(usage: object, message: str) -> None:
    # counted as 0 it would under-count the tokens billed
    with pytest.raises(ModelError) as info:
        merge_usage({"input_tokens": 5}, usage)
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


def test_merge_usage_does_not_mutate_its_input() -> None:
    before = {"output_tokens": 1}
    after = merge_usage(before, {"output_tokens": 5})
    assert before == {"output_tokens": 1}
    assert after == {"output_tokens": 5}


# --- errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "message", "code", "expected"),
    [
        ("overloaded_error", "Overloaded", None, ErrorClass.OVERLOADED),
        (
            "rate_limit_error",
            "Number of request tokens has exceeded your rate limit",
            None,
            ErrorClass.RATE_LIMITED,
        ),
        ("api_error", "Internal server error", None, ErrorClass.UPSTREAM),
        ("authentication_error", "invalid x-api-key", None, ErrorClass.AUTH),
        ("permission_error", "no access to this model", None, ErrorClass.AUTH),
        ("invalid_request_error", "max_tokens: field required", None, ErrorClass.INVALID_REQUEST),
        (
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            None,
            ErrorClass.CONTEXT_LENGTH,
        ),
        (
            "invalid_request_error",
            "input length and `max_tokens` exceed context limit: 179000 + 32000 > 200000",
            None,
            ErrorClass.CONTEXT_LENGTH,
        ),
        (
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
            None,
            ErrorClass.CONTEXT_LENGTH,
        ),
        ("not_found_error", "model: claude-nope", None, ErrorClass.INVALID_REQUEST),
        ("billing_error", "credit balance too low", None, ErrorClass.INVALID_REQUEST),
        ("timeout_error", "Request timed out", None, ErrorClass.TRANSIENT),
        ("brand_new_error", "?", None, ErrorClass.UPSTREAM),
        ("", "", None, ErrorClass.UPSTREAM),
        # a numeric code (gateways) goes through classify_status
        ("", "slow down", 429, ErrorClass.RATE_LIMITED),
        ("", "input length and max_tokens exceed context limit: 1 + 2 > 2", 400, ErrorClass.CONTEXT_LENGTH),
        ("api_error", "busy", 503, ErrorClass.OVERLOADED),
        ("overloaded_error", "code is not a number", "529", ErrorClass.OVERLOADED),
    ],
)
def test_classify_error(kind: str, message: str, code: object, expected: ErrorClass) -> None:
    assert classify_error(kind, message, code) is expected


def test_error_from_event_message_and_class() -> None:
    err = error_event(error_payload("overloaded_error", "Overloaded"))
    assert err.error_class is ErrorClass.OVERLOADED
    assert err.retry_after == 0.0
    assert err.status == 0
    assert err.message == "error event in the stream: overloaded_error: Overloaded"
    assert str(err) == "overloaded: error event in the stream: overloaded_error: Overloaded"


@pytest.mark.parametrize(
    ("payload", "expected_class", "expected_message"),
    [
        ({"type": "error"}, ErrorClass.UPSTREAM, "error event in the stream: no details"),
        (
            {"type": "error", "error": "plain text"},
            ErrorClass.UPSTREAM,
            "error event in the stream: plain text",
        ),
        ("not an object", ErrorClass.UPSTREAM, "error event in the stream: no details"),
        (
            {"type": "error", "error": {"type": "rate_limit_error"}},
            ErrorClass.RATE_LIMITED,
            "error event in the stream: rate_limit_error",
        ),
    ],
)
def test_error_from_event_odd_shapes(
    payload: object, expected_class: ErrorClass, expected_message: str
) -> None:
    err = error_event(payload)
    assert err.error_class is expected_class
    assert err.message == expected_message


# --- the state machine: design.md's faults -------------------------------------


def test_tool_without_arguments_empty_delta() -> None:
    parts = feed_all(
        message_start(input_tokens=20, output_tokens=1),
        tool_start(0, "toolu_1", "get_time"),
        json_delta(0, ""),
        block_stop(0),
        message_delta("tool_use", output_tokens=12),
        MESSAGE_STOP,
    )
    assert [p.kind for p in parts] == [StreamPartKind.TOOL_CALL, StreamPartKind.STEP_FINISH]
    assert parts[0].tool_call == ToolCall(id="toolu_1", name="get_time", input="{}")
    assert parts[1] == StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(20, 12, 0, 0))


def test_tool_without_arguments_no_delta_at_all() -> None:
    parts = feed_all(
        message_start(input_tokens=20, output_tokens=1),
        tool_start(0, "toolu_1", "get_time"),
        block_stop(0),
        message_delta("tool_use", output_tokens=12),
        MESSAGE_STOP,
    )
    assert summary(parts) == ("", [("toolu_1", "get_time", {})], FinishReason.TOOL_CALLS, Usage(20, 12, 0, 0))
    assert parts[0].tool_call is not None
    assert parts[0].tool_call.input == "{}"


def test_whitespace_only_arguments_mean_empty_object() -> None:
    parts = feed_all(
        tool_start(0, "toolu_1", "get_time"),
        json_delta(0, "  "),
        json_delta(0, "\n"),
        block_stop(0),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    assert parts[0].tool_call == ToolCall(id="toolu_1", name="get_time", input="{}")


def test_tool_input_given_whole_in_content_block_start_is_kept() -> None:
    start = tool_start(0, "toolu_1", "get_weather")
    start["content_block"]["input"] = {"city": "Oslo"}
    parts = feed_all(start, block_stop(0), message_delta("tool_use"), MESSAGE_STOP)
    assert parts[0].tool_call == ToolCall(id="toolu_1", name="get_weather", input='{"city": "Oslo"}')


def test_text_and_tool_call_in_one_step() -> None:
    parts = feed_all(
        message_start(input_tokens=50, output_tokens=1),
        text_start(0),
        text_delta(0, "Let me check."),
        text_delta(0, " One moment."),
        block_stop(0),
        tool_start(1, "toolu_1", "get_weather"),
        json_delta(1, '{"city":'),
        json_delta(1, '"Oslo"}'),
        block_stop(1),
        message_delta("tool_use", output_tokens=30),
        MESSAGE_STOP,
    )
    assert [p.kind for p in parts] == [
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.STEP_FINISH,
    ]
    assert summary(parts) == (
        "Let me check. One moment.",
        [("toolu_1", "get_weather", {"city": "Oslo"})],
        FinishReason.TOOL_CALLS,
        Usage(50, 30, 0, 0),
    )
    assert parts[2].tool_call is not None
    assert parts[2].tool_call.input == '{"city":"Oslo"}'  # the raw text, exactly as streamed


def test_cumulative_usage_with_cache_fields() -> None:
    parts = feed_all(
        message_start(
            input_tokens=12, cache_creation_input_tokens=300, cache_read_input_tokens=2000, output_tokens=1
        ),
        text_start(0),
        PING,
        text_delta(0, "Hi"),
        block_stop(0),
        message_delta("end_turn", output_tokens=15),
        MESSAGE_STOP,
    )
    assert parts == [
        StreamPart.text_delta("Hi"),
        StreamPart.step_finish(FinishReason.STOP, Usage(2012, 15, 2000, 300)),
    ]


def test_parallel_tool_calls_interleaved_by_index() -> None:
    parts = feed_all(
        tool_start(0, "toolu_a", "get_weather"),
        tool_start(1, "toolu_b", "get_time"),
        json_delta(0, '{"city":'),
        json_delta(1, '{"tz":"UTC"}'),
        json_delta(0, '"Paris"}'),
        block_stop(1),
        block_stop(0),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    _, calls, reason, _ = summary(parts)
    assert calls == [("toolu_b", "get_time", {"tz": "UTC"}), ("toolu_a", "get_weather", {"city": "Paris"})]
    assert reason is FinishReason.TOOL_CALLS


def test_tool_calls_reported_as_end_turn_are_tool_calls() -> None:
    parts = feed_all(tool_start(0, "toolu_1", "f"), block_stop(0), message_delta("end_turn"), MESSAGE_STOP)
    assert summary(parts)[2] is FinishReason.TOOL_CALLS


@pytest.mark.parametrize("reason", ["pause_turn", "unknown_reason", None])
def test_any_tool_call_means_tool_calls_except_length_and_refusal(reason: str | None) -> None:
    parts = feed_all(tool_start(0, "toolu_1", "f"), block_stop(0), message_delta(reason), MESSAGE_STOP)
    assert summary(parts)[2] is FinishReason.TOOL_CALLS


def test_a_refused_step_with_a_tool_call_is_content_filter() -> None:
    """The loop runs no call of a refused step (as of a ``length`` one); the call stays in the parts."""
    parts = feed_all(tool_start(0, "toolu_1", "f"), block_stop(0), message_delta("refusal"), MESSAGE_STOP)
    assert summary(parts)[1:3] == ([("toolu_1", "f", {})], FinishReason.CONTENT_FILTER)


def test_tool_use_without_a_client_tool_call_is_stop() -> None:
    parts = feed_all(text_start(0, "hm"), block_stop(0), message_delta("tool_use"), MESSAGE_STOP)
    assert summary(parts)[:3] == ("hm", [], FinishReason.STOP)


def test_max_tokens_inside_a_tool_call_does_not_raise() -> None:
    parts = feed_all(
        message_start(input_tokens=30, output_tokens=1),
        tool_start(0, "toolu_1", "write_file"),
        json_delta(0, '{"path":"a.txt","text":"lorem ip'),
        block_stop(0),
        message_delta("max_tokens", output_tokens=64),
        MESSAGE_STOP,
    )
    # the cut-off call is passed on as streamed; the step is `length`, so the loop never runs it
    assert [p.kind for p in parts] == [StreamPartKind.TOOL_CALL, StreamPartKind.STEP_FINISH]
    assert parts[0].tool_call == ToolCall(
        id="toolu_1", name="write_file", input='{"path":"a.txt","text":"lorem ip'
    )
    assert parts[1] == StreamPart.step_finish(FinishReason.LENGTH, Usage(30, 64, 0, 0))


def test_max_tokens_before_the_tool_block_stopped_drops_the_call() -> None:
    parts = feed_all(
        tool_start(0, "toolu_1", "write_file"),
        json_delta(0, '{"path":"a.t'),
        message_delta("max_tokens", output_tokens=64),
        MESSAGE_STOP,
    )
    assert parts == [StreamPart.step_finish(FinishReason.LENGTH, Usage(0, 64, 0, 0))]


def test_tool_block_that_never_stopped_is_emitted_on_a_normal_finish() -> None:
    parts = feed_all(
        tool_start(0, "toolu_1", "f"), json_delta(0, '{"a":1}'), message_delta("tool_use"), MESSAGE_STOP
    )
    assert summary(parts)[1:3] == ([("toolu_1", "f", {"a": 1})], FinishReason.TOOL_CALLS)


def test_mcp_connector_blocks_are_passed_over() -> None:
    parts = feed_all(
        tool_start(0, "mcptoolu_1", "search", kind="mcp_tool_use"),
        json_delta(0, '{"query":"x"}'),
        block_stop(0),
        {"type": "content_block_start", "index": 1, "content_block": {"type": "mcp_tool_result"}},
        block_stop(1),
        text_start(2, "Found it."),
        block_stop(2),
        message_delta("end_turn"),
        MESSAGE_STOP,
    )
    assert summary(parts)[:3] == ("Found it.", [], FinishReason.STOP)
    assert [p.kind for p in parts] == [StreamPartKind.TEXT_DELTA, StreamPartKind.STEP_FINISH]


def test_ignored_blocks_deltas_and_events() -> None:
    parts = feed_all(
        {"type": "content_block_start", "index": 2, "content_block": {"type": "future_block"}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "future_block_delta", "content": "c"}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "compaction_delta", "content": "c"}},
        block_stop(2),
        text_start(3),
        {"type": "content_block_delta", "index": 3, "delta": {"type": "future_delta", "x": 1}},
        text_delta(3, "ok"),
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": "{"},
        },
        block_stop(3),
        {"type": "brand_new_event", "anything": True},
        PING,
        message_delta("end_turn"),
        MESSAGE_STOP,
    )
    assert parts == [StreamPart.text_delta("ok"), StreamPart.step_finish(FinishReason.STOP)]


def test_text_carried_by_content_block_start() -> None:
    parts = feed_all(
        text_start(0, "\n\n"), text_delta(0, "Hi"), block_stop(0), message_delta("end_turn"), MESSAGE_STOP
    )
    assert summary(parts)[0] == "\n\nHi"


def test_event_name_used_when_data_has_no_type() -> None:
    state = StreamState()
    assert state.feed(
        Event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": "a"}})
    ) == [StreamPart.text_delta("a")]
    assert state.feed(Event("message_delta", {"delta": {"stop_reason": "end_turn"}})) == []
    assert state.feed(Event("message_stop", {})) == []
    assert state.finish() == [StreamPart.step_finish(FinishReason.STOP)]


def test_missing_tool_id_is_synthesized_and_unique() -> None:
    parts = feed_all(
        tool_start(0, "", "f"),
        block_stop(0),
        tool_start(1, "", "g"),
        block_stop(1),
        message_delta("tool_use"),
        MESSAGE_STOP,
    )
    ids = [c[0] for c in summary(parts)[1]]
    assert len(set(ids)) == 2
    assert all(i.startswith("toolu_") for i in ids)


def test_absent_or_null_fields_are_absent() -> None:
    parts = feed_all(
        {"type": "message_start", "message": None},
        {"type": "content_block_start", "index": 0, "content_block": None},
        {"type": "content_block_delta", "index": 0, "delta": None},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": None}},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": 7, "name": None, "input": None},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": None},
        },
        block_stop(1),
        {"type": "message_delta", "delta": None, "usage": None},
        {"type": "message_delta", "delta": {"stop_reason": None}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        MESSAGE_STOP,
    )
    assert parts[0].tool_call is not None
    assert parts[0].tool_call.id.startswith("toolu_")  # an id that is not a string is made up
    assert parts[0].tool_call.name == ""
    assert parts[0].tool_call.input == "{}"
    assert parts[-1] == StreamPart.step_finish(FinishReason.TOOL_CALLS)


WRONG_SHAPES: list[tuple[dict[str, Any] | list[Any], str]] = [
    (["not", "an", "event"], "the 'message' event is a list, not an object"),
    (
        {"type": "message_start", "message": "nope"},
        "message (in message_start) is the string 'nope', not an object",
    ),
    (
        {"type": "content_block_start", "index": 0, "content_block": 3},
        "content_block (in content_block_start) is the number 3, not an object",
    ),
    (
        {"type": "content_block_delta", "index": 0, "delta": ["x"]},
        "delta (in content_block_delta) is a list, not an object",
    ),
    (
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
        "text (in text_delta) is the number 5, not a string",
    ),
    (
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ["a"]}},
        "text (in a text content block) is a list, not a string",
    ),
    (
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "input": "{}"},
        },
        "input (in a tool_use content block) is the string '{}', not an object",
    ),
    (
        {"type": "message_delta", "delta": {"stop_reason": 3}},
        "delta.stop_reason (in message_delta) is the number 3, not a string",
    ),
    ({"type": "message_delta", "usage": "x"}, "usage (in message_delta) is the string 'x', not an object"),
    (
        {"type": "message_delta", "usage": {"output_tokens": "15"}},
        "usage (in message_delta).output_tokens is the string '15', not a token count",
    ),
]


@pytest.mark.parametrize(("event", "message"), WRONG_SHAPES, ids=[m for _, m in WRONG_SHAPES])
def test_a_field_of_the_wrong_type_is_an_upstream_error_naming_it(
    event: dict[str, Any] | list[Any], message: str
) -> None:
    # read as empty or 0 it would end the step short or under-count the tokens billed
    state = StreamState()
    if not (isinstance(event, dict) and event["type"] == "message_start"):
        state.feed(Event("message_start", message_start(input_tokens=3)))
    with pytest.raises(ModelError) as info:
        state.feed(Event(event["type"] if isinstance(event, dict) else "message", event))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


@pytest.mark.parametrize(
    ("delta", "message"),
    [
        (
            {"type": "thinking_delta", "thinking": 5},
            "thinking (in thinking_delta) is the number 5, not a string",
        ),
        (
            {"type": "signature_delta", "signature": {}},
            "signature (in signature_delta) is an object, not a string",
        ),
    ],
)
def test_a_thinking_fragment_of_the_wrong_type_is_an_upstream_error(
    delta: dict[str, Any], message: str
) -> None:
    event = {"type": "content_block_delta", "index": 0, "delta": delta}
    with pytest.raises(ModelError) as info:
        feed_all(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": ""},
            },
            event,
        )
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


def test_a_partial_json_fragment_of_the_wrong_type_is_an_upstream_error() -> None:
    event = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": 1},
    }
    with pytest.raises(ModelError) as info:
        feed_all(tool_start(0, "toolu_1", "f"), event)
    assert info.value.message == (
        "an event of the wrong shape in the stream: "
        "partial_json (in input_json_delta) is the number 1, not a string"
    )


# --- completion rules ------------------------------------------------------------


def test_stream_ending_before_stop_reason_is_transient() -> None:
    with pytest.raises(ModelError) as info:
        feed_all(message_start(input_tokens=1), text_start(0), text_delta(0, "Hel"))
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "before the model said why it stopped" in str(info.value)


def test_stream_ending_after_stop_reason_without_message_stop_finishes() -> None:
    parts = feed_all(text_start(0), text_delta(0, "Hi"), message_delta("end_turn", output_tokens=3))
    assert parts == [
        StreamPart.text_delta("Hi"),
        StreamPart.step_finish(FinishReason.STOP, Usage(0, 3, 0, 0)),
    ]


def test_message_stop_without_stop_reason_is_a_stop() -> None:
    parts = feed_all(text_start(0), text_delta(0, "Hi"), MESSAGE_STOP)
    assert parts[-1] == StreamPart.step_finish(FinishReason.STOP)


def test_exactly_one_step_finish_and_nothing_after_it() -> None:
    state = StreamState()
    parts = state.feed(Event("message_delta", message_delta("end_turn")))
    assert (state.complete, state.done) == (True, False)
    parts += state.feed(Event("message_stop", MESSAGE_STOP))
    assert (state.complete, state.done) == (True, True)
    parts += state.feed(Event("message_stop", MESSAGE_STOP))
    parts += state.feed(Event("content_block_delta", text_delta(0, "late")))  # the short path too
    parts += state.finish()
    parts += state.finish()
    assert parts == [StreamPart.step_finish(FinishReason.STOP)]


def test_error_event_before_content() -> None:
    state = StreamState()
    assert state.feed(Event("message_start", message_start(input_tokens=10, output_tokens=1))) == []
    with pytest.raises(ModelError) as info:
        state.feed(Event("error", error_payload("overloaded_error", "Overloaded")))
    assert info.value.error_class is ErrorClass.OVERLOADED
    assert not state.complete


def test_error_event_after_content_and_after_stop_reason() -> None:
    state = StreamState()
    assert state.feed(Event("content_block_delta", text_delta(0, "Hel"))) == [StreamPart.text_delta("Hel")]
    state.feed(Event("message_delta", message_delta("end_turn")))
    with pytest.raises(ModelError) as info:
        state.feed(Event("error", error_payload("api_error", "Internal server error")))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert not state.done  # an error is never turned into a normal finish


def test_error_recognized_by_data_type_whatever_the_event_name() -> None:
    with pytest.raises(ModelError) as info:
        StreamState().feed(Event("message", error_payload("rate_limit_error", "slow down")))
    assert info.value.error_class is ErrorClass.RATE_LIMITED


def test_sse_builder_frames_events() -> None:
    assert sse(PING, MESSAGE_STOP) == (
        b'event: ping\ndata: {"type": "ping"}\n\nevent: message_stop\ndata: {"type": "message_stop"}\n\n'
    )
