"""Middleware: code around each model call and each tool call (``LoopOptions.middleware``).

A middleware is an object with one or both of these methods (subclass
:class:`Middleware`, whose methods pass through, and override what you need,
or write any class with the method you need):

``wrap_model(request, ctx, call_next)``
    Around one attempt of a model step: it gets the :class:`Request` the step
    sends (after the history policies and ``prepare_step``: what the model
    would get) and returns the step's stream of :class:`StreamPart`. It may
    change the request (``call_next(attrs.evolve(request, ...), ctx)``), call
    ``call_next`` again (its own retry), or return parts of its own. Write it
    as a generator (``yield from call_next(request, ctx)``) when it touches
    the parts, so that closing the step's stream (a cancel, the step's end)
    reaches the model's stream through it.

``wrap_tool(call, ctx, call_next)``
    Around one tool call: it gets the :class:`ToolCall` and returns its
    :class:`ToolResult`. It may change the arguments
    (``call_next(attrs.evolve(call, input=...), ctx)``), skip the call by
    returning a result of its own (``ToolResult(call.id, call.name, ...)``)
    or change the result ``call_next`` gave.

Both get the run's :class:`Context` (``ctx``), as a model and a tool do: a
cancel, the reader's close or a deadline shows there (``ctx.check()``,
``ctx.wait()``), and a middleware may hand ``call_next`` a child context of
its own (``Context(timeout=5, parent=ctx)``). The issue that asked for
middleware wrote ``wrap_model(request, call_next)``; the context is passed
too, as ``Model.stream(request, ctx)`` has it, because a middleware that
waits or calls a service must see the run's cancel.

The rules (design.md, "Middleware"):

* The list nests in order: the first is the outermost (it sees the request
  first and the stream last).
* ``wrap_model`` runs on the run's worker thread, once per attempt: a
  retried step (loop rule 7) goes through the middleware again, and a
  :class:`~agentcore.errors.ModelError` a middleware raises is classified
  and retried as the model's own. What counts as forwarded to the reader
  (after which no retry) is what the outermost middleware's stream gave.
* ``wrap_tool`` runs where the tool runs: on the worker, or with
  ``parallel_tools`` on the call's own thread. An ``Exception`` it raises
  becomes the call's error result, as a tool's does (loop rule 6); a result
  for another call id is an error result too.
* A step or tool call a durable run's step runner replays did not run: no
  middleware sees it (it saw the call when the call ran).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.model import Model
from agentcore.types import Request, StreamPart, ToolCall, ToolResult

ModelNext = Callable[[Request, Context], Iterable[StreamPart]]
"""What ``wrap_model`` calls to go on: the next middleware, or the model's ``stream``."""
ToolNext = Callable[[ToolCall, Context], ToolResult]
"""What ``wrap_tool`` calls to go on: the next middleware, or the tool."""


class ModelWrap(Protocol):
    """A bound ``wrap_model`` method."""

    def __call__(self, request: Request, ctx: Context, call_next: ModelNext, /) -> Iterable[StreamPart]: ...


class ToolWrap(Protocol):
    """A bound ``wrap_tool`` method."""

    def __call__(self, call: ToolCall, ctx: Context, call_next: ToolNext, /) -> ToolResult: ...


class Middleware:
    """A middleware whose methods pass through: subclass it and override
    :meth:`wrap_model`, :meth:`wrap_tool` or both (see the module docstring)."""

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        """Around one attempt of a model step; returns the step's parts."""
        return call_next(request, ctx)

    def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
        """Around one tool call; returns its result."""
        return call_next(call, ctx)


def _is_middleware(value: object) -> bool:
    return callable(getattr(value, "wrap_model", None)) or callable(getattr(value, "wrap_tool", None))


def check_middleware(value: Any) -> tuple[Any, ...]:
    """``LoopOptions.middleware`` as a tuple (one middleware alone is taken as a list of one).

    Raises:
        ConfigError: an entry has neither a callable ``wrap_model`` nor a
            callable ``wrap_tool``.
    """
    if value is None:
        return ()
    given: object = value
    layers = (given,) if _is_middleware(given) or not isinstance(given, Iterable) else tuple(given)
    for layer in layers:
        if not _is_middleware(layer):
            raise ConfigError(
                f"LoopOptions.middleware takes objects with wrap_model(request, ctx, call_next) "
                f"or wrap_tool(call, ctx, call_next), got {layer!r}"
            )
    return layers


def model_wraps(layers: Sequence[Any]) -> tuple[ModelWrap, ...]:
    """The ``wrap_model`` methods of ``layers``, in list order (those without one skipped)."""
    return tuple(layer.wrap_model for layer in layers if callable(getattr(layer, "wrap_model", None)))


def tool_wraps(layers: Sequence[Any]) -> tuple[ToolWrap, ...]:
    """The ``wrap_tool`` methods of ``layers``, in list order (those without one skipped)."""
    return tuple(layer.wrap_tool for layer in layers if callable(getattr(layer, "wrap_tool", None)))


def model_stream(
    wraps: Sequence[ModelWrap], model: Model, request: Request, ctx: Context
) -> Iterable[StreamPart]:
    """``model.stream(request, ctx)`` through ``wraps``, the first outermost."""
    return _ModelChain(wraps, model)(0, request, ctx)


def tool_result(wraps: Sequence[ToolWrap], run: ToolNext, call: ToolCall, ctx: Context) -> ToolResult:
    """``run(call, ctx)`` through ``wraps``, the first outermost."""
    return _ToolChain(wraps, run)(0, call, ctx)


class _ModelChain:
    def __init__(self, wraps: Sequence[ModelWrap], model: Model) -> None:
        self.wraps = wraps
        self.model = model

    def __call__(self, index: int, request: Request, ctx: Context) -> Iterable[StreamPart]:
        if index == len(self.wraps):
            return self.model.stream(request, ctx)
        return self.wraps[index](request, ctx, lambda request, ctx: self(index + 1, request, ctx))


class _ToolChain:
    def __init__(self, wraps: Sequence[ToolWrap], run: ToolNext) -> None:
        self.wraps = wraps
        self.run = run

    def __call__(self, index: int, call: ToolCall, ctx: Context) -> ToolResult:
        if index == len(self.wraps):
            return self.run(call, ctx)
        return self.wraps[index](call, ctx, lambda call, ctx: self(index + 1, call, ctx))
