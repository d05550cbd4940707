"""The providers' own tools through ``AnthropicModel``: web search, web fetch and
code execution, ``pause_turn``, citations, server-tool usage and tool input as it
streams.

* The request mapping, table by table: each server tool's entry and the betas it
  needs in ``anthropic-beta`` (merged with the caller's); ``FileSearch`` and a
  function tool named like a server tool are ``ConfigError`` before any request.
* Every recorded server-tool case of ``tests/fixtures/server_tools/anthropic``
  (``SOURCES.md`` there) replayed through the adapter: the text, the server-tool
  provider items (ids, names, inputs, result types), the citations, the finish
  reason, the usage and the container equal what the case's ``computed_here`` read
  from the body, and the values the recording project's own tests assert
  (``source_asserts``) where they state them.
* The round trips: the history a recorded response makes goes out with the same
  blocks the recording project sent back (``.request.json``, compared as JSON
  values: its cassettes sort keys), the paused turn last.
* A fake Messages API on 127.0.0.1 that enforces the server tools page's rules
  (https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools): a
  paused turn comes back unchanged and last, server-tool blocks come back with
  their ids, a result without its call is refused with the API's real 400; the
  adapter's steps against it, a pause continued (the loop's continuation is
  tested here on the adapter directly: the history the loop sends, built by hand).
* ``stream_tool_input``: over every recorded Anthropic stream in tests/fixtures
  holding a client tool call, the ``tool-call-delta`` fragments of a call join to
  exactly its ``tool-call`` input.
* Anthropic server-tool items sent to the OpenAI adapters are left out, with an
  INFO line.
"""

from __future__ import annotations

import datetime
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from agentcore import ConfigError, ModelSettings, Request, StreamPart, StreamPartKind, user_message
from agentcore.context import Context
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import (
    CODE_EXECUTION_BETA,
    CODE_EXECUTION_TOOL,
    WEB_FETCH_BETA,
    WEB_SEARCH_TOOL,
    beta_features,
    container_id,
    request_body,
    server_tool_entry,
)
from agentcore.providers.anthropic.stream import CONTAINER, FORMAT, StreamState, is_server_block
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.server_tools import CodeExecution, FileSearch, UserLocation, WebFetch, WebSearch
from agentcore.transport import sse as sse_framing
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import (
    Citation,
    ContentPart,
    FinishReason,
    Message,
    ProviderItem,
    Role,
    ToolDefinition,
    ToolResult,
    provider_item_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)
from tests.localserver import LocalServer, json_reply, sse_reply

FIXTURES = Path(__file__).parent / "fixtures"
CASES = FIXTURES / "server_tools" / "anthropic"
KEY = "sk-ant-server-tools-test-0000"
ORIGIN = "api.anthropic.com"
MODEL = "claude-sonnet-4-5"


# --- helpers -------------------------------------------------------------------------------


def case_json(name: str) -> Any:
    return json.loads((CASES / name).read_text(encoding="utf-8"))


def chunks_body(name: str) -> bytes:
    """A ``.chunks.jsonl`` case as an SSE body: each line, unchanged, as one
    event's data, named by its type (how the API frames it)."""
    out = []
    for line in (CASES / name).read_text(encoding="utf-8").splitlines():
        if line.strip():
            out.append(f"event: {json.loads(line)['type']}\ndata: {line}\n\n")
    return "".join(out).encode("utf-8")


def whole_body(message: dict[str, Any]) -> bytes:
    """A non-streamed message as a stream whose ``message_start`` holds it whole
    (the stream mapping reads a message that already holds its blocks)."""
    start = json.dumps({"type": "message_start", "message": message})
    stop = 'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    return f"event: message_start\ndata: {start}\n\n{stop}".encode()


def stream_of(stem: str) -> bytes:
    if (CASES / f"{stem}.sse").exists():
        return (CASES / f"{stem}.sse").read_bytes()
    if (CASES / f"{stem}.chunks.jsonl").exists():
        return chunks_body(f"{stem}.chunks.jsonl")
    return whole_body(case_json(f"{stem}.response.json"))


def adapter(transport: Any, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel(MODEL, api_key=KEY, transport=transport, **kwargs)


def replay(body: bytes, request: Request | None = None) -> list[StreamPart]:
    transport = MemoryTransport(Reply.of(body, piece=7))
    request = request or Request(messages=[user_message("hi")], stream_tool_input=True)
    return list(adapter(transport).stream(request, Context()))


def items(parts: list[StreamPart]) -> list[ProviderItem]:
    return [p.provider_item for p in parts if p.provider_item is not None]


def server_items(parts: list[StreamPart]) -> list[ProviderItem]:
    return [item for item in items(parts) if item.type != CONTAINER]


def text_of(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


def citations(parts: list[StreamPart]) -> list[Citation]:
    return [p.citation for p in parts if p.citation is not None]


def finish(parts: list[StreamPart]) -> StreamPart:
    assert parts[-1].kind is StreamPartKind.STEP_FINISH
    return parts[-1]


def assistant(parts: list[StreamPart]) -> Message:
    """The assistant message a step's parts make, as the loop makes it: a run of
    text deltas is one text part (with the citations that came since the last
    text part closed), every other part in its place."""
    content: list[ContentPart] = []
    text: list[str] = []
    cited: list[Citation] = []

    def close() -> None:
        if text:
            content.append(text_part("".join(text), cited))
            text.clear()
            cited.clear()

    for part in parts:
        if part.kind is StreamPartKind.TEXT_DELTA:
            text.append(part.text)
        elif part.citation is not None:
            cited.append(part.citation)
        elif part.reasoning is not None:
            close()
            content.append(reasoning_part(part.reasoning))
        elif part.kind is StreamPartKind.TOOL_CALL and part.tool_call is not None:
            close()
            content.append(tool_call_part(part.tool_call))
        elif part.provider_item is not None:
            close()
            content.append(provider_item_part(part.provider_item))
    close()
    message = Message(Role.ASSISTANT, content)
    return Message.from_dict(json.loads(json.dumps(message.to_dict())))  # as a saved history holds it


def blocks_apart(turn: dict[str, Any]) -> tuple[list[Any], str]:
    """A turn's blocks other than text, in order, and its text joined (the loop
    makes one text part of neighbouring text blocks; the API reads them alike)."""
    content = turn["content"]
    if isinstance(content, str):
        return [], content
    others = [block for block in content if block["type"] != "text"]
    return others, "".join(block["text"] for block in content if block["type"] == "text")


def user_text(turn: dict[str, Any]) -> str:
    return blocks_apart(turn)[1]


_SMART = str.maketrans(
    {"\u2013": "-", "\u2014": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)


def as_recorded(turn: dict[str, Any]) -> tuple[list[Any], str]:
    """A turn we send, as a pydantic-ai cassette holds the one it sent: its
    serializer normalises smart quotes and dashes (``SOURCES.md``), and its client
    leaves out the ``caller`` field of server-tool blocks (which we send back as
    the API returned it; the API takes both)."""
    others, text = recorded(turn)
    return [{k: v for k, v in block.items() if k != "caller"} for block in others], text


def recorded(turn: dict[str, Any]) -> tuple[list[Any], str]:
    return blocks_apart(json.loads(json.dumps(turn, ensure_ascii=False).translate(_SMART)))


# --- the request mapping -----------------------------------------------------------------

ENTRY_CASES: list[tuple[str, Any, dict[str, Any]]] = [
    ("web search, plain", WebSearch(), {"type": WEB_SEARCH_TOOL, "name": "web_search"}),
    (
        "web search, every field",
        WebSearch(
            max_uses=3,
            allowed_domains=["example.com", "docs.example.com"],
            user_location=UserLocation(city="Paris", country="FR", timezone="Europe/Paris"),
        ),
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["example.com", "docs.example.com"],
            "user_location": {
                "type": "approximate",
                "city": "Paris",
                "country": "FR",
                "timezone": "Europe/Paris",
            },
        },
    ),
    (
        "web search, blocked domains",
        WebSearch(blocked_domains="spam.example"),
        {"type": "web_search_20250305", "name": "web_search", "blocked_domains": ["spam.example"]},
    ),
    ("web fetch, plain", WebFetch(), {"type": "web_fetch_20250910", "name": "web_fetch"}),
    (
        "web fetch, limits",
        WebFetch(max_uses=2, allowed_domains=["arxiv.org"]),
        {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2, "allowed_domains": ["arxiv.org"]},
    ),
    ("code execution", CodeExecution(), {"type": "code_execution_20250825", "name": "code_execution"}),
]


@pytest.mark.parametrize(("name", "tool", "expected"), ENTRY_CASES, ids=[c[0] for c in ENTRY_CASES])
def test_server_tool_entry(name: str, tool: Any, expected: dict[str, Any]) -> None:
    assert server_tool_entry(tool) == expected


def test_server_tools_follow_the_function_tools_and_take_the_cache_breakpoint() -> None:
    lookup = ToolDefinition("lookup", "Look it up.", '{"type": "object", "properties": {}}')
    request = Request(
        messages=[user_message("hi")],
        tools=[lookup],
        server_tools=[WebSearch(max_uses=1), CodeExecution()],
        settings=ModelSettings(cache_tools=True),
    )
    body = request_body(request, MODEL)
    assert body["tools"] == [
        {
            "name": "lookup",
            "description": "Look it up.",
            "input_schema": {"type": "object", "properties": {}},
        },
        {"type": WEB_SEARCH_TOOL, "name": "web_search", "max_uses": 1},
        {"type": CODE_EXECUTION_TOOL, "name": "code_execution", "cache_control": {"type": "ephemeral"}},
    ]


REFUSED: list[tuple[str, Request, str]] = [
    (
        "file search",
        Request(messages=[user_message("hi")], server_tools=[FileSearch(["vs_1"])]),
        "FileSearch (file_search) is not a tool of the Anthropic Messages API: AnthropicModel cannot search "
        "vector stores",
    ),
    (
        "a function tool named like a server tool",
        Request(
            messages=[user_message("hi")],
            tools=[ToolDefinition("web_search", "mine", '{"type": "object"}')],
            server_tools=[WebSearch()],
        ),
        "the tool 'web_search' has the name of the server tool WebSearch",
    ),
]


@pytest.mark.parametrize(("name", "request_", "message"), REFUSED, ids=[c[0] for c in REFUSED])
def test_what_the_api_lacks_is_a_config_error_before_any_request(
    name: str, request_: Request, message: str
) -> None:
    transport = MemoryTransport()
    with pytest.raises(ConfigError) as caught:
        list(adapter(transport).stream(request_, Context()))
    assert str(caught.value).startswith(message)
    assert transport.sent == []


BETA_CASES: list[tuple[str, tuple[Any, ...], list[str]]] = [
    ("web search: none", (WebSearch(),), []),
    ("web fetch", (WebFetch(),), [WEB_FETCH_BETA]),
    ("code execution", (CodeExecution(),), [CODE_EXECUTION_BETA]),
    ("all three", (WebSearch(), WebFetch(), CodeExecution()), [WEB_FETCH_BETA, CODE_EXECUTION_BETA]),
]


@pytest.mark.parametrize(("name", "tools", "expected"), BETA_CASES, ids=[c[0] for c in BETA_CASES])
def test_beta_features_of_server_tools(name: str, tools: tuple[Any, ...], expected: list[str]) -> None:
    body = request_body(Request(messages=[user_message("hi")], server_tools=tools), MODEL)
    assert beta_features(body) == expected


def test_the_betas_go_in_the_header_after_the_callers() -> None:
    ok = b'event: message_start\ndata: {"type":"message_start","message":{}}\n\n' + (
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}\n\n'
    )
    transport = MemoryTransport(Reply.of(ok))
    model = adapter(transport, headers={"Anthropic-Beta": "files-api-2025-04-14"})
    request = Request(messages=[user_message("hi")], server_tools=[WebFetch(), CodeExecution()])
    list(model.stream(request, Context()))
    assert transport.sent[0].headers["Anthropic-Beta"] == (
        f"files-api-2025-04-14,{WEB_FETCH_BETA},{CODE_EXECUTION_BETA}"
    )


def test_a_history_of_server_blocks_names_their_betas_without_the_tools() -> None:
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch", "input": {"url": "u"}}
    result = {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1", "content": {}}
    history = [user_message("hi"), server_turn(call, result), user_message("more")]
    body = request_body(Request(messages=history), MODEL, origin=ORIGIN)
    assert beta_features(body) == [WEB_FETCH_BETA]


def server_item(block: dict[str, Any], origin: str = ORIGIN) -> ProviderItem:
    return ProviderItem(block["type"], json.dumps(block, separators=(",", ":")), FORMAT, origin)


def server_turn(*blocks: dict[str, Any], origin: str = ORIGIN) -> Message:
    return Message(Role.ASSISTANT, [provider_item_part(server_item(block, origin)) for block in blocks])


RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": []}
CALL = {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {"query": "q"}}


@pytest.mark.parametrize(
    "turns",
    [
        pytest.param([server_turn(RESULT)], id="a result alone"),
        pytest.param([server_turn(RESULT, CALL)], id="the result before its call"),
        pytest.param(
            [server_turn(CALL), Message(Role.USER, [text_part("go on")]), server_turn(RESULT)],
            id="the call in an earlier turn",
        ),
    ],
)
def test_a_server_result_without_its_call_is_a_config_error_naming_the_message(turns: list[Message]) -> None:
    transport = MemoryTransport()
    history = [user_message("hi"), *turns]
    index = next(
        i for i, m in enumerate(history) if '"tool_use_id"' in "".join(x.data for x in m.provider_items)
    )
    with pytest.raises(ConfigError) as caught:
        list(adapter(transport).stream(Request(messages=history), Context()))
    assert str(caught.value).startswith(
        f"messages[{index}] holds a web_search_tool_result block for the server tool call 'srvtoolu_9', "
        "but no server_tool_use with that id comes before it in its assistant turn"
    )
    assert transport.sent == []


def test_a_call_and_its_result_in_two_assistant_messages_of_one_turn_go_out() -> None:
    """Neighbouring assistant messages are one turn (the API reads them merged)."""
    history = [user_message("hi"), server_turn(CALL), server_turn(RESULT)]
    body = request_body(Request(messages=history), MODEL, origin=ORIGIN)
    assert body["messages"][1] == {"role": "assistant", "content": [CALL, RESULT]}


def test_another_services_server_blocks_are_left_out_with_their_check() -> None:
    history = [user_message("hi"), server_turn(CALL, RESULT, origin="gateway.example"), user_message("more")]
    body = request_body(Request(messages=history), MODEL, origin=ORIGIN)
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "more"}]}
    ]


def test_a_paused_turn_last_is_no_prefill_with_thinking_on() -> None:
    settings = ModelSettings(thinking_budget=2048)
    paused = [user_message("search"), server_turn(CALL)]
    body = request_body(Request(messages=paused, settings=settings), MODEL, origin=ORIGIN)
    assert body["messages"][-1] == {"role": "assistant", "content": [CALL]}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    prefill = [user_message("say hi"), Message(Role.ASSISTANT, [text_part("Hi")])]
    with pytest.raises(ConfigError, match="an assistant message last"):
        request_body(Request(messages=prefill, settings=settings), MODEL, origin=ORIGIN)


def container_item(container_id_: str, expires_at: str, origin: str = ORIGIN) -> ProviderItem:
    data = json.dumps({"id": container_id_, "expires_at": expires_at})
    return ProviderItem(CONTAINER, data, FORMAT, origin)


def epoch(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_container_id_is_the_last_live_one_of_this_service() -> None:
    history = [
        Message(Role.ASSISTANT, [provider_item_part(container_item("c_old", "2026-01-01T00:00:00Z"))]),
        Message(Role.ASSISTANT, [provider_item_part(container_item("c_new", "2026-02-01T00:00:00Z"))]),
        Message(Role.ASSISTANT, [provider_item_part(container_item("c_gw", "2027-01-01T00:00:00Z", "gw"))]),
    ]
    assert container_id(history, ORIGIN, epoch("2026-01-15T00:00:00Z")) == "c_new"
    assert container_id(history, ORIGIN, epoch("2026-02-01T00:00:00Z")) is None  # expired: a new one
    assert container_id(history[:1], ORIGIN, epoch("2025-12-01T00:00:00Z")) == "c_old"
    undated = ProviderItem(CONTAINER, '{"id": "c_any"}', FORMAT, ORIGIN)
    assert container_id([Message(Role.ASSISTANT, [provider_item_part(undated)])], ORIGIN, 0.0) == "c_any"


def test_a_container_goes_as_the_body_field_only_with_code_execution() -> None:
    item = container_item("container_1", "2030-01-01T00:00:00Z")
    history = [
        user_message("hi"),
        Message(Role.ASSISTANT, [text_part("ok"), provider_item_part(item)]),
        user_message("again"),
    ]
    with_code = request_body(
        Request(messages=history, server_tools=[CodeExecution()]), MODEL, origin=ORIGIN, now=0.0
    )
    assert with_code["container"] == "container_1"
    assert with_code["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    assert "container" not in request_body(Request(messages=history), MODEL, origin=ORIGIN, now=0.0)


# --- the recorded cases ---------------------------------------------------------------------

STREAMS = sorted(
    p.name.removesuffix(".sse").removesuffix(".chunks.jsonl")
    for p in CASES.iterdir()
    if p.name.endswith((".sse", ".chunks.jsonl"))
)
WHOLE = sorted(p.name[: -len(".response.json")] for p in CASES.glob("*.response.json"))
FINISH = {
    "end_turn": FinishReason.STOP,
    "pause_turn": FinishReason.PAUSED,
    "tool_use": FinishReason.STOP,  # no client tool call in these cases
}


def test_every_case_is_read() -> None:
    assert len(STREAMS) == 8
    assert len(WHOLE) == 5


@pytest.mark.parametrize("stem", STREAMS)
def test_a_recorded_stream_gives_what_its_body_holds(stem: str) -> None:
    values = case_json(f"{stem}.json")["computed_here"]["values"]
    parts = replay(stream_of(stem))
    assert text_of(parts) == values["text"]
    kinds = [kind for kind in values["block_sequence"] if is_server_block(kind)]
    found = server_items(parts)
    assert [item.type for item in found] == kinds
    assert {(item.format, item.origin) for item in items(parts)} == {(FORMAT, ORIGIN)}
    data = [json.loads(item.data) for item in found]
    calls = [{**b, "block_type": b["type"]} for b in data if b["type"] == "server_tool_use"]
    assert [
        {k: call[k] for k in wanted} for call, wanted in zip(calls, values["server_tool_calls"], strict=False)
    ] == values["server_tool_calls"]
    assert len(calls) == len(values["server_tool_calls"])
    assert [b["tool_use_id"] for b in data if b["type"] != "server_tool_use"] == [
        r["tool_use_id"] for r in values["server_tool_results"]
    ]
    assert [p for p in parts if p.kind is StreamPartKind.TOOL_CALL] == []  # none is the client's
    assert len(citations(parts)) == values["citations_deltas"]
    step = finish(parts)
    assert step.finish_reason is FINISH[values["stop_reason"]]
    usage = values["usage_final_merged"]
    counts = usage.get("server_tool_use") or {}
    assert step.usage is not None
    assert (step.usage.web_search_requests, step.usage.web_fetch_requests) == (
        counts.get("web_search_requests", 0),
        counts.get("web_fetch_requests", 0),
    )
    assert step.usage.input == usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
    assert step.usage.output == usage["output_tokens"]
    code_results = [
        r for r in values["server_tool_results"] if "code_execution_tool_result" in r["block_type"]
    ]
    assert step.usage.code_execution_requests == len(code_results)
    containers = [json.loads(item.data) for item in items(parts) if item.type == CONTAINER]
    assert containers == ([values["container"]] if values.get("container") else [])


@pytest.mark.parametrize("stem", WHOLE)
def test_a_recorded_response_gives_its_blocks(stem: str) -> None:
    response = case_json(f"{stem}.response.json")
    parts = replay(whole_body(response))
    kinds = [block["type"] for block in response["content"] if is_server_block(block["type"])]
    assert [item.type for item in server_items(parts)] == kinds
    server_blocks = [block for block in response["content"] if is_server_block(block["type"])]
    assert [json.loads(item.data) for item in server_items(parts)] == server_blocks
    assert text_of(parts) == "".join(b["text"] for b in response["content"] if b["type"] == "text")
    whole_citations = [
        c for b in response["content"] if b["type"] == "text" for c in b.get("citations") or []
    ]
    assert [json.loads(c.data) for c in citations(parts)] == whole_citations
    assert finish(parts).finish_reason is FINISH[response["stop_reason"]]


def vercel_sources(stem: str) -> list[tuple[str, str]]:
    """The (url, title) of each ``source`` part in the Vercel snapshot the case copies."""
    found = []
    for part in case_json(f"{stem}.json")["source_asserts"][0]["selected_parts_verbatim"]:
        if '"type": "source"' in part:
            url = re.search(r'"url": "(.*)",\n', part)
            title = re.search(r'"title": "(.*)",\n', part)
            assert url is not None
            assert title is not None
            found.append((url.group(1), title.group(1)))
    return found


def test_vercel_web_search_citations_as_its_source_asserts() -> None:
    """The snapshot's part sequence: ten sources of the search result, then
    fourteen within the text blocks: the citations."""
    parts = replay(stream_of("vercel_web_search_citations"))
    sources = vercel_sources("vercel_web_search_citations")
    assert len(sources) == 24
    assert [(c.url, c.title) for c in citations(parts)] == sources[10:]
    assert {c.type for c in citations(parts)} == {"web_search_result_location"}
    assert all(c.cited_text for c in citations(parts))
    call = server_items(parts)[0]
    assert call.text == 'web_search {"query": "tech news today September 26 2025"}'
    assert json.loads(call.data)["id"] == "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k"
    result_urls = server_items(parts)[1].text.splitlines()
    assert [(url, title) for url, title in sources[:10]] == [
        (entry["url"], entry["title"]) for entry in json.loads(server_items(parts)[1].data)["content"]
    ]
    assert result_urls == [url for url, _ in sources[:10]]
    step = finish(parts)
    assert step.usage is not None
    assert (step.usage.input, step.usage.output, step.usage.web_search_requests) == (15665, 795, 1)


def test_code_execution_as_its_source_asserts() -> None:
    """pydantic-ai's test_anthropic_code_execution_tool_stream: the call's id and
    command, the result's stdout, the thinking before them."""
    parts = replay(stream_of("code_execution_20260120_thinking_bash"))
    call, result = (json.loads(item.data) for item in server_items(parts))
    assert call["id"] == result["tool_use_id"] == "srvtoolu_01MwXaweAHve88x6s3Fc8x6Q"
    assert call["input"] == {"command": 'echo "65465-6544 * 65464-6+1.02255" | bc -l'}
    assert result["content"] == {
        "content": [],
        "return_code": 0,
        "stderr": "",
        "stdout": "-428330955.97745\n",
        "type": "bash_code_execution_result",
    }
    assert server_items(parts)[1].text == "-428330955.97745\n"
    reasoning = [p.reasoning for p in parts if p.reasoning is not None]
    assert [r.text for r in reasoning] == ["Let me calculate this mathematical expression."]
    assert reasoning[0].signature.startswith("EusBClsIDRgCKkBpzetW9oKOZtFP6IeFJJr3gnQBXqdZrYcRnwTLcVuC")


def test_nested_calls_keep_their_caller_and_pair_by_id() -> None:
    """Dynamic filtering: the web fetch called from code execution's code comes
    complete in content_block_start with its ``caller``; results answer calls by
    id, not by position."""
    parts = replay(stream_of("vercel_web_fetch_20260209_dynamic_filtering"))
    blocks = [json.loads(item.data) for item in server_items(parts)]
    code, fetch = blocks[0], blocks[1]
    assert code["caller"] == {"type": "direct"}
    assert isinstance(code["input"]["code"], str)
    assert code["input"]["code"]
    assert fetch["caller"] == {"type": "code_execution_20260120", "tool_id": code["id"]}
    assert [b.get("tool_use_id") for b in blocks[2:4]] == [fetch["id"], code["id"]]


# --- round trips ------------------------------------------------------------------------------


def test_the_paused_turn_goes_back_unchanged_and_last() -> None:
    """pause_turn_web_search: the continuation request (.i1) holds the user
    message and every block of the paused response (.i0), thinking with its
    signature, the searches, the trailing call without a result, and nothing
    after it."""
    sent = case_json("pause_turn_web_search.i1.request.json")
    parts = replay(stream_of("pause_turn_web_search.i0"))
    assert finish(parts).finish_reason is FinishReason.PAUSED
    history = [user_message(user_text(sent["messages"][0])), assistant(parts)]
    settings = ModelSettings(thinking_budget=4096)
    request = Request(
        messages=history, server_tools=[WebSearch()], settings=settings, max_output_tokens=15000
    )
    body = request_body(request, "claude-sonnet-4-5", origin=ORIGIN)
    assert len(body["messages"]) == len(sent["messages"]) == 2
    for ours, theirs in zip(body["messages"], sent["messages"], strict=True):
        assert ours["role"] == theirs["role"]
        assert as_recorded(ours) == recorded(theirs)
    assert body["messages"][-1]["content"][-1]["type"] == "server_tool_use"
    assert body["thinking"] == sent["thinking"]
    assert body["tools"] == [{k: v for k, v in sent["tools"][0].items() if v is not None}]


def test_the_continued_stream_starts_with_the_pending_result() -> None:
    parts = replay(stream_of("pause_turn_web_search.i1"))
    first = server_items(parts)[0]
    paused = server_items(replay(stream_of("pause_turn_web_search.i0")))
    assert first.type == "web_search_tool_result"
    assert json.loads(first.data)["tool_use_id"] == json.loads(paused[-1].data)["id"]
    assert finish(parts).finish_reason is FinishReason.STOP


def test_a_web_search_history_goes_back_as_the_recording_sent_it() -> None:
    """roundtrip_web_search_history: the response of .i0, then a new user message;
    .i1 sent the thinking, the call, its result (encrypted content) in place, and
    the text without its citations."""
    sent = case_json("roundtrip_web_search_history.i1.request.json")
    first = case_json("roundtrip_web_search_history.i0.request.json")
    parts = replay(whole_body(case_json("roundtrip_web_search_history.i0.response.json")))
    history = [
        user_message(user_text(first["messages"][0])),
        assistant(parts),
        user_message(user_text(sent["messages"][2])),
    ]
    settings = ModelSettings(thinking_budget=3000)
    body = request_body(
        Request(messages=history, server_tools=[WebSearch()], settings=settings), MODEL, origin=ORIGIN
    )
    assert [as_recorded(turn) for turn in body["messages"]] == [recorded(turn) for turn in sent["messages"]]
    assert [m.citations for m in history][1]  # kept in the history, not sent
    assert all("citations" not in block for block in body["messages"][1]["content"])


REQUESTS = sorted(p.name[: -len(".request.json")] for p in CASES.glob("*.request.json"))


@pytest.mark.parametrize("stem", [s for s in REQUESTS if len(case_json(f"{s}.request.json")["messages"]) > 1])
def test_the_blocks_a_recording_sent_back_go_back_the_same(stem: str) -> None:
    """Each assistant turn a recording project sent back, read as the API's
    message and sent again, goes out with the same blocks."""
    sent = case_json(f"{stem}.request.json")
    for turn in sent["messages"]:
        if turn["role"] != "assistant":
            continue
        message = assistant(replay(whole_body({"content": turn["content"], "stop_reason": "end_turn"})))
        body = request_body(Request(messages=[user_message("q"), message]), MODEL, origin=ORIGIN)
        assert blocks_apart(body["messages"][1]) == blocks_apart(turn)


def test_the_container_a_step_returned_goes_with_the_next_request() -> None:
    """code_execution_20260120_thinking_bash returned a container; the next step
    names it as ``container`` (as roundtrip_code_execution_container_reuse.i1 did)."""
    parts = replay(stream_of("code_execution_20260120_thinking_bash"))
    history = [
        user_message("what is 65465-6544 * 65464-6+1.02255"),
        assistant(parts),
        user_message("and +1?"),
    ]
    request = Request(messages=history, server_tools=[CodeExecution()])
    body = request_body(request, MODEL, origin=ORIGIN, now=epoch("2026-04-24T11:00:00Z"))
    assert body["container"] == "container_011CaNRFAbjdPf4rmBarZzqQ"
    assert CODE_EXECUTION_BETA in beta_features(body)
    later = request_body(request, MODEL, origin=ORIGIN, now=epoch("2026-04-24T11:13:37Z"))
    assert "container" not in later
    reuse = case_json("roundtrip_code_execution_container_reuse.i1.request.json")
    assert reuse["container"].startswith("container_")


# --- the fake API on 127.0.0.1 ------------------------------------------------------------------

PAUSED_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Searching."},
    {"type": "server_tool_use", "id": "srvtoolu_A", "name": "web_search", "input": {"query": "agentcore"}},
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_A",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://a.example",
                "title": "A",
                "encrypted_content": "EA==",
            }
        ],
    },
    {
        "type": "server_tool_use",
        "id": "srvtoolu_B",
        "name": "web_search",
        "input": {"query": "agentcore docs"},
    },
]
CONTINUED_BLOCKS: list[dict[str, Any]] = [
    {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_B",
        "content": [
            {
                "type": "web_search_result",
                "url": "https://b.example",
                "title": "B",
                "encrypted_content": "EB==",
            }
        ],
    },
    {"type": "tool_use", "id": "toolu_C", "name": "save_note", "input": {"text": "B is the docs"}},
]
CITATION = {
    "type": "web_search_result_location",
    "url": "https://b.example",
    "title": "B",
    "encrypted_index": "Eg==",
    "cited_text": "agentcore docs live here",
}


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)


def _message(
    blocks: list[dict[str, Any]], stop: str, searches: int, extra: list[dict[str, Any]] | None = None
) -> bytes:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    ]
    for index, block in enumerate(blocks):
        if block["type"] in ("server_tool_use", "tool_use"):
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
            )
            text = json.dumps(block["input"])
            for cut in range(0, len(text), 5):
                delta = {"type": "input_json_delta", "partial_json": text[cut : cut + 5]}
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
        elif block["type"] == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            for citation in block.get("citations", []):
                delta = {"type": "citations_delta", "citation": citation}
                events.append({"type": "content_block_delta", "index": index, "delta": delta})
            delta = {"type": "text_delta", "text": block["text"]}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        else:
            events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    usage = {
        "input_tokens": 30,
        "output_tokens": 20,
        "server_tool_use": {"web_search_requests": searches, "web_fetch_requests": 0},
    }
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}
    )
    events.append({"type": "message_stop"})
    return _sse(events)


def _error(message: str) -> Any:
    """The API's 400 (https://platform.claude.com/docs/en/api/errors)."""
    body = {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
        "request_id": "req_011Fake",
    }
    return json_reply(400, body)


class ServerToolsAPI:
    """A Messages API whose model searches the web: the server tools page's rules
    enforced on every request, its answers by what the request holds.

    * A server tool's result must come after its ``server_tool_use`` in the same
      assistant turn: else the API's real 400, "messages.N.content.M: unexpected
      `tool_use_id` found in `X_tool_result` blocks: ID. Each `X_tool_result`
      block must have a corresponding `server_tool_use` block before it." (as
      users reported it, anthropics/claude-code#80439).
    * Every server-tool block sent must be one this server issued, unchanged (ids
      and all): else a 400 ``invalid_request_error`` naming it.
    * After a ``pause_turn`` the next request must end with the paused assistant
      content unchanged (the stop reasons page: send the assistant content back
      to continue): else a 400 ``invalid_request_error``.

    The steps: a first request is answered with :data:`PAUSED_BLOCKS` and
    ``pause_turn``; the continuation with :data:`CONTINUED_BLOCKS` (the pending
    result, then a client tool call) and ``tool_use``; a request carrying that
    call's result with a cited answer and ``end_turn``.
    """

    def __init__(self) -> None:
        self.issued: dict[tuple[str, str], dict[str, Any]] = {}
        self.paused: list[dict[str, Any]] | None = None

    def respond(self, record: dict[str, Any]) -> Any:
        body = record["body"]
        messages = body["messages"]
        refused = (
            self._check_results(messages) or self._check_issued(messages) or self._check_paused(messages)
        )
        if refused is not None:
            return refused
        if self.paused is not None:
            self.paused = None
            self._issue(CONTINUED_BLOCKS)
            return sse_reply(_message(CONTINUED_BLOCKS, "tool_use", 1), piece=11)
        last = messages[-1]["content"]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            answer = [{"type": "text", "text": "The docs are at b.example.", "citations": [CITATION]}]
            return sse_reply(_message(answer, "end_turn", 0), piece=11)
        self.paused = PAUSED_BLOCKS
        self._issue(PAUSED_BLOCKS)
        return sse_reply(_message(PAUSED_BLOCKS, "pause_turn", 1), piece=11)

    def _issue(self, blocks: list[dict[str, Any]]) -> None:
        for block in blocks:
            if is_server_block(block["type"]):
                self.issued[(block["type"], block.get("id") or block["tool_use_id"])] = block

    def _check_results(self, messages: list[dict[str, Any]]) -> Any:
        for number, turn in enumerate(messages):
            calls: set[str] = set()
            for position, block in enumerate(turn["content"] if isinstance(turn["content"], list) else []):
                kind = block["type"]
                if kind == "server_tool_use":
                    calls.add(block["id"])
                elif is_server_block(kind) and block["tool_use_id"] not in calls:
                    return _error(
                        f"messages.{number}.content.{position}: unexpected `tool_use_id` found in "
                        f"`{kind}` blocks: {block['tool_use_id']}. Each `{kind}` block must have a "
                        "corresponding `server_tool_use` block before it."
                    )
        return None

    def _check_issued(self, messages: list[dict[str, Any]]) -> Any:
        for number, turn in enumerate(messages):
            for position, block in enumerate(turn["content"] if isinstance(turn["content"], list) else []):
                if is_server_block(block["type"]):
                    key = (block["type"], block.get("id") or block.get("tool_use_id"))
                    if self.issued.get(key) != block:
                        return _error(
                            f"messages.{number}.content.{position}: "
                            f"a `{block['type']}` block this API did not return"
                        )
        return None

    def _check_paused(self, messages: list[dict[str, Any]]) -> Any:
        if self.paused is None:
            return None
        last = messages[-1]
        if last["role"] != "assistant" or last["content"] != self.paused:
            return _error(
                "the paused assistant turn must be sent back unchanged as the last message to continue it"
            )
        return None


@pytest.fixture
def api() -> Iterator[tuple[ServerToolsAPI, LocalServer]]:
    fake = ServerToolsAPI()
    server = LocalServer(responder=fake.respond)
    try:
        yield fake, server
    finally:
        server.close()


def test_a_pause_continued_a_client_tool_and_a_cited_answer_against_the_enforcing_api(
    api: tuple[ServerToolsAPI, LocalServer],
) -> None:
    """Three steps as the loop sends them: the paused turn last (thinking on);
    the continued turn, which ends with a client call, kept with the server
    tool's result; the call's result and a cited answer."""
    _fake, server = api
    model = AnthropicModel(
        MODEL, api_key=KEY, base_url=server.url, settings=ModelSettings(thinking_budget=2048)
    )
    history: list[Message] = [user_message("Find agentcore's docs and note them.")]
    tools = [
        ToolDefinition(
            "save_note", "Save a note.", '{"type": "object", "properties": {"text": {"type": "string"}}}'
        )
    ]

    def step() -> list[StreamPart]:
        request = Request(messages=history, tools=tools, server_tools=[WebSearch()], stream_tool_input=True)
        return list(model.stream(request, Context()))

    paused = step()
    assert finish(paused).finish_reason is FinishReason.PAUSED
    assert text_of(paused) == "Searching."
    history.append(assistant(paused))
    continued = step()
    assert finish(continued).finish_reason is FinishReason.TOOL_CALLS
    deltas = [
        p.tool_call.input for p in continued if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call
    ]
    call = next(p.tool_call for p in continued if p.kind is StreamPartKind.TOOL_CALL and p.tool_call)
    assert "".join(deltas) == call.input == json.dumps({"text": "B is the docs"})
    # the loop keeps one turn: the continuation's parts join the paused message
    turn = assistant(paused + continued)
    assert [item.type for item in turn.provider_items] == [
        "server_tool_use",
        "web_search_tool_result",
        "server_tool_use",
        "web_search_tool_result",
    ]
    history[-1] = turn
    history.append(Message(Role.TOOL, [tool_result_part(ToolResult(call.id, call.name, "saved"))]))
    answered = step()
    assert finish(answered).finish_reason is FinishReason.STOP
    assert text_of(answered) == "The docs are at b.example."
    assert citations(answered) == [
        Citation(
            "https://b.example",
            "B",
            "agentcore docs live here",
            "web_search_result_location",
            json.dumps(CITATION, separators=(",", ":")),
        )
    ]
    usages = [finish(parts).usage for parts in (paused, continued, answered)]
    assert [u.web_search_requests for u in usages if u is not None] == [1, 1, 0]
    sent = [record["body"] for record in server.requests]
    assert sent[1]["messages"][-1] == {"role": "assistant", "content": PAUSED_BLOCKS}
    assert sent[1]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert [r["headers"].get("anthropic-beta") for r in server.requests] == [None, None, None]


def test_the_enforcing_api_refuses_a_paused_turn_not_sent_back(
    api: tuple[ServerToolsAPI, LocalServer],
) -> None:
    _fake, server = api
    model = AnthropicModel(MODEL, api_key=KEY, base_url=server.url)
    history: list[Message] = [user_message("Find agentcore's docs.")]
    paused = list(model.stream(Request(messages=history, server_tools=[WebSearch()]), Context()))
    history += [assistant(paused), user_message("and hurry")]  # not a continuation: a new user turn
    with pytest.raises(ModelError) as caught:
        list(model.stream(Request(messages=history, server_tools=[WebSearch()]), Context()))
    assert caught.value.error_class is ErrorClass.INVALID_REQUEST
    assert "must be sent back unchanged" in str(caught.value)


def test_the_enforcing_api_answers_a_result_without_its_call_with_the_real_400(
    api: tuple[ServerToolsAPI, LocalServer],
) -> None:
    """What the adapter refuses before sending (see above), sent raw: the API's error."""
    _fake, server = api
    body = {
        "model": MODEL,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [RESULT]}],
    }
    answer = requests.post(f"{server.url}/v1/messages", json=body, timeout=10)
    assert answer.status_code == 400
    assert answer.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "messages.1.content.0: unexpected `tool_use_id` found in `web_search_tool_result` "
            "blocks: srvtoolu_9. Each `web_search_tool_result` block must have a corresponding "
            "`server_tool_use` block before it.",
        },
        "request_id": "req_011Fake",
    }
    model = AnthropicModel(MODEL, api_key=KEY, base_url=server.url)
    history = [user_message("hi"), server_turn(RESULT, origin=f"127.0.0.1:{server.port}")]
    with pytest.raises(ConfigError, match=r"messages\[1\] holds a web_search_tool_result block"):
        list(model.stream(Request(messages=history), Context()))
    assert server.hits == 1  # the raw request only


# --- stream_tool_input over every recorded tool-call stream -----------------------------------


def recorded_streams() -> list[Path]:
    """Every recorded Anthropic stream in tests/fixtures."""
    found = sorted((FIXTURES / "anthropic").glob("*.sse"))
    for group in ("anthropic_python_sdk", "pydantic_anthropic", "vercel_anthropic"):
        found += sorted((FIXTURES / "peer" / group).glob("*.sse"))
    found += sorted((FIXTURES / "compaction" / "anthropic").glob("*.sse"))
    found += sorted(CASES.glob("*.sse"))
    return found


def stream_parts(body: bytes, deltas: bool) -> list[StreamPart] | None:
    state = StreamState(ORIGIN, stream_tool_input=deltas)
    parts: list[StreamPart] = []
    try:
        for event in sse_framing.iter_events([body]):
            parts += state.feed(event)
            if state.done:
                break
        return parts + state.finish()
    except ModelError:
        return None  # the recordings of errors: no step to compare


def test_tool_call_deltas_join_to_the_final_arguments_of_every_recorded_call() -> None:
    with_calls = 0
    for path in recorded_streams():
        body = path.read_bytes()
        parts = stream_parts(body, True)
        if parts is None:
            continue
        calls = [p.tool_call for p in parts if p.kind is StreamPartKind.TOOL_CALL and p.tool_call]
        joined: dict[str, list[str]] = {}
        for part in parts:
            if part.kind is StreamPartKind.TOOL_CALL_DELTA and part.tool_call is not None:
                joined.setdefault(part.tool_call.id, []).append(part.tool_call.input)
        for call in calls:
            assert "".join(joined.pop(call.id)) == call.input, path.name
            before = next(i for i, p in enumerate(parts) if p.tool_call is call)
            assert all(
                i < before
                for i, p in enumerate(parts)
                if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call and p.tool_call.id == call.id
            ), path.name
        with_calls += bool(calls)
        cut = {p.tool_call.id for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call}
        assert set(joined) <= cut  # only a call dropped on `length` streams deltas and no call
        off = stream_parts(body, False)
        assert off == [p for p in parts if p.kind is not StreamPartKind.TOOL_CALL_DELTA], path.name
    assert with_calls >= 20


@pytest.mark.parametrize(
    ("fragments", "initial", "expected"),
    [
        pytest.param(["", " ", "\n"], {}, ["{}"], id="blank input: one delta of the fallback"),
        pytest.param([], {"a": 1}, ['{"a": 1}'], id="input complete at the start"),
        pytest.param([" ", '{"a"', ": 1}"], {}, [' {"a"', ": 1}"], id="leading blanks held back"),
    ],
)
def test_deltas_of_edge_inputs(fragments: list[str], initial: dict[str, Any], expected: list[str]) -> None:
    state = StreamState(ORIGIN, stream_tool_input=True)
    block = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": initial}
    events: list[dict[str, Any]] = [{"type": "content_block_start", "index": 0, "content_block": block}]
    events += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": f}}
        for f in fragments
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
    ]
    parts: list[StreamPart] = []
    for event in events:
        parts += state.feed(sse_framing.Event(str(event["type"]), event))
    parts += state.finish()
    deltas = [p.tool_call.input for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call]
    call = next(p.tool_call for p in parts if p.kind is StreamPartKind.TOOL_CALL and p.tool_call)
    assert deltas == expected
    assert "".join(deltas) == call.input


# --- other providers -------------------------------------------------------------------------------


def sent_to(model_class: Any) -> str:
    """The body an OpenAI adapter sends for a history holding Anthropic server-tool items."""
    transport = MemoryTransport()
    openai = model_class("gpt-test", api_key="sk-test", transport=transport)
    history = [
        user_message("search"),
        Message(
            Role.ASSISTANT,
            [
                provider_item_part(server_item(CALL)),
                provider_item_part(server_item(RESULT)),
                text_part("Found."),
            ],
        ),
        user_message("thanks"),
    ]
    with pytest.raises(AssertionError, match="no reply left"):  # what was sent is what counts
        list(openai.stream(Request(messages=history), Context()))
    return json.dumps(transport.sent[0].json())


@pytest.mark.parametrize("model_class", [OpenAIChatModel, OpenAIResponsesModel])
def test_anthropic_server_items_are_left_out_of_openai_requests(model_class: Any) -> None:
    sent = sent_to(model_class)
    assert "srvtoolu_9" not in sent
    assert "server_tool_use" not in sent
    assert "Found." in sent


def test_the_responses_adapter_says_so_at_info(caplog: pytest.LogCaptureFixture) -> None:
    """(The Chat Completions adapter leaves provider items out without a line: its
    mapping never reads them.)"""
    caplog.set_level(logging.INFO, logger="agentcore.providers")
    sent_to(OpenAIResponsesModel)
    lines = [r.getMessage() for r in caplog.records if "provider items left out" in r.getMessage()]
    assert lines == [
        "agentcore: another service's provider items left out: "
        "messages[1]: server_tool_use from anthropic at api.anthropic.com; "
        "messages[1]: web_search_tool_result from anthropic at api.anthropic.com"
    ]


def test_tool_call_part_keeps_no_delta_when_off() -> None:
    parts = replay(stream_of("vercel_web_search_citations"), Request(messages=[user_message("hi")]))
    assert not [p for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA]
