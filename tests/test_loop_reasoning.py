"""The loop with a reasoning model (ScriptedModel): reasoning blocks stay in place in the
history, reach the reader in order, show in StepResult / RunResult, survive a length
step, and a history saved as JSON mid-task continues in a new run with the same bytes."""

from __future__ import annotations

import json
from typing import Any

from agentcore import (
    FinishReason,
    Message,
    Reasoning,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
    generate,
    reasoning_part,
    run,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.testing import ScriptedModel
from tests.loop_helpers import FuncTool, collect, options, step_finish, text_step

FIRST = Reasoning(text="Weather first.", signature="c2lnLTE=", format="anthropic", origin="api.anthropic.com")
SECOND = Reasoning(text="Now the time.", signature="c2lnLTI=", format="anthropic", origin="api.anthropic.com")
REDACTED = Reasoning(data="cmVkYWN0ZWQ=", format="anthropic", origin="api.anthropic.com")
WEATHER = ToolCall("c1", "get_weather", '{"city": "Oslo"}')
TIME = ToolCall("c2", "get_time", "{}")


def thought(block: Reasoning, *pieces: str) -> list[StreamPart]:
    """A block streamed as ``pieces`` (its text when none are given), then the block itself."""
    deltas = pieces or ((block.text,) if block.text else ())
    return [*(StreamPart.reasoning_delta(piece) for piece in deltas), StreamPart.reasoning_event(block)]


def tools() -> list[FuncTool]:
    return [FuncTool("get_weather", lambda _i, _c: "-3C"), FuncTool("get_time", lambda _i, _c: "23:00")]


def interleaved_step() -> list[StreamPart]:
    """Think, call, think again, call: interleaved thinking."""
    return [
        *thought(FIRST, "Weather ", "first."),
        StreamPart.tool_call_event(WEATHER),
        *thought(SECOND),
        StreamPart.tool_call_event(TIME),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=40, output=30)),
    ]


def shape(parts: list[StreamPart]) -> list[tuple[Any, ...]]:
    """Each part as its kind and the field that matters for it."""
    out: list[tuple[Any, ...]] = []
    for part in parts:
        value: Any = part.text
        if part.kind is StreamPartKind.REASONING:
            value = part.reasoning
        elif part.kind is StreamPartKind.TOOL_CALL:
            value = part.tool_call
        elif part.kind is StreamPartKind.TOOL_RESULT:
            value = part.tool_result
        elif part.finish_reason is not None:
            value = part.finish_reason.value
        out.append((part.kind.value, value))
    return out


def test_a_thinking_block_between_two_tool_calls_stays_between_them() -> None:
    model = ScriptedModel([interleaved_step(), text_step("Cold, and late.")])
    result = generate(options(model, tools=tools()))
    assert result.text == "Cold, and late."
    assistant = result.messages[1]
    assert assistant.role is Role.ASSISTANT
    assert assistant.content == (
        reasoning_part(FIRST),
        tool_call_part(WEATHER),
        reasoning_part(SECOND),
        tool_call_part(TIME),
    )
    # ...and that is exactly what the model gets back in the next step, before the results.
    sent = model.requests[1].messages
    assert sent[1] == assistant
    assert sent[2] == Message(
        role=Role.TOOL,
        content=[
            tool_result_part(ToolResult("c1", "get_weather", "-3C")),
            tool_result_part(ToolResult("c2", "get_time", "23:00")),
        ],
    )


def test_text_and_reasoning_keep_the_models_order_and_deltas_are_not_stored() -> None:
    step = [
        StreamPart.text_delta("Let me "),
        StreamPart.reasoning_delta("(aside) "),  # a delta does not split the text: it is display only
        StreamPart.text_delta("see."),
        StreamPart.reasoning_event(FIRST),
        StreamPart.text_delta("Checking."),
        StreamPart.tool_call_event(WEATHER),
        StreamPart.reasoning_event(REDACTED),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]
    model = ScriptedModel([step, text_step("Cold.")])
    result = generate(options(model, tools=tools()))
    assert result.messages[1].content == (
        text_part("Let me see."),
        reasoning_part(FIRST),
        text_part("Checking."),
        tool_call_part(WEATHER),
        reasoning_part(REDACTED),
    )
    assert result.steps[0].text == "Let me see.Checking."


def test_reasoning_parts_reach_the_reader_in_order() -> None:
    step = interleaved_step()
    model = ScriptedModel([step, [*thought(REDACTED), *text_step("Cold.")]])
    parts = collect(run(options(model, tools=tools())))
    assert shape(parts) == [
        *shape(step),
        ("tool-result", ToolResult("c1", "get_weather", "-3C")),
        ("tool-result", ToolResult("c2", "get_time", "23:00")),
        ("reasoning", REDACTED),  # no text: no deltas, the block alone
        ("text-delta", "Cold."),
        ("step-finish", "stop"),
        ("finish", "stop"),
    ]


def test_step_and_run_results_expose_the_reasoning() -> None:
    answer = [*thought(SECOND), *thought(REDACTED), *thought(FIRST), *text_step("Cold.")]
    model = ScriptedModel([interleaved_step(), answer, text_step("Bye.")])
    result = generate(options(model, tools=tools()))
    first, second = result.steps
    assert first.reasoning == (FIRST, SECOND)
    assert first.reasoning_text == "Weather first.\n\nNow the time."
    assert second.reasoning == (SECOND, REDACTED, FIRST)
    assert second.reasoning_text == "Now the time.\n\nWeather first."  # a block with no text adds nothing
    assert result.reasoning == (first.reasoning_text, second.reasoning_text)
    plain = generate(options(ScriptedModel([text_step("hi")])))
    assert plain.steps[0].reasoning == ()
    assert plain.steps[0].reasoning_text == ""
    assert plain.reasoning == ("",)


def test_a_step_of_reasoning_only_is_kept_as_an_assistant_message() -> None:
    model = ScriptedModel([[*thought(REDACTED), step_finish()]])
    result = generate(options(model))
    assert result.text == ""
    assert result.messages[-1] == Message(role=Role.ASSISTANT, content=[reasoning_part(REDACTED)])


def test_a_length_step_keeps_its_reasoning_and_text_but_not_its_calls() -> None:
    ran = FuncTool("get_weather")
    model = ScriptedModel(
        [
            [
                *thought(FIRST),
                StreamPart.text_delta("I will look it "),
                StreamPart.tool_call_event(WEATHER),
                *thought(SECOND),
                StreamPart.text_delta("up"),
                StreamPart.step_finish(FinishReason.LENGTH, Usage(input=10, output=64)),
            ]
        ]
    )
    result = generate(options(model, tools=[ran]))
    assert result.finish_reason is FinishReason.LENGTH
    assert ran.calls == []
    assert result.messages[-1].content == (
        reasoning_part(FIRST),
        text_part("I will look it "),
        reasoning_part(SECOND),
        text_part("up"),
    )
    assert result.steps[0].reasoning == (FIRST, SECOND)
    assert result.reasoning == ("Weather first.\n\nNow the time.",)


def test_a_history_saved_as_json_mid_task_continues_in_a_new_run() -> None:
    # Run 1 stops at its step limit, after the tools ran: the task is half done.
    first_model = ScriptedModel([interleaved_step()])
    stopped = generate(options(first_model, tools=tools(), step_limit=1))
    assert stopped.finish_reason is FinishReason.STEP_LIMIT
    stored = json.dumps([message.to_dict() for message in stopped.messages])

    # Later, another process: load the history, ask to go on.
    history = [Message.from_dict(data) for data in json.loads(stored)]
    assert history == list(stopped.messages)
    second_model = ScriptedModel([[*thought(REDACTED), *text_step("Cold, and 23:00.")]])
    resumed = generate(options(second_model, messages=[*history, user_message("Go on.")], tools=tools()))
    assert resumed.text == "Cold, and 23:00."
    sent = second_model.requests[0].messages
    assert sent[:3] == tuple(stopped.messages)
    assert sent[1].reasoning == [FIRST, SECOND]
    # Every byte of the blocks went back as the provider sent them.
    assert [block.signature for block in sent[1].reasoning] == ["c2lnLTE=", "c2lnLTI="]
    assert json.dumps([message.to_dict() for message in sent[:3]]) == stored
    assert resumed.messages[-1].content == (reasoning_part(REDACTED), text_part("Cold, and 23:00."))
