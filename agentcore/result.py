"""What a run gives back: the :class:`RunReader` that :func:`agentcore.run`
returns, and the :class:`RunResult` (with one :class:`StepResult` per model
step) of a run that finished.

The loop's worker thread publishes the history, the steps and the usage into
a :class:`_RunState` as the run goes (each field replaced whole, so a reader
never sees half an update); :meth:`RunReader.result` turns the terminal part
and that state into a :class:`RunResult` or raises :class:`RunError` (see
:mod:`agentcore.loop` for the rules that decide which).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

import attrs

from agentcore.errors import Canceled, RunError
from agentcore.stream import StreamReader, _Channel
from agentcore.types import (
    FinishReason,
    Message,
    Reasoning,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
)

_log = logging.getLogger("agentcore")


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
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    tool_results: tuple[ToolResult, ...]
    usage: Usage
    finish_reason: FinishReason
    reasoning: tuple[Reasoning, ...] = ()

    @property
    def reasoning_text(self) -> str:
        """The step's visible reasoning: the blocks' texts joined by a blank
        line ("" when the model did not reason or showed none)."""
        return "\n\n".join(block.text for block in self.reasoning if block.text)


@attrs.frozen
class RunResult:
    """The outcome of a finished run, for blocking code.

    Attributes:
        text: the final step's text (the answer).
        steps: every step, in order.
        usage: the total usage of all steps.
        finish_reason: ``stop``, ``length`` or ``step-limit``.
        messages: the whole history (the caller's messages, then the
            assistant and tool messages), ready to continue the conversation.
    """

    text: str
    steps: tuple[StepResult, ...]
    usage: Usage
    finish_reason: FinishReason
    messages: tuple[Message, ...]

    @property
    def reasoning(self) -> tuple[str, ...]:
        """The visible reasoning of each step, in step order (see
        :attr:`StepResult.reasoning_text`)."""
        return tuple(step.reasoning_text for step in self.steps)


class _RunState:
    """What the worker publishes for ``result()``; each field is replaced whole.

    :meth:`end` decides the run's one terminal part: the worker's, or the
    ``canceled`` part sent on a cancel while the worker is still busy.
    """

    def __init__(self, messages: tuple[Message, ...]) -> None:
        self.messages = messages
        self.steps: tuple[StepResult, ...] = ()
        self.usage = Usage()
        self.terminal: StreamPart | None = None
        self._lock = threading.Lock()

    def end(self, terminal: StreamPart) -> bool:
        """Make ``terminal`` the run's terminal part unless one was chosen; True if it was set."""
        with self._lock:
            if self.terminal is not None:
                return False
            self.terminal = terminal
        _log.debug(
            "agentcore: run ended (%s) after %d step%s; usage %s",
            terminal.finish_reason.value if terminal.finish_reason else "?",
            len(self.steps),
            "" if len(self.steps) == 1 else "s",
            terminal.total_usage,
        )
        return True


class RunReader(StreamReader):
    """The reader returned by :func:`agentcore.run`: iterate its parts, or call :meth:`result`."""

    def __init__(self, channel: _Channel, on_close: Callable[[], object], state: _RunState) -> None:
        super().__init__(channel, on_close)
        self._state = state

    @property
    def messages(self) -> list[Message]:
        """The history so far (all of it once the run ended); every tool call in
        it has its result, so it is always valid to send again."""
        return list(self._state.messages)

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
                ``KeyboardInterrupt`` from a tool) is raised again as is. A
                ``KeyboardInterrupt`` that arrives while ``result()`` waits
                closes the reader (cancelling the run) and propagates.
        """
        try:
            for _ in self:
                pass
        except BaseException:  # Ctrl-C while waiting: the run must not go on without a reader
            self.close()
            raise
        state = self._state
        terminal = state.terminal
        if terminal is None:  # the worker publishes its terminal part before sending it
            err: BaseException = Canceled("the reader was closed before the run ended")
            raise RunError(err, state.usage, FinishReason.CANCELED, list(state.messages))
        assert terminal.finish_reason is not None
        if terminal.kind is StreamPartKind.FINISH:
            return RunResult(
                text=state.steps[-1].text if state.steps else "",
                steps=state.steps,
                usage=terminal.total_usage,
                finish_reason=terminal.finish_reason,
                messages=state.messages,
            )
        assert terminal.err is not None
        if not isinstance(terminal.err, Exception):
            raise terminal.err
        raise RunError(terminal.err, terminal.total_usage, terminal.finish_reason, list(state.messages))
