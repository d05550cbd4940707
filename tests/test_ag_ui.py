"""AG-UI's events and RunAgentInput (agentcore.integrations.ag_ui), checked by AG-UI's own models.

Every event a real run writes is validated with the pydantic models of the
PyPI package ``ag-ui-protocol`` 1.0.0 (a test extra), which are generated from
the protocol's published JSON schema; the requests are built with the same
models and dumped as a client sends them (camelCase).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from ag_ui.core import (
    AssistantMessage,
    DataSource,
    DocumentPart,
    Event,
    FunctionCall,
    ImagePart,
    ReasoningMessage,
    RunAgentInput,
    TextPart,
    ToolMessage,
    UrlSource,
    UserMessage,
)
from ag_ui.core import ToolCall as AGUIToolCall
from pydantic import BaseModel, TypeAdapter

from agentcore import (
    ChatRequestError,
    Compaction,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ManualClock,
    ModelError,
    Reasoning,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    run,
    user_message,
)
from agentcore.files import File
from agentcore.integrations.ag_ui import AGUIEncoder, messages_from_run_input, token_usage
from agentcore.integrations.demo_tools import swatch_png
from agentcore.integrations.web import sse_stream
from agentcore.testing import ScriptedModel
from tests.test_ai_sdk import events_of, team, tool_run
from tests.test_web import Endless

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)


def validated(body: bytes) -> list[dict[str, Any]]:
    """The stream's events, each checked against AG-UI's models: it validates,
    and it has no key the protocol does not define (the models allow extras)."""
    events: list[dict[str, Any]] = events_of(body)
    for event in events:
        model = EVENTS.validate_python(event)
        assert no_extras(model), event
    return events


def no_extras(model: Any) -> bool:
    if isinstance(model, BaseModel):
        return not model.model_extra and all(
            no_extras(getattr(model, name)) for name in type(model).model_fields
        )
    if isinstance(model, list):
        return all(no_extras(item) for item in model)
    return True


def stream_events(options: LoopOptions, ctx: Context | None = None) -> list[dict[str, Any]]:
    reader = run(options, ctx or Context(timeout=60))
    with sse_stream(reader, heartbeat=None, encode=AGUIEncoder(thread_id="t1", run_id="r1")) as stream:
        return validated(b"".join(stream))


def test_a_run_with_tools_is_a_valid_ag_ui_event_sequence() -> None:
    options = tool_run()
    events = stream_events(options)
    assert [e["type"] for e in events] == [
        "RUN_STARTED",
        "STEP_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TOOL_CALL_RESULT",
        "STEP_FINISHED",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "CUSTOM",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
    assert events[1] == {"type": "STEP_STARTED", "stepName": "step-1"}
    assert events[8] == {"type": "TEXT_MESSAGE_START", "messageId": "r1-text-2", "role": "assistant"}
    assert events[11] == {
        "type": "TOOL_CALL_START",
        "toolCallId": "c1",
        "toolCallName": "calculator",
        "parentMessageId": "r1-text-2",
    }
    assert "".join(e["delta"] for e in events[12:14]) == '{"expression": "6 * 7"}'
    assert events[16] == {"type": "TOOL_CALL_ARGS", "toolCallId": "c2", "delta": '{"color": "red"}'}
    assert events[18] == {
        "type": "TOOL_CALL_RESULT",
        "messageId": "r1-result-c1",
        "toolCallId": "c1",
        "content": "42",
        "role": "tool",
    }
    png = base64.b64encode(swatch_png((220, 40, 40))).decode()
    assert events[19]["content"] == [
        {"type": "text", "text": "a 16x16 red swatch"},
        {"type": "image", "source": {"type": "data", "value": png, "mimeType": "image/png"}},
    ]
    assert events[24] == {
        "type": "CUSTOM",
        "name": "agentcore.citation",
        "value": {"url": "https://example.com/math", "title": "Math"},
    }
    assert events[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "t1",
        "runId": "r1",
        "outcome": {"type": "success"},
        "usage": [
            {
                "inputTokens": 120,
                "outputTokens": 16,
                "totalTokens": 136,
                "cachedInputTokens": 30,
                "cacheWriteInputTokens": 0,
            }
        ],
        "result": {"finish_reason": "stop"},
    }


def test_every_started_block_ends_before_the_next_opens_and_the_run_ends_last() -> None:
    options = tool_run()
    open_blocks: list[str] = []
    for event in stream_events(options):
        kind = event["type"]
        for family in ("TEXT_MESSAGE", "REASONING_MESSAGE", "STEP"):
            if kind in (f"{family}_START", f"{family}_STARTED"):
                assert family not in open_blocks
                open_blocks.append(family)
            elif kind in (f"{family}_END", f"{family}_FINISHED"):
                assert open_blocks[-1] == family
                open_blocks.pop()
        if kind == "TEXT_MESSAGE_CONTENT":
            assert open_blocks[-1] == "TEXT_MESSAGE"
    assert open_blocks == []


def test_a_model_error_is_run_error_with_its_class_as_the_code() -> None:
    model = ScriptedModel(
        [[StreamPart.text_delta("Hal"), ModelError(ErrorClass.RATE_LIMITED, message="slow down", status=429)]]
    )
    events = stream_events(LoopOptions(model=model, messages=[user_message("Hi")], max_retries=0))
    assert [e["type"] for e in events][-3:] == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_ERROR"]
    assert events[-1]["code"] == "rate_limited"
    assert "slow down" in events[-1]["message"]


def test_a_cancelled_run_finishes_with_the_cancelled_outcome() -> None:
    step = Endless(interval=0.01)
    ctx = Context()
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("Count.")]), ctx)
    encoder = AGUIEncoder(thread_id="t1", run_id="r1")
    chunks = []
    for part in reader:
        chunks.append(encoder(part))
        if part.text == "tick 1 ":
            ctx.cancel()
    events = validated(b"".join(chunks))
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["outcome"] == {"type": "cancelled"}


def test_compaction_is_a_custom_event_and_an_error_result_is_marked() -> None:
    compaction = Compaction(policy="sliding-window", removed=(0, 1), messages_before=4, messages_after=2)
    parts = [
        StreamPart.tool_call_event(ToolCall("c1", "calculator", "{")),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
        StreamPart.tool_result_event(ToolResult("c1", "calculator", "malformed", is_error=True)),
        StreamPart.compaction_event(compaction),
        StreamPart.reasoning_event(Reasoning(text="Thought whole.")),
        StreamPart.step_finish(FinishReason.STOP),
        StreamPart.finish(FinishReason.STOP, Usage(input=5, output=1, cache_write=4)),
    ]
    encoder = AGUIEncoder(thread_id="t1", run_id="r1")
    events = validated(b"".join(encoder(part) for part in parts))
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert result["metadata"] == {"agentcore": {"is_error": True}}
    assert {"type": "CUSTOM", "name": "agentcore.compaction", "value": compaction.to_dict()} in events
    assert [e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT"] == ["Thought whole."]
    assert events[-1]["usage"] == [token_usage(Usage(input=5, output=1, cache_write=4))]
    assert token_usage(Usage(input=5, output=1, cache_write=4))["inputTokens"] == 9


# The request side: RunAgentInput's messages as agentcore messages.


def run_input(*messages: Any) -> dict[str, Any]:
    """A RunAgentInput as a client sends it, built and dumped by AG-UI's models."""
    body = RunAgentInput(
        thread_id="t1",
        run_id="r2",
        state=None,
        messages=list(messages),
        tools=[],
        context=[],
        forwarded_props=None,
    )
    dumped: dict[str, Any] = json.loads(body.model_dump_json(by_alias=True, exclude_none=True))
    return dumped


def test_a_tool_message_with_parts_gives_its_text_and_files_to_the_result() -> None:
    png = swatch_png((0, 0, 0))
    body = run_input(
        UserMessage(id="u1", content="Paint"),
        AssistantMessage(
            id="a1", tool_calls=[AGUIToolCall(id="c1", function=FunctionCall(name="paint", arguments=""))]
        ),
        ToolMessage(
            id="t1",
            tool_call_id="c1",
            content=[
                TextPart(text="a black "),
                TextPart(text="swatch"),
                DocumentPart(source=DataSource(value=base64.b64encode(png).decode(), mime_type="image/png")),
            ],
        ),
    )
    messages = messages_from_run_input(body)
    assert messages[1].tool_calls == [ToolCall("c1", "paint", "{}")]
    assert messages[2].tool_results == [
        ToolResult("c1", "paint", "a black swatch", files=[File(media_type="image/png", data=png)])
    ]


def test_a_conversation_with_files_and_tool_calls_becomes_agentcore_messages() -> None:
    png = swatch_png((0, 0, 0))
    body = run_input(
        UserMessage(
            id="u1",
            content=[
                TextPart(text="What is this?"),
                ImagePart(source=DataSource(value=base64.b64encode(png).decode(), mime_type="image/png")),
                ImagePart(source=UrlSource(value="https://example.com/a.png", mime_type="image/png")),
            ],
        ),
        ReasoningMessage(id="r1", content="hmm"),
        AssistantMessage(
            id="a1",
            content="Checking.",
            tool_calls=[
                AGUIToolCall(
                    id="c1", function=FunctionCall(name="calculator", arguments='{"expression": "1+1"}')
                ),
                AGUIToolCall(id="c2", function=FunctionCall(name="search", arguments="{}")),
            ],
        ),
        ToolMessage(id="t1", tool_call_id="c1", content="2"),
        ToolMessage(id="t2", tool_call_id="c2", content="", error="search is down"),
        AssistantMessage(id="a2", content="It is 2."),
        UserMessage(id="u2", content="Thanks"),
    )
    messages = messages_from_run_input(body)
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER]
    assert messages[0].text == "What is this?"
    assert messages[0].files == [
        File(media_type="image/png", data=png),
        File(media_type="image/png", url="https://example.com/a.png"),
    ]
    assert messages[1].text == "Checking."
    assert messages[1].tool_calls == [
        ToolCall("c1", "calculator", '{"expression": "1+1"}'),
        ToolCall("c2", "search", "{}"),
    ]
    assert messages[2].tool_results == [
        ToolResult("c1", "calculator", "2"),
        ToolResult("c2", "search", "search is down", is_error=True),
    ]
    assert messages[3].text == "It is 2."
    assert messages[4].text == "Thanks"


@pytest.mark.parametrize(
    ("body", "path", "fragment"),
    [
        ([], "", "must be an object"),
        ({"threadId": "t"}, "", "'messages' is missing"),
        (
            {"messages": [{"id": "s", "role": "system", "content": "obey"}]},
            "messages[0].role",
            "the server's to give",
        ),
        (
            {"messages": [{"id": "d", "role": "developer", "content": "x"}]},
            "messages[0].role",
            "developer message",
        ),
        ({"messages": [{"id": "x", "role": "robot"}]}, "messages[0].role", "unknown role"),
        ({"messages": [{"id": "u", "role": "user"}]}, "messages[0]", "'content' is missing"),
        (
            {"messages": [{"id": "u", "role": "user", "content": 3}]},
            "messages[0].content",
            "must be str or list",
        ),
        (
            {"messages": [{"id": "u", "role": "user", "content": []}]},
            "messages[0].content",
            "needs a text or a media part",
        ),
        (
            {"messages": [{"id": "u", "role": "user", "content": [{"type": "sticker"}]}]},
            "messages[0].content[0].type",
            "unknown content part type",
        ),
        (
            {
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "file", "value": "f"}}],
                    }
                ]
            },
            "messages[0].content[0].source.type",
            "must be 'data' or 'url'",
        ),
        (
            {
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "data", "value": "!!", "mimeType": "image/png"},
                            }
                        ],
                    }
                ]
            },
            "messages[0].content[0].source.value",
            "does not decode",
        ),
        (
            {
                "messages": [
                    {
                        "id": "u",
                        "role": "user",
                        "content": [{"type": "image", "source": {"type": "url", "value": "https://x/a"}}],
                    }
                ]
            },
            "messages[0].content[0].source",
            "'mimeType' is needed",
        ),
        (
            {"messages": [{"id": "t", "role": "tool", "toolCallId": "c9", "content": "x"}]},
            "messages[0].toolCallId",
            "no assistant message",
        ),
        (
            {
                "messages": [
                    {"id": "a", "role": "assistant", "toolCalls": [{"id": "c", "function": {"name": "f"}}]}
                ]
            },
            "messages[0].toolCalls[0].function",
            "'arguments' is missing",
        ),
    ],
)
def test_malformed_run_input_is_a_chat_request_error_naming_the_place(
    body: Any, path: str, fragment: str
) -> None:
    with pytest.raises(ChatRequestError) as caught:
        messages_from_run_input(body)
    assert caught.value.path == path
    assert fragment in str(caught.value)


def test_a_sub_run_and_a_handoff_are_custom_events() -> None:
    events = stream_events(team().options("Why tides?"))
    custom = [(event["name"], event["value"]) for event in events if event["type"] == "CUSTOM"]
    assert [(name, value.get("path"), value.get("part", {}).get("kind")) for name, value in custom] == [
        ("agentcore.nested", ["c1"], "text-delta"),
        ("agentcore.nested", ["c1"], "step-finish"),
        ("agentcore.nested", ["c1"], "finish"),
        ("agentcore.handoff", None, None),
    ]
    assert custom[0][1]["part"]["text"] == "Tides follow the moon."
    assert custom[-1][1] == {"agent": "writer"}
    texts = [event["delta"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["Moon."]  # the sub-run's text is not the run's own message
    assert events[-1]["type"] == "RUN_FINISHED"


def test_a_call_a_stop_left_without_its_result_is_left_out_and_the_next_turn_runs() -> None:
    # What AG-UI's client keeps after abortRun() while a tool ran: the call, no result.
    slow = AGUIToolCall(id="call_1", function=FunctionCall(name="slow", arguments="{}"))
    body = run_input(
        UserMessage(id="u1", content="Look it up."),
        AssistantMessage(id="a1", content="Looking.", tool_calls=[slow]),
        AssistantMessage(id="a2", tool_calls=[slow.model_copy(update={"id": "call_2"})]),
        UserMessage(id="u2", content="Never mind."),
    )
    messages = messages_from_run_input(body)
    assert [(m.role, m.text, m.tool_calls) for m in messages] == [
        (Role.USER, "Look it up.", []),
        (Role.ASSISTANT, "Looking.", []),
        (Role.USER, "Never mind.", []),
    ]
    step = [StreamPart.text_delta("Fine."), StreamPart.step_finish(FinishReason.STOP, Usage(9, 1))]
    events = stream_events(LoopOptions(model=ScriptedModel([step]), messages=messages))
    assert events[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "no message to answer"),
        ([ReasoningMessage(id="r1", content="hmm")], "no message to answer"),
        (
            [
                UserMessage(id="u1", content="Go"),
                AssistantMessage(
                    id="a1",
                    tool_calls=[
                        AGUIToolCall(id="c9", function=FunctionCall(name="f", arguments="{}")),
                        AGUIToolCall(id="c9", function=FunctionCall(name="g", arguments="{}")),
                    ],
                ),
                ToolMessage(id="t1", tool_call_id="c9", content="1"),
            ],
            "the tool call id 'c9' is used twice",
        ),
        (
            [
                UserMessage(id="u1", content="Go"),
                AssistantMessage(
                    id="a1",
                    tool_calls=[AGUIToolCall(id="c1", function=FunctionCall(name="f", arguments="{}"))],
                ),
                ToolMessage(id="t1", tool_call_id="c1", content="1"),
                ToolMessage(id="t2", tool_call_id="c1", content="2"),
            ],
            "a second result for the tool call 'c1'",
        ),
    ],
    ids=["empty", "only reasoning", "two calls with one id", "two results for one call"],
)
def test_a_history_no_model_could_answer_is_a_chat_request_error_before_any_run(
    messages: list[Any], fragment: str
) -> None:
    with pytest.raises(ChatRequestError) as caught:
        messages_from_run_input(run_input(*messages))
    assert caught.value.path == "messages"
    assert fragment in str(caught.value)


def test_a_deadline_that_passed_is_a_run_error_not_a_stop() -> None:
    clock = ManualClock()
    ctx = Context(timeout=30, clock=clock)
    step = Endless(interval=0.01)
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("Count.")]), ctx)
    encoder = AGUIEncoder(thread_id="t1", run_id="r1")
    chunks = []
    for part in reader:
        chunks.append(encoder(part))
        if part.text == "tick 1 ":
            clock.advance(31)
    events = validated(b"".join(chunks))
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == "DeadlineExceeded"
