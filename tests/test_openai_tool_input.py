"""``stream_tool_input`` on both OpenAI APIs: the ``tool-call-delta`` parts of
every recorded tool-call stream in ``tests/fixtures`` (Chat Completions and
compatible servers, the Responses API) join to exactly the final arguments
of their call, carry its id and name and come before its ``tool-call``
part; without the option the parts are what they always were. Then the
Chat Completions cases the recordings do not hold, chunk by chunk.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, FinishReason, ModelError, Request, StreamPart, StreamPartKind, user_message
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.openai.chat.stream import StreamState as ChatState
from agentcore.providers.openai.responses.stream import StreamState as ResponsesState
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import Event, iter_events

FIXTURES = Path(__file__).parent / "fixtures"
CHAT = sorted([*FIXTURES.glob("openai_chat/*.sse"), *FIXTURES.glob("openai_compat/*.sse")])
RESPONSES = sorted(
    [*FIXTURES.glob("openai_responses/*/*.sse"), *FIXTURES.glob("server_tools/openai_responses/*.sse")]
)
BASE_URL = "http://127.0.0.1:8000/v1"


def through(model: Any, body: bytes, *, tool_input: bool) -> list[StreamPart] | None:
    """The parts of ``body`` through the adapter on the in-memory transport
    (in 97-byte reads); None for a stream that ends in an error."""
    request = Request(messages=(user_message("hi"),), stream_tool_input=tool_input)
    try:
        return list(model.stream(request, Context()))
    except ModelError:  # a recorded error stream
        return None


def check_deltas(parts: list[StreamPart]) -> int:
    """Every call's deltas come before it, carry its id and name, and join
    to its input; no delta without its call. Returns the number of calls."""
    deltas: dict[str, list[StreamPart]] = {}
    calls = 0
    for part in parts:
        if part.kind is StreamPartKind.TOOL_CALL_DELTA:
            assert part.tool_call is not None
            deltas.setdefault(part.tool_call.id, []).append(part)
        elif part.kind is StreamPartKind.TOOL_CALL:
            call = part.tool_call
            assert call is not None
            mine = deltas.pop(call.id, [])
            assert "".join(d.tool_call.input for d in mine if d.tool_call) == call.input
            assert {d.tool_call.name for d in mine if d.tool_call} <= {call.name}
            calls += 1
    assert deltas == {}
    return calls


def plain(parts: list[StreamPart]) -> list[StreamPart]:
    return [p for p in parts if p.kind is not StreamPartKind.TOOL_CALL_DELTA]


@pytest.mark.parametrize("path", CHAT, ids=[f"{p.parent.name}/{p.stem}" for p in CHAT])
def test_chat_deltas_join_to_the_arguments(path: Path) -> None:
    body = path.read_bytes()
    transport = MemoryTransport()
    model = OpenAIChatModel("m", base_url=BASE_URL, transport=transport)
    transport.add(Reply.of(body, piece=97))
    with_deltas = through(model, body, tool_input=True)
    transport.add(Reply.of(body, piece=97))
    without = through(model, body, tool_input=False)
    if with_deltas is None or without is None:
        assert with_deltas is None
        assert without is None
        return
    check_deltas(with_deltas)
    assert plain(with_deltas) == without
    assert not any(p.kind is StreamPartKind.TOOL_CALL_DELTA for p in without)


@pytest.mark.parametrize("path", RESPONSES, ids=[f"{p.parent.name}/{p.stem}" for p in RESPONSES])
def test_responses_deltas_join_to_the_arguments(path: Path) -> None:
    body = path.read_bytes()
    transport = MemoryTransport()
    model = OpenAIResponsesModel("m", base_url=BASE_URL, transport=transport)
    transport.add(Reply.of(body, piece=97))
    with_deltas = through(model, body, tool_input=True)
    transport.add(Reply.of(body, piece=97))
    without = through(model, body, tool_input=False)
    if with_deltas is None or without is None:
        assert with_deltas is None
        assert without is None
        return
    check_deltas(with_deltas)
    assert plain(with_deltas) == without


def test_the_recordings_hold_tool_calls_on_both_apis() -> None:
    """The proof above covers streams that hold calls (streamed as deltas)."""
    counted = {"chat": 0, "responses": 0}
    for api, paths, state_of in (
        ("chat", CHAT, lambda: ChatState(tool_input=True)),
        ("responses", RESPONSES, lambda: ResponsesState(tool_input=True)),
    ):
        for path in paths:
            state = state_of()
            parts: list[StreamPart] = []
            try:
                for event in iter_events([path.read_bytes()]):
                    parts += state.feed(event)
                    if state.done:
                        break
                parts += state.finish()
            except ModelError:  # an error stream: nothing to join
                continue
            if any(p.kind is StreamPartKind.TOOL_CALL_DELTA for p in parts):
                counted[api] += check_deltas(parts)
    assert counted["chat"] >= 10
    assert counted["responses"] >= 10


# --- Chat Completions, chunk by chunk -------------------------------------------


def chunk(*calls: dict[str, Any], finish: str | None = None) -> Event:
    return Event(
        "", {"choices": [{"index": 0, "delta": {"tool_calls": list(calls)}, "finish_reason": finish}]}
    )


def fragment(
    index: int, arguments: str, call_id: str | None = None, name: str | None = None
) -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    out: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        out["id"] = call_id
    return out


def feed(*events: Event) -> list[StreamPart]:
    state = ChatState(tool_input=True, new_id=lambda: "call_made")
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(event)
    return parts + state.finish()


def shown(parts: list[StreamPart]) -> list[tuple[str, str, str, str]]:
    return [
        (p.kind.value, p.tool_call.id, p.tool_call.name, p.tool_call.input)
        for p in parts
        if p.tool_call is not None
    ]


def test_parallel_calls_interleave_by_index() -> None:
    parts = feed(
        chunk(fragment(0, "", "call_a", "weather")),
        chunk(fragment(1, "", "call_b", "time")),
        chunk(fragment(0, '{"city":')),
        chunk(fragment(1, '{"tz":')),
        chunk(fragment(0, '"Paris"}')),
        chunk(fragment(1, '"UTC"}'), finish="tool_calls"),
        Event("", "[DONE]"),
    )
    assert shown(parts) == [
        ("tool-call-delta", "call_a", "weather", '{"city":'),
        ("tool-call-delta", "call_b", "time", '{"tz":'),
        ("tool-call-delta", "call_a", "weather", '"Paris"}'),
        ("tool-call-delta", "call_b", "time", '"UTC"}'),
        ("tool-call", "call_a", "weather", '{"city":"Paris"}'),
        ("tool-call", "call_b", "time", '{"tz":"UTC"}'),
    ]


def test_a_call_whose_name_comes_late_shows_its_arguments_then() -> None:
    parts = feed(
        chunk(fragment(0, '{"a":', "call_a")),
        chunk(fragment(0, "1}", name="f"), finish="tool_calls"),
    )
    assert shown(parts) == [
        ("tool-call-delta", "call_a", "f", '{"a":'),
        ("tool-call-delta", "call_a", "f", "1}"),
        ("tool-call", "call_a", "f", '{"a":1}'),
    ]


def test_a_call_without_an_id_gets_its_arguments_in_one_part_at_the_end() -> None:
    parts = feed(chunk(fragment(0, '{"a":', name="f")), chunk(fragment(0, "1}"), finish="stop"))
    assert shown(parts) == [
        ("tool-call-delta", "call_made", "f", '{"a":1}'),
        ("tool-call", "call_made", "f", '{"a":1}'),
    ]


def test_a_server_that_repeats_the_whole_arguments_still_joins_to_them() -> None:
    parts = feed(
        chunk(fragment(0, '{"a": ', "call_a", "f")),
        chunk(fragment(0, '{"a": 1}')),  # the whole arguments again: read as a snapshot
        Event("", {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    )
    assert shown(parts) == [
        ("tool-call-delta", "call_a", "f", '{"a": '),
        ("tool-call-delta", "call_a", "f", "1}"),
        ("tool-call", "call_a", "f", '{"a": 1}'),
    ]


def test_whitespace_arguments_join_to_the_empty_object() -> None:
    parts = feed(chunk(fragment(0, " ", "call_a", "now")), chunk(fragment(0, " "), finish="tool_calls"))
    assert shown(parts) == [("tool-call-delta", "call_a", "now", "{}"), ("tool-call", "call_a", "now", "{}")]


def test_content_filter_ends_the_step_as_content_filter_with_the_text() -> None:
    state = ChatState()
    parts = state.feed(
        Event("", {"choices": [{"index": 0, "delta": {"content": "Part"}, "finish_reason": None}]})
    )
    parts += state.feed(
        Event("", {"choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]})
    )
    parts += state.finish()
    assert parts[0].text == "Part"
    assert parts[-1].finish_reason is FinishReason.CONTENT_FILTER
