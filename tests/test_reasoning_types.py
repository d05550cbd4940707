"""The reasoning value types (agentcore/types.py): Reasoning, the reasoning content
part, the reasoning stream parts, ToolCall.provider_data, and the history's JSON form
round-tripping all of it byte for byte."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest

from agentcore import (
    ContentPart,
    ContentPartKind,
    Message,
    Reasoning,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)

FIELDS = ("text", "signature", "data", "id", "format", "origin", "provider_data")

# Text a provider may send that a careless encoder would change: line breaks of
# every kind, a line separator JSON allows raw, an emoji outside the BMP,
# combining marks, trailing blanks, a NUL, and quotes and backslashes.
AWKWARD = 'Let me think.\r\n  "6 * 7" \\ 42\u2028\u00e9\u0301 \U0001f914\t \x00end  \n'

SIGNED = Reasoning(
    text=AWKWARD,
    signature="EqQBCkYIBxgCKkDx+/=",
    format="anthropic",
    origin="api.anthropic.com",
)
REDACTED = Reasoning(data="RWRhY3RlZCBkYXRh+/==", format="anthropic", origin="api.anthropic.com")
ENCRYPTED = Reasoning(
    text="Summary of the thinking.",
    data="gAAAAABo_encrypted_content=",
    id="rs_68c1",
    format="openai-responses",
    origin="api.openai.com",
)
# provider_data is JSON text kept as sent: its spacing and key order are not normalised.
DETAILS = Reasoning(
    text="Plain reasoning.",
    format="openai-chat",
    origin="openrouter.ai",
    provider_data='[{"type": "reasoning.text",  "text": "Plain reasoning.", "signature": null, "index": 0}]',
)
GEMINI_CALL = ToolCall(
    id="call_1",
    name="get_weather",
    input='{"city":"Oslo"}',
    provider_data='{"google": {"thought_signature": "CiQB0e2Kb+/8=="}}',
    origin="generativelanguage.googleapis.com",
)


# --- Reasoning ---------------------------------------------------------------------------------


def test_reasoning_defaults_to_empty_fields_and_is_frozen() -> None:
    block = Reasoning()
    assert attrs.astuple(block) == ("",) * len(FIELDS)
    assert tuple(field.name for field in attrs.fields(Reasoning)) == FIELDS
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.text = "x"  # type: ignore[misc]  # frozen on purpose: the write must fail


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [None, 1, b"bytes", ["a"]])
def test_every_reasoning_field_must_be_a_str(field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"^{field} must be a str, got {type(value).__name__}$"):
        Reasoning(**{field: value})


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (Reasoning(), {"text": ""}),
        (Reasoning(text="hm"), {"text": "hm"}),
        (
            SIGNED,
            {
                "text": AWKWARD,
                "signature": "EqQBCkYIBxgCKkDx+/=",
                "format": "anthropic",
                "origin": "api.anthropic.com",
            },
        ),
        (
            REDACTED,
            {
                "text": "",
                "data": "RWRhY3RlZCBkYXRh+/==",
                "format": "anthropic",
                "origin": "api.anthropic.com",
            },
        ),
        (
            ENCRYPTED,
            {
                "text": "Summary of the thinking.",
                "data": "gAAAAABo_encrypted_content=",
                "id": "rs_68c1",
                "format": "openai-responses",
                "origin": "api.openai.com",
            },
        ),
    ],
)
def test_reasoning_to_dict_writes_text_and_the_fields_that_are_set(
    block: Reasoning, expected: dict[str, str]
) -> None:
    assert block.to_dict() == expected
    assert Reasoning.from_dict(expected) == block


def test_reasoning_from_dict_fills_missing_fields_and_ignores_unknown_ones() -> None:
    assert Reasoning.from_dict({}) == Reasoning()
    assert Reasoning.from_dict({"signature": "s", "later_field": 1}) == Reasoning(signature="s")


@pytest.mark.parametrize("block", [SIGNED, REDACTED, ENCRYPTED, DETAILS, Reasoning()])
def test_reasoning_survives_json_text_byte_for_byte(block: Reasoning) -> None:
    for ensure_ascii in (True, False):
        stored = json.dumps(block.to_dict(), ensure_ascii=ensure_ascii)
        back = Reasoning.from_dict(json.loads(stored))
        assert back == block
        for field in FIELDS:
            assert getattr(back, field).encode("utf-8", "surrogatepass") == getattr(block, field).encode(
                "utf-8", "surrogatepass"
            )


# --- the reasoning content part ----------------------------------------------------------------


def test_reasoning_part_is_a_content_part_of_kind_reasoning() -> None:
    part = reasoning_part(SIGNED)
    assert part == ContentPart(kind="reasoning", reasoning=SIGNED)
    assert part.kind is ContentPartKind.REASONING
    assert ContentPartKind.REASONING.value == "reasoning"
    assert (part.text, part.tool_call, part.tool_result) == ("", None, None)
    assert part.to_dict() == {"kind": "reasoning", "reasoning": SIGNED.to_dict()}
    assert ContentPart.from_dict(part.to_dict()) == part


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "reasoning"},  # no block
        {"kind": "reasoning", "reasoning": "hm"},  # not a Reasoning
        {"kind": "reasoning", "reasoning": {"text": "hm"}},
        {"kind": "reasoning", "reasoning": SIGNED, "text": "hm"},
        {"kind": "reasoning", "reasoning": SIGNED, "tool_call": GEMINI_CALL},
        {"kind": "reasoning", "reasoning": SIGNED, "tool_result": ToolResult("c", "t")},
        {"kind": "text", "text": "hm", "reasoning": SIGNED},
        {"kind": "tool-call", "tool_call": GEMINI_CALL, "reasoning": SIGNED},
        {"kind": "tool-result", "tool_result": ToolResult("c", "t"), "reasoning": SIGNED},
    ],
)
def test_a_content_part_with_reasoning_in_the_wrong_place_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ContentPart fields do not match its kind"):
        ContentPart(**kwargs)


# --- the reasoning stream parts ----------------------------------------------------------------


def test_reasoning_stream_parts() -> None:
    delta = StreamPart.reasoning_delta("Six times ")
    assert delta == StreamPart("reasoning-delta", text="Six times ")
    assert delta.kind is StreamPartKind.REASONING_DELTA
    assert (delta.reasoning, delta.tool_call, delta.finish_reason, delta.terminal) == (
        None,
        None,
        None,
        False,
    )
    block = StreamPart.reasoning_event(SIGNED)
    assert block == StreamPart("reasoning", reasoning=SIGNED)
    assert block.kind is StreamPartKind.REASONING
    assert (block.text, block.tool_call, block.terminal) == ("", None, False)
    assert StreamPartKind.REASONING_DELTA.value == "reasoning-delta"
    assert StreamPartKind.REASONING.value == "reasoning"


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kind": "reasoning"}, ValueError, "a 'reasoning' StreamPart needs reasoning"),
        ({"kind": "reasoning", "reasoning": "hm"}, ValueError, "needs reasoning"),
        ({"kind": "reasoning", "reasoning": SIGNED, "text": "hm"}, ValueError, "cannot carry text"),
        (
            {"kind": "reasoning-delta", "text": "hm", "reasoning": SIGNED},
            ValueError,
            "cannot carry reasoning",
        ),
        (
            {"kind": "reasoning-delta", "text": "hm", "finish_reason": "stop"},
            ValueError,
            "cannot carry finish",
        ),
        ({"kind": "reasoning-delta", "text": b"hm"}, TypeError, "StreamPart.text must be str"),
        ({"kind": "text-delta", "text": "hm", "reasoning": SIGNED}, ValueError, "cannot carry reasoning"),
        (
            {"kind": "tool-call", "tool_call": GEMINI_CALL, "reasoning": SIGNED},
            ValueError,
            "cannot carry reasoning",
        ),
        ({"kind": "step-finish", "finish_reason": "stop", "reasoning": SIGNED}, ValueError, "cannot carry"),
    ],
)
def test_reasoning_stream_parts_must_match_their_kind(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        StreamPart(**kwargs)


# --- ToolCall.provider_data --------------------------------------------------------------------


def test_tool_call_provider_data_and_origin_round_trip_exactly() -> None:
    assert GEMINI_CALL.to_dict() == {
        "id": "call_1",
        "name": "get_weather",
        "input": '{"city":"Oslo"}',
        "provider_data": '{"google": {"thought_signature": "CiQB0e2Kb+/8=="}}',
        "origin": "generativelanguage.googleapis.com",
    }
    assert ToolCall.from_dict(json.loads(json.dumps(GEMINI_CALL.to_dict()))) == GEMINI_CALL
    plain = ToolCall("c1", "f", "{}")
    assert plain.to_dict() == {"id": "c1", "name": "f", "input": "{}"}  # the form stored before provider data
    assert ToolCall.from_dict({"id": "c1", "name": "f", "input": "{}"}) == plain
    for field in ("provider_data", "origin"):
        wrong: dict[str, Any] = {field: {"google": {}}}
        with pytest.raises(TypeError, match=f"{field} must be a str"):
            ToolCall("c1", "f", "{}", **wrong)


# --- Message -----------------------------------------------------------------------------------

INTERLEAVED = Message(
    role=Role.ASSISTANT,
    content=[
        reasoning_part(SIGNED),
        text_part("Let me check."),
        tool_call_part(GEMINI_CALL),
        reasoning_part(REDACTED),  # interleaved thinking: a block between two calls
        tool_call_part(ToolCall("call_2", "get_time", "{}")),
        reasoning_part(ENCRYPTED),
        reasoning_part(DETAILS),
    ],
)


def test_message_reasoning_lists_the_blocks_in_order() -> None:
    assert INTERLEAVED.reasoning == [SIGNED, REDACTED, ENCRYPTED, DETAILS]
    assert [call.id for call in INTERLEAVED.tool_calls] == ["call_1", "call_2"]
    assert INTERLEAVED.text == "Let me check."  # reasoning is not text
    assert Message(role=Role.USER, content=[text_part("hi")]).reasoning == []


def test_a_history_with_reasoning_round_trips_through_json_exactly() -> None:
    history = [
        Message(role=Role.USER, content=[text_part("Weather and time in Oslo?")]),
        INTERLEAVED,
        Message(
            role=Role.TOOL,
            content=[
                tool_result_part(ToolResult("call_1", "get_weather", "-3C")),
                tool_result_part(ToolResult("call_2", "get_time", "23:00")),
            ],
        ),
    ]
    stored = json.dumps([message.to_dict() for message in history])
    restored = [Message.from_dict(data) for data in json.loads(stored)]
    assert restored == history
    assert [part.kind for part in restored[1].content] == [part.kind for part in INTERLEAVED.content]
    # Stored again, the same bytes: nothing was normalised on the way.
    assert json.dumps([message.to_dict() for message in restored]) == stored


def test_the_stored_form_of_an_assistant_message_with_reasoning() -> None:
    message = Message(
        role=Role.ASSISTANT,
        content=[
            reasoning_part(Reasoning(text="hm", signature="sig")),
            tool_call_part(ToolCall("c1", "f", "{}")),
        ],
    )
    assert message.to_dict() == {
        "role": "assistant",
        "content": [
            {"kind": "reasoning", "reasoning": {"text": "hm", "signature": "sig"}},
            {"kind": "tool-call", "tool_call": {"id": "c1", "name": "f", "input": "{}"}},
        ],
    }
