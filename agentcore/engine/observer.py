"""The loop's hook for observing runs: :class:`RunObserver` and the function
that makes one per run.

:func:`agentcore.engine.loop.run` asks :func:`observer_for` for each run's
observer; None (the default, and whenever tracing is off) costs the loop one
``is None`` test per hook. The package (``agentcore/__init__.py``) installs
OpenTelemetry's (:mod:`agentcore.integrations.otel`) with :func:`set_observe`
when it is imported, to be asked only once the application has imported the
OpenTelemetry API: the engine imports no integration itself, and a run in a
process without OpenTelemetry runs no tracing code.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from agentcore.options import LoopOptions
from agentcore.types import ContentPart, Message, Request, StreamPart, ToolCall, ToolResult

__all__ = ["Observe", "RunObserver", "observer_for", "set_observe"]


class RunObserver(Protocol):
    """What the loop reports about one run. Made on the caller's thread when
    the run starts; called on the run's worker thread, except
    :meth:`tool_call`, which runs on the thread that runs the call (the
    worker, or the call's own thread with ``parallel_tools``)."""

    def step_started(self, request: Request) -> None:
        """A model step is about to send ``request`` (its first attempt)."""

    def retried(self, err: BaseException, attempt: int, delay: float) -> None:
        """Attempt ``attempt`` (from 1) of the step failed with ``err`` and is
        retried after ``delay`` seconds."""

    def step_finished(self, finish: StreamPart, content: Sequence[ContentPart]) -> None:
        """The step ended with ``finish`` (its ``step-finish`` part) and
        produced ``content`` (text, reasoning and tool calls, in order)."""

    def tool_call(self, call: ToolCall, execute: Callable[[], ToolResult]) -> ToolResult:
        """Run the tool call (``execute()``) and return its result; an
        exception it raises must propagate."""

    def run_ended(self, terminal: StreamPart, history: Sequence[Message]) -> None:
        """The run ended with ``terminal`` (a ``finish`` or ``error`` part; a
        step whose :meth:`step_finished` never came failed with it);
        ``history`` is the run's history at the end."""


Observe = Callable[[LoopOptions], "RunObserver | None"]
"""Makes the observer of a run about to start, or returns None to leave it unobserved."""

_lock = threading.Lock()
_observe: Observe | None = None
_after: tuple[str, ...] = ()


def set_observe(observe: Observe | None, after: tuple[str, ...] = ()) -> None:
    """Install ``observe`` as the maker of every later run's observer (None: none).

    Args:
        observe: makes a run's observer, or returns None.
        after: module names: when given, ``observe`` is asked only once one of
            them has been imported (an observer's API, which nobody can have
            configured before it was imported); a run before that has none.
    """
    global _observe, _after
    with _lock:
        _observe, _after = observe, after


def observer_for(options: LoopOptions) -> RunObserver | None:
    """The observer of a run about to start with ``options``, or None."""
    with _lock:
        observe, after = _observe, _after
    if observe is None:
        return None
    modules = sys.modules
    if after and not any(modules.get(name) is not None for name in after):
        return None
    return observe(options)
