"""The modules a plain run passes through are the ones docs/architecture.md lists
("One plain run, in eight modules"): a run is traced with ``sys.setprofile``
and every agentcore module whose code ran on the run's behalf is compared
with the list."""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

import agentcore
from agentcore import Context, LoopOptions, ToolDefinition, run, user_message
from agentcore.testing import TestModel
from tests.loop_helpers import wait_no_threads

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGE = pathlib.Path(agentcore.__file__).resolve().parent
BEGIN = "<!-- plain run: checked by tests/test_plain_run.py -->"
END = "<!-- end of plain run -->"


class Add:
    """A plain ``Tool``: a definition and ``execute``."""

    definition = ToolDefinition(
        "add",
        "Add two integers.",
        '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}',
    )

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return str(arguments["a"] + arguments["b"])


class Tracer:
    """A profile function that notes the package modules whose functions are
    called, on every thread, except below the calls in ``skipped`` (the
    model's ``stream`` and ``model_id``, the tool's ``execute``: their own
    implementation)."""

    def __init__(self, skipped: set[types.CodeType]) -> None:
        self.skipped = skipped
        self.modules: set[str] = set()
        self._depth: dict[int, int] = {}  # thread -> how deep it is in a skipped call
        self._lock = threading.Lock()

    def __call__(self, frame: types.FrameType, event: str, _arg: object) -> None:
        if event not in ("call", "return"):
            return
        thread = threading.get_ident()
        code = frame.f_code
        with self._lock:
            depth = self._depth.get(thread, 0)
            if code in self.skipped:  # a generator's resumption is a call too, each yield a return
                self._depth[thread] = depth + 1 if event == "call" else depth - 1
            elif event == "call" and depth == 0:
                path = pathlib.Path(code.co_filename)
                if path.is_relative_to(PACKAGE):
                    self.modules.add(path.relative_to(PACKAGE).as_posix())


@contextlib.contextmanager
def tracing() -> Iterator[Tracer]:
    """Trace what runs inside the block, on this thread and on the threads it starts."""
    model_id = vars(TestModel)["model_id"].fget  # a property
    tracer = Tracer({TestModel.stream.__code__, model_id.__code__, Add.execute.__code__})
    threading.setprofile(tracer)  # the run's worker thread starts after this
    sys.setprofile(tracer)
    try:
        yield tracer
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def documented() -> set[str]:
    text = PAGE.read_text()
    listed = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    return set(re.findall(r"^\d+\. `agentcore/([\w/]+\.py)`", listed, re.MULTILINE))


def traced_run(options: LoopOptions) -> set[str]:
    """The package modules that ``run(options).result()`` passes through."""
    with tracing() as tracer:
        # Kept past the tracing: the history's messages dying would run the
        # model's weak-reference callbacks (the adapters' per-message memo).
        result = run(options).result()
        assert wait_no_threads("agentcore-stream") == []  # the worker's last calls count too
    del result
    return tracer.modules


def plain_run() -> set[str]:
    """:func:`traced_run` of a plain run: one step calls a tool, one answers."""
    options = LoopOptions(model=TestModel(), messages=[user_message("Add 1 and 2.")], tools=[Add()])
    return traced_run(options)


def structured_run() -> set[str]:
    """:func:`traced_run` of a run that asks for a structured answer."""
    options = LoopOptions(model=TestModel(), messages=[user_message("hi")], output_type=dict[str, int])
    return traced_run(options)


def in_a_fresh_process(function: str) -> set[str]:
    """What ``function()`` of this module returns, called in a process that has
    not imported OpenTelemetry (this one may have: other test files trace)."""
    script = (
        "import json, sys\n"
        f"from tests.test_plain_run import {function}\n"
        f"modules = {function}()\n"
        "assert 'opentelemetry.trace' not in sys.modules\n"
        "print(json.dumps(sorted(modules)))\n"
    )
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert child.returncode == 0, child.stderr
    modules: list[str] = json.loads(child.stdout)
    return set(modules)


def test_a_plain_run_passes_through_the_modules_docs_architecture_lists() -> None:
    assert in_a_fresh_process("plain_run") == documented()
    assert len(documented()) <= 8


def test_the_tracer_sees_the_modules_off_the_list() -> None:
    # A run that asks for a structured answer passes through agentcore/output.py,
    # the loop's checks of the answer and the schema layer too.
    assert in_a_fresh_process("structured_run") - documented() == {
        "engine/answer.py",
        "output.py",
        "schema/signature.py",
        "schema/validation.py",
    }


def test_the_plain_run_traced_is_what_it_says() -> None:
    options = LoopOptions(model=TestModel(), messages=[user_message("Add 1 and 2.")], tools=[Add()])
    result = run(options).result()
    assert [step.finish_reason.value for step in result.steps] == ["tool-calls", "stop"]
    assert result.steps[0].tool_results[0].content == "2"  # TestModel's example arguments: 1 + 1
