"""The Gemini request mapping (``agentcore.providers.gemini.request``): the
settings it sends and refuses, files, tool results, the system instruction,
where thought signatures go back, and the ``countTokens`` body. Each expected
body is the one the API reference describes (the module docstring cites it)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from agentcore import ConfigError, ModelSettings, Request, user_message
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.gemini.request import (
    DUMMY_SIGNATURE,
    FORMAT,
    INLINE_MAX_BYTES,
    KEPT_PART,
    count_body,
    request_body,
    settings_fields,
    tool_json,
)
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import (
    Message,
    OutputSchema,
    ProviderItem,
    Reasoning,
    Role,
    ToolCall,
    ToolDefinition,
    ToolResult,
    file_part,
    provider_item_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)

ORIGIN = "generativelanguage.googleapis.com"
WEATHER = ToolDefinition(
    name="get_weather",
    description="The weather in a city.",
    input_schema='{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}',
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))


def body_of(*messages: Message, **fields: Any) -> dict[str, Any]:
    return request_body(Request(messages=list(messages), **fields), "gemini-test", origin=ORIGIN)


def assistant(*parts: Any) -> Message:
    return Message(Role.ASSISTANT, parts)


def signed_call(call_id: str, signature: str = "", *, given: bool = False, origin: str = ORIGIN) -> ToolCall:
    """A call as the stream mapping makes it (its provider_data)."""
    kept: dict[str, Any] = {}
    if signature:
        kept["thoughtSignature"] = signature
    if given:
        kept["id"] = True
    data = json.dumps(kept) if kept else ""
    return ToolCall(
        call_id, "get_weather", '{"city": "Paris"}', provider_data=data, origin=origin if data else ""
    )


# --- settings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "fields"),
    [
        (ModelSettings(), {}),
        (
            ModelSettings(temperature=0.2, top_p=0.9, seed=7, stop_sequences=["END", "STOP"]),
            {
                "generationConfig": {
                    "temperature": 0.2,
                    "topP": 0.9,
                    "seed": 7,
                    "stopSequences": ["END", "STOP"],
                }
            },
        ),
        (ModelSettings(thinking=True), {"generationConfig": {"thinkingConfig": {"includeThoughts": True}}}),
        (
            ModelSettings(thinking=False),
            {"generationConfig": {"thinkingConfig": {"includeThoughts": False, "thinkingBudget": 0}}},
        ),
        (
            ModelSettings(thinking=True, thinking_budget=2048),
            {"generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048}}},
        ),
        (
            ModelSettings(reasoning_effort="low"),
            {"generationConfig": {"thinkingConfig": {"thinkingLevel": "low"}}},
        ),
        (ModelSettings(tool_choice="auto"), {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}),
        (ModelSettings(tool_choice="none"), {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}),
        (ModelSettings(tool_choice="required"), {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}),
        (
            ModelSettings(tool_choice="get_weather"),
            {
                "toolConfig": {
                    "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
                }
            },
        ),
    ],
)
def test_settings_map_to_generation_config_and_tool_config(
    settings: ModelSettings, fields: dict[str, Any]
) -> None:
    assert settings_fields(settings, [WEATHER]) == fields


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            ModelSettings(parallel_tool_calls=False),
            "ModelSettings.parallel_tool_calls is not supported by the Gemini",
        ),
        (ModelSettings(cache=True), "ModelSettings.cache is not supported by the Gemini API"),
        (ModelSettings(cache_key="k"), "ModelSettings.cache_key is not supported by the Gemini API"),
        (ModelSettings(compaction_trigger=50_000), "ModelSettings.compaction_trigger is not supported"),
        (ModelSettings(clear_tool_uses=True), "ModelSettings.clear_tool_uses is not supported"),
        (
            ModelSettings(reasoning_effort="xhigh"),
            "reasoning_effort='xhigh': the Gemini API's thinking levels are",
        ),
        (ModelSettings(reasoning_effort="none"), "reasoning_effort='none'"),
        (
            ModelSettings(reasoning_effort="high", thinking_budget=1024),
            "thinking_budget and reasoning_effort together",
        ),
    ],
)
def test_settings_the_api_cannot_take_are_refused_when_the_model_is_made(
    settings: ModelSettings, message: str
) -> None:
    with pytest.raises(ConfigError, match="^" + message.replace("(", r"\(")):
        GeminiModel("gemini-test", api_key="AIza-test", settings=settings)


def test_a_tool_choice_naming_no_offered_tool_is_refused() -> None:
    with pytest.raises(ConfigError, match="tool_choice='lookup' names a tool the request does not offer"):
        body_of(user_message("hi"), tools=[WEATHER], settings=ModelSettings(tool_choice="lookup"))


def test_request_settings_override_the_models_and_extra_body_comes_last() -> None:
    request = Request(
        messages=[user_message("hi")],
        max_output_tokens=512,
        settings=ModelSettings(temperature=0.5, extra_body={"safetySettings": [], "cachedContent": "c/2"}),
    )
    body = request_body(
        request,
        "gemini-test",
        settings=ModelSettings(temperature=1.0, top_p=0.5),
        extra_body={"cachedContent": "c/1", "labels": {"team": "a"}},
        origin=ORIGIN,
    )
    assert body["generationConfig"] == {"maxOutputTokens": 512, "temperature": 0.5, "topP": 0.5}
    assert body["cachedContent"] == "c/2"  # the request's extra_body wins over the adapter's
    assert body["labels"] == {"team": "a"}
    assert body["safetySettings"] == []


def test_structured_output_asks_for_json_with_the_schema_as_it_is() -> None:
    schema = '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}'
    body = body_of(user_message("hi"), output=OutputSchema("answer", schema))
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": json.loads(schema),
    }


def test_the_system_prompt_is_the_system_instruction() -> None:
    body = body_of(user_message("hi"), system="Answer in French.")
    assert body["systemInstruction"] == {"parts": [{"text": "Answer in French."}]}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert "systemInstruction" not in body_of(user_message("hi"))


# --- tools ------------------------------------------------------------------------


def test_a_tool_is_a_function_declaration_with_its_json_schema_as_it_is() -> None:
    schema = {
        "type": "object",
        "$defs": {"u": {"enum": ["C", "F"]}},
        "properties": {"unit": {"$ref": "#/$defs/u"}},
    }
    tool = ToolDefinition(name="weather-now", description="", input_schema=json.dumps(schema))
    assert tool_json(tool) == {
        "name": "weather-now",
        "parametersJsonSchema": schema,
    }  # no empty description
    assert body_of(user_message("hi"), tools=[WEATHER])["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "parametersJsonSchema": json.loads(WEATHER.input_schema),
                    "description": "The weather in a city.",
                }
            ]
        }
    ]


@pytest.mark.parametrize(
    ("name", "schema", "message"),
    [
        ("9lives", '{"type": "object"}', "tool '9lives': the Gemini API takes function names"),
        (
            "lookup",
            '{"type": "string"}',
            "tool 'lookup': the Gemini API takes a parameters schema of type object",
        ),
        (
            "lookup",
            '{"properties": {}}',
            "tool 'lookup': the Gemini API takes a parameters schema of type object",
        ),
    ],
)
def test_a_tool_the_api_refuses_is_a_config_error(name: str, schema: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        tool_json(ToolDefinition(name=name, description="", input_schema=schema))


# --- files ------------------------------------------------------------------------


def test_files_go_inline_or_by_uri() -> None:
    message = user_message(
        "Compare them.",
        file_part(PNG, media_type="image/png"),
        file_part(
            url="https://generativelanguage.googleapis.com/v1beta/files/abc", media_type="application/pdf"
        ),
        file_part(b"plain words", media_type="text/plain"),
        file_part(url="https://www.youtube.com/watch?v=9hE5-98ZeCg", media_type="video/mp4"),
    )
    assert body_of(message)["contents"][0]["parts"] == [
        {"text": "Compare them."},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
        {
            "fileData": {
                "mimeType": "application/pdf",
                "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc",
            }
        },
        {"inlineData": {"mimeType": "text/plain", "data": base64.b64encode(b"plain words").decode()}},
        {"fileData": {"mimeType": "video/mp4", "fileUri": "https://www.youtube.com/watch?v=9hE5-98ZeCg"}},
    ]


def test_a_gif_and_a_file_over_the_inline_limit_are_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"messages\[0\] holds a file of type image/gif, which the Gemini API"
    ):
        body_of(user_message("look", file_part(b"GIF89a", media_type="image/gif")))
    big = file_part(bytes(INLINE_MAX_BYTES + 1), media_type="application/pdf")
    with pytest.raises(
        ConfigError, match=r"messages\[0\] holds a file of type application/pdf and 20,971,521"
    ):
        body_of(user_message("read", big))
    # a URL is not sent inline, so it has no size limit here
    assert body_of(
        user_message("read", file_part(url="https://example.com/a.pdf", media_type="application/pdf"))
    )


def test_a_file_in_an_assistant_message_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"messages\[1\] is an assistant message with a file part"):
        body_of(user_message("hi"), assistant(text_part("see"), file_part(PNG, media_type="image/png")))


# --- tool results -----------------------------------------------------------------


def turn_with_calls(*calls: ToolCall) -> list[Message]:
    return [user_message("weather?"), assistant(*[tool_call_part(c) for c in calls])]


def test_tool_results_are_function_responses_in_call_order_with_errors_marked() -> None:
    first, second = signed_call("c1", "sig-1", given=True), signed_call("gemini-" + "0" * 24)
    results = Message(
        Role.TOOL,
        [
            tool_result_part(ToolResult("c1", "get_weather", "sunny")),
            tool_result_part(ToolResult(second.id, "get_weather", "no such city", is_error=True)),
        ],
    )
    body = body_of(*turn_with_calls(first, second), results)
    assert body["contents"][2] == {
        "role": "user",
        "parts": [
            # Gemini gave c1 its id, so it goes back; the made-up id does not
            {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}, "id": "c1"}},
            {"functionResponse": {"name": "get_weather", "response": {"error": "Error: no such city"}}},
        ],
    }
    # the loop's own error results already say so, and are not marked twice
    already = Message(
        Role.TOOL, [tool_result_part(ToolResult("c1", "get_weather", "Error: timed out", True))]
    )
    sent = body_of(*turn_with_calls(signed_call("c1", "sig", given=True)), already)["contents"][2]["parts"][0]
    assert sent["functionResponse"]["response"] == {"error": "Error: timed out"}


def test_a_tool_results_files_follow_the_responses_with_a_sentence() -> None:
    png = file_part(PNG, media_type="image/png").file
    assert png is not None
    result = ToolResult("c1", "screenshot", "taken", files=[png])
    message = Message(Role.TOOL, [tool_result_part(result)])
    parts = body_of(*turn_with_calls(signed_call("c1", "sig", given=True)), message)["contents"][2]["parts"]
    assert parts == [
        {"functionResponse": {"name": "screenshot", "response": {"output": "taken"}, "id": "c1"}},
        {"text": "Files returned by the tool call 'c1' (screenshot):"},
        {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(PNG).decode()}},
    ]


def test_a_tool_results_gif_is_refused_naming_the_call() -> None:
    gif = file_part(b"GIF89a", media_type="image/gif").file
    assert gif is not None
    message = Message(Role.TOOL, [tool_result_part(ToolResult("c1", "screenshot", "taken", files=[gif]))])
    with pytest.raises(
        ConfigError, match=r"the result of the tool call 'c1'\) holds a file of type image/gif"
    ):
        body_of(*turn_with_calls(signed_call("c1", "sig", given=True)), message)


# --- thought signatures -----------------------------------------------------------


def answered(message: Message) -> list[Message]:
    """``message`` and, when it made calls, the tool message answering them
    (a history must answer every call)."""
    results = [tool_result_part(ToolResult(call.id, call.name, "ok")) for call in message.tool_calls]
    return [message, Message(Role.TOOL, results)] if results else [message]


def model_parts(message: Message) -> list[dict[str, Any]]:
    contents = body_of(user_message("hi"), *answered(message))["contents"]
    return contents[1]["parts"] if len(contents) > 1 and contents[1]["role"] == "model" else []


def gemini(text: str = "", signature: str = "", origin: str = ORIGIN) -> Any:
    return reasoning_part(Reasoning(text=text, signature=signature, format=FORMAT, origin=origin))


def test_a_thought_goes_back_as_a_thought_with_its_signature() -> None:
    assert model_parts(assistant(gemini("Let me think.", "sig-t"), text_part("Paris."))) == [
        {"text": "Let me think.", "thought": True, "thoughtSignature": "sig-t"},
        {"text": "Paris."},
    ]
    assert model_parts(assistant(gemini("Unsigned."), text_part("Paris."))) == [
        {"text": "Unsigned.", "thought": True},
        {"text": "Paris."},
    ]


def test_a_text_signature_goes_on_the_text_after_it_or_else_the_last_text() -> None:
    # Gemini 2.5: the signature on the first text after the thoughts
    assert model_parts(assistant(gemini(signature="sig-a"), text_part("One."), text_part("Two."))) == [
        {"text": "One.", "thoughtSignature": "sig-a"},
        {"text": "Two."},
    ]
    # Gemini 3: the signature on an empty text part after the answer
    assert model_parts(assistant(text_part("One."), text_part("Two."), gemini(signature="sig-b"))) == [
        {"text": "One."},
        {"text": "Two.", "thoughtSignature": "sig-b"},
    ]


def test_a_text_signature_without_text_is_dropped() -> None:
    assert model_parts(assistant(gemini(signature="sig-a"), tool_call_part(signed_call("c1", "sig-c")))) == [
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "sig-c"}
    ]


def test_reasoning_of_another_format_or_origin_is_left_out() -> None:
    foreign = reasoning_part(
        Reasoning(text="hmm", signature="x", format="anthropic", origin="api.anthropic.com")
    )
    elsewhere = gemini("thought at a proxy", "sig", origin="proxy.example")
    assert model_parts(assistant(foreign, elsewhere, text_part("Paris."))) == [{"text": "Paris."}]
    # a turn with nothing left sends no content at all
    assert model_parts(assistant(foreign)) == []


def test_only_gemini_signed_calls_keep_their_signature_else_the_first_call_gets_the_dummy() -> None:
    # parallel calls: the first carries the signature, the second none
    parts = model_parts(
        assistant(
            tool_call_part(signed_call("c1", "sig-1", given=True)),
            tool_call_part(signed_call("c2", given=True)),
        )
    )
    assert parts == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
            "thoughtSignature": "sig-1",
        },
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c2"}},
    ]
    # calls another model made: no id of ours, the documented dummy on the first call only
    other = [
        ToolCall("toolu_1", "get_weather", '{"city": "Rome"}'),
        ToolCall("toolu_2", "get_weather", "not json"),
    ]
    parts = model_parts(assistant(text_part("Checking."), *[tool_call_part(c) for c in other]))
    assert parts == [
        {"text": "Checking."},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Rome"}},
            "thoughtSignature": DUMMY_SIGNATURE,
        },
        {"functionCall": {"name": "get_weather", "args": {}}},
    ]
    # a signed call from another origin is sent as a foreign one
    moved = signed_call("c1", "sig-1", given=True, origin="proxy.example")
    assert model_parts(assistant(tool_call_part(moved))) == [
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
            "thoughtSignature": DUMMY_SIGNATURE,
        }
    ]


@pytest.mark.parametrize("data", ['["not", "ours"]', "{oops"])
def test_edited_provider_data_is_a_config_error(data: str) -> None:
    broken = ToolCall("c1", "get_weather", "{}", provider_data=data, origin=ORIGIN)
    with pytest.raises(
        ConfigError,
        match=r"messages\[1\], tool call 'c1', holds provider_data that is not GeminiModel's JSON",
    ):
        body_of(user_message("hi"), *answered(assistant(tool_call_part(broken))))


def test_kept_parts_go_back_in_place_to_the_same_origin_only() -> None:
    code = {"executableCode": {"language": "PYTHON", "code": "print(1)"}, "thoughtSignature": "sig-x"}
    item = ProviderItem(KEPT_PART, json.dumps(code), FORMAT, ORIGIN)
    turn = assistant(provider_item_part(item), text_part("It prints 1."))
    assert model_parts(turn) == [code, {"text": "It prints 1."}]
    moved = ProviderItem(KEPT_PART, json.dumps(code), FORMAT, "proxy.example")
    assert model_parts(assistant(provider_item_part(moved), text_part("It prints 1."))) == [
        {"text": "It prints 1."}
    ]


# --- countTokens ------------------------------------------------------------------


def test_count_body_wraps_the_step_body_with_the_model_name() -> None:
    body = body_of(user_message("hi"), system="Be brief.", tools=[WEATHER])
    assert count_body(body, "gemini-2.5-flash") == {
        "generateContentRequest": {"model": "models/gemini-2.5-flash", **body}
    }


def test_count_tokens_asks_count_tokens_with_the_whole_step() -> None:
    transport = MemoryTransport(
        Reply.of(
            b'{"totalTokens": 31, "promptTokensDetails": []}', headers={"content-type": "application/json"}
        )
    )
    model = GeminiModel("gemini-2.5-flash", api_key="AIza-test", transport=transport)
    assert model.count_tokens([user_message("hi")], system="Be brief.", tools=[WEATHER]) == 31
    sent = transport.sent[0]
    assert sent.url == "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens"
    assert sent.headers["x-goog-api-key"] == "AIza-test"
    inner = sent.json()["generateContentRequest"]
    assert inner["model"] == "models/gemini-2.5-flash"
    assert inner["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert inner["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    assert inner["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_a_thinking_level_is_refused_for_a_gemini_2_model_and_taken_by_gemini_3() -> None:
    with pytest.raises(
        ConfigError, match=r"thinking levels are Gemini 3's; gemini-2\.5-flash takes thinking_budget"
    ):
        GeminiModel("gemini-2.5-flash", api_key="k", settings=ModelSettings(reasoning_effort="high"))
    with pytest.raises(ConfigError, match="thinking levels are Gemini 3's"):  # asked for one run only
        request_body(
            Request(messages=[user_message("hi")], settings=ModelSettings(reasoning_effort="low")),
            "gemini-2.0-flash",
        )
    body = request_body(
        Request(messages=[user_message("hi")], settings=ModelSettings(reasoning_effort="low")),
        "gemini-3-pro-preview",
    )
    assert body["generationConfig"]["thinkingConfig"] == {"thinkingLevel": "low"}


def test_a_models_prefix_is_dropped_and_a_versioned_base_url_is_refused() -> None:
    assert GeminiModel("models/gemini-2.5-flash", api_key="k").model_id == "gemini-2.5-flash"
    with pytest.raises(ConfigError, match="without /v1beta"):
        GeminiModel(
            "gemini-2.5-flash", api_key="k", base_url="https://generativelanguage.googleapis.com/v1beta/"
        )
