"""Every recorded OpenAI and OpenAI-compatible stream in ``tests/fixtures``
conforms: through the adapter on the in-memory transport (the whole body in
one read, in 1-byte and in 7-byte reads), and through the pure state machine
fed with 1-byte and 7-byte reads.

Each ``<name>.sse`` is a real response body; ``<name>.expected.json`` holds
the text, tool calls, finish reason and usage it must give (sources and
licenses in ``tests/fixtures/README.md``). The reasoning each stream carries
is not in those files: :data:`REASONING` names the field each server sends it
in, and :func:`sent_reasoning`, a reader of that one field written apart from
the adapter, gives the exact text the provider sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, ErrorClass, ModelError, Request, StreamPart, StreamPartKind, user_message
from agentcore.providers.config import origin
from agentcore.providers.openai import OpenAIChatModel
from agentcore.providers.openai.chat.stream import (
    MISTRAL_THINKING,
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    StreamState,
)
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import iter_events

FIXTURES = Path(__file__).parent / "fixtures"
CASES = sorted([*FIXTURES.glob("openai_chat/*.sse"), *FIXTURES.glob("openai_compat/*.sse")])
IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]


BASE_URL = "http://127.0.0.1:8000/v1"
"""Where the adapter sends (the in-memory transport answers)."""


REASONING_FIELDS: dict[str, tuple[str, str]] = {
    "openai_compat/deepseek_reasoner_reasoning_content": ("reasoning_content", REASONING_CONTENT),
    "openai_compat/deepseek_tool_call_reasoning_cache_hit": ("reasoning_content", REASONING_CONTENT),
    "openai_compat/xai_grok_reasoning_tool_call_cached": ("reasoning_content", REASONING_CONTENT),
    "openai_compat/zai_glm_reasoning_content": ("reasoning_content", REASONING_CONTENT),
    "openai_compat/groq_error_event_after_text": ("reasoning", REASONING),
    "openai_compat/groq_error_event_tool_validation": ("reasoning", REASONING),
    "openai_compat/groq_gpt_oss_reasoning_tool_call": ("reasoning", REASONING),
    "openai_compat/openrouter_claude_reasoning_details": ("reasoning", REASONING_DETAILS),
    "openai_compat/openrouter_error_chunk_after_length": ("reasoning", REASONING_DETAILS),
    "openai_compat/openrouter_cached_tokens": ("reasoning_details", REASONING_DETAILS),
    "openai_compat/mistral_content_array_thinking": ("thinking", MISTRAL_THINKING),
}
"""Case -> (the field the server streams its reasoning in, the block's format)."""


def payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON chunks of an SSE body, read line by line (no agentcore code)."""
    out = []
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip().startswith("{"):
            out.append(json.loads(line[5:]))
    return out


def sent_reasoning(body: bytes, field: str) -> str:
    """Every fragment of ``field`` in choice 0's deltas, joined: the reasoning
    text the server sent. ``thinking`` reads Mistral's thinking content parts;
    ``reasoning_details`` the entries' ``text`` and ``summary``."""
    text = []
    for chunk in payloads(body):
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if field == "thinking":
                content = delta.get("content")
                for part in content if isinstance(content, list) else []:
                    if part.get("type") == "thinking":
                        text += [piece["text"] for piece in part["thinking"]]
            elif field == "reasoning_details":
                for entry in delta.get("reasoning_details") or []:
                    text += [entry.get("text") or "", entry.get("summary") or ""]
            elif isinstance(delta.get(field), str):
                text.append(delta[field])
    return "".join(text)


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
    # reasoning (every recorded one comes first), text deltas, then the tool
    # calls, then exactly one step-finish, last
    order = [
        StreamPartKind.REASONING_DELTA,
        StreamPartKind.REASONING,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.STEP_FINISH,
    ]
    assert kinds == sorted(kinds, key=order.index)
    assert kinds.count(StreamPartKind.STEP_FINISH) == 1
    finish = parts[-1]
    assert finish.kind is StreamPartKind.STEP_FINISH
    assert finish.finish_reason is not None
    assert finish.finish_reason.value == expected["finish_reason"]
    assert finish.usage.to_dict() == expected["usage"]


def check_reasoning(
    parts: list[StreamPart], error: ModelError | None, case: str, body: bytes, origin: str
) -> None:
    """The reasoning parts give exactly the reasoning the server sent: the
    deltas as they came, then (unless an error cut the stream) one block
    from ``origin``; OpenRouter's entries keep every signature and encrypted
    datum byte for byte."""
    field, fmt = REASONING_FIELDS.get(case, ("", ""))
    sent = sent_reasoning(body, field) if field else ""
    deltas = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    blocks = [p.reasoning for p in parts if p.reasoning is not None]
    assert deltas == sent
    if error is not None:
        # the step failed: only a block that text closed before the error is complete
        text_came = StreamPartKind.TEXT_DELTA in [p.kind for p in parts]
        assert [b.text for b in blocks] == ([sent] if text_came and sent else [])
        return
    if not field:
        assert blocks == []
        return
    (block,) = blocks
    assert (block.text, block.format, block.origin) == (sent, fmt, origin)
    assert (block.signature, block.data, block.id) == ("", "", "")
    if fmt != REASONING_DETAILS:
        assert block.provider_data == ""
        return
    entries = json.loads(block.provider_data)
    assert "".join((e.get("text") or "") + (e.get("summary") or "") for e in entries) == sent
    sent_entries = [
        e for c in payloads(body) for e in c["choices"][0]["delta"].get("reasoning_details") or []
    ]
    for key in ("signature", "data", "id", "format", "type"):
        assert [e[key] for e in entries if e.get(key)] == list(
            dict.fromkeys(e[key] for e in sent_entries if e.get(key))
        )


ORIGIN = "api.example.test"


def through_state(chunks: Iterable[bytes]) -> tuple[list[StreamPart], ModelError | None, StreamState]:
    state = StreamState(origin=ORIGIN)
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
    transport: MemoryTransport, body: bytes, piece: int
) -> tuple[list[StreamPart], ModelError | None]:
    transport.add(Reply.of(body, piece=piece))
    model = OpenAIChatModel("test-model", base_url=BASE_URL, transport=transport)
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
    check_reasoning(parts, error, f"{path.parent.name}/{path.stem}", path.read_bytes(), ORIGIN)
    # usage is also right when the stream ends in an error (no step-finish carries it)
    assert state.usage.to_dict() == expected["usage"]


@pytest.mark.parametrize("path", CASES, ids=IDS)
@pytest.mark.parametrize("piece", [0, 1, 7])
def test_fixture_through_the_adapter(transport: MemoryTransport, path: Path, piece: int) -> None:
    parts, error = through_adapter(transport, path.read_bytes(), piece)
    check(parts, error, expected_of(path))
    check_reasoning(parts, error, f"{path.parent.name}/{path.stem}", path.read_bytes(), origin(BASE_URL))
    assert len(transport.sent) == 1
    sent = transport.sent[0]
    assert sent.url == BASE_URL + "/chat/completions"
    assert sent.json()["stream"] is True
