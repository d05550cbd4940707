"""What a conversation session costs per turn: load, lock and store, against a plain run.

A conversation of ``--turns`` turns is played twice, in alternating rounds
in one process: once with the history kept in memory by the caller (each
run is given the whole conversation so far as ``messages``: the plain run),
once with ``LoopOptions(session=SQLiteSession(...))`` (each run is given
its question only; the session loads the conversation, takes the lock and
stores the turn). Each turn is a tool call and an answer over
``TestModel`` (four messages), so the loop's own cost is small and the
session's shows. Printed: the time per turn of each, and the median over
rounds of session / plain, for the whole conversation and for its last
tenth (the turns that load the longest conversation). With ``--postgres
URL`` the same for :class:`~agentcore.integrations.postgres.PostgresSession`.

Run: ``python bench/sessions.py [--turns 100] [--rounds 5] [--quick]
[--postgres postgresql://...]``. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from agentcore import LoopOptions, Message, generate, tool, user_message
from agentcore.sessions import BaseSession, SQLiteSession
from agentcore.testing import TestModel
from bench._streams import machine


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def plain(turns: int) -> list[float]:
    """Seconds of each turn, the caller keeping the history."""
    model, history, times = TestModel(), list[Message](), []
    for n in range(turns):
        start = time.perf_counter()
        result = generate(
            LoopOptions(model=model, tools=[lookup], messages=[*history, user_message(f"question {n}")])
        )
        history = list(result.messages)
        times.append(time.perf_counter() - start)
    return times


def with_session(make: Callable[[str], BaseSession], turns: int) -> list[float]:
    """Seconds of each turn on a new session."""
    model, session, times = TestModel(), make(uuid.uuid4().hex), []
    for n in range(turns):
        start = time.perf_counter()
        generate(
            LoopOptions(
                model=model, tools=[lookup], messages=[user_message(f"question {n}")], session=session
            )
        )
        times.append(time.perf_counter() - start)
    return times


def compare(name: str, make: Callable[[str], BaseSession], turns: int, rounds: int) -> None:
    whole: list[float] = []
    tail: list[float] = []
    per_turn: dict[str, list[float]] = {"plain": [], name: []}
    last = max(1, turns // 10)
    for index in range(rounds):
        order: list[tuple[str, Callable[[], list[float]]]] = [
            ("plain", lambda: plain(turns)),
            (name, lambda: with_session(make, turns)),
        ]
        if index % 2:
            order.reverse()
        times: dict[str, list[float]] = {}
        for label, play in order:
            times[label] = play()
        whole.append(sum(times[name]) / sum(times["plain"]))
        tail.append(sum(times[name][-last:]) / sum(times["plain"][-last:]))
        for label in per_turn:
            per_turn[label].append(statistics.mean(times[label]) * 1000)
    print(
        f"{name}, {turns} turns: plain {statistics.median(per_turn['plain']):.2f} ms a turn, "
        f"session {statistics.median(per_turn[name]):.2f} ms a turn; session / plain "
        f"{statistics.median(whole):.2f} (the last {last} turns: {statistics.median(tail):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20 turns, 3 rounds")
    parser.add_argument("--postgres", default="", help="a database URL: measure PostgresSession too")
    args = parser.parse_args()
    turns, rounds = (20, 3) if args.quick else (args.turns, args.rounds)
    print(machine())
    path = os.path.join(tempfile.mkdtemp(), "sessions.sqlite3")
    compare("SQLiteSession", lambda session_id: SQLiteSession(path, session_id), turns, rounds)
    if args.postgres:
        from agentcore.integrations.postgres import PostgresSession

        compare(
            "PostgresSession", lambda session_id: PostgresSession(args.postgres, session_id), turns, rounds
        )


if __name__ == "__main__":
    main()
