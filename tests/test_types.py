"""The value types (agentcore/types.py): validators, named constructors, Usage
arithmetic, JSON round-trips and the enums' wire strings."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from agentcore import (
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    ModelError,
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
from agentcore.errors import ConfigError, ErrorClass

CALL = ToolCall(id="call_1", name="search", input='{"q":"x"}')
RESULT = ToolResult(tool_call_id="call_1", name="search", content="found", is_error=False)
ERR = ModelError(ErrorClass.UPSTREAM, message="boom")


# --- enums -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "expected"),
    [
        (
            ContentPartKind,
            {
                "TEXT": "text",
                "REASONING": "reasoning",
                "TOOL_CALL": "tool-call",
                "TOOL_RESULT": "tool-result",
                "FILE": "file",
                "CACHE_POINT": "cache-point",
                "PROVIDER_ITEM": "provider-item",
            },
        ),
        (Role, {"USER": "user", "ASSISTANT": "assistant", "TOOL": "tool"}),
        (
            FinishReason,
            {
                "STOP": "stop",
                "TOOL_CALLS": "tool-calls",
                "LENGTH": "length",
                "STEP_LIMIT": "step-limit",
                "APPROVAL_REQUIRED": "approval-required",
                "CANCELED": "canceled",
                "ERROR": "error",
                "CONTENT_FILTER": "content-filter",
                "PAUSED": "paused",
                "GUARDRAIL": "guardrail",
                "LIMIT": "limit",
            },
        ),
        (
            StreamPartKind,
            {
                "TEXT_DELTA": "text-delta",
                "REASONING_DELTA": "reasoning-delta",
                "REASONING": "reasoning",
                "TOOL_CALL": "tool-call",
                "TOOL_CALL_DELTA": "tool-call-delta",
                "CITATION": "citation",
                "PROVIDER_ITEM": "provider-item",
                "TOOL_RESULT": "tool-result",
                "STEP_FINISH": "step-finish",
                "COMPACTION": "compaction",
                "FINISH": "finish",
                "ERROR": "error",
                "NESTED": "nested",
                "HANDOFF": "handoff",
            },
        ),
    ],
)
def test_enum_values_are_the_wire_strings(enum: Any, expected: dict[str, str]) -> None:
    assert {member.name: member.value for member in enum} == expected
    for name, value in expected.items():
        assert enum(value) is enum[name]
        assert enum[name] == value  # str-valued
        assert isinstance(enum[name], str)


# --- StreamPart --------------------------------------------------------------------------------


def test_stream_part_named_constructors() -> None:
    assert StreamPart.text_delta("hi") == StreamPart(kind=StreamPartKind.TEXT_DELTA, text="hi")
    assert StreamPart.tool_call_event(CALL) == StreamPart(kind="tool-call", tool_call=CALL)
    assert StreamPart.tool_result_event(RESULT) == StreamPart(kind="tool-result", tool_result=RESULT)
    step = StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(1, 2, 3, 4))
    assert (step.kind, step.finish_reason, step.usage, step.total_usage) == (
        StreamPartKind.STEP_FINISH,
        FinishReason.TOOL_CALLS,
        Usage(1, 2, 3, 4),
        Usage(),
    )
    finish = StreamPart.finish(FinishReason.STOP, Usage(5, 6))
    assert (finish.kind, finish.finish_reason, finish.total_usage, finish.usage) == (
        StreamPartKind.FINISH,
        FinishReason.STOP,
        Usage(5, 6),
        Usage(),
    )
    error = StreamPart.error(ERR, Usage(7, 8))
    assert (error.kind, error.err, error.finish_reason, error.total_usage) == (
        StreamPartKind.ERROR,
        ERR,
        FinishReason.ERROR,
        Usage(7, 8),
    )
    canceled = StreamPart.error(ERR, finish_reason=FinishReason.CANCELED)
    assert canceled.finish_reason is FinishReason.CANCELED
    assert [p.terminal for p in (StreamPart.text_delta("x"), step, finish, error)] == [
        False,
        False,
        True,
        True,
    ]


def test_stream_part_converts_strings_and_is_frozen() -> None:
    part = StreamPart(kind="step-finish", finish_reason="length")
    assert part.kind is StreamPartKind.STEP_FINISH
    assert part.finish_reason is FinishReason.LENGTH
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        part.text = "x"  # type: ignore[misc]  # frozen on purpose: the write must fail
    with pytest.raises(ValueError, match="'bogus' is not a valid StreamPartKind"):
        StreamPart(kind="bogus")
    with pytest.raises(ValueError, match="'done' is not a valid FinishReason"):
        StreamPart(kind="finish", finish_reason="done")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        # text-delta carries text only
        ({"kind": "text-delta", "tool_call": CALL}, "cannot carry tool_call"),
        ({"kind": "text-delta", "text": "a", "usage": Usage(1)}, "cannot carry usage"),
        ({"kind": "text-delta", "finish_reason": "stop"}, "cannot carry finish_reason"),
        ({"kind": "text-delta", "err": ERR}, "cannot carry err"),
        # tool-call needs tool_call and nothing else
        ({"kind": "tool-call"}, "needs tool_call"),
        ({"kind": "tool-call", "tool_call": CALL, "text": "a"}, "cannot carry text"),
        ({"kind": "tool-call", "tool_call": CALL, "tool_result": RESULT}, "cannot carry tool_result"),
        # tool-result needs tool_result and nothing else
        ({"kind": "tool-result"}, "needs tool_result"),
        ({"kind": "tool-result", "tool_result": RESULT, "total_usage": Usage(1)}, "cannot carry total_usage"),
        # step-finish: usage and finish_reason
        ({"kind": "step-finish"}, "needs finish_reason"),
        (
            {"kind": "step-finish", "finish_reason": "stop", "total_usage": Usage(1)},
            "cannot carry total_usage",
        ),
        ({"kind": "step-finish", "finish_reason": "stop", "text": "a"}, "cannot carry text"),
        # finish: finish_reason and total_usage
        ({"kind": "finish"}, "needs finish_reason"),
        ({"kind": "finish", "finish_reason": "stop", "usage": Usage(1)}, "cannot carry usage"),
        ({"kind": "finish", "finish_reason": "stop", "err": ERR}, "cannot carry err"),
        # error: err, finish_reason (error or canceled), total_usage
        ({"kind": "error", "finish_reason": "error"}, "needs err"),
        ({"kind": "error", "err": "boom", "finish_reason": "error"}, "needs err"),
        ({"kind": "error", "err": ERR}, "finish_reason is 'error', 'canceled' or 'guardrail'"),
        (
            {"kind": "error", "err": ERR, "finish_reason": "stop"},
            "finish_reason is 'error', 'canceled' or 'guardrail'",
        ),
        ({"kind": "error", "err": ERR, "finish_reason": "error", "usage": Usage(1)}, "cannot carry usage"),
        ({"kind": "error", "err": ERR, "finish_reason": "error", "text": "a"}, "cannot carry text"),
    ],
)
def test_stream_part_fields_must_match_the_kind(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        StreamPart(**kwargs)


# --- ContentPart -------------------------------------------------------------------------------


def test_content_part_constructors() -> None:
    assert text_part("hi") == ContentPart(kind=ContentPartKind.TEXT, text="hi")
    assert tool_call_part(CALL) == ContentPart(kind="tool-call", tool_call=CALL)
    assert tool_result_part(RESULT) == ContentPart(kind="tool-result", tool_result=RESULT)
    assert ContentPart(kind="text").text == ""


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "text", "tool_call": CALL},
        {"kind": "text", "text": "a", "tool_result": RESULT},
        {"kind": "tool-call"},
        {"kind": "tool-call", "tool_call": CALL, "text": "a"},
        {"kind": "tool-call", "tool_call": CALL, "tool_result": RESULT},
        {"kind": "tool-result"},
        {"kind": "tool-result", "tool_result": RESULT, "text": "a"},
        {"kind": "tool-result", "tool_result": RESULT, "tool_call": CALL},
        {"kind": "tool-result", "tool_result": CALL},
    ],
)
def test_content_part_fields_must_match_the_kind(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ContentPart fields do not match its kind"):
        ContentPart(**kwargs)


def test_message_content_must_be_content_parts_and_is_a_tuple() -> None:
    message = Message(role="assistant", content=[text_part("a"), tool_call_part(CALL)])
    assert message.role is Role.ASSISTANT
    assert message.content == (text_part("a"), tool_call_part(CALL))
    assert (message.text, message.tool_calls, message.tool_results) == ("a", [CALL], [])
    with pytest.raises(TypeError, match="ContentPart objects, got str"):
        Message(role=Role.USER, content=["hello"])
    with pytest.raises(ValueError, match="'system' is not a valid Role"):
        Message(role="system")
    assert user_message("hi") == Message(role=Role.USER, content=(text_part("hi"),))


def test_text_and_system_prompt_must_be_str() -> None:
    # Caught where the value is made, not later inside an adapter's request body.
    with pytest.raises(TypeError, match="text must be a str, got int: 5"):
        user_message(5)  # type: ignore[arg-type]  # a wrong type on purpose: refused
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        text_part(None)  # type: ignore[arg-type]  # a wrong type on purpose: refused
    with pytest.raises(TypeError, match="system must be a str, got int: 5"):
        Request(system=5)  # type: ignore[arg-type]  # a wrong type on purpose: refused
    assert Request(system="Be brief.").system == "Be brief."


# --- Usage -------------------------------------------------------------------------------------


def test_usage_addition_keeps_every_field() -> None:
    a = Usage(input=2012, output=15, cache_read=2000, cache_write=300)
    b = Usage(1, 2, 3, 4)
    assert a + b == Usage(2013, 17, 2003, 304)
    assert a.add(b) == a + b
    assert a + Usage() == a
    assert sum([a, a], Usage()) == Usage(4024, 30, 4000, 600)
    assert Usage() == Usage(0, 0, 0, 0)
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]  # an unsupported operand on purpose


@pytest.mark.parametrize(
    "kwargs",
    [{"input": -1}, {"output": -5}, {"cache_read": 1.5}, {"cache_write": True}, {"input": "3"}],
)
def test_usage_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a non-negative int"):
        Usage(**kwargs)


def test_usage_dict_round_trip() -> None:
    usage = Usage(2012, 15, 2000, 300)
    assert usage.to_dict() == {"input": 2012, "output": 15, "cache_read": 2000, "cache_write": 300}
    assert Usage.from_dict(json.loads(json.dumps(usage.to_dict()))) == usage
    assert Usage.from_dict({"output": 3}) == Usage(0, 3, 0, 0)


# --- JSON round-trips --------------------------------------------------------------------------


def roundtrip(value: Any) -> Any:
    return type(value).from_dict(json.loads(json.dumps(value.to_dict())))


@pytest.mark.parametrize(
    "value",
    [
        CALL,
        ToolCall("call_2", "get_time"),
        ToolCall("call_3", "write", '{"path":"a.txt","text":"lorem ip'),  # malformed input is kept verbatim
        RESULT,
        ToolResult("call_9", "flaky", "Error: disk full", is_error=True),
        ToolResult("call_10", "emoji", "héllo 你好 👋"),
        text_part("hi"),
        text_part(""),
        tool_call_part(CALL),
        tool_result_part(RESULT),
        user_message("What's the weather in Zürich?"),
        Message(role=Role.ASSISTANT, content=[text_part("Let me check."), tool_call_part(CALL)]),
        Message(
            role=Role.TOOL,
            content=[tool_result_part(RESULT), tool_result_part(ToolResult("c2", "x", "", True))],
        ),
        Message(role=Role.ASSISTANT),
    ],
)
def test_to_dict_from_dict_round_trip_through_json(value: Any) -> None:
    assert roundtrip(value) == value


def test_dict_shapes_are_plain_json() -> None:
    message = Message(role=Role.ASSISTANT, content=[text_part("a"), tool_call_part(CALL)])
    assert message.to_dict() == {
        "role": "assistant",
        "content": [
            {"kind": "text", "text": "a"},
            {"kind": "tool-call", "tool_call": {"id": "call_1", "name": "search", "input": '{"q":"x"}'}},
        ],
    }
    assert tool_result_part(RESULT).to_dict() == {
        "kind": "tool-result",
        "tool_result": {"tool_call_id": "call_1", "name": "search", "content": "found", "is_error": False},
    }


def test_tool_call_input_must_be_text() -> None:
    with pytest.raises(TypeError, match="input must be JSON text"):
        ToolCall("c1", "search", {"q": "x"})  # type: ignore[arg-type]  # a wrong type on purpose: refused
    assert ToolCall("c1", "search").input == "{}"


# --- ToolDefinition and Request ----------------------------------------------------------------


def test_tool_definition_schema_validation() -> None:
    default = ToolDefinition("search")
    assert json.loads(default.input_schema) == {"type": "object", "properties": {}}
    assert ToolDefinition("s", "d", '{"type":"object"}').description == "d"
    with pytest.raises(ValueError, match="input_schema is not valid JSON"):
        ToolDefinition("s", input_schema="{not json")
    with pytest.raises(ValueError, match="input_schema must be a JSON object"):
        ToolDefinition("s", input_schema="[1, 2]")
    with pytest.raises(TypeError, match=r"use json\.dumps"):
        ToolDefinition("s", input_schema={"type": "object"})  # type: ignore[arg-type]  # a wrong type on purpose: refused


def test_request_defaults_and_conversion() -> None:
    request = Request()
    assert (request.system, request.messages, request.tools, request.max_output_tokens) == ("", (), (), None)
    assert dict(request.headers) == {}
    history = [user_message("hi")]
    request = Request(messages=history, tools=[ToolDefinition("s")], headers={"X-A": "1"})
    history.append(user_message("later"))
    assert request.messages == (user_message("hi"),)  # a copy, not the caller's list
    assert request.tools == (ToolDefinition("s"),)
    bad: Any
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"max_output_tokens must be an int >= 1, got {bad!r}"):
            Request(max_output_tokens=bad)


def test_the_text_delta_fast_path_builds_the_same_part_as_the_constructor() -> None:
    import attrs

    fast = StreamPart.text_delta("héllo")
    slow = StreamPart(StreamPartKind.TEXT_DELTA, text="héllo")
    assert fast == slow
    assert hash(fast) == hash(slow)
    assert {f.name: getattr(fast, f.name) for f in attrs.fields(StreamPart)} == {
        f.name: getattr(slow, f.name) for f in attrs.fields(StreamPart)
    }
    with pytest.raises(TypeError):
        StreamPart.text_delta(None)  # type: ignore[arg-type]  # a wrong type on purpose: refused


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ({"content": []}, "missing key 'role'"),
        ({"role": "boss", "content": []}, "ValueError: 'boss' is not a valid Role"),
        (
            {"role": "user", "content": [{"kind": "text", "text": "hi"}, {"text": "no kind"}]},
            "missing key 'kind'",
        ),
        ({"role": "user", "content": 3}, "TypeError: 'int' object is not iterable"),
        ({"role": "user", "content": ["text"]}, "TypeError: string indices must be integers"),
    ],
)
def test_message_from_dict_names_what_is_wrong(data: dict[str, Any], detail: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Message.from_dict(data)
    assert str(caught.value).startswith(f"not a message in Message.to_dict() form: {detail}")
