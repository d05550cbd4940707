"""Agents (docs/agents.md): Agent over LoopOptions, agents as tools (nested
parts, cancel through three levels, usage and cost roll-up, the depth limit)
and handoffs (mid tool step, across providers, durable resume)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Agent,
    ConfigError,
    Context,
    FinishReason,
    Request,
    Role,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    handoff,
    tool,
    user_message,
)
from agentcore.cost import price_usage
from agentcore.durable import SQLiteCheckpoints
from agentcore.errors import Canceled, ErrorClass, ModelError
from agentcore.integrations.web import part_to_dict
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import ScriptedModel
from tests.localserver import LocalServer, Reply, Stall
from tests.loop_helpers import together, wait_until

ANTHROPIC = "https://api.anthropic.com"
HAIKU = "claude-haiku-4-5"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOOL_CALLS = FinishReason.TOOL_CALLS


def text(value: str) -> StreamPart:
    return StreamPart.text_delta(value)


def call(call_id: str, name: str, arguments: dict[str, Any] | None = None) -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(call_id, name, json.dumps(arguments or {})))


def done(usage: Usage, reason: FinishReason = FinishReason.STOP) -> StreamPart:
    return StreamPart.step_finish(reason, usage)


def ask(call_id: str, agent: str, task: str, usage: Usage) -> list[StreamPart]:
    """A step that calls the agent tool ``agent`` with ``task``."""
    return [call(call_id, agent, {"task": task}), done(usage, TOOL_CALLS)]


def answer(value: str, usage: Usage) -> list[StreamPart]:
    return [text(value), done(usage)]


def three_levels() -> tuple[Agent, ScriptedModel, ScriptedModel, ScriptedModel]:
    """outer -> mid -> inner, each a scripted model with its own usage."""
    inner_model = ScriptedModel([answer("inner answer", Usage(4, 2))])
    inner = Agent(name="inner", model=inner_model, description="Answers the hardest part.")
    mid_model = ScriptedModel(
        [ask("m1", "inner", "the hard part", Usage(7, 3)), answer("mid answer", Usage(8, 1))]
    )
    mid = Agent(name="mid", model=mid_model, tools=[inner.as_tool()])
    outer_model = ScriptedModel(
        [ask("o1", "mid", "the whole task", Usage(10, 5)), answer("outer answer", Usage(20, 6))]
    )
    outer = Agent(name="outer", model=outer_model, tools=[mid.as_tool()])
    return outer, outer_model, mid_model, inner_model


def shape(part: StreamPart) -> tuple[Any, ...]:
    """A part as (path, kind, text or tool result content)."""
    inner = part.nested if part.nested is not None else part
    detail = inner.text or (inner.tool_result.content if inner.tool_result is not None else "")
    return (part.path, inner.kind.value, detail)


def test_a_nested_part_is_flat_and_checked() -> None:
    delta = StreamPart.text_delta("x")
    inner = StreamPart.nested_event(["m1"], delta)
    outer = StreamPart.nested_event(("o1",), inner)
    assert (outer.kind, outer.path, outer.nested) == (StreamPartKind.NESTED, ("o1", "m1"), delta)
    assert outer == StreamPart(StreamPartKind.NESTED, path=("o1", "m1"), nested=delta)
    with pytest.raises(ValueError, match="needs path"):
        StreamPart.nested_event((), delta)
    with pytest.raises(ValueError, match="not itself nested"):
        StreamPart(StreamPartKind.NESTED, path=("a",), nested=inner)
    with pytest.raises(ValueError, match="cannot carry agent"):
        StreamPart(StreamPartKind.TEXT_DELTA, text="x", agent="billing")
    with pytest.raises(ValueError, match="needs agent"):
        StreamPart(StreamPartKind.HANDOFF)


# --- Agent -------------------------------------------------------------------------------


def echo(request: Request) -> list[StreamPart]:
    """Answers with the request's system prompt and last user text."""
    last = request.messages[-1]
    return answer(f"{request.system}|{last.content[0].text}", Usage(1, 1))


def test_an_agent_is_a_thin_layer_over_loop_options() -> None:
    model = ScriptedModel([echo])
    agent = Agent(name="helper", model=model, system="be brief", step_limit=3)
    options = agent.options("hi", deps={"user": 7})
    assert options.messages == (user_message("hi"),)
    assert (options.system, options.step_limit, options.agent_name, options.deps) == (
        "be brief",
        3,
        "helper",
        {"user": 7},
    )
    result = agent.generate("hi")
    assert (result.text, result.agent) == ("be brief|hi", "helper")
    assert model.requests[0].messages == (user_message("hi"),)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"sytem": "x"}, r"^Agent 'helper': unknown override 'sytem' \(overrides are LoopOptions fields\)$"),
        ({"messages": []}, r"unknown override 'messages' \(pass the messages as the first argument\)$"),
        ({"agent_name": "x"}, r"unknown override 'agent_name' \(it is the agent's name\)$"),
        ({"step_limit": 0}, r"^LoopOptions.step_limit must be >= 1, got 0$"),
    ],
)
def test_a_bad_override_is_a_config_error_naming_it(override: dict[str, Any], message: str) -> None:
    agent = Agent(name="helper", model=ScriptedModel([]))
    with pytest.raises(ConfigError, match=message):
        agent.run("hi", **override)


def test_a_bad_agent_field_is_a_config_error_when_the_agent_is_made() -> None:
    with pytest.raises(
        ConfigError, match=r"^Agent 'helper': LoopOptions.output_mode must be 'native' or 'tool'"
    ):
        Agent(name="helper", model=ScriptedModel([]), output_mode="json")
    with pytest.raises(ConfigError, match=r"^Agent.name must be a str that is not blank, got ''$"):
        Agent(name="", model=ScriptedModel([]))


def test_an_agent_keeps_its_tools_when_the_callers_list_changes() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    tools: list[Any] = [ping]
    agent = Agent(name="helper", model=ScriptedModel([]), tools=tools)
    tools.append(ping)
    assert list(agent.tools) == ["ping"]
    twin = Agent(name="helper", model=agent.model, tools=[ping])
    assert agent != twin  # an agent is itself
    assert len({agent, twin, agent}) == 2
    with pytest.raises(AttributeError):
        agent.system = "changed"  # type: ignore[misc]  # frozen: the point of the test


def test_one_agent_serves_many_threads_at_once_each_with_its_own_result() -> None:
    runs = 32
    model = ScriptedModel([echo] * runs)
    agent = Agent(name="shared", model=model, system="default")
    results: dict[int, str] = {}

    def work(index: int) -> None:
        history = [user_message(f"question {index}")]
        results[index] = agent.generate(history, system=f"system {index}", deps=index).text

    together(runs, work)
    assert results == {index: f"system {index}|question {index}" for index in range(runs)}
    assert sorted(request.system for request in model.requests) == sorted(f"system {i}" for i in range(runs))
    assert agent.system == "default"


def test_one_agent_with_an_agent_tool_serves_many_threads_each_with_its_own_sub_run() -> None:
    runs = 16

    def lead_step(request: Request) -> list[StreamPart]:
        last = request.messages[-1]
        if last.role is Role.TOOL:  # the sub-run answered: say what it said
            result = last.content[0].tool_result
            assert result is not None
            return answer(f"lead: {result.content}", Usage(1, 1))
        question = last.content[0].text
        return ask("call_1", "echo", question, Usage(1, 1))  # the same call id in every run

    def echo_step(request: Request) -> list[StreamPart]:
        return answer(f"echo: {request.messages[-1].content[0].text}", Usage(1, 1))

    echo = Agent(name="echo", model=ScriptedModel([echo_step] * runs))
    lead = Agent(name="lead", model=ScriptedModel([lead_step] * (2 * runs)), tools=[echo.as_tool()])
    seen: dict[int, tuple[str, list[str], Usage]] = {}

    def work(index: int) -> None:
        reader = lead.run(f"question {index}")
        nested = [p.nested.text for p in reader if p.nested is not None and p.nested.text]
        result = reader.result()
        seen[index] = (result.text, nested, result.usage)

    together(runs, work)
    assert seen == {
        index: (f"lead: echo: question {index}", [f"echo: question {index}"], Usage(3, 3))
        for index in range(runs)
    }


def test_an_agent_keeps_a_conversation_in_a_session_given_as_an_override(tmp_path: Path) -> None:
    from agentcore.sessions import SQLiteSession

    model = ScriptedModel([echo, echo])
    agent = Agent(name="helper", model=model, system="s")
    session = SQLiteSession(tmp_path / "chat.db", "user-1")
    assert agent.generate("first", session=session).text == "s|first"
    assert agent.generate("second", session=session).text == "s|second"
    assert [m.role for m in model.requests[1].messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert len(session.messages()) == 4


def test_arun_gives_the_run_to_asyncio() -> None:
    agent = Agent(name="helper", model=ScriptedModel([echo]), system="async")

    async def main() -> tuple[list[str], str]:
        async with agent.arun("hi", buffer=4) as reader:
            kinds = [part.kind.value async for part in reader]
            result = await reader.result()
        return kinds, result.text

    assert asyncio.run(main()) == (["text-delta", "step-finish", "finish"], "async|hi")


# --- agents as tools ---------------------------------------------------------------------


def test_nested_parts_arrive_in_order_with_their_paths_through_three_levels() -> None:
    outer, _, mid_model, inner_model = three_levels()
    reader = outer.run("go")
    parts = list(reader)
    result = reader.result()
    assert [shape(part) for part in parts] == [
        ((), "tool-call", ""),
        ((), "step-finish", ""),
        (("o1",), "tool-call", ""),
        (("o1",), "step-finish", ""),
        (("o1", "m1"), "text-delta", "inner answer"),
        (("o1", "m1"), "step-finish", ""),
        (("o1", "m1"), "finish", ""),
        (("o1",), "tool-result", "inner answer"),
        (("o1",), "text-delta", "mid answer"),
        (("o1",), "step-finish", ""),
        (("o1",), "finish", ""),
        ((), "tool-result", "mid answer"),
        ((), "text-delta", "outer answer"),
        ((), "step-finish", ""),
        ((), "finish", ""),
    ]
    assert all(part.nested is None or part.nested.kind is not StreamPartKind.NESTED for part in parts)
    assert result.text == "outer answer"  # never a sub-run's text
    assert [r.tool_result.content for r in result.messages[2].content if r.tool_result] == ["mid answer"]
    # Each sub-run got its task as its one user message.
    assert mid_model.requests[0].messages == (user_message("the whole task"),)
    assert inner_model.requests[0].messages == (user_message("the hard part"),)
    nested = part_to_dict(parts[4])
    assert nested == {
        "kind": "nested",
        "path": ["o1", "m1"],
        "part": {"kind": "text-delta", "text": "inner answer"},
    }


def test_usage_of_sub_runs_rolls_up_into_the_calling_runs() -> None:
    outer, *_ = three_levels()
    reader = outer.run("go")
    parts = list(reader)
    result = reader.result()
    own = Usage(10, 5) + Usage(20, 6)
    mid = Usage(7, 3) + Usage(8, 1)
    inner = Usage(4, 2)
    assert result.usage == own + mid + inner == Usage(49, 17)
    assert parts[-1].total_usage == result.usage
    assert sum((step.usage for step in result.steps), Usage()) == own
    assert result.usage_by_model == {"scripted": own}
    # The mid run's own finish part counts the inner run.
    mid_finish = [p.nested for p in parts if p.path == ("o1",) and p.nested and p.nested.terminal]
    assert [finish.total_usage for finish in mid_finish] == [mid + inner]
    assert result.sub_run_cost is None
    assert result.cost is None


def test_the_cost_of_a_priced_sub_run_is_in_the_calling_runs_cost() -> None:
    inner_usage, outer_usages = Usage(1200, 40), (Usage(900, 30), Usage(1000, 50))
    inner = Agent(
        name="inner", model=ScriptedModel([answer("42", inner_usage)], model_id=HAIKU, base_url=ANTHROPIC)
    )
    outer = Agent(
        name="outer",
        model=ScriptedModel(
            [ask("o1", "inner", "compute", outer_usages[0]), answer("it is 42", outer_usages[1])],
            model_id=HAIKU,
            base_url=ANTHROPIC,
        ),
        tools=[inner.as_tool()],
    )
    result = outer.generate("go")
    inner_cost = price_usage(inner_usage, HAIKU, ANTHROPIC)
    own_cost = price_usage(outer_usages[0], HAIKU, ANTHROPIC) + price_usage(outer_usages[1], HAIKU, ANTHROPIC)
    assert inner_cost > 0
    assert result.sub_run_cost == inner_cost
    assert result.cost == own_cost + inner_cost


def test_a_resumed_durable_run_keeps_its_sub_runs_usage_and_cost(tmp_path: Path) -> None:
    from agentcore.durable import RunState

    inner_usage = Usage(1200, 40)
    inner_model = ScriptedModel([answer("42", inner_usage)], model_id=HAIKU, base_url=ANTHROPIC)
    inner = Agent(name="inner", model=inner_model)
    down = ModelError(ErrorClass.AUTH, message="down")
    outer_model = ScriptedModel(
        [ask("o1", "inner", "compute", Usage(900, 30)), down, answer("it is 42", Usage(1000, 50))],
        model_id=HAIKU,
        base_url=ANTHROPIC,
    )
    outer = Agent(name="outer", model=outer_model, tools=[inner.as_tool()])
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    with pytest.raises(RunError):
        outer.generate("go", run_id="r1", checkpoints=store)
    saved = store.load("r1")
    assert saved is not None
    inner_cost = price_usage(inner_usage, HAIKU, ANTHROPIC)
    assert saved.sub_run_cost == inner_cost
    assert RunState.from_dict(json.loads(json.dumps(saved.to_dict()))).sub_run_cost == inner_cost
    assert saved.usage == Usage(900, 30) + inner_usage
    resumed = outer.generate([], run_id="r1", checkpoints=store)
    assert resumed.text == "it is 42"
    assert resumed.sub_run_cost == inner_cost
    assert resumed.usage == Usage(900 + 1200 + 1000, 30 + 40 + 50)
    assert len(inner_model.requests) == 1  # the agent tool's saved result is not run again
    unpriced = RunState("r2", [user_message("x")], sub_run_cost=None)
    assert "sub_run_cost" not in RunState("r3", [user_message("x")]).to_dict()
    assert RunState.from_dict(unpriced.to_dict()).sub_run_cost is None


def test_a_parents_token_limit_counts_what_its_sub_runs_used() -> None:
    from agentcore import UsageLimits

    inner = Agent(name="inner", model=ScriptedModel([answer("big", Usage(500, 500))]))
    outer_model = ScriptedModel([ask("o1", "inner", "go big", Usage(10, 5)), answer("never", Usage(1, 1))])
    outer = Agent(
        name="outer", model=outer_model, tools=[inner.as_tool()], limits=UsageLimits(total_tokens=800)
    )
    result = outer.generate("go")
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit is not None
    assert result.limit.kind == "total_tokens"
    assert len(outer_model.requests) == 1  # the second request would go over: never sent


def test_a_parents_token_limit_bounds_a_sub_run_while_it_runs() -> None:
    from agentcore import UsageLimits

    @tool
    def dig() -> str:
        """Dig."""
        return "found"

    inner_model = ScriptedModel(
        [[call("i1", "dig"), done(Usage(100, 20), TOOL_CALLS)], answer("x", Usage(1, 1))]
    )
    inner = Agent(name="inner", model=inner_model, tools=[dig], limits=UsageLimits(output_tokens=500))
    outer_model = ScriptedModel([ask("o1", "inner", "dig", Usage(20, 10)), answer("done", Usage(1, 1))])
    outer = Agent(
        name="outer", model=outer_model, tools=[inner.as_tool()], limits=UsageLimits(total_tokens=200)
    )
    result = outer.generate("go")
    # The sub-run had 200 - 30 = 170 left; its second request would send 100 prompt tokens more: 220.
    assert len(inner_model.requests) == 1
    refused = outer_model.requests[1].messages[-1].content[0].tool_result
    assert refused is not None
    assert refused.content == (
        "Error: AgentcoreError: agent 'inner' did not finish: the total_tokens limit (170) was reached: "
        "the next request would go over it (220)"
    )
    assert (result.text, result.usage) == ("done", Usage(121, 31))


def test_the_depth_limit_gives_an_error_result_and_starts_nothing() -> None:
    deepest_model = ScriptedModel([])
    deepest = Agent(name="deepest", model=deepest_model)
    mid_model = ScriptedModel([ask("m1", "deepest", "dig", Usage(1, 1)), answer("stopped", Usage(1, 1))])
    mid = Agent(name="mid", model=mid_model, tools=[deepest.as_tool(max_depth=1)])
    outer = Agent(
        name="outer",
        model=ScriptedModel([ask("o1", "mid", "dig deep", Usage(1, 1)), answer("ok", Usage(1, 1))]),
        tools=[mid.as_tool()],
    )
    result = outer.generate("go")
    assert result.text == "ok"
    assert deepest_model.requests == []
    refused = mid_model.requests[1].messages[-1].content[0].tool_result
    assert refused is not None
    assert refused.is_error
    assert refused.content == (
        "Error: AgentcoreError: agent 'deepest' not run: sub-runs nest at most 1 deep "
        "(Agent.as_tool(max_depth=...))"
    )
    with pytest.raises(ConfigError, match=r"max_depth=...\) must be an int >= 1, got 0"):
        deepest.as_tool(max_depth=0)


def test_a_failed_sub_run_is_an_error_result_the_parent_reads() -> None:
    broken = Agent(name="broken", model=ScriptedModel([ModelError(ErrorClass.AUTH, message="bad key")]))
    outer_model = ScriptedModel([ask("o1", "helper", "try", Usage(1, 1)), answer("recovered", Usage(1, 1))])
    outer = Agent(name="outer", model=outer_model, tools=[broken.as_tool("helper", "Helps.")])
    result = outer.generate("go")
    assert result.text == "recovered"
    failed = outer_model.requests[1].messages[-1].content[0].tool_result
    assert failed is not None
    assert failed.is_error
    assert failed.name == "helper"
    assert failed.content.startswith("Error: AgentcoreError: agent 'broken' failed: ")
    assert "bad key" in failed.content
    assert outer_model.requests[0].tools[0].description == "Helps."


def test_a_typed_sub_run_answer_is_its_json() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    inner = Agent(name="counter", model=ScriptedModel([answer('{"n": 3}', Usage(1, 1))]), output_type=schema)
    tooled = Agent(
        name="tooled",
        model=ScriptedModel([[call("f1", "final_answer", {"n": 4}), done(Usage(1, 1), TOOL_CALLS)]]),
        output_type=schema,
        output_mode="tool",
    )
    outer_model = ScriptedModel(
        [
            [
                call("a", "counter", {"task": "count"}),
                call("b", "tooled", {"task": "count"}),
                done(Usage(1, 1)),
            ],
            answer("ok", Usage(1, 1)),
        ]
    )
    Agent(name="outer", model=outer_model, tools=[inner.as_tool(), tooled.as_tool()]).generate("go")
    results = [part.tool_result for part in outer_model.requests[1].messages[-1].content]
    assert [(r.content, r.is_error) for r in results if r is not None] == [
        ('{"n": 3}', False),
        ('{"n": 4}', False),
    ]


def test_a_cancel_of_the_outer_run_reaches_the_innermost_through_three_levels() -> None:
    entered = threading.Event()
    seen: list[BaseException | None] = []
    contexts: list[Context] = []

    def wait_for_cancel(request: Request, ctx: Context) -> Iterable[StreamPart]:
        contexts.append(ctx)
        entered.set()
        ctx.wait()  # no timeout: only the cancel, through the chain of contexts, ends it
        seen.append(ctx.err)
        ctx.check()
        return []

    inner = Agent(name="inner", model=ScriptedModel([wait_for_cancel]))
    mid = Agent(
        name="mid", model=ScriptedModel([ask("m1", "inner", "wait", Usage(2, 2))]), tools=[inner.as_tool()]
    )
    outer = Agent(
        name="outer", model=ScriptedModel([ask("o1", "mid", "wait", Usage(3, 3))]), tools=[mid.as_tool()]
    )
    caller = Context()
    reader = outer.run("go", caller)
    for part in reader:  # up to the mid step's end: its usage is the outer run's by then
        if (
            part.path == ("o1",)
            and part.nested is not None
            and part.nested.kind is StreamPartKind.STEP_FINISH
        ):
            break
    assert entered.wait(30)  # a safety net for a broken test, not a measure of speed
    caller.cancel()
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert isinstance(info.value.err, Canceled)
    # The inner model's context is a descendant of the caller's: cancelled by it.
    assert contexts[0].cancelled
    assert isinstance(contexts[0].err, Canceled)
    assert info.value.usage == Usage(5, 5)  # the outer step and the mid step that ran


def test_a_sub_run_cancelled_by_the_outer_deadline_ends_the_outer_run_as_cancelled() -> None:
    from agentcore import ManualClock
    from agentcore.errors import DeadlineExceeded

    clock = ManualClock()
    entered = threading.Event()

    def wait_for_cancel(request: Request, ctx: Context) -> Iterable[StreamPart]:
        entered.set()
        ctx.wait()
        ctx.check()
        return []

    inner = Agent(name="inner", model=ScriptedModel([wait_for_cancel]))
    outer = Agent(
        name="outer", model=ScriptedModel([ask("o1", "inner", "wait", Usage(1, 1))]), tools=[inner.as_tool()]
    )
    reader = outer.run("go", Context(timeout=60, clock=clock))
    assert entered.wait(30)
    clock.advance(60)
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert isinstance(info.value.err, DeadlineExceeded)


# --- handoffs ----------------------------------------------------------------------------


def handoff_agents(
    triage_steps: list[Any], billing_steps: list[Any] | None = None
) -> tuple[Agent, ScriptedModel, ScriptedModel, list[str]]:
    looked_up: list[str] = []

    @tool
    def lookup(order: str) -> str:
        """Look an order up."""
        looked_up.append(order)
        return f"order {order}: shipped"

    @tool
    def refund(order: str) -> str:
        """Refund an order."""
        return "refunded"

    billing_model = ScriptedModel(billing_steps or [answer("billing here", Usage(5, 5))])
    billing = Agent(
        name="billing",
        model=billing_model,
        system="You handle billing.",
        tools=[refund],
        description="Questions about invoices.",
    )
    refunds = Agent(name="refunds", model=ScriptedModel([]), system="You handle refunds.")
    triage_model = ScriptedModel(triage_steps)
    triage = Agent(
        name="triage",
        model=triage_model,
        system="You route.",
        tools=[lookup, handoff(billing), handoff(refunds, description="Refunds.")],
    )
    return triage, triage_model, billing_model, looked_up


def test_a_handoff_in_the_middle_of_a_tool_step() -> None:
    step = [
        call("c1", "lookup", {"order": "A1"}),
        call("c2", "transfer_to_billing"),
        call("c3", "transfer_to_refunds"),
        done(Usage(3, 3), TOOL_CALLS),
    ]
    triage, triage_model, billing_model, looked_up = handoff_agents([step])
    reader = triage.run("my invoice is wrong")
    parts = list(reader)
    result = reader.result()
    assert [part.kind.value for part in parts] == [
        "tool-call",
        "tool-call",
        "tool-call",
        "step-finish",
        "tool-result",
        "tool-result",
        "tool-result",
        "handoff",
        "text-delta",
        "step-finish",
        "finish",
    ]
    assert parts[7].agent == "billing"
    assert part_to_dict(parts[7]) == {"kind": "handoff", "agent": "billing"}
    results = [part.tool_result for part in parts if part.tool_result is not None]
    assert [(r.content, r.is_error) for r in results] == [
        ("order A1: shipped", False),
        ("Handed off to billing.", False),
        (
            "Error: AgentcoreError: not handed off to 'refunds': the run is already handed off to "
            "'billing' in this step.",
            True,
        ),
    ]
    assert looked_up == ["A1"]  # the other calls of the step still ran
    assert (result.agent, result.text, result.usage) == ("billing", "billing here", Usage(8, 8))
    sent = billing_model.requests[0]
    assert sent.system == "You handle billing."
    assert [t.name for t in sent.tools] == ["refund"]
    assert sent.messages == result.messages[:3]  # the history so far, whole
    assert len(triage_model.requests) == 1


def test_the_agent_handed_to_gives_its_typed_answer_and_its_prepare_step_runs() -> None:
    from agentcore import StepDraft, StepPlan

    drafts: list[tuple[int, str]] = []

    def prepare(draft: StepDraft) -> StepPlan | None:
        drafts.append((draft.number, draft.system))
        return None

    schema = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
    billing_model = ScriptedModel([answer('{"total": 12}', Usage(2, 2))])
    billing = Agent(
        name="billing", model=billing_model, system="Totals.", output_type=schema, prepare_step=prepare
    )
    triage = Agent(
        name="triage",
        model=ScriptedModel([[call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]]),
        tools=[handoff(billing)],
    )
    result = triage.generate("what do I owe?")
    assert (result.agent, result.output) == ("billing", {"total": 12})
    assert drafts == [(2, "Totals.")]
    sent = billing_model.requests[0]
    assert sent.output is not None
    assert json.loads(sent.output.schema) == schema


def test_agent_tools_run_in_parallel_and_both_roll_up() -> None:
    first = Agent(name="first", model=ScriptedModel([answer("one", Usage(3, 1))]))
    second = Agent(name="second", model=ScriptedModel([answer("two", Usage(5, 2))]))
    outer_model = ScriptedModel(
        [
            [
                call("a", "first", {"task": "x"}),
                call("b", "second", {"task": "y"}),
                done(Usage(1, 1), TOOL_CALLS),
            ],
            answer("both", Usage(1, 1)),
        ]
    )
    outer = Agent(
        name="outer", model=outer_model, tools=[first.as_tool(), second.as_tool()], parallel_tools=True
    )
    reader = outer.run("go")
    parts = list(reader)
    result = reader.result()
    assert result.usage == Usage(10, 5)
    for call_id, said in (("a", "one"), ("b", "two")):
        mine = [p.nested for p in parts if p.path == (call_id,) and p.nested is not None]
        assert [(n.kind.value, n.text) for n in mine] == [
            ("text-delta", said),
            ("step-finish", ""),
            ("finish", ""),
        ]
    results = [p.tool_result.content for p in parts if p.tool_result is not None]
    assert results == ["one", "two"]


def test_a_handoff_keeps_the_runs_history_policy() -> None:
    from agentcore.compaction import SlidingWindow

    step = [call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]
    triage, triage_model, billing_model, _ = handoff_agents([step])
    history = [user_message(f"message {n}: " + "word " * 400) for n in range(6)]
    result = triage.generate(history, history_policy=SlidingWindow(max_tokens=1500))
    assert result.agent == "billing"
    sent = billing_model.requests[0]
    assert sent.system == "You handle billing."
    assert len(result.full_messages) == 9  # six, the handoff call, its result, billing's answer
    assert len(sent.messages) < 8  # the run's policy cut the history sent to the new agent too
    assert sent.messages[-2:] == result.full_messages[-3:-1]
    assert len(triage_model.requests[0].messages) < 6


def test_agents_hand_off_back_and_forth_through_a_function() -> None:
    to_billing = [call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]
    back = [call("c2", "transfer_to_triage"), done(Usage(2, 2), TOOL_CALLS)]
    billing_model = ScriptedModel([back])
    billing = Agent(
        name="billing", model=billing_model, tools=[handoff(lambda: triage, name="transfer_to_triage")]
    )
    triage_model = ScriptedModel([to_billing, answer("back with triage", Usage(3, 3))])
    triage = Agent(name="triage", model=triage_model, tools=[handoff(billing)], system="You route.")
    reader = triage.run("hi")
    agents = [part.agent for part in reader if part.kind is StreamPartKind.HANDOFF]
    result = reader.result()
    assert agents == ["billing", "triage"]
    assert (result.agent, result.text, result.usage) == ("triage", "back with triage", Usage(6, 6))
    assert triage_model.requests[1].system == "You route."
    with pytest.raises(ConfigError, match=r"^handoff\(function\) needs name="):
        handoff(lambda: triage)
    broken = handoff(lambda: "triage", name="transfer_to_nobody")  # type: ignore[arg-type,return-value]  # a wrong type on purpose
    with pytest.raises(Exception, match="needs an Agent, its function gave str"):
        broken.agent  # noqa: B018 - the property raises


def test_a_run_without_a_handoff_names_its_own_agent() -> None:
    triage, *_ = handoff_agents([answer("routed nowhere", Usage(1, 1))])
    assert triage.generate("hi").agent == "triage"


def test_a_durable_run_resumes_with_the_agent_in_charge(tmp_path: Path) -> None:
    step = [call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]
    down = ModelError(ErrorClass.AUTH, message="billing is down")
    triage, _, billing_model, _ = handoff_agents([step], [down, answer("billing is back", Usage(2, 2))])
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    with pytest.raises(RunError) as info:
        triage.generate("invoice", run_id="r1", checkpoints=store)
    assert isinstance(info.value.err, ModelError)
    resumed = triage.generate([], run_id="r1", checkpoints=store)
    assert (resumed.agent, resumed.text) == ("billing", "billing is back")
    assert [request.system for request in billing_model.requests] == ["You handle billing."] * 2


def test_a_step_runner_without_checkpoints_is_refused_for_an_agent_that_can_hand_off() -> None:
    from agentcore.durable import DirectRunner

    triage, *_ = handoff_agents([])
    with pytest.raises(
        ConfigError, match=r"^Agent 'triage' can hand off: a run with a step_runner needs checkpoints="
    ):
        triage.run("hi", step_runner=DirectRunner())
    plain = Agent(name="plain", model=ScriptedModel([answer("ok", Usage(1, 1))]))
    assert plain.generate("hi", step_runner=DirectRunner()).text == "ok"


def test_a_handoff_across_providers_sends_no_reasoning_to_the_other_provider() -> None:
    anthropic_step = (FIXTURES / "anthropic" / "thinking_then_tool_empty_args.sse").read_bytes()
    chat_step = (FIXTURES / "openai_chat" / "text_usage_in_final_chunk_gpt4o.sse").read_bytes()
    server = LocalServer([Reply(actions=[anthropic_step]), Reply(actions=[chat_step])])
    try:
        support = Agent(
            name="support",
            model=OpenAIChatModel("gpt-4o", api_key="k", base_url=server.url + "/v1"),
            system="You are support.",
        )
        triage = Agent(
            name="triage",
            model=AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=server.url),
            tools=[handoff(support, name="fixed_version")],  # the recorded call's tool name
        )
        reader = triage.run("Which version is fixed?")
        parts = list(reader)
        result = reader.result()
    finally:
        server.close()
    first, second = server.requests
    assert first["path"] == "/v1/messages"
    assert second["path"] == "/v1/chat/completions"
    assert any(part.kind is StreamPartKind.REASONING for part in parts)
    assert [p.agent for p in parts if p.kind is StreamPartKind.HANDOFF] == ["support"]
    assert result.agent == "support"
    assert result.steps[0].reasoning  # the Anthropic step reasoned, and the history keeps it
    kept = result.messages[1]
    assert kept.role is Role.ASSISTANT
    assert any(part.reasoning is not None for part in kept.content)
    body = second["body"]
    assert body["messages"][0] == {"role": "system", "content": "You are support."}
    assistant = body["messages"][2]
    assert assistant["role"] == "assistant"
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["fixed_version"]
    assert body["messages"][3]["role"] == "tool"
    assert body["messages"][3]["content"] == "Handed off to support."
    raw = second["raw"].decode()
    signature = result.steps[0].reasoning[0].signature
    assert signature
    assert signature not in raw
    assert result.steps[0].reasoning[0].text not in raw
    assert "thinking" not in raw
    assert "reasoning" not in raw
    assert result.usage == result.steps[0].usage + result.steps[1].usage


def chat_body(usage: tuple[int, int], *, said: str = "", calls: str = "", arguments: str = "{}") -> bytes:
    """A Chat Completions stream (the documented chunk shapes): text, or one
    call of the tool ``calls``; then the finish reason, the usage chunk, ``[DONE]``."""
    delta: dict[str, Any] = (
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": calls, "arguments": arguments},
                }
            ]
        }
        if calls
        else {"content": said}
    )
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", **delta}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]}},
    ]
    return (
        b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    )


def test_an_agent_tool_end_to_end_through_two_real_adapters() -> None:
    anthropic_text = (FIXTURES / "anthropic" / "text_basic_sonnet45.sse").read_bytes()
    task = json.dumps({"task": "Write a haiku."})
    server = LocalServer(
        [
            Reply(actions=[chat_body((30, 8), calls="writer", arguments=task)]),
            Reply(actions=[anthropic_text]),
            Reply(actions=[chat_body((60, 4), said="Done.")]),
        ]
    )
    try:
        writer = Agent(
            name="writer", model=AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
        )
        lead = Agent(
            name="lead",
            model=OpenAIChatModel("gpt-4o-mini", api_key="k", base_url=server.url + "/v1"),
            tools=[writer.as_tool()],
        )
        reader = lead.run("Write something.")
        parts = list(reader)
        result = reader.result()
    finally:
        server.close()
    nested = [part.nested for part in parts if part.nested is not None]
    assert {part.path for part in parts if part.nested is not None} == {("call_1",)}
    sub_text = "".join(n.text for n in nested if n.kind is StreamPartKind.TEXT_DELTA)
    assert sub_text
    [sub_finish] = [n for n in nested if n.kind is StreamPartKind.FINISH]
    tool_result = next(part.tool_result for part in parts if part.tool_result is not None)
    assert tool_result.content == sub_text
    assert sub_finish.total_usage.input > 0
    assert result.usage == Usage(30, 8) + sub_finish.total_usage + Usage(60, 4)
    assert result.text == "Done."
    assert server.requests[1]["body"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Write a haiku."}]}
    ]


def test_a_cancel_closes_a_real_stream_three_levels_down() -> None:
    inner_asked = threading.Event()
    ask_mid = json.dumps({"task": "ask inner"})
    ask_inner = json.dumps({"task": "wait"})
    message_start = (
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":7}}}\n\n'
    )

    def respond(request: dict[str, Any]) -> Reply:
        if request["path"] == "/v1/messages":  # the innermost agent: starts its answer, then nothing
            inner_asked.set()
            return Reply(actions=[message_start, Stall()])
        if request["body"]["model"] == "gpt-outer":
            return Reply(actions=[chat_body((3, 3), calls="mid", arguments=ask_mid)])
        return Reply(actions=[chat_body((2, 2), calls="inner", arguments=ask_inner)])

    server = LocalServer(responder=respond)
    try:
        chat = server.url + "/v1"
        inner = Agent(
            name="inner", model=AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=server.url)
        )
        mid = Agent(
            name="mid", model=OpenAIChatModel("gpt-mid", api_key="k", base_url=chat), tools=[inner.as_tool()]
        )
        outer = Agent(
            name="outer",
            model=OpenAIChatModel("gpt-outer", api_key="k", base_url=chat),
            tools=[mid.as_tool()],
        )
        caller = Context()
        reader = outer.run("go", caller)
        assert inner_asked.wait(30)  # a safety net, not a measure of speed
        caller.cancel()
        with pytest.raises(RunError) as info:
            reader.result()
        # The innermost stream's socket is closed by the cancel (the server sees the client go).
        assert wait_until(lambda: server.disconnects == 1, timeout=5.0)
    finally:
        server.close()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert [request["path"] for request in server.requests] == [
        "/v1/chat/completions",
        "/v1/chat/completions",
        "/v1/messages",
    ]


def test_handoff_checks_its_input() -> None:
    with pytest.raises(ConfigError, match=r"^handoff\(\) needs an Agent or a function giving one, got str$"):
        handoff("billing")  # type: ignore[arg-type]  # a wrong type on purpose
    agent = Agent(name="billing", model=ScriptedModel([]), description="Invoices.")
    made = handoff(agent)
    assert (made.definition.name, made.definition.description) == ("transfer_to_billing", "Invoices.")
    with pytest.raises(Exception, match="works only inside a run"):
        made.execute({}, Context())


# --- found by a new user: cost limits, handoff checks, names, approval, empty input, sessions ---


def test_a_parents_cost_limit_bounds_a_sub_run_and_counts_its_cost() -> None:
    from agentcore import UsageLimits

    @tool
    def dig() -> str:
        """Dig."""
        return "found"

    inner_model = ScriptedModel(
        [[call("i1", "dig"), done(Usage(6_000_000, 0), TOOL_CALLS)], answer("dug", Usage(6_000_000, 0))],
        model_id=HAIKU,
        base_url=ANTHROPIC,
    )
    inner = Agent(name="inner", model=inner_model, tools=[dig])
    lead_model = ScriptedModel(
        [ask("o1", "inner", "dig", Usage(90, 0)), answer("never", Usage(1, 1))],
        model_id=HAIKU,
        base_url=ANTHROPIC,
    )
    lead = Agent(name="lead", model=lead_model, tools=[inner.as_tool()], limits=UsageLimits(cost=0.01))
    result = lead.generate("go")
    own, sub = price_usage(Usage(90, 0), HAIKU, ANTHROPIC), price_usage(Usage(6_000_000, 0), HAIKU, ANTHROPIC)
    assert (own, sub) == (Decimal("0.00009"), Decimal(6))
    # The sub-run ran with what the lead had left (0.01 - 0.00009): its first step went over it.
    assert len(inner_model.requests) == 1
    refused = result.messages[2].content[0].tool_result
    assert refused is not None
    assert refused.content == (
        "Error: AgentcoreError: agent 'inner' did not finish: the cost limit (0.00991) was reached: "
        "the run went over it (6.00)"
    )
    # The lead counts the sub-run's cost: its next request is never sent.
    assert len(lead_model.requests) == 1
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit is not None
    assert (result.limit.kind, result.limit.count) == ("cost", own + sub)
    assert (result.sub_run_cost, result.cost) == (sub, own + sub)


def test_a_sub_agent_without_a_price_under_a_cost_limit_is_refused() -> None:
    from agentcore import UsageLimits

    inner_model = ScriptedModel([answer("free", Usage(1, 1))], model_id="my-own-model", base_url="http://x")
    inner = Agent(name="inner", model=inner_model)
    lead_model = ScriptedModel(
        [ask("o1", "inner", "go", Usage(90, 0)), answer("fine", Usage(1, 1))],
        model_id=HAIKU,
        base_url=ANTHROPIC,
    )
    lead = Agent(name="lead", model=lead_model, tools=[inner.as_tool()], limits=UsageLimits(cost=1))
    result = lead.generate("go")
    assert inner_model.requests == []
    refused = result.messages[2].content[0].tool_result
    assert refused is not None
    assert refused.content.startswith(
        "Error: ConfigError: UsageLimits(cost=...) cannot be kept: no price for ScriptedModel('my-own-model'"
    )
    assert (result.text, result.sub_run_cost) == ("fine", Decimal(0))


def test_a_broken_handoff_function_is_a_config_error_when_the_run_starts() -> None:
    def raises() -> Agent:
        raise LookupError("no such agent")

    for target, why in (
        (lambda: 42, "its function gave int"),
        (raises, "its function raised LookupError: no such agent"),
    ):
        model = ScriptedModel([])
        inner = Agent(name="inner", model=model, tools=[handoff(target, name="go")])  # type: ignore[arg-type]  # a wrong type on purpose
        outer = Agent(name="outer", model=ScriptedModel([]), tools=[handoff(inner)])
        for agent in (inner, outer):  # the handoffs the run may reach, at any depth
            with pytest.raises(
                ConfigError, match=rf"^Agent 'inner': the handoff 'go' needs an Agent, {why}$"
            ):
                agent.run("hi")
            with pytest.raises(ConfigError, match="the handoff 'go' needs an Agent"):
                agent.options("hi")
        assert model.requests == []


def test_default_tool_names_of_an_agent_with_any_name_are_valid() -> None:
    bot = Agent(name="Research Bot (v2)", model=ScriptedModel([]))
    assert bot.as_tool().definition.name == "Research_Bot__v2_"
    assert handoff(bot).definition.name == "transfer_to_Research_Bot__v2_"
    long = Agent(name="é" * 100, model=ScriptedModel([]))
    assert long.as_tool().definition.name == "_" * 64
    assert handoff(long).definition.name == "transfer_to_" + "_" * 52
    for make in (lambda: bot.as_tool("Research Bot"), lambda: handoff(bot, name="Research Bot")):
        with pytest.raises(ConfigError, match="tool name 'Research Bot' must be 1 to 64 letters"):
            make()


def test_as_tool_refuses_an_agent_with_a_tool_that_needs_approval() -> None:
    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    @tool(requires_approval=lambda arguments: arguments["amount"] > 100)
    def refund(amount: int) -> str:
        """Refund."""
        return "refunded"

    @tool
    def look() -> str:
        """Look."""
        return "seen"

    assert (pay.requires_approval, look.requires_approval) == (True, False)
    for asking in (pay, refund):
        cashier = Agent(name="cashier", model=ScriptedModel([]), tools=[look, asking])
        name = asking.definition.name
        message = (
            rf"^Agent\.as_tool\(\): agent 'cashier' has the tool '{name}' that needs approval: "
            "a sub-run cannot ask a human"
        )
        with pytest.raises(ConfigError, match=message):
            cashier.as_tool()
        front = Agent(name="front", model=ScriptedModel([]), tools=[handoff(cashier)])
        with pytest.raises(ConfigError, match="agent 'cashier' has the tool"):
            front.as_tool()  # the agents its handoffs reach too
    assert Agent(name="reader", model=ScriptedModel([]), tools=[look]).as_tool().definition.name == "reader"


@pytest.mark.parametrize("messages", ["", "  \n\t"])
def test_an_empty_text_is_a_config_error(messages: str) -> None:
    model = ScriptedModel([])
    agent = Agent(name="helper", model=model)
    with pytest.raises(ConfigError, match=r"^Agent 'helper': the message is empty"):
        agent.run(messages)
    with pytest.raises(ConfigError, match="the message is empty"):
        agent.generate(messages)
    assert model.requests == []


def test_a_session_continues_with_the_agent_the_last_turn_handed_off_to(tmp_path: Path) -> None:
    import agentcore
    from agentcore.sessions import SQLiteSession

    to_billing = [call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]
    triage, triage_model, billing_model, _ = handoff_agents(
        [to_billing, answer("triage again", Usage(1, 1))],
        [answer("billing here", Usage(5, 5)), answer("still billing", Usage(2, 2))],
    )
    session = SQLiteSession(tmp_path / "chat.db", "user-1")
    first = triage.generate("my invoice", session=session)
    second = triage.generate("and the next one?", session=session)
    assert (first.agent, second.agent) == ("billing", "billing")
    assert second.text == "still billing"
    assert billing_model.requests[1].system == "You handle billing."
    assert billing_model.requests[1].messages[-1] == user_message("and the next one?")
    assert len(triage_model.requests) == 1
    # agentcore.run of the agent's own options starts over with the first agent.
    third = agentcore.generate(triage.options("start over", session=session))
    assert (third.agent, third.text) == ("triage", "triage again")
    other = SQLiteSession(tmp_path / "chat.db", "user-2")  # a new conversation: the first agent
    assert handoff_agents([answer("hello", Usage(1, 1))])[0].generate("hi", session=other).agent == "triage"


def test_a_chat_that_sends_its_history_back_continues_with_the_agent_it_was_handed_to() -> None:
    # A chat front end keeps no session: the client sends the whole history, handoff included.
    to_billing = [call("c1", "transfer_to_billing"), done(Usage(1, 1), TOOL_CALLS)]
    triage, triage_model, billing_model, _ = handoff_agents(
        [to_billing], [answer("billing here", Usage(5, 5)), answer("still billing", Usage(2, 2))]
    )
    first = triage.generate("my invoice")
    history = [*first.messages, user_message("and the next one?")]
    second = triage.generate(history)
    assert (first.agent, second.agent) == ("billing", "billing")
    assert second.text == "still billing"
    assert billing_model.requests[1].messages == tuple(history)
    assert len(triage_model.requests) == 1


def test_a_run_checks_the_agents_its_agent_tools_reach_when_it_starts() -> None:
    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    # A handoff function: as_tool() cannot see the agent yet, the run's start can.
    front = Agent(name="front", model=ScriptedModel([]), tools=[handoff(lambda: cashier, name="to_cashier")])
    cashier = Agent(name="cashier", model=ScriptedModel([]), tools=[pay])
    lead_model = ScriptedModel([])
    lead = Agent(name="lead", model=lead_model, tools=[front.as_tool()])
    with pytest.raises(
        ConfigError,
        match=r"^Agent 'cashier' runs in a sub-run \(an agent tool\) and has the tool 'pay' that needs "
        "approval: a sub-run cannot ask a human",
    ):
        lead.run("hi")
    broken = Agent(name="broken", model=ScriptedModel([]), tools=[handoff(lambda: 42, name="go")])  # type: ignore[arg-type,return-value]  # a wrong type on purpose
    caller = Agent(name="caller", model=lead_model, tools=[broken.as_tool()])
    with pytest.raises(
        ConfigError, match=r"^Agent 'broken': the handoff 'go' needs an Agent, its function gave int$"
    ):
        caller.run("hi")
    assert lead_model.requests == []
