"""The Bedrock Converse request and stream mappings, function by function:
settings, files, reasoning sent back, cache points, refusals before any call,
stop reasons, usage and a stream cut at each place."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from agentcore import ConfigError, FinishReason, Message, Request, Role, StreamPartKind, Usage, user_message
from agentcore.errors import ErrorClass, ModelError
from agentcore.files import File
from agentcore.providers.bedrock import request as converse
from agentcore.providers.bedrock.request import (
    CACHE_POINT,
    FORMAT,
    check_settings,
    count_body,
    document_name,
    file_json,
    request_body,
    settings_fields,
)
from agentcore.providers.bedrock.stream import StreamState, map_finish_reason, usage_from
from agentcore.server_tools import WebSearch
from agentcore.settings import ModelSettings
from agentcore.transport.sse import Event
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    OutputSchema,
    Reasoning,
    ToolCall,
    ToolDefinition,
    ToolResult,
    cache_point,
)

CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"
GPT_OSS = "openai.gpt-oss-120b-1:0"
NOVA = "us.amazon.nova-2-lite-v1:0"
ORIGIN = "bedrock-runtime.us-east-1.amazonaws.com"
TOOL = ToolDefinition(
    "get_weather", "The weather.", '{"type":"object","properties":{"city":{"type":"string"}}}'
)


def body_for(messages: list[Message], model: str = CLAUDE, **options: Any) -> dict[str, Any]:
    settings = options.pop("settings", None)
    return request_body(Request(messages=messages, **options), model, settings=settings, origin=ORIGIN)


def reasoning(text: str = "", signature: str = "", data: str = "", origin: str = ORIGIN) -> ContentPart:
    block = Reasoning(text=text, signature=signature, data=data, format=FORMAT, origin=origin)
    return ContentPart(ContentPartKind.REASONING, reasoning=block)


def tool_turn(*before: ContentPart) -> list[Message]:
    call = ToolCall("tooluse_1", "get_weather", '{"city": "Paris"}')
    assistant = Message(Role.ASSISTANT, [*before, ContentPart(ContentPartKind.TOOL_CALL, tool_call=call)])
    result = ToolResult("tooluse_1", "get_weather", "sunny")
    return [
        user_message("weather?"),
        assistant,
        Message(Role.TOOL, [ContentPart(ContentPartKind.TOOL_RESULT, tool_result=result)]),
    ]


# --- settings ---------------------------------------------------------------


def test_the_settings_map_to_the_documented_fields() -> None:
    settings = ModelSettings(temperature=0.2, top_p=0.9, stop_sequences=("END",), tool_choice="get_weather")
    assert settings_fields(settings, [TOOL], GPT_OSS, 4096) == {
        "inferenceConfig": {"temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
        "toolChoice": {"tool": {"name": "get_weather"}},
    }
    assert settings_fields(ModelSettings(tool_choice="required"), [TOOL], GPT_OSS, 4096) == {
        "toolChoice": {"any": {}}
    }
    assert settings_fields(ModelSettings(tool_choice="auto"), [TOOL], GPT_OSS, 4096) == {
        "toolChoice": {"auto": {}}
    }
    assert settings_fields(ModelSettings(tool_choice="auto"), [], GPT_OSS, 4096) == {}


@pytest.mark.parametrize(
    ("model", "settings", "extra"),
    [
        (
            CLAUDE,
            ModelSettings(thinking_budget=2048),
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
        (CLAUDE, ModelSettings(thinking=True), {"thinking": {"type": "adaptive"}}),
        (CLAUDE, ModelSettings(thinking=False), {"thinking": {"type": "disabled"}}),
        (GPT_OSS, ModelSettings(reasoning_effort="high"), {"reasoning_effort": "high"}),
        (
            NOVA,
            ModelSettings(reasoning_effort="low"),
            {"reasoningConfig": {"type": "enabled", "maxReasoningEffort": "low"}},
        ),
    ],
)
def test_reasoning_settings_go_in_the_model_familys_own_fields(
    model: str, settings: ModelSettings, extra: dict[str, Any]
) -> None:
    assert settings_fields(settings, [], model, 4096) == {"additionalModelRequestFields": extra}


@pytest.mark.parametrize(
    ("model", "settings", "says"),
    [
        (GPT_OSS, ModelSettings(thinking_budget=2048), "Claude's"),
        (NOVA, ModelSettings(thinking=True), "Claude's"),
        (CLAUDE, ModelSettings(reasoning_effort="high"), "thinking_budget"),
        (GPT_OSS, ModelSettings(reasoning_effort="minimal"), "low, medium, high"),
        ("amazon.nova-micro-v1:0", ModelSettings(reasoning_effort="high"), "is neither"),
        ("us.meta.llama3-3-70b-instruct-v1:0", ModelSettings(reasoning_effort="low"), "extra_body"),
        (CLAUDE, ModelSettings(seed=3), "seed"),
        (CLAUDE, ModelSettings(parallel_tool_calls=False), "parallel_tool_calls"),
        (CLAUDE, ModelSettings(cache_ttl="1h"), "cache_ttl"),
    ],
)
def test_settings_converse_cannot_take_are_refused(model: str, settings: ModelSettings, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        check_settings(settings, model)


def test_a_tool_choice_converse_has_no_field_for_is_refused() -> None:
    with pytest.raises(ConfigError, match="'none' has no Bedrock Converse field"):
        settings_fields(ModelSettings(tool_choice="none"), [TOOL], CLAUDE, 4096)
    with pytest.raises(ConfigError, match="does not offer"):
        settings_fields(ModelSettings(tool_choice="other"), [TOOL], CLAUDE, 4096)
    with pytest.raises(ConfigError, match="no tools"):
        settings_fields(ModelSettings(tool_choice="required"), [], CLAUDE, 4096)


def test_the_body_carries_the_cap_the_tools_and_the_thinking() -> None:
    body = body_for(
        [user_message("hi")],
        system="Be brief.",
        tools=[TOOL],
        max_output_tokens=5000,
        settings=ModelSettings(thinking_budget=1024, tool_choice="auto"),
    )
    assert body == {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "Be brief."}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "inputSchema": {"json": json.loads(TOOL.input_schema)},
                        "description": "The weather.",
                    }
                }
            ],
            "toolChoice": {"auto": {}},
        },
        "inferenceConfig": {"maxTokens": 5000},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }
    # thinking on without a cap sends the default one: the budget must be under it
    assert body_for([user_message("hi")], settings=ModelSettings(thinking_budget=1024))[
        "inferenceConfig"
    ] == {"maxTokens": converse.DEFAULT_MAX_TOKENS}
    assert "inferenceConfig" not in body_for([user_message("hi")])


def test_extra_body_goes_last() -> None:
    settings = ModelSettings(extra_body={"inferenceConfig": {"maxTokens": 7}})
    body = request_body(
        Request(messages=[user_message("hi")], max_output_tokens=100),
        GPT_OSS,
        settings=settings,
        extra_body={"performanceConfig": {"latency": "optimized"}},
    )
    assert body["inferenceConfig"] == {"maxTokens": 7}
    assert body["performanceConfig"] == {"latency": "optimized"}


# --- the history ------------------------------------------------------------


def test_tool_results_are_user_turns_and_an_error_has_status_error() -> None:
    history = tool_turn(ContentPart(ContentPartKind.TEXT, text="Let me look."))
    failed = ToolResult("tooluse_1", "get_weather", "no such city", is_error=True)
    history[2] = Message(Role.TOOL, [ContentPart(ContentPartKind.TOOL_RESULT, tool_result=failed)])
    body = body_for([*history, user_message("and now?")], tools=[TOOL])
    assert body["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"text": "Let me look."},
                {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "tooluse_1",
                        "content": [{"text": "no such city"}],
                        "status": "error",
                    }
                },
                {"text": "and now?"},
            ],
        },
    ]


def test_signed_reasoning_goes_back_first_and_unchanged() -> None:
    body = body_for(
        tool_turn(reasoning("I should call it.", "sig-1")),
        tools=[TOOL],
        settings=ModelSettings(thinking_budget=1024),
    )
    assert body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "I should call it.", "signature": "sig-1"}}
    }
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}


def test_unsigned_reasoning_goes_back_to_gpt_oss_but_not_to_claude() -> None:
    history = tool_turn(reasoning("thinking aloud"))
    assert body_for(history, GPT_OSS, tools=[TOOL])["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "thinking aloud"}}
    }
    assert "reasoningContent" not in body_for(history, CLAUDE, tools=[TOOL])["messages"][1]["content"][0]


def test_a_tool_turn_that_began_without_reasoning_is_continued_without_thinking(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="agentcore.providers.bedrock.request"):
        body = body_for(
            tool_turn(reasoning("foreign", "sig", origin="api.anthropic.com")),
            tools=[TOOL],
            settings=ModelSettings(thinking_budget=1024),
        )
    assert "additionalModelRequestFields" not in body
    assert "thinking left out" in caplog.text
    # the next turn (a user message last) thinks again
    answer = Message(Role.ASSISTANT, [ContentPart(ContentPartKind.TEXT, text="Sunny.")])
    later = body_for(
        [*tool_turn(), answer, user_message("thanks")],
        tools=[TOOL],
        settings=ModelSettings(thinking_budget=1024),
    )
    assert later["additionalModelRequestFields"]["thinking"]["type"] == "enabled"


def test_neighbouring_turns_merge_and_empty_assistant_turns_are_skipped() -> None:
    history = [
        user_message("a"),
        Message(Role.ASSISTANT, [ContentPart(ContentPartKind.TEXT, text="  ")]),
        user_message("b"),
    ]
    assert body_for(history)["messages"] == [{"role": "user", "content": [{"text": "a"}, {"text": "b"}]}]


def test_a_history_converse_would_refuse_is_refused_before_any_call() -> None:
    with pytest.raises(ConfigError, match="no messages"):
        body_for([])
    with pytest.raises(ConfigError, match="nothing Bedrock Converse accepts"):
        body_for([Message(Role.USER, [ContentPart(ContentPartKind.TEXT, text="")])])
    with pytest.raises(ConfigError, match="WebSearch"):
        body_for([user_message("hi")], server_tools=[WebSearch()])
    with pytest.raises(ConfigError, match="output schema"):
        body_for([user_message("hi")], output=OutputSchema("answer", '{"type":"object"}'))


# --- files ------------------------------------------------------------------


def test_images_and_documents_become_converse_blocks() -> None:
    png = File(data=b"\x89PNG", media_type="image/png")
    pdf = File(data=b"%PDF-1", media_type="application/pdf", filename="Q3 report (final).v2.pdf")
    assert file_json(png, "messages[0]") == {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
    assert file_json(pdf, "messages[0]") == {
        "document": {"format": "pdf", "name": "Q3 report (final) v2", "source": {"bytes": "JVBERi0x"}}
    }
    docx = File(
        data=b"PK", media_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    assert file_json(docx, "messages[0]", 2)["document"] == {
        "format": "docx",
        "name": "document-2",
        "source": {"bytes": "UEs="},
    }


def test_a_document_name_keeps_only_what_the_api_takes() -> None:
    assert document_name(File(data=b"x", media_type="text/plain", filename="a__b  c.txt"), 1) == "a b c"
    assert document_name(File(data=b"x", media_type="text/plain", filename="***.txt"), 3) == "document-3"


@pytest.mark.parametrize(
    ("file", "says"),
    [
        (File(data=b"x", media_type="audio/wav"), "does not accept"),
        (File(url="https://example.com/a.png", media_type="image/png"), "given by URL"),
        (File(data=b"x" * (converse.MAX_IMAGE_BYTES + 1), media_type="image/jpeg"), "at most"),
        (File(data=b"x" * (converse.MAX_DOCUMENT_BYTES + 1), media_type="application/pdf"), "at most"),
    ],
)
def test_a_file_converse_cannot_take_is_refused(file: File, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        file_json(file, "messages[0]")


def test_a_document_needs_text_in_its_turn_and_a_results_files_go_inside_it() -> None:
    pdf = File(data=b"%PDF-1", media_type="application/pdf", filename="a.pdf")
    with pytest.raises(ConfigError, match="document without text"):
        body_for([Message(Role.USER, [ContentPart(ContentPartKind.FILE, file=pdf)])])
    history = tool_turn()
    result = ToolResult(
        "tooluse_1", "get_weather", "", files=(File(data=b"\x89PNG", media_type="image/png"),)
    )
    history[2] = Message(Role.TOOL, [ContentPart(ContentPartKind.TOOL_RESULT, tool_result=result)])
    sent = body_for(history, tools=[TOOL])["messages"][2]["content"][0]["toolResult"]
    assert sent["content"] == [{"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}]


# --- cache points -----------------------------------------------------------


def test_cache_points_go_after_the_system_prompt_the_tools_a_part_and_the_last_message() -> None:
    history = [
        Message(Role.USER, [ContentPart(ContentPartKind.TEXT, text="long"), cache_point()]),
        Message(Role.ASSISTANT, [ContentPart(ContentPartKind.TEXT, text="ok")]),
        user_message("q"),
    ]
    settings = ModelSettings(cache=True, cache_system=True, cache_tools=True)
    body = body_for(history, system="sys", tools=[TOOL], settings=settings)
    assert body["system"] == [{"text": "sys"}, CACHE_POINT]
    assert body["toolConfig"]["tools"][-1] == CACHE_POINT
    assert body["messages"][0]["content"] == [{"text": "long"}, CACHE_POINT]
    assert body["messages"][-1]["content"] == [{"text": "q"}, CACHE_POINT]
    assert converse.cache_points(body) == 4
    # a cache point already ending the last message is not doubled
    last = Message(Role.USER, [ContentPart(ContentPartKind.TEXT, text="q"), cache_point()])
    assert body_for([last], settings=ModelSettings(cache=True))["messages"][0]["content"] == [
        {"text": "q"},
        CACHE_POINT,
    ]


def test_more_than_four_cache_points_is_refused() -> None:
    parts = [ContentPart(ContentPartKind.TEXT, text="x"), cache_point()]
    history = [Message(Role.USER, parts), Message(Role.ASSISTANT, parts), user_message("q")]
    with pytest.raises(ConfigError, match="5 cache points"):
        body_for(
            history,
            system="s",
            tools=[TOOL],
            settings=ModelSettings(cache=True, cache_system=True, cache_tools=True),
        )


def test_the_count_body_wraps_the_converse_fields() -> None:
    body = body_for([user_message("hi")], system="s", tools=[TOOL], max_output_tokens=9)
    assert count_body(body) == {
        "input": {
            "converse": {
                "messages": body["messages"],
                "system": body["system"],
                "toolConfig": body["toolConfig"],
            }
        }
    }


# --- the stream -------------------------------------------------------------


def feed(state: StreamState, *events: tuple[str, dict[str, Any]]) -> list[Any]:
    out = []
    for kind, data in events:
        out += state.feed(Event(event=kind, data={**data, "p": "abcdefgh"}))
    return out


TEXT_EVENTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("messageStart", {"role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hi"}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    ("messageStop", {"stopReason": "end_turn"}),
)


def test_the_step_is_complete_at_message_stop_and_done_at_metadata() -> None:
    state = StreamState(ORIGIN)
    seen = []
    metadata: tuple[str, dict[str, Any]] = ("metadata", {"usage": {"inputTokens": 3, "outputTokens": 1}})
    for event in [*TEXT_EVENTS, metadata]:
        feed(state, event)
        seen.append((state.complete, state.done))
    assert seen == [(False, False)] * 3 + [(True, False), (True, True)]
    assert state.finish()[-1].usage == Usage(3, 1)


def test_a_stream_cut_after_message_stop_ends_the_step_and_says_the_usage_is_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = StreamState(ORIGIN)
    feed(state, *TEXT_EVENTS)
    with caplog.at_level(logging.WARNING):
        [last] = state.finish()
    assert (last.finish_reason, last.usage) == (FinishReason.STOP, Usage())
    assert "ended before its usage" in caplog.text


def test_a_stream_cut_before_message_stop_is_transient() -> None:
    state = StreamState(ORIGIN)
    feed(state, *TEXT_EVENTS[:3])
    with pytest.raises(ModelError) as raised:
        state.finish()
    assert raised.value.error_class is ErrorClass.TRANSIENT


def test_tool_input_fragments_stream_as_deltas_when_asked() -> None:
    state = StreamState(ORIGIN, stream_tool_input=True)
    parts = feed(
        state,
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ""}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a"'}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": ": 1}"}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
    )
    assert [(p.kind, p.tool_call.input) for p in parts] == [
        (StreamPartKind.TOOL_CALL_DELTA, '{"a"'),
        (StreamPartKind.TOOL_CALL_DELTA, ": 1}"),
        (StreamPartKind.TOOL_CALL, '{"a": 1}'),
    ]


def test_a_tool_use_without_input_has_empty_arguments() -> None:
    state = StreamState(ORIGIN)
    parts = feed(
        state,
        (
            "contentBlockStart",
            {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
    )
    assert parts[0].tool_call == ToolCall("t1", "f", "{}")


def test_a_citation_delta_is_a_citation_part() -> None:
    citation = {
        "title": "Doc",
        "sourceContent": [{"text": "cited"}],
        "location": {"documentChar": {"start": 0}},
    }
    [part] = feed(
        StreamState(ORIGIN), ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"citation": citation}})
    )
    assert part.citation is not None
    assert (part.citation.title, part.citation.cited_text, json.loads(part.citation.data)) == (
        "Doc",
        "cited",
        citation,
    )


@pytest.mark.parametrize(
    ("reason", "calls", "finish"),
    [
        ("end_turn", 0, FinishReason.STOP),
        ("stop_sequence", 0, FinishReason.STOP),
        ("tool_use", 1, FinishReason.TOOL_CALLS),
        ("tool_use", 0, FinishReason.STOP),
        ("max_tokens", 0, FinishReason.LENGTH),
        ("model_context_window_exceeded", 0, FinishReason.LENGTH),
        ("guardrail_intervened", 0, FinishReason.CONTENT_FILTER),
        ("content_filtered", 0, FinishReason.CONTENT_FILTER),
    ],
)
def test_stop_reasons_map_to_finish_reasons(reason: str, calls: int, finish: FinishReason) -> None:
    assert map_finish_reason(reason, calls) is finish


@pytest.mark.parametrize(
    ("reason", "error_class"),
    [
        ("malformed_tool_use", ErrorClass.TRANSIENT),
        ("malformed_model_output", ErrorClass.TRANSIENT),
        ("new_one", ErrorClass.UPSTREAM),
    ],
)
def test_a_stop_reason_that_is_an_error_fails_the_step(reason: str, error_class: ErrorClass) -> None:
    with pytest.raises(ModelError) as raised:
        map_finish_reason(reason, 0)
    assert raised.value.error_class is error_class


def test_a_usage_count_of_the_wrong_type_is_upstream() -> None:
    with pytest.raises(ModelError) as raised:
        usage_from({"inputTokens": "12"})
    assert raised.value.error_class is ErrorClass.UPSTREAM
