"""What every adapter shares, checked on all of them.

* Their constructors agree: the same options first, in the same order, with
  the same defaults and the same message for the same mistake.
* Their headers merge the same way, and their timeout reaches every request.
* One rule for a broken stream: a transport failure after the step said why
  it stopped ends the step normally with its usage; before, it fails the step.
* One two-step tool conversation through the Anthropic and the Chat
  Completions adapters, provider-neutral: each replays recorded steps (a step
  with tool calls, then a text answer) on the in-memory transport. The
  request of step 2 must be valid for its API, and the run's final history
  must be valid for BOTH APIs, so a conversation started on one provider can
  continue on the other.
"""

from __future__ import annotations

import inspect
import itertools
import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests

from agentcore import (
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Request,
    RunResult,
    Usage,
    run,
    tool,
    user_message,
)
from agentcore.caching import CacheTracker
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic import request as anthropic_request
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.openai.chat import request as chat_request
from agentcore.providers.shell import merge_headers
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport
from agentcore.transport.memory import Reply as Answer
from tests.localserver import LocalServer, Pause, Reply

FIXTURES = Path(__file__).parent / "fixtures"


def body(name: str) -> bytes:
    return (FIXTURES / f"{name}.sse").read_bytes()


def anthropic_problems(payload: dict[str, Any]) -> list[str]:
    """Rules of the Messages API for a request body (docs: messages, tool use)."""
    problems: list[str] = []
    messages = payload["messages"]
    if not messages or messages[0]["role"] != "user":
        problems.append("the first message must be a user turn")
    for before, after in itertools.pairwise(messages):
        if before["role"] == after["role"]:
            problems.append(f"two {before['role']} turns in a row")
    for index, message in enumerate(messages):
        for block in message["content"]:
            if block["type"] == "text" and not block["text"].strip():
                problems.append("an empty text block")
            if block["type"] == "tool_use" and not isinstance(block["input"], dict):
                problems.append("tool_use input is not an object")
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            answer = messages[index + 1] if index + 1 < len(messages) else None
            if answer is None or answer["role"] != "user":
                problems.append("tool_use not followed by a user turn")
                continue
            results = [b["tool_use_id"] for b in answer["content"] if b["type"] == "tool_result"]
            if results != uses:
                problems.append(f"tool_result ids {results} do not answer tool_use ids {uses}")
            kinds = [b["type"] for b in answer["content"]]
            if kinds[: len(results)] != ["tool_result"] * len(results):
                problems.append("tool_result blocks must open the user turn")
    return problems


def openai_problems(payload: dict[str, Any]) -> list[str]:
    """Rules of Chat Completions for a request body: every tool call answered
    by one tool message, right after its assistant message."""
    problems: list[str] = []
    messages = payload["messages"]
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant" and not calls and not message.get("content"):
            problems.append("an assistant message with neither content nor tool calls")
        for call in calls:
            if call["type"] != "function" or not isinstance(call["function"]["arguments"], str):
                problems.append("a tool call that is not a function call with JSON text arguments")
            json.loads(call["function"]["arguments"])
        if calls:
            ids = [c["id"] for c in calls]
            answers = messages[index + 1 : index + 1 + len(ids)]
            if [m.get("role") for m in answers] != ["tool"] * len(ids):
                problems.append("tool calls not followed by one tool message each")
            elif [m["tool_call_id"] for m in answers] != ids:
                problems.append("tool messages do not answer the calls in order")
        if message["role"] == "tool" and not isinstance(message["content"], str):
            problems.append("tool message content is not text")
    return problems


def both_apis_accept(history: tuple[Message, ...]) -> None:
    request = Request(system="Be brief.", messages=history)
    assert anthropic_problems(anthropic_request.request_body(request, "claude-x", max_tokens=1024)) == []
    assert openai_problems(chat_request.request_body(request, "gpt-x")) == []


@tool
def pelican_name_generator() -> str:
    """Suggest a name for a pelican."""
    return "Charles"


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


@tool
def get_product_name() -> str:
    """The product's name."""
    return "Pydantic AI"


def run_replay(model: Any, tools: list[Any]) -> RunResult:
    options = LoopOptions(model=model, messages=[user_message("Go.")], system="Be brief.", tools=tools)
    return run(options).result()


@pytest.fixture
def anthropic_run() -> tuple[RunResult, MemoryTransport]:
    transport = MemoryTransport(
        Answer.of(body("anthropic/parallel_tools_empty_args"), piece=512),
        Answer.of(body("anthropic/text_after_tool_result_emoji"), piece=512),
    )
    model = AnthropicModel("claude-haiku-4-5", api_key="test-key", transport=transport)
    return run_replay(model, [pelican_name_generator]), transport


@pytest.fixture
def openai_run() -> tuple[RunResult, MemoryTransport]:
    transport = MemoryTransport(
        Answer.of(body("openai_chat/parallel_tools_mixed_args_gpt4o"), piece=512),
        Answer.of(body("openai_chat/text_after_tool_result_gpt4o_mini"), piece=512),
    )
    model = OpenAIChatModel("gpt-4o", api_key="test-key", transport=transport)
    return run_replay(model, [get_weather, get_product_name]), transport


def test_anthropic_two_step_conversation(anthropic_run: tuple[RunResult, MemoryTransport]) -> None:
    result, transport = anthropic_run
    assert len(transport.sent) == 2
    second = transport.sent[1].json()
    assert anthropic_problems(second) == []
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert [b["tool_use_id"] for b in second["messages"][2]["content"]] == [
        "toolu_01LtHJmixrs9NcWQkK8hu8hj",
        "toolu_01N8a4jWyf116qKTMqKKmjyt",
    ]
    assert [b["content"] for b in second["messages"][2]["content"]] == ["Charles", "Charles"]
    assert result.finish_reason is FinishReason.STOP
    assert result.text.startswith("Here are two great names for your pet pelican:")
    assert result.usage == Usage(542 + 678, 62 + 82, 0, 0)
    both_apis_accept(result.messages)


def test_openai_two_step_conversation(openai_run: tuple[RunResult, MemoryTransport]) -> None:
    result, transport = openai_run
    assert len(transport.sent) == 2
    second = transport.sent[1].json()
    assert openai_problems(second) == []
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert [m["content"] for m in second["messages"][3:]] == ["sunny in Mexico City", "Pydantic AI"]
    assert [m["tool_call_id"] for m in second["messages"][3:]] == [
        "call_NS4iQj14cDFwc0BnrKqDHavt",
        "call_SkGkkGDvHQEEk0CGbnAh2AQw",
    ]
    assert result.finish_reason is FinishReason.STOP
    expected = json.loads(
        (FIXTURES / "openai_chat/text_after_tool_result_gpt4o_mini.expected.json").read_text()
    )
    assert result.text == expected["text"]
    step1 = json.loads((FIXTURES / "openai_chat/parallel_tools_mixed_args_gpt4o.expected.json").read_text())
    assert result.usage == Usage(**step1["usage"]) + Usage(**expected["usage"])
    both_apis_accept(result.messages)


def test_a_history_with_a_malformed_call_stays_valid_for_both_apis() -> None:
    from agentcore import ToolCall, ToolResult, text_part, tool_call_part, tool_result_part
    from agentcore.types import Role

    history = (
        user_message("Go."),
        Message(
            role=Role.ASSISTANT,
            content=[text_part("Calling."), tool_call_part(ToolCall("c1", "get_weather", '{"city": '))],
        ),
        Message(
            role=Role.TOOL, content=[tool_result_part(ToolResult("c1", "get_weather", "Error: bad", True))]
        ),
        user_message("Try again."),
    )
    both_apis_accept(history)


@pytest.mark.parametrize(
    ("dialect", "recording"),
    [
        ("anthropic", "anthropic/text_after_tool_result_emoji"),
        ("openai", "openai_chat/text_after_tool_result_gpt4o_mini"),
    ],
)
def test_the_end_of_a_run_is_not_held_by_a_server_that_keeps_the_body_open(
    dialect: str, recording: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After message_stop / [DONE] some servers keep the body open for a while.
    # The adapter drains it for connection reuse (here up to 2 s), but only
    # after step-finish and finish have reached the reader.
    monkeypatch.setattr("agentcore.transport.http.DRAIN_SECONDS", 2.0)
    server = LocalServer([Reply(actions=[body(recording), Pause(3.0)])])
    try:
        model: Any = (
            AnthropicModel("claude-x", api_key="k", base_url=server.url)
            if dialect == "anthropic"
            else OpenAIChatModel("gpt-x", api_key="k", base_url=server.url + "/v1")
        )
        reader = run(LoopOptions(model=model, messages=[user_message("Go.")]))
        arrivals = [(part.kind.value, time.monotonic()) for part in reader]
    finally:
        server.close()
    kinds = [kind for kind, _ in arrivals]
    assert kinds[-2:] == ["step-finish", "finish"]
    assert kinds.count("text-delta") >= 1
    first_text = next(at for kind, at in arrivals if kind == "text-delta")
    assert arrivals[-1][1] - first_text < 1.0  # not the 2 s drain


# --- the options every adapter takes -------------------------------------------------
# docs/errors.md: a caller mistake in an adapter's options is a ConfigError
# naming the option, never a plain TypeError or ValueError from deeper down,
# and the same mistake reads the same on every adapter.

AdapterClass = type[AnthropicModel | OpenAIChatModel | OpenAIResponsesModel]
ADAPTERS: list[AdapterClass] = [AnthropicModel, OpenAIChatModel, OpenAIResponsesModel]
EVERY_ADAPTER = pytest.mark.parametrize("adapter", ADAPTERS, ids=[a.__name__ for a in ADAPTERS])
SHARED_OPTIONS = [
    "model",
    "api_key",
    "base_url",
    "transport",
    "timeout",
    "headers",
    "settings",
    "extra_body",
    "cache_tracker",
    "context_window",
]


@EVERY_ADAPTER
def test_the_shared_options_come_first_in_one_order_with_one_default(adapter: AdapterClass) -> None:
    parameters = inspect.signature(adapter.__init__).parameters
    assert list(parameters)[1 : 1 + len(SHARED_OPTIONS)] == SHARED_OPTIONS
    assert parameters["model"].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name in SHARED_OPTIONS[1:]:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        if name != "base_url":
            assert parameters[name].default is None, name


@EVERY_ADAPTER
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": ""}, r"^model must be a non-empty str \(the model id\), got ''$"),
        ({"model": 5}, r"^model must be a non-empty str \(the model id\), got 5$"),
        ({"api_key": 5}, r"^api_key must be a str or None, got int$"),
        ({"api_key": "sk-a\n"}, r"^api_key holds a line break or NUL character"),
        (
            {"base_url": "ftp://x"},
            r"^base_url must be an http:// or https:// URL with a host, got 'ftp://x'$",
        ),
        (
            {"timeout": (10, 600)},
            r"^timeout must be an agentcore\.transport\.Timeout or None, got tuple \(the \(connect, read\) "
            r"pair and idle_timeout are now Timeout\(connect=, read=, idle=\)\)$",
        ),
        ({"timeout": 30}, r"^timeout must be an agentcore\.transport\.Timeout or None, got int "),
        (
            {"transport": requests.Session()},
            r"^transport must be a Transport, got a requests\.Session: "
            r"pass transport=HTTPTransport\(session\)",
        ),
        (
            {"transport": object()},
            r"^transport must be a Transport \(HTTPTransport, MemoryTransport\) or None, got object$",
        ),
        ({"settings": {"temperature": 1}}, r"^settings must be a ModelSettings or None, got dict$"),
        ({"extra_body": ["seed"]}, r"^extra_body must be a mapping of str keys to JSON values, got list$"),
        ({"cache_tracker": {}}, r"^cache_tracker must be a CacheTracker or None, got dict$"),
    ],
    ids=[
        "empty-model",
        "int-model",
        "int-key",
        "key-with-newline",
        "ftp-base-url",
        "timeout-pair",
        "timeout-number",
        "session-as-transport",
        "object-as-transport",
        "dict-settings",
        "list-extra-body",
        "dict-cache-tracker",
    ],
)
def test_the_same_mistake_is_the_same_config_error(
    adapter: AdapterClass, options: dict[str, Any], message: str
) -> None:
    options = {"model": "m", **options}
    with pytest.raises(ConfigError, match=message):
        adapter(**options)


@EVERY_ADAPTER
@pytest.mark.parametrize(
    "headers",
    [
        [("x-gateway", "1")],
        [],
        "x-gateway: 1",
        "",
        b"x-gateway: 1",
        5,
        {"x-gateway": 1},
        {"x-gateway": None},
        {"x-gateway": b"1"},
        {1: "x"},
        {b"x-gateway": "1"},
    ],
    ids=repr,
)
def test_headers_that_are_not_a_str_to_str_mapping_are_a_config_error(
    adapter: AdapterClass, headers: Any
) -> None:
    with pytest.raises(ConfigError, match=r"^headers must be a mapping of str header names to str values"):
        adapter("m", headers=headers)


@EVERY_ADAPTER
@pytest.mark.parametrize(
    "headers",
    [
        [("Authorization", "Bearer sk-do-not-show-this-secret")],
        {"x-api-key": b"sk-do-not-show-this-secret"},
        {"x-api-key": ["sk-do-not-show-this-secret"]},
        {"x-api-key": "sk-do-not-show-this-secret\n"},
    ],
    ids=["pairs", "bytes-value", "list-value", "newline"],
)
def test_a_bad_header_is_named_but_its_value_never_shown(adapter: AdapterClass, headers: Any) -> None:
    with pytest.raises(ConfigError) as info:
        adapter("m", headers=headers)
    assert "do-not-show" not in str(info.value)
    assert "do-not-show" not in repr(info.value)
    if isinstance(headers, dict):
        assert "'x-api-key'" in str(info.value)


HI = Request(messages=[user_message("Hi")])
STEPS = {
    "AnthropicModel": (
        b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":7}}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"ok"}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":2}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ),
    "OpenAIChatModel": (
        b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\n',
        b"data: [DONE]\n\n",
    ),
    "OpenAIResponsesModel": (
        b'data: {"type":"response.output_text.delta","output_index":0,"delta":"ok"}\n\n',
        b'data: {"type":"response.completed","response":{"status":"completed","output":[],'
        b'"usage":{"input_tokens":7,"output_tokens":2}}}\n\n',
        b"data: [DONE]\n\n",
    ),
}
"""Each API's step in three reads: text, the reason it stopped (with the
usage), the end marker."""
RESET = ModelError(ErrorClass.TRANSIENT, message="connection reset")


@EVERY_ADAPTER
def test_headers_merge_defaults_then_the_adapters_then_the_requests(adapter: AdapterClass) -> None:
    transport = MemoryTransport(Answer(chunks=STEPS[adapter.__name__]))
    adapter_headers = {"X-Gateway": "adapter", "ACCEPT": "application/x-ndjson", "X-Title": "app"}
    model = adapter("m", api_key="sk-key-0123456789", headers=adapter_headers, transport=transport)
    list(model.stream(Request(messages=[user_message("Hi")], headers={"x-gateway": "run"}), Context()))
    sent = transport.sent[0].headers
    lower = {name.lower(): value for name, value in sent.items()}
    assert len(lower) == len(sent)  # no header twice, whatever its case
    assert lower["accept"] == "application/x-ndjson"  # the adapter's over the default
    assert lower["x-gateway"] == "run"  # the request's over the adapter's
    assert lower["x-title"] == "app"
    assert lower["content-type"] == "application/json"
    assert "sk-key-0123456789" in lower.get("x-api-key", lower.get("authorization", ""))


@EVERY_ADAPTER
@pytest.mark.parametrize("api_key", [None, ""], ids=["none", "empty"])
def test_no_key_sends_no_key_header(adapter: AdapterClass, api_key: str | None) -> None:
    transport = MemoryTransport(Answer(chunks=STEPS[adapter.__name__]))
    list(adapter("m", api_key=api_key, transport=transport).stream(HI, Context()))
    assert {name.lower() for name in transport.sent[0].headers} & {"x-api-key", "authorization"} == set()


def test_merge_headers_keeps_the_later_value_under_its_own_spelling() -> None:
    assert merge_headers({"Accept": "a", "X-One": "1"}, {"accept": "b"}, {"ACCEPT": "c", "x-two": "2"}) == {
        "X-One": "1",
        "ACCEPT": "c",
        "x-two": "2",
    }


@EVERY_ADAPTER
def test_the_timeout_and_the_transport_reach_every_request(adapter: AdapterClass) -> None:
    transport = MemoryTransport(
        Answer(chunks=STEPS[adapter.__name__]), Answer(chunks=STEPS[adapter.__name__])
    )
    timeout = Timeout(connect=2.0, read=30.0, idle=45.0)
    model = adapter("m", transport=transport, timeout=timeout)
    for _ in range(2):
        parts = list(model.stream(HI, Context()))
        assert parts[-1].finish_reason is FinishReason.STOP
    assert [(sent.method, sent.timeout, sent.reused) for sent in transport.sent] == [
        ("POST", timeout, True)
    ] * 2


@EVERY_ADAPTER
def test_a_transport_break_after_the_stop_reason_ends_the_step_normally(adapter: AdapterClass) -> None:
    text, stopped, _ = STEPS[adapter.__name__]
    transport = MemoryTransport(Answer(chunks=[text, stopped, RESET]))
    parts = list(adapter("m", transport=transport).stream(HI, Context()))
    assert parts[0] == parts[0].text_delta("ok")
    assert parts[-1].finish_reason is FinishReason.STOP
    assert parts[-1].usage == Usage(input=7, output=2)
    # A broken connection is not pooled; the Responses API's step ends with its
    # terminal event, after which nothing is read: the break is never seen.
    assert transport.sent[0].reused is (adapter is OpenAIResponsesModel)


@EVERY_ADAPTER
def test_a_transport_break_before_the_stop_reason_fails_the_step(adapter: AdapterClass) -> None:
    text, _, _ = STEPS[adapter.__name__]
    transport = MemoryTransport(Answer(chunks=[text, RESET]))
    parts: list[Any] = []
    stream = adapter("m", transport=transport).stream(HI, Context())
    with pytest.raises(ModelError) as info:
        parts.extend(stream)
    assert info.value is RESET
    assert [part.text for part in parts] == ["ok"]
    assert transport.sent[0].reused is False


@EVERY_ADAPTER
def test_a_body_that_ends_before_the_stop_reason_fails_the_step(adapter: AdapterClass) -> None:
    text, _, _ = STEPS[adapter.__name__]
    transport = MemoryTransport(Answer(chunks=[text]))
    with pytest.raises(ModelError) as info:
        list(adapter("m", transport=transport).stream(HI, Context()))
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "ended before" in info.value.message


@EVERY_ADAPTER
def test_a_cache_tracker_is_shared_between_instances(adapter: AdapterClass) -> None:
    tracker = CacheTracker()
    transport = MemoryTransport(
        Answer(chunks=STEPS[adapter.__name__]), Answer(chunks=STEPS[adapter.__name__])
    )
    first = list(adapter("m", transport=transport, cache_tracker=tracker).stream(HI, Context()))
    second = list(adapter("m", transport=transport, cache_tracker=tracker).stream(HI, Context()))
    assert first[-1].cache is not None
    assert first[-1].cache.previous_messages is None
    assert second[-1].cache is not None
    assert second[-1].cache.previous_messages == 1


@EVERY_ADAPTER
def test_repr_shows_the_model_and_the_base_url_and_never_the_key(adapter: AdapterClass) -> None:
    model = adapter("m", api_key="sk-never-shown-0123456789", base_url="https://gateway.example/api/")
    assert repr(model) == f"{adapter.__name__}(model='m', base_url='https://gateway.example/api')"
    assert (model.model_id, model.base_url) == ("m", "https://gateway.example/api")
