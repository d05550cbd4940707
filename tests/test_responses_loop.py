"""``OpenAIResponsesModel`` driven by ``run()`` through a three-step tool loop
against a fake API (on the in-memory transport) that checks every request's input items the way the
Responses API documents and answers its real errors when they are wrong:

* a ``function_call`` item whose ``fc_`` id the server issued after a
  reasoning item needs that reasoning item before it: 400 "Item 'fc_...' of
  type 'function_call' was provided without its required 'reasoning' item:
  'rs_...'.";
* a ``reasoning`` item must be followed by the item it preceded: 400 "Item
  'rs_...' of type 'reasoning' was provided without its required following
  item.";
* with ``store: false`` a reasoning item must carry its encrypted content
  (else 404 "Item with id 'rs_...' not found. Items are not persisted when
  `store` is set to false. ..."), byte for byte as issued (else 400);
* a ``function_call_output`` must answer a ``function_call`` before it: 400
  "No tool call found for function call output with call_id ...";
* with ``previous_response_id`` (server-side state) the stored response must
  exist, and the input continues it.

(https://platform.openai.com/docs/guides/reasoning;
https://platform.openai.com/docs/guides/function-calling;
https://platform.openai.com/docs/guides/conversation-state.) The error texts
are the API's as users reported them.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from typing import Any

import attrs
import pytest

from agentcore import (
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Reasoning,
    RunError,
    StreamPartKind,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.providers.openai.responses.request import request_body
from agentcore.providers.openai.responses.stream import FORMAT
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import Request, Role, reasoning_part, text_part
from tests.canned import json_answer

CITIES = {"Oslo": "12 C", "Bergen": "9 C", "Tromsø": "3 C"}
ANSWER = "Oslo has 12 C, Bergen 9 C and Tromsø 3 C."
SUMMARIES = [
    ["**Finding the weather**", "I will look up Oslo first."],
    ["**Two more cities**", "Bergen next."],
    ["Then Tromsø."],
    ["**Answering**", "All three are known now."],
]


@tool
def get_weather(city: str) -> str:
    """The current weather in a city.

    Args:
        city: the city's name.
    """
    return CITIES[city]


def api_error(status: int, message: str) -> Reply:
    return json_answer(
        status,
        {"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": None}},
    )


class ResponsesAPI:
    """A fake Responses API, answering on the in-memory transport: three scripted steps (reasoning then
    a call; reasoning, a call, reasoning, a call; reasoning then the answer),
    streamed as api.openai.com streams them, after the input was checked."""

    def __init__(self, base_url: str = "https://responses.test/v1") -> None:
        self.base_url = base_url
        """Where the API is: its origin decides which reasoning goes back to it."""
        self._lock = threading.Lock()
        self.encrypted: dict[str, str] = {}
        """rs_ id -> the encrypted content issued for it."""
        self.needs: dict[str, str] = {}
        """fc_ id -> the rs_ id of the reasoning item before it."""
        self.stored: dict[str, list[dict[str, Any]]] = {}
        """response id -> its whole context (input then output), when stored."""
        self.errors: list[str] = []
        self.transport = MemoryTransport(respond=self.respond)

    def respond(self, sent: SentRequest) -> Reply:
        body = sent.json()
        context = list(body["input"])
        previous = body.get("previous_response_id")
        if previous is not None:
            with self._lock:
                if previous not in self.stored:
                    return api_error(400, f"Previous response with id '{previous}' not found.")
                context = self.stored[previous] + context
        error = self.check(context, store=bool(body.get("store")))
        if error is not None:
            body_bytes = error.chunks[0]
            assert isinstance(body_bytes, bytes)
            self.errors.append(body_bytes.decode())
            return error
        step = sum(1 for item in context if item.get("type") == "function_call_output")
        output, text = self.step(step, include="reasoning.encrypted_content" in body.get("include", []))
        response_id = f"resp_{os.urandom(6).hex()}"
        if body.get("store"):
            with self._lock:
                self.stored[response_id] = context + output
        return Reply.of(stream(response_id, output, text), piece=301)

    def check(self, items: list[dict[str, Any]], *, store: bool) -> Reply | None:
        seen_reasoning: set[str] = set()
        seen_calls: set[str] = set()
        for index, item in enumerate(items):
            kind = item.get("type")
            if kind == "reasoning":
                rs_id = item["id"]
                if "encrypted_content" not in item and not store:
                    return api_error(
                        404,
                        f"Item with id '{rs_id}' not found. Items are not persisted when `store` is set to "
                        "false. Try again with `store` set to true, or remove this item from your input.",
                    )
                if "encrypted_content" in item and item["encrypted_content"] != self.encrypted.get(rs_id):
                    return api_error(400, f"The encrypted content for item {rs_id} could not be verified.")
                following = items[index + 1] if index + 1 < len(items) else {}
                if (
                    following.get("type") not in ("function_call", "reasoning")
                    and following.get("role") != "assistant"
                ):
                    return api_error(
                        400,
                        f"Item '{rs_id}' of type 'reasoning' was provided without its required "
                        "following item.",
                    )
                seen_reasoning.add(rs_id)
            elif kind == "function_call":
                needed = self.needs.get(item.get("id", ""))
                if needed is not None and needed not in seen_reasoning:
                    return api_error(
                        400,
                        f"Item '{item['id']}' of type 'function_call' was provided without its required "
                        f"'reasoning' item: '{needed}'.",
                    )
                seen_calls.add(item["call_id"])
            elif kind == "function_call_output" and item["call_id"] not in seen_calls:
                return api_error(
                    400, f"No tool call found for function call output with call_id {item['call_id']}."
                )
        return None

    def step(self, number: int, *, include: bool) -> tuple[list[dict[str, Any]], str]:
        """The output items of step ``number`` (0, 1 or 2), and its text."""
        plan: list[tuple[list[str], str | None]]
        if number == 0:
            plan = [(SUMMARIES[0], "Oslo")]
        elif number == 1:
            plan = [(SUMMARIES[1], "Bergen"), (SUMMARIES[2], "Tromsø")]
        else:
            plan = [(SUMMARIES[3], None)]
        output: list[dict[str, Any]] = []
        for summaries, city in plan:
            rs_id = f"rs_{os.urandom(8).hex()}"
            item: dict[str, Any] = {
                "id": rs_id,
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": s} for s in summaries],
            }
            if include:
                item["encrypted_content"] = self.encrypted[rs_id] = (
                    "gAAAAA" + base64.urlsafe_b64encode(os.urandom(48)).decode()
                )
            output.append(item)
            if city is not None:
                fc_id = f"fc_{os.urandom(8).hex()}"
                self.needs[fc_id] = rs_id
                output.append(
                    {
                        "id": fc_id,
                        "type": "function_call",
                        "status": "completed",
                        "arguments": json.dumps({"city": city}, ensure_ascii=False),
                        "call_id": f"call_{os.urandom(8).hex()}",
                        "name": "get_weather",
                    }
                )
        if number < 2:
            return output, ""
        output.append(
            {
                "id": f"msg_{os.urandom(8).hex()}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
            }
        )
        return output, ANSWER


def sse(events: list[dict[str, Any]]) -> bytes:
    lines = []
    for number, event in enumerate(events):
        event["sequence_number"] = number
        lines.append(f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n")
    return "".join(lines).encode()


def stream(response_id: str, output: list[dict[str, Any]], text: str) -> bytes:
    """The events api.openai.com sends for a response with ``output``."""
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "status": "in_progress",
        "output": [],
        "usage": None,
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
    ]
    for index, item in enumerate(output):
        base = {"output_index": index, "item_id": item["id"]}
        if item["type"] == "reasoning":
            early = {**item, "summary": []}
            if "encrypted_content" in item:  # the added item's content differs from the done item's
                early["encrypted_content"] = "gAAAAA-early-" + item["id"]
            events.append({"type": "response.output_item.added", "output_index": index, "item": early})
            for part, summary in enumerate(item["summary"]):
                events.append(
                    {"type": "response.reasoning_summary_part.added", **base, "summary_index": part}
                )
                for i in range(0, len(summary["text"]), 7):
                    delta = summary["text"][i : i + 7]
                    events.append(
                        {
                            "type": "response.reasoning_summary_text.delta",
                            **base,
                            "summary_index": part,
                            "delta": delta,
                        }
                    )
                events.append(
                    {
                        "type": "response.reasoning_summary_text.done",
                        **base,
                        "summary_index": part,
                        "text": summary["text"],
                    }
                )
                events.append({"type": "response.reasoning_summary_part.done", **base, "summary_index": part})
        elif item["type"] == "function_call":
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": ""},
                }
            )
            arguments = item["arguments"]
            for i in range(0, len(arguments), 5):
                events.append(
                    {"type": "response.function_call_arguments.delta", **base, "delta": arguments[i : i + 5]}
                )
            events.append({"type": "response.function_call_arguments.done", **base, "arguments": arguments})
        else:
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
            )
            events.append({"type": "response.content_part.added", **base, "content_index": 0})
            for i in range(0, len(text), 4):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        **base,
                        "content_index": 0,
                        "delta": text[i : i + 4],
                    }
                )
            events.append({"type": "response.output_text.done", **base, "content_index": 0, "text": text})
            events.append({"type": "response.content_part.done", **base, "content_index": 0})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = {
        **response,
        "status": "completed",
        "output": output,
        "usage": {
            "input_tokens": 300,
            "input_tokens_details": {"cached_tokens": 256},
            "output_tokens": 120,
            "output_tokens_details": {"reasoning_tokens": 90},
            "total_tokens": 420,
        },
    }
    events.append({"type": "response.completed", "response": final})
    return sse(events)


@pytest.fixture
def api() -> ResponsesAPI:
    return ResponsesAPI()


def model_for(api: ResponsesAPI, **kwargs: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        "gpt-5", api_key="sk-test-0123456789", base_url=api.base_url, transport=api.transport, **kwargs
    )


def options(model: OpenAIResponsesModel, messages: Any = None, **kwargs: Any) -> LoopOptions:
    kwargs.setdefault("retry_base_delay", 0.01)
    return LoopOptions(
        model=model,
        messages=messages or [user_message("Weather in Oslo, Bergen and Tromsø?")],
        system="Answer in one sentence.",
        tools=[get_weather],
        **kwargs,
    )


def inputs(api: ResponsesAPI) -> list[list[dict[str, Any]]]:
    return [sent.json()["input"] for sent in api.transport.sent]


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return [item.get("type", "") for item in items]


def test_a_three_step_tool_loop_sends_every_reasoning_item_back_in_place(api: ResponsesAPI) -> None:
    streamed: list[tuple[str, str]] = []
    with run(options(model_for(api))) as reader:
        for part in reader:
            if part.kind in (StreamPartKind.REASONING_DELTA, StreamPartKind.TEXT_DELTA):
                streamed.append((part.kind.value, part.text))
            elif part.kind in (StreamPartKind.REASONING, StreamPartKind.TOOL_CALL):
                streamed.append((part.kind.value, ""))
        result = reader.result()

    assert api.errors == []
    assert result.finish_reason is FinishReason.STOP
    assert result.text == ANSWER
    assert len(api.transport.sent) == 3
    # every reasoning item streamed as it was thought, and whole, before its call
    shown = [kind for kind, _ in streamed if kind != "reasoning-delta" and kind != "text-delta"]
    assert shown == [
        "reasoning",
        "tool-call",
        "reasoning",
        "tool-call",
        "reasoning",
        "tool-call",
        "reasoning",
    ]
    thought = "".join(text for kind, text in streamed if kind == "reasoning-delta")
    assert thought == "".join(s for summaries in SUMMARIES for s in summaries)
    # per step, its reasoning blocks (StepResult.reasoning_text joins them with a blank line)
    assert result.reasoning == (
        "".join(SUMMARIES[0]),
        "".join(SUMMARIES[1]) + "\n\n" + "".join(SUMMARIES[2]),
        "".join(SUMMARIES[3]),
    )
    assert [s.tool_calls[0].input for s in result.steps[:2]] == ['{"city": "Oslo"}', '{"city": "Bergen"}']

    first, second, third = inputs(api)
    assert kinds(first) == ["message"]
    assert kinds(second) == ["message", "reasoning", "function_call", "function_call_output"]
    assert kinds(third) == [
        "message",
        *["reasoning", "function_call", "function_call_output"],
        *["reasoning", "function_call", "reasoning", "function_call"],  # in place, between the calls
        *["function_call_output", "function_call_output"],
    ]
    assert [item["output"] for item in third if item["type"] == "function_call_output"] == [
        "12 C",
        "9 C",
        "3 C",
    ]
    for body in (sent.json() for sent in api.transport.sent):
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"summary": "auto"}
        assert body["instructions"] == "Answer in one sentence."
        assert body["tools"][0]["strict"] is True
    # the reasoning went back exactly as the server sent it at output_item.done
    for item in (i for i in third if i["type"] == "reasoning"):
        assert item["encrypted_content"] == api.encrypted[item["id"]]
    assert result.usage.to_dict() == {"input": 900, "output": 360, "cache_read": 768, "cache_write": 0}


def test_a_history_saved_as_json_mid_loop_continues_in_a_new_run(api: ResponsesAPI) -> None:
    first = generate(options(model_for(api), step_limit=2))
    assert first.finish_reason is FinishReason.STEP_LIMIT
    saved = json.dumps([message.to_dict() for message in first.messages])

    # a new process: a new model object, the history read back from JSON
    history = [Message.from_dict(data) for data in json.loads(saved)]
    assert history == list(first.messages)
    second = generate(options(model_for(api), history))

    assert api.errors == []
    assert second.finish_reason is FinishReason.STOP
    assert second.text == ANSWER
    assert len(api.transport.sent) == 3
    assert kinds(inputs(api)[2]).count("reasoning") == 3


def test_the_validator_answers_what_the_api_answers(api: ResponsesAPI) -> None:
    history = generate(options(model_for(api), step_limit=1)).messages
    body = api.transport.sent[-1].json()
    full = request_body(Request(messages=history), "gpt-5", origin="responses.test")["input"]
    assert kinds(full) == ["message", "reasoning", "function_call", "function_call_output"]
    user, reasoning, call, output = full

    def post(items: list[dict[str, Any]]) -> tuple[int, str]:
        request = json.dumps({**body, "input": items}).encode()
        answer = api.respond(SentRequest("POST", api.base_url + "/responses", {}, request, Timeout()))
        if answer.status == 200:
            return 200, ""
        return answer.status, json.loads(b"".join(c for c in answer.chunks if isinstance(c, bytes)))["error"][
            "message"
        ]

    assert post(full) == (200, "")
    assert post([user, call, output]) == (
        400,
        f"Item '{call['id']}' of type 'function_call' was provided without its required 'reasoning' item: "
        f"'{reasoning['id']}'.",
    )
    assert post([user, reasoning]) == (
        400,
        f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item.",
    )
    bare = {k: v for k, v in reasoning.items() if k != "encrypted_content"}
    status, message = post([user, bare, call, output])
    assert status == 404
    assert message.startswith(f"Item with id '{reasoning['id']}' not found. Items are not persisted")
    tampered = {**reasoning, "encrypted_content": reasoning["encrypted_content"] + "x"}
    assert post([user, tampered, call, output]) == (
        400,
        f"The encrypted content for item {reasoning['id']} could not be verified.",
    )
    assert post([user, output]) == (
        400,
        f"No tool call found for function call output with call_id {output['call_id']}.",
    )


def foreign(reasoning_format: str, origin: str) -> Reasoning:
    return Reasoning(
        text="Earlier thoughts.",
        signature="sig-abc" if reasoning_format == "anthropic" else "",
        data="" if reasoning_format == "anthropic" else "gAAAAA-foreign",
        id="" if reasoning_format == "anthropic" else "rs_foreign",
        format=reasoning_format,
        origin=origin,
        provider_data='{"summary":[]}' if reasoning_format == FORMAT else "",
    )


@pytest.mark.parametrize(
    ("reasoning_format", "origin"),
    [("anthropic", "api.anthropic.com"), (FORMAT, "api.openai.com"), ("openai-chat", "api.deepseek.com")],
)
def test_reasoning_from_another_provider_is_not_sent(
    api: ResponsesAPI, reasoning_format: str, origin: str
) -> None:
    history = [
        user_message("Hello"),
        Message(
            Role.ASSISTANT,
            [reasoning_part(foreign(reasoning_format, origin)), text_part("Hi! How can I help?")],
        ),
        user_message("Weather in Oslo, Bergen and Tromsø?"),
    ]
    result = generate(options(model_for(api), history))
    assert api.errors == []
    assert result.text == ANSWER
    first = inputs(api)[0]
    assert kinds(first) == ["message", "message", "message"]
    assert "Earlier thoughts" not in json.dumps(first)


def test_a_history_from_one_server_continues_on_another_without_its_reasoning(api: ResponsesAPI) -> None:
    first = generate(options(model_for(api), step_limit=1))
    other = ResponsesAPI(base_url="https://gateway.example/v1")
    result = generate(options(model_for(other), list(first.messages)))
    assert other.errors == []
    assert result.text == ANSWER
    sent = other.transport.sent[0].json()["input"]
    # the first server's encrypted reasoning and fc_ item ids stay behind; the calls and results go
    assert kinds(sent) == ["message", "function_call", "function_call_output"]
    assert "id" not in sent[1]
    assert sent[1]["call_id"] == first.steps[0].tool_calls[0].id
    # and back on the first server, its own reasoning goes back in place again
    again = generate(options(model_for(api), list(first.messages)))
    assert api.errors == []
    assert again.text == ANSWER
    assert kinds(inputs(api)[1])[:3] == ["message", "reasoning", "function_call"]


def test_tampered_reasoning_is_the_servers_400_and_no_retry(api: ResponsesAPI) -> None:
    first = generate(options(model_for(api), step_limit=1))
    messages = list(first.messages)
    assistant = messages[1]
    content = [
        reasoning_part(attrs.evolve(p.reasoning, data=p.reasoning.data + "x")) if p.reasoning else p
        for p in assistant.content
    ]
    messages[1] = Message(Role.ASSISTANT, content)
    with pytest.raises(RunError) as caught:
        generate(options(model_for(api), messages))
    error = caught.value.err
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.INVALID_REQUEST
    assert "could not be verified" in error.message
    assert len(api.transport.sent) == 2


def test_server_side_state_chains_with_previous_response_id(api: ResponsesAPI) -> None:
    result = generate(options(model_for(api, server_state=True)))
    assert api.errors == []
    assert result.text == ANSWER
    bodies = [sent.json() for sent in api.transport.sent]
    assert [b["store"] for b in bodies] == [True, True, True]
    assert "previous_response_id" not in bodies[0]
    assert bodies[1]["previous_response_id"] in api.stored
    assert bodies[2]["previous_response_id"] in api.stored
    assert bodies[1]["previous_response_id"] != bodies[2]["previous_response_id"]
    # only what came after the stored response: the tool results
    assert kinds(bodies[1]["input"]) == ["function_call_output"]
    assert kinds(bodies[2]["input"]) == ["function_call_output", "function_call_output"]


def test_a_stateless_history_continued_with_server_state_is_sent_whole(api: ResponsesAPI) -> None:
    first = generate(options(model_for(api), step_limit=1))
    result = generate(options(model_for(api, server_state=True), list(first.messages)))
    assert api.errors == []
    assert result.text == ANSWER
    second = api.transport.sent[1].json()
    assert "previous_response_id" not in second  # the stateless response was never stored
    assert kinds(second["input"]) == ["message", "reasoning", "function_call", "function_call_output"]
