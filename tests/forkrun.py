"""Run Python scripts, each in a process of its own, without paying for a new
interpreter and agentcore's imports each time.

``python -m tests.forkrun`` imports agentcore (:data:`PRELOAD`), then serves
requests, one JSON object a line on stdin:
``{"argv": [script, *args], "cwd": dir, "env": {...}, "out": file, "err": file}``
(or ``"argv": ["-m", module, *args]``). For each it forks a child that runs
the script or module as ``__main__``, as ``python script args`` would, with
the working directory, environment, standard output and standard error it
was given, and exits the way an interpreter does (``atexit`` handlers run,
threads that are not daemons are joined). The server answers two lines:
``pid <n>`` at once, and ``exit <code>`` when the child is gone (a negative
code is the signal that ended it). Nothing runs in the server between
requests, so every child starts from the same state: agentcore imported, no
thread started. A child costs about 0.06 s instead of a new interpreter's
0.4 s.

:class:`ForkRunner` is the test's side.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
PRELOAD = ("agentcore", "agentcore.testing", "requests")
"""Imported by the server before any fork: what nearly every documented block imports."""


def _child(request: dict[str, Any]) -> int:
    """Run the script of ``request`` in this (forked) process; return its exit code."""
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the process's stdin until it exits
    os.dup2(os.open(request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 1)
    os.dup2(os.open(request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = list(request["argv"])
    try:
        if argv[0] == "-m":
            sys.argv = argv[1:]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # reported like an uncaught exception
        traceback.print_exc()
        return 1
    return 0


def serve() -> None:
    """Answer the requests on stdin until it closes (see the module docstring)."""
    for name in PRELOAD:
        importlib.import_module(name)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the terminal is the parent's
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            # Leave the loop: the interpreter then exits as after a script.
            raise SystemExit(_child(request))
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


@attrs.frozen
class Ran:
    """What a script did: its exit code (negative: the signal that ended it) and output."""

    returncode: int
    stdout: str
    stderr: str


class ForkRunner:
    """The test's side of ``python -m tests.forkrun``: :meth:`run` a script.

    Not for concurrent use: one script at a time.
    """

    def __init__(self, workdir: Path) -> None:
        self._workdir = workdir
        self._count = 0
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.forkrun"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert self._proc.stdout is not None
        self._answers = self._proc.stdout.fileno()

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 60) -> Ran:
        """Run ``python argv...`` in a fork; a script still running after
        ``timeout`` seconds is killed (its ``returncode`` is then ``-9``)."""
        assert self._proc.stdin is not None
        self._count += 1
        out = self._workdir / f"{self._count}.out"
        err = self._workdir / f"{self._count}.err"
        request = {"argv": argv, "cwd": str(cwd), "env": env, "out": str(out), "err": str(err)}
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        pid = int(self._answer("pid", 30))
        try:
            code = int(self._answer("exit", timeout))
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            code = int(self._answer("exit", 30))
        return Ran(code, out.read_text(errors="replace"), err.read_text(errors="replace"))

    def _answer(self, word: str, timeout: float) -> str:
        """The value of the server's next line, which must start with ``word``
        (read from the descriptor byte by byte: nothing is buffered past it)."""
        line = b""
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([self._answers], [], [], timeout)
            if not ready:
                raise TimeoutError(f"no {word!r} line from tests.forkrun within {timeout} s")
            byte = os.read(self._answers, 1)
            assert byte, "tests.forkrun exited"
            line += byte
        text = line.decode()
        assert text.startswith(f"{word} "), f"tests.forkrun answered {text!r}"
        return text.split()[1]

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(30)
        assert self._proc.stdout is not None
        self._proc.stdout.close()


if __name__ == "__main__":
    serve()
