"""Stream throughput: agentcore against the wire floor and the vendor SDKs.

A real HTTP server on 127.0.0.1 (``tests/localserver.py``) replays one long
stream, 20,000 text deltas of realistic chunk JSON, per provider format,
writing the body in 4 KB pieces (chunked encoding); then a reasoning-heavy
stream of the same size, 20,000 reasoning deltas (Anthropic ``thinking_delta``
events closed by a signature; OpenAI-compatible ``reasoning_content`` deltas,
as DeepSeek, Kimi and GLM send them) and a one-delta answer. In one process,
in alternating rounds (the order of the contestants rotates every round), it
times consuming the same bytes with:

* ``floor``: requests + sseclient-py (fed ``read1`` reads of up to 64 KB) +
  ``json.loads``, collecting the text (the reasoning, for a reasoning stream)
  and nothing else (reading the body to its end, so the connection is reused
  as agentcore's is);
* ``adapter``: the agentcore adapter's ``stream()`` iterated directly;
* ``run``: the whole ``run()`` (worker thread, queue, loop bookkeeping);
* ``sdk-raw``: the vendor SDK's raw event stream
  (``chat.completions.create(stream=True)`` / ``messages.create(stream=True)``);
* ``sdk-helper``: the vendor SDK's accumulating helper
  (``chat.completions.stream()`` iterated, then ``get_final_completion()`` /
  ``messages.stream()``'s ``text_stream``, then ``get_final_message()``).

Every contestant collects the whole text (reasoning streams: the streamed
reasoning) and is checked against it; for a reasoning stream the adapter is
also checked, once, for one ``reasoning`` part holding the whole reasoning and
the answer's text. The SDK rows are timed on the text streams only. An
adapter that does not emit the reasoning yet gets its reasoning rows skipped,
with a note. Printed: the median time of each, and the median of per-round
ratios ``run / floor``, ``adapter / floor`` and ``SDK / run``, with issue 5's
targets (the text streams' ``run / floor`` bound is shown for the reasoning
streams too).

The vendor SDKs come from the ``bench`` extra: ``pip install -e '.[bench]'``.

Run: ``python bench/stream_throughput.py [--parts 20000] [--rounds 7] [--quick]
[--format anthropic|openai] [--stream text|reasoning] [--clock wall|cpu]``;
``--only run --rounds 20`` times one contestant alone (for a profiler).
``--clock cpu`` times the CPU seconds of the process instead of elapsed time:
on a machine busy with other work its ratios spread far less (``run()``'s two
threads are summed, so ``run / adapter`` shows the loop's work, not latency).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests
from sseclient import SSEClient

from agentcore import Context, LoopOptions, Model, Request, StreamPartKind, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from bench._streams import (
    ANTHROPIC_MODEL,
    CLOCKS,
    OPENAI_MODEL,
    REASONING_ANSWER,
    anthropic_body,
    anthropic_reasoning,
    anthropic_text,
    expected_text,
    machine,
    median_ratio,
    openai_body,
    openai_reasoning,
    openai_text,
    quiet,
    timed,
)
from tests.localserver import LocalServer, sse_reply

PIECE = 4096
"""Bytes per write of the server (one HTTP chunk each)."""

CONTESTANTS = ("floor", "adapter", "run", "sdk-raw", "sdk-helper")
STREAMS = ("text", "reasoning")

# (numerator, denominator, bound, kind): kind "max" means ratio <= bound, "min" ratio >= bound.
TARGETS: dict[str, list[tuple[str, str, float, str]]] = {
    "anthropic": [
        ("run", "floor", 1.5, "max"),
        ("sdk-raw", "run", 2.0, "min"),
        ("sdk-helper", "run", 5.0, "min"),
    ],
    "openai": [
        ("run", "floor", 1.5, "max"),
        ("sdk-raw", "run", 5.0, "min"),
        ("sdk-helper", "run", 5.0, "min"),
    ],
}


def bench_model(fmt: str, server: LocalServer) -> Model:
    """The agentcore adapter for ``fmt``, pointed at ``server``."""
    if fmt == "anthropic":
        return AnthropicModel(ANTHROPIC_MODEL, api_key="bench-key", base_url=server.url)
    return OpenAIChatModel(OPENAI_MODEL, api_key="bench-key", base_url=server.url + "/v1")


def contestants(fmt: str, server: LocalServer, sdks: bool, stream: str) -> dict[str, Callable[[], str]]:
    """The functions to time for format ``fmt`` and ``stream`` kind; each
    returns the text (or, for a reasoning stream, the reasoning) it collected."""
    anthropic = fmt == "anthropic"
    reasoning = stream == "reasoning"
    url = server.url + ("/v1/messages" if anthropic else "/v1/chat/completions")
    if reasoning:
        text_of = anthropic_reasoning if anthropic else openai_reasoning
    else:
        text_of = anthropic_text if anthropic else openai_text
    wanted = StreamPartKind.REASONING_DELTA if reasoning else StreamPartKind.TEXT_DELTA
    session = requests.Session()
    session.trust_env = False
    model = bench_model(fmt, server)
    request = Request(messages=[user_message("hi")])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]

    def floor() -> str:
        response = session.post(url, json={"stream": True}, stream=True, timeout=(10, 60))
        reads = iter(lambda: response.raw.read1(65536), b"")
        text = []
        for event in SSEClient(reads).events():
            if event.data == "[DONE]":
                continue  # read the (empty) rest, so the connection is reused
            piece = text_of(json.loads(event.data))
            if piece:
                text.append(piece)
        response.close()
        return "".join(text)

    def adapter() -> str:
        parts = model.stream(request, Context())
        return "".join(p.text for p in parts if p.kind is wanted)

    def through_run() -> str:
        reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
        return "".join(p.text for p in reader if p.kind is wanted)

    funcs: dict[str, Callable[[], str]] = {"floor": floor, "adapter": adapter, "run": through_run}
    if sdks and anthropic:
        funcs.update(anthropic_sdk(server.url, messages))
    elif sdks:
        funcs.update(openai_sdk(server.url + "/v1", messages))
    return funcs


def anthropic_sdk(base_url: str, messages: list[dict[str, Any]]) -> dict[str, Callable[[], str]]:
    import anthropic

    client = anthropic.Anthropic(base_url=base_url, api_key="bench-key", max_retries=0)

    def raw() -> str:
        text = []
        stream = client.messages.create(
            model=ANTHROPIC_MODEL, max_tokens=1024, messages=messages, stream=True
        )
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                text.append(event.delta.text)
        return "".join(text)

    def helper() -> str:
        with client.messages.stream(model=ANTHROPIC_MODEL, max_tokens=1024, messages=messages) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
        block = final.content[0]
        assert block.type == "text"
        assert block.text == "".join(pieces)
        return block.text

    return {"sdk-raw": raw, "sdk-helper": helper}


def openai_sdk(base_url: str, messages: list[dict[str, Any]]) -> dict[str, Callable[[], str]]:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench-key", max_retries=0)
    completions: Any = client.chat.completions
    if not hasattr(completions, "stream"):  # openai < 1.92 keeps the helper under beta
        completions = client.beta.chat.completions
    options: dict[str, Any] = {"stream_options": {"include_usage": True}}

    def raw() -> str:
        text = []
        stream = client.chat.completions.create(model=OPENAI_MODEL, messages=messages, stream=True, **options)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                text.append(chunk.choices[0].delta.content)
        return "".join(text)

    def helper() -> str:
        with completions.stream(model=OPENAI_MODEL, messages=messages, **options) as stream:
            for _event in stream:
                pass
            final = stream.get_final_completion()
        return str(final.choices[0].message.content)

    return {"sdk-raw": raw, "sdk-helper": helper}


def reasoning_problem(model: Model, expected: str) -> str:
    """Why the adapter's reasoning stream is not what the body carries, or "" when it is:
    the streamed reasoning, one ``reasoning`` part holding it all, then the answer."""
    parts = list(model.stream(Request(messages=[user_message("hi")]), Context()))
    streamed = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    blocks = [p.reasoning.text for p in parts if p.reasoning is not None]
    answer = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    if not streamed and not blocks:
        return "the adapter emits no reasoning parts (yet)"
    if streamed != expected or blocks != [expected] or answer != REASONING_ANSWER:
        return (
            f"the adapter streamed {len(streamed)} characters of reasoning in {len(blocks)} blocks "
            f"and answered {answer!r}; expected {len(expected)} characters in one block "
            f"and {REASONING_ANSWER!r}"
        )
    return ""


def bench_format(
    fmt: str, stream: str, parts: int, rounds: int, only: str | None, clock: str = "wall"
) -> list[dict[str, float]]:
    reasoning = stream == "reasoning"
    body = anthropic_body(parts, reasoning) if fmt == "anthropic" else openai_body(parts, reasoning)
    server = quiet(LocalServer([sse_reply(body, piece=PIECE)]))
    expected = expected_text(parts)
    try:
        names = [only] if only else list(CONTESTANTS)
        if reasoning:
            names = [name for name in names if not name.startswith("sdk")]
        elif importlib.util.find_spec(fmt) is None:  # the vendor SDK's package is named like the format
            print(f"\n{fmt}: the {fmt} SDK is not installed (pip install -e '.[bench]'): SDK rows skipped")
            names = [name for name in names if not name.startswith("sdk")]
        if reasoning and {"adapter", "run"} & set(names):
            problem = reasoning_problem(bench_model(fmt, server), expected)
            if problem:
                print(f"\n{fmt} reasoning: {problem}: adapter and run rows skipped")
                names = [name for name in names if name not in ("adapter", "run")]
        if not names:
            return []
        funcs = contestants(fmt, server, any(name.startswith("sdk") for name in names), stream)
        for name in names:  # warm up connections, caches and lazy imports; check the text
            text = funcs[name]()
            assert text == expected, f"{fmt} {name}: got {len(text)} characters, expected {len(expected)}"
        results = []
        for number in range(rounds):
            shift = number % len(names)
            times = {}
            for name in names[shift:] + names[:shift]:
                gc.collect()
                times[name] = timed(funcs[name], CLOCKS[clock])
            results.append(times)
    finally:
        server.close()
    size = f"{len(body) / 1e6:.2f} MB body in {PIECE // 1024} KB pieces"
    print(f"\n{fmt}: {parts:,} {stream} deltas, {size}, {rounds} rounds, {clock} time")
    print(f"  {'contestant':12s} {'median ms':>10s} {'parts/s':>12s}")
    for name in names:
        seconds = statistics.median(r[name] for r in results)
        print(f"  {name:12s} {seconds * 1000:10.1f} {parts / seconds:12,.0f}")
    if only:
        return results
    print("  median of per-round ratios (time / time):")
    for num, den in (("adapter", "floor"), ("run", "adapter")):
        if num in names and den in names:
            print(f"    {num + ' / ' + den:22s} {median_ratio(results, num, den):6.2f}")
    for num, den, bound, kind in TARGETS[fmt]:
        if num not in names or den not in names:
            continue
        ratio = median_ratio(results, num, den)
        met = ratio <= bound if kind == "max" else ratio >= bound
        sign = "<=" if kind == "max" else ">="
        verdict = ("met" if met else "MISSED") if clock == "wall" else "not judged (a wall-time bound)"
        print(f"    {num + ' / ' + den:22s} {ratio:6.2f}   target {sign} {bound:g}: {verdict}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--parts", type=int, default=20000, help="text or reasoning deltas per stream (20000)"
    )
    parser.add_argument("--rounds", type=int, default=None, help="rounds per format (7; --quick: 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--format", choices=("anthropic", "openai"), action="append", help="default: both")
    parser.add_argument("--stream", choices=STREAMS, action="append", help="default: both (text, reasoning)")
    parser.add_argument("--only", choices=CONTESTANTS, help="time this contestant alone (for a profiler)")
    parser.add_argument(
        "--clock",
        choices=tuple(CLOCKS),
        default="wall",
        help="wall: elapsed time (default); cpu: CPU time of the process, steadier on a busy machine",
    )
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(machine())
    for fmt in args.format or ("anthropic", "openai"):
        for stream in args.stream or STREAMS:
            bench_format(fmt, stream, args.parts, rounds, args.only, args.clock)


if __name__ == "__main__":
    main()
