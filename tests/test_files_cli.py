"""Files at the edges: ``agentcore --file``, the offline ``TestModel``
acknowledging files, the SSE events of a tool result with files, the
command's one-line tool results, and the PNG of the command's
``color_swatch`` tool carried to each adapter's next request."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Context,
    FinishReason,
    LoopOptions,
    StreamPart,
    ToolResult,
    cli,
    file_part,
    generate,
    tool,
    user_message,
)
from agentcore.files import File
from agentcore.integrations.cli_output import result_text
from agentcore.integrations.demo_tools import COLORS, color_swatch, swatch_png
from agentcore.integrations.web import INLINE_FILE_LIMIT, part_to_dict, sse_event
from agentcore.testing import ScriptedModel, TestModel
from tests import test_anthropic_mapping as anthropic_events
from tests.files_api import anthropic_problems, chat_problems, responses_problems
from tests.test_files_loop import (
    ANSWER,
    API,
    anthropic_answer,
    anthropic_step,
    b64,
    chat_answer,
    chat_step,
    responses_answer,
    responses_step,
)
from tests.test_openai_reasoning_loop import delta
from tests.test_openai_reasoning_loop import sse as chat_sse
from tests.test_responses_loop import stream as responses_stream

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
DOT = swatch_png((10, 20, 30), 2)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "dot.png").write_bytes(DOT)
    (tmp_path / "notes.txt").write_text("three words here", encoding="utf-8")
    return tmp_path / "dot.png", tmp_path / "notes.txt"


def test_the_command_attaches_files_and_the_offline_model_acknowledges_them(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    image, notes = files
    code = cli.main(["--file", str(image), "--file", str(notes), "What", "are", "these?"])
    out, _err = capsys.readouterr()
    assert code == 0
    assert out.endswith(f" (You attached 2 files: image/png, {len(DOT)} bytes; text/plain, 16 bytes.)\n")


def test_the_command_sends_the_files_to_the_model(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    image, _notes = files
    model = ScriptedModel([[StreamPart.text_delta("ok"), StreamPart.step_finish(FinishReason.STOP)]])
    assert cli.main(["--file", str(image), "Describe"], model=model) == 0
    (message,) = model.requests[0].messages
    assert message.text == "Describe"
    assert message.files == [File("image/png", DOT, filename="dot.png")]
    assert capsys.readouterr().out == "ok\n"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("missing.png", "No such file"),
        ("missing", "No such file"),
        ("data.unknownext", "cannot tell the media type"),
        ("folder.png", "'folder.png' is not a regular file"),
        ("pipe.txt", "'pipe.txt' is not a regular file"),
    ],
)
def test_a_file_the_command_cannot_attach_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, words: str
) -> None:
    if name == "folder.png":
        (tmp_path / name).mkdir()
    elif name == "pipe.txt":
        os.mkfifo(tmp_path / name)  # opening it would wait for a writer forever
    elif not name.startswith("missing"):
        (tmp_path / name).write_bytes(b"?")
    code = cli.main(["--file", str(tmp_path / name), "hi"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"agentcore: error: cannot attach {tmp_path / name}: " in err
    assert words in err


def test_file_type_gives_the_media_type_of_the_file_before_it(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    image, _notes = files
    report = tmp_path / "report.bin"  # an extension that tells no type
    report.write_bytes(b"%PDF-1.4 tiny")
    model = ScriptedModel([[StreamPart.text_delta("ok"), StreamPart.step_finish(FinishReason.STOP)]])
    argv = ["--file", str(image), "--file", str(report), "--file-type", "application/pdf", "Read"]
    assert cli.main(argv, model=model) == 0
    (message,) = model.requests[0].messages
    assert message.files == [
        File("image/png", DOT, filename="dot.png"),
        File("application/pdf", b"%PDF-1.4 tiny", filename="report.bin"),
    ]
    assert capsys.readouterr().out == "ok\n"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--file-type", "text/plain", "--file", "{notes}", "hi"], "--file-type must follow --file"),
        (
            ["--file", "{notes}", "--file-type", "text/plain", "--file-type", "text/csv", "hi"],
            "--file-type given twice for --file {notes}",
        ),
        (
            ["--file", "{notes}", "--file-type", "plain", "hi"],
            "agentcore: error: cannot attach {notes}: media_type must be a MIME type",
        ),
    ],
)
def test_a_file_type_the_command_cannot_use_is_a_usage_error(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], argv: list[str], words: str
) -> None:
    _image, notes = files
    model = ScriptedModel([])
    assert cli.main([a.format(notes=notes) for a in argv], model=model) == 2
    assert words.format(notes=notes) in capsys.readouterr().err
    assert model.requests == []


def test_test_model_acknowledges_a_tools_files() -> None:
    @tool
    def draw(shape: str) -> list[object]:
        """Draw a shape.

        Args:
            shape: which shape.
        """
        return ["drawn", file_part(DOT, media_type="image/png")]

    result = generate(LoopOptions(model=TestModel(), messages=[user_message("Draw")], tools=[draw]))
    assert (
        result.text
        == f"Here is what the tools said. draw returned: drawn with 1 file: image/png, {len(DOT)} bytes"
    )


def test_test_model_acknowledges_files_by_url() -> None:
    message = user_message("Look", file_part(url="https://example.com/a.pdf", media_type="application/pdf"))
    result = generate(LoopOptions(model=TestModel(), messages=[message]))
    assert result.text == "(TestModel, offline) You said: Look (You attached 1 file: application/pdf by URL.)"


def result_part(*files: File) -> StreamPart:
    return StreamPart.tool_result_event(ToolResult("c1", "draw", "drawn", files=files))


def test_sse_events_describe_a_tools_files_and_inline_only_small_ones() -> None:
    small = File("image/png", DOT, filename="dot.png")
    big = File("image/png", b"\x00" * (INLINE_FILE_LIMIT + 1))
    linked = File("image/jpeg", url="https://example.com/cat.jpg")
    data = part_to_dict(result_part(small, big, linked))
    assert data == {
        "kind": "tool-result",
        "tool_result": {
            "tool_call_id": "c1",
            "name": "draw",
            "content": "drawn",
            "is_error": False,
            "files": [
                {
                    "media_type": "image/png",
                    "size": len(DOT),
                    "filename": "dot.png",
                    "data_url": "data:image/png;base64," + base64.b64encode(DOT).decode(),
                },
                {"media_type": "image/png", "size": INLINE_FILE_LIMIT + 1},
                {"media_type": "image/jpeg", "size": 0, "url": "https://example.com/cat.jpg"},
            ],
        },
    }
    assert len(sse_event(part_to_dict(result_part(big)))) < 400


def test_a_tool_result_without_files_keeps_its_event() -> None:
    assert part_to_dict(result_part())["tool_result"] == {
        "tool_call_id": "c1",
        "name": "draw",
        "content": "drawn",
        "is_error": False,
    }


def test_the_commands_result_line_lists_the_files() -> None:
    result = ToolResult("c1", "draw", "drawn", files=[File("image/png", DOT)])
    assert result_text(result) == f"← drawn [image/png, {len(DOT)} bytes]"
    linked = ToolResult("c1", "draw", "", files=[File("image/gif", url="https://x.test/a.gif")])
    assert result_text(linked) == "← [image/gif: https://x.test/a.gif]"


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """The chunks of a PNG, each CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body)
        chunks.append((kind, body))
        at += 12 + length
    return chunks


def test_swatch_png_is_a_valid_png_of_one_colour() -> None:
    chunks = png_chunks(swatch_png((1, 2, 3), 5))
    assert [kind for kind, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">IIBBBBB", chunks[0][1]) == (5, 5, 8, 2, 0, 0, 0)
    assert zlib.decompress(chunks[1][1]) == (b"\x00" + bytes((1, 2, 3)) * 5) * 5


def test_the_color_swatch_demo_tool_returns_text_and_a_png() -> None:
    assert color_swatch().execute({"color": "blue"}, Context()) == [
        "a 16x16 blue swatch",
        file_part(swatch_png(COLORS["blue"]), media_type="image/png", filename="blue.png"),
    ]
    with pytest.raises(ValueError, match="unknown colour 'mauve'"):
        color_swatch().execute({"color": "mauve"}, Context())


# --- the command's image, through each adapter ---------------------------------------

GREEN = swatch_png(COLORS["green"])
GREEN_URL = "data:image/png;base64," + base64.b64encode(GREEN).decode()
SWATCH_ARGUMENTS = '{"color": "green"}'


def anthropic_swatch(body: dict[str, Any], step: int) -> list[str]:
    if step == 1:
        return []
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(GREEN)}}
    content = body["messages"][-1]["content"][0].get("content")
    return [] if content == [{"type": "text", "text": "a 16x16 green swatch"}, image] else [repr(content)]


def responses_swatch(body: dict[str, Any], step: int) -> list[str]:
    if step == 1:
        return []
    output = body["input"][-1]["output"]
    image = {"type": "input_image", "image_url": GREEN_URL, "detail": "auto"}
    return [] if output == [{"type": "input_text", "text": "a 16x16 green swatch"}, image] else [repr(output)]


def chat_swatch(body: dict[str, Any], step: int) -> list[str]:
    if step == 1:
        return []
    files = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Files returned by the tool call 'call_01' (color_swatch):"},
            {"type": "image_url", "image_url": {"url": GREEN_URL}},
        ],
    }
    tool = {"role": "tool", "tool_call_id": "call_01", "content": "a 16x16 green swatch"}
    after = body["messages"][-2:]
    return [] if after == [tool, files] else [repr(after)]


def anthropic_call(step: int) -> bytes:
    if step == 2:
        return anthropic_answer(2)
    e = anthropic_events
    return e.sse(
        e.message_start(input_tokens=90, output_tokens=1),
        e.tool_start(0, "toolu_01", "color_swatch"),
        e.json_delta(0, SWATCH_ARGUMENTS),
        e.block_stop(0),
        e.message_delta("tool_use", output_tokens=20),
        e.MESSAGE_STOP,
    )


def responses_call(step: int) -> bytes:
    if step == 2:
        return responses_answer(2)
    call = {
        "id": "fc_01",
        "type": "function_call",
        "status": "completed",
        "arguments": SWATCH_ARGUMENTS,
        "call_id": "call_01",
        "name": "color_swatch",
    }
    return responses_stream("resp_1", [call], "")


def chat_call(step: int) -> bytes:
    if step == 2:
        return chat_answer(2)
    call = {
        "index": 0,
        "id": "call_01",
        "type": "function",
        "function": {"name": "color_swatch", "arguments": SWATCH_ARGUMENTS},
    }
    return chat_sse(delta(tool_calls=[call]), delta("tool_calls"))


SWATCH_APIS: dict[str, tuple[Callable[[], API], str]] = {
    "anthropic": (lambda: API(anthropic_problems, anthropic_swatch, anthropic_call, anthropic_step), ""),
    "openai-responses": (
        lambda: API(responses_problems, responses_swatch, responses_call, responses_step),
        "/v1",
    ),
    "openai": (lambda: API(chat_problems, chat_swatch, chat_call, chat_step), "/v1"),
}


@pytest.mark.parametrize("provider", sorted(SWATCH_APIS))
def test_the_commands_swatch_reaches_the_next_request(
    provider: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Step 1 calls ``color_swatch``; the server checks that step 2's request
    carries the PNG in the tool's result as the API documents it."""
    make_api, path = SWATCH_APIS[provider]
    api = make_api()
    try:
        args = ["--model", f"{provider}:test-model", "--base-url", api.server.url + path, "Paint it green"]
        code = cli.main(args)
    finally:
        api.server.close()
    out, err = capsys.readouterr()
    assert code == 0, err
    assert api.errors == []
    assert api.server.hits == 2
    assert out == ANSWER + "\n"
    shown = [line for line in err.splitlines() if not line.startswith("cache: ")]  # a step's cache line
    assert shown[:2] == [
        f"→ color_swatch({SWATCH_ARGUMENTS})",
        f"← a 16x16 green swatch [image/png, {len(GREEN)} bytes]",
    ]
