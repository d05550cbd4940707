"""The run channel (agentcore/engine/channel.py ``Channel``): exactly one terminal part,
nothing after it, and no lost wakeup, proven without relying on the GIL.

Two kinds of proof:

* forced interleavings: a :class:`tests.seams.Scheduler` holds each thread
  before every step of the handshake (send, end, take, close, finish) and
  lets one go at a time; every order of the steps is run (depth first), and
  each must end with the reader holding the parts that were accepted, then
  exactly one terminal part, with no thread left asleep;
* stress: thousands of real runs under ``sys.setswitchinterval(1e-6)``, a
  cancel racing the worker's own end.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from agentcore import Canceled, FinishReason, StreamPart, Usage
from agentcore.engine.channel import Channel, StreamReader
from tests.loop_helpers import asleep_in, wait_until
from tests.seams import Deadlock, Scheduler, Watch, schedules

FINISH = StreamPart.finish(FinishReason.STOP, Usage(1, 2))
CANCELED = StreamPart.error(Canceled("deadline"), Usage(1, 0), FinishReason.CANCELED)
WORKER_ERROR = StreamPart.error(RuntimeError("worker failed"), finish_reason=FinishReason.ERROR)


def text(value: str) -> StreamPart:
    return StreamPart.text_delta(value)


class Race:
    """One scenario: a worker, a canceller and a reader on one channel."""

    def __init__(self, maxsize: int) -> None:
        self.scheduler = Scheduler()
        self.channel: Channel[None] = Channel(maxsize, None, self.scheduler)
        self.sent: list[tuple[StreamPart, bool]] = []
        self.ended: dict[str, bool] = {}
        self.read: list[StreamPart] = []

    def send(self, part: StreamPart) -> None:
        self.sent.append((part, self.channel.send(part)))

    def end(self, who: str, part: StreamPart) -> None:
        self.ended[who] = self.channel.end(part)

    def read_all(self, reader: StreamReader) -> None:
        self.read.extend(reader)

    def accepted(self) -> list[StreamPart]:
        return [part for part, ok in self.sent if ok and not part.terminal]

    def check_one_end(self, terminals: dict[str, StreamPart]) -> StreamPart:
        """Exactly one end won; the reader got the accepted parts, then its part, then nothing."""
        winners = [who for who, won in self.ended.items() if won]
        assert len(winners) == 1, self.ended
        terminal = terminals[winners[0]]
        assert self.channel.terminal is terminal
        assert self.read == [*self.accepted(), terminal]
        # nothing is accepted once the run ended: every send after the end returned False
        results = [ok for part, ok in self.sent if not part.terminal]
        assert results == sorted(results, reverse=True), results
        return terminal


def explore_all(scenario: Callable[[Callable[[list[str]], str]], object]) -> int:
    count = 0
    for _ in schedules(scenario):
        count += 1
    return count


@pytest.mark.parametrize("maxsize", [1, 2, 8])
def test_every_interleaving_of_worker_end_and_cancel_gives_one_terminal_part_last(maxsize: int) -> None:
    def scenario(choose: Callable[[list[str]], str]) -> None:
        race = Race(maxsize)
        reader = StreamReader(race.channel, None)

        def worker() -> None:
            race.send(text("a"))
            race.send(text("b"))
            race.end("worker", FINISH)
            race.channel.finish()

        race.scheduler.spawn("canceller", lambda: race.end("canceller", CANCELED))
        race.scheduler.spawn("reader", lambda: race.read_all(reader))
        race.scheduler.spawn("worker", worker)
        race.scheduler.run(choose)
        assert race.scheduler.errors == []
        race.check_one_end({"worker": FINISH, "canceller": CANCELED})
        assert reader.closed

    assert explore_all(scenario) > 50


@pytest.mark.parametrize("maxsize", [1, 4])
def test_no_part_sent_after_a_terminal_part_reaches_the_reader(maxsize: int) -> None:
    # The worker sends its own terminal part and then, like a producer that
    # does not look at send's result, another part; a cancel races both.
    late = text("late")

    def scenario(choose: Callable[[list[str]], str]) -> None:
        race = Race(maxsize)
        reader = StreamReader(race.channel, None)

        def worker() -> None:
            race.send(text("a"))
            race.ended["worker"] = race.channel.send(WORKER_ERROR)
            race.send(late)
            race.channel.finish()

        race.scheduler.spawn("worker", worker)
        race.scheduler.spawn("canceller", lambda: race.end("canceller", CANCELED))
        race.scheduler.spawn("reader", lambda: race.read_all(reader))
        race.scheduler.run(choose)
        assert race.scheduler.errors == []
        race.check_one_end({"worker": WORKER_ERROR, "canceller": CANCELED})
        assert (late, False) in race.sent
        assert late not in race.read

    assert explore_all(scenario) > 20


@pytest.mark.parametrize("maxsize", [1, 2])
def test_every_interleaving_of_close_with_a_worker_on_a_full_queue_frees_the_worker(maxsize: int) -> None:
    def scenario(choose: Callable[[list[str]], str]) -> None:
        race = Race(maxsize)
        reader = StreamReader(race.channel, None)

        def worker() -> None:
            for value in "abcd":
                race.send(text(value))
            race.end("worker", FINISH)
            race.channel.finish()

        def read_one_then_close() -> None:
            race.read.append(next(reader))
            reader.close()

        race.scheduler.spawn("worker", worker)
        race.scheduler.spawn("reader", read_one_then_close)
        race.scheduler.run(choose)  # Deadlock if the worker is left asleep
        assert race.scheduler.errors == []
        assert race.read == [text("a")]
        assert next(reader, None) is None
        results = [ok for part, ok in race.sent]
        assert results == sorted(results, reverse=True)
        assert results[0] is True

    assert explore_all(scenario) >= 8


def test_every_interleaving_of_a_producer_that_finishes_without_a_terminal_part() -> None:
    def scenario(choose: Callable[[list[str]], str]) -> None:
        race = Race(1)
        reader = StreamReader(race.channel, None)

        def worker() -> None:
            race.send(text("a"))
            race.send(text("b"))
            race.channel.finish()
            race.send(text("after the end"))

        race.scheduler.spawn("worker", worker)
        race.scheduler.spawn("reader", lambda: race.read_all(reader))
        race.scheduler.run(choose)
        assert race.scheduler.errors == []
        assert race.read == [text("a"), text("b")]
        assert [ok for _, ok in race.sent] == [True, True, False]

    assert explore_all(scenario) > 3


def test_the_scheduler_reports_a_lost_wakeup() -> None:
    # The proof's own check: a reader waiting on a channel nobody ends is
    # reported as a deadlock instead of hanging the test.
    scheduler = Scheduler()
    channel: Channel[None] = Channel(1, None, scheduler)
    scheduler.spawn("reader", lambda: list(StreamReader(channel, None)))
    with pytest.raises(Deadlock):
        scheduler.run(lambda ready: ready[0])
    channel.finish()  # let the reader's thread go


def test_a_reader_ends_at_the_terminal_part_while_the_producer_goes_on() -> None:
    # The reader stops at the terminal part: it never waits for the producer
    # to return (a body drain, a tool that ignores the cancel).
    channel: Channel[None] = Channel(4, None)
    reader = StreamReader(channel, None)
    assert channel.send(text("a")) is True
    assert channel.end(FINISH) is True
    assert channel.send(text("late")) is False
    assert list(reader) == [text("a"), FINISH]  # returns although finish() was never called
    assert reader.closed


def test_end_builds_a_cancel_from_the_snapshot_published_last() -> None:
    channel: Channel[Usage] = Channel(4, Usage(1, 1))
    channel.publish(Usage(5, 7))
    assert channel.end(lambda usage: StreamPart.error(Canceled("x"), usage, FinishReason.CANCELED)) is True
    terminal = channel.terminal
    assert terminal is not None
    assert terminal.total_usage == Usage(5, 7)
    assert channel.end(FINISH) is False
    assert channel.terminal is terminal


def test_an_idle_reader_and_a_worker_on_a_full_queue_sleep_without_waking() -> None:
    # Waits are event driven: a reader with nothing to read and a worker on a
    # full queue each sleep once, in a wait without a time limit (asleep in
    # the kernel), which only a notify ends, however long they wait.
    idle_watch, full_watch = Watch(), Watch()
    idle: Channel[None] = Channel(1, None, idle_watch)
    full: Channel[None] = Channel(1, None, full_watch)
    parts: list[StreamPart] = []
    sent: list[bool] = []
    reading = threading.Thread(target=lambda: parts.extend(StreamReader(idle, None)), name="idle-reader")
    sending = threading.Thread(
        target=lambda: sent.extend([full.send(text("a")), full.send(text("b"))]), name="full-writer"
    )
    reading.start()
    sending.start()
    assert wait_until(lambda: asleep_in("idle-reader", "agentcore/engine/channel.py:take", untimed=True))
    assert wait_until(lambda: asleep_in("full-writer", "agentcore/engine/channel.py:send", untimed=True))
    assert idle_watch.sleeps == {"reader": 1, "writer": 0}
    assert full_watch.sleeps == {"reader": 0, "writer": 1}
    assert idle.send(text("a")) is True
    idle.finish()
    full.close()
    reading.join(5)
    sending.join(5)
    assert parts == [text("a")]
    assert sent == [True, False]


def test_a_sleeping_reader_is_notified_once_per_sleep_not_once_per_part() -> None:
    # Parts that come while a woken reader has not run yet need no notify of
    # their own (a notify per part cost more than the rest of send).
    watch = Watch()
    channel: Channel[None] = Channel(64, None, watch)
    parts: list[StreamPart] = []
    reading = threading.Thread(target=lambda: parts.extend(StreamReader(channel, None)))
    reading.start()
    sent = [channel.send(text(str(n % 10))) for n in range(20_000)]
    channel.finish()
    reading.join(10)
    assert all(sent)
    assert len(parts) == 20_000
    # one notify per sleep by a send, and at most one more by finish()
    assert watch.wakeups["reader"] <= watch.sleeps["reader"] + 1, watch.wakeups


@pytest.fixture
def tiny_switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_stress_stream_readers_end_at_the_terminal_part(tiny_switch_interval: None) -> None:
    # A producer that goes on sending after its terminal part, a close racing
    # it: no part after the terminal one is ever read.
    for _ in range(3000):
        channel: Channel[None] = Channel(2, None)
        reader = StreamReader(channel, None)

        def produce(channel: Channel[None] = channel) -> None:
            channel.send(text("a"))
            channel.send(WORKER_ERROR)
            channel.send(text("late"))
            channel.finish()

        worker = threading.Thread(target=produce)
        canceller = threading.Thread(target=channel.end, args=(CANCELED,))
        worker.start()
        canceller.start()
        parts = list(reader)
        worker.join()
        canceller.join()
        assert parts[-1] in (WORKER_ERROR, CANCELED)
        assert [p for p in parts if p.terminal] == [parts[-1]]
        assert text("late") not in parts
