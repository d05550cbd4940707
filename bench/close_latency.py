"""How fast ``reader.close()`` returns, and how fast the run's worker is gone.

A real HTTP server on 127.0.0.1 (``tests/localserver.py``) puts a ``run()``
over each adapter (Anthropic, OpenAI) into one state, then the reader is
closed from the consumer's thread. Each state is measured ``--runs`` times
(100) and printed as p50 / p99 / max (nearest rank) of

* ``close()``: how long the call took (issue 5's target: p99 under 50 ms);
* ``worker gone``: from the start of ``close()`` until the run's worker
  thread has ended (the socket closed, the connection released).

The states:

* ``streaming``: the body arrives in 4 KB pieces, 1 ms apart; closed after
  100 text parts were read, while parts keep flowing;
* ``stalled-read``: the server sends the first events and then nothing,
  keeping the socket open; closed while the worker is blocked in the read;
* ``stalled-headers``: the server never sends the response headers (no body
  socket read has started yet; DESIGN.md "Hazards");
* ``retry-wait``: the server answers 429 with ``Retry-After: 30``; closed
  while the loop waits to retry;
* ``full-queue``: a fast stream and a consumer that stops reading after the
  first part, so the worker blocks on the full queue (64 parts).

Run: ``python bench/close_latency.py [--runs 100] [--quick]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import LoopOptions, Model, RunReader, StreamPartKind, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from bench._streams import (
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    anthropic_body,
    machine,
    openai_body,
    percentile,
)
from tests.localserver import LocalServer, Reply, Stall, json_reply, sse_reply

STATES = ("streaming", "stalled-read", "stalled-headers", "retry-wait", "full-queue")
TARGET_P99 = 0.050
"""Issue 5: close() p99 under 50 ms in every state (seconds)."""
JOIN_LIMIT = 5.0
"""Seconds to wait for a worker to end before counting it as left over."""
SETTLE = 0.005
"""Seconds to let the worker reach the blocking call before closing."""


def head(body: bytes, events: int) -> bytes:
    """The first ``events`` SSE blocks of ``body``."""
    return b"".join(block + b"\n\n" for block in body.split(b"\n\n")[:events])


def reply_for(state: str, body: bytes, first_events: int) -> Reply:
    if state == "streaming":
        return sse_reply(body, piece=4096, pause=0.001)
    if state == "stalled-read":
        return Reply(actions=[head(body, first_events), Stall()])
    if state == "stalled-headers":
        return Reply(before_headers=[Stall()])
    if state == "retry-wait":
        error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
        return json_reply(429, error, headers={"retry-after": "30"})
    if state == "full-queue":
        return sse_reply(body, piece=4096)
    raise ValueError(state)


class _RetryWaits(logging.Handler):
    """Sets ``waiting`` when the loop logs that it is about to wait for a retry."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.waiting = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "retrying in" in record.getMessage():
            self.waiting.set()


RETRY_WAITS = _RetryWaits()


def wait_until(condition: Callable[[], bool], limit: float = 5.0) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the run never reached the state")
        time.sleep(0.0005)


def first_text(reader: RunReader) -> None:
    for part in reader:
        if part.kind is StreamPartKind.TEXT_DELTA:
            return
        if part.kind in (StreamPartKind.FINISH, StreamPartKind.ERROR):
            raise RuntimeError(f"the run ended early: {part}")
    raise RuntimeError("the run ended early")


def reach(state: str, reader: RunReader, server: LocalServer, hits_before: int) -> None:
    """Bring the run into ``state`` (the reader is read from this thread)."""
    if state == "streaming":
        texts = 0
        for part in reader:
            texts += part.kind is StreamPartKind.TEXT_DELTA
            if texts == 100:
                return
        raise RuntimeError("the run ended early")
    if state in ("stalled-read", "full-queue"):
        first_text(reader)
        time.sleep(SETTLE if state == "stalled-read" else 0.03)
        return
    if state == "retry-wait":
        if not RETRY_WAITS.waiting.wait(5.0):
            raise TimeoutError("the run never started its retry wait")
    else:  # stalled-headers: the request was sent and read; the worker waits for headers
        wait_until(lambda: server.hits > hits_before)
    time.sleep(SETTLE)


def measure(provider: str, state: str, runs: int) -> tuple[list[float], list[float], int]:
    """``(close seconds, worker-gone seconds, workers left over)`` for ``runs`` runs."""
    anthropic = provider == "anthropic"
    body = anthropic_body(20000) if anthropic else openai_body(20000)
    server = LocalServer([reply_for(state, body, first_events=4 if anthropic else 2)])
    model: Model = (
        AnthropicModel(ANTHROPIC_MODEL, api_key="bench-key", base_url=server.url)
        if anthropic
        else OpenAIChatModel(OPENAI_MODEL, api_key="bench-key", base_url=server.url + "/v1")
    )
    closes: list[float] = []
    gone: list[float] = []
    leftover = 0
    try:
        for _ in range(runs):
            before = set(threading.enumerate())
            RETRY_WAITS.waiting.clear()
            hits = server.hits
            reader = run(LoopOptions(model=model, messages=[user_message("hi")], max_retries=2))
            workers = [t for t in threading.enumerate() if t not in before and t.name == "agentcore-stream"]
            reach(state, reader, server, hits)
            start = time.perf_counter()
            reader.close()
            closes.append(time.perf_counter() - start)
            for worker in workers:
                worker.join(JOIN_LIMIT)
                leftover += worker.is_alive()
            gone.append(time.perf_counter() - start)
    finally:
        server.close()
    return closes, gone, leftover


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="closes per state (100; --quick: 20)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--provider", choices=("anthropic", "openai"), action="append", help="default: both")
    args = parser.parse_args()
    runs = args.runs or (20 if args.quick else 100)
    logging.getLogger("agentcore").addHandler(RETRY_WAITS)  # also keeps the retry warnings off stderr
    print(machine())
    worst = 0.0
    for provider in args.provider or ("anthropic", "openai"):
        print(f"\n{provider}: run() closed from the consumer's thread, {runs} runs per state (ms)")
        print(
            f"  {'state':16s} {'close() p50':>11s} {'p99':>7s} {'max':>7s}   {'worker gone p50':>15s} "
            f"{'p99':>7s} {'max':>7s}  left over"
        )
        for state in STATES:
            closes, gone, leftover = measure(provider, state, runs)
            worst = max(worst, percentile(closes, 99))
            print(
                f"  {state:16s} {percentile(closes, 50) * 1e3:11.3f} {percentile(closes, 99) * 1e3:7.3f} "
                f"{max(closes) * 1e3:7.3f}   {percentile(gone, 50) * 1e3:15.2f} "
                f"{percentile(gone, 99) * 1e3:7.2f} {max(gone) * 1e3:7.2f}  {leftover:9d}"
            )
    verdict = "met" if worst < TARGET_P99 else "MISSED"
    target = f"target < {TARGET_P99 * 1e3:g} ms in every state"
    print(f"\nworst close() p99: {worst * 1e3:.3f} ms   {target}: {verdict}")


if __name__ == "__main__":
    main()
