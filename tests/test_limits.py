"""Usage limits (agentcore/limits.py; design.md, loop rule 16): every limit
at its edge, exactly at it and one over, through ``run()``.

The script most tests run: two steps that each call ``ping`` (prompt 100,
then 150 tokens; 10 output tokens each), then a text answer (prompt 200,
5 output tokens).
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    ErrorClass,
    FallbackModel,
    FinishReason,
    LimitReached,
    LoopOptions,
    Message,
    ModelError,
    OutputValidationError,
    RunError,
    StepDraft,
    StepPlan,
    StreamPart,
    ToolCall,
    Usage,
    UsageLimits,
    aio,
    generate,
    run,
    user_message,
)
from agentcore.compaction import HistoryEdit, HistoryState, SlidingWindow
from agentcore.cost import price_usage
from agentcore.durable import SQLiteCheckpoints
from agentcore.limits import prompt_tokens
from agentcore.testing import ScriptedModel
from agentcore.types import Role, StreamPartKind
from tests.loop_helpers import FuncTool, assert_valid_history, call, text_step, tool_step

ANTHROPIC = "https://api.anthropic.com"
HAIKU = "claude-haiku-4-5"
USAGES = (Usage(input=100, output=10), Usage(input=150, output=10), Usage(input=200, output=5))


def script(*calls_per_step: int) -> list[list[StreamPart]]:
    """Steps that call ``ping`` as many times as given each, then a text answer."""
    steps: list[list[StreamPart]] = []
    for number, count in enumerate(calls_per_step):
        calls = [call(f"c{number}.{i}", "ping") for i in range(count)]
        steps.append(tool_step(*calls, usage=USAGES[number]))
    steps.append(text_step("done", usage=USAGES[len(calls_per_step)]))
    return steps


def limited(limits: UsageLimits, *calls_per_step: int, **kwargs: Any) -> tuple[Any, FuncTool]:
    """Run :func:`script` with ``limits``; the result (or the RunError) and the tool."""
    ping = FuncTool("ping")
    model = ScriptedModel(script(*(calls_per_step or (1, 1))), model_id=HAIKU, base_url=ANTHROPIC)
    options = LoopOptions(model=model, messages=[user_message("hi")], tools=[ping], limits=limits, **kwargs)
    return generate(options), ping


def refused(messages: tuple[Message, ...]) -> list[str]:
    """The contents of the error results that say a limit kept a call from running."""
    return [
        result.content
        for message in messages
        if message.role is Role.TOOL
        for result in message.tool_results
        if "not run: the" in result.content
    ]


# --- requests ---------------------------------------------------------------------------------


def test_requests_exactly_at_the_limit_finish() -> None:
    result, ping = limited(UsageLimits(requests=3))
    assert result.finish_reason is FinishReason.STOP
    assert result.limit is None
    assert len(result.steps) == 3
    assert len(ping.calls) == 2


def test_one_request_over_the_limit_is_never_sent() -> None:
    result, ping = limited(UsageLimits(requests=2))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("requests", 2, 3, before_request=True)
    assert len(result.steps) == 2
    assert len(ping.calls) == 2  # the second step's call ran: the limit stopped the next request
    assert result.messages[-1].role is Role.TOOL
    assert_valid_history(result.messages)


def test_a_requests_limit_of_zero_sends_nothing() -> None:
    result, ping = limited(UsageLimits(requests=0))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("requests", 0, 1, before_request=True)
    assert result.steps == ()
    assert result.usage == Usage()
    assert result.cost == Decimal(0)
    assert ping.calls == []


# --- tool calls --------------------------------------------------------------------------------


def test_tool_calls_exactly_at_the_limit_run() -> None:
    result, ping = limited(UsageLimits(tool_calls=3), 1, 2)
    assert result.finish_reason is FinishReason.STOP
    assert len(ping.calls) == 3
    assert refused(result.messages) == []


def test_one_tool_call_over_the_limit_is_not_run() -> None:
    result, ping = limited(UsageLimits(tool_calls=2), 1, 2)
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("tool_calls", 2, 3)
    assert len(ping.calls) == 2  # the first call of step 2 ran, its second did not
    second = result.steps[1].tool_results
    assert [r.is_error for r in second] == [False, True]
    assert (
        second[1].content == "Error: not run: the tool_calls limit (2) was reached: the run went over it (3)."
    )
    assert len(result.steps) == 2
    assert_valid_history(result.messages)


def test_parallel_calls_over_the_limit_are_not_run() -> None:
    result, ping = limited(UsageLimits(tool_calls=1), 3, parallel_tools=True)
    assert result.finish_reason is FinishReason.LIMIT
    assert len(ping.calls) == 1
    assert [r.is_error for r in result.steps[0].tool_results] == [False, True, True]
    assert [r.tool_call_id for r in result.steps[0].tool_results] == ["c0.0", "c0.1", "c0.2"]


# --- input tokens ------------------------------------------------------------------------------


def test_input_tokens_exactly_at_the_limit_after_a_step_go_on_to_the_projection() -> None:
    # After step 2 the run used exactly 250: not over; the next request's
    # prompt is at least step 2's (150), so it would go over: not sent.
    result, ping = limited(UsageLimits(input_tokens=250))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("input_tokens", 250, 400, before_request=True)
    assert len(ping.calls) == 2
    assert refused(result.messages) == []
    assert result.usage.input == 250


def test_input_tokens_one_over_after_a_step_end_the_run_before_its_calls() -> None:
    result, ping = limited(UsageLimits(input_tokens=249))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("input_tokens", 249, 250)
    assert len(ping.calls) == 1  # step 2 went over: its call did not run
    assert refused(result.messages) == [
        "Error: not run: the input_tokens limit (249) was reached: the run went over it (250)."
    ]
    assert_valid_history(result.messages)


def test_a_projected_request_exactly_at_the_limit_is_sent() -> None:
    result, _ping = limited(UsageLimits(input_tokens=400))  # 250 used + 150 projected
    assert result.finish_reason is FinishReason.STOP
    assert len(result.steps) == 3
    assert result.usage.input == 450  # the projection is a floor: the step sent more


def test_a_projected_request_one_over_the_limit_is_not_sent() -> None:
    result, _ping = limited(UsageLimits(input_tokens=399))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("input_tokens", 399, 400, before_request=True)
    assert len(result.steps) == 2


def test_cache_writes_count_as_input() -> None:
    usage = Usage(input=60, output=1, cache_read=50, cache_write=40)
    assert prompt_tokens(usage) == 100
    assert UsageLimits(input_tokens=100).after_step(usage, None) is None
    assert UsageLimits(input_tokens=99).after_step(usage, None) == LimitReached("input_tokens", 99, 100)
    assert UsageLimits(total_tokens=100).after_step(usage, None) == LimitReached("total_tokens", 100, 101)


def test_the_first_request_is_sent_whatever_its_size() -> None:
    # Its prompt is not known before it is sent: the step that went over ends the run.
    result, ping = limited(UsageLimits(input_tokens=1))
    assert result.limit == LimitReached("input_tokens", 1, 100)
    assert len(result.steps) == 1
    assert ping.calls == []


# --- output and total tokens ---------------------------------------------------------------------


def test_output_tokens_exactly_at_the_limit_go_on() -> None:
    result, ping = limited(UsageLimits(output_tokens=20))
    assert result.finish_reason is FinishReason.STOP
    assert result.usage.output == 25  # the answer that ended the run went over: it ends as it is
    assert len(ping.calls) == 2


def test_output_tokens_one_over_the_limit_end_the_run() -> None:
    result, ping = limited(UsageLimits(output_tokens=19))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("output_tokens", 19, 20)
    assert len(ping.calls) == 1


def test_total_tokens_exactly_at_the_limit_go_on_to_the_projection() -> None:
    result, _ping = limited(UsageLimits(total_tokens=270))  # 250 + 20 after step 2
    assert result.limit == LimitReached("total_tokens", 270, 420, before_request=True)
    assert refused(result.messages) == []


def test_total_tokens_one_over_the_limit_end_the_run() -> None:
    result, _ping = limited(UsageLimits(total_tokens=269))
    assert result.limit == LimitReached("total_tokens", 269, 270)
    assert len(refused(result.messages)) == 1


def test_total_tokens_with_the_projection_exactly_at_and_one_over() -> None:
    at, _ = limited(UsageLimits(total_tokens=420))
    assert at.finish_reason is FinishReason.STOP
    over, _ = limited(UsageLimits(total_tokens=419))
    assert over.limit == LimitReached("total_tokens", 419, 420, before_request=True)


# --- cost --------------------------------------------------------------------------------------


def two_steps_cost() -> Decimal:
    return price_usage(USAGES[0], HAIKU, ANTHROPIC) + price_usage(USAGES[1], HAIKU, ANTHROPIC)


def test_cost_exactly_at_the_limit_goes_on() -> None:
    result, ping = limited(UsageLimits(cost=two_steps_cost()))
    assert result.finish_reason is FinishReason.STOP
    assert len(ping.calls) == 2
    assert result.cost == two_steps_cost() + price_usage(USAGES[2], HAIKU, ANTHROPIC)


def test_cost_one_over_the_limit_ends_the_run() -> None:
    limit = two_steps_cost() - Decimal("0.000001")
    result, ping = limited(UsageLimits(cost=limit))
    assert result.finish_reason is FinishReason.LIMIT
    assert result.limit == LimitReached("cost", limit, two_steps_cost())
    assert result.cost == two_steps_cost()
    assert [step.cost for step in result.steps] == [price_usage(u, HAIKU, ANTHROPIC) for u in USAGES[:2]]
    assert len(ping.calls) == 1


def test_a_float_cost_limit_is_its_decimal() -> None:
    assert UsageLimits(cost=0.1).cost == Decimal("0.1")
    assert UsageLimits(cost=2).cost == Decimal(2)
    assert UsageLimits(cost="0.25").cost == Decimal("0.25")


def test_a_cost_limit_for_a_model_without_a_price_is_a_config_error() -> None:
    model = ScriptedModel(script(1), model_id="my-own-model", base_url="http://127.0.0.1:8080/v1")
    with pytest.raises(ConfigError, match=r"cannot be kept: no price for .*my-own-model"):
        run(LoopOptions(model=model, messages=[user_message("hi")], limits=UsageLimits(cost=1)))
    with pytest.raises(ConfigError, match="no base_url"):
        run(LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], limits=UsageLimits(cost=1)))
    assert model.requests == []


def test_a_cost_limit_without_genai_prices_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agentcore.cost.prices_installed", lambda: False)
    model = ScriptedModel(script(1), model_id=HAIKU, base_url=ANTHROPIC)
    with pytest.raises(ConfigError, match=r"pip install 'agentcore\[prices\]'"):
        run(LoopOptions(model=model, messages=[user_message("hi")], limits=UsageLimits(cost=1)))
    result = generate(LoopOptions(model=model, messages=[user_message("hi")], tools=[FuncTool("ping")]))
    assert result.cost is None  # no limit asked for a price: none is needed


def test_a_step_sent_to_a_model_without_a_price_ends_a_cost_limited_run() -> None:
    other = ScriptedModel(script(1, 1)[1:], model_id="unlisted")  # its step calls a tool: the run goes on

    def plan(draft: StepDraft) -> StepPlan | None:
        return StepPlan(model=other) if draft.number == 2 else None

    model = ScriptedModel(script(1), model_id=HAIKU, base_url=ANTHROPIC)
    options = LoopOptions(
        model=model,
        messages=[user_message("hi")],
        tools=[FuncTool("ping")],
        prepare_step=plan,
        limits=UsageLimits(cost=1),
    )
    with pytest.raises(RunError) as caught:
        generate(options)
    assert isinstance(caught.value.err, ConfigError)
    assert "step 2 has no price" in str(caught.value.err)


# --- what a limit ends ---------------------------------------------------------------------------


def test_the_reader_sees_a_limit_finish_and_the_usage_so_far() -> None:
    model = ScriptedModel(script(1, 1), model_id=HAIKU, base_url=ANTHROPIC)
    reader = run(
        LoopOptions(
            model=model,
            messages=[user_message("hi")],
            tools=[FuncTool("ping")],
            limits=UsageLimits(requests=1),
        )
    )
    parts = list(reader)
    assert parts[-1].kind is StreamPartKind.FINISH
    assert parts[-1].finish_reason is FinishReason.LIMIT
    assert parts[-1].total_usage == USAGES[0]
    assert reader.cost == price_usage(USAGES[0], HAIKU, ANTHROPIC)
    assert reader.result().limit == LimitReached("requests", 1, 2, before_request=True)


def test_a_structured_answer_not_given_at_a_limit_fails_as_at_the_step_limit() -> None:
    model = ScriptedModel(
        [text_step("not json", usage=USAGES[0]), text_step('{"a": 1}', usage=USAGES[1])], model_id=HAIKU
    )
    options = LoopOptions(
        model=model,
        messages=[user_message("hi")],
        output_type={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        limits=UsageLimits(requests=1),
    )
    with pytest.raises(RunError) as caught:
        generate(options)
    err = caught.value.err
    assert isinstance(err, OutputValidationError)
    assert (
        err.problems[-1] == "(top level): the run reached its requests limit (1) before a valid final answer"
    )
    assert caught.value.finish_reason is FinishReason.ERROR
    assert caught.value.usage == USAGES[0]


def test_a_final_answer_over_a_limit_ends_the_run_as_its_own() -> None:
    # The step that answered went over: the answer stands, the run stops as it would have.
    model = ScriptedModel([text_step("done", usage=USAGES[2])])
    limits = UsageLimits(output_tokens=1)
    result = generate(LoopOptions(model=model, messages=[user_message("hi")], limits=limits))
    assert result.usage.output == 5
    assert result.finish_reason is FinishReason.STOP
    assert result.text == "done"
    assert result.limit is None


def test_a_plan_that_replaces_the_history_has_no_projection() -> None:
    small = [user_message("hi")]

    def plan(draft: StepDraft) -> StepPlan | None:
        return StepPlan(messages=small) if draft.number == 3 else None

    result, _ping = limited(UsageLimits(input_tokens=399), prepare_step=plan)
    assert result.finish_reason is FinishReason.STOP  # step 3 sent another history: its size unknown
    assert len(result.steps) == 3


def test_limits_are_checked_when_they_are_made() -> None:
    for bad in ({"requests": -1}, {"tool_calls": 1.5}, {"input_tokens": True}, {"output_tokens": "9"}):
        with pytest.raises(ConfigError, match=f"UsageLimits.{next(iter(bad))}"):
            UsageLimits(**bad)
    for cost in (-1, float("nan"), "much", True, [1]):
        with pytest.raises(ConfigError, match=r"UsageLimits\.cost"):
            UsageLimits(cost=cost)
    bad_limits: Any = {"requests": 1}
    with pytest.raises(ConfigError, match=r"LoopOptions\.limits must be a UsageLimits"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], limits=bad_limits)


def test_limit_reached_to_dict_keeps_a_cost_exact() -> None:
    reached = LimitReached("cost", Decimal("0.10"), Decimal("0.1000001"))
    assert reached.to_dict() == {
        "kind": "cost",
        "limit": "0.10",
        "count": "0.1000001",
        "before_request": False,
    }
    assert LimitReached("requests", 2, 3, True).to_dict()["limit"] == 2


def test_a_call_in_the_tool_mode_final_answer_is_not_counted() -> None:
    answer = ToolCall(id="f1", name="final_answer", input='{"a": 1}')
    model = ScriptedModel(
        [tool_step(call("c1", "ping"), usage=USAGES[0]), tool_step(StreamPart.tool_call_event(answer))]
    )
    result = generate(
        LoopOptions(
            model=model,
            messages=[user_message("hi")],
            tools=[FuncTool("ping")],
            output_type={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            output_mode="tool",
            limits=UsageLimits(tool_calls=1),
        )
    )
    assert result.finish_reason is FinishReason.STOP
    assert result.output == {"a": 1}


# --- with history policies, durable runs and agentcore.aio ---------------------------------------


class NotingPolicy:
    """A policy whose model call (usage only, no change) is made before the first step."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.calls = 0

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        self.calls += 1
        return HistoryEdit(usage=Usage(input=5000, output=400)) if self.calls == 1 else None


def test_a_policys_model_call_is_priced_with_its_model_in_the_step_it_preceded() -> None:
    summarizer = ScriptedModel([], model_id="claude-sonnet-4-5", base_url=ANTHROPIC)
    result, _ping = limited(UsageLimits(requests=9), history_policy=NotingPolicy(summarizer))
    summary = price_usage(Usage(input=5000, output=400), "claude-sonnet-4-5", ANTHROPIC)
    assert result.steps[0].cost == price_usage(USAGES[0], HAIKU, ANTHROPIC) + summary
    assert result.steps[1].cost == price_usage(USAGES[1], HAIKU, ANTHROPIC)
    assert result.usage == Usage(input=5450, output=425)


def test_a_policys_model_call_counts_against_the_limits() -> None:
    summarizer = ScriptedModel([], model_id="claude-sonnet-4-5", base_url=ANTHROPIC)
    result, ping = limited(UsageLimits(input_tokens=5099), history_policy=NotingPolicy(summarizer))
    assert result.limit == LimitReached("input_tokens", 5099, 5100)
    assert len(result.steps) == 1
    assert ping.calls == []


def test_a_cost_limit_with_a_policy_model_without_a_price_is_a_config_error() -> None:
    model = ScriptedModel(script(1), model_id=HAIKU, base_url=ANTHROPIC)
    policy = NotingPolicy(ScriptedModel([], model_id="local", base_url="http://127.0.0.1:9/v1"))
    options = LoopOptions(
        model=model, messages=[user_message("hi")], history_policy=policy, limits=UsageLimits(cost=1)
    )
    with pytest.raises(
        ConfigError, match=r"no price for ScriptedModel\('local' at http://127\.0\.0\.1:9/v1\)"
    ):
        run(options)


def test_a_durable_run_saves_its_step_costs_and_a_resumed_run_counts_them(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    limits = UsageLimits(cost=two_steps_cost())

    def options(model: ScriptedModel) -> LoopOptions:
        return LoopOptions(
            model=model,
            messages=[user_message("hi")],
            tools=[FuncTool("ping")],
            run_id="r1",
            checkpoints=store,
            max_retries=0,
            limits=limits,
        )

    broken = ScriptedModel(
        [script(1, 1)[0], ModelError(ErrorClass.UPSTREAM, message="down")], model_id=HAIKU, base_url=ANTHROPIC
    )
    with pytest.raises(RunError):
        generate(options(broken))  # killed after its first step, as by a crash
    saved = store.load("r1")
    assert saved is not None
    assert [step.cost for step in saved.steps] == [price_usage(USAGES[0], HAIKU, ANTHROPIC)]
    # Resumed by a model whose steps would have another price: the saved step keeps its own.
    later = ScriptedModel(script(1, 1)[1:], model_id="claude-sonnet-4-5", base_url=ANTHROPIC)
    resumed = generate(options(later))
    sonnet = price_usage(USAGES[1], "claude-sonnet-4-5", ANTHROPIC)
    assert [step.cost for step in resumed.steps] == [price_usage(USAGES[0], HAIKU, ANTHROPIC), sonnet]
    assert resumed.finish_reason is FinishReason.LIMIT  # Sonnet's second step went over the Haiku budget
    spent = price_usage(USAGES[0], HAIKU, ANTHROPIC) + sonnet
    assert resumed.limit == LimitReached("cost", two_steps_cost(), spent)


def test_an_async_consumer_gets_the_limit_and_the_cost() -> None:
    async def main() -> Any:
        model = ScriptedModel(script(1, 1), model_id=HAIKU, base_url=ANTHROPIC)
        options = LoopOptions(
            model=model,
            messages=[user_message("hi")],
            tools=[FuncTool("ping")],
            limits=UsageLimits(requests=1),
        )
        return await aio.arun(options).result()

    result = asyncio.run(main())
    assert result.limit == LimitReached("requests", 1, 2, before_request=True)
    assert result.cost == price_usage(USAGES[0], HAIKU, ANTHROPIC)


def test_a_cost_limit_with_a_policy_that_calls_no_model_runs() -> None:
    result, _ping = limited(UsageLimits(cost=1), history_policy=SlidingWindow(max_tokens=100_000))
    assert result.finish_reason is FinishReason.STOP
    assert result.cost == sum((price_usage(usage, HAIKU, ANTHROPIC) for usage in USAGES), Decimal(0))


def test_a_step_a_fallback_model_answered_is_priced_as_that_model() -> None:
    overloaded = ModelError(ErrorClass.OVERLOADED, message="busy", status=529)
    primary = ScriptedModel([overloaded, overloaded], model_id="claude-sonnet-4-5", base_url=ANTHROPIC)
    backup = ScriptedModel(script(1), model_id=HAIKU, base_url=ANTHROPIC)
    result = generate(
        LoopOptions(
            model=FallbackModel(primary, backup),
            messages=[user_message("hi")],
            tools=[FuncTool("ping")],
            max_retries=0,
            limits=UsageLimits(cost=1),
        )
    )
    assert [step.model_id for step in result.steps] == [HAIKU, HAIKU]
    prices = [price_usage(usage, HAIKU, ANTHROPIC) for usage in USAGES[:2]]
    assert [step.cost for step in result.steps] == prices  # Haiku's prices, not Sonnet's


def test_a_cost_limit_needs_a_price_for_every_model_a_fallback_may_send_to() -> None:
    primary = ScriptedModel([], model_id=HAIKU, base_url=ANTHROPIC)
    local = ScriptedModel([], model_id="local", base_url="http://127.0.0.1:9/v1")
    options = LoopOptions(
        model=FallbackModel(primary, local), messages=[user_message("hi")], limits=UsageLimits(cost=1)
    )
    with pytest.raises(ConfigError, match=r"no price for ScriptedModel\('local'"):
        run(options)
