"""Durable runs: the run state as data, checkpoint stores, and the step-runner seam.

A run with ``LoopOptions(run_id=..., checkpoints=store)`` saves its
:class:`RunState` to ``store`` after each model step and after each tool call
completes; :func:`agentcore.run` with the same ``run_id`` later (in another
process, after a crash) resumes from the saved state: completed steps are not
sent again, completed tool calls are not run again, the usage total goes on,
and a finished run gives its result again without calling the model.
``docs/durable.md`` states the guarantees, and which tests back each.

* :class:`RunState` is the state at a step boundary, JSON-safe
  (:meth:`RunState.to_dict` / :meth:`RunState.from_dict`) and versioned
  (:data:`RUN_STATE_VERSION`): a state written by this version loads in the
  next.
* :class:`CheckpointStore` is the two-method protocol a store implements;
  :class:`SQLiteCheckpoints` is the embedded one (standard-library
  ``sqlite3``, one file shared by any number of threads and processes).
* :class:`StepRunner` is the seam a durable-execution engine (DBOS) plugs into:
  the loop runs each model step and each tool call through
  ``LoopOptions.step_runner``, so the engine can record them as its own steps
  and, when it replays a workflow, return the recorded :class:`StepRecord` or
  :class:`~agentcore.ToolResult` without calling the model or the tool.
  :class:`DirectRunner` (the default) just calls them.

Human approval: a tool made with ``@tool(requires_approval=...)`` (or any tool
with a ``needs_approval(arguments) -> bool`` method) is not run when the model
calls it. The run ends with ``FinishReason.APPROVAL_REQUIRED``, the calls
waiting for a decision in ``RunResult.pending``; ``LoopOptions(approvals=
{call_id: True | "reason"})`` resumes it.

What the loop does with these (resume, saves, decisions, replay) is
:mod:`agentcore.engine.durable_run`; the rules are design.md's loop rules 11
and 12.

Tool calls are at-least-once: a call that ran but whose result was not saved
yet runs again on resume. Its context's ``idempotency_key`` (``"<run
id>:<step>:<call id>"``) is the same each time, so a tool can make its side
effect exactly-once.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from agentcore.caching import CacheReport
from agentcore.errors import AgentcoreError, ConfigError
from agentcore.result import StepResult
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    Reasoning,
    Request,
    ToolCall,
    ToolResult,
    Usage,
)

if TYPE_CHECKING:
    import sqlite3

RUN_STATE_VERSION = 1
"""The version of :meth:`RunState.to_dict`'s shape written by this agentcore."""

__all__ = [
    "RUN_STATE_VERSION",
    "CheckpointConflict",
    "CheckpointStore",
    "DirectRunner",
    "ReplayDiverged",
    "RunState",
    "SQLiteCheckpoints",
    "StepRecord",
    "StepRunner",
    "fingerprint",
]


class CheckpointConflict(AgentcoreError):
    """A checkpoint was not saved: the store holds a newer state of the run
    (another process resumed the same run id and went further)."""


class ReplayDiverged(AgentcoreError):
    """A :class:`StepRunner` replayed a model step recorded for another
    request: the run's messages, or the code around it, changed since."""


def _tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value)


def _dict(value: Mapping[str, bool | str]) -> dict[str, bool | str]:
    return dict(value)


def _basis(value: Iterable[int] | None) -> tuple[int, int] | None:
    if value is None:
        return None
    reported, sent = value
    return int(reported), int(sent)


@attrs.frozen
class StepRecord:
    """One completed model step as data: what :meth:`StepRunner.model_step` returns.

    Attributes:
        content: the assistant's text, reasoning and tool-call parts, in the
            order the model produced them (the calls of a ``length`` step
            included: the loop leaves them out of the history).
        usage: the step's usage.
        finish_reason: ``stop``, ``tool-calls`` or ``length`` (``tool-calls``
            whenever the step carried calls).
        fingerprint: :func:`fingerprint` of the request the step answered.
        cache: the step's cache diagnosis (:class:`~agentcore.caching.CacheReport`),
            for the process that ran it: not in :meth:`to_dict`, None once
            replayed.
        model_id: the id of the model that answered the step (a
            :class:`agentcore.FallbackModel`'s fallback, say), given again
            when the step is replayed; "" in a record made before it was kept.
    """

    content: tuple[ContentPart, ...] = attrs.field(converter=_tuple)
    usage: Usage
    finish_reason: FinishReason = attrs.field(converter=FinishReason)
    fingerprint: str = ""
    cache: CacheReport | None = attrs.field(default=None, eq=False)
    model_id: str = ""

    @property
    def text(self) -> str:
        """The step's text parts joined."""
        return "".join(part.text for part in self.content if part.kind is ContentPartKind.TEXT)

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The step's tool calls, in order."""
        return tuple(part.tool_call for part in self.content if part.tool_call is not None)

    @property
    def reasoning(self) -> tuple[Reasoning, ...]:
        """The step's reasoning blocks, in order."""
        return tuple(part.reasoning for part in self.content if part.reasoning is not None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``{"content": [ContentPart.to_dict()...], "usage",
        "finish_reason", "fingerprint", "model_id"}``."""
        return {
            "content": [part.to_dict() for part in self.content],
            "usage": self.usage.to_dict(),
            "finish_reason": self.finish_reason.value,
            "fingerprint": self.fingerprint,
            "model_id": self.model_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(
            [ContentPart.from_dict(part) for part in data["content"]],
            Usage.from_dict(data["usage"]),
            data["finish_reason"],
            data.get("fingerprint", ""),
            model_id=data.get("model_id", ""),
        )


@attrs.frozen
class RunState:
    """A run at a step boundary, as data.

    Attributes:
        run_id: the run's id (``LoopOptions.run_id``).
        messages: the history: the caller's messages, then the assistant and
            tool messages. While tool calls are pending, the last message is
            the assistant message holding them (without results yet).
        steps: the completed model steps (their count is the step count).
        usage: the total usage of those steps.
        pending: the last step's tool calls while they run or wait for
            approval; empty between steps.
        results: the results of the pending calls that completed, in any order.
        awaiting_approval: the ids of the pending calls that wait for a
            decision (the run ended with ``approval-required``).
        decisions: the decisions given on pending calls
            (``LoopOptions.approvals``), kept until the calls ran: a run
            resumed after a crash does not ask again.
        fingerprints: :func:`fingerprint` of each model request, in step order.
        finish_reason: set once the run finished (``stop``, ``length``,
            ``step-limit``, or ``approval-required`` until decisions come).
        output: the accepted structured answer's JSON text; "" for none.
        output_tool: True when ``output`` is the ``final_answer`` tool's
            arguments (``output_mode="tool"``).
        output_attempts: structured answers checked so far.
        full_messages: the full history (every message the run had, what a
            history policy took out of ``messages`` included); empty while
            no policy changed ``messages`` (then it is ``messages``).
        origins: with ``full_messages``, for each message of ``messages``
            its index there (-1: a message a policy wrote, a summary).
        basis: the prompt tokens the provider reported for the last step
            and the number of messages it sent, from which the history
            policies size the next prompt; None: they estimate it.
        sub_run_cost: what the sub-runs of the run's agent tools cost in US
            dollars (``RunResult.sub_run_cost``; their usage is in ``usage``);
            None when one was not priced.
        revision: counts the saves of this run (a store keeps the highest).
        version: the shape's version, :data:`RUN_STATE_VERSION` when written.
    """

    run_id: str
    messages: tuple[Message, ...] = attrs.field(converter=_tuple)
    steps: tuple[StepResult, ...] = attrs.field(default=(), converter=_tuple)
    usage: Usage = attrs.field(factory=Usage)
    pending: tuple[ToolCall, ...] = attrs.field(default=(), converter=_tuple)
    results: tuple[ToolResult, ...] = attrs.field(default=(), converter=_tuple)
    awaiting_approval: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    decisions: Mapping[str, bool | str] = attrs.field(factory=dict, converter=_dict)
    fingerprints: tuple[str, ...] = attrs.field(default=(), converter=_tuple)
    finish_reason: FinishReason | None = None
    output: str = ""
    output_tool: bool = False
    output_attempts: int = 0
    full_messages: tuple[Message, ...] = attrs.field(default=(), converter=_tuple)
    origins: tuple[int, ...] = attrs.field(default=(), converter=_tuple)
    basis: tuple[int, int] | None = attrs.field(default=None, converter=_basis)
    sub_run_cost: Decimal | None = Decimal(0)
    revision: int = 0
    version: int = RUN_STATE_VERSION

    @property
    def answered(self) -> tuple[Message, ...]:
        """The history without the assistant message whose calls are pending:
        every tool call in it has its result."""
        return self.messages[:-1] if self.pending else self.messages

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``json.dumps`` takes it as is); files as base64,
        reasoning and provider data byte for byte. ``full_messages``,
        ``origins`` and ``basis`` are written only when set (a run without
        history policies writes what it always wrote), ``sub_run_cost`` only
        when not 0."""
        out: dict[str, Any] = {
            "version": self.version,
            "run_id": self.run_id,
            "revision": self.revision,
            "messages": [message.to_dict() for message in self.messages],
            "steps": [step.to_dict() for step in self.steps],
            "usage": self.usage.to_dict(),
            "pending": [call.to_dict() for call in self.pending],
            "results": [result.to_dict() for result in self.results],
            "awaiting_approval": list(self.awaiting_approval),
            "decisions": dict(self.decisions),
            "fingerprints": list(self.fingerprints),
            "finish_reason": None if self.finish_reason is None else self.finish_reason.value,
            "output": self.output,
            "output_tool": self.output_tool,
            "output_attempts": self.output_attempts,
        }
        if self.full_messages:
            out["full_messages"] = [message.to_dict() for message in self.full_messages]
            out["origins"] = list(self.origins)
        if self.basis is not None:
            out["basis"] = list(self.basis)
        if self.sub_run_cost != 0:  # None (not priced) or a sum: the text of the Decimal, exact
            out["sub_run_cost"] = None if self.sub_run_cost is None else str(self.sub_run_cost)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunState:
        """Inverse of :meth:`to_dict`, for every version up to :data:`RUN_STATE_VERSION`.

        Raises:
            ConfigError: (a ``ValueError``) the state was written by a newer
                agentcore, or is not a run state; the message says what is wrong.
        """
        version = data.get("version") if isinstance(data, Mapping) else None
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ConfigError(f"not an agentcore run state (version {version!r})")
        if version > RUN_STATE_VERSION:
            raise ConfigError(
                f"the run state has version {version}, written by a newer agentcore; "
                f"this one reads versions up to {RUN_STATE_VERSION}"
            )
        try:
            return cls._from_dict(data)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ConfigError(f"not an agentcore run state: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def _from_dict(cls, data: Mapping[str, Any]) -> RunState:
        reason = data.get("finish_reason")
        return cls(
            run_id=data["run_id"],
            messages=[Message.from_dict(message) for message in data["messages"]],
            steps=[StepResult.from_dict(step) for step in data.get("steps", ())],
            usage=Usage.from_dict(data.get("usage", {})),
            pending=[ToolCall.from_dict(call) for call in data.get("pending", ())],
            results=[ToolResult.from_dict(result) for result in data.get("results", ())],
            awaiting_approval=data.get("awaiting_approval", ()),
            decisions=data.get("decisions", {}),
            fingerprints=data.get("fingerprints", ()),
            finish_reason=None if reason is None else FinishReason(reason),
            output=data.get("output", ""),
            output_tool=data.get("output_tool", False),
            output_attempts=data.get("output_attempts", 0),
            full_messages=[Message.from_dict(message) for message in data.get("full_messages", ())],
            origins=data.get("origins", ()),
            basis=data.get("basis"),
            sub_run_cost=_sub_run_cost(data),
            revision=data.get("revision", 0),
            version=RUN_STATE_VERSION,
        )


def _sub_run_cost(data: Mapping[str, Any]) -> Decimal | None:
    """A saved ``sub_run_cost``: 0 when not saved, None when saved as null."""
    if "sub_run_cost" not in data:
        return Decimal(0)
    value = data["sub_run_cost"]
    return None if value is None else Decimal(value)


def fingerprint(request: Request) -> str:
    """The fingerprint of a model request: the SHA-256 (hex) of its system
    prompt and messages as canonical JSON.

    Tools, settings and headers are left out: they may change between a crash
    and the resume (a deploy) without changing what the run is about.
    """
    payload = json.dumps(
        {"system": request.system, "messages": [message.to_dict() for message in request.messages]},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


@runtime_checkable
class CheckpointStore(Protocol):
    """Where a run's :class:`RunState` is saved (``LoopOptions.checkpoints``).

    :func:`agentcore.run` calls ``load`` on the caller's thread, and ``save``
    on the run's worker thread, for many runs at once: an implementation
    must be thread-safe.
    """

    def load(self, run_id: str) -> RunState | None:
        """The state saved last for ``run_id``, or None when there is none."""
        ...

    def save(self, state: RunState) -> None:
        """Save ``state`` (replacing the run's previous one) durably before returning.

        Raises:
            CheckpointConflict: the store holds a state of the run whose
                ``revision`` is not lower than ``state.revision``.
        """
        ...


@runtime_checkable
class StepRunner(Protocol):
    """Runs each model step and each tool call of a run (``LoopOptions.step_runner``).

    ``key`` is stable across a replay of the same run: ``"<run id>:step:<n>"``
    for model step n (from 1) and ``"<run id>:<n>:<call id>"`` (the call's
    idempotency key) for a call of step n. A runner either calls ``call`` and
    returns what it returns, or (replaying) returns what that call returned
    before, without calling it: the loop then forwards nothing for it.
    ``tool_call`` is called on the tool's own thread with ``parallel_tools``.
    """

    def model_step(self, key: str, call: Callable[[], StepRecord]) -> StepRecord:
        """Run one model step (streaming, with the loop's retries) and return its record."""
        ...

    def tool_call(self, key: str, call: Callable[[], ToolResult]) -> ToolResult:
        """Run one tool call and return its result."""
        ...


class DirectRunner:
    """The default :class:`StepRunner`: calls each step and tool call, records nothing."""

    def model_step(self, key: str, call: Callable[[], StepRecord]) -> StepRecord:
        return call()

    def tool_call(self, key: str, call: Callable[[], ToolResult]) -> ToolResult:
        return call()


_SCHEMA = """
CREATE TABLE IF NOT EXISTS agentcore_runs (
    run_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL
)
"""

_UPSERT = """
INSERT INTO agentcore_runs (run_id, revision, state, updated) VALUES (?, ?, ?, ?)
ON CONFLICT (run_id) DO UPDATE SET
    revision = excluded.revision, state = excluded.state, updated = excluded.updated
WHERE excluded.revision > agentcore_runs.revision
"""


class SQLiteCheckpoints:
    """The embedded :class:`CheckpointStore`: one SQLite file, standard-library ``sqlite3``.

    Safe for many threads and processes on one file (on a local disk; SQLite
    advises against network file systems): the file is in WAL mode (readers
    never wait for the writer), each operation opens its own connection
    with a busy timeout and runs in one transaction, and ``synchronous=FULL``
    makes each save durable before :meth:`save` returns. A save whose
    ``revision`` is not higher than the stored one is refused with
    :class:`CheckpointConflict` (two processes resumed the same run).

    Args:
        path: the database file; created with its table when missing.
        timeout: seconds an operation waits for another process's write lock.

    Raises:
        ConfigError: ``path`` cannot be opened as an SQLite database.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        import sqlite3  # here: `import agentcore` works on a Python built without it

        self.path = os.fspath(path)
        self.timeout = timeout
        try:
            db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")  # kept by the file: set once, outside a transaction
                db.execute(_SCHEMA)
            finally:
                db.close()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot use {self.path!r} as a checkpoint database: {exc}") from exc

    def __repr__(self) -> str:
        return f"SQLiteCheckpoints({self.path!r})"

    def _connect(self, write: bool = False) -> SQLiteTransaction:
        return SQLiteTransaction(self.path, self.timeout, write)

    def load(self, run_id: str) -> RunState | None:
        """The state saved last for ``run_id``, or None.

        Raises:
            ValueError: the stored state is newer than this agentcore reads.
        """
        with self._connect() as db:
            row = db.execute("SELECT state FROM agentcore_runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else RunState.from_dict(json.loads(row[0]))

    def save(self, state: RunState) -> None:
        """Save ``state`` in one transaction (see :class:`CheckpointStore`).

        Raises:
            CheckpointConflict: the stored revision is not lower.
        """
        text = json.dumps(state.to_dict(), ensure_ascii=False, separators=(",", ":"))
        with self._connect(write=True) as db:
            changed = db.execute(_UPSERT, (state.run_id, state.revision, text, time.time())).rowcount
        if changed != 1:
            raise CheckpointConflict(
                f"run {state.run_id!r}: a newer checkpoint than revision {state.revision} is saved "
                "(is another process running the same run?)"
            )

    def delete(self, run_id: str) -> None:
        """Forget the run's state (nothing happens when there is none)."""
        with self._connect(write=True) as db:
            db.execute("DELETE FROM agentcore_runs WHERE run_id = ?", (run_id,))

    def run_ids(self) -> list[str]:
        """The ids of the saved runs, oldest save first."""
        with self._connect() as db:
            return [row[0] for row in db.execute("SELECT run_id FROM agentcore_runs ORDER BY updated")]


class SQLiteTransaction:
    """One connection for one operation: opened, run in one transaction
    (taking the write lock at once when it writes), closed. Also used by
    :class:`agentcore.sessions.SQLiteSession`."""

    def __init__(self, path: str, timeout: float, write: bool) -> None:
        import sqlite3

        self.db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        self.begin = "BEGIN IMMEDIATE" if write else "BEGIN"

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(self.begin)
        return self.db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self.db.close()
