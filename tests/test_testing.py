"""The public test doubles: ScriptedModel, TestModel, example_value and check_model
(agentcore/testing.py)."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from agentcore import (
    Canceled,
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    Reasoning,
    Request,
    Role,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    generate,
    reasoning_part,
    run,
    tool,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.model import Model
from agentcore.testing import (
    ScriptedModel,
    ScriptExhausted,
    TestModel,
    check_model,
    example_input,
    example_value,
)
from tests.loop_helpers import FuncTool, call, collect, nested, options, step_finish, summary, text, text_step

REQUEST = Request(system="sys", messages=(user_message("hi"),))


# --- ScriptedModel -----------------------------------------------------------------------------


def test_scripted_model_is_a_model_and_records_every_request() -> None:
    model = ScriptedModel([text_step("a"), text_step("b")], model_id="fake-1")
    assert isinstance(model, Model)
    assert model.model_id == "fake-1"
    assert ScriptedModel([]).model_id == "scripted"
    second = Request(messages=(user_message("again"),))
    assert summary(model.stream(REQUEST, Context())) == [
        ("text-delta", "a"),
        ("step-finish", "stop", Usage()),
    ]
    assert summary(model.stream(second, Context())) == [("text-delta", "b"), ("step-finish", "stop", Usage())]
    assert model.requests == [REQUEST, second]


def test_scripted_model_raises_an_exception_entry() -> None:
    error = ModelError(ErrorClass.OVERLOADED)
    model = ScriptedModel([error])
    with pytest.raises(ModelError) as info:
        list(model.stream(REQUEST, Context()))
    assert info.value is error
    assert model.requests == [REQUEST]


def test_scripted_model_raises_an_exception_inside_the_iterable_at_its_place() -> None:
    error = ModelError(ErrorClass.TRANSIENT)
    stream = ScriptedModel([[text("a"), text("b"), error, text("never")]]).stream(REQUEST, Context())
    assert [next(stream).text, next(stream).text] == ["a", "b"]
    with pytest.raises(ModelError) as info:
        next(stream)
    assert info.value is error


def test_scripted_model_callable_with_one_argument_gets_the_request() -> None:
    seen: list[Request] = []

    def step(request: Request) -> list[StreamPart]:
        seen.append(request)
        return text_step(request.messages[0].text.upper())

    model = ScriptedModel([step])
    assert summary(model.stream(REQUEST, Context()))[0] == ("text-delta", "HI")
    assert seen == [REQUEST]


def test_scripted_model_callable_with_two_arguments_gets_the_context() -> None:
    seen: list[tuple[Request, Context]] = []

    def step(request: Request, ctx: Context) -> list[StreamPart]:
        seen.append((request, ctx))
        return text_step("ok")

    ctx = Context()
    list(ScriptedModel([step, lambda request, ctx: text_step("lambda")]).stream(REQUEST, ctx))
    assert seen == [(REQUEST, ctx)]


def test_scripted_model_script_exhausted() -> None:
    model = ScriptedModel([text_step("only")])
    list(model.stream(REQUEST, Context()))
    with pytest.raises(ScriptExhausted, match=r"call 2 but has only 1 step$"):
        list(model.stream(REQUEST, Context()))
    assert issubclass(ScriptExhausted, AssertionError)
    assert len(model.requests) == 2


def test_scripted_model_stops_with_canceled_between_parts() -> None:
    ctx = Context()
    stream = ScriptedModel([text_step("a", "b")]).stream(REQUEST, ctx)
    assert next(stream).text == "a"
    ctx.cancel()
    with pytest.raises(Canceled):
        next(stream)


def test_scripted_model_closes_a_scripted_generator_when_closed() -> None:
    closed: list[bool] = []

    def step(_request: Request) -> Iterator[StreamPart]:
        try:
            yield text("a")
            yield step_finish()
        finally:
            closed.append(True)

    stream = ScriptedModel([step]).stream(REQUEST, Context())
    next(stream)
    assert isinstance(stream, Generator)
    stream.close()
    assert closed == [True]


def test_scripted_model_in_a_run_exhausted_script_is_a_run_error() -> None:
    model = ScriptedModel([[call("c1", "search"), step_finish(FinishReason.TOOL_CALLS)]])
    parts = collect(run(options(model, tools=[FuncTool("search")])))
    assert isinstance(parts[-1].err, ScriptExhausted)
    assert len(model.requests) == 2


# --- example_value -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "example"),
        ({"type": "string", "examples": ["Paris", "Oslo"]}, "Paris"),
        ({"type": "string", "enum": ["celsius", "fahrenheit"]}, "celsius"),
        ({"type": "string", "default": "UTC"}, "UTC"),
        ({"const": 7}, 7),
        ({"type": "integer", "default": 0, "enum": [5, 6]}, 5),
        ({"type": "string", "minLength": 10}, "examplexxx"),
        ({"type": "string", "maxLength": 3}, "exa"),
        ({"type": "integer"}, 1),
        ({"type": "integer", "minimum": 3}, 3),
        ({"type": "integer", "minimum": 2.5}, 3),
        ({"type": "integer", "exclusiveMinimum": 5}, 6),
        ({"type": "integer", "maximum": -3}, -3),
        ({"type": "integer", "minimum": 0, "maximum": 0}, 0),
        ({"type": "number"}, 1.5),
        ({"type": "number", "minimum": 3}, 3.0),
        ({"type": "number", "maximum": 0.5}, 0.5),
        ({"type": "boolean"}, True),
        ({"type": "null"}, None),
        ({"type": ["null", "integer"]}, 1),
        ({"anyOf": [{"type": "integer", "minimum": 4}, {"type": "string"}]}, 4),
        ({"oneOf": [{"type": "boolean"}, {"type": "string"}]}, True),
        ({"type": "array", "items": {"type": "string"}}, ["example"]),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 3}, [1, 1, 1]),
        (
            {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "examples": ["Lima"]},
                    "units": {"enum": ["metric"]},
                    "days": {"type": "integer", "minimum": 1},
                    "where": {"properties": {"lat": {"type": "number"}, "tags": {"type": "array"}}},
                },
                "required": ["city"],
            },
            {"city": "Lima", "units": "metric", "days": 1, "where": {"lat": 1.5, "tags": ["example"]}},
        ),
        ({}, "example"),
        ("not a schema", None),
    ],
)
def test_example_value(schema: Any, expected: Any) -> None:
    value = example_value(schema)
    assert value == expected
    assert type(value) is type(expected)


def test_example_input_is_always_an_object() -> None:
    object_schema = ToolDefinition("t", input_schema='{"type":"object","properties":{"q":{"type":"string"}}}')
    assert example_input(object_schema) == {"q": "example"}
    assert example_input(ToolDefinition("t", input_schema='{"type":"string"}')) == {}


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
            [1, "example"],
        ),
        ({"type": "array", "prefixItems": [{"type": "boolean"}], "items": False}, [True]),
        (
            {"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"type": "null"}, "minItems": 3},
            [True, None, None],
        ),
        ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "maxItems": 1}, [1]),
        ({"type": "array", "maxItems": 0}, []),
        (
            {
                "type": "array",
                "items": {
                    "type": "array",
                    "prefixItems": [
                        {"type": "array", "prefixItems": [{"type": "number"}, {"enum": ["a"]}]},
                        {"type": "integer", "minimum": 9},
                    ],
                    "items": False,
                },
            },
            [[[1.5, "a"], 9]],
        ),
    ],
)
def test_example_value_arrays_are_valid_instances(schema: dict[str, Any], expected: Any) -> None:
    import jsonschema

    value = example_value(schema)
    assert value == expected
    jsonschema.Draft202012Validator(schema).validate(value)


def _tuple_tools() -> list[Any]:
    @tool
    def pair(v: tuple[int, str]) -> str:
        """Echo a pair."""
        return repr(v)

    @tool
    def nested(v: tuple[tuple[int, bool], str]) -> str:
        """Echo a nested pair."""
        return repr(v)

    @tool
    def pairs(v: list[tuple[bool, int]]) -> str:
        """Echo a list of pairs."""
        return repr(v)

    @tool
    def variadic(v: tuple[int, ...]) -> str:
        """Echo a tuple of any length."""
        return repr(v)

    return [pair, nested, pairs, variadic]


def test_test_model_calls_tuple_tools_with_valid_arguments() -> None:
    import jsonschema

    tools = _tuple_tools()
    result = generate(LoopOptions(model=TestModel(), messages=[user_message("hi")], tools=tools))
    got = {r.name: (r.is_error, r.content) for r in result.steps[0].tool_results}
    assert got == {
        "pair": (False, "(1, 'example')"),
        "nested": (False, "((1, True), 'example')"),
        "pairs": (False, "[(True, 1)]"),
        "variadic": (False, "(1,)"),
    }
    assert result.finish_reason is FinishReason.STOP
    for t in tools:
        schema = json.loads(t.definition.input_schema)
        jsonschema.Draft202012Validator(schema).validate(example_input(t.definition))


def test_scripted_model_replays_reasoning_parts_and_is_sent_them_back() -> None:
    block = Reasoning(text="Weather first.", signature="c2ln", format="anthropic", origin="api.anthropic.com")
    oslo = ToolCall("c1", "get_weather", '{"city": "Oslo"}')
    first = [
        StreamPart.reasoning_delta("Weather "),
        StreamPart.reasoning_delta("first."),
        StreamPart.reasoning_event(block),
        StreamPart.tool_call_event(oslo),
        step_finish(FinishReason.TOOL_CALLS),
    ]
    model = ScriptedModel([first, text_step("Cold.")])
    weather = FuncTool("get_weather", lambda _i, _c: "-3C", schema=WEATHER.input_schema)
    parts = collect(run(options(model, tools=[weather])))
    assert parts[:4] == first[:4]  # replayed as given, in order
    assert [p.kind.value for p in parts[4:]] == [
        "step-finish",
        "tool-result",
        "text-delta",
        "step-finish",
        "finish",
    ]
    sent_back = model.requests[1].messages[1]
    assert sent_back.role is Role.ASSISTANT
    assert sent_back.content == (reasoning_part(block), tool_call_part(oslo))


# --- TestModel ---------------------------------------------------------------------------------

WEATHER = ToolDefinition(
    "get_weather",
    "Weather for a city",
    json.dumps({"type": "object", "properties": {"city": {"type": "string", "examples": ["Oslo"]}}}),
)
TIME = ToolDefinition("get_time", "The time", json.dumps({"type": "object", "properties": {}}))


def test_test_model_calls_each_tool_once_with_generated_arguments() -> None:
    model = TestModel()
    assert isinstance(model, Model)
    assert model.model_id == "test-model"
    parts = list(
        model.stream(Request(messages=(user_message("weather?"),), tools=(WEATHER, TIME)), Context())
    )
    assert summary(parts[:-1]) == [
        ("tool-call", "call_1", "get_weather", '{"city": "Oslo"}'),
        ("tool-call", "call_2", "get_time", "{}"),
    ]
    finish = parts[-1]
    assert finish.finish_reason is FinishReason.TOOL_CALLS
    assert finish.usage.input > 0
    assert finish.usage.output > 0


def test_test_model_answers_from_the_tool_results() -> None:
    results = Message(
        role=Role.TOOL,
        content=[
            tool_result_part(ToolResult("call_1", "get_weather", "-3C")),
            tool_result_part(ToolResult("call_2", "get_time", "no clock", is_error=True)),
        ],
    )
    calls = Message(
        role=Role.ASSISTANT,
        content=[
            tool_call_part(ToolCall("call_1", "get_weather", "{}")),
            tool_call_part(ToolCall("call_2", "get_time", "{}")),
        ],
    )
    request = Request(messages=(user_message("weather?"), calls, results), tools=(WEATHER, TIME))
    parts = list(TestModel().stream(request, Context()))
    answer = "".join(p.text for p in parts[:-1])
    assert answer == "Here is what the tools said. get_weather returned: -3C get_time failed: no clock"
    assert all(p.kind.value == "text-delta" for p in parts[:-1])
    assert parts[-1].finish_reason is FinishReason.STOP
    assert parts[-1].usage.input > 0
    assert parts[-1].usage.output > 0


def test_test_model_without_tools_echoes_the_user() -> None:
    parts = list(TestModel(model_id="offline").stream(REQUEST, Context()))
    assert "".join(p.text for p in parts[:-1]) == "(TestModel, offline) You said: hi"
    assert parts[-1].finish_reason is FinishReason.STOP


def test_test_model_in_a_full_run() -> None:
    weather = FuncTool(
        "get_weather", lambda arguments, _c: f"{arguments['city']}: -3C", schema=WEATHER.input_schema
    )
    clock = FuncTool("get_time", lambda _i, _c: "23:00")
    on_step: list[Usage] = []
    result = run(options(TestModel(), tools=[weather, clock], on_step=on_step.append)).result()
    assert result.finish_reason is FinishReason.STOP
    assert "Oslo: -3C" in result.text
    assert "23:00" in result.text
    assert weather.calls == [{"city": "Oslo"}]
    assert clock.calls == [{}]
    assert len(result.steps) == 2
    assert on_step == [s.usage for s in result.steps]
    assert result.usage == on_step[0] + on_step[1]
    assert result.usage.input > 0
    assert result.usage.output > 0


THOUGHT_WITH_TOOLS = (
    "I can use get_weather and get_time; I will call each of them once and answer from the results."
)


def reasoning_of(parts: list[StreamPart]) -> tuple[str, list[Reasoning]]:
    """The streamed reasoning text and the reasoning blocks of ``parts``."""
    streamed = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    return streamed, [p.reasoning for p in parts if p.reasoning is not None]


def test_test_model_reasons_before_its_tool_calls() -> None:
    request = Request(messages=(user_message("weather?"),), tools=(WEATHER, TIME))
    parts = list(TestModel(reasoning=True).stream(request, Context()))
    kinds = [p.kind.value for p in parts]
    words = len(THOUGHT_WITH_TOOLS.split(" "))
    assert kinds == ["reasoning-delta"] * words + ["reasoning", "tool-call", "tool-call", "step-finish"]
    assert reasoning_of(parts) == (THOUGHT_WITH_TOOLS, [Reasoning(text=THOUGHT_WITH_TOOLS, format="test")])
    assert parts[0].text == "I"
    assert parts[1].text == " can"
    plain = list(TestModel().stream(request, Context()))
    assert [p.tool_call for p in parts if p.tool_call] == [p.tool_call for p in plain if p.tool_call]
    thought_tokens = (len(THOUGHT_WITH_TOOLS) + 3) // 4
    assert parts[-1].usage == Usage(
        input=plain[-1].usage.input, output=plain[-1].usage.output + thought_tokens
    )


@pytest.mark.parametrize(
    ("messages", "thought"),
    [
        ((user_message("hi"),), "No tool is needed; I will repeat the message."),
        (
            (
                user_message("weather?"),
                Message(
                    role=Role.ASSISTANT, content=[tool_call_part(ToolCall("call_1", "get_weather", "{}"))]
                ),
                Message(
                    role=Role.TOOL, content=[tool_result_part(ToolResult("call_1", "get_weather", "-3C"))]
                ),
            ),
            "The tools have answered; I will report what they said.",
        ),
    ],
)
def test_test_model_reasons_before_its_answer(messages: tuple[Message, ...], thought: str) -> None:
    tools = (WEATHER,) if len(messages) > 1 else ()
    parts = list(TestModel(reasoning=True).stream(Request(messages=messages, tools=tools), Context()))
    assert reasoning_of(parts) == (thought, [Reasoning(text=thought, format="test")])
    blocks = [i for i, p in enumerate(parts) if p.kind is StreamPartKind.REASONING]
    first_text = min(i for i, p in enumerate(parts) if p.kind is StreamPartKind.TEXT_DELTA)
    assert blocks == [first_text - 1]


@pytest.mark.parametrize(
    ("settings", "reasons"),
    [
        (None, True),
        (ModelSettings(thinking=True, thinking_budget=100), True),
        (ModelSettings(reasoning_effort="low"), True),
        (ModelSettings(thinking=False), False),
        (ModelSettings(reasoning_effort="none"), False),
    ],
)
def test_test_model_does_not_reason_when_the_settings_turn_thinking_off(
    settings: ModelSettings | None, reasons: bool
) -> None:
    parts = list(
        TestModel(reasoning=True).stream(
            Request(messages=(user_message("hi"),), settings=settings), Context()
        )
    )
    streamed, blocks = reasoning_of(parts)
    assert bool(blocks) is reasons
    assert bool(streamed) is reasons
    assert (
        "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
        == "(TestModel, offline) You said: hi"
    )


def test_test_model_reasoning_in_a_full_run() -> None:
    weather = FuncTool("get_weather", lambda _i, _c: "-3C", schema=WEATHER.input_schema)
    result = generate(options(TestModel(reasoning=True), tools=[weather]))
    assert result.reasoning == (
        "I can use get_weather; I will call it once and answer from the results.",
        "The tools have answered; I will report what they said.",
    )
    assert result.text == "Here is what the tools said. get_weather returned: -3C"
    assert [part.kind.value for part in result.messages[1].content] == ["reasoning", "tool-call"]
    assert repr(TestModel(reasoning=True)) == "TestModel(model_id='test-model', reasoning=True)"
    assert repr(TestModel()) == "TestModel(model_id='test-model')"


# --- check_model -------------------------------------------------------------------------------


def test_check_model_passes_for_the_doubles() -> None:
    check_model(TestModel())
    check_model(ScriptedModel([text_step("a"), text_step("b"), text_step("c")]))
    tools_request = Request(messages=(user_message("go"),), tools=(WEATHER,))
    check_model(TestModel(), tools_request)
    check_model(TestModel(reasoning=True))
    check_model(TestModel(reasoning=True), tools_request)


def thought(text: str = "hm", **fields: str) -> StreamPart:
    return StreamPart.reasoning_event(Reasoning(text=text, **fields))


def not_a_block() -> StreamPart:
    """A reasoning part whose ``reasoning`` was swapped after construction (the constructor refuses it)."""
    part = thought()
    object.__setattr__(part, "reasoning", "hm")
    return part


def test_check_model_accepts_reasoning_in_every_documented_shape() -> None:
    steps = [
        # deltas then the block, then text
        [
            StreamPart.reasoning_delta("h"),
            StreamPart.reasoning_delta("m"),
            thought(),
            text("a"),
            step_finish(),
        ],
        # deltas, text, and the block at the step's end; a block with only encrypted data; a signed call
        [
            StreamPart.reasoning_delta("hm"),
            text("a"),
            thought(),
            thought("", data="ZW5j"),
            StreamPart.tool_call_event(ToolCall("c1", "f", "{}", provider_data='{"sig": "x"}')),
            step_finish(FinishReason.TOOL_CALLS),
        ],
        [thought("", id="rs_1"), thought("", provider_data="[]"), thought("", signature="s"), step_finish()],
    ]
    for step in steps:
        check_model(ScriptedModel([step, step, step]))


class Broken:
    """A model whose one step is ``parts``; it checks the context unless told not to."""

    model_id = "broken"

    def __init__(self, parts: list[Any], *, watch_ctx: bool = True) -> None:
        self.parts = parts
        self.watch_ctx = watch_ctx

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        for part in self.parts:
            if self.watch_ctx:
                ctx.check()
            if isinstance(part, BaseException):
                raise part
            yield part


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (Broken([text("a")]), "0 step-finish parts; exactly one, last, is required"),
        (Broken([text("a"), step_finish(), step_finish()]), "2 step-finish parts"),
        (Broken([step_finish(), text("late")]), "exactly one, last, is required"),
        (Broken([text("a"), KeyError("choices")]), "a KeyError escaped (only ModelError may)"),
        (Broken([KeyError("choices")]), "a KeyError escaped (only ModelError may)"),
        (
            Broken(text_step("a"), watch_ctx=False),
            "a cancelled context did not stop the stream with Canceled",
        ),
        (Broken([call("", "search"), step_finish(FinishReason.TOOL_CALLS)]), "tool call without id or name"),
        (
            Broken([call("c1", "search", "[1]"), step_finish(FinishReason.TOOL_CALLS)]),
            "tool call 'c1': the arguments must be a JSON object, got list: '[1]'",
        ),
        (
            Broken([call("c1", "search", '{"q":'), step_finish(FinishReason.TOOL_CALLS)]),
            "tool call 'c1': the arguments are not valid JSON "
            "(Expecting value: line 1 column 6 (char 5)): '{\"q\":'",
        ),
        (
            Broken([call("c1", "search", nested(20_000)), step_finish(FinishReason.TOOL_CALLS)]),
            "tool call 'c1': the arguments are nested too deeply to decode",
        ),
        (Broken([step_finish(FinishReason.STEP_LIMIT)]), "is not a step reason"),
        (Broken(["text"]), "not a StreamPart"),
        (Broken([]), "yielded no parts"),
        (
            Broken([StreamPart.reasoning_delta("hm"), text("a"), step_finish()]),
            "reasoning-delta parts after the last reasoning part",
        ),
        (
            Broken([thought(), StreamPart.reasoning_delta("more"), step_finish()]),
            "reasoning-delta parts after the last reasoning part",
        ),
        (Broken([step_finish(), thought()]), "exactly one, last, is required"),
        (Broken([thought("", format="anthropic", origin="h"), step_finish()]), "carries an empty Reasoning"),
        (Broken([not_a_block(), step_finish()]), "a reasoning part carries str, not a Reasoning"),
        (
            Broken([thought(provider_data="{not json"), step_finish()]),
            "reasoning provider_data is not JSON text",
        ),
        (
            Broken(
                [
                    StreamPart.tool_call_event(ToolCall("c1", "f", "{}", provider_data="sig")),
                    step_finish(FinishReason.TOOL_CALLS),
                ]
            ),
            "tool call provider_data is not JSON text: 'sig'",
        ),
        (
            Broken([StreamPart.tool_result_event(ToolResult("c1", "f", "x")), step_finish()]),
            "a model may not emit 'tool-result' parts",
        ),
    ],
)
def test_check_model_names_the_broken_rule(model: Broken, message: str) -> None:
    with pytest.raises(AssertionError, match="model breaks the Model contract") as info:
        check_model(model)
    assert message in str(info.value)


def test_check_model_reports_a_model_without_the_seam() -> None:
    with pytest.raises(AssertionError, match="missing stream"):
        check_model(object())


def test_check_model_reports_a_failing_step() -> None:
    with pytest.raises(AssertionError, match="the step failed: overloaded"):
        check_model(Broken([ModelError(ErrorClass.OVERLOADED)]))


def test_check_model_wants_a_closable_stream() -> None:
    class ListModel:
        model_id = "list"

        def stream(self, request: Request, ctx: Context) -> Any:
            ctx.check()
            return iter(text_step("a"))

    with pytest.raises(AssertionError, match="the stream has no close"):
        check_model(ListModel())


def test_test_model_refuses_a_history_the_providers_refuse() -> None:
    """A tool call without its result: every API answers 400, so TestModel
    raises the adapters' ConfigError too, naming the message and the call."""
    broken = (
        user_message("hi"),
        Message(role=Role.ASSISTANT, content=[tool_call_part(ToolCall("c1", "add", "{}"))]),
        user_message("and?"),
    )
    with pytest.raises(ConfigError, match=r"messages\[1\] has the tool call 'c1' without a result"):
        next(iter(TestModel().stream(Request(messages=broken), Context())))
    with pytest.raises(RunError) as caught:
        generate(LoopOptions(model=TestModel(), messages=broken))
    assert isinstance(caught.value.err, ConfigError)
