"""Peak memory: a slow consumer of a million parts, and 100 runs in parallel.

Each scenario runs in a fresh interpreter. After its imports, its setup and
one small warm-up run, the child notes its resident set (``VmRSS``), resets
the peak (``VmHWM``, via ``/proc/self/clear_refs``), runs the scenario and
reports the peak growth: ``VmHWM`` after minus ``VmRSS`` before.

* ``million-run``: ``run()`` over a model that yields 1,000,000 small text
  deltas (a fresh 3-5 character string each, like decoded JSON), read by a
  slow consumer (it sleeps 2 ms every 256 parts, so the queue stays full);
  issue 5's target is a growth under 10 MB.
* ``million-direct``: the same model iterated directly by the same consumer
  (what the parts themselves cost: the floor for ``million-run``).
* ``parallel-run``: 100 threads, each reading its own ``run()`` over one
  shared Anthropic adapter, streaming 2,000 deltas from a local HTTP server
  (4 KB pieces, 5 ms apart) that lives in another process, so only the
  client's memory counts.
* ``parallel-floor``: the same 100 streams read by requests + sseclient-py +
  ``json.loads`` (one shared session): the floor for ``parallel-run``.

``--trace`` adds a tracemalloc snapshot taken by the consumer of
``million-run`` near the end of the stream (where the peak is) and prints
the biggest allocation sites (tracemalloc's own memory then inflates that
scenario's growth).

Run: ``python bench/memory.py [--quick] [--trace]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import (
    Context,
    FinishReason,
    LoopOptions,
    Request,
    StreamPart,
    StreamPartKind,
    Usage,
    run,
    user_message,
)
from bench._streams import ANTHROPIC_MODEL, anthropic_body, anthropic_text, machine

SCENARIOS = ("million-run", "million-direct", "parallel-run", "parallel-floor")
TARGET_MB = 10.0
"""Issue 5: peak growth under 10 MB for the million-part run."""
SLOW_EVERY = 256
SLOW_SLEEP = 0.002


def status(field: str) -> int:
    """A ``/proc/self/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak() -> bool:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        return False
    return True


class ManyParts:
    """A model whose one step streams ``parts`` small text deltas, then stops."""

    model_id = "many-parts"

    def __init__(self, parts: int) -> None:
        self.parts = parts

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        for i in range(self.parts):
            ctx.check()
            yield StreamPart.text_delta(f" w{i % 1000}")  # a new str object each time
        yield StreamPart.step_finish(FinishReason.STOP, Usage(10, self.parts))


def slow_consume(parts: Iterator[StreamPart], at: int | None, on_at: Callable[[], None]) -> int:
    """Read every part, sleeping now and then; call ``on_at()`` at text part ``at``."""
    count = 0
    for part in parts:
        if part.kind is StreamPartKind.TEXT_DELTA:
            count += 1
            if count % SLOW_EVERY == 0:
                time.sleep(SLOW_SLEEP)
            if count == at:
                on_at()
    return count


# --- the children -----------------------------------------------------------


def child_million(direct: bool, parts: int, trace: bool) -> dict[str, Any]:
    def stream(count: int) -> Iterator[StreamPart]:
        model = ManyParts(count)
        if direct:
            return iter(model.stream(Request(messages=[user_message("hi")]), Context()))
        return iter(run(LoopOptions(model=model, messages=[user_message("hi")])))

    slow_consume(stream(10000), None, lambda: None)  # warm-up
    report: dict[str, Any] = {}
    snapshot: list[Any] = []
    if trace:
        import tracemalloc

        tracemalloc.start()

        def take() -> None:
            snapshot.append(tracemalloc.take_snapshot())
    else:

        def take() -> None:
            pass

    gc.collect()
    before = status("VmRSS")
    report["peak_reset"] = reset_peak()
    hwm_before = status("VmHWM")
    start = time.perf_counter()
    # The worker runs up to a queue (64 parts) ahead: snapshot before it ends the step.
    count = slow_consume(stream(parts), parts - 4 * SLOW_EVERY, take)
    report["seconds"] = time.perf_counter() - start
    assert count == parts, count
    report["growth"] = status("VmHWM") - (before if report["peak_reset"] else hwm_before)
    report["retained"] = status("VmRSS") - before
    if snapshot:
        stats = snapshot[0].statistics("lineno")[:6]
        report["trace"] = [f"{s.size / 1e6:7.1f} MB  {s.count:9,d} blocks  {s.traceback[0]}" for s in stats]
    return report


def child_parallel(use_run: bool, threads: int, deltas: int) -> dict[str, Any]:
    import requests
    from sseclient import SSEClient

    from agentcore.providers.anthropic import AnthropicModel

    server = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", str(deltas)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    discarded = _PoolWarnings()
    logging.getLogger("urllib3.connectionpool").addHandler(discarded)
    model = AnthropicModel(ANTHROPIC_MODEL, api_key="bench-key", base_url=url)
    session = requests.Session()
    session.trust_env = False

    def with_run() -> int:
        reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
        return sum(1 for part in reader if part.kind is StreamPartKind.TEXT_DELTA)

    def floor() -> int:
        response = session.post(url + "/v1/messages", json={"stream": True}, stream=True, timeout=(10, 60))
        reads = iter(lambda: response.raw.read1(65536), b"")
        count = 0
        for event in SSEClient(reads).events():
            count += anthropic_text(json.loads(event.data)) is not None
        response.close()
        return count

    one = with_run if use_run else floor
    try:
        assert one() == deltas  # warm-up
        counts: list[int] = []
        errors: list[str] = []
        gate = threading.Barrier(threads + 1)

        def worker() -> None:
            gate.wait()
            try:
                counts.append(one())
            except Exception as exc:  # noqa: BLE001 - reported, not fatal
                errors.append(f"{type(exc).__name__}: {exc}")

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        gc.collect()
        report: dict[str, Any] = {"peak_reset": reset_peak()}
        before = status("VmRSS")
        hwm_before = status("VmHWM")
        for thread in pool:
            thread.start()
        start = time.perf_counter()
        gate.wait()
        for thread in pool:
            thread.join()
        report["seconds"] = time.perf_counter() - start
        report["growth"] = status("VmHWM") - (before if report["peak_reset"] else hwm_before)
        report["retained"] = status("VmRSS") - before
        report["discarded_connections"] = discarded.count
        report["errors"] = errors
        report["short"] = sum(count != deltas for count in counts)
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(10)
    return report


class _PoolWarnings(logging.Handler):
    """Counts urllib3's "Connection pool is full, discarding connection" warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "pool is full" in record.getMessage()


def serve(deltas: int) -> None:
    """Serve the parallel scenarios' stream until stdin closes (another process)."""
    from http.server import ThreadingHTTPServer

    from tests.localserver import LocalServer, sse_reply

    # This process only serves: a listen backlog for 100 simultaneous connects
    # (the default of 5 makes the kernel reset some, which the floor does not retry).
    ThreadingHTTPServer.request_queue_size = 1024
    server = LocalServer([sse_reply(anthropic_body(deltas), piece=4096, pause=0.005)])
    print(server.url, flush=True)
    sys.stdin.read()
    server.close()


# --- the parent -------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="250,000 parts, 50 threads")
    parser.add_argument("--parts", type=int, default=None, help="parts of the million runs (1,000,000)")
    parser.add_argument("--threads", type=int, default=None, help="parallel runs (100)")
    parser.add_argument("--deltas", type=int, default=2000, help="text deltas per parallel stream (2000)")
    parser.add_argument("--trace", action="store_true", help="tracemalloc the million-part run's peak")
    parser.add_argument("--scenario", choices=SCENARIOS, action="append", help="default: all")
    parser.add_argument("--child", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    parts = args.parts or (250_000 if args.quick else 1_000_000)
    threads = args.threads or (50 if args.quick else 100)
    if args.serve:
        serve(args.serve)
        return
    if args.child:
        if args.child.startswith("million"):
            report = child_million(args.child == "million-direct", parts, args.trace)
        else:
            report = child_parallel(args.child == "parallel-run", threads, args.deltas)
        print(json.dumps(report))
        return

    print(machine())
    print(
        f"peak RSS growth (VmHWM after - VmRSS before), one fresh interpreter per scenario; "
        f"{parts:,} parts, {threads} threads x {args.deltas:,} deltas"
    )
    results = {}
    for scenario in args.scenario or SCENARIOS:
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            scenario,
            "--parts",
            str(parts),
            "--threads",
            str(threads),
            "--deltas",
            str(args.deltas),
        ]
        if args.trace and scenario == "million-run":
            command.append("--trace")
        output = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
        if output.returncode != 0:
            print(f"  {scenario}: FAILED\n{output.stderr}")
            continue
        report = json.loads(output.stdout.splitlines()[-1])
        results[scenario] = report
        extra = ""
        if scenario.startswith("parallel"):
            extra = f"  ({report['growth'] / threads / 1e6:.2f} MB per run; "
            extra += f"{report['discarded_connections']} pooled connections discarded)"
        if report.get("errors") or report.get("short"):
            extra += f"\n      FAILED streams: {len(report['errors'])} raised, {report['short']} incomplete; "
            extra += "; ".join(sorted(set(report["errors"]))[:3])
        reset = "" if report["peak_reset"] else "  (VmHWM could not be reset)"
        reset += "  (tracemalloc on)" if "trace" in report else ""
        print(
            f"  {scenario:15s} peak growth {report['growth'] / 1e6:7.1f} MB   retained "
            f"{report['retained'] / 1e6:6.1f} MB   {report['seconds']:6.1f} s{extra}{reset}"
        )
        for line in report.get("trace", []):
            print(f"      {line}")
    if "million-run" in results:
        growth = results["million-run"]["growth"] / 1e6
        verdict = "met" if growth < TARGET_MB else "MISSED"
        print(
            f"\nmillion-run peak growth {growth:.1f} MB   target < {TARGET_MB:g} MB: {verdict}"
            + ("" if parts == 1_000_000 else f" (measured with {parts:,} parts, not a million)")
        )


if __name__ == "__main__":
    main()
