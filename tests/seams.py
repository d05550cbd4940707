"""Seams for :class:`agentcore.engine.channel.Channel` in tests: :class:`Watch` tells
when a side of the handshake sleeps (instead of sleeping in the test and
hoping), :class:`Scheduler` runs threads one handshake step at a time in an
order the test chooses."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

STEP_TIMEOUT = 10.0
"""Seconds a forced interleaving waits for a thread to reach its next step."""


class Watch:
    """Tells how often each side went to sleep, and whether it sleeps now."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.sleeps = {"reader": 0, "writer": 0}
        self.wakeups = {"reader": 0, "writer": 0}
        self.asleep = {"reader": False, "writer": False}

    def pause(self, step: str) -> None:
        pass

    def sleeping(self, side: str) -> None:
        with self._cond:
            self.sleeps[side] += 1
            self.asleep[side] = True
            self._cond.notify_all()

    def woken(self, side: str) -> None:
        with self._cond:
            self.wakeups[side] += 1
            self.asleep[side] = False

    def wait_asleep(self, side: str, when: Callable[[], bool] = lambda: True, timeout: float = 5.0) -> bool:
        """True once ``side`` sleeps at a moment when ``when()`` holds (``when``
        is checked each time a side goes to sleep)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.asleep[side] and when(), timeout)


class Deadlock(AssertionError):
    """Every thread left is asleep in the channel: a wakeup was lost."""


class Scheduler:
    """A seam that holds every thread before each handshake step and lets
    exactly one go at a time, in the order :meth:`step` names them.

    A thread is ``running`` from the moment it is let go until it pauses at
    its next step, goes to sleep in the channel (``asleep``) or returns
    (``done``); a sleeping thread is ``running`` again once another thread
    wakes its side. :meth:`settle` waits until no thread is running, so the
    test always knows which thread stands where: no timing is involved.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._names: dict[int, str] = {}
        self.state: dict[str, str] = {}
        """name -> "running", "asleep", "done", or the step it is paused before."""
        self._go: set[str] = set()
        self._asleep: dict[str, str] = {}  # side -> the thread sleeping on it
        self.errors: list[BaseException] = []
        self._threads: list[threading.Thread] = []

    # --- the Seam protocol, called by the channel ---

    def pause(self, step: str) -> None:
        name = self._names.get(threading.get_ident())
        if name is None:  # a thread the test does not schedule (its own checks)
            return
        with self._cond:
            self.state[name] = step
            self._cond.notify_all()
            self._cond.wait_for(lambda: name in self._go)
            self._go.discard(name)
            self.state[name] = "running"

    def sleeping(self, side: str) -> None:
        name = self._names.get(threading.get_ident())
        if name is None:
            return
        with self._cond:
            self.state[name] = "asleep"
            self._asleep[side] = name
            self._cond.notify_all()

    def woken(self, side: str) -> None:
        with self._cond:
            name = self._asleep.pop(side, None)
            if name is not None:
                self.state[name] = "running"

    # --- the test's side ---

    def spawn(self, name: str, target: Callable[[], object]) -> None:
        """Start ``target`` on a thread called ``name``; it pauses before its first step."""
        ready = threading.Event()

        def body() -> None:
            with self._cond:
                self._names[threading.get_ident()] = name
                self.state[name] = "running"
            ready.set()
            try:
                target()
            except BaseException as exc:
                self.errors.append(exc)
            finally:
                with self._cond:
                    self.state[name] = "done"
                    self._cond.notify_all()

        thread = threading.Thread(target=body, name=f"seam-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()
        assert ready.wait(STEP_TIMEOUT)
        self.settle()

    def settle(self) -> None:
        with self._cond:
            settled = self._cond.wait_for(lambda: "running" not in self.state.values(), STEP_TIMEOUT)
        assert settled, f"a thread did not reach its next step: {self.state}"

    def paused(self) -> list[str]:
        """The threads waiting before a step, in name order."""
        with self._cond:
            return sorted(n for n, s in self.state.items() if s not in ("running", "asleep", "done"))

    def step(self, name: str) -> None:
        """Let ``name`` take its next step, and wait until every thread settled."""
        with self._cond:
            assert self.state.get(name) not in (None, "running", "asleep", "done"), self.state
            self._go.add(name)
            self.state[name] = "running"
            self._cond.notify_all()
        self.settle()

    def run(self, choose: Callable[[list[str]], str]) -> list[str]:
        """Step threads chosen by ``choose`` until all are done; return the order.

        Raises:
            Deadlock: threads are left, all asleep.
        """
        order: list[str] = []
        while True:
            ready = self.paused()
            if not ready:
                with self._cond:
                    left = {n: s for n, s in self.state.items() if s != "done"}
                if left:
                    raise Deadlock(f"every thread left is asleep after {order}: {left}")
                break
            name = choose(ready)
            order.append(name)
            self.step(name)
        for thread in self._threads:
            thread.join(STEP_TIMEOUT)
        return order


def schedules(
    explore: Callable[[Callable[[list[str]], str]], object], limit: int = 20_000
) -> Iterator[list[str]]:
    """Run ``explore(choose)`` once per distinct schedule (every choice point
    tried with every thread that was ready there), depth first; yield each
    schedule. ``explore`` builds a fresh scenario and runs a
    :class:`Scheduler` with ``choose``."""
    pending: list[list[int]] = [[]]
    count = 0
    while pending:
        prefix = pending.pop()
        taken: list[int] = []
        options: list[int] = []

        def choose(
            ready: Sequence[str],
            prefix: list[int] = prefix,
            taken: list[int] = taken,
            options: list[int] = options,
        ) -> str:
            depth = len(taken)
            index = prefix[depth] if depth < len(prefix) else 0
            if depth >= len(prefix):
                options.append(len(ready))
            taken.append(index)
            return ready[index]

        explore(choose)
        # every untried choice at the points past the prefix becomes a new schedule
        for offset, width in enumerate(options):
            depth = len(prefix) + offset
            for alternative in range(1, width):
                pending.append([*taken[:depth], alternative])
        count += 1
        assert count <= limit, "too many schedules"
        yield [str(i) for i in taken]
