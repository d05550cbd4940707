"""Server tools through the loop (docs/server-tools.md; design.md, loop
rules 1, 2, 3 and 15): asking for them, the provider items they leave in the
assistant message, a paused turn continued as one turn, citations on the
text, tool input as it streams, the content filter, and a durable run
resumed in a pause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Citation,
    ConfigError,
    FinishReason,
    LoopOptions,
    Message,
    ProviderItem,
    Request,
    Role,
    RunError,
    StepDraft,
    StepPlan,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.durable import SQLiteCheckpoints
from agentcore.errors import ErrorClass, ModelError
from agentcore.integrations.mcp import combine
from agentcore.server_tools import CodeExecution, WebFetch, WebSearch
from agentcore.testing import ScriptedModel
from agentcore.types import provider_item_part, text_part, tool_call_part
from tests.loop_helpers import collect

PAUSED = FinishReason.PAUSED
ORIGIN = "api.anthropic.com"

SEARCH_CALL = ProviderItem(
    type="server_tool_use",
    data='{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search",'
    '"input":{"query":"capital of France"}}',
    format="anthropic",
    origin=ORIGIN,
    text='web_search {"query":"capital of France"}',
)
SEARCH_RESULT = ProviderItem(
    type="web_search_tool_result",
    data='{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result",'
    '"url":"https://en.wikipedia.org/wiki/Paris","title":"Paris - Wikipedia","encrypted_content":"Eq0",'
    '"page_age":null}]}',
    format="anthropic",
    origin=ORIGIN,
)
PARIS = Citation(
    url="https://en.wikipedia.org/wiki/Paris",
    title="Paris - Wikipedia",
    cited_text="Paris is the capital and largest city of France.",
    type="web_search_result_location",
    data='{"type":"web_search_result_location","url":"https://en.wikipedia.org/wiki/Paris",'
    '"title":"Paris - Wikipedia","encrypted_index":"Eo8","cited_text":"Paris is the capital and largest '
    'city of France."}',
)
SEINE = Citation(
    url="https://example.org/seine", title="The Seine", cited_text="The Seine flows through Paris."
)


@tool
def population(city: str) -> str:
    """The population of a city."""
    return {"Paris": "2,102,650"}.get(city, "unknown")


def item(value: ProviderItem) -> StreamPart:
    return StreamPart.provider_item_event(value)


def finish(reason: FinishReason, **usage: int) -> StreamPart:
    return StreamPart.step_finish(reason, Usage(**usage))


def call(call_id: str, name: str, arguments: str) -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(call_id, name, arguments))


# --- asking for server tools -------------------------------------------------------------


def test_server_tools_among_the_tools_go_into_every_request() -> None:
    model = ScriptedModel(
        [
            [
                call("c1", "population", '{"city": "Paris"}'),
                finish(FinishReason.TOOL_CALLS, input=10, output=5),
            ],
            [StreamPart.text_delta("2,102,650"), finish(FinishReason.STOP, input=20, output=3)],
        ]
    )
    search = WebSearch(max_uses=3, allowed_domains=["wikipedia.org"])
    options = LoopOptions(
        model=model, messages=[user_message("Paris?")], tools=[search, population, WebFetch()]
    )
    assert options.tools.server_tools == (search, WebFetch())
    assert list(options.tools) == ["population"]
    generate(options)
    assert [request.server_tools for request in model.requests] == [(search, WebFetch())] * 2
    assert [[d.name for d in request.tools] for request in model.requests] == [["population"]] * 2
    assert [request.stream_tool_input for request in model.requests] == [False, False]


def test_a_tool_named_as_a_server_tool_is_a_config_error() -> None:
    @tool
    def web_search(query: str) -> str:
        """Search."""
        return query

    with pytest.raises(ConfigError, match=r"the tool 'web_search' has the name of the server tool WebSearch"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("q")], tools=[WebSearch(), web_search])
    with pytest.raises(ConfigError, match=r"the tool 'web_search' has the name of the server tool WebSearch"):
        combine([web_search], WebSearch())
    with pytest.raises(ConfigError, match=r"WebSearch is given twice"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("q")], tools=[WebSearch(), WebSearch()])
    with pytest.raises(ConfigError, match=r"must be a list of tools, got one WebSearch \(wrap it"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("q")], tools=WebSearch())  # type: ignore[arg-type]  # the mistake under test


def test_combine_keeps_server_tools() -> None:
    tools = combine([population], WebSearch(), [CodeExecution()])
    assert tools.server_tools == (WebSearch(), CodeExecution())
    assert list(tools) == ["population"]


def test_a_plan_s_tools_are_the_step_s_server_tools_too() -> None:
    model = ScriptedModel(
        [
            [call("c1", "population", '{"city": "Paris"}'), finish(FinishReason.TOOL_CALLS)],
            [call("c2", "population", '{"city": "Lyon"}'), finish(FinishReason.TOOL_CALLS)],
            [StreamPart.text_delta("done"), finish(FinishReason.STOP)],
        ]
    )
    drafts: list[StepDraft] = []

    def plan(draft: StepDraft) -> StepPlan | None:
        drafts.append(draft)
        if draft.number == 1:
            return StepPlan(tools=[population])  # narrowed: no server tool this step
        if draft.number == 2:
            return StepPlan(
                tools=[*draft.tools.server_tools, population]
            )  # narrowed, the run's server tools kept
        return None

    generate(
        LoopOptions(
            model=model,
            messages=[user_message("q")],
            tools=[WebSearch(), CodeExecution(), population],
            prepare_step=plan,
        )
    )
    assert [request.server_tools for request in model.requests] == [
        (),
        (WebSearch(), CodeExecution()),
        (WebSearch(), CodeExecution()),
    ]
    assert drafts[0].tools.server_tools == (WebSearch(), CodeExecution())


def test_structured_output_in_tool_mode_keeps_the_server_tools() -> None:
    model = ScriptedModel(
        [[call("c1", "final_answer", '{"city": "Paris"}'), finish(FinishReason.TOOL_CALLS)]]
    )
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    result = generate(
        LoopOptions(
            model=model,
            messages=[user_message("q")],
            tools=[WebSearch()],
            output_type=schema,
            output_mode="tool",
        )
    )
    assert result.output == {"city": "Paris"}
    assert model.requests[0].server_tools == (WebSearch(),)
    assert [d.name for d in model.requests[0].tools] == ["final_answer"]


# --- the three-step run: a server tool, a pause, a client tool ----------------------------


def test_a_server_tool_a_pause_and_a_client_tool_in_one_run() -> None:
    paused = [
        StreamPart.text_delta("Let me look that up. "),
        item(SEARCH_CALL),
        item(SEARCH_RESULT),
        finish(PAUSED, input=120, output=30, web_search_requests=1),
    ]
    continued = [
        StreamPart.citation_event(PARIS),
        StreamPart.text_delta("Paris is the capital of France."),
        call("toolu_1", "population", '{"city": "Paris"}'),
        finish(FinishReason.TOOL_CALLS, input=900, output=40, cache_read=100),
    ]
    answered = [
        StreamPart.text_delta("Paris has 2,102,650 people."),
        finish(FinishReason.STOP, input=1000, output=12),
    ]
    model = ScriptedModel([paused, continued, answered])
    question = user_message("How many people live in the capital of France?")
    reader = run(LoopOptions(model=model, messages=[question], tools=[WebSearch(max_uses=2), population]))
    parts = collect(reader)
    result = reader.result()

    first_turn = [
        text_part("Let me look that up. "),
        provider_item_part(SEARCH_CALL),
        provider_item_part(SEARCH_RESULT),
    ]
    paused_message = Message(Role.ASSISTANT, first_turn)
    # Step 2 sends the paused turn back unchanged, last, with no user message after it.
    assert model.requests[1].messages == (question, paused_message)
    assert model.requests[1].server_tools == (WebSearch(max_uses=2),)
    # The continuation joins the same assistant message: one turn in the history.
    merged = Message(
        Role.ASSISTANT,
        [
            *first_turn,
            text_part("Paris is the capital of France.", [PARIS]),
            tool_call_part(ToolCall("toolu_1", "population", '{"city": "Paris"}')),
        ],
    )
    assert model.requests[2].messages[:2] == (question, merged)
    assert model.requests[2].messages[2].role is Role.TOOL
    assert model.requests[2].messages[2].tool_results[0].content == "2,102,650"
    assert result.messages[:2] == (question, merged)
    assert [m.role for m in result.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]
    assert result.messages[1].citations == [PARIS]
    assert result.messages[1].provider_items == [SEARCH_CALL, SEARCH_RESULT]
    # Each continuation is a step; usage adds up, the search count included.
    assert [s.finish_reason for s in result.steps] == [PAUSED, FinishReason.TOOL_CALLS, FinishReason.STOP]
    assert [s.text for s in result.steps] == [
        "Let me look that up. ",
        "Paris is the capital of France.",
        "Paris has 2,102,650 people.",
    ]
    assert result.usage == Usage(input=2020, output=82, cache_read=100, web_search_requests=1)
    assert result.text == "Paris has 2,102,650 people."
    assert result.finish_reason is FinishReason.STOP
    # The parts streamed as they came: each step its own step-finish.
    kinds = [p.kind.value for p in parts]
    assert kinds == [
        "text-delta",
        "provider-item",
        "provider-item",
        "step-finish",
        "citation",
        "text-delta",
        "tool-call",
        "step-finish",
        "tool-result",
        "text-delta",
        "step-finish",
        "finish",
    ]
    assert [p.finish_reason for p in parts if p.kind is StreamPartKind.STEP_FINISH] == [
        PAUSED,
        FinishReason.TOOL_CALLS,
        FinishReason.STOP,
    ]
    assert parts[-1].total_usage == result.usage
    # The history survives the JSON round trip, provider items and citations included.
    again = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in result.messages]
    assert again == list(result.messages)


def test_a_turn_paused_twice_is_one_message_and_the_answer_is_the_turn_s_text() -> None:
    model = ScriptedModel(
        [
            [StreamPart.text_delta("Searching. "), item(SEARCH_CALL), finish(PAUSED, input=50, output=5)],
            [item(SEARCH_RESULT), finish(PAUSED, input=60, output=6, web_search_requests=1)],
            [StreamPart.text_delta("Paris."), finish(FinishReason.STOP, input=70, output=7)],
        ]
    )
    result = generate(LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()]))
    first = Message(Role.ASSISTANT, [text_part("Searching. "), provider_item_part(SEARCH_CALL)])
    second = Message(Role.ASSISTANT, [*first.content, provider_item_part(SEARCH_RESULT)])
    assert [request.messages[1:] for request in model.requests] == [(), (first,), (second,)]
    assert result.messages[1:] == (Message(Role.ASSISTANT, [*second.content, text_part("Paris.")]),)
    assert result.text == "Searching. Paris."  # the whole turn's text
    assert result.usage == Usage(input=180, output=18, web_search_requests=1)
    assert len(result.steps) == 3


def test_a_paused_step_with_client_calls_runs_them_and_keeps_the_server_results() -> None:
    model = ScriptedModel(
        [
            [
                item(SEARCH_CALL),
                item(SEARCH_RESULT),
                call("toolu_2", "population", '{"city": "Paris"}'),
                finish(PAUSED, input=10, output=2),
            ],
            [StreamPart.text_delta("2,102,650"), finish(FinishReason.STOP, input=20, output=2)],
        ]
    )
    result = generate(LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch(), population]))
    assert result.steps[0].finish_reason is FinishReason.TOOL_CALLS  # the calls decide (loop rule 3)
    assert result.steps[0].tool_results[0].content == "2,102,650"
    sent = model.requests[1].messages
    assert [m.role for m in sent] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert sent[1].provider_items == [SEARCH_CALL, SEARCH_RESULT]
    assert sent[1].tool_calls == [ToolCall("toolu_2", "population", '{"city": "Paris"}')]
    assert [m.role for m in result.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT]


def test_a_run_paused_at_its_step_limit_ends_with_step_limit() -> None:
    model = ScriptedModel(
        [
            [StreamPart.text_delta("Searching. "), item(SEARCH_CALL), finish(PAUSED, input=50, output=5)],
            [item(SEARCH_RESULT), StreamPart.text_delta("Still "), finish(PAUSED, input=60, output=6)],
        ]
    )
    result = generate(
        LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()], step_limit=2)
    )
    assert result.finish_reason is FinishReason.STEP_LIMIT
    assert len(model.requests) == 2
    assert result.text == "Searching. Still "
    assert result.usage == Usage(input=110, output=11)
    assert result.messages[1].content == (
        text_part("Searching. "),
        provider_item_part(SEARCH_CALL),
        provider_item_part(SEARCH_RESULT),
        text_part("Still "),
    )
    # Passed back as it is, the next run continues the turn.
    more = ScriptedModel([[StreamPart.text_delta("Paris."), finish(FinishReason.STOP)]])
    generate(LoopOptions(model=more, messages=result.messages, tools=[WebSearch()]))
    assert more.requests[0].messages == result.messages


def test_a_pause_with_structured_output_checks_the_turn_s_text() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    model = ScriptedModel(
        [
            [StreamPart.text_delta('{"city": '), item(SEARCH_CALL), finish(PAUSED)],
            [StreamPart.text_delta('"Paris"}'), finish(FinishReason.STOP)],
        ]
    )
    result = generate(
        LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()], output_type=schema)
    )
    assert result.output == {"city": "Paris"}
    assert len(model.requests) == 2


# --- citations ------------------------------------------------------------------------------


def test_citations_go_on_the_next_text_part_and_late_ones_on_the_last() -> None:
    late = Citation(url="https://example.org/late", title="Late")
    model = ScriptedModel(
        [
            [
                StreamPart.text_delta("Paris "),
                StreamPart.citation_event(PARIS),
                StreamPart.text_delta("is the capital."),
                item(SEARCH_CALL),
                StreamPart.citation_event(SEINE),
                StreamPart.text_delta(" The Seine flows through it."),
                StreamPart.citation_event(late),
                finish(FinishReason.STOP),
            ]
        ]
    )
    reader = run(LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()]))
    parts = collect(reader)
    result = reader.result()
    assert [p.citation for p in parts if p.kind is StreamPartKind.CITATION] == [PARIS, SEINE, late]
    assert result.messages[1].content == (
        text_part("Paris is the capital.", [PARIS]),
        provider_item_part(SEARCH_CALL),
        text_part(" The Seine flows through it.", [SEINE, late]),
    )
    assert result.messages[1].citations == [PARIS, SEINE, late]
    assert result.text == "Paris is the capital. The Seine flows through it."


def test_a_citation_in_a_step_without_text_is_kept_on_an_empty_text_part() -> None:
    model = ScriptedModel(
        [
            [item(SEARCH_CALL), StreamPart.citation_event(PARIS), finish(PAUSED)],
            [StreamPart.text_delta("Paris."), finish(FinishReason.STOP)],
        ]
    )
    result = generate(LoopOptions(model=model, messages=[user_message("q")], tools=[WebSearch()]))
    assert result.messages[1].content == (
        provider_item_part(SEARCH_CALL),
        text_part("", [PARIS]),
        text_part("Paris."),
    )
    assert result.text == "Paris."


# --- tool input as it streams ----------------------------------------------------------------


def test_tool_call_deltas_go_to_the_reader_only() -> None:
    arguments = '{"city": "Paris"}'
    model = ScriptedModel(
        [
            [
                StreamPart.tool_call_delta("c1", "population", '{"city"'),
                StreamPart.tool_call_delta("c1", "population", ': "Paris"}'),
                call("c1", "population", arguments),
                finish(FinishReason.TOOL_CALLS),
            ],
            [StreamPart.text_delta("2,102,650"), finish(FinishReason.STOP)],
        ]
    )
    reader = run(
        LoopOptions(model=model, messages=[user_message("q")], tools=[population], stream_tool_input=True)
    )
    parts = collect(reader)
    result = reader.result()
    deltas = [p.tool_call for p in parts if p.kind is StreamPartKind.TOOL_CALL_DELTA]
    assert [(d.id, d.name) for d in deltas if d is not None] == [("c1", "population")] * 2
    assert "".join(d.input for d in deltas if d is not None) == arguments
    assert [p.kind.value for p in parts[:3]] == ["tool-call-delta", "tool-call-delta", "tool-call"]
    assert result.messages[1].content == (tool_call_part(ToolCall("c1", "population", arguments)),)
    assert [request.stream_tool_input for request in model.requests] == [True, True]


def test_stream_tool_input_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match="stream_tool_input must be True or False"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("q")], stream_tool_input="yes")  # type: ignore[arg-type]  # the mistake under test


# --- the content filter -----------------------------------------------------------------------


def test_the_content_filter_ends_the_run_with_the_text_so_far() -> None:
    model = ScriptedModel(
        [
            [
                StreamPart.text_delta("I can't help with that"),
                call("c1", "population", '{"city": "Par'),
                finish(FinishReason.CONTENT_FILTER, input=40, output=9),
            ]
        ]
    )
    reader = run(LoopOptions(model=model, messages=[user_message("q")], tools=[population]))
    parts = collect(reader)
    result = reader.result()
    assert result.finish_reason is FinishReason.CONTENT_FILTER
    assert parts[-1].finish_reason is FinishReason.CONTENT_FILTER
    assert result.text == "I can't help with that"
    assert result.usage == Usage(input=40, output=9)
    assert len(model.requests) == 1
    # Its call never runs and stays out of the history (loop rule 2), so the history is valid to send.
    assert result.steps[0].finish_reason is FinishReason.CONTENT_FILTER
    assert result.steps[0].tool_results == ()
    assert result.messages[1].content == (text_part("I can't help with that"),)


def test_a_step_reason_a_model_may_not_give_fails_the_step() -> None:
    model = ScriptedModel([[StreamPart.text_delta("x"), finish(FinishReason.STEP_LIMIT)]])
    with pytest.raises(RunError) as caught:
        generate(LoopOptions(model=model, messages=[user_message("q")]))
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class is ErrorClass.UPSTREAM
    assert "stop, tool-calls, length, content-filter or paused" in str(caught.value.err)


# --- a durable run resumed in a pause ----------------------------------------------------------


def test_a_durable_run_killed_after_a_pause_resumes_the_turn(tmp_path: Path) -> None:
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    question = user_message("How many people live in the capital of France?")
    paused = [
        StreamPart.text_delta("Searching. "),
        item(SEARCH_CALL),
        item(SEARCH_RESULT),
        StreamPart.citation_event(PARIS),
        StreamPart.text_delta("Paris it is."),
        finish(PAUSED, input=100, output=10, web_search_requests=1),
    ]
    dead = ModelError(ErrorClass.AUTH, message="the key was revoked")
    first = ScriptedModel([paused, dead])
    options: dict[str, Any] = {"tools": [WebSearch(), population], "run_id": "r1", "checkpoints": store}
    with pytest.raises(RunError):
        generate(LoopOptions(model=first, messages=[question], **options))
    saved = store.load("r1")
    assert saved is not None
    assert [s.finish_reason for s in saved.steps] == [PAUSED]
    turn = Message(
        Role.ASSISTANT,
        [
            text_part("Searching. "),
            provider_item_part(SEARCH_CALL),
            provider_item_part(SEARCH_RESULT),
            text_part("Paris it is.", [PARIS]),
        ],
    )
    assert saved.messages == (question, turn)

    second = ScriptedModel(
        [
            [
                call("c1", "population", '{"city": "Paris"}'),
                finish(FinishReason.TOOL_CALLS, input=200, output=5),
            ],
            [StreamPart.text_delta(" 2,102,650."), finish(FinishReason.STOP, input=300, output=4)],
        ]
    )
    result = generate(LoopOptions(model=second, **options))
    # The resumed step sends the paused turn back unchanged and last; its content joins it.
    assert second.requests[0].messages == (question, turn)
    assert second.requests[0].server_tools == (WebSearch(),)
    merged = Message(
        Role.ASSISTANT, [*turn.content, tool_call_part(ToolCall("c1", "population", '{"city": "Paris"}'))]
    )
    assert second.requests[1].messages[:2] == (question, merged)
    assert [s.finish_reason for s in result.steps] == [PAUSED, FinishReason.TOOL_CALLS, FinishReason.STOP]
    assert result.usage == Usage(input=600, output=19, web_search_requests=1)
    assert result.messages[:2] == (question, merged)
    ended = store.load("r1")
    assert ended is not None
    assert ended.finish_reason is FinishReason.STOP
    assert ended.messages == result.messages


def test_request_keeps_defaults_without_server_tools() -> None:
    assert Request().server_tools == ()
    assert LoopOptions(model=ScriptedModel([]), messages=[user_message("q")]).stream_tool_input is False
