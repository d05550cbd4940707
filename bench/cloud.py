"""The cloud adapters' stream cost: each adapter on streams recorded from its
cloud's API, against a floor that decodes the same bytes and does nothing else.

For each recorded stream of ``tests/fixtures/`` (README there: where each was
recorded), in one process, in alternating rounds (the order of the two
contestants swaps every round), it times replaying the stream ``--repeat``
times through:

* ``floor``: the framing agentcore uses (sseclient-py over the same reads,
  ``[DONE]`` and empty events skipped) and ``json.loads`` of each event's
  data, nothing else: what any client of the API must do;
* ``adapter``: the adapter's ``stream()`` over a
  :class:`agentcore.transport.memory.MemoryTransport` serving the same body in
  the same reads (4 KB), iterated to its end: the request built and encoded,
  the transport's reply, the framing, the mapping to parts, the step's end.

The recorded streams are short (1 to 14 KB, 2 to 10 events), so the ratio
shows the adapter's whole cost per step on real answers, its fixed cost per
request included, not a per-delta cost (``stream_throughput.py`` measures
that on 20,000-delta streams).

Printed: per stream, the median time of one replay of each, their
difference (what the adapter adds to one step), and the median of per-round
ratios ``adapter / floor``.

Bedrock's streams are AWS event streams (``application/vnd.amazon.eventstream``),
so their floor is :func:`eventstream_floor`: botocore's ``EventStreamBuffer``
over the same reads and ``json.loads`` of each payload (and of the base64
``bytes`` an InvokeModel ``chunk`` wraps), the libraries the adapters use.

Adding a cloud: a function returning its :class:`Case` list, registered in
:data:`CLOUDS`. A model over the Gemini mapping at another endpoint (Vertex
AI) reuses :func:`gemini_cases` with its own ``make_model`` and folder.

Run: ``python bench/cloud.py [--cloud gemini|vertex|azure|bedrock] [--rounds 7] [--repeat N]
[--quick] [--clock wall|cpu]``.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import pathlib
import statistics
import sys
from collections.abc import Callable, Iterable
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from botocore.eventstream import EventStreamBuffer
from sseclient import SSEClient

from agentcore import Context, Model, Request, user_message
from agentcore.providers.aws import EVENT_STREAM
from agentcore.providers.azure import AzureOpenAIChatModel, AzureOpenAIResponsesModel
from agentcore.providers.bedrock import BedrockAnthropicModel, BedrockConverseModel
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.vertex import VertexGeminiModel
from agentcore.transport.memory import MemoryTransport, Reply
from bench._streams import CLOCKS, machine, median_ratio, timed

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures"
PIECE = 4096
"""Bytes per read of the transport (as the local server writes them)."""
TARGET_MS = 20.0
"""Without ``--repeat``: replays per timing so that one floor timing takes about this long."""


class Case(NamedTuple):
    """One recorded stream through one adapter.

    Attributes:
        name: the row's name (``gemini/<file>``).
        body: the stream's bytes, as the API sent them.
        make_model: the adapter over a transport.
        floor: decodes a body given as its reads, returning the number of
            events (:func:`sse_floor` for SSE).
        media_type: the body's content type.
    """

    name: str
    body: bytes
    make_model: Callable[[MemoryTransport], Model]
    floor: Callable[[Iterable[bytes]], int]
    media_type: str = "text/event-stream"


def sse_floor(reads: Iterable[bytes]) -> int:
    """Frame ``reads`` with sseclient-py and ``json.loads`` each event's data
    (an OpenAI ``[DONE]`` and empty events skipped); return the count."""
    count = 0
    for event in SSEClient(iter(reads)).events():
        if event.data and event.data != "[DONE]":
            json.loads(event.data)
            count += 1
    return count


def eventstream_floor(reads: Iterable[bytes]) -> int:
    """Decode ``reads`` with botocore's ``EventStreamBuffer`` and ``json.loads``
    each message's payload (and the event an InvokeModel ``chunk`` wraps in
    base64 ``bytes``); return the count."""
    count = 0
    buffer = EventStreamBuffer()
    for read in reads:
        buffer.add_data(read)
        for message in buffer:
            payload = json.loads(message.payload)
            if "bytes" in payload:
                json.loads(base64.b64decode(payload["bytes"]))
            count += 1
    return count


def recorded(path: pathlib.Path) -> bytes:
    """The body of a recorded stream: a ``.sse`` file as it is, the lines of a
    ``.chunks.jsonl`` file each framed as one ``data:`` event."""
    if path.suffix == ".sse":
        return path.read_bytes()
    lines = path.read_text(encoding="utf-8").splitlines()
    return b"".join(b"data: " + line.encode() + b"\n\n" for line in lines if line.strip())


def gemini_cases(make_model: Callable[[MemoryTransport], Model], label: str = "gemini") -> list[Case]:
    """Every recorded stream of ``tests/fixtures/{label}/`` (``.sse``, and the
    ``.chunks.jsonl`` decoded chunks framed as SSE) through ``make_model``'s adapter."""
    folder = FIXTURES / label
    paths = sorted([*folder.glob("*.sse"), *folder.glob("*.chunks.jsonl")])
    return [
        Case(
            f"{label}/{path.name.removesuffix(path.suffix).removesuffix('.chunks')}",
            recorded(path),
            make_model,
            sse_floor,
        )
        for path in paths
    ]


def gemini() -> list[Case]:
    return gemini_cases(
        lambda transport: GeminiModel("gemini-bench", api_key="bench-key", transport=transport)
    )


def vertex() -> list[Case]:
    """The recorded Vertex AI Gemini streams (streamed function-call
    arguments among them) through ``VertexGeminiModel``."""
    return gemini_cases(
        lambda transport: VertexGeminiModel(
            "gemini-bench", project="bench", api_key="bench-key", transport=transport
        ),
        "vertex",
    )


def azure() -> list[Case]:
    """The recorded Azure OpenAI streams: Chat Completions (two with Azure's
    prompt filter chunk, one Foundry reasoning stream) and Responses."""

    def chat(transport: MemoryTransport) -> Model:
        return AzureOpenAIChatModel("bench", resource="bench", api_key="bench-key", transport=transport)

    def responses(transport: MemoryTransport) -> Model:
        return AzureOpenAIResponsesModel("bench", resource="bench", api_key="bench-key", transport=transport)

    folder = FIXTURES / "azure"
    cases = []
    for stem, make_model in (
        ("chat_gpt35_prompt_filter_results_2024.sse", chat),
        ("chat_gpt41mini_protected_material_2026.sse", chat),
        ("foundry_deepseek_reasoning_content.chunks.jsonl", chat),
        ("responses_text.chunks.jsonl", responses),
        ("responses_function_call.chunks.jsonl", responses),
    ):
        cases.append(Case(f"azure/{stem.split('.')[0]}", recorded(folder / stem), make_model, sse_floor))
    return cases


def bedrock() -> list[Case]:
    """The recorded Bedrock streams: Converse (``tests/fixtures/bedrock_converse/``)
    and Claude through InvokeModelWithResponseStream
    (``tests/fixtures/bedrock_invoke_anthropic/``), each an AWS event stream."""

    def converse(transport: MemoryTransport) -> Model:
        return BedrockConverseModel("bench", region="us-east-1", api_key="bench-key", transport=transport)

    def invoke(transport: MemoryTransport) -> Model:
        return BedrockAnthropicModel("bench", region="us-east-1", api_key="bench-key", transport=transport)

    cases = []
    for folder, make_model in (("bedrock_converse", converse), ("bedrock_invoke_anthropic", invoke)):
        for path in sorted((FIXTURES / folder).glob("*.eventstream.b64")):
            name = f"{folder}/{path.name.removesuffix('.eventstream.b64')}"
            body = base64.b64decode(path.read_text())
            cases.append(Case(name, body, make_model, eventstream_floor, EVENT_STREAM))
    return cases


CLOUDS: dict[str, Callable[[], list[Case]]] = {
    "gemini": gemini,
    "vertex": vertex,
    "azure": azure,
    "bedrock": bedrock,
}
"""The clouds benchmarked, each a function giving its cases."""


def contestants(case: Case, repeat: int) -> dict[str, Callable[[], int]]:
    """The two functions to time: each replays the stream ``repeat`` times and
    returns what it counted (events for the floor, parts for the adapter)."""
    reads = [case.body[i : i + PIECE] for i in range(0, len(case.body), PIECE)]
    reply = Reply.of(case.body, piece=PIECE, headers={"content-type": case.media_type})
    model = case.make_model(MemoryTransport(respond=lambda _sent: reply))
    request = Request(messages=[user_message("hi")])

    def floor() -> int:
        return sum(case.floor(reads) for _ in range(repeat))

    def adapter() -> int:
        return sum(sum(1 for _part in model.stream(request, Context())) for _ in range(repeat))

    return {"floor": floor, "adapter": adapter}


def bench_case(
    case: Case, rounds: int, repeat: int | None, clock: str
) -> tuple[int, dict[str, float], float]:
    """Time ``case``: the repeat used, the median seconds of one replay of
    each contestant, and the median per-round ``adapter / floor``."""
    once = contestants(case, 1)
    for func in once.values():  # warm up; a stream the adapter fails on fails here
        func()
    if repeat is None:
        seconds = min(timed(once["floor"], CLOCKS[clock]) for _ in range(5))
        repeat = max(1, round(TARGET_MS / 1000 / max(seconds, 1e-6)))
    funcs = contestants(case, repeat)
    names = list(funcs)
    results = []
    for number in range(rounds):
        times = {}
        for name in names[number % 2 :] + names[: number % 2]:
            gc.collect()
            times[name] = timed(funcs[name], CLOCKS[clock])
        results.append(times)
    medians = {name: statistics.median(r[name] for r in results) / repeat for name in names}
    return repeat, medians, median_ratio(results, "adapter", "floor")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cloud", choices=tuple(CLOUDS), action="append", help="default: all")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per stream (7; --quick: 3)")
    parser.add_argument(
        "--repeat", type=int, default=None, help=f"replays per timing (default: ~{TARGET_MS:g} ms)"
    )
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="wall (default) or cpu time")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    print(machine())
    print(f"{rounds} rounds, {args.clock} time, reads of {PIECE // 1024} KB; times per replay of one stream")
    columns = ("bytes", 7), ("repeat", 6), ("floor µs", 9), ("adapter µs", 10), ("extra µs", 9), ("ratio", 6)
    print(f"  {'stream':66s} " + " ".join(f"{title:>{width}s}" for title, width in columns))
    ratios = []
    for cloud in args.cloud or tuple(CLOUDS):
        for case in CLOUDS[cloud]():
            repeat, medians, ratio = bench_case(case, rounds, args.repeat, args.clock)
            ratios.append(ratio)
            print(
                f"  {case.name:66s} {len(case.body):7,d} {repeat:6d} {medians['floor'] * 1e6:9.1f} "
                f"{medians['adapter'] * 1e6:10.1f} {(medians['adapter'] - medians['floor']) * 1e6:9.1f} "
                f"{ratio:6.2f}"
            )
    print(
        f"  adapter / floor over the {len(ratios)} streams: median {statistics.median(ratios):.2f}, "
        f"from {min(ratios):.2f} to {max(ratios):.2f}"
    )


if __name__ == "__main__":
    main()
