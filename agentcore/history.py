"""The history check: whether the providers would take a history, made
before a request is spent.

Both APIs refuse a history whose tool calls and results do not pair up (the
Anthropic Messages API: every ``tool_use`` block needs a ``tool_result`` in
the next user turn, https://docs.anthropic.com/en/docs/build-with-claude/tool-use;
Chat Completions: an assistant message with ``tool_calls`` must be followed
by a ``tool`` message for each ``tool_call_id``,
https://platform.openai.com/docs/guides/function-calling), and neither has a
place for reasoning, or for a block the provider returned (a compaction
block, :class:`agentcore.ProviderItem`), outside an assistant turn. A history
built by the loop always passes; one written or edited by hand, by a history
policy or by ``prepare_step`` may not, and the provider's 400 would come
after a network round trip and with a less precise message. Every built-in
adapter, the test kit's models and the loop (for a history a policy or a
step plan gave) make this one check.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from agentcore.errors import ConfigError
from agentcore.memo import MessageMemo
from agentcore.types import Message, Role


def check_history(messages: Sequence[Message]) -> None:
    """Raise :class:`ConfigError` for a history the providers refuse.

    The rules (message indexes count from 0 in ``messages``):

    * every tool call of an assistant message has exactly one result in the
      messages after it and before the next assistant message;
    * every tool result answers a call of the closest assistant message
      before it;
    * tool call ids are unique within an assistant message;
    * reasoning parts, provider items and tool calls appear only in
      assistant messages.

    A loop sends its history again at every step with a few messages added,
    so the check goes on from where it stopped for the longest history it
    passed before that this one starts with (:class:`_Passed`): each step
    checks only its new messages.

    Raises:
        ConfigError: naming the message index, the call id and the rule.
    """
    history = tuple(messages)
    start, pending, answered = _passed.resume(history)
    for index in range(start, len(history)):
        message = history[index]
        if message.role is Role.ASSISTANT:
            _no_missing_results(pending, index)
            pending, answered = {}, set()
            for call in message.tool_calls:
                if call.id in pending:
                    raise ConfigError(f"messages[{index}] has two tool calls with the id {call.id!r}")
                pending[call.id] = index
            continue
        if message.reasoning:
            raise ConfigError(
                f"messages[{index}] is a {message.role.value} message with a reasoning part; "
                "reasoning belongs in assistant messages only"
            )
        if message.provider_items:
            raise ConfigError(
                f"messages[{index}] is a {message.role.value} message with a provider item "
                f"({message.provider_items[0].type!r}); provider items belong in assistant messages only"
            )
        if message.tool_calls:
            raise ConfigError(
                f"messages[{index}] is a {message.role.value} message with a tool call; "
                "tool calls belong in assistant messages only"
            )
        for result in message.tool_results:
            call_id = result.tool_call_id
            if call_id in answered:
                raise ConfigError(f"messages[{index}] holds a second result for the tool call {call_id!r}")
            if call_id not in pending:
                raise ConfigError(
                    f"messages[{index}] holds a result for the tool call {call_id!r}, which the "
                    "assistant message before it did not make"
                )
            del pending[call_id]
            answered.add(call_id)
    if len(history) > start:
        _passed.remember(history, pending, answered)
    _no_missing_results(pending, len(history))


class _Passed:
    """The histories :func:`check_history` went through, each with the calls
    still awaiting a result at its end and the calls answered since the last
    assistant message, kept by its last message
    (:class:`agentcore.memo.MessageMemo`): a longer history that
    starts with the very same message objects is checked from there on.
    An entry refers to its messages weakly: it keeps none alive.
    """

    def __init__(self) -> None:
        self._memo: MessageMemo[tuple[tuple[weakref.ref[Message], ...], dict[str, int], set[str]]] = (
            MessageMemo()
        )

    def resume(self, history: tuple[Message, ...]) -> tuple[int, dict[str, int], set[str]]:
        """Where to go on checking ``history``: the number of leading
        messages checked before, and copies of the state after them."""
        found = self._memo.find(history, None)
        for end in range(len(history), 0, -1):
            entry = found[end - 1]
            if (
                entry is not None
                and len(entry[0]) == end
                and all(ref() is message for ref, message in zip(entry[0], history, strict=False))
            ):
                return end, dict(entry[1]), set(entry[2])
        return 0, {}, set()

    def remember(self, history: tuple[Message, ...], pending: dict[str, int], answered: set[str]) -> None:
        refs = tuple(weakref.ref(message) for message in history)
        self._memo.store([(history[-1], (refs, dict(pending), set(answered)))], None)


_passed = _Passed()


def _no_missing_results(pending: dict[str, int], before: int) -> None:
    for call_id, index in pending.items():
        raise ConfigError(
            f"messages[{index}] has the tool call {call_id!r} without a result in the messages "
            f"after it (up to messages[{before - 1}]); add its tool result or remove the call"
        )
