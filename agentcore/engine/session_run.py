"""A run on a conversation session (``LoopOptions.session``): the lock, the
load before the first step and the store after the last (design.md,
"Sessions"; the public side is :mod:`agentcore.sessions`).

The loop's worker calls :meth:`SessionRun.open` before the run's first step
and :meth:`SessionRun.close` once the run's end is known, before the reader
sees it: a ``result()`` that returned means the turn is stored.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence

from agentcore.context import Context
from agentcore.engine.tool_calls import failed
from agentcore.errors import ConfigError
from agentcore.sessions import Session, Turn, run_holds
from agentcore.types import Message, Role, tool_result_part

WENT_ON = (
    "not run: the user sent a new message instead of deciding on the calls of this step "
    "that waited for approval"
)
"""The error result of each call of a step that waited for approval (the
calls that needed it, and the others of the step, which wait with them),
when a run sends a new message on the session instead of deciding."""


class SessionRun:
    """One run's hold on its session.

    Args:
        session: the run's session.
        run_id: the id of a durable run (one with checkpoints): the turn's
            id, so a resumed run stores its turn once; None: a random turn
            id (a ``run_id`` without checkpoints names no saved run, and
            each run stores a turn of its own).
    """

    def __init__(self, session: Session, run_id: str | None) -> None:
        self.session = session
        self.turn_id = run_id or uuid.uuid4().hex
        self.closed_turn = False
        """The run answered the calls the last loaded turn left waiting for
        approval (left without running them): that turn is written again, with
        their error results."""
        self.held = contextlib.ExitStack()
        self.loaded: list[Turn] = []
        """The turns stored before this run's own (kept as they are)."""
        self.base = 0
        """How many messages of the run's history were loaded."""
        self.stored = False
        """The session already holds this run's turn (a durable run resumed after storing it)."""

    def open(self, ctx: Context, new: Sequence[Message], deciding: bool) -> tuple[Message, ...]:
        """Take the session's lock (waiting for another run to end) and load
        the conversation: the run's history, the stored messages then ``new``.

        A turn already stored under this run's id (a durable run that stored
        it and was then resumed) and what follows it are not loaded: the run
        starts from the conversation it started from before.

        When the conversation ends with tool calls waiting for approval and
        ``new`` goes on without their results (a new user message), the
        calls are not run (:data:`WENT_ON`): a tool message with their error
        results joins the last stored turn, which is written again with it
        when the run stores its own.

        Args:
            ctx: the run's context.
            new: the run's own messages.
            deciding: the run has ``approvals`` (decisions on waiting calls).

        Raises:
            Canceled: the run was cancelled (or its deadline passed) while waiting.
            SessionLocked: the wait went over the session's ``lock_timeout``.
            ConfigError: the run is part of a run that holds the session
                already (a tool call of it); the run decides on waiting
                calls and sends new messages too; the run decides on calls
                (``approvals``, no messages) and none is waiting.
        """
        self.held.enter_context(self.session.lock(ctx))
        self.held.enter_context(run_holds(self.session))
        turns = self.session.turns()
        ids = [turn.id for turn in turns]
        if self.turn_id in ids:
            self.stored = True
            turns = turns[: ids.index(self.turn_id)]
        waiting = turns[-1].messages[-1].tool_calls if turns else []
        if deciding and not waiting and not new:
            raise ConfigError(
                f"session {self.session.session_id!r} has no tool calls waiting for approval: "
                "LoopOptions.approvals decide calls that were decided already (or never made)"
            )
        if waiting and new and new[0].role is not Role.TOOL:
            if deciding:
                raise ConfigError(
                    f"session {self.session.session_id!r} ends with tool calls waiting for approval: "
                    "decide them with LoopOptions.approvals and no messages, or send the new messages "
                    "without approvals (the waiting calls are then not run)"
                )
            answers = Message(Role.TOOL, [tool_result_part(failed(call, WENT_ON)) for call in waiting])
            turns = [*turns[:-1], Turn(turns[-1].id, (*turns[-1].messages, answers))]
            self.closed_turn = True
        self.loaded = turns
        loaded = [message for turn in turns for message in turn.messages]
        self.base = len(loaded)
        return (*loaded, *new)

    def close(self, history: Sequence[Message] | None, origins: Sequence[int | None] | None) -> None:
        """Store the run's turn (unless ``history`` is None: the run failed)
        and release the session.

        Args:
            history: the run's history as it keeps it (compacted by the
                history policies); None: store nothing.
            origins: for each message of ``history``, its index in the run's
                full history (None: a message a policy wrote); None when no
                policy changed the history (then it is loaded + added).
        """
        with self.held:
            if history is None or self.stored:
                return
            if origins is None:
                added = tuple(history[self.base :])
                keep = len(self.loaded) - 1 if self.closed_turn else len(self.loaded)
                written = [*self.loaded[keep:], *([Turn(self.turn_id, added)] if added else [])]
                if written:
                    self.session.write(keep, written)
                return
            self.session.write(0, self._rewritten(history, origins))

    def _rewritten(self, history: Sequence[Message], origins: Sequence[int | None]) -> list[Turn]:
        """The conversation as turns after a history policy changed it: a
        loaded message keeps its turn, a message the run added is in the
        run's turn, a message a policy wrote joins the turn of the message
        after it (the run's turn when it is last)."""
        owner: list[str] = []
        for turn in self.loaded:
            owner.extend(turn.id for _ in turn.messages)
        ids: list[str | None] = [
            None if origin is None else owner[origin] if origin < self.base else self.turn_id
            for origin in origins
        ]
        following = self.turn_id
        for index in range(len(ids) - 1, -1, -1):
            ids[index] = following = ids[index] or following
        turns: list[Turn] = []
        for message, turn_id in zip(history, ids, strict=True):
            assert turn_id is not None
            if turns and turns[-1].id == turn_id:
                turns[-1] = Turn(turn_id, (*turns[-1].messages, message))
            else:
                turns.append(Turn(turn_id, (message,)))
        return turns
