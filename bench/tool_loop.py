"""A six-step tool loop with small answers: ``run()`` against the wire floor.

A server in its own process (``bench._streams.ProcessServer``, so the CPU time
measured is the client's alone) answers each request by the number of tool
results it carries: steps 1 to 5 call the ``add`` tool once, step 6 answers
with a short text in eight deltas. Both formats: Anthropic Messages
(``tool_use`` block, ``input_json_delta``) and OpenAI Chat Completions
(``tool_calls`` deltas, the usage chunk last).

In alternating rounds, in one process, it times a batch of whole runs of:

* ``floor``: requests + sseclient-py + ``json.loads`` in a hand-written loop
  that posts the history in the wire format, collects the tool call, runs the
  tool and appends the assistant and tool messages (no checks, no retries, no
  cancellation, no worker thread);
* ``run``: ``run(LoopOptions(...)).result()`` with the agentcore adapter and a
  hand-written ``Tool`` doing the same addition.

Printed: milliseconds per six-step run (median) and the median of per-round
ratios ``run / floor``; ``--clock wall`` for elapsed time instead of CPU time.

Run: ``python bench/tool_loop.py [--rounds 11] [--runs 20] [--quick]
[--format anthropic|openai] [--clock cpu|wall]``.
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

import requests
from sseclient import SSEClient

from agentcore import Context, LoopOptions, Model, ToolDefinition, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from bench._streams import (
    ANTHROPIC_MODEL,
    CLOCKS,
    OPENAI_MODEL,
    ProcessServer,
    machine,
    median_ratio,
    openai_body,
    timed,
)

STEPS = 6
ANSWER = ["The", " total", " of", " the", " five", " sums", " is", " 20."]
"""The last step's text, one delta each."""
PROMPT = "Add up."
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
LONG_PATH = "/long/v1/chat/completions"
"""Where the server streams the 20,000-delta OpenAI body (bench/frameworks.py)."""
LONG_PARTS = 20000


def arguments(step: int) -> str:
    return json.dumps({"a": step, "b": 1})


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        payload = data if isinstance(data, str) else json.dumps(data)
        lines.append(f"{head}data: {payload}\n\n")
    return "".join(lines).encode()


def anthropic_step(done: int) -> bytes:
    """The stream of step ``done + 1`` (``done`` tool results so far)."""
    usage = {"input_tokens": 40 + 10 * done, "output_tokens": 1}
    message = {"id": f"msg_{done}", "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "usage": usage}})
    ]
    if done < STEPS - 1:
        block = {"type": "tool_use", "id": f"toolu_{done}", "name": "add", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": arguments(done)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = None
        stop = "end_turn"
    events.append(
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
    )
    deltas = [delta] if delta else [{"type": "text_delta", "text": t} for t in ANSWER]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 12}},
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


def openai_step(done: int) -> bytes:
    """The stream of step ``done + 1`` (``done`` tool messages so far)."""
    head = {
        "id": f"chatcmpl-{done}",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": OPENAI_MODEL,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": None}

    if done < STEPS - 1:
        call = {
            "index": 0,
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": "add", "arguments": ""},
        }
        chunks = [
            chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments(done)}}]}),
            chunk({}, "tool_calls"),
        ]
    else:
        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": t}) for t in ANSWER]
        chunks.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 40 + 10 * done, "completion_tokens": 12, "total_tokens": 52 + 10 * done}
    chunks.append({**head, "choices": [], "usage": usage})
    return _sse([(None, c) for c in chunks] + [(None, "[DONE]")])


_BODIES: dict[tuple[str, int], bytes] = {}


def responder(record: dict[str, Any]) -> Any:
    """The server's answer to one request (runs in the server's process)."""
    from tests.localserver import sse_reply

    path, body = record["path"], record["body"]
    if path == LONG_PATH:
        key = ("long", 0)
        if key not in _BODIES:
            _BODIES[key] = openai_body(LONG_PARTS)
        return sse_reply(_BODIES[key], piece=4096)
    if path.endswith("/messages"):
        done = sum(
            1
            for m in body["messages"]
            if isinstance(m["content"], list) and any(b.get("type") == "tool_result" for b in m["content"])
        )
        key = ("anthropic", done)
        if key not in _BODIES:
            _BODIES[key] = anthropic_step(done)
    else:
        done = sum(1 for m in body["messages"] if m["role"] == "tool")
        key = ("openai", done)
        if key not in _BODIES:
            _BODIES[key] = openai_step(done)
    return sse_reply(_BODIES[key])


def add(a: int, b: int) -> str:
    return str(a + b)


class Add:
    """The agentcore tool: parse, add, format (as the floor does)."""

    definition = ToolDefinition(name="add", description="Add two integers.", input_schema=json.dumps(SCHEMA))

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return add(**arguments)


def _events(response: requests.Response) -> Any:
    return SSEClient(iter(lambda: response.raw.read1(65536), b"")).events()


def anthropic_floor(session: requests.Session, base_url: str) -> str:
    """The six steps by hand over the Messages wire format."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    tools = [{"name": "add", "description": "Add two integers.", "input_schema": SCHEMA}]
    headers = {"x-api-key": "bench-key", "anthropic-version": "2023-06-01"}
    while True:
        body = {
            "model": ANTHROPIC_MODEL,
            "max_tokens": 1024,
            "messages": messages,
            "tools": tools,
            "stream": True,
        }
        response = session.post(base_url + "/v1/messages", json=body, headers=headers, stream=True)
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        for event in _events(response):
            data = json.loads(event.data)
            kind = data["type"]
            if kind == "content_block_start" and data["content_block"]["type"] == "tool_use":
                calls.append({**data["content_block"], "json": []})
            elif kind == "content_block_delta":
                delta = data["delta"]
                if delta["type"] == "text_delta":
                    text.append(delta["text"])
                elif delta["type"] == "input_json_delta":
                    calls[-1]["json"].append(delta["partial_json"])
        response.close()
        content: list[dict[str, Any]] = [{"type": "text", "text": "".join(text)}] if text else []
        for call in calls:
            call["input"] = json.loads("".join(call.pop("json")) or "{}")
            content.append(call)
        messages.append({"role": "assistant", "content": content})
        if not calls:
            return "".join(text)
        results = [
            {"type": "tool_result", "tool_use_id": c["id"], "content": add(**c["input"])} for c in calls
        ]
        messages.append({"role": "user", "content": results})


def openai_floor(session: requests.Session, base_url: str, path: str = "/v1/chat/completions") -> str:
    """The six steps by hand over the Chat Completions wire format."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    tools = [
        {
            "type": "function",
            "function": {"name": "add", "description": "Add two integers.", "parameters": SCHEMA},
        }
    ]
    headers = {"Authorization": "Bearer bench-key"}
    while True:
        body = {"model": OPENAI_MODEL, "messages": messages, "tools": tools, "stream": True}
        response = session.post(base_url + path, json=body, headers=headers, stream=True)
        text: list[str] = []
        calls: list[dict[str, Any]] = []
        for event in _events(response):
            if event.data == "[DONE]":
                continue
            data = json.loads(event.data)
            if not data["choices"]:
                continue
            delta = data["choices"][0]["delta"]
            if delta.get("content"):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                if call.get("id"):
                    calls.append({"id": call["id"], "type": "function", "function": dict(call["function"])})
                else:
                    calls[-1]["function"]["arguments"] += call["function"]["arguments"]
        response.close()
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            message["tool_calls"] = calls
        messages.append(message)
        if not calls:
            return "".join(text)
        for call in calls:
            output = add(**json.loads(call["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": output})


def agentcore_model(fmt: str, base_url: str) -> Model:
    if fmt == "anthropic":
        return AnthropicModel(ANTHROPIC_MODEL, api_key="bench-key", base_url=base_url)
    return OpenAIChatModel(OPENAI_MODEL, api_key="bench-key", base_url=base_url + "/v1")


def through_run(model: Model) -> str:
    result = run(LoopOptions(model=model, messages=[user_message(PROMPT)], tools=[Add()])).result()
    assert len(result.steps) == STEPS, result.steps
    return result.text


def contestants(fmt: str, base_url: str) -> dict[str, Callable[[], str]]:
    session = requests.Session()
    session.trust_env = False
    model = agentcore_model(fmt, base_url)
    floor = anthropic_floor if fmt == "anthropic" else openai_floor
    return {"floor": lambda: floor(session, base_url), "run": lambda: through_run(model)}


def time_rounds(
    funcs: dict[str, Callable[[], str]], rounds: int, runs: int, clock: str, expected: str = "".join(ANSWER)
) -> list[dict[str, float]]:
    """Check every contestant's answer against ``expected``, then time
    ``runs`` calls of each per round, rotating the order every round;
    seconds per call."""
    for name, func in funcs.items():
        answer = func()
        assert answer == expected, f"{name}: {answer[:80]!r} ({len(answer)} characters)"
    results = []
    names = list(funcs)
    for number in range(rounds):
        shift = number % len(names)
        times = {}
        for name in names[shift:] + names[:shift]:
            gc.collect()
            func = funcs[name]
            times[name] = timed(lambda f=func: [f() for _ in range(runs)], CLOCKS[clock]) / runs
        results.append(times)
    return results


def report(title: str, results: list[dict[str, float]], base: str) -> None:
    print(title)
    for name in results[0]:
        print(f"  {name:14s} {statistics.median(r[name] for r in results) * 1000:8.2f} ms per run")
    for name in results[0]:
        if name != base:
            print(f"    {name + ' / ' + base:24s} {median_ratio(results, name, base):6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="rounds (11; --quick: 3)")
    parser.add_argument("--runs", type=int, default=20, help="six-step runs per contestant per round (20)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--format", choices=("anthropic", "openai"), action="append", help="default: both")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu", help="cpu (default) or wall")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 11)
    print(machine())
    with ProcessServer(responder) as server:
        for fmt in args.format or ("anthropic", "openai"):
            results = time_rounds(contestants(fmt, server.url), rounds, args.runs, args.clock)
            report(
                f"\n{fmt}: {STEPS}-step tool loop, {rounds} rounds of {args.runs} runs, {args.clock} time",
                results,
                "floor",
            )


if __name__ == "__main__":
    main()
