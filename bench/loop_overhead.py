"""How much the loop and the adapters cost per stream part.

Two comparisons, each measured in alternating rounds in one process and
printed as the median of per-round ratios (1.00 means no overhead):

1. ``run()`` over a ScriptedModel stream of N text deltas, against iterating
   the same ScriptedModel stream directly (the loop's worker thread, queue and
   bookkeeping).
2. Each adapter (Anthropic, OpenAI) over a local HTTP stream of N text deltas (served in
   4 KB pieces by a real server on 127.0.0.1), iterated directly and through
   ``run()``, against the floor: requests + sseclient-py + ``json.loads``,
   collecting the text and nothing else.

Run: ``python bench/loop_overhead.py [--parts 20000] [--rounds 7] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests
from sseclient import SSEClient

from agentcore import Context, FinishReason, LoopOptions, Model, Request, StreamPart, Usage, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import ScriptedModel
from bench._streams import (
    anthropic_body,
    anthropic_text,
    machine,
    median_ratio,
    openai_body,
    openai_text,
    timed,
)
from tests.localserver import LocalServer, sse_reply


def bench_loop(parts: int, rounds: int) -> None:
    script = [StreamPart.text_delta("x")] * parts + [
        StreamPart.step_finish(FinishReason.STOP, Usage(1, parts))
    ]
    request = Request(messages=[user_message("hi")])

    def direct() -> None:
        for _ in ScriptedModel([script]).stream(request, Context()):
            pass

    def through_run() -> None:
        for _ in run(LoopOptions(model=ScriptedModel([script]), messages=[user_message("hi")])):
            pass

    results = [{"direct": timed(direct), "run": timed(through_run)} for _ in range(rounds)]
    direct_s = statistics.median(r["direct"] for r in results)
    run_s = statistics.median(r["run"] for r in results)
    print(f"ScriptedModel, {parts} parts, {rounds} rounds")
    print(f"  direct iteration: {parts / direct_s:12,.0f} parts/s")
    print(f"  through run():    {parts / run_s:12,.0f} parts/s")
    print(f"  run() / direct time ratio: {median_ratio(results, 'run', 'direct'):.2f}")


def bench_adapter(name: str, parts: int, rounds: int) -> None:
    anthropic = name == "anthropic"
    body = anthropic_body(parts) if anthropic else openai_body(parts)
    server = LocalServer([sse_reply(body, piece=4096)])
    url = server.url + ("/v1/messages" if anthropic else "/v1/chat/completions")
    text_of = anthropic_text if anthropic else openai_text
    session = requests.Session()
    session.trust_env = False
    model: Model = (
        AnthropicModel("claude-sonnet-4-5", api_key="bench-key", base_url=server.url)
        if anthropic
        else OpenAIChatModel("gpt-4o", api_key="bench-key", base_url=server.url + "/v1")
    )
    request = Request(messages=[user_message("hi")])

    def floor() -> None:
        response = session.post(url, json={"stream": True}, stream=True, timeout=(10, 60))
        reads = iter(lambda: response.raw.read1(65536), b"")
        text = []
        for event in SSEClient(reads).events():
            if event.data == "[DONE]":
                break
            piece = text_of(json.loads(event.data))
            if piece:
                text.append(piece)
        response.close()
        assert len(text) == parts

    def adapter() -> None:
        count = sum(1 for p in model.stream(request, Context()) if p.text)
        assert count == parts

    def through_run() -> None:
        count = sum(1 for p in run(LoopOptions(model=model, messages=[user_message("hi")])) if p.text)
        assert count == parts

    try:
        floor(), adapter(), through_run()  # warm up connections and caches
        results = [
            {"floor": timed(floor), "adapter": timed(adapter), "run": timed(through_run)}
            for _ in range(rounds)
        ]
    finally:
        server.close()
    print(f"{name} stream over 127.0.0.1, {parts} text deltas ({len(body) // 1024} KB), {rounds} rounds")
    for label in ("floor", "adapter", "run"):
        seconds = statistics.median(r[label] for r in results)
        print(f"  {label:8s} {parts / seconds:12,.0f} parts/s  ({seconds * 1000:.1f} ms)")
    print(f"  adapter / floor time ratio: {median_ratio(results, 'adapter', 'floor'):.2f}")
    print(f"  run()   / floor time ratio: {median_ratio(results, 'run', 'floor'):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=20000, help="text deltas per stream (20000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per comparison (7; --quick: 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(machine())
    bench_loop(args.parts * 5, rounds)
    bench_adapter("anthropic", args.parts, rounds)
    bench_adapter("openai", args.parts, rounds)


if __name__ == "__main__":
    main()
