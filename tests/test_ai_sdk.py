"""The AI SDK's UI message stream (agentcore.integrations.ai_sdk), read by the AI SDK itself.

Every stream is written by a real run through :func:`agentcore.run` and
:func:`agentcore.integrations.web.sse_stream` and handed, as an HTTP body, to
the npm package ``ai`` (pinned in examples/chat_ui/package.json, installed by
.ci/run with ``npm ci``): ``DefaultChatTransport`` parses the events against
the package's schema as ``useChat`` does, and ``readUIMessageStream`` builds
the message (tests/ui_message_reader.cjs). Skipped, with the reason, where
node or the installed package is missing.
"""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Agent,
    ChatRequestError,
    Citation,
    Compaction,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ManualClock,
    Message,
    ModelError,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    handoff,
    run,
    user_message,
)
from agentcore.aio import arun
from agentcore.files import File
from agentcore.integrations.ai_sdk import (
    DONE,
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageStreamEncoder,
    messages_from_ui,
)
from agentcore.integrations.asgi import sse_body
from agentcore.integrations.demo_tools import demo_tools, swatch_png
from agentcore.integrations.web import CONTENT_TYPE, HEARTBEAT, sse_stream
from agentcore.testing import ScriptedModel
from tests.test_web import Endless

ROOT = Path(__file__).resolve().parent.parent
CHAT_UI = ROOT / "examples" / "chat_ui"
READER = Path(__file__).resolve().parent / "ui_message_reader.cjs"


def read_with_ai_sdk(body: bytes, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """The UIMessage the AI SDK builds from ``body``, and the errors it reported."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (apt-get install nodejs npm)")
    if not (CHAT_UI / "node_modules" / "ai" / "package.json").exists():
        pytest.skip("the AI SDK is not installed: npm ci --prefix examples/chat_ui (.ci/run does)")
    headers = {"content-type": CONTENT_TYPE, **UI_MESSAGE_STREAM_HEADERS} if headers is None else headers
    done = subprocess.run(
        [node, str(READER), str(CHAT_UI), json.dumps(headers)],
        input=body,
        capture_output=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def events_of(body: bytes) -> list[Any]:
    """The ``data:`` payloads of a stream, in order (``[DONE]`` as the string)."""
    out: list[Any] = []
    for event in body.decode().split("\n\n"):
        if event.startswith("data: "):
            data = event[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def stream_bytes(options: LoopOptions, message_id: str = "m1") -> tuple[bytes, list[Message]]:
    """Run ``options`` and stream it through sse_stream with the UI message encoder."""
    reader = run(options, Context(timeout=60))
    with sse_stream(reader, heartbeat=None, encode=UIMessageStreamEncoder(message_id)) as stream:
        body = b"".join(stream)
    return body, reader.messages


CALL = ToolCall("c1", "calculator", '{"expression": "6 * 7"}')
SWATCH = ToolCall("c2", "color_swatch", '{"color": "red"}')


def tool_run_script() -> list[Any]:
    return [
        [
            StreamPart.reasoning_delta("Six times "),
            StreamPart.reasoning_delta("seven."),
            StreamPart.reasoning_event(Reasoning(text="Six times seven.", signature="c2ln")),
            StreamPart.text_delta("Let me compute."),
            StreamPart.tool_call_delta("c1", "calculator", '{"expression": '),
            StreamPart.tool_call_delta("c1", "calculator", '"6 * 7"}'),
            StreamPart.tool_call_event(CALL),
            StreamPart.tool_call_event(SWATCH),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=50, output=12)),
        ],
        [
            StreamPart.text_delta("It is "),
            StreamPart.citation_event(Citation(url="https://example.com/math", title="Math")),
            StreamPart.text_delta("42."),
            StreamPart.step_finish(FinishReason.STOP, Usage(input=70, output=4, cache_read=30)),
        ],
    ]


def tool_run() -> LoopOptions:
    """A run of :func:`tool_run_script` with the demo tools, streaming the calls' input."""
    return LoopOptions(
        model=ScriptedModel(tool_run_script()),
        messages=[user_message("What is 6 * 7?")],
        tools=demo_tools(),
        stream_tool_input=True,
    )


def test_a_run_with_tools_reads_as_one_ui_message_in_the_ai_sdk() -> None:
    options = tool_run()
    body, _ = stream_bytes(options)
    assert body.endswith(b"\n\n" + DONE)
    read = read_with_ai_sdk(body)
    assert read["errors"] == []
    message = read["message"]
    assert message["id"] == "m1"
    assert message["role"] == "assistant"
    png = swatch_png((220, 40, 40))
    assert len(png) < 1000
    parts = message["parts"]
    assert [part["type"] for part in parts] == [
        "step-start",
        "reasoning",
        "text",
        "dynamic-tool",
        "dynamic-tool",
        "file",
        "step-start",
        "text",
        "source-url",
    ]
    assert parts[1]["text"] == "Six times seven."
    assert parts[1]["state"] == "done"
    assert parts[2] == {"type": "text", "text": "Let me compute.", "state": "done"}
    assert parts[3] == {
        "type": "dynamic-tool",
        "toolName": "calculator",
        "toolCallId": "c1",
        "state": "output-available",
        "input": {"expression": "6 * 7"},
        "output": "42",
    }
    assert parts[4]["toolName"] == "color_swatch"
    assert parts[4]["output"] == "a 16x16 red swatch"
    assert parts[5]["mediaType"] == "image/png"
    assert parts[5]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert parts[7] == {"type": "text", "text": "It is 42.", "state": "done"}
    assert parts[8] == {
        "type": "source-url",
        "sourceId": "m1-source-4",
        "url": "https://example.com/math",
        "title": "Math",
    }
    assert message["metadata"] == {
        "finish_reason": "stop",
        "total_usage": {"input": 120, "output": 16, "cache_read": 30, "cache_write": 0},
    }


def test_the_events_of_a_tool_step_come_in_the_protocols_order() -> None:
    options = tool_run()
    body, _ = stream_bytes(options)
    types = [event if event == "[DONE]" else event["type"] for event in events_of(body)]
    assert types == [
        "start",
        "start-step",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-available",
        "tool-input-available",
        "tool-output-available",
        "tool-output-available",
        "file",
        "finish-step",  # after the step's tool results, as the AI SDK's own servers send them
        "start-step",
        "text-start",
        "text-delta",
        "source-url",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
        "[DONE]",
    ]
    assert events_of(body)[-2]["finishReason"] == "stop"


def test_what_the_ai_sdk_read_goes_back_into_the_next_request_as_the_runs_history() -> None:
    options = tool_run()
    body, history = stream_bytes(options)
    assistant = read_with_ai_sdk(body)["message"]
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 6 * 7?"}]}
    follow_up = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "And 6 * 8?"}]}
    again = messages_from_ui([user, assistant, follow_up])
    # The run's history as a browser can give it back: no reasoning (it never
    # had the signature), no citations or tool files (display parts), the
    # calls' JSON as parsed and written again.
    assert shown(again[:-1]) == shown(history)
    assert shown(again) == [
        ("user", "What is 6 * 7?", [], []),
        (
            "assistant",
            "Let me compute.",
            [("c1", "calculator", {"expression": "6 * 7"}), ("c2", "color_swatch", {"color": "red"})],
            [],
        ),
        ("tool", "", [], [("c1", "42", False), ("c2", "a 16x16 red swatch", False)]),
        ("assistant", "It is 42.", [], []),
        ("user", "And 6 * 8?", [], []),
    ]
    assert again[2].tool_results[0].name == "calculator"


def shown(messages: list[Message]) -> list[tuple[str, str, list[Any], list[Any]]]:
    """What of a history survives the browser: roles, text, calls, results."""
    return [
        (
            m.role.value,
            m.text,
            [(c.id, c.name, json.loads(c.input)) for c in m.tool_calls],
            [(r.tool_call_id, r.content, r.is_error) for r in m.tool_results],
        )
        for m in messages
    ]


def test_a_model_error_reaches_the_ai_sdk_as_an_error_part_and_an_error_finish() -> None:
    model = ScriptedModel(
        [
            [
                StreamPart.text_delta("Hal"),
                ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401),
            ],
        ]
    )
    body, _ = stream_bytes(LoopOptions(model=model, messages=[user_message("Hi")]))
    events = events_of(body)
    assert events[-3:] == [
        {"type": "error", "errorText": "authentication failed: invalid x-api-key (HTTP 401)"},
        {
            "type": "finish",
            "finishReason": "error",
            "messageMetadata": {
                "finish_reason": "error",
                "total_usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
            },
        },
        "[DONE]",
    ]
    read = read_with_ai_sdk(body)
    assert read["errors"] == ["authentication failed: invalid x-api-key (HTTP 401)"]
    assert [part["type"] for part in read["message"]["parts"]] == ["step-start", "text"]
    assert read["message"]["parts"][1]["text"] == "Hal"


def test_a_cancelled_run_ends_with_an_abort_part() -> None:
    step = Endless(interval=0.01)
    ctx = Context()
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("Count.")]), ctx)
    encoder = UIMessageStreamEncoder("m1")
    chunks = []
    for part in reader:
        chunks.append(encoder(part))
        if part.text == "tick 1 ":
            ctx.cancel()
    events = events_of(b"".join(chunks))
    assert events[-3:] == [{"type": "finish-step"}, {"type": "abort", "reason": "context canceled"}, "[DONE]"]
    read = read_with_ai_sdk(b"".join(chunks))
    assert read["errors"] == []
    assert read["message"]["parts"][1]["text"].startswith("tick 0 tick 1 ")


def test_compaction_is_transient_data_and_provider_items_and_textless_reasoning_are_not_sent() -> None:
    item = ProviderItem(
        type="compaction", data='{"type": "compaction", "content": "x"}', format="anthropic", origin="a"
    )
    compaction = Compaction(policy="sliding-window", removed=(0, 1), messages_before=4, messages_after=2)
    parts = [
        StreamPart.compaction_event(compaction),
        StreamPart.reasoning_event(Reasoning(data="ZW5j")),
        StreamPart.provider_item_event(item),
        StreamPart.text_delta("Hi."),
        StreamPart.citation_event(Citation(title="Annual report", type="file_citation")),
        StreamPart.step_finish(FinishReason.STOP, Usage(input=3, output=2)),
        StreamPart.finish(FinishReason.STOP, Usage(input=3, output=2)),
    ]
    encoder = UIMessageStreamEncoder("m1")
    body = b"".join(encoder(part) for part in parts)
    events = events_of(body)
    assert events[2] == {"type": "data-compaction", "data": compaction.to_dict(), "transient": True}
    assert [e["type"] for e in events[3:-1]] == [
        "text-start",
        "text-delta",
        "source-document",
        "text-end",
        "finish-step",
        "finish",
    ]
    read = read_with_ai_sdk(body)
    assert read["errors"] == []
    assert read["message"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Hi.", "state": "done"},
        {
            "type": "source-document",
            "sourceId": "m1-source-2",
            "mediaType": "text/plain",
            "title": "Annual report",
        },
    ]


def test_an_error_result_and_a_malformed_input_read_as_the_ai_sdk_shows_them() -> None:
    parts = [
        StreamPart.tool_call_event(ToolCall("c1", "calculator", '{"expression": ')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
        StreamPart.tool_result_event(ToolResult("c1", "calculator", "Error: malformed JSON", is_error=True)),
        StreamPart.finish(FinishReason.STEP_LIMIT),
    ]
    encoder = UIMessageStreamEncoder("m1")
    read = read_with_ai_sdk(b"".join(encoder(part) for part in parts))
    assert read["errors"] == []
    assert read["message"]["parts"][1] == {
        "type": "dynamic-tool",
        "toolName": "calculator",
        "toolCallId": "c1",
        "state": "output-error",
        "input": '{"expression": ',
        "errorText": "Error: malformed JSON",
    }
    assert read["message"]["metadata"]["finish_reason"] == "step-limit"


def test_without_the_header_the_ai_sdk_reads_the_same_stream() -> None:
    # The header marks the protocol for proxies and tools; the transport parses the body either way.
    encoder = UIMessageStreamEncoder("m1")
    body = encoder(StreamPart.text_delta("Hi")) + encoder(StreamPart.finish(FinishReason.STOP))
    read = read_with_ai_sdk(body, {"content-type": CONTENT_TYPE})
    assert read["message"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Hi", "state": "done"},
    ]


def test_heartbeats_between_events_are_comments_the_ai_sdk_skips() -> None:
    encoder = UIMessageStreamEncoder("m1")
    body = encoder(StreamPart.text_delta("Hi")) + HEARTBEAT + encoder(StreamPart.finish(FinishReason.STOP))
    read = read_with_ai_sdk(body)
    assert read["errors"] == []
    assert read["message"]["parts"][1]["text"] == "Hi"


def test_sse_body_writes_the_same_bytes_as_sse_stream() -> None:
    def options() -> LoopOptions:
        return tool_run()

    wsgi, _ = stream_bytes(options())

    async def collect() -> bytes:
        body = sse_body(arun(options()), heartbeat=None, encode=UIMessageStreamEncoder("m1"))
        return b"".join([chunk async for chunk in body])

    assert asyncio.run(collect()) == wsgi


def test_a_part_the_protocol_does_not_send_is_no_empty_chunk() -> None:
    item = ProviderItem(type="compaction", data='{"type": "compaction"}', format="anthropic", origin="a")
    step = [
        StreamPart.text_delta("Hi"),
        StreamPart.reasoning_event(Reasoning(data="ZW5j")),  # closes the text; shows nothing itself
        StreamPart.provider_item_event(item),  # nothing
        StreamPart.step_finish(FinishReason.STOP),  # nothing: no block is open, the step ends with the run
    ]

    def options() -> LoopOptions:
        return LoopOptions(model=ScriptedModel([step]), messages=[user_message("Hi")])

    wsgi = list(sse_stream(run(options()), heartbeat=None, encode=UIMessageStreamEncoder("m1")))

    async def collect() -> list[bytes]:
        body = sse_body(arun(options()), heartbeat=None, encode=UIMessageStreamEncoder("m1"))
        return [chunk async for chunk in body]

    assert b"" not in wsgi
    assert asyncio.run(collect()) == wsgi
    assert [
        [event if event == "[DONE]" else event["type"] for event in events_of(chunk)] for chunk in wsgi
    ] == [
        ["start", "start-step", "text-start", "text-delta"],
        ["text-end"],
        ["finish-step", "finish", "[DONE]"],
    ]


def test_each_encoder_makes_a_fresh_message_id() -> None:
    first, second = UIMessageStreamEncoder(), UIMessageStreamEncoder()
    assert first.message_id.startswith("msg-")
    assert first.message_id != second.message_id


# The request side: useChat's UI messages as agentcore messages.


def test_user_text_and_files_become_a_user_message() -> None:
    png = swatch_png((0, 0, 0))
    data_url = "data:image/png;base64," + base64.b64encode(png).decode()
    messages = messages_from_ui(
        [
            {
                "id": "u1",
                "role": "user",
                "parts": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "file", "mediaType": "image/png", "filename": "a.png", "url": data_url},
                    {"type": "file", "mediaType": "application/pdf", "url": "https://example.com/a.pdf"},
                    {"type": "data-note", "data": {"x": 1}},
                ],
            }
        ]
    )
    assert len(messages) == 1
    assert messages[0].role is Role.USER
    assert messages[0].text == "What is this?"
    assert messages[0].files == [
        File(media_type="image/png", data=png, filename="a.png"),
        File(media_type="application/pdf", url="https://example.com/a.pdf"),
    ]


def test_assistant_steps_become_calls_then_results_and_unanswered_calls_are_left_out() -> None:
    messages = messages_from_ui(
        [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Go"}]},
            {
                "id": "a1",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "reasoning", "text": "thinking", "state": "done"},
                    {"type": "text", "text": "Checking."},
                    {
                        "type": "tool-calculator",
                        "toolCallId": "c1",
                        "state": "output-available",
                        "input": {"e": 1},
                        "output": {"v": 1},
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "search",
                        "toolCallId": "c2",
                        "state": "output-error",
                        "input": {},
                        "errorText": "down",
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "slow",
                        "toolCallId": "c3",
                        "state": "input-available",
                        "input": {},
                    },
                    {
                        "type": "tool-delete",
                        "toolCallId": "c4",
                        "state": "output-denied",
                        "input": {"path": "/"},
                        "approval": {"id": "a", "approved": False, "reason": "not today"},
                    },
                    {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AAAA"},
                    {"type": "source-url", "sourceId": "s1", "url": "https://example.com"},
                    {"type": "step-start"},
                    {"type": "text", "text": "Done."},
                ],
            },
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Thanks."}]},
        ]
    )
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER]
    assert messages[1].text == "Checking."
    assert messages[1].reasoning == []
    assert messages[1].tool_calls == [
        ToolCall("c1", "calculator", '{"e":1}'),
        ToolCall("c2", "search", "{}"),
        ToolCall("c4", "delete", '{"path":"/"}'),
    ]
    assert messages[1].files == []
    assert messages[2].tool_results == [
        ToolResult("c1", "calculator", '{"v":1}'),
        ToolResult("c2", "search", "down", is_error=True),
        ToolResult("c4", "delete", "not today", is_error=True),
    ]
    assert messages[3].text == "Done."


@pytest.mark.parametrize(
    ("messages", "path", "fragment"),
    [
        ({"role": "user"}, "messages", "must be a list"),
        (["hi"], "messages[0]", "must be an object"),
        ([{"role": "user"}], "messages[0]", "'parts' is missing"),
        ([{"role": "system", "parts": []}], "messages[0].role", "the server's to give"),
        ([{"role": "robot", "parts": []}], "messages[0].role", "must be 'user' or 'assistant'"),
        ([{"role": "user", "parts": [{"text": "x"}]}], "messages[0].parts[0]", "'type' is missing"),
        (
            [{"role": "user", "parts": [{"type": "text", "text": 3}]}],
            "messages[0].parts[0].text",
            "must be str",
        ),
        ([{"role": "user", "parts": []}], "messages[0].parts", "needs a text or a file part"),
        (
            [{"role": "user", "parts": [{"type": "file", "mediaType": "image/png", "url": "ftp://x/a.png"}]}],
            "messages[0].parts[0].url",
            "data: or http(s) URL",
        ),
        (
            [
                {
                    "role": "user",
                    "parts": [{"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,@@"}],
                }
            ],
            "messages[0].parts[0].url",
            "does not decode",
        ),
        (
            [
                {
                    "role": "user",
                    "parts": [{"type": "file", "mediaType": "image/png", "url": "data:image/png,abc"}],
                }
            ],
            "messages[0].parts[0].url",
            "must be base64",
        ),
        (
            [{"role": "user", "parts": [{"type": "file", "mediaType": "png", "url": "https://x/a"}]}],
            "messages[0].parts[0]",
            "must be a MIME type",
        ),
        (
            [{"role": "assistant", "parts": [{"type": "tool-x", "state": "output-available", "output": 1}]}],
            "messages[0].parts[0]",
            "'toolCallId' is missing",
        ),
        (
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool-x", "toolCallId": "c", "state": "output-available"}],
                }
            ],
            "messages[0].parts[0]",
            "'output' is missing",
        ),
        (
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "dynamic-tool", "toolCallId": "c", "state": "output-error"}],
                }
            ],
            "messages[0].parts[0]",
            "'toolName' is missing",
        ),
    ],
)
def test_malformed_ui_messages_are_a_chat_request_error_naming_the_place(
    messages: Any, path: str, fragment: str
) -> None:
    with pytest.raises(ChatRequestError) as caught:
        messages_from_ui(messages)
    assert caught.value.path == path
    assert fragment in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_request_made_by_messages_from_ui_is_what_the_model_gets() -> None:
    model = ScriptedModel([[StreamPart.text_delta("ok"), StreamPart.step_finish(FinishReason.STOP)]])
    messages = messages_from_ui([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}])
    body, _ = stream_bytes(LoopOptions(model=model, messages=messages))
    request: Request = model.requests[0]
    assert request.messages[0].text == "Hello"
    assert read_with_ai_sdk(body)["message"]["parts"][1]["text"] == "ok"


def team() -> Agent:
    """A lead agent that asks a researcher agent (a sub-run) and then hands the run off to a writer."""
    researcher = Agent(
        name="researcher",
        model=ScriptedModel(
            [
                [
                    StreamPart.text_delta("Tides follow the moon."),
                    StreamPart.step_finish(FinishReason.STOP, Usage(9, 5)),
                ]
            ]
        ),
    )
    writer = Agent(
        name="writer",
        model=ScriptedModel(
            [[StreamPart.text_delta("Moon."), StreamPart.step_finish(FinishReason.STOP, Usage(30, 2))]]
        ),
    )
    research = ToolCall("c1", "researcher", '{"task": "Why tides?"}')
    transfer = ToolCall("c2", "transfer_to_writer", "{}")
    return Agent(
        name="lead",
        model=ScriptedModel(
            [
                [
                    StreamPart.tool_call_event(research),
                    StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(20, 4)),
                ],
                [
                    StreamPart.tool_call_event(transfer),
                    StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(25, 3)),
                ],
            ]
        ),
        tools=[researcher.as_tool(), handoff(writer)],
    )


def test_a_sub_run_is_transient_data_and_a_handoff_stays_in_the_message() -> None:
    body, _ = stream_bytes(team().options("Why tides?"))
    events = [event for event in events_of(body) if event != "[DONE]"]
    nested = [event["data"] for event in events if event["type"] == "data-nested"]
    assert [(data["path"], data["part"]["kind"]) for data in nested] == [
        (["c1"], "text-delta"),
        (["c1"], "step-finish"),
        (["c1"], "finish"),
    ]
    assert nested[0]["part"]["text"] == "Tides follow the moon."
    assert all(event["transient"] for event in events if event["type"] == "data-nested")
    assert {"type": "data-handoff", "data": {"agent": "writer"}} in events
    assert events[-1]["messageMetadata"]["total_usage"]["input"] == 20 + 9 + 25 + 30
    read = read_with_ai_sdk(body)
    assert read["errors"] == []
    parts = read["message"]["parts"]
    assert [part["type"] for part in parts] == [
        "step-start",
        "dynamic-tool",
        "step-start",
        "dynamic-tool",
        "data-handoff",
        "step-start",
        "text",
    ]
    assert parts[1]["output"] == "Tides follow the moon."
    assert parts[4]["data"] == {"agent": "writer"}
    assert parts[6]["text"] == "Moon."


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([], "no message to answer"),
        ([{"role": "assistant", "parts": [{"type": "step-start"}]}], "no message to answer"),
        (
            [
                {"role": "user", "parts": [{"type": "text", "text": "Go"}]},
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "step-start"},
                        *[
                            {
                                "type": "dynamic-tool",
                                "toolName": name,
                                "toolCallId": "c9",
                                "state": "output-available",
                                "input": {},
                                "output": "1",
                            }
                            for name in ("f", "g")
                        ],
                    ],
                },
            ],
            "the tool call id 'c9' is used twice",
        ),
        (
            [
                {"role": "user", "parts": [{"type": "text", "text": "Hi"}]},
                {"role": "assistant", "parts": [{"type": "step-start"}, {"type": "text", "text": "Hello."}]},
            ],
            "an assistant message last",
        ),
        (
            [{"role": "user", "parts": [{"type": "text", "text": " "}]}],
            "a user message with no text and no file",
        ),
    ],
    ids=["empty", "only display parts", "two calls with one id", "assistant last", "blank user text"],
)
def test_a_history_no_model_could_answer_is_a_chat_request_error_before_any_run(
    messages: list[Any], fragment: str
) -> None:
    with pytest.raises(ChatRequestError) as caught:
        messages_from_ui(messages)
    assert caught.value.path == "messages"
    assert fragment in str(caught.value)


def test_a_deadline_that_passed_is_an_error_the_ai_sdk_reports_not_an_abort() -> None:
    clock = ManualClock()
    ctx = Context(timeout=30, clock=clock)
    reader = run(
        LoopOptions(model=ScriptedModel([Endless(interval=0.01)]), messages=[user_message("Count.")]), ctx
    )
    encoder = UIMessageStreamEncoder("m1")
    chunks = []
    for part in reader:
        chunks.append(encoder(part))
        if part.text == "tick 1 ":
            clock.advance(31)
    events = events_of(b"".join(chunks))
    assert events[-3:] == [
        {"type": "error", "errorText": "context deadline exceeded"},
        {
            "type": "finish",
            "finishReason": "error",
            "messageMetadata": {"finish_reason": "canceled", "total_usage": Usage().to_dict()},
        },
        "[DONE]",
    ]
    read = read_with_ai_sdk(b"".join(chunks))
    assert read["errors"] == ["context deadline exceeded"]
