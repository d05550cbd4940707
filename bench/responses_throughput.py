"""Responses stream throughput: the OpenAI Responses adapter against the wire
floor and the openai SDK's Responses stream.

A real HTTP server on 127.0.0.1 (``tests/localserver.py``) replays one long
Responses API stream: 20,000 ``response.output_text.delta`` events shaped as
api.openai.com sends them (``event:`` lines, ``sequence_number``,
``item_id``, ``logprobs``, ``obfuscation`` padding), between the item, part
and response events, with the whole text repeated in the ``.done`` events and
in ``response.completed``, written in 4 KB pieces (chunked encoding). In one
process, in alternating rounds (the order of the contestants rotates every
round), it times consuming the same bytes with:

* ``floor``: requests + sseclient-py (fed ``read1`` reads of up to 64 KB) +
  ``json.loads``, collecting the text deltas and nothing else (reading the
  body to its end);
* ``adapter``: ``OpenAIResponsesModel.stream()`` iterated directly;
* ``run``: the whole ``run()`` (worker thread, queue, loop bookkeeping);
* ``sdk-raw``: the openai SDK's ``client.responses.create(stream=True)``
  event stream;
* ``sdk-helper``: the openai SDK's ``client.responses.stream()`` iterated,
  then ``get_final_response()``.

Every contestant collects the whole text and is checked against it. Printed:
the median time of each, the median of per-round ratios, and the targets:
``adapter / floor`` <= 1.5 and the SDK's Responses stream at least 5 times
slower than ``run()``. The SDK comes from the ``bench`` extra (``pip install
-e '.[bench]'``); without it the SDK rows are skipped, with a note.

Run: ``python bench/responses_throughput.py [--parts 20000] [--rounds 7] [--quick]``.
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

from agentcore import Context, LoopOptions, Request, StreamPartKind, run, user_message
from agentcore.providers.openai import OpenAIResponsesModel
from bench._streams import OPENAI_MODEL, delta_text, expected_text, machine, median_ratio, quiet, timed
from tests.localserver import LocalServer, sse_reply

PIECE = 4096
"""Bytes per write of the server (one HTTP chunk each)."""
CONTESTANTS = ("floor", "adapter", "run", "sdk-raw", "sdk-helper")
TARGETS = (
    ("adapter", "floor", 1.5, "max"),
    ("sdk-raw", "run", 5.0, "min"),
    ("sdk-helper", "run", 5.0, "min"),
)
"""(numerator, denominator, bound, kind): "max" means ratio <= bound, "min" ratio >= bound."""
ITEM_ID = "msg_0123456789abcdef0123456789abcdef0123456789abcdef"


def response_events(parts: int) -> list[dict[str, Any]]:
    """The events of a Responses stream with ``parts`` output text deltas."""
    text = expected_text(parts)
    response: dict[str, Any] = {
        "id": "resp_0123456789abcdef0123456789abcdef0123456789abcdef",
        "object": "response",
        "created_at": 1760000000,
        "status": "in_progress",
        "model": OPENAI_MODEL,
        "output": [],
        "parallel_tool_calls": True,
        "store": False,
        "tool_choice": "auto",
        "tools": [],
        "usage": None,
    }
    message = {"id": ITEM_ID, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    where = {"item_id": ITEM_ID, "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {"type": "response.content_part.added", **where, "part": part},
    ]
    for i in range(parts):
        piece = delta_text(i)
        padding = "x" * (16 - len(piece) % 16)  # the API pads deltas to hide their length
        events.append(
            {
                "type": "response.output_text.delta",
                **where,
                "delta": piece,
                "logprobs": [],
                "obfuscation": padding,
            }
        )
    done_part = {**part, "text": text}
    done_message = {**message, "status": "completed", "content": [done_part]}
    usage = {
        "input_tokens": 25,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": parts,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 25 + parts,
    }
    events += [
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_message},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done_message], "usage": usage},
        },
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


def response_body(parts: int) -> bytes:
    """A Responses stream with ``parts`` text deltas, framed as api.openai.com frames it."""
    blocks = [
        f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n"
        for e in response_events(parts)
    ]
    return "".join(blocks).encode()


def contestants(server: LocalServer, sdk: bool) -> dict[str, Callable[[], str]]:
    """The functions to time; each returns the text it collected."""
    url = server.url + "/v1/responses"
    session = requests.Session()
    session.trust_env = False
    model = OpenAIResponsesModel(OPENAI_MODEL, api_key="bench-key", base_url=server.url + "/v1")
    request = Request(messages=[user_message("hi")])
    text_delta = StreamPartKind.TEXT_DELTA

    def floor() -> str:
        response = session.post(url, json={"stream": True}, stream=True, timeout=(10, 60))
        reads = iter(lambda: response.raw.read1(65536), b"")
        text = []
        for event in SSEClient(reads).events():
            data = json.loads(event.data)
            if data["type"] == "response.output_text.delta":
                text.append(data["delta"])
        response.close()
        return "".join(text)

    def adapter() -> str:
        return "".join(p.text for p in model.stream(request, Context()) if p.kind is text_delta)

    def through_run() -> str:
        reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
        return "".join(p.text for p in reader if p.kind is text_delta)

    funcs: dict[str, Callable[[], str]] = {"floor": floor, "adapter": adapter, "run": through_run}
    if sdk:
        funcs.update(openai_sdk(server.url + "/v1"))
    return funcs


def openai_sdk(base_url: str) -> dict[str, Callable[[], str]]:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="bench-key", max_retries=0)

    def raw() -> str:
        text = []
        for event in client.responses.create(model=OPENAI_MODEL, input="hi", stream=True):
            if event.type == "response.output_text.delta":
                text.append(event.delta)
        return "".join(text)

    def helper() -> str:
        with client.responses.stream(model=OPENAI_MODEL, input="hi") as stream:
            for _event in stream:
                pass
            final = stream.get_final_response()
        return final.output_text

    return {"sdk-raw": raw, "sdk-helper": helper}


def bench(parts: int, rounds: int) -> None:
    body = response_body(parts)
    server = quiet(LocalServer([sse_reply(body, piece=PIECE)]))
    expected = expected_text(parts)
    names = list(CONTESTANTS)
    sdk = importlib.util.find_spec("openai") is not None
    if not sdk:
        print("\nthe openai SDK is not installed (pip install -e '.[bench]'): SDK rows skipped")
        names = [name for name in names if not name.startswith("sdk")]
    try:
        funcs = contestants(server, sdk)
        for name in names:  # warm up connections, caches and lazy imports; check the text
            text = funcs[name]()
            assert text == expected, f"{name}: got {len(text)} characters, expected {len(expected)}"
        results = []
        for number in range(rounds):
            shift = number % len(names)
            times = {}
            for name in names[shift:] + names[:shift]:
                gc.collect()
                times[name] = timed(funcs[name])
            results.append(times)
    finally:
        server.close()
    size = f"{len(body) / 1e6:.2f} MB body in {PIECE // 1024} KB pieces"
    print(f"\nopenai-responses: {parts:,} text deltas, {size}, {rounds} rounds")
    print(f"  {'contestant':12s} {'median ms':>10s} {'parts/s':>12s}")
    for name in names:
        seconds = statistics.median(r[name] for r in results)
        print(f"  {name:12s} {seconds * 1000:10.1f} {parts / seconds:12,.0f}")
    print("  median of per-round ratios (time / time):")
    for num, den in (("run", "floor"), ("run", "adapter")):
        print(f"    {num + ' / ' + den:22s} {median_ratio(results, num, den):6.2f}")
    for num, den, bound, kind in TARGETS:
        if num not in names or den not in names:
            continue
        ratio = median_ratio(results, num, den)
        met = ratio <= bound if kind == "max" else ratio >= bound
        sign = "<=" if kind == "max" else ">="
        verdict = "met" if met else "MISSED"
        print(f"    {num + ' / ' + den:22s} {ratio:6.2f}   target {sign} {bound:g}: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--parts", type=int, default=20000, help="text deltas in the stream (20000)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (7; --quick: 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    args = parser.parse_args()
    print(machine())
    bench(args.parts, args.rounds or (3 if args.quick else 7))


if __name__ == "__main__":
    main()
