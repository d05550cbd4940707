"""examples/flask_app.py served by a real Werkzeug server on 127.0.0.1.

The stream is read with ``requests`` as it arrives; closing the client
connection must cancel the run and close the upstream HTTP response.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from werkzeug.serving import make_server

from agentcore import Context, FinishReason, Model, Role, StreamPart, ToolCall, ToolDefinition, Usage
from agentcore.integrations.demo_tools import COLORS, swatch_png
from agentcore.testing import ScriptedModel
from tests.conftest import wait_for_threads
from tests.localserver import LocalServer
from tests.loop_helpers import wait_until
from tests.test_web import (
    Endless,
    KeepStreams,
    read_events,
    read_raw_events,
    slow_anthropic_reply,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "flask_app.py"


def load_flask_example() -> ModuleType:
    """Import examples/flask_app.py (the examples folder is not a package)."""
    name = "agentcore_example_flask_app"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Flask finds its root path through sys.modules
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve_flask(model: Model | None = None, **options: Any) -> Iterator[str]:
    """Serve ``create_app(model, **options)`` with Werkzeug in a thread; yield its base URL."""
    with serve_wsgi(load_flask_example().create_app(model, **options)) as url:
        yield url


@contextlib.contextmanager
def serve_wsgi(app: Any) -> Iterator[str]:
    """Serve a WSGI app with Werkzeug in a thread; yield its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="werkzeug-test-server", daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def calculator_script() -> list[Any]:
    """A call to the demo calculator, then an answer in two deltas."""
    call = ToolCall(id="c1", name="calculator", input='{"expression": "2 + 3"}')
    return [
        [
            StreamPart.tool_call_event(call),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=50, output=10)),
        ],
        [
            StreamPart.text_delta("2 + 3 is "),
            StreamPart.text_delta("5."),
            StreamPart.step_finish(FinishReason.STOP, Usage(input=70, output=8)),
        ],
    ]


@contextlib.contextmanager
def open_stream(url: str) -> Iterator[requests.Response]:
    """GET a stream; leaving the block closes the client's connection."""
    with requests.Session() as session, session.get(url, stream=True, timeout=10) as response:
        yield response


def get_events(url: str) -> tuple[requests.Response, list[dict[str, Any]]]:
    with open_stream(url) as response:
        return response, list(read_events(response))


def test_the_page_has_the_form_and_the_event_source() -> None:
    with serve_flask(ScriptedModel([])) as url:
        response = requests.get(url + "/", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert '<form id="ask">' in response.text
    assert 'listen(askFirst.checked ? openRun(q) : "stream?q=" + encodeURIComponent(q))' in response.text
    assert "new EventSource(url)" in response.text


def test_the_stream_carries_every_part_with_the_terminal_last() -> None:
    model = ScriptedModel(calculator_script())
    with serve_flask(model) as url:
        response, events = get_events(url + "/stream?q=What%20is%202%2B3%3F")
    assert response.status_code == 200
    assert response.headers["Content-Type"].split(";")[0] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert [e["kind"] for e in events] == [
        "tool-call",
        "step-finish",
        "tool-result",
        "text-delta",
        "text-delta",
        "step-finish",
        "finish",
    ]
    assert events[0]["tool_call"] == {"id": "c1", "name": "calculator", "input": '{"expression": "2 + 3"}'}
    result = {"tool_call_id": "c1", "name": "calculator", "content": "5", "is_error": False}
    assert events[2]["tool_result"] == result
    assert "".join(e["text"] for e in events if e["kind"] == "text-delta") == "2 + 3 is 5."
    assert events[-1]["total_usage"] == {"input": 120, "output": 18, "cache_read": 0, "cache_write": 0}
    first = model.requests[0]
    assert first.messages[0].role is Role.USER
    assert first.messages[0].text == "What is 2+3?"
    assert [t.name for t in first.tools] == ["calculator", "utc_now", "word_count", "color_swatch"]
    assert "helpful assistant" in first.system


def test_without_a_key_the_offline_test_model_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with serve_flask() as url:
        _, events = get_events(url + "/stream?q=hello")
    results = {e["tool_result"]["name"]: e["tool_result"]["content"] for e in events if "tool_result" in e}
    assert results["calculator"] == "42"
    assert results["color_swatch"] == "a 16x16 red swatch"
    (swatch,) = (e["tool_result"]["files"] for e in events if "files" in e.get("tool_result", {}))
    png = swatch_png(COLORS["red"])
    assert swatch == [
        {
            "media_type": "image/png",
            "size": len(png),
            "filename": "red.png",
            "data_url": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
        }
    ]
    assert "42" in "".join(e["text"] for e in events if e["kind"] == "text-delta")
    assert events[-1]["kind"] == "finish"
    assert events[-1]["finish_reason"] == "stop"
    # The offline model reasons before each step, so the page has something to fold.
    blocks = [e["reasoning"] for e in events if e["kind"] == "reasoning"]
    assert [block["format"] for block in blocks] == ["test", "test"]
    streamed = "".join(e["text"] for e in events if e["kind"] == "reasoning-delta")
    assert streamed == "".join(block["text"] for block in blocks)
    kinds = [e["kind"] for e in events]
    assert kinds.index("reasoning") < kinds.index("tool-call")


@pytest.mark.parametrize("query", ["", "?q=", "?q=%20", "?q=" + "x" * 4001])
def test_a_missing_or_oversized_question_is_a_400(query: str) -> None:
    with serve_flask(ScriptedModel([])) as url:
        response = requests.get(url + "/stream" + query, timeout=10)
    assert response.status_code == 400


def test_a_run_error_reaches_the_browser_as_the_last_event() -> None:
    from agentcore import ErrorClass, ModelError

    model = ScriptedModel([ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401)])
    with serve_flask(model) as url:
        _, events = get_events(url + "/stream?q=hi")
    assert [e["kind"] for e in events] == ["error"]
    assert events[0]["error_class"] == "auth"
    assert events[0]["finish_reason"] == "error"


def test_a_client_disconnect_cancels_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = KeepStreams(monkeypatch, load_flask_example())
    step = Endless()
    with serve_flask(ScriptedModel([step])) as url:
        with open_stream(url + "/stream?q=go") as response:
            first = next(read_events(response))
            assert first == {"kind": "text-delta", "text": "tick 0 "}
        # The server notices at its next write, fails it, and closes the response.
        assert step.cancelled.wait(5.0)
        assert wait_for_threads("agentcore-stream") == 0
    assert step.sent < step.limit
    assert len(kept.streams) == 1


def test_a_client_disconnect_closes_the_upstream_response(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcore.providers.anthropic import AnthropicModel

    kept = KeepStreams(monkeypatch, load_flask_example())
    server.add(slow_anthropic_reply(deltas=300, pause=0.05))
    model = AnthropicModel("claude-test", api_key="test", base_url=server.url)
    with serve_flask(model) as url:
        with open_stream(url + "/stream?q=go") as response:
            assert next(read_events(response)) == {"kind": "text-delta", "text": "w0 "}
        started = time.monotonic()
        assert wait_until(lambda: server.disconnects == 1, timeout=5.0)
        assert time.monotonic() - started < 5.0  # the reply would take 15 s
        assert wait_for_threads("agentcore-stream") == 0
    assert server.hits == 1
    assert len(kept.streams) == 1
    assert server.requests[0]["body"]["messages"][0]["content"][0]["text"] == "go"


class SlowSearch:
    """A tool that works for up to 30 s in silence, unless the run is cancelled."""

    definition = ToolDefinition(name="slow_search", description="search slowly")

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = threading.Event()

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        self.started.set()
        if ctx.wait(30):
            self.cancelled.set()
        return "found"


def test_heartbeats_fill_a_long_tool_call_and_a_disconnect_during_it_cancels_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without heartbeats the server would write nothing until the tool
    returned, so neither a proxy nor the server would see the stream alive
    or the browser gone for 30 s."""
    example = load_flask_example()
    tool = SlowSearch()
    monkeypatch.setattr(example, "demo_tools", lambda: [tool])
    kept = KeepStreams(monkeypatch, example)
    call = ToolCall(id="c1", name="slow_search", input='{"q": "x"}')
    model = ScriptedModel(
        [
            [StreamPart.tool_call_event(call), StreamPart.step_finish(FinishReason.TOOL_CALLS)],
            [StreamPart.text_delta("late"), StreamPart.step_finish(FinishReason.STOP)],
        ]
    )
    with serve_flask(model, heartbeat=0.05) as url:
        with open_stream(url + "/stream?q=go") as response:
            events = read_raw_events(response)
            assert next(events).startswith(b'data: {"kind":"tool-call"')
            assert next(events).startswith(b'data: {"kind":"step-finish"')
            assert [next(events) for _ in range(3)] == [b": heartbeat"] * 3
            assert tool.started.is_set()
        # The server's next heartbeats fail against the closed connection, and
        # it closes the response: the run, and the tool's context, are cancelled.
        assert tool.cancelled.wait(5.0)
        assert wait_for_threads("agentcore-stream") == 0
    assert len(kept.streams) == 1
    assert len(model.requests) == 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.slow
def test_python_examples_flask_app_py_serves_the_offline_model() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PORT"] = str(port)
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until(lambda: _answers(url), timeout=20.0), "the app did not start"
        _, events = get_events(url + "/stream?q=hello")
        assert events[-1]["kind"] == "finish"
        assert any(e["kind"] == "tool-result" and e["tool_result"]["content"] == "42" for e in events)
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stderr is not None
        proc.stderr.close()


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False
