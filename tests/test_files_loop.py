"""A user message with an image and a PDF, and a tool that returns an image,
through ``agentcore.run()`` end to end, for each adapter (Anthropic, OpenAI
Responses, OpenAI Chat Completions), against a local server that checks
every request as its API documents the file blocks (``tests/files_api.py``)
and answers a 400 when one is wrong.

Step 1: the request carries the user's image and PDF; the model calls
``render_chart``. The tool returns text and a PNG. Step 2: the request
carries the PNG in the tool's result; the model answers. The history is then
saved as JSON and loaded back, byte for byte.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentcore import (
    ErrorClass,
    LoopOptions,
    Message,
    ModelError,
    RunError,
    file_part,
    run,
    tool,
    user_message,
)
from agentcore.integrations.demo_tools import swatch_png
from agentcore.model import Model
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from tests import test_anthropic_mapping as anthropic_events
from tests.files_api import anthropic_problems, chat_problems, responses_problems
from tests.localserver import LocalServer, Reply, json_reply, sse_reply
from tests.test_openai_reasoning_loop import delta
from tests.test_openai_reasoning_loop import sse as chat_sse
from tests.test_responses_loop import stream as responses_stream

PHOTO = swatch_png((200, 30, 30), 4)
CHART = swatch_png((30, 30, 200), 8)
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
ANSWER = "The chart is blue; your photo is red."


@tool
def render_chart(title: str) -> list[Any]:
    """Render a chart as a PNG.

    Args:
        title: the chart's title.
    """
    return [f"chart {title!r}, 8x8", file_part(CHART, media_type="image/png", filename="chart.png")]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class API:
    """A local server for one adapter's wire format: checks each request,
    answers step 1 with a call of ``render_chart`` and step 2 with text."""

    def __init__(
        self,
        problems: Callable[[dict[str, Any]], list[str]],
        expect: Callable[[dict[str, Any], int], list[str]],
        answer: Callable[[int], bytes],
        step_of: Callable[[dict[str, Any]], int],
    ) -> None:
        self.problems, self.expect, self.answer, self.step_of = problems, expect, answer, step_of
        self.errors: list[str] = []
        self.server = LocalServer(responder=self.respond)

    def respond(self, record: dict[str, Any]) -> Reply:
        body = record["body"]
        step = self.step_of(body)
        errors = self.problems(body) + self.expect(body, step)
        if errors:
            self.errors += errors
            return json_reply(
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": "; ".join(errors)}},
            )
        return sse_reply(self.answer(step), piece=997)


# --- Anthropic ------------------------------------------------------------------


def anthropic_step(body: dict[str, Any]) -> int:
    last = body["messages"][-1]["content"]
    return 2 if any(block["type"] == "tool_result" for block in last) else 1


def anthropic_expect(body: dict[str, Any], step: int) -> list[str]:
    first = body["messages"][0]["content"]
    wanted = [
        {"type": "text", "text": "What is in the photo? Then draw the chart."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PHOTO)}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
            "title": "brief.pdf",
        },
    ]
    errors = [] if first == wanted else [f"the first user turn is {first!r}"]
    if step == 2:
        result = body["messages"][-1]["content"][0]
        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(CHART)}}
        if result.get("content") != [{"type": "text", "text": "chart 'Sales', 8x8"}, image]:
            errors.append(f"the tool result is {result!r}")
    return errors


def anthropic_answer(step: int) -> bytes:
    e = anthropic_events
    if step == 1:
        return e.sse(
            e.message_start(input_tokens=900, output_tokens=1),
            e.tool_start(0, "toolu_01", "render_chart"),
            e.json_delta(0, '{"title": "Sales"}'),
            e.block_stop(0),
            e.message_delta("tool_use", output_tokens=20),
            e.MESSAGE_STOP,
        )
    return e.sse(
        e.message_start(input_tokens=1200, output_tokens=1),
        e.text_start(0),
        e.text_delta(0, ANSWER),
        e.block_stop(0),
        e.message_delta("end_turn", output_tokens=12),
        e.MESSAGE_STOP,
    )


# --- OpenAI Responses -------------------------------------------------------------


def responses_step(body: dict[str, Any]) -> int:
    return 2 if any(item.get("type") == "function_call_output" for item in body["input"]) else 1


def responses_expect(body: dict[str, Any], step: int) -> list[str]:
    first = body["input"][0]
    wanted = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is in the photo? Then draw the chart."},
            {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PHOTO)}", "detail": "auto"},
            {
                "type": "input_file",
                "filename": "brief.pdf",
                "file_data": f"data:application/pdf;base64,{b64(PDF)}",
            },
        ],
    }
    errors = [] if first == wanted else [f"the first input item is {first!r}"]
    if step == 2:
        output = body["input"][-1]["output"]
        image = {"type": "input_image", "image_url": f"data:image/png;base64,{b64(CHART)}", "detail": "auto"}
        if output != [{"type": "input_text", "text": "chart 'Sales', 8x8"}, image]:
            errors.append(f"the function_call_output is {output!r}")
    return errors


def responses_answer(step: int) -> bytes:
    if step == 1:
        call = {
            "id": "fc_01",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"title": "Sales"}',
            "call_id": "call_01",
            "name": "render_chart",
        }
        return responses_stream("resp_1", [call], "")
    message = {
        "id": "msg_01",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": ANSWER, "annotations": []}],
    }
    return responses_stream("resp_2", [message], ANSWER)


# --- OpenAI Chat Completions ------------------------------------------------------


def chat_step(body: dict[str, Any]) -> int:
    return 2 if any(message["role"] == "tool" for message in body["messages"]) else 1


def chat_expect(body: dict[str, Any], step: int) -> list[str]:
    first = body["messages"][0]
    wanted = {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in the photo? Then draw the chart."},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PHOTO)}"}},
            {
                "type": "file",
                "file": {"filename": "brief.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
            },
        ],
    }
    errors = [] if first == wanted else [f"the first message is {first!r}"]
    if step == 2:
        after = body["messages"][2:]
        files = {
            "role": "user",
            "content": [
                {"type": "text", "text": "Files returned by the tool call 'call_01' (render_chart):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(CHART)}"}},
            ],
        }
        if after != [{"role": "tool", "tool_call_id": "call_01", "content": "chart 'Sales', 8x8"}, files]:
            errors.append(f"the messages after the call are {after!r}")
    return errors


def chat_answer(step: int) -> bytes:
    if step == 1:
        call = {
            "index": 0,
            "id": "call_01",
            "type": "function",
            "function": {"name": "render_chart", "arguments": '{"title": "Sales"}'},
        }
        return chat_sse(delta(tool_calls=[call]), delta("tool_calls"))
    return chat_sse(delta(content=ANSWER), delta("stop"))


# ----------------------------------------------------------------------------------

ADAPTERS: dict[str, tuple[Callable[[], API], Callable[[str], Model]]] = {
    "anthropic": (
        lambda: API(anthropic_problems, anthropic_expect, anthropic_answer, anthropic_step),
        lambda url: AnthropicModel("claude-test", api_key="sk-ant-test-key", base_url=url),
    ),
    "responses": (
        lambda: API(responses_problems, responses_expect, responses_answer, responses_step),
        lambda url: OpenAIResponsesModel(
            "gpt-test", api_key="sk-test-key", base_url=url + "/v1", reasoning=False
        ),
    ),
    "openai-chat": (
        lambda: API(chat_problems, chat_expect, chat_answer, chat_step),
        lambda url: OpenAIChatModel("gpt-test", api_key="sk-test-key", base_url=url + "/v1"),
    ),
}


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Iterator[tuple[API, Model]]:
    make_api, make_model = ADAPTERS[request.param]
    api = make_api()
    try:
        yield api, make_model(api.server.url)
    finally:
        api.server.close()


def question() -> Message:
    return user_message(
        "What is in the photo? Then draw the chart.",
        file_part(PHOTO, media_type="image/png"),
        file_part(PDF, media_type="application/pdf", filename="brief.pdf"),
    )


def test_an_image_and_a_pdf_in_and_an_image_out_of_a_tool(adapter: tuple[API, Model]) -> None:
    api, model = adapter
    reader = run(LoopOptions(model=model, messages=[question()], tools=[render_chart], retry_base_delay=0.01))
    parts = list(reader)
    result = reader.result()
    assert api.errors == []
    assert result.text == ANSWER
    assert api.server.hits == 2
    (tool_result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert tool_result.content == "chart 'Sales', 8x8"
    assert [(f.media_type, f.data, f.filename) for f in tool_result.files] == [
        ("image/png", CHART, "chart.png")
    ]
    saved = json.dumps([m.to_dict() for m in result.messages])
    assert [Message.from_dict(m) for m in json.loads(saved)] == list(result.messages)
    assert result.messages[2].tool_results[0].files[0].data == CHART


def test_the_validating_server_refuses_a_wrong_file_block(adapter: tuple[API, Model]) -> None:
    """The check has teeth: a PDF where an image was expected is answered 400."""
    api, model = adapter
    wrong = user_message(
        "What is in the photo? Then draw the chart.",
        file_part(PDF, media_type="application/pdf"),
        file_part(PDF, media_type="application/pdf", filename="brief.pdf"),
    )
    reader = run(LoopOptions(model=model, messages=[wrong], tools=[render_chart], max_retries=0))
    list(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class is ErrorClass.INVALID_REQUEST
    assert api.server.hits == 1
    assert len(api.errors) == 1
    assert api.errors[0].startswith("the first")
