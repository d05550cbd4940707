"""Every recorded OpenAI Responses stream in ``tests/fixtures/openai_responses``
conforms to what its oracles assert: through the adapter on the in-memory
transport (the whole body in one read, and in 997-byte reads), and through
the pure state machine fed with the whole body and 7-byte reads.

Each ``<group>/<name>.sse`` is a response body another project recorded (or
wrote) for its own tests; ``<name>.json`` holds what each oracle expects, in
agentcore's terms (``SOURCES.md`` beside them, and ``tests/fixtures/README.md``,
say where they come from): ``vercel`` (the Vercel AI SDK's tests), ``sdk``
(the openai Python SDK's accumulator over the same bytes) and
``source_expect`` (the source's own assertions). Fields an oracle does not
state, or that ``exclude`` lists with its reason, are not compared.

agentcore conventions applied to an oracle's statement (each named in the
case's ``conventions`` where the oracle's own reading differs):

* refusal text is text the user sees: the expected text is the oracle's
  ``text`` followed by its ``refusal``;
* raw ``reasoning_text`` deltas are reasoning too: the expected reasoning
  stream is the oracle's ``reasoning`` (summaries) followed by its
  ``reasoning_text``;
* a stream without usage has zero usage;
* the hosted tools' calls are counted in the usage (one per completed
  ``web_search_call``, ``file_search_call`` and ``code_interpreter_call``
  item), which no oracle states: they are compared with a count of the
  ``output_item.done`` events of the body (:func:`hosted_calls`), the token
  counts with the oracles.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, ErrorClass, ModelError, Request, StreamPart, StreamPartKind, user_message
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.providers.openai.responses.stream import FORMAT, StreamState
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import iter_events

FIXTURES = Path(__file__).parent / "fixtures" / "openai_responses"
CASES = sorted(FIXTURES.glob("*/*.sse"))
IDS = [f"{p.parent.name}/{p.stem}" for p in CASES]
ORACLES = {"vercel": "vercel", "sdk": "sdk", "source_expect": "source"}
"""Oracle key in the case -> its name in ``exclude`` entries."""
ORIGIN = "127.0.0.1"


BASE_URL = "http://127.0.0.1:8000/v1"
"""Where the adapter sends (the in-memory transport answers)."""


def case_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.with_suffix(".json").read_text("utf-8"))
    assert data["provider"] == "openai-responses"
    assert data["source"]["repo"]
    return data


def test_every_fixture_is_here() -> None:
    assert len(CASES) == 100
    assert (FIXTURES / "SOURCES.md").exists()
    for path in CASES:
        assert path.with_suffix(".json").exists()
        assert path.stem in (FIXTURES / "SOURCES.md").read_text("utf-8")


def oracles_of(case: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The oracles that state something, each without its excluded fields."""
    excluded = case.get("exclude", {})
    out = []
    for key, name in ORACLES.items():
        oracle = case.get(key)
        if not isinstance(oracle, dict) or name in excluded:
            continue
        out.append((name, {k: v for k, v in oracle.items() if f"{name}.{k}" not in excluded}))
    return out


MALFORMED = {"vercel_openai/parallel-tool-call-wrapper.1"}
"""Cases whose oracles state no outcome because data lines are not valid JSON
(hand-written by the source): agentcore's reading is an ``UPSTREAM`` error."""


def test_every_case_has_an_oracle_that_states_the_outcome() -> None:
    for path, name in zip(CASES, IDS, strict=True):
        stated = [o for _, o in oracles_of(case_of(path)) if "finish_reason" in o or "error" in o]
        assert bool(stated) is (name not in MALFORMED), name


def summary(parts: list[StreamPart], error: ModelError | None) -> dict[str, Any]:
    """What a stream gave, in the oracles' terms."""
    reasoning = [p.reasoning for p in parts if p.reasoning is not None]
    finish = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    reasons = [p.finish_reason.value for p in finish if p.finish_reason is not None]
    assert len(reasons) == len(finish)  # every step-finish part carries its reason
    return {
        "text": "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA),
        "reasoning_stream": "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA),
        "reasoning": reasoning,
        "tool_calls": [
            {"id": c.id, "name": c.name, "input": json.loads(c.input)}
            for c in (p.tool_call for p in parts)
            if c is not None
        ],
        "finish_reason": "error" if error else (reasons[-1] if reasons else None),
        "finish_parts": len(finish),
        "usage": {k: v for k, v in finish[-1].usage.to_dict().items() if k in ZERO_USAGE} if finish else None,
        "hosted_calls": {k: v for k, v in finish[-1].usage.to_dict().items() if k not in ZERO_USAGE}
        if finish
        else {},
        "error": error,
    }


ZERO_USAGE = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
HOSTED = {
    "web_search_call": "web_search_requests",
    "file_search_call": "file_search_requests",
    "code_interpreter_call": "code_execution_requests",
}


def hosted_calls(body: bytes) -> dict[str, int]:
    """The hosted tools' items of a body that reached ``output_item.done``,
    by the usage field that counts them: read from the ``data:`` lines
    apart from the adapter."""
    counts: dict[str, int] = {}
    for line in body.decode("utf-8").splitlines():
        if not line.startswith("data:") or '"response.output_item.done"' not in line:
            continue
        event = json.loads(line[5:])
        field = HOSTED.get(event.get("item", {}).get("type"))
        if event.get("type") == "response.output_item.done" and field:
            counts[field] = counts.get(field, 0) + 1
    return counts


def check(got: dict[str, Any], case: dict[str, Any], name: str) -> None:
    """``got`` (a :func:`summary`) matches every oracle of ``case``."""
    if name in MALFORMED:
        assert got["error"] is not None
        assert got["error"].error_class is ErrorClass.UPSTREAM
        assert "malformed JSON" in got["error"].message
        return
    for name, oracle in oracles_of(case):
        where = f"{name} oracle"
        if "text" in oracle:
            assert got["text"] == oracle["text"] + (oracle.get("refusal") or ""), where
        if "reasoning" in oracle:
            expected = oracle["reasoning"] + (oracle.get("reasoning_text") or "")
            assert got["reasoning_stream"] == expected, where
            # the reasoning parts hold the same text, item by item
            assert "".join(r.text for r in got["reasoning"]) == expected, where
        if "tool_calls" in oracle:
            assert got["tool_calls"] == oracle["tool_calls"], where
        if "encrypted_reasoning" in oracle:
            assert [r.id for r in got["reasoning"] if r.data] == oracle["encrypted_reasoning"], where
        error = oracle.get("error")
        if error:
            assert got["error"] is not None, where
            assert got["finish_parts"] == 0, where
            assert case["error_message"] in got["error"].message, where
            continue
        if "error" in oracle or "finish_reason" in oracle:
            assert got["error"] is None, f"{where}: unexpected {got['error']!r}"
            assert got["finish_parts"] == 1, where
        if "finish_reason" in oracle:
            assert got["finish_reason"] == oracle["finish_reason"], where
        if "usage" in oracle:
            assert got["usage"] == (oracle["usage"] or ZERO_USAGE), where


def check_reasoning_items(got: dict[str, Any], case: dict[str, Any], origin: str) -> None:
    """Each reasoning item is one reasoning part with the id of its
    ``output_item.done``, holding its encrypted content byte for byte
    (compared by length and SHA-256)."""
    if got["error"] is not None:
        return
    # The case lists an item once per id it was seen with: a server that
    # changes ids mid-stream (GitHub Copilot, OpenRouter) lists the same
    # output item twice. The first is the output_item.done's.
    items = list({item["output_index"]: item for item in reversed(case["reasoning_items"])}.values())
    items.sort(key=case["reasoning_items"].index)
    reasoning = got["reasoning"]
    assert len(reasoning) == len(items)
    for part, item in zip(reasoning, items, strict=True):
        assert part.id == item["id"]
        assert part.format == FORMAT
        assert part.origin == origin
        stored = json.loads(part.provider_data)
        assert len(stored["summary"]) == item["summary_parts"]
        assert len(stored.get("content", [])) == item["reasoning_text_parts"]
        encrypted = item["encrypted_content"]
        if encrypted is None:
            assert part.data == ""
            continue
        assert len(part.data) == encrypted["chars"]
        assert hashlib.sha256(part.data.encode()).hexdigest() == encrypted["sha256"]


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body] if size <= 0 else [body[i : i + size] for i in range(0, len(body), size)]


def through_state(chunks: Iterable[bytes]) -> tuple[list[StreamPart], ModelError | None]:
    state = StreamState(ORIGIN)
    parts: list[StreamPart] = []
    try:
        for event in iter_events(chunks):
            parts.extend(state.feed(event))
            if state.done:
                break
        parts.extend(state.finish())
    except ModelError as exc:
        return parts, exc
    return parts, None


def through_adapter(
    transport: MemoryTransport, body: bytes, piece: int
) -> tuple[list[StreamPart], ModelError | None]:
    transport.add(Reply.of(body, piece=piece))
    model = OpenAIResponsesModel("test-model", base_url=BASE_URL, transport=transport)
    parts: list[StreamPart] = []
    try:
        for part in model.stream(Request(messages=(user_message("hi"),)), Context()):
            parts.append(part)
    except ModelError as exc:
        return parts, exc
    return parts, None


@pytest.mark.parametrize("path", CASES, ids=IDS)
@pytest.mark.parametrize("piece", [0, 7])
def test_fixture_through_the_state_machine(path: Path, piece: int) -> None:
    case = case_of(path)
    got = summary(*through_state(pieces(path.read_bytes(), piece)))
    check(got, case, f"{path.parent.name}/{path.stem}")
    check_reasoning_items(got, case, ORIGIN)
    if got["error"] is None and got["usage"] is not None:
        assert got["hosted_calls"] == hosted_calls(path.read_bytes())


@pytest.mark.parametrize("path", CASES, ids=IDS)
@pytest.mark.parametrize("piece", [0, 997])
def test_fixture_through_the_adapter(transport: MemoryTransport, path: Path, piece: int) -> None:
    case = case_of(path)
    got = summary(*through_adapter(transport, path.read_bytes(), piece))
    check(got, case, f"{path.parent.name}/{path.stem}")
    check_reasoning_items(got, case, "127.0.0.1:8000")
    if got["error"] is None and got["usage"] is not None:
        assert got["hosted_calls"] == hosted_calls(path.read_bytes())
    assert len(transport.sent) == 1
    sent = transport.sent[0]
    assert sent.url == BASE_URL + "/responses"
    body = sent.json()
    assert body["stream"] is True
    assert body["store"] is False
