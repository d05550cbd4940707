"""What the OpenAI chat adapter sends back of reasoning, table by table: the
dialect each server speaks, each assistant turn in each dialect, switching
providers both ways, the ConfigErrors raised before any HTTP call, and the
ModelSettings mapping (pure, then what the adapter sends, on the in-memory
transport)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    LoopOptions,
    Message,
    ModelSettings,
    Reasoning,
    Request,
    Role,
    RunError,
    ToolCall,
    ToolDefinition,
    ToolResult,
    reasoning_part,
    run,
    text_part,
    tool_call_part,
    user_message,
)
from agentcore.providers.config import origin
from agentcore.providers.gemini.request import DUMMY_SIGNATURE
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat.request import (
    GEMINI,
    NONE,
    reasoning_dialect,
    request_body,
    settings_fields,
)
from agentcore.providers.openai.chat.stream import (
    MISTRAL_THINKING,
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
)
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import tool_result_part

HERE = "api.example.test"
"""The origin the adapter under test talks to (one with no entry in KNOWN_DIALECTS)."""
ELSEWHERE = "api.other.test"
OK = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
WEATHER = ToolDefinition(name="get_weather")
TIME = ToolDefinition(name="get_time")

ENTRY = {
    "type": "reasoning.text",
    "text": "Plan.",
    "signature": "c2ln",
    "format": "anthropic-claude-v1",
    "index": 0,
}
ENCRYPTED = {
    "type": "reasoning.encrypted",
    "data": "ZW5j",
    "id": "rs_1",
    "format": "openai-responses-v1",
    "index": 1,
}


def block(text: str, fmt: str = REASONING_CONTENT, where: str = HERE, **fields: str) -> Reasoning:
    return Reasoning(text=text, format=fmt, origin=where, **fields)


ANTHROPIC = Reasoning(
    text="The user wants Paris.", signature="RXF1aXZhbGVudA==", format="anthropic", origin="api.anthropic.com"
)
REDACTED = Reasoning(data="cmVkYWN0ZWQ=", format="anthropic", origin="api.anthropic.com")
DETAILS = block("Plan.", REASONING_DETAILS, provider_data=json.dumps([ENTRY]))
EXTRA = {"google": {"thought_signature": "Q2lRQg=="}}
SIGNED = json.dumps({"extra_content": EXTRA})


def turn(*parts: Any) -> Message:
    """An assistant turn from text (str), Reasoning and ToolCall parts, in order."""
    content = []
    for part in parts:
        if isinstance(part, str):
            content.append(text_part(part))
        elif isinstance(part, Reasoning):
            content.append(reasoning_part(part))
        else:
            content.append(tool_call_part(part))
    return Message(role=Role.ASSISTANT, content=content)


def results(*calls: ToolCall) -> Message:
    return Message(
        role=Role.TOOL, content=[tool_result_part(ToolResult(c.id, c.name, "sunny")) for c in calls]
    )


def call(call_id: str = "call_1", name: str = "get_weather", **fields: str) -> ToolCall:
    return ToolCall(call_id, name, '{"city":"Paris"}', **fields)


def sent_turn(message: Message, where: str = HERE, fmt: str | None = None) -> dict[str, Any]:
    """The assistant turn as sent, in a valid history around ``message``."""
    history = [user_message("Weather in Paris?"), message]
    if message.tool_calls:
        history.append(results(*message.tool_calls))
    body = request_body(Request(messages=history), "m", origin=where, reasoning_format=fmt)
    turn: dict[str, Any] = body["messages"][1]
    return turn


def wire(call_json: dict[str, Any], extra: Any = None) -> dict[str, Any]:
    return {**call_json, "extra_content": extra} if extra is not None else call_json


CALL_JSON = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}


# --- which field a server takes reasoning back in --------------------------------


@pytest.mark.parametrize(
    ("where", "history", "option", "expected"),
    [
        ("api.openai.com", [turn(block("x", where="api.openai.com"))], None, NONE),
        ("api.deepseek.com", [], None, REASONING_CONTENT),
        ("api.moonshot.ai", [], None, REASONING_CONTENT),
        ("api.z.ai", [], None, REASONING_CONTENT),
        ("api.x.ai", [turn(block("x", where="api.x.ai"))], None, NONE),
        ("api.groq.com", [], None, REASONING),
        ("openrouter.ai", [], None, REASONING_DETAILS),
        ("api.mistral.ai", [], None, MISTRAL_THINKING),
        ("generativelanguage.googleapis.com", [], None, GEMINI),
        # an unknown server: what the history holds from it, latest first
        (HERE, [], None, NONE),
        (HERE, [turn(ANTHROPIC), turn(block("x", where=ELSEWHERE))], None, NONE),
        (HERE, [turn(block("x", REASONING)), turn(block("y"))], None, REASONING_CONTENT),
        (HERE, [turn(block("y")), turn(DETAILS)], None, REASONING_DETAILS),
        (HERE, [turn(call(provider_data=SIGNED, origin=HERE))], None, GEMINI),
        (HERE, [turn(call(provider_data=SIGNED, origin=ELSEWHERE))], None, NONE),
        # another adapter's data from the same origin is not this adapter's
        (
            HERE,
            [turn(block("s", "openai-responses"), call(provider_data='{"id":"fc_1"}', origin=HERE))],
            None,
            NONE,
        ),
        # the option wins over everything
        ("api.openai.com", [], REASONING_CONTENT, REASONING_CONTENT),
        ("api.deepseek.com", [turn(block("x", where="api.deepseek.com"))], NONE, NONE),
    ],
)
def test_reasoning_dialect(where: str, history: list[Message], option: str | None, expected: str) -> None:
    assert reasoning_dialect(where, history, option) == expected


# --- each assistant turn, dialect by dialect ---------------------------------------


@pytest.mark.parametrize(
    ("message", "where", "expected"),
    [
        # DeepSeek: blocks from elsewhere as visible text, a blank line apart;
        # its own blocks joined as they streamed (text split them in two)
        (
            turn(block("Need "), "Checking.", block("the weather."), call()),
            "api.deepseek.com",
            {"reasoning_content": "Need \n\nthe weather.", "content": "Checking.", "tool_calls": [CALL_JSON]},
        ),
        (
            turn(
                block("Need ", where="api.deepseek.com"),
                "Checking.",
                block("weather.", where="api.deepseek.com"),
                call(),
            ),
            "api.deepseek.com",
            {"reasoning_content": "Need weather.", "content": "Checking.", "tool_calls": [CALL_JSON]},
        ),
        # every assistant turn gets the field, "" when it has no reasoning
        (
            turn(call()),
            "api.deepseek.com",
            {"reasoning_content": "", "content": None, "tool_calls": [CALL_JSON]},
        ),
        (turn("Sunny."), "api.deepseek.com", {"reasoning_content": "", "content": "Sunny."}),
        # Groq: only when there is reasoning
        (
            turn(block("Hm.", REASONING, "api.groq.com"), call()),
            "api.groq.com",
            {"reasoning": "Hm.", "content": None, "tool_calls": [CALL_JSON]},
        ),
        (turn(call()), "api.groq.com", {"content": None, "tool_calls": [CALL_JSON]}),
        # OpenRouter: its own entries, unmodified, in order
        (
            turn(
                block("Plan.", REASONING_DETAILS, "openrouter.ai", provider_data=json.dumps([ENTRY])),
                "Text.",
                block("", REASONING_DETAILS, "openrouter.ai", provider_data=json.dumps([ENCRYPTED])),
                call(),
            ),
            "openrouter.ai",
            {"content": "Text.", "reasoning_details": [ENTRY, ENCRYPTED], "tool_calls": [CALL_JSON]},
        ),
        # Mistral: thinking chunks in place
        (
            turn(
                block("Think.", MISTRAL_THINKING, "api.mistral.ai"),
                "2 + 2 = 4",
                block("", MISTRAL_THINKING, "api.mistral.ai"),
            ),
            "api.mistral.ai",
            {
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "Think."}]},
                    {"type": "text", "text": "2 + 2 = 4"},
                ]
            },
        ),
        (turn("plain"), "api.mistral.ai", {"content": "plain"}),
        # Gemini: the signature back on its call; its reasoning has no field
        (
            turn(
                block("Hm.", where="generativelanguage.googleapis.com"),
                call(provider_data=SIGNED, origin="generativelanguage.googleapis.com"),
            ),
            "generativelanguage.googleapis.com",
            {"content": None, "tool_calls": [wire(CALL_JSON, EXTRA)]},
        ),
        # OpenAI: nothing of any of it
        (
            turn(block("Hm.", where="api.openai.com"), call(provider_data=SIGNED, origin="api.openai.com")),
            "api.openai.com",
            {"content": None, "tool_calls": [CALL_JSON]},
        ),
    ],
)
def test_assistant_turn_per_dialect(message: Message, where: str, expected: dict[str, Any]) -> None:
    assert sent_turn(message, where) == {"role": "assistant", **expected}


def test_gemini_signatures_parallel_calls_and_calls_from_elsewhere() -> None:
    """Gemini signs the first of parallel calls; a turn without any signature
    of Gemini's gets the documented dummy on its first call, and only there."""
    gemini = "generativelanguage.googleapis.com"
    second = {
        "id": "call_2",
        "type": "function",
        "function": {"name": "get_time", "arguments": '{"city":"Paris"}'},
    }
    own = turn(call(provider_data=SIGNED, origin=gemini), call("call_2", "get_time"))
    assert sent_turn(own, gemini)["tool_calls"] == [wire(CALL_JSON, EXTRA), second]
    foreign = turn(ANTHROPIC, call(), call("call_2", "get_time", provider_data=SIGNED, origin=ELSEWHERE))
    dummy = {"google": {"thought_signature": DUMMY_SIGNATURE}}
    assert sent_turn(foreign, gemini) == {
        "role": "assistant",
        "content": None,
        "tool_calls": [wire(CALL_JSON, dummy), second],
    }
    # an unknown server that signed its calls before is Gemini-like: same rule
    assert sent_turn(turn(call()), HERE, GEMINI)["tool_calls"] == [wire(CALL_JSON, dummy)]


def test_own_call_data_goes_back_unless_the_dialect_is_none() -> None:
    message = turn(call(provider_data=SIGNED, origin=HERE))
    assert sent_turn(message, HERE, REASONING_CONTENT)["tool_calls"] == [wire(CALL_JSON, EXTRA)]
    assert sent_turn(message, HERE, NONE)["tool_calls"] == [CALL_JSON]


# --- switching providers -------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        # plain unsigned text fields get the visible text, never the signature
        (
            "api.deepseek.com",
            {"reasoning_content": "The user wants Paris.", "content": None, "tool_calls": [CALL_JSON]},
        ),
        # signature-verifying or field-less targets get none of it, nor Groq,
        # whose field only its reasoning models take
        ("api.groq.com", {"content": None, "tool_calls": [CALL_JSON]}),
        ("openrouter.ai", {"content": None, "tool_calls": [CALL_JSON]}),
        ("api.openai.com", {"content": None, "tool_calls": [CALL_JSON]}),
        (
            "generativelanguage.googleapis.com",
            {
                "content": None,
                "tool_calls": [wire(CALL_JSON, {"google": {"thought_signature": DUMMY_SIGNATURE}})],
            },
        ),
    ],
)
def test_anthropic_thinking_sent_through_the_chat_adapter(where: str, expected: dict[str, Any]) -> None:
    message = turn(ANTHROPIC, REDACTED, call())
    sent = sent_turn(message, where)
    assert sent == {"role": "assistant", **expected}
    assert "RXF1aXZhbGVudA==" not in json.dumps(sent)
    assert "cmVkYWN0ZWQ=" not in json.dumps(sent)


def test_mistral_gets_foreign_text_as_a_thinking_chunk() -> None:
    sent = sent_turn(turn(ANTHROPIC, "Paris it is."), "api.mistral.ai")
    assert sent["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": "The user wants Paris."}]},
        {"type": "text", "text": "Paris it is."},
    ]


def test_deepseek_reasoning_sent_to_openai_and_to_kimi() -> None:
    deepseek = turn(block("Thinking in DeepSeek.", where="api.deepseek.com"), call())
    assert sent_turn(deepseek, "api.openai.com") == {
        "role": "assistant",
        "content": None,
        "tool_calls": [CALL_JSON],
    }
    # another reasoning_content server takes the text; blocks from elsewhere are
    # separated by a blank line
    two = turn(block("One.", where="api.deepseek.com"), "x", block("Two.", where="api.deepseek.com"), call())
    assert sent_turn(two, "api.moonshot.ai")["reasoning_content"] == "One.\n\nTwo."


def test_openrouter_entries_never_go_to_another_origin() -> None:
    message = turn(
        block("Plan.", REASONING_DETAILS, "openrouter.ai", provider_data=json.dumps([ENTRY])), call()
    )
    for where, field in (("api.deepseek.com", "reasoning_content"), ("gateway.example.test", None)):
        sent = sent_turn(message, where, REASONING_DETAILS if field is None else None)
        assert "c2ln" not in json.dumps(sent)
        if field:
            assert sent[field] == "Plan."


# --- ConfigErrors before any HTTP call ----------------------------------------------


def refused_histories(here: str) -> list[tuple[list[Message], str]]:
    """Histories the adapter at ``here`` refuses, with what the error says."""
    return [
        ([user_message("hi"), turn(call())], r"messages\[1\] has the tool call 'call_1' without a result"),
        ([user_message("hi"), results(call())], r"messages\[1\] holds a result for the tool call 'call_1'"),
        (
            [user_message("hi"), Message(role=Role.USER, content=[reasoning_part(block("x"))])],
            r"messages\[1\] is a user message with a reasoning part",
        ),
        (
            [user_message("hi"), turn(call(provider_data="{not json", origin=here)), results(call())],
            r"messages\[1\] holds a tool call whose provider_data is not JSON",
        ),
        (
            [user_message("hi"), turn(block("x", REASONING_DETAILS, here, provider_data='{"a":1}'))],
            r"messages\[1\] holds a reasoning part whose provider_data is not a JSON array",
        ),
        (
            [user_message("hi"), turn(block("x", REASONING_DETAILS, here, provider_data="[1]"))],
            r"messages\[1\] holds a reasoning part whose provider_data is not a JSON array",
        ),
    ]


@pytest.mark.parametrize("case", range(len(refused_histories(HERE))))
def test_history_refused_before_any_request(transport: MemoryTransport, case: int) -> None:
    transport.add(Reply.of(OK))
    history, match = refused_histories(HERE)[case]
    model = OpenAIChatModel(
        "m", base_url=f"https://{HERE}/v1", transport=transport, reasoning_format=REASONING_DETAILS
    )
    with pytest.raises(ConfigError, match=match):
        list(model.stream(Request(messages=history), Context()))
    assert transport.sent == []


def test_another_origins_provider_data_is_not_read() -> None:
    """Data written elsewhere is not this adapter's to parse."""
    history = [user_message("hi"), turn(call(provider_data="{not json", origin=ELSEWHERE)), results(call())]
    assert request_body(Request(messages=history), "m", origin=HERE)["messages"][1]["tool_calls"] == [
        CALL_JSON
    ]


@pytest.mark.parametrize("bad", ["reasoning_contents", "", "anthropic"])
def test_unknown_reasoning_format_option(bad: str) -> None:
    with pytest.raises(ConfigError, match="reasoning_format must be one of None, "):
        OpenAIChatModel("m", reasoning_format=bad)


def test_settings_option_must_be_model_settings() -> None:
    with pytest.raises(ConfigError, match="settings must be a ModelSettings or None, got dict"):
        OpenAIChatModel("m", settings={"temperature": 0})  # type: ignore[arg-type]  # a plain dict on purpose: refused at run time


# --- ModelSettings ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "tools", "dialect", "where", "expected"),
    [
        (ModelSettings(), (), NONE, "api.openai.com", {}),
        (
            ModelSettings(temperature=0.2, top_p=0.9, stop_sequences=["END", "STOP"], seed=7),
            (),
            NONE,
            "api.openai.com",
            {"temperature": 0.2, "top_p": 0.9, "stop": ["END", "STOP"], "seed": 7},
        ),
        (ModelSettings(tool_choice="auto"), (WEATHER,), NONE, HERE, {"tool_choice": "auto"}),
        (ModelSettings(tool_choice="none"), (WEATHER,), NONE, HERE, {"tool_choice": "none"}),
        (ModelSettings(tool_choice="required"), (WEATHER,), NONE, HERE, {"tool_choice": "required"}),
        (
            ModelSettings(tool_choice="get_time", parallel_tool_calls=False),
            (WEATHER, TIME),
            NONE,
            HERE,
            {
                "tool_choice": {"type": "function", "function": {"name": "get_time"}},
                "parallel_tool_calls": False,
            },
        ),
        # nothing to choose without tools: auto, none and parallel hold as they are
        (ModelSettings(tool_choice="none", parallel_tool_calls=True), (), NONE, HERE, {}),
        (
            ModelSettings(reasoning_effort="minimal"),
            (),
            NONE,
            "api.openai.com",
            {"reasoning_effort": "minimal"},
        ),
        (
            ModelSettings(reasoning_effort="max", thinking=True),
            (),
            REASONING_CONTENT,
            "api.deepseek.com",
            {"reasoning_effort": "max", "thinking": {"type": "enabled"}},
        ),
        (
            ModelSettings(thinking=False),
            (),
            REASONING_CONTENT,
            "api.moonshot.ai",
            {"thinking": {"type": "disabled"}},
        ),
        (
            ModelSettings(thinking_budget=2048),
            (),
            NONE,
            HERE,
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
        (
            ModelSettings(reasoning_effort="high", thinking=True),
            (),
            REASONING_DETAILS,
            "openrouter.ai",
            {"reasoning": {"effort": "high", "enabled": True}},
        ),
        (
            ModelSettings(thinking_budget=4000),
            (),
            REASONING_DETAILS,
            "openrouter.ai",
            {"reasoning": {"max_tokens": 4000}},
        ),
        (
            ModelSettings(thinking=False),
            (),
            REASONING_DETAILS,
            "openrouter.ai",
            {"reasoning": {"enabled": False}},
        ),
        (
            ModelSettings(reasoning_effort="none"),
            (),
            GEMINI,
            "generativelanguage.googleapis.com",
            {"reasoning_effort": "none"},
        ),
    ],
)
def test_settings_fields(
    settings: ModelSettings,
    tools: tuple[ToolDefinition, ...],
    dialect: str,
    where: str,
    expected: dict[str, Any],
) -> None:
    assert settings_fields(settings, tools, dialect, where) == expected


@pytest.mark.parametrize(
    ("settings", "tools", "dialect", "where", "match"),
    [
        (
            ModelSettings(thinking=True),
            (),
            NONE,
            "api.openai.com",
            "ModelSettings.thinking is not supported by the Chat Completions API at api.openai.com",
        ),
        (
            ModelSettings(thinking_budget=1024),
            (),
            NONE,
            "api.openai.com",
            "ModelSettings.thinking_budget is not supported",
        ),
        (
            ModelSettings(thinking=False),
            (),
            GEMINI,
            "generativelanguage.googleapis.com",
            "ModelSettings.thinking is not supported",
        ),
        (
            ModelSettings(thinking=False, thinking_budget=1024),
            (),
            NONE,
            HERE,
            "thinking_budget is set but ModelSettings.thinking is False",
        ),
        (
            ModelSettings(reasoning_effort="low", thinking_budget=1024),
            (),
            REASONING_DETAILS,
            "openrouter.ai",
            "not both",
        ),
        (
            ModelSettings(tool_choice="required"),
            (),
            NONE,
            HERE,
            "tool_choice is 'required' but the request has no tools",
        ),
        (
            ModelSettings(tool_choice="get_time"),
            (),
            NONE,
            HERE,
            "tool_choice is 'get_time' but the request has no tools",
        ),
        (
            ModelSettings(tool_choice="get_tme"),
            (WEATHER, TIME),
            NONE,
            HERE,
            "names the tool 'get_tme', which is not among",
        ),
    ],
)
def test_settings_refused(
    settings: ModelSettings, tools: tuple[ToolDefinition, ...], dialect: str, where: str, match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        settings_fields(settings, tools, dialect, where)


def test_settings_precedence_in_the_body() -> None:
    """Mapped fields, then the adapter's extra_body, then the merged settings'
    extra_body; the run's settings override the adapter's field by field."""
    model_settings = ModelSettings(temperature=0.1, seed=1, extra_body={"top_k": 5, "seed": 2})
    run_settings = ModelSettings(temperature=0.7, extra_body={"top_k": 9})
    body = request_body(
        Request(messages=[user_message("hi")], settings=run_settings),
        "m",
        extra_body={"seed": 3, "temperature": 1.5, "user": "u1"},
        settings=model_settings,
        include_usage=False,
    )
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "temperature": 1.5,  # the adapter's extra_body wins over a mapped field
        "seed": 2,  # the settings' extra_body wins over the adapter's
        "top_k": 9,  # the run's extra_body key wins over the model's
        "user": "u1",
    }


def test_settings_on_the_wire_adapter_and_per_run(transport: MemoryTransport) -> None:
    """Constructor settings reach every request; a run's settings override
    them; a per-run setting the server refuses fails before any request."""
    transport.add(Reply.of(OK), Reply.of(OK))
    model = OpenAIChatModel(
        "m",
        base_url="http://127.0.0.1:8000/v1",
        transport=transport,
        settings=ModelSettings(temperature=0.3, stop_sequences=["END"], tool_choice="auto"),
        include_usage=False,
    )
    first = run(LoopOptions(model=model, messages=[user_message("hi")], tools=[]))
    assert first.result().text == "ok"
    second = run(
        LoopOptions(
            model=model,
            messages=[user_message("hi")],
            settings=ModelSettings(temperature=0.9, seed=4, thinking=True, thinking_budget=1024),
        )
    )
    assert second.result().text == "ok"
    sent = [request.json() for request in transport.sent]
    assert {k: v for k, v in sent[0].items() if k != "messages"} == {
        "model": "m",
        "stream": True,
        "temperature": 0.3,
        "stop": ["END"],
    }
    assert {k: v for k, v in sent[1].items() if k != "messages"} == {
        "model": "m",
        "stream": True,
        "temperature": 0.9,
        "stop": ["END"],
        "seed": 4,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    refused = run(
        LoopOptions(
            model=model, messages=[user_message("hi")], settings=ModelSettings(tool_choice="required")
        )
    )
    with pytest.raises(RunError) as caught:
        refused.result()
    assert isinstance(caught.value.err, ConfigError)
    assert "'required' but the request has no tools" in str(caught.value.err)
    assert len(transport.sent) == 2


def test_openai_origin_refuses_thinking() -> None:
    """api.openai.com is known by the origin of its base URL, and has no
    thinking field: asking for one is a ConfigError, not a 400 later."""
    where = origin("https://api.openai.com/v1")
    with pytest.raises(ConfigError, match=r"ModelSettings\.thinking is not supported"):
        request_body(
            Request(messages=[user_message("hi")]), "m", origin=where, settings=ModelSettings(thinking=True)
        )


@pytest.mark.parametrize(
    ("settings", "base_url", "match"),
    [
        (
            ModelSettings(thinking=True),
            "https://api.openai.com/v1",
            r"ModelSettings\.thinking is not supported",
        ),
        (ModelSettings(cache=True), "http://127.0.0.1:9/v1", r"ModelSettings\.cache is not supported"),
        (ModelSettings(thinking_budget=10, thinking=False), "http://127.0.0.1:9/v1", "thinking is False"),
    ],
)
def test_the_adapters_own_settings_are_checked_when_it_is_made(
    settings: ModelSettings, base_url: str, match: str
) -> None:
    """A setting the server cannot take in any request fails at construction,
    not at the first request (after the caller has started a run)."""
    with pytest.raises(ConfigError, match=match):
        OpenAIChatModel("m", base_url=base_url, api_key="k", settings=settings)
