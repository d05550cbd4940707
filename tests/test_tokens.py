"""The token estimate and the context-window table (``agentcore.tokens``):
each case's expected count is the documented rule worked by hand (UTF-8 bytes
/ 3 rounded up, 4 per message and per system prompt, 350 once for tools,
1,600 per image, 3,000 per other document), and each window is the number
the table documents for that model family."""

from __future__ import annotations

import json

import pytest

from agentcore import Message, Reasoning, Request, Role, ToolCall, ToolDefinition, ToolResult, user_message
from agentcore.files import File
from agentcore.tokens import CONTEXT_WINDOWS, context_window, estimate_tokens
from agentcore.tools import ToolSet, tool
from agentcore.types import (
    cache_point,
    file_part,
    reasoning_part,
    text_part,
    tool_call_part,
    tool_result_part,
)

PNG = File(media_type="image/png", data=b"\x89PNG\r\n\x1a\n" + b"\0" * 5000)
CALL = ToolCall(id="call_1", name="read", input='{"path": "a.txt"}')


def assistant(*parts: object) -> Message:
    return Message(Role.ASSISTANT, parts)


ESTIMATES = [
    ("nothing", [], "", (), 0),
    ("three ASCII characters are one token", [user_message("abc")], "", (), 4 + 1),
    ("a fourth character starts a second token", [user_message("abcd")], "", (), 4 + 2),
    ("an empty message costs its framing", [Message(Role.USER, [])], "", (), 4),
    ("bytes, not characters: é is two", [user_message("é")], "", (), 4 + 1),
    ("a CJK character is three bytes, one token", [user_message("日本語")], "", (), 4 + 3),
    (
        "text is summed before rounding",
        [user_message("a"), user_message("b"), user_message("c")],
        "",
        (),
        12 + 1,
    ),
    (
        "text parts of one message add up",
        [Message(Role.USER, [text_part("ab"), text_part("cd")])],
        "",
        (),
        4 + 2,
    ),
    ("a system prompt is framed like a message", [], "You are", (), 4 + 3),
    (
        "a tool call: its id, name and argument text",
        [assistant(tool_call_part(CALL))],
        "",
        (),
        4 + -(-(6 + 4 + 17) // 3),
    ),
    (
        "a tool result: its call id, name and content",
        [Message(Role.TOOL, [tool_result_part(ToolResult("call_1", "read", "hello world"))])],
        "",
        (),
        4 + -(-(6 + 4 + 11) // 3),
    ),
    (
        "an image in a tool result costs an image",
        [Message(Role.TOOL, [tool_result_part(ToolResult("c", "shot", "", files=[PNG]))])],
        "",
        (),
        4 + 1600 + 2,
    ),
    (
        "an image costs the fixed image tokens",
        [user_message("", file_part(PNG.data, media_type="image/png"))],
        "",
        (),
        4 + 1600,
    ),
    (
        "an image by URL costs the same",
        [user_message("", file_part(url="https://example.com/a.png", media_type="image/png"))],
        "",
        (),
        4 + 1600,
    ),
    (
        "a PDF costs the fixed document tokens",
        [user_message("", file_part(b"%PDF-1.7" + b"x" * 90_000, media_type="application/pdf"))],
        "",
        (),
        4 + 3000,
    ),
    (
        "plain text given by its bytes counts as text",
        [user_message("", file_part(b"0123456789", media_type="text/plain"))],
        "",
        (),
        4 + 4,
    ),
    (
        "plain text by URL cannot be read: a document",
        [user_message("", file_part(url="https://example.com/a.txt", media_type="text/plain"))],
        "",
        (),
        4 + 3000,
    ),
    (
        "reasoning counts its visible text",
        [assistant(reasoning_part(Reasoning(text="hmm", signature="s" * 300)))],
        "",
        (),
        4 + 1,
    ),
    (
        "reasoning without text counts its data",
        [assistant(reasoning_part(Reasoning(data="Z" * 30)))],
        "",
        (),
        4 + 10,
    ),
    ("a cache point counts nothing", [user_message("abc", cache_point())], "", (), 4 + 1),
    ("a lone surrogate is counted, not refused", [user_message("\ud800")], "", (), 4 + 1),
    (
        "tools: the preamble once, then name, description and schema",
        [],
        "",
        (ToolDefinition("t", "d", '{"type":"object"}'), ToolDefinition("u")),
        350 + -(-(1 + 1 + 17 + 1 + 0 + 33) // 3),
    ),
]


@pytest.mark.parametrize(
    ("messages", "system", "tools", "expected"),
    [case[1:] for case in ESTIMATES],
    ids=[case[0] for case in ESTIMATES],
)
def test_the_estimate_follows_its_documented_rule(
    messages: list[Message], system: str, tools: tuple[ToolDefinition, ...], expected: int
) -> None:
    assert estimate_tokens(messages, system=system, tools=tools) == expected


def test_the_estimate_errs_high_against_both_providers_rules_of_thumb() -> None:
    prose = "The quick brown fox jumps over the lazy dog, and then it rests for a while. " * 40
    estimate = estimate_tokens([user_message(prose)])
    assert estimate > len(prose) / 3.5 > len(prose) / 4  # Anthropic's and OpenAI's rules of thumb


def test_a_whole_history_is_the_sum_of_its_parts() -> None:
    history = [user_message("x" * 300)]
    for index in range(50):
        call = ToolCall(id=f"call_{index:04d}", name="read", input=json.dumps({"n": index}))
        history.append(assistant(text_part("y" * 30), tool_call_part(call)))
        history.append(Message(Role.TOOL, [tool_result_part(ToolResult(call.id, call.name, "z" * 600))]))
    text = (
        300
        + 50 * (30 + 9 + 4 + len(json.dumps({"n": 0})) + 9 + 4 + 600)
        + sum(len(str(index)) - 1 for index in range(50))
    )
    assert estimate_tokens(history) == 4 * 101 + -(-text // 3)


def test_tools_may_be_given_as_definitions_tools_or_a_toolset() -> None:
    def lookup(city: str) -> str:
        """Look up a city."""
        return city

    lookup_tool = tool(lookup)
    definition = lookup_tool.definition
    expected = estimate_tokens([user_message("hi")], tools=[definition])
    assert expected > estimate_tokens([user_message("hi")]) + 350
    assert estimate_tokens([user_message("hi")], tools=[lookup_tool]) == expected
    assert estimate_tokens([user_message("hi")], tools=ToolSet([lookup_tool])) == expected
    assert Request(tools=ToolSet([lookup_tool])).tools == (definition,)


@pytest.mark.parametrize("tools", ["lookup", ["lookup"], [{"name": "lookup"}]])
def test_tools_given_as_names_are_a_type_error_saying_what_was_given(tools: object) -> None:
    with pytest.raises(
        TypeError, match=r"^tools: expected ToolDefinition items, tools or a ToolSet, got a (str|dict)"
    ):
        estimate_tokens([user_message("hi")], tools=tools)  # type: ignore[arg-type]  # what a caller might pass


WINDOWS = [
    ("claude-sonnet-4-5-20250929", 200_000),
    ("claude-sonnet-4-5", 200_000),
    ("claude-haiku-4-5@20251001", 200_000),
    ("claude-opus-4-1-20250805", 200_000),
    ("claude-opus-4-20250514", 200_000),
    ("claude-sonnet-4-0", 200_000),
    ("claude-opus-4-6", 1_000_000),
    ("claude-sonnet-4-6", 1_000_000),
    ("claude-opus-5", 1_000_000),
    ("claude-opus-5-5", 1_000_000),
    ("claude-3-7-sonnet-20250219", 200_000),
    ("claude-3-haiku-20240307", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4o-mini-2024-07-18", 128_000),
    ("gpt-4", 8_192),
    ("gpt-4-0613", 8_192),
    ("gpt-4-turbo-2024-04-09", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.1-nano", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-5-mini", 400_000),
    ("gpt-5-chat-latest", 128_000),
    ("gpt-5.1-chat-latest", 128_000),
    ("gpt-5.4", 1_050_000),
    ("gpt-5.4-mini", 400_000),
    ("o1", 200_000),
    ("o1-mini-2024-09-12", 128_000),
    ("o3-mini", 200_000),
    ("o4-mini", 200_000),
    # No row: None, never a guess.
    ("claude-opus-4-10", None),  # claude-opus-4-1 is not a prefix of it at a boundary
    ("claude-opus-4-7", None),
    ("gpt-4o1", None),
    ("gpt-6", None),
    ("o", None),
    ("GPT-4o", None),
    ("my-local-model", None),
    ("", None),
]


@pytest.mark.parametrize(("model_id", "expected"), WINDOWS)
def test_the_window_table_finds_the_longest_prefix_at_a_boundary(model_id: str, expected: int | None) -> None:
    assert context_window(model_id) == expected


def test_every_row_of_the_table_is_reachable_and_listed_once() -> None:
    prefixes = [prefix for prefix, _ in CONTEXT_WINDOWS]
    assert len(prefixes) == len(set(prefixes))
    assert {prefix: context_window(prefix) for prefix in prefixes} == dict(CONTEXT_WINDOWS)
