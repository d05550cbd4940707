"""The history check every adapter makes before it spends a request
(``agentcore.history.check_history``): each rule, by the message
index it names."""

from __future__ import annotations

import contextlib

import pytest

from agentcore import ConfigError, Message, Reasoning, Role, ToolCall, ToolResult
from agentcore.history import check_history
from agentcore.types import reasoning_part, text_part, tool_call_part, tool_result_part, user_message


def assistant(*calls: str) -> Message:
    return Message(
        Role.ASSISTANT, [text_part("ok"), *(tool_call_part(ToolCall(c, "t", "{}")) for c in calls)]
    )


def results(*ids: str, role: Role = Role.TOOL) -> Message:
    return Message(role, [tool_result_part(ToolResult(i, "t", "done")) for i in ids])


def test_a_history_the_loop_builds_passes() -> None:
    check_history(
        [user_message("hi"), assistant("a", "b"), results("a", "b"), assistant(), user_message("more")]
    )


def test_results_may_come_in_user_messages_and_split_over_messages() -> None:
    check_history([user_message("hi"), assistant("a", "b"), results("a"), results("b", role=Role.USER)])


REFUSED = [
    (
        [user_message("hi"), assistant("a")],
        "messages[1] has the tool call 'a' without a result in the messages after it (up to messages[1])",
    ),
    (
        [
            user_message("hi"),
            assistant("a"),
            results("a"),
            assistant("b"),
            user_message("x"),
            assistant(),
        ],
        "messages[3] has the tool call 'b' without a result in the messages after it (up to messages[4])",
    ),
    (
        [user_message("hi"), assistant("a"), results("a", "z")],
        "messages[2] holds a result for the tool call 'z', which the assistant message before it "
        "did not make",
    ),
    (
        [user_message("hi"), assistant("a"), results("a"), results("a")],
        "messages[3] holds a second result for the tool call 'a'",
    ),
    (
        [user_message("hi"), assistant("a", "a")],
        "messages[1] has two tool calls with the id 'a'",
    ),
    (
        [Message(Role.USER, [reasoning_part(Reasoning(text="hmm"))])],
        "messages[0] is a user message with a reasoning part; reasoning belongs in assistant messages only",
    ),
    (
        [Message(Role.USER, [tool_call_part(ToolCall("a", "t", "{}"))])],
        "messages[0] is a user message with a tool call; tool calls belong in assistant messages only",
    ),
]


@pytest.mark.parametrize(("history", "message"), REFUSED)
def test_a_history_the_providers_refuse_is_a_config_error_naming_the_message(
    history: list[Message], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        check_history(history)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize(("history", "message"), REFUSED)
def test_a_history_checked_step_by_step_is_refused_the_same(history: list[Message], message: str) -> None:
    # Each shorter history first, as a loop sends them: the check goes on from
    # the longest one it passed, and must still refuse with the same index.
    for end in range(1, len(history)):
        with contextlib.suppress(ConfigError):
            check_history(history[:end])
    with pytest.raises(ConfigError) as info:
        check_history(history)
    assert str(info.value).startswith(message)


def test_a_passed_history_does_not_vouch_for_an_edited_one() -> None:
    hi, result = user_message("hi"), results("x")
    check_history([hi, assistant("x"), result])
    # The same last message after another assistant message: checked from the start.
    with pytest.raises(ConfigError) as info:
        check_history([hi, assistant("y"), result])
    assert str(info.value).startswith("messages[2] holds a result for the tool call 'x', which the")


def test_a_passed_history_goes_on_from_its_pending_calls() -> None:
    hi, call = user_message("hi"), assistant("x")
    with pytest.raises(ConfigError):
        check_history([hi, call])  # the call has no result yet
    check_history([hi, call, results("x")])
    with pytest.raises(ConfigError) as info:
        check_history([hi, call, results("x"), results("x")])
    assert str(info.value).startswith("messages[3] holds a second result for the tool call 'x'")
