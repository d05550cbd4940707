"""The provider item (agentcore/types.py): ``ProviderItem``, its content part and stream
part, the history's JSON form keeping it byte for byte, the loop keeping it in the
assistant message where the model produced it (engine/step.py), the history check
refusing it outside an assistant message, ``TestModel`` and ``check_model`` taking it,
and the web integration's JSON form of the part."""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import pytest

from agentcore import (
    ConfigError,
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    provider_item_part,
    reasoning_part,
    run,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.context import Context
from agentcore.history import check_history
from agentcore.integrations.otel import message_part
from agentcore.integrations.web import part_to_dict
from agentcore.testing import ScriptedModel, TestModel, check_model
from agentcore.types import ToolResult
from tests.loop_helpers import FuncTool, options

# A summary with what a careless encoder would change: line breaks of every kind, a
# raw line separator, an emoji outside the BMP, quotes and backslashes, a NUL.
SUMMARY = 'The user said "hi".\r\n  \\ next\u2028 \U0001f44b\x00 end  \n'
BLOCK = json.dumps({"type": "compaction", "content": SUMMARY}, ensure_ascii=False, separators=(",", ":"))
ITEM = ProviderItem("compaction", BLOCK, "anthropic", "api.anthropic.com", SUMMARY)
OPAQUE = ProviderItem(
    "compaction",
    '{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA=="}',
    "openai-responses",
    "api.openai.com",
)


# --- the value ---------------------------------------------------------------------------------


def test_provider_item_holds_what_it_is_given() -> None:
    assert (ITEM.type, ITEM.data, ITEM.format, ITEM.origin, ITEM.text) == (
        "compaction",
        BLOCK,
        "anthropic",
        "api.anthropic.com",
        SUMMARY,
    )
    assert OPAQUE.text == ""
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ITEM.data = "{}"  # type: ignore[misc]  # frozen on purpose: the write must fail


@pytest.mark.parametrize(
    ("fields", "error", "words"),
    [
        ({"type": ""}, ValueError, "ProviderItem.type must be a non-empty str"),
        ({"type": 3}, ValueError, "ProviderItem.type must be a non-empty str"),
        ({"data": "not json"}, ValueError, "ProviderItem.data must be the JSON text of an object"),
        ({"data": "[1, 2]"}, ValueError, "ProviderItem.data must be the JSON text of an object"),
        ({"data": '"text"'}, ValueError, "ProviderItem.data must be the JSON text of an object"),
        ({"data": {"type": "compaction"}}, TypeError, "ProviderItem.data must be JSON text (str), got dict"),
        ({"data": "[" * 100_000}, ValueError, "ProviderItem.data must be the JSON text of an object"),
        ({"format": None}, TypeError, "format must be a str"),
        ({"origin": 1}, TypeError, "origin must be a str"),
        ({"text": b"x"}, TypeError, "text must be a str"),
    ],
)
def test_provider_item_refuses_what_cannot_go_back(fields: dict[str, Any], error: type, words: str) -> None:
    given: dict[str, Any] = {"type": "compaction", "data": "{}", "format": "f", "origin": "o", **fields}
    with pytest.raises(error, match=re.escape(words)):
        ProviderItem(**given)


def test_to_dict_leaves_out_an_empty_text_and_from_dict_inverts_it() -> None:
    assert ITEM.to_dict() == {
        "type": "compaction",
        "data": BLOCK,
        "format": "anthropic",
        "origin": "api.anthropic.com",
        "text": SUMMARY,
    }
    assert "text" not in OPAQUE.to_dict()
    assert ProviderItem.from_dict(ITEM.to_dict()) == ITEM
    assert ProviderItem.from_dict(OPAQUE.to_dict()) == OPAQUE


# --- the content part and the stream part ------------------------------------------------------


def test_content_part_of_a_provider_item() -> None:
    part = provider_item_part(ITEM)
    assert part.kind is ContentPartKind.PROVIDER_ITEM
    assert part.provider_item is ITEM
    assert part.text == ""
    assert part.to_dict() == {"kind": "provider-item", "provider_item": ITEM.to_dict()}
    assert ContentPart.from_dict(part.to_dict()) == part


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": ContentPartKind.PROVIDER_ITEM},
        {"kind": ContentPartKind.PROVIDER_ITEM, "provider_item": ITEM, "text": "summary"},
        {"kind": ContentPartKind.PROVIDER_ITEM, "provider_item": ITEM, "reasoning": Reasoning(text="r")},
        {"kind": ContentPartKind.TEXT, "text": "t", "provider_item": ITEM},
        {"kind": ContentPartKind.PROVIDER_ITEM, "provider_item": Reasoning(text="r")},
    ],
)
def test_content_part_fields_must_match_the_kind(fields: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="ContentPart fields do not match its kind"):
        ContentPart(**fields)


def test_stream_part_of_a_provider_item() -> None:
    part = StreamPart.provider_item_event(ITEM)
    assert part.kind is StreamPartKind.PROVIDER_ITEM
    assert part.provider_item is ITEM
    assert not part.terminal
    with pytest.raises(ValueError, match="a 'provider-item' StreamPart needs provider_item"):
        StreamPart(StreamPartKind.PROVIDER_ITEM)
    with pytest.raises(ValueError, match="a 'text-delta' StreamPart cannot carry provider_item"):
        StreamPart(StreamPartKind.TEXT_DELTA, text="x", provider_item=ITEM)
    with pytest.raises(ValueError, match="a 'provider-item' StreamPart cannot carry text"):
        StreamPart(StreamPartKind.PROVIDER_ITEM, text="summary", provider_item=ITEM)
    assert StreamPart.text_delta("x").provider_item is None  # the prebuilt delta has the field too


def test_message_lists_its_provider_items_in_order_and_keeps_them_out_of_its_text() -> None:
    message = Message(
        Role.ASSISTANT,
        [provider_item_part(ITEM), text_part("Hello!"), provider_item_part(OPAQUE)],
    )
    assert message.provider_items == [ITEM, OPAQUE]
    assert message.text == "Hello!"
    assert user_message("hi").provider_items == []


def test_history_json_round_trip_is_byte_exact() -> None:
    """A history saved as JSON text and loaded again holds the same block bytes."""
    history = [
        user_message("hi"),
        Message(Role.ASSISTANT, [provider_item_part(ITEM), text_part("Hello!")]),
        Message(Role.ASSISTANT, [text_part("Hi."), provider_item_part(OPAQUE)]),
    ]
    saved = json.dumps([m.to_dict() for m in history], ensure_ascii=False)
    loaded = [Message.from_dict(m) for m in json.loads(saved)]
    assert loaded == history
    assert loaded[1].provider_items[0].data == BLOCK
    assert json.loads(loaded[1].provider_items[0].data)["content"] == SUMMARY


def test_from_dict_names_a_provider_item_it_cannot_read() -> None:
    bad = {"role": "assistant", "content": [{"kind": "provider-item", "provider_item": {"type": "x"}}]}
    with pytest.raises(ConfigError, match=re.escape("Message.to_dict() form: missing key 'data'")):
        Message.from_dict(bad)
    broken = {
        "role": "assistant",
        "content": [{"kind": "provider-item", "provider_item": {**ITEM.to_dict(), "data": "{cut"}}],
    }
    with pytest.raises(ConfigError, match=re.escape("ProviderItem.data must be the JSON text of an object")):
        Message.from_dict(broken)


# --- the history check -------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.USER, Role.TOOL])
def test_a_provider_item_outside_an_assistant_message_is_refused(role: Role) -> None:
    history = [user_message("hi"), Message(role, [text_part("x"), provider_item_part(ITEM)])]
    with pytest.raises(
        ConfigError,
        match=f"messages\\[1\\] is a {role.value} message with a provider item \\('compaction'\\); "
        "provider items belong in assistant messages only",
    ):
        check_history(history)


def test_a_provider_item_in_an_assistant_message_passes() -> None:
    call = ToolCall("c1", "f")
    check_history(
        [
            user_message("hi"),
            Message(Role.ASSISTANT, [provider_item_part(ITEM), tool_call_part(call)]),
            Message(Role.TOOL, [tool_result_part(ToolResult("c1", "f", "ok"))]),
        ]
    )


# --- the loop ----------------------------------------------------------------------------------


def test_the_loop_keeps_the_item_in_place_forwards_it_and_sends_it_back() -> None:
    """Compaction block, text, a call, more text: the assistant message holds them in
    that order, the reader got the part where it came, the next request carries it."""
    weather = ToolCall("c1", "get_weather", '{"city": "Oslo"}')
    model = ScriptedModel(
        [
            [
                StreamPart.provider_item_event(ITEM),
                StreamPart.text_delta("Let me "),
                StreamPart.text_delta("check."),
                StreamPart.tool_call_event(weather),
                StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=10, output=5)),
            ],
            [
                StreamPart.text_delta("-3C."),
                StreamPart.provider_item_event(OPAQUE),
                StreamPart.step_finish(FinishReason.STOP, Usage(input=20, output=2)),
            ],
        ]
    )
    tool = FuncTool("get_weather", lambda _input, _ctx: "-3C")
    reader = run(options(model, messages=[user_message("Weather?")], tools=[tool]))
    kinds = [part.kind for part in reader]
    result = reader.result()
    assert kinds == [
        StreamPartKind.PROVIDER_ITEM,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.STEP_FINISH,
        StreamPartKind.TOOL_RESULT,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.PROVIDER_ITEM,
        StreamPartKind.STEP_FINISH,
        StreamPartKind.FINISH,
    ]
    first, last = result.messages[1], result.messages[3]
    assert first.content == (provider_item_part(ITEM), text_part("Let me check."), tool_call_part(weather))
    assert last.content == (text_part("-3C."), provider_item_part(OPAQUE))
    assert result.text == "-3C."  # the summary is not answer text
    assert model.requests[1].messages[1] == first


# --- the test kit and the web form -------------------------------------------------------------


def test_test_model_takes_a_history_holding_provider_items() -> None:
    history = (
        user_message("Hello there"),
        Message(Role.ASSISTANT, [provider_item_part(ITEM), text_part("Hi!")]),
        user_message("What did I say?"),
    )
    parts = list(TestModel().stream(Request(messages=history), Context()))
    answer = "".join(part.text for part in parts if part.kind is StreamPartKind.TEXT_DELTA)
    assert "What did I say?" in answer
    assert SUMMARY.strip() not in answer
    assert parts[-1].finish_reason is FinishReason.STOP


def test_check_model_accepts_a_provider_item_part() -> None:
    step = [
        StreamPart.provider_item_event(ITEM),
        StreamPart.text_delta("Hi"),
        StreamPart.step_finish(FinishReason.STOP),
    ]
    check_model(ScriptedModel([step, step, step]))


def test_web_form_of_the_part_rebuilds_the_item() -> None:
    data = part_to_dict(StreamPart.provider_item_event(ITEM))
    assert data == {"kind": "provider-item", "provider_item": ITEM.to_dict()}
    assert ProviderItem.from_dict(json.loads(json.dumps(data))["provider_item"]) == ITEM


def test_a_trace_shows_the_item_as_a_part_of_its_own_type() -> None:
    """OpenTelemetry's message parts: a generic part named by the block's type,
    its readable text as the content (not an empty text part)."""
    assert message_part(provider_item_part(ITEM)) == {"type": "compaction", "content": SUMMARY}
    assert message_part(provider_item_part(OPAQUE)) == {"type": "compaction", "content": ""}


def test_reasoning_and_items_keep_their_order_in_one_message() -> None:
    block = Reasoning(text="t", signature="s", format="anthropic", origin="api.anthropic.com")
    message = Message(Role.ASSISTANT, [provider_item_part(ITEM), reasoning_part(block), text_part("a")])
    assert [part.kind for part in Message.from_dict(message.to_dict()).content] == [
        ContentPartKind.PROVIDER_ITEM,
        ContentPartKind.REASONING,
        ContentPartKind.TEXT,
    ]
