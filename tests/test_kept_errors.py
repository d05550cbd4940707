"""A run's error kept by the caller holds no transport (agentcore/engine/channel.py,
loop.py, retry.py): its traceback's frames keep their lines, not the HTTP
session, the response or its socket."""

from __future__ import annotations

import gc
import traceback
import weakref
from collections.abc import Iterator

import pytest

from agentcore import Context, LoopOptions, RunError, generate, user_message
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport.http import HTTPTransport
from tests.faults.measure import socket_inodes
from tests.localserver import LocalServer, Reply, Stall, json_reply
from tests.loop_helpers import wait_no_threads, wait_until

RUNS = 10
SSE_START = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'


@pytest.fixture
def quiet_server() -> Iterator[LocalServer]:
    srv = LocalServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.mark.parametrize(
    ("scenario", "reply"),
    [
        ("error status", json_reply(400, {"error": {"message": "bad request"}})),
        ("retried, then given up", json_reply(503, {"error": {"message": "busy"}})),
        ("deadline during a stalled body", Reply(actions=[SSE_START, Stall()])),
    ],
)
def test_kept_run_errors_pin_no_session_and_no_socket(
    quiet_server: LocalServer, scenario: str, reply: Reply
) -> None:
    quiet_server.add(reply)
    before = socket_inodes()
    kept: list[RunError] = []
    sessions = []
    for _ in range(RUNS):
        transport = HTTPTransport()
        sessions.append(weakref.ref(transport.session))
        model = OpenAIChatModel(
            "m", api_key="sk-test", base_url=quiet_server.url + "/v1", transport=transport
        )
        options = LoopOptions(
            model=model, messages=[user_message("hi")], max_retries=2, retry_base_delay=0.001
        )
        ctx = Context(timeout=0.1) if scenario.startswith("deadline") else None
        with pytest.raises(RunError) as info:
            generate(options, ctx)
        kept.append(info.value)
        del model, transport, options, info
    # result() returns at the terminal part; the last worker may still be tidying up
    assert wait_no_threads("agentcore-stream") == []
    gc.collect()
    assert [ref() for ref in sessions] == [None] * RUNS
    # the server's side of each connection closes once it sees the client's go
    assert wait_until(lambda: socket_inodes() - before == set(), timeout=5.0), socket_inodes() - before
    # the tracebacks still tell where the errors came from
    text = "".join(traceback.format_exception(kept[0].err))
    assert "agentcore" in text
