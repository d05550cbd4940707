"""A durable run in a real process, killed with SIGKILL at every point of a
three-step run (mid-stream, mid-tool, right after each checkpoint), then
resumed by a fresh process: the final history and usage equal those of a
run never killed, and the log of tool executions shows every call whose
result was saved ran once (tests/durable_child.py is the child; the parent
and the child synchronise over its stdin and stdout, never by sleeping)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.durable_child import plan_reply
from tests.localserver import Action, LocalServer, Reply, Stall

ROOT = Path(__file__).resolve().parent.parent

POINTS = [
    "stream:0:1",
    "stream:0:2",
    "saved:1",
    "tool:a",
    "saved:2",
    "tool:chart",
    "saved:3",
    "saved:4",
    "stream:1:1",
    "stream:1:2",
    "saved:5",
    "tool:b",
    "saved:6",
    "tool:c",
    "saved:7",
    "saved:8",
    "stream:2:1",
    "stream:2:2",
    "saved:9",
]
"""Every sync point of the run, in order (the uninterrupted run must pass exactly these)."""

TAGS = ["a", "chart", "b", "c"]


class Child:
    """``python -m tests.durable_child`` driven through its sync points."""

    def __init__(
        self, tmp: Path, *approve: str, env: dict[str, str] | None = None, base_url: str | None = None
    ) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.durable_child", str(tmp / "runs.db"), "run-1", str(tmp / "log")]
            + [f"--approve={item}" for item in approve]
            + ([f"--base-url={base_url}"] if base_url else []),
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        self.points: list[str] = []

    def drive(
        self, kill_at: str | None = None, kill_on: threading.Event | None = None
    ) -> dict[str, Any] | None:
        """Answer every sync point, killing the child at ``kill_at`` (or once
        ``kill_on`` is set); the result, or None when killed."""
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        if kill_on is not None:
            threading.Thread(target=self._kill_on, args=(kill_on,), daemon=True).start()
        result: dict[str, Any] | None = None
        for line in self.proc.stdout:
            if line.startswith("sync "):
                point = line.removeprefix("sync ").strip()
                self.points.append(point)
                if point == kill_at:
                    self.proc.send_signal(signal.SIGKILL)
                    assert self.proc.wait(30) == -signal.SIGKILL
                    self.proc.stdout.close()
                    self.proc.stdin.close()
                    return None
                self.proc.stdin.write("go\n")
                self.proc.stdin.flush()
            elif line.startswith("result "):
                result = json.loads(line.removeprefix("result "))
        self.proc.stdin.close()
        self.proc.stdout.close()
        if kill_on is not None and self.proc.wait(30) == -signal.SIGKILL:
            return None
        assert self.proc.wait(30) == 0
        assert result is not None
        return result

    def _kill_on(self, event: threading.Event) -> None:
        if event.wait(30):
            self.proc.send_signal(signal.SIGKILL)


def executions(tmp: Path) -> list[tuple[str, str]]:
    """The tool executions logged so far: (idempotency key, tag)."""
    lines = (tmp / "log").read_text(encoding="utf-8").splitlines() if (tmp / "log").exists() else []
    return [(line.split(" ")[0], line.split(" ")[1]) for line in lines]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("uninterrupted")
    child = Child(tmp)
    result = child.drive()
    assert child.points == POINTS
    assert result is not None
    assert [tag for _key, tag in executions(tmp)] == TAGS
    return result


def last_checkpoint(points: list[str]) -> int:
    """The index in POINTS after which a run killed after ``points`` resumes."""
    saved = [index for index, point in enumerate(points) if point.startswith("saved:")]
    return saved[-1] + 1 if saved else 0


@pytest.mark.parametrize("point", POINTS)
def test_a_run_killed_at_any_point_resumes_to_the_same_result(
    point: str, uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    killed = Child(tmp_path)
    assert killed.drive(kill_at=point) is None
    resumed = Child(tmp_path)
    result = resumed.drive()
    # The resumed run starts at the last checkpoint: nothing saved is done again.
    assert resumed.points == POINTS[last_checkpoint(killed.points) :]
    assert result == uninterrupted  # history (reasoning, files), steps and usage total
    runs = Counter(tag for _key, tag in executions(tmp_path))
    again = point.removeprefix("tool:") if point.startswith("tool:") else None
    # Each call ran once; the one killed before its result was saved ran twice (at least once).
    assert runs == Counter(TAGS + ([again] if again else []))
    keys: dict[str, set[str]] = {}
    for key, tag in executions(tmp_path):
        keys.setdefault(tag, set()).add(key)
    assert {tag: len(k) for tag, k in keys.items()} == dict.fromkeys(TAGS, 1)  # the same key each time


def test_a_run_killed_twice_at_random_points_resumes_to_the_same_result(
    uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    first = rng.choice(POINTS[:-1])  # killed at the last point, the run has finished: nothing to kill next
    child = Child(tmp_path)
    assert child.drive(kill_at=first) is None
    second = rng.choice(POINTS[last_checkpoint(child.points) :])
    child = Child(tmp_path)
    assert child.drive(kill_at=second) is None
    assert Child(tmp_path).drive() == uninterrupted, f"seed {seed}: killed at {first}, then at {second}"


def test_a_side_effect_keyed_by_the_idempotency_key_happens_once(
    uninterrupted: dict[str, Any], tmp_path: Path
) -> None:
    killed = Child(tmp_path)
    assert killed.drive(kill_at="tool:b") is None
    assert Child(tmp_path).drive() == uninterrupted
    assert [tag for _key, tag in executions(tmp_path)].count("b") == 2  # the tool ran twice...
    effects = (tmp_path / "log.effects").read_text(encoding="utf-8").splitlines()
    assert effects == [  # ...its effect, keyed by ctx.idempotency_key, happened once
        "run-1:1:c1 a",
        "run-1:1:c2 chart",
        "run-1:2:c1 b",
        "run-1:2:c2 c",
    ]


# --- the same run through OpenAIChatModel against a local HTTP server -----------------

HTTP_POINTS = [point for point in POINTS if not point.startswith("stream:")]
"""Sync points of the HTTP run: the adapter's stream has none (the server stalls it instead)."""


class PlanServer:
    """A Chat Completions server playing the plan: the step is the number of
    assistant messages in the request. ``stall`` makes the next request for
    that step stop after its first half and set ``stalled``."""

    def __init__(self) -> None:
        self.server = LocalServer(responder=self.reply)
        self.steps: list[int] = []
        self.stall: int | None = None
        self.stalled = threading.Event()

    def reply(self, request: dict[str, Any]) -> Reply:
        step = sum(1 for message in request["body"]["messages"] if message["role"] == "assistant")
        self.steps.append(step)
        events = plan_reply(step)
        if step == self.stall:
            self.stall = None
            self.stalled.set()
            return Reply(actions=[*events[: len(events) // 2], Stall()])
        return Reply(actions=list[Action](events))

    def reset(self, stall: int | None = None) -> None:
        self.server.reset()
        self.steps.clear()
        self.stall = stall
        self.stalled.clear()


@pytest.fixture(scope="module")
def plan_server() -> Iterator[PlanServer]:
    server = PlanServer()
    try:
        yield server
    finally:
        server.server.close()


@pytest.fixture(scope="module")
def uninterrupted_http(plan_server: PlanServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    plan_server.reset()
    tmp = tmp_path_factory.mktemp("uninterrupted-http")
    child = Child(tmp, base_url=plan_server.server.url + "/v1")
    result = child.drive()
    assert child.points == HTTP_POINTS
    assert plan_server.steps == [0, 1, 2]
    assert result is not None
    return result


@pytest.mark.parametrize("kill", ["stream:0", "stream:1", "stream:2", "tool:chart", "saved:4", "tool:c"])
def test_a_run_against_an_http_server_killed_mid_stream_resumes_without_asking_again(
    kill: str, plan_server: PlanServer, uninterrupted_http: dict[str, Any], tmp_path: Path
) -> None:
    url = plan_server.server.url + "/v1"
    stalled_step = int(kill.removeprefix("stream:")) if kill.startswith("stream:") else None
    plan_server.reset(stall=stalled_step)
    killed = Child(tmp_path, base_url=url)
    if stalled_step is None:
        assert killed.drive(kill_at=kill) is None
    else:
        assert killed.drive(kill_on=plan_server.stalled) is None  # killed mid-response
    asked = list(plan_server.steps)
    result = Child(tmp_path, base_url=url).drive()
    assert result == uninterrupted_http
    # On the wire: the resumed run asks for the steps from the first one not
    # completed on: the one cut mid-stream again, the completed ones never.
    assert asked == list(range(len(asked)))
    first = asked[-1] if stalled_step is not None else len(asked)
    assert plan_server.steps[len(asked) :] == list(range(first, 3))
