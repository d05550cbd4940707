"""OpenAI Responses' own compaction through ``OpenAIResponsesModel``
(https://developers.openai.com/api/docs/guides/compaction).

* The settings: ``compaction_trigger`` as ``context_management: [{"type": "compaction",
  "compact_threshold": N}]``; ``clear_tool_uses`` and ``clear_thinking`` have no field.
* The recorded streams of ``tests/fixtures/compaction/openai_responses`` (``SOURCES.md``
  there): the compaction item, which completes after the message, becomes one provider item
  holding the done item byte for byte (not the added one, whose content differs).
* The recorded request sent after a compaction (``after_compaction.i3``): the input built
  from the history, kept through ``Message.to_dict`` / ``from_dict``, holds the compaction
  item in its place. The recording project sent its messages as ``{"role", "content"}``
  (the API's easy input message, whose ``"type": "message"`` is optional), and its cassette
  serializer stored U+2019 (a right single quote) as ``'`` and U+2014 (an em dash) as ``--``
  (its ``request_format``); agentcore
  sends the type and the characters as they came, so the comparison leaves that one key out
  of message items and makes those two replacements in message text, and nothing else: the
  compaction item is compared as it is.
* A fake API on the in-memory transport that compacts as the guide documents (it reads the
  input from the latest compaction item on) and answers the API's context-length error: a
  run over the window finishes because the item goes back, and fails without it.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    ErrorClass,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    ProviderItem,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    provider_item_part,
    run,
    text_part,
    tool_call_part,
    user_message,
)
from agentcore.context import Context
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.providers.openai.responses.request import request_body
from agentcore.providers.openai.responses.stream import StreamState
from agentcore.transport import sse as sse_framing
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from tests import compaction_helpers as helpers
from tests.canned import json_answer
from tests.compaction_helpers import (
    REPORT,
    WINDOW,
    answer_text,
    compact,
    items,
    read_report,
    refused_elsewhere,
)
from tests.test_responses_loop import sse

KEY = "sk-proj-compaction-test-0000"
ORIGIN = "api.openai.com"


def fixture(name: str) -> bytes:
    return helpers.fixture("openai_responses", name)


def fixture_json(name: str) -> Any:
    return helpers.fixture_json("openai_responses", name)


def model(transport: MemoryTransport, name: str = "gpt-4.1", **settings: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        name, api_key=KEY, transport=transport, reasoning=False, settings=ModelSettings(**settings)
    )


def recorded_compaction_items(lines: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The compaction items of ``output_item.added`` and ``.done`` events, read
    from the recorded lines with the standard JSON reader (not by the adapter)."""
    found: dict[str, list[dict[str, Any]]] = {"added": [], "done": []}
    for line in lines:
        text = line[5:] if line.startswith("data:") else line
        if '"compaction"' not in text:
            continue
        event = json.loads(text)
        kind = event.get("type")
        if kind in ("response.output_item.added", "response.output_item.done") and (
            event["item"]["type"] == "compaction"
        ):
            found[kind.rsplit(".", 1)[1]].append(event["item"])
    return found


def as_recorded(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Input items as the recording project's cassette holds them (module
    docstring): a message item without its optional ``"type": "message"`` and
    with the two characters its serializer replaced; every other item as it is."""
    out = []
    for entry in entries:
        if entry.get("type") == "message":
            text = entry["content"].replace("\u2019", "'").replace("\u2014", "--")
            entry = {**{key: value for key, value in entry.items() if key != "type"}, "content": text}
        out.append(entry)
    return out


# --- the settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, None),
        ({"compaction_trigger": 1000}, [{"type": "compaction", "compact_threshold": 1000}]),
        ({"compaction_trigger": 200_000}, [{"type": "compaction", "compact_threshold": 200_000}]),
    ],
)
def test_compaction_trigger_becomes_context_management(settings: dict[str, Any], expected: Any) -> None:
    body = request_body(
        Request(messages=[user_message("hi")]), "gpt-4.1", settings=ModelSettings(**settings), reasoning=False
    )
    assert body.get("context_management") == expected


@pytest.mark.parametrize("field", ["clear_tool_uses", "clear_thinking"])
@pytest.mark.parametrize("value", [True, False])
def test_context_editing_has_no_field_in_the_api(field: str, value: bool) -> None:
    message = f"ModelSettings.{field} is not supported by the OpenAI Responses API"
    flags: dict[str, Any] = {field: value}
    settings = ModelSettings(**flags)
    with pytest.raises(ConfigError, match=message):
        OpenAIResponsesModel("gpt-5", api_key=KEY, settings=settings)
    transport = MemoryTransport()
    request = Request(messages=[user_message("hi")], settings=settings)
    with pytest.raises(ConfigError, match=message):
        list(OpenAIResponsesModel("gpt-5", api_key=KEY, transport=transport).stream(request, Context()))
    assert transport.sent == []


# --- the recorded streams ----------------------------------------------------------------------


@pytest.mark.parametrize("piece", [0, 997])
def test_recorded_compaction_after_the_message(piece: int) -> None:
    """pydantic-ai's third turn (``context_management_compaction.i2``): the
    message, then the compaction item; the done item is kept, byte for byte."""
    body = fixture("context_management_compaction.i2.sse")
    meta = fixture_json("context_management_compaction.i2.json")["computed_here"]["values"]
    recorded = recorded_compaction_items(body.decode("utf-8").splitlines())
    [done], [added] = recorded["done"], recorded["added"]
    assert done["encrypted_content"] != added["encrypted_content"]
    transport = MemoryTransport(Reply.of(body, piece=piece))
    request = Request(messages=[user_message("A story?")])
    parts = list(model(transport, compaction_trigger=1000).stream(request, Context()))
    [item] = items(parts)
    assert (item.type, item.format, item.origin, item.text) == ("compaction", "openai-responses", ORIGIN, "")
    assert item.data == compact(done)
    assert json.loads(item.data)["id"] == meta["output_items"][1]["id"]
    assert [part.kind for part in parts][-2:] == [StreamPartKind.PROVIDER_ITEM, StreamPartKind.STEP_FINISH]
    assert answer_text(parts) == meta["text"]
    assert parts[-1].usage == Usage(input=872, output=1254)
    assert transport.sent[0].json()["context_management"] == [
        {"type": "compaction", "compact_threshold": 1000}
    ]


def test_recorded_compaction_item_of_vercel() -> None:
    """Vercel's gpt-5.2 recording (``vercel_compaction_item``): its 42 KB item,
    after the message; cached tokens 49,792 of 51,097."""
    lines = fixture("vercel_compaction_item.chunks.jsonl").decode("utf-8").splitlines()
    [done] = recorded_compaction_items(lines)["done"]
    state = StreamState(ORIGIN)
    parts: list[StreamPart] = []
    for line in lines:
        event = json.loads(line)
        parts += state.feed(sse_framing.Event(event["type"], event))
        if state.done:
            break
    parts += state.finish()
    [item] = items(parts)
    assert item.data == compact(done)
    assert len(json.loads(item.data)["encrypted_content"]) == 42_360
    assert answer_text(parts).startswith("### Testing strategies: unit vs integration vs E2E")
    assert parts[-1].usage.input == 51_097
    assert parts[-1].usage.cache_read == 49_792


def test_an_item_that_never_completed_is_left_out() -> None:
    """Only the done item goes back: the added one's content is not the final one."""
    added = {"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA-early"}
    events: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "output": []}},
    ]
    state = StreamState(ORIGIN)
    parts = [part for event in events for part in state.feed(sse_framing.Event(event["type"], event))]
    assert items(parts + state.finish()) == []
    final = {**added, "encrypted_content": "gAAAA-final"}
    events[1]["response"]["output"] = [final]
    state = StreamState(ORIGIN)
    parts = [part for event in events for part in state.feed(sse_framing.Event(event["type"], event))]
    assert [item.data for item in items(parts)] == [compact(final)]


# --- the recorded request after a compaction ---------------------------------------------------


def recorded_history(name: str) -> list[Message]:
    """The messages of a recorded request's input: user and assistant text."""
    history = []
    for entry in fixture_json(name)["input"]:
        role = Role.USER if entry["role"] == "user" else Role.ASSISTANT
        history.append(Message(role, [text_part(entry["content"])]))
    return history


def test_recorded_round_trip_through_the_loop_and_json() -> None:
    """``context_management_compaction.i2`` answered with a compaction item; the
    next request (``after_compaction.i3``) sends it back after the message it
    followed, then the new question, and the whole earlier history before it."""
    transport = MemoryTransport(
        Reply.of(fixture("context_management_compaction.i2.sse")),
        Reply.of(fixture("after_compaction.i3.sse")),
    )
    responses = model(transport, compaction_trigger=1000)
    first = run(
        LoopOptions(
            model=responses, messages=recorded_history("context_management_compaction.i2.request.json")
        )
    ).result()
    sent = transport.sent[0].json()
    assert (
        as_recorded(sent["input"]) == fixture_json("context_management_compaction.i2.request.json")["input"]
    )
    saved = json.dumps([m.to_dict() for m in first.messages])
    history = [Message.from_dict(m) for m in json.loads(saved)]
    assert [part.kind.value for part in history[-1].content] == ["text", "provider-item"]
    second = run(LoopOptions(model=responses, messages=[*history, user_message("What is 2+2?")])).result()
    recorded = fixture_json("after_compaction.i3.request.json")
    sent = transport.sent[1].json()
    assert as_recorded(sent["input"]) == recorded["input"]
    assert sent["context_management"] == recorded["context_management"]
    assert (sent["model"], sent["stream"]) == (recorded["model"], recorded["stream"])
    assert second.text == "2 + 2 = 4."
    assert second.steps[0].usage.input == 589  # the server read from the compaction item on


@pytest.mark.parametrize(
    ("fmt", "origin"), [("openai-responses", "llm-gateway.example"), ("anthropic", ORIGIN)]
)
def test_an_item_of_another_origin_or_format_is_left_out(
    fmt: str, origin: str, caplog: pytest.LogCaptureFixture
) -> None:
    item = ProviderItem(
        "compaction", '{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA"}', fmt, origin
    )
    history = [
        user_message("Tell me a story."),
        Message(Role.ASSISTANT, [text_part("Once upon a time."), provider_item_part(item)]),
        user_message("Another."),
    ]
    with caplog.at_level(logging.INFO, logger="agentcore.providers"):
        body = request_body(Request(messages=history), "gpt-4.1", origin=ORIGIN, reasoning=False)
    assert [entry["type"] for entry in body["input"]] == ["message", "message", "message"]
    left_out = f"messages[1]: compaction from {fmt} at {origin}"
    assert caplog.messages == [f"agentcore: another service's provider items left out: {left_out}"]


# --- a fake API that compacts as documented ----------------------------------------------------

ITEM_TOKENS = 50
"""What a compaction item counts for, in tokens."""


def tokens_of(entry: dict[str, Any]) -> int:
    """The fake API's count of one input item: one token per 4 characters
    (rounded up) of a message's text, a call's arguments and a call's output;
    :data:`ITEM_TOKENS` for a compaction item."""
    if entry.get("type") == "compaction":
        return ITEM_TOKENS
    text = entry.get("content") or entry.get("arguments") or entry.get("output") or ""
    return math.ceil(len(text if isinstance(text, str) else json.dumps(text)) / 4)


class CompactingResponses:
    """Answers Responses API requests on the in-memory transport as the compaction
    guide documents the server: the input is read from the latest compaction item on
    (what comes before it is pruned); a compaction item must be one it issued ("The
    encrypted content for item cmp_... could not be verified.", the wording the API
    uses for encrypted reasoning items); input over :data:`WINDOW` tokens is refused
    with the API's context-length error; input over ``compact_threshold`` gets a
    compaction item after the rest of the output (its ``output_item.added`` content
    differs from its ``.done`` content, as recorded)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.issued: dict[str, str] = {}
        self.refusals: list[str] = []

    def __call__(self, sent: SentRequest) -> Reply:
        with self.lock:
            return self.answer(sent.json())

    def answer(self, body: dict[str, Any]) -> Reply:
        entries = body["input"]
        start = max((i for i, e in enumerate(entries) if e.get("type") == "compaction"), default=0)
        for entry in entries:
            if (
                entry.get("type") == "compaction"
                and self.issued.get(entry["id"]) != entry["encrypted_content"]
            ):
                return self.refuse(
                    400, f"The encrypted content for item {entry['id']} could not be verified.", None
                )
        prompt = sum(tokens_of(entry) for entry in entries[start:])
        if prompt > WINDOW:
            message = (
                f"Your input exceeds the context window of this model ({prompt} tokens > {WINDOW}). "
                "Please adjust your input and try again."
            )
            return self.refuse(400, message, "context_length_exceeded")
        called = any(entry.get("type") == "function_call_output" for entry in entries)
        text = "The numbers are 1, 2 and 3." if called else "Let me read the report."
        output: list[dict[str, Any]] = [
            {
                "id": f"msg_{len(self.issued)}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ]
        if not called:
            output.append(
                {
                    "id": "fc_1",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": "call_1",
                    "name": "read_report",
                    "arguments": "{}",
                }
            )
        thresholds = [entry["compact_threshold"] for entry in body.get("context_management", [])]
        compacted = bool(thresholds) and prompt > thresholds[0]
        if compacted:
            item_id = f"cmp_{len(self.issued) + 1}"
            self.issued[item_id] = f"gAAAA-final-{item_id}"
            output.append({"id": item_id, "type": "compaction", "encrypted_content": self.issued[item_id]})
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": "resp_1", "output": []}}
        ]
        for index, entry in enumerate(output):
            added = {**entry, "encrypted_content": "gAAAA-early"} if entry["type"] == "compaction" else entry
            events.append({"type": "response.output_item.added", "output_index": index, "item": added})
            if entry["type"] == "message":
                delta = {"type": "response.output_text.delta", "output_index": index, "delta": text}
                events.append({**delta, "item_id": entry["id"], "content_index": 0})
            events.append({"type": "response.output_item.done", "output_index": index, "item": entry})
        usage = {"input_tokens": prompt, "output_tokens": 10}
        done = {"id": "resp_1", "status": "completed", "output": output, "usage": usage}
        events.append({"type": "response.completed", "response": done})
        return Reply.of(sse(events))

    def refuse(self, status: int, message: str, code: str | None) -> Reply:
        self.refusals.append(message)
        error = {"message": message, "type": "invalid_request_error", "param": "input", "code": code}
        return json_answer(status, {"error": error})


def test_a_run_over_the_window_finishes_because_the_item_goes_back() -> None:
    api = CompactingResponses()
    transport = MemoryTransport(respond=api)
    responses = model(transport, compaction_trigger=50_000)
    result = run(LoopOptions(model=responses, messages=[user_message(REPORT)], tools=[read_report])).result()
    assert api.refusals == []
    assert result.text == "The numbers are 1, 2 and 3."
    [item] = result.messages[1].provider_items
    assert json.loads(item.data) == {
        "id": "cmp_1",
        "type": "compaction",
        "encrypted_content": "gAAAA-final-cmp_1",
    }
    second = transport.sent[1].json()["input"]
    assert [entry["type"] for entry in second] == [
        "message",
        "message",
        "function_call",
        "compaction",
        "function_call_output",
    ]
    assert second[3] == json.loads(item.data)
    assert sum(tokens_of(entry) for entry in second) > WINDOW
    assert result.steps[1].usage.input == ITEM_TOKENS + tokens_of(second[4])


def test_the_same_run_fails_with_the_apis_error_when_the_item_does_not_go_back() -> None:
    api = CompactingResponses()
    elsewhere = OpenAIResponsesModel(
        "gpt-4.1",
        api_key=KEY,
        base_url="https://llm-gateway.example/v1",
        transport=MemoryTransport(respond=api),
        reasoning=False,
    )
    refused_elsewhere(model(MemoryTransport(respond=api), compaction_trigger=50_000), elsewhere)
    assert api.refusals[-1].startswith("Your input exceeds the context window of this model")


def test_the_fake_api_refuses_an_item_it_did_not_issue() -> None:
    api = CompactingResponses()
    forged = {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAAA-forged"}
    reply = api.answer({"input": [forged, {"type": "message", "role": "user", "content": "hi"}]})
    assert reply.status == 400
    assert api.refusals == ["The encrypted content for item cmp_9 could not be verified."]


# --- the compact endpoint ----------------------------------------------------------------------


def test_recorded_compact_call() -> None:
    """``compact_endpoint.i2``: pydantic-ai compacted two turns; the answer holds
    the two user messages and one compaction item. The request is the
    history's input items and the instructions, not streamed."""
    recorded = fixture_json("compact_endpoint.i2.request.json")
    response = fixture_json("compact_endpoint.i2.response.json")
    history = recorded_history("compact_endpoint.i2.request.json")
    transport = MemoryTransport(json_answer(200, fixture("compact_endpoint.i2.response.json")))
    responses = model(transport, "gpt-4o-mini")
    compacted = responses.compact(history, system=recorded["instructions"])
    sent = transport.sent[0]
    assert sent.url == "https://api.openai.com/v1/responses/compact"
    assert sent.headers["accept"] == "application/json"
    body = sent.json()
    assert {**body, "input": as_recorded(body["input"])} == recorded
    first, second, summary = compacted.messages
    assert first is history[0]
    assert second is history[2]
    assert summary.role is Role.ASSISTANT
    [item] = summary.provider_items
    assert item.data == compact(response["output"][2])
    assert (item.type, item.format, item.origin) == ("compaction", "openai-responses", ORIGIN)
    assert compacted.usage == Usage(input=156, output=190)


def test_recorded_request_after_the_compact_call() -> None:
    """``after_compact_endpoint.i3``: pydantic-ai went on from the compaction
    item alone and the next question; the same history gives the same input,
    the item byte for byte. ``compact()`` keeps the user messages in front of
    it too, as the guide passes the compacted window whole."""
    recorded = fixture_json("after_compact_endpoint.i3.request.json")
    transport = MemoryTransport(json_answer(200, fixture("compact_endpoint.i2.response.json")))
    history = recorded_history("compact_endpoint.i2.request.json")
    compacted = model(transport, "gpt-4o-mini").compact(history, system=recorded["instructions"])
    summary = compacted.messages[-1]
    saved = Message.from_dict(json.loads(json.dumps(summary.to_dict())))
    request = Request(system=recorded["instructions"], messages=[saved, user_message("And 5+5?")])
    body = request_body(request, "gpt-4o-mini", origin=ORIGIN, reasoning=False)
    assert as_recorded(body["input"]) == recorded["input"]
    assert body["instructions"] == recorded["instructions"]
    whole = request_body(
        Request(messages=[*compacted.messages, user_message("And 5+5?")]),
        "gpt-4o-mini",
        origin=ORIGIN,
        reasoning=False,
    )
    assert [entry.get("role", entry["type"]) for entry in whole["input"]] == [
        "user",
        "user",
        "compaction",
        "user",
    ]
    assert whole["input"][2] == recorded["input"][0]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], "the compact answer is a list, not an object"),
        ({"output": {}}, "output (of the compact answer) is an object, not a list"),
        ({"output": []}, "the compact answer holds no compaction item"),
        (
            {"output": [{"type": "message", "role": "assistant", "content": []}]},
            "the compact answer holds an item agentcore cannot place at output[0] (of the compact answer): "
            "'message' (role 'assistant')",
        ),
        (
            {
                "output": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hey"}]}
                ]
            },
            "output[0] (of the compact answer) is not the user message sent in its place",
        ),
        (
            {
                "output": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
                ]
                * 2
            },
            "the compact answer holds an item agentcore cannot place at output[1]",
        ),
    ],
)
def test_a_compact_answer_of_another_shape_is_an_upstream_error(answer: Any, message: str) -> None:
    transport = MemoryTransport(json_answer(200, answer))
    with pytest.raises(ModelError) as caught:
        model(transport).compact([user_message("hi")])
    assert caught.value.error_class is ErrorClass.UPSTREAM
    assert message in str(caught.value)


def test_a_compact_call_the_api_refuses_is_its_error() -> None:
    refusal = {
        "error": {
            "message": "Invalid value: 'x'.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    transport = MemoryTransport(json_answer(400, refusal))
    with pytest.raises(ModelError) as caught:
        model(transport).compact([user_message("hi")])
    assert caught.value.error_class is ErrorClass.INVALID_REQUEST
    assert caught.value.status == 400
    unanswered = [user_message("hi"), Message(Role.ASSISTANT, [tool_call_part(ToolCall("c", "f"))])]
    with pytest.raises(ConfigError, match="has the tool call"):
        model(transport).compact(unanswered)
    assert len(transport.sent) == 1
