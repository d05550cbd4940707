"""Vertex AI streams recorded from the real service by other projects
(``tests/fixtures/vertex/``, README there) give, through ``VertexGeminiModel``,
the text, tool calls, reasoning, finish reason and usage their sources assert
(pydantic-ai's, OpenTelemetry's and the Vercel AI SDK's tests on the same
recordings), the streamed function-call arguments (``partialArgs``) among
them."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from agentcore import (
    Context,
    FinishReason,
    ModelSettings,
    Request,
    StreamPart,
    StreamPartKind,
    ToolDefinition,
    Usage,
    file_part,
    user_message,
)
from agentcore.errors import ConfigError, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.gemini.stream import StreamState, json_path
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.vertex import VertexGeminiModel
from agentcore.testing import check_model
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import Event

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "vertex"


def body(name: str) -> bytes:
    """The SSE body of a case: ``.sse`` as recorded; each line of a
    ``.chunks.jsonl`` or a ``.response.json`` as one ``data:`` event."""
    path = FIXTURES / name
    if name.endswith(".sse"):
        return path.read_bytes()
    lines = path.read_text().splitlines() if name.endswith(".jsonl") else [path.read_text()]
    return b"".join(b"data: " + json.dumps(json.loads(line)).encode() + b"\r\n\r\n" for line in lines if line)


def parts_of(name: str, *, stream_tool_input: bool = False) -> list[StreamPart]:
    reply = Reply.of(body(name), piece=37, headers={"content-type": "text/event-stream"})
    model = VertexGeminiModel(
        "gemini-test",
        project="test-project",
        credentials=lambda: "ya29.test",
        transport=MemoryTransport(reply),
    )
    request = Request(messages=[user_message("hi")], stream_tool_input=stream_tool_input)
    return list(model.stream(request, Context()))


def text(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


RECIPE = {
    "recipe": {
        "ingredients": [
            {"amount": "16 oz", "name": "Lasagna noodles"},
            {"amount": "1 lb", "name": "Ground beef"},
            {"amount": "15 oz", "name": "Ricotta cheese"},
            {"amount": "3 cups", "name": "Mozzarella cheese"},
            {"amount": "1/2 cup", "name": "Parmesan cheese"},
            {"amount": "24 oz", "name": "Tomato sauce"},
            {"amount": "1", "name": "Egg"},
            {"amount": "2 cloves", "name": "Garlic"},
            {"amount": "1 tsp", "name": "Salt"},
            {"amount": "1/2 tsp", "name": "Pepper"},
        ],
        "name": "Lasagna",
        "steps": [
            "Preheat oven to 375°F (190°C).",
            "Cook lasagna noodles according to package directions, drain and set aside.",
            "Brown ground beef with minced garlic in a skillet. Drain fat and stir in tomato sauce. "
            "Simmer for 10 minutes.",
            "In a bowl, mix ricotta cheese, egg, salt, pepper, and Parmesan cheese.",
            "In a 9x13 baking dish, spread a thin layer of meat sauce.",
            "Layer noodles, ricotta mixture, mozzarella, and meat sauce. Repeat.",
            "Top with remaining mozzarella cheese.",
            "Cover with foil and bake for 25 minutes.",
            "Remove foil and bake for another 25 minutes until golden.",
            "Let stand for 15 minutes before serving.",
        ],
    }
}
ITEMS = {
    "operations": [
        {"action": "add", "description": "Fresh red apple", "itemid": "apple_001", "price": 0.5},
        {"action": "add", "description": "Ripe yellow banana", "itemid": "banana_001", "price": 0.3},
    ]
}

# (case, text start, text length, tool calls (name, arguments), finish, usage): the values the
# sources' tests assert (the Vercel snapshots' tool-call inputs and finish, pydantic-ai's usage)
# and, where they assert none, the recorded counts (output = candidates + thoughts)
CASES: list[tuple[str, str, int, list[tuple[str, Any]], FinishReason, Usage]] = [
    (
        "vercel_stream_function_call_arguments_parallel.chunks.jsonl",
        "",
        0,
        [("getWeather", {"location": "Boston"}), ("getWeather", {"location": "San Francisco"})],
        FinishReason.TOOL_CALLS,
        Usage(26, 23 + 132),
    ),
    (
        "vercel_stream_args_array_missing_terminal.chunks.jsonl",
        "",
        0,
        [("writeItems", ITEMS)],
        FinishReason.TOOL_CALLS,
        Usage(54, 74 + 121),
    ),
    (
        "vercel_stream_args_nested.chunks.jsonl",
        "",
        0,
        [("cookRecipe", RECIPE)],
        FinishReason.TOOL_CALLS,
        Usage(31, 684 + 1026),
    ),
    (
        "vercel_stream_no_args_then_streamed_args.chunks.jsonl",
        "",
        0,
        [
            ("read_theme", {}),
            ("read_screen", {"id": "A"}),
            ("read_screen", {"id": "B"}),
            ("read_screen", {"id": "C"}),
        ],
        FinishReason.TOOL_CALLS,
        Usage(249, 58 + 183),
    ),
    ("gemini3flash_global_flex_tier.sse", "OK", 2, [], FinishReason.STOP, Usage(5, 101)),
    (
        "otel_gemini25flash_text_hidden_thoughts.sse",
        "When systems hum, a silent, complex art,\n",
        1564,
        [],
        FinishReason.STOP,
        Usage(8, 388 + 2193),
    ),
    (
        "gemini25flash_model_armor_block.response.json",
        "",
        0,
        [],
        FinishReason.CONTENT_FILTER,
        Usage(19, 6 + 27),
    ),
]


@pytest.mark.parametrize(
    ("name", "start", "length", "calls", "finish", "usage"), CASES, ids=[c[0] for c in CASES]
)
def test_recorded_streams_give_what_their_sources_assert(
    name: str, start: str, length: int, calls: list[tuple[str, Any]], finish: FinishReason, usage: Usage
) -> None:
    parts = parts_of(name)
    assert text(parts).startswith(start)
    assert len(text(parts)) == length
    got = [p.tool_call for p in parts if p.tool_call is not None]
    assert [(c.name, json.loads(c.input)) for c in got] == calls
    assert len({c.id for c in got}) == len(got)
    assert (parts[-1].finish_reason, parts[-1].usage) == (finish, usage)
    assert not [p for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA]  # not asked for


def test_the_only_signature_rides_on_the_no_args_call_and_the_thought_is_reasoning() -> None:
    parts = parts_of("vercel_stream_no_args_then_streamed_args.chunks.jsonl")
    calls = [p.tool_call for p in parts if p.tool_call is not None]
    assert len(json.loads(calls[0].provider_data)["thoughtSignature"]) > 100
    assert [c.provider_data for c in calls[1:]] == ["", "", ""]
    blocks = [p.reasoning for p in parts if p.reasoning is not None]
    assert [len(b.text) for b in blocks] == [320]
    assert blocks[0].text.startswith("**Processing User Requests**")


def test_the_signature_on_a_streamed_calls_first_part_is_kept_on_the_call() -> None:
    parts = parts_of("vercel_stream_function_call_arguments_parallel.chunks.jsonl")
    calls = [p.tool_call for p in parts if p.tool_call is not None]
    assert json.loads(calls[0].provider_data)["thoughtSignature"].startswith("CiMBjz1rX25KieIB4d4AwFn8")
    assert calls[1].provider_data == ""  # only the first of parallel calls carries one


@pytest.mark.parametrize("name", [c[0] for c in CASES if c[3]])
def test_streamed_arguments_stream_as_deltas_joining_to_each_calls_input(name: str) -> None:
    parts = parts_of(name, stream_tool_input=True)
    fragments: dict[str, list[str]] = {}
    done: set[str] = set()
    for part in parts:
        call = part.tool_call
        if part.kind is StreamPartKind.TOOL_CALL_DELTA and call is not None:
            assert call.id not in done  # every delta comes before its call
            fragments.setdefault(call.id, []).append(call.input)
        elif part.kind is StreamPartKind.TOOL_CALL and call is not None:
            done.add(call.id)
    calls = [p.tool_call for p in parts if p.kind is StreamPartKind.TOOL_CALL and p.tool_call is not None]
    for call in calls:
        assert "".join(fragments.get(call.id, [])) == call.input
    streamed = [c for c in calls if c.input != "{}"]
    assert all(len(fragments[c.id]) > 1 for c in streamed)  # live, piece by piece, not in one go


def test_the_nested_call_streams_its_text_as_the_pieces_come() -> None:
    parts = parts_of("vercel_stream_args_nested.chunks.jsonl", stream_tool_input=True)
    deltas = [p.tool_call.input for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call]
    assert deltas[0] == '{"recipe": {"ingredients": [{"amount": "16 oz'
    assert "".join(deltas).endswith('"Let stand for 15 minutes before serving."]}}')


def test_the_adapter_passes_the_model_conformance_check_with_streamed_arguments() -> None:
    recorded = body("vercel_stream_function_call_arguments_parallel.chunks.jsonl")
    transport = MemoryTransport(
        respond=lambda _sent: Reply.of(recorded, piece=11, headers={"content-type": "text/event-stream"})
    )
    model = VertexGeminiModel(
        "gemini-test", project="test-project", credentials=lambda: "t", transport=transport
    )
    check_model(model, Request(messages=[user_message("Weather?")], stream_tool_input=True))


def feed(state: StreamState, *parts: dict[str, Any], finish: str = "") -> list[StreamPart]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return state.feed(Event("message", {"candidates": [candidate]}))


def test_pieces_out_of_document_order_stop_the_live_deltas_and_the_call_is_still_whole() -> None:
    state = StreamState("https://x", lambda: "c1", stream_tool_input=True)
    out = feed(state, {"functionCall": {"name": "f", "willContinue": True}})
    out += feed(
        state,
        {"functionCall": {"partialArgs": [{"jsonPath": "$.b", "boolValue": True}], "willContinue": True}},
    )
    out += feed(
        state,
        {"functionCall": {"partialArgs": [{"jsonPath": "$.a[0]", "nullValue": None}], "willContinue": True}},
    )
    out += feed(
        state, {"functionCall": {"partialArgs": [{"jsonPath": "$.b", "numberValue": 2}]}}, finish="STOP"
    )
    out += state.finish()
    deltas = [p.tool_call.input for p in out if p.kind is StreamPartKind.TOOL_CALL_DELTA and p.tool_call]
    calls = [p.tool_call for p in out if p.kind is StreamPartKind.TOOL_CALL and p.tool_call]
    assert [json.loads(c.input) for c in calls] == [{"b": 2, "a": [None]}]
    assert deltas == ['{"b": true', ', "a": [null']  # then $.b went back: no more live deltas
    assert out[-1].finish_reason is FinishReason.TOOL_CALLS


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("$.recipe.steps[1]", ["recipe", "steps", 1]),
        ("$['a b'][0].c", ["a b", 0, "c"]),
        ('$["q\\"x"]', ['q"x']),
        ("$", []),
    ],
)
def test_json_paths_are_read_as_rfc_9535_names_and_indexes(path: str, steps: list[Any]) -> None:
    assert json_path(path) == steps


@pytest.mark.parametrize("path", ["a.b", "$.a..b", "$[x]", "$['\\x']", "$['a\"b']"])
def test_a_json_path_that_is_not_one_is_upstream(path: str) -> None:
    with pytest.raises(ModelError, match="jsonPath"):
        json_path(path)


def test_a_piece_before_any_call_is_upstream() -> None:
    state = StreamState("https://x")
    with pytest.raises(ModelError, match="name before its partialArgs"):
        feed(state, {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "stringValue": "x"}]}})


def test_the_vertex_package_imports_google_auth_only_when_credentials_are_bridged() -> None:
    code = (
        "import sys\n"
        "import agentcore.providers.vertex\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'google'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


GS_URI = "gs://agentcore-test/report.pdf"


def test_a_cloud_storage_uri_goes_to_vertex_as_file_data() -> None:
    recorded = body("gemini3flash_global_flex_tier.sse")
    transport = MemoryTransport(Reply.of(recorded, headers={"content-type": "text/event-stream"}))
    model = VertexGeminiModel(
        "gemini-test", project="test-project", credentials=lambda: "t", transport=transport
    )
    list(
        model.stream(
            Request(
                messages=[user_message("Summarize", file_part(url=GS_URI, media_type="application/pdf"))]
            ),
            Context(),
        )
    )
    parts = transport.sent[0].json()["contents"][0]["parts"]
    assert parts[1] == {
        "fileData": {"mimeType": "application/pdf", "fileUri": "gs://agentcore-test/report.pdf"}
    }


@pytest.mark.parametrize(
    "model",
    [
        GeminiModel("gemini-test", api_key="AIza-test", transport=MemoryTransport()),
        AnthropicModel("claude-test", api_key="sk-ant-test", transport=MemoryTransport()),
        OpenAIChatModel("gpt-test", api_key="sk-test", transport=MemoryTransport()),
        OpenAIResponsesModel("gpt-test", api_key="sk-test", transport=MemoryTransport()),
    ],
    ids=lambda m: type(m).__name__,
)
def test_every_other_adapter_refuses_a_cloud_storage_uri_before_any_request(model: Any) -> None:
    request = Request(messages=[user_message("Summarize", file_part(url=GS_URI, media_type="image/png"))])
    with pytest.raises(ConfigError, match=r"messages\[0\] holds a file given by a Cloud Storage URI"):
        list(model.stream(request, Context()))
    assert model._transport.sent == []


@pytest.mark.parametrize(
    ("stream_arguments", "settings", "expected"),
    [
        (False, None, None),
        (True, None, {"functionCallingConfig": {"streamFunctionCallArguments": True}}),
        (
            True,
            ModelSettings(tool_choice="required"),
            {"functionCallingConfig": {"mode": "ANY", "streamFunctionCallArguments": True}},
        ),
    ],
    ids=["off", "on", "with a tool choice"],
)
def test_stream_arguments_asks_vertex_to_stream_function_call_arguments(
    stream_arguments: bool, settings: ModelSettings | None, expected: dict[str, Any] | None
) -> None:
    recorded = body("vercel_stream_function_call_arguments_parallel.chunks.jsonl")
    transport = MemoryTransport(Reply.of(recorded, headers={"content-type": "text/event-stream"}))
    model = VertexGeminiModel(
        "gemini-test",
        project="test-project",
        credentials=lambda: "t",
        transport=transport,
        settings=settings,
        stream_arguments=stream_arguments,
    )
    weather = ToolDefinition("getWeather", "The weather.", '{"type": "object", "properties": {}}')
    parts = list(model.stream(Request(messages=[user_message("Weather?")], tools=[weather]), Context()))
    assert transport.sent[0].json().get("toolConfig") == expected
    assert [json.loads(p.tool_call.input) for p in parts if p.tool_call] == [
        {"location": "Boston"},
        {"location": "San Francisco"},
    ]


def test_a_piece_that_skips_array_items_is_upstream() -> None:
    state = StreamState("https://x")
    feed(state, {"functionCall": {"name": "f", "willContinue": True}})
    with pytest.raises(ModelError, match="matches the arguments so far"):
        feed(state, {"functionCall": {"partialArgs": [{"jsonPath": "$.a[99999999999]", "nullValue": None}]}})
