"""Conversation sessions (agentcore.sessions, LoopOptions.session) on SQLite and Postgres.

* 20 runs at once on one session, in threads and in processes: every turn
  stored exactly once, whole and in order, and each run loaded every turn
  stored before it (the runs were serialised).
* A process killed inside the transaction that appends a turn (or replaces
  the conversation) leaves the conversation as it was, and the session's
  lock free.
* Reasoning, files and server-tool items come back byte for byte: the
  loaded history gives the adapter's request body the original gives.
* pop, clear, messages, session_ids; a failed run, or one a guardrail
  stopped, stores nothing; the wait for a held session ends with the run's
  cancel or deadline, or with SessionLocked after ``lock_timeout``; a
  history policy's compacted history is what is stored; a run that waits
  for approval is stored and continued; agentcore.aio; a durable run killed
  mid-way and resumed loads and stores once, and is refused on a
  conversation it did not start from.

The Postgres tests use tests/conftest.py's throwaway cluster (Debian's
initdb and pg_ctl) and skip only where those binaries are missing.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    DeadlineExceeded,
    File,
    FinishReason,
    LoopOptions,
    ManualClock,
    Message,
    Reasoning,
    RunError,
    ToolCall,
    ToolResult,
    generate,
    run,
    user_message,
)
from agentcore.compaction import SlidingWindow
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic.request import request_body
from agentcore.sessions import BaseSession, Session, SessionLocked, SQLiteSession, Turn
from agentcore.testing import ScriptedModel, TestModel
from agentcore.types import (
    ProviderItem,
    Role,
    file_part,
    provider_item_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)
from tests.conftest import free_port, wait_for_threads
from tests.loop_helpers import together
from tests.session_child import note

ROOT = Path(__file__).resolve().parent.parent
RUNS = 20
ORIGIN = "api.anthropic.com"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """``(kind, target)``: an SQLite file, or a database of the module's Postgres cluster."""
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "sessions.db")
    url: str = request.getfixturevalue("module_postgres")
    return "postgres", url


def open_session(store: tuple[str, str], session_id: str, **options: Any) -> BaseSession:
    kind, target = store
    if kind == "sqlite":
        return SQLiteSession(target, session_id, **options)
    from agentcore.integrations.postgres import PostgresSession

    return PostgresSession(target, session_id, **options)


def unique(name: str) -> str:
    """A session id of its own for this test (the Postgres cluster is shared by the module;
    not ``id(object())``, which a later test gets again once the object is freed)."""
    return f"{name}-{uuid.uuid4().hex}"


def child(store: tuple[str, str], session_id: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.session_child", *store, session_id, *args],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out


def reach(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdout is not None
    said = process.stdout.readline().strip()
    if said != line:
        process.kill()
        pytest.fail(f"the child said {said!r} instead of {line!r}: {process.communicate(timeout=30)[1]}")


def kill(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.communicate(timeout=30)
    assert process.returncode == -9


def asked(turn: Turn) -> str:
    """The question that opened a turn."""
    return turn.messages[0].text


def assert_whole_turns(turns: Sequence[Turn], questions: set[str]) -> None:
    """Each question's turn is there exactly once, whole (user, call, result,
    answer, in order) and contiguous, and nothing else is."""
    assert sorted(asked(turn) for turn in turns) == sorted(questions)
    assert len({turn.id for turn in turns}) == len(turns)
    for turn in turns:
        roles = [message.role for message in turn.messages]
        assert roles == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
        [call] = turn.messages[1].tool_calls
        assert turn.messages[2].tool_results[0].tool_call_id == call.id


def one_run(session: Session, question: str, model: Any = None) -> list[Message]:
    result = generate(
        LoopOptions(
            model=model or TestModel(), tools=[note], messages=[user_message(question)], session=session
        )
    )
    return list(result.messages)


# --- concurrency ---------------------------------------------------------------------


def test_twenty_runs_in_threads_on_one_session_store_every_turn_once_in_order(store: tuple[str, str]) -> None:
    session = open_session(store, unique("threads"))
    seen: dict[str, int] = {}

    def ask(i: int) -> None:
        seen[f"q{i}"] = len(one_run(session, f"q{i}"))

    together(RUNS, ask)
    turns = session.turns()
    assert_whole_turns(turns, {f"q{i}" for i in range(RUNS)})
    # Serialised: the run that stored turn n loaded the n turns before it.
    assert [seen[asked(turn)] for turn in turns] == [4 * (n + 1) for n in range(RUNS)]


def test_twenty_runs_in_four_processes_on_one_session_store_every_turn_once(store: tuple[str, str]) -> None:
    session_id = unique("processes")
    session = open_session(store, session_id)
    children = [child(store, session_id, "runs", f"p{p}", "5") for p in range(4)]
    for process in children:
        reach(process, "ready")
    for process in children:  # every child starts its runs now
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    seen = sorted(int(line) for process in children for line in finish(process).split())
    turns = session.turns()
    assert_whole_turns(turns, {f"p{p}-{k}" for p in range(4) for k in range(5)})
    # Each process's own runs were stored in the order it made them.
    for p in range(4):
        mine = [asked(turn) for turn in turns if asked(turn).startswith(f"p{p}-")]
        assert mine == [f"p{p}-{k}" for k in range(5)]
    # Serialised: each run loaded every turn stored before its own, whichever process stored it.
    assert seen == [4 * (n + 1) for n in range(RUNS)]


@pytest.mark.parametrize("write", ["crash", "replace"])
def test_a_process_killed_inside_the_append_leaves_the_old_conversation_and_the_lock_free(
    store: tuple[str, str], write: str
) -> None:
    session_id = unique("crash")
    session = open_session(store, session_id, lock_timeout=0)
    one_run(session, "before")
    before = session.turns()
    process = child(store, session_id, write, "lost")
    reach(process, "at commit")
    # The child holds the session: a run now would wait; with lock_timeout=0 it says so.
    with pytest.raises(RunError) as held:
        one_run(session, "meanwhile")
    assert isinstance(held.value.err, SessionLocked)
    kill(process)
    assert session.turns() == before
    one_run(session, "after")  # the lock is free (lock_timeout=0: no wait at all)
    assert [asked(turn) for turn in session.turns()] == ["before", "after"]


# --- what is stored ------------------------------------------------------------------


def rich_history() -> list[Message]:
    """A history with Anthropic reasoning (signature), an image, a server
    tool's call and result (provider items), and a tool call with its result."""
    reasoning = Reasoning(text="hmm", signature="c2ln+/=", format="anthropic", origin=ORIGIN)
    search = ProviderItem(
        "server_tool_use",
        '{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"Paris"}}',
        "anthropic",
        ORIGIN,
    )
    found = ProviderItem(
        "web_search_tool_result",
        '{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[]}',
        "anthropic",
        ORIGIN,
    )
    call = ToolCall("toolu_1", "chart", '{"k": "\u00e9"}')
    result = ToolResult("toolu_1", "chart", "a chart", False, (File("image/png", PNG, filename="c.png"),))
    return [
        user_message("draw this", file_part(PNG, media_type="image/png")),
        Message(
            Role.ASSISTANT,
            [
                reasoning_part(reasoning),
                provider_item_part(search),
                provider_item_part(found),
                text_part("ok"),
                tool_call_part(call),
            ],
        ),
        Message(Role.TOOL, [tool_result_part(result)]),
        Message(Role.ASSISTANT, [text_part("done")]),
    ]


def test_reasoning_files_and_server_tool_items_round_trip_byte_for_byte(store: tuple[str, str]) -> None:
    from agentcore.types import Request

    session = open_session(store, unique("exact"))
    history = rich_history()
    session.write(0, [Turn("t1", history)])
    loaded = session.messages()
    assert loaded == history
    assert loaded[0].files[0].data == PNG
    sent = request_body(Request(messages=history), "claude-sonnet-4-5", origin=ORIGIN)
    again = request_body(Request(messages=loaded), "claude-sonnet-4-5", origin=ORIGIN)
    assert again == sent
    assert sent["messages"][1]["content"][0]["signature"] == "c2ln+/="


def test_pop_clear_messages_and_session_ids(store: tuple[str, str]) -> None:
    name = unique("ops")
    first, other = open_session(store, name), open_session(store, name + "-other")
    one_run(first, "one")
    one_run(first, "two")
    one_run(other, "elsewhere")
    assert [m.text for m in first.messages() if m.role is Role.USER] == ["one", "two"]
    assert {name, name + "-other"} <= set(first.session_ids())
    popped = first.pop()
    assert popped is not None
    assert asked(popped) == "two"
    assert len(popped.messages) == 4
    assert [asked(turn) for turn in first.turns()] == ["one"]
    # The next run continues from the conversation without the popped turn.
    assert len(one_run(first, "three")) == 8
    first.clear()
    assert first.messages() == []
    assert first.pop() is None
    assert name not in first.session_ids()
    assert [asked(turn) for turn in other.turns()] == ["elsewhere"]


def test_a_failed_run_stores_nothing_and_a_finished_one_its_turn(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "s.db", "s")
    one_run(session, "kept")
    before = session.turns()
    failing = ScriptedModel([ModelError(ErrorClass.AUTH, message="bad key")])
    with pytest.raises(RunError) as failed:
        one_run(session, "lost", failing)
    assert failed.value.finish_reason is FinishReason.ERROR
    # The history up to the failure is the caller's: the stored turns and the new question.
    assert [m.text for m in failed.value.messages if m.role is Role.USER] == ["kept", "lost"]
    assert session.turns() == before
    # The model was sent the stored conversation, then the new turn.
    assert [m.text for m in failing.requests[0].messages if m.role is Role.USER] == ["kept", "lost"]


class Watched:
    """A session that says when a run starts waiting for its lock, and whether it got it."""

    def __init__(self, inner: BaseSession) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.waiting = threading.Event()
        self.held = False

    @contextlib.contextmanager
    def lock(self, ctx: Context) -> Iterator[None]:
        self.waiting.set()
        with self.inner.lock(ctx):
            self.held = True
            yield

    def turns(self) -> list[Turn]:
        return self.inner.turns()

    def write(self, keep: int, turns: Sequence[Turn]) -> None:
        self.inner.write(keep, turns)


@pytest.mark.parametrize("how", ["close", "deadline"])
def test_a_cancel_or_deadline_ends_the_wait_for_a_held_session_and_nothing_is_stored(
    store: tuple[str, str], how: str
) -> None:
    inner = open_session(store, unique("cancel"))
    watched = Watched(inner)
    model = ScriptedModel([])
    clock = ManualClock()
    ctx = Context(timeout=5, clock=clock)
    with inner.lock(Context()):
        reader = run(LoopOptions(model=model, messages=[user_message("wait")], session=watched), ctx)
        assert watched.waiting.wait(60)
        if how == "close":
            reader.close()  # cancels the run
        else:
            clock.advance(5)  # the run's deadline passes
        with pytest.raises(RunError) as ended:
            reader.result()
        assert wait_for_threads("agentcore-stream", 60) == 0  # the worker is done with the session
    assert ended.value.finish_reason is FinishReason.CANCELED
    assert isinstance(ended.value.err, DeadlineExceeded) == (how == "deadline")
    assert not watched.held
    assert model.requests == []
    assert inner.turns() == []


def test_lock_timeout_turns_a_long_wait_into_session_locked(store: tuple[str, str]) -> None:
    session = open_session(store, unique("timeout"), lock_timeout=0)
    with session.lock(Context()):
        reader = run(LoopOptions(model=TestModel(), messages=[user_message("x")], session=session))
        parts = list(reader)
        with pytest.raises(RunError) as ended:
            reader.result()
        with concurrent.futures.ThreadPoolExecutor(1) as other:  # another thread: this one holds it
            assert isinstance(other.submit(session.pop).exception(60), SessionLocked)
    assert isinstance(ended.value.err, SessionLocked)
    assert ended.value.err.session_id == session.session_id
    assert parts[-1].finish_reason is FinishReason.ERROR
    assert session.turns() == []


def test_the_stored_conversation_is_the_one_a_history_policy_compacted(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "s.db", "s")
    for question in ("one", "two", "three"):
        result = generate(
            LoopOptions(
                model=TestModel(),
                tools=[note],
                messages=[user_message(question)],
                session=session,
                history_policy=SlidingWindow(max_tokens=120),
            )
        )
    assert session.messages() == list(result.messages)
    assert len(result.full_messages) > len(result.messages)
    turns = session.turns()
    # The turns of the runs before, less what the window took, then the last run's whole turn.
    assert asked(turns[-1]) == "three"
    assert len(turns[-1].messages) == 4
    assert sum(len(turn.messages) for turn in turns) <= 6 + 4
    popped = session.pop()
    assert popped is not None
    assert asked(popped) == "three"


def test_options_a_session_refuses(tmp_path: Path) -> None:
    from agentcore.durable import DirectRunner

    session = SQLiteSession(tmp_path / "s.db", "s")
    with pytest.raises(ConfigError, match="step_runner"):
        LoopOptions(
            model=TestModel(), messages=[user_message("x")], session=session, step_runner=DirectRunner()
        )
    with pytest.raises(ConfigError, match="session"):
        LoopOptions(model=TestModel(), messages=[user_message("x")], session="s")  # type: ignore[arg-type]  # a str is no session
    with pytest.raises(ConfigError, match="lock_timeout"):
        SQLiteSession(tmp_path / "s.db", "s", lock_timeout=-1)
    with pytest.raises(RunError) as empty:
        generate(LoopOptions(model=TestModel(), session=session))
    assert isinstance(empty.value.err, ConfigError)
    assert "nothing to run" in str(empty.value.err)


def test_a_durable_run_killed_mid_way_and_resumed_loads_once_and_stores_once(tmp_path: Path) -> None:
    store = ("sqlite", str(tmp_path / "sessions.db"))
    checkpoints = str(tmp_path / "runs.db")
    session = open_session(store, "durable")
    one_run(session, "earlier")
    killed = child(store, "durable", "durable", checkpoints, "1")
    reach(killed, "at tool")
    kill(killed)
    assert [asked(turn) for turn in session.turns()] == ["earlier"]
    # Resumed: the history is the earlier turn once, then the run's own turn.
    assert finish(child(store, "durable", "durable", checkpoints, "0")).strip() == "8"
    turns = session.turns()
    assert [turn.id for turn in turns[1:]] == ["r1"]
    assert [m.role for m in turns[1].messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    # Run again, the finished run gives its result again and stores nothing more.
    assert finish(child(store, "durable", "durable", checkpoints, "0")).strip() == "8"
    assert session.turns() == turns


def waiting_for_approval(tmp_path: Path) -> tuple[SQLiteSession, Any, ToolCall]:
    """A session whose one turn ended approval-required: the session, the tool
    that needs approval (``delete``) and its waiting call."""
    from agentcore import tool

    @tool(requires_approval=True)
    def delete(name: str) -> str:
        """Delete a file."""
        return f"deleted {name}"

    session = SQLiteSession(tmp_path / "s.db", "s")
    asking = generate(
        LoopOptions(model=TestModel(), tools=[delete], messages=[user_message("tidy up")], session=session)
    )
    assert asking.finish_reason is FinishReason.APPROVAL_REQUIRED
    [call] = asking.pending
    return session, delete, call


def test_a_run_that_waits_for_approval_is_stored_and_the_next_run_continues_it(tmp_path: Path) -> None:
    session, delete, call = waiting_for_approval(tmp_path)
    assert session.messages()[-1].tool_calls == [call]
    done = generate(
        LoopOptions(model=TestModel(), tools=[delete], session=session, approvals={call.id: True})
    )
    assert done.finish_reason is FinishReason.STOP
    turns = session.turns()
    assert [len(turn.messages) for turn in turns] == [2, 2]  # question and calls; result and answer
    assert turns[1].messages[0].tool_results[0].content == "deleted " + json.loads(call.input)["name"]
    assert session.messages() == list(done.messages)
    # pop() undoes the whole user turn: the question, the calls and the approved continuation.
    popped = session.pop()
    assert popped == Turn(turns[0].id, [*turns[0].messages, *turns[1].messages])
    assert session.turns() == []


def test_an_asyncio_consumer_runs_on_a_session(tmp_path: Path) -> None:
    import asyncio

    from agentcore.aio import arun

    session = SQLiteSession(tmp_path / "s.db", "s")

    async def ask(question: str) -> int:
        async with arun(
            LoopOptions(model=TestModel(), messages=[user_message(question)], session=session)
        ) as r:
            return len((await r.result()).messages)

    async def both() -> list[int]:
        return list(await asyncio.gather(ask("a"), ask("b")))

    assert sorted(asyncio.run(both())) == [2, 4]
    assert sorted(asked(turn) for turn in session.turns()) == ["a", "b"]


def test_an_unreachable_postgres_is_a_config_error() -> None:
    pytest.importorskip("psycopg")
    from agentcore.integrations.postgres import PostgresSession

    with pytest.raises(ConfigError, match="cannot use the session database"):
        PostgresSession(f"postgresql://nobody@127.0.0.1:{free_port()}/none", "s", connect_timeout=1)


def test_import_agentcore_does_not_import_psycopg_or_the_postgres_store() -> None:
    code = (
        "import sys, agentcore, agentcore.sessions; "
        "assert 'psycopg' not in sys.modules and 'agentcore.integrations.postgres' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_a_durable_run_resumed_on_a_conversation_it_did_not_start_from_is_a_config_error(
    tmp_path: Path,
) -> None:
    from agentcore.durable import SQLiteCheckpoints

    checkpoints = SQLiteCheckpoints(tmp_path / "runs.db")
    started_on = SQLiteSession(tmp_path / "s.db", "first")
    options = LoopOptions(
        model=TestModel(),
        messages=[user_message("q")],
        run_id="r1",
        checkpoints=checkpoints,
        session=started_on,
    )
    generate(options)
    other = SQLiteSession(tmp_path / "s.db", "other")
    one_run(other, "something else")
    with pytest.raises(RunError) as refused:
        generate(LoopOptions(model=TestModel(), run_id="r1", checkpoints=checkpoints, session=other))
    assert isinstance(refused.value.err, ConfigError)
    assert "started from another conversation" in str(refused.value.err)
    assert [asked(turn) for turn in other.turns()] == ["something else"]
    # On its own session, resumed without messages, it gives its result again and stores nothing more.
    again = generate(LoopOptions(model=TestModel(), run_id="r1", checkpoints=checkpoints, session=started_on))
    assert [m.text for m in again.messages if m.role is Role.USER] == ["q"]
    assert [turn.id for turn in started_on.turns()] == ["r1"]


def test_a_run_a_guardrail_stopped_stores_nothing(tmp_path: Path) -> None:
    from agentcore import Guardrails, Tripwire

    session = SQLiteSession(tmp_path / "s.db", "s")
    one_run(session, "kept")
    before = session.turns()
    with pytest.raises(RunError) as stopped:
        generate(
            LoopOptions(
                model=TestModel(),
                messages=[user_message("tell me")],
                session=session,
                guardrails=Guardrails(output=lambda answer: Tripwire("withheld")),
            )
        )
    assert stopped.value.finish_reason is FinishReason.GUARDRAIL
    assert session.turns() == before


# --- run ids, waiting for oneself, approval, conninfo, lock files ------------------------


def test_a_run_id_without_checkpoints_stores_a_turn_for_every_run(tmp_path: Path) -> None:
    session = SQLiteSession(tmp_path / "s.db", "s")
    for question in ("one", "two"):  # a chat backend passing its conversation id as run_id
        result = generate(
            LoopOptions(
                model=TestModel(), messages=[user_message(question)], session=session, run_id="conversation-7"
            )
        )
    assert [m.text for m in result.messages if m.role is Role.USER] == ["one", "two"]
    turns = session.turns()
    assert [asked(turn) for turn in turns] == ["one", "two"]
    assert len({turn.id for turn in turns}) == 2
    assert "conversation-7" not in {turn.id for turn in turns}
    assert session.messages() == list(result.messages)


def another_spelling(store: tuple[str, str]) -> tuple[str, str]:
    """The same store, named otherwise: the SQLite file through a symbolic link to its
    folder; the Postgres database in libpq's keyword form, with another application_name."""
    kind, target = store
    if kind == "sqlite":
        path = Path(target)
        link = path.parent.parent / f"{path.parent.name}-link"
        if not link.exists():
            link.symlink_to(path.parent, target_is_directory=True)
        return kind, str(link / path.name)
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return kind, make_conninfo("", **conninfo_to_dict(target), application_name="another")


def test_pop_and_clear_inside_this_thread_s_own_lock_block_are_a_config_error_at_once(
    store: tuple[str, str],
) -> None:
    session = open_session(store, unique("self"), lock_timeout=0)
    one_run(session, "kept")
    # Another object of the same conversation, reached by another spelling of where it is.
    same = open_session(another_spelling(store), session.session_id, lock_timeout=0)

    def lock_again() -> None:
        with same.lock(Context()):
            pytest.fail("took a lock this thread holds")

    with session.lock(Context()):
        for attempt in (session.pop, session.clear, same.pop, lock_again):
            with pytest.raises(
                ConfigError, match=r"held by the run this call is part of \(or by this thread"
            ):
                attempt()
    assert [asked(turn) for turn in session.turns()] == ["kept"]
    popped = same.pop()  # free again
    assert popped is not None
    assert asked(popped) == "kept"


@pytest.mark.parametrize("parallel", [False, True])
def test_a_tool_changing_its_own_run_s_session_gets_a_config_error_at_once(
    store: tuple[str, str], parallel: bool
) -> None:
    from agentcore import tool

    session = open_session(store, unique("tool"), lock_timeout=0)
    one_run(session, "earlier")
    threads: list[str] = []

    def attempt(action: Any) -> str:
        try:
            action()
        except (ConfigError, SessionLocked, RunError) as exc:
            err = exc.err if isinstance(exc, RunError) else exc
            refused = isinstance(err, ConfigError) and "held by the run this call is part of" in str(err)
            return "refused" if refused else repr(err)
        return "done"

    @tool
    def forget() -> str:
        """Forget the conversation."""
        threads.append(threading.current_thread().name)
        again = LoopOptions(model=TestModel(), messages=[user_message("inner")], session=session)
        actions = [
            session.clear,
            session.pop,
            lambda: session.lock(Context()).__enter__(),
            lambda: generate(again),
        ]
        return " ".join(attempt(action) for action in actions)

    @tool
    def other() -> str:
        """Another tool, so that the calls run at once with parallel_tools."""
        return "ok"

    result = generate(
        LoopOptions(
            model=TestModel(),
            tools=[forget, other],
            messages=[user_message("forget me")],
            session=session,
            parallel_tools=parallel,
        )
    )
    # parallel: the call ran on a thread of its own, not on the run's worker (which holds the lock)
    assert threads == ["agentcore-tool" if parallel else "agentcore-stream"]
    [said] = [r.content for m in result.messages for r in m.tool_results if r.name == "forget"]
    assert said == "refused refused refused refused"
    assert [asked(turn) for turn in session.turns()] == ["earlier", "forget me"]
    assert session.messages() == list(result.messages)
    one_run(session, "later")  # the session is free (lock_timeout=0: no wait at all)
    assert [asked(turn) for turn in session.turns()] == ["earlier", "forget me", "later"]


def test_a_new_message_on_a_session_waiting_for_approval_denies_the_calls_and_goes_on(tmp_path: Path) -> None:
    session, _, call = waiting_for_approval(tmp_path)
    went_on = generate(LoopOptions(model=TestModel(), messages=[user_message("never mind")], session=session))
    assert went_on.finish_reason is FinishReason.STOP
    denial = (
        "Error: not run: the user sent a new message instead of deciding on the calls of this step "
        "that waited for approval"
    )
    history = list(went_on.messages)
    assert [m.role for m in history] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.USER, Role.ASSISTANT]
    assert [(r.tool_call_id, r.content, r.is_error) for r in history[2].tool_results] == [
        (call.id, denial, True)
    ]
    # A provider takes it: the denial, then the new message (Anthropic: one user turn).
    from agentcore.types import Request

    sent = request_body(Request(messages=history[:4]), "claude-sonnet-4-5", origin=ORIGIN)["messages"]
    assert [block["type"] for block in sent[-1]["content"]] == ["tool_result", "text"]
    # The denial closes the turn that asked; the new turn starts with the new message.
    turns = session.turns()
    assert [[m.role for m in turn.messages] for turn in turns] == [
        [Role.USER, Role.ASSISTANT, Role.TOOL],
        [Role.USER, Role.ASSISTANT],
    ]
    assert session.messages() == history
    popped = session.pop()
    assert popped is not None
    assert asked(popped) == "never mind"
    assert session.turns() == turns[:1]


def test_approvals_and_a_new_message_on_a_session_waiting_for_approval_are_a_config_error(
    tmp_path: Path,
) -> None:
    session, delete, call = waiting_for_approval(tmp_path)
    before = session.turns()
    with pytest.raises(RunError) as both:
        generate(
            LoopOptions(
                model=TestModel(),
                tools=[delete],
                messages=[user_message("and this")],
                session=session,
                approvals={call.id: True},
            )
        )
    assert isinstance(both.value.err, ConfigError)
    assert "session 's' ends with tool calls waiting for approval" in str(both.value.err)
    assert session.turns() == before


def test_a_bad_postgres_conninfo_is_a_config_error_without_the_password() -> None:
    pytest.importorskip("psycopg")
    from agentcore.integrations.postgres import PostgresSession

    with pytest.raises(ConfigError, match=r'conninfo is not a libpq connection string or URL \(missing "="'):
        PostgresSession("not a url at all", "x")
    with pytest.raises(ConfigError) as secret:
        PostgresSession("postgresql://app:s3cr%zzet@db:5432/chats", "x")
    assert "invalid percent-encoded token" in str(secret.value)
    assert "s3cr" not in str(secret.value)
    assert secret.value.__cause__ is None
    assert secret.value.__suppress_context__


def test_a_cleared_or_emptied_sqlite_session_leaves_no_lock_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    locks = Path(str(path) + ".locks")
    sessions = [SQLiteSession(path, f"s{i}") for i in range(4)]
    for session in sessions:
        one_run(session, "hello")
    assert len(list(locks.iterdir())) == 4
    sessions[0].clear()
    sessions[1].pop()
    one_run(sessions[2], "again")
    sessions[2].pop()  # one turn left: the file stays
    assert sorted(p.name for p in locks.iterdir()) == sorted(Path(s.lock_path).name for s in sessions[2:])
    one_run(sessions[0], "back")  # a new lock file, as for a new session
    assert [asked(turn) for turn in sessions[0].turns()] == ["back"]


class Gate(Context):
    """A context whose pauses between two tries of a lock are steps the test takes."""

    def __init__(self) -> None:
        super().__init__()
        self.events: queue.Queue[str] = queue.Queue()
        """``"paused"``: a try failed and the waiter waits for ``resume``; ``"held"``: it got the lock."""
        self.resume: queue.Queue[None] = queue.Queue()

    def wait(self, seconds: float | None = None) -> bool:
        self.events.put("paused")
        self.resume.get(timeout=60)
        return False


def test_a_waiter_holding_the_removed_lock_file_takes_the_new_one_and_never_overlaps(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    first = SQLiteSession(path, "s")
    one_run(first, "hello")
    gate, leave = Gate(), threading.Event()

    def wait_then_hold() -> None:
        with SQLiteSession(path, "s").lock(gate):
            gate.events.put("held")
            leave.wait(60)

    with first.lock(Context()):
        waiter = threading.Thread(target=wait_then_hold)
        waiter.start()
        assert gate.events.get(timeout=60) == "paused"  # the waiter opened the lock file and found it locked
        first.write(0, ())  # emptied: the file is removed as the lock is let go
    assert not Path(first.lock_path).exists()
    third = SQLiteSession(path, "s", lock_timeout=0)
    with third.lock(Context()):  # takes the lock of a new file at the path
        gate.resume.put(None)  # the waiter locks the removed file, sees it is gone, tries the new one
        assert gate.events.get(timeout=60) == "paused"  # never two holders
    gate.resume.put(None)
    assert gate.events.get(timeout=60) == "held"
    leave.set()
    waiter.join(60)
    assert Path(first.lock_path).exists()


def test_a_decision_sent_again_when_no_call_is_waiting_is_a_config_error_and_runs_nothing(
    tmp_path: Path,
) -> None:
    session, delete, call = waiting_for_approval(tmp_path)
    decided = generate(
        LoopOptions(model=TestModel(), tools=[delete], approvals={call.id: True}, session=session)
    )
    assert decided.finish_reason is FinishReason.STOP
    stored = session.turns()
    model = ScriptedModel([])  # any request would fail: it holds no step
    with pytest.raises(RunError) as again:  # a double submit of the same decision
        generate(LoopOptions(model=model, tools=[delete], approvals={call.id: True}, session=session))
    assert isinstance(again.value.err, ConfigError)
    assert "has no tool calls waiting for approval" in str(again.value.err)
    assert model.requests == []
    assert session.turns() == stored
