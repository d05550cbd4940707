"""Guardrails: checks that end a run (``LoopOptions(guardrails=Guardrails(...))``).

A guardrail is a plain callable that returns None (pass) or a
:class:`Tripwire` (stop, with a reason). Five kinds, one field of
:class:`Guardrails` each:

========================  =========================================  ==========================
field (``kind``)          called with                                when
========================  =========================================  ==========================
``input`` (input)         the run's messages (a tuple)               before the first step
``output`` (output)       the answer: its text, or with              when the run is about to
                          ``output_type`` the validated value        finish with it
``stream`` (stream)       the step's text so far (a str)             before each text delta
                                                                     goes to the reader
``tool_call`` (tool-call) the :class:`ToolCall` and its arguments    before the call runs
                          (a dict)
``tool_result``           the :class:`ToolCall` and its              after the call, before
(tool-result)             :class:`ToolResult`                        anyone sees the result
========================  =========================================  ==========================

An ``input``, ``output``, ``tool_call`` or ``tool_result`` guardrail that
takes one more positional parameter also gets the run's :class:`Context`, so
one that calls a model (``generate(..., ctx)``) is cancelled with the run. A
``stream`` guardrail runs on every text delta: keep it cheap (a regular
expression, not a model call). Guardrails of a kind run in list order; the
first tripwire wins. An exception a guardrail raises ends the run with that
error (``FinishReason.ERROR``), as an ``on_step`` callback's does.

A tripwire ends the run with ``FinishReason.GUARDRAIL``: its ``error`` part's
error, and so ``RunError.err``, is a :class:`GuardrailTripped` naming the
kind, the reason and the guardrail. The history the run gives back
(``RunError.messages``) stays valid to send: a withheld answer (output,
stream) is replaced by one assistant message holding :data:`WITHHELD`; a
blocked call gets the error result :data:`BLOCKED_CALL`, a withheld result
:data:`WITHHELD_RESULT`, and the other calls of that step the loop's
"not run" result (design.md, "Guardrails").

With ``parallel_input=True`` the first step's request goes out while the
input guardrails run: the answer starts sooner, but a tripped input still
costs that step's tokens (its usage is counted when the step finished
before the trip; a step cancelled mid-stream reported none) and the reader
may have seen some of its parts. The step's tool calls never run before the
input guardrails passed.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.errors import AgentcoreError, ConfigError

GUARDRAIL_KINDS = ("input", "output", "stream", "tool-call", "tool-result")
"""The kinds of guardrail, as :attr:`GuardrailTripped.kind` spells them."""
WITHHELD = "(This answer was withheld by a guardrail.)"
"""The text of the assistant message that replaces an answer a guardrail stopped."""
BLOCKED_CALL = "a guardrail blocked this tool call; it did not run."
"""The error result (after ``Error: ``) of a call a ``tool_call`` guardrail stopped."""
WITHHELD_RESULT = "a guardrail withheld this tool call's result."
"""The error result (after ``Error: ``) of a call whose result a ``tool_result`` guardrail stopped."""


@attrs.frozen
class Tripwire:
    """What a guardrail returns to stop the run.

    Attributes:
        reason: why, for the caller (:attr:`GuardrailTripped.reason`); the
            model never sees it.
        info: anything more the guardrail wants the caller to have (a score,
            the matched text); not compared by ``==``.
    """

    reason: str = attrs.field(validator=attrs.validators.instance_of(str))
    info: Any = attrs.field(default=None, eq=False)


class GuardrailTripped(AgentcoreError):
    """A guardrail returned a :class:`Tripwire`: the run ended with ``FinishReason.GUARDRAIL``.

    Attributes:
        kind: which kind of guardrail (:data:`GUARDRAIL_KINDS`).
        reason: the tripwire's reason.
        guardrail: the guardrail's name (its ``__qualname__``, or its class's name).
        tripwire: the :class:`Tripwire` it returned.
    """

    def __init__(self, kind: str, guardrail: str, tripwire: Tripwire) -> None:
        super().__init__(f"the {kind} guardrail {guardrail} tripped: {tripwire.reason}")
        self.kind = kind
        self.reason = tripwire.reason
        self.guardrail = guardrail
        self.tripwire = tripwire

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.kind, self.guardrail, self.tripwire)


def _callables(value: Callable[..., Any] | Iterable[Callable[..., Any]] | None) -> tuple[Any, ...]:
    """A field of :class:`Guardrails` as a tuple (one callable alone is a list of one)."""
    if value is None:
        return ()
    return (value,) if callable(value) or not isinstance(value, Iterable) else tuple(value)


def _all_callable(instance: Any, attribute: attrs.Attribute[Any], value: tuple[Any, ...]) -> None:
    for guard in value:
        if not callable(guard):
            raise ConfigError(f"Guardrails.{attribute.name} takes callables, got {guard!r}")


@attrs.frozen
class Guardrails:
    """The run's guardrails (``LoopOptions.guardrails``), by kind; see the module docstring.

    Attributes:
        input: called with the run's messages before the first step.
        output: called with the final answer (text, or the validated value).
        stream: called with the step's text so far before each text delta is forwarded.
        tool_call: called with a call and its arguments before it runs.
        tool_result: called with a call and its result before anyone sees it.
        parallel_input: send the first step while the input guardrails run
            (see the module docstring for what that costs); False: they
            pass before any request.

    Raises:
        ConfigError: an entry is not callable.
    """

    input: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_callables, validator=_all_callable
    )
    output: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_callables, validator=_all_callable
    )
    stream: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_callables, validator=_all_callable
    )
    tool_call: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_callables, validator=_all_callable
    )
    tool_result: tuple[Callable[..., Any], ...] = attrs.field(
        default=(), converter=_callables, validator=_all_callable
    )
    parallel_input: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


def guardrail_name(guard: Callable[..., Any]) -> str:
    """The name :attr:`GuardrailTripped.guardrail` gives ``guard``."""
    name = getattr(guard, "__qualname__", None) or getattr(guard, "__name__", None)
    return name if isinstance(name, str) else type(guard).__name__


def _takes(guard: Callable[..., Any], count: int) -> bool:
    """True when ``guard`` wants a context as positional argument ``count``:
    that parameter has no default (an optional one, ``max_words=3`` or a
    closure's ``v=v``, keeps its default) or is annotated ``Context``, or
    ``guard`` takes ``*args``."""
    try:
        params = inspect.signature(guard).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < count:
        return any(p.kind is p.VAR_POSITIONAL for p in params)
    slot = positional[count - 1]
    if slot.default is slot.empty:
        return True
    annotation = slot.annotation if isinstance(slot.annotation, str) else str(slot.annotation)
    return re.search(r"\bContext\b", annotation) is not None  # Context, Context | None, "Context[Deps]"


def check(
    kind: str, guards: Sequence[Callable[..., Any]], args: tuple[Any, ...], ctx: Context | None
) -> None:
    """Call each of ``guards`` with ``args`` (and ``ctx`` when it is given and
    the guardrail wants it: :func:`_takes`), in order.

    Raises:
        GuardrailTripped: one returned a :class:`Tripwire`.
        TypeError: one returned neither None nor a :class:`Tripwire`.
        Exception: what a guardrail raised.
    """
    for guard in guards:
        verdict = guard(*args, ctx) if ctx is not None and _takes(guard, len(args) + 1) else guard(*args)
        if verdict is None:
            continue
        if isinstance(verdict, Tripwire):
            raise GuardrailTripped(kind, guardrail_name(guard), verdict)
        raise TypeError(
            f"the {kind} guardrail {guardrail_name(guard)} returned {verdict!r}; "
            "a guardrail returns None (pass) or agentcore.Tripwire(reason)"
        )
