"""The pure OpenAI stream mappers, table by table: finish reasons, usage,
in-stream errors, and the chunk state machine fed one event at a time."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from agentcore import (
    ErrorClass,
    FinishReason,
    ModelError,
    Reasoning,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
)
from agentcore.providers.openai.chat.stream import (
    MISTRAL_THINKING,
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    StreamState,
    map_finish_reason,
    merge_details,
    usage_from,
)
from agentcore.providers.openai.shared import error_event, synthesize_id
from agentcore.transport.sse import DONE, Event

# --- helpers ----------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: Any = None, **extra: Any) -> Event:
    """An event holding one chunk with one choice (index 0)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return Event("message", {"choices": [choice], **extra})


def call(index: Any = None, id: Any = None, name: Any = None, arguments: Any = None) -> dict[str, Any]:
    """A tool_calls fragment; None leaves the key out."""
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    fragment: dict[str, Any] = {"type": "function", "function": function}
    if index is not None:
        fragment["index"] = index
    if id is not None:
        fragment["id"] = id
    return fragment


def tools(*fragments: dict[str, Any], finish: Any = None) -> Event:
    return chunk({"tool_calls": list(fragments)}, finish)


def ids() -> Any:
    counter = itertools.count(1)
    return lambda: f"call_synth_{next(counter)}"


def feed_all(events: list[Event], state: StreamState | None = None) -> list[StreamPart]:
    state = state or StreamState(new_id=ids())
    parts: list[StreamPart] = []
    for event in events:
        parts.extend(state.feed(event))
        if state.done:
            break
    parts.extend(state.finish())
    return parts


def calls_of(parts: list[StreamPart]) -> list[ToolCall]:
    return [p.tool_call for p in parts if p.tool_call is not None]


def text_of(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


DONE_EVENT = Event("message", DONE)

# --- map_finish_reason --------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "has_calls", "expected"),
    [
        ("stop", False, FinishReason.STOP),
        ("stop", True, FinishReason.TOOL_CALLS),  # design.md, fault 10: calls sent with "stop"
        ("tool_calls", True, FinishReason.TOOL_CALLS),
        ("tool_calls", False, FinishReason.TOOL_CALLS),  # the loop turns it into stop
        ("function_call", True, FinishReason.TOOL_CALLS),
        ("length", False, FinishReason.LENGTH),
        ("length", True, FinishReason.LENGTH),  # fault 11: length wins over calls
        ("max_tokens", True, FinishReason.LENGTH),
        ("content_filter", False, FinishReason.CONTENT_FILTER),
        ("content_filter", True, FinishReason.CONTENT_FILTER),
        ("eos", False, FinishReason.STOP),  # fault 10: an unknown reason
        ("eos", True, FinishReason.TOOL_CALLS),
        ("STOP", False, FinishReason.STOP),
        (None, False, FinishReason.STOP),  # [DONE] without a finish reason
        (None, True, FinishReason.TOOL_CALLS),
        ("", True, FinishReason.TOOL_CALLS),
    ],
)
def test_map_finish_reason(raw: str | None, has_calls: bool, expected: FinishReason) -> None:
    assert map_finish_reason(raw, has_calls) is expected


# --- usage_from -------------------------------------------------------------


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, Usage(0, 0, 0, 0)),
        ({}, Usage(0, 0, 0, 0)),
        ({"prompt_tokens": 14, "completion_tokens": 8, "total_tokens": 22}, Usage(14, 8, 0, 0)),
        # fault 8: prompt_tokens already includes the cached tokens
        (
            {
                "prompt_tokens": 1200,
                "completion_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
            Usage(1200, 30, 1024, 0),
        ),
        ({"prompt_tokens": 40, "completion_tokens": 2, "prompt_tokens_details": None}, Usage(40, 2, 0, 0)),
        (
            {"prompt_tokens": 40, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": None}},
            Usage(40, 2, 0, 0),
        ),
        # a gateway reporting cache writes: they are not input
        (
            {
                "prompt_tokens": 1500,
                "completion_tokens": 20,
                "prompt_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 300},
            },
            Usage(1200, 20, 1000, 300),
        ),
        # DeepSeek's own field when the details lack cached_tokens
        (
            {"prompt_tokens": 339, "completion_tokens": 83, "prompt_cache_hit_tokens": 320},
            Usage(339, 83, 320, 0),
        ),
        # null is absent; a whole number written as a float is that number
        ({"prompt_tokens": None, "completion_tokens": 7.0, "total_tokens": "7"}, Usage(0, 7, 0, 0)),
    ],
)
def test_usage_from(usage: dict[str, Any] | None, expected: Usage) -> None:
    assert usage_from(usage) == expected


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            {"prompt_tokens": "12", "completion_tokens": 3},
            "usage.prompt_tokens is the string '12', not a token count",
        ),
        (
            {"prompt_tokens": 12, "completion_tokens": 3.5},
            "usage.completion_tokens is the number 3.5, not a token count",
        ),
        ({"prompt_tokens": -5}, "usage.prompt_tokens is the number -5, not a token count"),
        ({"completion_tokens": True}, "usage.completion_tokens is true, not a token count"),
        (
            {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": "8"}},
            "usage.prompt_tokens_details.cached_tokens is the string '8', not a token count",
        ),
        (
            {"prompt_tokens": 9, "prompt_tokens_details": 8},
            "usage.prompt_tokens_details is the number 8, not an object",
        ),
        ("12", "usage is the string '12', not an object"),
    ],
)
def test_usage_of_the_wrong_shape_is_an_upstream_error(usage: Any, message: str) -> None:
    # counted as 0 it would under-count the tokens billed
    with pytest.raises(ModelError) as info:
        usage_from(usage)
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


# --- error_event -------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"error": {"code": 400, "message": "Token limit reached"}}, ErrorClass.INVALID_REQUEST),
        ({"error": {"code": 429, "message": "Rate limit exceeded"}}, ErrorClass.RATE_LIMITED),
        ({"error": {"code": "429", "message": "slow down"}}, ErrorClass.RATE_LIMITED),
        ({"error": {"code": 503, "message": "no capacity"}}, ErrorClass.OVERLOADED),
        ({"error": {"code": 502, "message": "Provider disconnected"}}, ErrorClass.TRANSIENT),
        ({"error": {"code": 500, "message": "Internal error"}}, ErrorClass.UPSTREAM),
        ({"error": {"code": 401, "message": "No auth credentials found"}}, ErrorClass.AUTH),
        (
            {"error": {"code": 400, "message": "This endpoint's maximum context length is 8192 tokens"}},
            ErrorClass.CONTEXT_LENGTH,
        ),
        # Groq: a string code, and the HTTP status it stands for in status_code
        (
            {
                "error": {
                    "message": "Tool call validation failed",
                    "type": "invalid_request_error",
                    "code": "tool_use_failed",
                    "status_code": 400,
                }
            },
            ErrorClass.INVALID_REQUEST,
        ),
        (
            {"error": {"message": "x", "type": "tokens", "code": "rate_limit_exceeded"}},
            ErrorClass.RATE_LIMITED,
        ),
        ({"error": {"message": "The server had an error", "type": "server_error"}}, ErrorClass.UPSTREAM),
        ({"error": {"code": "server_error", "message": "Provider disconnected"}}, ErrorClass.UPSTREAM),
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ErrorClass.OVERLOADED,
        ),
        (
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            ErrorClass.RATE_LIMITED,
        ),
        ({"type": "error", "error": {"type": "api_error", "message": "Internal"}}, ErrorClass.UPSTREAM),
        ({"error": {"type": "service_unavailable", "message": "try later"}}, ErrorClass.OVERLOADED),
        ({"error": {"type": "timeout", "message": "upstream timed out"}}, ErrorClass.TRANSIENT),
        ({"error": {"type": "authentication_error", "message": "bad key"}}, ErrorClass.AUTH),
        ({"error": {"code": "context_length_exceeded", "message": "too long"}}, ErrorClass.CONTEXT_LENGTH),
        (
            {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum"}},
            ErrorClass.CONTEXT_LENGTH,
        ),
        ({"error": "something broke"}, ErrorClass.UPSTREAM),
        ({"error": {"code": 1234, "message": "provider-specific number"}}, ErrorClass.UPSTREAM),
        ({}, ErrorClass.UPSTREAM),
    ],
)
def test_stream_error_classification(payload: dict[str, Any], expected: ErrorClass) -> None:
    error = error_event(payload)
    assert isinstance(error, ModelError)
    assert error.error_class is expected
    assert error.retry_after == 0.0
    assert error.message.startswith("error in the stream")


def test_stream_error_message_names_type_code_and_message() -> None:
    error = error_event(
        {"error": {"message": "Tool choice is required", "type": "invalid_request_error", "code": "x"}}
    )
    assert error.message == "error in the stream (invalid_request_error, x): Tool choice is required"
    assert error_event({}, fallback="gone").message == "error in the stream: gone"


def test_synthesize_id_is_call_and_hex() -> None:
    first, second = synthesize_id(), synthesize_id()
    assert first.startswith("call_")
    assert len(first) == len("call_") + 32
    assert int(first[5:], 16) >= 0
    assert first != second


# --- StreamState: text ---------------------------------------------------------


def test_text_deltas_are_emitted_as_they_arrive() -> None:
    state = StreamState()
    assert state.feed(chunk({"role": "assistant", "content": "Hel"})) == [StreamPart.text_delta("Hel")]
    assert state.feed(chunk({"content": ""})) == []
    assert state.feed(chunk({"content": None, "refusal": None})) == []
    assert state.feed(chunk({"content": "lo"})) == [StreamPart.text_delta("lo")]


def test_content_array_text_parts_are_text_and_thinking_parts_reasoning() -> None:
    state = StreamState(origin="api.mistral.ai")
    thinking = {
        "type": "thinking",
        "thinking": [{"type": "text", "text": "hmm"}, {"type": "text", "text": "!"}],
    }
    parts = state.feed(
        chunk({"content": [thinking, {"type": "text", "text": "2 + 2"}, {"type": "text", "text": " = 4"}]})
    )
    assert parts == [
        StreamPart.reasoning_delta("hmm"),
        StreamPart.reasoning_delta("!"),
        StreamPart.reasoning_event(Reasoning(text="hmm!", format=MISTRAL_THINKING, origin="api.mistral.ai")),
        StreamPart.text_delta("2 + 2"),
        StreamPart.text_delta(" = 4"),
    ]
    odd = [{"type": "image_url"}, {"type": "text", "text": None}, {"type": "thinking", "thinking": None}]
    assert state.feed(chunk({"content": odd})) == []  # other part types are passed over, null is absent


@pytest.mark.parametrize(
    "delta",
    [
        {"annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}], "content": ""},
        {"content": None, "channel": "analysis"},
        {"reasoning_content": None, "reasoning": "", "reasoning_details": [], "refusal": None},
        {"extra_content": {"google": {"thought_signature": "sig"}}},
    ],
)
def test_annotations_empty_reasoning_and_extras_are_passed_over(delta: dict[str, Any]) -> None:
    state = StreamState()
    assert state.feed(chunk(delta, obfuscation="abc", x_groq={"id": "req_1"})) == []
    assert state.feed(chunk(finish="stop")) == []
    assert state.finish() == [StreamPart.step_finish(FinishReason.STOP)]


def test_refusal_is_text() -> None:
    """OpenAI streams a refusal in ``delta.refusal`` instead of ``content``:
    the user reads it as the answer."""
    parts = feed_all(
        [
            chunk({"role": "assistant", "content": None, "refusal": ""}),
            chunk({"refusal": "I'm sorry,"}),
            chunk({"refusal": " I can't help with that."}),
            chunk(finish="stop"),
        ]
    )
    assert parts == [
        StreamPart.text_delta("I'm sorry,"),
        StreamPart.text_delta(" I can't help with that."),
        StreamPart.step_finish(FinishReason.STOP),
    ]


# --- StreamState: reasoning ----------------------------------------------------


@pytest.mark.parametrize(
    ("field", "fmt"),
    [("reasoning_content", REASONING_CONTENT), ("reasoning", REASONING)],
)
def test_plain_reasoning_field_streams_then_one_block_before_the_text(field: str, fmt: str) -> None:
    state = StreamState(origin="api.example.test")
    parts = feed_all(
        [
            chunk({"role": "assistant", field: "Let me ", "content": None}),
            chunk({field: "think."}),
            chunk({field: None, "content": ""}),  # an empty text neither shows nor closes the block
            chunk({field: None, "content": "Hi"}),
            chunk({"content": "!"}, finish="stop"),
        ],
        state,
    )
    assert parts == [
        StreamPart.reasoning_delta("Let me "),
        StreamPart.reasoning_delta("think."),
        StreamPart.reasoning_event(Reasoning(text="Let me think.", format=fmt, origin="api.example.test")),
        StreamPart.text_delta("Hi"),
        StreamPart.text_delta("!"),
        StreamPart.step_finish(FinishReason.STOP),
    ]


def test_reasoning_content_wins_over_a_repeated_reasoning_field() -> None:
    parts = feed_all(
        [chunk({"reasoning_content": "a", "reasoning": "a"}), chunk({"reasoning": "b"}, finish="stop")]
    )
    assert [p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA] == ["a", "b"]
    (block,) = [p.reasoning for p in parts if p.reasoning is not None]
    assert block == Reasoning(text="ab", format=REASONING_CONTENT)


def test_reasoning_block_comes_before_the_tool_calls_and_the_finish() -> None:
    parts = feed_all(
        [
            chunk({"reasoning_content": "Need the weather."}),
            tools(call(0, "call_1", "get_weather", '{"city":"Paris"}')),
            chunk(finish="tool_calls"),
            DONE_EVENT,
        ]
    )
    assert parts == [
        StreamPart.reasoning_delta("Need the weather."),
        StreamPart.reasoning_event(Reasoning(text="Need the weather.", format=REASONING_CONTENT)),
        StreamPart.tool_call_event(ToolCall("call_1", "get_weather", '{"city":"Paris"}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]


def test_reasoning_after_text_is_a_second_block_and_the_end_closes_it() -> None:
    parts = feed_all(
        [
            chunk({"reasoning_content": "one"}),
            chunk({"content": "text"}),
            chunk({"reasoning_content": "two"}),
            chunk(finish="stop"),
        ]
    )
    assert [p.kind for p in parts] == [
        StreamPartKind.REASONING_DELTA,
        StreamPartKind.REASONING,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.REASONING_DELTA,
        StreamPartKind.REASONING,
        StreamPartKind.STEP_FINISH,
    ]
    assert [p.reasoning.text for p in parts if p.reasoning is not None] == ["one", "two"]


def test_a_refusal_closes_the_reasoning_block() -> None:
    parts = feed_all([chunk({"reasoning": "hm"}), chunk({"refusal": "No."}), chunk(finish="stop")])
    assert [p.kind for p in parts] == [
        StreamPartKind.REASONING_DELTA,
        StreamPartKind.REASONING,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.STEP_FINISH,
    ]


def details(*entries: dict[str, Any], reasoning: str | None = None) -> Event:
    return chunk({"content": "", "reasoning": reasoning, "reasoning_details": list(entries)})


def test_reasoning_details_fragments_merge_by_index_and_are_kept_verbatim() -> None:
    """OpenRouter in front of Claude: text fragments, then the signature alone."""
    fmt = "anthropic-claude-v1"
    state = StreamState(origin="openrouter.ai")
    parts = feed_all(
        [
            details({"type": "reasoning.text", "text": "", "signature": "", "format": fmt, "index": 0}),
            details({"type": "reasoning.text", "text": "Two ", "format": fmt, "index": 0}, reasoning="Two "),
            details(
                {"type": "reasoning.text", "text": "plus two.", "format": fmt, "index": 0},
                reasoning="plus two.",
            ),
            details({"type": "reasoning.text", "signature": "c2ln", "format": fmt, "index": 0}),
            chunk({"content": "4"}, finish="stop"),
        ],
        state,
    )
    entry = {
        "type": "reasoning.text",
        "text": "Two plus two.",
        "signature": "c2ln",
        "format": fmt,
        "index": 0,
    }
    assert parts == [
        StreamPart.reasoning_delta("Two "),
        StreamPart.reasoning_delta("plus two."),
        StreamPart.reasoning_event(
            Reasoning(
                text="Two plus two.",
                format=REASONING_DETAILS,
                origin="openrouter.ai",
                provider_data=json.dumps([entry], separators=(",", ":")),
            )
        ),
        StreamPart.text_delta("4"),
        StreamPart.step_finish(FinishReason.STOP),
    ]


def test_reasoning_details_without_a_reasoning_field_show_their_text_and_summary() -> None:
    parts = feed_all(
        [
            details({"type": "reasoning.summary", "summary": "**Plan**", "index": 0}),
            details({"type": "reasoning.text", "text": " go", "index": 1}),
            details({"type": "reasoning.encrypted", "data": "ZW5j", "id": "rs_1", "index": 2}),
            chunk({"content": "ok"}, finish="stop"),
        ]
    )
    assert [p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA] == ["**Plan**", " go"]
    (block,) = [p.reasoning for p in parts if p.reasoning is not None]
    assert block.text == "**Plan** go"
    assert json.loads(block.provider_data) == [
        {"type": "reasoning.summary", "summary": "**Plan**", "index": 0},
        {"type": "reasoning.text", "text": " go", "index": 1},
        {"type": "reasoning.encrypted", "data": "ZW5j", "id": "rs_1", "index": 2},
    ]


@pytest.mark.parametrize(
    ("fragments", "merged"),
    [
        # same index: text and summary appended, other fields set once
        (
            [
                {"type": "reasoning.text", "text": "a", "index": 0},
                {"text": "b", "signature": "s", "index": 0},
            ],
            [{"type": "reasoning.text", "text": "ab", "index": 0, "signature": "s"}],
        ),
        (
            [{"type": "reasoning.summary", "summary": "x", "index": 3}, {"summary": "y", "index": 3}],
            [{"type": "reasoning.summary", "summary": "xy", "index": 3}],
        ),
        # a set value is not replaced; an empty one is
        (
            [{"id": "a", "format": "", "index": 0}, {"id": "b", "format": "f", "index": 0}],
            [{"id": "a", "format": "f", "index": 0}],
        ),
        # other indexes, no index, a bool index, non-objects: new entries or skipped
        (
            [{"text": "a", "index": 0}, {"text": "b", "index": 1}, {"text": "c"}, {"text": "d"}, 7],
            [{"text": "a", "index": 0}, {"text": "b", "index": 1}, {"text": "c"}, {"text": "d"}],
        ),
        (
            [{"text": "a", "index": True}, {"text": "b", "index": True}],
            [{"text": "a", "index": True}, {"text": "b", "index": True}],
        ),
    ],
)
def test_merge_details(fragments: list[Any], merged: list[dict[str, Any]]) -> None:
    entries: list[dict[str, Any]] = []
    for fragment in fragments:
        merge_details(entries, [fragment])
    assert entries == merged


def test_gemini_thought_signature_is_kept_on_its_call() -> None:
    extra = {"google": {"thought_signature": "c2lnbmF0dXJl"}}
    state = StreamState(new_id=ids(), origin="generativelanguage.googleapis.com")
    first = call(0, "fc_1", "get_weather", '{"city":"Paris"}')
    parts = feed_all(
        [
            tools({**first, "extra_content": extra}, {**call(1, "fc_2", "get_time", "{}")}),
            chunk(finish="tool_calls"),
        ],
        state,
    )
    assert calls_of(parts) == [
        ToolCall(
            "fc_1",
            "get_weather",
            '{"city":"Paris"}',
            provider_data='{"extra_content":{"google":{"thought_signature":"c2lnbmF0dXJl"}}}',
            origin="generativelanguage.googleapis.com",
        ),
        ToolCall("fc_2", "get_time", "{}"),
    ]


def test_other_choices_and_odd_payloads_are_ignored() -> None:
    state = StreamState()
    other = Event("message", {"choices": [{"index": 1, "delta": {"content": "no"}, "finish_reason": "stop"}]})
    assert state.feed(other) == []
    assert state.finish_reason is None
    assert state.feed(Event("message", {"choices": None, "usage": None})) == []  # vLLM's usage chunk
    assert state.feed(Event("ping", {"type": "ping"})) == []
    assert state.feed(Event("message", {"choices": [{"delta": {"content": "yes"}}]})) == [
        StreamPart.text_delta("yes")
    ]


# --- StreamState: tool calls ---------------------------------------------------


def test_empty_or_whitespace_arguments_mean_empty_object() -> None:
    for arguments in ("", "  ", None):
        parts = feed_all(
            [tools(call(0, "call_1", "get_time", arguments)), chunk(finish="tool_calls"), DONE_EVENT]
        )
        assert calls_of(parts) == [ToolCall("call_1", "get_time", "{}")]


def test_interleaved_fragments_are_grouped_by_index() -> None:
    parts = feed_all(
        [
            tools(call(0, "call_a", "get_weather", "")),
            tools(call(1, "call_b", "get_time", "")),
            tools(call(0, arguments='{"city":')),
            tools(call(1, arguments='{"tz":"UTC"}')),
            tools(call(0, arguments='"Paris"}')),
            chunk(finish="tool_calls"),
            DONE_EVENT,
        ]
    )
    assert calls_of(parts) == [
        ToolCall("call_a", "get_weather", '{"city":"Paris"}'),
        ToolCall("call_b", "get_time", '{"tz":"UTC"}'),
    ]


def test_several_whole_calls_in_one_delta_without_index() -> None:
    parts = feed_all(
        [
            tools(
                call(None, "call_a", "get_weather", '{"city":"Tokyo"}'), call(None, "call_b", "f", '{"x":1}')
            ),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [
        ToolCall("call_a", "get_weather", '{"city":"Tokyo"}'),
        ToolCall("call_b", "f", '{"x":1}'),
    ]


def test_a_new_id_at_a_used_index_starts_a_new_call() -> None:
    parts = feed_all(
        [
            tools(call(0, "call_a", "get_weather", '{"city":"Tokyo"}')),
            tools(call(0, "call_b", "get_weather", '{"city":')),
            tools(call(0, arguments='"Paris"}')),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [
        ToolCall("call_a", "get_weather", '{"city":"Tokyo"}'),
        ToolCall("call_b", "get_weather", '{"city":"Paris"}'),
    ]


def test_index_zero_is_an_index_and_ids_are_synthesized_once() -> None:
    state = StreamState(new_id=ids())
    parts = feed_all(
        [
            tools(call(0, name="search", arguments="")),
            tools(call(0, arguments='{"q":"sse"}')),
            chunk(finish="tool_calls"),
        ],
        state,
    )
    assert calls_of(parts) == [ToolCall("call_synth_1", "search", '{"q":"sse"}')]
    assert state.tool_calls() == [ToolCall("call_synth_1", "search", '{"q":"sse"}')]  # stable


def test_a_second_call_with_the_first_calls_id_gets_its_own() -> None:
    # A server that names every parallel call "call_0": two calls at indexes 0 and 1.
    state = StreamState(new_id=ids())
    parts = feed_all(
        [
            tools(call(0, "call_0", "pay", '{"amount": 500}')),
            tools(call(1, "call_0", "pay", '{"amount": 600}')),
            chunk(finish="tool_calls"),
        ],
        state,
    )
    expected = [
        ToolCall("call_0", "pay", '{"amount": 500}'),
        ToolCall("call_synth_1", "pay", '{"amount": 600}'),
    ]
    assert calls_of(parts) == expected
    assert state.tool_calls() == expected  # stable


def test_explicit_nulls_and_empty_strings_mean_absent() -> None:
    parts = feed_all(
        [
            tools(call(0, "call_1", "weather", "")),
            tools({"index": 0, "id": "", "type": "function", "function": {"name": "", "arguments": '{"a":'}}),
            tools({"index": 0, "id": None, "type": None, "function": {"name": None, "arguments": None}}),
            tools({"index": 0, "function": {"arguments": "1}"}}),
            tools({"index": 0, "function": None}),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [ToolCall("call_1", "weather", '{"a":1}')]


def test_ids_and_names_repeated_are_not_concatenated() -> None:
    parts = feed_all(
        [
            tools(call(0, "0", "llm_version", "")),
            tools(call(0, "0", "llm_version", "{}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [ToolCall("0", "llm_version", "{}")]


def test_a_late_name_and_a_missing_name() -> None:
    parts = feed_all(
        [
            tools(call(0, "call_7", arguments='{"command": ')),
            tools(call(0, name="bash")),
            tools(call(0, arguments='"ls -la"}')),
            tools(call(1, "call_8", arguments="{}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [
        ToolCall("call_7", "bash", '{"command": "ls -la"}'),
        ToolCall("call_8", "", "{}"),
    ]


def test_sparse_indices_keep_index_order() -> None:
    parts = feed_all(
        [
            tools(call(5, "call_late", "b", "{}")),
            tools(call(1, "call_early", "a", "{}")),
            chunk(finish="tool_calls"),
        ]
    )
    assert [c.id for c in calls_of(parts)] == ["call_early", "call_late"]


@pytest.mark.parametrize(
    ("fragments", "expected"),
    [
        # a trailing fragment repeating the whole arguments: a snapshot
        (['{"city":', '"Paris"}', '{"city":"Paris"}'], '{"city":"Paris"}'),
        (["{}", "{}"], "{}"),
        # cumulative snapshots all the way
        (['{"a', '{"a":', '{"a":1}'], '{"a":1}'),
        # plain deltas that happen to start like the text so far stay appended
        (["[", "[1]", "]"], "[[1]]"),
        (["[1,", "[1,2]", "]"], "[1,[1,2]]"),
        # neither reading is JSON (cut by length): the joined text, as sent
        (['{"path":"a.txt","text":"lorem ip'], '{"path":"a.txt","text":"lorem ip'),
        (["{", "{"], "{{"),
        # not valid JSON at all: passed on as sent, for the loop to report
        (["not json"], "not json"),
    ],
)
def test_argument_snapshots(fragments: list[str], expected: str) -> None:
    events = [tools(call(0, "call_1", "f", fragments[0]))]
    events += [tools(call(0, arguments=f)) for f in fragments[1:]]
    parts = feed_all([*events, chunk(finish="tool_calls")])
    assert calls_of(parts) == [ToolCall("call_1", "f", expected)]


def test_arguments_sent_as_an_object_become_json_text() -> None:
    parts = feed_all([tools(call(0, "call_1", "f", {"q": "ü"})), chunk(finish="tool_calls")])
    assert calls_of(parts) == [ToolCall("call_1", "f", '{"q": "ü"}')]
    assert json.loads(calls_of(parts)[0].input) == {"q": "ü"}


def test_a_numeric_string_index_is_an_index() -> None:
    parts = feed_all(
        [
            tools({"index": "1", "id": "call_1", "function": {"name": "f", "arguments": '{"a":'}}),
            tools({"index": "1", "function": {"arguments": "1}"}}),
            chunk(finish="tool_calls"),
        ]
    )
    assert calls_of(parts) == [ToolCall("call_1", "f", '{"a":1}')]


def test_legacy_function_call_delta_is_a_call() -> None:
    parts = feed_all(
        [
            chunk({"function_call": {"name": "g", "arguments": '{"a":'}}),
            chunk({"function_call": {"arguments": "1}"}}),
            chunk(finish="function_call"),
        ]
    )
    assert calls_of(parts) == [ToolCall("call_synth_1", "g", '{"a":1}')]
    assert parts[-1] == StreamPart.step_finish(FinishReason.TOOL_CALLS)


# --- StreamState: finish, usage, completion ----------------------------------


def test_finish_reason_survives_later_nulls_and_empty_strings() -> None:
    state = StreamState()
    state.feed(chunk({"content": "a"}, finish=""))
    complete_before_finish = state.complete
    state.feed(chunk(finish="stop"))
    state.feed(chunk(finish=None, usage={"prompt_tokens": 3, "completion_tokens": 1}))
    state.feed(chunk(finish=""))
    assert complete_before_finish is False
    assert state.finish_reason == "stop"
    assert state.complete
    assert not state.done
    assert state.finish() == [StreamPart.step_finish(FinishReason.STOP, Usage(3, 1, 0, 0))]


def test_last_non_null_usage_wins_and_is_never_summed() -> None:
    state = StreamState()
    state.feed(chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1}))
    state.feed(chunk({"content": "b"}, usage={"prompt_tokens": 5, "completion_tokens": 2}))
    state.feed(chunk(finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 3}))
    state.feed(Event("message", {"choices": [], "usage": None, "moderation": {"flagged": False}}))
    assert state.usage == Usage(5, 3, 0, 0)


def test_groq_x_groq_usage_is_a_fallback_only() -> None:
    state = StreamState()
    state.feed(chunk(finish="stop", x_groq={"usage": {"prompt_tokens": 9, "completion_tokens": 4}}))
    assert state.usage == Usage(9, 4, 0, 0)
    state.feed(
        chunk(usage={"prompt_tokens": 10, "completion_tokens": 5}, x_groq={"usage": {"prompt_tokens": 1}})
    )
    assert state.usage == Usage(10, 5, 0, 0)


def test_done_completes_the_step_and_content_decides_the_reason() -> None:
    state = StreamState()
    state.feed(chunk({"content": "4"}))
    assert state.feed(DONE_EVENT) == []
    assert state.done
    assert state.finish() == [StreamPart.step_finish(FinishReason.STOP)]
    parts = feed_all([tools(call(0, "0", "llm_version", "{}")), DONE_EVENT])
    assert parts[-1] == StreamPart.step_finish(FinishReason.TOOL_CALLS)


@pytest.mark.parametrize(
    "events",
    [
        [DONE_EVENT],
        [chunk({"role": "assistant", "content": ""}), Event("message", {"choices": None}), DONE_EVENT],
        [chunk({"reasoning_content": "Let me think"}), DONE_EVENT],
    ],
    ids=["nothing", "empty deltas", "reasoning only"],
)
def test_done_without_a_finish_reason_after_no_text_or_call_is_a_cut_stream(events: list[Event]) -> None:
    # servers that send no finish reason send the answer (the recorded Kimi
    # and Snowflake streams): without one, [DONE] alone is no empty answer
    state = StreamState()
    for event in events:
        state.feed(event)
    assert state.complete
    with pytest.raises(ModelError) as info:
        state.finish()
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert info.value.message == "the stream ended with [DONE] but without a finish_reason, text or tool call"


def test_done_without_a_finish_reason_after_text_on_the_short_path_is_an_answer() -> None:
    parts = feed_all([chunk({"content": "4"}), DONE_EVENT])
    assert parts == [StreamPart.text_delta("4"), StreamPart.step_finish(FinishReason.STOP)]


WRONG_SHAPES: list[tuple[Any, str]] = [
    ([1, 2], "the chunk is a list, not an object"),
    ({"choices": {"index": 0}}, "choices is an object, not a list"),
    ({"choices": [None]}, "choices[0] is null, not an object"),
    ({"choices": [{"index": 0, "delta": "hello"}]}, "choices[0].delta is the string 'hello', not an object"),
    (
        {"choices": [{"index": 0, "delta": {"content": 5}}]},
        "choices[0].delta.content is the number 5, not a string or a list of typed parts",
    ),
    (
        {"choices": [{"index": 0, "delta": {"content": ["Hello"]}}]},
        "choices[0].delta.content[0] is the string 'Hello', not an object (a typed part)",
    ),
    (
        {"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": 7}]}}]},
        "choices[0].delta.content[0].text is the number 7, not a string",
    ),
    (
        {"choices": [{"index": 0, "delta": {"content": [{"type": "thinking", "thinking": 3}]}}]},
        "choices[0].delta.content[0].thinking is the number 3, not a list",
    ),
    (
        {"choices": [{"index": 0, "delta": {"refusal": False}}]},
        "choices[0].delta.refusal is false, not a string",
    ),
    (
        {"choices": [{"index": 0, "delta": {"reasoning_content": ["x"]}}]},
        "choices[0].delta.reasoning_content is a list, not a string",
    ),
    (
        {"choices": [{"index": 0, "delta": {"tool_calls": {}}}]},
        "choices[0].delta.tool_calls is an object, not a list",
    ),
    (
        {"choices": [{"index": 0, "delta": {"tool_calls": ["x"]}}]},
        "choices[0].delta.tool_calls[0] is the string 'x', not an object",
    ),
    (
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"name": 1}}]}}]},
        "choices[0].delta.tool_calls[].function.name is the number 1, not a string",
    ),
    (
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": 12}}]}}]},
        "choices[0].delta.tool_calls[].function.arguments is the number 12, not a string",
    ),
    (
        {"choices": [{"index": 0, "finish_reason": 1}]},
        "choices[0].finish_reason is the number 1, not a string",
    ),
]


@pytest.mark.parametrize(("data", "message"), WRONG_SHAPES, ids=[m for _, m in WRONG_SHAPES])
def test_a_chunk_of_the_wrong_shape_is_an_upstream_error_naming_the_field(data: Any, message: str) -> None:
    # read as absent, each ended the step with finish=stop and empty text
    with pytest.raises(ModelError) as info:
        feed_all([Event("message", data), chunk(finish="stop"), DONE_EVENT])
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


def test_usage_of_the_wrong_shape_fails_the_step_at_its_end() -> None:
    state = StreamState()
    events = [
        chunk({"content": "Hi"}, finish="stop"),
        Event("message", {"choices": [], "usage": {"prompt_tokens": "9"}}),
        DONE_EVENT,
    ]
    assert [part for event in events for part in state.feed(event)] == [StreamPart.text_delta("Hi")]
    with pytest.raises(ModelError) as info:
        state.finish()
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert "usage.prompt_tokens is the string '9', not a token count" in info.value.message


def test_a_stream_cut_before_finish_and_done_is_transient() -> None:
    state = StreamState()
    state.feed(chunk({"content": "Hel"}))
    with pytest.raises(ModelError) as info:
        state.finish()
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "before the step completed" in info.value.message


def test_a_finish_reason_alone_completes_the_step() -> None:
    state = StreamState()
    state.feed(chunk({"content": "Hi"}, finish="stop"))
    assert state.finish() == [StreamPart.step_finish(FinishReason.STOP)]


# --- StreamState: errors inside the stream -----------------------------------


def test_error_object_alone_raises_and_records_usage() -> None:
    state = StreamState()
    state.feed(chunk({"content": ""}, finish="length"))
    error_chunk = chunk(
        {"content": ""},
        error={"code": 400, "message": "Token limit reached"},
        usage={"prompt_tokens": 43, "completion_tokens": 10},
    )
    with pytest.raises(ModelError) as info:
        state.feed(error_chunk)
    assert info.value.error_class is ErrorClass.INVALID_REQUEST
    assert "Token limit reached" in str(info.value)
    assert state.usage == Usage(43, 10, 0, 0)


def test_error_object_without_choices_raises() -> None:
    state = StreamState()
    with pytest.raises(ModelError) as info:
        state.feed(Event("message", {"error": {"message": "Rate limit", "code": 429}}))
    assert info.value.error_class is ErrorClass.RATE_LIMITED


def test_null_error_field_is_not_an_error() -> None:
    state = StreamState()
    assert state.feed(chunk({"content": "ok"}, error=None)) == [StreamPart.text_delta("ok")]


def test_finish_reason_error_raises_never_finishes() -> None:
    state = StreamState()
    state.feed(chunk({"content": "partial"}))
    with pytest.raises(ModelError) as info:
        state.feed(chunk(finish="error"))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert "finish_reason 'error'" in info.value.message


def test_finish_reason_error_with_an_error_object_uses_it() -> None:
    state = StreamState()
    with pytest.raises(ModelError) as info:
        state.feed(chunk(finish="error", error={"code": 502, "message": "Provider disconnected"}))
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "Provider disconnected" in info.value.message


def test_named_error_event_raises() -> None:
    state = StreamState()
    payload = {
        "error": {
            "message": "Tool choice is required",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
        }
    }
    with pytest.raises(ModelError) as info:
        state.feed(Event("error", payload))
    assert info.value.error_class is ErrorClass.INVALID_REQUEST
    with pytest.raises(ModelError) as info:
        StreamState().feed(Event("error", {"message": "Overloaded", "type": "overloaded_error"}))
    assert info.value.error_class is ErrorClass.OVERLOADED


# --- StreamState.feed: the short paths give what the general path gives -------------


class General(dict[str, Any]):
    """A chunk that is not exactly a ``dict``: ``feed`` passes its short
    paths over and takes the general path."""


MIXED = [
    chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
    chunk({"content": None, "reasoning_content": "Let me"}),
    chunk({"reasoning_content": " see."}),
    chunk({"content": ""}),  # empty text while reasoning: shows nothing, closes nothing
    chunk({"content": "Hi", "reasoning_content": None}),  # closes the block (through feed())
    chunk({"content": " there", "reasoning_content": None}),  # DeepSeek's text chunk, no block open
    chunk({"reasoning": "Now a tool.", "channel": "analysis"}),
    chunk({"role": "assistant", "content": "!"}),
    chunk({"reasoning": "And the call."}),
    tools(call(0, "call_1", "get_time", "{}")),
    chunk({"refusal": "No more."}),
    chunk(finish="tool_calls"),
    Event("message", {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}),
    DONE_EVENT,
]


def test_feed_short_paths_match_the_general_path() -> None:
    fed = feed_all(MIXED)
    general = [Event(e.event, General(e.data) if type(e.data) is dict else e.data) for e in MIXED]
    assert feed_all(general) == fed
    assert [p.kind.value for p in fed] == [
        "reasoning-delta",
        "reasoning-delta",
        "reasoning",
        "text-delta",
        "text-delta",
        "reasoning-delta",
        "reasoning",
        "text-delta",
        "reasoning-delta",
        "reasoning",
        "text-delta",
        "tool-call",
        "step-finish",
    ]
    assert [p.reasoning.text for p in fed if p.reasoning is not None] == [
        "Let me see.",
        "Now a tool.",
        "And the call.",
    ]
    assert text_of(fed) == "Hi there!No more."
