"""What a running tool call may do to its own run: the seam of agent tools and handoffs.

While the loop runs a tool call it enters a :class:`ToolScope` for it, a
:mod:`contextvars` value: code running inside the call (on the call's
thread, and on the worker of a run started there, which copies it) reads it
with :func:`current`. Through it a tool may

* put parts into its run's stream (:attr:`ToolScope.emit`), in order and
  before the call's own ``tool-result`` part: ``Agent.as_tool`` forwards
  its sub-run's parts as ``nested`` parts;
* add what work done for the call used to the run's usage and cost
  (:attr:`ToolScope.spend`): the sub-run's, counted by the loop on its
  worker thread when the call's result is taken;
* ask the run to move to other options after this step
  (:attr:`ToolScope.hand_off`): ``agentcore.handoff``.

It is the library's own seam (``agentcore.agent`` uses it), not public API:
a tool of a user's that wants these uses an agent tool or a handoff. A call
run by a durable engine's step runner elsewhere (another process) has no
scope there: its emitted parts and handoff are not seen, which
``agentcore.agent`` refuses or documents. :attr:`ToolScope.depth` counts
the runs around the call's run (0: a top-level run), so agent tools can
stop recursion.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal

import attrs

from agentcore.options import LoopOptions
from agentcore.types import StreamPart, ToolCall, Usage

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
