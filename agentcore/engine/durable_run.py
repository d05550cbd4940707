"""Resume, checkpoints, approval decisions and replay: what a run does on top of
a plain run when it asks for it (design.md, loop rules 11 and 12;
``docs/durable.md``).

The loop uses a :class:`DurableRun` when the run has a ``run_id`` (its state
is saved to ``LoopOptions.checkpoints``, and a saved run resumes), a
``step_runner`` (a durable-execution engine records each model step and tool
call, and replays them), ``approvals`` (decisions on calls that wait), or a
history that ends with unanswered tool calls (a run that ended with
``approval-required``, passed back without a store). A plain run calls the
model and its tools directly and never comes here.

The state types, the stores and the runner protocol are public, in
:mod:`agentcore.durable`; this module is the engine's use of them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from agentcore.context import Context
from agentcore.durable import DirectRunner, ReplayDiverged, RunState, StepRecord, fingerprint
from agentcore.engine.step import Step
from agentcore.errors import ConfigError
from agentcore.options import LoopOptions
from agentcore.result import approval_key
from agentcore.types import FinishReason, Message, Request, Role, StreamPart, ToolCall, ToolResult

if TYPE_CHECKING:
    from agentcore.engine.loop import RunProgress

_log = logging.getLogger("agentcore")

_T = TypeVar("_T")


class DurableRun:
    """The durable side of one run: the state it started from, the decisions
    on its waiting calls, its checkpoints and its step runner.

    Args:
        options: the run's options.

    Raises:
        ConfigError: the store has no state for the run and ``messages`` is
            empty; ``messages`` (or ``system``) differ from the saved run's
            first request; the saved state cannot be read; ``approvals`` name
            a call the run never made.
    """

    def __init__(self, options: LoopOptions) -> None:
        self.saved = start_state(options)
        """The state the run started from: saved by an earlier run, or new."""
        self.store = options.checkpoints
        self.runner = options.step_runner or DirectRunner()
        self.run_id = options.run_id or ""
        self.decisions = {**self.saved.decisions, **resolve_approvals(options, self.saved)}
        """Decisions on the calls pending when the run starts (only those:
        a later step may reuse a call id), by call id."""
        self.fingerprints = list(self.saved.fingerprints)
        self.fingerprinting = options.run_id is not None or options.step_runner is not None
        """Fingerprint each request: the run is saved, or recorded by a runner."""
        self.revision = self.saved.revision
        finished = self.saved.finish_reason
        self.ended = None if finished is FinishReason.APPROVAL_REQUIRED else finished
        """The finish reason of a run that had finished: its result is given again."""

    def model_step(
        self, number: int, request: Request, stream: Callable[[int, Request], Step]
    ) -> tuple[Step, bool]:
        """Step ``number`` through the step runner: the step, and True when
        ``stream(number, request)`` streamed it now (False: the runner
        replayed its record, whose parts went to the reader when it ran).

        Raises:
            ReplayDiverged: the runner replayed a step recorded for another request.
        """
        request_fingerprint = fingerprint(request) if self.fingerprinting else ""
        record_step = _Recorder(functools.partial(_record, stream, number, request, request_fingerprint))
        record = self.runner.model_step(f"{self.run_id}:step:{number}", record_step)
        # After the step: a step refused as too long is tried once more with
        # another request (docs/long-runs.md), and a step has one fingerprint.
        self.fingerprints.append(request_fingerprint)
        if record.fingerprint != request_fingerprint:
            raise ReplayDiverged(
                f"run {self.run_id!r}: the recorded step {number} answered another request "
                "(the run's messages, or the code around it, changed since it was recorded)"
            )
        finish = StreamPart.step_finish(record.finish_reason, record.usage, record.cache, record.model_id)
        return Step(
            record.text, list(record.content), list(record.calls), record.reasoning, finish
        ), record_step.called

    def call(
        self, number: int, execute: Callable[[ToolCall, Context], ToolResult], ctx: Context, call: ToolCall
    ) -> tuple[ToolResult, bool]:
        """Run ``call`` of step ``number`` through the step runner, or deny it
        as decided: its result, and True when it ran now (False: the runner
        gave its recorded result).

        In a run with a ``run_id`` the tool gets a context of its own (a child
        of ``ctx``) whose ``idempotency_key`` is ``"<run id>:<step>:<call id>"``.
        """
        decision = self.decisions.get(call.id, True)
        if decision is not True:
            return denied(call, decision or ""), True
        key = f"{self.run_id}:{number}:{call.id}"
        tool_ctx = Context(parent=ctx, idempotency_key=key) if self.run_id else ctx
        run_call = _Recorder(functools.partial(execute, call, tool_ctx))
        try:
            result = self.runner.tool_call(key, run_call)
        finally:
            if tool_ctx is not ctx:
                tool_ctx.detach()
        return result, run_call.called

    def calls_made(self, progress: RunProgress) -> None:
        """A step made the calls now pending: no decision covers them yet; saved."""
        self.decisions = {}
        self.save(progress)

    def decisions_taken(self, progress: RunProgress) -> None:
        """The pending calls are about to run: save the decisions on them first
        (a run killed in the first call does not ask again)."""
        if self.decisions and self.decisions != self.saved.decisions:
            self.save(progress)

    def calls_answered(self) -> None:
        """The pending calls have their results: their decisions are used."""
        self.decisions = {}

    def finished(self, progress: RunProgress, reason: FinishReason) -> None:
        """The run ends with ``reason``: saved, unless nothing happened since
        the state it started from was saved."""
        changed = self.revision != self.saved.revision or self.decisions != self.saved.decisions
        if changed or self.saved.finish_reason is None:
            self.save(progress, reason)

    def save(self, progress: RunProgress, finish: FinishReason | None = None) -> None:
        """Save the run's state to ``LoopOptions.checkpoints``, when there is one."""
        if self.store is None:
            return
        self.revision += 1
        self.store.save(
            RunState(
                self.run_id,
                tuple(progress.history),
                tuple(progress.steps),
                progress.usage,
                progress.pending,
                tuple(progress.results_by_id.values()),
                tuple(call.id for call in progress.awaiting_approval),
                self.decisions,
                tuple(self.fingerprints),
                finish,
                progress.answer_json,
                progress.answer_by_tool,
                output_attempts=progress.answers_checked,
                full_messages=() if progress.full is None else progress.full_history()[0],
                origins=() if progress.full is None else _indexes(progress.full_history()[1]),
                basis=progress.basis,
                sub_run_cost=progress.sub_run_cost,
                revision=self.revision,
            )
        )


class _Recorder(Generic[_T]):
    """The call a step runner makes; :attr:`called` tells afterwards whether
    it ran (False: the runner returned what it recorded when it ran before)."""

    def __init__(self, call: Callable[[], _T]) -> None:
        self._call = call
        self.called = False

    def __call__(self) -> _T:
        self.called = True
        return self._call()


def _record(
    stream: Callable[[int, Request], Step], number: int, request: Request, request_fingerprint: str
) -> StepRecord:
    """Stream step ``number`` and give it as the record a step runner keeps."""
    step = stream(number, request)
    reason = step.finish.finish_reason
    assert reason is not None
    finish = step.finish
    return StepRecord(step.content, finish.usage, reason, request_fingerprint, finish.cache, finish.model_id)


def _indexes(origins: list[int | None]) -> tuple[int, ...]:
    """``RunProgress.origins`` as saved: -1 for None."""
    return tuple(-1 if origin is None else origin for origin in origins)


def unanswered(messages: tuple[Message, ...]) -> tuple[ToolCall, ...]:
    """The tool calls of a history's last message when it is an assistant
    message (a run that ended with ``approval-required`` leaves its calls so)."""
    last = messages[-1] if messages else None
    if last is None or last.role is not Role.ASSISTANT:
        return ()
    return tuple(last.tool_calls)


def start_state(options: LoopOptions) -> RunState:
    """The state a run starts from: the one saved for ``options.run_id``, or a new one.

    Raises:
        ConfigError: the store has no state for the run and ``messages`` is
            empty; ``messages`` (or ``system``) differ from the saved run's
            first request; the saved state cannot be read.
    """
    run_id = options.run_id or ""
    state = None
    if options.checkpoints is not None:
        try:
            state = options.checkpoints.load(run_id)
        except ValueError as exc:
            raise ConfigError(f"run {run_id!r}: the saved state cannot be read: {exc}") from exc
    if state is None:
        if not options.messages:
            raise ConfigError(
                f"run {run_id!r} has no saved state and LoopOptions.messages is empty: nothing to run"
            )
        # A history ending with unanswered calls (a run that ended with approval-required,
        # passed back without a store) resumes them: the calls that need no approval run, the
        # others wait for a decision; sent to a model as is, the API would refuse it.
        state = RunState(run_id, options.messages, pending=unanswered(options.messages))
    elif options.messages and state.fingerprints:
        first = fingerprint(Request(system=options.system, messages=options.messages))
        if state.full_messages:  # a history policy may have changed the first request's messages
            began = state.full_messages[: len(options.messages)]
            saved = fingerprint(Request(system=options.system, messages=began))
        else:
            saved = state.fingerprints[0]
        if first != saved:
            raise ConfigError(
                f"run {run_id!r} was saved for another conversation: LoopOptions.messages or system "
                "differ from its first request (pass no messages to resume it)"
            )
    return state


def resolve_approvals(options: LoopOptions, state: RunState) -> dict[str, bool | str]:
    """``options.approvals`` as decisions on the calls ``state`` has pending, by call id.

    A plain call id decides the pending call with that id. A step-qualified
    key (:func:`~agentcore.result.approval_key`) decides the pending call only
    if that step made it; a key naming an earlier step's call is a decision
    already used, and is ignored (logged at INFO). Without saved steps (no
    store: the history was passed back) the step of the pending calls is not
    known, and a qualified key is taken for the pending call with its id.

    Raises:
        ConfigError: a key names a call the run never made.
    """
    if not options.approvals:
        return {}
    pending = {call.id for call in state.pending}
    step = len(state.steps) if state.steps else None
    made = {approval_key(n, call) for n, earlier in enumerate(state.steps, 1) for call in earlier.tool_calls}
    decisions: dict[str, bool | str] = {}
    unknown = []
    for key, decision in options.approvals.items():
        if key in pending:
            decisions[key] = decision
            continue
        head, _, call_id = key.partition(":")
        if head.isdigit() and call_id in pending and (step is None or int(head) == step):
            decisions[call_id] = decision
        elif key in made:
            _log.info(
                "agentcore: run %r: the decision %r is for a call already decided; ignored", state.run_id, key
            )
        elif any(call.id == key for message in state.messages for call in message.tool_calls):
            continue  # a call that has its result: nothing left to decide
        else:
            unknown.append(key)
    if unknown:
        run = f"run {state.run_id!r}" if state.run_id else "this run"
        raise ConfigError(
            f"LoopOptions.approvals name tool calls that {run} never made: {', '.join(sorted(unknown))} "
            "(a key is a pending call's id, or a key from RunResult.approval_keys)"
        )
    return decisions


def denied(call: ToolCall, reason: str) -> ToolResult:
    """The error result the model sees for a call the user denied (``reason``
    "" for none)."""
    return ToolResult.error(
        call, f"the user denied this call: {reason}" if reason else "the user denied this call."
    )
