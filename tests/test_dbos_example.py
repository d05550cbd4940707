"""``examples/dbos_app.py`` as a user runs it: a real process with its own
SQLite system database, a question posted, the run's parts read back as
Server-Sent Events from its DBOS stream, twice (a reloaded page sees the
whole run again)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.test_dbos import needs_dbos_sqlite

pytest.importorskip("dbos")

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update(
        PORT=str(port), PYTHONPATH=str(ROOT), DBOS_SYSTEM_DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite'}"
    )
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "dbos_app.py")],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    seen = []
    for line in process.stderr:  # Flask says where it listens once it does
        seen.append(line)
        if f"Running on http://127.0.0.1:{port}" in line:
            break
    else:
        process.wait(timeout=30)
        pytest.fail("the example did not start:\n" + "".join(seen))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.communicate(timeout=30)


def events(url: str) -> list[dict[str, Any]]:
    parts = []
    with requests.get(url, stream=True, timeout=60) as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        for line in response.iter_lines(decode_unicode=True):
            if line.startswith("data: "):
                parts.append(json.loads(line[len("data: ") :]))
                if parts[-1]["kind"] in ("finish", "error"):
                    break
    return parts


@needs_dbos_sqlite
def test_a_posted_question_runs_on_the_queue_and_streams_from_the_dbos_stream(app_url: str) -> None:
    page = requests.get(app_url + "/", timeout=30)
    assert "EventSource" in page.text
    response = requests.post(app_url + "/runs", data={"q": "What is 6 * 7?"}, timeout=30)
    run_id = response.json()["run_id"]
    parts = events(f"{app_url}/runs/{run_id}/events")
    kinds = [part["kind"] for part in parts]
    assert kinds[0] == "step-start"
    assert kinds.count("step-start") == 2  # TestModel: one step calls the tools, one answers
    results = {
        p["tool_result"]["name"]: p["tool_result"]["content"] for p in parts if p["kind"] == "tool-result"
    }
    assert results["calculator"] == "42"
    text = "".join(p["text"] for p in parts if p["kind"] == "text-delta")
    assert "calculator returned: 42" in text
    assert parts[-1]["kind"] == "finish"
    assert parts[-1]["finish_reason"] == "stop"
    assert parts[-1]["total_usage"]["output"] > 0
    # A page opened later reads the same run from its start.
    assert events(f"{app_url}/runs/{run_id}/events") == parts


@needs_dbos_sqlite
def test_an_unknown_run_is_404_and_an_empty_question_400(app_url: str) -> None:
    assert requests.get(app_url + "/runs/nope/events", timeout=30).status_code == 404
    assert requests.post(app_url + "/runs", data={"q": " "}, timeout=30).status_code == 400
