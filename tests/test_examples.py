"""The examples and the documentation run as written.

* ``examples/notebook.ipynb`` is executed with nbclient on a kernel of this
  interpreter; its outputs must show the streamed answer, the result, the
  continued conversation, a reasoning model's thoughts and an image going
  into and out of a tool, and match the outputs saved in the file.
* ``examples/script.py``, ``examples/testing_with_scripted_model.py`` (under
  pytest) and ``examples/typed_usage.py`` run in processes of their own, offline.
* ``mypy --strict`` passes over the examples, as a user's type checker sees
  the public API.
* Every ```python block of README.md and docs/*.md runs in a process of its
  own, unless an HTML comment right before it says otherwise (see
  :func:`code_blocks`).

Those processes are forks of one interpreter that imported agentcore already
(:mod:`tests.forkrun`): each runs as ``python script.py`` would, without
paying for a new interpreter.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.forkrun import ForkRunner, Ran

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NOTEBOOK = EXAMPLES / "notebook.ipynb"
TYPED_FILES = ["examples/typed_usage.py", "examples/script.py", "examples/testing_with_scripted_model.py"]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_MINE = {"reliability.md"}  # docs pages whose blocks are not written for this test

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


def offline_env() -> dict[str, str]:
    """The environment without provider keys, so every example picks the offline TestModel."""
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkRunner]:
    """Runs ``python args...``: each script in a process of its own, forked
    from one that imported agentcore already (:mod:`tests.forkrun`)."""
    runner = ForkRunner(tmp_path_factory.mktemp("forkrun"))
    try:
        yield runner
    finally:
        runner.close()


def run_python(python: ForkRunner, args: list[str], cwd: Path = ROOT, timeout: float = 120) -> Ran:
    return python.run(args, cwd=cwd, env=offline_env(), timeout=timeout)


# --- the notebook ---------------------------------------------------------------


def cell_texts(notebook: Any) -> list[str]:
    """The text each code cell printed (stream outputs and plain-text results), in order."""
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        text = ""
        for output in cell.outputs:
            if output.output_type == "stream":
                text += output.text
            elif output.output_type in ("execute_result", "display_data"):
                text += output.data.get("text/plain", "")
        texts.append(text)
    return texts


# Run in a child process: the kernel client's ZeroMQ sockets, event loop and
# threads then never outlive the run inside the test process (tests that count
# sockets and threads run after this module).
_EXECUTE = """
import sys

import nbformat
from nbclient import NotebookClient

source, target, kernel, cwd = sys.argv[1:]
notebook = nbformat.read(source, as_version=4)
NotebookClient(
    notebook, kernel_name=kernel, timeout=120, record_timing=False, resources={"metadata": {"path": cwd}}
).execute()
nbformat.write(notebook, target)
"""


@pytest.fixture(scope="module")
def executed_notebook(tmp_path_factory: pytest.TempPathFactory) -> Any:
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # A kernel spec for this interpreter, found first through JUPYTER_PATH: a
    # "python3" kernel installed elsewhere on the machine is not used.
    work = tmp_path_factory.mktemp("notebook")
    spec = work / "jupyter" / "kernels" / "agentcore-examples"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "agentcore examples", "language": "python"})
    )
    env = offline_env()
    env["JUPYTER_PATH"] = str(work / "jupyter")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    executed = work / "executed.ipynb"
    proc = subprocess.run(
        [sys.executable, "-c", _EXECUTE, str(NOTEBOOK), str(executed), "agentcore-examples", str(EXAMPLES)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return nbformat.read(executed, as_version=4)


def test_the_notebook_is_valid_nbformat_4() -> None:
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    assert notebook.nbformat == 4
    sources = "\n".join(cell.source for cell in notebook.cells)
    assert "@tool" in sources
    assert "for chunk in reader.text():" in sources
    assert 'print(chunk, end="")' in sources
    assert "result.messages" in sources


def test_the_notebook_runs_and_shows_the_streamed_answer(executed_notebook: Any) -> None:
    errors = [
        output
        for cell in executed_notebook.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert errors == []
    schema, streamed, result, follow_up, stored, reasoning, files = cell_texts(executed_notebook)
    assert json.loads(schema)["properties"]["city"]["enum"] == ["Paris", "Tokyo"]
    answer = (
        "Here is what the tools said. "
        'get_weather returned: {"city": "Paris", "temperature_c": 18, "sky": "cloudy"}'
    )
    assert streamed == answer
    assert f"answer: {answer}\n" in result
    assert "finish: stop\n" in result
    assert "usage:  Usage(input=" in result
    assert 'step 1: tool-calls, calls [\'get_weather({"city": "Paris"})\']' in result
    assert "step 2: stop" in result
    assert "You said: Summarize that in one line." in follow_up
    assert "6 messages in the history" in follow_up
    assert stored.startswith("True (")
    thoughts = (
        "I can use get_weather; I will call it once and answer from the results.",
        "The tools have answered; I will report what they said.",
    )
    assert reasoning == (
        f"{thoughts[0]}  [end of thought]\n{thoughts[1]}  [end of thought]\n{answer}\n{thoughts!r}\n"
    )
    assert files == (
        "Here is what the tools said. color_swatch returned: a 16x16 red swatch with 1 file: image/png, "
        "79 bytes (You attached 1 file: image/png, 79 bytes.)\n"
        "image/png red.png 79 bytes b'\\x89PNG'\n"
    )


def test_the_saved_notebook_outputs_are_current(executed_notebook: Any) -> None:
    nbformat = pytest.importorskip("nbformat")
    saved = nbformat.read(NOTEBOOK, as_version=4)
    assert cell_texts(saved) == cell_texts(executed_notebook), (
        "examples/notebook.ipynb holds stale outputs; run it again and save it"
    )


# --- the example scripts -------------------------------------------------------------


def test_script_runs_offline(python: ForkRunner) -> None:
    proc = run_python(python, ["examples/script.py", "What is 12.5 * 4?"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[multiply -> 50.0]" in proc.stdout
    assert "multiply returned: 50.0" in proc.stdout
    assert "finish: stop; usage: Usage(input=" in proc.stdout


def test_testing_example_passes_under_pytest(python: ForkRunner) -> None:
    # "-o addopts=": as in a user's project, without this repository's
    # options (its parallel workers, pyproject.toml).
    proc = run_python(
        python,
        [
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "examples/testing_with_scripted_model.py",
        ],
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^8 passed", proc.stdout, re.MULTILINE), proc.stdout


def test_typed_usage_runs_offline(python: ForkRunner) -> None:
    proc = run_python(python, ["examples/typed_usage.py"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Here is what the tools said." in proc.stdout


@pytest.mark.slow
def test_the_examples_pass_mypy_strict() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", *TYPED_FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


# --- code blocks in README.md and docs/ ----------------------------------------------

_FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
_MARKER = re.compile(r"<!--\s*doctest:\s*(.*?)\s*-->\s*$")


class Block(NamedTuple):
    document: str
    line: int
    code: str
    skip: str  # why the block is only compiled; "" when it runs
    name: str
    needs: tuple[str, ...]


def code_blocks(path: Path) -> list[Block]:
    """The ```python blocks of a Markdown file, with the directives before each.

    An HTML comment on the line right before the fence, ``<!-- doctest: ... -->``,
    holds space-separated directives:

    * ``skip=<reason>`` (the rest of the comment is the reason): the block is
      only compiled, e.g. because it calls a real provider;
    * ``name=<id>``: later blocks can build on this one;
    * ``needs=<id>[,<id>]``: the named blocks' code runs first, in the same
      interpreter (a skipped block may not be needed).
    """
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.match(before.strip())
        skip, name, needs = "", "", ()
        if marker:
            directives = marker.group(1)
            if directives.startswith("skip="):
                skip = directives.removeprefix("skip=") or "no reason given"
            else:
                for word in directives.split():
                    key, _, value = word.partition("=")
                    if key == "name":
                        name = value
                    elif key == "needs":
                        needs = tuple(value.split(","))
                    else:
                        raise AssertionError(f"{path.name}: unknown doctest directive {word!r}")
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(path.name, line, match.group(1), skip, name, needs))
    return blocks


ALL_BLOCKS = [block for path in DOCUMENTS if path.name not in NOT_MINE for block in code_blocks(path)]


def test_the_documents_have_code_blocks() -> None:
    documents = {block.document for block in ALL_BLOCKS}
    assert "README.md" in documents
    assert len(ALL_BLOCKS) >= 10
    skipped = [block for block in ALL_BLOCKS if block.skip]
    assert len(skipped) <= len(ALL_BLOCKS) // 4, "most blocks should run, not only compile"


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[f"{b.document}:{b.line}" for b in ALL_BLOCKS])
def test_a_documented_python_block_runs(block: Block, tmp_path: Path, python: ForkRunner) -> None:
    compile(block.code, f"{block.document}:{block.line}", "exec")
    if block.skip:
        return
    named = {b.name: b for b in ALL_BLOCKS if b.document == block.document and b.name}
    parts = []
    for need in block.needs:
        assert need in named, f"{block.document}:{block.line} needs unknown block {need!r}"
        assert not named[need].skip, f"{block.document}:{block.line} needs a skipped block"
        parts.append(named[need].code)
    script = tmp_path / "block.py"
    script.write_text("\n".join([*parts, block.code]), encoding="utf-8")
    proc = run_python(python, [str(script)], cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, f"{block.document}:{block.line}\n{proc.stdout}{proc.stderr}"


_LOG_FORMAT = re.compile(r'logging\.basicConfig\(format="([^"]*)"\)')


@pytest.mark.parametrize("document", ["README.md", "docs/logging.md"])
def test_the_recommended_log_format_names_agentcore_once(document: str) -> None:
    """agentcore's log messages begin with ``agentcore: `` (what Python's
    last-resort handler prints when nothing is configured, like the command's
    own lines); the format the documents recommend must not add the logger's
    name in front of that."""
    [fmt] = _LOG_FORMAT.findall((ROOT / document).read_text(encoding="utf-8"))
    from agentcore import (
        ErrorClass,
        FinishReason,
        LoopOptions,
        ModelError,
        StreamPart,
        generate,
        user_message,
    )
    from agentcore.testing import ScriptedModel

    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Collect()
    handler.setFormatter(logging.Formatter(fmt))
    logger = logging.getLogger("agentcore")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    try:
        model = ScriptedModel(
            [
                ModelError(ErrorClass.RATE_LIMITED, retry_after=0.01, message="slow down", status=429),
                [StreamPart.text_delta("Hi"), StreamPart.step_finish(FinishReason.STOP)],
            ]
        )
        generate(
            LoopOptions(model=model, messages=[user_message("Hello")], retry_sleep=lambda _seconds: None)
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [line] = lines
    assert line.count("agentcore") == 1, line
    assert line.endswith(
        "WARNING agentcore: step 1 (scripted) failed with RATE_LIMITED (attempt 1 of 3); "
        "retrying in 0.01 s: rate limited: slow down (HTTP 429) (retry after 0.01 s)"
    ), line


def test_every_paragraph_on_a_session_and_the_header_wait_names_the_adapter() -> None:
    """Wherever a document speaks of a session and of a cancel while waiting
    for the response headers, it says that ``CancellableHTTPAdapter``
    (mounted on a caller's own session) lets the cancel end that wait."""
    missing = []
    for path in DOCUMENTS:
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")):
            words = " ".join(paragraph.lower().split())
            if (
                "session" in words
                and "response headers" in words
                and "CancellableHTTPAdapter" not in paragraph
            ):
                missing.append(f"{path.relative_to(ROOT)}: {words[:100]}")
    assert missing == []


# --- the line-delimited example of docs/writing-a-provider.md ---------------------------


@contextlib.contextmanager
def documented_line_model(base_url: str) -> Iterator[Any]:
    """A ``LineModel`` from the docs on a transport of its own, whose session
    is closed afterwards (so no keep-alive socket outlives the test; later
    tests count sockets)."""
    from agentcore.transport.http import HTTPTransport, new_session

    [block] = [b for b in code_blocks(ROOT / "docs" / "writing-a-provider.md") if b.name == "linemodel"]
    namespace: dict[str, Any] = {"__name__": "linemodel"}
    exec(compile(block.code, "docs/writing-a-provider.md", "exec"), namespace)
    with new_session() as session:
        transport = HTTPTransport(session)
        yield namespace["LineModel"]("line-1", api_key=LINE_KEY, base_url=base_url, transport=transport)


LINE_KEY = "sk-line-secret-0123456789"
LINES = {"Content-Type": "application/x-ndjson"}


def line_body(*events: Any) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def test_the_documented_provider_passes_check_model_and_runs() -> None:
    from agentcore import LoopOptions, generate, user_message
    from agentcore.testing import check_model
    from tests.localserver import LocalServer, Reply

    body = line_body(
        {"type": "text", "text": "Hel"},
        {"type": "text", "text": "lo"},
        {"type": "done", "reason": "stop", "input_tokens": 3, "output_tokens": 2},
    )
    server = LocalServer([Reply(actions=[body[:30], body[30:]], headers=LINES)])
    try:
        with documented_line_model(server.url) as model:
            check_model(model)
            result = generate(LoopOptions(model=model, messages=[user_message("hi")]))
            assert result.text == "Hello"
            assert result.usage.input == 3
            assert LINE_KEY not in repr(model)
        assert server.requests[-1]["path"] == "/v1/generate"
        assert server.requests[-1]["headers"]["authorization"] == f"Bearer {LINE_KEY}"
    finally:
        server.close()


def test_the_documented_provider_stops_when_cancelled_mid_stream() -> None:
    from agentcore import LoopOptions, run, user_message
    from tests.conftest import wait_for_threads
    from tests.localserver import LocalServer, Reply, Stall

    first = line_body({"type": "text", "text": "Hel"})
    server = LocalServer([Reply(actions=[first, Stall()], headers=LINES)])
    try:
        with documented_line_model(server.url) as model:
            reader = run(LoopOptions(model=model, messages=[user_message("hi")]))
            assert next(reader).text == "Hel"
            reader.close()  # the stream is stalled: only the cancel's socket shutdown ends the read
            assert wait_for_threads("agentcore-stream", timeout=5) == 0
    finally:
        server.close()


def test_the_documented_provider_reads_a_retry_after_date() -> None:
    # the from-scratch example did float(Retry-After): UPSTREAM "could not convert string to float"
    import email.utils
    import time

    from agentcore import Context, ErrorClass, ModelError, Request, user_message
    from tests.localserver import LocalServer, json_reply

    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server = LocalServer([json_reply(429, {"error": "slow down"}, {"Retry-After": when})])
    try:
        with documented_line_model(server.url) as model:
            try:
                list(model.stream(Request(messages=[user_message("hi")]), Context()))
            except ModelError as error:  # not pytest.raises: its ExceptionInfo would keep the response alive
                failed = error
            else:
                pytest.fail("a 429 fails the step")
        assert (failed.error_class, failed.status) == (ErrorClass.RATE_LIMITED, 429)
        assert 25 < failed.retry_after <= 31
    finally:
        server.close()


def test_the_documented_provider_retries_a_429() -> None:
    from agentcore import ErrorClass, LoopOptions, ModelError, RunError, generate, user_message
    from tests.localserver import LocalServer, json_reply

    server = LocalServer([json_reply(429, {"error": "slow down"}, {"Retry-After": "0.01"})])
    try:
        with documented_line_model(server.url) as model:
            try:
                generate(LoopOptions(model=model, messages=[user_message("hi")], max_retries=1))
            except RunError as error:  # not pytest.raises: its ExceptionInfo would keep the response alive
                cause = error.err
            else:
                pytest.fail("the run should have failed")
        assert isinstance(cause, ModelError)
        assert cause.error_class is ErrorClass.RATE_LIMITED
        assert server.hits == 2
    finally:
        server.close()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (line_body([1, 2]), "a line that is not an object: [1, 2]"),
        (line_body({"type": "text", "text": 5}), "a line of the wrong shape: text is 5, not str"),
        (
            line_body({"type": "call", "id": "c1", "name": "add", "arguments": "{}"}),
            "a line of the wrong shape: arguments is '{}', not dict",
        ),
        (
            line_body({"type": "done", "reason": "stop", "input_tokens": True, "output_tokens": 1}),
            "a line of the wrong shape: input_tokens is True, not int",
        ),
        (
            b'{"type": "text", "text": "Hi"\n{"type": "done"}\n',
            'malformed JSON line: b\'{"type": "text", "text": "Hi"\'',
        ),
    ],
    ids=["a list", "a number for text", "arguments as text", "a bool for a count", "malformed JSON"],
)
def test_the_documented_provider_fails_a_line_of_the_wrong_shape_as_upstream(
    body: bytes, message: str
) -> None:
    # the from-scratch example let a TypeError or a KeyError escape (MUST 2)
    from agentcore import Context, ErrorClass, ModelError, Request, user_message
    from tests.localserver import LocalServer, Reply

    server = LocalServer([Reply(actions=[body], headers=LINES)])
    try:
        with documented_line_model(server.url) as model:
            try:
                list(model.stream(Request(messages=[user_message("hi")]), Context()))
            except ModelError as error:
                failed = error
            else:
                pytest.fail("the step should have failed")
        assert (failed.error_class, failed.message) == (ErrorClass.UPSTREAM, message)
    finally:
        server.close()
