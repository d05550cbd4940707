"""Async function tools, per-call time limits and the run's deps (``ctx.deps``).

Every claim of concurrency or cancellation is shown by a forced interleaving:
a tool waits for an event that only the test (or the other calls) set, and a
time limit passes when a :class:`ManualClock` is advanced, never by sleeping.
The waits on events have generous limits only so that a broken build fails
instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import threading
from typing import Any

import attrs
import pytest

from agentcore import (
    Canceled,
    ConfigError,
    Context,
    DeadlineExceeded,
    ManualClock,
    RunError,
    StreamPartKind,
    ToolResult,
    run,
    tool,
)
from agentcore.aio import arun
from agentcore.background import tool_loop
from agentcore.testing import ScriptedModel
from tests.faults.measure import wait_for_workers
from tests.loop_helpers import alive_threads, call, collect, options, text_step, tool_step

GUARD = 30.0
"""Seconds a test waits for an event that a correct build sets at once."""


def results(model: ScriptedModel, step: int = 1) -> list[ToolResult]:
    """The tool results the model was sent in request ``step``."""
    return [part.tool_result for part in model.requests[step].messages[-1].content if part.tool_result]


# --- async tools ---------------------------------------------------------------------------------


def test_an_async_tool_runs_on_the_shared_loop_and_its_result_reaches_the_model() -> None:
    seen: list[tuple[asyncio.AbstractEventLoop, str]] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        await asyncio.sleep(0)
        seen.append((asyncio.get_running_loop(), threading.current_thread().name))
        return a + b

    model = ScriptedModel([tool_step(call("c1", "add", '{"a": 2, "b": 3}')), text_step("5")])
    collect(run(options(model, tools=[add])))
    model2 = ScriptedModel([tool_step(call("c1", "add", '{"a": 4, "b": 4}')), text_step("8")])
    collect(run(options(model2, tools=[add])))
    assert results(model) == [ToolResult("c1", "add", "5")]
    assert results(model2) == [ToolResult("c1", "add", "8")]
    assert seen == [(tool_loop().loop, "agentcore-async-tools")] * 2  # one loop for every run


def test_an_async_tools_error_is_an_error_result() -> None:
    @tool
    async def fail() -> str:
        """Fail."""
        raise LookupError("no such row")

    model = ScriptedModel([tool_step(call("c1", "fail")), text_step("sorry")])
    collect(run(options(model, tools=[fail])))
    assert results(model) == [ToolResult("c1", "fail", "Error: LookupError: no such row", True)]


def test_an_async_tool_sees_the_callers_context_variables() -> None:
    user = contextvars.ContextVar("user", default="nobody")

    @tool
    async def whoami() -> str:
        """Who calls."""
        return user.get()

    user.set("ada")
    assert whoami.execute({}, Context()) == "ada"


def test_an_async_tool_called_on_the_tool_loop_is_refused() -> None:
    @tool
    async def inner() -> str:
        """Inner."""
        return "never"

    async def outer() -> str:
        return str(inner.execute({}, Context()))

    with pytest.raises(RuntimeError, match="'inner' is async and was called on the async tools' loop"):
        tool_loop().submit(outer()).result(GUARD)


@attrs.define
class Gate:
    """An async tool's body that waits forever, recording what it saw."""

    started: threading.Event = attrs.Factory(threading.Event)
    cancelled: threading.Event = attrs.Factory(threading.Event)

    async def __call__(self) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return "never"


def test_closing_the_reader_cancels_an_async_tools_task() -> None:
    gate = Gate()
    model = ScriptedModel([tool_step(call("c1", "wait")), text_step("never")])
    reader = run(options(model, tools=[tool(gate, name="wait")]))
    assert gate.started.wait(GUARD)
    reader.close()
    assert gate.cancelled.wait(GUARD)  # the coroutine saw asyncio.CancelledError
    with pytest.raises(RunError) as info:
        reader.result()
    assert type(info.value.__cause__) is Canceled
    assert len(model.requests) == 1


@pytest.mark.parametrize("parallel", [False, True])
def test_a_deadline_cancels_an_async_tools_task(parallel: bool) -> None:
    clock = ManualClock()
    gates = [Gate(), Gate()]
    model = ScriptedModel([tool_step(call("c1", "w0"), call("c2", "w1")), text_step("never")])
    tools = [tool(gate, name=f"w{i}") for i, gate in enumerate(gates)]
    reader = run(options(model, tools=tools, parallel_tools=parallel), Context(timeout=60, clock=clock))
    assert gates[0].started.wait(GUARD)
    if parallel:
        assert gates[1].started.wait(GUARD)
    clock.advance(60)
    with pytest.raises(RunError) as info:
        reader.result()
    assert isinstance(info.value.__cause__, DeadlineExceeded)
    assert gates[0].cancelled.wait(GUARD)
    if parallel:
        assert gates[1].cancelled.wait(GUARD)
    else:
        assert not gates[1].started.is_set()  # in sequence, the second call never started
    assert len(model.requests) == 1


def test_fifty_async_tools_in_parallel_all_run_at_once_on_one_loop() -> None:
    """Each call waits until all 50 are running: with calls that did not
    overlap, the first would wait for the others and fail at the guard."""
    count = 50
    running = 0
    threads: set[str] = set()
    everyone: asyncio.Event | None = None

    @tool
    async def meet(n: int) -> str:
        """Wait for every call."""
        nonlocal running, everyone
        if everyone is None:
            everyone = asyncio.Event()  # made on the tools' loop, by its first call
        running += 1  # every call runs on the one loop thread: no lock needed
        threads.add(threading.current_thread().name)
        if running == count:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), GUARD)
        return f"met {n}"

    calls = [call(f"c{n}", "meet", f'{{"n": {n}}}') for n in range(count)]
    model = ScriptedModel([tool_step(*calls), text_step("done")])
    collect(run(options(model, tools=[meet], parallel_tools=True)), timeout=GUARD)
    assert results(model) == [ToolResult(f"c{n}", "meet", f"met {n}") for n in range(count)]
    assert threads == {"agentcore-async-tools"}
    # the shared loop outlives the run, but is not one of its workers: they have all ended
    assert wait_for_workers() == 0


def test_an_async_tool_run_from_an_asyncio_consumer_leaves_its_loop_free() -> None:
    """The tool waits for a flag that only a task on the consumer's loop
    sets: if the tool blocked that loop, the flag would never be set."""
    flag = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def lookup() -> str:
        """Wait for the consumer's loop."""
        loops.append(asyncio.get_running_loop())
        return "seen" if await asyncio.to_thread(flag.wait, GUARD) else "blocked"

    async def consume() -> tuple[list[ToolResult], asyncio.AbstractEventLoop]:
        model = ScriptedModel([tool_step(call("c1", "lookup")), text_step("ok")])
        async with arun(options(model, tools=[lookup])) as reader:
            async for part in reader:
                if part.kind is StreamPartKind.TOOL_CALL:
                    asyncio.get_running_loop().call_soon(flag.set)
            await reader.result()
        return results(model), asyncio.get_running_loop()

    got, consumer_loop = asyncio.run(consume())
    assert got == [ToolResult("c1", "lookup", "seen")]
    assert loops == [tool_loop().loop]
    assert consumer_loop is not tool_loop().loop


# --- time limits ---------------------------------------------------------------------------------


def test_an_async_tool_past_its_timeout_is_cancelled_and_the_model_told() -> None:
    clock = ManualClock()
    gate = Gate()
    slow = tool(gate, name="slow", timeout=5)
    model = ScriptedModel([tool_step(call("c1", "slow")), text_step("gave up")])
    reader = run(options(model, tools=[slow]), Context(clock=clock))
    assert gate.started.wait(GUARD)
    clock.advance(4.999)
    assert not gate.cancelled.is_set()
    clock.advance(0.001)  # exactly at the limit
    assert reader.result().text == "gave up"
    assert gate.cancelled.wait(GUARD)  # the task is cancelled on its loop, soon after the call ended
    assert results(model) == [
        ToolResult(
            "c1",
            "slow",
            "Error: TimeoutError: tool 'slow' did not finish within its time limit of 5 s; it was cancelled",
            True,
        )
    ]


def test_a_sync_tool_that_ignores_its_timeout_is_left_running_and_its_result_dropped() -> None:
    clock = ManualClock()
    started, release, finished = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    @tool(timeout=2.5)
    def stubborn(ctx: Context) -> str:
        """Ignore the context."""
        started.set()
        release.wait(GUARD)
        seen.append(ctx.cancelled)
        finished.set()
        return "late"

    model = ScriptedModel([tool_step(call("c1", "stubborn")), text_step("gave up")])
    reader = run(options(model, tools=[stubborn]), Context(clock=clock))
    assert started.wait(GUARD)
    clock.advance(2.5)
    assert reader.result().text == "gave up"  # the run went on without waiting for the function
    assert results(model)[0].content.endswith(  # the model is not told a side effect was undone
        "did not finish within its time limit of 2.5 s; it was told to stop but may still be running"
    )
    assert not finished.is_set()
    assert [t.name for t in alive_threads("agentcore-tool-call")] == ["agentcore-tool-call"]
    release.set()
    assert finished.wait(GUARD)
    assert seen == [True]  # its context was cancelled at the limit; "late" went nowhere
    assert [m.role.value for m in reader.messages] == ["user", "assistant", "tool", "assistant"]


def test_a_tool_within_its_timeout_answers_and_a_cancel_still_ends_the_run() -> None:
    @tool(timeout=60)
    def quick(ctx: Context) -> str:
        """Answer."""
        return f"deadline set: {ctx.deadline is not None}"

    model = ScriptedModel([tool_step(call("c1", "quick")), text_step("ok")])
    collect(run(options(model, tools=[quick])))
    assert results(model) == [ToolResult("c1", "quick", "deadline set: True")]

    gate = Gate()
    model = ScriptedModel([tool_step(call("c1", "wait")), text_step("never")])
    ctx = Context()
    reader = run(options(model, tools=[tool(gate, name="wait", timeout=60)]), ctx)
    assert gate.started.wait(GUARD)
    ctx.cancel()  # the run's cancel, not the limit: the run ends, no error result
    with pytest.raises(RunError) as info:
        reader.result()
    assert type(info.value.__cause__) is Canceled
    assert gate.cancelled.wait(GUARD)


@pytest.mark.parametrize("timeout", [0, -1, math.inf, math.nan, True, "5"])
def test_a_bad_timeout_is_a_config_error(timeout: Any) -> None:
    with pytest.raises(ConfigError, match=r"tool 'f': timeout must be a number of seconds > 0, got "):

        @tool(timeout=timeout)
        def f() -> str:
            """F."""
            return ""


# --- deps ----------------------------------------------------------------------------------------


@attrs.frozen
class Deps:
    user: str
    secret: str


@pytest.mark.parametrize("parallel", [False, True])
def test_deps_reach_every_tool_sync_async_and_in_parallel(parallel: bool) -> None:
    deps = Deps("ada", "s3cr3t")

    @tool
    def sync_user(ctx: Context[Deps]) -> str:
        """Who."""
        return ctx.deps.user

    @tool
    async def async_user(ctx: Context[Deps]) -> str:
        """Who, async."""
        return ctx.deps.user.upper()

    @tool(timeout=30)
    def timed(ctx: Context[Deps]) -> bool:
        """The same object."""
        return ctx.deps is deps

    model = ScriptedModel(
        [tool_step(call("c1", "sync_user"), call("c2", "async_user"), call("c3", "timed")), text_step("ok")]
    )
    opts = options(model, tools=[sync_user, async_user, timed], parallel_tools=parallel, deps=deps)
    collect(run(opts))
    assert [r.content for r in results(model)] == ["ada", "ADA", "true"]
    assert "s3cr3t" not in repr(opts)


def test_deps_default_to_the_callers_contexts_and_children_inherit_them() -> None:
    parent: Context[Deps] = Context(deps=Deps("bo", ""))
    assert Context(parent=parent).deps == Deps("bo", "")
    assert Context(parent=parent, deps=Deps("cy", "")).deps == Deps("cy", "")
    assert Context().deps is None

    @tool
    def who(ctx: Context[Deps]) -> str:
        """Who."""
        return ctx.deps.user

    model = ScriptedModel([tool_step(call("c1", "who")), text_step("ok")])
    collect(run(options(model, tools=[who], run_id="r1"), parent))  # run_id: each call gets a child context
    assert results(model) == [ToolResult("c1", "who", "bo")]


def test_loop_options_take_deps_of_any_type() -> None:
    pool = object()
    assert options(ScriptedModel([]), deps=pool).deps is pool
    assert options(ScriptedModel([])).deps is None
