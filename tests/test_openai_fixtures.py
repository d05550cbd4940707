"""Every recorded OpenAI and OpenAI-compatible stream in ``tests/fixtures``
conforms: through the adapter against the local HTTP server (the whole body in
one write, in 1-byte and in 7-byte writes), and through the pure state machine
fed with 1-byte and 7-byte reads.

Each ``<name>.sse`` is a real response body; ``<name>.expected.json`` holds
the text, tool calls, finish reason and usage it must give (sources and
licenses in ``tests/fixtures/README.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, ErrorClass, ModelError, Request, StreamPart, StreamPartKind, user_message
from agentcore.providers._openai_stream import ChunkState
from agentcore.providers._sse import iter_events
from agentcore.providers.openai import OpenAIChatModel
from tests.localserver import LocalServer, sse_reply

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted([*FIXTURES.glob("openai_chat/*.sse"), *FIXTURES.glob("openai_compat/*.sse")])
IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]


@pytest.fixture
def server(shared_server: LocalServer) -> LocalServer:
    """The module's one server, reset for each test (tests/conftest.py)."""
    return shared_server


def test_every_fixture_is_here() -> None:
    assert len([p for p in CASES if p.parent.name == "openai_chat"]) == 8
    assert len([p for p in CASES if p.parent.name == "openai_compat"]) == 23
    for path in CASES:
        assert path.with_suffix("").with_suffix(".expected.json").exists()


def expected_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix("").with_suffix(".expected.json").read_text("utf-8"))
    assert data["api"] == "openai-chat"
    assert data["source"]["repo"]
    assert len(data["source"]["commit"]) == 40
    return data


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body] if size <= 0 else [body[i : i + size] for i in range(0, len(body), size)]


def check(parts: list[StreamPart], error: ModelError | None, expected: dict[str, Any]) -> None:
    """The parts (and the error, if the stream ended in one) match ``expected``."""
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    assert text == expected["text"]
    calls = [p.tool_call for p in parts if p.tool_call is not None]
    assert [(c.name, json.loads(c.input)) for c in calls] == [
        (c["name"], c["input"]) for c in expected["tool_calls"]
    ]
    for got, want in zip(calls, expected["tool_calls"], strict=True):
        # a server that sent no id gets a synthesized one
        assert got.id == want["id"] if want["id"] else got.id.startswith("call_")
    kinds = [p.kind for p in parts]
    if expected["finish_reason"] == "error":
        assert error is not None, "an error fixture must end in ModelError"
        assert StreamPartKind.STEP_FINISH not in kinds
        assert error.error_class is ErrorClass.INVALID_REQUEST  # all three report a 400-class error
        return
    assert error is None, f"unexpected {error!r}"
    # text deltas, then the tool calls, then exactly one step-finish, last
    assert kinds == sorted(
        kinds, key=[StreamPartKind.TEXT_DELTA, StreamPartKind.TOOL_CALL, StreamPartKind.STEP_FINISH].index
    )
    assert kinds.count(StreamPartKind.STEP_FINISH) == 1
    finish = parts[-1]
    assert finish.kind is StreamPartKind.STEP_FINISH
    assert finish.finish_reason is not None
    assert finish.finish_reason.value == expected["finish_reason"]
    assert finish.usage.to_dict() == expected["usage"]


def through_state(chunks: Iterable[bytes]) -> tuple[list[StreamPart], ModelError | None, ChunkState]:
    state = ChunkState()
    parts: list[StreamPart] = []
    try:
        for event in iter_events(chunks):
            parts.extend(state.feed(event))
            if state.done:
                break
        parts.extend(state.finish())
    except ModelError as exc:
        return parts, exc, state
    return parts, None, state


def through_adapter(
    server: LocalServer, body: bytes, piece: int
) -> tuple[list[StreamPart], ModelError | None]:
    server.add(sse_reply(body, piece=piece))
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1", timeout=(5, 10))
    parts: list[StreamPart] = []
    try:
        for part in model.stream(Request(messages=(user_message("hi"),)), Context()):
            parts.append(part)
    except ModelError as exc:
        return parts, exc
    return parts, None


@pytest.mark.parametrize("path", CASES, ids=IDS)
@pytest.mark.parametrize("piece", [1, 7])
def test_fixture_through_the_state_machine(path: Path, piece: int) -> None:
    expected = expected_of(path)
    parts, error, state = through_state(pieces(path.read_bytes(), piece))
    check(parts, error, expected)
    # usage is also right when the stream ends in an error (no step-finish carries it)
    assert state.usage.to_dict() == expected["usage"]


@pytest.mark.parametrize("path", CASES, ids=IDS)
@pytest.mark.parametrize("piece", [0, 1, 7])
def test_fixture_through_the_adapter(server: LocalServer, path: Path, piece: int) -> None:
    parts, error = through_adapter(server, path.read_bytes(), piece)
    check(parts, error, expected_of(path))
    assert server.hits == 1
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["stream"] is True
