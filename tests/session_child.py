"""The child program of tests/test_sessions.py: runs on a session in a process of its own.

``python -m tests.session_child STORE TARGET SESSION MODE ARGS...`` where
STORE is ``sqlite`` (TARGET a file) or ``postgres`` (TARGET a URL), and MODE:

* ``runs LABEL N``: prints ``ready``, waits for a line on its standard
  input (so that the parent starts every child's runs at once), then makes
  N runs one after the other, the k-th asking ``LABEL-k``, and prints the
  message count of each run's result, one a line.
* ``crash LABEL``: one run whose store stops inside the transaction that
  appends its turn, every statement done but the commit: it prints ``at
  commit`` and waits on its standard input until the parent kills it.
* ``replace LABEL``: the same inside a write that replaces the conversation
  by one turn asking LABEL (what a run whose history policy rewrote earlier
  turns does).
* ``durable CHECKPOINTS KILL``: the run ``r1`` (checkpoints in the SQLite
  file CHECKPOINTS) asking ``durable``; with KILL ``1`` its tool prints
  ``at tool`` and waits to be killed. Prints the result's message count.
"""

from __future__ import annotations

import sys
from typing import Any

from agentcore import Context, LoopOptions, generate, tool, user_message
from agentcore.durable import SQLiteCheckpoints
from agentcore.sessions import BaseSession, SQLiteSession, Turn
from agentcore.testing import TestModel


@tool
def note(text: str) -> str:
    """Note the text."""
    return f"noted {text}"


def session(store: str, target: str, session_id: str) -> BaseSession:
    if store == "sqlite":
        return SQLiteSession(target, session_id)
    from agentcore.integrations.postgres import PostgresSession

    return PostgresSession(target, session_id)


def stop_at(point: str) -> None:
    """Say where this process is, then wait until the parent kills it."""
    print(f"at {point}", flush=True)
    sys.stdin.read()


def stop_before_commit(store: str) -> None:
    """Make the next write transaction stop before its commit."""
    if store == "sqlite":
        from agentcore.durable import SQLiteTransaction

        def sqlite_exit(self: SQLiteTransaction, exc_type: object, exc: object, tb: object) -> None:
            if self.begin == "BEGIN IMMEDIATE" and exc_type is None:
                stop_at("commit")

        SQLiteTransaction.__exit__ = sqlite_exit  # type: ignore[method-assign]  # the forced stop
        return
    import psycopg

    def postgres_exit(self: psycopg.Transaction, exc_type: Any, exc: Any, tb: Any) -> bool:
        stop_at("commit")
        return False

    psycopg.Transaction.__exit__ = postgres_exit  # type: ignore[method-assign]  # the forced stop


def main(argv: list[str]) -> None:
    store, target, session_id, mode, *args = argv
    conversation = session(store, target, session_id)
    model = TestModel()
    if mode == "runs":
        label, count = args[0], int(args[1])
        print("ready", flush=True)
        sys.stdin.readline()
        for k in range(count):
            result = generate(
                LoopOptions(
                    model=model, tools=[note], messages=[user_message(f"{label}-{k}")], session=conversation
                )
            )
            print(len(result.messages), flush=True)
    elif mode == "crash":
        stop_before_commit(store)
        generate(LoopOptions(model=model, messages=[user_message(args[0])], session=conversation))
    elif mode == "replace":
        stop_before_commit(store)
        with conversation.lock(Context()):
            conversation.write(0, [Turn("replacing", [user_message(args[0])])])
    elif mode == "durable":
        checkpoints, kill = SQLiteCheckpoints(args[0]), args[1] == "1"

        @tool
        def pause(ctx: Context) -> str:
            """Pause."""
            if kill:
                stop_at("tool")
            return "paused"

        result = generate(
            LoopOptions(
                model=model,
                tools=[pause],
                messages=[user_message("durable")],
                session=conversation,
                run_id="r1",
                checkpoints=checkpoints,
            )
        )
        print(len(result.messages), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
