"""Conformance against streams recorded from the real Anthropic API.

Every ``tests/fixtures/anthropic/*.sse`` (sources and licenses in
``tests/fixtures/README.md``) is run through the pure state machine, and
through ``AnthropicModel`` on the in-memory transport: whole, and split into
1-byte and 7-byte reads. Text, tool calls (id, name, parsed input),
finish reason, usage, the reasoning blocks (text, signature, redacted data:
exactly what the provider sent, derived from the raw bytes as each case's
``reasoning_source`` says) and the order of the reasoning and tool-call parts
must equal the case's ``.expected.json`` exactly; the ``reasoning-delta``
parts joined are the reasoning text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore.context import Context
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.stream import StreamState
from agentcore.transport import sse
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import Request, StreamPart, StreamPartKind, user_message

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
CASES = sorted(p.name[: -len(".sse")] for p in FIXTURES.glob("*.sse"))
KEY = "sk-ant-fixture-key-0123456789"


def test_all_fixtures_are_present() -> None:
    assert len(CASES) == 22
    for name in CASES:
        assert (FIXTURES / f"{name}.expected.json").is_file()
    with_reasoning = [name for name in CASES if load(name)[1]["reasoning"]]
    assert len(with_reasoning) == 8


def load(name: str) -> tuple[bytes, dict[str, Any]]:
    body = (FIXTURES / f"{name}.sse").read_bytes()
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    assert expected["api"] == "anthropic-messages"
    return body, expected


def outcome(parts: list[StreamPart], origin: str) -> dict[str, Any]:
    """The parts in the shape of an ``.expected.json``; checks that the one
    step-finish comes last, that every reasoning part is of this format and
    ``origin`` and that its text streamed before it as reasoning-delta parts."""
    assert parts, "no parts"
    assert parts[-1].kind is StreamPartKind.STEP_FINISH
    assert StreamPartKind.STEP_FINISH not in {p.kind for p in parts[:-1]}
    finish = parts[-1]
    assert finish.finish_reason is not None
    reasoning = [p.reasoning for p in parts if p.reasoning is not None]
    assert {(r.format, r.origin) for r in reasoning} <= {("anthropic", origin)}
    deltas = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    assert deltas == "".join(r.text for r in reasoning)
    return {
        "text": "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA),
        "tool_calls": [
            {"id": p.tool_call.id, "name": p.tool_call.name, "input": json.loads(p.tool_call.input)}
            for p in parts
            if p.tool_call is not None
        ],
        "finish_reason": finish.finish_reason.value,
        "usage": finish.usage.to_dict(),
        "reasoning": [{"text": r.text, "signature": r.signature, "data": r.data} for r in reasoning],
        "order": [
            p.kind.value for p in parts if p.kind in (StreamPartKind.REASONING, StreamPartKind.TOOL_CALL)
        ],
    }


def wanted(expected: dict[str, Any]) -> dict[str, Any]:
    return {k: expected[k] for k in ("text", "tool_calls", "finish_reason", "usage", "reasoning", "order")}


@pytest.mark.parametrize("name", CASES)
def test_fixture_through_the_state_machine(name: str) -> None:
    body, expected = load(name)
    state = StreamState()
    parts: list[StreamPart] = []
    for event in sse.iter_events([body]):
        parts += state.feed(event)
    assert state.done  # every recording ends with message_stop
    parts += state.finish()
    assert outcome(parts, "") == wanted(expected)


@pytest.mark.parametrize("piece", [0, 1, 7], ids=["whole", "1-byte", "7-byte"])
@pytest.mark.parametrize("name", CASES)
def test_fixture_through_the_adapter(name: str, piece: int) -> None:
    body, expected = load(name)
    transport = MemoryTransport(Reply.of(body, piece=piece))
    model = AnthropicModel(
        "claude-test", api_key=KEY, base_url="http://gateway.test:8080", transport=transport
    )
    parts = list(model.stream(Request(messages=[user_message("Hi")]), Context()))
    assert outcome(parts, "gateway.test:8080") == wanted(expected)
    assert [sent.url for sent in transport.sent] == ["http://gateway.test:8080/v1/messages"]
    assert transport.sent[0].reused is True
