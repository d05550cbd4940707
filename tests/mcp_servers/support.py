"""Helpers for the MCP tests: the servers' paths, a server's stderr read
line by line without sleeping, and this process's child processes."""

from __future__ import annotations

import os
import select
import sys
import time
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
TOOLS_SERVER = str(HERE / "tools_server.py")
MINIMAL_SERVER = str(HERE / "minimal_stdio.py")


class ServerLog:
    """A pipe for a stdio server's stderr (``MCPTools.stdio(..., stderr=log.writer)``);
    :meth:`wait_for` blocks until the server writes a line."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self._fd = read
        self.writer = os.fdopen(write, "w")
        self._buffer = b""
        self.lines: list[str] = []

    def wait_for(self, prefix: str, timeout: float = 20.0) -> str:
        """The next line starting with ``prefix`` (earlier lines are kept in :attr:`lines`)."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\n", 1)
                line = raw.decode(errors="replace")
                self.lines.append(line)
                if line.startswith(prefix):
                    return line
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, (
                f"the server wrote no line starting with {prefix!r} within {timeout} s: {self.lines}"
            )
            chunk = os.read(self._fd, 65536)
            assert chunk, f"the server's stderr closed before a line starting with {prefix!r}: {self.lines}"
            self._buffer += chunk

    def close(self) -> None:
        self.writer.close()
        os.close(self._fd)


def children(excluding: Iterable[int] = ()) -> list[tuple[int, str]]:
    """This process's child processes as (pid, state), but those in
    ``excluding``; state ``Z`` is a zombie (Linux /proc)."""
    skip = set(excluding)
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == me and int(entry) not in skip:
            found.append((int(entry), fields[0]))
    return found


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))
