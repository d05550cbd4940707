"""Every recorded stream that carries reasoning yields exactly the reasoning the
provider sent.

``tests/fixtures/reasoning_expected.json`` holds, for each recorded stream
under ``tests/fixtures/anthropic``, ``openai_chat``, ``openai_compat`` and
``peer`` whose events carry reasoning, what the provider sent: the reasoning
text in stream order, and per reasoning block its text, signature and
(redacted or encrypted) data. :func:`provider_reasoning` derives it from the
raw bytes with the standard JSON reader, independently of agentcore's
parsers, and the first test checks that the stored file is what it derives.

Blocks, as the adapters split them:

* Anthropic: one block per ``thinking`` or ``redacted_thinking`` content
  block. ``text`` is the block's initial ``thinking`` plus its
  ``thinking_delta`` texts, ``signature`` its initial ``signature`` plus its
  ``signature_delta`` texts, ``data`` a redacted block's ``data``.
* OpenAI-style: one block per contiguous run of reasoning, ended by answer
  text (a non-empty ``content`` string or ``text`` part) or a tool-call delta.
  Reasoning is ``delta.reasoning_content`` (DeepSeek, Kimi, Z.ai, Qwen, xAI),
  ``delta.reasoning`` (Groq, OpenRouter), the ``reasoning.text`` /
  ``reasoning.summary`` text of ``delta.reasoning_details`` (OpenRouter,
  Snowflake), and the ``thinking`` parts of a Mistral ``content`` array.
  OpenRouter sends the same text in ``reasoning`` and in
  ``reasoning_details``; it counts once. ``signature`` is the run's
  ``reasoning.text`` signatures joined, ``data`` its ``reasoning.encrypted``
  data joined.

OpenRouter's ``reasoning_details`` entries go back verbatim, so the adapter
keeps them, as a JSON array, in ``Reasoning.provider_data``; a block's
signature and encrypted data are read from those entries there.

Reasoning inlined in the answer as ``<think>`` tags is answer text, not
reasoning, and is not listed. A stream that ends in an error (an ``error``
event or chunk, or a second ``message_start`` after content began) is read
up to that point: ``text`` is what streamed before it, ``blocks`` the blocks
that completed before it.

Each stream is then answered on the in-memory transport and read through the
adapter: the ``reasoning-delta`` parts joined equal ``text``, and the
``reasoning`` parts, in order, carry each block's text, signature and data
exactly, each after as much answer text as the provider sent before the block
began.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import Reasoning, StreamPartKind
from agentcore.transport.memory import MemoryTransport
from tests.test_peer_fixtures import adapter_parts, payloads

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = FIXTURES / "reasoning_expected.json"


def recorded_streams() -> dict[str, str]:
    """Every recorded stream (``folder/name`` without ``.sse``) and the API it speaks."""
    streams = {}
    for path in sorted(FIXTURES.glob("anthropic/*.sse")):
        streams[f"anthropic/{path.stem}"] = "anthropic"
    for path in sorted([*FIXTURES.glob("openai_chat/*.sse"), *FIXTURES.glob("openai_compat/*.sse")]):
        streams[f"{path.parent.name}/{path.stem}"] = "openai"
    for path in sorted(FIXTURES.glob("peer/*/*.sse")):
        spec = json.loads(path.with_name(path.name[: -len(".sse")] + ".json").read_text(encoding="utf-8"))
        streams[path.relative_to(FIXTURES).as_posix()[: -len(".sse")]] = spec["provider"]
    return streams


class Blocks:
    """Reasoning blocks as they are read: the open one and the completed ones."""

    def __init__(self) -> None:
        self.text = ""  # all reasoning text so far
        self.answer = 0  # characters of answer text so far
        self.done: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None

    def start(self) -> dict[str, Any]:
        self.open = {"text": "", "signature": "", "data": "", "text_before": self.answer}
        return self.open

    def add_text(self, text: str) -> None:
        assert self.open is not None
        self.open["text"] += text
        self.text += text

    def close(self) -> None:
        if self.open is not None:
            self.done.append(self.open)
            self.open = None


def anthropic_reasoning(events: list[dict[str, Any]]) -> Blocks:
    blocks = Blocks()
    started = False
    for data in events:
        kind = data.get("type")
        if kind == "error" or (kind == "message_start" and started):
            break
        if kind == "content_block_start":
            started = True
            block = data["content_block"]
            if block["type"] == "thinking":
                blocks.start()["signature"] = block.get("signature") or ""
                blocks.add_text(block.get("thinking") or "")
            elif block["type"] == "redacted_thinking":
                blocks.start()["data"] = block["data"]
            elif block["type"] == "text":
                blocks.answer += len(block.get("text") or "")
        elif kind == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "thinking_delta":
                blocks.add_text(delta["thinking"])
            elif delta["type"] == "signature_delta":
                assert blocks.open is not None
                blocks.open["signature"] += delta["signature"]
            elif delta["type"] == "text_delta":
                blocks.answer += len(delta["text"])
        elif kind == "content_block_stop":
            blocks.close()
    return blocks


def delta_reasoning(delta: dict[str, Any]) -> tuple[str, str, str]:
    """The reasoning text, signature and encrypted data one OpenAI-style delta carries."""
    text = delta.get("reasoning_content") or ""
    plain = delta.get("reasoning") or ""
    if text and plain:
        assert text == plain, "reasoning_content and reasoning differ"
        plain = ""  # the same text sent twice counts once
    details = delta.get("reasoning_details") or []
    detail_text = "".join(
        d.get("text") or d.get("summary") or "" for d in details if d["type"] != "reasoning.encrypted"
    )
    signature = "".join(d.get("signature") or "" for d in details if d["type"] == "reasoning.text")
    data = "".join(d.get("data") or "" for d in details if d["type"] == "reasoning.encrypted")
    if plain and details:
        assert plain == detail_text, "reasoning and reasoning_details differ"
    content = delta.get("content")
    if isinstance(content, list):
        for part in content:
            if part.get("type") == "thinking":
                text += "".join(p.get("text") or "" for p in part["thinking"] if p.get("type") == "text")
    return text + (plain or detail_text), signature, data


def answer_text(delta: dict[str, Any]) -> str:
    content = delta.get("content")
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content if part.get("type") == "text")
    return content if isinstance(content, str) else ""


def openai_reasoning(events: list[dict[str, Any]]) -> Blocks:
    blocks = Blocks()
    for data in events:
        if data.get("error"):
            break
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            text, signature, encrypted = delta_reasoning(delta)
            if text or signature or encrypted:
                if blocks.open is None:
                    blocks.start()
                blocks.add_text(text)
                assert blocks.open is not None
                blocks.open["signature"] += signature
                blocks.open["data"] += encrypted
            answer = answer_text(delta)
            if answer or delta.get("tool_calls"):
                blocks.close()
            blocks.answer += len(answer)
    else:
        blocks.close()  # the stream's end completes the last run
    return blocks


def provider_reasoning() -> dict[str, dict[str, Any]]:
    """What each recorded stream with reasoning says, in the stored file's shape."""
    cases = {}
    for name, api in recorded_streams().items():
        events = payloads((FIXTURES / f"{name}.sse").read_bytes())
        blocks = anthropic_reasoning(events) if api == "anthropic" else openai_reasoning(events)
        if blocks.text or blocks.done or blocks.open:
            cases[name] = {"api": api, "text": blocks.text, "blocks": blocks.done}
    return cases


def stored() -> dict[str, dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = json.loads(EXPECTED.read_text(encoding="utf-8"))["cases"]
    return cases


def test_the_stored_expectations_are_what_the_recorded_streams_say() -> None:
    assert stored() == provider_reasoning()


def carried(reasoning: Reasoning) -> tuple[str, str]:
    """The signature and data a block carries: its own fields, plus those of
    the ``reasoning_details`` entries kept in its ``provider_data``."""
    signature, data = reasoning.signature, reasoning.data
    entries = json.loads(reasoning.provider_data) if reasoning.provider_data else []
    for entry in entries if isinstance(entries, list) else []:
        if entry.get("type") == "reasoning.text":
            signature += entry.get("signature") or ""
        elif entry.get("type") == "reasoning.encrypted":
            data += entry.get("data") or ""
    return signature, data


@pytest.mark.parametrize("name", sorted(stored()))
def test_recorded_reasoning_through_the_adapter(transport: MemoryTransport, name: str) -> None:
    case = stored()[name]
    parts, _ = adapter_parts(transport, case["api"], (FIXTURES / f"{name}.sse").read_bytes())
    streamed = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    assert streamed == case["text"]
    got = []
    for index, part in enumerate(parts):
        if part.kind is StreamPartKind.REASONING:
            assert part.reasoning is not None
            before = "".join(p.text for p in parts[:index] if p.kind is StreamPartKind.TEXT_DELTA)
            signature, data = carried(part.reasoning)
            got.append(
                {
                    "text": part.reasoning.text,
                    "signature": signature,
                    "data": data,
                    "text_before": len(before),
                }
            )
    assert got == case["blocks"]
