"""Conversation sessions: a conversation kept in a store between runs (``LoopOptions(session=...)``).

A run given a session loads the conversation before its first step (the
run's ``messages`` are the new turn, sent after the stored ones) and, when it
finishes, stores what it added, in one transaction. ``docs/sessions.md``
says which store to pick; design.md, "Sessions", why it works as it does.

* A **turn** is what one run added: its new messages (from its first new
  user message on), then the assistant and tool messages it made. The store
  keeps the conversation as a list of :class:`Turn`; :meth:`BaseSession.pop`
  takes the last one off.
* **One run at a time.** A run holds the session's lock from loading the
  conversation until it stored its turn; a second run on the same session
  waits for the lock. The wait ends with the run's own cancel or deadline
  (the run ends ``canceled``, nothing stored), or after the session's
  ``lock_timeout`` seconds with :class:`SessionLocked`. The lock holds
  between threads and between processes, and a process that dies releases
  it (the operating system drops its file lock; Postgres its connection's
  advisory lock).
* **What is stored.** A run that finishes (any finish reason: ``stop``,
  ``length``, ``step-limit``, ``limit``, ``approval-required``...) stores
  its turn. A run that fails, is cancelled or is stopped by a guardrail
  stores nothing: the session holds the conversation as it was, and the
  same turn can be sent again (``RunError.messages`` still has the
  history up to the failure).
* **History policies.** The stored conversation is the one the run keeps:
  compacted when a policy acted. A run whose policy changed messages that
  were stored before rewrites the whole conversation (one transaction, as
  an append is); a message a policy wrote (a summary) joins the turn of
  the message after it.
* **Durable runs.** A run with a ``run_id`` and ``checkpoints`` stores its
  turn under that id: a run resumed after a crash does not store it twice,
  and does not load the turn it already stored. Without checkpoints a
  ``run_id`` names no saved run (a chat backend's conversation id, say):
  each run stores a turn of its own, under a random id.
* **Approval.** A run that ends ``approval-required`` is stored with its
  waiting calls; the next run either decides them (``approvals``, no
  ``messages``) or sends a new message, which denies them (error results
  the model sees) and goes on. :meth:`BaseSession.pop` undoes the whole
  last user turn, continuations included.
* **No waiting for oneself.** ``lock``, ``pop`` and ``clear`` called by a
  tool call of the run holding the session, or inside this thread's own
  ``lock()`` block, raise :class:`~agentcore.errors.ConfigError` at once
  instead of waiting for ever.

Serialisation is :meth:`agentcore.types.Message.to_dict` as JSON, the one
durable runs save: reasoning signatures, files and provider items come back
byte for byte.

A store of your own (Redis, your database) subclasses :class:`BaseSession`
and implements :class:`Session`'s three methods; :class:`SQLiteSession`
(standard-library ``sqlite3``) is the embedded one and
:class:`agentcore.integrations.postgres.PostgresSession` (extra
``postgres``) the server one.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

import attrs

from agentcore.context import Context
from agentcore.durable import SQLiteTransaction
from agentcore.errors import AgentcoreError, ConfigError
from agentcore.types import Message, Role

__all__ = [
    "BaseSession",
    "SQLiteSession",
    "Session",
    "SessionLocked",
    "Turn",
    "holding",
    "message_json",
    "message_from_json",
    "refuse_reentry",
    "wait_for_lock",
]

LOCK_POLL_FIRST = 0.001
"""Seconds: the first pause between two tries of a held session lock; each
next pause doubles, up to :data:`LOCK_POLL_MAX`. A cancel or deadline ends
a pause at once."""
LOCK_POLL_MAX = 0.05
"""Seconds: the longest pause between two tries of a held session lock."""


class SessionLocked(AgentcoreError):
    """Another run held the session for longer than the session's
    ``lock_timeout`` seconds (the ``err`` of the waiting run's ``RunError``).

    Attributes:
        session_id: the session.
        waited: the seconds the run waited.
    """

    def __init__(self, session_id: str, waited: float) -> None:
        super().__init__(
            f"session {session_id!r} is held by another run; waited {waited:.3f} s (its lock_timeout)"
        )
        self.session_id = session_id
        self.waited = waited

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.session_id, self.waited)


def _messages(value: Sequence[Message]) -> tuple[Message, ...]:
    return tuple(value)


@attrs.frozen
class Turn:
    """What one run added to a conversation.

    Attributes:
        id: the turn's id: the ``run_id`` of a run with checkpoints (a
            durable run), else a random one (32 hex digits).
        messages: its messages, in order (never empty).
    """

    id: str
    messages: tuple[Message, ...] = attrs.field(converter=_messages)


def message_json(message: Message) -> str:
    """``message`` as the JSON text a store keeps (:meth:`Message.to_dict`,
    as durable runs save it: files as base64, reasoning and provider data
    byte for byte)."""
    return json.dumps(message.to_dict(), ensure_ascii=False, separators=(",", ":"))


def message_from_json(text: str) -> Message:
    """Inverse of :func:`message_json`.

    Raises:
        ConfigError: the text is not a stored message.
    """
    try:
        return Message.from_dict(json.loads(text))
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ConfigError(f"not a stored agentcore message: {type(exc).__name__}: {exc}") from exc


def group_turns(rows: Sequence[tuple[str, str]]) -> list[Turn]:
    """The turns of a conversation stored as ``(turn id, message JSON)`` rows in order."""
    turns: list[Turn] = []
    current: list[Message] = []
    current_id = None
    for turn_id, text in rows:
        if turn_id != current_id and current:
            assert current_id is not None
            turns.append(Turn(current_id, current))
            current = []
        current_id = turn_id
        current.append(message_from_json(text))
    if current:
        assert current_id is not None
        turns.append(Turn(current_id, current))
    return turns


def wait_for_lock(
    try_lock: Callable[[], bool], ctx: Context, lock_timeout: float | None, session_id: str
) -> None:
    """Call ``try_lock`` until it returns True, pausing between tries
    (:data:`LOCK_POLL_FIRST` doubling to :data:`LOCK_POLL_MAX` seconds) on
    ``ctx``: its cancel or deadline ends the wait at once.

    Args:
        try_lock: takes the lock without waiting; True when it did.
        ctx: the waiting run's context.
        lock_timeout: seconds to wait at most (0: one try); None: no limit.
        session_id: the session, for the error.

    Raises:
        Canceled: ``ctx`` was cancelled or its deadline passed.
        SessionLocked: the lock was still held after ``lock_timeout`` seconds.
    """
    started = time.monotonic()
    pause = LOCK_POLL_FIRST
    while True:
        ctx.check()
        if try_lock():
            return
        waited = time.monotonic() - started
        if lock_timeout is not None and waited >= lock_timeout:
            raise SessionLocked(session_id, waited)
        slice_ = pause if lock_timeout is None else min(pause, lock_timeout - waited)
        ctx.wait(slice_)
        pause = min(pause * 2, LOCK_POLL_MAX)


_holders: dict[Hashable, int] = {}
"""The ``lock_id`` of each session a thread of this process holds now, with that thread's ident."""
_holders_lock = threading.Lock()
_run_sessions: contextvars.ContextVar[tuple[object, ...]] = contextvars.ContextVar(
    "agentcore_run_sessions", default=()
)
"""The sessions the runs around this code hold: set on a run's worker once it
holds its session, copied with the context into its tool calls (on their
threads too) and into the runs started in them."""


def lock_id(session: object) -> Hashable:
    """What identifies ``session``'s lock across session objects: its
    ``lock_id`` attribute (:class:`BaseSession`), else the object itself."""
    found: Hashable = getattr(session, "lock_id", session)
    return found


@contextlib.contextmanager
def run_holds(session: object) -> Iterator[None]:
    """Mark the block (a run's worker, from the moment it holds ``session``)
    as part of a run that holds ``session``: a :func:`refuse_reentry` in a
    tool call of the run refuses to wait for it."""
    token = _run_sessions.set((*_run_sessions.get(), session))
    try:
        yield
    finally:
        _run_sessions.reset(token)


def refuse_reentry(key: Hashable, session_id: str) -> None:
    """Refuse to wait for a session lock that the waiter itself keeps held:
    this thread holds it (a ``lock()`` block, the worker of the run holding
    it), or the run this code is part of holds it (a tool call of the run,
    on any thread, or a run started inside one). Such a wait would never
    end, and would keep the session from every later run too.

    Args:
        key: the session's ``lock_id``.
        session_id: the session, for the error.

    Raises:
        ConfigError: the lock is held so.
    """
    with _holders_lock:
        holder = _holders.get(key)
    if holder is None:
        return
    if holder == threading.get_ident() or any(lock_id(held) == key for held in _run_sessions.get()):
        raise ConfigError(
            f"session {session_id!r} is held by the run this call is part of (or by this thread's "
            "lock() block): waiting for it would never end; change the session after the run ends "
            "(or after the block)"
        )


@contextlib.contextmanager
def holding(key: Hashable) -> Iterator[None]:
    """Record, for the block, that this thread holds the lock ``key`` (a
    session's ``lock_id``): what :func:`refuse_reentry` looks at. Enter it
    once the lock is taken."""
    with _holders_lock:
        _holders[key] = threading.get_ident()
    try:
        yield
    finally:
        with _holders_lock:
            del _holders[key]


@runtime_checkable
class Session(Protocol):
    """One conversation in a store: what ``LoopOptions.session`` takes.

    A store of your own implements these three methods (subclass
    :class:`BaseSession` for ``messages``, ``pop`` and ``clear``). The loop
    calls them on the run's worker thread, for many runs at once: an
    implementation must be thread-safe, and its lock must hold between
    processes when several processes share the store.

    The loop calls ``lock``, then ``turns``, runs, then ``write`` once (or
    not at all), then leaves ``lock``.

    Attributes:
        session_id: the conversation's id in its store.
    """

    session_id: str

    def lock(self, ctx: Context) -> AbstractContextManager[object]:
        """Hold the session (one holder at a time, across threads and
        processes) for the ``with`` block: wait while another holds it
        (:func:`wait_for_lock` does the waiting). A holder that dies must
        not keep it: tie the lock to something the holder's death frees (a
        file lock, a database connection, a lease that expires).

        Raises:
            Canceled: ``ctx`` was cancelled (or its deadline passed) while waiting.
            SessionLocked: the wait went over the session's ``lock_timeout``.
        """
        ...

    def turns(self) -> list[Turn]:
        """The conversation's turns, oldest first (empty for a new session)."""
        ...

    def write(self, keep: int, turns: Sequence[Turn]) -> None:
        """In one transaction: keep the first ``keep`` stored turns, drop the
        others, append ``turns`` after them. Either all of it happens or
        nothing (a crash in the middle leaves the conversation as it was).
        ``write(len(stored), [turn])`` appends a turn; ``write(0, turns)``
        replaces the conversation. Called by the lock's holder only."""
        ...


class BaseSession:
    """What every session can do with :class:`Session`'s three methods.

    Subclasses set ``session_id`` and ``lock_timeout`` and implement
    ``lock``, ``turns`` and ``write`` (and ``session_ids``, to list the
    store's sessions).

    Attributes:
        session_id: the conversation's id in its store.
        lock_timeout: the most seconds a run (or :meth:`pop`, :meth:`clear`)
            waits for another holder of the session before
            :class:`SessionLocked`; None: as long as it takes (a cancel or
            deadline still ends the wait).
        lock_id: what identifies the session's lock across session objects
            (two objects of one conversation have equal ones); the object
            itself unless a store says more.
    """

    session_id: str
    lock_timeout: float | None

    @property
    def lock_id(self) -> Hashable:
        return self

    def lock(self, ctx: Context) -> AbstractContextManager[object]:
        raise NotImplementedError

    def turns(self) -> list[Turn]:
        raise NotImplementedError

    def write(self, keep: int, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    def session_ids(self) -> list[str]:
        """The ids of the sessions in this session's store (with at least one turn), sorted."""
        raise NotImplementedError

    def messages(self) -> list[Message]:
        """The conversation: every stored turn's messages, in order."""
        return [message for turn in self.turns() for message in turn.messages]

    def pop(self, ctx: Context | None = None) -> Turn | None:
        """Undo the last user turn: remove the last turn that starts with a
        user message and every turn after it (the continuations of a run
        that waited for approval, each stored as a turn that starts with
        tool results), and return what was removed as one turn, under the
        id of the user's turn; None when the session is empty. Waits for a
        run on the session to end first (``ctx`` may cancel the wait).

        Raises:
            Canceled: ``ctx`` was cancelled while waiting.
            SessionLocked: the wait went over ``lock_timeout``.
            ConfigError: called by a tool call of the run holding the
                session, or inside this thread's ``lock()`` block.
        """
        with self.lock(ctx or Context()):
            turns = self.turns()
            if not turns:
                return None
            first = last_user_turn(turns)
            self.write(first, ())
            return Turn(turns[first].id, [message for turn in turns[first:] for message in turn.messages])

    def clear(self, ctx: Context | None = None) -> None:
        """Remove every turn. Waits for a run on the session to end first.

        Raises:
            Canceled: ``ctx`` was cancelled while waiting.
            SessionLocked: the wait went over ``lock_timeout``.
            ConfigError: called by a tool call of the run holding the
                session, or inside this thread's ``lock()`` block.
        """
        with self.lock(ctx or Context()):
            self.write(0, ())


def last_user_turn(turns: Sequence[Turn]) -> int:
    """The index of the last turn that starts with a user message (the last
    one when none does: a conversation a history policy cut)."""
    for index in range(len(turns) - 1, -1, -1):
        if turns[index].messages[0].role is Role.USER:
            return index
    return len(turns) - 1


def check_session_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"a session id must be a non-empty str, got {session_id!r}")
    return session_id


def check_lock_timeout(value: object) -> float | None:
    """``value`` as a ``lock_timeout``: None or seconds >= 0.

    Raises:
        ConfigError: anything else.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(f"lock_timeout must be a number of seconds >= 0 or None, got {value!r}")
    return float(value)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentcore_session_messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
)
"""


class SQLiteSession(BaseSession):
    """A conversation in an SQLite file (standard-library ``sqlite3``).

    Any number of sessions, threads and processes share one file (on a
    local disk: SQLite advises against network file systems); each write
    is one transaction in WAL mode with ``synchronous=FULL``, as
    :class:`agentcore.durable.SQLiteCheckpoints` does (they may share the
    file). The session's lock is an exclusive ``flock`` on a file of its own
    in the directory ``<path>.locks`` (POSIX only): the operating system
    releases it when the holding process dies, however it dies.

    Args:
        path: the database file; created with its table when missing.
        session_id: the conversation's id.
        lock_timeout: see :class:`BaseSession`.
        timeout: seconds one database operation waits for another
            process's write to end (SQLite's busy timeout).

    Raises:
        ConfigError: ``path`` cannot be opened as an SQLite database, a bad
            ``session_id`` or ``lock_timeout``, or no ``fcntl`` (Windows).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        session_id: str,
        *,
        lock_timeout: float | None = None,
        timeout: float = 30.0,
    ) -> None:
        import sqlite3  # here: `import agentcore` works on a Python built without it

        try:
            import fcntl  # noqa: F401 - POSIX only: the lock needs it
        except ImportError as exc:
            raise ConfigError("SQLiteSession needs fcntl (POSIX): use another store on Windows") from exc
        self.path = os.fspath(path)
        self.session_id = check_session_id(session_id)
        self.lock_timeout = check_lock_timeout(lock_timeout)
        self.timeout = timeout
        self.lock_path = os.path.join(
            self.path + ".locks", hashlib.sha256(self.session_id.encode()).hexdigest()[:32] + ".lock"
        )
        try:
            db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot use {self.path!r} as a session database: {exc}") from exc
        os.makedirs(self.path + ".locks", exist_ok=True)

    def __repr__(self) -> str:
        return f"SQLiteSession({self.path!r}, {self.session_id!r})"

    @property
    def lock_id(self) -> Hashable:
        """The session's lock file (absolute, symbolic links resolved): equal for
        every object of the conversation."""
        return os.path.realpath(self.lock_path)

    @contextlib.contextmanager
    def lock(self, ctx: Context) -> Iterator[None]:
        """Hold the session (see :meth:`Session.lock`).

        The lock file of a session left empty is removed on the way out,
        while still locked; a waiter that then gets the lock of the removed
        file sees that the path no longer leads to it and locks the file at
        the path instead (made anew), so two holders never overlap.

        Raises:
            ConfigError: this thread, or the run this call is part of,
                holds the session already (the wait would never end).
        """
        import fcntl

        refuse_reentry(self.lock_id, self.session_id)
        opened: list[int] = []  # the lock file's descriptor, once open

        def try_lock() -> bool:
            while True:
                if not opened:
                    opened.append(os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600))
                try:
                    fcntl.flock(opened[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False
                if _is_file_at(opened[0], self.lock_path):
                    return True
                os.close(opened.pop())  # its holder removed it: the lock is the file at the path now

        try:
            wait_for_lock(try_lock, ctx, self.lock_timeout, self.session_id)
            try:
                with holding(self.lock_id):
                    yield
            finally:
                self._remove_lock_file_if_emptied()
        finally:
            for fd in opened:
                os.close(fd)  # releases the lock (the last descriptor of its open file)

    def _remove_lock_file_if_emptied(self) -> None:
        """Remove the lock file (still locked: the last act of the hold)
        when a write emptied the conversation and it is still empty."""
        with _emptied_lock:
            emptied = self.lock_id in _emptied
            _emptied.discard(self.lock_id)
        if emptied and not self.turns():
            os.unlink(self.lock_path)

    def turns(self) -> list[Turn]:
        """The stored turns, oldest first."""
        with SQLiteTransaction(self.path, self.timeout, False) as db:
            rows = db.execute(
                "SELECT turn, message FROM agentcore_session_messages WHERE session_id = ? ORDER BY seq",
                (self.session_id,),
            ).fetchall()
        return group_turns(rows)

    def write(self, keep: int, turns: Sequence[Turn]) -> None:
        """Keep ``keep`` turns, append ``turns``: one transaction (see :meth:`Session.write`)."""
        if keep == 0 and not turns:
            with _emptied_lock:  # the holder's lock() removes the lock file of an empty session
                _emptied.add(self.lock_id)
        with SQLiteTransaction(self.path, self.timeout, True) as db:
            rows = db.execute(
                "SELECT seq, turn FROM agentcore_session_messages WHERE session_id = ? ORDER BY seq",
                (self.session_id,),
            ).fetchall()
            start = first_dropped(rows, keep)
            db.execute(
                "DELETE FROM agentcore_session_messages WHERE session_id = ? AND seq >= ?",
                (self.session_id, start),
            )
            db.executemany(
                "INSERT INTO agentcore_session_messages (session_id, seq, turn, message) VALUES (?, ?, ?, ?)",
                [(self.session_id, seq, turn_id, text) for seq, turn_id, text in new_rows(start, turns)],
            )

    def session_ids(self) -> list[str]:
        """The ids of the sessions stored in this file (with at least one turn), sorted."""
        with SQLiteTransaction(self.path, self.timeout, False) as db:
            return [
                row[0]
                for row in db.execute(
                    "SELECT DISTINCT session_id FROM agentcore_session_messages ORDER BY session_id"
                )
            ]


_emptied: set[Hashable] = set()
"""The ``lock_id`` of the SQLite sessions a write emptied, for the holder to remove the lock file."""
_emptied_lock = threading.Lock()


def _is_file_at(fd: int, path: str) -> bool:
    """True when ``path`` leads to the open file ``fd`` (it was not removed or replaced)."""
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def first_dropped(rows: Sequence[tuple[int, str]], keep: int) -> int:
    """The ``seq`` of the first message of turn ``keep`` (counting from 0)
    among stored ``(seq, turn id)`` rows in order; past the last when there
    are no more turns."""
    turns = 0
    previous = None
    for seq, turn_id in rows:
        if turn_id != previous:
            if turns == keep:
                return seq
            turns += 1
            previous = turn_id
    return rows[-1][0] + 1 if rows else 0


def new_rows(start: int, turns: Sequence[Turn]) -> list[tuple[int, str, str]]:
    """``(seq, turn id, message JSON)`` rows for ``turns``, numbered from ``start``."""
    rows = []
    seq = start
    for turn in turns:
        for message in turn.messages:
            rows.append((seq, turn.id, message_json(message)))
            seq += 1
    return rows
