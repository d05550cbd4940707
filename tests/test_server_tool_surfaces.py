"""Server tools, citations and tool input as it streams at the loop's
surfaces: the test doubles (``agentcore.testing``), the web events
(``agentcore.integrations.web``) and the command (``agentcore.cli``,
``agentcore.integrations.cli_output``)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import (
    Citation,
    Context,
    FinishReason,
    LoopOptions,
    ProviderItem,
    Request,
    StreamPart,
    ToolCall,
    ToolDefinition,
    Usage,
    cli,
    run,
    user_message,
)
from agentcore.integrations.cli_output import TextPrinter, sources_text, usage_text
from agentcore.integrations.web import part_to_dict, sse_stream
from agentcore.server_tools import CodeExecution, FileSearch, WebFetch, WebSearch
from agentcore.testing import DELTA_CHARS, ScriptedModel, TestModel, check_model

KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
PARIS = Citation(
    url="https://en.wikipedia.org/wiki/Paris",
    title="Paris - Wikipedia",
    cited_text="Paris is the capital of France.",
    type="web_search_result_location",
)
SEINE = Citation(url="https://example.org/seine", title="The Seine")
HANDBOOK = Citation(title="handbook.pdf", cited_text="Chapter 2", type="file_citation")
SEARCH = ProviderItem(
    type="server_tool_use",
    data='{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"Paris"}}',
    format="anthropic",
    origin="api.anthropic.com",
    text='web_search {"query":"Paris"}',
)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def delta(call_id: str, name: str, fragment: str) -> StreamPart:
    return StreamPart.tool_call_delta(call_id, name, fragment)


def call(call_id: str, name: str, arguments: str) -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(call_id, name, arguments))


def finish(reason: FinishReason, **usage: int) -> StreamPart:
    return StreamPart.step_finish(reason, Usage(**usage))


class OneStep:
    """A model whose every step is ``parts``."""

    model_id = "one-step"

    def __init__(self, parts: list[StreamPart]) -> None:
        self.parts = parts

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        for part in self.parts:
            ctx.check()
            yield part


ASKING = Request(messages=(user_message("q"),), stream_tool_input=True)


# --- the test doubles ------------------------------------------------------------------------


def test_check_model_accepts_the_new_parts_and_reasons() -> None:
    check_model(
        OneStep(
            [
                delta("c1", "f", '{"a"'),
                delta("c1", "f", ": 1}"),
                call("c1", "f", '{"a": 1}'),
                StreamPart.provider_item_event(SEARCH),
                StreamPart.citation_event(PARIS),
                StreamPart.text_delta("Paris."),
                finish(FinishReason.PAUSED),
            ]
        ),
        ASKING,
    )
    check_model(OneStep([StreamPart.text_delta("I can't"), finish(FinishReason.CONTENT_FILTER)]))


@pytest.mark.parametrize(
    ("parts", "request_", "message"),
    [
        (
            [delta("c1", "f", "{}"), call("c1", "f", "{}"), finish(FinishReason.TOOL_CALLS)],
            Request(messages=(user_message("q"),)),
            "a tool-call-delta part (call 'c1') for a request that did not ask for them",
        ),
        (
            [delta("c1", "f", '{"a": '), call("c1", "f", '{"a": 2}'), finish(FinishReason.TOOL_CALLS)],
            ASKING,
            "tool call 'c1': its tool-call-delta parts (name 'f', '{\"a\": ') are not its name and input",
        ),
        (
            [delta("c1", "f", "{}"), finish(FinishReason.STOP)],
            ASKING,
            "tool-call-delta parts of calls that never came whole: ['c1']",
        ),
        (
            [
                delta("c1", "f", "{"),
                delta("c1", "g", "}"),
                call("c1", "f", "{}"),
                finish(FinishReason.TOOL_CALLS),
            ],
            ASKING,
            "its tool-call-delta parts name two tools",
        ),
        (
            [StreamPart.text_delta("x"), finish(FinishReason.STEP_LIMIT)],
            ASKING,
            "step-finish reason 'step-limit' is not a step reason",
        ),
    ],
)
def test_check_model_names_a_broken_delta_rule(
    parts: list[StreamPart], request_: Request, message: str
) -> None:
    with pytest.raises(AssertionError, match="model breaks the Model contract") as info:
        check_model(OneStep(parts), request_)
    assert message in str(info.value)


def test_test_model_streams_tool_input_when_asked() -> None:
    schema = '{"type":"object","properties":{"text":{"type":"string","examples":["The quick brown fox"]}}}'
    tools = (ToolDefinition("word_count", "Count words.", schema), ToolDefinition("utc_now", "Now."))
    asked = Request(messages=(user_message("q"),), tools=tools, stream_tool_input=True)
    parts = list(TestModel().stream(asked, Context()))
    assert [p.kind.value for p in parts] == [
        "tool-call-delta",
        "tool-call-delta",
        "tool-call",
        "tool-call-delta",
        "tool-call",
        "step-finish",
    ]
    first = '{"text": "The quick brown fox"}'
    assert [p.tool_call.input for p in parts[:3] if p.tool_call is not None] == [
        first[:DELTA_CHARS],
        first[DELTA_CHARS:],
        first,
    ]
    check_model(TestModel(), asked)
    plain = list(TestModel().stream(Request(messages=(user_message("q"),), tools=tools), Context()))
    assert [p.kind.value for p in plain] == ["tool-call", "tool-call", "step-finish"]


# --- the web events ---------------------------------------------------------------------------


def test_web_events_carry_tool_input_deltas_and_citations() -> None:
    assert part_to_dict(delta("c1", "add", '{"a": ')) == {
        "kind": "tool-call-delta",
        "tool_call": {"id": "c1", "name": "add", "input": '{"a": '},
    }
    assert part_to_dict(StreamPart.citation_event(PARIS)) == {
        "kind": "citation",
        "citation": {
            "url": "https://en.wikipedia.org/wiki/Paris",
            "title": "Paris - Wikipedia",
            "cited_text": "Paris is the capital of France.",
            "type": "web_search_result_location",
        },
    }
    assert part_to_dict(finish(FinishReason.PAUSED, input=3, web_search_requests=2)) == {
        "kind": "step-finish",
        "finish_reason": "paused",
        "usage": {"input": 3, "output": 0, "cache_read": 0, "cache_write": 0, "web_search_requests": 2},
    }


def test_a_run_streamed_to_a_browser_forwards_them_in_order() -> None:
    model = ScriptedModel(
        [
            [
                StreamPart.provider_item_event(SEARCH),
                StreamPart.citation_event(SEINE),
                StreamPart.text_delta("It flows."),
                finish(FinishReason.CONTENT_FILTER, input=5, output=2, web_search_requests=1),
            ]
        ]
    )
    body = b"".join(
        sse_stream(run(LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()])))
    )
    events = [json.loads(chunk[len("data: ") :]) for chunk in body.decode().split("\n\n") if chunk]
    usage = {"input": 5, "output": 2, "cache_read": 0, "cache_write": 0, "web_search_requests": 1}
    assert events == [
        {"kind": "provider-item", "provider_item": SEARCH.to_dict()},
        {"kind": "citation", "citation": {"url": "https://example.org/seine", "title": "The Seine"}},
        {"kind": "text-delta", "text": "It flows."},
        {"kind": "step-finish", "finish_reason": "content-filter", "usage": usage},
        {"kind": "finish", "finish_reason": "content-filter", "total_usage": usage},
    ]


# --- the command ------------------------------------------------------------------------------


def test_the_sources_follow_the_answer_each_once_and_numbered() -> None:
    assert sources_text([PARIS, SEINE, PARIS, HANDBOOK, Citation(cited_text="no source"), SEINE]) == [
        "sources:",
        "[1] Paris - Wikipedia https://en.wikipedia.org/wiki/Paris",
        "[2] The Seine https://example.org/seine",
        "[3] handbook.pdf",
    ]
    assert sources_text([Citation(cited_text="only a passage")]) == []


def test_the_usage_line_counts_server_tool_use_when_there_is_any() -> None:
    # A log line (docs/logging.md) shows the counts the same way: only when not 0.
    assert repr(Usage(10, 2)) == "Usage(input=10, output=2, cache_read=0, cache_write=0)"
    assert repr(Usage(10, 2, web_fetch_requests=3)) == (
        "Usage(input=10, output=2, cache_read=0, cache_write=0, web_fetch_requests=3)"
    )
    assert usage_text(Usage(10, 2)) == "input 10, output 2, cache read 0, cache write 0"
    assert usage_text(Usage(10, 2, web_search_requests=3, code_execution_requests=1)) == (
        "input 10, output 2, cache read 0, cache write 0, web searches 3, code executions 1"
    )
    assert usage_text(Usage(web_fetch_requests=2, file_search_requests=4)).endswith(
        ", web fetches 2, file searches 4"
    )


def paris_run() -> ScriptedModel:
    """A research run: a search, a client call whose input streams, a cited answer."""
    return ScriptedModel(
        [
            [
                StreamPart.provider_item_event(SEARCH),
                delta("c1", "calculator", '{"expression": '),
                delta("c1", "calculator", '"6 * 7"}'),
                call("c1", "calculator", '{"expression": "6 * 7"}'),
                finish(FinishReason.TOOL_CALLS, input=100, output=10, web_search_requests=1),
            ],
            [
                StreamPart.citation_event(PARIS),
                StreamPart.text_delta("Paris is the capital."),
                StreamPart.citation_event(SEINE),
                StreamPart.citation_event(PARIS),
                finish(FinishReason.STOP, input=200, output=20, web_search_requests=1),
            ],
        ]
    )


def test_the_command_shows_sources_and_server_tool_use(capsys: pytest.CaptureFixture[str]) -> None:
    model = paris_run()
    code = cli.main(
        ["--server-tool", "web_search", "--server-tool", "file_search:vs_1,vs_2", "q"], model=model
    )
    out, err = capsys.readouterr()
    assert code == 0
    assert out == "Paris is the capital.\n"  # standard output: the model's text only
    assert err.splitlines() == [
        'server tool: web_search {"query":"Paris"}',
        '→ calculator({"expression": "6 * 7"})',
        "← 42",
        "sources:",
        "[1] Paris - Wikipedia https://en.wikipedia.org/wiki/Paris",
        "[2] The Seine https://example.org/seine",
        "finish: stop · usage: input 300, output 30, cache read 0, cache write 0, web searches 2",
    ]
    assert [request.server_tools for request in model.requests] == [
        (WebSearch(), FileSearch(["vs_1", "vs_2"])),
    ] * 2
    assert [request.stream_tool_input for request in model.requests] == [True, True]


def test_the_command_takes_each_server_tool_by_name() -> None:
    assert cli.server_tool("web_search") == WebSearch()
    assert cli.server_tool("web_fetch") == WebFetch()
    assert cli.server_tool("code_execution") == CodeExecution()
    assert cli.server_tool("file_search: vs_1 ,vs_2") == FileSearch(["vs_1", "vs_2"])


@pytest.mark.parametrize("spec", ["web_serach", "file_search", "file_search:", "web_search:x"])
def test_an_unknown_server_tool_is_a_usage_error(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--server-tool", spec, "q"], model=ScriptedModel([])) == cli.EXIT_USAGE
    assert f"argument --server-tool: {spec!r} is not one of web_search, web_fetch, code_execution" in (
        capsys.readouterr().err
    )


def test_a_tool_s_name_shows_as_soon_as_its_call_starts() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = TextPrinter(out, err)
    printer.part(delta("c1", "calculator", '{"expression": '))
    assert err.getvalue() == "→ calculator("  # shown before the arguments are whole
    printer.part(delta("c1", "calculator", '"6 * 7"}'))
    assert err.getvalue() == "→ calculator("
    printer.part(call("c1", "calculator", '{"expression": "6 * 7"}'))
    assert err.getvalue() == '→ calculator({"expression": "6 * 7"})\n'
    # Another call's fragments before the first is whole: each line stays whole.
    printer.part(delta("c2", "word_count", "{"))
    printer.part(delta("c3", "utc_now", "{"))
    printer.part(call("c2", "word_count", '{"text": "a b"}'))
    printer.part(StreamPart.text_delta("Hi"))
    printer.part(call("c3", "utc_now", "{}"))
    assert err.getvalue().splitlines() == [
        '→ calculator({"expression": "6 * 7"})',
        "→ word_count(",
        "→ utc_now(",
        '→ word_count({"text": "a b"})',
        "→ utc_now({})",
    ]
    assert out.getvalue() == "Hi\n"


def test_the_command_shows_a_pause_a_cut_call_and_each_line_of_a_server_tools_text() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = TextPrinter(out, err)
    found = ProviderItem(
        "web_search_call",
        '{"type":"web_search_call","id":"ws_1","status":"completed"}',
        "openai-responses",
        "api.openai.com",
        'web_search {"query":"Paris"}\nhttps://a.example/\nhttps://b.example/',
    )
    printer.part(StreamPart.provider_item_event(found))
    printer.part(finish(FinishReason.PAUSED))
    printer.part(delta("c1", "calculator", '{"expression": "6 *'))
    printer.part(call("c1", "calculator", '{"expression": "6 *'))
    printer.part(finish(FinishReason.CONTENT_FILTER))
    printer.part(StreamPart.text_delta("Done."))
    printer.part(finish(FinishReason.LENGTH))  # no call in this step: no line
    assert err.getvalue().splitlines() == [
        'server tool: web_search {"query":"Paris"}',
        "  https://a.example/",
        "  https://b.example/",
        "paused: the provider paused its turn in step 1; it goes on",
        '→ calculator({"expression": "6 *)',
        "the step was cut off (content-filter): its tool calls did not run",
    ]
    assert out.getvalue() == "Done."


def test_the_json_output_carries_the_new_events(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "--server-tool", "web_search", "q"], model=paris_run()) == 0
    lines: list[dict[str, Any]] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["kind"] for line in lines] == [
        "provider-item",
        "tool-call-delta",
        "tool-call-delta",
        "tool-call",
        "step-finish",
        "tool-result",
        "citation",
        "text-delta",
        "citation",
        "citation",
        "step-finish",
        "finish",
    ]
    assert lines[1] == {
        "kind": "tool-call-delta",
        "tool_call": {"id": "c1", "name": "calculator", "input": '{"expression": '},
    }
    assert lines[6]["citation"]["url"] == "https://en.wikipedia.org/wiki/Paris"
    assert lines[-1]["total_usage"] == {
        "input": 300,
        "output": 30,
        "cache_read": 0,
        "cache_write": 0,
        "web_search_requests": 2,
    }
