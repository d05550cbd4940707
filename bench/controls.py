"""What the production controls cost when they do nothing (issue 26).

Each comparison runs the same work with and without the control, in
alternating rounds in one process, and prints the median of per-round
ratios of the process's CPU time (all its threads: steadier than the wall
clock on a shared machine; 1.00 means no cost):

* ``FallbackModel`` with a healthy primary (the fallback is never called),
  against the primary alone: a 500-step scripted run, one tool call per step
  (the loop alone: what the fallback adds to each step), and runs of the
  Anthropic adapter over a local HTTP stream of small answers (what it adds
  to a real step).

Run: ``python bench/controls.py [--rounds 7] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    FallbackModel,
    FinishReason,
    LoopOptions,
    Model,
    StreamPart,
    ToolCall,
    Usage,
    generate,
    tool,
    user_message,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import ScriptedModel
from bench._streams import anthropic_body, machine, median_ratio, timed
from tests.localserver import LocalServer, sse_reply


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


def bench_fallback(rounds: int, steps: int, runs: int) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds per comparison (11; --quick: 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds, fewer steps and runs")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 11)
    print(machine())
    bench_fallback(rounds, steps=100 if args.quick else 500, runs=20 if args.quick else 100)


if __name__ == "__main__":
    main()
