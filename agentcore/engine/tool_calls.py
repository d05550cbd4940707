"""A step's tool calls: which wait for approval, running them, and their results.

The loop parses each call's arguments once (:func:`parse_all`, with
:func:`agentcore.tools.parse_arguments`) and hands the same dict to the
approval check and to the tool. :func:`run_calls` runs the calls in call
order on the run's worker thread, or (``parallel_tools``) all at once, each
on a thread of its own, and gives their results in call order. A tool's
``Exception``, an unknown tool name and arguments that are not a JSON object
become error results the model sees (design.md, loop rule 6): the tool's
:meth:`~agentcore.tools.Tool.execute` is called only with a known tool and a
dict.

What a running call may do to its own run (the seam of agent tools and
handoffs): while the loop runs a call it enters a :class:`ToolScope` for it,
a :mod:`contextvars` value; code running inside the call (on the call's
thread, and on the worker of a run started there, which copies it) reads it
with :func:`current`. Through it a tool may

* put parts into its run's stream (:attr:`ToolScope.emit`), in order and
  before the call's own ``tool-result`` part: ``Agent.as_tool`` forwards
  its sub-run's parts as ``nested`` parts;
* add what work done for the call used to the run's usage and cost
  (:attr:`ToolScope.spend`), published at once;
* ask the run to move to other options once the step's calls have their
  results (:attr:`ToolScope.hand_off`): ``agentcore.handoff``.

It is the library's own seam (``agentcore.agent`` uses it), not public API:
a user's tool that wants these uses an agent tool or a handoff.
:attr:`ToolScope.depth` counts the runs around the call's run (0: a
top-level run), so agent tools can stop recursion.
"""

from __future__ import annotations

import contextvars
import functools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import attrs

from agentcore.background import start_thread, wait
from agentcore.context import Context
from agentcore.engine.observer import RunObserver
from agentcore.engine.step import valid_unicode
from agentcore.errors import Canceled
from agentcore.options import LoopOptions
from agentcore.tools import ToolInputError, ToolSet, parse_arguments, tool_output
from agentcore.types import StreamPart, ToolCall, ToolResult, Usage

_log = logging.getLogger("agentcore")

Arguments = dict[str, Any] | ToolInputError
"""A call's parsed arguments, or why they cannot be used (the error result's text)."""

CallOne = Callable[[ToolCall], tuple[ToolResult, bool]]
"""Runs one call and gives its result, and True when it ran now (False: a
step runner gave the result it recorded, which went to the reader then)."""


def parse_all(calls: Sequence[ToolCall]) -> dict[str, Arguments]:
    """Each call's arguments (:func:`~agentcore.tools.parse_arguments`), by call id."""
    parsed: dict[str, Arguments] = {}
    for call in calls:
        try:
            parsed[call.id] = parse_arguments(call.input)
        except ToolInputError as exc:
            parsed[call.id] = exc
    return parsed


def needs_approval(tools: ToolSet, call: ToolCall, arguments: Arguments) -> bool:
    """True when the tool ``call`` calls wants a human to approve these arguments.

    A tool asks through a ``needs_approval(arguments) -> bool`` method
    (``@tool(requires_approval=...)`` makes one). Arguments that are not a
    JSON object need none (the call fails without running); a predicate that
    raises counts as asking (logged).
    """
    check = getattr(tools.get(call.name), "needs_approval", None)
    if check is None or isinstance(arguments, ToolInputError):
        return False
    try:
        return bool(check(arguments))
    except Exception as exc:  # noqa: BLE001 - a broken predicate must not run the tool unapproved
        _log.warning(
            "agentcore: the approval check of tool %r raised %s; the call waits for approval",
            call.name,
            type(exc).__name__,
        )
        return True


def run_calls(
    calls: Sequence[ToolCall],
    call_one: CallOne,
    ctx: Context,
    *,
    parallel: bool,
    known: Mapping[str, ToolResult],
) -> Iterator[tuple[ToolCall, ToolResult, bool]]:
    """Run ``calls`` and give ``(call, result, ran)`` for each, in call order.

    Args:
        calls: the step's calls.
        call_one: runs one call (in a copy of the caller's :mod:`contextvars`
            context: what a tool sets stays its own).
        ctx: the run's context, checked before each result.
        parallel: run the calls that have no result yet all at once, each on
            a daemon thread of its own (a stuck tool never keeps the
            interpreter from exiting; :func:`agentcore.run` ends the run for
            the reader at a cancel even while a tool ignores it).
        known: results that calls already have (a resumed run): given with
            ``ran`` False, not run again.

    Raises:
        Canceled: ``ctx`` was cancelled.
        BaseException: what ``call_one`` raised.
    """
    todo = [call for call in calls if call.id not in known]
    started = (
        {call.id: start_thread(functools.partial(call_one, call), "agentcore-tool") for call in todo}
        if parallel and len(todo) > 1
        else {}
    )
    for call in calls:
        ctx.check()
        result = known.get(call.id)
        if result is not None:
            yield call, result, False
        elif started:
            yield (call, *wait(started[call.id], ctx))
        else:
            yield (call, *contextvars.copy_context().run(call_one, call))


def execute(
    tools: ToolSet, call: ToolCall, arguments: Arguments, ctx: Context, observer: RunObserver | None
) -> ToolResult:
    """Run one call (under ``observer``'s span when traced); every
    ``Exception`` becomes an error result (loop rule 6).

    Raises:
        Canceled: the run's context was cancelled while the tool ran (whatever
            the tool made of it).
        BaseException: what the tool raised that is not an ``Exception``.
    """
    if observer is not None:
        return observer.tool_call(call, functools.partial(execute, tools, call, arguments, ctx, None))
    tool = tools.get(call.name)
    if tool is None:
        available = ", ".join(tools) or "none"
        return failed(call, f"unknown tool {call.name!r}. Available tools: {available}.")
    if isinstance(arguments, ToolInputError):
        return failed(call, str(arguments))
    try:
        output: object = tool.execute(arguments, ctx)
    except (Exception, Canceled) as exc:  # noqa: BLE001 - loop rule 6: a tool's failure is fed back to the model
        if ctx.cancelled:  # the run's cancel (whatever the tool made of it) ends the run
            ctx.check()
        return failed(call, describe(exc))
    try:
        text, files = tool_output(output)
    except TypeError as exc:
        return failed(call, str(exc))
    return ToolResult(call.id, call.name, valid_unicode(text), False, files)


def failed(call: ToolCall, message: str) -> ToolResult:
    """An error result for ``call``: the model sees ``Error: <message>``."""
    return ToolResult.error(call, valid_unicode(message))


def not_run(call: ToolCall) -> ToolResult:
    """The result of a call that a cancel (or a failure) left without one."""
    return failed(call, "the run ended before this tool call finished.")


def describe(exc: BaseException) -> str:
    """``"TypeName: message"`` for a tool's exception, even one whose
    ``__str__`` raises."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not end the run
        message = "(the exception's message could not be read)"
    return f"{type(exc).__name__}: {message}"


_scope: contextvars.ContextVar[ToolScope | None] = contextvars.ContextVar(
    "agentcore_tool_scope", default=None
)


@attrs.frozen
class ToolScope:
    """The tool call being run and what it may do to its run.

    Attributes:
        call: the call.
        options: the options the run has now (the agent in charge's, after
            a handoff).
        depth: how many runs are around the call's run (0: a top-level
            run; a run started inside a tool call of a run at depth ``d``
            is at ``d + 1``).
        usage: the run's usage when the call started (tokens).
        cost: the run's cost when the call started, in US dollars: its
            steps' and its sub-runs'; None when the run has no ``cost``
            limit (it is not counted then) or one of them has no price.
        emit: puts a part into the run's stream, before the call's
            ``tool-result`` part (thread-safe; raises ``Canceled`` when the
            reader went away, as the run does).
        spend: ``spend(usage, cost)`` adds ``usage`` (tokens) and ``cost``
            (US dollars; None: not priced) to the run's (thread-safe).
        hand_off: ``hand_off(agent, options)`` moves the run to ``options``
            (whose ``agent_name`` is ``agent``) once this step's calls have
            their results; returns None, or why it is refused (a second
            handoff in the step) for the call's error result.
    """

    call: ToolCall
    options: LoopOptions
    depth: int
    usage: Usage
    cost: Decimal | None
    emit: Callable[[StreamPart], None]
    spend: Callable[[Usage, Decimal | None], None]
    hand_off: Callable[[str, LoopOptions], str | None]


def current() -> ToolScope | None:
    """The scope of the tool call this code runs in; None outside one."""
    return _scope.get()


@contextmanager
def entered(scope: ToolScope) -> Iterator[None]:
    """Run the block as inside ``scope``'s call."""
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)
