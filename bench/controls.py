"""What the controls of issue 26 cost a run (docs/controls.md).

Each comparison runs in alternating rounds in one process against the plain
run (the same model and tools without the control) and prints the median of
per-round ratios (1.00 means no cost):

1. Middleware: a run of 20 steps (a tool call each, then an answer of
   2,000 text deltas) over a ``ScriptedModel`` (the loop alone: the cost
   shows most), plain; with ``middleware=[]`` (the empty stack: the loop's
   own path); with one pass-through ``Middleware()`` (both methods hand
   ``call_next``'s stream and result on as they are); with five; with one
   that passes each part through a generator (``yield from``), as a
   middleware that looks at the parts does.

Run: ``python bench/controls.py [--rounds 9] [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    FinishReason,
    LoopOptions,
    Middleware,
    Request,
    StreamPart,
    ToolCall,
    ToolDefinition,
    Usage,
    run,
    user_message,
)
from agentcore.context import Context
from agentcore.middleware import ModelNext
from agentcore.testing import ScriptedModel
from bench._streams import machine, median_ratio, timed

STEPS = 20
DELTAS = 2000


class _Echo:
    definition = ToolDefinition(name="echo", description="", input_schema='{"type":"object"}')

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "ok"


class _Parts(Middleware):
    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterator[StreamPart]:
        yield from call_next(request, ctx)


def _script() -> list[list[StreamPart]]:
    steps: list[list[StreamPart]] = [
        [
            StreamPart.tool_call_event(ToolCall(id=f"c{n}", name="echo", input="{}")),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(10, 1)),
        ]
        for n in range(STEPS - 1)
    ]
    steps.append(
        [StreamPart.text_delta("x")] * DELTAS + [StreamPart.step_finish(FinishReason.STOP, Usage(10, DELTAS))]
    )
    return steps


def _run(**extra: Any) -> None:
    options = LoopOptions(
        model=ScriptedModel(_script()),
        messages=[user_message("hi")],
        tools=[_Echo()],
        step_limit=STEPS,
        **extra,
    )
    for _ in run(options):
        pass


def bench_middleware(rounds: int) -> None:
    variants: dict[str, dict[str, Any]] = {
        "plain": {},
        "empty": {"middleware": []},
        "one": {"middleware": [Middleware()]},
        "five": {"middleware": [Middleware() for _ in range(5)]},
        "parts": {"middleware": [_Parts()]},
    }
    results = [
        {name: timed(functools.partial(_run, **extra)) for name, extra in variants.items()}
        for _ in range(rounds)
    ]
    plain = statistics.median(r["plain"] for r in results)
    print(f"middleware: {STEPS} steps (a tool call each, then {DELTAS} text deltas), ScriptedModel")
    print(f"  {rounds} rounds")
    print(f"  plain run: {plain * 1000:8.2f} ms")
    for name in ("empty", "one", "five", "parts"):
        print(f"  {name:5} stack / plain: {median_ratio(results, name, 'plain'):.2f}")


BENCHES = [bench_middleware]
"""Each comparison of this script, run in order."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds per comparison (9; --quick: 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 9)
    print(machine())
    for bench in BENCHES:
        bench(rounds)


if __name__ == "__main__":
    main()
