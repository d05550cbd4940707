"""Measurements behind docs/reliability.md: resource hygiene, concurrency, back-pressure.

Each function runs a workload against the real adapters (or a scripted model)
and returns its figures; the tests assert on them and ``tests/faults/report.py``
writes them into the document, so the document states what the tests check.

* :func:`hygiene`: many runs against :class:`tests.faults.server.RemoteServer`
  (a separate process, so only the client is counted), each closed at a random
  point: mid-stream, in a blocked network read, while a tool runs, while the
  loop waits to retry, with the producer blocked on a full queue, or after a
  normal finish. Thread count, open sockets (``/proc/self/fd`` entries that
  are sockets) and resident memory are compared with their baseline.
* :func:`concurrency`: many runs in parallel threads sharing one model
  instance (one ``requests`` session); every run's answer, tool input, usage
  and history must be its own.
* :func:`back_pressure` and :func:`million_parts`: a consumer that stops
  reading holds the producer at the queue bound; a million parts pass with
  flat memory.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from agentcore import (
    Context,
    FinishReason,
    LoopOptions,
    Model,
    Request,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolDefinition,
    Usage,
    run,
    user_message,
)
from agentcore.testing import ScriptedModel
from agentcore.transport import Timeout
from agentcore.transport.http import HTTPTransport, new_session
from tests.faults import DIALECTS
from tests.faults.server import RemoteServer, echo_usage
from tests.loop_helpers import SEND, asleep_in, assert_valid_history, wait_until

SCENARIOS = ("stream", "stall", "tool", "retry", "flood", "done")
CLOSE_POINTS = {
    "stream": "mid-stream, after 1 to 60 parts",
    "stall": "in a blocked network read (the server went silent)",
    "tool": "while a tool runs (it waits on the context)",
    "retry": "while the loop waits out a 30 s Retry-After",
    "flood": "with the producer blocked on a full queue (bound 1)",
    "done": "not closed: the run finishes and is read to the end",
}


def socket_inodes() -> set[str]:
    """The sockets this process has open (``/proc/self/fd`` entries that are
    sockets), by inode, so that sockets opened later can be told apart."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


def open_sockets() -> int:
    """How many sockets this process has open."""
    return len(socket_inodes())


def rss() -> int:
    """Resident memory of this process, in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@contextlib.contextmanager
def quiet_retry_logs() -> Iterator[None]:
    """Keep agentcore's retry warnings (one per run closed in a retry wait) out of
    handlers that keep records, such as pytest's log capture: the records are
    not agentcore's memory and must not count in the measurement."""
    logger = logging.getLogger("agentcore")
    propagate = logger.propagate
    logger.propagate = False
    null = logging.NullHandler()
    logger.addHandler(null)
    try:
        yield
    finally:
        logger.removeHandler(null)
        logger.propagate = propagate


def new_threads(baseline: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not in ``baseline``."""
    return [t for t in threading.enumerate() if t not in baseline and t.is_alive()]


def wait_for_workers(timeout: float = 10.0) -> int:
    """Wait until no run worker or tool thread is alive; return how many are left."""
    deadline = time.monotonic() + timeout
    while True:
        alive = [
            t
            for t in threading.enumerate()
            if t.name.startswith(("agentcore-stream", "agentcore-tool")) and t.is_alive()
        ]
        if not alive or time.monotonic() > deadline:
            return len(alive)
        time.sleep(0.005)


class WaitTool:
    """A tool that waits on the run's context for up to 10 s (it returns at once on cancel)."""

    definition = ToolDefinition(name="wait", description="Wait.", input_schema='{"type":"object"}')

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "interrupted" if ctx.wait(10.0) else "waited"


@attrs.frozen
class Sample:
    runs: int
    threads: int
    """Threads alive that were not alive at the baseline (0 when nothing leaked)."""
    sockets: int
    """Sockets open beyond the baseline (idle keep-alive connections in the pools)."""
    rss: int


@attrs.frozen
class HygieneFigures:
    runs: int
    by_scenario: dict[str, int]
    threads_before: int
    threads_after: int
    threads_new: tuple[str, ...]
    """Names of threads alive at the end that were not alive at the baseline."""
    sockets_before: int
    sockets_after: int
    sockets_new: int
    """Sockets open at the end (sessions closed) that were not open at the baseline."""
    sockets_peak: int
    """The most sockets open at once beyond the baseline, sampled every 20 runs."""
    models: int
    rss_before: int
    rss_after: int
    close_max: float
    workers_left: int
    resource_warnings: int
    samples: tuple[Sample, ...]
    seconds: float


def _one_run(rng: random.Random, scenario: str, model: Model) -> float:
    """One run closed at the scenario's point; returns how long close() took."""
    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        tools=[WaitTool()],
        retry_base_delay=0.01,
        queue_size=1 if scenario == "flood" else 64,
    )
    reader = run(options)
    if scenario == "done":
        reader.result()
        return 0.0
    if scenario == "stream":
        for _ in range(rng.randint(1, 60)):
            if next(reader).terminal:
                break
    elif scenario == "stall":
        while next(reader).kind is not StreamPartKind.TEXT_DELTA:
            pass
    elif scenario == "tool":
        while next(reader).kind is not StreamPartKind.STEP_FINISH:
            pass
        time.sleep(rng.uniform(0.0, 0.003))
    elif scenario == "retry":
        time.sleep(rng.uniform(0.002, 0.03))
    elif scenario == "flood":
        next(reader)
        time.sleep(0.002)
    start = time.monotonic()
    reader.close()
    return time.monotonic() - start


def hygiene(runs: int = 1000, *, seed: int = 4, warmup: int = 60) -> HygieneFigures:
    """Run ``runs`` runs closed at random points; see the module docstring."""
    started = time.monotonic()
    rng = random.Random(seed)
    with warnings.catch_warnings(record=True) as caught, quiet_retry_logs(), RemoteServer() as server:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
        wait_for_workers()
        sockets_baseline = socket_inodes()
        sessions = []
        models: dict[tuple[str, str], Model] = {}
        for dialect in DIALECTS:
            for scenario in SCENARIOS:
                session = new_session()
                sessions.append(session)
                models[(dialect.name, scenario)] = dialect.model(
                    server.base_url(dialect.name, scenario),
                    transport=HTTPTransport(session),
                    timeout=Timeout(connect=5.0, read=10.0),
                )
        keys = sorted(models)
        for i in range(warmup):
            key = keys[i % len(keys)]
            _one_run(rng, key[1], models[key])
        wait_for_workers()
        gc.collect()
        baseline = set(threading.enumerate())
        threads_before = len(baseline)
        rss_before = rss()
        by_scenario = dict.fromkeys(SCENARIOS, 0)
        samples = []
        close_max = 0.0
        sockets_peak = len(socket_inodes() - sockets_baseline)
        for i in range(1, runs + 1):
            key = rng.choice(keys)
            by_scenario[key[1]] += 1
            close_max = max(close_max, _one_run(rng, key[1], models[key]))
            if i % 20 == 0:
                sockets_peak = max(sockets_peak, len(socket_inodes() - sockets_baseline))
            if i % 100 == 0:
                wait_for_workers()
                gc.collect()
                samples.append(
                    Sample(i, len(new_threads(baseline)), len(socket_inodes() - sockets_baseline), rss())
                )
        workers_left = wait_for_workers()
        gc.collect()
        threads_new = tuple(t.name for t in new_threads(baseline))
        threads_after = len([t for t in baseline if t.is_alive()]) + len(threads_new)
        rss_after = rss()
        for session in sessions:
            session.close()
        gc.collect()
        sockets_end = socket_inodes()
    return HygieneFigures(
        runs=runs,
        by_scenario=by_scenario,
        threads_before=threads_before,
        threads_after=threads_after,
        threads_new=threads_new,
        sockets_before=len(sockets_baseline),
        sockets_after=len(sockets_end),
        sockets_new=len(sockets_end - sockets_baseline),
        sockets_peak=sockets_peak,
        models=len(models),
        rss_before=rss_before,
        rss_after=rss_after,
        close_max=close_max,
        workers_left=workers_left,
        resource_warnings=sum(1 for w in caught if issubclass(w.category, ResourceWarning)),
        samples=tuple(samples),
        seconds=time.monotonic() - started,
    )


# --- concurrency ----------------------------------------------------------------------------------


class Lookup:
    """``lookup({"key": k})`` answers ``value-of-<k>``."""

    definition = ToolDefinition(
        name="lookup",
        description="Look a key up.",
        input_schema='{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}',
    )

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return "value-of-" + str(arguments["key"])


@attrs.frozen
class ConcurrencyFigures:
    dialect: str
    runs: int
    correct: int
    problems: tuple[str, ...]
    seconds: float


def concurrency(dialect_name: str, runs: int = 50) -> ConcurrencyFigures:
    """``runs`` runs at once in threads, sharing one model instance (one session)."""
    dialect = next(d for d in DIALECTS if d.name == dialect_name)
    started = time.monotonic()
    problems: list[str] = []
    lock = threading.Lock()
    correct = 0
    with RemoteServer() as server:
        model = dialect.model(server.base_url(dialect.name, "echo"), timeout=Timeout(connect=5.0, read=20.0))
        barrier = threading.Barrier(runs)

        def one(n: int) -> None:
            nonlocal correct
            token = f"run-{n}"
            seen: list[str] = []
            try:
                barrier.wait(timeout=30)
                result = run(
                    LoopOptions(model=model, messages=[user_message(token)], tools=[Lookup()]),
                    Context(timeout=60),
                ).result()
                want = f"answer {token}: value-of-{token}"
                if result.text != want:
                    seen.append(f"{token}: text {result.text!r}")
                if result.usage != echo_usage(n, 1) + echo_usage(n, 2):
                    seen.append(f"{token}: usage {result.usage}")
                call = result.steps[0].tool_calls[0]
                if (call.id, call.input) != (f"call_{token}", f'{{"key": "{token}"}}'):
                    seen.append(f"{token}: tool call {call}")
                if result.steps[0].tool_results[0].content != f"value-of-{token}":
                    seen.append(f"{token}: tool result {result.steps[0].tool_results[0]}")
                if result.messages[0].text != token or len(result.messages) != 4:
                    seen.append(f"{token}: history {result.messages}")
                assert_valid_history(result.messages)
            except (RunError, AssertionError, IndexError, threading.BrokenBarrierError) as exc:
                seen.append(f"{token}: {type(exc).__name__}: {exc}")
            with lock:
                problems.extend(seen)
                correct += not seen

        threads = [threading.Thread(target=one, args=(n,)) for n in range(runs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
    return ConcurrencyFigures(
        dialect=dialect.label,
        runs=runs,
        correct=correct,
        problems=tuple(problems),
        seconds=time.monotonic() - started,
    )


# --- back-pressure --------------------------------------------------------------------------------


class Offer:
    """A model step that offers parts for as long as they are taken, counting them."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.offered = 0

    def __call__(self, _request: Request) -> Iterator[StreamPart]:
        delta = StreamPart.text_delta("x")
        limit = self.limit
        while limit is None or self.offered < limit:
            self.offered += 1
            yield delta
        yield StreamPart.step_finish(FinishReason.STOP, Usage(1, limit or 0))


@attrs.frozen
class BackPressureFigures:
    queue_size: int
    offered_after_stop: int
    offered_later: int


def back_pressure(queue_size: int = 8, pause: float = 0.3) -> BackPressureFigures:
    """The reader takes one part and stops; how many parts did the model get to
    offer by the time the worker sleeps on the full queue, and ``pause``
    seconds later?"""
    offer = Offer()
    reader = run(
        LoopOptions(model=ScriptedModel([offer]), messages=[user_message("go")], queue_size=queue_size)
    )
    try:
        next(reader)
        # The reader took a batch of 1 to queue_size parts, so the worker offers
        # at least queue_size + 2 before it sleeps on the queue it filled again
        # (asleep with queue_size + 1 offered, it has not woken from before the take).
        if not wait_until(lambda: offer.offered >= queue_size + 2 and asleep_in("agentcore-stream", SEND)):
            raise AssertionError("the worker never slept on the full queue")
        first = offer.offered
        time.sleep(pause)
        return BackPressureFigures(queue_size, first, offer.offered)
    finally:
        reader.close()


@attrs.frozen
class MemoryFigures:
    parts: int
    rss_start: int
    rss_peak: int
    rss_end: int
    text_bytes: int
    seconds: float


def million_parts(
    parts: int = 1_000_000, consume: Callable[[StreamPart], Any] | None = None
) -> MemoryFigures:
    """A model offers ``parts`` one-character deltas; the reader takes them all.

    Resident memory is sampled every 10 ms. What must grow is only what the
    history keeps: the step's text (the loop collects it as a list of the
    deltas, about 8 bytes a part, and joins it at the end of the step).
    """
    gc.collect()
    start = rss()
    peak = [start]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.monotonic()
    try:
        reader = run(LoopOptions(model=ScriptedModel([Offer(parts)]), messages=[user_message("go")]))
        count = 0
        for part in reader:
            count += 1
            if consume is not None:
                consume(part)
        seconds = time.monotonic() - began
    finally:
        done.set()
        sampler.join()
    end = rss()
    assert count == parts + 2, count
    return MemoryFigures(parts, start, max(peak[0], end), end, parts, seconds)
