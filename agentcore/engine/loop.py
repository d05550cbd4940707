"""The tool-use loop: ``run(options, ctx=None)`` and ``generate``.

:class:`LoopOptions` lives in :mod:`agentcore.options`; the reader :func:`run`
returns and the results of a finished run live in :mod:`agentcore.result`
(all re-exported here).

Each step builds a :class:`Request` from the system prompt, the history so far,
the tool definitions, ``max_output_tokens`` and ``headers``, streams it from
the model, forwards the model's parts, runs the tools the model asked for and
feeds their results back, until the model stops. Item N below is loop rule
N of design.md, "The loop":

1. ``text-delta``, ``reasoning-delta``, ``reasoning``, ``tool-call`` and
   ``step-finish`` parts are forwarded as they arrive; the loop adds
   ``tool-result`` and exactly one terminal ``finish`` or ``error`` part.
2. A step that ends on ``length`` ends the run with ``length`` and runs none
   of its tool calls; its text stays in the history, its calls do not.
3. Otherwise the step's tool calls (their presence decides, not the reported
   reason) run in call order, or concurrently with ``parallel_tools``; one
   ``tool-result`` per call is emitted in call order and one ``tool`` message
   holding them all is appended. A step without tool calls ends the run with
   its finish reason (``tool-calls`` without calls becomes ``stop``).
4. At the step limit the run ends with ``step-limit`` after running that
   step's tools, so the history stays valid to send again.
5. ``on_step(usage)`` is called on the worker thread right after each step's
   ``step-finish`` part is forwarded, before its tools run and before the
   next step. Terminal parts carry the sum of the completed steps' usage,
   cache fields included, also on error and cancel.
6. A tool's ``Exception``, an unknown tool name, and arguments that are not a
   JSON object become error results fed back to the model; the run goes on.
   So does a :class:`Canceled` a tool raises while the run's context is not
   cancelled; once it is, the run ends as cancelled. Another
   ``BaseException`` (e.g. ``KeyboardInterrupt``) ends the run, and
   ``result()`` raises it again.
7. Retries: see :mod:`agentcore.engine.retry`.
8. Cancellation (reader closed, deadline, caller's context) ends the run with
   an ``error`` part whose finish reason is ``canceled``. A deadline or the
   caller's cancel queues that part at once, from the cancelling thread, even
   while the worker is stuck in a tool or a model that ignores the context;
   whatever the worker sends later is dropped. Tool calls that a cancel left
   without a result get an error result saying so in the history.
9. The caller's messages are never mutated.
10. The step's assistant message keeps its text, reasoning blocks and tool
    calls in the order the model produced them; a reasoning block is never
    merged, reordered, trimmed or edited.

Structured output (``LoopOptions.output_type``, :mod:`agentcore.output`):
each request carries the schema (``Request.output``) in the native mode; in
the tool mode a ``final_answer`` tool joins the run's tools. A step that ends
the run with text (native), or a ``final_answer`` call, is checked: a valid
answer is the run's ``output``; an invalid one is sent back (a user message
with the problems, or the tool's error result) and the loop goes on, up to
``output_retries`` times; then, or when the step limit or a ``length`` finish
comes first, the run fails with :class:`OutputValidationError`. In the tool
mode a text answer that is valid JSON of the type is accepted too.

Durable runs (:mod:`agentcore.durable`, ``docs/durable.md``): the run starts
from a :class:`~agentcore.durable.RunState` (new, or saved earlier under
``LoopOptions.run_id``), saves one to ``LoopOptions.checkpoints`` after each
model step with tool calls, each tool result and at each step boundary, and
runs each model step and tool call through ``LoopOptions.step_runner``
(a step or result the runner replayed is applied but not forwarded again). A
step whose calls include one that needs approval runs none of them and ends
the run with ``approval-required``; ``LoopOptions.approvals`` decides them
when the run resumes.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import random
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.durable import (
    DirectRunner,
    ReplayDiverged,
    RunState,
    StepRecord,
    denied,
    fingerprint,
    needs_approval,
    resolve_approvals,
    start_state,
)
from agentcore.engine.channel import Channel, SendFunc, start_worker
from agentcore.engine.observer import RunObserver, observer_for
from agentcore.engine.retry import call_with_retries, retry_policy
from agentcore.errors import Canceled, ConfigError, ErrorClass, ModelError
from agentcore.options import LoopOptions
from agentcore.output import OUTPUT_TOOL, OutputSpec, OutputValidationError, output_spec, retry_prompt
from agentcore.result import RunReader, RunResult, RunSnapshot, StepResult
from agentcore.tools import ToolInputError, ToolSet
from agentcore.types import (
    ContentPart,
    FinishReason,
    Message,
    Reasoning,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_output,
    tool_result_part,
    user_message,
)

_JOIN_EVERY = 1024
"""Text fragments a step keeps before joining them (memory: ~60 bytes a fragment)."""

__all__ = ["generate", "run"]

_log = logging.getLogger("agentcore")


def generate(options: LoopOptions, ctx: Context | None = None) -> RunResult:
    """Run the loop to the end and return its result: ``run(options, ctx).result()``.

    Raises:
        RunError: the run ended in error or was cancelled.
    """
    reader = run(options, ctx)
    # A RunError's traceback keeps this frame: it must not hold the options
    # (and through them the model and its HTTP session).
    del options, ctx
    return reader.result()


def run(options: LoopOptions, ctx: Context | None = None) -> RunReader:
    """Start the tool-use loop on a worker thread and return its reader.

    Args:
        options: what to run.
        ctx: an optional caller context; cancelling it (or its deadline)
            cancels the run. Closing the reader cancels the run too, without
            touching the caller's context.

    Returns:
        A :class:`RunReader` of the run's parts, ending with one ``finish``
        or ``error`` part.

    Raises:
        ConfigError: ``options`` is not a :class:`LoopOptions`, ``ctx`` is
            not a :class:`Context`, or ``output_mode="tool"`` meets a tool
            already named ``final_answer``.
    """
    if not isinstance(options, LoopOptions):
        raise ConfigError(f"run() needs a LoopOptions, got {type(options).__name__}")
    if ctx is not None and not isinstance(ctx, Context):
        raise ConfigError(f"run()'s ctx must be a Context or None, got {type(ctx).__name__}")
    options = _valid_input(options)
    spec = None if options.output_type is None else output_spec(options.output_type)
    final = _FinalAnswer(spec) if spec is not None and options.output_mode == "tool" else None
    tools = options.tools if final is None else ToolSet([*options.tools.values(), final])
    state = start_state(options)
    run_ctx = Context(parent=ctx)
    channel = Channel(options.queue_size, RunSnapshot(state.answered, state.steps, state.usage))
    reader = RunReader(channel, run_ctx.cancel)
    # A deadline or the caller's cancel ends the run for the reader now, even
    # while the worker is stuck in a tool or a model that ignores the context;
    # what the worker sends later is dropped.
    run_ctx.add_callback(lambda: _end(channel, _canceled(run_ctx)))
    observer = observer_for(options)
    start_worker(_Loop(options, run_ctx, channel, tools, spec, final, observer, state).run, channel)
    return reader


def _canceled(ctx: Context) -> Callable[[RunSnapshot], StreamPart]:
    """The terminal part of a cancelled run, built from the usage published last."""
    err = ctx.err or Canceled("run canceled")
    return lambda snapshot: StreamPart.error(err, snapshot.usage, FinishReason.CANCELED)


def _end(channel: Channel[RunSnapshot], terminal: StreamPart | Callable[[RunSnapshot], StreamPart]) -> None:
    """End the run with ``terminal`` unless it already ended (the first caller
    wins: the worker, a cancel or a deadline) and log the end once: by the
    winner, or by the worker when the reader closed before anyone ended it."""
    if channel.end(terminal):
        part = channel.terminal
    elif isinstance(terminal, StreamPart) and channel.terminal is None:
        part = terminal  # only the worker passes a part: the reader closed first
    else:
        return
    assert part is not None
    steps = len(channel.snapshot.steps)
    _log.debug(
        "agentcore: run ended (%s) after %d step%s; usage %s",
        part.finish_reason.value if part.finish_reason else "?",
        steps,
        "" if steps == 1 else "s",
        part.total_usage,
    )


def _assistant_message(content: list[ContentPart], keep_calls: bool) -> Message | None:
    """The step's assistant message: its text, reasoning and tool calls in the
    order the model produced them (tool calls left out when ``keep_calls`` is
    False); None when nothing is left."""
    if not keep_calls:
        content = [part for part in content if part.tool_call is None]
    return Message(role=Role.ASSISTANT, content=content) if content else None


@attrs.define
class _Step:
    text: str
    content: list[ContentPart]
    """Text, reasoning and tool-call parts in the order the model produced
    them (consecutive text deltas joined into one text part)."""
    calls: list[ToolCall]
    reasoning: tuple[Reasoning, ...]
    finish: StreamPart
    release: Callable[[], object]
    """Closes the model's stream, left open until ``finish`` is forwarded:
    an adapter drains the rest of the body there, which must not delay it."""


def _nothing() -> None:
    pass


_CUT_OFF = "(top level): the answer was cut off at the output token limit (finish reason length)"


class _FinalAnswer:
    """The ``final_answer`` tool of ``output_mode="tool"``: checks each
    call's arguments (an invalid answer is an error result the model reads);
    the loop decides after the step, from the step's calls."""

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.definition = spec.tool

    def execute(self, input: str, ctx: Context) -> str:
        _value, problems = self.spec.parse(input, tool=True)
        if problems:
            lines = "\n".join(f"- {p}" for p in problems)
            raise ToolInputError(
                f"the final answer does not match its schema:\n{lines}\n"
                f"Call {OUTPUT_TOOL} again with a corrected answer."
            )
        return "Final answer received."


class _Content:
    """A step's assistant content as it streams: a run of text deltas becomes
    one text part when a reasoning or tool-call part (or the step's end)
    closes it, so the parts keep the order the model produced them in."""

    def __init__(self) -> None:
        self.parts: list[ContentPart] = []
        self.texts: list[str] = []
        """Every text fragment of the step (joined: the step's text)."""
        self.reasoning: list[Reasoning] = []

    def close_text(self, blocks: list[str], texts: list[str]) -> None:
        """Turn the text gathered in ``blocks`` and ``texts`` into one text
        part (none when it is empty) and clear both."""
        if blocks or texts:
            text = "".join([*blocks, *texts])
            blocks.clear()
            texts.clear()
            if text:
                self.texts.append(text)
                self.parts.append(text_part(text))


class _Loop:
    """One run, executed on the worker thread."""

    def __init__(
        self,
        options: LoopOptions,
        ctx: Context,
        channel: Channel[RunSnapshot],
        tools: ToolSet,
        spec: OutputSpec | None,
        final: _FinalAnswer | None,
        observer: RunObserver | None,
        state: RunState,
    ) -> None:
        self.options = options
        self.observer = observer
        """Traces the run (None: not traced)."""
        self.tools = tools
        self.spec = spec
        self.final = final
        self.native = spec.request_schema if spec is not None and final is None else None
        self.output: Any = None
        self.answer = (state.output, state.output_tool)
        """The accepted answer's JSON text, and whether it came as ``final_answer``'s arguments."""
        if state.output and spec is not None:
            self.output = spec.parse(state.output, tool=state.output_tool)[0]
        self.attempts = state.output_attempts
        """Structured answers checked so far."""
        self.rejected: tuple[str, list[str]] = ("", [])
        """The last rejected answer and its problems."""
        self.ctx = ctx
        self.channel = channel
        self.send: SendFunc = channel.send
        self.state = state
        """The state the run started from: saved by an earlier run, or new."""
        self.history = list(state.messages)
        self.messages = state.answered
        """The history as last published (without tool calls awaiting results)."""
        self.total = state.usage
        self.steps: list[StepResult] = list(state.steps)
        self.pending = state.pending
        """The calls of the last step that have yet to run (or be decided)."""
        self.done = {result.tool_call_id: result for result in state.results}
        """The results of the pending calls that completed, by call id."""
        self.awaiting: tuple[ToolCall, ...] = ()
        """The pending calls that wait for a human's decision (the run ends)."""
        self.decisions = {**state.decisions, **resolve_approvals(options, state)}
        """Decisions on the calls pending when the run starts (only those:
        a later step may reuse a call id)."""
        self.run_id = options.run_id or ""
        self.runner = options.step_runner or DirectRunner()
        self.fingerprints = list(state.fingerprints)
        self.durable = options.run_id is not None or options.step_runner is not None
        """Fingerprint each request: the run is saved, or recorded by a runner."""
        self.revision = state.revision
        self.step_limit = options.step_limit
        self.max_retries = options.max_retries
        self.base_delay = options.retry_base_delay
        self.max_delay = options.retry_max_delay
        self.release: Callable[[], object] = _nothing
        """Closes the last step's model stream (see :attr:`_Step.release`)."""

    def run(self, _send: SendFunc) -> None:
        """Run the loop to its end (the worker's ``produce``: it sends through
        the channel it was given)."""
        try:
            model_id = self.options.model.model_id
            _log.debug("agentcore: run started (model %s, step limit %d)", model_id, self.step_limit)
            reason = self._steps()
            changed = self.revision != self.state.revision or self.decisions != self.state.decisions
            if changed or self.state.finish_reason is None:
                self._save(reason)  # unless nothing happened since the state was saved
            terminal = StreamPart.finish(reason, self.total)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes the terminal part
            if self.ctx.cancelled:
                err: BaseException = self.ctx.err or Canceled("run canceled")
                terminal = StreamPart.error(err, self.total, FinishReason.CANCELED)
            else:
                terminal = StreamPart.error(exc, self.total, FinishReason.ERROR)
        finally:
            self.ctx.detach()
        if self.observer is not None:  # before the reader can see the end: its spans have ended by then
            self.observer.run_ended(self.channel.terminal or terminal, self.history)
        _end(self.channel, terminal)  # unless a cancel ended the run first, or the reader closed
        try:
            self._release_stream()
        except Exception as exc:  # noqa: BLE001 - the run has ended; closing the stream is tidying up
            _log.warning("agentcore: closing the model's stream failed after the run: %s", type(exc).__name__)

    def _release_stream(self) -> None:
        release, self.release = self.release, _nothing
        release()

    def _publish(self, history: bool = True) -> None:
        if history:
            self.messages = tuple(self.history)
        self.channel.publish(
            RunSnapshot(self.messages, tuple(self.steps), self.total, self.output, self.awaiting)
        )

    def _save(self, finish: FinishReason | None = None) -> None:
        """Save the run's state to ``LoopOptions.checkpoints``, when there is one."""
        store = self.options.checkpoints
        if store is None:
            return
        self.revision += 1
        store.save(
            RunState(
                self.run_id,
                tuple(self.history),
                tuple(self.steps),
                self.total,
                self.pending,
                tuple(self.done.values()),
                tuple(call.id for call in self.awaiting),
                self.decisions,
                tuple(self.fingerprints),
                finish,
                *self.answer,
                output_attempts=self.attempts,
                revision=self.revision,
            )
        )

    def _forward(self, part: StreamPart) -> None:
        if not self.send(part):
            self.ctx.cancel()
            self.ctx.check()

    def _steps(self) -> FinishReason:
        completed = len(self.steps)
        ended = self.state.finish_reason
        if ended is not None and ended is not FinishReason.APPROVAL_REQUIRED:
            self._publish()  # a finished run: its result again, without a model call
            return ended
        if self.pending:  # resumed while the last step's calls ran, or waited for approval
            outcome = self._tools(completed)
            if outcome is not None:
                return outcome
        for number in range(completed + 1, self.step_limit + 1):
            self.ctx.check()
            request = Request(
                system=self.options.system,
                messages=self.history,
                # Read before every step: a live tool set (agentcore.integrations.mcp.MCPTools)
                # may have changed; a definition that fails ends the run with its error.
                tools=tuple(self.tools.definitions()),
                max_output_tokens=self.options.max_output_tokens,
                headers=self.options.headers,
                settings=self.options.settings,
                output=self.native,
            )
            mark = fingerprint(request) if self.durable else ""
            self.fingerprints.append(mark)
            ran = [False]
            record = self.runner.model_step(
                f"{self.run_id}:step:{number}", functools.partial(self._model_step, request, mark, ran)
            )
            if record.fingerprint != mark:
                raise ReplayDiverged(
                    f"run {self.run_id!r}: the recorded step {number} answered another request "
                    "(the run's messages, or the code around it, changed since it was recorded)"
                )
            usage = record.usage
            reason = record.finish_reason
            self.total += usage  # billed: counted even if the reader is gone by now
            calls = list(record.calls)
            runnable = [] if reason is FinishReason.LENGTH else calls
            result = StepResult(record.text, tuple(calls), (), usage, reason, record.reasoning, record.cache)
            self.steps.append(result)
            message = _assistant_message(list(record.content), keep_calls=bool(runnable))
            if message is not None:
                self.history.append(message)
            if runnable:
                self.pending, self.done, self.decisions = tuple(runnable), {}, {}
                self._save()  # before step-finish: a step the reader saw end is saved
            # Tool calls without their results are not a valid history: publish
            # the assistant message only together with the tool message.
            self._publish(history=not runnable)
            if ran[0]:  # a step that a runner replayed was forwarded when it ran
                self._forward(StreamPart.step_finish(reason, usage, record.cache))
                if self.options.on_step is not None:
                    self.options.on_step(usage)
            if reason is FinishReason.LENGTH:
                if self.spec is not None:
                    self.attempts += 1
                    raise OutputValidationError(record.text, [_CUT_OFF], self.total, self.attempts)
                return FinishReason.LENGTH
            if not runnable:
                if self.spec is None or self._accept_text(record.text):
                    return FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason
                if number == self.step_limit:
                    raise self._out_of_steps()
                self._save()
                continue
            outcome = self._tools(number)
            if outcome is not None:
                return outcome
        # Only a run resumed with a lower step limit than it has steps gets here.
        if self.spec is not None:
            raise self._out_of_steps()
        return FinishReason.STEP_LIMIT

    def _model_step(self, request: Request, mark: str, ran: list[bool]) -> StepRecord:
        """Stream one step, with retries, as data (the call a step runner makes)."""
        ran[0] = True
        if self.observer is not None:
            self.observer.step_started(request)
        step = self._stream_step(request)
        if self.observer is not None:
            self.observer.step_finished(step.finish, step.content)
        self.release = step.release  # once step-finish is forwarded (the last: after the terminal)
        reason = step.finish.finish_reason
        assert reason is not None
        return StepRecord(step.content, step.finish.usage, reason, mark, step.finish.cache)

    def _tools(self, number: int) -> FinishReason | None:
        """Run the pending calls of step ``number`` and append their results;
        None when the loop goes on. When a call needs a human's approval and
        has no decision, none runs: the run ends with ``approval-required``."""
        calls = self.pending
        self.awaiting = tuple(
            call
            for call in calls
            if call.id not in self.done and call.id not in self.decisions and needs_approval(self.tools, call)
        )
        if self.awaiting:
            self._publish()  # the history ends with the calls that wait
            return FinishReason.APPROVAL_REQUIRED
        if self.decisions and self.decisions != self.state.decisions:
            self._save()  # the decisions first: a run killed in the first call does not ask again
        self._release_stream()
        results = self._run_tools(list(calls), number)
        if self.steps and self.steps[-1].tool_calls:
            self.steps[-1] = attrs.evolve(self.steps[-1], tool_results=tuple(results))
        self.history.append(Message(role=Role.TOOL, content=[tool_result_part(r) for r in results]))
        self.pending, self.done, self.decisions = (), {}, {}
        self._publish()
        if self.final is not None and self._accept_call(calls):
            return FinishReason.STOP
        if number == self.step_limit:
            if self.spec is not None:
                raise self._out_of_steps()
            return FinishReason.STEP_LIMIT
        self._save()
        return None

    def _accept_text(self, text: str) -> bool:
        """Check a text answer: True when it is the run's output; otherwise
        its problems go back to the model in a user message (or, with the
        retries spent, the run fails)."""
        assert self.spec is not None
        value, problems = self.spec.parse(text)
        if not problems:
            return self._accepted(value, text, tool=False)
        if self.final is not None:  # tool mode: prose instead of the tool
            problems = [f"(top level): give the final answer by calling the {OUTPUT_TOOL} tool"]
        self._reject(text, problems)
        self.history.append(user_message(retry_prompt(problems, tool=self.final is not None)))
        self._publish()
        return False

    def _accept_call(self, calls: tuple[ToolCall, ...]) -> bool:
        """Check the step's ``final_answer`` calls: True when one is valid
        (the run's output); their error results told the model otherwise."""
        assert self.spec is not None
        answers = [call.input for call in calls if call.name == OUTPUT_TOOL]
        problems: list[str] = []
        for raw in answers:
            value, problems = self.spec.parse(raw, tool=True)
            if not problems:
                return self._accepted(value, raw, tool=True)
        if answers:
            self._reject(answers[-1], problems)
        return False

    def _accepted(self, value: Any, raw: str, *, tool: bool) -> bool:
        self.attempts += 1
        self.output = value
        self.answer = (raw, tool)
        self._publish()
        return True

    def _reject(self, raw: str, problems: list[str]) -> None:
        """Count a failed answer; raise once ``output_retries`` are spent."""
        self.attempts += 1
        self.rejected = (raw, problems)
        if self.attempts > self.options.output_retries:
            raise OutputValidationError(raw, problems, self.total, self.attempts)

    def _out_of_steps(self) -> OutputValidationError:
        raw, problems = self.rejected
        limit = f"(top level): the run reached its step limit ({self.step_limit}) before a valid final answer"
        return OutputValidationError(raw, [*problems, limit], self.total, self.attempts)

    def _stream_step(self, request: Request) -> _Step:
        forwarded = [False]
        # A method, not a closure: the frames of a kept error's traceback
        # must not reach the loop (and its model) through a closure's cells.
        attempt = functools.partial(self._attempt, request, forwarded)

        def policy() -> Any:
            return retry_policy(
                max_retries=self.max_retries,
                base_delay=self.base_delay,
                max_delay=self.max_delay,
                retry_after_limit=self.options.retry_after_limit,
                ctx=self.ctx,
                forwarded=lambda: forwarded[0],
                describe=f"step {len(self.steps) + 1} ({self.options.model.model_id})",
                sleep=self.options.retry_sleep,
                rand=self.options.retry_jitter or random.uniform,
                on_retry=None if self.observer is None else self.observer.retried,
            )

        return call_with_retries(attempt, policy)

    def _attempt(self, request: Request, forwarded: list[bool]) -> _Step:
        """Stream one attempt of a step; ``forwarded[0]`` turns True with the first part sent on."""
        self.ctx.check()
        forwarded[0] = False
        texts: list[str] = []
        blocks: list[str] = []
        calls: list[ToolCall] = []
        content = _Content()
        ctx = self.ctx
        send = self.send
        text_delta = StreamPartKind.TEXT_DELTA
        reasoning_delta = StreamPartKind.REASONING_DELTA  # the per-part kinds, bound once
        keep = texts.append
        held = ""  # a high surrogate that ended the last text delta: the next may open with its pair
        stream = self.options.model.stream(request, ctx)
        release: Callable[[], object] = getattr(stream, "close", None) or _nothing
        try:
            for part in stream:
                kind = part.kind
                if held and kind is not text_delta and kind is not reasoning_delta:
                    held = ""  # its pair never came
                    keep(_REPLACEMENT)
                    forwarded[0] = True
                    self._forward(StreamPart.text_delta(_REPLACEMENT))
                if kind is text_delta:
                    text = part.text
                    if held or not text.isascii():
                        text, held = _text_and_held(held + text)
                        if not text:
                            continue
                        part = StreamPart.text_delta(text)
                    keep(text)
                    if len(texts) >= _JOIN_EVERY:  # a long answer: few strings, not a million small ones
                        blocks.append("".join(texts))
                        texts.clear()
                elif kind is reasoning_delta:
                    pass  # for the reader only: the complete block follows as a reasoning part
                elif kind is StreamPartKind.REASONING or kind is StreamPartKind.TOOL_CALL:
                    content.close_text(blocks, texts)
                    if part.tool_call is not None:
                        if not part.tool_call.input.isascii():
                            arguments = _valid_unicode(part.tool_call.input)
                            part = StreamPart.tool_call_event(attrs.evolve(part.tool_call, input=arguments))
                        assert part.tool_call is not None
                        calls.append(part.tool_call)
                        content.parts.append(tool_call_part(part.tool_call))
                    else:
                        assert part.reasoning is not None
                        content.reasoning.append(part.reasoning)
                        content.parts.append(reasoning_part(part.reasoning))
                elif kind is StreamPartKind.STEP_FINISH:
                    forwarded[0] = True
                    content.close_text(blocks, texts)
                    return self._finish_step(content, calls, part, release)
                else:
                    raise ModelError(
                        ErrorClass.UPSTREAM,
                        message=f"the model emitted a {kind.value!r} part; models emit only text-delta, "
                        "reasoning-delta, reasoning, tool-call and step-finish parts",
                    )
                forwarded[0] = True
                # send() is False once the reader closed or a cancel ended the run
                # (run() queues the terminal part then): no per-part context check.
                if not send(part):
                    ctx.cancel()
                    ctx.check()
            raise ModelError(
                ErrorClass.TRANSIENT, message="the model's stream ended without a step-finish part"
            )
        except BaseException:
            release()
            raise

    def _finish_step(
        self,
        content: _Content,
        calls: list[ToolCall],
        finish: StreamPart,
        release: Callable[[], object],
    ) -> _Step:
        reason = finish.finish_reason
        if reason not in (FinishReason.STOP, FinishReason.TOOL_CALLS, FinishReason.LENGTH):
            raise ModelError(
                ErrorClass.UPSTREAM,
                message=f"the model finished a step with {reason.value if reason else None!r}; "
                "a step ends with stop, tool-calls or length",
            )
        ids = [call.id for call in calls]
        twice = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
        if twice is not None:  # before any call runs: their results could not be told apart
            raise ModelError(
                ErrorClass.UPSTREAM,
                message=f"the model sent two tool calls with the id {twice!r} in one step; "
                "each call needs its own id",
            )
        if calls and reason is FinishReason.STOP:
            finish = StreamPart.step_finish(FinishReason.TOOL_CALLS, finish.usage, finish.cache)
        return _Step("".join(content.texts), content.parts, calls, tuple(content.reasoning), finish, release)

    def _run_tools(self, calls: list[ToolCall], number: int) -> list[ToolResult]:
        """Run the step's calls one after another on this thread, or
        (``parallel_tools``) all at once, each on its own daemon thread; a
        call that completed before (a resumed run) is not run again. A tool
        that ignores the context cannot hold the reader past a cancel or
        deadline: :func:`run` ends the run for the reader at once."""
        results: list[ToolResult] = []
        ctx = self.ctx
        todo = [call for call in calls if call.id not in self.done]
        parallel = self.options.parallel_tools and len(todo) > 1
        started = {call.id: _start(self._call, call, number) for call in todo} if parallel else {}
        try:
            for call in calls:
                ctx.check()
                result = self.done.get(call.id)
                ran = False  # a result saved or replayed was forwarded when it ran
                if result is None:
                    result, ran = (
                        _await(started[call.id], ctx)
                        if parallel
                        else contextvars.copy_context().run(self._call, call, number)
                    )
                    self.done[call.id] = result
                    self._save()
                results.append(result)
                if ran:
                    self._forward(StreamPart.tool_result_event(result))
        except BaseException:
            # Also when every call has its result (the reader went away while
            # the last one was sent): the calls in the history need their results.
            results.extend(_not_run(call) for call in calls[len(results) :])
            if self.steps and self.steps[-1].tool_calls:
                self.steps[-1] = attrs.evolve(self.steps[-1], tool_results=tuple(results))
            self.history.append(Message(role=Role.TOOL, content=[tool_result_part(r) for r in results]))
            self._publish()
            raise
        return results

    def _call(self, call: ToolCall, number: int) -> tuple[ToolResult, bool]:
        """Run one call through the step runner, or deny it as decided; and
        whether it ran here (False: the runner gave its recorded result).

        In a run with a ``run_id`` the tool gets a context of its own whose
        ``idempotency_key`` is ``"<run id>:<step>:<call id>"``."""
        decision = self.decisions.get(call.id, True)
        if decision is not True:
            return denied(call, decision or ""), True
        key = f"{self.run_id}:{number}:{call.id}"
        ctx = Context(parent=self.ctx, idempotency_key=key) if self.run_id else self.ctx
        ran = [False]
        try:
            result = self.runner.tool_call(
                key, functools.partial(_ran, ran, self.tools, call, ctx, self.observer)
            )
        finally:
            if ctx is not self.ctx:
                ctx.detach()
        return result, ran[0]


def _ran(
    ran: list[bool], tools: ToolSet, call: ToolCall, ctx: Context, observer: RunObserver | None
) -> ToolResult:
    """:func:`_execute`, noting in ``ran`` that it was called."""
    ran[0] = True
    return _execute(tools, call, ctx, observer)


def _start(
    call_one: Callable[[ToolCall, int], tuple[ToolResult, bool]], call: ToolCall, number: int
) -> Future[tuple[ToolResult, bool]]:
    """Run ``call_one(call, number)`` (:meth:`_Loop._call`) on a new daemon
    thread (daemon: a stuck tool never keeps the interpreter from exiting), in
    a copy of the worker's :mod:`contextvars` context: what a tool sets stays
    its own."""
    future: Future[tuple[ToolResult, bool]] = Future()

    def work() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(call_one(call, number))
        except BaseException as exc:  # noqa: BLE001 - handed to the loop, which decides
            future.set_exception(exc)

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(work,), name="agentcore-tool", daemon=True).start()
    return future


def _await(future: Future[tuple[ToolResult, bool]], ctx: Context) -> tuple[ToolResult, bool]:
    """Wait for ``future`` or for ``ctx`` to be cancelled, whichever comes first."""
    ready = threading.Event()
    future.add_done_callback(lambda _f: ready.set())
    remove = ctx.add_callback(ready.set)
    try:
        ready.wait()
    finally:
        remove()
    if not future.done():
        ctx.check()
    return future.result()


def _failed(call: ToolCall, message: str) -> ToolResult:
    """An error result for ``call``: the model sees ``Error: <message>``."""
    return ToolResult(call.id, call.name, f"Error: {_valid_unicode(message)}", True)


_REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_unicode(text: str) -> str:
    """``text`` as it can enter the history: surrogate pairs joined into the
    characters they encode and lone surrogates replaced by U+FFFD.

    Text with surrogates cannot be encoded as UTF-8, so a history holding
    any could never be sent again. They come from tool output (file names
    that ``os.listdir`` decoded with ``surrogateescape``) and from servers
    that split an emoji's UTF-16 surrogate pair across two JSON strings.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _valid_value(value: Any) -> Any:
    """``value`` (a string, a tuple or an attrs value such as a
    :class:`Message`) with :func:`_valid_unicode` applied to every string in
    it; the very same object when nothing changed."""
    kind = type(value)
    if kind is str:
        return _valid_unicode(value)
    if kind is tuple:
        items = tuple(_valid_value(item) for item in value)
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    fields: tuple[attrs.Attribute[Any], ...] | None = getattr(kind, "__attrs_attrs__", None)
    if fields is None:
        return value  # bytes, numbers, enums (their values are ASCII), None
    changes: dict[str, Any] = {}
    for field in fields:
        old = getattr(value, field.name)
        new = _valid_value(old)
        if new is not old:
            changes[field.alias or field.name] = new  # (attrs sets alias; its type says it may not)
    return attrs.evolve(value, **changes) if changes else value


def _valid_input(options: LoopOptions) -> LoopOptions:
    """``options`` with text that is not valid Unicode (lone surrogates) in
    its messages and system prompt replaced by U+FFFD (:func:`_valid_unicode`),
    as tool results and model text are: it could never be sent (UTF-8 has no
    encoding for it). Logs one WARNING naming where it was."""
    messages = _valid_value(options.messages)
    system = _valid_unicode(options.system)
    if messages is options.messages and system is options.system:
        return options
    where = [
        f"messages[{index}]"
        for index, (new, old) in enumerate(zip(messages, options.messages, strict=True))
        if new is not old
    ]
    if system is not options.system:
        where.append("the system prompt")
    _log.warning(
        "agentcore: text that is not valid Unicode (UTF-16 surrogates) in %s was made valid: "
        "lone surrogates replaced by U+FFFD, pairs joined",
        ", ".join(where),
    )
    return attrs.evolve(options, messages=messages, system=system)


def _text_and_held(text: str) -> tuple[str, str]:
    """``text`` made valid (:func:`_valid_unicode`), less a trailing high
    surrogate, returned second: the next text delta may open with its pair."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return _valid_unicode(text[:-1]), text[-1]
    return _valid_unicode(text), ""


def _describe(exc: BaseException) -> str:
    """``"TypeName: message"`` for a tool's exception, even one whose
    ``__str__`` raises."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not end the run
        message = "(the exception's message could not be read)"
    return f"{type(exc).__name__}: {message}"


def _not_run(call: ToolCall) -> ToolResult:
    return _failed(call, "the run ended before this tool call finished.")


def _execute(tools: ToolSet, call: ToolCall, ctx: Context, observer: RunObserver | None) -> ToolResult:
    """Run one call (under ``observer``'s span when traced); every
    ``Exception`` becomes an error result (loop rule 6)."""
    if observer is not None:
        return observer.tool_call(call, functools.partial(_execute, tools, call, ctx, None))
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(tools) or "none"
        return _failed(call, f"unknown tool {call.name!r}. Available tools: {available}.")
    arguments = call.input if call.input.strip() else "{}"
    try:
        parsed = json.loads(arguments)
    except ValueError as exc:
        return _failed(
            call,
            f"the arguments are not valid JSON ({exc}); the tool was not run. "
            "Call it again with one JSON object.",
        )
    except RecursionError:
        return _failed(call, "the arguments are nested too deeply to decode; the tool was not run.")
    if not isinstance(parsed, dict):
        return _failed(
            call, f"the arguments must be a JSON object, got {type(parsed).__name__}; the tool was not run."
        )
    try:
        output: object = tool.execute(arguments, ctx)
    except (Exception, Canceled) as exc:  # noqa: BLE001 - loop rule 6: a tool's failure is fed back to the model
        if ctx.cancelled:  # the run's cancel (whatever the tool made of it) ends the run
            ctx.check()
        return _failed(call, _describe(exc))
    try:
        text, files = tool_output(output)
    except TypeError as exc:
        return _failed(call, str(exc))
    return ToolResult(call.id, call.name, _valid_unicode(text), False, files)
