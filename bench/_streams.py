"""Helpers shared by the benchmarks: stream bodies, timing and statistics.

The bodies are the byte streams a real server sends for one long text answer,
chunk JSON shaped like the real APIs' (Anthropic Messages with
``event:`` names and a ``ping``; OpenAI Chat Completions with ``usage: null``
in every chunk and the usage chunk last, as with
``stream_options.include_usage``). ``tests/localserver.py`` serves them from a
real HTTP server on 127.0.0.1.

With ``reasoning=True`` the same number of deltas carry the model's reasoning
instead, followed by a one-delta answer (:data:`REASONING_ANSWER`): an
Anthropic ``thinking`` block of ``thinking_delta`` events closed by a
``signature_delta``, then a text block; OpenAI-compatible chunks whose delta
holds ``reasoning_content`` (the DeepSeek, Kimi and GLM field) with
``content: null``, then one content chunk. The framing is the text stream's,
so the two compare delta for delta.

Import this module after putting the repository root on ``sys.path`` (every
benchmark does so first), as ``from bench._streams import ...``.
"""

from __future__ import annotations

import base64
import json
import math
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

ANTHROPIC_MODEL = "claude-bench"
"""A model id the local server accepts (a real, deprecated id makes the SDK warn)."""
OPENAI_MODEL = "gpt-bench"


def delta_text(i: int) -> str:
    """The text of delta ``i``: a short word, like one token of a real answer."""
    return f" word{i % 97}"


REASONING_ANSWER = "Done."
"""The answer after a reasoning stream's reasoning (one text delta)."""
SIGNATURE = base64.b64encode(bytes(range(256)) * 2).decode()
"""A thinking block's signature: base64 text of the size real ones have (about 700 characters)."""

Event = tuple[str, dict[str, Any]]


def _anthropic_block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[Event]:
    """One content block: its start, its deltas, its stop."""
    start = {"type": "content_block_start", "index": index, "content_block": block}
    events: list[Event] = [("content_block_start", start)]
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def anthropic_events(parts: int, reasoning: bool = False) -> list[Event]:
    """The events of an Anthropic Messages stream with ``parts`` text deltas
    (``reasoning``: ``parts`` thinking deltas, a signature, then a short text block)."""
    events: list[Event] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": ANTHROPIC_MODEL,
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
    ]
    text = {"type": "text", "text": ""}
    if reasoning:
        thinking = [{"type": "thinking_delta", "thinking": delta_text(i)} for i in range(parts)]
        thinking.append({"type": "signature_delta", "signature": SIGNATURE})
        events += _anthropic_block(0, {"type": "thinking", "thinking": "", "signature": ""}, thinking)
        events += _anthropic_block(1, text, [{"type": "text_delta", "text": REASONING_ANSWER}])
    else:
        events += _anthropic_block(
            0, text, [{"type": "text_delta", "text": delta_text(i)} for i in range(parts)]
        )
    events.insert(2, ("ping", {"type": "ping"}))  # after the first block's start, as the API sends it
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": parts + reasoning},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def anthropic_body(parts: int, reasoning: bool = False) -> bytes:
    """An Anthropic Messages stream with ``parts`` text (or thinking) deltas, shaped like a real one."""
    events = anthropic_events(parts, reasoning)
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def openai_chunks(parts: int, reasoning: bool = False) -> list[dict[str, Any]]:
    """The chunks of an OpenAI Chat Completions stream with ``parts`` content deltas
    (``reasoning``: ``parts`` ``reasoning_content`` deltas, then one content delta)."""
    head = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": "gpt-4o-2024-08-06",
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "choices": [choice], "usage": None}

    if reasoning:
        chunks = [chunk({"role": "assistant", "content": None, "reasoning_content": ""})]
        chunks += [chunk({"content": None, "reasoning_content": delta_text(i)}) for i in range(parts)]
        chunks.append(chunk({"content": REASONING_ANSWER, "reasoning_content": None}))
    else:
        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks += [chunk({"content": delta_text(i)}) for i in range(parts)]
    chunks.append(chunk({}, "stop"))
    output = parts + reasoning
    chunks.append(
        {
            **head,
            "choices": [],
            "usage": {"prompt_tokens": 25, "completion_tokens": output, "total_tokens": 25 + output},
        }
    )
    return chunks


def openai_body(parts: int, reasoning: bool = False) -> bytes:
    """An OpenAI Chat Completions stream with ``parts`` content (or ``reasoning_content``) deltas."""
    chunks = openai_chunks(parts, reasoning)
    return "".join([f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]).encode()


def expected_text(parts: int) -> str:
    """The whole answer both text bodies carry (the whole reasoning of the reasoning bodies)."""
    return "".join(delta_text(i) for i in range(parts))


def anthropic_text(data: dict[str, Any]) -> str | None:
    """The text a decoded Anthropic event carries, if any (the floor's only work)."""
    if data["type"] == "content_block_delta" and data["delta"]["type"] == "text_delta":
        return str(data["delta"]["text"])
    return None


def openai_text(data: dict[str, Any]) -> str | None:
    """The text a decoded OpenAI chunk carries, if any (the floor's only work)."""
    choices = data["choices"]
    content = choices[0]["delta"].get("content") if choices else None
    return str(content) if content else None


def anthropic_reasoning(data: dict[str, Any]) -> str | None:
    """The reasoning a decoded Anthropic event carries, if any (the floor's only work)."""
    if data["type"] == "content_block_delta" and data["delta"]["type"] == "thinking_delta":
        return str(data["delta"]["thinking"])
    return None


def openai_reasoning(data: dict[str, Any]) -> str | None:
    """The reasoning a decoded OpenAI-compatible chunk carries, if any (the floor's only work)."""
    choices = data["choices"]
    content = choices[0]["delta"].get("reasoning_content") if choices else None
    return str(content) if content else None


def quiet(server: Any) -> Any:
    """Keep a ``tests.localserver.LocalServer`` from printing a traceback when a
    client resets an idle keep-alive connection (noise between rounds); other
    errors still print. Returns the server."""
    httpd = server._httpd
    default = httpd.handle_error

    def handle_error(request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            default(request, client_address)

    httpd.handle_error = handle_error
    return server


# --- timing and statistics --------------------------------------------------


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""What :func:`timed` can measure: elapsed time, or the CPU time of the whole
process (every thread, the local server's included). CPU time is steadier on a
machine shared with other work; it sums ``run()``'s two threads, so it shows
the work done, not the latency."""


def timed(func: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """Seconds ``func()`` took on ``clock`` (elapsed time by default)."""
    start = clock()
    func()
    return clock() - start


def median_ratio(rounds: list[dict[str, float]], name: str, base: str) -> float:
    """The median over rounds of ``rounds[i][name] / rounds[i][base]``."""
    return statistics.median(r[name] / r[base] for r in rounds)


def percentile(values: Iterable[float], pct: float) -> float:
    """The nearest-rank percentile (``pct`` in 0..100) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def machine() -> str:
    """One line naming the machine: CPU count, Python, OS."""
    return (
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]} "
        f"({platform.python_implementation()}), {platform.system()} {platform.release()}"
    )


# --- a server in its own process ---------------------------------------------


def _serve(responder: Callable[[dict[str, Any]], Any], port: Any, stop: Any) -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.localserver import LocalServer

    server = quiet(LocalServer(responder=responder))
    # Accepted sockets inherit TCP_NODELAY: without it a body written after the
    # headers waits for the client's delayed ACK (about 40 ms a response).
    server._httpd.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    server._httpd.socket.listen(4096)  # a backlog for a thousand clients connecting at once
    port.send(server.port)
    stop.wait()
    server.close()


class ProcessServer:
    """``tests.localserver.LocalServer`` with ``responder`` (a module-level
    function, so it can be sent to the child), run in a child process: the
    benchmark's process then spends its CPU time on the client only, so
    ``time.process_time()`` ratios are not diluted by the server's work.
    Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, responder: Callable[[dict[str, Any]], Any]) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        receive, send = context.Pipe(duplex=False)
        self._stop = context.Event()
        self._process = context.Process(target=_serve, args=(responder, send, self._stop), daemon=True)
        self._process.start()
        if not receive.poll(60):
            raise RuntimeError("the benchmark's server process did not start")
        self.url = f"http://127.0.0.1:{receive.recv()}"

    def __enter__(self) -> ProcessServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._process.join(10)
