"""Loop rules 1-5 and 9 of design.md, the loop's results and options (agentcore/engine/loop.py, result.py).

Tool failures (loop rule 6) and parallel tools are in test_loop_tools.py,
cancellation (loop rule 8) and thread hygiene in test_loop_cancel.py, retries
(loop rule 7) in test_retry.py. A test named ``test_ruleN_...`` tests loop
rule N. Every test drives ``run()`` with a ScriptedModel.
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

import pytest

import agentcore
from agentcore import (
    DEFAULT_STEP_LIMIT,
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Request,
    Role,
    RunError,
    StreamPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolSet,
    Usage,
    run,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.result import StepResult
from agentcore.testing import ScriptedModel
from tests.loop_helpers import (
    LENGTH,
    SEND,
    STOP,
    TOOL_CALLS,
    FuncTool,
    asleep_in,
    assert_valid_history,
    call,
    collect,
    kinds,
    options,
    step_finish,
    summary,
    text,
    text_step,
    tool_step,
    wait_until,
)


def assistant(*parts: Any) -> Message:
    return Message(role=Role.ASSISTANT, content=parts)


def tool_message(*results: ToolResult) -> Message:
    return Message(role=Role.TOOL, content=[tool_result_part(r) for r in results])


# --- loop rule 1: forwarding order, one terminal part ----------------------------------------


def test_rule1_parts_are_forwarded_in_order_and_the_loop_adds_results_and_finish() -> None:
    model = ScriptedModel(
        [
            [
                text("Let me"),
                text(" check."),
                call("c1", "search", '{"q":"x"}'),
                step_finish(TOOL_CALLS, Usage(10, 5)),
            ],
            text_step("Do", "ne", usage=Usage(20, 3)),
        ]
    )
    search = FuncTool("search", lambda _i, _c: "found")
    parts = collect(run(options(model, tools=[search])))
    assert summary(parts) == [
        ("text-delta", "Let me"),
        ("text-delta", " check."),
        ("tool-call", "c1", "search", '{"q":"x"}'),
        ("step-finish", "tool-calls", Usage(10, 5)),
        ("tool-result", "c1", "search", "found", False),
        ("text-delta", "Do"),
        ("text-delta", "ne"),
        ("step-finish", "stop", Usage(20, 3)),
        ("finish", "stop", Usage(30, 8)),
    ]
    assert search.calls == [{"q": "x"}]


def test_rule1_every_step_request_carries_system_history_tools_cap_and_headers() -> None:
    model = ScriptedModel([tool_step(call("c1", "search", '{"q":"x"}')), text_step("Done")])
    search = FuncTool("search", lambda _i, _c: "found", description="Search the web")
    reader = run(
        options(
            model,
            system="Be brief.",
            tools=[search],
            max_output_tokens=256,
            headers={"X-Title": "agentcore-tests"},
        )
    )
    result = reader.result()
    assert len(model.requests) == 2
    for request in model.requests:
        assert request.system == "Be brief."
        assert request.tools == (search.definition,)
        assert request.max_output_tokens == 256
        assert dict(request.headers) == {"X-Title": "agentcore-tests"}
    first, second = model.requests
    assert first.messages == (user_message("hi"),)
    expected_call = ToolCall("c1", "search", '{"q":"x"}')
    expected_result = ToolResult("c1", "search", "found", False)
    assert second.messages == (
        user_message("hi"),
        assistant(tool_call_part(expected_call)),
        tool_message(expected_result),
    )
    assert result.messages == (*second.messages, assistant(text_part("Done")))


def test_rule1_text_only_run_and_reader_is_exhausted_after_the_terminal_part() -> None:
    model = ScriptedModel([text_step("Hel", "lo", usage=Usage(7, 2, 0, 0))])
    reader = run(options(model))
    parts = collect(reader)  # collect() also asserts next(reader) is None afterwards
    assert summary(parts) == [
        ("text-delta", "Hel"),
        ("text-delta", "lo"),
        ("step-finish", "stop", Usage(7, 2)),
        ("finish", "stop", Usage(7, 2)),
    ]
    with pytest.raises(StopIteration):
        reader.recv()
    assert reader.closed


def test_rule1_a_model_emitting_a_loop_part_is_an_upstream_error() -> None:
    bogus = StreamPart.finish(STOP)
    model = ScriptedModel([[text("a"), bogus, step_finish()]])
    parts = collect(run(options(model)))
    assert kinds(parts) == ["text-delta", "error"]
    err = parts[-1].err
    assert isinstance(err, ModelError)
    assert err.error_class is ErrorClass.UPSTREAM
    assert "'finish'" in str(err)
    assert len(model.requests) == 1


def test_rule1_a_stream_without_step_finish_is_a_transient_error_after_forwarding() -> None:
    model = ScriptedModel([[text("half")], text_step("never")])
    parts = collect(run(options(model)))
    assert summary(parts)[:1] == [("text-delta", "half")]
    err = parts[-1].err
    assert isinstance(err, ModelError)
    assert err.error_class is ErrorClass.TRANSIENT
    assert len(model.requests) == 1  # text was forwarded: no retry


@pytest.mark.parametrize("reason", [FinishReason.ERROR, FinishReason.CANCELED, FinishReason.STEP_LIMIT])
def test_rule1_a_step_finish_with_a_run_reason_is_an_upstream_error(reason: FinishReason) -> None:
    model = ScriptedModel([[text("x"), step_finish(reason)]])
    parts = collect(run(options(model)))
    assert kinds(parts) == ["text-delta", "error"]
    err = parts[-1].err
    assert isinstance(err, ModelError)
    assert err.error_class is ErrorClass.UPSTREAM


# --- loop rule 2 and fault 11: length ----------------------------------------------------------


def test_rule2_length_never_runs_tools_and_keeps_text_but_not_calls_in_history() -> None:
    cut = '{"path":"a.txt","text":"lorem ip'
    model = ScriptedModel(
        [[text("Writing"), call("toolu_1", "write_file", cut), step_finish(LENGTH, Usage(30, 64))]]
    )
    on_step: list[Usage] = []
    write_file = FuncTool("write_file")
    reader = run(options(model, tools=[write_file], on_step=on_step.append))
    parts = collect(reader)
    assert summary(parts) == [
        ("text-delta", "Writing"),
        ("tool-call", "toolu_1", "write_file", cut),
        ("step-finish", "length", Usage(30, 64)),
        ("finish", "length", Usage(30, 64)),
    ]
    assert write_file.calls == []
    assert len(model.requests) == 1
    assert on_step == [Usage(30, 64)]
    result = reader.result()
    assert result.finish_reason is LENGTH
    assert result.text == "Writing"
    assert result.messages == (user_message("hi"), assistant(text_part("Writing")))
    assert result.steps == (
        StepResult("Writing", (ToolCall("toolu_1", "write_file", cut),), (), Usage(30, 64), LENGTH),
    )


def test_rule2_length_with_only_a_tool_call_adds_no_assistant_message() -> None:
    model = ScriptedModel([[call("toolu_1", "write_file", '{"path":'), step_finish(LENGTH, Usage(30, 64))]])
    write_file = FuncTool("write_file")
    result = run(options(model, tools=[write_file])).result()
    assert write_file.calls == []
    assert result.messages == (user_message("hi"),)
    assert result.finish_reason is LENGTH


def test_rule2_plain_text_length_ends_the_run_with_length() -> None:
    model = ScriptedModel([[text("cut off"), step_finish(LENGTH, Usage(3, 4))], text_step("never")])
    result = run(options(model)).result()
    assert (result.finish_reason, result.text, result.usage) == (LENGTH, "cut off", Usage(3, 4))
    assert len(model.requests) == 1


# --- loop rule 3: tool calls -------------------------------------------------------------------


def test_rule3_tools_run_in_call_order_and_one_tool_message_holds_all_results() -> None:
    order: list[str] = []

    def tool(name: str) -> FuncTool:
        def execute(arguments: dict[str, Any], _ctx: Context) -> str:
            order.append(f"{name}{arguments['n']}")
            return f"{name}:{arguments['n']}"

        return FuncTool(name, execute)

    model = ScriptedModel(
        [
            tool_step(call("c1", "b", '{"n":1}'), call("c2", "a", '{"n":2}'), call("c3", "b", '{"n":3}')),
            text_step("ok"),
        ]
    )
    parts = collect(run(options(model, tools=[tool("a"), tool("b")])))
    assert order == ["b1", "a2", "b3"]
    assert [s for s in summary(parts) if s[0] == "tool-result"] == [
        ("tool-result", "c1", "b", "b:1", False),
        ("tool-result", "c2", "a", "a:2", False),
        ("tool-result", "c3", "b", "b:3", False),
    ]
    second = model.requests[1].messages
    assert len(second) == 3
    assert second[2] == tool_message(
        ToolResult("c1", "b", "b:1"), ToolResult("c2", "a", "a:2"), ToolResult("c3", "b", "b:3")
    )
    assert [m.role for m in second] == [Role.USER, Role.ASSISTANT, Role.TOOL]


def test_rule3_stop_with_tool_calls_still_runs_the_tools() -> None:
    model = ScriptedModel(
        [
            [call("call_1", "get_weather", '{"city":"Lima"}'), step_finish(STOP, Usage(5, 5))],
            text_step("Sunny"),
        ]
    )
    weather = FuncTool("get_weather", lambda _i, _c: "18C")
    reader = run(options(model, tools=[weather]))
    parts = collect(reader)
    assert summary(parts)[:3] == [
        ("tool-call", "call_1", "get_weather", '{"city":"Lima"}'),
        ("step-finish", "tool-calls", Usage(5, 5)),
        ("tool-result", "call_1", "get_weather", "18C", False),
    ]
    assert weather.calls == [{"city": "Lima"}]
    assert len(model.requests) == 2
    assert summary(parts)[-1] == ("finish", "stop", Usage(5, 5))


def test_rule3_tool_calls_reason_without_calls_ends_with_stop() -> None:
    model = ScriptedModel([[text("hm"), step_finish(TOOL_CALLS, Usage(1, 1))], text_step("never")])
    reader = run(options(model, tools=[FuncTool("search")]))
    parts = collect(reader)
    assert summary(parts) == [
        ("text-delta", "hm"),
        ("step-finish", "tool-calls", Usage(1, 1)),
        ("finish", "stop", Usage(1, 1)),
    ]
    assert len(model.requests) == 1


# --- loop rule 4 and fault 21: step limit ------------------------------------------------------


def test_rule4_step_limit_ends_gracefully_after_running_the_last_tools() -> None:
    model = ScriptedModel(
        [tool_step(call(f"call_{i}", "search", '{"q":"same"}'), usage=Usage(10, 5)) for i in range(4)]
    )
    on_step: list[Usage] = []
    search = FuncTool("search", lambda _i, _c: "nothing new")
    reader = run(options(model, tools=[search], step_limit=3, on_step=on_step.append))
    parts = collect(reader)
    assert len(model.requests) == 3
    assert on_step == [Usage(10, 5)] * 3
    assert summary(parts)[-1] == ("finish", "step-limit", Usage(30, 15, 0, 0))
    results = [s for s in summary(parts) if s[0] == "tool-result"]
    assert results == [("tool-result", f"call_{i}", "search", "nothing new", False) for i in range(3)]
    assert len(search.calls) == 3
    result = reader.result()
    assert result.finish_reason is FinishReason.STEP_LIMIT
    assert len(result.steps) == 3
    assert_valid_history(result.messages)
    assert result.messages[-1].role is Role.TOOL


def test_rule4_step_limit_none_means_the_default() -> None:
    assert DEFAULT_STEP_LIMIT == 20
    model = ScriptedModel([tool_step(call(f"c{i}", "search")) for i in range(DEFAULT_STEP_LIMIT + 1)])
    result = run(options(model, tools=[FuncTool("search")], step_limit=None)).result()
    assert len(model.requests) == 20
    assert result.finish_reason is FinishReason.STEP_LIMIT


def test_rule4_a_final_answer_at_the_limit_is_a_stop() -> None:
    model = ScriptedModel([tool_step(call("c1", "search")), text_step("answer")])
    result = run(options(model, tools=[FuncTool("search")], step_limit=2)).result()
    assert (result.finish_reason, result.text) == (STOP, "answer")


# --- loop rule 5: usage and on_step ------------------------------------------------------------


def test_rule5_on_step_runs_after_the_step_finish_part_and_before_the_next_model_call() -> None:
    log: list[str] = []
    delivered = [threading.Event(), threading.Event()]

    def model_step(number: int, parts: list[StreamPart]) -> Any:
        def produce(_request: Request) -> list[StreamPart]:
            log.append(f"model {number}")
            return parts

        return produce

    def on_step(usage: Usage) -> None:
        step = len([e for e in log if e.startswith("on_step")])
        # Waits until the reader (the test thread) received this step's step-finish part.
        seen = delivered[step].wait(5)
        log.append(f"on_step {usage.input} {'after' if seen else 'BEFORE'} delivery")

    model = ScriptedModel(
        [
            model_step(1, tool_step(call("c1", "search"), usage=Usage(1, 0))),
            model_step(2, text_step("done", usage=Usage(2, 0))),
        ]
    )

    def search_tool(_arguments: dict[str, Any], _ctx: Context) -> str:
        log.append("tool search")
        return "ok"

    search = FuncTool("search", search_tool)
    finishes = 0
    for part in run(options(model, tools=[search], on_step=on_step)):
        if part.kind.value == "step-finish":
            log.append(f"reader step-finish {finishes + 1}")
            delivered[finishes].set()
            finishes += 1
        elif part.terminal:
            log.append(f"reader {part.kind.value}")
    assert log == [
        "model 1",
        "reader step-finish 1",
        "on_step 1 after delivery",
        "tool search",
        "model 2",
        "reader step-finish 2",
        "on_step 2 after delivery",
        "reader finish",
    ]


def test_rule5_totals_keep_the_cache_fields_and_on_step_gets_per_step_usage() -> None:
    per_step = Usage(2012, 15, 2000, 300)
    model = ScriptedModel([tool_step(call("c1", "search"), usage=per_step), text_step("Hi", usage=per_step)])
    on_step: list[Usage] = []
    reader = run(options(model, tools=[FuncTool("search")], on_step=on_step.append))
    parts = collect(reader)
    assert on_step == [per_step, per_step]
    assert summary(parts)[-1] == ("finish", "stop", Usage(4024, 30, 4000, 600))
    result = reader.result()
    assert result.usage == Usage(4024, 30, 4000, 600)
    assert [s.usage for s in result.steps] == [per_step, per_step]


def test_rule5_an_on_step_exception_ends_the_run_with_it() -> None:
    boom = ValueError("billing down")

    def on_step(_usage: Usage) -> None:
        raise boom

    model = ScriptedModel([tool_step(call("c1", "search"), usage=Usage(4, 2)), text_step("never")])
    search = FuncTool("search")
    parts = collect(run(options(model, tools=[search], on_step=on_step)))
    assert summary(parts)[-1] == ("error", "error", Usage(4, 2), boom)
    assert search.calls == []
    assert len(model.requests) == 1


# --- loop rule 9: history ----------------------------------------------------------------------


def test_rule9_the_callers_messages_are_not_mutated_and_the_history_continues() -> None:
    first_user = user_message("What is the weather?")
    caller_messages = [first_user]
    model = ScriptedModel(
        [
            tool_step(call("c1", "get_weather", '{"city":"Oslo"}'), call("c2", "get_time")),
            text_step("Cold", " and late."),
        ]
    )
    tools = [FuncTool("get_weather", lambda _i, _c: "-3C"), FuncTool("get_time", lambda _i, _c: "23:00")]
    result = run(options(model, messages=caller_messages, tools=tools)).result()
    assert caller_messages == [first_user]
    assert caller_messages[0] is first_user
    assert first_user == user_message("What is the weather?")
    assert_valid_history(result.messages)
    assert [m.role for m in result.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert result.messages[-1] == assistant(text_part("Cold and late."))

    # The history goes through JSON and continues a second run.
    stored = json.loads(json.dumps([m.to_dict() for m in result.messages]))
    history = [Message.from_dict(m) for m in stored]
    assert tuple(history) == result.messages
    follow_up = user_message("And tomorrow?")
    second_model = ScriptedModel([text_step("Warmer.")])
    second = run(options(second_model, messages=[*history, follow_up], tools=tools)).result()
    assert second_model.requests[0].messages == (*result.messages, follow_up)
    assert second.messages == (*result.messages, follow_up, assistant(text_part("Warmer.")))
    assert_valid_history(second.messages)


# --- RunResult and RunError --------------------------------------------------------------------


def test_run_result_fields() -> None:
    model = ScriptedModel(
        [
            [
                text("Checking"),
                call("c1", "search", '{"q":"a"}'),
                step_finish(TOOL_CALLS, Usage(10, 4, 2, 1)),
            ],
            text_step("The ", "answer", usage=Usage(20, 6, 3, 0)),
        ]
    )
    result = run(options(model, tools=[FuncTool("search", lambda _i, _c: "hit")])).result()
    assert result.text == "The answer"
    assert result.finish_reason is STOP
    assert result.usage == Usage(30, 10, 5, 1)
    assert result.steps == (
        StepResult(
            text="Checking",
            tool_calls=(ToolCall("c1", "search", '{"q":"a"}'),),
            tool_results=(ToolResult("c1", "search", "hit", False),),
            usage=Usage(10, 4, 2, 1),
            finish_reason=TOOL_CALLS,
        ),
        StepResult("The answer", (), (), Usage(20, 6, 3, 0), STOP),
    )
    assert len(result.messages) == 4


def test_run_error_attributes_keep_the_usage_of_completed_steps() -> None:
    boom = ModelError(ErrorClass.UPSTREAM, message="boom")
    model = ScriptedModel(
        [
            tool_step(call("call_1", "search"), usage=Usage(100, 20, 50, 0)),
            [text("partial"), boom],
        ]
    )
    on_step: list[Usage] = []
    reader = run(options(model, tools=[FuncTool("search", lambda _i, _c: "ok")], on_step=on_step.append))
    parts = collect(reader)
    assert summary(parts) == [
        ("tool-call", "call_1", "search", "{}"),
        ("step-finish", "tool-calls", Usage(100, 20, 50, 0)),
        ("tool-result", "call_1", "search", "ok", False),
        ("text-delta", "partial"),
        ("error", "error", Usage(100, 20, 50, 0), boom),
    ]
    assert on_step == [Usage(100, 20, 50, 0)]
    with pytest.raises(RunError) as info:
        reader.result()
    error = info.value
    assert error.err is boom
    assert error.__cause__ is boom
    assert error.usage == Usage(100, 20, 50, 0)
    assert error.finish_reason is FinishReason.ERROR
    assert "boom" in str(error)
    assert_valid_history(error.messages)
    assert [m.role for m in error.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]


# --- LoopOptions -------------------------------------------------------------------------------


def test_loop_options_defaults() -> None:
    model = ScriptedModel([])
    opts = LoopOptions(model=model, messages=[user_message("hi")])
    assert opts.messages == (user_message("hi"),)
    # None, the default, is the DEFAULT_* value, which the option then holds.
    assert (opts.system, opts.step_limit, opts.max_output_tokens, opts.max_retries) == ("", 20, None, 2)
    assert (opts.retry_base_delay, opts.retry_max_delay, opts.retry_after_limit) == (0.5, 8.0, None)
    assert opts.parallel_tools is False
    assert opts.on_step is None
    assert dict(opts.headers) == {}
    assert isinstance(opts.tools, ToolSet)
    assert len(opts.tools) == 0
    assert opts.queue_size == agentcore.DEFAULT_RUN_QUEUE_SIZE == 1024


class Offering:
    """A model step that offers text deltas until the loop stops taking them."""

    model_id = "offering"

    def __init__(self) -> None:
        self.offered = 0

    def stream(self, request: Request, ctx: Context) -> Any:
        while not ctx.cancelled:
            self.offered += 1
            yield StreamPart.text_delta(f"t{self.offered}")


def test_a_run_queues_at_most_queue_size_parts_for_a_reader_that_does_not_read() -> None:
    model = Offering()
    reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
    try:
        # The bound, plus the part the worker holds while it waits for room.
        assert wait_until(lambda: model.offered == agentcore.DEFAULT_RUN_QUEUE_SIZE + 1)
        # The reader takes the whole queue at once; the worker fills it again
        # while the reader holds that batch, and then waits.
        assert [next(reader).text for _ in range(3)] == ["t1", "t2", "t3"]
        # Not one more: the worker sleeps on the full queue, holding part 2049.
        full = 2 * agentcore.DEFAULT_RUN_QUEUE_SIZE + 1
        assert wait_until(lambda: model.offered == full and asleep_in("agentcore-stream", SEND))
        assert model.offered == full
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"messages": []}, "at least one message"),
        ({"messages": ["hello"]}, "Message objects"),
        ({"model": object()}, "not a Model"),
        ({"step_limit": 0}, "LoopOptions.step_limit must be >= 1, got 0"),
        ({"max_output_tokens": 0}, "LoopOptions.max_output_tokens must be >= 1, got 0"),
        ({"max_retries": -1}, "LoopOptions.max_retries must be >= 0, got -1"),
        ({"retry_base_delay": -0.1}, "retry_base_delay"),
        ({"retry_max_delay": float("nan")}, "retry_max_delay"),
        ({"retry_after_limit": -1.0}, "retry_after_limit"),
        ({"queue_size": 0}, "queue_size"),
        ({"tools": [FuncTool("search"), FuncTool("search")]}, "two tools are named 'search'"),
        ({"tools": {"find": FuncTool("search")}}, "differs"),
        ({"tools": [object()]}, "not a Tool"),
        (
            {"tools": FuncTool("search")},
            r"tools must be a list of tools, got one FuncTool \(wrap it: \[\.\.\.\]\)",
        ),
        (
            {"tools": "calc"},
            r"tools must be tools \(a list, a ToolSet or a name -> tool mapping\), got the text 'calc'",
        ),
        # Wrong types: a ConfigError naming the field, at construction (not a
        # TypeError, nor a failure inside the run later).
        ({"messages": user_message("hi")}, r"list of Message objects, got Message \(wrap it"),
        ({"messages": None}, "list of Message objects, got NoneType"),
        ({"system": 5}, "system must be a str, got 5"),
        ({"step_limit": "3"}, "step_limit must be an int, got '3'"),
        ({"step_limit": 1.5}, "step_limit must be an int, got 1.5"),
        ({"max_output_tokens": "5"}, "max_output_tokens must be an int, got '5'"),
        ({"max_retries": 1.5}, "max_retries must be an int, got 1.5"),
        ({"max_retries": "x"}, "max_retries must be an int"),
        ({"queue_size": "3"}, "queue_size must be an int"),
        ({"queue_size": 1.5}, "queue_size must be an int"),
        ({"queue_size": True}, "queue_size must be an int, got True"),
        ({"retry_base_delay": "x"}, "retry_base_delay must be a number of seconds"),
        ({"retry_after_limit": True}, "retry_after_limit must be a number of seconds"),
        ({"parallel_tools": "yes"}, "parallel_tools must be True or False, got 'yes'"),
        ({"trace_content": 1}, "trace_content must be True or False, got 1"),
        ({"agent_name": None}, "agent_name must be a str, got None"),
        ({"on_step": 5}, "on_step must be callable or None"),
        ({"headers": ["x-a"]}, "headers must be a mapping"),
    ],
)
def test_loop_options_validation(kwargs: dict[str, Any], match: str) -> None:
    base: dict[str, Any] = {"model": ScriptedModel([]), "messages": [user_message("hi")]}
    with pytest.raises(ConfigError, match=match):
        LoopOptions(**{**base, **kwargs})


def test_loop_options_accepts_a_tool_mapping_and_a_tool_set() -> None:
    search = FuncTool("search")
    by_name = LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], tools={"search": search})
    as_set = LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], tools=ToolSet([search]))
    assert by_name.tools["search"] is search
    assert as_set.tools["search"] is search
    assert ConfigError.__mro__[1:3] == (agentcore.AgentcoreError, ValueError)


class JsonTextTool:
    """A tool in the spelling from before tools got their arguments as a dict."""

    definition = ToolDefinition(name="lookup", description="Look up.", input_schema='{"type":"object"}')

    def execute(self, input: Any, ctx: Context) -> str:
        return str(json.loads(input)["q"])  # given a dict: a TypeError only the model would see


def json_text_tool(annotations: dict[str, Any]) -> JsonTextTool:
    """A :class:`JsonTextTool` whose ``execute`` carries ``annotations``."""

    class Tool(JsonTextTool):
        def execute(self, input: Any, ctx: Context) -> str:
            return super().execute(input, ctx)

    Tool.execute.__annotations__ = annotations
    return Tool()


OLD_SPELLING = (
    r"tool 'lookup': execute's first parameter is annotated str \(JSON text\), but a tool now gets "
    r"the call's arguments parsed, as a dict: write execute\(self, arguments: dict\[str, Any\], ctx\) "
    r"and use arguments where it did json.loads\(input\)"
)


@pytest.mark.parametrize("annotation", [str, "str"], ids=["str", "string annotation"])
def test_a_tool_whose_execute_takes_json_text_is_refused_with_the_new_spelling(annotation: Any) -> None:
    tool_ = json_text_tool({"input": annotation, "return": str})
    with pytest.raises(ConfigError, match=OLD_SPELLING):
        ToolSet([tool_])
    with pytest.raises(ConfigError, match=OLD_SPELLING):
        ToolSet({"lookup": tool_})
    with pytest.raises(ConfigError, match=OLD_SPELLING):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], tools=[tool_])


class Unreadable:
    """A callable whose signature cannot be read."""

    __signature__ = "not a signature"

    def __call__(self, input: Any, ctx: Context) -> str:
        return "read"


@pytest.mark.parametrize(
    "annotations",
    [{}, {"input": "dict[str, Any]"}, {"input": dict}, {"input": Any}, {"input": "Mapping[str, str]"}],
    ids=["unannotated", "dict string", "dict", "Any", "another string"],
)
def test_a_tool_whose_execute_takes_anything_but_str_is_taken(annotations: dict[str, Any]) -> None:
    tool_ = json_text_tool(annotations)
    assert ToolSet([tool_])["lookup"] is tool_


def test_a_tool_whose_execute_has_no_readable_signature_is_taken() -> None:
    tool_ = JsonTextTool()
    tool_.execute = Unreadable()  # type: ignore[method-assign]  # a callable object, on purpose
    with pytest.raises((TypeError, ValueError)):
        inspect.signature(tool_.execute)
    assert ToolSet([tool_])["lookup"] is tool_
    assert tool_.execute({}, Context()) == "read"


def test_loop_options_max_retries_zero_means_no_retry() -> None:
    err = ModelError(ErrorClass.TRANSIENT)
    model = ScriptedModel([err, text_step("never")])
    reader = run(options(model, max_retries=0))
    list(reader)
    with pytest.raises(RunError) as failed:
        reader.result()
    assert failed.value.err is err
    assert len(model.requests) == 1  # max_retries=0: no retry


def test_run_refuses_what_is_not_loop_options_or_a_context() -> None:
    with pytest.raises(ConfigError, match="run\\(\\) needs a LoopOptions, got NoneType"):
        run(None)  # type: ignore[arg-type]  # a wrong type on purpose: refused
    options_ = LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")])
    with pytest.raises(ConfigError, match="ctx must be a Context or None, got float"):
        run(options_, 5.0)  # type: ignore[arg-type]  # a wrong type on purpose: refused


class FlakyDefinition:
    """A tool whose definition works when the ToolSet is built and fails when the run reads it."""

    def __init__(self) -> None:
        self.broken = False

    @property
    def definition(self) -> Any:
        if self.broken:
            raise RuntimeError("schema service down")
        return FuncTool("lookup").definition

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "never"


def test_a_failure_before_the_first_step_is_the_runs_error_not_a_cancel() -> None:
    model = ScriptedModel([text_step("never")])
    flaky = FlakyDefinition()
    options_ = LoopOptions(model=model, messages=[user_message("hi")], tools=[flaky])
    flaky.broken = True
    reader = run(options_)
    parts = list(reader)
    assert [(p.kind.value, p.finish_reason) for p in parts] == [("error", FinishReason.ERROR)]
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.ERROR
    assert isinstance(info.value.err, RuntimeError)
    assert str(info.value.err) == "schema service down"
    assert model.requests == []
