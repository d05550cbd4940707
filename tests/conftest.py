from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
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


# --- Postgres (tests/test_dbos.py, tests/test_sessions.py) ---------------------


def postgres_bin() -> Path | None:
    """The directory of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/N/bin."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return Path(initdb).resolve().parent
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def postgres_cluster() -> Iterator[str]:
    """A throwaway Postgres cluster on a free port; yields a database URL
    (of a database that does not exist yet: DBOS makes it,
    :func:`postgres_database` makes it otherwise). Skips the test, saying
    why, without Postgres's server binaries.

    initdb refuses to run as root: as root the cluster runs as Debian's
    ``postgres`` user, in a directory of its own outside pytest's (which
    only root may enter).
    """
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("no Postgres server binaries (initdb, pg_ctl): install Debian's postgresql")
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="agentcore-pg-"))
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: initdb cannot run as root")
        prefix = ["runuser", "-u", "postgres", "--"]
        shutil.chown(base, "postgres")
    data, port = base / "data", free_port()
    try:
        initdb = [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        ]
        subprocess.run([*prefix, *initdb], check=True, capture_output=True, timeout=120)
        settings = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o", settings]
        subprocess.run([*prefix, *pg_ctl, "start"], check=True, capture_output=True, timeout=120)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/agentcore_test"
        finally:
            subprocess.run(
                [*prefix, *pg_ctl, "-m", "immediate", "stop"], check=False, capture_output=True, timeout=120
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[str]:
    """A throwaway Postgres cluster for one test (:func:`postgres_cluster`)."""
    with postgres_cluster() as url:
        yield url


@pytest.fixture(scope="module")
def module_postgres() -> Iterator[str]:
    """One throwaway Postgres cluster for a whole test module, its database made."""
    with postgres_cluster() as url:
        postgres_database(url)
        yield url


def postgres_database(url: str) -> None:
    """Create the database ``url`` names (psycopg, through the cluster's ``postgres`` database)."""
    import psycopg

    server, _, name = url.rpartition("/")
    with psycopg.connect(f"{server}/postgres", autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
