"""Files in request bodies, adapter by adapter (Anthropic, Responses, Chat
Completions) and kind by kind (image bytes, image URL, PDF, text document, a
file in a tool result), each body also checked against the field names its
API documents (``tests/files_api.py``); and the ConfigErrors for types and
sizes an API refuses, before any request."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agentcore import ConfigError, File, Message, Role, ToolCall, ToolResult, file_part, user_message
from agentcore.providers import attachments
from agentcore.providers.anthropic import request as anthropic_request
from agentcore.providers.openai.chat import request as chat_request
from agentcore.providers.openai.responses import request as responses_request
from agentcore.types import Request, text_part, tool_call_part, tool_result_part
from tests.files_api import anthropic_problems, chat_problems, responses_problems

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR tiny"
PNG64 = base64.b64encode(PNG).decode()
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\n%%EOF"
PDF64 = base64.b64encode(PDF).decode()
ORIGIN = "api.example.com"

IMAGE_BYTES = file_part(PNG, media_type="image/png", filename="chart.png")
IMAGE_URL = file_part(url="https://example.com/cat.jpg", media_type="image/jpeg")
PDF_BYTES = file_part(PDF, media_type="application/pdf", filename="report.pdf")
PDF_URL = file_part(url="https://example.com/report.pdf", media_type="application/pdf")
TEXT_DOC = file_part("Grüße, notes.".encode(), media_type="text/plain", filename="notes.txt")

CALL = ToolCall("call_1", "render", '{"what": "chart"}')


def tool_turn(
    *files: File | None, content: str = "Here it is.", is_error: bool = False
) -> tuple[Message, ...]:
    """A user question, a call, and its result holding ``files``."""
    return (
        user_message("Draw the chart."),
        Message(Role.ASSISTANT, [tool_call_part(CALL)]),
        Message(Role.TOOL, [tool_result_part(ToolResult(CALL.id, CALL.name, content, is_error, files))]),
    )


def anthropic_body(*messages: Message) -> dict[str, Any]:
    body = anthropic_request.request_body(
        Request(messages=messages), "claude-test", max_tokens=1024, origin=ORIGIN
    )
    assert anthropic_problems(body) == []
    return body


def responses_body(*messages: Message) -> dict[str, Any]:
    body = responses_request.request_body(Request(messages=messages), "gpt-test", origin=ORIGIN)
    assert responses_problems(body) == []
    return body


# --- Anthropic ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "block"),
    [
        (
            IMAGE_BYTES,
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
        ),
        (IMAGE_URL, {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}),
        (
            PDF_BYTES,
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                "title": "report.pdf",
            },
        ),
        (PDF_URL, {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}}),
        (
            TEXT_DOC,
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "Grüße, notes."},
                "title": "notes.txt",
            },
        ),
    ],
)
def test_anthropic_user_files(part: Any, block: dict[str, Any]) -> None:
    body = anthropic_body(user_message("What is this?", part))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, block]}
    ]


def test_anthropic_a_message_of_files_only_is_sent() -> None:
    body = anthropic_body(Message(Role.USER, [IMAGE_BYTES]))
    assert body["messages"][0]["content"][0]["type"] == "image"


def test_anthropic_files_in_a_tool_result_follow_its_text() -> None:
    body = anthropic_body(*tool_turn(IMAGE_BYTES.file, PDF_BYTES.file))
    assert body["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "call_1",
                "content": [
                    {"type": "text", "text": "Here it is."},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
                    {
                        "type": "document",
                        "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                        "title": "report.pdf",
                    },
                ],
            }
        ],
    }


def test_anthropic_a_tool_result_of_files_only_and_an_error_result() -> None:
    body = anthropic_body(*tool_turn(IMAGE_BYTES.file, content="", is_error=True))
    (block,) = body["messages"][2]["content"]
    assert block["is_error"] is True
    assert [b["type"] for b in block["content"]] == ["image"]


def test_anthropic_a_tool_result_without_files_is_unchanged() -> None:
    body = anthropic_body(*tool_turn())
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "Here it is."}
    ]


# --- Responses ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "item"),
    [
        (
            IMAGE_BYTES,
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}", "detail": "auto"},
        ),
        (IMAGE_URL, {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"}),
        (
            PDF_BYTES,
            {
                "type": "input_file",
                "filename": "report.pdf",
                "file_data": f"data:application/pdf;base64,{PDF64}",
            },
        ),
        (PDF_URL, {"type": "input_file", "file_url": "https://example.com/report.pdf"}),
        (
            TEXT_DOC,
            {
                "type": "input_file",
                "filename": "notes.txt",
                "file_data": "data:text/plain;base64," + base64.b64encode("Grüße, notes.".encode()).decode(),
            },
        ),
        (
            file_part(PDF, media_type="application/pdf"),
            {
                "type": "input_file",
                "filename": "file.pdf",
                "file_data": f"data:application/pdf;base64,{PDF64}",
            },
        ),
    ],
)
def test_responses_user_files(part: Any, item: dict[str, Any]) -> None:
    body = responses_body(user_message("What is this?", part))
    assert body["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "What is this?"}, item],
        }
    ]


def test_responses_a_user_message_without_files_keeps_its_string_content() -> None:
    body = responses_body(user_message("Hi."))
    assert body["input"] == [{"type": "message", "role": "user", "content": "Hi."}]


def test_responses_files_in_a_function_call_output() -> None:
    body = responses_body(*tool_turn(IMAGE_BYTES.file, TEXT_DOC.file))
    assert body["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": [
            {"type": "input_text", "text": "Here it is."},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}", "detail": "auto"},
            {
                "type": "input_file",
                "filename": "notes.txt",
                "file_data": "data:text/plain;base64," + base64.b64encode("Grüße, notes.".encode()).decode(),
            },
        ],
    }


def test_responses_an_error_result_with_files_keeps_its_marker() -> None:
    body = responses_body(*tool_turn(IMAGE_URL.file, content="it broke", is_error=True))
    assert body["input"][2]["output"][0] == {"type": "input_text", "text": "Error: it broke"}


# --- OpenAI Chat Completions ---------------------------------------------------------


def chat_body(*messages: Message) -> dict[str, Any]:
    body = chat_request.request_body(Request(messages=messages), "gpt-test", origin=ORIGIN)
    assert chat_problems(body) == []
    return body


@pytest.mark.parametrize(
    ("part", "content"),
    [
        (IMAGE_BYTES, {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}),
        (IMAGE_URL, {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}),
        (
            PDF_BYTES,
            {
                "type": "file",
                "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"},
            },
        ),
        (TEXT_DOC, {"type": "text", "text": "notes.txt:\nGrüße, notes."}),
        (file_part(b"a,b\n1,2\n", media_type="text/csv"), {"type": "text", "text": "file.csv:\na,b\n1,2\n"}),
    ],
)
def test_chat_user_files(part: Any, content: dict[str, Any]) -> None:
    body = chat_body(user_message("What is this?", part))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, content]}
    ]


def test_chat_a_user_message_without_files_keeps_its_string_content() -> None:
    assert chat_body(user_message("Hi."))["messages"] == [{"role": "user", "content": "Hi."}]


def test_chat_a_tools_files_follow_its_tool_message_in_a_user_message() -> None:
    body = chat_body(*tool_turn(IMAGE_BYTES.file, PDF_BYTES.file))
    assert body["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "Here it is."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Files returned by the tool call 'call_1' (render):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
                {
                    "type": "file",
                    "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{PDF64}"},
                },
            ],
        },
    ]


def test_chat_the_files_of_parallel_calls_come_after_every_tool_message() -> None:
    second = ToolCall("call_2", "render", '{"what": "map"}')
    results = [
        ToolResult("call_1", "render", "chart", files=[IMAGE_BYTES.file]),
        ToolResult("call_2", "render", "map", files=[IMAGE_URL.file]),
    ]
    history = (
        user_message("Draw both."),
        Message(Role.ASSISTANT, [tool_call_part(CALL), tool_call_part(second)]),
        Message(Role.TOOL, [tool_result_part(results[0])]),  # results split over two messages
        Message(Role.TOOL, [tool_result_part(results[1])]),
        user_message("Thanks."),
    )
    body = chat_body(*history)
    assert [m["role"] for m in body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "user",
        "user",
    ]
    files = body["messages"][4]["content"] + body["messages"][5]["content"]
    assert [part["type"] for part in files] == ["text", "image_url", "text", "image_url"]
    assert files[2] == {"type": "text", "text": "Files returned by the tool call 'call_2' (render):"}
    assert body["messages"][6] == {"role": "user", "content": "Thanks."}


def test_chat_a_tool_result_without_files_is_unchanged() -> None:
    assert chat_body(*tool_turn())["messages"][2:] == [
        {"role": "tool", "tool_call_id": "call_1", "content": "Here it is."}
    ]


def test_the_chat_check_finds_a_tool_call_left_unanswered() -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1"}]},
            {"role": "user", "content": "files"},
            {"role": "tool", "tool_call_id": "call_1", "content": "late"},
        ]
    }
    assert chat_problems(body) == [
        "messages.0: its tool calls are not answered by the tool messages right after it"
    ]


# --- types and sizes the APIs refuse ---------------------------------------------


def send_anthropic(*messages: Message) -> None:
    anthropic_request.request_body(Request(messages=messages), "claude-test", max_tokens=1024, origin=ORIGIN)


def send_responses(*messages: Message) -> None:
    responses_request.request_body(Request(messages=messages), "gpt-test", origin=ORIGIN)


def send_chat(*messages: Message) -> None:
    chat_request.request_body(Request(messages=messages), "gpt-test", origin=ORIGIN)


BIG = 5 * attachments.MB  # the Anthropic image limit counts base64: 3/4 of it in bytes is the most


@pytest.mark.parametrize(
    ("send", "messages", "words"),
    [
        (
            send_anthropic,
            (user_message("?", file_part(b"GIF", media_type="image/bmp")),),
            "messages[0] holds a file of type image/bmp, which the Anthropic Messages API does not "
            "accept here; it takes image/jpeg, image/png, image/gif, image/webp, application/pdf, text/plain",
        ),
        (
            send_anthropic,
            tool_turn(File("application/zip", b"PK")),
            "messages[2] (the result of the tool call 'call_1') holds a file of type application/zip",
        ),
        (
            send_anthropic,
            (user_message("?", file_part(url="https://example.com/a.txt", media_type="text/plain")),),
            "given by URL, which the Anthropic Messages API does not accept",
        ),
        (
            send_anthropic,
            (user_message("?", file_part(b"\xff\xfe", media_type="text/plain")),),
            "messages[0] holds a text/plain file that is not UTF-8",
        ),
        (
            send_anthropic,
            (user_message("?", file_part(b"\x00" * (BIG * 3 // 4 + 1), media_type="image/png")),),
            "messages[0] holds a file of type image/png and 3,932,161 bytes (5,242,884 as base64); "
            "the Anthropic Messages API takes at most 5,242,880 bytes of base64",
        ),
        (
            send_responses,
            (user_message("?", file_part(b"x", media_type="audio/mpeg")),),
            "messages[0] holds a file of type audio/mpeg, which the OpenAI Responses API does not accept",
        ),
        (
            send_responses,
            tool_turn(File("image/png", b"\x00" * (50 * attachments.MB + 1))),
            "messages[2] (the result of the tool call 'call_1') holds a file of type image/png and "
            "52,428,801 bytes; the OpenAI Responses API takes at most 52,428,800 bytes",
        ),
        (
            send_chat,
            (user_message("?", file_part(b"PK", media_type="application/zip")),),
            "messages[0] holds a file of type application/zip, which the OpenAI Chat Completions API does "
            "not accept here; it takes image/jpeg, image/png, image/gif, image/webp, application/pdf, text/*",
        ),
        (
            send_chat,
            tool_turn(File("application/pdf", url="https://example.com/a.pdf")),
            "messages[2] (the result of the tool call 'call_1') holds a file of type application/pdf "
            "given by URL, which the OpenAI Chat Completions API does not accept",
        ),
        (
            send_chat,
            (user_message("?", file_part(b"\xff", media_type="text/markdown")),),
            "messages[0] holds a text/markdown file that is not UTF-8",
        ),
        (
            send_chat,
            (
                user_message(
                    "?", file_part(b"\x00" * (50 * attachments.MB + 1), media_type="application/pdf")
                ),
            ),
            "the OpenAI Chat Completions API takes at most 52,428,800 bytes",
        ),
    ],
)
def test_a_file_the_api_refuses_is_a_config_error_naming_the_message(
    send: Any, messages: tuple[Message, ...], words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        send(*messages)
    assert words in str(caught.value)


def test_an_image_at_the_anthropic_limit_passes() -> None:
    send_anthropic(user_message("?", file_part(b"\x00" * (BIG * 3 // 4), media_type="image/png")))


def test_responses_takes_any_text_type_and_office_files() -> None:
    for media_type in ("text/x-python", "text/csv", "application/json", responses_request.FILE_TYPES[-1]):
        send_responses(user_message("?", file_part(b"x", media_type=media_type)))


@pytest.mark.parametrize("send", [send_anthropic, send_responses, send_chat])
def test_a_file_part_outside_a_user_message_is_a_config_error(send: Any) -> None:
    messages = (
        user_message("Hi."),
        Message(Role.ASSISTANT, [text_part("Look:"), IMAGE_BYTES]),
        user_message("Thanks."),
    )
    with pytest.raises(ConfigError, match=r"messages\[1\] is an assistant message with a file part"):
        send(*messages)
