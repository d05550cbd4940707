from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcore import cost
from agentcore.transport.memory import MemoryTransport
from tests.localserver import LocalServer

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C raises KeyboardInterrupt here and in the processes the tests
    start, however pytest was started: a shell runs a background command
    (``pytest &``) with SIGINT ignored, which its children inherit, and the
    Ctrl-C tests would then wait for an interrupt that never comes."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """The number of workers for ``-n auto`` (pyproject.toml's addopts): two
    per CPU, at most eight. Much of the suite waits rather than computes (for
    a subprocess to start, a browser to render, a server to answer), so two
    workers per CPU keep the CPUs busy; every worker also collects the whole
    suite (seconds of CPU), which is what the cap bounds."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(2 * cpus, 8)


@pytest.fixture
def transport() -> MemoryTransport:
    """An in-memory transport for an adapter (``transport=transport``): add
    canned answers with ``transport.add(...)``, read ``transport.sent``."""
    return MemoryTransport()


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1; add replies with ``server.add(...)``."""
    srv = LocalServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture(scope="module")
def module_server() -> Iterator[LocalServer]:
    """One server for a whole test module (see :func:`shared_server`)."""
    srv = LocalServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def shared_server(module_server: LocalServer) -> LocalServer:
    """The module's one server, reset for this test: for modules with many
    server tests, where a server per test would cost its start and stop."""
    module_server.reset()
    return module_server


def wait_for_threads(name: str, timeout: float = 2.0) -> int:
    """Wait until no thread called ``name`` is alive; return how many remain."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        alive = [t for t in threading.enumerate() if t.name == name and t.is_alive()]
        if not alive or time.monotonic() > deadline:
            return len(alive)
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def _each_test_warns_of_unpriced_models_afresh() -> None:
    """agentcore warns of a model without a price once per process
    (agentcore/cost.py): each test starts as a process would, so what a test
    sees does not depend on which tests its worker ran before."""
    cost._unpriced.clear()
