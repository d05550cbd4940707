"""Human approval of tool calls: ``@tool(requires_approval=...)``, the
``approval-required`` finish, and ``LoopOptions(approvals=...)`` to approve or
deny, with and without a checkpoint store, and across a restart."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import requests

from agentcore import (
    ConfigError,
    Context,
    FinishReason,
    LoopOptions,
    Role,
    StreamPart,
    StreamPartKind,
    Tool,
    ToolCall,
    Usage,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.durable import SQLiteCheckpoints
from agentcore.testing import ScriptedModel
from agentcore.tools import FunctionTool
from tests.test_durable_kill import ROOT, Child
from tests.test_flask_example import serve_flask


def calls(*items: ToolCall) -> list[StreamPart]:
    return [
        *(StreamPart.tool_call_event(item) for item in items),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=10, output=2)),
    ]


def answer(text: str = "done") -> list[StreamPart]:
    return [StreamPart.text_delta(text), StreamPart.step_finish(FinishReason.STOP, Usage(input=20, output=3))]


class Bank:
    """A ``transfer`` tool that needs approval above 100, and a ``balance`` tool that does not."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        @tool(requires_approval=lambda arguments: arguments["amount"] > 100)
        def transfer(amount: int, ctx: Context) -> str:
            """Transfer money."""
            self.ran.append(f"transfer {amount}")
            return f"sent {amount}"

        @tool
        def balance() -> str:
            """The balance."""
            self.ran.append("balance")
            return "1000"

        self.tools: list[Tool] = [transfer, balance]


BIG = ToolCall("t1", "transfer", '{"amount": 500}')
SMALL = ToolCall("t2", "transfer", '{"amount": 5}')
LOOK = ToolCall("b1", "balance", "{}")


def test_a_call_that_needs_approval_ends_the_run_and_runs_nothing() -> None:
    bank = Bank()
    model = ScriptedModel([calls(LOOK, BIG, SMALL)])
    reader = run(LoopOptions(model=model, messages=[user_message("pay")], tools=bank.tools))
    parts = list(reader)
    result = reader.result()
    assert result.finish_reason is FinishReason.APPROVAL_REQUIRED
    assert result.pending == (BIG,)  # the small transfer needs no approval
    assert bank.ran == []  # no call of the step ran: they run together once decided
    assert [p.kind for p in parts] == [
        StreamPartKind.TOOL_CALL,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.STEP_FINISH,
        StreamPartKind.FINISH,
    ]
    assert parts[-1].finish_reason is FinishReason.APPROVAL_REQUIRED
    assert result.messages[-1].role is Role.ASSISTANT
    assert result.messages[-1].tool_calls == [LOOK, BIG, SMALL]
    assert result.usage == Usage(input=10, output=2)


def test_approving_from_the_history_runs_the_calls_and_the_run_goes_on() -> None:
    bank = Bank()
    first = generate(
        LoopOptions(model=ScriptedModel([calls(LOOK, BIG)]), messages=[user_message("pay")], tools=bank.tools)
    )
    model = ScriptedModel([answer("paid")])
    result = generate(
        LoopOptions(model=model, messages=first.messages, tools=bank.tools, approvals={"t1": True})
    )
    assert bank.ran == ["balance", "transfer 500"]
    assert result.finish_reason is FinishReason.STOP
    assert result.text == "paid"
    sent = model.requests[0].messages
    assert [r.content for r in sent[-1].tool_results] == ["1000", "sent 500"]
    assert result.usage == Usage(input=20, output=3)  # without a store: a new run


def test_a_denial_sends_its_reason_to_the_model() -> None:
    bank = Bank()
    first = generate(
        LoopOptions(model=ScriptedModel([calls(BIG)]), messages=[user_message("pay")], tools=bank.tools)
    )
    model = ScriptedModel([answer("not paid")])
    generate(
        LoopOptions(
            model=model, messages=first.messages, tools=bank.tools, approvals={"t1": "over the daily limit"}
        )
    )
    assert bank.ran == []
    [result] = model.requests[0].messages[-1].tool_results
    assert (result.content, result.is_error) == (
        "Error: the user denied this call: over the daily limit",
        True,
    )
    model = ScriptedModel([answer("not paid")])
    generate(LoopOptions(model=model, messages=first.messages, tools=bank.tools, approvals={"t1": False}))
    assert model.requests[0].messages[-1].tool_results[0].content == "Error: the user denied this call."


def test_a_missing_decision_runs_nothing(tmp_path: Path) -> None:
    bank = Bank()
    other = ToolCall("t3", "transfer", '{"amount": 900}')
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    options: dict[str, Any] = {"tools": bank.tools, "run_id": "r1", "checkpoints": store}
    first = generate(
        LoopOptions(model=ScriptedModel([calls(BIG, other)]), messages=[user_message("pay")], **options)
    )
    assert first.pending == (BIG, other)
    idle = ScriptedModel([])
    again = generate(LoopOptions(model=idle, approvals={"t1": True}, **options))
    assert again.finish_reason is FinishReason.APPROVAL_REQUIRED
    assert again.pending == (other,)
    assert bank.ran == []
    assert idle.requests == []


def test_decisions_given_one_at_a_time_are_kept_until_every_call_has_one(tmp_path: Path) -> None:
    bank = Bank()
    other = ToolCall("t3", "transfer", '{"amount": 900}')
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    options: dict[str, Any] = {"tools": bank.tools, "run_id": "r1", "checkpoints": store}
    generate(LoopOptions(model=ScriptedModel([calls(BIG, other)]), messages=[user_message("pay")], **options))
    model = ScriptedModel([answer("paid one")])
    first = generate(LoopOptions(model=model, approvals={"t1": True}, **options))
    assert first.pending == (other,)
    state = store.load("r1")
    assert state is not None
    assert state.decisions == {"t1": True}
    second = generate(LoopOptions(model=model, approvals={"t3": "too much"}, **options))
    assert second.finish_reason is FinishReason.STOP
    assert bank.ran == ["transfer 500"]
    assert [(r.tool_call_id, r.is_error) for r in second.steps[0].tool_results] == [
        ("t1", False),
        ("t3", True),
    ]


def test_approvals_with_a_store_resume_the_run_by_its_id(tmp_path: Path) -> None:
    bank = Bank()
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    options: dict[str, Any] = {"tools": bank.tools, "run_id": "r1", "checkpoints": store}
    first = generate(
        LoopOptions(model=ScriptedModel([calls(BIG)]), messages=[user_message("pay")], **options)
    )
    state = store.load("r1")
    assert state is not None
    assert (state.finish_reason, state.awaiting_approval) == (FinishReason.APPROVAL_REQUIRED, ("t1",))
    model = ScriptedModel([calls(ToolCall("t1", "transfer", '{"amount": 700}')), answer("paid twice")])
    result = generate(LoopOptions(model=model, approvals={"t1": True}, **options))
    # A decision is for the call waiting now: step 2's call with the same id waits again.
    assert result.finish_reason is FinishReason.APPROVAL_REQUIRED
    assert bank.ran == ["transfer 500"]
    result = generate(LoopOptions(model=model, approvals={"t1": True}, **options))
    assert result.finish_reason is FinishReason.STOP
    assert bank.ran == ["transfer 500", "transfer 700"]
    assert result.usage == Usage(input=40, output=7)  # the whole run's total
    assert len(result.steps) == 3
    assert first.usage == Usage(input=10, output=2)


def test_a_decision_for_a_call_never_made_is_a_config_error() -> None:
    bank = Bank()
    first = generate(
        LoopOptions(model=ScriptedModel([calls(BIG)]), messages=[user_message("pay")], tools=bank.tools)
    )
    with pytest.raises(ConfigError, match="never made: nope"):
        run(
            LoopOptions(
                model=ScriptedModel([]), messages=first.messages, tools=bank.tools, approvals={"nope": True}
            )
        )


def test_a_decision_for_an_unknown_call_of_an_anonymous_run_says_this_run() -> None:
    first = generate(
        LoopOptions(model=ScriptedModel([calls(BIG)]), messages=[user_message("pay")], tools=Bank().tools)
    )
    with pytest.raises(ConfigError, match=r"that this run never made: nope \(a key is a pending call's id"):
        run(
            LoopOptions(
                model=ScriptedModel([]),
                messages=first.messages,
                tools=Bank().tools,
                approvals={"nope": 1 > 0},
            )
        )


def test_the_history_passed_back_without_decisions_waits_again() -> None:
    bank = Bank()
    first = generate(
        LoopOptions(model=ScriptedModel([calls(LOOK, BIG)]), messages=[user_message("pay")], tools=bank.tools)
    )
    idle = ScriptedModel([])
    again = generate(LoopOptions(model=idle, messages=first.messages, tools=bank.tools))
    assert (again.finish_reason, again.pending) == (FinishReason.APPROVAL_REQUIRED, (BIG,))
    assert again.messages == first.messages  # no second assistant message, no unanswered call sent
    assert (idle.requests, bank.ran) == ([], [])


def test_a_step_qualified_decision_delivered_twice_does_not_approve_a_later_call(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bank = Bank()
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    options: dict[str, Any] = {"tools": bank.tools, "run_id": "r1", "checkpoints": store}
    again = ToolCall("t1", "transfer", '{"amount": 5000}')  # a server that reuses call ids
    model = ScriptedModel([calls(BIG), calls(again), answer("paid")])
    first = generate(LoopOptions(model=model, messages=[user_message("pay")], **options))
    assert first.approval_keys == {"1:t1": BIG}
    decision = {key: True for key in first.approval_keys}
    second = generate(LoopOptions(model=model, approvals=decision, **options))
    assert (second.finish_reason, second.approval_keys) == (FinishReason.APPROVAL_REQUIRED, {"2:t1": again})
    with caplog.at_level("INFO", logger="agentcore"):
        redelivered = generate(LoopOptions(model=model, approvals=decision, **options))
    assert (redelivered.finish_reason, redelivered.pending) == (FinishReason.APPROVAL_REQUIRED, (again,))
    assert "the decision '1:t1' is for a call already decided; ignored" in caplog.text
    assert bank.ran == ["transfer 500"]  # the 5000 transfer nobody saw did not run
    for wrong in ("7:t1", "0:t1"):  # no step made t1 under that number: a mistake, not a redelivery
        with pytest.raises(ConfigError, match=f"that run 'r1' never made: {wrong}"):
            generate(LoopOptions(model=model, approvals={wrong: True}, **options))
    done = generate(LoopOptions(model=model, approvals={"2:t1": True}, **options))
    assert (done.finish_reason, bank.ran) == (FinishReason.STOP, ["transfer 500", "transfer 5000"])


def test_the_decisions_are_saved_before_the_first_approved_call_runs(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    seen: list[object] = []

    @tool(requires_approval=True)
    def wire(amount: int) -> str:
        """Wire money."""
        state = store.load("w1")
        assert state is not None
        seen.append(dict(state.decisions))  # what a process killed here would resume from
        return "wired"

    options: dict[str, Any] = {"tools": [wire], "run_id": "w1", "checkpoints": store}
    call = ToolCall("c1", "wire", '{"amount": 5}')
    model = ScriptedModel([calls(call), answer("wired")])
    generate(LoopOptions(model=model, messages=[user_message("wire it")], **options))
    result = generate(LoopOptions(model=model, approvals={"c1": True}, **options))
    assert result.finish_reason is FinishReason.STOP
    assert seen == [{"c1": True}]


def test_a_call_whose_arguments_fail_the_schema_fails_without_waiting_for_a_person(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bank = Bank()
    broken = ToolCall("t9", "transfer", "{}")  # no amount: the predicate would raise KeyError
    model = ScriptedModel([calls(broken), answer("sorry")])
    with caplog.at_level("WARNING", logger="agentcore"):
        result = generate(LoopOptions(model=model, messages=[user_message("pay")], tools=bank.tools))
    assert result.finish_reason is FinishReason.STOP
    [error] = result.steps[0].tool_results
    assert error.is_error
    assert "invalid arguments for tool 'transfer'; it was not run" in error.content
    assert (bank.ran, caplog.text) == ([], "")


def test_requires_approval_must_be_a_bool_or_a_function() -> None:
    def odd() -> str:
        """Odd."""
        return ""

    with pytest.raises(ConfigError, match="requires_approval"):
        FunctionTool(odd, requires_approval="yes")  # type: ignore[arg-type]  # the wrong type is the point

    always = FunctionTool(lambda: "x", name="always", requires_approval=True)
    assert always.needs_approval({}) is True
    assert FunctionTool(lambda: "x", name="never").needs_approval({}) is False


def test_a_predicate_that_raises_makes_the_call_wait(caplog: pytest.LogCaptureFixture) -> None:
    @tool(requires_approval=lambda arguments: arguments["missing"] > 1)
    def fragile() -> str:
        """Fragile."""
        return "ran"

    result = generate(
        LoopOptions(
            model=ScriptedModel([calls(ToolCall("f1", "fragile", "{}"))]),
            messages=[user_message("go")],
            tools=[fragile],
        )
    )
    assert result.finish_reason is FinishReason.APPROVAL_REQUIRED
    assert "the approval check of tool 'fragile' raised KeyError" in caplog.text


def test_approval_survives_a_restart(tmp_path: Path) -> None:
    """Run 1 (a process) stops for approval; run 2 (another process) approves
    and finishes with the same history and usage as a run that never asked."""
    approval = {"DURABLE_CHILD_APPROVAL": "1"}
    first = Child(tmp_path, env=approval)
    waiting = first.drive()
    assert waiting is not None
    assert (waiting["finish_reason"], waiting["pending"]) == ("approval-required", ["c2"])
    assert first.points == ["stream:0:1", "stream:0:2", "saved:1", "saved:2"]
    assert not (tmp_path / "log").exists()  # nothing ran
    second = Child(tmp_path, "c2=yes", env=approval)
    finished = second.drive()
    assert finished is not None
    never_asked_dir = tmp_path / "never-asked"
    never_asked_dir.mkdir()
    never_asked = Child(never_asked_dir).drive()
    assert finished == never_asked
    # The decision is saved before any call runs, then each result.
    assert second.points[:3] == ["saved:3", "tool:a", "saved:4"]


def test_a_denial_survives_a_restart(tmp_path: Path) -> None:
    approval = {"DURABLE_CHILD_APPROVAL": "1"}
    assert Child(tmp_path, env=approval).drive() is not None
    finished = Child(tmp_path, "c2=no charts today", env=approval).drive()
    assert finished is not None
    assert finished["finish_reason"] == "stop"
    results = [
        part["tool_result"]
        for message in finished["messages"]
        for part in message["content"]
        if part["kind"] == "tool-result"
    ]
    assert results[1]["content"] == "Error: the user denied this call: no charts today"
    # Step 2 reuses the id c2 for a call that needs no approval: it runs.
    assert results[3]["content"] == "recorded c"
    assert os.path.exists(tmp_path / "log")


def test_a_run_killed_after_the_decision_does_not_ask_again(tmp_path: Path) -> None:
    approval = {"DURABLE_CHILD_APPROVAL": "1"}
    assert Child(tmp_path, env=approval).drive() is not None
    assert Child(tmp_path, "c2=yes", env=approval).drive(kill_at="tool:chart") is None
    finished = Child(tmp_path, env=approval).drive()  # no decision given: the saved one holds
    never_asked_dir = tmp_path / "never-asked"
    never_asked_dir.mkdir()
    assert finished == Child(never_asked_dir).drive()
    tags = [line.split(" ")[1] for line in (tmp_path / "log").read_text(encoding="utf-8").splitlines()]
    assert tags == ["a", "chart", "chart", "b", "c"]  # the call killed before its result was saved ran again


def test_only_the_flask_example_shows_the_ask_box(tmp_path: Path) -> None:
    page = (ROOT / "examples" / "chat.html").read_text(encoding="utf-8")
    assert '<div id="options" hidden>' in page  # the shared page: other examples cannot resume runs
    with serve_flask(ScriptedModel([]), checkpoints=SQLiteCheckpoints(tmp_path / "runs.db")) as url:
        served = requests.get(url + "/", timeout=10).text
    assert served == page.replace('<div id="options" hidden>', '<div id="options">')


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?q=hi&run=bad!", "a run id is 8 to 64 letters, digits or '-'"),
        ("?decisions=%7B%7D", "decisions need the run id (run=...)"),
        ("?run=abcdef123456&decisions=%5B%5D", "bad decisions: decisions must map call ids"),
        ("?run=abcdef123456&decisions=nope", "bad decisions: Expecting value"),
        ("?run=abcdef123456&decisions=%7B%7D", "run 'abcdef123456' has no saved state"),
    ],
)
def test_the_flask_example_refuses_bad_resumes(tmp_path: Path, query: str, message: str) -> None:
    with serve_flask(ScriptedModel([]), checkpoints=SQLiteCheckpoints(tmp_path / "runs.db")) as url:
        response = requests.get(url + "/stream" + query, timeout=10)
    assert response.status_code == 400
    assert response.text.startswith(message)
