"""What a run gives back: the :class:`RunReader` that :func:`agentcore.run`
returns, and the :class:`RunResult` (with one :class:`StepResult` per model
step) of a run that finished.

The loop's worker thread publishes the history, the steps and the usage as
one :class:`RunSnapshot` into the run's :class:`~agentcore.engine.channel.Channel`
as the run goes; :meth:`RunReader.result` turns the channel's terminal part
and that snapshot into a :class:`RunResult` or raises :class:`RunError` (see
:mod:`agentcore.engine.loop` for the rules that decide which).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from agentcore.engine.channel import Channel, StreamReader
from agentcore.errors import Canceled, RunError
from agentcore.types import (
    CacheReport,
    FinishReason,
    Message,
    Reasoning,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
)


@attrs.frozen
class StepResult:
    """What one model step produced.

    Attributes:
        text: the step's text.
        tool_calls: the calls the model made in this step.
        tool_results: their results, in call order (empty when none ran).
        usage: the step's token usage.
        finish_reason: the step's finish reason as the model reported it, except
            that a step that carried tool calls is ``tool-calls`` (loop rule 3).
        reasoning: the step's reasoning blocks, in the order the model
            produced them (empty for a model that does not reason).
        cache: how the step's request compared with the earlier request
            through the same model and, when it read less from the prompt
            cache than it could have, why (:class:`agentcore.types.CacheReport`;
            ``docs/caching.md``); None from a model that does not report it.
            Not compared by ``==``.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    tool_results: tuple[ToolResult, ...]
    usage: Usage
    finish_reason: FinishReason
    reasoning: tuple[Reasoning, ...] = ()
    cache: CacheReport | None = attrs.field(default=None, eq=False)

    @property
    def reasoning_text(self) -> str:
        """The step's visible reasoning: the blocks' texts joined by a blank
        line ("" when the model did not reason or showed none)."""
        return "\n\n".join(block.text for block in self.reasoning if block.text)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``{"text", "tool_calls", "tool_results", "usage",
        "finish_reason", "reasoning"}``, each value in its type's ``to_dict``
        form; ``cache`` (a diagnosis for the process that ran the step) is
        left out."""
        return {
            "text": self.text,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_results": [result.to_dict() for result in self.tool_results],
            "usage": self.usage.to_dict(),
            "finish_reason": self.finish_reason.value,
            "reasoning": [block.to_dict() for block in self.reasoning],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepResult:
        """Inverse of :meth:`to_dict`."""
        return cls(
            text=data["text"],
            tool_calls=tuple(ToolCall.from_dict(call) for call in data.get("tool_calls", ())),
            tool_results=tuple(ToolResult.from_dict(result) for result in data.get("tool_results", ())),
            usage=Usage.from_dict(data.get("usage", {})),
            finish_reason=FinishReason(data["finish_reason"]),
            reasoning=tuple(Reasoning.from_dict(block) for block in data.get("reasoning", ())),
        )


def approval_key(step: int, call: ToolCall) -> str:
    """The step-qualified key of a decision on ``call``, made in step ``step`` (1-based).

    ``LoopOptions.approvals`` takes a call's plain id, which decides the call
    waiting under that id now, or this key, which decides only the call made
    in that step: a decision delivered twice (a queue's at-least-once
    delivery, a double click) cannot then approve a later call that reuses
    the id, as some servers' ids repeat from step to step.
    :attr:`RunResult.approval_keys` gives the keys of a waiting run.
    """
    return f"{step}:{call.id}"


@attrs.frozen
class RunResult:
    """The outcome of a finished run, for blocking code.

    Attributes:
        text: the final step's text (the answer).
        steps: every step, in order.
        usage: the total usage of all steps.
        finish_reason: ``stop``, ``length``, ``step-limit``, or
            ``approval-required`` (see ``pending``).
        messages: the whole history (the caller's messages, then the
            assistant and tool messages), ready to continue the conversation.
        output: the validated final answer of a run with
            ``LoopOptions(output_type=...)`` (an instance of that type, or the
            parsed JSON for a schema ``dict``); None without one.
        pending: with ``approval-required``, the tool calls waiting for a
            decision (the history ends with the assistant message holding
            them, unanswered); empty otherwise.
    """

    text: str
    steps: tuple[StepResult, ...]
    usage: Usage
    finish_reason: FinishReason
    messages: tuple[Message, ...]
    output: Any = None
    pending: tuple[ToolCall, ...] = ()

    @property
    def reasoning(self) -> tuple[str, ...]:
        """The visible reasoning of each step, in step order (see
        :attr:`StepResult.reasoning_text`)."""
        return tuple(step.reasoning_text for step in self.steps)

    @property
    def approval_keys(self) -> dict[str, ToolCall]:
        """The calls of :attr:`pending` by their step-qualified key
        (:func:`approval_key`): a decision given under such a key in
        ``LoopOptions.approvals`` decides that call and no later one."""
        return {approval_key(len(self.steps), call): call for call in self.pending}


@attrs.frozen
class RunSnapshot:
    """What a run's worker publishes as it goes, replaced whole (never half an update).

    Attributes:
        messages: the history so far; every tool call in it has its result
            (but those of ``pending``).
        steps: the steps completed so far.
        usage: the total usage of those steps.
        output: the accepted structured answer, once there is one.
        pending: the tool calls waiting for approval (the run ends).
    """

    messages: tuple[Message, ...]
    steps: tuple[StepResult, ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    output: Any = None
    pending: tuple[ToolCall, ...] = ()


class RunReader(StreamReader):
    """The reader returned by :func:`agentcore.run`: iterate its parts, or call :meth:`result`."""

    def __init__(self, channel: Channel[RunSnapshot], on_close: Callable[[], object]) -> None:
        super().__init__(channel, on_close)
        self._run_channel = channel

    @property
    def messages(self) -> list[Message]:
        """The history so far (all of it once the run ended); every tool call in
        it has its result, so it is always valid to send again."""
        return list(self._run_channel.snapshot.messages)

    def text(self) -> Iterator[str]:
        """Iterate only the text deltas, for notebooks and scripts::

            for chunk in run(options).text():
                sys.stdout.write(chunk)

        Leaving the loop early (``break``, an exception, Ctrl-C) closes the
        reader, which cancels the run.

        Yields:
            Each ``text-delta`` part's text, as it arrives.

        Raises:
            RunError: at the end, when the run failed (as :meth:`result`).
        """
        try:
            for part in self:
                if part.kind is StreamPartKind.TEXT_DELTA:
                    yield part.text
        finally:
            self.close()
        self.result()

    def result(self) -> RunResult:
        """Consume the rest of the stream and return the run's outcome.

        Returns:
            The :class:`RunResult` of a run that finished.

        Raises:
            RunError: the run ended in error or was cancelled (also when this
                reader was closed first); it carries ``err``, the ``usage`` of
                the completed steps, ``finish_reason`` and ``messages``.
            BaseException: a non-``Exception`` raised inside the run (such as
                ``KeyboardInterrupt`` from a tool; a :class:`Canceled` excepted,
                which becomes a ``RunError``) is raised again as is. A
                ``KeyboardInterrupt`` that arrives while ``result()`` waits
                closes the reader (cancelling the run) and propagates.
        """
        try:
            for _ in self:
                pass
        except BaseException:  # Ctrl-C while waiting: the run must not go on without a reader
            self.close()
            raise
        terminal = self._run_channel.terminal
        snapshot = self._run_channel.snapshot
        if terminal is None:  # the reader was closed before the run ended
            err: BaseException = Canceled("the reader was closed before the run ended")
            raise RunError(err, snapshot.usage, FinishReason.CANCELED, list(snapshot.messages))
        assert terminal.finish_reason is not None
        if terminal.kind is StreamPartKind.FINISH:
            return RunResult(
                text=snapshot.steps[-1].text if snapshot.steps else "",
                steps=snapshot.steps,
                usage=terminal.total_usage,
                finish_reason=terminal.finish_reason,
                messages=snapshot.messages,
                output=snapshot.output,
                pending=snapshot.pending,
            )
        assert terminal.err is not None
        if not isinstance(terminal.err, (Exception, Canceled)):
            raise terminal.err
        raise RunError(terminal.err, terminal.total_usage, terminal.finish_reason, list(snapshot.messages))
