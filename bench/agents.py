"""What agents cost over the loop they are a layer on (docs/agents.md).

Three comparisons, each in one process, over the offline ``ScriptedModel``
(the loop alone: no HTTP, so the layer's cost is not hidden by the network):

* ``agent``: ``Agent.generate`` against ``generate(LoopOptions)`` with the
  same options: a 20-step run, one tool call per step; alternating rounds,
  the median of per-round ratios;
* ``as-tool``: a run whose one tool call runs a sub-agent streaming
  ``--deltas`` text deltas (2,000) through ``Agent.as_tool`` (each part
  forwarded as a ``nested`` part, usage rolled up) against the same run whose
  tool calls the same sub-agent directly (``sub.generate(task).text``);
  alternating rounds, the median of per-round ratios;
* ``cancel``: three levels (outer -> mid -> inner, each an agent tool) with
  the innermost model waiting on its context; the caller's context is
  cancelled and the time until the innermost model's wait returns, and until
  the outer ``result()`` has raised, is measured ``--runs`` times (100):
  median and worst, next to the 100 ms target of issue 27.

Run: ``python bench/agents.py [--rounds N] [--runs N] [--deltas N] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    Agent,
    Context,
    FinishReason,
    LoopOptions,
    Request,
    RunError,
    StreamPart,
    ToolCall,
    Usage,
    generate,
    tool,
    user_message,
)
from agentcore.testing import ScriptedModel
from bench._streams import machine, median_ratio, timed

CANCEL_TARGET = 0.100
"""Issue 27: a cancel reaches a sub-run within 100 ms (seconds)."""
STEPS = 20
"""Model steps of the ``agent`` comparison's run."""


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def tool_steps() -> list[list[StreamPart]]:
    calls = [
        [
            StreamPart.tool_call_event(ToolCall(f"c{n}", "add", '{"a": 1, "b": 2}')),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(10, 2)),
        ]
        for n in range(STEPS - 1)
    ]
    return [*calls, [StreamPart.text_delta("3"), StreamPart.step_finish(FinishReason.STOP, Usage(10, 1))]]


def agent_round() -> dict[str, float]:
    agent = Agent(name="adder", model=ScriptedModel(tool_steps()), tools=[add])
    options = LoopOptions(model=ScriptedModel(tool_steps()), messages=[user_message("go")], tools=[add])
    return {
        "agent": timed(lambda: agent.generate("go")),
        "plain": timed(lambda: generate(options)),
    }


def talker(deltas: int) -> Agent:
    parts = [StreamPart.text_delta("x") for _ in range(deltas)]
    return Agent(
        name="talker", model=ScriptedModel([[*parts, StreamPart.step_finish(FinishReason.STOP, Usage(5, 5))]])
    )


def caller(name: str, tools: list[object]) -> Agent:
    ask = StreamPart.tool_call_event(ToolCall("o1", name, json.dumps({"task": "talk"})))
    return Agent(
        name="outer",
        model=ScriptedModel(
            [
                [ask, StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(1, 1))],
                [StreamPart.text_delta("done"), StreamPart.step_finish(FinishReason.STOP, Usage(1, 1))],
            ]
        ),
        tools=tools,
    )


def as_tool_round(deltas: int) -> dict[str, float]:
    nested = caller("talker", [talker(deltas).as_tool()])
    sub = talker(deltas)

    @tool
    def direct(task: str) -> str:
        """Ask the talker."""
        return sub.generate(task).text

    plain = caller("direct", [direct])
    return {
        "as_tool": timed(lambda: _drain(nested.run("go"))),
        "direct": timed(lambda: _drain(plain.run("go"))),
    }


def _drain(reader: Iterable[StreamPart]) -> None:
    for _ in reader:
        pass


def cancel_once() -> tuple[float, float]:
    """Seconds from the cancel to the innermost model's wake, and to the outer result()."""
    entered, reported = threading.Event(), threading.Event()
    woke: list[float] = []

    def wait(request: Request, ctx: Context) -> list[StreamPart]:
        entered.set()
        ctx.wait()
        woke.append(time.perf_counter())
        reported.set()
        ctx.check()
        return []

    def asking(name: str) -> ScriptedModel:
        ask = StreamPart.tool_call_event(ToolCall(f"{name}1", name, json.dumps({"task": "wait"})))
        return ScriptedModel([[ask, StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(1, 1))]])

    inner = Agent(name="inner", model=ScriptedModel([wait]))
    mid = Agent(name="mid", model=asking("inner"), tools=[inner.as_tool()])
    outer = Agent(name="outer", model=asking("mid"), tools=[mid.as_tool()])
    ctx = Context()
    reader = outer.run("go", ctx)
    if not entered.wait(30):
        raise RuntimeError("the innermost model was never called")
    start = time.perf_counter()
    ctx.cancel()
    try:
        reader.result()
    except RunError:
        ended = time.perf_counter()
    else:
        raise RuntimeError("the run was not cancelled")
    if not reported.wait(30):
        raise RuntimeError("the innermost model never woke")
    return woke[0] - start, ended - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=21, help="alternating rounds per ratio (21)")
    parser.add_argument("--runs", type=int, default=100, help="cancels through three levels (100)")
    parser.add_argument("--deltas", type=int, default=2000, help="text deltas of the sub-agent (2,000)")
    parser.add_argument("--quick", action="store_true", help="5 rounds, 20 cancels")
    args = parser.parse_args()
    rounds, runs = (5, 20) if args.quick else (args.rounds, args.runs)
    print(machine())

    agent = [agent_round() for _ in range(rounds)]
    print(
        f"agent: Agent.generate {statistics.median(r['agent'] for r in agent) * 1e3:.2f} ms, "
        f"generate(LoopOptions) {statistics.median(r['plain'] for r in agent) * 1e3:.2f} ms "
        f"({STEPS} steps); agent / plain {median_ratio(agent, 'agent', 'plain'):.2f}"
    )

    nested = [as_tool_round(args.deltas) for _ in range(rounds)]
    print(
        f"as-tool: through as_tool {statistics.median(r['as_tool'] for r in nested) * 1e3:.2f} ms, "
        f"the sub-agent called directly {statistics.median(r['direct'] for r in nested) * 1e3:.2f} ms "
        f"({args.deltas:,} deltas); as_tool / direct {median_ratio(nested, 'as_tool', 'direct'):.2f}"
    )

    cancels = [cancel_once() for _ in range(runs)]
    inner = [wake for wake, _ in cancels]
    outer = [end for _, end in cancels]
    verdict = "met" if max(inner) < CANCEL_TARGET else "NOT met"
    print(
        f"cancel through three levels, {runs} runs: innermost model woken median "
        f"{statistics.median(inner) * 1e3:.3f} ms, worst {max(inner) * 1e3:.3f} ms; outer result() raised "
        f"median {statistics.median(outer) * 1e3:.3f} ms, worst {max(outer) * 1e3:.3f} ms; "
        f"target {CANCEL_TARGET * 1e3:.0f} ms: {verdict}"
    )


if __name__ == "__main__":
    main()
