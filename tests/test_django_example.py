"""examples/django_app served by Django's own threaded WSGI server on 127.0.0.1.

The same checks as the Flask example: every part arrives, terminal last, and a
client disconnect cancels the run and closes the upstream HTTP response. One
test runs the real ``python manage.py runserver``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from agentcore import ErrorClass, Model, ModelError
from agentcore.testing import ScriptedModel
from tests.conftest import wait_for_threads
from tests.localserver import LocalServer
from tests.loop_helpers import wait_until
from tests.test_flask_example import calculator_script, free_port, get_events, load_flask_example, open_stream
from tests.test_web import Endless, KeepStreams, read_events, slow_anthropic_reply

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "examples" / "django_app"


@pytest.fixture(scope="module")
def views() -> Iterator[Any]:
    """Set Django up with the example's settings and return ``chatsite.views``."""
    patch = pytest.MonkeyPatch()
    patch.syspath_prepend(str(PROJECT))
    patch.setenv("DJANGO_SETTINGS_MODULE", "chatsite.settings")
    import django

    django.setup()
    from chatsite import views as module

    try:
        yield module
    finally:
        patch.undo()


@contextlib.contextmanager
def serve_django(views: Any, model: Model | None) -> Iterator[str]:
    """Serve the project with Django's ThreadedWSGIServer; ``views.MODEL = model`` meanwhile."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    httpd = ThreadedWSGIServer(("127.0.0.1", 0), WSGIRequestHandler, allow_reuse_address=False)
    httpd.set_app(get_wsgi_application())
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="django-test-server", daemon=True
    )
    thread.start()
    previous = views.MODEL
    views.MODEL = model
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        views.MODEL = previous
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_the_page_is_the_flask_examples_page(views: Any) -> None:
    with serve_django(views, ScriptedModel([])) as url:
        response = requests.get(url + "/", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.text == load_flask_example().PAGE


def test_the_stream_carries_every_part_with_the_terminal_last(views: Any) -> None:
    model = ScriptedModel(calculator_script())
    with serve_django(views, model) as url:
        response, events = get_events(url + "/stream?q=What%20is%202%2B3%3F")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-cache"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert "Content-Length" not in response.headers
    assert [e["kind"] for e in events] == [
        "tool-call",
        "step-finish",
        "tool-result",
        "text-delta",
        "text-delta",
        "step-finish",
        "finish",
    ]
    assert events[2]["tool_result"]["content"] == "5"
    assert "".join(e["text"] for e in events if e["kind"] == "text-delta") == "2 + 3 is 5."
    assert model.requests[0].messages[0].text == "What is 2+3?"


def test_events_arrive_as_they_are_produced(views: Any) -> None:
    step = Endless(interval=0.05)
    with serve_django(views, ScriptedModel([step])) as url, open_stream(url + "/stream?q=go") as response:
        events = read_events(response)
        assert next(events)["text"] == "tick 0 "
        assert next(events)["text"] == "tick 1 "  # not buffered until the end
        assert step.sent < 10
    assert step.cancelled.wait(5.0)
    assert wait_for_threads("agentcore-stream") == 0


def test_a_run_error_is_the_last_event(views: Any) -> None:
    model = ScriptedModel([ModelError(ErrorClass.CONTEXT_LENGTH, message="prompt is too long", status=400)])
    with serve_django(views, model) as url:
        _, events = get_events(url + "/stream?q=hi")
    assert [e["kind"] for e in events] == ["error"]
    assert events[0]["error_class"] == "context_length"


@pytest.mark.parametrize("query", ["", "?q=%20", "?q=" + "x" * 4001])
def test_a_missing_or_oversized_question_is_a_400(views: Any, query: str) -> None:
    with serve_django(views, ScriptedModel([])) as url:
        assert requests.get(url + "/stream" + query, timeout=10).status_code == 400
        assert requests.post(url + "/stream?q=hi", timeout=10).status_code == 405


def test_a_client_disconnect_cancels_the_run(views: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    kept = KeepStreams(monkeypatch, views)
    step = Endless()
    with serve_django(views, ScriptedModel([step])) as url:
        with open_stream(url + "/stream?q=go") as response:
            assert next(read_events(response)) == {"kind": "text-delta", "text": "tick 0 "}
        assert step.cancelled.wait(5.0)
        assert wait_for_threads("agentcore-stream") == 0
    assert step.sent < step.limit
    assert len(kept.streams) == 1


def test_a_client_disconnect_closes_the_upstream_response(
    views: Any, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentcore.providers.anthropic import AnthropicModel

    kept = KeepStreams(monkeypatch, views)
    server.add(slow_anthropic_reply(deltas=300, pause=0.05))
    model = AnthropicModel("claude-test", api_key="test", base_url=server.url)
    with serve_django(views, model) as url:
        with open_stream(url + "/stream?q=go") as response:
            assert next(read_events(response)) == {"kind": "text-delta", "text": "w0 "}
        started = time.monotonic()
        assert wait_until(lambda: server.disconnects == 1, timeout=5.0)
        assert time.monotonic() - started < 5.0  # the reply would take 15 s
        assert wait_for_threads("agentcore-stream") == 0
    assert server.hits == 1
    assert len(kept.streams) == 1


@pytest.mark.slow
def test_manage_py_runserver_serves_the_offline_model() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DJANGO_SETTINGS_MODULE")}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until(lambda: _answers(url), timeout=30.0), "runserver did not start"
        _, events = get_events(url + "/stream?q=hello")
        kinds: list[Any] = [e["kind"] for e in events]
        assert kinds[-1] == "finish"
        assert any(e["kind"] == "tool-result" and e["tool_result"]["content"] == "42" for e in events)
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=10)
    assert b"System check identified no issues" in output
    assert b'"GET /stream?q=hello HTTP/1.1" 200' in output


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False
