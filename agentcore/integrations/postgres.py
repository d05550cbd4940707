"""Conversation sessions in Postgres: :class:`PostgresSession` (extra ``postgres``: psycopg 3).

The server store of :mod:`agentcore.sessions`, for conversations shared by
many processes or machines. psycopg is imported when a session is made, not
by ``import agentcore``.

* Each conversation is rows of one table, ``agentcore_session_messages``
  (made when missing), one message a row as the JSON text
  :func:`agentcore.sessions.message_json` writes.
* :meth:`PostgresSession.write` is one transaction (psycopg's
  ``connection.transaction()``): a crash in the middle leaves the
  conversation as it was.
* The session's lock is a session-level advisory lock
  (``pg_try_advisory_lock``, https://www.postgresql.org/docs/current/explicit-locking.html#ADVISORY-LOCKS)
  on a connection opened for the holder: Postgres releases it when that
  connection ends, so a holder that dies (its socket closes) frees the
  session. The key is the first 8 bytes of the SHA-256 of the session id.
  While a thread holds the lock, its loads and writes go through that same
  connection (one connection a run, not three).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.sessions import (
    BaseSession,
    Turn,
    check_lock_timeout,
    check_session_id,
    first_dropped,
    group_turns,
    holding,
    new_rows,
    refuse_reentry,
    wait_for_lock,
)

__all__ = ["PostgresSession"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentcore_session_messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    turn TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
)
"""
_SCHEMA_LOCK = 0x616763735F736368  # an advisory key: one process creates the table at a time
"""Concurrent ``CREATE TABLE IF NOT EXISTS`` can fail in Postgres (two
inserts into its catalog); the makers take turns under this key."""


_SECRETS = (
    re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://[^:@/]*:([^@/]*)@"),  # URL: scheme://user:password@
    re.compile(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)"),  # key=value: password=...
)


def masked(message: str, conninfo: str) -> str:
    """``message`` with the password written in ``conninfo`` (in its URL or
    its ``password=``) replaced by ``***``."""
    for pattern in _SECRETS:
        for secret in pattern.findall(conninfo):
            secret = secret.strip("'")
            if secret:
                message = message.replace(secret, "***")
    return message


def lock_key(session_id: str) -> int:
    """The advisory lock key of ``session_id``: a signed 64-bit integer."""
    return int.from_bytes(
        hashlib.sha256(b"agentcore-session:" + session_id.encode()).digest()[:8], "big", signed=True
    )


_DATABASE_KEYS = frozenset({"host", "hostaddr", "port", "dbname", "user"})
"""The conninfo keys that say which database a session is in."""


class PostgresSession(BaseSession):
    """A conversation in Postgres (psycopg 3).

    Args:
        conninfo: a libpq connection string or URL
            (``postgresql://user@host:5432/db``).
        session_id: the conversation's id.
        lock_timeout: see :class:`~agentcore.sessions.BaseSession`.
        connect_timeout: seconds to wait for each connection.

    Raises:
        ConfigError: psycopg is not installed (``pip install
            'agentcore[postgres]'``), a bad ``session_id`` or
            ``lock_timeout``, ``conninfo`` is not a connection string or
            URL libpq can read (its reason, with any password in it masked,
            and no cause chained), or the database cannot be reached or its
            table made (the cause chained).
    """

    def __init__(
        self,
        conninfo: str,
        session_id: str,
        *,
        lock_timeout: float | None = None,
        connect_timeout: float = 30.0,
    ) -> None:
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError as exc:
            raise ConfigError("PostgresSession needs psycopg 3: pip install 'agentcore[postgres]'") from exc
        self.conninfo = conninfo
        self.session_id = check_session_id(session_id)
        self.lock_timeout = check_lock_timeout(lock_timeout)
        self.connect_timeout = connect_timeout
        self.key = lock_key(self.session_id)
        self._held = threading.local()
        """``conn``: the connection holding the lock, for the thread holding it."""
        if not isinstance(conninfo, str):
            raise ConfigError(f"PostgresSession: conninfo must be a str, got {type(conninfo).__name__}")
        try:
            parts = conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            # libpq's reason may quote a part of the URL (a badly
            # percent-encoded password): masked, and the cause not chained.
            reason = masked(str(exc).strip(), conninfo)
            raise ConfigError(
                f"PostgresSession: conninfo is not a libpq connection string or URL ({reason}); "
                "expected e.g. 'postgresql://user@host:5432/db' or 'host=... dbname=...'"
            ) from None
        self._database = tuple(sorted((k, str(v)) for k, v in parts.items() if k in _DATABASE_KEYS))
        """Where the conversation is, whichever spelling of the conninfo (a URL or
        keywords, other options such as ``application_name``) reached it."""
        try:
            with self._connect() as db, db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                db.execute(_SCHEMA)
        except psycopg.OperationalError as exc:
            raise ConfigError(f"cannot use the session database: {exc}") from exc

    def __repr__(self) -> str:
        return f"PostgresSession({self.session_id!r})"

    @property
    def lock_id(self) -> Hashable:
        """The database (host, port, database, user, however the conninfo spelled
        them) and the session: equal for every object of the conversation."""
        return ("postgres", self._database, self.session_id)

    @contextlib.contextmanager
    def _connection(self) -> Iterator[Any]:
        """The calling thread's lock connection while it holds the lock (left
        open), else a new connection (closed after)."""
        held = getattr(self._held, "conn", None)
        if held is not None:
            yield held
            return
        with self._connect() as db:
            yield db

    def _connect(self, autocommit: bool = False) -> Any:
        """A new connection (psycopg's errors are left as they are: a run
        whose store fails ends with that error)."""
        import psycopg

        return psycopg.connect(
            self.conninfo, autocommit=autocommit, connect_timeout=max(1, round(self.connect_timeout))
        )

    @contextlib.contextmanager
    def lock(self, ctx: Context) -> Iterator[None]:
        """Hold the session (see :meth:`agentcore.sessions.Session.lock`).

        Raises:
            ConfigError: this thread, or the run this call is part of,
                holds the session already (the wait would never end).
        """
        refuse_reentry(self.lock_id, self.session_id)
        db = self._connect(autocommit=True)
        try:

            def try_lock() -> bool:
                row = db.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
                return bool(row[0])

            wait_for_lock(try_lock, ctx, self.lock_timeout, self.session_id)
            self._held.conn = db
            with holding(self.lock_id):
                yield
        finally:
            self._held.conn = None
            db.close()  # ends the connection: Postgres releases its advisory locks

    def turns(self) -> list[Turn]:
        """The stored turns, oldest first."""
        with self._connection() as db:
            rows = db.execute(
                "SELECT turn, message FROM agentcore_session_messages WHERE session_id = %s ORDER BY seq",
                (self.session_id,),
            ).fetchall()
        return group_turns(rows)

    def write(self, keep: int, turns: Sequence[Turn]) -> None:
        """Keep ``keep`` turns, append ``turns``: one transaction."""
        with self._connection() as db, db.transaction():
            rows = db.execute(
                "SELECT seq, turn FROM agentcore_session_messages WHERE session_id = %s ORDER BY seq",
                (self.session_id,),
            ).fetchall()
            start = first_dropped(rows, keep)
            db.execute(
                "DELETE FROM agentcore_session_messages WHERE session_id = %s AND seq >= %s",
                (self.session_id, start),
            )
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO agentcore_session_messages (session_id, seq, turn, message) "
                    "VALUES (%s, %s, %s, %s)",
                    [(self.session_id, seq, turn_id, text) for seq, turn_id, text in new_rows(start, turns)],
                )

    def session_ids(self) -> list[str]:
        """The ids of the sessions stored in this database (with at least one turn), sorted."""
        with self._connect() as db:
            rows = db.execute(
                "SELECT DISTINCT session_id FROM agentcore_session_messages ORDER BY session_id"
            ).fetchall()
        return [row[0] for row in rows]
