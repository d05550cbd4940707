"""``LoopOptions(prepare_step=...)``: the hook before every step, what it is
given (:class:`agentcore.StepDraft`) and what its :class:`agentcore.StepPlan`
changes (that step only), the history check of a plan, and a hook that
fails (issue 23 item 1; docs/long-runs.md, "Control of each step")."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    ConfigError,
    LoopOptions,
    Message,
    ModelSettings,
    Role,
    RunError,
    StepDraft,
    StepPlan,
    Usage,
    generate,
    tool_call_part,
    user_message,
)
from agentcore.compaction import SlidingWindow
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import ScriptedModel
from agentcore.transport.memory import MemoryTransport
from agentcore.types import ToolCall
from tests.loop_helpers import FuncTool, call, text_step, tool_step


def tools() -> list[FuncTool]:
    return [FuncTool("search"), FuncTool("fetch"), FuncTool("write")]


def names(request: Any) -> list[str]:
    return [definition.name for definition in request.tools]


def test_a_plan_swaps_the_model_at_step_3_and_narrows_the_tools_at_step_4() -> None:
    main = ScriptedModel(
        [tool_step(call(f"c{n}", "search"), usage=Usage(input=10)) for n in (1, 2, 4)] + [text_step("done")],
        model_id="main",
    )
    other = ScriptedModel([tool_step(call("c3", "fetch"), usage=Usage(input=20))], model_id="other")
    offered = tools()
    drafts: list[StepDraft] = []

    def prepare(draft: StepDraft) -> StepPlan | None:
        drafts.append(draft)
        if draft.number == 3:
            return StepPlan(model=other)
        if draft.number == 4:
            return StepPlan(tools=[draft.tools["search"]])
        return None

    result = generate(
        LoopOptions(model=main, messages=[user_message("go")], tools=offered, prepare_step=prepare)
    )
    assert result.text == "done"
    assert [len(main.requests), len(other.requests)] == [4, 1]
    # Step 3 went to the other model, with every tool; step 4 offered only search; 5 all again.
    assert names(other.requests[0]) == ["search", "fetch", "write"]
    assert [names(request) for request in main.requests] == [
        ["search", "fetch", "write"],
        ["search", "fetch", "write"],
        ["search"],
        ["search", "fetch", "write"],
    ]
    assert len(other.requests[0].messages) == 5
    assert len(main.requests[2].messages) == 7
    assert [draft.number for draft in drafts] == [1, 2, 3, 4, 5]
    assert [draft.model for draft in drafts] == [main] * 5  # the plan changed step 3 only
    assert [draft.usage for draft in drafts] == [Usage(input=i) for i in (0, 10, 20, 40, 50)]
    assert [len(draft.steps) for draft in drafts] == [0, 1, 2, 3, 4]
    assert drafts[1].messages == main.requests[1].messages
    assert [tool.calls for tool in offered] == [[{}, {}, {}], [{}], []]


def test_a_narrowed_tool_set_is_what_the_calls_may_call() -> None:
    model = ScriptedModel([tool_step(call("c1", "fetch")), text_step("ok")])
    offered = tools()

    def prepare(draft: StepDraft) -> StepPlan:
        return StepPlan(tools=[draft.tools["search"]] if draft.number == 1 else list(draft.tools.values()))

    result = generate(
        LoopOptions(model=model, messages=[user_message("go")], tools=offered, prepare_step=prepare)
    )
    [failed] = result.steps[0].tool_results
    assert failed.is_error
    assert "fetch" in failed.content
    assert "search" in failed.content
    assert offered[1].calls == []


def test_a_plan_changes_the_system_prompt_settings_and_history_of_one_step() -> None:
    model = ScriptedModel([tool_step(call("c1", "search")), text_step("ok")])
    short = (user_message("only this"),)

    def prepare(draft: StepDraft) -> StepPlan | None:
        if draft.number == 1:
            return StepPlan(messages=short, system="be brief", settings=ModelSettings(temperature=0.0))
        return None

    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        system="the system",
        tools=tools(),
        settings=ModelSettings(temperature=1.0),
        prepare_step=prepare,
    )
    result = generate(options)
    first, second = model.requests
    assert (first.messages, first.system, first.settings) == (
        short,
        "be brief",
        ModelSettings(temperature=0.0),
    )
    assert second.system == "the system"
    assert second.settings == ModelSettings(temperature=1.0)
    # The run kept its own history: the planned history was sent, not kept.
    assert [message.role for message in second.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert second.messages[0].text == "go"
    assert result.messages[0].text == "go"


def test_a_plan_whose_history_the_provider_refuses_fails_before_any_http_call() -> None:
    transport = MemoryTransport()
    model = AnthropicModel("claude-test", api_key="sk-ant-test-key-0000", transport=transport)
    unanswered = Message(role=Role.ASSISTANT, content=[tool_call_part(ToolCall("toolu_1", "search"))])
    broken = (user_message("go"), unanswered, user_message("next"))

    def prepare(draft: StepDraft) -> StepPlan:
        return StepPlan(messages=broken)

    with pytest.raises(RunError) as failure:
        generate(LoopOptions(model=model, messages=[user_message("go")], prepare_step=prepare))
    assert isinstance(failure.value.err, ConfigError)
    assert str(failure.value.err) == (
        "StepPlan.messages: messages[1] has the tool call 'toolu_1' without a result in the messages "
        "after it (up to messages[2]); add its tool result or remove the call"
    )
    assert transport.sent == []


def test_a_users_model_gets_the_loops_own_history_check() -> None:
    model = ScriptedModel([text_step("never")])
    orphan = Message(role=Role.TOOL, content=[])
    stray = ToolCall("x1", "search")
    wrong = Message(role=Role.USER, content=[tool_call_part(stray)])

    def prepare(draft: StepDraft) -> StepPlan:
        return StepPlan(messages=(user_message("go"), orphan, wrong))

    with pytest.raises(RunError) as failure:
        generate(LoopOptions(model=model, messages=[user_message("go")], prepare_step=prepare))
    assert str(failure.value.err).startswith("StepPlan.messages: messages[2] is a user message with a")
    assert model.requests == []


def test_an_exception_in_prepare_step_ends_the_run_with_it() -> None:
    model = ScriptedModel([tool_step(call("c1", "search"), usage=Usage(input=7)), text_step("never")])
    boom = KeyError("no plan for step 2")

    def prepare(draft: StepDraft) -> None:
        if draft.number == 2:
            raise boom

    with pytest.raises(RunError) as failure:
        generate(LoopOptions(model=model, messages=[user_message("go")], tools=tools(), prepare_step=prepare))
    assert failure.value.err is boom
    assert failure.value.usage == Usage(input=7)  # the completed step's usage is kept
    assert len(model.requests) == 1
    assert [m.role for m in failure.value.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]


def test_prepare_step_must_return_a_plan_or_none() -> None:
    model = ScriptedModel([text_step("never")])

    def prepare(draft: StepDraft) -> Any:
        return {"model": None}

    options = LoopOptions(model=model, messages=[user_message("go")], prepare_step=prepare)
    with pytest.raises(RunError) as failure:
        generate(options)
    assert str(failure.value.err) == "LoopOptions.prepare_step must return a StepPlan or None, got dict"
    assert model.requests == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"messages": []}, "StepPlan.messages needs at least one message (None keeps the step's)"),
        ({"messages": user_message("x")}, "StepPlan.messages must be a list of Message objects, got Message"),
        ({"system": 3}, "StepPlan.system must be a str or None, got 3"),
        ({"tools": "search"}, "StepPlan.tools must be tools (a list, a ToolSet or a name -> tool mapping)"),
        ({"model": "gpt"}, "StepPlan.model must be a Model (.model_id and .stream) or None, got 'gpt'"),
        ({"settings": {"temperature": 1}}, "StepPlan.settings must be a ModelSettings or None"),
    ],
)
def test_a_plan_with_a_wrong_value_is_a_config_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as failure:
        StepPlan(**kwargs)
    assert str(failure.value).startswith(message)


def test_prepare_step_must_be_callable() -> None:
    with pytest.raises(ConfigError, match=r"LoopOptions\.prepare_step must be callable or None, got 3"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("go")], prepare_step=3)  # type: ignore[arg-type]  # the wrong type is the point


def test_prepare_step_sees_the_history_the_policies_left() -> None:
    model = ScriptedModel(
        [tool_step(call(f"c{n}", "search"), usage=Usage(input=100 * n)) for n in (1, 2)] + [text_step("ok")]
    )
    seen: list[int] = []

    def prepare(draft: StepDraft) -> None:
        seen.append(len(draft.messages))

    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        tools=tools(),
        history_policy=SlidingWindow(max_tokens=150),
        prepare_step=prepare,
    )
    result = generate(options)
    # Step 3 would send 5 messages; the window dropped the first turn before the hook saw it.
    assert seen == [1, 3, 3]
    assert [len(request.messages) for request in model.requests] == [1, 3, 3]
    assert len(result.full_messages) == 6
    assert len(result.messages) == 4
