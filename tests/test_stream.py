"""stream_func and StreamReader (agentcore/engine/channel.py)."""

from __future__ import annotations

import gc
import random
import threading
import time
from collections.abc import Callable

import pytest

from agentcore.engine.channel import (
    DEFAULT_QUEUE_SIZE,
    Channel,
    SendFunc,
    StreamReader,
    start_worker,
    stream_func,
)
from agentcore.types import FinishReason, StreamPart, StreamPartKind, Usage
from tests.conftest import wait_for_threads
from tests.seams import Watch

WORKER = "agentcore-stream"


def stream_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == WORKER and t.is_alive()}


def join_all(threads: set[threading.Thread], timeout: float = 2.0) -> bool:
    """True when every thread in ``threads`` ended within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in threads)


class Endless:
    """A producer that sends text parts until ``send`` says the reader is gone."""

    def __init__(self) -> None:
        self.sent = 0
        self.results: list[bool] = []
        self.stopped = threading.Event()

    def __call__(self, send: SendFunc) -> None:
        try:
            while True:
                ok = send(StreamPart.text_delta(str(self.sent)))
                self.results.append(ok)
                if not ok:
                    return
                self.sent += 1
        finally:
            self.stopped.set()


class OnClose:
    def __init__(self) -> None:
        self.calls = 0
        self.threads: list[int] = []

    def __call__(self) -> None:
        self.calls += 1
        self.threads.append(threading.get_ident())


def start(
    produce: Callable[[SendFunc], object], on_close: Callable[[], object] | None = None, **kwargs: int
) -> tuple[StreamReader, set[threading.Thread]]:
    """stream_func, plus the worker thread it started."""
    before = stream_threads()
    reader = stream_func(produce, on_close, **kwargs)
    return reader, stream_threads() - before


def watched(
    produce: Callable[[SendFunc], object], on_close: Callable[[], object] | None = None, queue_size: int = 1
) -> tuple[StreamReader, Watch, threading.Thread]:
    """What stream_func builds, with a :class:`Watch` on the channel that
    tells when the producer sleeps on a full queue."""
    watch = Watch()
    channel: Channel[None] = Channel(queue_size, None, watch)
    reader = StreamReader(channel, on_close)
    return reader, watch, start_worker(produce, channel)


def wait_until_blocked(producer: Endless, watch: Watch, count: int) -> None:
    """Wait until the producer sleeps on a full queue having sent exactly ``count`` parts."""
    assert watch.wait_asleep("writer", lambda: producer.sent == count)


def texts(count: int) -> list[StreamPart]:
    return [StreamPart.text_delta(f"t{i}") for i in range(count)]


@pytest.mark.parametrize("queue_size", [1, 3, DEFAULT_QUEUE_SIZE])
def test_iterates_all_parts_in_order(queue_size: int) -> None:
    parts = [*texts(500), StreamPart.finish(FinishReason.STOP, Usage(input=3, output=4))]

    def produce(send: SendFunc) -> None:
        for part in parts:
            assert send(part) is True

    reader, workers = start(produce, queue_size=queue_size)
    assert [t.name for t in workers] == [WORKER]
    assert all(t.daemon for t in workers)
    assert list(reader) == parts
    assert reader.closed is True
    assert list(reader) == []
    assert join_all(workers)


def test_recv_is_next() -> None:
    parts = texts(3)

    def produce(send: SendFunc) -> None:
        for part in parts:
            send(part)

    reader = stream_func(produce)
    assert reader.recv() == parts[0]
    assert next(reader) == parts[1]
    assert reader.recv() == parts[2]
    with pytest.raises(StopIteration):
        reader.recv()
    with pytest.raises(StopIteration):
        reader.recv()


def recv_with_timeouts() -> tuple[list[object], list[StreamPart]]:
    """What ``recv(timeout)`` gives while the producer is quiet, then once it
    sent a part and its terminal part, then after the end; and those parts."""
    go = threading.Event()
    parts = [StreamPart.text_delta("a"), StreamPart.finish(FinishReason.STOP, Usage())]

    def produce(send: SendFunc) -> None:
        go.wait(30)
        for part in parts:
            send(part)

    reader = stream_func(produce)
    seen: list[object] = [reader.recv(0)]
    started = time.monotonic()
    seen.append(reader.recv(0.05))
    seen.append(time.monotonic() - started >= 0.05)
    go.set()
    seen += [reader.recv(30), reader.recv(30)]
    try:
        reader.recv(30)
    except StopIteration:
        seen.append("end")
    return seen, parts


@pytest.mark.parametrize("thread", ["main", "other"])
def test_recv_with_a_timeout_returns_none_while_nothing_comes(thread: str) -> None:
    """On the main thread the wait is cut into slices (for Ctrl-C); on another
    it is one timed wait. Either way the timeout is honoured."""
    if thread == "main":
        seen, parts = recv_with_timeouts()
    else:
        out: list[tuple[list[object], list[StreamPart]]] = []
        worker = threading.Thread(target=lambda: out.append(recv_with_timeouts()))
        worker.start()
        worker.join(30)
        [(seen, parts)] = out
    assert seen == [None, None, True, *parts, "end"]


def test_recv_with_a_timeout_ends_when_another_thread_closes_the_reader() -> None:
    quiet = threading.Event()
    reader = stream_func(lambda send: quiet.wait(30))
    timer = threading.Timer(0.1, reader.close)
    timer.start()
    started = time.monotonic()
    with pytest.raises(StopIteration):
        reader.recv(30)
    assert time.monotonic() - started < 5
    timer.join()
    quiet.set()


@pytest.mark.parametrize("timeout", [-0.5, float("nan")])
def test_recv_timeout_must_be_a_number_of_seconds_from_0(timeout: float) -> None:
    reader = stream_func(lambda send: None)
    with pytest.raises(ValueError, match="timeout must be a number of seconds >= 0 or None"):
        reader.recv(timeout)
    reader.close()


def test_producer_returning_without_terminal_part_ends_the_stream() -> None:
    reader = stream_func(lambda send: send(StreamPart.text_delta("only")))
    assert [p.text for p in reader] == ["only"]


def test_empty_producer() -> None:
    reader = stream_func(lambda send: None)
    assert list(reader) == []
    assert reader.closed is True


def test_close_is_idempotent_and_calls_on_close_once() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, workers = start(producer, on_close, queue_size=4)
    assert next(reader).text == "0"
    closed_before = reader.closed
    reader.close()
    reader.close()
    assert closed_before is False
    assert reader.closed is True
    assert on_close.calls == 1
    assert on_close.threads == [threading.get_ident()]
    with pytest.raises(StopIteration):
        next(reader)
    assert join_all(workers)
    del reader
    gc.collect()
    assert on_close.calls == 1


def test_close_frees_a_producer_asleep_on_a_full_queue() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, watch, worker = watched(producer, on_close, queue_size=1)
    assert next(reader).text == "0"
    wait_until_blocked(producer, watch, 2)  # part 1 queued, part 2 waits in send
    reader.close()
    assert producer.stopped.wait(5.0)
    assert join_all({worker}, 5.0)
    assert producer.results[-1] is False
    assert producer.results.count(False) == 1
    assert on_close.calls == 1


def test_close_from_another_thread_wakes_a_blocked_reader() -> None:
    release = threading.Event()

    def produce(send: SendFunc) -> None:
        send(StreamPart.text_delta("first"))
        release.wait(5)

    reader, workers = start(produce)
    assert next(reader).text == "first"
    closer = threading.Timer(0.1, reader.close)
    closer.start()
    started = time.monotonic()
    with pytest.raises(StopIteration):
        next(reader)
    assert time.monotonic() - started < 2.0
    closer.join()
    release.set()
    assert join_all(workers)


def test_send_returns_false_after_close() -> None:
    results: list[bool] = []
    go = threading.Event()
    finished = threading.Event()

    def produce(send: SendFunc) -> None:
        go.wait(5)
        results.append(send(StreamPart.text_delta("late")))
        results.append(send(StreamPart.text_delta("later")))
        finished.set()

    reader, workers = start(produce)
    reader.close()
    go.set()
    assert finished.wait(2.0)
    assert results == [False, False]
    assert join_all(workers)


def test_unread_parts_are_dropped_on_close() -> None:
    done = threading.Event()

    def produce(send: SendFunc) -> None:
        for part in texts(5):
            send(part)
        done.set()

    reader = stream_func(produce, queue_size=10)
    assert done.wait(2.0)
    assert next(reader).text == "t0"
    reader.close()
    assert list(reader) == []


def test_exception_in_produce_becomes_a_terminal_error_part() -> None:
    boom = RuntimeError("producer failed")

    def produce(send: SendFunc) -> None:
        send(StreamPart.text_delta("partial"))
        raise boom

    reader, workers = start(produce)
    parts = list(reader)
    assert [p.kind for p in parts] == [StreamPartKind.TEXT_DELTA, StreamPartKind.ERROR]
    assert parts[0].text == "partial"
    assert parts[1].err is boom
    assert parts[1].finish_reason is FinishReason.ERROR
    assert parts[1].terminal is True
    assert join_all(workers)


class Interrupt(BaseException):
    """Like KeyboardInterrupt: not an Exception subclass."""


@pytest.mark.parametrize("exc", [Interrupt("stop now"), SystemExit(3), GeneratorExit()])
def test_base_exception_in_produce_becomes_a_terminal_error_part(exc: BaseException) -> None:
    def produce(send: SendFunc) -> None:
        raise exc

    reader, workers = start(produce)
    parts = list(reader)
    assert len(parts) == 1
    assert parts[0].kind is StreamPartKind.ERROR
    assert parts[0].err is exc
    assert parts[0].finish_reason is FinishReason.ERROR
    assert join_all(workers)


def test_exception_after_close_does_not_hang_the_worker() -> None:
    go = threading.Event()

    def produce(send: SendFunc) -> None:
        go.wait(5)
        raise ValueError("after close")

    reader, workers = start(produce, queue_size=1)
    reader.close()
    go.set()
    assert join_all(workers)


def test_exception_while_the_queue_is_full_is_delivered_after_the_backlog() -> None:
    def produce(send: SendFunc) -> None:
        for part in texts(3):
            send(part)
        raise KeyError("late failure")

    reader, watch, _ = watched(produce, queue_size=1)
    assert watch.wait_asleep("writer")  # t0 queued, t1 waits for room
    parts = list(reader)
    assert [p.text for p in parts[:3]] == ["t0", "t1", "t2"]
    assert parts[3].kind is StreamPartKind.ERROR
    assert isinstance(parts[3].err, KeyError)


def test_context_manager_closes() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, workers = start(producer, on_close, queue_size=1)
    with reader as entered:
        assert entered is reader
        assert next(entered).text == "0"
    assert reader.closed is True
    assert on_close.calls == 1
    assert join_all(workers)
    assert producer.results[-1] is False


def test_context_manager_closes_on_error() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, workers = start(producer, on_close, queue_size=2)

    def use() -> None:
        with reader:
            next(reader)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        use()
    assert on_close.calls == 1
    assert join_all(workers)


def test_a_dropped_reader_releases_a_blocked_producer() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, watch, worker = watched(producer, on_close, queue_size=1)
    assert next(reader).text == "0"
    wait_until_blocked(producer, watch, 2)
    del reader
    gc.collect()
    assert producer.stopped.wait(2.0)
    assert join_all({worker})
    assert producer.results[-1] is False
    assert on_close.calls == 1


def test_a_never_read_reader_is_collected_and_stops_its_worker() -> None:
    producer = Endless()
    on_close = OnClose()
    reader, workers = start(producer, on_close, queue_size=1)
    del reader
    gc.collect()
    assert producer.stopped.wait(2.0)
    assert join_all(workers)
    assert on_close.calls == 1


def test_many_early_closed_streams_leave_no_worker_alive() -> None:
    before = stream_threads()
    started = time.monotonic()
    for _ in range(200):
        producer = Endless()
        reader = stream_func(producer, queue_size=1)
        assert next(reader).text == "0"
        reader.close()
    assert time.monotonic() - started < 30
    assert join_all(stream_threads() - before, 5.0)
    assert wait_for_threads(WORKER) == 0


def test_queue_size_must_be_positive() -> None:
    started: list[int] = []
    before = stream_threads()
    for bad in (0, -1):
        with pytest.raises(ValueError, match="queue_size must be >= 1"):
            stream_func(lambda send: started.append(1), queue_size=bad)
    assert stream_threads() - before == set()
    assert started == []


def test_producer_waits_for_the_reader_with_a_bounded_queue() -> None:
    producer = Endless()
    reader, watch, _ = watched(producer, queue_size=3)
    wait_until_blocked(producer, watch, 3)  # three queued, the fourth waits in send
    assert [next(reader).text for _ in range(3)] == ["0", "1", "2"]
    reader.close()
    assert producer.stopped.wait(2.0)


def test_a_producer_asleep_on_a_full_queue_resumes_when_the_reader_takes_the_queue() -> None:
    # The reader takes every queued part at once; the producer then fills the
    # queue again while the reader holds that batch, and sleeps once more.
    producer = Endless()
    reader, watch, _ = watched(producer, queue_size=8)
    wait_until_blocked(producer, watch, 8)
    assert next(reader).text == "0"
    wait_until_blocked(producer, watch, 16)
    assert [next(reader).text for _ in range(15)] == [str(i) for i in range(1, 16)]
    reader.close()
    assert producer.stopped.wait(2.0)


@pytest.mark.parametrize("seed", range(4))
def test_no_part_is_lost_or_reordered_whatever_the_timing(seed: int) -> None:
    # Producer and reader pause at random points, so each side is caught
    # asleep, about to sleep and running while the other changes the queue.
    rng = random.Random(seed)
    for _ in range(40):
        count = rng.randint(0, 300)
        size = rng.choice([1, 2, 3, 5, 16])
        pauses = [rng.random() < 0.05 for _ in range(2 * count + 2)]
        parts = texts(count)

        def produce(send: SendFunc, parts: list[StreamPart] = parts, pauses: list[bool] = pauses) -> None:
            for index, part in enumerate(parts):
                if pauses[index]:
                    time.sleep(0.0005)
                assert send(part) is True

        reader = stream_func(produce, queue_size=size)
        got = []
        for index, part in enumerate(reader):
            if pauses[count + index]:
                time.sleep(0.0005)
            got.append(part)
        assert got == parts


def test_the_reader_ends_at_a_terminal_part_the_producer_sends() -> None:
    # After a finish or error part the reader is exhausted, and later sends
    # return False, even though the producer has not returned yet.
    results: list[bool] = []
    release = threading.Event()
    finish = StreamPart.finish(FinishReason.STOP, Usage(1, 1))

    def produce(send: SendFunc) -> None:
        results.append(send(StreamPart.text_delta("a")))
        results.append(send(finish))
        results.append(send(StreamPart.text_delta("late")))
        release.wait(5)  # a body drain: the reader must not wait for it

    reader = stream_func(produce)
    try:
        assert list(reader) == [StreamPart.text_delta("a"), finish]
        assert reader.closed is True
    finally:
        release.set()
    assert results == [True, True, False]


def test_an_end_from_another_thread_while_the_worker_streams_ends_the_stream_with_that_part() -> None:
    for _ in range(50):
        producer = Endless()
        channel: Channel[None] = Channel(random.choice([1, 4, 64]), None)
        reader = StreamReader(channel, None)
        worker = start_worker(producer, channel)
        first = next(reader)
        terminal = StreamPart.error(RuntimeError("deadline"), finish_reason=FinishReason.CANCELED)
        assert channel.end(terminal) is True
        rest = list(reader)
        assert rest[-1] is terminal
        assert [p.text for p in [first, *rest[:-1]]] == [str(i) for i in range(len(rest))]
        assert producer.stopped.wait(2.0)
        worker.join(2.0)
        assert producer.results[-1] is False
