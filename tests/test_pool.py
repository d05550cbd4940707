"""The connection pool of an adapter's own session holds as many connections as
runs of one model at once: 200 concurrent runs keep their 200 connections
(requests' default pool of 10 discarded 190 of them with urllib3's
"Connection pool is full" warning), and the next 200 runs reuse them."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from agentcore import LoopOptions, Model, run, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from tests.localserver import LocalServer, Reply

RUNS = 200

ANTHROPIC = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
    b'"role":"assistant","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"ok"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
OPENAI = (
    b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def model_for(dialect: str, server: LocalServer) -> Model:
    if dialect == "anthropic":
        return AnthropicModel("claude-test", api_key="k", base_url=server.url)
    return OpenAIChatModel("gpt-test", api_key="k", base_url=server.url + "/v1")


@pytest.mark.parametrize("dialect", ["anthropic", "openai"])
def test_200_concurrent_runs_on_one_model_keep_and_reuse_their_connections(
    dialect: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The server answers no request until all 200 have arrived, so all 200
    # connections are in use at once.
    all_arrived = threading.Barrier(RUNS, timeout=60)

    def answer(_record: dict[str, Any]) -> Reply:
        all_arrived.wait()
        # With a Content-Length the body ends with its last event: no connection
        # is lost to a drain that a loaded machine makes wait for the last chunk.
        body = ANTHROPIC if dialect == "anthropic" else OPENAI
        return Reply(actions=[body], headers={"Content-Type": "text/event-stream"}, chunked=False)

    server = LocalServer(responder=answer)
    server._httpd.socket.listen(RUNS)  # a backlog for 200 clients connecting at once (the default is 5)
    model = model_for(dialect, server)
    caplog.set_level(logging.WARNING, logger="urllib3")
    texts: list[str] = []
    lock = threading.Lock()

    def one_run() -> None:
        text = run(LoopOptions(model=model, messages=[user_message("hi")])).result().text
        with lock:
            texts.append(text)

    try:
        for _ in range(2):
            all_arrived.reset()
            threads = [threading.Thread(target=one_run) for _ in range(RUNS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
    finally:
        server.close()
    assert texts == ["ok"] * (2 * RUNS)
    assert server.hits == 2 * RUNS
    assert [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()] == []
    assert server.connections == RUNS  # the second 200 runs reused the first 200's connections
    assert [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()] == []
