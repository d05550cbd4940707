"""``AnthropicModel`` driven by ``run()`` on the in-memory transport: the
faults 6, 7, 11, 12 and 13 of design.md end to end in Anthropic streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from agentcore import LoopOptions, RunError, run
from agentcore.context import Context
from agentcore.durable import SQLiteCheckpoints
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import FinishReason, StreamPartKind, ToolDefinition, Usage, user_message
from tests.canned import json_answer
from tests.loop_helpers import nested
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    error_payload,
    json_delta,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
    tool_start,
)

KEY = "sk-ant-api03-loop-test-key-000000"


@attrs.define
class RecordingTool:
    """A tool that answers ``reply`` and records each input it got."""

    definition: ToolDefinition
    reply: str = "ok"
    inputs: list[dict[str, Any]] = attrs.field(factory=list)

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        self.inputs.append(arguments)
        return self.reply


def options(transport: MemoryTransport, **kwargs: Any) -> LoopOptions:
    model = AnthropicModel("claude-test", api_key=KEY, transport=transport)
    kwargs.setdefault("retry_base_delay", 0.01)
    kwargs.setdefault("messages", [user_message("Weather in Oslo?")])
    return LoopOptions(model=model, **kwargs)


def text_step(text: str, **usage: int) -> bytes:
    return sse(
        message_start(**usage),
        text_start(0),
        text_delta(0, text),
        block_stop(0),
        message_delta("end_turn", output_tokens=15),
        MESSAGE_STOP,
    )


CACHED_USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 2000,
    "output_tokens": 1,
}


def test_tool_round_trip_history_and_usage(transport: MemoryTransport) -> None:
    step1 = sse(
        message_start(**CACHED_USAGE),
        text_start(0),
        text_delta(0, "Let me check."),
        text_delta(0, " One moment."),
        block_stop(0),
        tool_start(1, "toolu_1", "get_weather"),
        json_delta(1, '{"city":'),
        json_delta(1, '"Oslo"}'),
        block_stop(1),
        message_delta("tool_use", output_tokens=15),
        MESSAGE_STOP,
    )
    transport.add(Reply.of(step1), Reply.of(text_step("Rainy.", **CACHED_USAGE)))
    weather = RecordingTool(ToolDefinition(name="get_weather"), reply="rain, 8 C")
    seen: list[Usage] = []
    result = run(options(transport, tools=[weather], on_step=seen.append)).result()
    assert result.text == "Rainy."
    assert result.finish_reason is FinishReason.STOP
    assert seen == [Usage(2012, 15, 2000, 300)] * 2
    assert result.usage == Usage(4024, 30, 4000, 600)
    assert weather.inputs == [{"city": "Oslo"}]
    assert len(transport.sent) == 2
    second = transport.sent[1].json()
    assert second["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check. One moment."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain, 8 C"}],
        },
    ]
    assert second["tools"] == [{"name": "get_weather", "input_schema": {"type": "object", "properties": {}}}]


def test_length_inside_a_tool_call_runs_nothing(transport: MemoryTransport) -> None:
    body = sse(
        message_start(input_tokens=30, output_tokens=1),
        tool_start(0, "toolu_1", "write_file"),
        json_delta(0, '{"path":"a.txt","text":"lorem ip'),
        block_stop(0),
        message_delta("max_tokens", output_tokens=64),
        MESSAGE_STOP,
    )
    transport.add(Reply.of(body))
    write_file = RecordingTool(ToolDefinition(name="write_file"))
    parts = list(run(options(transport, tools=[write_file])))
    assert write_file.inputs == []
    assert StreamPartKind.TOOL_RESULT not in {p.kind for p in parts}
    assert parts[-1].kind is StreamPartKind.FINISH
    assert parts[-1].finish_reason is FinishReason.LENGTH
    assert parts[-1].total_usage == Usage(30, 64, 0, 0)
    assert len(transport.sent) == 1


def test_overloaded_event_before_content_is_retried(transport: MemoryTransport) -> None:
    failing = sse(
        message_start(input_tokens=10, output_tokens=1), error_payload("overloaded_error", "Overloaded")
    )
    transport.add(Reply.of(failing), Reply.of(text_step("Done", input_tokens=10)))
    parts = list(run(options(transport)))
    assert [p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA] == ["Done"]
    assert [p.kind for p in parts].count(StreamPartKind.STEP_FINISH) == 1
    assert parts[-1].finish_reason is FinishReason.STOP
    assert len(transport.sent) == 2


def test_overloaded_event_after_content_is_terminal(transport: MemoryTransport) -> None:
    failing = sse(
        message_start(input_tokens=10, output_tokens=1),
        text_start(0),
        text_delta(0, "Hel"),
        error_payload("overloaded_error", "Overloaded"),
    )
    transport.add(Reply.of(failing), Reply.of(text_step("Hello")))
    parts = list(run(options(transport)))
    assert [p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA] == ["Hel"]
    terminal = parts[-1]
    assert terminal.kind is StreamPartKind.ERROR
    assert terminal.finish_reason is FinishReason.ERROR
    assert isinstance(terminal.err, ModelError)
    assert terminal.err.error_class is ErrorClass.OVERLOADED
    assert terminal.total_usage == Usage()
    assert len(transport.sent) == 1


def test_http_529_then_success(transport: MemoryTransport) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    transport.add(json_answer(529, overloaded), Reply.of(text_step("Done")))
    result = run(options(transport)).result()
    assert result.text == "Done"
    assert len(transport.sent) == 2


def test_context_length_is_never_retried(transport: MemoryTransport) -> None:
    too_long = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    transport.add(json_answer(400, too_long))
    with pytest.raises(RunError) as info:
        run(options(transport, max_retries=5)).result()
    assert isinstance(info.value.err, ModelError)
    assert info.value.err.error_class is ErrorClass.CONTEXT_LENGTH
    assert "context window exceeded" in str(info.value.err)
    assert len(transport.sent) == 1
    assert KEY not in json.dumps(transport.sent[0].json())


def test_a_call_nested_too_deeply_gets_its_error_and_its_history_goes_on(
    transport: MemoryTransport, tmp_path: Path
) -> None:
    # arguments beyond Python's JSON decoder: the loop answers the call with an
    # error; the history holding it is sent again (its input as {}), saved by a
    # durable run, and continued from the store in a new run
    deep = nested(20_000)
    call = sse(
        message_start(input_tokens=30, output_tokens=1),
        tool_start(0, "toolu_1", "get_weather"),
        json_delta(0, deep),
        block_stop(0),
        message_delta("tool_use", output_tokens=15),
        MESSAGE_STOP,
    )
    transport.add(Reply.of(call), Reply.of(text_step("Sorry.")), Reply.of(text_step("Again.")))
    weather = RecordingTool(ToolDefinition(name="get_weather"))
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    result = run(options(transport, tools=[weather], run_id="deep", checkpoints=store)).result()
    assert result.text == "Sorry."
    assert weather.inputs == []
    [answer] = result.steps[0].tool_results
    assert answer.is_error
    assert "nested too deeply" in answer.content
    sent = transport.sent[1].json()["messages"][1:]
    assert sent == [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": answer.content, "is_error": True}
            ],
        },
    ]
    saved = store.load("deep")
    assert saved is not None
    assert saved.messages == result.messages
    assert saved.messages[1].tool_calls[0].input == deep
    more = run(
        options(transport, tools=[weather], messages=[*saved.messages, user_message("And now?")])
    ).result()
    assert more.text == "Again."
    assert transport.sent[2].json()["messages"][1:3] == sent
