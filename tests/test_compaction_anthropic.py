"""Anthropic's own compaction and context editing through ``AnthropicModel``.

* The settings mapping, table by table: ``compaction_trigger``, ``clear_tool_uses`` and
  ``clear_thinking`` as ``context_management.edits``, the beta features in the
  ``anthropic-beta`` header next to the caller's, the settings the API refuses together.
* The recorded streams of ``tests/fixtures/compaction/anthropic`` (``SOURCES.md`` there)
  replayed through the stream mapping and the model: the compaction block becomes one
  provider item holding the block byte for byte, its summary is not answer text, and the
  usage is summed over the iterations as the recording projects assert.
* The recorded requests sent after a compaction: the body built from the history (kept
  through ``Message.to_dict`` / ``from_dict``) holds the same ``messages`` as the request
  the recording project sent, as JSON values (its cassettes sort keys); a block of another
  origin is left out.
* A fake API on the in-memory transport that compacts as the compaction page documents
  (https://platform.claude.com/docs/en/build-with-claude/compaction) and answers the
  API's real errors: a run whose history outgrows its context window finishes because the
  compaction block goes back, and fails with the API's context-length error when it does not.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    LoopOptions,
    Message,
    ModelSettings,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
    cache_point,
    provider_item_part,
    reasoning_part,
    run,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.context import Context
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import (
    CLEAR_THINKING_EDIT,
    CLEAR_TOOL_USES_EDIT,
    COMPACTION_BETA,
    COMPACTION_EDIT,
    CONTEXT_EDITING_BETA,
    beta_features,
    context_management,
    request_body,
    with_betas,
)
from agentcore.providers.anthropic.stream import StreamState, edits_text
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport import Timeout
from agentcore.transport import sse as sse_framing
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from tests import compaction_helpers as helpers
from tests.canned import json_answer
from tests.compaction_helpers import (
    REPORT,
    WINDOW,
    answer_text,
    compact,
    items,
    read_report,
    refused_elsewhere,
)
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
    tool_start,
)

KEY = "sk-ant-api03-compaction-test-0000"
ORIGIN = "api.anthropic.com"
MODEL = "claude-sonnet-4-6"


def fixture(name: str) -> bytes:
    return helpers.fixture("anthropic", name)


def fixture_json(name: str) -> Any:
    return helpers.fixture_json("anthropic", name)


def chunk_events(name: str) -> list[dict[str, Any]]:
    """The events of a ``.chunks.jsonl`` case, one decoded JSON a line."""
    return [json.loads(line) for line in fixture(name).decode("utf-8").splitlines() if line.strip()]


def whole_message(response: dict[str, Any]) -> bytes:
    """A non-streamed response body, as the one ``message_start`` of a stream
    (the stream mapping reads a message that already holds its blocks)."""
    return sse({"type": "message_start", "message": response}, MESSAGE_STOP)


def state_parts(events: list[dict[str, Any]]) -> list[StreamPart]:
    state = StreamState(ORIGIN)
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(sse_framing.Event(event["type"], event))
        if state.done:
            break
    return parts + state.finish()


def model(transport: MemoryTransport, **settings: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key=KEY, transport=transport, settings=ModelSettings(**settings))


def model_parts(body: bytes, piece: int = 0, **settings: Any) -> tuple[list[StreamPart], SentRequest]:
    transport = MemoryTransport(Reply.of(body, piece=piece))
    parts = list(model(transport, **settings).stream(Request(messages=[user_message("hi")]), Context()))
    return parts, transport.sent[0]


def raw_summaries(body: bytes) -> list[str]:
    """The ``content`` of every ``compaction_delta`` in a recorded SSE body, read
    with the standard JSON reader from its ``data:`` lines (not by the adapter)."""
    found = []
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:"):
            event = json.loads(line[5:])
            if event.get("delta", {}).get("type") == "compaction_delta":
                found.append(event["delta"]["content"])
    return found


# --- the settings mapping --------------------------------------------------------------------

TRIGGER = {"type": COMPACTION_EDIT, "trigger": {"type": "input_tokens", "value": 50_000}}
MAPPING_CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("nothing set", {}, None),
    ("compaction", {"compaction_trigger": 50_000}, {"edits": [TRIGGER]}),
    ("clearing tool uses", {"clear_tool_uses": True}, {"edits": [{"type": CLEAR_TOOL_USES_EDIT}]}),
    ("False asks for nothing", {"clear_tool_uses": False, "clear_thinking": False}, None),
    (
        "clearing thinking, thinking on",
        {"clear_thinking": True, "thinking": True},
        {"edits": [{"type": CLEAR_THINKING_EDIT}]},
    ),
    (
        "all three: thinking first, compaction last",
        {"compaction_trigger": 50_000, "clear_tool_uses": True, "clear_thinking": True, "thinking": True},
        {"edits": [{"type": CLEAR_THINKING_EDIT}, {"type": CLEAR_TOOL_USES_EDIT}, TRIGGER]},
    ),
    (
        "with manual thinking",
        {"clear_thinking": True, "thinking_budget": 2048, "compaction_trigger": 150_000},
        {
            "edits": [
                {"type": CLEAR_THINKING_EDIT},
                {"type": COMPACTION_EDIT, "trigger": {"type": "input_tokens", "value": 150_000}},
            ]
        },
    ),
]


@pytest.mark.parametrize(("name", "settings", "expected"), MAPPING_CASES, ids=[c[0] for c in MAPPING_CASES])
def test_settings_become_context_management(name: str, settings: dict[str, Any], expected: Any) -> None:
    body = request_body(Request(messages=[user_message("hi")]), MODEL, settings=ModelSettings(**settings))
    assert body.get("context_management") == expected


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    (
        "clearing thinking with thinking unset",
        {"clear_thinking": True},
        "ModelSettings.clear_thinking needs thinking on: the Anthropic Messages API clears thinking blocks "
        "only while thinking is on",
    ),
    (
        "clearing thinking with thinking off",
        {"clear_thinking": True, "thinking": False},
        "ModelSettings.clear_thinking needs thinking on",
    ),
    (
        "a trigger under the documented minimum",
        {"compaction_trigger": 49_999},
        "ModelSettings.compaction_trigger must be at least 50,000 input tokens for the Anthropic "
        "Messages API, got 49,999",
    ),
]


@pytest.mark.parametrize(("name", "settings", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_what_the_api_refuses_is_a_config_error_before_any_request(
    name: str, settings: dict[str, Any], message: str
) -> None:
    transport = MemoryTransport()
    anthropic = AnthropicModel(MODEL, api_key=KEY, transport=transport)
    request = Request(messages=[user_message("hi")], settings=ModelSettings(**settings))
    with pytest.raises(ConfigError) as caught:
        list(anthropic.stream(request, Context()))
    assert str(caught.value).startswith(message)
    assert transport.sent == []


def test_context_management_refuses_clearing_thinking_without_it() -> None:
    with pytest.raises(ConfigError, match="needs thinking on"):
        context_management(ModelSettings(clear_thinking=True), thinking_on=False)
    assert context_management(ModelSettings(clear_thinking=True), thinking_on=True) == {
        "edits": [{"type": CLEAR_THINKING_EDIT}]
    }


BLOCK_IN_HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    {
        "role": "assistant",
        "content": [{"type": "compaction", "content": "S"}, {"type": "text", "text": "Hello"}],
    },
]
BETA_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("no edits", {"messages": []}, []),
    ("compaction", {"context_management": {"edits": [TRIGGER]}, "messages": []}, [COMPACTION_BETA]),
    (
        "context editing",
        {"context_management": {"edits": [{"type": CLEAR_TOOL_USES_EDIT}]}, "messages": []},
        [CONTEXT_EDITING_BETA],
    ),
    (
        "both",
        {"context_management": {"edits": [{"type": CLEAR_THINKING_EDIT}, TRIGGER]}, "messages": []},
        [COMPACTION_BETA, CONTEXT_EDITING_BETA],
    ),
    ("a compaction block sent back, compaction now off", {"messages": BLOCK_IN_HISTORY}, [COMPACTION_BETA]),
]


@pytest.mark.parametrize(("name", "body", "expected"), BETA_CASES, ids=[c[0] for c in BETA_CASES])
def test_beta_features_of_a_body(name: str, body: dict[str, Any], expected: list[str]) -> None:
    assert beta_features(body) == expected


HEADER_CASES: list[tuple[str, dict[str, str], list[str], dict[str, str]]] = [
    ("none asked, none set", {"x-api-key": "k"}, [], {"x-api-key": "k"}),
    ("added", {"x-api-key": "k"}, [COMPACTION_BETA], {"x-api-key": "k", "anthropic-beta": COMPACTION_BETA}),
    (
        "after the caller's, under the caller's spelling",
        {"Anthropic-Beta": "interleaved-thinking-2025-05-14"},
        [COMPACTION_BETA, CONTEXT_EDITING_BETA],
        {"Anthropic-Beta": f"interleaved-thinking-2025-05-14,{COMPACTION_BETA},{CONTEXT_EDITING_BETA}"},
    ),
    (
        "never twice",
        {"anthropic-beta": f" {COMPACTION_BETA} , files-api-2025-04-14"},
        [COMPACTION_BETA],
        {"anthropic-beta": f" {COMPACTION_BETA} , files-api-2025-04-14"},
    ),
    (
        "one named, one added",
        {"anthropic-beta": COMPACTION_BETA},
        [COMPACTION_BETA, CONTEXT_EDITING_BETA],
        {"anthropic-beta": f"{COMPACTION_BETA},{CONTEXT_EDITING_BETA}"},
    ),
]


@pytest.mark.parametrize(
    ("name", "headers", "features", "expected"), HEADER_CASES, ids=[c[0] for c in HEADER_CASES]
)
def test_with_betas(
    name: str, headers: dict[str, str], features: list[str], expected: dict[str, str]
) -> None:
    assert dict(with_betas(headers, features)) == expected


def test_the_model_sends_the_beta_header_the_body_needs_merged_with_the_callers() -> None:
    transport = MemoryTransport(
        Reply.of(sse(message_start(input_tokens=1), message_delta("end_turn", output_tokens=1), MESSAGE_STOP))
    )
    anthropic = AnthropicModel(
        MODEL,
        api_key=KEY,
        transport=transport,
        headers={"Anthropic-Beta": f"interleaved-thinking-2025-05-14,{COMPACTION_BETA}"},
        settings=ModelSettings(compaction_trigger=60_000, clear_tool_uses=True),
    )
    list(anthropic.stream(Request(messages=[user_message("hi")]), Context()))
    sent = transport.sent[0]
    assert sent.headers["Anthropic-Beta"] == (
        f"interleaved-thinking-2025-05-14,{COMPACTION_BETA},{CONTEXT_EDITING_BETA}"
    )
    assert [name for name in sent.headers if name.lower() == "anthropic-beta"] == ["Anthropic-Beta"]
    assert sent.json()["context_management"] == {
        "edits": [
            {"type": CLEAR_TOOL_USES_EDIT},
            {"type": COMPACTION_EDIT, "trigger": {"type": "input_tokens", "value": 60_000}},
        ]
    }


def test_clearing_thinking_goes_with_the_thinking_a_continued_turn_leaves_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tool-use turn begun without thinking is continued without it (the
    docs' rule for manual thinking); the API refuses the thinking-clearing edit
    then, so it is left out too, and the other edits stay."""
    call = ToolCall("toolu_1", "lookup", "{}")
    history = [
        user_message("look it up"),
        Message(Role.ASSISTANT, [text_part("Looking."), tool_call_part(call)]),
        Message(Role.TOOL, [tool_result_part(ToolResult("toolu_1", "lookup", "found"))]),
    ]
    settings = ModelSettings(
        thinking=True, thinking_budget=2048, clear_thinking=True, compaction_trigger=50_000
    )
    with caplog.at_level(logging.INFO, logger="agentcore.providers.anthropic"):
        body = request_body(Request(messages=history), MODEL, settings=settings)
    assert "thinking" not in body
    assert body["context_management"] == {"edits": [TRIGGER]}
    assert "agentcore: clear_thinking left out with the thinking" in caplog.messages
    alone = request_body(
        Request(messages=history), MODEL, settings=ModelSettings(thinking_budget=2048, clear_thinking=True)
    )
    assert "thinking" not in alone
    assert "context_management" not in alone


def test_a_compaction_block_first_does_not_hide_the_thinking_block_after_it() -> None:
    """With manual thinking, a continued tool-use turn must start with thinking;
    a compaction block before the thinking block is where the API starts
    reading, so the turn still counts as begun with thinking."""
    block = ProviderItem("compaction", '{"type":"compaction","content":"S"}', "anthropic", ORIGIN, "S")
    thought = Reasoning(text="t", signature="sig", format="anthropic", origin=ORIGIN)
    call = ToolCall("toolu_1", "lookup", "{}")
    history = [
        user_message("look it up"),
        Message(Role.ASSISTANT, [provider_item_part(block), reasoning_part(thought), tool_call_part(call)]),
        Message(Role.TOOL, [tool_result_part(ToolResult("toolu_1", "lookup", "found"))]),
    ]
    body = request_body(
        Request(messages=history), MODEL, origin=ORIGIN, settings=ModelSettings(thinking_budget=2048)
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert [b["type"] for b in body["messages"][1]["content"]] == ["compaction", "thinking", "tool_use"]


def test_a_token_count_sends_the_beta_features_its_body_needs() -> None:
    """The count endpoint takes ``context_management`` and reads the history's
    compaction blocks (the compaction page: it applies them, never compacts),
    with the same beta features as a step."""
    answer = Reply.of(b'{"input_tokens": 42}', headers={"content-type": "application/json"})
    transport = MemoryTransport(answer, answer)
    anthropic = AnthropicModel(
        MODEL, api_key=KEY, transport=transport, settings=ModelSettings(compaction_trigger=60_000)
    )
    assert anthropic.count_tokens(round_trip_history(ROUND_TRIP_ITEM)) == 42
    sent = transport.sent[0]
    assert sent.url.endswith("/v1/messages/count_tokens")
    assert sent.headers["anthropic-beta"] == COMPACTION_BETA
    assert sent.json()["context_management"]["edits"][0]["type"] == COMPACTION_EDIT
    assert sent.json()["messages"][1]["content"][0] == {"type": "compaction", "content": ROUND_TRIP_ITEM.text}
    plain = AnthropicModel(MODEL, api_key=KEY, transport=transport)
    assert plain.count_tokens([user_message("hi")]) == 42
    assert "anthropic-beta" not in transport.sent[1].headers


@pytest.mark.parametrize("field", ["compaction_trigger", "clear_tool_uses", "clear_thinking"])
def test_chat_completions_has_none_of_them(field: str) -> None:
    value: Any = 50_000 if field == "compaction_trigger" else True
    settings = ModelSettings(**{field: value})
    with pytest.raises(ConfigError, match=f"ModelSettings.{field} is not supported by"):
        OpenAIChatModel("gpt-4.1", api_key="sk-test", settings=settings)
    transport = MemoryTransport()
    chat = OpenAIChatModel("gpt-4.1", api_key="sk-test", transport=transport)
    request = Request(messages=[user_message("hi")], settings=settings)
    with pytest.raises(ConfigError, match=f"ModelSettings.{field} is not supported by"):
        list(chat.stream(request, Context()))
    assert transport.sent == []


# --- the recorded streams ----------------------------------------------------------------------


@pytest.mark.parametrize("piece", [0, 1, 7])
def test_recorded_compaction_stream_with_cache_reads(piece: int) -> None:
    """pydantic-ai's streamed compaction (``compaction_usage_iterations_cache``):
    the block comes first, then the text; pydantic-ai asserts the run's usage as
    input 55,377, cache read 55,096, output 91, summed over both iterations."""
    body = fixture("compaction_usage_iterations_cache.sse")
    parts, _ = model_parts(body, piece, compaction_trigger=50_000)
    [summary] = raw_summaries(body)
    [item] = items(parts)
    assert (item.type, item.format, item.origin, item.text) == ("compaction", "anthropic", ORIGIN, summary)
    assert item.data == compact({"type": "compaction", "content": summary})
    assert parts[0].kind is StreamPartKind.PROVIDER_ITEM
    assert answer_text(parts) == "Hello! 👋"
    assert summary not in answer_text(parts)
    assert parts[-1].usage == Usage(input=55_377, output=91, cache_read=55_096, cache_write=0)


def test_recorded_compaction_stream_of_vercel() -> None:
    """Vercel's streamed compaction (``vercel_compaction_block``): its test finds
    '## Summary of Conversation' and 'React vs Vue.js' in the compaction block,
    regular text after it, and usage totals of 60,385 + 612 input and
    522 + 2,819 output tokens."""
    events = chunk_events("vercel_compaction_block.chunks.jsonl")
    summaries = [
        e["delta"]["content"] for e in events if e.get("delta", {}).get("type") == "compaction_delta"
    ]
    for parts in (state_parts(events), model_parts(sse(*events))[0]):
        [item] = items(parts)
        assert item.text == "".join(summaries)
        assert "## Summary of Conversation" in item.text
        assert "React vs Vue.js" in item.text
        assert json.loads(item.data) == {"type": "compaction", "content": item.text}
        text = answer_text(parts)
        assert text.startswith("Based on the conversation history, you asked me to summarize")
        assert "## Summary of Conversation" not in text
        assert parts[-1].usage == Usage(input=60_385 + 612, output=522 + 2_819)


def test_recorded_context_editing_stream(caplog: pytest.LogCaptureFixture) -> None:
    """Vercel's ``clear_tool_uses`` recording: ``context_management.applied_edits``
    is empty (what its test asserts), nothing streams for it, usage 859 / 122."""
    events = chunk_events("vercel_context_management_clear_tool_uses.chunks.jsonl")
    state = StreamState(ORIGIN)
    parts: list[StreamPart] = []
    with caplog.at_level(logging.INFO, logger="agentcore.providers.anthropic"):
        for event in events:
            parts += state.feed(sse_framing.Event(event["type"], event))
        parts += state.finish()
    assert state.applied_edits == []
    assert caplog.messages == []
    assert "Here's a comparison of the weather in both cities" in answer_text(parts)
    assert items(parts) == []
    assert parts[-1].usage == Usage(input=859, output=122)


def test_recorded_whole_message_with_a_compaction_block() -> None:
    """A non-streamed response (``compaction_end_to_end.i0``): the block's
    summary is its ``content``; usage adds the compaction iteration."""
    response = fixture_json("compaction_end_to_end.i0.response.json")
    parts, _ = model_parts(whole_message(response))
    [item] = items(parts)
    block = response["content"][0]
    assert item.data == compact(block)
    assert item.text == block["content"]
    assert answer_text(parts) == "Hello! 👋"
    assert parts[-1].usage == Usage(input=55_196 + 220, output=125 + 8)


APPLIED = [
    {"type": CLEAR_TOOL_USES_EDIT, "cleared_tool_uses": 8, "cleared_input_tokens": 50_000},
    {"type": CLEAR_THINKING_EDIT, "cleared_thinking_turns": 3, "cleared_input_tokens": 15_000},
]


def test_applied_edits_are_kept_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """The edits the API applied (the shape of the context editing page's
    response example) are on the state and in one INFO line."""
    delta = {
        **message_delta("end_turn", input_tokens=10, output_tokens=2),
        "context_management": {"applied_edits": APPLIED},
    }
    events = [message_start(input_tokens=10), text_start(0, "ok"), block_stop(0), delta, MESSAGE_STOP]
    state = StreamState(ORIGIN)
    with caplog.at_level(logging.INFO, logger="agentcore.providers.anthropic"):
        for event in events:
            state.feed(sse_framing.Event(event["type"], event))
        state.finish()
    assert state.applied_edits == APPLIED
    assert caplog.messages == [
        "agentcore: Anthropic context editing applied to the prompt: "
        "clear_tool_uses_20250919 (cleared_tool_uses 8, cleared_input_tokens 50000); "
        "clear_thinking_20251015 (cleared_thinking_turns 3, cleared_input_tokens 15000)"
    ]
    assert edits_text([{"type": "x"}]) == "x"


@pytest.mark.parametrize(
    ("context_management", "field"),
    [
        ([], "context_management (in message_delta) is a list, not an object"),
        (
            {"applied_edits": {}},
            "context_management.applied_edits (in message_delta) is an object, not a list",
        ),
        (
            {"applied_edits": ["x"]},
            "context_management.applied_edits[0] (in message_delta) is the string 'x'",
        ),
    ],
)
def test_applied_edits_of_the_wrong_shape_are_upstream_errors(context_management: Any, field: str) -> None:
    delta = {**message_delta("end_turn"), "context_management": context_management}
    state = StreamState(ORIGIN)
    state.feed(sse_framing.Event("message_start", message_start()))
    with pytest.raises(ModelError) as caught:
        state.feed(sse_framing.Event("message_delta", delta))
    assert caught.value.error_class is ErrorClass.UPSTREAM
    assert field in str(caught.value)


def test_a_compaction_block_that_never_stopped_is_kept_one_without_summary_is_not() -> None:
    start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "compaction", "content": None},
    }
    summary = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "compaction_delta", "content": "S."},
    }
    end = [message_delta("end_turn"), MESSAGE_STOP]
    [item] = items(state_parts([message_start(), start, summary, *end]))
    assert item.data == '{"type":"compaction","content":"S."}'
    assert items(state_parts([message_start(), start, block_stop(0), *end])) == []


# --- the recorded requests after a compaction ------------------------------------------------


def test_recorded_first_request() -> None:
    """``compaction_usage_iterations_cache``: pydantic-ai's request with automatic
    caching (5 min said) and a 50,000-token trigger."""
    recorded = fixture_json("compaction_usage_iterations_cache.request.json")
    prompt = recorded["messages"][0]["content"][0]["text"]
    settings = ModelSettings(compaction_trigger=50_000, cache=True, cache_ttl="5m")
    request = Request(system=recorded["system"][0]["text"], messages=[user_message(prompt)])
    body = request_body(request, MODEL, settings=settings)
    for key in ("messages", "context_management", "cache_control", "model", "max_tokens", "stream"):
        assert body[key] == recorded[key], key


def test_recorded_round_trip_through_the_loop_and_json() -> None:
    """``compaction_end_to_end``: the answer to the first request (``.i0``) held a
    compaction block and text; saved as JSON and continued in a new run, the
    second request holds the same ``messages`` as pydantic-ai's (``.i1``): the
    225 KB prompt, then the assistant turn [compaction, text] with the block
    unchanged, then the new question."""
    first_request = fixture_json("compaction_end_to_end.i0.request.json")
    recorded = fixture_json("compaction_end_to_end.i1.request.json")
    transport = MemoryTransport(
        Reply.of(whole_message(fixture_json("compaction_end_to_end.i0.response.json"))),
        Reply.of(whole_message(fixture_json("compaction_end_to_end.i1.response.json"))),
    )
    anthropic = model(transport, compaction_trigger=50_000)
    system = first_request["system"]
    prompt = first_request["messages"][0]["content"][0]["text"]
    first = run(LoopOptions(model=anthropic, system=system, messages=[user_message(prompt)])).result()
    saved = json.dumps([m.to_dict() for m in first.messages])
    history = [Message.from_dict(m) for m in json.loads(saved)]
    second = run(
        LoopOptions(
            model=anthropic, system=system, messages=[*history, user_message("What did I ask you to do?")]
        )
    ).result()
    sent = transport.sent[1].json()
    assert sent["messages"] == recorded["messages"]
    assert sent["context_management"] == recorded["context_management"]
    assert sent["system"] == recorded["system"]
    assert transport.sent[0].json()["messages"] == first_request["messages"]
    for request in transport.sent:
        assert request.headers["anthropic-beta"] == COMPACTION_BETA
    assert second.text == fixture_json("compaction_end_to_end.i1.response.json")["content"][0]["text"]


ROUND_TRIP_ITEM = ProviderItem(
    "compaction",
    '{"type":"compaction","content":"Summary: user said hello."}',
    "anthropic",
    ORIGIN,
    "Summary: user said hello.",
)


def round_trip_history(item: ProviderItem) -> list[Message]:
    """pydantic-ai's ``test_anthropic_compaction_round_trip`` history: its
    question is in the history and asked again."""
    return [
        user_message("Hello!"),
        Message(Role.ASSISTANT, [provider_item_part(item), text_part("Hello! How can I help?")]),
        user_message("What did I say earlier?"),
        user_message("What did I say earlier?"),
    ]


def test_recorded_block_sent_back() -> None:
    """``roundtrip_compaction_block_sent_back``: the block first in its assistant
    turn, as pydantic-ai sent it; the same after a trip through JSON."""
    recorded = fixture_json("roundtrip_compaction_block_sent_back.request.json")
    history = round_trip_history(ROUND_TRIP_ITEM)
    loaded = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in history]
    for messages in (history, loaded):
        body = request_body(Request(system="Be brief.", messages=messages), MODEL, origin=ORIGIN)
        assert body["messages"] == recorded["messages"]


@pytest.mark.parametrize(
    ("fmt", "origin"),
    [("anthropic", "gateway.example.com"), ("openai-responses", ORIGIN), ("anthropic", "")],
)
def test_a_block_of_another_origin_or_format_is_left_out(
    fmt: str, origin: str, caplog: pytest.LogCaptureFixture
) -> None:
    item = ProviderItem("compaction", ROUND_TRIP_ITEM.data, fmt, origin, ROUND_TRIP_ITEM.text)
    with caplog.at_level(logging.INFO, logger="agentcore.providers"):
        body = request_body(Request(messages=round_trip_history(item)), MODEL, origin=ORIGIN)
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Hello! How can I help?"}],
    }
    assert beta_features(body) == []
    assert caplog.messages == [
        "agentcore: another service's provider items left out: "
        f"messages[1]: compaction from {fmt or '?'} at {origin or '?'}"
    ]


def test_a_cache_point_after_the_block_marks_it() -> None:
    """The compaction page suggests a cache breakpoint on the compaction block."""
    history = [
        user_message("Hello!"),
        Message(Role.ASSISTANT, [provider_item_part(ROUND_TRIP_ITEM), cache_point(), text_part("Hi!")]),
        user_message("And?"),
    ]
    body = request_body(Request(messages=history), MODEL, origin=ORIGIN, settings=ModelSettings(cache=False))
    assert body["messages"][1]["content"][0] == {
        "type": "compaction",
        "content": "Summary: user said hello.",
        "cache_control": {"type": "ephemeral"},
    }
    assert history[1].provider_items[0].data == ROUND_TRIP_ITEM.data  # the kept block is not changed


# --- a fake API that compacts as documented ----------------------------------------------------

CHARS_PER_TOKEN = 4
"""The fake API's token count: every text, summary, tool input and tool result
counts one token per 4 characters (rounded up), nothing else counts."""


def tokens_of(blocks: list[dict[str, Any]]) -> int:
    total = 0
    for block in blocks:
        for key in ("text", "content"):
            value = block.get(key)
            if isinstance(value, str):
                total += math.ceil(len(value) / CHARS_PER_TOKEN)
        if block["type"] == "tool_use":
            total += math.ceil(len(json.dumps(block["input"])) / CHARS_PER_TOKEN)
    return total


def invalid(message: str) -> Reply:
    """The API's 400 body (https://docs.anthropic.com/en/api/errors)."""
    return json_answer(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})


class CompactingAPI:
    """Answers Messages API requests on the in-memory transport as the compaction
    and context editing pages document the API, with the API's own errors:

    * ``context_management`` needs its beta features in ``anthropic-beta``
      (``compact-2026-01-12`` for the compaction edit, ``context-management-2025-06-27``
      for the others); without them: "context_management: Extra inputs are not permitted";
    * ``clear_thinking_20251015`` needs thinking on: "`clear_thinking_20251015`
      strategy requires `thinking` to be enabled";
    * the prompt is read from the latest compaction block on (what comes before it
      is passed over); a prompt over :data:`WINDOW` tokens is refused with
      "prompt is too long: N tokens > 80000 maximum";
    * a prompt over the compaction trigger is compacted first: the answer starts with
      a compaction block (``content`` null, one ``compaction_delta`` holding the whole
      summary), and the usage reports both iterations.

    The model behind it calls ``read_report`` once, then answers.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.summaries = 0
        self.refusals: list[str] = []
        self.read_from: list[int] = []
        """For each answered request, the index of the turn its prompt was read from."""

    def __call__(self, sent: SentRequest) -> Reply:
        with self.lock:
            return self.answer(sent)

    def answer(self, sent: SentRequest) -> Reply:
        body = sent.json()
        betas = {b.strip() for b in sent.headers.get("anthropic-beta", "").split(",")}
        edits = body.get("context_management", {}).get("edits", [])
        kinds = {edit["type"] for edit in edits}
        if edits and (
            (COMPACTION_EDIT in kinds and COMPACTION_BETA not in betas)
            or (kinds - {COMPACTION_EDIT} and CONTEXT_EDITING_BETA not in betas)
        ):
            return self.refuse("context_management: Extra inputs are not permitted")
        if CLEAR_THINKING_EDIT in kinds and body.get("thinking", {}).get("type") not in (
            "enabled",
            "adaptive",
        ):
            return self.refuse("`clear_thinking_20251015` strategy requires `thinking` to be enabled")
        turns = body["messages"]
        start = max(
            (i for i, turn in enumerate(turns) for block in turn["content"] if block["type"] == "compaction"),
            default=0,
        )
        if start and turns[start]["role"] != "assistant":
            return self.refuse(f"messages.{start}: a compaction block belongs in an assistant turn")
        prompt = sum(tokens_of(turn["content"]) for turn in turns[start:])
        if prompt > WINDOW:
            return self.refuse(f"prompt is too long: {prompt} tokens > {WINDOW} maximum")
        self.read_from.append(start)
        trigger = next((e["trigger"]["value"] for e in edits if e["type"] == COMPACTION_EDIT), None)
        events: list[dict[str, Any]] = [message_start(input_tokens=prompt)]
        iterations: list[dict[str, Any]] = []
        index = 0
        if trigger is not None and prompt > trigger:
            self.summaries += 1
            summary = f"Summary {self.summaries}: the user shared a long report and asked for its numbers."
            events += [
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "compaction", "content": None},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "compaction_delta", "content": summary},
                },
                block_stop(0),
            ]
            iterations.append({"type": "compaction", "input_tokens": prompt, "output_tokens": 20})
            prompt = tokens_of([{"type": "text", "content": summary}])
            index = 1
        called = any(b["type"] == "tool_result" for turn in turns for b in turn["content"])
        if called:
            events += [
                text_start(index, ""),
                text_delta(index, "The numbers are 1, 2 and 3."),
                block_stop(index),
            ]
        else:
            events += [
                text_start(index, ""),
                text_delta(index, "Let me read the report."),
                block_stop(index),
                tool_start(index + 1, f"toolu_{len(self.read_from)}", "read_report"),
                json_delta(index + 1, "{}"),
                block_stop(index + 1),
            ]
        iterations.append({"type": "message", "input_tokens": prompt, "output_tokens": 10})
        usage = {"input_tokens": prompt, "output_tokens": 10, "iterations": iterations}
        delta = {**message_delta("end_turn" if called else "tool_use", **{}), "usage": usage}
        delta["context_management"] = {"applied_edits": []}
        return Reply.of(sse(*events, delta, MESSAGE_STOP))

    def refuse(self, message: str) -> Reply:
        self.refusals.append(message)
        return invalid(message)


def test_a_run_over_the_window_finishes_because_the_block_goes_back() -> None:
    """The first request is over the trigger: the API compacts and asks for a
    tool; the second request holds the first prompt, the compaction block and a
    long tool result: 101,000 tokens counted whole, over the 80,000 window,
    but the API reads it from the block on."""
    api = CompactingAPI()
    transport = MemoryTransport(respond=api)
    anthropic = model(transport, compaction_trigger=50_000)
    reader = run(LoopOptions(model=anthropic, messages=[user_message(REPORT)], tools=[read_report]))
    kinds = [part.kind for part in reader]
    result = reader.result()
    assert api.refusals == []
    assert result.text == "The numbers are 1, 2 and 3."
    assert kinds[0] is StreamPartKind.PROVIDER_ITEM
    [item] = result.messages[1].provider_items
    assert item.text == "Summary 1: the user shared a long report and asked for its numbers."
    second = transport.sent[1].json()
    assert second["messages"][1]["content"][0] == {"type": "compaction", "content": item.text}
    assert [b["type"] for b in second["messages"][1]["content"]] == ["compaction", "text", "tool_use"]
    assert api.read_from == [0, 1]
    assert all(r.headers["anthropic-beta"] == COMPACTION_BETA for r in transport.sent)
    whole = sum(tokens_of(turn["content"]) for turn in second["messages"])
    assert whole > WINDOW
    # usage: the compaction iteration is counted on top of the first step's message iteration
    assert result.steps[0].usage.input == math.ceil(len(REPORT) / 4) + tokens_of(
        [{"type": "text", "content": item.text}]
    )


def test_the_same_run_fails_with_the_apis_error_when_the_block_does_not_go_back() -> None:
    """The history the API compacted, continued through another Anthropic
    endpoint (a gateway): the block cannot go there, so the whole history is
    read, and the API's context-length error ends the run."""
    api = CompactingAPI()
    gateway = AnthropicModel(
        MODEL,
        api_key=KEY,
        base_url="https://gateway.example.com",
        transport=MemoryTransport(respond=api),
        settings=ModelSettings(compaction_trigger=50_000),
    )
    refused_elsewhere(model(MemoryTransport(respond=api), compaction_trigger=50_000), gateway)
    assert api.refusals[-1].startswith("prompt is too long:")


def test_the_fake_api_refuses_what_the_real_one_does() -> None:
    """Its rules hold: edits without their beta feature, clearing thinking without thinking."""
    api = CompactingAPI()
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]

    def send(headers: dict[str, str], **fields: Any) -> Reply:
        body = json.dumps({"model": MODEL, "max_tokens": 10, "messages": messages, **fields}).encode()
        return api(SentRequest("POST", "https://api.anthropic.com/v1/messages", headers, body, Timeout()))

    compaction = {"context_management": {"edits": [TRIGGER]}}
    clearing = {"context_management": {"edits": [{"type": CLEAR_THINKING_EDIT}]}}
    assert send({}, **compaction).status == 400
    assert send({"anthropic-beta": CONTEXT_EDITING_BETA}, **compaction).status == 400
    assert send({"anthropic-beta": COMPACTION_BETA}, **compaction).status == 200
    assert send({"anthropic-beta": COMPACTION_BETA}, **clearing).status == 400
    assert send({"anthropic-beta": CONTEXT_EDITING_BETA}, **clearing).status == 400
    assert (
        send({"anthropic-beta": CONTEXT_EDITING_BETA}, thinking={"type": "adaptive"}, **clearing).status
        == 200
    )
    assert api.refusals == [
        "context_management: Extra inputs are not permitted",
        "context_management: Extra inputs are not permitted",
        "context_management: Extra inputs are not permitted",
        "`clear_thinking_20251015` strategy requires `thinking` to be enabled",
    ]
