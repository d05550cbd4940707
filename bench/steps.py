"""Steps per second: a 1,000-step run with one tool call per step.

A ``ScriptedModel`` answers every step with one ``tool-call`` part and a
``step-finish`` (``tool-calls``); ``run()`` with ``step_limit=1000`` drives it
through 1,000 steps (it ends with ``step-limit`` after running the last
step's tool) and ``result()`` collects it. The baseline is the same work in a
plain loop on one thread: the same model streamed step by step with the
growing history, the same tool executed for each call, the assistant and tool
messages appended; no worker thread, queue, retry policy or bookkeeping.

Two tools, each timed in alternating rounds in one process:

* ``plain``: a hand-written ``Tool`` whose ``execute`` parses the JSON and adds;
* ``@tool``: the same function as a ``FunctionTool`` (its arguments are
  validated against the schema with jsonschema before every call).

Printed: steps per second of each, and the median of per-round ratios
``run() / plain loop`` (time), with the per-step overhead in microseconds.

Run: ``python bench/steps.py [--steps 1000] [--rounds 11] [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    Context,
    FinishReason,
    LoopOptions,
    Message,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    Tool,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    run,
    tool,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.testing import ScriptedModel
from bench._streams import machine, median_ratio, timed

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
)


class Add:
    """A hand-written tool: parse, add, format."""

    definition = ToolDefinition(name="add", description="Add two integers.", input_schema=SCHEMA)

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return str(arguments["a"] + arguments["b"])


@tool
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first addend.
        b: the second addend.
    """
    return str(a + b)


def script(steps: int) -> list[list[StreamPart]]:
    """One tool call and a ``tool-calls`` step-finish per step."""
    return [
        [
            StreamPart.tool_call_event(ToolCall(id=f"call_{n}", name="add", input=f'{{"a": {n}, "b": 1}}')),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=20 + n, output=12)),
        ]
        for n in range(steps)
    ]


def plain_loop(model: ScriptedModel, the_tool: Tool, steps: int) -> list[Message]:
    """The baseline: the same model and tool, driven by hand on this thread."""
    ctx = Context()
    history = [user_message("Add up.")]
    definitions = (the_tool.definition,)
    for _ in range(steps):
        calls: list[ToolCall] = []
        texts: list[str] = []
        for part in model.stream(Request(messages=history, tools=definitions), ctx):
            if part.kind is StreamPartKind.TOOL_CALL and part.tool_call is not None:
                calls.append(part.tool_call)
            elif part.kind is StreamPartKind.TEXT_DELTA:
                texts.append(part.text)
        history.append(Message(role=Role.ASSISTANT, content=[tool_call_part(call) for call in calls]))
        results = [ToolResult(call.id, call.name, the_tool.execute(call.input, ctx), False) for call in calls]
        history.append(Message(role=Role.TOOL, content=[tool_result_part(result) for result in results]))
    return history


def bench_tool(label: str, the_tool: Tool, steps: int, rounds: int) -> None:
    parts = script(steps)
    expected = [str(n + 1) for n in range(steps)]

    def through_run() -> None:
        options = LoopOptions(
            model=ScriptedModel(parts),
            messages=[user_message("Add up.")],
            tools=[the_tool],
            step_limit=steps,
        )
        result = run(options).result()
        assert result.finish_reason is FinishReason.STEP_LIMIT
        assert [s.tool_results[0].content for s in result.steps] == expected

    def plain() -> None:
        history = plain_loop(ScriptedModel(parts), the_tool, steps)
        assert [m.tool_results[0].content for m in history[2::2]] == expected

    funcs: dict[str, Callable[[], None]] = {"plain": plain, "run": through_run}
    for func in funcs.values():
        func()  # warm-up and check
    results = []
    for number in range(rounds):
        order = ["plain", "run"] if number % 2 == 0 else ["run", "plain"]
        times = {}
        for name in order:
            gc.collect()
            times[name] = timed(funcs[name])
        results.append(times)
    print(f"\n{label}: {steps:,} steps, one tool call each, {rounds} rounds")
    for name, title in (("plain", "plain loop"), ("run", "run()")):
        seconds = statistics.median(r[name] for r in results)
        print(f"  {title:12s} {steps / seconds:10,.0f} steps/s  ({seconds * 1000:7.1f} ms)")
    ratio = median_ratio(results, "run", "plain")
    overhead = statistics.median((r["run"] - r["plain"]) / steps for r in results)
    print(f"  run() / plain loop time ratio: {ratio:.2f}   ({overhead * 1e6:.0f} us more per step)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=None, help="rounds (11; --quick: 3)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 11)
    print(machine())
    bench_tool("plain Tool", Add(), args.steps, rounds)
    bench_tool("@tool FunctionTool", add, args.steps, rounds)


if __name__ == "__main__":
    main()
