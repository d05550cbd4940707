"""The OpenAI Responses API's hosted tools (web search, file search, code
interpreter) through the adapter: the request mapping table by table, the
stream mapping event by event, every recorded hosted-tool stream in
``tests/fixtures/server_tools/openai_responses`` (sources in its
``SOURCES.md``), the round trip the recordings show, and a local HTTP server
on 127.0.0.1 that enforces the API's rules for these items.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Citation,
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    Message,
    ModelError,
    ProviderItem,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolDefinition,
    user_message,
)
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.openai.chat.request import request_body as chat_body
from agentcore.providers.openai.responses.request import request_body, server_tool_json
from agentcore.providers.openai.responses.stream import FORMAT, StreamState, citation_of, server_tool_text
from agentcore.server_tools import CodeExecution, FileSearch, UserLocation, WebFetch, WebSearch
from agentcore.transport.sse import Event, iter_events
from agentcore.types import provider_item_part, reasoning_part, text_part
from tests.localserver import LocalServer, Reply, json_reply, sse_reply

FIXTURES = Path(__file__).parent / "fixtures" / "server_tools" / "openai_responses"
STREAMS = sorted([*FIXTURES.glob("*.sse"), *FIXTURES.glob("*.chunks.jsonl")])
STREAM_IDS = [p.name.split(".sse")[0].split(".chunks")[0] for p in STREAMS]
ORIGIN = "api.openai.com"
HOSTED = ("web_search_call", "file_search_call", "code_interpreter_call")
COUNTS = {
    "web_search_call": "web_search_requests",
    "file_search_call": "file_search_requests",
    "code_interpreter_call": "code_execution_requests",
}


# --- the request ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "entry"),
    [
        (WebSearch(), {"type": "web_search"}),
        (
            WebSearch(allowed_domains=["openai.com", "example.org"]),
            {"type": "web_search", "filters": {"allowed_domains": ["openai.com", "example.org"]}},
        ),
        (
            WebSearch(user_location=UserLocation(city="Paris", country="FR", timezone="Europe/Paris")),
            {
                "type": "web_search",
                "user_location": {
                    "type": "approximate",
                    "city": "Paris",
                    "country": "FR",
                    "timezone": "Europe/Paris",
                },
            },
        ),
        (CodeExecution(), {"type": "code_interpreter", "container": {"type": "auto"}}),
        (FileSearch(["vs_1"]), {"type": "file_search", "vector_store_ids": ["vs_1"]}),
        (
            FileSearch(["vs_1", "vs_2"], max_num_results=5),
            {"type": "file_search", "vector_store_ids": ["vs_1", "vs_2"], "max_num_results": 5},
        ),
    ],
)
def test_server_tool_entries(tool: Any, entry: dict[str, Any]) -> None:
    assert server_tool_json(tool) == entry


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            WebFetch(),
            r"^WebFetch \(web_fetch\): the Responses API has no such hosted tool, so OpenAIResponsesModel",
        ),
        (WebSearch(max_uses=3), r"^WebSearch\.max_uses has no field .* OpenAIResponsesModel cannot send it"),
        (
            WebSearch(blocked_domains=["x.com"]),
            r"^WebSearch\.blocked_domains has no field .* OpenAIResponsesModel",
        ),
    ],
)
def test_what_the_api_lacks_is_refused_before_any_request(tool: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        server_tool_json(tool)
    server = LocalServer([sse_reply(b"")])
    try:
        model = OpenAIResponsesModel("gpt-5", base_url=server.url)
        with pytest.raises(ConfigError, match=message):
            list(model.stream(Request(messages=[user_message("hi")], server_tools=[tool]), Context()))
        assert server.hits == 0
    finally:
        server.close()


def test_hosted_tools_follow_the_function_tools_and_add_their_include_entries() -> None:
    tool = ToolDefinition("lookup", "Look up.", '{"type": "object"}')
    request = Request(
        messages=[user_message("hi")],
        tools=[tool],
        server_tools=[WebSearch(), CodeExecution(), FileSearch(["vs_1"])],
    )
    body = request_body(request, "gpt-5")
    assert [entry["type"] for entry in body["tools"]] == [
        "function",
        "web_search",
        "code_interpreter",
        "file_search",
    ]
    assert body["include"] == [
        "reasoning.encrypted_content",
        "web_search_call.action.sources",
        "code_interpreter_call.outputs",
    ]
    plain = request_body(
        Request(messages=[user_message("hi")], server_tools=[FileSearch(["vs_1"])]), "gpt-4o", reasoning=False
    )
    assert "include" not in plain
    assert plain["tools"] == [{"type": "file_search", "vector_store_ids": ["vs_1"]}]
    none = request_body(Request(messages=[user_message("hi")]), "gpt-4o", reasoning=False)
    assert "include" not in none
    assert "tools" not in none


def test_a_function_tool_named_as_a_server_tool_is_refused() -> None:
    tool = ToolDefinition("web_search", "Mine.", '{"type": "object"}')
    with pytest.raises(
        ConfigError, match=r"^the tool 'web_search' has the name of the server tool WebSearch"
    ):
        request_body(
            Request(messages=[user_message("hi")], tools=[tool], server_tools=[WebSearch()]), "gpt-5"
        )


def test_chat_completions_refuses_every_server_tool_before_any_request() -> None:
    server = LocalServer([sse_reply(b"")])
    try:
        model = OpenAIChatModel("gpt-4o", base_url=server.url)
        for tool in (WebSearch(), WebFetch(), CodeExecution(), FileSearch(["vs_1"])):
            request = Request(messages=[user_message("hi")], server_tools=[tool])
            pattern = (
                rf"^{type(tool).__name__} \({tool.name}\): the Chat Completions API has no server tool; "
                r"use the Responses API \(OpenAIResponsesModel or AzureOpenAIResponsesModel"
            )
            with pytest.raises(ConfigError, match=pattern):
                list(model.stream(request, Context()))
        assert server.hits == 0
    finally:
        server.close()


# --- the stream, event by event ---------------------------------------------------


def ev(kind: str, **fields: Any) -> Event:
    return Event(kind, {"type": kind, **fields})


def completed(output: list[Any], status: str = "completed", **extra: Any) -> Event:
    kind = "response.completed" if status == "completed" else "response.incomplete"
    response = {
        "id": "resp_1",
        "status": status,
        "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 3},
    }
    return ev(kind, response={**response, **extra})


def feed(*events: Event, state: StreamState | None = None) -> list[StreamPart]:
    state = state or StreamState(ORIGIN, new_id=lambda: "call_made")
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(event)
        if state.done:
            break
    return parts + state.finish()


SEARCH = {
    "id": "ws_1",
    "type": "web_search_call",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "weather",
        "sources": [{"type": "url", "url": "https://a.example/"}],
    },
}


def test_a_hosted_tool_item_is_a_provider_item_where_it_completes() -> None:
    added = {"id": "ws_1", "type": "web_search_call", "status": "in_progress"}
    parts = feed(
        ev("response.output_item.added", output_index=0, item=added),
        ev("response.web_search_call.in_progress", output_index=0, item_id="ws_1"),
        ev("response.web_search_call.searching", output_index=0, item_id="ws_1"),
        ev("response.web_search_call.completed", output_index=0, item_id="ws_1"),
        ev("response.output_item.done", output_index=0, item=SEARCH),
        ev("response.output_text.delta", output_index=1, delta="Sunny."),
        completed([SEARCH]),
    )
    assert [p.kind for p in parts] == [
        StreamPartKind.PROVIDER_ITEM,
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.STEP_FINISH,
    ]
    item = parts[0].provider_item
    assert item == ProviderItem(
        "web_search_call",
        json.dumps(SEARCH, separators=(",", ":")),
        FORMAT,
        ORIGIN,
        'web_search {"type":"search","query":"weather"}\nhttps://a.example/',
    )
    assert parts[-1].finish_reason is FinishReason.STOP
    assert parts[-1].usage is not None
    assert parts[-1].usage.web_search_requests == 1
    assert parts[-1].usage.input == 10


def test_an_item_still_searching_in_its_done_event_completes_there() -> None:
    """Azure: no web_search_call.completed, and the done item says searching."""
    searching = {
        "id": "ws_2",
        "type": "web_search_call",
        "status": "searching",
        "action": {"type": "search", "query": "q"},
    }
    parts = feed(
        ev("response.output_item.added", output_index=0, item={"id": "ws_2", "type": "web_search_call"}),
        ev("response.web_search_call.searching", output_index=0, item_id="ws_2"),
        ev("response.output_item.done", output_index=0, item=searching),
        completed([searching]),
    )
    assert [p.kind for p in parts] == [StreamPartKind.PROVIDER_ITEM, StreamPartKind.STEP_FINISH]
    assert parts[0].provider_item is not None
    assert json.loads(parts[0].provider_item.data) == searching
    assert parts[1].usage is not None
    assert parts[1].usage.web_search_requests == 1


def test_an_item_that_never_completed_is_left_out_and_not_counted() -> None:
    added = {"id": "ci_1", "type": "code_interpreter_call", "status": "in_progress", "outputs": []}
    parts = feed(
        ev("response.output_item.added", output_index=0, item=added),
        ev("response.code_interpreter_call_code.delta", output_index=0, delta="print("),
        completed([]),
    )
    assert [p.kind for p in parts] == [StreamPartKind.STEP_FINISH]
    assert parts[0].usage is not None
    assert parts[0].usage.to_dict() == {
        "input": 10,
        "output": 3,
        "cache_read": 0,
        "cache_write": 0,
    }


@pytest.mark.parametrize(
    ("item", "text"),
    [
        (
            {"type": "file_search_call", "id": "fs_1", "queries": ["capital", "France"]},
            'file_search {"queries":["capital","France"]}',
        ),
        ({"type": "code_interpreter_call", "id": "ci_1", "code": "2**8"}, 'code_interpreter {"code":"2**8"}'),
        (
            {"type": "web_search_call", "id": "ws_1", "action": {"type": "open_page", "url": "https://b/"}},
            'web_search {"type":"open_page","url":"https://b/"}',
        ),
        ({"type": "web_search_call", "id": "ws_1"}, "web_search {}"),
        ({"type": "message"}, ""),
    ],
)
def test_server_tool_text(item: dict[str, Any], text: str) -> None:
    assert server_tool_text(item) == text


@pytest.mark.parametrize(
    ("annotation", "citation"),
    [
        (
            {"type": "url_citation", "url": "https://a/", "title": "A", "start_index": 1, "end_index": 9},
            Citation(url="https://a/", title="A", type="url_citation"),
        ),
        (
            {"type": "file_citation", "file_id": "file-1", "filename": "f.pdf", "index": 3},
            Citation(title="f.pdf", type="file_citation"),
        ),
        (
            {"type": "container_file_citation", "container_id": "c", "file_id": "cf", "filename": "x.csv"},
            Citation(title="x.csv", type="container_file_citation"),
        ),
        ({"type": "file_path", "file_id": "file-2", "index": 0}, Citation(type="file_path")),
    ],
)
def test_citation_of(annotation: dict[str, Any], citation: Citation) -> None:
    got = citation_of(annotation)
    assert (got.url, got.title, got.cited_text, got.type) == (citation.url, citation.title, "", citation.type)
    assert json.loads(got.data) == annotation


def test_an_annotation_is_one_citation_even_when_the_done_item_repeats_it() -> None:
    annotation = {"type": "url_citation", "url": "https://a/", "title": "A", "start_index": 0, "end_index": 3}
    message = {
        "type": "message",
        "content": [{"type": "output_text", "text": "Abc", "annotations": [annotation]}],
    }
    parts = feed(
        ev("response.output_text.delta", output_index=0, content_index=0, delta="Abc"),
        ev(
            "response.output_text.annotation.added",
            output_index=0,
            content_index=0,
            annotation_index=0,
            annotation=annotation,
        ),
        ev("response.output_text.done", output_index=0, content_index=0, text="Abc"),
        ev("response.output_item.done", output_index=0, item=message),
        completed([message]),
    )
    assert [p.kind for p in parts] == [
        StreamPartKind.TEXT_DELTA,
        StreamPartKind.CITATION,
        StreamPartKind.STEP_FINISH,
    ]
    assert parts[1].citation is not None
    assert parts[1].citation.url == "https://a/"


def test_annotations_only_in_the_done_item_are_cited_there() -> None:
    first = {"type": "url_citation", "url": "https://a/", "title": "A"}
    second = {"type": "file_citation", "filename": "b.txt", "file_id": "file-b", "index": 2}
    message = {
        "type": "message",
        "content": [{"type": "output_text", "text": "Ab", "annotations": [first, second]}],
    }
    parts = feed(
        ev("response.output_text.delta", output_index=0, delta="Ab"),
        ev("response.output_item.done", output_index=0, item=message),
        completed([message]),
    )
    assert [p.citation.title for p in parts if p.citation is not None] == ["A", "b.txt"]


def test_incomplete_for_its_content_is_content_filter_and_keeps_the_text() -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Partial"}]}
    parts = feed(
        ev("response.output_text.delta", output_index=0, delta="Partial"),
        completed([message], status="incomplete", incomplete_details={"reason": "content_filter"}),
    )
    assert parts[0].text == "Partial"
    assert parts[-1].finish_reason is FinishReason.CONTENT_FILTER


def test_tool_call_deltas_carry_the_calls_id_and_name_and_join_to_its_input() -> None:
    added = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": ""}
    done = {**added, "arguments": '{"q": "x"}'}
    events = (
        ev("response.output_item.added", output_index=0, item=added),
        ev("response.function_call_arguments.delta", output_index=0, delta='{"q": '),
        ev("response.function_call_arguments.delta", output_index=0, delta='"x"}'),
        ev("response.function_call_arguments.done", output_index=0, arguments='{"q": "x"}'),
        ev("response.output_item.done", output_index=0, item=done),
        completed([done]),
    )
    parts = feed(*events, state=StreamState(ORIGIN, tool_input=True))
    kinds = [p.kind.value for p in parts]
    assert kinds == ["tool-call-delta", "tool-call-delta", "tool-call", "step-finish"]
    assert [(p.tool_call.id, p.tool_call.name, p.tool_call.input) for p in parts[:2] if p.tool_call] == [
        ("call_1", "lookup", '{"q": '),
        ("call_1", "lookup", '"x"}'),
    ]
    final = parts[2].tool_call
    assert final is not None
    assert (final.id, final.input) == ("call_1", '{"q": "x"}')
    # without stream_tool_input the same events give no delta
    assert [p.kind.value for p in feed(*events)] == ["tool-call", "step-finish"]


def test_tool_call_deltas_of_whitespace_arguments_join_to_the_empty_object() -> None:
    added = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "now", "arguments": ""}
    parts = feed(
        ev("response.output_item.added", output_index=0, item=added),
        ev("response.function_call_arguments.delta", output_index=0, delta="  "),
        ev("response.output_item.done", output_index=0, item={**added, "arguments": "  "}),
        completed([]),
        state=StreamState(ORIGIN, tool_input=True),
    )
    assert [(p.kind.value, p.tool_call.input if p.tool_call else None) for p in parts[:2]] == [
        ("tool-call-delta", "{}"),
        ("tool-call", "{}"),
    ]


# --- every recorded hosted-tool stream --------------------------------------------


def body_of(path: Path) -> bytes:
    """The body as a server sends it: ``.sse`` as recorded; the lines of a
    ``.chunks.jsonl`` framed as ``data:`` events."""
    raw = path.read_bytes()
    if path.suffix == ".sse":
        return raw
    return b"".join(b"data: " + line + b"\n\n" for line in raw.splitlines() if line.strip())


def meta_of(path: Path) -> dict[str, Any]:
    stem = path.name.split(".sse")[0].split(".chunks")[0]
    data: dict[str, Any] = json.loads((FIXTURES / f"{stem}.json").read_text("utf-8"))
    return data


def run(body: bytes, *, tool_input: bool = False) -> list[StreamPart]:
    state = StreamState(ORIGIN, tool_input=tool_input)
    parts: list[StreamPart] = []
    for event in iter_events([body[i : i + 4096] for i in range(0, len(body), 4096)]):
        parts += state.feed(event)
        if state.done:
            break
    return parts + state.finish()


def test_every_recorded_stream_is_here() -> None:
    assert len(STREAMS) == 9
    assert all(name in (FIXTURES / "SOURCES.md").read_text("utf-8") for name in STREAM_IDS)


@pytest.mark.parametrize("path", STREAMS, ids=STREAM_IDS)
def test_recorded_stream(path: Path) -> None:
    """Text, citations, hosted-tool items, finish reason and usage, against
    what the build of the set read from the body (``computed_here``) and what
    the source's own test asserts (``source_asserts``)."""
    meta = meta_of(path)
    values = meta["computed_here"]["values"]
    parts = run(body_of(path))
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    assert text == values["text"]
    citations = [p.citation for p in parts if p.citation is not None]
    assert [c.type for c in citations] == [a["type"] for a in values["annotations"]]
    for citation, annotation in zip(citations, values["annotations"], strict=True):
        assert citation.url == annotation.get("url", "")
        assert citation.title == annotation.get("title", annotation.get("filename", ""))
        assert {k: v for k, v in json.loads(citation.data).items() if k in annotation} == annotation
    items = [p.provider_item for p in parts if p.provider_item is not None]
    hosted = [item for item in values["output_items"] if item["type"] in HOSTED]
    assert [(i.type, json.loads(i.data)["id"], json.loads(i.data)["status"]) for i in items] == [
        (h["type"], h["id"], h["status"]) for h in hosted
    ]
    for item in items:
        assert (item.format, item.origin) == (FORMAT, ORIGIN)
        assert item.text.startswith(item.type.removesuffix("_call") + " ")
    finish = parts[-1]
    assert finish.kind is StreamPartKind.STEP_FINISH
    assert finish.finish_reason is FinishReason.STOP
    assert values["final"]["status"] == "completed"
    usage = values["final"]["usage"]
    assert finish.usage is not None
    counts = {COUNTS[t]: sum(1 for h in hosted if h["type"] == t) for t in HOSTED}
    assert finish.usage.to_dict() == {
        "input": usage["input_tokens"],
        "output": usage["output_tokens"],
        "cache_read": usage["input_tokens_details"]["cached_tokens"],
        "cache_write": 0,
        **{k: v for k, v in counts.items() if v},
    }
    check_source_asserts(meta, items, citations)


def check_source_asserts(meta: dict[str, Any], items: list[ProviderItem], citations: list[Citation]) -> None:
    ids = [json.loads(item.data)["id"] for item in items]
    for claim in meta["source_asserts"]:
        if "part_type_sequence" in claim:  # a Vercel snapshot
            sequence = claim["part_type_sequence"]
            assert sequence.count("source") == len(citations)
            assert sequence.count("tool-result") == len(items)
            verbatim = "\n".join(claim["selected_parts_verbatim"])
            called = re.findall(r'"toolCallId": "([a-z]+_[0-9a-f]+)"', verbatim)
            assert list(dict.fromkeys(called)) == ids
            finish = next(part for part in claim["selected_parts_verbatim"] if '"type": "finish"' in part)
            assert '"unified": "stop"' in finish
        else:  # the source's test function: every hosted item id it names is one of ours, in order
            named = list(dict.fromkeys(re.findall(r"\b(?:ws|fs|ci)_[0-9a-f]{20,}", claim["text"])))
            assert named == [i for i in ids if i in named]
            assert named or not claim.get("truncated")


# --- the round trip ---------------------------------------------------------------


def assistant_of(parts: list[StreamPart]) -> Message:
    """The assistant message the loop keeps from a step's parts: reasoning,
    provider items and the text, in the order they completed."""
    content = []
    text = ""
    for part in parts:
        if part.kind is StreamPartKind.TEXT_DELTA:
            text += part.text
        elif part.reasoning is not None:
            content.append(reasoning_part(part.reasoning))
        elif part.provider_item is not None:
            content.append(provider_item_part(part.provider_item))
    return Message(Role.ASSISTANT, [*content, text_part(text)])


def test_the_web_search_round_trip_sends_back_what_the_recording_shows() -> None:
    """``web_search_sources.i0`` streamed, then the next request: its
    ``web_search_call`` goes back with its id and every field, in place
    between the reasoning items, as ``roundtrip_web_search_history.i1``'s
    request (the same cassette's next interaction) shows."""
    parts = run((FIXTURES / "web_search_sources.i0.sse").read_bytes())
    history = [
        user_message("What is the weather in San Francisco today?"),
        assistant_of(parts),
        user_message("how about Mexico City?"),
    ]
    body = request_body(
        Request(system="You are a helpful assistant.", messages=history, server_tools=[WebSearch()]),
        "gpt-5",
        origin=ORIGIN,
    )
    recorded = json.loads((FIXTURES / "roundtrip_web_search_history.i1.request.json").read_text("utf-8"))
    assert [(i.get("type", "message"), i.get("id")) for i in body["input"]] == [
        (i.get("type", "message"), i.get("id") if i.get("type") != "message" else None)
        for i in recorded["input"]
    ]
    assert body["include"] == recorded["include"]
    assert body["tools"] == [{"type": "web_search"}]
    sent = [i for i in body["input"] if i["type"] == "web_search_call"]
    kept = [json.loads(p.provider_item.data) for p in parts if p.provider_item is not None]
    assert sent == kept  # byte for byte what the stream's done item held
    # pydantic-ai left the action's sources out of what it sent back; the rest is the same
    for ours, theirs in zip(
        sent, [i for i in recorded["input"] if i.get("type") == "web_search_call"], strict=True
    ):
        assert {**ours, "action": {k: v for k, v in ours["action"].items() if k != "sources"}} == theirs


def test_the_code_interpreter_round_trip_sends_the_items_back_unchanged() -> None:
    """``roundtrip_code_interpreter_history.i1``: the history's reasoning,
    ``code_interpreter_call`` and message go back in that order, the call
    item exactly as kept, with ``code_interpreter_call.outputs`` included."""
    recorded = json.loads(
        (FIXTURES / "roundtrip_code_interpreter_history.i1.request.json").read_text("utf-8")
    )
    call = next(i for i in recorded["input"] if i.get("type") == "code_interpreter_call")
    data = json.dumps(call, separators=(",", ":"))
    assistant = Message(
        Role.ASSISTANT,
        [
            provider_item_part(ProviderItem("code_interpreter_call", data, FORMAT, ORIGIN)),
            text_part("-428,330,955.97745"),
        ],
    )
    history = [
        user_message("what is 65465-6544 * 65464-6+1.02255"),
        assistant,
        user_message("how about 2 to the power of 8?"),
    ]
    body = request_body(Request(messages=history, server_tools=[CodeExecution()]), "gpt-5", origin=ORIGIN)
    assert body["input"][1] == call
    assert json.dumps(body["input"][1], separators=(",", ":")) == data
    assert body["include"] == recorded["include"]
    assert body["tools"] == recorded["tools"]


# --- a local server that enforces the rules ---------------------------------------

KNOWN_ITEMS = frozenset(
    {"message", "reasoning", "function_call", "function_call_output", "compaction", *HOSTED, "item_reference"}
)


def enforcing(replies: Iterator[Reply]) -> Any:
    """A responder that refuses what the Responses API refuses with its real
    400 error JSON (the shape of https://platform.openai.com/docs/guides/error-codes):
    an input item of a type it does not know (``invalid_value``, as it
    answers an unknown ``action.type``), a hosted tool's item without its
    ``id`` (``missing_required_parameter``); anything else gets the next reply."""

    def respond(record: dict[str, Any]) -> Reply:
        for index, item in enumerate(record["body"]["input"]):
            kind = item.get("type", "message")
            if kind not in KNOWN_ITEMS:
                return json_reply(
                    400,
                    {
                        "error": {
                            "message": f"Invalid value: '{kind}'. Supported values are: "
                            + ", ".join(f"'{k}'" for k in sorted(KNOWN_ITEMS)),
                            "type": "invalid_request_error",
                            "param": f"input[{index}].type",
                            "code": "invalid_value",
                        }
                    },
                )
            if kind in HOSTED and not item.get("id"):
                return json_reply(
                    400,
                    {
                        "error": {
                            "message": f"Missing required parameter: 'input[{index}].id'.",
                            "type": "invalid_request_error",
                            "param": f"input[{index}].id",
                            "code": "missing_required_parameter",
                        }
                    },
                )
        return next(replies)

    return respond


ANSWER = (
    b'data: {"type":"response.output_text.delta","output_index":0,"delta":"Cloudy."}\n\n'
    b'data: {"type":"response.completed","response":{"id":"resp_2","status":"completed","output":[],'
    b'"usage":{"input_tokens":50,"output_tokens":2}}}\n\n'
)


def test_a_two_step_web_search_over_http_sends_the_items_back_and_the_server_accepts_them() -> None:
    first = (FIXTURES / "web_search_sources.i0.sse").read_bytes()
    server = LocalServer(responder=enforcing(iter([sse_reply(first, piece=512), sse_reply(ANSWER)])))
    try:
        model = OpenAIResponsesModel("gpt-5", base_url=server.url + "/v1")
        origin = f"127.0.0.1:{server.port}"
        history = [user_message("What is the weather in San Francisco today?")]
        parts = list(model.stream(Request(messages=history, server_tools=[WebSearch()]), Context()))
        items = [p.provider_item for p in parts if p.provider_item is not None]
        assert [i.origin for i in items] == [origin]
        history += [assistant_of(parts), user_message("how about Mexico City?")]
        again = list(model.stream(Request(messages=history, server_tools=[WebSearch()]), Context()))
        assert "".join(p.text for p in again if p.kind is StreamPartKind.TEXT_DELTA) == "Cloudy."
        sent = server.requests[1]["body"]["input"]
        assert [i for i in sent if i.get("type") == "web_search_call"] == [json.loads(items[0].data)]
    finally:
        server.close()


def test_an_item_without_its_id_gets_the_real_400() -> None:
    server = LocalServer(responder=enforcing(iter([sse_reply(ANSWER)])))
    try:
        model = OpenAIResponsesModel("gpt-5", base_url=server.url + "/v1")
        origin = f"127.0.0.1:{server.port}"
        bare = ProviderItem(
            "web_search_call", '{"type":"web_search_call","status":"completed"}', FORMAT, origin
        )
        history = [
            user_message("q"),
            Message(Role.ASSISTANT, [provider_item_part(bare), text_part("a")]),
            user_message("q2"),
        ]
        with pytest.raises(ModelError) as info:
            list(model.stream(Request(messages=history), Context()))
        assert info.value.error_class is ErrorClass.INVALID_REQUEST
        assert "Missing required parameter: 'input[1].id'." in info.value.message
    finally:
        server.close()


ANTHROPIC_BLOCKS = (
    ProviderItem(
        "server_tool_use",
        '{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}}',
        "anthropic",
        "api.anthropic.com",
        'web_search {"query":"q"}',
    ),
    ProviderItem(
        "web_search_tool_result",
        '{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}',
        "anthropic",
        "api.anthropic.com",
    ),
)


def test_anthropic_server_tool_blocks_are_left_out_with_an_info_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The enforcing server would refuse them (an item type it does not know): they never reach it."""
    server = LocalServer(responder=enforcing(iter([sse_reply(ANSWER)])))
    try:
        model = OpenAIResponsesModel("gpt-5", base_url=server.url + "/v1")
        assistant = Message(
            Role.ASSISTANT, [*(provider_item_part(b) for b in ANTHROPIC_BLOCKS), text_part("Sunny.")]
        )
        history = [user_message("q"), assistant, user_message("q2")]
        with caplog.at_level(logging.INFO, logger="agentcore.providers"):
            parts = list(model.stream(Request(messages=history), Context()))
        assert parts[-1].finish_reason is FinishReason.STOP
        assert [i.get("type", "message") for i in server.requests[0]["body"]["input"]] == [
            "message",
            "message",
            "message",
        ]
        assert "server_tool_use from anthropic at api.anthropic.com" in caplog.text
        assert "web_search_tool_result from anthropic at api.anthropic.com" in caplog.text
    finally:
        server.close()


def test_responses_items_are_left_out_of_another_origin_and_of_chat_completions(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parts = run((FIXTURES / "file_search.i3.sse").read_bytes())
    history = [
        user_message("What is the capital of France?"),
        assistant_of(parts),
        user_message("And Spain?"),
    ]
    with caplog.at_level(logging.INFO, logger="agentcore.providers"):
        elsewhere = request_body(Request(messages=history), "gpt-5", origin="my-proxy.example")
        chat = chat_body(
            Request(messages=[*history, Message(Role.ASSISTANT, [provider_item_part(ANTHROPIC_BLOCKS[0])])]),
            "gpt-4o",
            origin=ORIGIN,
        )
    assert all(i.get("type") != "file_search_call" for i in elsewhere["input"])
    # The last assistant message held only an Anthropic block: nothing of it is left to send.
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "user"]
    assert "file_search_call from openai-responses at api.openai.com" in caplog.text
    assert "server_tool_use from anthropic at api.anthropic.com" in caplog.text
    assert caplog.text.count("another service's provider items left out") == 2


def test_a_history_with_hosted_items_survives_the_json_round_trip() -> None:
    parts = run(body_of(FIXTURES / "vercel_code_interpreter.chunks.jsonl"))
    message = assistant_of(parts)
    again = Message.from_dict(json.loads(json.dumps(message.to_dict())))
    assert again == message
    history = [user_message("roll"), message, user_message("more")]
    assert request_body(Request(messages=history), "gpt-5", origin=ORIGIN) == request_body(
        Request(messages=[history[0], again, history[2]]), "gpt-5", origin=ORIGIN
    )
