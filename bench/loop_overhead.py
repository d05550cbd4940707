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

Run: ``python bench/loop_overhead.py [--parts 20000] [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests
from sseclient import SSEClient

from agentcore import Context, FinishReason, LoopOptions, Model, Request, StreamPart, Usage, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import ScriptedModel
from tests.localserver import LocalServer, sse_reply


def anthropic_body(parts: int) -> bytes:
    """An Anthropic Messages stream with ``parts`` text deltas, shaped like a real one."""
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 25,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    for i in range(parts):
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": f" word{i % 97}"},
                },
            )
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": parts},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def median_ratio(rounds: list[dict[str, float]], name: str, base: str) -> float:
    return statistics.median(r[name] / r[base] for r in rounds)


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


def openai_body(parts: int) -> bytes:
    """An OpenAI Chat Completions stream with ``parts`` content deltas, shaped like a real one."""
    head = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_bench",
    }
    chunks = [
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {"role": "assistant", "content": ""},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        }
    ]
    for i in range(parts):
        chunks.append(
            {
                **head,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": f" word{i % 97}"},
                        "logprobs": None,
                        "finish_reason": None,
                    }
                ],
            }
        )
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]})
    chunks.append(
        {
            **head,
            "choices": [],
            "usage": {"prompt_tokens": 25, "completion_tokens": parts, "total_tokens": 25 + parts},
        }
    )
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def anthropic_text(data: dict[str, Any]) -> str | None:
    if data["type"] == "content_block_delta" and data["delta"]["type"] == "text_delta":
        return str(data["delta"]["text"])
    return None


def openai_text(data: dict[str, Any]) -> str | None:
    choices = data["choices"]
    content = choices[0]["delta"].get("content") if choices else None
    return str(content) if content else None


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
    parser.add_argument("--parts", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    bench_loop(args.parts * 5, args.rounds)
    bench_adapter("anthropic", args.parts, args.rounds)
    bench_adapter("openai", args.parts, args.rounds)


if __name__ == "__main__":
    main()
