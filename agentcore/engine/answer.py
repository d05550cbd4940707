"""A run's structured final answer (``LoopOptions.output_type``,
docs/structured-output.md): the ``final_answer`` tool of
``output_mode="tool"``, and the checks of each answer the model gives.

A valid answer becomes the run's output; an invalid one goes back to the
model (a user message with its problems, or the tool's error result) until
``output_retries`` are spent, and then the run fails with
:class:`~agentcore.output.OutputValidationError` (loop rule 2 in
docs/design.md). The counts and the last rejected answer live in the run's
:class:`~agentcore.engine.loop.RunProgress`, so a durable run keeps them; the
loop publishes after each check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentcore.context import Context
from agentcore.output import OUTPUT_TOOL, OutputSpec, OutputValidationError, retry_prompt
from agentcore.tools import ToolInputError
from agentcore.types import FinishReason, ToolCall, user_message

if TYPE_CHECKING:
    from agentcore.engine.loop import RunProgress

_CUT_OFF = {
    FinishReason.LENGTH: "(top level): the answer was cut off at the output token limit "
    "(finish reason length)",
    FinishReason.CONTENT_FILTER: "(top level): the provider's content filter stopped the answer "
    "(finish reason content-filter)",
}
"""Why a structured answer cut off is not checked, by its step's finish reason."""


class FinalAnswer:
    """The ``final_answer`` tool of ``output_mode="tool"``: checks each
    call's arguments (an invalid answer is an error result the model reads);
    the loop decides after the step, from the step's calls."""

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.definition = spec.tool

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        _value, problems = self.spec.check(arguments, tool=True)
        if problems:
            lines = "\n".join(f"- {p}" for p in problems)
            raise ToolInputError(
                f"the final answer does not match its schema:\n{lines}\n"
                f"Call {OUTPUT_TOOL} again with a corrected answer."
            )
        return "Final answer received."


def accept_text(progress: RunProgress, spec: OutputSpec, text: str, *, tool_mode: bool, retries: int) -> bool:
    """Check a text answer: True when it is the run's output; otherwise its
    problems go back to the model in a user message appended to the history
    (in tool mode: that the answer goes through the tool).

    Raises:
        OutputValidationError: the answer is invalid and ``retries`` are spent.
    """
    value, problems = spec.parse(text)
    if not problems:
        return _accepted(progress, value, text, tool=False)
    if tool_mode:  # prose instead of the tool
        problems = [f"(top level): give the final answer by calling the {OUTPUT_TOOL} tool"]
    _reject(progress, text, problems, retries)
    progress.history.append(user_message(retry_prompt(problems, tool=tool_mode)))
    return False


def accept_call(progress: RunProgress, spec: OutputSpec, calls: tuple[ToolCall, ...], retries: int) -> bool:
    """Check the step's ``final_answer`` calls: True when one is valid (the
    run's output); their error results told the model otherwise.

    Raises:
        OutputValidationError: none is valid and ``retries`` are spent.
    """
    answers = [call.input for call in calls if call.name == OUTPUT_TOOL]
    problems: list[str] = []
    for raw in answers:
        value, problems = spec.parse(raw, tool=True)
        if not problems:
            return _accepted(progress, value, raw, tool=True)
    if answers:
        _reject(progress, answers[-1], problems, retries)
    return False


def cut_off(progress: RunProgress, text: str, reason: FinishReason) -> OutputValidationError:
    """The error of an answer cut off by the output token limit or a content
    filter (``reason``): it counts as an answer, and is not checked."""
    progress.answers_checked += 1
    return OutputValidationError(text, [_CUT_OFF[reason]], progress.usage, progress.answers_checked)


def unfinished(progress: RunProgress, which: str) -> OutputValidationError:
    """The error of a structured answer not given when the run reached
    ``which`` limit (``"step limit (20)"``)."""
    limit = f"(top level): the run reached its {which} before a valid final answer"
    return OutputValidationError(
        progress.rejected_answer,
        [*progress.rejection_problems, limit],
        progress.usage,
        progress.answers_checked,
    )


def _accepted(progress: RunProgress, value: Any, raw: str, *, tool: bool) -> bool:
    progress.answers_checked += 1
    progress.output = value
    progress.answer_json, progress.answer_by_tool = raw, tool
    return True


def _reject(progress: RunProgress, raw: str, problems: list[str], retries: int) -> None:
    """Count a failed answer; raise once ``retries`` are spent."""
    progress.answers_checked += 1
    progress.rejected_answer, progress.rejection_problems = raw, problems
    if progress.answers_checked > retries:
        raise OutputValidationError(raw, problems, progress.usage, progress.answers_checked)
