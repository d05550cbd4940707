"""Gemini's built-in tools as agentcore's server tools: what the request
sends for each (and refuses before any call), and what the recorded streams
of the real API (``tests/fixtures/gemini/``) give: citations from the
grounding metadata, the searches, fetches, code runs and file searches in
``Usage``, and the tools' parts kept and sent back byte for byte to the same
origin only."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    Request,
    RunError,
    StreamPart,
    StreamPartKind,
    Usage,
    generate,
    tool,
    user_message,
)
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.gemini.request import request_body, server_tool_json
from agentcore.server_tools import CodeExecution, FileSearch, ServerTool, WebFetch, WebSearch
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import ToolDefinition

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "gemini"
STORE = "fileSearchStores/testfilesearchgroundingstre-p2hcv3cs2i69"


def reply(name: str) -> Reply:
    return Reply.of((FIXTURES / name).read_bytes(), piece=53, headers={"content-type": "text/event-stream"})


def model(*replies: Reply) -> tuple[GeminiModel, MemoryTransport]:
    transport = MemoryTransport(*replies)
    return GeminiModel("gemini-test", api_key="AIza-test", transport=transport), transport


def parts_of(name: str, *tools: ServerTool) -> list[StreamPart]:
    gemini, _ = model(reply(name))
    return list(gemini.stream(Request(messages=[user_message("hi")], server_tools=tools), Context()))


def text(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


def citations(parts: list[StreamPart]) -> list[tuple[str, str, str, str]]:
    return [(c.type, c.url, c.title, c.cited_text) for p in parts if (c := p.citation) is not None]


WEATHER = ToolDefinition(
    name="get_weather",
    description="The weather in a city.",
    input_schema='{"type": "object", "properties": {"city": {"type": "string"}}}',
)


# --- the request ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server_tool", "entry"),
    [
        (WebSearch(), {"googleSearch": {}}),
        (WebFetch(), {"urlContext": {}}),
        (CodeExecution(), {"codeExecution": {}}),
        (FileSearch(vector_store_ids=[STORE]), {"fileSearch": {"fileSearchStoreNames": [STORE]}}),
        (
            FileSearch(vector_store_ids=[STORE, "fileSearchStores/other"], max_num_results=4),
            {"fileSearch": {"fileSearchStoreNames": [STORE, "fileSearchStores/other"], "topK": 4}},
        ),
    ],
)
def test_each_server_tool_is_its_gemini_tool(server_tool: ServerTool, entry: dict[str, Any]) -> None:
    assert server_tool_json(server_tool) == entry
    body = request_body(Request(messages=[user_message("hi")], server_tools=(server_tool,)), "m")
    assert body["tools"] == [entry]
    assert "toolConfig" not in body  # a built-in tool alone needs no combination flag


def test_server_tools_follow_the_functions_and_ask_for_the_combination() -> None:
    request = Request(
        messages=[user_message("hi")], tools=[WEATHER], server_tools=(WebSearch(), CodeExecution())
    )
    body = request_body(request, "m")
    assert [list(entry) for entry in body["tools"]] == [
        ["functionDeclarations"],
        ["googleSearch"],
        ["codeExecution"],
    ]
    assert body["toolConfig"] == {"includeServerSideToolInvocations": True}


def test_the_combination_flag_joins_the_tool_choice() -> None:
    request = Request(
        messages=[user_message("hi")],
        tools=[WEATHER],
        server_tools=(WebFetch(),),
        settings=ModelSettings(tool_choice="required"),
    )
    assert request_body(request, "m")["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY"},
        "includeServerSideToolInvocations": True,
    }


@pytest.mark.parametrize(
    ("server_tool", "field"),
    [
        (WebSearch(max_uses=3), "WebSearch.max_uses"),
        (WebSearch(allowed_domains=["example.com"]), "WebSearch.allowed_domains"),
        (WebSearch(blocked_domains=["example.com"]), "WebSearch.blocked_domains"),
        (WebSearch(user_location={"city": "Paris"}), "WebSearch.user_location"),
        (WebFetch(max_uses=2), "WebFetch.max_uses"),
        (WebFetch(allowed_domains=["example.com"]), "WebFetch.allowed_domains"),
        (FileSearch(vector_store_ids=["vs_123"]), "FileSearch.vector_store_ids: 'vs_123'"),
    ],
)
def test_an_option_the_api_lacks_is_refused_before_any_call(server_tool: ServerTool, field: str) -> None:
    gemini, transport = model()
    request = Request(messages=[user_message("hi")], server_tools=(server_tool,))
    with pytest.raises(ConfigError) as caught:
        list(gemini.stream(request, Context()))
    assert str(caught.value).startswith(field)
    assert "GeminiModel" in str(caught.value) or "fileSearchStores/" in str(caught.value)
    assert transport.sent == []


def test_a_function_tool_named_like_a_server_tool_is_refused() -> None:
    clash = ToolDefinition(name="web_search", description="", input_schema='{"type": "object"}')
    request = Request(messages=[user_message("hi")], tools=[clash], server_tools=(WebSearch(),))
    with pytest.raises(ConfigError, match="the tool 'web_search' has the name of the server tool WebSearch"):
        request_body(request, "m")


def test_a_run_asking_for_an_option_the_api_lacks_fails_before_any_call() -> None:
    gemini, transport = model()
    options = LoopOptions(model=gemini, messages=[user_message("hi")], tools=[WebSearch(max_uses=2)])
    with pytest.raises(RunError) as caught:
        generate(options)
    assert isinstance(caught.value.err, ConfigError)
    assert transport.sent == []


# --- the recorded streams ---------------------------------------------------------------


def test_search_grounding_gives_citations_and_the_search_count() -> None:
    parts = parts_of("gemini25pro_google_search_grounding.sse", WebSearch())
    cited = citations(parts)
    # one citation per (support, chunk) pair, in the supports' order; every chunk is cited
    assert len(cited) == 9
    assert {c[0] for c in cited} == {"web"}
    assert [c[2] for c in cited][:3] == [
        "Weather information for San Francisco, CA, US",
        "timeanddate.com",
        "Weather information for San Francisco, CA, US",
    ]
    assert {c[2] for c in cited} == {
        "Weather information for San Francisco, CA, US",
        "timeanddate.com",
        "weather.gov",
        "wunderground.com",
        "accuweather.com",
    }
    assert all(c[3] == "" for c in cited)  # web chunks hold no passage
    first = next(p.citation for p in parts if p.citation is not None)
    data = json.loads(first.data)
    assert data["segment"] == {
        "startIndex": 235,
        "endIndex": 375,
        "text": "As of Tuesday afternoon, the temperature is around 69°F (21°C), with a real feel of about "
        "76°F (24°C) and humidity at approximately 68%.",
    }
    assert data["chunk"]["web"]["uri"] == "https://www.google.com/search?q=weather+in+San Francisco, CA,+US"
    assert data["segment"]["text"] in text(parts)
    # the search is billed: promptTokenCount + toolUsePromptTokenCount in, candidates + thoughts out
    assert parts[-1].usage == Usage(17 + 102, 241 + 412, web_search_requests=1)
    assert parts[-1].finish_reason is FinishReason.STOP


def test_gemini3_search_keeps_the_tools_parts_and_counts_only_real_queries() -> None:
    parts = parts_of("gemini3flash_server_tool_google_search.sse", WebSearch())
    items = [p.provider_item for p in parts if p.provider_item is not None]
    assert [i.text for i in items] == [
        'GOOGLE_SEARCH_WEB {"queries": ["largest city in Mexico"]}',
        "GOOGLE_SEARCH_WEB",
    ]
    call = json.loads(items[0].data)
    assert call["toolCall"] == {
        "toolType": "GOOGLE_SEARCH_WEB",
        "args": {"queries": ["largest city in Mexico"]},
        "id": "d6vd9r5q",
    }
    assert call["thoughtSignature"]
    assert json.loads(items[1].data)["toolResponse"]["id"] == "d6vd9r5q"
    assert [c[2] for c in citations(parts)] == ["sa.gov", "vynmsa.com", "worldatlas.com", ""]
    assert json.loads(text(parts)) == {"city": "Mexico City", "country": "Mexico"}
    # webSearchQueries is ["", "largest city in Mexico"]: the empty one is no search
    assert parts[-1].usage == Usage(87, 78, web_search_requests=1)


def test_url_context_counts_the_page_it_read_and_cites_it() -> None:
    parts = parts_of("gemini25flash_url_context.sse", WebFetch())
    assert citations(parts) == [("web", "https://ai.pydantic.dev", "Pydantic AI", "")]
    assert text(parts) == "Pydantic AI Gateway is now available!"
    assert parts[-1].usage == Usage(32 + 4610, 25 + 37, web_fetch_requests=1)


def test_code_execution_is_kept_readable_and_counted() -> None:
    parts = parts_of("gemini3flash_code_execution.sse", CodeExecution())
    items = [p.provider_item for p in parts if p.provider_item is not None]
    assert [i.text for i in items] == [
        "result = 65465 - 6544 * 65464 - 6 + 1.02255\nprint(result)",
        "OUTCOME_OK: -428330955.97745\n",
    ]
    assert parts[-1].usage == Usage(147 + 360, 108 + 168, code_execution_requests=1)


def test_file_search_cites_the_passage_found_and_counts_the_search() -> None:
    parts = parts_of("gemini3flash_server_tool_file_search.i3.sse", FileSearch(vector_store_ids=[STORE]))
    assert citations(parts) == [
        (
            "retrievedContext",
            "",
            "",
            "Paris is the capital of France. The Eiffel Tower is a famous landmark in Paris.\n",
        )
    ]
    data = json.loads(next(p.citation for p in parts if p.citation is not None).data)
    assert data["chunk"]["retrievedContext"]["fileSearchStore"] == STORE
    assert data["segment"]["text"] == "The capital of France is **Paris**."
    assert [p.provider_item.text for p in parts if p.provider_item is not None] == [
        "FILE_SEARCH",
        "FILE_SEARCH",
    ]
    assert parts[-1].usage == Usage(427 + 771, 122 + 447, file_search_requests=1)


def test_gemini25_file_search_shows_as_code_and_counts_no_run_without_a_result() -> None:
    parts = parts_of("gemini25pro_file_search_legacy.sse", FileSearch(vector_store_ids=[STORE]))
    assert len(citations(parts)) == 2  # two supports of one chunk
    assert [p.provider_item.text for p in parts if p.provider_item is not None] == [
        'print(file_search.query(query="Capital of France"))\n'
    ]
    assert parts[-1].usage == Usage(15 + 770, 37 + 742)


def test_grounding_metadata_of_the_wrong_shape_is_upstream() -> None:
    chunk = {
        "candidates": [
            {
                "content": {"parts": [{"text": "x"}], "role": "model"},
                "finishReason": "STOP",
                "groundingMetadata": {
                    "groundingChunks": [],
                    "groundingSupports": [{"groundingChunkIndices": [0]}],
                },
            }
        ]
    }
    gemini, _ = model(Reply.of(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"))
    with pytest.raises(ModelError) as caught:
        list(gemini.stream(Request(messages=[user_message("hi")]), Context()))
    assert caught.value.error_class is ErrorClass.UPSTREAM
    assert "groundingChunkIndices" in str(caught.value)


# --- through the loop, and back -----------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def test_a_run_keeps_citations_and_usage_and_sends_the_tools_parts_back_byte_for_byte() -> None:
    gemini, transport = model(reply("gemini3flash_server_tool_google_search.sse"))
    result = generate(
        LoopOptions(model=gemini, messages=[user_message("largest city?")], tools=[WebSearch()])
    )
    answer = result.messages[-1]
    assert [c.title for c in answer.citations] == ["sa.gov", "vynmsa.com", "worldatlas.com", ""]
    assert result.usage.web_search_requests == 1
    lines = (FIXTURES / "gemini3flash_server_tool_google_search.sse").read_text().splitlines()
    events = [json.loads(line[len("data: ") :]) for line in lines if line.startswith("data: ")]
    recorded = [event["candidates"][0]["content"]["parts"] for event in events[:2]]
    # the next request holds the toolCall and toolResponse parts exactly as they came
    transport.add(reply("gemini20flash_text.sse"))
    history: list[Message] = [*result.messages, user_message("and its population?")]
    generate(LoopOptions(model=gemini, messages=history, tools=[WebSearch(), get_weather]))
    sent = transport.sent[-1].json()
    model_parts = sent["contents"][1]["parts"]
    assert model_parts[0] == recorded[0][0]  # toolCall with its signature
    assert model_parts[1] == recorded[1][0]  # toolResponse, search suggestions and all
    # the answer's text, one part, with the signature of the empty text part that ended it
    assert model_parts[2] == {
        "text": '{\n  "city": "Mexico City",\n  "country": "Mexico"\n} ',
        "thoughtSignature": events[4]["candidates"][0]["content"]["parts"][0]["thoughtSignature"],
    }
    assert len(model_parts) == 3
    assert sent["toolConfig"] == {"includeServerSideToolInvocations": True}
    assert [list(entry) for entry in sent["tools"]] == [["functionDeclarations"], ["googleSearch"]]
    # another origin (a proxy's host) gets none of them
    assert answer.provider_items[0].origin != "proxy.example"
    body = request_body(Request(messages=history, server_tools=(WebSearch(),)), "m", origin="proxy.example")
    assert [list(part) for part in body["contents"][1]["parts"]] == [["text"]]  # the text only
