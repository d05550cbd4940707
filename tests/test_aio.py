"""agentcore.aio: a run consumed from asyncio, never blocking the event loop; cancel from the loop.

The event loop's freedom is shown without timing: a model step waits for an
event that only another coroutine on the same loop sets, so a consumer that
blocked the loop would deadlock (and hit the test timeout).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    Request,
    RunError,
    RunResult,
    StreamPart,
    StreamPartKind,
    run,
    user_message,
)
from agentcore.aio import AsyncRunReader, arun
from agentcore.testing import ScriptedModel
from tests.conftest import wait_for_threads
from tests.test_web import Add, Endless, add_options, add_script


def _options(*steps: Any, **kwargs: Any) -> LoopOptions:
    return LoopOptions(model=ScriptedModel(list(steps)), messages=[user_message("go")], **kwargs)


class Gate:
    """A step that waits until ``release`` is set (watching the run's context), then answers."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.waiting = threading.Event()
        self.cancelled = threading.Event()

    def __call__(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        yield StreamPart.text_delta("before ")
        self.waiting.set()
        while not self.release.is_set():
            if ctx.wait(0.005):
                self.cancelled.set()
                return
        yield StreamPart.text_delta("after")
        yield StreamPart.step_finish(FinishReason.STOP)


def test_async_for_gives_the_same_parts_and_result_as_the_blocking_reader() -> None:
    expected = list(run(add_options()))

    async def consume() -> tuple[list[StreamPart], RunResult]:
        async with arun(add_options()) as reader:
            parts = [part async for part in reader]
            return parts, await reader.result()

    parts, result = asyncio.run(consume())
    assert parts == expected
    assert result.text == "2 + 3 = 5"
    assert result.usage == expected[-1].total_usage
    assert [r.content for r in result.steps[0].tool_results] == ["5"]
    assert wait_for_threads("agentcore-aio") == 0


def test_the_event_loop_runs_while_the_reader_waits() -> None:
    gate = Gate()

    async def release_later() -> None:
        await asyncio.sleep(0)  # runs only if the consumer below yields the loop
        while not gate.waiting.is_set():
            await asyncio.sleep(0.001)
        gate.release.set()

    async def consume() -> str:
        reader = arun(_options(gate))
        releaser = asyncio.create_task(release_later())
        result = await reader.result()
        await releaser
        return result.text

    assert asyncio.run(consume()) == "before after"


def test_many_runs_at_once_do_not_wait_for_each_other() -> None:
    # More runs than the default executor has threads; each waits for all the others to have started.
    count = 40
    gates = [Gate() for _ in range(count)]

    async def consume(gate: Gate) -> str:
        async with arun(_options(gate)) as reader:
            return (await reader.result()).text

    async def main() -> list[str]:
        tasks = [asyncio.create_task(consume(g)) for g in gates]
        while not all(g.waiting.is_set() for g in gates):
            await asyncio.sleep(0.001)
        for g in gates:
            g.release.set()
        return await asyncio.gather(*tasks)

    assert asyncio.run(main()) == ["before after"] * count


def test_cancelling_the_task_cancels_the_run() -> None:
    step = Endless()

    async def main() -> AsyncRunReader:
        reader = arun(_options(step))
        first: list[StreamPart] = []

        async def consume() -> None:
            async for part in reader:
                first.append(part)

        task = asyncio.create_task(consume())
        while not first:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return reader

    reader = asyncio.run(main())
    assert step.cancelled.wait(5)
    assert reader.closed
    with pytest.raises(RunError) as info:
        asyncio.run(reader.result())
    assert info.value.finish_reason is FinishReason.CANCELED
    assert isinstance(info.value.err, Canceled)
    assert wait_for_threads("agentcore-aio") == 0
    assert wait_for_threads("agentcore-stream") == 0


def test_cancelling_a_task_awaiting_the_result_cancels_the_run() -> None:
    gate = Gate()

    async def main() -> None:
        reader = arun(_options(gate))
        task = asyncio.create_task(reader.result())
        while not gate.waiting.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert gate.cancelled.wait(5)


def test_a_timeout_around_a_read_cancels_the_run() -> None:
    gate = Gate()

    async def main() -> AsyncRunReader:
        reader = arun(_options(gate))
        assert (await reader.__anext__()).text == "before "
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(reader.__anext__(), 0.05)
        return reader

    reader = asyncio.run(main())
    assert gate.cancelled.wait(5)
    assert reader.closed


def test_recv_with_a_timeout_returns_none_and_the_run_goes_on() -> None:
    gate = Gate()

    async def main() -> list[Any]:
        reader = arun(_options(gate))
        seen: list[Any] = [await reader.recv(5)]
        seen.append(await reader.recv(0.01))  # the step waits for the gate: nothing comes
        gate.release.set()
        seen += [await reader.recv(5), await reader.recv(5), await reader.recv(5)]
        with pytest.raises(StopAsyncIteration):
            await reader.recv(5)
        return seen

    seen = asyncio.run(main())
    assert seen[1] is None
    assert [p.text for p in (seen[0], seen[2])] == ["before ", "after"]
    assert [p.kind for p in seen[3:]] == [StreamPartKind.STEP_FINISH, StreamPartKind.FINISH]
    assert not gate.cancelled.is_set()


def test_closing_the_reader_cancels_the_run_and_ends_iteration() -> None:
    for close in ("close", "aclose", "async with"):
        step = Endless()

        async def main(how: str = close, step: Endless = step) -> list[StreamPart]:
            reader = arun(_options(step))
            got: list[StreamPart] = []
            if how == "async with":
                async with reader:
                    got.append(await reader.__anext__())
            else:
                got.append(await reader.__anext__())
                await reader.aclose() if how == "aclose" else reader.close()
            got += [part async for part in reader]
            reader.close()  # twice is fine
            return got

        got = asyncio.run(main())
        assert [p.text for p in got] == ["tick 0 "], close
        assert step.cancelled.wait(5), close
    assert wait_for_threads("agentcore-aio") == 0


def test_closing_from_another_thread_wakes_the_waiting_task() -> None:
    gate = Gate()

    async def main() -> list[StreamPart]:
        reader = arun(_options(gate))
        got_one = threading.Event()

        def close_after_the_first_part() -> None:
            if got_one.wait(5):
                reader.close()

        closer = threading.Thread(target=close_after_the_first_part)
        closer.start()
        parts = []
        async for part in reader:  # waits for the gate after the first part, until the close
            parts.append(part)
            got_one.set()
        closer.join(5)
        return parts

    parts = asyncio.run(main())
    assert [p.text for p in parts] == ["before "]
    assert gate.cancelled.wait(5)


def test_a_dropped_reader_cancels_its_run() -> None:
    step = Endless()

    async def main() -> None:
        reader = arun(_options(step))
        await reader.__anext__()
        del reader
        gc.collect()

    asyncio.run(main())
    assert step.cancelled.wait(5)
    assert wait_for_threads("agentcore-aio") == 0


def test_text_yields_the_deltas_and_raises_a_failed_runs_error() -> None:
    async def texts(options: LoopOptions) -> list[str]:
        return [chunk async for chunk in arun(options).text()]

    assert asyncio.run(
        texts(LoopOptions(model=ScriptedModel(add_script()), messages=[user_message("x")], tools=[Add()]))
    ) == [
        "2 + 3 = ",
        "5",
    ]
    failing = _options(
        [
            StreamPart.text_delta("partial"),
            ModelError(ErrorClass.CONTEXT_LENGTH, message="too long", status=400),
        ]
    )
    with pytest.raises(RunError, match="too long"):
        asyncio.run(texts(failing))


def test_a_failed_run_raises_from_result() -> None:
    async def main() -> None:
        await arun(_options(ModelError(ErrorClass.AUTH, message="bad key", status=401))).result()

    with pytest.raises(RunError) as info:
        asyncio.run(main())
    assert isinstance(info.value.err, ModelError)


def test_messages_show_the_history_without_blocking() -> None:
    gate = Gate()

    async def main() -> None:
        async with arun(_options(gate)) as reader:
            assert (await reader.__anext__()).text == "before "
            assert [m.text for m in reader.messages] == ["go"]  # the step has not finished
            gate.release.set()
            await reader.result()
            assert [m.text for m in reader.messages] == ["go", "before after"]

    asyncio.run(main())


def test_a_reader_belongs_to_one_event_loop() -> None:
    reader = arun(_options(Endless()))

    async def first() -> None:
        await reader.__anext__()

    asyncio.run(first())
    with pytest.raises(RuntimeError, match="bound to the event loop that first used it"):
        asyncio.run(first())
    reader.close()


def test_buffer_must_be_positive() -> None:
    with pytest.raises(ValueError, match="buffer must be >= 1, got 0"):
        AsyncRunReader(run(add_options()), buffer=0)


def test_a_small_buffer_still_delivers_every_part_in_order() -> None:
    step = Endless(interval=0, limit=300)

    async def main() -> list[str]:
        async with arun(_options(step), buffer=1) as reader:
            return [p.text async for p in reader if p.kind is StreamPartKind.TEXT_DELTA]

    assert asyncio.run(main()) == [f"tick {i} " for i in range(300)]
