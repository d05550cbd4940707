"""The history policies of :mod:`agentcore.compaction` in a run: what each
shipped policy cuts, what the run reports of it (the ``compaction`` part,
``StepResult.compactions``, ``RunResult.messages`` and ``full_messages``),
a summary that fails, times out or answers nothing, the one retry after a
context-length refusal, the cache report's ``compacted`` cause, and a
durable run's state (issue 23 items 3 and 5; docs/long-runs.md)."""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from agentcore import (
    CacheCause,
    CacheReport,
    Canceled,
    ConfigError,
    Context,
    ErrorClass,
    LoopOptions,
    ManualClock,
    Message,
    ModelError,
    ModelSettings,
    PrefixChange,
    Request,
    Role,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolResult,
    Usage,
    generate,
    run,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.caching import compacted
from agentcore.compaction import (
    CLEARED,
    SUMMARY_HEADING,
    SUMMARY_INSTRUCTIONS,
    ClearOldToolResults,
    HistoryEdit,
    HistoryState,
    ProviderCompaction,
    SlidingWindow,
    Summarize,
    cut_points,
    pinned,
)
from agentcore.durable import SQLiteCheckpoints
from agentcore.files import File
from agentcore.history import check_history
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import ScriptedModel
from agentcore.tokens import estimate_tokens
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport
from agentcore.types import FinishReason, ToolCall
from tests.conftest import wait_for_threads
from tests.localserver import LocalServer, Stall
from tests.localserver import Reply as ServerReply
from tests.loop_helpers import FuncTool, call, collect, text, text_step, wait_until

FETCH = FuncTool("fetch", lambda arguments, _ctx: "x" * 600)
"""A tool whose every result is 600 characters (about 200 tokens by the estimate)."""


def counted(
    *parts: StreamPart, reason: FinishReason = FinishReason.TOOL_CALLS, cache: CacheReport | None = None
) -> Any:
    """A step that sends ``parts`` and reports as its input what it was sent,
    by the estimate (as a provider counts the prompt it gets), and ``cache``."""

    def step(request: Request) -> list[StreamPart]:
        tokens = estimate_tokens(request.messages, system=request.system, tools=request.tools)
        return [*parts, StreamPart.step_finish(reason, Usage(input=tokens), cache)]

    return step


def fetch_steps(count: int) -> list[Any]:
    """``count`` steps that each call ``fetch`` (its result: about 200
    tokens), each reporting the prompt it got: 365 tokens at step 1, about
    210 more at each step after it."""
    return [counted(call(f"c{n}", "fetch")) for n in range(1, count + 1)]


def go(model: ScriptedModel, policy: Any = None) -> LoopOptions:
    """Options for ``model``, asked to "go" with the ``fetch`` tool, under the history ``policy``."""
    return LoopOptions(model=model, messages=[user_message("go")], tools=[FETCH], history_policy=policy)


def assistant(*calls: str) -> Message:
    return Message(role=Role.ASSISTANT, content=[tool_call_part(ToolCall(c, "fetch")) for c in calls])


def results(*calls: str, content: str = "result") -> Message:
    return Message(role=Role.TOOL, content=[tool_result_part(ToolResult(c, "fetch", content)) for c in calls])


def history() -> tuple[Message, ...]:
    """user, (assistant c1 c2, tool), user, (assistant c3, tool), assistant text."""
    return (
        user_message("start"),
        assistant("c1", "c2"),
        results("c1", "c2"),
        user_message("more"),
        assistant("c3"),
        results("c3"),
        Message(role=Role.ASSISTANT, content=[text_part("done")]),
    )


def state(
    messages: Sequence[Message], tokens: int, *, window: int | None = None, refused: bool = False
) -> HistoryState:
    return HistoryState(tuple(messages), "", (), ScriptedModel([]), tokens, window, refused)


# --- the turn structure -------------------------------------------------------------------------


def test_cut_points_never_separate_a_call_from_its_result() -> None:
    assert cut_points(history()) == (0, 1, 3, 4, 6, 7)
    assert pinned(history()) == 1
    waiting = (*history()[:2],)
    assert cut_points(waiting) == (0, 1)  # the calls at the end wait: no cut after them
    starts_with_the_model = (Message(role=Role.ASSISTANT, content=[text_part("hello")]), *history())
    assert pinned(starts_with_the_model) == 2  # up to and including the first user message


# --- the policies on their own ------------------------------------------------------------------


def test_clear_old_tool_results_keeps_the_calls_and_the_last_results() -> None:
    png = File(media_type="image/png", data=b"\x89PNG")
    messages = list(history())
    messages[1] = assistant("c1", "c2", "c9")
    messages[2] = Message(
        role=Role.TOOL,
        content=[
            tool_result_part(ToolResult("c1", "fetch", "one", files=[png])),
            tool_result_part(ToolResult("c2", "fetch", "two " * 20, is_error=True)),
            tool_result_part(ToolResult("c9", "fetch", "short")),
        ],
    )
    edit = ClearOldToolResults(keep_last=1).apply(state(messages, 10))
    assert edit is not None
    assert edit.messages is not None
    new = edit.messages
    # A result with files or longer than the placeholder is cleared; a short one is left.
    assert [r.content for r in new[2].tool_results] == [CLEARED, CLEARED, "short"]
    assert [r.is_error for r in new[2].tool_results] == [False, True, False]
    assert new[2].tool_results[0].files == ()
    assert new[5] is messages[5]  # the last result stays, the very same message
    assert [m is o for m, o in zip(new, messages, strict=True)] == [True, True, False, True, True, True, True]
    check_history(new)
    # Cleared once, left as it is: nothing more to do.
    assert ClearOldToolResults(keep_last=1).apply(state(new, 10)) is None
    assert ClearOldToolResults(keep_last=1, trigger_tokens=100).apply(state(messages, 100)) is None


def test_sliding_window_drops_the_oldest_turns_whole() -> None:
    messages = history()
    edit = SlidingWindow(max_tokens=1000).apply(state(messages, 1005))
    assert edit is not None
    assert edit.messages == (messages[0], *messages[3:])  # the first turn went with both of its results
    assert SlidingWindow(max_tokens=1000).apply(state(messages, 1000)) is None
    # Far over: everything but the first user message and the last turn goes.
    edit = SlidingWindow(max_tokens=10).apply(state(messages, 10_000))
    assert edit is not None
    assert edit.messages == (messages[0], messages[6])
    assert SlidingWindow(max_tokens=0.5).apply(state(messages, 600, window=1000)) is not None
    with pytest.raises(ConfigError) as failure:
        SlidingWindow(max_tokens=0.5).apply(state(messages, 600))
    assert str(failure.value).startswith(
        "SlidingWindow(max_tokens=0.5) is a share of the model's context window, which is not known"
    )


def long_history(turns: int = 11) -> tuple[Message, ...]:
    """The first user message, then ``turns`` turns of one call and its 600-character result."""
    turn = [(assistant(f"c{n}"), results(f"c{n}", content="x" * 600)) for n in range(1, turns + 1)]
    return (user_message("go"), *(message for pair in turn for message in pair))


def test_the_state_counts_messages_in_proportion_to_the_prompts_size() -> None:
    messages = long_history()
    estimate = estimate_tokens(messages)
    assert state(messages, estimate // 2).tokens_per_estimated_token == 1.0  # the estimate is not scaled down
    assert state(messages, estimate // 2).scaled(messages[1:3]) == estimate_tokens(messages[1:3])
    big = state(messages, estimate * 25)
    assert big.tokens_per_estimated_token == 25.0
    assert big.scaled(messages[1:3]) == 25 * estimate_tokens(messages[1:3])
    assert big.scaled(()) == 0


def test_a_refusal_taken_as_the_window_plus_one_cuts_in_proportion() -> None:
    # A refusal that named no size: the prompt counts as the window plus one, about
    # 80 times the estimate. Aiming at half the window removes about half the turns.
    messages = long_history()
    assert len(messages) == 23
    refused = state(messages, 200_001, window=200_000, refused=True)
    edit = SlidingWindow(max_tokens=0.5).apply(refused)
    assert edit is not None
    assert edit.messages == (messages[0], *messages[13:])  # six of the eleven turns went
    left = 200_001 - refused.scaled(messages[1:13])
    assert 100_000 - refused.scaled(messages[13:15]) < left <= 100_000


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SlidingWindow(max_tokens=0), "SlidingWindow.max_tokens must be a number of tokens"),
        (lambda: SlidingWindow(max_tokens=1.5), "SlidingWindow.max_tokens must be a number of tokens"),
        (lambda: SlidingWindow(max_tokens=True), "SlidingWindow.max_tokens must be a number of tokens"),
        (lambda: ClearOldToolResults(keep_last=-1), "ClearOldToolResults.keep_last must be an int >= 0"),
        (lambda: Summarize("gpt"), "Summarize.model must be a Model"),  # type: ignore[arg-type]  # the point
        (
            lambda: Summarize(ScriptedModel([]), timeout=0),
            "Summarize.timeout must be a number of seconds > 0",
        ),
        (
            lambda: LoopOptions(model=ScriptedModel([]), messages=[user_message("x")], history_policy=[3]),  # type: ignore[list-item]  # the point
            "LoopOptions.history_policy must be a history policy",
        ),
    ],
)
def test_a_policy_with_a_wrong_value_is_a_config_error(make: Any, message: str) -> None:
    with pytest.raises(ConfigError) as failure:
        make()
    assert str(failure.value).startswith(message)


# --- a run under a policy -----------------------------------------------------------------------


def test_a_run_reports_each_compaction_and_keeps_the_full_history() -> None:
    model = ScriptedModel([*fetch_steps(4), text_step("done")])
    options = go(model, SlidingWindow(max_tokens=600))
    reader = run(options)
    parts = collect(reader)
    result = reader.result()
    compactions = [part.compaction for part in parts if part.kind is StreamPartKind.COMPACTION]
    assert [c.policy if c else None for c in compactions] == ["SlidingWindow"] * 3
    # Each part came before the first part of the step it preceded, and is on that step.
    kinds = [part.kind for part in parts]
    assert kinds.index(StreamPartKind.COMPACTION) == kinds.index(StreamPartKind.TOOL_RESULT, 4) + 1
    assert [len(step.compactions) for step in result.steps] == [0, 0, 1, 1, 1]
    assert tuple(c for step in result.steps for c in step.compactions) == tuple(compactions)
    first = result.steps[2].compactions[0]
    assert first.removed == (1, 2)
    assert (first.messages_before, first.messages_after) == (5, 3)
    assert first.tokens_before > 600 >= first.tokens_after
    # The kept history is what the next run continues from; nothing is lost from the full one.
    assert [len(r.messages) for r in model.requests] == [1, 3, 3, 3, 3]
    assert len(result.full_messages) == 10
    assert result.messages == (result.full_messages[0], *result.full_messages[7:])
    removed = {i for step in result.steps for c in step.compactions for i in c.removed}
    assert removed == {1, 2, 3, 4, 5, 6}
    assert reader.messages == list(result.messages)


def test_a_run_without_a_policy_keeps_one_history() -> None:
    result = generate(
        LoopOptions(
            model=ScriptedModel([*fetch_steps(2), text_step("ok")]),
            messages=[user_message("go")],
            tools=[FETCH],
        )
    )
    assert result.full_messages is result.messages
    assert all(step.compactions == () for step in result.steps)


def test_policies_apply_in_list_order_each_on_what_the_one_before_left() -> None:
    seen: list[tuple[str, int]] = []

    @attrs.frozen
    class Spy:
        name: str

        def apply(self, state: HistoryState) -> HistoryEdit | None:
            seen.append((self.name, len(state.messages)))
            return None

    model = ScriptedModel([*fetch_steps(3), text_step("ok")])
    options = go(model, [Spy("a"), SlidingWindow(max_tokens=300), Spy("b")])
    generate(options)
    assert seen == [("a", 1), ("b", 1), ("a", 3), ("b", 3), ("a", 5), ("b", 3), ("a", 5), ("b", 3)]


def test_a_policy_that_breaks_the_history_ends_the_run_naming_it() -> None:
    class Careless:
        def apply(self, state: HistoryState) -> HistoryEdit | None:
            if len(state.messages) < 3:
                return None
            return HistoryEdit(messages=(state.messages[0], state.messages[1]))  # a call without its result

    model = ScriptedModel([*fetch_steps(1), text_step("never")])
    options = go(model, Careless())
    with pytest.raises(RunError) as failure:
        generate(options)
    assert str(failure.value.err) == (
        "the history policy Careless gave a history the providers refuse: "
        "messages[1] has the tool call 'c1' without a result in the messages after it (up to messages[1]); "
        "add its tool result or remove the call"
    )
    assert len(model.requests) == 1


def test_a_policy_that_drops_the_first_user_message_ends_the_run_naming_it() -> None:
    class DropFirst:
        def apply(self, state: HistoryState) -> HistoryEdit | None:
            if len(state.messages) < 3:
                return None
            return HistoryEdit(messages=state.messages[1:])  # starts with the assistant's call, pairs intact

    model = ScriptedModel([*fetch_steps(1), text_step("never")])
    with pytest.raises(RunError) as failure:
        generate(go(model, DropFirst()))
    assert isinstance(failure.value.err, ConfigError)
    assert str(failure.value.err) == (
        "the history policy DropFirst gave a history that does not start with the messages a policy keeps: "
        "messages[0] (a user message) is not in its place; the first 1 message(s), up to and including the "
        "first user message (agentcore.compaction.pinned), must stay as they are"
    )
    assert len(model.requests) == 1  # the second step was never sent


def test_a_policy_may_give_equal_copies_of_the_first_messages() -> None:
    class Copier:
        def apply(self, state: HistoryState) -> HistoryEdit | None:
            head = pinned(state.messages)
            copies = [Message.from_dict(m.to_dict()) for m in state.messages[:head]]
            return HistoryEdit(messages=(*copies, *state.messages[head:]))

    model = ScriptedModel([*fetch_steps(1), text_step("ok")])
    assert generate(go(model, Copier())).text == "ok"


def test_copies_a_policy_keeps_are_not_reported_as_removed() -> None:
    class CopyAndDrop:
        """Copies every message it keeps, and drops the oldest turn once there are two."""

        def apply(self, state: HistoryState) -> HistoryEdit | None:
            copies = [Message.from_dict(m.to_dict()) for m in state.messages]
            if len(copies) < 5:
                return HistoryEdit(messages=copies)  # equal to what it had: no change
            return HistoryEdit(messages=(copies[0], *copies[3:]))

    model = ScriptedModel([*fetch_steps(2), text_step("ok")])
    result = generate(go(model, CopyAndDrop()))
    assert [len(step.compactions) for step in result.steps] == [0, 0, 1]
    [compaction] = result.steps[2].compactions
    assert compaction.removed == (1, 2)
    assert (compaction.messages_before, compaction.messages_after) == (5, 3)
    assert compaction.tokens_after == compaction.tokens_before - estimate_tokens(result.full_messages[1:3])
    assert result.messages == (result.full_messages[0], *result.full_messages[3:])


@pytest.mark.parametrize("answer", [0, -5, "1200", 12.5, True, None])
def test_a_count_that_is_not_a_positive_int_is_logged_and_the_estimate_used(
    answer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[int] = []

    class Odd(ScriptedModel):
        def count_tokens(self, messages: Any, *, system: Any = None, tools: Any = None) -> Any:
            return answer

    @attrs.frozen
    class Spy:
        def apply(self, state: HistoryState) -> HistoryEdit | None:
            seen.append(state.tokens)
            return None

    model = Odd([text_step("ok")])
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        generate(LoopOptions(model=model, messages=[user_message("go")], history_policy=Spy()))
    assert seen == [estimate_tokens([user_message("go")])]
    assert [r.getMessage() for r in caplog.records] == [
        f"agentcore: the model's count_tokens returned {answer!r}, not a positive int; using the estimate"
    ]


def test_a_policy_that_empties_the_history_ends_the_run() -> None:
    class Eraser:
        def apply(self, state: HistoryState) -> HistoryEdit | None:
            return HistoryEdit(messages=())

    model = ScriptedModel([text_step("never")])
    with pytest.raises(RunError) as failure:
        generate(LoopOptions(model=model, messages=[user_message("go")], history_policy=Eraser()))
    assert (
        str(failure.value.err) == "the history policy Eraser gave a history the providers refuse: it is empty"
    )
    assert model.requests == []


def summarize_run(summarizer: ScriptedModel, ctx: Context | None = None) -> tuple[ScriptedModel, Any]:
    """Three fetch steps then an answer, summarizing past 600 tokens, keeping the last 2 messages."""
    model = ScriptedModel([*fetch_steps(3), text_step("done")])
    options = go(model, Summarize(summarizer, trigger_tokens=600, keep_last=2))
    reader = run(options, ctx)
    collect(reader)
    return model, reader


def test_summarize_replaces_the_older_turns_and_counts_its_usage() -> None:
    summarizer = ScriptedModel(
        [
            text_step("Fetched page 1.", usage=Usage(input=90, output=5)),
            text_step("Fetched pages 1 and 2.", usage=Usage(input=95, output=6)),
        ]
    )
    model, reader = summarize_run(summarizer)
    result = reader.result()
    first, second = summarizer.requests
    assert first.system == SUMMARY_INSTRUCTIONS
    assert first.tools == ()
    assert first.messages[0].text == (
        "assistant called the tool fetch with {}\n\nthe tool fetch returned: " + "x" * 600
    )
    assert second.messages[0].text.startswith(f"user: {SUMMARY_HEADING}Fetched page 1.\n\nassistant called")
    # Step 3: the first turn summarized; step 4: that summary and the second turn.
    sent = model.requests[2].messages
    assert [m.role for m in sent] == [Role.USER, Role.USER, Role.ASSISTANT, Role.TOOL]
    assert sent[1].text == SUMMARY_HEADING + "Fetched page 1."
    assert model.requests[3].messages[1].text == SUMMARY_HEADING + "Fetched pages 1 and 2."
    assert [[c.summary for c in step.compactions] for step in result.steps] == [
        [],
        [],
        ["Fetched page 1."],
        ["Fetched pages 1 and 2."],
    ]
    assert result.steps[2].compactions[0].removed == (1, 2)
    assert result.steps[3].compactions[0].removed == (3, 4)  # the first summary has no index
    assert result.steps[2].compactions[0].usage == Usage(input=90, output=5)
    steps = sum((step.usage for step in result.steps), Usage())
    assert result.usage == steps + Usage(input=185, output=11)
    assert [m.text for m in result.full_messages if m.role is Role.USER] == ["go"]


def unchanged(model: ScriptedModel) -> None:
    """The run went on with its whole history: nothing was summarized."""
    assert [len(r.messages) for r in model.requests] == [1, 3, 5, 7]
    for earlier, later in zip(model.requests, model.requests[1:], strict=False):
        assert all(a is b for a, b in zip(earlier.messages, later.messages, strict=False))


def test_a_summary_call_that_raises_leaves_the_history_as_it_was() -> None:
    failure = ModelError(ErrorClass.OVERLOADED, message="overloaded")
    summarizer = ScriptedModel([failure, failure])
    model, reader = summarize_run(summarizer)
    assert reader.result().text == "done"
    assert len(summarizer.requests) == 2  # at steps 3 and 4, each failed
    unchanged(model)
    assert all(step.compactions == () for step in reader.result().steps)


def test_a_summary_that_answers_nothing_leaves_the_history_and_counts_its_usage() -> None:
    summarizer = ScriptedModel([text_step(" ", usage=Usage(input=80, output=1))] * 2)
    model, reader = summarize_run(summarizer)
    unchanged(model)
    result = reader.result()
    assert result.usage == sum((step.usage for step in result.steps), Usage()) + Usage(input=160, output=2)
    # Recorded, though nothing changed: what the call cost, before the steps it preceded.
    [third], [fourth] = result.steps[2].compactions, result.steps[3].compactions
    for compaction, size in ((third, 5), (fourth, 7)):
        assert (compaction.policy, compaction.removed, compaction.changed) == ("Summarize", (), False)
        assert (compaction.messages_before, compaction.messages_after) == (size, size)
        assert compaction.tokens_before == compaction.tokens_after > 600
        assert (compaction.usage, compaction.summary) == (Usage(input=80, output=1), "")


class Charges:
    """A policy whose every edit costs 7 input tokens and changes nothing."""

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        return HistoryEdit(usage=Usage(input=7))


@pytest.mark.parametrize(
    ("make", "cost"),
    [
        (lambda: ClearOldToolResults(keep_last=1), Usage()),
        (lambda: SlidingWindow(max_tokens=600), Usage()),
        (
            lambda: Summarize(
                ScriptedModel([text_step("Fetched.", usage=Usage(input=90, output=5))] * 2),
                trigger_tokens=600,
                keep_last=2,
            ),
            Usage(input=180, output=10),
        ),
        (
            lambda: Summarize(ScriptedModel([text_step("", usage=Usage(input=80, output=1))] * 2), 600, 2),
            Usage(input=160, output=2),
        ),
        (lambda: ProviderCompaction(trigger_tokens=50_000), Usage()),
        (Charges, Usage(input=28)),  # before each of the four steps
    ],
)
def test_the_runs_usage_is_its_steps_and_its_compactions(make: Any, cost: Usage) -> None:
    result = generate(go(ScriptedModel([*fetch_steps(3), text_step("done")]), make()))
    compactions = [c for step in result.steps for c in step.compactions]
    assert sum((c.usage for c in compactions), Usage()) == cost
    assert result.usage == sum((step.usage for step in result.steps), Usage()) + cost


def test_a_summary_call_past_its_timeout_leaves_the_history_as_it_was() -> None:
    clock = ManualClock()

    def slow(request: Request, ctx: Context) -> list[StreamPart]:
        clock.advance(Summarize(ScriptedModel([])).timeout + 1)  # the summary's own deadline passes
        ctx.check()
        return text_step("too late")

    summarizer = ScriptedModel([slow, slow])
    model, reader = summarize_run(summarizer, Context(clock=clock))
    assert reader.result().text == "done"
    unchanged(model)


def test_a_cancel_during_the_summary_ends_the_run() -> None:
    caller = Context()

    def cancelled(request: Request, ctx: Context) -> list[StreamPart]:
        caller.cancel()
        ctx.check()
        return text_step("never")

    model, reader = summarize_run(ScriptedModel([cancelled]), caller)
    with pytest.raises(RunError) as failure:
        reader.result()
    assert isinstance(failure.value.err, Canceled)
    assert len(model.requests) == 2


# --- the retry after a refusal ------------------------------------------------------------------


def too_long(tokens: int = 2500) -> ModelError:
    return ModelError(
        ErrorClass.CONTEXT_LENGTH,
        message=f"invalid_request_error: prompt is too long: {tokens} tokens > 2000 maximum",
        status=400,
    )


def test_a_refused_step_is_cut_again_and_retried_once(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([*fetch_steps(2), too_long(), text_step("ok")])
    options = go(model, SlidingWindow(max_tokens=100_000))
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        result = generate(options)
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.WARNING,
            "agentcore: step 3 was refused (context window exceeded: invalid_request_error: prompt is too "
            "long: 2500 tokens > 2000 maximum (HTTP 400)); the history policies cut again and it is sent "
            "once more (a policy's trigger below the window avoids this)",
        )
    ]
    assert result.text == "ok"
    assert [len(r.messages) for r in model.requests] == [1, 3, 5, 3]
    [compaction] = result.steps[2].compactions
    assert compaction.refused
    assert compaction.tokens_before == 2500  # the size the provider's error stated
    assert compaction.removed == (1, 2)


def test_the_retry_happens_once_and_only_once() -> None:
    second = too_long(2100)
    model = ScriptedModel([*fetch_steps(2), too_long(), second, text_step("never")])
    options = go(model, SlidingWindow(max_tokens=100_000))
    with pytest.raises(RunError) as failure:
        generate(options)
    assert failure.value.err is second
    assert len(model.requests) == 4


def test_a_run_that_fails_after_a_policy_acted_keeps_its_full_history() -> None:
    model = ScriptedModel([*fetch_steps(2), too_long(), too_long(2100), text_step("never")])
    with pytest.raises(RunError) as failure:
        generate(go(model, SlidingWindow(max_tokens=100_000)))
    error = failure.value
    full = model.requests[2].messages  # everything the run had: nothing was removed before step 3
    assert error.messages == [full[0], *full[3:]]  # the kept history: the first turn went
    assert error.full_messages == list(full)
    # A durable-execution engine (DBOS) pickles a failed run's RunError into another process.
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.messages, clone.full_messages) == (error.messages, error.full_messages)


def test_without_a_policy_a_refusal_ends_the_run() -> None:
    refusal = too_long()
    model = ScriptedModel([*fetch_steps(1), refusal, text_step("never")])
    with pytest.raises(RunError) as failure:
        generate(LoopOptions(model=model, messages=[user_message("go")], tools=[FETCH]))
    assert failure.value.err is refusal
    assert len(model.requests) == 2


def test_a_refusal_nothing_can_cut_ends_the_run_with_the_providers_error() -> None:
    refusal = too_long()
    summarizer = ScriptedModel([ModelError(ErrorClass.UPSTREAM, message="down")])
    model = ScriptedModel([*fetch_steps(2), refusal, text_step("never")])
    options = go(model, Summarize(summarizer, trigger_tokens=100_000, keep_last=0))
    with pytest.raises(RunError) as failure:
        generate(options)
    assert failure.value.err is refusal  # the summary failed: no retry, the original error
    assert len(model.requests) == 3
    assert len(summarizer.requests) == 1


class Windowed(ScriptedModel):
    """A scripted model with a 200,000-token context window."""

    context_window = 200_000


def test_a_refusal_that_names_no_size_cuts_about_half_toward_half_the_window() -> None:
    # Anthropic's 413 is about bytes: the prompt counts as the window plus one.
    too_large = ModelError(
        ErrorClass.CONTEXT_LENGTH,
        message="request_too_large: Request exceeds the maximum allowed number of bytes",
        status=413,
    )
    model = Windowed([*fetch_steps(11), too_large, text_step("ok")])
    result = generate(go(model, SlidingWindow(max_tokens=0.5)))
    assert result.text == "ok"
    [compaction] = result.steps[11].compactions
    assert (compaction.refused, compaction.tokens_before) == (True, 200_001)
    # The prompt's estimate is 2,716 tokens, so each estimated token stands for about 73.6;
    # a turn (214 by the estimate) counts for about 15,760: seven of the eleven turns go
    # to get under 100,000 (six would leave about 105,440), not all but the last.
    assert (compaction.messages_before, compaction.messages_after) == (23, 9)
    assert compaction.removed == tuple(range(1, 15))
    assert compaction.tokens_after == 89_986
    assert [len(r.messages) for r in model.requests[-2:]] == [23, 9]


def test_a_refusal_after_a_part_went_out_is_not_retried() -> None:
    refusal = too_long()
    model = ScriptedModel([*fetch_steps(1), [text("partial "), refusal], text_step("never")])
    options = go(model, SlidingWindow(max_tokens=100_000))
    with pytest.raises(RunError) as failure:
        generate(options)
    assert failure.value.err is refusal
    assert len(model.requests) == 2


# --- the cache report ---------------------------------------------------------------------------


def miss(at: int) -> CacheReport:
    return CacheReport(
        messages=3,
        shared_messages=at,
        previous_messages=5,
        change=PrefixChange.MESSAGE,
        changed_at=at,
        cache_read=0,
        expected_read=2000,
        cause=CacheCause.PREFIX_CHANGED,
        reason=f"read 0 of the 2,000 cached tokens: message {at} changed",
    )


def test_compacted_names_a_change_at_or_after_the_compacted_message() -> None:
    report = compacted(miss(3), 1, "SlidingWindow")
    assert report.cause is CacheCause.COMPACTED
    assert (
        report.reason
        == "read 0 of the 2,000 cached tokens: the history was compacted from message 3 on (SlidingWindow)"
    )
    assert compacted(miss(0), 1, "SlidingWindow") == miss(0)
    assert (
        compacted(attrs.evolve(miss(3), cause=CacheCause.TTL_EXPIRED), 1, "x").cause is CacheCause.TTL_EXPIRED
    )


def test_a_step_after_a_compaction_reports_the_miss_as_compaction() -> None:
    model = ScriptedModel(
        [
            counted(call("c1", "fetch"), cache=miss(0)),
            counted(call("c2", "fetch")),
            counted(call("c3", "fetch"), cache=miss(1)),
            counted(text("ok"), reason=FinishReason.STOP, cache=miss(1)),
        ]
    )
    options = go(model, SlidingWindow(max_tokens=600))
    reader = run(options)
    finishes = [part.cache for part in collect(reader) if part.kind is StreamPartKind.STEP_FINISH]
    causes = [step.cache.cause if step.cache else None for step in reader.result().steps]
    assert causes == [CacheCause.PREFIX_CHANGED, None, CacheCause.COMPACTED, CacheCause.COMPACTED]
    assert [report.cause if report else None for report in finishes] == causes


def test_a_compaction_that_changed_nothing_is_not_named_by_the_cache_report() -> None:
    model = ScriptedModel(
        [counted(call("c1", "fetch")), counted(text("ok"), reason=FinishReason.STOP, cache=miss(1))]
    )
    reader = run(go(model, Charges()))
    collect(reader)
    result = reader.result()
    assert [len(step.compactions) for step in result.steps] == [1, 1]
    last = result.steps[1].cache
    assert last is not None
    assert last.cause is CacheCause.PREFIX_CHANGED


def test_a_refusal_a_usage_only_edit_follows_ends_the_run_with_the_providers_error() -> None:
    refusal = too_long()
    model = ScriptedModel([*fetch_steps(1), refusal, text_step("never")])
    with pytest.raises(RunError) as failure:
        generate(go(model, Charges()))
    assert failure.value.err is refusal  # the edit after the refusal cut nothing: no second try
    assert len(model.requests) == 2
    first = model.requests[0]
    step = estimate_tokens(first.messages, system=first.system, tools=first.tools)
    assert failure.value.usage == Usage(
        input=step + 7 * 3
    )  # edits before steps 1 and 2, and after the refusal


# --- durable runs -------------------------------------------------------------------------------


def test_a_durable_run_saves_the_compacted_history_and_resumes_exactly(tmp_path: Path) -> None:
    script = [*fetch_steps(4), text_step("done")]
    policy = SlidingWindow(max_tokens=600)
    whole = generate(
        LoopOptions(
            model=ScriptedModel(script), messages=[user_message("go")], tools=[FETCH], history_policy=policy
        )
    )

    store = SQLiteCheckpoints(tmp_path / "runs.sqlite3")
    crash = ModelError(ErrorClass.UPSTREAM, message="the process died")
    options = LoopOptions(
        model=ScriptedModel([*script[:3], crash]),
        messages=[user_message("go")],
        tools=[FETCH],
        history_policy=policy,
        run_id="r1",
        checkpoints=store,
    )
    with pytest.raises(RunError):
        generate(options)
    saved = store.load("r1")
    assert saved is not None
    # Saved after step 3's tools: the history as kept (the first turn dropped before
    # step 3), the full one, where each kept message stands in it, what step 3 reported.
    assert len(saved.messages) == 5
    assert [m.to_dict() for m in saved.full_messages] == [m.to_dict() for m in whole.full_messages[:7]]
    assert saved.origins == (0, 3, 4, 5, 6)
    assert saved.basis == (estimate_tokens(saved.messages[:3], tools=(FETCH.definition,)), 3)

    again = ScriptedModel(script[3:])
    resumed = generate(attrs.evolve(options, model=again))
    assert [len(r.messages) for r in again.requests] == [3, 3]  # step 4 cut as the whole run cut it
    assert [m.to_dict() for m in resumed.full_messages] == [m.to_dict() for m in whole.full_messages]
    assert [m.to_dict() for m in resumed.messages] == [m.to_dict() for m in whole.messages]
    assert [s.compactions for s in resumed.steps] == [s.compactions for s in whole.steps]


def test_a_run_whose_first_request_was_compacted_resumes_with_the_same_messages(tmp_path: Path) -> None:
    long = [user_message("go"), assistant("c0"), results("c0", content="y" * 900), user_message("next")]
    store = SQLiteCheckpoints(tmp_path / "runs.sqlite3")
    crash = ModelError(ErrorClass.UPSTREAM, message="the process died")
    options = LoopOptions(
        model=ScriptedModel([*fetch_steps(1), crash]),
        messages=long,
        tools=[FETCH],
        history_policy=ClearOldToolResults(keep_last=0),
        run_id="r2",
        checkpoints=store,
    )
    with pytest.raises(RunError):
        generate(options)
    resumed = generate(attrs.evolve(options, model=ScriptedModel([text_step("ok")])))
    assert resumed.text == "ok"
    assert resumed.full_messages[2].tool_results[0].content == "y" * 900


# --- the provider's own compaction --------------------------------------------------------------


def test_provider_compaction_sets_the_settings_of_every_step_and_changes_no_message() -> None:
    model = ScriptedModel([*fetch_steps(2), text_step("ok")])
    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        tools=[FETCH],
        settings=ModelSettings(temperature=0.5),
        history_policy=ProviderCompaction(trigger_tokens=50_000, clear_tool_uses=True),
    )
    result = generate(options)
    sent = [request.settings for request in model.requests]
    assert [getattr(s, "compaction_trigger", None) for s in sent] == [50_000] * 3
    assert [getattr(s, "clear_tool_uses", None) for s in sent] == [True] * 3
    assert [getattr(s, "clear_thinking", "unset") for s in sent] == [None] * 3  # False leaves it unset
    assert [getattr(s, "temperature", None) for s in sent] == [0.5] * 3  # the run's own settings stay
    assert result.full_messages is result.messages
    assert all(step.compactions == () for step in result.steps)


def test_provider_compaction_on_an_api_without_it_fails_before_any_http_call() -> None:
    transport = MemoryTransport()
    model = OpenAIChatModel("gpt-test", api_key="sk-test-0000", transport=transport)
    options = LoopOptions(
        model=model, messages=[user_message("go")], history_policy=ProviderCompaction(trigger_tokens=50_000)
    )
    with pytest.raises(RunError) as failure:
        generate(options)
    assert isinstance(failure.value.err, ConfigError)
    assert "ModelSettings.compaction_trigger" in str(failure.value.err)
    assert transport.sent == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "ProviderCompaction turns nothing on"),
        ({"trigger_tokens": 0}, "ProviderCompaction.trigger_tokens must be an int >= 1 or None, got 0"),
        ({"clear_thinking": "yes"}, "ProviderCompaction.clear_thinking must be True or False, got 'yes'"),
    ],
)
def test_provider_compaction_with_a_wrong_value_is_a_config_error(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as failure:
        ProviderCompaction(**kwargs)
    assert str(failure.value).startswith(message)


def test_a_cancel_reaches_the_count_a_policy_asked_for(server: LocalServer) -> None:
    # The first step's size comes from the model's count endpoint; the run's
    # context must reach that request, or a cancel waits for the server.
    server.add(ServerReply(before_headers=[Stall()]))
    model = AnthropicModel("claude-sonnet-4-5", base_url=server.url, timeout=Timeout(connect=5.0, read=60.0))
    policy = SlidingWindow(max_tokens=50_000)
    reader = run(LoopOptions(model=model, messages=[user_message("hi")], history_policy=policy))
    assert wait_until(lambda: server.hits >= 1)  # the count request, held back
    reader.close()
    assert wait_for_threads("agentcore-stream") == 0  # the worker left the count at once
    assert server.hits == 1  # and sent no step
