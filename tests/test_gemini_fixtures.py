"""Gemini API streams recorded from the real API by other projects
(``tests/fixtures/gemini/``, README there) give, through ``GeminiModel``,
the text, tool calls, reasoning, finish reason and usage their sources assert
(pydantic-ai's and the Vercel AI SDK's tests on the same recordings)."""

from __future__ import annotations

import json
import pathlib

import pytest

from agentcore import Context, FinishReason, Request, StreamPart, StreamPartKind, Usage, user_message
from agentcore.providers.gemini import GeminiModel
from agentcore.testing import check_model
from agentcore.transport.memory import MemoryTransport, Reply

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "gemini"


def body(name: str) -> bytes:
    """The SSE body of a case: ``.sse`` as recorded; each line of a
    ``.chunks.jsonl`` (decoded chunks) or a ``.response.json`` (a
    non-streaming ``GenerateContentResponse``, the same object a stream's
    chunk is) as one ``data:`` event, framed as the API frames them."""
    path = FIXTURES / name
    if name.endswith(".sse"):
        return path.read_bytes()
    lines = path.read_text().splitlines() if name.endswith(".jsonl") else [path.read_text()]
    return b"".join(b"data: " + json.dumps(json.loads(line)).encode() + b"\r\n\r\n" for line in lines if line)


def parts_of(name: str) -> list[StreamPart]:
    reply = Reply.of(body(name), piece=37, headers={"content-type": "text/event-stream"})
    model = GeminiModel("gemini-test", api_key="AIza-test", transport=MemoryTransport(reply))
    return list(model.stream(Request(messages=[user_message("hi")]), Context()))


def text(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


# (case, text start, text length, tool calls (name, input, Gemini's id or ""), finish, usage)
CASES = [
    ("gemini20flash_text.sse", "The capital of France is Paris.\n", 32, [], FinishReason.STOP, Usage(13, 8)),
    ("gemini25flash_usage_service_tier.sse", "1\n2\n3\n", 80, [], FinishReason.STOP, Usage(18, 80 + 35)),
    (
        "gemini3pro_after_function_response.i1.sse",
        "The capital of Mexico is Mexico City.",
        37,
        [],
        FinishReason.STOP,
        Usage(257, 8),
    ),
    (
        "gemini3flash_function_call_api_id.i0.sse",
        "",
        0,
        [("get_user_country", "{}", "96c1su3s")],
        FinishReason.TOOL_CALLS,
        Usage(29, 12 + 69),
    ),
    (
        "gemini3pro_function_call_thought_signature.i0.sse",
        "",
        0,
        [("get_country", "{}", "")],
        FinishReason.TOOL_CALLS,
        Usage(29, 10 + 202),
    ),
    (
        "vercel_gemini3pro_function_call.chunks.jsonl",
        "",
        0,
        [("weather", '{"location": "San Francisco"}', "")],
        FinishReason.TOOL_CALLS,
        Usage(29, 15 + 804),
    ),
    (
        "vercel_gemini3pro_text_signature_on_empty_part.chunks.jsonl",
        'There are **3** "r"s in strawberry.',
        55,
        [],
        FinishReason.STOP,
        Usage(9, 23 + 185),
    ),
    ("gemini15flash_safety_block.response.json", "", 0, [], FinishReason.CONTENT_FILTER, Usage(14, 0)),
    ("gemini25pro_max_tokens_no_parts.response.json", "", 0, [], FinishReason.LENGTH, Usage(15, 2)),
    (
        "gemini25flash_cached_content_tokens.response.json",
        "This video demonstrates",
        400,
        [],
        FinishReason.STOP,
        Usage(17713, 889, cache_read=17379),
    ),
]


@pytest.mark.parametrize(
    ("name", "start", "length", "calls", "finish", "usage"), CASES, ids=[c[0] for c in CASES]
)
def test_recorded_streams_give_what_their_sources_assert(
    name: str, start: str, length: int, calls: list[tuple[str, str, str]], finish: FinishReason, usage: Usage
) -> None:
    parts = parts_of(name)
    assert text(parts).startswith(start)
    assert len(text(parts)) == length
    got = [p.tool_call for p in parts if p.tool_call is not None]
    assert [(c.name, c.input) for c in got] == [(n, i) for n, i, _ in calls]
    for call, (_, _, given) in zip(got, calls, strict=True):
        if given:
            assert call.id == given  # Gemini's own id is the call's id
        else:
            assert call.id.startswith("gemini-")
            assert len(call.id) == len("gemini-") + 24
        kept = json.loads(call.provider_data)
        assert kept.get("id", False) is bool(given)
        assert len(kept["thoughtSignature"]) > 100  # the signature rides on the call, whole
    assert (parts[-1].finish_reason, parts[-1].usage) == (finish, usage)


def test_thought_summaries_stream_as_reasoning_and_the_text_signature_is_kept() -> None:
    parts = parts_of("gemini25pro_thought_summaries_then_text.sse")
    kinds = [p.kind for p in parts]
    blocks = [p.reasoning for p in parts if p.reasoning is not None]
    thoughts = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    assert thoughts.startswith("**Clarifying User Goals**")
    assert [b.text for b in blocks] == [thoughts, ""]  # the thoughts, then the signature of the first text
    assert blocks[1].signature
    assert blocks[1].format == "gemini"
    # thoughts come first; the signature block just before the text it rode on
    assert kinds.index(StreamPartKind.REASONING) < kinds.index(StreamPartKind.TEXT_DELTA)
    assert text(parts).startswith("This is a great question!")
    assert parts[-1].usage == Usage(34, 1256)


def test_code_execution_parts_are_kept_in_place_with_their_signature() -> None:
    parts = parts_of("gemini3flash_code_execution.sse")
    items = [json.loads(p.provider_item.data) for p in parts if p.provider_item is not None]
    assert items[0]["executableCode"]["id"] == "8xju7mua"
    assert items[0]["thoughtSignature"]
    assert items[1]["codeExecutionResult"] == {
        "outcome": "OUTCOME_OK",
        "output": "-428330955.97745\n",
        "id": "8xju7mua",
    }
    assert text(parts).startswith("The result of $65465")
    assert parts[-1].finish_reason is FinishReason.STOP


def test_the_adapter_passes_the_model_conformance_check() -> None:
    recorded = body("gemini20flash_text.sse")
    transport = MemoryTransport(
        respond=lambda _sent: Reply.of(recorded, piece=11, headers={"content-type": "text/event-stream"})
    )
    check_model(GeminiModel("gemini-2.0-flash", api_key="AIza-test", transport=transport))
