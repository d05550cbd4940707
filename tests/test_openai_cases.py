"""The faults of design.md ("Faults every adapter and the loop handle") in
Chat Completions streams, each through the adapter (the shell included) on
the in-memory transport, in the reads a server's writes would give, with the
exact expected values."""

# ruff: noqa: E501  (the stream listings keep one event per line)

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    Usage,
    run,
    user_message,
)
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport.memory import MemoryTransport, Reply
from tests.loop_helpers import nested


def listing(text: str) -> bytes:
    """A listing (one ``data:`` line per event) as an SSE body."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return "".join(line + "\n\n" for line in lines).encode("utf-8")


def stream(transport: MemoryTransport, body: bytes, *, piece: int = 0, **kwargs: Any) -> list[StreamPart]:
    return stream_reply(transport, Reply.of(body, piece=piece), **kwargs)


def stream_reply(transport: MemoryTransport, reply: Reply, **kwargs: Any) -> list[StreamPart]:
    transport.add(reply)
    model = OpenAIChatModel("test-model", transport=transport, **kwargs)
    return list(model.stream(Request(messages=(user_message("hi"),)), Context()))


def text_of(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


def calls_of(parts: list[StreamPart]) -> list[ToolCall]:
    return [p.tool_call for p in parts if p.tool_call is not None]


def finish_of(parts: list[StreamPart]) -> StreamPart:
    finishes = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    assert len(finishes) == 1
    assert parts[-1] is finishes[0]
    return finishes[0]


# --- fault 1: empty tool arguments --------------------------------------------

NO_ARGUMENTS = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":""}}]},"finish_reason":null}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""


def test_empty_arguments_mean_an_empty_object(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(NO_ARGUMENTS))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_1", "get_time", "{}")),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(0, 0, 0, 0)),
    ]


def test_whitespace_arguments_mean_an_empty_object(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(NO_ARGUMENTS.replace('"arguments":""', '"arguments":"  "')))
    assert calls_of(parts) == [ToolCall("call_1", "get_time", "{}")]


# --- fault 2: parallel calls by index -----------------------------------------

INTERLEAVED_CALLS = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"tz\":\"UTC\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""

WHOLE_CALLS = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""

WHOLE_CALLS_ONE_DELTA = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo\"}"}},{"index":1,"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""


def test_interleaved_fragments_are_grouped_by_index(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(INTERLEAVED_CALLS))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_a", "get_weather", '{"city":"Paris"}')),
        StreamPart.tool_call_event(ToolCall("call_b", "get_time", '{"tz":"UTC"}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]


@pytest.mark.parametrize("body", [WHOLE_CALLS, WHOLE_CALLS_ONE_DELTA], ids=["chunk-per-call", "one-delta"])
def test_whole_calls_stay_separate(transport: MemoryTransport, body: str) -> None:
    parts = stream(transport, listing(body))
    assert calls_of(parts) == [
        ToolCall("call_a", "get_weather", '{"city":"Tokyo"}'),
        ToolCall("call_b", "get_weather", '{"city":"Paris"}'),
    ]
    assert finish_of(parts).finish_reason is FinishReason.TOOL_CALLS


# --- fault 3: missing or zero index, missing id -------------------------------

NO_INDEX = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_9","type":"function","function":{"name":"sqrt","arguments":"{\"x\":"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"16}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""

INDEX_ZERO_WITHOUT_ID = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"search","arguments":""}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"q\":\"sse\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""


def test_a_missing_index_is_the_fragment_position(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(NO_INDEX))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_9", "sqrt", '{"x":16}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]


def test_index_zero_without_id_gets_a_synthesized_id(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(INDEX_ZERO_WITHOUT_ID))
    [call] = calls_of(parts)
    assert call.name == "search"
    assert call.input == '{"q":"sse"}'
    assert call.id.startswith("call_")
    assert len(call.id) > len("call_")
    assert finish_of(parts).finish_reason is FinishReason.TOOL_CALLS


class SearchTool:
    definition = ToolDefinition(name="search", description="Search.")

    def __init__(self) -> None:
        self.inputs: list[dict[str, Any]] = []

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        self.inputs.append(arguments)
        return "found it"


def test_a_synthesized_id_is_the_same_in_part_history_and_result(transport: MemoryTransport) -> None:
    answer = listing(
        r"""
        data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}
        data: [DONE]
        """
    )
    transport.add(Reply.of(listing(INDEX_ZERO_WITHOUT_ID)), Reply.of(answer))
    tool = SearchTool()
    model = OpenAIChatModel("test-model", transport=transport)
    result = run(LoopOptions(model=model, messages=[user_message("find sse")], tools=[tool])).result()
    assert result.text == "done"
    assert tool.inputs == [{"q": "sse"}]
    [call] = result.steps[0].tool_calls
    [tool_result] = result.steps[0].tool_results
    assert tool_result.tool_call_id == call.id
    sent = transport.sent[1].json()["messages"]
    assert sent[1]["role"] == "assistant"
    assert sent[1]["tool_calls"][0]["id"] == call.id
    assert sent[2] == {"role": "tool", "tool_call_id": call.id, "content": "found it"}
    assert [m.role for m in result.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]


# --- fault 4: repeated ids and finish chunks ----------------------------------

REPEATED_IDS = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"search","arguments":"{\"qu"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"arguments":"ery\":"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"arguments":"\"hello\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":50,"completion_tokens":9,"total_tokens":59}}
data: [DONE]
"""


def test_repeated_ids_and_a_second_finish_chunk(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(REPEATED_IDS))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_abc", "search", '{"query":"hello"}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(50, 9, 0, 0)),
    ]


# --- fault 5: the name after the arguments ------------------------------------

NAME_AFTER_ARGUMENTS = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_7","type":"function","function":{"arguments":"{\"command\": "}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"bash"}}]}}]}
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls -la\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""


def test_a_name_after_the_arguments(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(NAME_AFTER_ARGUMENTS))
    assert calls_of(parts) == [ToolCall("call_7", "bash", '{"command": "ls -la"}')]
    assert json.loads(calls_of(parts)[0].input) == {"command": "ls -la"}


def test_a_call_that_never_gets_a_name_is_still_emitted(transport: MemoryTransport) -> None:
    body = listing(
        NAME_AFTER_ARGUMENTS.replace(
            'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"bash"}}]}}]}',
            "",
        )
    )
    parts = stream(transport, body)
    assert calls_of(parts) == [ToolCall("call_7", "", '{"command": "ls -la"}')]
    assert finish_of(parts).finish_reason is FinishReason.TOOL_CALLS


# --- fault 6: text and calls in one step --------------------------------------

TEXT_AND_CALL = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me check."}}]}
data: {"choices":[{"index":0,"delta":{"content":" One moment.","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}
data: {"choices":[{"index":0,"delta":{"content":"","tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
data: [DONE]
"""


def test_text_and_a_tool_call_in_one_step(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(TEXT_AND_CALL))
    assert parts == [
        StreamPart.text_delta("Let me check."),
        StreamPart.text_delta(" One moment."),
        StreamPart.tool_call_event(ToolCall("call_1", "get_weather", '{"city":"Oslo"}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]
    assert text_of(parts) == "Let me check. One moment."


# --- fault 8: Chat Completions usage ------------------------------------------

USAGE_AFTER_FINISH = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: {"choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024}}}
data: [DONE]
"""

USAGE_IN_FINISH = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1200,"completion_tokens":30,"total_tokens":1230,"prompt_tokens_details":{"cached_tokens":1024}}}
data: [DONE]
"""

NO_USAGE = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: [DONE]
"""


def test_usage_chunk_after_finish_with_cached_tokens(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(USAGE_AFTER_FINISH))
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.step_finish(FinishReason.STOP, Usage(1200, 30, 1024, 0)),
    ]
    body = transport.sent[0].json()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("body", "usage"),
    [(USAGE_IN_FINISH, Usage(1200, 30, 1024, 0)), (NO_USAGE, Usage(0, 0, 0, 0))],
    ids=["usage-in-finish-chunk", "no-usage"],
)
def test_usage_in_the_finish_chunk_or_none_at_all(
    transport: MemoryTransport, body: str, usage: Usage
) -> None:
    parts = stream(transport, listing(body))
    assert parts == [StreamPart.text_delta("Hello"), StreamPart.step_finish(FinishReason.STOP, usage)]


# --- fault 10: odd finish reasons ---------------------------------------------

CALLS_ENDING_WITH_STOP = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lima\"}"}}]},"finish_reason":null}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: [DONE]
"""

EMPTY_FINISH_REASONS = r"""
data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":""}]}
data: {"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":""}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
data: [DONE]
"""


def test_tool_calls_ending_with_stop(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(CALLS_ENDING_WITH_STOP))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_1", "get_weather", '{"city":"Lima"}')),
        StreamPart.step_finish(FinishReason.TOOL_CALLS),
    ]


def test_empty_finish_reasons_do_not_end_the_step(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(EMPTY_FINISH_REASONS))
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.text_delta(" there"),
        StreamPart.step_finish(FinishReason.STOP),
    ]


def test_unknown_finish_reason_with_calls(transport: MemoryTransport) -> None:
    parts = stream(
        transport, listing(CALLS_ENDING_WITH_STOP.replace('"finish_reason":"stop"', '"finish_reason":"eos"'))
    )
    assert calls_of(parts) == [ToolCall("call_1", "get_weather", '{"city":"Lima"}')]
    assert finish_of(parts).finish_reason is FinishReason.TOOL_CALLS


def test_unknown_finish_reason_text_only(transport: MemoryTransport) -> None:
    parts = stream(
        transport, listing(EMPTY_FINISH_REASONS.replace('"finish_reason":"stop"', '"finish_reason":"eos"'))
    )
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.text_delta(" there"),
        StreamPart.step_finish(FinishReason.STOP),
    ]


# --- fault 11: output cap inside a call ---------------------------------------

LENGTH_INSIDE_A_CALL = r"""
data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\",\"text\":\"lorem ip"}}]}}]}
data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":64,"total_tokens":94}}
data: [DONE]
"""


def test_length_in_the_middle_of_a_tool_call(transport: MemoryTransport) -> None:
    parts = stream(transport, listing(LENGTH_INSIDE_A_CALL))
    assert parts == [
        StreamPart.tool_call_event(ToolCall("call_1", "write_file", '{"path":"a.txt","text":"lorem ip')),
        StreamPart.step_finish(FinishReason.LENGTH, Usage(30, 64, 0, 0)),
    ]


def test_the_loop_does_not_run_the_cut_call(transport: MemoryTransport) -> None:
    transport.add(Reply.of(listing(LENGTH_INSIDE_A_CALL)))

    class WriteFile:
        definition = ToolDefinition(name="write_file")
        runs = 0

        def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
            WriteFile.runs += 1
            return "written"

    model = OpenAIChatModel("test-model", transport=transport)
    result = run(LoopOptions(model=model, messages=[user_message("write")], tools=[WriteFile()])).result()
    assert result.finish_reason is FinishReason.LENGTH
    assert result.usage == Usage(30, 64, 0, 0)
    assert WriteFile.runs == 0
    assert len(transport.sent) == 1


def test_a_call_nested_too_deeply_gets_its_error_and_its_history_goes_on(transport: MemoryTransport) -> None:
    # arguments beyond Python's JSON decoder: the loop answers the call with an
    # error, and the history holding it goes back with the arguments as {}
    deep = nested(20_000)
    chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "search", "arguments": deep},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    answer = 'data: {"choices":[{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    transport.add(
        Reply.of(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()),
        Reply.of(answer.encode()),
        Reply.of(answer.encode()),
    )
    tool = SearchTool()
    model = OpenAIChatModel("test-model", transport=transport)
    result = run(LoopOptions(model=model, messages=[user_message("find")], tools=[tool])).result()
    assert result.text == "done"
    assert tool.inputs == []
    [error] = result.steps[0].tool_results
    assert error.is_error
    assert "nested too deeply" in error.content
    sent = transport.sent[1].json()["messages"][1:]
    assert sent == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": error.content},
    ]
    history = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in result.messages]
    assert history[1].tool_calls[0].input == deep
    again = run(LoopOptions(model=model, messages=[*history, user_message("again")], tools=[tool])).result()
    assert again.text == "done"
    assert transport.sent[2].json()["messages"][1:3] == sent


# --- fault 17: framing variants -----------------------------------------------

FRAMING_BASELINE = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
FRAMING_EXPECTED = [
    StreamPart.text_delta("Hello"),
    StreamPart.text_delta(" world"),
    StreamPart.step_finish(FinishReason.STOP),
]


def framing_variants() -> dict[str, tuple[bytes, int]]:
    base = FRAMING_BASELINE
    crlf = base.replace(b"\n", b"\r\n")
    first_end = crlf.index(b"}\r\n\r\n") + 2  # inside the CRLF that ends the first event
    multi_line = base.replace(
        b'data: {"choices":[{"index":0,"delta":{"role"',
        b'data: {"choices":[{"index":0,\ndata: "delta":{"role"',
    )
    noise = b": OPENROUTER PROCESSING\n\n" + base.replace(b"data: {", b"id: 7\ndata: {", 1).replace(
        b"data: [DONE]", b': ping\n\nretry: 3000\n\nevent: ping\ndata: {"type":"ping"}\n\ndata: [DONE]'
    )
    return {
        "lf": (base, 0),
        "crlf": (crlf, 0),
        "crlf-split": (crlf, first_end),
        "cr": (base.replace(b"\n", b"\r"), 0),
        "no-space": (base.replace(b"data: ", b"data:"), 0),
        "multi-line-data": (multi_line, 0),
        "noise": (noise, 0),
        "one-byte-reads": (base, 1),
        "bom": (b"\xef\xbb\xbf" + base, 0),
        "bom-split": (b"\xef\xbb\xbf" + base, 2),
    }


@pytest.mark.parametrize("name", list(framing_variants()))
def test_framing_variants_give_identical_parts(transport: MemoryTransport, name: str) -> None:
    body, split_at = framing_variants()[name]
    if name == "crlf-split":  # two writes: "...}\r" | "\n\r\n..."
        parts = stream_reply(transport, Reply(chunks=[body[:split_at], body[split_at:]]))
    else:
        parts = stream(transport, body, piece=split_at)
    assert parts == FRAMING_EXPECTED


# --- fault 18: UTF-8 split across reads ---------------------------------------

SPLIT_UTF8 = (
    'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"héllo 你好 👋"},"finish_reason":null}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
).encode()


def test_utf8_split_across_one_byte_reads(transport: MemoryTransport) -> None:
    parts = stream(transport, SPLIT_UTF8, piece=1)
    assert parts == [StreamPart.text_delta("héllo 你好 👋"), StreamPart.step_finish(FinishReason.STOP)]


def test_utf8_split_across_seven_byte_reads(transport: MemoryTransport) -> None:
    # A comment line of varying length shifts the 7-byte boundaries so that,
    # over the seven shifts, each of é (2 bytes), 你 (3) and 👋 (4) is split.
    split: set[str] = set()
    for shift in range(7):
        body = b":" + b"x" * shift + b"\n\n" + SPLIT_UTF8
        for ch in "é你👋":
            start, size = body.index(ch.encode()), len(ch.encode())
            if start // 7 != (start + size - 1) // 7:
                split.add(ch)
        parts = stream(transport, body, piece=7)
        assert parts == [StreamPart.text_delta("héllo 你好 👋"), StreamPart.step_finish(FinishReason.STOP)]
    assert split == {"é", "你", "👋"}


def test_tool_input_split_inside_a_character(transport: MemoryTransport) -> None:
    body = listing(
        r"""
        data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Zürich\"}"}}]}}]}
        data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
        data: [DONE]
        """
    )
    parts = stream(transport, body, piece=1)
    assert calls_of(parts) == [ToolCall("call_1", "weather", '{"city":"Zürich"}')]


def test_error_after_text_is_raised_after_the_text(transport: MemoryTransport) -> None:
    body = (
        listing(
            r"""
        data: {"choices":[{"index":0,"delta":{"content":"maybe"},"finish_reason":null}]}
        """
        )
        + b'event: error\ndata: {"error":{"message":"Tool choice is required","type":"invalid_request_error","code":"tool_use_failed","status_code":400}}\n\n'
    )
    transport.add(Reply.of(body))
    model = OpenAIChatModel("test-model", transport=transport)
    seen: list[StreamPart] = []
    with pytest.raises(ModelError) as info:
        seen.extend(model.stream(Request(messages=(user_message("hi"),)), Context()))
    assert seen == [StreamPart.text_delta("maybe")]
    assert info.value.error_class is ErrorClass.INVALID_REQUEST
    assert "Tool choice is required" in str(info.value)
