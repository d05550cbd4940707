"""Run the tool-use loop as a DBOS workflow: model steps and tool calls are DBOS steps.

`DBOS Transact <https://docs.dbos.dev/python/programming-guide>`_ runs
workflows inside the process and records each step's output in its system
database (a SQLite file by default, Postgres for many machines). When a
process dies mid-run, DBOS starts the workflow again (at the next launch, or
on another worker of the same queue) and every step that completed returns
its recorded output instead of running again. :func:`durable_run` runs one
agentcore run inside a workflow of yours that way::

    from dbos import DBOS, SetWorkflowID
    from agentcore import LoopOptions, user_message
    from agentcore.integrations.dbos import durable_run

    DBOS(config={"name": "agents", "system_database_url": "sqlite:///agents.sqlite"})

    @DBOS.workflow()
    def answer(question: str) -> str:
        options = LoopOptions(model=model, tools=tools, messages=[user_message(question)])
        return durable_run(options).text

    DBOS.launch()  # recovers the runs a crash interrupted
    queue = DBOS.register_queue("agent-runs", worker_concurrency=4)
    with SetWorkflowID("run-42"):
        handle = queue.enqueue(answer, "What is 6 * 7?")

What is recorded, and what a recovery does:

* Each model step is the DBOS step ``agentcore.model_step``, whose output is
  the step's :class:`~agentcore.durable.StepRecord` as plain data (text, reasoning
  byte for byte, tool calls, usage, the request's fingerprint). A recovered
  run gets completed steps from the record: they are not sent again, and the
  usage total of the recovered run equals an uninterrupted run's. A step
  that was streaming when the process died is sent again from its start.
* Each tool call is the DBOS step ``agentcore.tool_call``, whose output is the
  :class:`~agentcore.ToolResult` as plain data. A completed call is not run again; a call
  that was running when the process died runs again (at least once: give a
  tool with side effects an idempotent target, ``ctx.idempotency_key`` is
  ``"<run id>:<step>:<call id>"``). The calls of a step take their DBOS
  step ids in call order when the model step ends, so ``parallel_tools``
  replays the same way however the threads finish.
* The run's id (``LoopOptions.run_id``, so the tools' idempotency keys) is
  the workflow's id: start the workflow with ``SetWorkflowID(run_id)``.

Streaming to a browser: with ``stream=True`` (the default) every part is also
written to the workflow's DBOS stream :data:`STREAM_KEY`, as the JSON object
:func:`agentcore.integrations.web.part_to_dict` makes, the terminal
``finish`` or ``error`` part last, and each model step attempt opens with
``{"kind": "step-start", "step": N}``. Any process on the same system
database reads it with :func:`read_parts` or serves it as Server-Sent Events
with :func:`sse_events` (``examples/dbos_app.py``). A step that a crash cut
off streams again from its start after a second ``step-start`` with the
same number: a page drops what it showed of that step. Each part is one
write to the system database; ``stream=False`` writes none.

Importing this module imports ``dbos`` (``pip install 'agentcore[dbos]'``);
``import agentcore`` never does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
from dbos import DBOS, DBOSClient, StepReservation
from dbos import error as dbos_error

from agentcore.context import Context
from agentcore.durable import ReplayDiverged, StepRecord
from agentcore.engine.loop import run
from agentcore.errors import ConfigError
from agentcore.integrations.web import DEFAULT_HEARTBEAT, HEARTBEAT, part_to_dict, sse_event
from agentcore.model import Model
from agentcore.options import LoopOptions
from agentcore.result import RunResult
from agentcore.types import Request, StreamPart, ToolResult

__all__ = ["MODEL_STEP", "STREAM_KEY", "TOOL_CALL", "DBOSRunner", "durable_run", "read_parts", "sse_events"]

STREAM_KEY = "agentcore"
"""The DBOS stream a durable run writes its parts to."""
MODEL_STEP = "agentcore.model_step"
"""The DBOS step name of a model step."""
TOOL_CALL = "agentcore.tool_call"
"""The DBOS step name of a tool call."""


def _write(value: dict[str, Any]) -> None:
    DBOS.write_stream(STREAM_KEY, value)


class DBOSRunner:
    """The :class:`~agentcore.durable.StepRunner` of :func:`durable_run`:
    runs each model step and tool call as a DBOS step of the current workflow.

    Args:
        stream: also write each part to the workflow's stream :data:`STREAM_KEY`.
    """

    def __init__(self, *, stream: bool = True) -> None:
        self.stream = stream
        self._lock = threading.Lock()
        self._reserved: dict[str, StepReservation] = {}

    def model_step(self, key: str, call: Callable[[], StepRecord]) -> StepRecord:
        """Run (or replay) model step ``key`` as the DBOS step :data:`MODEL_STEP`;
        then reserve one DBOS step per tool call of the step, in call order.

        Raises:
            ReplayDiverged: the recorded step belongs to another key.
        """
        data = DBOS.run_step({"name": MODEL_STEP}, self._model_step, key, call)
        record = StepRecord.from_dict(_recorded(data, key)["record"])
        run_id, _, number = key.rpartition(":step:")
        with self._lock:
            for tool_call in record.calls:
                self._reserved[f"{run_id}:{number}:{tool_call.id}"] = DBOS.reserve_step()
        return record

    def tool_call(self, key: str, call: Callable[[], ToolResult]) -> ToolResult:
        """Run (or replay) tool call ``key`` as the DBOS step :data:`TOOL_CALL`,
        at the step id reserved for it.

        Raises:
            ReplayDiverged: the recorded call belongs to another key.
        """
        with self._lock:
            reservation = self._reserved.pop(key, None)
        step = DBOS.run_step if reservation is None else reservation.run
        data = step({"name": TOOL_CALL}, self._tool_call, key, call)
        return ToolResult.from_dict(_recorded(data, key)["result"])

    def _model_step(self, key: str, call: Callable[[], StepRecord]) -> dict[str, Any]:
        if self.stream:
            _write({"kind": "step-start", "step": int(key.rpartition(":step:")[2])})
        return {"key": key, "record": call().to_dict()}

    def _tool_call(self, key: str, call: Callable[[], ToolResult]) -> dict[str, Any]:
        result = call()
        if self.stream:
            _write(part_to_dict(StreamPart.tool_result_event(result)))
        return {"key": key, "result": result.to_dict()}


def _recorded(data: dict[str, Any], key: str) -> dict[str, Any]:
    if data.get("key") != key:
        raise ReplayDiverged(
            f"DBOS replayed {data.get('key')!r} where the run asked for {key!r}: "
            "the workflow's code or inputs changed since the run was recorded"
        )
    return data


@attrs.frozen
class _StreamedModel:
    """A model whose parts also go to the workflow's DBOS stream as they arrive
    (written from inside the model step, so a replayed step writes nothing)."""

    model: Model

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        parts = self.model.stream(request, ctx)
        try:
            for part in parts:
                _write(part_to_dict(part))
                yield part
        finally:
            # The loop closes a step's stream on its worker thread (the adapter
            # releases its HTTP response there): pass that on.
            close = getattr(parts, "close", None)
            if close is not None:
                close()


def durable_run(options: LoopOptions, ctx: Context | None = None, *, stream: bool = True) -> RunResult:
    """Run the loop inside the current DBOS workflow, each model step and
    tool call a DBOS step, and return its result.

    Call it once, from a function decorated with ``@DBOS.workflow()`` (not
    from a step), with the same options each time the workflow runs: on
    recovery DBOS runs the workflow again and the recorded steps replay. A
    run that ends with ``approval-required`` ends here; a second workflow
    given its ``messages`` and ``approvals`` goes on with it.

    Args:
        options: what to run; ``run_id`` None (it becomes the workflow's id)
            or the workflow's id; no ``checkpoints`` and no ``step_runner``
            (the DBOS system database records the run).
        ctx: an optional caller context (cancellation, deadline).
        stream: write every part to the workflow's DBOS stream
            :data:`STREAM_KEY`, for :func:`read_parts` and :func:`sse_events`.

    Returns:
        The :class:`~agentcore.RunResult` of the finished run.

    Raises:
        ConfigError: not inside a DBOS workflow, ``run_id`` is not the
            workflow's id, or ``checkpoints`` or ``step_runner`` is set.
        RunError: the run ended in error or was cancelled.
    """
    workflow_id = DBOS.workflow_id
    if workflow_id is None or DBOS.step_id is not None:
        raise ConfigError(
            "durable_run() runs inside a DBOS workflow: call it from a @DBOS.workflow() function"
        )
    if options.run_id is not None and options.run_id != workflow_id:
        raise ConfigError(
            f"LoopOptions.run_id is {options.run_id!r} but the DBOS workflow's id is {workflow_id!r}: "
            "start the workflow with SetWorkflowID(run_id), or leave run_id None"
        )
    if options.checkpoints is not None or options.step_runner is not None:
        raise ConfigError(
            "durable_run() records the run in the DBOS system database: "
            "leave LoopOptions.checkpoints and step_runner None"
        )
    model = _StreamedModel(options.model) if stream else options.model
    durable = attrs.evolve(options, run_id=workflow_id, step_runner=DBOSRunner(stream=stream), model=model)
    reader = run(durable, ctx)
    terminal = None
    for part in reader:
        terminal = part  # the last part is the terminal one (loop rule 1)
    if stream and terminal is not None:
        # Written by the workflow, not a step: DBOS records it, so a replay does not repeat it.
        _write(part_to_dict(terminal))
        DBOS.close_stream(STREAM_KEY)
    return reader.result()


def read_parts(
    run_id: str,
    *,
    client: DBOSClient | None = None,
    timeout: float | None = None,
    polling_interval: float | None = None,
) -> Iterator[dict[str, Any]]:
    """The parts of durable run ``run_id`` as JSON objects, from the first,
    waiting for each, until the terminal part (or the workflow ended).

    Args:
        run_id: the run's (and workflow's) id.
        client: read through this :class:`dbos.DBOSClient` (a process that
            runs no workflows); None: through the launched ``DBOS``.
        timeout: seconds to wait for each part; None: no limit.
        polling_interval: seconds between reads while waiting, where the
            database cannot notify (SQLite); None: DBOS's setting (1 s).

    Raises:
        dbos.error.DBOSStreamTimeoutError: no part came for ``timeout`` seconds.
        dbos.error.DBOSNonExistentWorkflowError: no workflow has this id.
    """
    source: Any = DBOS if client is None else client
    yield from source.read_stream(
        run_id, STREAM_KEY, timeout_seconds=timeout, polling_interval_sec=polling_interval
    )


def sse_events(
    run_id: str,
    *,
    client: DBOSClient | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
    polling_interval: float | None = None,
) -> Iterator[bytes]:
    """The body of a ``text/event-stream`` response for durable run ``run_id``:
    one event per part (as :func:`agentcore.integrations.web.sse_stream`
    sends them), a heartbeat comment after each ``heartbeat`` seconds without
    one. Serve it with ``CONTENT_TYPE`` and ``SSE_HEADERS`` from
    :mod:`agentcore.integrations.web`. The run goes on when the browser
    leaves: it belongs to its workflow, not to the request; a page that comes
    back reads the stream again from the start.
    """
    offset = 0
    source: Any = DBOS if client is None else client
    while True:
        try:
            for value in source.read_stream(
                run_id,
                STREAM_KEY,
                offset=offset,
                timeout_seconds=heartbeat,
                polling_interval_sec=polling_interval,
            ):
                offset += 1
                yield sse_event(value)
            return
        except dbos_error.DBOSStreamTimeoutError:
            yield HEARTBEAT
