from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.localserver import LocalServer

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def server() -> Iterator[LocalServer]:
    """A real HTTP server on 127.0.0.1; add replies with ``server.add(...)``."""
    srv = LocalServer()
    try:
        yield srv
    finally:
        srv.close()


def wait_for_threads(name: str, timeout: float = 2.0) -> int:
    """Wait until no thread called ``name`` is alive; return how many remain."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        alive = [t for t in threading.enumerate() if t.name == name and t.is_alive()]
        if not alive or time.monotonic() > deadline:
            return len(alive)
        time.sleep(0.01)
