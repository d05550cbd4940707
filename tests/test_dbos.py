"""The DBOS integration with real processes and real databases.

* A run inside a DBOS workflow on SQLite, its process killed with SIGKILL
  mid-stream, mid-tool or between steps, is recovered by DBOS when the
  program starts again: the final history and usage equal an uninterrupted
  run's, every tool call that completed ran once (a counter file), and the
  run's DBOS stream ends with the same terminal part.
* Two worker processes on one Postgres share a queue of 20 runs; one is
  killed mid-run and started again (same executor id): every run finishes
  exactly once, with the same usage, and no completed tool call runs twice.
  The test starts its own Postgres cluster (initdb and pg_ctl in a temporary
  directory, on a free port) and skips, saying why, without the binaries.
* ``durable_run`` outside a workflow is a ConfigError; ``import agentcore``
  does not import dbos.

The child program is this module run as ``python -m tests.test_dbos``: it
declares the workflow, launches DBOS (which recovers what a killed process
left) and, at a chosen point, prints where it is and waits on its standard
input until the parent kills it: the two synchronise through the pipe.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, LoopOptions, Message, Role, StreamPart, ToolCall, Usage, tool, user_message
from agentcore.errors import ConfigError, ErrorClass, ModelError, RunError
from agentcore.types import FinishReason, Request

ROOT = Path(__file__).resolve().parent.parent
STEPS = 4
"""Model steps of a run: three call the ``record`` tool, the fourth answers."""
APP = "agentcore-test"
WORKFLOW = "agentcore_test_run"
QUEUE = "agentcore-test-runs"
KILL_AT = "AGENTCORE_TEST_KILL_AT"
COUNTER = "AGENTCORE_TEST_COUNTER"
FAIL_AT = "AGENTCORE_TEST_FAIL_AT"
"""A step number: that model step fails with an authentication error."""
PARALLEL = "AGENTCORE_TEST_PARALLEL"
"""Set: each tool step calls ``record`` twice and the run has ``parallel_tools``."""


# --- the child program -------------------------------------------------------


def kill_point(name: str) -> None:
    """At the chosen point, say so on stdout and wait until the parent kills
    this process. Every thread that gets there waits; the first to create
    the marker file (when one is given) says so."""
    if os.environ.get(KILL_AT) == name:
        marker = os.environ.get("AGENTCORE_TEST_ONCE")
        try:
            if marker:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            print(f"at {name}", flush=True)
        except FileExistsError:
            pass
        sys.stdin.readline()
        raise SystemExit("the parent closed the pipe without killing this process")


class CountingModel:
    """Step N streams three text deltas, then (N < STEPS) calls ``record``
    with ``{"n": N}``; usage 100*N in and 7*N out. N is read from the request
    (the tool messages so far), so a replay asks for the same step."""

    model_id = "counting"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        step = 1 + sum(1 for message in request.messages if message.role is Role.TOOL)
        kill_point(f"between:{step}")
        if os.environ.get(FAIL_AT) == str(step):
            raise ModelError(ErrorClass.AUTH, message="invalid key", status=401)
        for index, text in enumerate((f"Step {step}", " is", " here.")):
            yield StreamPart.text_delta(text)
            if index == 1:
                kill_point(f"stream:{step}")
        usage = Usage(input=100 * step, output=7 * step)
        if step < STEPS:
            for suffix in ("-a", "-b") if os.environ.get(PARALLEL) else ("",):
                yield StreamPart.tool_call_event(
                    ToolCall(f"call-{step}{suffix}", "record", json.dumps({"n": step}))
                )
            yield StreamPart.step_finish(FinishReason.TOOL_CALLS, usage)
        else:
            yield StreamPart.step_finish(FinishReason.STOP, usage)


def count_call(n: int, ctx: Context) -> str:
    """Append to the counter file when the call starts and when it completes.

    Args:
        n: the step number.
    """
    with open(os.environ[COUNTER], "a", encoding="utf-8") as counter:
        counter.write(f"start {ctx.idempotency_key} {os.getpid()}\n")
    kill_point(f"tool:{n}")
    with open(os.environ[COUNTER], "a", encoding="utf-8") as counter:
        counter.write(f"done {ctx.idempotency_key} {os.getpid()}\n")
    return f"recorded {n}"


record = tool(count_call, name="record")
guarded = tool(count_call, name="record", requires_approval=lambda arguments: arguments["n"] == 2)
"""``record`` asking for approval before its call of step 2."""


def child(argv: list[str]) -> None:
    """``run URL RUN_ID``: run one workflow (or attach to the one DBOS
    recovered) and print its result and stream as JSON. ``worker URL
    EXECUTOR``: serve the queue until stdin closes."""
    from dbos import DBOS, SetWorkflowID

    from agentcore.integrations.dbos import durable_run, read_parts

    mode, url, name = argv
    DBOS(
        config={
            "name": APP,
            "system_database_url": url,
            "executor_id": name if mode == "worker" else "local",
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.01,
        }
    )

    @DBOS.workflow(name=WORKFLOW)
    def agent_run(question: str) -> dict[str, Any]:
        options = LoopOptions(
            model=CountingModel(),
            messages=[user_message(question)],
            tools=[record],
            parallel_tools=bool(os.environ.get(PARALLEL)),
        )
        result = durable_run(options)
        return {
            "text": result.text,
            "usage": result.usage.to_dict(),
            "messages": [message.to_dict() for message in result.messages],
        }

    @DBOS.workflow(name="agentcore_test_ask")
    def ask(messages: list[dict[str, Any]], approvals: dict[str, bool | str] | None) -> dict[str, Any]:
        options = LoopOptions(
            model=CountingModel(),
            messages=[Message.from_dict(message) for message in messages],
            tools=[guarded],
            approvals=approvals,
        )
        result = durable_run(options)
        return {
            "finish_reason": result.finish_reason.value,
            "pending": [call.id for call in result.pending],
            "text": result.text,
            "usage": result.usage.to_dict(),
            "messages": [message.to_dict() for message in result.messages],
        }

    DBOS.launch()
    if mode == "approval":
        with SetWorkflowID(f"{name}-asked"):
            asked = DBOS.start_workflow(ask, [user_message("Count.").to_dict()], None).get_result()
        with SetWorkflowID(f"{name}-approved"):
            approved = DBOS.start_workflow(ask, asked["messages"], {"call-2": True}).get_result()
        print(json.dumps({"asked": asked, "approved": approved}), flush=True)
    elif mode == "run":
        with SetWorkflowID(name):
            handle = DBOS.start_workflow(agent_run, "Count the steps.")
        try:
            result = handle.get_result()
        except RunError as exc:  # recorded by DBOS, raised again here
            result = {"error": str(exc), "cause": type(exc.err).__name__, "usage": exc.usage.to_dict()}
        parts = list(read_parts(name, polling_interval=0.01))
        print(json.dumps({"result": result, "parts": parts}), flush=True)
    else:
        DBOS.register_queue(QUEUE, worker_concurrency=3, polling_interval_sec=0.05)
        print("ready", flush=True)
        sys.stdin.read()
    DBOS.destroy(workflow_completion_timeout_sec=0)


# --- the parent --------------------------------------------------------------


needs_dbos_sqlite = pytest.mark.skipif(
    sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42),
    reason="DBOS on SQLite under Python 3.12+ needs SQLite 3.42 or later (its schema uses "
    f"unixepoch('subsec')); this Python links SQLite {sqlite3.sqlite_version}",
)
"""DBOS chooses its SQLite schema by the Python version, not by the SQLite it finds."""


def start_child(
    args: list[str],
    counter: Path,
    kill_at: str = "",
    once: Path | None = None,
    parallel: bool = False,
    fail_at: str = "",
) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        COUNTER: str(counter),
        KILL_AT: kill_at,
        PARALLEL: "1" * parallel,
        FAIL_AT: fail_at,
    }
    if once is not None:
        env["AGENTCORE_TEST_ONCE"] = str(once)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.test_dbos", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 120) -> str:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return out


def reach(process: subprocess.Popen[str], line: str) -> None:
    """Wait for the child to say ``line`` on stdout."""
    assert process.stdout is not None
    said = process.stdout.readline()
    if said.strip() != line:
        process.kill()
        _, err = process.communicate(timeout=30)
        pytest.fail(f"the child said {said!r} instead of {line!r}: {err}")


def kill_when(process: subprocess.Popen[str], point: str) -> None:
    """Wait for the child to reach ``point``, then SIGKILL it."""
    reach(process, f"at {point}")
    kill(process)


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)  # closes the pipes
    assert process.returncode == -signal.SIGKILL


def counts(counter: Path) -> dict[str, collections.Counter[str]]:
    """``{"start": Counter(key), "done": Counter(key), "pids": Counter(pid)}``
    from the counter file (``pids`` counts the calls each process completed)."""
    found: dict[str, collections.Counter[str]] = {
        "start": collections.Counter(),
        "done": collections.Counter(),
        "pids": collections.Counter(),
    }
    for line in counter.read_text(encoding="utf-8").splitlines():
        event, key, pid = line.split(" ")
        found[event][key] += 1
        if event == "done":
            found["pids"][pid] += 1
    return found


def one_run(tmp: Path, run_id: str, kill_at: str = "", parallel: bool = False) -> tuple[dict[str, Any], Path]:
    """Run ``run_id`` on a fresh SQLite database, killed at ``kill_at`` and
    then started again when given; its printed result and the counter file."""
    tmp.mkdir(exist_ok=True)
    url = f"sqlite:///{tmp / 'dbos.sqlite'}"
    counter = tmp / "counter"
    counter.touch()
    if kill_at:
        # The marker file lets one thread say where it is: parallel calls reach the point together.
        kill_when(start_child(["run", url, run_id], counter, kill_at, tmp / "killed-once", parallel), kill_at)
    return json.loads(finish(start_child(["run", url, run_id], counter, parallel=parallel))), counter


pytest.importorskip("dbos")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    printed, counter = one_run(tmp_path_factory.mktemp("uninterrupted"), "run-1")
    assert counts(counter)["done"] == {f"run-1:{n}:call-{n}": 1 for n in range(1, STEPS)}
    return printed


@needs_dbos_sqlite
def test_an_uninterrupted_run_streams_every_part_and_ends_with_its_total(
    uninterrupted: dict[str, Any],
) -> None:
    result, parts = uninterrupted["result"], uninterrupted["parts"]
    assert result["text"] == f"Step {STEPS} is here."
    total = {"input": 100 * 10, "output": 7 * 10, "cache_read": 0, "cache_write": 0}
    assert result["usage"] == total
    assert [m["role"] for m in result["messages"]] == [
        "user",
        *["assistant", "tool"] * (STEPS - 1),
        "assistant",
    ]
    kinds = [part["kind"] for part in parts]
    assert kinds.count("step-start") == STEPS
    assert kinds.count("tool-result") == STEPS - 1
    assert "".join(p["text"] for p in parts if p["kind"] == "text-delta") == "".join(
        f"Step {n} is here." for n in range(1, STEPS + 1)
    )
    assert parts[-1] == {"kind": "finish", "finish_reason": "stop", "total_usage": total}


@needs_dbos_sqlite
@pytest.mark.parametrize("point", ["stream:2", "tool:2", "between:3", "stream:1", "tool:3"])
def test_a_run_killed_mid_way_is_recovered_with_the_same_history_and_usage(
    point: str, tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    printed, counter = one_run(tmp_path, "run-1", point)
    assert printed["result"] == uninterrupted["result"]
    assert printed["parts"][-1] == uninterrupted["parts"][-1]
    found = counts(counter)
    # Every call completed once; the one the kill interrupted started twice.
    assert found["done"] == {f"run-1:{n}:call-{n}": 1 for n in range(1, STEPS)}
    started_twice = {key for key, count in found["start"].items() if count == 2}
    assert started_twice == ({f"run-1:{point[5:]}:call-{point[5:]}"} if point.startswith("tool") else set())
    # A model step the kill cut off (streaming, or just begun) streams again
    # after a second step-start of its number.
    starts = collections.Counter(p["step"] for p in printed["parts"] if p["kind"] == "step-start")
    again = None if point.startswith("tool") else int(point.split(":")[1])
    assert starts == {n: 2 if n == again else 1 for n in range(1, STEPS + 1)}


@needs_dbos_sqlite
def test_parallel_tool_calls_killed_mid_tool_replay_in_call_order(tmp_path: Path) -> None:
    """Each call's DBOS step id is reserved in call order: the recovered run
    gets every recorded result back for its own call (a mix-up would be a
    ReplayDiverged), whichever thread finished first."""
    plain, _ = one_run(tmp_path / "plain", "run-p", parallel=True)
    printed, counter = one_run(tmp_path / "killed", "run-p", "tool:2", parallel=True)
    assert printed["result"] == plain["result"]
    assert plain["result"]["messages"][2]["content"][0]["tool_result"]["tool_call_id"] == "call-1-a"
    found = counts(counter)
    keys = {f"run-p:{n}:call-{n}{suffix}" for n in range(1, STEPS) for suffix in ("-a", "-b")}
    assert found["done"] == dict.fromkeys(keys, 1)
    assert {key for key, count in found["start"].items() if count > 1} <= {
        "run-p:2:call-2-a",
        "run-p:2:call-2-b",
    }


@needs_dbos_sqlite
def test_a_failed_run_is_recorded_and_its_run_error_raised_again_in_another_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    counter = tmp_path / "counter"
    counter.touch()
    first = json.loads(finish(start_child(["run", url, "run-f"], counter, fail_at="2")))
    # Started again without the failure, the program attaches to the recorded outcome.
    again = json.loads(finish(start_child(["run", url, "run-f"], counter)))
    expected = {
        "error": "run error: authentication failed: invalid key (HTTP 401)",
        "cause": "ModelError",
        "usage": {"input": 100, "output": 7, "cache_read": 0, "cache_write": 0},
    }
    assert first["result"] == again["result"] == expected
    assert first["parts"][-1]["kind"] == "error"
    assert first["parts"][-1]["status"] == 401
    assert counts(counter)["done"] == {"run-f:1:call-1": 1}


@needs_dbos_sqlite
def test_a_run_waiting_for_approval_goes_on_in_a_second_workflow_with_the_decision(tmp_path: Path) -> None:
    """A durable run that ends with approval-required returns its pending
    calls; a second workflow, given the history and the decision, runs the
    approved call once and finishes the run."""
    counter = tmp_path / "counter"
    counter.touch()
    printed = json.loads(
        finish(start_child(["approval", f"sqlite:///{tmp_path / 'db.sqlite'}", "run-q"], counter))
    )
    asked, approved = printed["asked"], printed["approved"]
    assert asked["finish_reason"] == "approval-required"
    assert asked["pending"] == ["call-2"]
    assert asked["usage"] == {"input": 300, "output": 21, "cache_read": 0, "cache_write": 0}  # steps 1 and 2
    assert approved["finish_reason"] == "stop"
    assert approved["text"] == f"Step {STEPS} is here."
    assert approved["usage"] == {
        "input": 700,
        "output": 49,
        "cache_read": 0,
        "cache_write": 0,
    }  # steps 3 and 4
    found = counts(counter)
    # The second run counts its steps from the history it was given: the
    # approved call belongs to no step of its own (0), step 3 is its first.
    assert found["done"] == {
        "run-q-asked:1:call-1": 1,
        "run-q-approved:0:call-2": 1,
        "run-q-approved:1:call-3": 1,
    }


def test_durable_run_outside_a_workflow_is_a_config_error() -> None:
    from agentcore.integrations.dbos import durable_run

    options = LoopOptions(model=CountingModel(), messages=[user_message("hi")])
    with pytest.raises(ConfigError, match="inside a DBOS workflow"):
        durable_run(options)


def test_each_row_of_the_dbos_guarantees_table_names_tests_that_exist() -> None:
    page = (ROOT / "docs" / "durable.md").read_text(encoding="utf-8")
    table = page.split("### What DBOS guarantees here", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 8
    for row in rows:
        named = re.findall(r"`(test_\w+\.py)::(test_\w+)`", row.split(" | ")[-1])
        assert named, f"no test backs this row: {row}"
        for module, function in named:
            source = (ROOT / "tests" / module).read_text(encoding="utf-8")
            assert f"def {function}(" in source, f"{module}::{function} does not exist"


def test_import_agentcore_does_not_import_dbos() -> None:
    code = "import sys, agentcore, agentcore.durable; assert 'dbos' not in sys.modules, 'dbos imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


RUNS = 20


def test_two_workers_on_postgres_share_a_queue_and_finish_every_run_once_after_one_is_killed(
    postgres: str, tmp_path: Path
) -> None:
    from dbos import DBOSClient, WorkflowHandle

    counter, once = tmp_path / "counter", tmp_path / "killed-once"
    counter.touch()
    first = start_child(["worker", postgres, "worker-a"], counter, "tool:2", once)
    reach(first, "ready")
    client = DBOSClient(system_database_url=postgres)
    workers: list[subprocess.Popen[str]] = []
    try:
        handles: list[WorkflowHandle[dict[str, Any]]] = [
            client.enqueue(
                {"queue_name": QUEUE, "workflow_name": WORKFLOW, "workflow_id": f"run-{i}"}, "Count."
            )
            for i in range(RUNS)
        ]
        # The first worker stops in the middle of its runs' second tool calls
        # (up to its limit of 3 runs); the second joins and takes the other
        # runs from the queue; then the first is killed.
        reach(first, "at tool:2")
        other = start_child(["worker", postgres, "worker-b"], counter)
        workers.append(other)
        reach(other, "ready")
        kill(first)
        # Started again with the same executor id, it puts the killed worker's runs back on the queue.
        again = start_child(["worker", postgres, "worker-a"], counter)
        workers.append(again)
        reach(again, "ready")
        results = [handle.get_result() for handle in handles]
        statuses = {w.workflow_id: w.status for w in client.list_workflows()}
    finally:
        client.destroy()
        for worker in workers:
            finish(worker)  # closes its stdin: the worker shuts down
    assert statuses == {f"run-{i}": "SUCCESS" for i in range(RUNS)}
    total = {"input": 100 * 10, "output": 7 * 10, "cache_read": 0, "cache_write": 0}
    assert all(result["usage"] == total for result in results)
    found = counts(counter)
    # The killed worker had completed calls before it was killed: both shared the queue.
    assert set(found["pids"]) >= {str(first.pid), str(workers[0].pid)}
    expected = {f"run-{i}:{n}:call-{n}": 1 for i in range(RUNS) for n in range(1, STEPS)}
    assert found["done"] == expected
    # Only the calls the kill interrupted (the killed worker's second calls) started twice.
    twice = {key for key, count in found["start"].items() if count == 2}
    assert 1 <= len(twice) <= 3
    assert all(key.endswith(":2:call-2") for key in twice)
    assert max(found["start"].values()) == 2


if __name__ == "__main__":
    child(sys.argv[1:])
