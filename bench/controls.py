"""What the controls of issue 26 cost a run (docs/controls.md), as ratios to
the plain run timed in the same rounds, in one process (1.00: no cost).

Middleware (``--only middleware``): a run of 20 steps (a tool call each, then
an answer of 2,000 text deltas) over a ``ScriptedModel`` (the loop alone:
the cost shows most), plain; with ``middleware=[]`` (the empty stack: the
loop's own path); with one pass-through ``Middleware()`` (both methods hand
``call_next``'s stream and result on as they are); with five; with one that
passes each part through a generator (``yield from``), as a middleware that
looks at the parts does.

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

Fallback (``--only fallback``): ``FallbackModel`` with a healthy primary
(the fallback is never called) against the primary alone, in process CPU
time (all threads: steadier than the wall clock on a shared machine): a
500-step scripted run, one tool call per step (the loop alone: what the
fallback adds to each step), and runs of the Anthropic adapter over a local
HTTP stream of small answers (what it adds to a real step).

Printed: per comparison, the plain run's time and the median of per-round
ratios to it.

Run: ``python bench/controls.py [--rounds N] [--quick] [--only middleware|async-tools|fallback]
[--runs 200] [--calls 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    FallbackModel,
    FinishReason,
    LoopOptions,
    Middleware,
    Model,
    Request,
    StreamPart,
    Tool,
    ToolCall,
    ToolDefinition,
    Usage,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.background import LoopThread, wait
from agentcore.context import Context
from agentcore.middleware import ModelNext
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import ScriptedModel
from bench._streams import anthropic_body, machine, median_ratio, timed
from tests.localserver import LocalServer, sse_reply

STEPS = 20
DELTAS = 2000


class _Echo:
    definition = ToolDefinition(name="echo", description="", input_schema='{"type":"object"}')

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "ok"


class _Parts(Middleware):
    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterator[StreamPart]:
        yield from call_next(request, ctx)


def _middleware_script() -> list[list[StreamPart]]:
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
        model=ScriptedModel(_middleware_script()),
        messages=[user_message("hi")],
        tools=[_Echo()],
        step_limit=STEPS,
        **extra,
    )
    for _ in run(options):
        pass


def middleware(rounds: int) -> None:
    """Time the plain run and each middleware stack; print ratios to the plain run."""
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


def _tool_script(calls: int) -> list[list[StreamPart]]:
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
                model = ScriptedModel(_tool_script(calls))
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


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def _compare(label: str, plain: Callable[[], object], controlled: Callable[[], object], rounds: int) -> None:
    plain(), controlled()  # warm up connections and caches
    results = []
    for index in range(rounds):  # alternating which goes first, so neither always runs warm
        first, second = ("plain", "controlled") if index % 2 == 0 else ("controlled", "plain")
        calls = {"plain": plain, "controlled": controlled}
        times = {first: timed(calls[first], time.process_time)}
        times[second] = timed(calls[second], time.process_time)
        results.append(times)
    plain_s = statistics.median(r["plain"] for r in results)
    controlled_s = statistics.median(r["controlled"] for r in results)
    print(f"{label}, {rounds} rounds")
    print(f"  plain      {plain_s * 1000:9.2f} ms CPU")
    print(f"  controlled {controlled_s * 1000:9.2f} ms CPU")
    print(f"  controlled / plain time ratio: {median_ratio(results, 'controlled', 'plain'):.3f}")


def fallback(rounds: int, steps: int, runs: int) -> None:
    """``FallbackModel`` with a healthy primary against the primary alone."""
    call = StreamPart.tool_call_event(ToolCall("c1", "noop", "{}"))
    tool_step = [call, StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(10, 2))]
    answer = [StreamPart.text_delta("done"), StreamPart.step_finish(FinishReason.STOP, Usage(10, 1))]
    script = [tool_step] * (steps - 1) + [answer]

    def scripted(wrap: bool) -> Callable[[], object]:
        def once() -> None:
            primary = ScriptedModel(script, model_id="primary")
            model: Model = FallbackModel(primary, ScriptedModel([], model_id="fallback")) if wrap else primary
            result = generate(
                LoopOptions(model=model, messages=[user_message("go")], tools=[noop], step_limit=steps)
            )
            assert len(result.steps) == steps

        return once

    _compare(
        f"FallbackModel, healthy primary: ScriptedModel, {steps} steps",
        scripted(False),
        scripted(True),
        rounds,
    )

    server = LocalServer([sse_reply(anthropic_body(50), piece=4096)])
    primary = AnthropicModel("claude-sonnet-4-5", api_key="bench-key", base_url=server.url)
    chain = FallbackModel(
        primary, AnthropicModel("claude-haiku-4-5", api_key="bench-key", base_url=server.url)
    )

    def http(model: Model) -> Callable[[], object]:
        def many() -> None:
            for _ in range(runs):
                result = generate(LoopOptions(model=model, messages=[user_message("hi")]))
                assert result.steps[0].model_id == "claude-sonnet-4-5"

        return many

    try:
        _compare(
            f"FallbackModel, healthy primary: AnthropicModel over 127.0.0.1, {runs} runs of 50 deltas",
            http(primary),
            http(chain),
            rounds,
        )
    finally:
        server.close()


BENCHES: dict[str, Callable[[argparse.Namespace], None]] = {
    "middleware": lambda args: middleware(args.rounds),
    "async-tools": lambda args: async_tools(args.rounds, args.runs, args.calls),
    "fallback": lambda args: fallback(
        args.rounds, steps=100 if args.quick else 500, runs=20 if args.quick else 100
    ),
}
"""Each comparison of this script, by name, run in order."""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds per comparison (9; --quick: 3)")
    parser.add_argument(
        "--runs", type=int, default=None, help="async tools: runs per batch (200; --quick: 50)"
    )
    parser.add_argument(
        "--calls", type=int, default=1, help="async tools: tool calls in the run's first step"
    )
    parser.add_argument("--quick", action="store_true", help="3 rounds, fewer runs")
    parser.add_argument("--only", choices=tuple(BENCHES), help="one comparison")
    args = parser.parse_args()
    args.rounds = args.rounds or (3 if args.quick else 9)
    args.runs = args.runs or (50 if args.quick else 200)
    print(machine())
    for name, bench in BENCHES.items():
        if args.only in (None, name):
            bench(args)


if __name__ == "__main__":
    main()
