"""The tool-use loop: ``run(options, ctx=None)`` and ``generate``.

The rules the loop keeps are design.md's, "The loop" (loop rules 1 to 16);
the code cites them by number. :class:`LoopOptions` lives in
:mod:`agentcore.options`, the reader :func:`run` returns in
:mod:`agentcore.engine.channel`, the results of a finished run in
:mod:`agentcore.result`.

:func:`run` checks the options, makes the run's context, channel and reader,
and starts the worker thread that runs :meth:`_Loop.run`: each step builds a
:class:`Request`, streams it (:mod:`agentcore.engine.step`), records the
step, runs its tool calls (:mod:`agentcore.engine.tool_calls`) and goes on
until the model stops. A plain run calls the model and the tools directly.
A run that asks for more (a ``run_id``, a ``step_runner``, ``approvals``, or
a history that ends with unanswered tool calls) also resumes, saves, asks
for decisions and replays through :class:`~agentcore.engine.durable_run.DurableRun`.
Structured output (``LoopOptions.output_type``, :mod:`agentcore.output`)
checks the answer that ends the run here (design.md, loop rule 13). A run
with history policies or ``prepare_step`` prepares each step through
:class:`~agentcore.engine.prepare.StepPreparer` (loop rule 14); a plain run
never does.
"""

from __future__ import annotations

import functools
import logging
import random
import threading
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.durable import RunState
from agentcore.engine.answer import FinalAnswer, accept_call, accept_text, cut_off, unfinished
from agentcore.engine.budget import Budget, check_prices, leaves
from agentcore.engine.channel import Channel, RunReader, SendFunc, start_worker, turn_text
from agentcore.engine.durable_run import DurableRun
from agentcore.engine.guarded import InputCheck, guarded_call, model_layers
from agentcore.engine.observer import RunObserver, observer_for
from agentcore.engine.prepare import StepPreparer, StepSetup
from agentcore.engine.retry import RetrySettings
from agentcore.engine.session_run import SessionRun
from agentcore.engine.step import Step, StepStreamer, nothing, valid_unicode
from agentcore.engine.tool_calls import (
    Arguments,
    CallOne,
    ToolScope,
    entered,
    execute,
    failed,
    needs_approval,
    not_run,
    parse_all,
    run_calls,
)
from agentcore.engine.tool_calls import (
    current as current_scope,
)
from agentcore.errors import Canceled, ConfigError, ErrorClass, ModelError
from agentcore.fallback import FallbackModel
from agentcore.guardrails import BLOCKED_CALL, WITHHELD, WITHHELD_RESULT, GuardrailTripped, check
from agentcore.limits import LimitReached, prompt_tokens
from agentcore.middleware import ModelWrap, ToolWrap, model_wraps, tool_wraps
from agentcore.model import Model
from agentcore.options import LoopOptions
from agentcore.output import OUTPUT_TOOL, OutputSpec, OutputValidationError, output_spec
from agentcore.result import RunResult, RunSnapshot, StepResult, total_cost
from agentcore.tools import ToolSet
from agentcore.types import (
    Compaction,
    ContentPart,
    FinishReason,
    Message,
    OutputSchema,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
    text_part,
    tool_result_part,
)

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
            not a :class:`Context`, ``output_mode="tool"`` meets a tool
            already named ``final_answer``, or the run cannot resume (see
            :class:`~agentcore.engine.durable_run.DurableRun`).
    """
    if not isinstance(options, LoopOptions):
        raise ConfigError(f"run() needs a LoopOptions, got {type(options).__name__}")
    if ctx is not None and not isinstance(ctx, Context):
        raise ConfigError(f"run()'s ctx must be a Context or None, got {type(ctx).__name__}")
    options = _valid_input(options)
    if options.limits is not None and options.limits.cost is not None:
        check_prices(options)
    spec = None if options.output_type is None else output_spec(options.output_type)
    # A session's conversation is loaded on the worker, under the session's lock (_Loop._open_session).
    session = (
        None
        if options.session is None
        else SessionRun(options.session, options.run_id if options.checkpoints is not None else None)
    )
    durable = DurableRun(options) if session is None and _resumes_or_decides(options) else None
    if durable is None:
        progress = RunProgress(list(options.messages), options.messages)
    else:
        progress = _progress_from(durable.saved, spec)
    run_ctx: Context = Context(parent=ctx, deps=options.deps)
    channel = Channel(
        options.queue_size, RunSnapshot(progress.published_history, tuple(progress.steps), progress.usage)
    )
    reader = RunReader(channel, run_ctx.cancel)
    # A deadline or the caller's cancel ends the run for the reader now, even
    # while the worker is stuck in a tool or a model that ignores the context;
    # what the worker sends later is dropped.
    run_ctx.add_callback(lambda: _end(channel, _canceled(run_ctx)))
    observer = observer_for(options)
    guardrails = options.guardrails
    input_check = (
        InputCheck(guardrails, options.messages, run_ctx)
        if guardrails is not None and guardrails.input and not progress.steps and not progress.pending
        else None
    )
    outer = current_scope()  # a run started inside a tool call is one level deeper
    config = _configure(
        options, spec, run_ctx, channel, observer, input_check, 0 if outer is None else outer.depth + 1
    )
    start_worker(_Loop(config, progress, durable, session).run, channel)
    return reader


def _configure(
    options: LoopOptions,
    spec: OutputSpec | None,
    run_ctx: Context,
    channel: Channel[RunSnapshot],
    observer: RunObserver | None,
    input_check: InputCheck | None,
    depth: int,
) -> RunConfig:
    """The :class:`RunConfig` of a run with ``options`` (at its start, and
    after a handoff moved it to other options)."""
    final = FinalAnswer(spec) if spec is not None and options.output_mode == "tool" else None
    tools = (
        options.tools
        if final is None
        else ToolSet([*options.tools.server_tools, *options.tools.values(), final])
    )
    guardrails = options.guardrails
    wraps: tuple[ModelWrap, ...] = ()
    if options.middleware or guardrails is not None:  # a plain run never enters their modules
        wraps = model_layers(guardrails, model_wraps(options.middleware))
        if input_check is not None and input_check.parallel:
            wraps = (input_check.wrap_model, *wraps)
    retry_settings = RetrySettings(
        options.max_retries,
        options.retry_base_delay,
        options.retry_max_delay,
        options.retry_after_limit,
        options.retry_sleep,
        options.retry_jitter or random.uniform,
    )
    return RunConfig(
        options=options,
        ctx=run_ctx,
        channel=channel,
        tools=tools,
        streamer=StepStreamer(
            options.model,
            run_ctx,
            channel.send,
            retry_settings,
            None if observer is None else observer.retried,
            wraps,
        ),
        observer=observer,
        spec=spec,
        final=final,
        native_schema=spec.request_schema if spec is not None and final is None else None,
        step_limit=options.step_limit,
        input_check=input_check,
        tool_wraps=tool_wraps(options.middleware) if options.middleware else (),
        depth=depth,
    )


def _resumes_or_decides(options: LoopOptions) -> bool:
    """True when the run needs :class:`DurableRun`: it has a run id (it is
    saved and may resume), a step runner (it may replay), decisions on tool
    calls, or a history that ends with unanswered tool calls (a run that
    ended with ``approval-required``, passed back: its calls wait)."""
    if options.run_id is not None or options.step_runner is not None or options.approvals:
        return True
    last = options.messages[-1]
    return last.role is Role.ASSISTANT and bool(last.tool_calls)


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


def _valid_value(value: Any) -> Any:
    """``value`` (a string, a tuple or an attrs value such as a
    :class:`Message`) with :func:`valid_unicode` applied to every string in
    it; the very same object when nothing changed."""
    kind = type(value)
    if kind is str:
        return valid_unicode(value)
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
    its messages and system prompt replaced by U+FFFD (:func:`valid_unicode`),
    as tool results and model text are: it could never be sent (UTF-8 has no
    encoding for it). Logs one WARNING naming where it was."""
    messages = _valid_value(options.messages)
    system = valid_unicode(options.system)
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


def _assistant_message(content: list[ContentPart], keep_calls: bool) -> Message | None:
    """The step's assistant message: its text, reasoning and tool calls in the
    order the model produced them (tool calls left out when ``keep_calls`` is
    False); None when nothing is left."""
    if not keep_calls:
        content = [part for part in content if part.tool_call is None]
    return Message(role=Role.ASSISTANT, content=content) if content else None


@attrs.frozen
class RunConfig:
    """What the options and the run's setup decide; fixed for the run.

    Attributes:
        options: the run's options.
        ctx: the run's context (the caller's child; the reader's close cancels it).
        channel: the run's channel to its reader.
        tools: the tools offered (with ``final_answer`` in the tool mode of
            structured output).
        streamer: streams each model step.
        observer: traces the run; None: not traced.
        spec: the structured answer asked for; None: free text.
        final: the ``final_answer`` tool (``output_mode="tool"``); None.
        native_schema: what each request carries for native structured output; None.
        step_limit: the most model steps.
        input_check: the input guardrails, run before the first step; None.
        tool_wraps: the middleware's ``wrap_tool`` layers, the first outermost.
        depth: how many runs are around this one (0: a top-level run; see
            :class:`~agentcore.engine.tool_calls.ToolScope`).
    """

    options: LoopOptions
    ctx: Context
    channel: Channel[RunSnapshot]
    tools: ToolSet
    streamer: StepStreamer
    observer: RunObserver | None
    spec: OutputSpec | None
    final: FinalAnswer | None
    native_schema: OutputSchema | None
    step_limit: int
    input_check: InputCheck | None = None
    tool_wraps: tuple[ToolWrap, ...] = ()
    depth: int = 0


@attrs.define
class RunProgress:
    """Where a run is: what the worker changes as it goes (a durable run saves
    it as a :class:`~agentcore.durable.RunState`).

    Attributes:
        history: the messages so far: the caller's, then the assistant and
            tool messages (ending with the calls in ``pending`` while they run).
        published_history: the history as last published, without an
            assistant message whose calls have no results yet.
        steps: the completed model steps.
        usage: their total usage.
        pending: the calls of the last step that have yet to run (or be decided).
        results_by_id: the results of the pending calls that completed, by call id.
        awaiting_approval: the pending calls that wait for a human's decision
            (the run ends).
        output: the accepted structured answer (None: none yet).
        answer_json: its JSON text; "" for none.
        answer_by_tool: True when it came as ``final_answer``'s arguments.
        answers_checked: structured answers checked so far.
        rejected_answer: the last structured answer refused, and
        rejection_problems: why.
        close_stream: closes the last step's model stream (see
            :attr:`~agentcore.engine.step.Step.release`).
        full: the run's full history up to the last time a history policy
            changed ``history`` (every message it ever had); None while none did.
        origins: for each of the first ``synced`` messages of ``history``,
            its index in ``full`` (None: a message a policy wrote).
        synced: how many leading messages of ``history`` ``origins``
            covers; those after it were added since and follow ``full``.
        basis: the prompt tokens the provider reported for the previous
            step and the number of messages it sent, when it sent the history
            as the run keeps it; None: a policy's next size is the estimate.
        limit: the usage limit that ended the run (``LoopOptions.limits``); None.
        sub_run_cost: what the sub-runs of the run's agent tools cost in US
            dollars (their usage is in ``usage``); None when one was not priced.
    """

    history: list[Message]
    published_history: tuple[Message, ...]
    steps: list[StepResult] = attrs.Factory(list)
    usage: Usage = attrs.Factory(Usage)
    pending: tuple[ToolCall, ...] = ()
    results_by_id: dict[str, ToolResult] = attrs.Factory(dict)
    awaiting_approval: tuple[ToolCall, ...] = ()
    output: Any = None
    answer_json: str = ""
    answer_by_tool: bool = False
    answers_checked: int = 0
    rejected_answer: str = ""
    rejection_problems: list[str] = attrs.Factory(list)
    close_stream: Callable[[], object] = nothing
    full: list[Message] | None = None
    origins: list[int | None] = attrs.Factory(list)
    synced: int = 0
    basis: tuple[int, int] | None = None
    limit: LimitReached | None = None
    sub_run_cost: Decimal | None = Decimal(0)

    def full_history(self) -> tuple[list[Message], list[int | None]]:
        """The full history (nothing a policy removed left out), and for each
        message of ``history`` its index in it (None: written by a policy)."""
        if self.full is None:
            return list(self.history), list(range(len(self.history)))
        tail = self.history[self.synced :]
        start = len(self.full)
        return [*self.full, *tail], [*self.origins, *range(start, start + len(tail))]

    def continue_turn(self, message: Message) -> None:
        """Append ``message``'s content to the history's last message, the
        assistant turn a paused step left (loop rule 15), in the full history
        too; the next prompt's size then estimates that message anew."""
        index = len(self.history) - 1
        last = self.history[index]
        merged = Message(role=Role.ASSISTANT, content=[*last.content, *message.content])
        self.history[index] = merged
        if self.full is not None and index < self.synced:
            origin = self.origins[index]
            if origin is not None:
                self.full[origin] = merged
        if self.basis is not None and self.basis[1] > index:
            self.basis = (self.basis[0], index)

    def replace_from(self, start: int, message: Message) -> None:
        """Replace the messages of ``history`` from ``start`` on by ``message``
        (the end of a run: a guardrail withheld that answer); the full history
        loses them too."""
        if self.full is not None and start < self.synced:
            full, origins = self.full_history()
            origin = origins[start]
            self.full = full[: len(full) if origin is None else origin]
            self.origins, self.synced = origins[:start], start
        del self.history[start:]
        self.history.append(message)

    def full_published(self) -> tuple[Message, ...] | None:
        """The full history as last published; None: the same as ``published_history``."""
        if self.full is None:
            return None
        return (*self.full, *self.published_history[self.synced :])


def _progress_from(saved: RunState, spec: OutputSpec | None) -> RunProgress:
    """The progress of a run that starts from ``saved``."""
    return RunProgress(
        history=list(saved.messages),
        published_history=saved.answered,
        steps=list(saved.steps),
        usage=saved.usage,
        pending=saved.pending,
        results_by_id={result.tool_call_id: result for result in saved.results},
        output=spec.parse(saved.output, tool=saved.output_tool)[0]
        if saved.output and spec is not None
        else None,
        answer_json=saved.output,
        answer_by_tool=saved.output_tool,
        answers_checked=saved.output_attempts,
        full=list(saved.full_messages) if saved.full_messages else None,
        origins=[None if origin < 0 else origin for origin in saved.origins],
        synced=len(saved.origins),
        basis=saved.basis,
        sub_run_cost=saved.sub_run_cost,
    )


class _Loop:
    """One run, executed on the worker thread."""

    def __init__(
        self,
        config: RunConfig,
        progress: RunProgress,
        durable: DurableRun | None,
        session: SessionRun | None = None,
    ) -> None:
        self.config = config
        self.progress = progress
        self.durable = durable
        """Resume, saves, decisions and replay; None for a plain run."""
        self.session = session
        """The run's conversation session (``LoopOptions.session``); None."""
        options = config.options
        self.preparer = (
            StepPreparer(options, config.ctx, self._forward, self._publish)
            if options.prepare_step is not None or options.history_policy
            else None
        )
        """The history policies and ``prepare_step``; None for a run without them."""
        self.step_model: Model | None = None
        """The model of the step being run, when a plan changed it."""
        self.step_tools = config.tools
        """The tools the calls of the step being run may call."""
        self.resent = False
        """The step being streamed is a refused step sent again (its trace span is open)."""
        self.handoff: tuple[str, LoopOptions] | None = None
        """The agent a tool call of this step handed the run to (under ``scope_lock``)."""
        self.scope_lock = threading.Lock()
        """Guards ``handoff``, and the usage and publishing of the tool calls' spending."""
        self.budget: Budget | None = None
        """The prices of the run's steps and its usage limits
        (:mod:`agentcore.engine.budget`), made for the first limit check or
        the first step whose model has a ``base_url`` to be priced at (a
        plain run's test double has none, and never enters the module)."""

    def run(self, _send: SendFunc) -> None:
        """Run the loop to its end (the worker's ``produce``: it sends through
        the channel it was given)."""
        config = self.config
        try:
            _log.debug(
                "agentcore: run started (model %s, step limit %d)",
                config.options.model.model_id,
                config.step_limit,
            )
            if self.session is not None:
                self._open_session()
            reason = self._steps()
            progress = self.progress
            if self.durable is not None:
                self.durable.finished(progress, reason)
            terminal = StreamPart.finish(reason, progress.usage)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes the terminal part
            progress = self.progress
            if config.ctx.cancelled:
                err: BaseException = config.ctx.err or Canceled("run canceled")
                terminal = StreamPart.error(err, progress.usage, FinishReason.CANCELED)
            elif isinstance(exc, GuardrailTripped):
                if exc.kind == "stream":  # the step's answer never ends half-written in the history
                    history = progress.history
                    paused = bool(history) and history[-1].role is Role.ASSISTANT  # a turn going on
                    self._withhold(len(history) - 1 if paused else len(history))
                terminal = StreamPart.error(exc, progress.usage, FinishReason.GUARDRAIL)
            else:
                terminal = StreamPart.error(exc, progress.usage, FinishReason.ERROR)
        finally:
            config.ctx.detach()
        if self.session is not None:
            terminal = self._close_session(terminal)
        if config.observer is not None:  # before the reader can see the end: its spans have ended by then
            config.observer.run_ended(config.channel.terminal or terminal, progress.history)
        _end(config.channel, terminal)  # unless a cancel ended the run first, or the reader closed
        if terminal.finish_reason is FinishReason.GUARDRAIL:
            config.ctx.cancel()  # parallel calls of a step a tool guardrail stopped, still running
        try:
            self._release_stream()
        except Exception as exc:  # noqa: BLE001 - the run has ended; closing the stream is tidying up
            _log.warning("agentcore: closing the model's stream failed after the run: %s", type(exc).__name__)

    def _open_session(self) -> None:
        """Wait for the session, load its conversation and start the run from
        it and the run's messages (a durable run from its saved state)."""
        assert self.session is not None
        options = self.config.options
        messages = loaded = self.session.open(self.config.ctx, options.messages, bool(options.approvals))
        resuming = not options.messages and options.checkpoints is not None
        if resuming:
            messages = ()  # resume the saved run as it is saved (it holds the loaded conversation)
        elif not messages:
            raise ConfigError("the session is empty and LoopOptions.messages is empty: nothing to run")
        started = attrs.evolve(options, messages=messages)
        if _resumes_or_decides(started):
            self.durable = saved = DurableRun(started)
            began = saved.saved.full_messages or saved.saved.messages
            if resuming and tuple(began[: len(loaded)]) != loaded:
                # (with messages, DurableRun compares the first request's fingerprint instead)
                raise ConfigError(
                    f"run {options.run_id!r} started from another conversation than session "
                    f"{self.session.session.session_id!r} holds now"
                )
            self.progress = _progress_from(saved.saved, self.config.spec)
        else:
            self.progress = RunProgress(list(messages), tuple(messages))
        self._publish()

    def _close_session(self, terminal: StreamPart) -> StreamPart:
        """Store the run's turn when it finished (nothing when it failed or
        was cancelled) and release the session; the terminal part to send
        (an error when the store failed)."""
        assert self.session is not None
        progress = self.progress
        finished = terminal.kind is StreamPartKind.FINISH and not self.config.ctx.cancelled
        history = progress.history if finished else None
        origins = None if progress.full is None else progress.full_history()[1]
        try:
            self.session.close(history, origins)
        except Exception as exc:  # noqa: BLE001 - the run's end says the turn was not stored
            if not finished:
                _log.warning("agentcore: releasing the session failed: %s: %s", type(exc).__name__, exc)
                return terminal
            return StreamPart.error(exc, progress.usage, FinishReason.ERROR)
        return terminal

    def _release_stream(self) -> None:
        close, self.progress.close_stream = self.progress.close_stream, nothing
        close()

    def _publish(self, history: bool = True) -> None:
        with self.scope_lock:  # a tool call's _spend publishes too
            self._publish_now(history)

    def _publish_now(self, history: bool) -> None:
        progress = self.progress
        if history:
            progress.published_history = tuple(progress.history)
        self.config.channel.publish(
            RunSnapshot(
                progress.published_history,
                tuple(progress.steps),
                progress.usage,
                progress.output,
                progress.awaiting_approval,
                progress.full_published(),
                progress.limit,
                self.config.options.agent_name,
                progress.sub_run_cost,
            )
        )

    def _checkpoint(self) -> None:
        """Save the run's state, when it is a durable run with a store."""
        if self.durable is not None:
            self.durable.save(self.progress)

    def _forward(self, part: StreamPart) -> None:
        if not self.config.channel.send(part):
            self.config.ctx.cancel()
            self.config.ctx.check()

    def _steps(self) -> FinishReason:
        config, progress, durable = self.config, self.progress, self.durable
        options = config.options
        if durable is not None:
            if durable.ended is not None:
                self._publish()  # a finished run: its result again, without a model call
                return durable.ended
            if progress.pending:  # resumed while the last step's calls ran, or waited for approval
                outcome = self._tools(len(progress.steps))
                if outcome is not None:
                    return outcome
        input_check = config.input_check
        if input_check is not None:
            input_check.start()
        for number in range(len(progress.steps) + 1, config.step_limit + 1):
            config = self.config  # a handoff in the last step moved the run to other options
            options = config.options
            config.ctx.check()
            request = self._request()
            compactions: tuple[Compaction, ...] = ()
            summaries: tuple[tuple[Usage, object], ...] = ()
            if self.preparer is None:
                reached = self._limit_before(project=True)
                if reached is not None:
                    return self._at_limit(reached)
                step, streamed = self._model_step(number, request)
                cache = step.finish.cache
            else:
                reached = self._limit_before(project=False)  # before a policy's summary call
                if reached is not None:
                    return self._at_limit(reached)
                setup = self.preparer.prepare(number, request, progress, config.tools)
                reached = self._limit_before(project=True)
                if reached is not None:
                    return self._at_limit(reached)
                setup, step, streamed = self._prepared_step(number, setup)
                request = setup.request
                summaries = tuple(self.preparer.summaries)
                compactions, cache = self.preparer.finished(
                    setup, step.finish.usage, progress, step.finish.cache
                )
            finish = step.finish
            reason, usage = finish.finish_reason, finish.usage
            assert reason is not None
            progress.usage += usage  # billed: counted even if the reader is gone by now
            cost = self._cost(usage, request, summaries, finish.model_id)
            if input_check is not None:  # nothing of the first step is kept before the input passed
                check_first, input_check = input_check, None
                check_first.verdict()
            # A step cut off (output cap, content filter) runs no call (loop rule 2).
            runnable = (
                ()
                if reason is FinishReason.LENGTH or reason is FinishReason.CONTENT_FILTER
                else tuple(step.calls)
            )
            continuing = bool(progress.steps) and progress.steps[-1].finish_reason is FinishReason.PAUSED
            progress.steps.append(
                StepResult(
                    step.text,
                    tuple(step.calls),
                    (),
                    usage,
                    reason,
                    step.reasoning,
                    cache,
                    compactions,
                    finish.model_id,
                    cost,
                )
            )
            message = _assistant_message(step.content, keep_calls=bool(runnable))
            if message is not None:
                if continuing and progress.history and progress.history[-1].role is Role.ASSISTANT:
                    progress.continue_turn(message)  # the paused turn goes on: one turn (loop rule 15)
                else:
                    progress.history.append(message)
            if runnable:
                progress.pending, progress.results_by_id = runnable, {}
                if durable is not None:  # saved before step-finish: a step the reader saw end is saved
                    durable.calls_made(progress)
            # Tool calls without their results are not a valid history: publish
            # the assistant message only together with the tool message.
            self._publish(history=not runnable)
            if streamed:  # a step that a runner replayed was forwarded when it ran
                self._forward(StreamPart.step_finish(reason, usage, cache, finish.model_id))
                if options.on_step is not None:
                    options.on_step(usage)
            if reason is FinishReason.PAUSED:  # the provider paused its turn: continue it (loop rule 15)
                reached = self._limit_after()
                if reached is not None:
                    return self._at_limit(reached)
                if number == config.step_limit:
                    if config.spec is not None:
                        raise self._out_of_steps()
                    return FinishReason.STEP_LIMIT
                self._checkpoint()
                continue
            if reason is FinishReason.LENGTH or reason is FinishReason.CONTENT_FILTER:
                if config.spec is not None:  # a cut answer is not retried (loop rule 2)
                    raise cut_off(progress, step.text, reason)
                self._check_output()  # the text that came is the answer (loop rule 2)
                return reason
            if not runnable:
                if config.spec is None or self._accept_text(turn_text(progress.steps)):
                    self._check_output()
                    return FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason
                reached = self._limit_after()
                if reached is not None:
                    return self._at_limit(reached)
                if number == config.step_limit:
                    raise self._out_of_steps()
                self._checkpoint()
                continue
            outcome = self._tools(number, self._limit_after())
            if outcome is not None:
                return outcome
        # Only a run resumed with a lower step limit than it has steps gets here.
        if config.spec is not None:
            raise self._out_of_steps()
        return FinishReason.STEP_LIMIT

    def _request(self) -> Request:
        """The next step's request, from the history the run keeps."""
        config = self.config
        options = config.options
        return Request(
            system=options.system,
            messages=self.progress.history,
            # Read before every step: a live tool set (agentcore.integrations.mcp.MCPTools)
            # may have changed; a definition that fails ends the run with its error.
            tools=tuple(config.tools.definitions()),
            max_output_tokens=options.max_output_tokens,
            headers=options.headers,
            settings=options.settings,
            output=config.native_schema,
            server_tools=config.tools.server_tools,
            stream_tool_input=options.stream_tool_input,
        )

    def _model_step(self, number: int, request: Request) -> tuple[Step, bool]:
        """Step ``number``: the step, and False when a step runner replayed it."""
        if self.durable is None:
            return self._stream(number, request), True
        return self.durable.model_step(number, request, self._stream)

    def _prepared_step(self, number: int, setup: StepSetup) -> tuple[StepSetup, Step, bool]:
        """Step ``number`` as ``setup`` says; a step the provider refuses as
        too long before any of its parts went out is prepared again with the
        refusal (the policies cut once more) and tried once more."""
        preparer = self.preparer
        assert preparer is not None
        self.step_model, self.step_tools = setup.model, setup.tools
        try:
            return (setup, *self._model_step(number, setup.request))
        except ModelError as exc:
            if (
                not preparer.policies
                or exc.error_class is not ErrorClass.CONTEXT_LENGTH
                or self.config.streamer.cut_off is exc
            ):
                raise
            _log.warning(
                "agentcore: step %d was refused (%s); the history policies cut again and it is "
                "sent once more (a policy's trigger below the window avoids this)",
                number,
                exc,
            )
            setup = preparer.prepare(number, self._request(), self.progress, self.config.tools, refused=exc)
            if self.config.observer is not None:  # traced as one step tried twice, the refusal its retry
                self.config.observer.retried(exc, 1, 0.0)
        self.step_model, self.step_tools = setup.model, setup.tools
        self.resent = True
        try:
            return (setup, *self._model_step(number, setup.request))
        finally:
            self.resent = False

    def _stream(self, number: int, request: Request) -> Step:
        """Stream step ``number``, with retries (under the observer's hooks when traced)."""
        observer = self.config.observer
        if observer is not None and not self.resent:
            observer.step_started(request)
        step = self.config.streamer.stream(request, number, self.step_model)
        if observer is not None:
            observer.step_finished(step.finish, step.content)
        # Closed once step-finish is forwarded (the last: after the terminal).
        self.progress.close_stream = step.release
        return step

    def _tools(self, number: int, over: LimitReached | None = None) -> FinishReason | None:
        """Run the pending calls of step ``number`` and append their results;
        None when the loop goes on. When a call needs a human's approval and
        has no decision, none runs: the run ends with ``approval-required``.
        The calls over the run's ``tool_calls`` limit, or every call when
        the step went over a limit (``over``), are not run: each gets an
        error result naming the limit, and the run ends with ``limit``."""
        config, progress, durable = self.config, self.progress, self.durable
        calls = progress.pending
        arguments = parse_all(calls)
        reached, refused = (
            (None, set())
            if config.options.limits is None
            else self._budget().refused_calls(calls, progress.steps, over, self._is_final)
        )
        progress.awaiting_approval = tuple(
            call
            for call in calls
            if call.id not in progress.results_by_id
            and call.id not in refused
            and (durable is None or call.id not in durable.decisions)
            and needs_approval(self.step_tools, call, arguments[call.id])
        )
        if progress.awaiting_approval:
            self._publish()  # the history ends with the calls that wait
            return FinishReason.APPROVAL_REQUIRED
        call_one: CallOne
        if durable is None:
            call_one = functools.partial(self._call, arguments)
        else:
            # Saved first: a run killed in the first call does not ask again.
            durable.decisions_taken(progress)
            call_one = functools.partial(
                durable.call, number, functools.partial(self._execute, arguments), config.ctx
            )
        if reached is not None:
            call_one = functools.partial(_refusing, call_one, refused, f"not run: {reached}.")
        self._release_stream()
        results: list[ToolResult] = []
        try:
            for call, result, ran in run_calls(
                calls,
                call_one,
                config.ctx,
                parallel=config.options.parallel_tools,
                known=progress.results_by_id,
            ):
                if call.id not in progress.results_by_id:
                    progress.results_by_id[call.id] = result
                    self._checkpoint()
                results.append(result)
                if ran:  # a result saved or replayed was forwarded when it ran
                    self._forward(StreamPart.tool_result_event(result))
        except BaseException as exc:
            if isinstance(exc, GuardrailTripped) and len(results) < len(calls):
                # Calls give their results in call order: the one that tripped is next.
                call = calls[len(results)]
                results.append(
                    ToolResult.error(call, BLOCKED_CALL if exc.kind == "tool-call" else WITHHELD_RESULT)
                )
            # Also when every call has its result (the reader went away while
            # the last one was sent): the calls in the history need their results.
            results.extend(not_run(call) for call in calls[len(results) :])
            self.handoff = None
            self._answer_calls(results)
            self._publish()
            raise
        self._answer_calls(results)
        if self.handoff is not None:
            self._switch()
        progress.pending, progress.results_by_id = (), {}
        if durable is not None:
            durable.calls_answered()
        self._publish()
        if config.final is not None and self._accept_call(calls):
            self._check_output()
            return FinishReason.STOP
        if reached is not None:
            return self._at_limit(reached)
        if number == config.step_limit:
            if config.spec is not None:
                raise self._out_of_steps()
            return FinishReason.STEP_LIMIT
        self._checkpoint()
        return None

    def _is_final(self, call: ToolCall | ToolResult) -> bool:
        return self.config.final is not None and call.name == OUTPUT_TOOL

    def _cost(
        self, usage: Usage, request: Request, summaries: tuple[tuple[Usage, object], ...], answered: str
    ) -> Decimal | None:
        """The cost of the step that used ``usage`` sending ``request``,
        answered by the model ``answered`` (a :class:`FallbackModel`'s the
        first of its models with that id), and of the summary calls before
        it; None when one has no price."""
        model = self.step_model or self.config.options.model
        if isinstance(model, FallbackModel):
            model = next((leaf for leaf in leaves(model) if leaf.model_id == answered), model)
        if not isinstance(getattr(model, "base_url", None), str):
            return None  # nothing to price it at (a test double): the budget is not made for it
        return self._budget().step_cost(usage, model, request.settings, summaries)

    def _budget(self) -> Budget:
        """The run's :class:`Budget`, made when first needed."""
        if self.budget is None:
            self.budget = Budget(self.config.options.limits)
        return self.budget

    def _projected_input(self) -> int:
        """The prompt tokens the next request sends at least: those the
        provider reported for the previous step, when the request sends the
        history it sent, grown (no policy cut it, no plan replaced it); 0
        when not known (``agentcore.limits``)."""
        progress, preparer = self.progress, self.preparer
        if preparer is None:
            return prompt_tokens(progress.steps[-1].usage) if progress.steps else 0
        basis = progress.basis
        return basis[0] if basis is not None and preparer.sent_kept else 0

    def _limit_before(self, *, project: bool) -> LimitReached | None:
        """The usage limit the next request would go over (with its
        projected input when ``project``); None."""
        if self.config.options.limits is None:
            return None
        projected = self._projected_input() if project else 0
        progress = self.progress
        return self._budget().before_request(progress.usage, progress.steps, progress.sub_run_cost, projected)

    def _limit_after(self) -> LimitReached | None:
        """The usage limit the run went over with its last step; None."""
        if self.config.options.limits is None:
            return None
        progress = self.progress
        return self._budget().after_step(progress.usage, progress.steps, progress.sub_run_cost)

    def _at_limit(self, reached: LimitReached) -> FinishReason:
        """End the run at the usage limit ``reached`` (a structured answer
        not given by then fails as at the step limit)."""
        self.progress.limit = reached
        self._publish()
        if self.config.spec is not None:
            raise unfinished(self.progress, f"{reached.kind} limit ({reached.limit:,})")
        _log.debug("agentcore: %s", reached)
        return FinishReason.LIMIT

    def _spend(self, usage: Usage, cost: Decimal | None) -> None:
        """Add what a tool call's sub-run used to the run's usage and cost,
        and publish it at once (a cancel's terminal part counts it). Called
        on a tool call's thread while the worker waits for the calls, which
        touches the usage then. A call still running after the run ended
        (a parallel call a cancel left behind) changes nothing."""
        progress = self.progress
        with self.scope_lock:
            if self.config.channel.terminal is not None:
                return
            progress.usage += usage
            progress.sub_run_cost = (
                None if cost is None or progress.sub_run_cost is None else progress.sub_run_cost + cost
            )
            self._publish_now(history=False)

    def _hand_off(self, agent: str, options: LoopOptions) -> str | None:
        with self.scope_lock:
            if self.handoff is not None:
                return f"the run is already handed off to {self.handoff[0]!r} in this step."
            self.handoff = (agent, options)
            return None

    def _switch(self) -> None:
        """Move the run to the options a handoff of this step gave (its
        history, usage and steps go on); send the ``handoff`` part."""
        assert self.handoff is not None
        agent, options = self.handoff
        self.handoff = None
        config = self.config
        spec = None if options.output_type is None else output_spec(options.output_type)
        self.config = _configure(
            options, spec, config.ctx, config.channel, config.observer, None, config.depth
        )
        self.step_model, self.step_tools = None, self.config.tools
        if self.preparer is not None:
            self.preparer.switch(options)
        elif options.prepare_step is not None:
            self.preparer = StepPreparer(options, config.ctx, self._forward, self._publish)
        self._forward(StreamPart.handoff_event(agent))

    def _call(self, arguments: dict[str, Arguments], call: ToolCall) -> tuple[ToolResult, bool]:
        """Run one call of a plain run: its result, which goes to the reader."""
        return self._execute(arguments, call, self.config.ctx), True

    def _execute(self, arguments: dict[str, Arguments], call: ToolCall, ctx: Context) -> ToolResult:
        config = self.config
        progress, limits = self.progress, config.options.limits
        with self.scope_lock:
            usage, sub_runs = progress.usage, progress.sub_run_cost
        cost = None
        if limits is not None and limits.cost is not None:  # what an agent tool's sub-run may spend
            own = total_cost(progress.steps)
            cost = None if own is None or sub_runs is None else own + sub_runs
        scope = ToolScope(
            call, config.options, config.depth, usage, cost, self._forward, self._spend, self._hand_off
        )
        with entered(scope):
            return self._execute_in_scope(arguments, call, ctx)

    def _execute_in_scope(self, arguments: dict[str, Arguments], call: ToolCall, ctx: Context) -> ToolResult:
        config = self.config
        if config.options.guardrails is None and not config.tool_wraps:
            return execute(self.step_tools, call, arguments[call.id], ctx, config.observer)
        return guarded_call(
            config.options.guardrails, config.tool_wraps, self._run_tool, call, arguments[call.id], ctx
        )

    def _run_tool(self, call: ToolCall, arguments: Arguments, ctx: Context) -> ToolResult:
        return execute(self.step_tools, call, arguments, ctx, self.config.observer)

    def _check_output(self) -> None:
        """Run the output guardrails on the run's answer (the validated value
        with ``output_type``, else the turn's text); a tripwire withholds it."""
        config, progress = self.config, self.progress
        guardrails = config.options.guardrails
        if guardrails is None or not guardrails.output:
            return
        answer = progress.output if config.spec is not None else turn_text(progress.steps)
        try:
            check("output", guardrails.output, (answer,), config.ctx)
        except GuardrailTripped:
            # A final_answer call is answered by a tool message: the turn is both.
            history = progress.history
            if progress.answer_by_tool:
                start = len(history) - 2
            else:  # a step cut off with nothing but calls added no message
                start = len(history) - 1 if history[-1].role is Role.ASSISTANT else len(history)
            self._withhold(start)
            progress.output, progress.answer_json, progress.answer_by_tool = None, "", False
            self._publish()
            raise

    def _withhold(self, start: int) -> None:
        """Replace the answer's turn (the history from ``start`` on, nothing
        when ``start`` is its length) by one assistant message holding
        :data:`WITHHELD`, and publish."""
        self.progress.replace_from(start, Message(role=Role.ASSISTANT, content=[text_part(WITHHELD)]))
        self._publish()

    def _answer_calls(self, results: list[ToolResult]) -> None:
        """Append the tool message holding ``results`` (one per pending call,
        in call order) and give them to the step that made the calls."""
        progress = self.progress
        if progress.steps and progress.steps[-1].tool_calls:
            progress.steps[-1] = attrs.evolve(progress.steps[-1], tool_results=tuple(results))
        progress.history.append(Message(role=Role.TOOL, content=[tool_result_part(r) for r in results]))

    def _accept_text(self, text: str) -> bool:
        """Check a text answer (:func:`~agentcore.engine.answer.accept_text`) and publish."""
        config = self.config
        assert config.spec is not None
        tool_mode, retries = config.final is not None, config.options.output_retries
        accepted = accept_text(self.progress, config.spec, text, tool_mode=tool_mode, retries=retries)
        self._publish()
        return accepted

    def _accept_call(self, calls: tuple[ToolCall, ...]) -> bool:
        """Check the step's ``final_answer`` calls
        (:func:`~agentcore.engine.answer.accept_call`) and publish."""
        config = self.config
        assert config.spec is not None
        accepted = accept_call(self.progress, config.spec, calls, config.options.output_retries)
        self._publish()
        return accepted

    def _out_of_steps(self) -> OutputValidationError:
        return unfinished(self.progress, f"step limit ({self.config.step_limit})")


def _refusing(call_one: CallOne, refused: set[str], why: str, call: ToolCall) -> tuple[ToolResult, bool]:
    """``call_one(call)``, or for a call in ``refused`` an error result saying ``why`` it did not run."""
    if call.id in refused:
        return failed(call, why), True
    return call_one(call)
