"""agentcore.integrations.asgi and the ASGI examples, served by a real uvicorn on 127.0.0.1.

``sse_body`` writes the same event bytes as the WSGI ``sse_stream``, with
heartbeat comments in silences. The Starlette example runs in-process under
uvicorn (so tests can inject models and watch the run be cancelled); the
Django async example runs as ``python -m uvicorn`` in a subprocess whose
Anthropic model points at a local server, where a client disconnect shows as
the upstream connection closing.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
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
import uvicorn

from agentcore import LoopOptions, Model, run, user_message
from agentcore.aio import arun
from agentcore.integrations.asgi import SSEBody, sse_body
from agentcore.integrations.web import HEARTBEAT
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import ScriptedModel
from tests.conftest import wait_for_threads
from tests.localserver import LocalServer
from tests.loop_helpers import wait_until
from tests.test_flask_example import calculator_script, free_port, get_events, open_stream
from tests.test_web import (
    EXPECTED_ADD_RUN,
    Endless,
    Quiet,
    add_options,
    read_events,
    slow_anthropic_reply,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


# --- sse_body -------------------------------------------------------------------------


async def _collect(body: SSEBody) -> bytes:
    return b"".join([chunk async for chunk in body])


def test_the_events_are_the_wsgi_streams_bytes() -> None:
    assert asyncio.run(_collect(sse_body(arun(add_options())))) == EXPECTED_ADD_RUN
    # A blocking reader is wrapped for the event loop.
    assert asyncio.run(_collect(sse_body(run(add_options())))) == EXPECTED_ADD_RUN


def _quiet_run(step: Quiet) -> Any:
    return arun(LoopOptions(model=ScriptedModel([step]), messages=[user_message("go")]))


def test_silence_is_filled_with_heartbeats() -> None:
    step = Quiet()

    async def main() -> list[bytes]:
        chunks: list[bytes] = []
        async with sse_body(_quiet_run(step), heartbeat=0.01) as body:
            async for chunk in body:
                chunks.append(chunk)
                if chunks.count(HEARTBEAT) == 2:
                    step.release.set()
        return chunks

    chunks = asyncio.run(main())
    events = [c for c in chunks if c != HEARTBEAT]
    assert events[0] == b'data: {"kind":"text-delta","text":"a"}\n\n'
    assert events[1] == b'data: {"kind":"text-delta","text":"b"}\n\n'
    assert events[-1].startswith(b'data: {"kind":"finish"')
    assert chunks.index(HEARTBEAT) == 1  # between the two deltas
    assert HEARTBEAT == b": heartbeat\n\n"
    assert not step.cancelled.is_set()


def test_without_heartbeats_silence_stays_silent() -> None:
    step = Quiet()

    async def main() -> bytes:
        body = sse_body(_quiet_run(step), heartbeat=None)
        first = await body.__anext__()
        waiting = asyncio.ensure_future(body.__anext__())
        done, _ = await asyncio.wait({waiting}, timeout=0.05)
        assert not done
        step.release.set()
        second = await waiting
        body.close()
        return first + second

    assert (
        asyncio.run(main())
        == b'data: {"kind":"text-delta","text":"a"}\n\ndata: {"kind":"text-delta","text":"b"}\n\n'
    )


def test_closing_the_body_cancels_the_run() -> None:
    step = Quiet()

    async def main() -> SSEBody:
        body = sse_body(_quiet_run(step))
        await body.__anext__()
        await body.aclose()
        assert [c async for c in body] == []
        return body

    body = asyncio.run(main())
    assert step.cancelled.wait(5)
    assert body.reader.closed


@pytest.mark.parametrize("heartbeat", [0, -1.0, float("nan")])
def test_heartbeat_must_be_positive(heartbeat: float) -> None:
    reader = run(add_options())
    with pytest.raises(ValueError, match="heartbeat must be a positive number of seconds or None"):
        sse_body(reader, heartbeat=heartbeat)
    reader.close()


# --- a real uvicorn --------------------------------------------------------------------


@contextlib.contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 in a thread; yield its base URL."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test-server", daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: server.started, timeout=10.0), "uvicorn did not start"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def load_starlette_example() -> ModuleType:
    """Import examples/starlette_app.py (the examples folder is not a package)."""
    name = "agentcore_example_starlette_app"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / "starlette_app.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class KeepBodies:
    """Replaces the example's ``sse_body`` to keep every body alive, so that a run
    can be cancelled only by the disconnect (not by a dropped body's finalizer)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> None:
        self.bodies: list[SSEBody] = []
        monkeypatch.setattr(module, "sse_body", self)

    def __call__(self, reader: Any, **kwargs: Any) -> SSEBody:
        body = sse_body(reader, **kwargs)
        self.bodies.append(body)
        return body


@contextlib.contextmanager
def serve_starlette(model: Model, **kwargs: Any) -> Iterator[str]:
    with serve_asgi(load_starlette_example().create_app(model, **kwargs)) as url:
        yield url


def test_starlette_serves_the_shared_page() -> None:
    with serve_starlette(ScriptedModel([])) as url:
        response = requests.get(url + "/", timeout=10)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.text == (EXAMPLES / "chat.html").read_text(encoding="utf-8")


def test_starlette_streams_every_part_with_the_terminal_last() -> None:
    model = ScriptedModel(calculator_script())
    with serve_starlette(model) as url:
        response, events = get_events(url + "/stream?q=What%20is%202%2B3%3F")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream; charset=utf-8"
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
    assert events[2]["tool_result"]["content"] == "5"
    assert model.requests[0].messages[0].text == "What is 2+3?"


@pytest.mark.parametrize("query", ["", "?q=%20", "?q=" + "x" * 4001])
def test_starlette_refuses_a_missing_or_oversized_question(query: str) -> None:
    with serve_starlette(ScriptedModel([])) as url:
        assert requests.get(url + "/stream" + query, timeout=10).status_code == 400


def test_starlette_events_arrive_as_they_are_produced() -> None:
    step = Endless(interval=0.05)
    with serve_starlette(ScriptedModel([step])) as url, open_stream(url + "/stream?q=go") as response:
        events = read_events(response)
        assert next(events)["text"] == "tick 0 "
        assert next(events)["text"] == "tick 1 "
        assert step.sent < 10
    assert step.cancelled.wait(5.0)


def test_starlette_sends_heartbeats_while_the_run_is_silent() -> None:
    step = Quiet()
    with (
        serve_starlette(ScriptedModel([step]), heartbeat=0.02) as url,
        open_stream(url + "/stream?q=go") as response,
    ):
        seen = b""
        while seen.count(HEARTBEAT) < 2:
            seen += response.raw.read1(65536)
        step.release.set()
        while b'"kind":"finish"' not in seen:
            seen += response.raw.read1(65536)
    assert seen.startswith(b'data: {"kind":"text-delta","text":"a"}\n\n' + HEARTBEAT)
    assert not step.cancelled.is_set()


def test_starlette_client_disconnect_cancels_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = KeepBodies(monkeypatch, load_starlette_example())
    step = Endless()
    with serve_starlette(ScriptedModel([step])) as url:
        with open_stream(url + "/stream?q=go") as response:
            assert next(read_events(response)) == {"kind": "text-delta", "text": "tick 0 "}
        assert step.cancelled.wait(5.0)
        assert wait_for_threads("agentcore-aio") == 0
        assert wait_for_threads("agentcore-stream") == 0
    assert step.sent < step.limit
    assert len(kept.bodies) == 1


def test_starlette_client_disconnect_closes_the_upstream_response(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = KeepBodies(monkeypatch, load_starlette_example())
    server.add(slow_anthropic_reply(deltas=300, pause=0.05))
    model = AnthropicModel("claude-test", api_key="test", base_url=server.url)
    with serve_starlette(model) as url:
        with open_stream(url + "/stream?q=go") as response:
            assert next(read_events(response)) == {"kind": "text-delta", "text": "w0 "}
        started = time.monotonic()
        assert wait_until(lambda: server.disconnects == 1, timeout=5.0)
        assert time.monotonic() - started < 5.0  # the reply would take 15 s
    assert server.hits == 1
    assert len(kept.bodies) == 1


@pytest.mark.slow
def test_python_examples_starlette_app_py_serves_the_offline_model() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env.update(PORT=str(port), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "starlette_app.py")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until(lambda: _answers(url), timeout=20.0), "the app did not start"
        _, events = get_events(url + "/stream?q=hello")
        assert events[-1]["kind"] == "finish"
        assert any(e["kind"] == "tool-result" and e["tool_result"]["content"] == "42" for e in events)
        assert any(e["kind"] == "reasoning-delta" for e in events)
    finally:
        proc.terminate()
        proc.wait(10)


# --- the Django async example, under python -m uvicorn -----------------------------------


@pytest.fixture(scope="module")
def django_async(module_server: LocalServer) -> Iterator[str]:
    """``uvicorn django_async_app:application`` with its model at the module's local server."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_MODEL="claude-test",
        ANTHROPIC_BASE_URL=module_server.url,
        PYTHONPATH=str(ROOT),
    )
    command = [sys.executable, "-m", "uvicorn", "--app-dir", str(EXAMPLES), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--log-level", "warning", "django_async_app:application"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}"
        assert wait_until(lambda: _answers(url), timeout=30.0), "uvicorn did not start"
        yield url
    finally:
        proc.terminate()
        _, errors = proc.communicate(timeout=10)
    assert b"Traceback" not in errors, errors.decode(errors="replace")


def test_django_async_serves_the_shared_page(django_async: str) -> None:
    response = requests.get(django_async + "/", timeout=10)
    assert response.status_code == 200
    assert response.text == (EXAMPLES / "chat.html").read_text(encoding="utf-8")


def test_django_async_streams_the_run(django_async: str, shared_server: LocalServer) -> None:
    shared_server.add(slow_anthropic_reply(deltas=3, pause=0))
    response, events = get_events(django_async + "/stream?q=hi")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["X-Accel-Buffering"] == "no"
    assert [e["kind"] for e in events] == ["text-delta"] * 3 + ["step-finish", "finish"]
    assert "".join(e["text"] for e in events[:3]) == "w0 w1 w2 "
    assert shared_server.requests[0]["body"]["messages"][0]["content"][0]["text"] == "hi"
    assert shared_server.requests[0]["headers"]["x-api-key"] == "test-key"


@pytest.mark.parametrize("query", ["", "?q=%20"])
def test_django_async_refuses_a_missing_question(
    django_async: str, shared_server: LocalServer, query: str
) -> None:
    assert requests.get(django_async + "/stream" + query, timeout=10).status_code == 400
    assert requests.post(django_async + "/stream?q=hi", timeout=10).status_code == 405
    assert shared_server.hits == 0


def test_django_async_client_disconnect_closes_the_upstream_response(
    django_async: str, shared_server: LocalServer
) -> None:
    shared_server.add(slow_anthropic_reply(deltas=300, pause=0.05))
    with open_stream(django_async + "/stream?q=go") as response:
        assert next(read_events(response)) == {"kind": "text-delta", "text": "w0 "}
    started = time.monotonic()
    assert wait_until(lambda: shared_server.disconnects == 1, timeout=5.0)
    assert time.monotonic() - started < 5.0  # the reply would take 15 s
    assert shared_server.hits == 1


def _answers(url: str) -> bool:
    try:
        return requests.get(url + "/", timeout=2).status_code == 200
    except requests.ConnectionError:
        return False
