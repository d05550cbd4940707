"""Conformance against streams recorded from the real Anthropic API.

Every ``tests/fixtures/anthropic/*.sse`` (sources and licenses in
``tests/fixtures/README.md``) is run through the pure state machine, and
through ``AnthropicModel`` against the local HTTP server: whole, and split into
1-byte and 7-byte network writes. Text, tool calls (id, name, parsed input),
finish reason and usage must equal the case's ``.expected.json`` exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore.context import Context
from agentcore.providers import _sse
from agentcore.providers.anthropic import AnthropicModel, _StepState
from agentcore.types import Request, StreamPart, StreamPartKind, user_message
from tests.localserver import LocalServer, sse_reply

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
CASES = sorted(p.name[: -len(".sse")] for p in FIXTURES.glob("*.sse"))
KEY = "sk-ant-fixture-key-0123456789"


@pytest.fixture
def server(shared_server: LocalServer) -> LocalServer:
    """The module's one server, reset for each test (tests/conftest.py)."""
    return shared_server


def test_all_fixtures_are_present() -> None:
    assert len(CASES) == 22
    for name in CASES:
        assert (FIXTURES / f"{name}.expected.json").is_file()


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    body = (FIXTURES / f"{name}.sse").read_bytes()
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    assert expected["api"] == "anthropic-messages"
    return body, expected


def outcome(parts: list[StreamPart]) -> dict[str, Any]:
    """The parts in the shape of an ``.expected.json``; checks that the one
    step-finish comes last and only text and tool calls precede it."""
    assert parts, "no parts"
    assert parts[-1].kind is StreamPartKind.STEP_FINISH
    assert {p.kind for p in parts[:-1]} <= {StreamPartKind.TEXT_DELTA, StreamPartKind.TOOL_CALL}
    finish = parts[-1]
    assert finish.finish_reason is not None
    return {
        "text": "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA),
        "tool_calls": [
            {"id": p.tool_call.id, "name": p.tool_call.name, "input": json.loads(p.tool_call.input)}
            for p in parts
            if p.tool_call is not None
        ],
        "finish_reason": finish.finish_reason.value,
        "usage": finish.usage.to_dict(),
    }


def wanted(expected: dict[str, Any]) -> dict[str, Any]:
    return {k: expected[k] for k in ("text", "tool_calls", "finish_reason", "usage")}


@pytest.mark.parametrize("name", CASES)
def test_fixture_through_the_state_machine(name: str) -> None:
    body, expected = load(name)
    state = _StepState()
    parts: list[StreamPart] = []
    for event in _sse.iter_events([body]):
        parts += state.feed(event.event, event.data)
    assert state.finished  # every recording ends with message_stop
    parts += state.end_of_stream()
    assert outcome(parts) == wanted(expected)


@pytest.mark.parametrize("piece", [0, 1, 7], ids=["whole", "1-byte", "7-byte"])
@pytest.mark.parametrize("name", CASES)
def test_fixture_through_the_adapter(server: LocalServer, name: str, piece: int) -> None:
    body, expected = load(name)
    server.add(sse_reply(body, piece=piece))
    model = AnthropicModel("claude-test", api_key=KEY, base_url=server.url, timeout=(5.0, 10.0))
    parts = list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert outcome(parts) == wanted(expected)
    assert server.hits == 1
    assert server.requests[0]["path"] == "/v1/messages"
