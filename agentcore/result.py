"""What a run gives back: the :class:`RunResult` (with one :class:`StepResult`
per model step) of a run that finished, and the :class:`RunSnapshot` a run
publishes as it goes.

The loop's worker thread publishes the history, the steps and the usage as
one :class:`RunSnapshot` into the run's channel as the run goes; the reader
(:class:`agentcore.RunReader`, in :mod:`agentcore.engine.channel`) turns the
channel's terminal part and that snapshot into a :class:`RunResult` or raises
:class:`~agentcore.errors.RunError` (design.md, "The loop", decides which).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

from agentcore.caching import CacheReport
from agentcore.limits import LimitReached
from agentcore.types import Compaction, FinishReason, Message, Reasoning, ToolCall, ToolResult, Usage


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
            cache than it could have, why (:class:`agentcore.caching.CacheReport`;
            ``docs/caching.md``); None from a model that does not report it.
            Not compared by ``==``.
        compactions: what the history policies changed before this step
            (``LoopOptions.history_policy``; ``docs/long-runs.md``), in the
            order they acted; empty when none did.
        model_id: the id of the model that answered the step: the run's,
            a ``prepare_step`` plan's, or the one a
            :class:`agentcore.FallbackModel` fell back to ("" in a state
            saved before it was recorded). Not compared by ``==``, as
            ``cache``: the same step is equal whichever model answered it.
        cost: what the step cost in US dollars: its model call, and the
            summary calls of its ``compactions`` (each priced with its
            policy's model), as :mod:`agentcore.cost` prices them; None when
            one of them has no price or ``genai-prices`` is not installed
            (``pip install 'agentcore[prices]'``). Saved with the step (a
            resumed run keeps the price its steps had).
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    tool_results: tuple[ToolResult, ...]
    usage: Usage
    finish_reason: FinishReason
    reasoning: tuple[Reasoning, ...] = ()
    cache: CacheReport | None = attrs.field(default=None, eq=False)
    compactions: tuple[Compaction, ...] = ()
    model_id: str = attrs.field(default="", eq=False)
    cost: Decimal | None = None

    @property
    def reasoning_text(self) -> str:
        """The step's visible reasoning: the blocks' texts joined by a blank
        line ("" when the model did not reason or showed none)."""
        return "\n\n".join(block.text for block in self.reasoning if block.text)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``{"text", "tool_calls", "tool_results", "usage",
        "finish_reason", "reasoning"}``, each value in its type's ``to_dict``
        form, ``compactions`` when there are any, ``model_id`` when it is
        known and ``cost`` (the text of its :class:`Decimal`, exact) when
        known; ``cache`` (a diagnosis for the process that ran the step) is
        left out."""
        out: dict[str, Any] = {
            "text": self.text,
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "tool_results": [result.to_dict() for result in self.tool_results],
            "usage": self.usage.to_dict(),
            "finish_reason": self.finish_reason.value,
            "reasoning": [block.to_dict() for block in self.reasoning],
        }
        if self.compactions:
            out["compactions"] = [compaction.to_dict() for compaction in self.compactions]
        if self.model_id:
            out["model_id"] = self.model_id
        if self.cost is not None:
            out["cost"] = str(self.cost)
        return out

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
            compactions=tuple(Compaction.from_dict(item) for item in data.get("compactions", ())),
            model_id=data.get("model_id", ""),
            cost=None if data.get("cost") is None else Decimal(data["cost"]),
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
        text: the final step's text (the answer); when that step continued a
            turn the provider paused, the whole turn's text (the paused
            steps' text, then its own).
        steps: every step, in order (a continued turn is a step per part).
        usage: the total usage of all steps.
        finish_reason: ``stop``, ``length``, ``content-filter`` (the
            provider stopped the answer for its content; ``text`` is what
            came), ``step-limit``, ``limit`` (a usage limit: see ``limit``),
            or ``approval-required`` (see ``pending``).
        messages: the history as the loop keeps it, ready to continue the
            conversation: the caller's messages, then the assistant and tool
            messages, less what a history policy removed or replaced
            (``LoopOptions.history_policy``: what the next run should start
            from). The same as :attr:`full_messages` when no policy acted.
        output: the validated final answer of a run with
            ``LoopOptions(output_type=...)`` (an instance of that type, or the
            parsed JSON for a schema ``dict``); None without one.
        pending: with ``approval-required``, the tool calls waiting for a
            decision (the history ends with the assistant message holding
            them, unanswered); empty otherwise.
        full_messages: the whole history with nothing removed: every
            message the run had, in order, whatever a history policy took
            out of :attr:`messages` (a summary a policy wrote is not in it).
            The indexes of :attr:`Compaction.removed` count in it. The very
            same tuple as :attr:`messages` when no policy acted (the default).
        limit: with ``limit``, which usage limit ended the run
            (``LoopOptions.limits``); None otherwise.
        agent: the name of the agent that finished the run: the run's
            ``LoopOptions.agent_name``, or the agent the run was handed off
            to last (``agentcore.handoff``; ``docs/agents.md``).
        sub_run_cost: what the sub-runs of the run's agent tools
            (``Agent.as_tool``) cost in US dollars, included in :attr:`cost`;
            their usage is in :attr:`usage`. None when one of them was not
            priced.
    """

    text: str
    steps: tuple[StepResult, ...]
    usage: Usage
    finish_reason: FinishReason
    messages: tuple[Message, ...]
    output: Any = None
    pending: tuple[ToolCall, ...] = ()
    full_messages: tuple[Message, ...] = attrs.field(
        default=attrs.Factory(lambda self: self.messages, takes_self=True)
    )
    limit: LimitReached | None = None
    agent: str = ""
    sub_run_cost: Decimal | None = Decimal(0)

    @property
    def cost(self) -> Decimal | None:
        """What the run cost in US dollars: the sum of its steps'
        :attr:`StepResult.cost` and :attr:`sub_run_cost`; None when one of
        them is None (0 for a run without steps)."""
        steps = total_cost(self.steps)
        if steps is None or self.sub_run_cost is None:
            return None
        return steps + self.sub_run_cost

    @property
    def reasoning(self) -> tuple[str, ...]:
        """The visible reasoning of each step, in step order (see
        :attr:`StepResult.reasoning_text`)."""
        return tuple(step.reasoning_text for step in self.steps)

    @property
    def usage_by_model(self) -> dict[str, Usage]:
        """The usage of the run's steps by the id of the model that answered
        them (:attr:`StepResult.model_id`), in the order the models first
        answered; their sum is :attr:`usage` but for what a history policy's
        summary call and the sub-runs of agent tools (:attr:`sub_run_cost`) used."""
        by_model: dict[str, Usage] = {}
        for step in self.steps:
            by_model[step.model_id] = by_model.get(step.model_id, Usage()) + step.usage
        return by_model

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
        messages: the history so far, as the loop keeps it (compacted by the
            history policies); every tool call in it has its result (but
            those of ``pending``).
        steps: the steps completed so far.
        usage: the total usage of those steps (and of summary calls).
        output: the accepted structured answer, once there is one.
        pending: the tool calls waiting for approval (the run ends).
        full_messages: the history with nothing removed; None: the same as
            ``messages`` (no policy acted).
        limit: the usage limit that ended the run, once one did.
        agent: the name of the agent in charge (``LoopOptions.agent_name``;
            another after a handoff).
        sub_run_cost: what the sub-runs of agent tools cost in US dollars;
            None when one was not priced.
    """

    messages: tuple[Message, ...]
    steps: tuple[StepResult, ...] = ()
    usage: Usage = attrs.field(factory=Usage)
    output: Any = None
    pending: tuple[ToolCall, ...] = ()
    full_messages: tuple[Message, ...] | None = None
    limit: LimitReached | None = None
    agent: str = ""
    sub_run_cost: Decimal | None = Decimal(0)


def total_cost(steps: tuple[StepResult, ...] | list[StepResult]) -> Decimal | None:
    """The sum of the ``steps``' costs; None when one is None."""
    total = Decimal(0)
    for step in steps:
        if step.cost is None:
            return None
        total += step.cost
    return total
