"""Files as values: ``File``, ``file_part``, ``file_part_from_path``,
``user_message(text, *parts)``, ``ToolResult.files``, the JSON round trip,
and what a tool may return (``tool_output``, ``FunctionTool``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import agentcore
from agentcore import (
    ContentPartKind,
    File,
    Message,
    Role,
    ToolResult,
    file_part,
    file_part_from_path,
    text_part,
    tool,
    tool_result_part,
    user_message,
)
from agentcore.context import Context
from agentcore.tools import is_tool_content, tool_output

EVERY_BYTE = bytes(range(256)) * 3 + b"\x00"
PNG = File("image/png", b"\x89PNG\r\n\x1a\n fake", filename="chart.png")


def round_trip(message: Message) -> Message:
    return Message.from_dict(json.loads(json.dumps(message.to_dict())))


def test_file_part_holds_a_file_and_user_message_takes_extra_parts() -> None:
    part = file_part(b"%PDF-1.7", media_type="Application/PDF ", filename="a.pdf")
    assert part.kind is ContentPartKind.FILE
    assert part.file == File("application/pdf", b"%PDF-1.7", filename="a.pdf")
    message = user_message("Summarize.", part, text_part("Briefly."))
    assert message.role is Role.USER
    assert [p.kind for p in message.content] == [
        ContentPartKind.TEXT,
        ContentPartKind.FILE,
        ContentPartKind.TEXT,
    ]
    assert message.text == "Summarize.Briefly."
    assert message.files == [part.file]


def test_a_file_given_by_url() -> None:
    part = file_part(url="https://example.com/cat.jpg", media_type="image/jpeg")
    assert part.file is not None
    assert (part.file.url, part.file.data, part.file.size) == ("https://example.com/cat.jpg", None, 0)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"media_type": "image/png"}, ValueError, "exactly one of data"),
        ({"data": b"x", "url": "https://x/y.png", "media_type": "image/png"}, ValueError, "exactly one"),
        ({"data": "text", "media_type": "text/plain"}, TypeError, "must be bytes"),
        ({"data": b"x", "media_type": "png"}, ValueError, "MIME type"),
        ({"data": b"x", "media_type": "text/plain; charset=utf-8"}, ValueError, "no parameters"),
        ({"url": "file:///etc/passwd", "media_type": "text/plain"}, ValueError, "http:// or https://"),
        ({"data": b"x", "media_type": 7}, TypeError, "media_type"),
    ],
)
def test_bad_files_are_refused(kwargs: dict[str, Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        file_part(**kwargs)


def test_repr_shows_the_size_not_the_bytes() -> None:
    text = repr(File("image/png", b"\x00" * 100_000))
    assert "<100000 bytes>" in text
    assert len(text) < 200


@pytest.mark.parametrize(
    "message",
    [
        user_message("all bytes", file_part(EVERY_BYTE, media_type="application/octet-stream")),
        user_message("empty", file_part(b"", media_type="text/plain", filename="empty.txt")),
        user_message("url", file_part(url="https://example.com/a.pdf", media_type="application/pdf")),
        Message(
            Role.TOOL,
            [
                tool_result_part(
                    ToolResult("c1", "render", "the chart", files=[PNG, File("text/plain", b"hi")])
                )
            ],
        ),
    ],
)
def test_history_json_round_trips_files_exactly(message: Message) -> None:
    assert round_trip(message) == message


def test_the_json_form_of_a_file() -> None:
    part = file_part(b"\x00\xff\xfe", media_type="image/gif", filename="dot.gif")
    assert part.to_dict() == {
        "kind": "file",
        "file": {"media_type": "image/gif", "data": "AP/+", "filename": "dot.gif"},
    }
    by_url = file_part(url="https://example.com/a.pdf", media_type="application/pdf")
    assert by_url.to_dict() == {
        "kind": "file",
        "file": {"media_type": "application/pdf", "url": "https://example.com/a.pdf"},
    }


def test_a_tool_result_without_files_keeps_its_json_shape() -> None:
    assert ToolResult("c1", "t", "ok").to_dict() == {
        "tool_call_id": "c1",
        "name": "t",
        "content": "ok",
        "is_error": False,
    }
    assert ToolResult.from_dict({"tool_call_id": "c1", "name": "t", "content": "ok"}).files == ()


def test_data_that_is_not_base64_is_refused_when_loading() -> None:
    with pytest.raises(ValueError, match="not valid base64"):
        File.from_dict({"media_type": "image/png", "data": "not base64!"})


def test_tool_result_files_must_be_files() -> None:
    with pytest.raises(TypeError, match="File objects"):
        ToolResult("c1", "t", "x", files=[b"png"])


def test_file_part_from_path_reads_the_bytes_and_guesses_the_type(tmp_path: Path) -> None:
    path = tmp_path / "report.pdf"
    path.write_bytes(b"%PDF-1.4 tiny")
    part = file_part_from_path(path)
    assert part.file == File("application/pdf", b"%PDF-1.4 tiny", filename="report.pdf")
    assert file_part_from_path(str(path), media_type="text/plain").file == File(
        "text/plain", b"%PDF-1.4 tiny", filename="report.pdf"
    )


def test_file_part_from_path_errors(tmp_path: Path) -> None:
    odd = tmp_path / "data.unknownext"
    odd.write_bytes(b"?")
    with pytest.raises(ValueError, match="media_type="):
        file_part_from_path(odd)
    with pytest.raises(FileNotFoundError):
        file_part_from_path(tmp_path / "missing.png")
    assert os.path.exists(odd)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", ("plain", ())),
        (PNG, ("", (PNG,))),
        (file_part(b"x", media_type="text/plain"), ("", (File("text/plain", b"x"),))),
        (["a chart:", PNG, text_part("and a note")], ("a chart:\nand a note", (PNG,))),
        ((PNG, PNG), ("", (PNG, PNG))),
        ([], ("", ())),
    ],
)
def test_tool_output_splits_text_and_files(value: object, expected: tuple[str, tuple[File, ...]]) -> None:
    assert tool_output(value) == expected


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (42, "returned int, not str"),
        (["ok", 42], "int in a list, not str"),
        ([PNG, {"a": 1}], "dict in a list"),
        (agentcore.ContentPart(kind="tool-call", tool_call=agentcore.ToolCall("c", "t")), "ContentPart"),
    ],
)
def test_tool_output_refuses_other_values(value: object, words: str) -> None:
    with pytest.raises(TypeError, match=words):
        tool_output(value)


@pytest.mark.parametrize(
    ("value", "content"),
    [(["a", "b"], False), ({"x": 1}, False), ("s", False), ([PNG], True), (["see", PNG], True), (PNG, True)],
)
def test_is_tool_content(value: object, content: bool) -> None:
    assert is_tool_content(value) is content


def test_a_function_tool_returns_files_as_they_are_and_data_as_json() -> None:
    @tool
    def render(kind: str) -> Any:
        """Render something."""
        if kind == "image":
            return ["the chart", file_part(PNG.data, media_type="image/png")]
        return ["a", "b"]

    assert render.execute({"kind": "image"}, Context()) == [
        "the chart",
        file_part(PNG.data, media_type="image/png"),
    ]
    assert render.execute({"kind": "list"}, Context()) == '["a", "b"]'


def test_file_part_from_path_refuses_a_device_without_reading_it() -> None:
    # /dev/zero never ends: reading it whole would run out of memory.
    with pytest.raises(ValueError, match=r"^'zero' is not a regular file$"):
        file_part_from_path("/dev/zero", media_type="application/octet-stream")


def test_file_part_from_path_refuses_a_file_over_max_bytes(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    with pytest.raises(ValueError, match=r"^'big\.txt' is larger than 10 bytes$"):
        file_part_from_path(path, max_bytes=10)
    assert file_part_from_path(path, max_bytes=11).file == File("text/plain", b"x" * 11, filename="big.txt")
    assert agentcore.files.MAX_FILE_BYTES == 50 * 1024 * 1024
