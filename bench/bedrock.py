"""Bedrock stream cost: the adapters against a floor that decodes the same
recorded event streams with the same libraries.

Each recorded response body of ``tests/fixtures/bedrock_invoke_anthropic/``
(four real InvokeModelWithResponseStream streams of Claude, 1 to 8 KB) is
answered by the in-memory transport in 4 KB reads, so what is timed is the
decoding and the mapping, not a socket. In one process, in alternating
rounds (the order rotates every round), each round decodes every stream
``--streams`` times with:

* ``floor``: botocore's ``EventStreamBuffer`` fed the same reads, then
  ``base64.b64decode`` and ``json.loads`` of each ``chunk``'s ``bytes``,
  collecting the text deltas and nothing else;
* ``adapter``: ``BedrockAnthropicModel.stream()`` iterated directly (the
  request body built and encoded, the event stream decoded and checked,
  the Anthropic mapping, usage and finish reason), collecting the text.

Both are checked against the recorded text. Printed: the median time of
each per stream, and the median of per-round ratios ``adapter / floor``.

Another Bedrock API goes in :data:`APIS`: its fixtures folder, its model
(``BedrockConverseModel`` over ``tests/fixtures/bedrock_converse/``, whose
floor collects ``contentBlockDelta.delta.text`` from the decoded events
without the base64 step).

Run: ``python bench/bedrock.py [--rounds 9] [--streams 200] [--quick] [--clock wall|cpu]``.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from botocore.eventstream import EventStreamBuffer

from agentcore import Context, Model, Request, StreamPartKind, user_message
from agentcore.providers.aws import EVENT_STREAM
from agentcore.providers.bedrock import BedrockAnthropicModel
from agentcore.transport.memory import MemoryTransport, Reply
from bench._streams import CLOCKS, machine, median_ratio, timed

PIECE = 4096
"""Bytes per read of the in-memory body."""
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def invoke_anthropic_text(payload: dict[str, Any]) -> str:
    """The text delta of one InvokeModelWithResponseStream ``chunk`` payload ("" if none)."""
    event = json.loads(base64.b64decode(payload["bytes"]))
    delta = event.get("delta") if event.get("type") == "content_block_delta" else None
    return delta.get("text", "") if delta else ""


def invoke_anthropic_model(transport: MemoryTransport) -> Model:
    return BedrockAnthropicModel(
        "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
        base_url="https://bedrock-runtime.us-east-1.amazonaws.com",
        api_key="bench-key",
        transport=transport,
    )


APIS: dict[str, tuple[str, Callable[[MemoryTransport], Model], Callable[[dict[str, Any]], str]]] = {
    "invoke-anthropic": ("bedrock_invoke_anthropic", invoke_anthropic_model, invoke_anthropic_text),
}
"""API -> (fixtures folder, the model over a transport, the floor's text of one event payload)."""


def streams(folder: str) -> dict[str, tuple[bytes, str]]:
    """Each recorded body of ``folder`` and the text its metadata says it holds."""
    found = {}
    for path in sorted((FIXTURES / folder).glob("*.eventstream.b64")):
        case = path.name.removesuffix(".eventstream.b64")
        meta = json.loads((FIXTURES / folder / f"{case}.json").read_text())
        found[case] = (base64.b64decode(path.read_text()), meta["computed_here"]["values"]["text"])
    return found


def contestants(api: str, body: bytes, count: int) -> dict[str, Callable[[], str]]:
    """The functions to time for one recorded ``body``: each decodes it
    ``count`` times and returns the last text it collected."""
    _, make_model, text_of = APIS[api]
    reads = [body[i : i + PIECE] for i in range(0, len(body), PIECE)]
    reply = Reply(200, {"content-type": EVENT_STREAM}, reads)
    model = make_model(MemoryTransport(respond=lambda _sent: reply))
    request = Request(messages=[user_message("hi")])

    def floor() -> str:
        text: list[str] = []
        for _ in range(count):
            buffer = EventStreamBuffer()
            text = []
            for chunk in reads:
                buffer.add_data(chunk)
                for message in buffer:
                    piece = text_of(json.loads(message.payload))
                    if piece:
                        text.append(piece)
        return "".join(text)

    def adapter() -> str:
        text = ""
        for _ in range(count):
            parts = model.stream(request, Context())
            text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
        return text

    return {"floor": floor, "adapter": adapter}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--streams", type=int, default=200, help="decodes of each stream per round")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 50 streams")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args(argv)
    rounds, count = (3, 50) if args.quick else (args.rounds, args.streams)
    clock = CLOCKS[args.clock]
    print(machine())
    print(
        f"{rounds} rounds, each stream decoded {count} times a round, {PIECE}-byte reads, clock {args.clock}"
    )
    overall: list[float] = []
    for api, (folder, _, _) in APIS.items():
        for case, (body, expected) in streams(folder).items():
            funcs = contestants(api, body, count)
            for name, func in funcs.items():
                got = func()
                if got != expected:
                    raise SystemExit(f"{api} {case}: {name} collected {got[:60]!r}, not the recorded text")
            names = list(funcs)
            times: list[dict[str, float]] = []
            for index in range(rounds):
                order = names[index % len(names) :] + names[: index % len(names)]
                gc.collect()
                times.append({name: timed(funcs[name], clock) / count for name in order})
            ratio = median_ratio(times, "adapter", "floor")
            overall.append(ratio)
            floor_us = statistics.median(t["floor"] for t in times) * 1e6
            adapter_us = statistics.median(t["adapter"] for t in times) * 1e6
            print(
                f"{api:17} {case:40} {len(body):6} B  floor {floor_us:8.1f} us  "
                f"adapter {adapter_us:8.1f} us  adapter / floor {ratio:5.2f}"
            )
    print(f"median adapter / floor over the streams: {statistics.median(overall):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
