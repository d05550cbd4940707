"""Tools in the loop: loop rule 6 of design.md (failures become error results) and parallel_tools
(agentcore/engine/loop.py), and text that is not valid Unicode kept out of the history. The tests
drive ``run()`` with a ScriptedModel, or with OpenAIChatModel on the in-memory transport where
the bytes a server gets are the point."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from agentcore import (
    Message,
    Role,
    RunError,
    ToolCall,
    ToolResult,
    Usage,
    file_part,
    run,
    text_part,
    tool_result_part,
    user_message,
)
from agentcore.context import Context
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import ScriptedModel
from agentcore.transport.memory import MemoryTransport, Reply
from tests.loop_helpers import (
    NOT_UTF8,
    STOP,
    FuncTool,
    assert_valid_history,
    call,
    collect,
    options,
    summary,
    text_step,
    tool_step,
)


def tool_message(*results: ToolResult) -> Message:
    return Message(role=Role.TOOL, content=[tool_result_part(r) for r in results])


# --- loop rule 6: tool failures become error results -------------------------------------------


def test_rule6_a_failing_tool_becomes_an_error_result_and_the_run_goes_on() -> None:
    def flaky(_arguments: dict[str, Any], _ctx: Context) -> str:
        raise RuntimeError("disk full")

    model = ScriptedModel([tool_step(call("call_1", "flaky"), call("call_2", "ok")), text_step("Recovered")])
    reader = run(options(model, tools=[FuncTool("flaky", flaky), FuncTool("ok", lambda _i, _c: "fine")]))
    parts = collect(reader)
    results = [p.tool_result for p in parts if p.tool_result is not None]
    assert len(results) == 2
    failed, fine = results
    assert (failed.tool_call_id, failed.name, failed.is_error) == ("call_1", "flaky", True)
    assert "disk full" in failed.content
    assert fine == ToolResult("call_2", "ok", "fine", False)
    assert model.requests[1].messages[-1] == tool_message(failed, fine)
    result = reader.result()
    assert (result.finish_reason, result.text) == (STOP, "Recovered")


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no message for you")


def test_rule6_a_tool_exception_whose_str_raises_is_still_an_error_result() -> None:
    def broken(_arguments: dict[str, Any], _ctx: Context) -> str:
        raise Unprintable

    model = ScriptedModel([tool_step(call("c1", "broken")), text_step("Recovered")])
    reader = run(options(model, tools=[FuncTool("broken", broken)]))
    parts = collect(reader)
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert result == ToolResult(
        "c1", "broken", "Error: Unprintable: (the exception's message could not be read)", True
    )
    assert reader.result().text == "Recovered"


def test_rule6_an_unknown_tool_lists_the_available_tools_and_the_run_goes_on() -> None:
    model = ScriptedModel(
        [
            tool_step(call("call_1", "get_page_content", '{"url":"x"}')),
            tool_step(call("call_2", "search", '{"q":"x"}')),
            text_step("done"),
        ]
    )
    search = FuncTool("search", lambda _i, _c: "results")
    other = FuncTool("fetch")
    reader = run(options(model, tools=[search, other]))
    parts = collect(reader)
    results = [p.tool_result for p in parts if p.tool_result is not None]
    assert [(r.tool_call_id, r.name, r.is_error) for r in results] == [
        ("call_1", "get_page_content", True),
        ("call_2", "search", False),
    ]
    assert "unknown tool" in results[0].content
    assert "get_page_content" in results[0].content
    assert "search" in results[0].content
    assert "fetch" in results[0].content
    assert search.calls == [{"q": "x"}]
    assert summary(parts)[-1][:2] == ("finish", "stop")
    assert len(model.requests) == 3


@pytest.mark.parametrize("arguments", ['{"q":', "{'q': 1}", "not json", '{"q":"x"} trailing'])
def test_rule6_malformed_json_arguments_are_never_executed(arguments: str) -> None:
    model = ScriptedModel([tool_step(call("c1", "search", arguments)), text_step("ok")])
    search = FuncTool("search")
    parts = collect(run(options(model, tools=[search])))
    assert search.calls == []
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert (result.tool_call_id, result.name, result.is_error) == ("c1", "search", True)
    assert "not valid JSON" in result.content
    assert "not run" in result.content
    # The call itself is still in the history, answered by the error.
    assert model.requests[1].messages[1].tool_calls == [ToolCall("c1", "search", arguments)]
    assert summary(parts)[-1][:2] == ("finish", "stop")


def test_rule6_arguments_nested_too_deeply_are_an_error_result_not_the_end_of_the_run() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    model = ScriptedModel([tool_step(call("c1", "search", deep)), text_step("ok")])
    search = FuncTool("search")
    reader = run(options(model, tools=[search]))
    parts = collect(reader)
    assert search.calls == []
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert (result.tool_call_id, result.is_error) == ("c1", True)
    assert result.content == "Error: the arguments are nested too deeply to decode; the tool was not run."
    assert reader.result().text == "ok"


@pytest.mark.parametrize(
    ("arguments", "type_name"), [("[1, 2]", "list"), ('"s"', "str"), ("3", "int"), ("null", "NoneType")]
)
def test_rule6_arguments_that_are_not_an_object_are_never_executed(arguments: str, type_name: str) -> None:
    model = ScriptedModel([tool_step(call("c1", "search", arguments)), text_step("ok")])
    search = FuncTool("search")
    parts = collect(run(options(model, tools=[search])))
    assert search.calls == []
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert result.is_error
    assert "JSON object" in result.content
    assert type_name in result.content


@pytest.mark.parametrize("arguments", ["", "  ", "\n\t "])
def test_rule6_empty_or_whitespace_arguments_mean_an_empty_object(arguments: str) -> None:
    model = ScriptedModel([tool_step(call("c1", "get_time", arguments)), text_step("ok")])
    get_time = FuncTool("get_time", lambda _i, _c: "12:00")
    parts = collect(run(options(model, tools=[get_time])))
    assert get_time.calls == [{}]
    assert [s for s in summary(parts) if s[0] == "tool-result"] == [
        ("tool-result", "c1", "get_time", "12:00", False)
    ]


@pytest.mark.parametrize(("value", "type_name"), [(None, "NoneType"), (42, "int"), (b"bytes", "bytes")])
def test_rule6_a_tool_returning_a_non_str_is_an_error_result(value: object, type_name: str) -> None:
    model = ScriptedModel([tool_step(call("c1", "odd")), text_step("ok")])
    parts = collect(run(options(model, tools=[FuncTool("odd", lambda _i, _c: value)])))
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert result.is_error
    assert type_name in result.content
    assert "not str" in result.content
    assert summary(parts)[-1][:2] == ("finish", "stop")


class Abort(BaseException):
    """A BaseException that is not an Exception, like KeyboardInterrupt."""


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit, Abort])
def test_rule6_a_base_exception_from_a_tool_ends_the_run_and_result_reraises_it(
    exc_type: type[BaseException], parallel: bool
) -> None:
    raised = exc_type("stop now")

    def bad(_arguments: dict[str, Any], _ctx: Context) -> str:
        raise raised

    model = ScriptedModel(
        [tool_step(call("c1", "ok"), call("c2", "bad"), usage=Usage(3, 1)), text_step("never")]
    )
    reader = run(options(model, tools=[FuncTool("ok"), FuncTool("bad", bad)], parallel_tools=parallel))
    parts = collect(reader)
    assert summary(parts)[-1] == ("error", "error", Usage(3, 1), raised)
    assert len(model.requests) == 1
    with pytest.raises(exc_type) as info:
        reader.result()
    assert info.value is raised
    assert_valid_history(reader.messages)


# --- parallel tools ----------------------------------------------------------------------------


def test_parallel_tools_overlap_and_results_keep_call_order() -> None:
    barrier = threading.Barrier(3, timeout=5)
    second_done = threading.Event()
    order: list[str] = []

    def slow_first(_arguments: dict[str, Any], _ctx: Context) -> str:
        barrier.wait()  # all three calls are running at once, or this raises
        assert second_done.wait(5)
        order.append("first")
        return "first result"

    def quick(arguments: dict[str, Any], _ctx: Context) -> str:
        barrier.wait()
        order.append(f"quick {arguments['n']}")
        if arguments["n"] == 2:
            second_done.set()
        return f"quick {arguments['n']}"

    model = ScriptedModel(
        [
            tool_step(call("c1", "slow"), call("c2", "quick", '{"n":2}'), call("c3", "quick", '{"n":3}')),
            text_step("done"),
        ]
    )
    parts = collect(
        run(
            options(
                model, tools=[FuncTool("slow", slow_first), FuncTool("quick", quick)], parallel_tools=True
            )
        )
    )
    assert order.index("first") > order.index("quick 2")  # the first call really finished last
    assert [s for s in summary(parts) if s[0] == "tool-result"] == [
        ("tool-result", "c1", "slow", "first result", False),
        ("tool-result", "c2", "quick", "quick 2", False),
        ("tool-result", "c3", "quick", "quick 3", False),
    ]
    assert model.requests[1].messages[-1] == tool_message(
        ToolResult("c1", "slow", "first result"),
        ToolResult("c2", "quick", "quick 2"),
        ToolResult("c3", "quick", "quick 3"),
    )


def test_sequential_tools_do_not_overlap() -> None:
    barrier = threading.Barrier(2, timeout=0.2)

    def meet(_arguments: dict[str, Any], _ctx: Context) -> str:
        barrier.wait()
        return "met"

    model = ScriptedModel([tool_step(call("c1", "meet"), call("c2", "meet")), text_step("done")])
    parts = collect(run(options(model, tools=[FuncTool("meet", meet)])))
    results = [p.tool_result for p in parts if p.tool_result is not None]
    assert [r.is_error for r in results] == [True, True]
    assert all("BrokenBarrierError" in r.content for r in results)


# --- text that cannot be encoded as UTF-8 never enters the history ---------------------------


def test_a_lone_surrogate_in_a_tool_output_becomes_a_replacement_character() -> None:
    # os.listdir() gives a file name whose bytes are not UTF-8 as lone surrogates.
    name = b"report-\xff.txt".decode("utf-8", "surrogateescape")
    model = ScriptedModel([tool_step(call("c1", "ls")), text_step("Listed")])
    reader = run(options(model, tools=[FuncTool("ls", lambda _i, _c: name)]))
    parts = collect(reader)
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert result.content == "report-\ufffd.txt"
    result_sent = model.requests[1].messages[-1].tool_results[0]
    assert result_sent.content == "report-\ufffd.txt"
    assert (
        reader.result().messages[-2].tool_results[0].content.encode("utf-8") == "report-\ufffd.txt".encode()
    )


def test_a_lone_surrogate_in_a_tool_error_becomes_a_replacement_character() -> None:
    def missing(_arguments: dict[str, Any], _ctx: Context) -> str:
        raise FileNotFoundError(b"gone-\xfe".decode("utf-8", "surrogateescape"))

    model = ScriptedModel([tool_step(call("c1", "open")), text_step("ok")])
    parts = collect(run(options(model, tools=[FuncTool("open", missing)])))
    (result,) = [p.tool_result for p in parts if p.tool_result is not None]
    assert result.content == "Error: FileNotFoundError: gone-\ufffd"


def test_an_emoji_split_as_a_surrogate_pair_across_two_deltas_is_joined() -> None:
    # Some servers split a character outside the BMP between two JSON strings
    # ("\ud83d" then "\ude00"); each alone cannot be encoded as UTF-8.
    model = ScriptedModel([text_step("Hi \ud83d", "\ude00!", "\ud83d")])
    reader = run(options(model))
    parts = collect(reader)
    deltas = [p.text for p in parts if p.kind.value == "text-delta"]
    assert deltas == ["Hi ", "\U0001f600!", "\ufffd"]  # the last one's pair never came
    assert all(d.encode("utf-8") for d in deltas)
    assert reader.result().text == "Hi \U0001f600!\ufffd"
    assert reader.result().messages[-1].text == "Hi \U0001f600!\ufffd"


def test_a_lone_surrogate_in_tool_call_arguments_is_replaced() -> None:
    model = ScriptedModel([tool_step(call("c1", "search", '{"q": "caf\udce9"}')), text_step("ok")])
    search = FuncTool("search")
    reader = run(options(model, tools=[search]))
    collect(reader)
    assert search.calls == [{"q": "caf\ufffd"}]
    assert reader.result().messages[1].tool_calls[0].input == '{"q": "caf\ufffd"}'


CHAT_CALL = (
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
    b'"function":{"name":"ls","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
)
CHAT_ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


@pytest.mark.parametrize(
    ("messages", "system", "where"),
    [
        (
            [
                user_message("hi"),
                Message(role=Role.ASSISTANT, content=[text_part("hello")]),
                user_message(NOT_UTF8),
            ],
            "",
            "messages[2]",
        ),
        ([user_message("hi")], f"You sell {NOT_UTF8}.", "the system prompt"),
        (
            [user_message(f"about {NOT_UTF8}", file_part(b"x", media_type="text/plain", filename=NOT_UTF8))],
            NOT_UTF8,
            "messages[0], the system prompt",
        ),
    ],
    ids=["prompt", "system prompt", "both, and a file name"],
)
def test_a_lone_surrogate_from_the_caller_is_replaced_and_logged(
    transport: MemoryTransport,
    caplog: pytest.LogCaptureFixture,
    messages: list[Message],
    system: str,
    where: str,
) -> None:
    # the same rule as for tool output: text UTF-8 cannot encode never enters
    # the history; the caller's is replaced when the run starts, with a warning
    transport.add(Reply.of(CHAT_ANSWER))
    # A model genai-prices lists at api.openai.com: an unlisted one is warned of too.
    model = OpenAIChatModel("gpt-4o-mini", transport=transport)
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        result = run(options(model, messages=messages, system=system)).result()
    assert result.text == "ok"
    body = transport.sent[0].json()
    sent = json.dumps(body, ensure_ascii=False)
    assert "caf\ufffd" in sent
    assert "\udce9" not in sent
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"agentcore: text that is not valid Unicode (UTF-16 surrogates) in {where} was made valid: "
        "lone surrogates replaced by U+FFFD, pairs joined"
    ]
    assert "\udce9" not in json.dumps([m.to_dict() for m in result.messages], ensure_ascii=False)
    assert NOT_UTF8 in messages[-1].text or NOT_UTF8 in system  # the caller's values are left as they were


def test_a_lone_surrogate_in_a_tool_output_reaches_the_server_replaced(transport: MemoryTransport) -> None:
    transport.add(Reply.of(CHAT_CALL), Reply.of(CHAT_ANSWER))
    model = OpenAIChatModel("m", transport=transport)
    result = run(options(model, tools=[FuncTool("ls", lambda _i, _c: f"{NOT_UTF8}.txt")])).result()
    assert result.text == "ok"
    assert transport.sent[1].json()["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "caf\ufffd.txt",
    }


def test_two_calls_with_one_id_end_the_run_before_either_runs() -> None:
    ran: list[dict[str, Any]] = []

    def pay(arguments: dict[str, Any], _ctx: Context) -> str:
        ran.append(arguments)
        return "paid"

    model = ScriptedModel(
        [
            tool_step(call("c1", "pay", '{"amount": 500}'), call("c1", "pay", '{"amount": 600}')),
            text_step("ok"),
        ]
    )
    reader = run(options(model, tools=[FuncTool("pay", pay)]))
    collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    assert str(caught.value.err) == (
        "upstream error: the model sent two tool calls with the id 'c1' in one step; "
        "each call needs its own id"
    )
    assert ran == []
    assert len(model.requests) == 1
