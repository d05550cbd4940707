"""The pure stream mapping of the OpenAI Responses adapter, table by table:
:class:`StreamState` event by event (its errors: an ``error`` event and
``response.failed``), :func:`usage_from`, :func:`map_finish_reason` and
:func:`strict_schema`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    ModelError,
    Reasoning,
    Request,
    StreamPart,
    ToolCall,
    Usage,
    user_message,
)
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.providers.openai.responses.stream import (
    FORMAT,
    StreamState,
    map_finish_reason,
    usage_from,
)
from agentcore.providers.openai.shared import strict_schema
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import DONE, Event, iter_events

ORIGIN = "api.openai.com"
REQUEST = Request(messages=[user_message("Hi")])


def ev(kind: str, **fields: Any) -> Event:
    """An event as the decoder gives it, named by its ``event:`` line."""
    return Event(kind, {"type": kind, **fields})


def completed(output: list[Any] | None = None, **usage: int | dict[str, int]) -> Event:
    response: dict[str, Any] = {"id": "resp_1", "status": "completed", "output": output or []}
    if usage:
        response["usage"] = usage
    return ev("response.completed", response=response)


def sse_body(*events: Event) -> bytes:
    """The events framed as the server sends them (``data:`` lines)."""
    return b"".join(b"data: " + json.dumps(event.data).encode() + b"\n\n" for event in events)


def feed_all(*events: Event, state: StreamState | None = None) -> list[StreamPart]:
    state = state or StreamState(ORIGIN, new_id=lambda: "call_new")
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(event)
        if state.done:
            break
    return parts + state.finish()


REASONING_ADDED = ev(
    "response.output_item.added",
    output_index=0,
    item={"id": "rs_1", "type": "reasoning", "encrypted_content": "enc-early", "summary": []},
)
REASONING_DONE_ITEM = {
    "id": "rs_1",
    "type": "reasoning",
    "encrypted_content": "enc-final",
    "summary": [{"type": "summary_text", "text": "**Plan**"}, {"type": "summary_text", "text": "Then act."}],
}
CALL_ADDED = ev(
    "response.output_item.added",
    output_index=1,
    item={"id": "fc_1", "type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": ""},
)


def test_reasoning_then_a_function_call() -> None:
    events = (
        ev("response.created", response={"id": "resp_1", "status": "in_progress", "output": []}),
        REASONING_ADDED,
        ev("response.reasoning_summary_text.delta", output_index=0, summary_index=0, delta="**Plan**"),
        ev("response.reasoning_summary_text.delta", output_index=0, summary_index=1, delta="Then act."),
        ev("response.output_item.done", output_index=0, item=REASONING_DONE_ITEM),
        CALL_ADDED,
        ev("response.function_call_arguments.delta", output_index=1, delta='{"city":'),
        ev("response.function_call_arguments.delta", output_index=1, delta='"Oslo"}'),
        ev("response.function_call_arguments.done", output_index=1, arguments='{"city":"Oslo"}'),
        ev(
            "response.output_item.done",
            output_index=1,
            item={
                "id": "fc_1",
                "type": "function_call",
                "call_id": "call_a",
                "name": "get_weather",
                "arguments": '{"city":"Oslo"}',
            },
        ),
        completed(input_tokens=50, output_tokens=20, input_tokens_details={"cached_tokens": 10}),
    )
    # a stored response: the tool call records the response id, for chaining
    parts = feed_all(*events, state=StreamState(ORIGIN, stored=True))
    assert parts == [
        StreamPart.reasoning_delta("**Plan**"),
        StreamPart.reasoning_delta("Then act."),
        StreamPart.reasoning_event(
            Reasoning(
                text="**Plan**Then act.",  # summary parts joined with nothing between them
                data="enc-final",  # the done item's encrypted content, not the added one's
                id="rs_1",
                format=FORMAT,
                origin=ORIGIN,
                provider_data=json.dumps({"summary": REASONING_DONE_ITEM["summary"]}, separators=(",", ":")),
            )
        ),
        StreamPart.tool_call_event(
            ToolCall(
                id="call_a",
                name="get_weather",
                input='{"city":"Oslo"}',
                provider_data='{"id":"fc_1","response_id":"resp_1"}',
                origin=ORIGIN,
            )
        ),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(50, 20, 10, 0)),
    ]


def call_done(**item: Any) -> Event:
    return ev("response.output_item.done", output_index=1, item={"type": "function_call", **item})


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (  # the done item's call_id wins; the fc_ item id is never the call id
            [CALL_ADDED, call_done(id="fc_9", call_id="call_b", name="get_weather", arguments="{}")],
            ToolCall("call_b", "get_weather", "{}", '{"id":"fc_9"}', ORIGIN),
        ),
        (  # arguments only in function_call_arguments.done (no deltas; LM Studio)
            [
                CALL_ADDED,
                ev("response.function_call_arguments.done", output_index=1, arguments='{"a":1}'),
                call_done(),
            ],
            ToolCall("call_a", "get_weather", '{"a":1}', '{"id":"fc_1"}', ORIGIN),
        ),
        (  # only deltas
            [
                CALL_ADDED,
                ev("response.function_call_arguments.delta", output_index=1, delta='{"a":'),
                ev("response.function_call_arguments.delta", output_index=1, delta="2}"),
                call_done(arguments=""),
            ],
            ToolCall("call_a", "get_weather", '{"a":2}', '{"id":"fc_1"}', ORIGIN),
        ),
        (  # no arguments, no call id, no done event: completed at response.completed
            [ev("response.output_item.added", output_index=1, item={"type": "function_call", "name": "now"})],
            ToolCall("call_new", "now", "{}", "", ORIGIN),
        ),
    ],
    ids=["done-call-id-wins", "arguments-done-only", "deltas-only", "nothing-but-a-name"],
)
def test_function_call_assembly(events: list[Event], expected: ToolCall) -> None:
    parts = feed_all(*events, completed())
    assert [p.tool_call for p in parts if p.tool_call is not None] == [expected]
    assert parts[-1] == StreamPart.step_finish(FinishReason.TOOL_CALLS)


def test_item_ids_that_change_mid_stream_are_keyed_by_output_index() -> None:
    parts = feed_all(
        ev("response.output_item.added", output_index=0, item={"id": "id-1", "type": "reasoning"}),
        ev("response.reasoning_summary_text.delta", item_id="id-2", output_index=0, delta="Think"),
        ev(
            "response.output_item.done",
            output_index=0,
            item={"id": "id-3", "type": "reasoning", "summary": []},
        ),
        ev("response.output_item.added", output_index=1, item={"id": "id-4", "type": "message"}),
        ev("response.output_text.delta", item_id="id-5", output_index=1, delta="Hi"),
        completed(),
    )
    reasoning = [p.reasoning for p in parts if p.reasoning is not None]
    assert [(r.text, r.id) for r in reasoning] == [("Think", "id-3")]
    assert parts[-2:] == [StreamPart.text_delta("Hi"), StreamPart.step_finish(FinishReason.STOP)]


def test_raw_reasoning_text_is_reasoning_and_its_content_goes_into_provider_data() -> None:
    content = [{"type": "reasoning_text", "text": "Let me think."}]
    parts = feed_all(
        ev(
            "response.output_item.added",
            output_index=0,
            item={"id": "rs_x", "type": "reasoning", "summary": []},
        ),
        ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="Let me "),
        ev("response.reasoning_text.delta", output_index=0, content_index=0, delta="think."),
        ev(
            "response.output_item.done",
            output_index=0,
            item={"id": "rs_x", "type": "reasoning", "summary": [], "content": content},
        ),
        completed(),
    )
    assert parts[:2] == [StreamPart.reasoning_delta("Let me "), StreamPart.reasoning_delta("think.")]
    (reasoning,) = [p.reasoning for p in parts if p.reasoning is not None]
    assert reasoning.text == "Let me think."
    assert reasoning.data == ""
    assert json.loads(reasoning.provider_data) == {"summary": [], "content": content}


def test_refusal_deltas_are_text_the_user_sees() -> None:
    parts = feed_all(
        ev("response.refusal.delta", output_index=0, delta="I can't "),
        ev("response.refusal.delta", output_index=0, delta="help with that."),
        ev("response.refusal.done", output_index=0, refusal="I can't help with that."),
        completed(),
    )
    assert parts == [
        StreamPart.text_delta("I can't "),
        StreamPart.text_delta("help with that."),
        StreamPart.step_finish(FinishReason.STOP),
    ]


def test_full_text_in_done_events_and_the_final_response_is_not_added_again() -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}
    parts = feed_all(
        ev("response.output_text.delta", output_index=0, delta="Hel"),
        ev("response.output_text.delta", output_index=0, delta="lo"),
        ev("response.output_text.done", output_index=0, text="Hello"),
        ev("response.output_item.done", output_index=0, item=message),
        completed(output=[message]),
    )
    assert "".join(p.text for p in parts) == "Hello"


@pytest.mark.parametrize(
    "item",
    [
        {"type": "mcp_call", "id": "mcp_1", "name": "roll", "arguments": "{}", "output": "4"},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_c", "name": "sql", "input": "SELECT 1"},
        {"type": "shell_call", "id": "sh_1", "call_id": "call_s", "action": {"commands": ["ls"]}},
        {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_p", "operation": {}},
    ],
    ids=lambda item: item["type"],
)
def test_only_function_call_items_are_tool_calls(item: dict[str, Any]) -> None:
    parts = feed_all(
        ev("response.output_item.added", output_index=0, item=item),
        ev("response.output_item.done", output_index=0, item=item),
        completed(output=[item]),
    )
    assert parts == [StreamPart.step_finish(FinishReason.STOP)]


def test_items_without_their_done_event_come_from_the_terminal_response() -> None:
    reasoning = {"id": "rs_2", "type": "reasoning", "encrypted_content": "enc", "summary": []}
    call = {"id": "fc_2", "type": "function_call", "call_id": "call_z", "name": "f", "arguments": "{}"}
    parts = feed_all(completed(output=[reasoning, call]))
    assert [p.kind.value for p in parts] == ["reasoning", "tool-call", "step-finish"]
    assert parts[0].reasoning is not None
    assert parts[0].reasoning.data == "enc"
    assert parts[1].tool_call == ToolCall("call_z", "f", "{}", '{"id":"fc_2"}', ORIGIN)
    assert parts[2].finish_reason is FinishReason.TOOL_CALLS


def test_an_item_done_twice_is_emitted_once() -> None:
    item = {"id": "fc_3", "type": "function_call", "call_id": "call_3", "name": "f", "arguments": "{}"}
    parts = feed_all(
        ev("response.output_item.done", output_index=0, item=item),
        ev("response.output_item.done", output_index=0, item=item),
        completed(output=[item]),
    )
    assert len([p for p in parts if p.tool_call is not None]) == 1


def test_nothing_after_the_terminal_event_is_read() -> None:
    state = StreamState(ORIGIN)
    assert state.feed(ev("response.output_text.delta", output_index=0, delta="Hello")) == [
        StreamPart.text_delta("Hello")
    ]
    assert not state.done
    assert state.feed(completed()) == []
    assert (state.complete, state.done) == (True, True)  # the shell reads no further
    after = sse_body(
        ev("response.output_text.delta", output_index=0, delta="Hello"),
        completed(),
        ev("response.failed", response={"status": "failed", "error": {"code": "server_error"}}),
    )
    transport = MemoryTransport(Reply.of(after))
    parts = list(OpenAIResponsesModel("gpt-5", transport=transport).stream(REQUEST, Context()))
    assert parts[0] == StreamPart.text_delta("Hello")
    assert parts[-1].finish_reason is FinishReason.STOP
    assert transport.sent[0].reused is True


def test_events_without_an_event_line_and_a_done_marker() -> None:
    body = (
        b'data: {"type":"response.output_text.delta","output_index":0,"delta":"Hi"}\n\n'
        b'data: {"type":"response.completed","response":{"status":"completed","output":[]}}\n\n'
        b"data: [DONE]\n\n"
    )
    parts = feed_all(*iter_events([body]))
    assert parts == [StreamPart.text_delta("Hi"), StreamPart.step_finish(FinishReason.STOP)]


@pytest.mark.parametrize(
    "events",
    [
        [ev("response.output_text.delta", output_index=0, delta="Hi")],
        [ev("response.output_text.delta", output_index=0, delta="Hi"), Event("message", DONE)],
    ],
    ids=["end-of-body", "done-marker"],
)
def test_a_stream_that_ends_before_the_response_completed_is_transient(events: list[Event]) -> None:
    with pytest.raises(ModelError) as caught:
        feed_all(*events)
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "before the response completed" in caught.value.message


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (None, Usage()),
        ({}, Usage()),
        ({"input_tokens": 0, "output_tokens": 0}, Usage()),
        ({"input_tokens": 100, "output_tokens": 7}, Usage(100, 7, 0, 0)),
        (
            {"input_tokens": 216, "input_tokens_details": {"cached_tokens": 192}, "output_tokens": 863},
            Usage(216, 863, 192, 0),
        ),
        (  # Amazon Bedrock reports cache writes, which input_tokens includes
            {
                "input_tokens": 158,
                "input_tokens_details": {"cache_write_tokens": 43, "cached_tokens": 0},
                "output_tokens": 32,
            },
            Usage(115, 32, 0, 43),
        ),
        ({"input_tokens": None, "output_tokens": None, "input_tokens_details": None}, Usage()),
    ],
    ids=["missing", "empty", "zero", "plain", "cached", "cache-write", "nulls"],
)
def test_usage_from(usage: Any, expected: Usage) -> None:
    assert usage_from(usage) == expected


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ({"input_tokens": "12"}, "response.usage.input_tokens is the string '12', not a token count"),
        ({"output_tokens": 1.5}, "response.usage.output_tokens is the number 1.5, not a token count"),
        (
            {"input_tokens_details": {"cached_tokens": "3"}},
            "response.usage.input_tokens_details.cached_tokens is the string '3', not a token count",
        ),
        ([1], "response.usage is a list, not an object"),
    ],
)
def test_usage_of_the_wrong_shape_is_an_upstream_error(usage: Any, message: str) -> None:
    with pytest.raises(ModelError) as info:
        usage_from(usage)
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


@pytest.mark.parametrize(
    ("response", "incomplete", "calls", "expected"),
    [
        ({"status": "completed"}, False, False, FinishReason.STOP),
        ({"status": "completed"}, False, True, FinishReason.TOOL_CALLS),
        ({}, False, False, FinishReason.STOP),
        ({"incomplete_details": {"reason": "max_output_tokens"}}, True, False, FinishReason.LENGTH),
        ({"incomplete_details": {"reason": "max_output_tokens"}}, True, True, FinishReason.LENGTH),
        ({"incomplete_details": {"reason": "content_filter"}}, True, False, FinishReason.CONTENT_FILTER),
        ({"incomplete_details": {"reason": "content_filter"}}, True, True, FinishReason.CONTENT_FILTER),
        (  # a completed event whose response says incomplete for its content
            {"status": "incomplete", "incomplete_details": {"reason": "content_filter"}},
            False,
            False,
            FinishReason.CONTENT_FILTER,
        ),
        ({"incomplete_details": None}, True, False, FinishReason.LENGTH),
        (  # a completed event whose response says incomplete
            {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
            False,
            False,
            FinishReason.LENGTH,
        ),
    ],
)
def test_map_finish(response: dict[str, Any], incomplete: bool, calls: bool, expected: FinishReason) -> None:
    assert map_finish_reason(response, incomplete, calls) is expected


def test_incomplete_event_ends_the_step_with_its_usage() -> None:
    parts = feed_all(
        ev("response.output_text.delta", output_index=0, delta="1. Alabama"),
        ev(
            "response.incomplete",
            response={
                "status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"},
                "usage": {"input_tokens": 14, "output_tokens": 50},
            },
        ),
    )
    assert parts[-1] == StreamPart.step_finish(FinishReason.LENGTH, Usage(14, 50, 0, 0))


ERRORS = [
    ({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}, ErrorClass.RATE_LIMITED),
    ({"type": "error", "code": "server_is_overloaded", "message": "Try later"}, ErrorClass.OVERLOADED),
    ({"type": "error", "code": "server_error", "message": "Something went wrong"}, ErrorClass.UPSTREAM),
    (
        {
            "type": "error",
            "error": {"type": "insufficient_quota", "code": "insufficient_quota", "message": "Quota"},
        },
        ErrorClass.UPSTREAM,
    ),
    ({"type": "error", "code": 429, "message": "Too many requests"}, ErrorClass.RATE_LIMITED),
    ({"type": "error", "code": "context_length_exceeded", "message": "Too long"}, ErrorClass.CONTEXT_LENGTH),
    ({"type": "error", "code": "invalid_prompt", "message": "Flagged"}, ErrorClass.INVALID_REQUEST),
    ({"type": "error", "code": "vector_store_timeout", "message": "Timed out"}, ErrorClass.TRANSIENT),
    ({"type": "error"}, ErrorClass.UPSTREAM),
]


@pytest.mark.parametrize(("data", "expected"), ERRORS)
def test_error_event(data: dict[str, Any], expected: ErrorClass) -> None:
    with pytest.raises(ModelError) as caught:
        feed_all(ev("response.output_text.delta", output_index=0, delta="x"), Event("error", data))
    assert caught.value.error_class is expected
    message = data.get("message") or data.get("error", {}).get("message") or "the server sent an error event"
    assert message in caught.value.message


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            {"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "x"}},
            ErrorClass.RATE_LIMITED,
        ),
        ({"status": "failed", "error": {"code": "server_error", "message": "x"}}, ErrorClass.UPSTREAM),
        (
            {"status": "failed", "error": {"code": "invalid_image", "message": "x"}},
            ErrorClass.INVALID_REQUEST,
        ),
        ({"status": "failed", "error": None}, ErrorClass.UPSTREAM),
        (None, ErrorClass.UPSTREAM),
    ],
)
def test_failed_response(response: Any, expected: ErrorClass) -> None:
    with pytest.raises(ModelError) as caught:
        feed_all(ev("response.failed", response=response))
    assert caught.value.error_class is expected
    message = (response or {}).get("error") or {"message": "the response failed"}
    assert message["message"] in caught.value.message


OBJECT = {"type": "object", "additionalProperties": False}


@pytest.mark.parametrize(
    ("schema", "strict"),
    [
        ({**OBJECT, "properties": {}, "required": []}, True),
        ({**OBJECT, "properties": {"a": {"type": "string"}}, "required": ["a"]}, True),
        (  # what agentcore's function tools write for required parameters
            {
                **OBJECT,
                "properties": {
                    "city": {"type": "string", "description": "A city."},
                    "unit": {"enum": ["c", "f"]},
                    "days": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^[a-z]+$"},
                        "maxItems": 3,
                    },
                    "place": {**OBJECT, "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
                },
                "required": ["city", "unit", "days", "tags", "place"],
            },
            True,
        ),
        (
            {
                **OBJECT,
                "properties": {"node": {"$ref": "#/$defs/node"}},
                "required": ["node"],
                "$defs": {"node": {**OBJECT, "properties": {"v": {"type": "string"}}, "required": ["v"]}},
            },
            True,
        ),
        ({"type": "object", "properties": {}}, False),  # additionalProperties not false
        ({**OBJECT, "properties": {"a": {"type": "string"}}, "required": []}, False),  # optional property
        ({**OBJECT, "properties": {"a": {"type": "string", "default": "x"}}, "required": ["a"]}, False),
        ({**OBJECT, "properties": {"a": {"type": "string", "minLength": 1}}, "required": ["a"]}, False),
        (
            {
                **OBJECT,
                "properties": {"a": {"type": "array", "items": {}, "uniqueItems": True}},
                "required": ["a"],
            },
            False,
        ),
        (
            {**OBJECT, "properties": {"a": {"$ref": "#/$defs/a", "description": "x"}}, "required": ["a"]},
            False,
        ),
        ({**OBJECT, "properties": {"a": {"allOf": [{"type": "string"}]}}, "required": ["a"]}, False),
        (  # a nested object left open
            {**OBJECT, "properties": {"a": {"type": "object", "properties": {}}}, "required": ["a"]},
            False,
        ),
        ({"anyOf": [{**OBJECT, "properties": {}, "required": []}]}, False),  # the root is not an object
        ({"type": "object"}, False),
        ({**OBJECT, "properties": {"a": {}}, "required": ["a"]}, False),  # a schema without a type
        ({**OBJECT, "properties": {"a": {"description": "x"}}, "required": ["a"]}, False),
        ([], False),
    ],
)
def test_strict_schema(schema: Any, strict: bool) -> None:
    assert strict_schema(schema) is strict


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {**OBJECT, "properties": {}, "required": []}
    for _ in range(depth):
        schema = {**OBJECT, "properties": {"n": schema}, "required": ["n"]}
    return schema


def test_strict_schema_limits() -> None:
    assert strict_schema(nested(9))
    assert not strict_schema(nested(11))
    properties = {f"p{i}": {"type": "string"} for i in range(5001)}
    required = list(properties)
    wide = {**OBJECT, "properties": properties, "required": required}
    assert not strict_schema(wide)
    properties.pop("p0")
    required.remove("p0")
    assert strict_schema(wide)


def test_events_without_output_index_follow_the_item_added_last() -> None:
    parts = feed_all(
        ev("response.output_item.added", item={"type": "function_call", "call_id": "call_1", "name": "a"}),
        ev("response.function_call_arguments.delta", delta='{"x":1}'),
        ev("response.output_item.done", item={"type": "function_call", "call_id": "call_1", "name": "a"}),
        ev("response.output_item.added", item={"type": "function_call", "call_id": "call_2", "name": "b"}),
        ev("response.function_call_arguments.delta", delta='{"y":2}'),
        completed(),
    )
    calls = [p.tool_call for p in parts if p.tool_call is not None]
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("call_1", "a", '{"x":1}'),
        ("call_2", "b", '{"y":2}'),
    ]


def test_a_deeply_nested_schema_is_not_strict_and_raises_nothing() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(600):  # json.loads reads it; a walk with one frame per level would not
        schema = {"type": "array", "items": schema}
    text = json.dumps({**OBJECT, "properties": {"deep": schema}, "required": ["deep"]})
    assert not strict_schema(json.loads(text))


def test_an_output_item_nested_too_deeply_to_keep_is_upstream() -> None:
    summary: Any = []
    for _ in range(200_000):  # past the C recursion limit of every supported Python (3.13's is higher)
        summary = [summary]
    item = {"id": "rs_deep", "type": "reasoning", "summary": summary}
    with pytest.raises(ModelError) as caught:
        feed_all(ev("response.output_item.done", output_index=0, item=item), completed())
    assert caught.value.error_class is ErrorClass.UPSTREAM
    assert "nested too deeply" in caught.value.message


RESPONSES_WRONG_SHAPES: list[tuple[Event, str]] = [
    (Event("message", [1]), "the 'message' event is a list, not an object"),
    (
        ev("response.output_text.delta", delta=5),
        "delta (in response.output_text.delta) is the number 5, not a string",
    ),
    (
        ev("response.reasoning_summary_text.delta", delta=["a"]),
        "delta (in response.reasoning_summary_text.delta) is a list, not a string",
    ),
    (
        ev("response.function_call_arguments.delta", delta={"a": 1}),
        "delta (in response.function_call_arguments.delta) is an object, not a string",
    ),
    (
        ev("response.function_call_arguments.done", arguments=1),
        "arguments (in response.function_call_arguments.done) is the number 1, not a string",
    ),
    (
        ev("response.output_item.added", item="x"),
        "item (in response.output_item.added) is the string 'x', not an object",
    ),
    (
        ev("response.output_item.done", output_index=0, item={"type": "function_call", "name": 3}),
        "name (of a function_call item) is the number 3, not a string",
    ),
    (
        ev("response.output_item.done", output_index=0, item={"type": "reasoning", "summary": "s"}),
        "summary (of a reasoning item) is the string 's', not a list",
    ),
    (ev("response.completed", response=[]), "response (in response.completed) is a list, not an object"),
    (ev("response.completed", response={"output": {}}), "response.output is an object, not a list"),
    (ev("response.completed", response={"output": [None]}), "response.output[0] is null, not an object"),
]


@pytest.mark.parametrize(
    ("event", "message"), RESPONSES_WRONG_SHAPES, ids=[m for _, m in RESPONSES_WRONG_SHAPES]
)
def test_an_event_of_the_wrong_shape_is_an_upstream_error_naming_the_field(
    event: Event, message: str
) -> None:
    # read as empty, each lost text or arguments, or ended the step as an empty stop
    with pytest.raises(ModelError) as info:
        feed_all(event, completed())
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == f"an event of the wrong shape in the stream: {message}"


def test_a_terminal_usage_of_the_wrong_shape_fails_the_step_at_its_end() -> None:
    state = StreamState()
    done = ev("response.completed", response={"id": "resp_1", "output": [], "usage": {"input_tokens": "40"}})
    assert state.feed(ev("response.output_text.delta", delta="Hi")) == [StreamPart.text_delta("Hi")]
    assert state.feed(done) == []
    with pytest.raises(ModelError) as info:
        state.finish()
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert "response.usage.input_tokens is the string '40', not a token count" in info.value.message


def test_a_negative_output_index_names_no_item_of_the_terminal_response() -> None:
    """Found by the fuzz: ``output[-1]`` raised an IndexError for an empty
    ``output`` (and would read the last item for another)."""
    item = {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}
    parts = feed_all(ev("response.output_item.added", output_index=-1), completed([item]))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_1", "f", "{}", "", ORIGIN)),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]
    assert feed_all(ev("response.output_item.added", output_index=-1), completed()) == [
        StreamPart.step_finish(FinishReason.STOP)
    ]
