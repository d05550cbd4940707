"""What a history policy costs per step on a 200-message history.

A run starts from a history of 200 messages (a user message, then 99 turns
of a tool call and its 1,500-character result, and a last user message)
and makes 20 steps, each calling a tool; each policy's run is timed against
the same run without a policy, in alternating rounds in one process, and
printed as the median of per-round ratios (1.00: the policy costs nothing).
Two models: ``AnthropicModel`` over the in-memory transport (each step
builds and digests the request body, as a real step does; a history policy
adds one count call at a run's first step, answered at once) and
``ScriptedModel`` (the loop alone, so the ratio shows the policy's own cost
against the cheapest step there is).

Each policy is measured in two states: ``idle`` (its trigger not reached:
what most steps cost: the prompt's size projected from the last usage, and
the policy's look at the history) and ``acting`` (it changes the history
before every step: the worst case). A policy that acts shrinks the history,
so the steps after it send less: for ``SlidingWindow`` and ``Summarize``
the ratio is the policy's cost net of that saving, and can be below 1.
Each policy's run is timed next to a run without one, in turn first and
second.

Run: ``python bench/history_policy.py [--rounds 7] [--quick]``. Figures are
printed, never asserted.
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
    FinishReason,
    LoopOptions,
    Message,
    Model,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    generate,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.compaction import (
    ClearOldToolResults,
    HistoryPolicy,
    ProviderCompaction,
    SlidingWindow,
    Summarize,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import ScriptedModel
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from bench._streams import machine, timed
from tests.loop_helpers import FuncTool

STEPS = 20
RESULT = "a line of a fetched page, " * 60
"""A tool result: 1,560 characters."""


def history() -> tuple[Message, ...]:
    """200 messages: a user message, 99 call-and-result turns, a user message."""
    messages = [user_message("Read the pages.")]
    for n in range(99):
        call = ToolCall(f"old{n}", "fetch", json.dumps({"page": n}))
        messages.append(Message(role=Role.ASSISTANT, content=[tool_call_part(call)]))
        messages.append(
            Message(role=Role.TOOL, content=[tool_result_part(ToolResult(call.id, "fetch", RESULT))])
        )
    messages.append(user_message("Now read the next twenty."))
    return tuple(messages)


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(event)}\n\n".encode() for event in events)


def anthropic_reply(sent: SentRequest) -> Reply:
    """A tool call (or, for a count, the count), at once."""
    body = sent.json()
    if sent.url.endswith("/count_tokens"):  # a count: its value does not matter here, but it is one
        tokens = 1 + len(sent.body) // 3
        return Reply.of(
            json.dumps({"input_tokens": tokens}).encode(), headers={"content-type": "application/json"}
        )
    number = len(body["messages"])
    start = {
        "type": "message_start",
        "message": {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 1000 + number},
        },
    }
    block = {"type": "tool_use", "id": f"toolu_{number}", "name": "fetch", "input": {}}
    return Reply.of(
        sse(
            start,
            {"type": "content_block_start", "index": 0, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{}"},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        )
    )


def scripted() -> Model:
    def step(request: Request) -> list[StreamPart]:
        call = ToolCall(f"c{len(request.messages)}", "fetch")
        usage = Usage(input=1000 + len(request.messages))
        return [StreamPart.tool_call_event(call), StreamPart.step_finish(FinishReason.TOOL_CALLS, usage)]

    return ScriptedModel([step] * STEPS)


def summarizer() -> Model:
    summary = [
        StreamPart.text_delta("The pages so far."),
        StreamPart.step_finish(FinishReason.STOP, Usage(10, 5)),
    ]
    return ScriptedModel([summary] * STEPS)


POLICIES: dict[str, Callable[[], HistoryPolicy | None]] = {
    "none": lambda: None,
    "ClearOldToolResults idle": lambda: ClearOldToolResults(keep_last=5, trigger_tokens=10**9),
    "ClearOldToolResults acting": lambda: ClearOldToolResults(keep_last=5),
    "SlidingWindow idle": lambda: SlidingWindow(max_tokens=10**9),
    "SlidingWindow acting": lambda: SlidingWindow(max_tokens=1),
    "Summarize idle": lambda: Summarize(summarizer(), trigger_tokens=10**9),
    "Summarize acting": lambda: Summarize(summarizer(), trigger_tokens=1, keep_last=6),
    "ProviderCompaction": lambda: ProviderCompaction(trigger_tokens=150_000),
}


def one_run(
    make_model: Callable[[], Model], policy: HistoryPolicy | None, messages: tuple[Message, ...]
) -> None:
    fetch = FuncTool("fetch", lambda _arguments, _ctx: RESULT)
    options = LoopOptions(
        model=make_model(), messages=messages, tools=[fetch], step_limit=STEPS, history_policy=policy
    )
    result = generate(options)
    assert len(result.steps) == STEPS


def bench(title: str, make_model: Callable[[], Model], rounds: int) -> None:
    messages = history()
    base: list[float] = []
    ratios: dict[str, list[float]] = {name: [] for name in POLICIES if name != "none"}
    per_step: dict[str, list[float]] = {name: [] for name in ratios}
    for number in range(rounds):
        for name in ratios:
            # Each policy against a run without one timed right next to it, in turn first and second.
            pair = [("none", POLICIES["none"]), (name, POLICIES[name])]
            times: dict[str, float] = {}
            for label, make in pair if number % 2 else reversed(pair):
                gc.collect()
                times[label] = timed(lambda make=make: one_run(make_model, make(), messages))
            base.append(times["none"])
            ratios[name].append(times[name] / times["none"])
            per_step[name].append(times[name] / STEPS)
    print(f"{title}: {STEPS} steps from a {len(messages)}-message history, {rounds} rounds")
    print(f"  no policy: {statistics.median(base) / STEPS * 1e3:8.3f} ms a step")
    for name in ratios:
        step = statistics.median(per_step[name]) * 1e3
        print(f"  {name:28} {step:8.3f} ms a step   ratio {statistics.median(ratios[name]):5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    print(machine())

    def anthropic() -> Model:
        transport = MemoryTransport(respond=anthropic_reply)
        return AnthropicModel("claude-sonnet-4-5", api_key="bench-key", transport=transport)

    bench("AnthropicModel, in-memory transport", anthropic, rounds)
    bench("ScriptedModel (the loop alone)", scripted, rounds)


if __name__ == "__main__":
    main()
