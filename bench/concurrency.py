"""1,000 concurrent streaming runs in one process against a local server.

The server runs in its own process (``bench._streams.ProcessServer``), so
what is measured here is the client's. Three measurements, each against the
same work done by the raw floor (requests + sseclient-py + ``json.loads`` on
one thread per stream):

* **idle**: every run has read its first text delta and waits on a server that
  then stays silent. Over a window of ``--idle`` seconds: the CPU time of the
  process and the number of times any of its threads was woken (voluntary
  context switches summed over ``/proc/self/task/*/status``; the main thread,
  which only sleeps, is left out). An idle run should cost neither.
* **memory**: RSS growth (``VmRSS``) with all runs open and idle, per run.
* **throughput**: all runs (or floor streams) started at once, each streaming
  an answer of ``--parts`` deltas to its end; wall time and CPU time for all
  of them, as ratios ``run / floor``.

Each agentcore run is consumed by its own reader thread, as a server handling
one request per thread would. The adapter gets a session whose pool keeps a
connection per run (``pool_size``), so no connection is discarded.

Run: ``python bench/concurrency.py [--runs 1000] [--parts 200] [--idle 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests
import urllib3
from sseclient import SSEClient

from agentcore import LoopOptions, StreamPartKind, run, user_message
from agentcore.providers.openai import OpenAIChatModel
from bench._streams import OPENAI_MODEL, ProcessServer, expected_text, machine, openai_body, openai_text

SILENT = "/silent/v1/chat/completions"


def responder(record: dict[str, Any]) -> Any:
    """``/silent/...``: one text delta, then nothing; ``/text<N>/...``: an
    answer of N deltas (runs in the server's process)."""
    from tests.localserver import Reply, Stall, sse_reply

    path = record["path"]
    if path == SILENT:
        role, delta = openai_body(1).split(b"\n\n")[:2]  # the role chunk and one text delta
        return Reply(actions=[role + b"\n\n" + delta + b"\n\n", Stall()])
    parts = int(path.split("/")[1].removeprefix("text"))
    return sse_reply(openai_body(parts))


def rss() -> int:
    """The process's resident set, in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def wakeups() -> int:
    """Voluntary context switches of every thread but the main one."""
    total = 0
    main = threading.main_thread().native_id
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == main:
            continue
        try:
            with open(f"/proc/self/task/{tid}/status") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except FileNotFoundError:  # a thread that just ended
            pass
    return total


def floor_stream(
    session: requests.Session, url: str, first: threading.Barrier | None, out: list[str], socks: list[Any]
) -> None:
    response = session.post(url, json={"stream": True}, stream=True)
    socks.append(response.raw.connection.sock)
    text = []
    try:
        for event in SSEClient(iter(lambda: response.raw.read1(65536), b"")).events():
            if event.data == "[DONE]":
                continue
            piece = openai_text(json.loads(event.data))
            if piece:
                text.append(piece)
                if first is not None and len(text) == 1:
                    first.wait()
    except (OSError, requests.RequestException, urllib3.exceptions.HTTPError, ValueError):
        pass  # the idle measurement ends by shutting the sockets down
    finally:
        response.close()
    out.append("".join(text))


def run_stream(
    model: OpenAIChatModel, first: threading.Barrier | None, out: list[str], readers: list[Any]
) -> None:
    reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
    readers.append(reader)
    text = []
    for part in reader:
        if part.kind is StreamPartKind.TEXT_DELTA:
            text.append(part.text)
            if first is not None and len(text) == 1:
                first.wait()
    out.append("".join(text))


def idle(kind: str, base_url: str, runs: int, window: float) -> dict[str, float]:
    """Open ``runs`` streams that go silent after one delta; measure the window."""
    from agentcore.transport.http import HTTPTransport, new_session

    session = new_session(pool_size=runs)
    model = OpenAIChatModel(
        OPENAI_MODEL, api_key="bench-key", base_url=base_url + "/silent/v1", transport=HTTPTransport(session)
    )
    all_in = threading.Barrier(runs + 1, timeout=120)
    out: list[str] = []
    readers: list[Any] = []
    before = rss()
    if kind == "run":
        threads = [
            threading.Thread(target=run_stream, args=(model, all_in, out, readers)) for _ in range(runs)
        ]
    else:
        url = base_url + SILENT
        threads = [
            threading.Thread(target=floor_stream, args=(session, url, all_in, out, readers))
            for _ in range(runs)
        ]
    for thread in threads:
        thread.start()
    all_in.wait()  # every stream has read its first delta
    time.sleep(0.5)  # let every thread reach its blocking wait (not measured)
    memory = rss() - before
    woken = wakeups()
    cpu = time.process_time()
    time.sleep(window)  # the window measured
    cpu = time.process_time() - cpu
    woken = wakeups() - woken
    if kind == "run":
        for reader in readers:
            reader.close()
    else:
        for sock in readers:
            sock.shutdown(socket.SHUT_RDWR)  # the floor's blocked reads fail
    for thread in threads:
        thread.join(60)
    session.close()
    return {"cpu_ms": cpu * 1000, "wakeups": woken, "rss_per_stream_kb": memory / runs / 1024}


def throughput(kind: str, base_url: str, runs: int, parts: int) -> dict[str, float]:
    from agentcore.transport.http import HTTPTransport, new_session

    session = new_session(pool_size=runs)
    model = OpenAIChatModel(
        OPENAI_MODEL,
        api_key="bench-key",
        base_url=f"{base_url}/text{parts}/v1",
        transport=HTTPTransport(session),
    )
    out: list[str] = []
    readers: list[Any] = []
    target: Callable[..., None]
    if kind == "run":
        target, args = run_stream, (model, None, out, readers)
    else:
        target, args = (
            floor_stream,
            (session, f"{base_url}/text{parts}/v1/chat/completions", None, out, readers),
        )
    threads = [threading.Thread(target=target, args=args) for _ in range(runs)]
    wall, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    session.close()
    assert out == [expected_text(parts)] * runs, f"{kind}: {len(out)} streams ended, some wrong"
    return {"wall_s": wall, "cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--parts", type=int, default=200, help="deltas per answer in the throughput test")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds of the idle window")
    parser.add_argument("--quick", action="store_true", help="200 runs")
    args = parser.parse_args()
    runs = 200 if args.quick else args.runs
    print(machine())
    with ProcessServer(responder) as server:
        print(f"\nidle: {runs} streams waiting on a silent server, {args.idle:g} s window")
        found = {kind: idle(kind, server.url, runs, args.idle) for kind in ("floor", "run")}
        for kind, figures in found.items():
            print(
                f"  {kind:6s} CPU {figures['cpu_ms']:7.1f} ms, wakeups {figures['wakeups']:6.0f}, "
                f"RSS {figures['rss_per_stream_kb']:6.1f} KB per stream"
            )
        ratio = found["run"]["rss_per_stream_kb"] / found["floor"]["rss_per_stream_kb"]
        print(f"    RSS run / floor {ratio:.2f}")
        print(f"\nthroughput: {runs} streams of {args.parts} deltas, all at once")
        done = {}
        for kind in ("floor", "run", "floor", "run"):  # twice, alternating; the second pair counts
            done[kind] = throughput(kind, server.url, runs, args.parts)
        for kind, figures in done.items():
            rate = runs / figures["wall_s"]
            wall, cpu = figures["wall_s"], figures["cpu_s"]
            print(f"  {kind:6s} wall {wall:6.2f} s ({rate:6.0f} streams/s), CPU {cpu:6.2f} s")
        print(f"    wall run / floor {done['run']['wall_s'] / done['floor']['wall_s']:.2f}")
        print(f"    CPU  run / floor {done['run']['cpu_s'] / done['floor']['cpu_s']:.2f}")


if __name__ == "__main__":
    main()
