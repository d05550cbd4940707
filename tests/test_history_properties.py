"""Property tests (hypothesis) of the history policies (issue 23 item 6):

1. For random histories (text, reasoning, parallel tool calls, files in
   messages and in results, provider items, a history that opens with an
   assistant message) and random budgets, every shipped policy's history
   passes the adapters' history check
   (:func:`agentcore.history.check_history`), keeps each tool
   call with its result and the messages up to the first user message, and
   keeps each message it does not rewrite as the very same object; a
   summary that fails leaves the history as it was.
2. A history with a turn removed from its middle is refused by that check.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import (
    ConfigError,
    ErrorClass,
    File,
    FinishReason,
    Message,
    ModelError,
    Reasoning,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    file_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.compaction import (
    CLEARED,
    ClearOldToolResults,
    HistoryEdit,
    HistoryPolicy,
    HistoryState,
    SlidingWindow,
    Summarize,
    pinned,
)
from agentcore.history import check_history
from agentcore.testing import ScriptedModel
from agentcore.tokens import estimate_tokens
from agentcore.types import ProviderItem, provider_item_part

EXAMPLES = 150
PNG = File(media_type="image/png", data=b"\x89PNG\r\n\x1a\n")

words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=60)


@st.composite
def turn(draw: Any, number: int) -> list[Message]:
    """One turn: a user message, a text answer (maybe reasoned), or calls
    (maybe several at once, maybe after reasoning or a provider item) with
    the tool message answering them."""
    kind = draw(st.sampled_from(["user", "answer", "calls"]))
    if kind == "user":
        parts = [text_part(draw(words))]
        if draw(st.booleans()):
            parts.append(file_part(PNG.data, media_type="image/png"))
        return [Message(role=Role.USER, content=parts)]
    head = []
    if draw(st.booleans()):
        head.append(reasoning_part(Reasoning(text=draw(words), signature="sig", format="anthropic")))
    if draw(st.integers(0, 4)) == 0:
        data = json.dumps({"type": "compaction", "content": "earlier"})
        head.append(provider_item_part(ProviderItem("compaction", data, "anthropic", "api.anthropic.com")))
    if kind == "answer":
        return [Message(role=Role.ASSISTANT, content=[*head, text_part(draw(words))])]
    count = draw(st.integers(1, 3))
    calls = [ToolCall(f"t{number}_{i}", "fetch", json.dumps({"q": draw(words)})) for i in range(count)]
    results = [
        ToolResult(
            call.id,
            call.name,
            draw(words) * draw(st.integers(1, 20)),
            files=[PNG] if draw(st.booleans()) else (),
        )
        for call in calls
    ]
    asked = Message(role=Role.ASSISTANT, content=[*head, *(tool_call_part(call) for call in calls)])
    return [asked, Message(role=Role.TOOL, content=[tool_result_part(result) for result in results])]


@st.composite
def histories(draw: Any) -> tuple[Message, ...]:
    opening = [Message(role=Role.ASSISTANT, content=[text_part("Hello.")])] if draw(st.booleans()) else []
    messages = [*opening, user_message(draw(words))]
    for number in range(draw(st.integers(0, 25))):
        messages.extend(draw(turn(number)))
    return tuple(messages)


def summarizer(outcome: str) -> ScriptedModel:
    if outcome == "fails":
        return ScriptedModel([ModelError(ErrorClass.OVERLOADED, message="busy")])
    text = "" if outcome == "empty" else "The agent fetched pages."
    return ScriptedModel(
        [[StreamPart.text_delta(text), StreamPart.step_finish(FinishReason.STOP, Usage(input=5, output=2))]]
    )


@st.composite
def policies(draw: Any) -> tuple[HistoryPolicy, str]:
    budget = draw(st.integers(1, 8000))
    which = draw(st.sampled_from(["clear", "window", "summarize"]))
    if which == "clear":
        trigger = draw(st.one_of(st.none(), st.integers(1, 8000)))
        return ClearOldToolResults(keep_last=draw(st.integers(0, 6)), trigger_tokens=trigger), "ok"
    if which == "window":
        return SlidingWindow(max_tokens=budget), "ok"
    outcome = draw(st.sampled_from(["ok", "fails", "empty"]))
    return Summarize(summarizer(outcome), trigger_tokens=budget, keep_last=draw(st.integers(0, 8))), outcome


def pairs(messages: tuple[Message, ...]) -> dict[str, tuple[int, int]]:
    """Each call id: the index of its call and of its result."""
    made = {call.id: i for i, m in enumerate(messages) for call in m.tool_calls}
    answered = {result.tool_call_id: i for i, m in enumerate(messages) for result in m.tool_results}
    assert made.keys() == answered.keys()
    return {call_id: (made[call_id], answered[call_id]) for call_id in made}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), policies(), st.booleans())
def test_every_policy_leaves_a_history_the_providers_take(
    messages: tuple[Message, ...], chosen: tuple[HistoryPolicy, str], refused: bool
) -> None:
    policy, outcome = chosen
    check_history(messages)
    tokens = estimate_tokens(messages)
    edit = policy.apply(HistoryState(messages, "", (), ScriptedModel([]), tokens, None, refused))
    if edit is None or edit.messages is None:
        if isinstance(policy, Summarize) and outcome != "ok" and edit is not None:
            assert edit == HistoryEdit(usage=Usage(input=5, output=2))  # an empty summary: its usage only
        return
    assert outcome == "ok"
    new = edit.messages
    check_history(new)
    head = pinned(messages)
    assert new[:head] == messages[:head]
    assert all(a is b for a, b in zip(new[:head], messages[:head], strict=True))
    kept = {id(m) for m in messages}
    written = [m for m in new if id(m) not in kept]
    before = pairs(messages)
    after = pairs(new)
    if isinstance(policy, ClearOldToolResults):
        assert len(new) == len(messages)
        assert after.keys() == before.keys()  # every call stays, with its result
        assert all(m.role is Role.TOOL for m in written)
        assert sum(r.content != CLEARED for m in new for r in m.tool_results) >= min(
            policy.keep_last, len(before)
        )
    elif isinstance(policy, SlidingWindow):
        assert written == []
        end = len(messages) - (len(new) - head)
        assert new == (*messages[:head], *messages[end:])  # one cut, of whole turns
        assert set(after) <= set(before)
    else:
        [summary] = written
        assert summary.role is Role.USER
        assert set(after) <= set(before)
        assert new[-1] is messages[-1]


@pytest.mark.parametrize("index", [1, 2])
def test_a_damaged_history_is_refused(index: int) -> None:
    messages = (
        user_message("go"),
        Message(role=Role.ASSISTANT, content=[tool_call_part(ToolCall("t1", "fetch"))]),
        Message(role=Role.TOOL, content=[tool_result_part(ToolResult("t1", "fetch", "page"))]),
    )
    damaged = messages[:index] + messages[index + 1 :]
    with pytest.raises(ConfigError):
        check_history(damaged)
