"""Durable runs in one process: the run state as data, checkpoints, resume,
idempotency keys, the SQLite store and the step-runner seam
(agentcore/durable.py; docs/durable.md's guarantees table names these tests)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    File,
    FinishReason,
    LoopOptions,
    Message,
    Reasoning,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
    file_part,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.durable import (
    RUN_STATE_VERSION,
    CheckpointConflict,
    ReplayDiverged,
    RunState,
    SQLiteCheckpoints,
    StepRecord,
    fingerprint,
)
from agentcore.result import StepResult
from agentcore.testing import ScriptedModel
from agentcore.types import Request, Role, reasoning_part, text_part, tool_call_part, tool_result_part
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def call_step(*calls: ToolCall, usage: Usage | None = None) -> list[StreamPart]:
    return [
        *(StreamPart.tool_call_event(call) for call in calls),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, usage or Usage(input=10, output=2)),
    ]


def text_step(text: str, usage: Usage | None = None) -> list[StreamPart]:
    return [
        StreamPart.text_delta(text),
        StreamPart.step_finish(FinishReason.STOP, usage or Usage(input=20, output=3)),
    ]


class Counter:
    """A tool that counts its executions and remembers each call's idempotency key."""

    def __init__(self) -> None:
        self.keys: list[str] = []

        @tool
        def count(label: str, ctx: Context) -> str:
            """Count."""
            self.keys.append(ctx.idempotency_key)
            return f"counted {label}"

        self.tool = count


def two_step_script() -> list[Any]:
    return [
        call_step(ToolCall("c1", "count", '{"label": "x"}'), ToolCall("c2", "count", '{"label": "y"}')),
        text_step("done", Usage(input=30, output=4, cache_read=5)),
    ]


def test_the_run_state_round_trips_through_json_byte_for_byte() -> None:
    reasoning = Reasoning(
        text="hmm",
        signature="c2ln+/=",
        data="ZW5j",
        id="rs_1",
        format="anthropic",
        origin="api.x",
        provider_data='{"a":1}',
    )
    call = ToolCall("t1", "chart", '{"k": "\u00e9"}', provider_data='{"sig":"x"}', origin="api.x")
    result = ToolResult("t1", "chart", "a chart", False, (File("image/png", PNG, filename="c.png"),))
    history = (
        user_message("draw", file_part(PNG, media_type="image/png")),
        Message(Role.ASSISTANT, [reasoning_part(reasoning), text_part("ok"), tool_call_part(call)]),
        Message(Role.TOOL, [tool_result_part(result)]),
    )
    state = RunState(
        "r1",
        history,
        steps=[
            StepResult("ok", (call,), (result,), Usage(1, 2, 3, 4), FinishReason.TOOL_CALLS, (reasoning,))
        ],
        usage=Usage(1, 2, 3, 4),
        pending=(call,),
        results=(result,),
        awaiting_approval=("t1",),
        decisions={"t1": "not now", "t2": True},
        fingerprints=("ab" * 32,),
        finish_reason=FinishReason.APPROVAL_REQUIRED,
        output='{"v": 1}',
        output_tool=True,
        output_attempts=2,
        revision=7,
    )
    loaded = RunState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert loaded == state
    assert loaded.messages[0].files[0].data == PNG
    assert loaded.messages[1].reasoning[0] == reasoning


def test_a_run_state_of_version_1_loads() -> None:
    data = json.loads((FIXTURES / "run_state_v1.json").read_text(encoding="utf-8"))
    assert data["version"] == 1
    state = RunState.from_dict(data)
    assert state.run_id == "fixture-run"
    assert state.usage == Usage(input=110, output=9, cache_read=1)
    assert [call.id for call in state.pending] == ["c1"]
    assert state.messages[-1].tool_calls[0].name == "count"
    assert state.version == RUN_STATE_VERSION


def test_a_run_state_from_a_newer_agentcore_is_refused() -> None:
    with pytest.raises(ValueError, match="newer agentcore"):
        RunState.from_dict({"version": RUN_STATE_VERSION + 1, "run_id": "r", "messages": []})
    with pytest.raises(ConfigError, match="not an agentcore run state"):
        RunState.from_dict({"run_id": "r"})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "not an agentcore run state (version None)"),
        ({}, "not an agentcore run state (version None)"),
        ({"version": 1}, "not an agentcore run state: KeyError: 'run_id'"),
        (
            {"version": 1, "run_id": "r", "messages": [{"role": "boss", "content": []}]},
            "not an agentcore run state: ConfigError: not a message in Message.to_dict() form: "
            "ValueError: 'boss' is not a valid Role",
        ),
    ],
)
def test_a_malformed_run_state_is_one_config_error(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunState.from_dict(data)
    assert str(caught.value) == message


def test_a_step_record_round_trips() -> None:
    record = StepRecord(
        [
            reasoning_part(Reasoning(text="t", signature="s")),
            text_part("hi"),
            tool_call_part(ToolCall("a", "b")),
        ],
        Usage(3, 4),
        FinishReason.TOOL_CALLS,
        "f" * 64,
    )
    assert StepRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert record.text == "hi"
    assert [call.id for call in record.calls] == ["a"]


def test_checkpoints_are_saved_after_each_step_and_each_tool_call(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    saved: list[RunState] = []
    original = store.save

    def spy(state: RunState) -> None:
        original(state)
        saved.append(state)

    store.save = spy  # type: ignore[method-assign]  # spies on the saves the run makes
    counter = Counter()
    options = LoopOptions(
        model=ScriptedModel(two_step_script()),
        messages=[user_message("go")],
        tools=[counter.tool],
        run_id="r1",
        checkpoints=store,
    )
    result = generate(options)
    assert [s.revision for s in saved] == [1, 2, 3, 4, 5]
    assert [len(s.pending) for s in saved] == [2, 2, 2, 0, 0]
    assert [len(s.results) for s in saved] == [0, 1, 2, 0, 0]
    assert [len(s.steps) for s in saved] == [1, 1, 1, 1, 2]
    assert [s.finish_reason for s in saved] == [None, None, None, None, FinishReason.STOP]
    assert saved[-1].usage == result.usage == Usage(input=40, output=6, cache_read=5)
    assert len(saved[-1].fingerprints) == 2
    assert store.load("r1") == saved[-1]


def test_a_finished_run_returns_its_result_again_without_a_model_call(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    counter = Counter()
    first_model = ScriptedModel(two_step_script())
    options = LoopOptions(
        model=first_model, messages=[user_message("go")], tools=[counter.tool], run_id="r1", checkpoints=store
    )
    first = generate(options)
    idle = ScriptedModel([])
    again = run(LoopOptions(model=idle, tools=[counter.tool], run_id="r1", checkpoints=store))
    parts = list(again)
    result = again.result()
    assert idle.requests == []
    assert [p.kind for p in parts] == [StreamPartKind.FINISH]
    assert parts[0].total_usage == first.usage
    assert result == first
    assert len(counter.keys) == 2


def resumable_state(tmp_path: Path, *more: ToolCall) -> tuple[SQLiteCheckpoints, RunState]:
    """A store holding run "r1" killed after step 1 (which called ``count``
    for x, y and ``more``) and its first call."""
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    calls = (ToolCall("c1", "count", '{"label": "x"}'), ToolCall("c2", "count", '{"label": "y"}'), *more)
    first = (user_message("go"),)
    request = Request(messages=first)
    state = RunState(
        "r1",
        (*first, Message(Role.ASSISTANT, [tool_call_part(c) for c in calls])),
        steps=[StepResult("", calls, (), Usage(10, 2), FinishReason.TOOL_CALLS)],
        usage=Usage(10, 2),
        pending=calls,
        results=[ToolResult("c1", "count", "counted x")],
        fingerprints=[fingerprint(request)],
        revision=2,
    )
    store.save(state)
    return store, state


@pytest.mark.parametrize("parallel", [False, True])
def test_a_resumed_run_runs_no_completed_tool_call(tmp_path: Path, parallel: bool) -> None:
    store, _state = resumable_state(tmp_path, ToolCall("c3", "count", '{"label": "z"}'))
    counter = Counter()
    model = ScriptedModel([text_step("done", Usage(input=30, output=4))])
    result = generate(
        LoopOptions(
            model=model,
            messages=[user_message("go")],
            tools=[counter.tool],
            run_id="r1",
            checkpoints=store,
            parallel_tools=parallel,
        )
    )
    assert sorted(counter.keys) == ["r1:1:c2", "r1:1:c3"]  # c1's result was saved: it does not run
    assert [r.content for r in result.messages[2].tool_results] == ["counted x", "counted y", "counted z"]
    assert result.steps[0].tool_results == tuple(result.messages[2].tool_results)
    assert result.usage == Usage(input=40, output=6)  # the saved step's usage, then this one's


def test_a_resumed_run_sends_no_completed_step(tmp_path: Path) -> None:
    store, _state = resumable_state(tmp_path)
    counter = Counter()
    model = ScriptedModel([text_step("done", Usage(input=30, output=4))])
    steps: list[Usage] = []
    reader = run(
        LoopOptions(model=model, tools=[counter.tool], run_id="r1", checkpoints=store, on_step=steps.append)
    )
    kinds = [p.kind for p in reader]
    assert len(model.requests) == 1  # step 2 only
    assert [m.role for m in model.requests[0].messages] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    # The resumed reader gets what happens now: c2's result, step 2, the end.
    assert kinds == [
        StreamPartKind.TOOL_RESULT,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.STEP_FINISH,
        StreamPartKind.FINISH,
    ]
    assert steps == [Usage(input=30, output=4)]
    assert len(reader.result().steps) == 2


def test_resuming_with_other_messages_is_a_config_error(tmp_path: Path) -> None:
    store, _state = resumable_state(tmp_path)
    options = LoopOptions(
        model=ScriptedModel([]), messages=[user_message("something else")], run_id="r1", checkpoints=store
    )
    with pytest.raises(ConfigError, match="another conversation"):
        run(options)
    with pytest.raises(ConfigError, match="no saved state"):
        run(LoopOptions(model=ScriptedModel([]), run_id="unknown", checkpoints=store))


def test_loop_options_check_the_durable_fields(tmp_path: Path) -> None:
    model = ScriptedModel([])
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    with pytest.raises(ConfigError, match="needs a run_id"):
        LoopOptions(model=model, messages=[user_message("x")], checkpoints=store)
    with pytest.raises(ConfigError, match="at least one message"):
        LoopOptions(model=model, run_id="r")
    with pytest.raises(ConfigError, match="run_id"):
        LoopOptions(model=model, messages=[user_message("x")], run_id="")
    with pytest.raises(ConfigError, match="CheckpointStore"):
        LoopOptions(model=model, messages=[user_message("x")], run_id="r", checkpoints=object())  # type: ignore[arg-type]  # the wrong type is the point
    with pytest.raises(ConfigError, match="approvals"):
        LoopOptions(model=model, messages=[user_message("x")], approvals={"c1": 1})  # type: ignore[dict-item]  # the wrong type is the point


def test_each_tool_call_gets_a_stable_idempotency_key(tmp_path: Path) -> None:
    counter = Counter()
    options = LoopOptions(
        model=ScriptedModel(two_step_script()),
        messages=[user_message("go")],
        tools=[counter.tool],
        run_id="job-9",
    )
    generate(options)
    assert counter.keys == ["job-9:1:c1", "job-9:1:c2"]
    anonymous = Counter()
    generate(
        LoopOptions(
            model=ScriptedModel(two_step_script()), messages=[user_message("go")], tools=[anonymous.tool]
        )
    )
    assert anonymous.keys == ["", ""]


def test_the_usage_total_continues_after_a_resume(tmp_path: Path) -> None:
    store, state = resumable_state(tmp_path)
    model = ScriptedModel([text_step("done", Usage(input=30, output=4, cache_write=2))])
    result = generate(LoopOptions(model=model, tools=[Counter().tool], run_id="r1", checkpoints=store))
    assert result.usage == state.usage + Usage(input=30, output=4, cache_write=2)


def test_a_stale_process_cannot_overwrite_a_newer_checkpoint(tmp_path: Path) -> None:
    store, state = resumable_state(tmp_path)
    other = SQLiteCheckpoints(tmp_path / "runs.db")
    other.save(RunState("r1", state.messages, revision=5))
    with pytest.raises(CheckpointConflict, match="newer checkpoint"):
        store.save(RunState("r1", state.messages, revision=3))
    assert store.load("r1") == RunState("r1", state.messages, revision=5)
    # A run that loaded revision 2 fails at its first save, and leaves revision 5 alone.
    stale = _Stale(store, state)
    model = ScriptedModel([text_step("x")])
    with pytest.raises(RunError) as info:
        generate(LoopOptions(model=model, tools=[Counter().tool], run_id="r1", checkpoints=stale))
    assert isinstance(info.value.err, CheckpointConflict)
    assert store.load("r1") == RunState("r1", state.messages, revision=5)


class _Stale:
    """A store that hands out an old state (another process went further since)."""

    def __init__(self, store: SQLiteCheckpoints, state: RunState) -> None:
        self.store = store
        self.state = state

    def load(self, run_id: str) -> RunState | None:
        return self.state

    def save(self, state: RunState) -> None:
        self.store.save(state)


WRITER = """
import sys
from agentcore import user_message
from agentcore.durable import RunState, SQLiteCheckpoints
store = SQLiteCheckpoints(sys.argv[1])
name = sys.argv[2]
for revision in range(1, 41):
    store.save(RunState(name, (user_message(f"{name} {revision}"),), revision=revision))
print("ok")
"""


def test_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    SQLiteCheckpoints(path)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"run-{n}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out == "ok\n"
    store = SQLiteCheckpoints(path)
    assert sorted(store.run_ids()) == [f"run-{n}" for n in range(4)]
    for n in range(4):
        state = store.load(f"run-{n}")
        assert state is not None
        assert (state.revision, state.messages[0].text) == (40, f"run-{n} 40")
    store.delete("run-0")
    assert store.load("run-0") is None


def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "not.db"
    path.write_bytes(b"this is not an SQLite database, not at all" * 100)
    with pytest.raises(ConfigError, match="checkpoint database"):
        SQLiteCheckpoints(path)


class RecordingRunner:
    """A step runner that keeps what each step and call returned, by key,
    and (replaying) returns it without calling: as DBOS does."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}
        self.keys: list[str] = []

    def model_step(self, key: str, call: Callable[[], StepRecord]) -> StepRecord:
        self.keys.append(key)
        if key not in self.records:
            self.records[key] = call().to_dict()
        return StepRecord.from_dict(self.records[key])

    def tool_call(self, key: str, call: Callable[[], ToolResult]) -> ToolResult:
        self.keys.append(key)
        if key not in self.records:
            self.records[key] = call().to_dict()
        return ToolResult.from_dict(self.records[key])


def test_a_step_runner_sees_each_step_and_call_and_can_replay_them() -> None:
    runner = RecordingRunner()
    counter = Counter()
    options = LoopOptions(
        model=ScriptedModel(two_step_script()),
        messages=[user_message("go")],
        tools=[counter.tool],
        run_id="wf-1",
        step_runner=runner,
    )
    first = generate(options)
    assert runner.keys == ["wf-1:step:1", "wf-1:1:c1", "wf-1:1:c2", "wf-1:step:2"]
    # The replay: every step and call comes from the records; nothing runs, nothing streams again.
    idle = ScriptedModel([])
    reader = run(
        LoopOptions(
            model=idle, messages=[user_message("go")], tools=[counter.tool], run_id="wf-1", step_runner=runner
        )
    )
    kinds = [p.kind for p in reader]
    replayed = reader.result()
    assert idle.requests == []
    assert len(counter.keys) == 2
    assert kinds == [StreamPartKind.FINISH]
    assert replayed.messages == first.messages
    assert replayed.usage == first.usage


def test_a_replayed_step_for_another_request_is_refused() -> None:
    runner = RecordingRunner()
    generate(
        LoopOptions(
            model=ScriptedModel([text_step("hi")]),
            messages=[user_message("go")],
            run_id="wf-2",
            step_runner=runner,
        )
    )
    with pytest.raises(RunError) as info:
        generate(
            LoopOptions(
                model=ScriptedModel([]), messages=[user_message("other")], run_id="wf-2", step_runner=runner
            )
        )
    assert isinstance(info.value.err, ReplayDiverged)


def test_each_row_of_the_guarantees_table_names_tests_that_exist() -> None:
    from tests.test_durable_kill import POINTS

    page = (ROOT / "docs" / "durable.md").read_text(encoding="utf-8")
    table = page.split("## The guarantees", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 10
    for row in rows:
        named = re.findall(r"`(test_\w+\.py)::(test_\w+)(?:\[([^\]]+)\])?`", row.split(" | ")[-1])
        assert named, f"no test backs this row: {row}"
        for module, function, point in named:
            source = (ROOT / "tests" / module).read_text(encoding="utf-8")
            assert f"def {function}(" in source, f"{module}::{function} does not exist"
            assert not point or point in POINTS, f"{module}::{function}[{point}] is not a test id"


def test_a_resumed_run_shows_only_answered_calls_while_its_tools_run(tmp_path: Path) -> None:
    store, state = resumable_state(tmp_path)
    started, release = threading.Event(), threading.Event()

    @tool
    def count(label: str) -> str:
        """Count, once released."""
        started.set()
        assert release.wait(5)
        return f"counted {label}"

    reader = run(
        LoopOptions(model=ScriptedModel([text_step("done")]), tools=[count], run_id="r1", checkpoints=store)
    )
    assert started.wait(5)
    assert reader.messages == [state.messages[0]]  # not the assistant message whose calls still run
    release.set()
    assert [m.role for m in reader.result().messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]


def test_a_saved_state_that_cannot_be_read_is_a_config_error(tmp_path: Path) -> None:
    import sqlite3

    store = SQLiteCheckpoints(tmp_path / "runs.db")
    db = sqlite3.connect(tmp_path / "runs.db")
    with db:
        db.execute(
            "INSERT INTO agentcore_runs (run_id, revision, state, updated) VALUES (?, ?, ?, ?)",
            ("r1", 1, json.dumps({"version": 1, "run_id": "r1"}), 0.0),
        )
    db.close()
    with pytest.raises(ValueError, match="not an agentcore run state: KeyError"):
        store.load("r1")
    with pytest.raises(ConfigError, match="run 'r1': the saved state cannot be read"):
        run(LoopOptions(model=ScriptedModel([]), run_id="r1", checkpoints=store))


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_a_finished_structured_run_gives_its_output_again(tmp_path: Path, mode: str) -> None:
    from tests.test_structured_output import BAD, GOOD, OSLO, Weather

    def answer(text: str) -> list[StreamPart]:
        if mode == "tool":
            return call_step(ToolCall(f"f{len(text)}", "final_answer", text))
        return text_step(text)

    store = SQLiteCheckpoints(tmp_path / "runs.db")
    options: dict[str, Any] = {
        "output_type": Weather,
        "output_mode": mode,
        "run_id": "r1",
        "checkpoints": store,
    }
    first = generate(
        LoopOptions(
            model=ScriptedModel([answer(BAD), answer(GOOD)]), messages=[user_message("Oslo?")], **options
        )
    )
    assert first.output == OSLO
    state = store.load("r1")
    assert state is not None
    assert (state.output_tool, state.output_attempts) == (mode == "tool", 2)
    idle = ScriptedModel([])
    again = generate(LoopOptions(model=idle, **options))
    assert idle.requests == []
    assert again == first
