"""Middleware and guardrails in the run: how the loop puts them around a
model step and a tool call (design.md, "Middleware" and "Guardrails").

* :func:`model_layers` gives the ``wrap_model`` layers a
  :class:`~agentcore.engine.step.StepStreamer` streams through: the
  ``stream`` guardrails outermost (they check what would reach the reader),
  then the run's middleware in list order.
* :class:`InputCheck` runs the input guardrails, before the first step or
  (``parallel_input``) on a thread of their own while the first step streams
  under a context the check cancels when it trips.
* :func:`guarded_call` runs one tool call: its ``tool_call`` guardrails, its
  middleware around the tool, its ``tool_result`` guardrails.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from agentcore.context import Context
from agentcore.engine.step import valid_unicode
from agentcore.engine.tool_calls import Arguments, describe, failed
from agentcore.errors import Canceled
from agentcore.guardrails import Guardrails, check
from agentcore.middleware import ModelNext, ModelWrap, ToolNext, ToolWrap, tool_result
from agentcore.tools import ToolInputError, parse_arguments
from agentcore.types import Message, Request, StreamPart, StreamPartKind, ToolCall, ToolResult


def model_layers(guardrails: Guardrails | None, wraps: Sequence[ModelWrap]) -> tuple[ModelWrap, ...]:
    """The ``wrap_model`` layers of a run: the stream guardrails (when there
    are any) around the middleware's."""
    if guardrails is None or not guardrails.stream:
        return tuple(wraps)
    return (_StreamGuard(guardrails.stream).wrap_model, *wraps)


class _StreamGuard:
    """Checks the step's text so far before each text delta goes on."""

    def __init__(self, guards: Sequence[Callable[..., Any]]) -> None:
        self.guards = guards

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        return self._checked(call_next(request, ctx))

    def _checked(self, parts: Iterable[StreamPart]) -> Iterator[StreamPart]:
        text = ""
        try:
            for part in parts:
                if part.kind is StreamPartKind.TEXT_DELTA:
                    text += part.text
                    check("stream", self.guards, (text,), None)
                yield part
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                close()


class InputCheck:
    """The input guardrails of one run.

    Before the first step the loop calls :meth:`start`: without
    ``parallel_input`` it runs the guardrails there (a tripwire raises);
    with it, they start on a thread of their own and the first step streams
    through :meth:`wrap_model` under a child context that a tripwire (or a
    guardrail's exception) cancels, which ends the step with that error.
    After the first step the loop calls :meth:`verdict`, which waits for the
    guardrails (or a cancel of the run) before anything of the step is kept
    or any of its calls runs.
    """

    def __init__(self, guardrails: Guardrails, messages: Sequence[Message], ctx: Context) -> None:
        self.guards = guardrails.input
        self.parallel = guardrails.parallel_input
        self.messages = tuple(messages)
        self.ctx = ctx
        self.tripped = Context()
        """Cancelled once :attr:`outcome` is set."""
        self.outcome: BaseException | None = None
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Run the guardrails now, or (parallel) start them on their thread."""
        if not self.parallel:
            self._check()
            return
        context = contextvars.copy_context()
        self.thread = threading.Thread(
            target=context.run, args=(self._background,), name="agentcore-guardrail", daemon=True
        )
        self.thread.start()

    def _check(self) -> None:
        check("input", self.guards, (self.messages,), self.ctx)

    def _background(self) -> None:
        try:
            self._check()
        except BaseException as exc:  # noqa: BLE001 - handed to the worker by verdict()
            with self._lock:
                self.outcome = exc
            self.tripped.cancel()
        finally:
            self.done.set()

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        """While the guardrails run: the step under a context their tripwire cancels."""
        if self.thread is None or (self.done.is_set() and self.outcome is None):
            return call_next(request, ctx)
        return self._guarded(request, ctx, call_next)

    def _guarded(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterator[StreamPart]:
        step_ctx = Context(parent=ctx)
        remove = self.tripped.add_callback(step_ctx.cancel)
        parts: Iterable[StreamPart] = ()
        try:
            parts = call_next(request, step_ctx)
            yield from parts
        except Canceled:  # a model raises ctx.err once its context is cancelled (the Model seam's rule 3)
            with self._lock:
                outcome = self.outcome
            if outcome is None or ctx.cancelled:
                raise
            raise outcome from None
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                close()
            remove()
            step_ctx.detach()

    def verdict(self) -> None:
        """Wait for the guardrails (running them now when the first step was
        not streamed: a step runner replayed it).

        Raises:
            GuardrailTripped: one tripped.
            Canceled: the run was cancelled while waiting.
            Exception: what a guardrail raised.
        """
        if self.thread is None:
            if self.parallel:
                self.parallel = False
                self._check()
            return
        remove = self.ctx.add_callback(self.done.set)
        try:
            self.done.wait()
        finally:
            remove()
        self.ctx.check()
        with self._lock:
            outcome = self.outcome
        self.thread = None
        if outcome is not None:
            raise outcome


def guarded_call(
    guardrails: Guardrails | None,
    wraps: Sequence[ToolWrap],
    run: Callable[[ToolCall, Arguments, Context], ToolResult],
    call: ToolCall,
    arguments: Arguments,
    ctx: Context,
) -> ToolResult:
    """Run ``call`` (``run(call, arguments, ctx)``) through its guardrails and ``wraps``.

    A call whose arguments are not a JSON object is not shown to the
    ``tool_call`` guardrails (it fails without running). A middleware that
    changes the call's ``input`` has it parsed again. An ``Exception`` from a
    middleware becomes the call's error result (loop rule 6).

    Raises:
        GuardrailTripped: a ``tool_call`` or ``tool_result`` guardrail tripped.
        Canceled: the run's context was cancelled.
        BaseException: what a middleware raised that is not an ``Exception``.
    """
    if guardrails is not None and guardrails.tool_call and not isinstance(arguments, ToolInputError):
        check("tool-call", guardrails.tool_call, (call, arguments), ctx)
    result = _wrapped(wraps, run, call, arguments, ctx) if wraps else run(call, arguments, ctx)
    if guardrails is not None and guardrails.tool_result:
        check("tool-result", guardrails.tool_result, (call, result), ctx)
    return result


def _wrapped(
    wraps: Sequence[ToolWrap],
    run: Callable[[ToolCall, Arguments, Context], ToolResult],
    call: ToolCall,
    arguments: Arguments,
    ctx: Context,
) -> ToolResult:
    def innermost(given: ToolCall, given_ctx: Context) -> ToolResult:
        if given.input == call.input:
            return run(given, arguments, given_ctx)
        try:
            changed: Arguments = parse_arguments(given.input)
        except ToolInputError as exc:
            changed = exc
        return run(given, changed, given_ctx)

    next_call: ToolNext = innermost
    try:
        result: object = tool_result(wraps, next_call, call, ctx)
    except (Exception, Canceled) as exc:  # noqa: BLE001 - loop rule 6: a middleware's failure is the tool's
        if ctx.cancelled:
            ctx.check()
        return failed(call, describe(exc))
    if not isinstance(result, ToolResult):
        return failed(call, f"a middleware returned {type(result).__name__}, not a ToolResult")
    if result.tool_call_id != call.id:
        return failed(call, f"a middleware returned the result of call {result.tool_call_id!r}")
    content = valid_unicode(result.content)
    return (
        result
        if content is result.content
        else ToolResult(result.tool_call_id, result.name, content, result.is_error, result.files)
    )
