"""The request side of the OpenAI Responses adapter, table by table:
:func:`request_body` (input items, reasoning sent back or not, settings,
server-side state) and the adapter's option checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import ConfigError, Message, ModelSettings, Reasoning, Request, Role, ToolCall, ToolResult
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.providers.openai.responses.request import chain_point, request_body
from agentcore.providers.openai.responses.stream import FORMAT
from agentcore.types import (
    ToolDefinition,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)

ORIGIN = "api.openai.com"
SUMMARY = [{"type": "summary_text", "text": "Plan."}]
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city.",
    input_schema=json.dumps(
        {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        }
    ),
)


def rs(
    rs_id: str = "rs_1", *, data: str = "enc-1", origin: str = ORIGIN, fmt: str = FORMAT, **stored: Any
) -> Reasoning:
    return Reasoning(
        text="Plan.",
        data=data,
        id=rs_id,
        format=fmt,
        origin=origin,
        provider_data=json.dumps({"summary": SUMMARY, **stored}),
    )


def fc(
    call_id: str = "call_1", item_id: str = "fc_1", origin: str = ORIGIN, response_id: str = ""
) -> ToolCall:
    stored = {"id": item_id, **({"response_id": response_id} if response_id else {})}
    return ToolCall(call_id, "get_weather", '{"city":"Oslo"}', json.dumps(stored), origin)


def assistant(*parts: Any) -> Message:
    content = []
    for part in parts:
        if isinstance(part, Reasoning):
            content.append(reasoning_part(part))
        elif isinstance(part, ToolCall):
            content.append(tool_call_part(part))
        else:
            content.append(text_part(part))
    return Message(Role.ASSISTANT, content)


def results(*call_ids: str, error: bool = False) -> Message:
    return Message(
        Role.TOOL, [tool_result_part(ToolResult(c, "get_weather", "12 C", error)) for c in call_ids]
    )


def body_of(*messages: Message, **kwargs: Any) -> dict[str, Any]:
    request = kwargs.pop("request", None) or Request(
        system=kwargs.pop("system", ""), messages=(user_message("Weather in Oslo?"), *messages)
    )
    kwargs.setdefault("origin", ORIGIN)
    return request_body(request, "gpt-5", **kwargs)


def input_of(*messages: Message, **kwargs: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = body_of(*messages, **kwargs)["input"]
    return items


USER = {"type": "message", "role": "user", "content": "Weather in Oslo?"}
RS_ITEM = {"type": "reasoning", "id": "rs_1", "summary": SUMMARY, "encrypted_content": "enc-1"}
CALL_ITEM = {
    "type": "function_call",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Oslo"}',
    "id": "fc_1",
}
OUTPUT_ITEM = {"type": "function_call_output", "call_id": "call_1", "output": "12 C"}


def test_the_default_body_is_stateless_and_asks_for_encrypted_reasoning() -> None:
    body = body_of(system="Be brief.")
    assert body == {
        "model": "gpt-5",
        "stream": True,
        "store": False,
        "instructions": "Be brief.",
        "input": [USER],
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"summary": "auto"},
    }


@pytest.mark.parametrize(
    ("kwargs", "settings", "expected"),
    [
        ({}, ModelSettings(reasoning_effort="high"), {"effort": "high", "summary": "auto"}),
        ({"reasoning_summary": "detailed"}, None, {"summary": "detailed"}),
        ({"reasoning_summary": None}, ModelSettings(reasoning_effort="minimal"), {"effort": "minimal"}),
        ({"reasoning_summary": None}, None, None),
    ],
)
def test_reasoning_configuration(
    kwargs: dict[str, Any], settings: ModelSettings | None, expected: Any
) -> None:
    body = body_of(settings=settings, **kwargs)
    assert body.get("reasoning") == expected
    assert body["include"] == ["reasoning.encrypted_content"]


def test_a_model_without_reasoning_gets_neither_include_nor_reasoning() -> None:
    body = body_of(reasoning=False, reasoning_summary="auto")
    assert "include" not in body
    assert "reasoning" not in body
    with pytest.raises(ConfigError, match=r"reasoning_effort is not supported .*reasoning=False"):
        body_of(reasoning=False, settings=ModelSettings(reasoning_effort="low"))


def test_the_system_prompt_as_a_developer_message() -> None:
    body = body_of(system="Be brief.", system_role="developer")
    assert "instructions" not in body
    assert body["input"] == [{"type": "message", "role": "developer", "content": "Be brief."}, USER]


def test_a_tool_loop_turn_goes_back_in_the_models_order() -> None:
    items = input_of(
        assistant(
            rs("rs_1", data="enc-1"), fc("call_1", "fc_1"), rs("rs_2", data="enc-2"), fc("call_2", "fc_2")
        ),
        results("call_1", "call_2"),
        assistant(rs("rs_3", data="enc-3"), "It is 12 C."),
        user_message("Thanks!"),
    )
    assert items == [
        USER,
        RS_ITEM,
        CALL_ITEM,
        {**RS_ITEM, "id": "rs_2", "encrypted_content": "enc-2"},
        {**CALL_ITEM, "call_id": "call_2", "id": "fc_2"},
        OUTPUT_ITEM,
        {**OUTPUT_ITEM, "call_id": "call_2"},
        {**RS_ITEM, "id": "rs_3", "encrypted_content": "enc-3"},
        {"type": "message", "role": "assistant", "content": "It is 12 C."},
        {"type": "message", "role": "user", "content": "Thanks!"},
    ]


@pytest.mark.parametrize(
    ("result", "output"),
    [
        (ToolResult("call_1", "get_weather", "no such city", True), "Error: no such city"),
        (ToolResult("call_1", "get_weather", "Error: timed out", True), "Error: timed out"),
        (ToolResult("call_1", "get_weather", "", True), "Error: "),
        (ToolResult("call_1", "get_weather", "Error-free", False), "Error-free"),
    ],
)
def test_an_error_result_is_marked_in_its_output(result: ToolResult, output: str) -> None:
    items = input_of(assistant(fc()), Message(Role.TOOL, [tool_result_part(result)]))
    assert items[-1] == {"type": "function_call_output", "call_id": "call_1", "output": output}


@pytest.mark.parametrize(
    "reasoning",
    [
        rs(origin="other-gateway.example"),  # another host's encrypted content
        rs(origin="127.0.0.1:8080"),
        rs(fmt="anthropic"),  # a signed thinking block from another API
        rs(fmt="openai-chat"),
        rs(data=""),  # nothing the server can verify, and store is false
    ],
    ids=["other-host", "other-port", "anthropic", "openai-chat", "no-encrypted-content"],
)
def test_reasoning_this_server_cannot_verify_is_dropped_with_the_item_ids_after_it(
    reasoning: Reasoning,
) -> None:
    items = input_of(assistant(reasoning, fc()), results("call_1"))
    assert items == [USER, {k: v for k, v in CALL_ITEM.items() if k != "id"}, OUTPUT_ITEM]


def test_the_same_reasoning_goes_back_to_its_own_server() -> None:
    items = input_of(assistant(rs(), fc()), results("call_1"))
    assert items == [USER, RS_ITEM, CALL_ITEM, OUTPUT_ITEM]


def test_a_call_from_another_server_keeps_its_call_id_but_not_its_item_id() -> None:
    items = input_of(assistant(fc(origin="elsewhere.example")), results("call_1"))
    assert items[1] == {k: v for k, v in CALL_ITEM.items() if k != "id"}


def test_raw_reasoning_content_goes_back_without_encrypted_content() -> None:
    content = [{"type": "reasoning_text", "text": "Let me think."}]
    items = input_of(assistant(rs(data="", content=content), fc()), results("call_1"))
    assert items[1] == {"type": "reasoning", "id": "rs_1", "summary": SUMMARY, "content": content}
    assert items[2] == CALL_ITEM


def test_reasoning_with_nothing_after_it_in_its_message_is_left_out() -> None:
    items = input_of(assistant("Partial answer", rs()), user_message("Go on"))
    assert items == [
        USER,
        {"type": "message", "role": "assistant", "content": "Partial answer"},
        {"type": "message", "role": "user", "content": "Go on"},
    ]
    assert input_of(assistant(rs()), user_message("Go on"))[1:] == [
        {"type": "message", "role": "user", "content": "Go on"}
    ]


def test_text_in_a_tool_message_is_left_out_and_a_user_message_follows_its_results() -> None:
    tool = Message(
        Role.TOOL, [tool_result_part(ToolResult("call_1", "get_weather", "12 C")), text_part("note")]
    )
    user = Message(
        Role.USER, [tool_result_part(ToolResult("call_2", "get_weather", "9 C")), text_part("And Bergen?")]
    )
    items = input_of(assistant(fc("call_1", "fc_1"), fc("call_2", "fc_2")), tool, user)
    assert items[-3:] == [
        OUTPUT_ITEM,
        {"type": "function_call_output", "call_id": "call_2", "output": "9 C"},
        {"type": "message", "role": "user", "content": "And Bergen?"},
    ]


def test_tools_are_strict_where_their_schema_allows() -> None:
    loose = ToolDefinition(
        name="search", input_schema='{"type":"object","properties":{"q":{"type":"string"}}}'
    )
    request = Request(messages=(user_message("hi"),), tools=(WEATHER, loose), max_output_tokens=500)
    body = request_body(request, "gpt-5", origin=ORIGIN)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": json.loads(WEATHER.input_schema),
            "strict": True,
        },
        {"type": "function", "name": "search", "parameters": json.loads(loose.input_schema), "strict": False},
    ]
    assert body["max_output_tokens"] == 500
    assert "max_output_tokens" not in body_of()
    assert "tools" not in body_of()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (ModelSettings(temperature=0.2, top_p=0.9), {"temperature": 0.2, "top_p": 0.9}),
        (ModelSettings(tool_choice="required"), {"tool_choice": "required"}),
        (ModelSettings(tool_choice="none"), {"tool_choice": "none"}),
        (
            ModelSettings(tool_choice="get_weather"),
            {"tool_choice": {"type": "function", "name": "get_weather"}},
        ),
        (ModelSettings(parallel_tool_calls=False), {"parallel_tool_calls": False}),
        (ModelSettings(extra_body={"service_tier": "flex"}), {"service_tier": "flex"}),
    ],
)
def test_settings_map_onto_the_body(settings: ModelSettings, expected: dict[str, Any]) -> None:
    request = Request(messages=(user_message("hi"),), tools=(WEATHER,))
    body = request_body(request, "gpt-5", origin=ORIGIN, settings=settings)
    assert {k: body[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        (ModelSettings(stop_sequences=["END"]), "stop_sequences"),
        (ModelSettings(seed=7), "seed"),
        (ModelSettings(thinking=True), "thinking"),
        (ModelSettings(thinking_budget=1024), "thinking_budget"),
        (ModelSettings(reasoning_effort="max"), "reasoning_effort"),
        (ModelSettings(tool_choice="no_such_tool"), "tool_choice"),
    ],
)
def test_settings_the_api_cannot_take_are_config_errors(settings: ModelSettings, field: str) -> None:
    with pytest.raises(ConfigError, match=f"ModelSettings.{field}"):
        body_of(settings=settings)


def test_extra_body_is_merged_last_and_the_settings_win() -> None:
    body = body_of(
        extra_body={"store": True, "truncation": "auto", "metadata": {"a": "1"}},
        settings=ModelSettings(extra_body={"metadata": {"b": "2"}}),
    )
    assert body["store"] is True
    assert body["truncation"] == "auto"
    assert body["metadata"] == {"b": "2"}


@pytest.mark.parametrize(
    ("messages", "words"),
    [
        ((assistant(fc()),), r"messages\[1\] has the tool call 'call_1' without a result"),
        ((results("call_9"),), r"messages\[1\] holds a result for the tool call 'call_9'"),
        (
            (Message(Role.USER, [reasoning_part(rs())]),),
            r"messages\[1\] is a user message with a reasoning part",
        ),
        (
            (
                assistant(Reasoning(id="rs_1", format=FORMAT, origin=ORIGIN, provider_data="[1]"), fc()),
                results("call_1"),
            ),
            r"messages\[1\] holds a reasoning part whose provider_data is not a JSON object",
        ),
        (
            (assistant(ToolCall("call_1", "f", "{}", "not json", ORIGIN)), results("call_1")),
            r"messages\[1\] holds a tool call whose provider_data is not a JSON object",
        ),
    ],
    ids=[
        "call-without-result",
        "result-without-call",
        "reasoning-in-user-turn",
        "bad-reasoning-data",
        "bad-call-data",
    ],
)
def test_a_history_the_api_refuses_is_a_config_error(messages: tuple[Message, ...], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        body_of(*messages)


# --- server-side state ----------------------------------------------------------


def test_chain_point_is_the_latest_assistant_message_with_a_stored_response() -> None:
    history = (
        user_message("q"),
        assistant(fc("call_1", "fc_1", response_id="resp_1")),
        results("call_1"),
        assistant(fc("call_2", "fc_2", response_id="resp_2")),
        results("call_2"),
        assistant("done"),
    )
    assert chain_point(history, ORIGIN) == ("resp_2", 3)
    assert chain_point(history, "elsewhere.example") == ("", -1)
    assert chain_point(history[:1], ORIGIN) == ("", -1)


def test_server_state_chains_to_the_stored_response_and_sends_only_what_came_after() -> None:
    body = body_of(
        assistant(rs(data=""), fc("call_1", "fc_1", response_id="resp_1")),
        results("call_1"),
        server_state=True,
        system="Be brief.",
    )
    assert body["store"] is True
    assert body["previous_response_id"] == "resp_1"
    assert body["instructions"] == "Be brief."  # instructions are not carried over by the server
    assert body["input"] == [OUTPUT_ITEM]


def test_server_state_without_a_stored_response_sends_the_history_with_reasoning_by_id() -> None:
    body = body_of(assistant(rs(data=""), fc()), results("call_1"), server_state=True)
    assert "previous_response_id" not in body
    assert body["input"] == [
        USER,
        {"type": "reasoning", "id": "rs_1", "summary": SUMMARY},
        CALL_ITEM,
        OUTPUT_ITEM,
    ]


# --- the adapter's options ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"model": ""}, "model must be a non-empty str"),
        ({"settings": {"temperature": 1}}, "settings must be a ModelSettings"),
        ({"reasoning": "yes"}, r"^reasoning must be one of True, False; got 'yes'$"),
        ({"server_state": 1}, r"^server_state must be one of True, False; got 1$"),
        (
            {"reasoning_summary": "long"},
            r"^reasoning_summary must be one of None, 'auto', 'concise', 'detailed'",
        ),
        (
            {"system_role": "system"},
            r"^system_role must be one of 'instructions', 'developer'; got 'system'$",
        ),
        (
            {"settings": ModelSettings(seed=1)},
            "ModelSettings.seed is not supported by the OpenAI Responses API",
        ),
        ({"reasoning": False, "settings": ModelSettings(reasoning_effort="low")}, "reasoning=False"),
        ({"timeout": (1, 10)}, "timeout must be an agentcore.transport.Timeout or None, got tuple"),
        ({"base_url": "ftp://x"}, "base_url must be an http"),
        ({"api_key": 5}, "api_key must be a str or None"),
        ({"extra_body": {1: 2}}, "extra_body must be a mapping of str keys"),
    ],
)
def test_bad_options_are_config_errors(kwargs: dict[str, Any], words: str) -> None:
    kwargs.setdefault("model", "gpt-5")
    with pytest.raises(ConfigError, match=words):
        OpenAIResponsesModel(**kwargs)


def test_repr_shows_no_key() -> None:
    model = OpenAIResponsesModel(
        "gpt-5", api_key="sk-secret-0123456789", base_url="https://api.openai.com/v1/"
    )
    assert repr(model) == "OpenAIResponsesModel(model='gpt-5', base_url='https://api.openai.com/v1')"
    assert model.model_id == "gpt-5"
    assert model.base_url == "https://api.openai.com/v1"
