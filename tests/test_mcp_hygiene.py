"""MCPTools leave nothing behind: after 100 open / call / close cycles over
stdio and 100 over streamable HTTP, no child process, no zombie, no thread
and no file descriptor is left; an MCPTools dropped without close() stops
its server once collected.

The stdio cycles use tests/mcp_servers/minimal_stdio.py (plain JSON-RPC):
a process that imports the SDK takes about a second to start, and a hundred
of them would take minutes. The SDK's server is stopped in most tests of
test_mcp.py, each checking for leftover processes.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator

import pytest

from agentcore import Context
from agentcore.integrations.mcp import MCPTools
from tests.loop_helpers import wait_until
from tests.mcp_servers.in_thread import HttpMCPServer
from tests.mcp_servers.support import MINIMAL_SERVER, PYTHON, children, open_fds

CYCLES = 100


class Baseline:
    def __init__(self) -> None:
        self.threads = set(threading.enumerate())
        self.children = {pid for pid, _ in children()}
        self.fds = open_fds()

    def assert_restored(self) -> None:
        assert children(self.children) == []  # no process, no zombie
        assert wait_until(lambda: set(threading.enumerate()) <= self.threads), (
            set(threading.enumerate()) - self.threads
        )
        assert wait_until(lambda: open_fds() <= self.fds), (open_fds(), self.fds)


@pytest.fixture
def http_server() -> Iterator[HttpMCPServer]:
    server = HttpMCPServer()
    yield server
    server.stop()


@pytest.mark.slow
def test_100_stdio_cycles_leave_no_process_zombie_thread_or_descriptor() -> None:
    with MCPTools.stdio(PYTHON, ["-S", MINIMAL_SERVER]) as warm:  # first imports and threads
        warm["ping"].execute({}, Context())
    baseline = Baseline()
    start = time.monotonic()
    for _ in range(CYCLES):
        with MCPTools.stdio(PYTHON, ["-S", MINIMAL_SERVER]) as tools:
            assert tools["ping"].execute({}, Context()) == "pong"
    took = time.monotonic() - start
    baseline.assert_restored()
    assert took < 60, f"{CYCLES} cycles took {took:.1f} s"


@pytest.mark.slow
def test_100_http_cycles_leave_no_thread_or_descriptor(http_server: HttpMCPServer) -> None:
    with MCPTools.http(http_server.url) as warm:
        warm["echo"].execute({"text": "warm"}, Context())
    baseline = Baseline()
    for _ in range(CYCLES):
        with MCPTools.http(http_server.url) as tools:
            assert tools["echo"].execute({"text": "hi"}, Context()) == "hi"
    baseline.assert_restored()


def test_mcp_tools_dropped_without_close_stop_their_server_once_collected() -> None:
    baseline = Baseline()
    tools = MCPTools.stdio(PYTHON, ["-S", MINIMAL_SERVER])
    assert tools["ping"].execute({}, Context()) == "pong"
    assert len(children(baseline.children)) == 1
    del tools
    gc.collect()
    baseline.assert_restored()
