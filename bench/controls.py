"""The cost of the run's controls (issue 26), as ratios to the plain run timed in the same rounds.

Async tools against sync ones (``--only async-tools``): a ``ScriptedModel``
run of two steps, the first calling the ``add`` tool ``--calls`` times
(``parallel_tools`` when more than one), the second answering. In
alternating rounds, in one process, it times a batch of whole runs with the
tool as:

* ``sync``: ``@tool def add`` (the plain run, the base of every ratio);
* ``async``: ``@tool async def add``: each call's coroutine on the loop thread
  agentcore shares for the process (``agentcore.background.tool_loop``);
* ``async, loop per run``: the same coroutine on an event loop thread started
  at the run's first call and closed at its end (``LoopThread``), the
  alternative to a shared loop.

Printed: milliseconds per run (median) and the median of per-round ratios to
``sync``.

Run: ``python bench/controls.py [--rounds 11] [--runs 200] [--calls 1]
[--quick] [--only async-tools]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import threading
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import Context, FinishReason, LoopOptions, StreamPart, Tool, ToolCall, run, tool, user_message
from agentcore.background import LoopThread, wait
from agentcore.testing import ScriptedModel
from bench._streams import machine, median_ratio, timed


@tool
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return str(a + b)


async def add_async(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    await asyncio.sleep(0)
    return str(a + b)


class LoopPerRun:
    """``add_async`` on an event loop thread of the run's own: started at
    the run's first call, closed by :meth:`close` once the run ended."""

    definition = add.definition

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runner: LoopThread | None = None

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        with self._lock:
            if self._runner is None:
                self._runner = LoopThread("bench-loop-per-run")
            runner = self._runner
        return wait(runner.submit(add_async(**arguments)), ctx)

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()


def _script(calls: int) -> list[list[StreamPart]]:
    parts = [StreamPart.tool_call_event(ToolCall(f"c{n}", "add", '{"a": 2, "b": 3}')) for n in range(calls)]
    finish = StreamPart.step_finish(FinishReason.TOOL_CALLS)
    return [[*parts, finish], [StreamPart.text_delta("5"), StreamPart.step_finish(FinishReason.STOP)]]


def async_tools(rounds: int, runs: int, calls: int) -> None:
    """Time ``sync``, ``async`` and ``async, loop per run`` tool runs; print ratios to ``sync``."""
    async_add = tool(add_async, name="add")
    variants: dict[str, Callable[[], Tool]] = {
        "sync": lambda: add,
        "async": lambda: async_add,
        "async, loop per run": LoopPerRun,
    }

    def batch(make: Callable[[], Tool]) -> Callable[[], None]:
        def go() -> None:
            for _ in range(runs):
                model = ScriptedModel(_script(calls))
                tool_ = make()
                options = LoopOptions(
                    model=model, messages=[user_message("add")], tools=[tool_], parallel_tools=calls > 1
                )
                result = run(options).result()
                if isinstance(tool_, LoopPerRun):
                    tool_.close()
                assert result.text == "5", result.text

        return go

    for make in variants.values():
        batch(make)()  # warm up: imports, the shared loop's thread
    measured: list[dict[str, float]] = []
    for _ in range(rounds):
        row: dict[str, float] = {}
        for name, make in variants.items():
            gc.collect()
            row[name] = timed(batch(make)) / runs
        measured.append(row)
    print(f"async tools against sync ones: {runs} runs a round, {rounds} rounds, {calls} call(s) a run")
    for name in variants:
        ms = statistics.median(r[name] for r in measured) * 1000
        ratio = median_ratio(measured, name, "sync")
        print(f"  {name:22} {ms:8.3f} ms a run   / sync {ratio:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--runs", type=int, default=200, help="runs per batch")
    parser.add_argument("--calls", type=int, default=1, help="tool calls in the run's first step")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 runs")
    parser.add_argument("--only", choices=["async-tools"], help="one benchmark")
    args = parser.parse_args()
    rounds, runs = (3, 50) if args.quick else (args.rounds, args.runs)
    print(machine())
    if args.only in (None, "async-tools"):
        async_tools(rounds, runs, args.calls)


if __name__ == "__main__":
    main()
