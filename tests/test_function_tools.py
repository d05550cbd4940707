"""Function tools: ``@tool`` / ``FunctionTool`` (schemas, docstrings, validation,
conversion, context injection, result encoding, raw-schema tools)."""

import dataclasses
import enum
import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, Optional, TypedDict

import attrs
import pytest

import agentcore
from agentcore import (
    ConfigError,
    Context,
    FinishReason,
    FunctionTool,
    LoopOptions,
    Request,
    StreamPart,
    ToolCall,
    ToolResult,
    ToolSet,
    run,
    tool,
    user_message,
)
from agentcore.schema.docstrings import parse_docstring
from agentcore.testing import ScriptedModel
from agentcore.tools import ToolInputError

if sys.version_info >= (3, 11):
    from typing import NotRequired, Required
else:  # pragma: no cover - Python 3.10
    from typing_extensions import NotRequired, Required

# ---------------------------------------------------------------------------
# Types used by the tools below (module level, so that hints resolve).


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    """A point on the map.

    Attributes:
        x: east-west offset in metres.
        y: north-south offset in metres.
    """

    x: int
    y: float = 0.0
    tags: tuple[str, ...] = attrs.field(factory=tuple)


@attrs.frozen
class Stop:
    name: str
    at: Point
    color: Color = Color.RED


@dataclasses.dataclass
class Window:
    start: int
    end: int = 10


class Address(TypedDict):
    """A postal address."""

    street: str
    zip: NotRequired[str]


class Filters(TypedDict, total=False):
    color: Color
    limit: Required[int]


@attrs.define
class Node:
    value: int
    children: "list[Node]" = attrs.field(factory=list)


def _schema(t: FunctionTool[..., Any]) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(t.definition.input_schema)
    return schema


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


# ---------------------------------------------------------------------------
# Schemas: a table of functions and the exact schema each one gets.


def f_scalars(s: str, i: int, x: float, b: bool, n: None) -> None: ...
def f_defaults(limit: int = 5, name: str = "a", on: bool = False, ratio: float = 0.5) -> None: ...
def f_none() -> None: ...
def f_lists(a: list[int], b: list, c: list[list[str]]) -> None: ...  # type: ignore[type-arg]  # bare generics on purpose: their schema is tested
def f_tuples(pair: tuple[int, str], many: tuple[float, ...], bare: tuple, none: tuple[()]) -> None: ...  # type: ignore[type-arg]  # bare generics on purpose: their schema is tested
def f_dicts(a: dict[str, int], b: dict, c: dict[str, Any]) -> None: ...  # type: ignore[type-arg]  # bare generics on purpose: their schema is tested
def f_set(tags: set[str], frozen: frozenset[int]) -> None: ...
def f_literals(mode: Literal["fast", "slow"], n: Literal[1, 2], mixed: Literal["a", 1]) -> None: ...
def f_enums(color: Color, level: Level = Level.LOW) -> None: ...
def f_optional(a: Optional[int], b: int | None = None, c: int | str = 1) -> None: ...  # noqa: UP045
def f_any(value: Any, obj: object) -> None: ...
def f_annotated(city: Annotated[str, "the city, e.g. Paris"], n: Annotated[int, {"x": 1}] = 1) -> None: ...
def f_kwargs(name: str, **extra: int) -> None: ...
def f_any_kwargs(**extra: Any) -> None: ...
def f_enum_default(color: Color = Color.GREEN, when: object = b"raw") -> None: ...


POINT = {
    "description": "A point on the map.",
    "type": "object",
    "properties": {
        "x": {"description": "east-west offset in metres.", "type": "integer"},
        "y": {"description": "north-south offset in metres.", "type": "number", "default": 0.0},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["x"],
    "additionalProperties": False,
}
COLOR = {"type": "string", "enum": ["red", "green"]}


def f_attrs(stop: Stop, where: Point | None = None) -> None: ...
def f_dataclass(window: Window) -> None: ...
def f_typed_dicts(address: Address, filters: Filters) -> None: ...
def f_ctx(query: str, ctx: Context) -> None: ...
def f_ctx_other_name(query: str, run_context: Context | None = None) -> None: ...
def f_ctx_unannotated(ctx, query: str) -> None: ...  # type: ignore[no-untyped-def]  # unannotated on purpose: its schema is tested
def f_positional(a: int, /, b: int = 2, *, c: int = 3) -> None: ...


SCHEMAS: list[tuple[Callable[..., Any], dict[str, Any]]] = [
    (
        f_scalars,
        _obj(
            {
                "s": {"type": "string"},
                "i": {"type": "integer"},
                "x": {"type": "number"},
                "b": {"type": "boolean"},
                "n": {"type": "null"},
            },
            ["s", "i", "x", "b", "n"],
        ),
    ),
    (
        f_defaults,
        _obj(
            {
                "limit": {"type": "integer", "default": 5},
                "name": {"type": "string", "default": "a"},
                "on": {"type": "boolean", "default": False},
                "ratio": {"type": "number", "default": 0.5},
            }
        ),
    ),
    (f_none, _obj({})),
    (
        f_lists,
        _obj(
            {
                "a": {"type": "array", "items": {"type": "integer"}},
                "b": {"type": "array"},
                "c": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
            },
            ["a", "b", "c"],
        ),
    ),
    (
        f_tuples,
        _obj(
            {
                "pair": {
                    "type": "array",
                    "prefixItems": [{"type": "integer"}, {"type": "string"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                "many": {"type": "array", "items": {"type": "number"}},
                "bare": {"type": "array"},
                "none": {"type": "array", "maxItems": 0},
            },
            ["pair", "many", "bare", "none"],
        ),
    ),
    (
        f_dicts,
        _obj(
            {
                "a": {"type": "object", "additionalProperties": {"type": "integer"}},
                "b": {"type": "object"},
                "c": {"type": "object"},
            },
            ["a", "b", "c"],
        ),
    ),
    (
        f_set,
        _obj(
            {
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "frozen": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            },
            ["tags", "frozen"],
        ),
    ),
    (
        f_literals,
        _obj(
            {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "n": {"type": "integer", "enum": [1, 2]},
                "mixed": {"enum": ["a", 1]},
            },
            ["mode", "n", "mixed"],
        ),
    ),
    (
        f_enums,
        _obj(
            {"color": COLOR, "level": {"type": "integer", "enum": [1, 2], "default": 1}},
            ["color"],
        ),
    ),
    (
        f_optional,
        _obj(
            {
                "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "b": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "c": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1},
            },
            ["a"],
        ),
    ),
    (f_any, _obj({"value": {}, "obj": {}}, ["value", "obj"])),
    (
        f_annotated,
        _obj(
            {
                "city": {"description": "the city, e.g. Paris", "type": "string"},
                "n": {"type": "integer", "default": 1},
            },
            ["city"],
        ),
    ),
    (
        f_kwargs,
        {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": {"type": "integer"},
        },
    ),
    (f_any_kwargs, {"type": "object", "properties": {}, "additionalProperties": True}),
    (
        # A default that JSON cannot hold is left out of the schema; the parameter stays optional.
        f_enum_default,
        _obj({"color": {**COLOR, "default": "green"}, "when": {}}),
    ),
    (
        f_attrs,
        _obj(
            {
                "stop": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "at": POINT,
                        "color": {**COLOR, "default": "red"},
                    },
                    "required": ["name", "at"],
                    "additionalProperties": False,
                },
                "where": {"anyOf": [POINT, {"type": "null"}], "default": None},
            },
            ["stop"],
        ),
    ),
    (
        f_dataclass,
        _obj(
            {
                "window": _obj(
                    {"start": {"type": "integer"}, "end": {"type": "integer", "default": 10}}, ["start"]
                )
            },
            ["window"],
        ),
    ),
    (
        f_typed_dicts,
        _obj(
            {
                "address": {
                    "description": "A postal address.",
                    **_obj({"street": {"type": "string"}, "zip": {"type": "string"}}, ["street"]),
                },
                "filters": _obj({"color": COLOR, "limit": {"type": "integer"}}, ["limit"]),
            },
            ["address", "filters"],
        ),
    ),
    (f_ctx, _obj({"query": {"type": "string"}}, ["query"])),
    (f_ctx_other_name, _obj({"query": {"type": "string"}}, ["query"])),
    (f_ctx_unannotated, _obj({"query": {"type": "string"}}, ["query"])),
    (
        f_positional,
        _obj(
            {
                "a": {"type": "integer"},
                "b": {"type": "integer", "default": 2},
                "c": {"type": "integer", "default": 3},
            },
            ["a"],
        ),
    ),
]


@pytest.mark.parametrize(("func", "expected"), SCHEMAS, ids=[f.__name__ for f, _ in SCHEMAS])
def test_schema_from_signature(func: Callable[..., Any], expected: dict[str, Any]) -> None:
    t = tool(func)
    assert _schema(t) == expected
    assert t.definition.name == func.__name__


def test_schemas_are_valid_draft_2020_12() -> None:
    import jsonschema

    for func, _ in SCHEMAS:
        jsonschema.Draft202012Validator.check_schema(_schema(tool(func)))


def test_string_annotations_resolve() -> None:
    def f(color: "Color", points: "list[Point]") -> str:
        return ""

    schema = _schema(tool(f))
    assert schema["properties"]["color"] == COLOR
    assert schema["properties"]["points"] == {"type": "array", "items": POINT}


# ---------------------------------------------------------------------------
# Docstrings


def documented(city: str, days: int = 1, *, units: str = "metric") -> str:
    """Get the weather forecast for a city.

    Uses the national weather service; results are cached
    for ten minutes.

    Args:
        city: the city's name, as
            people write it (for example "Paris").
        days (int): how many days to forecast,
            from 1 to 7.

            Later days are less certain.
        units: "metric" or "imperial".

    Returns:
        The forecast as text.

    Raises:
        ValueError: unknown city.
    """
    return ""


def test_docstring_gives_description_and_argument_descriptions() -> None:
    t = tool(documented)
    assert t.definition.description == (
        "Get the weather forecast for a city.\n\n"
        "Uses the national weather service; results are cached\nfor ten minutes."
    )
    props = _schema(t)["properties"]
    assert props["city"] == {
        "description": 'the city\'s name, as people write it (for example "Paris").',
        "type": "string",
    }
    assert props["days"] == {
        "description": "how many days to forecast, from 1 to 7.\n\nLater days are less certain.",
        "type": "integer",
        "default": 1,
    }
    assert props["units"]["description"] == '"metric" or "imperial".'


def test_parse_docstring_edge_cases() -> None:
    doc = parse_docstring(
        """Summary line.

        Args:
            *args: ignored positional.
            **kwargs: extra options.
            plain:
                text on the next line.
        Note:
            x: not an argument.
        """
    )
    assert doc.summary == "Summary line."
    assert dict(doc.args) == {
        "args": "ignored positional.",
        "kwargs": "extra options.",
        "plain": "text on the next line.",
    }
    assert parse_docstring(None).summary == ""
    assert parse_docstring("Only a summary.\nOn two lines.").summary == "Only a summary.\nOn two lines."
    assert parse_docstring("Example: not a section header.").summary == "Example: not a section header."


def test_no_docstring_and_overrides() -> None:
    def bare(x: int) -> int:
        return x

    assert tool(bare).definition.description == ""
    t = tool(name="lookup", description="Look it up.")(documented)
    assert (t.definition.name, t.definition.description) == ("lookup", "Look it up.")
    assert tool()(bare).definition.name == "bare"
    explicit = FunctionTool(documented, name="weather")
    assert explicit.definition.name == "weather"
    assert explicit.definition.description.startswith("Get the weather forecast")


def test_annotated_description_wins_over_docstring() -> None:
    def f(city: Annotated[str, "from Annotated"], where: Point) -> None:
        """Do it.

        Args:
            city: from the docstring.
            where: where it is.
        """

    props = _schema(tool(f))["properties"]
    assert props["city"]["description"] == "from Annotated"
    # The parameter's own description replaces the nested class's summary.
    assert props["where"]["description"] == "where it is."
    assert props["where"]["properties"]["x"]["description"] == "east-west offset in metres."


# ---------------------------------------------------------------------------
# Calling: validation, conversion, binding


def test_decorated_function_is_still_callable_and_a_tool() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert add(1) == 3
    assert add.__name__ == "add"
    assert add.__doc__ == "Add two numbers."
    assert isinstance(add, agentcore.Tool)
    assert list(ToolSet([add])) == ["add"]
    assert add.execute({"a": 40}, Context()) == "42"
    assert add.execute({"a": 40, "b": 1}, Context()) == "41"
    assert repr(add) == "FunctionTool('add')"


def test_arguments_are_converted_to_annotated_types() -> None:
    seen: dict[str, Any] = {}

    @tool
    def plan(
        stop: Stop,
        color: Color,
        level: Level,
        window: Window,
        filters: Filters,
        pair: tuple[int, Point],
        tags: set[str],
        count: int,
        ratio: float,
        mode: Literal[Color.GREEN, "other"],
        maybe: Point | None = None,
        either: Point | list[int] = (),  # type: ignore[assignment]  # a default outside the hint on purpose
    ) -> str:
        seen.update(locals())
        return "ok"

    arguments = {
        "stop": {"name": "home", "at": {"x": 1, "y": 2, "tags": ["a"]}, "color": "green"},
        "color": "red",
        "level": 2,
        "window": {"start": 3},
        "filters": {"color": "green", "limit": 5},
        "pair": [7, {"x": 3}],
        "tags": ["a", "b", "a"],
        "count": 4.0,
        "ratio": 3,
        "mode": "green",
        "maybe": {"x": 9},
        "either": {"x": 5},
    }
    assert plan.execute({**arguments, "tags": ["a", "b"]}, Context()) == "ok"
    assert seen["stop"] == Stop("home", Point(1, 2.0, ("a",)), Color.GREEN)
    assert seen["color"] is Color.RED
    assert seen["level"] is Level.HIGH
    assert seen["window"] == Window(3)
    assert seen["filters"] == {"color": Color.GREEN, "limit": 5}
    assert seen["pair"] == (7, Point(3))
    assert seen["tags"] == {"a", "b"}
    assert type(seen["count"]) is int
    assert seen["count"] == 4
    assert type(seen["ratio"]) is float
    assert seen["ratio"] == 3.0
    assert seen["mode"] is Color.GREEN
    assert seen["maybe"] == Point(9)
    assert seen["either"] == Point(5)

    assert plan.execute({**arguments, "either": [1, 2], "maybe": None, "tags": []}, Context())
    assert seen["either"] == [1, 2]
    assert seen["maybe"] is None
    assert seen["tags"] == set()


def test_positional_only_keyword_only_and_kwargs_are_bound() -> None:
    calls: list[tuple[Any, ...]] = []

    @tool
    def f(a: int, /, b: int = 2, *, c: int = 3, **rest: Color) -> str:
        calls.append((a, b, c, rest))
        return "done"

    assert f.execute({"a": 1, "c": 9, "tone": "red"}, Context()) == "done"
    assert calls == [(1, 2, 9, {"tone": Color.RED})]


def test_invalid_arguments_are_reported_with_path_and_reason() -> None:
    ran = []

    @tool
    def route(stops: list[Stop], color: Color, limit: int = 3) -> str:
        ran.append(True)
        return ""

    bad = {
        "stops": [{"name": "a", "at": {"x": 1}}, {"name": 2, "at": {"x": "far"}}],
        "color": "blue",
        "zzz": 1,
    }
    with pytest.raises(ToolInputError) as info:
        route.execute(bad, Context())
    assert ran == []
    assert str(info.value) == (
        "invalid arguments for tool 'route'; it was not run:\n"
        "- (top level): Additional properties are not allowed ('zzz' was unexpected)\n"
        "- color: 'blue' is not one of ['red', 'green']\n"
        "- stops[1].at.x: 'far' is not of type 'integer'\n"
        "- stops[1].name: 2 is not of type 'string'\n"
        "Call it again with arguments that match its input schema."
    )
    with pytest.raises(ToolInputError, match=r"\(top level\): 'stops' is a required property"):
        route.execute({"color": "red"}, Context())
    assert ran == []


def test_optional_mismatch_reports_the_inner_error() -> None:
    @tool
    def f(where: Point | None = None) -> str:
        return ""

    with pytest.raises(ToolInputError, match=r"- where\.x: 'east' is not of type 'integer'\n"):
        f.execute({"where": {"x": "east"}}, Context())


def test_conversion_failure_names_the_argument() -> None:
    @attrs.frozen
    class Positive:
        n: int = attrs.field(validator=attrs.validators.gt(0))

    def f(p: Positive) -> str:
        return ""

    f.__annotations__["p"] = Positive  # a local class: give the real object, not a name
    t = tool(f)
    with pytest.raises(ToolInputError, match=r"\n- p\.n: 'n' must be > 0: -1$") as info:
        t.execute({"p": {"n": -1}}, Context())
    assert isinstance(info.value.__cause__, ValueError)


def _call_then_answer(*calls: ToolCall) -> ScriptedModel:
    return ScriptedModel(
        [
            [
                *(StreamPart.tool_call_event(c) for c in calls),
                StreamPart.step_finish(FinishReason.TOOL_CALLS),
            ],
            [StreamPart.text_delta("done"), StreamPart.step_finish(FinishReason.STOP)],
        ]
    )


def test_validation_errors_reach_the_model_through_run() -> None:
    ran: list[str] = []

    @tool
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
        """Current weather."""
        ran.append(city)
        return {"city": city, "temp": 21.5, "unit": unit}

    model = _call_then_answer(
        ToolCall("call_1", "get_weather", '{"city": 42}'),
        ToolCall("call_2", "get_weather", '{"city": "Paris", "unit": "k"}'),
        ToolCall("call_3", "get_weather", '{"city": "Oslo"}'),
    )
    result = run(LoopOptions(model=model, messages=[user_message("weather?")], tools=[get_weather])).result()
    assert ran == ["Oslo"]
    first, second, third = result.steps[0].tool_results
    assert first == ToolResult(
        "call_1",
        "get_weather",
        "Error: ToolInputError: invalid arguments for tool 'get_weather'; it was not run:\n"
        "- city: 42 is not of type 'string'\n"
        "Call it again with arguments that match its input schema.",
        True,
    )
    assert second.is_error
    assert "- unit: 'k' is not one of ['c', 'f']" in second.content
    assert third == ToolResult("call_3", "get_weather", '{"city": "Oslo", "temp": 21.5, "unit": "c"}', False)
    # The model saw the same results in its next request.
    assert model.requests[1].messages[-1].tool_results == [first, second, third]
    assert json.loads(model.requests[0].tools[0].input_schema)["required"] == ["city"]


# ---------------------------------------------------------------------------
# Context injection


def test_ctx_parameter_receives_the_runs_context_and_sees_cancel() -> None:
    started = threading.Event()
    finished = threading.Event()
    seen: dict[str, Any] = {}

    @tool
    def slow(seconds: float, ctx: Context) -> str:
        seen["ctx"] = ctx
        started.set()
        seen["cancelled"] = ctx.wait(seconds)
        finished.set()
        return "woke"

    def step_one(request: Request, ctx: Context) -> Iterator[StreamPart]:
        seen["model_ctx"] = ctx
        yield StreamPart.tool_call_event(ToolCall("c1", "slow", '{"seconds": 30}'))
        yield StreamPart.step_finish(FinishReason.TOOL_CALLS)

    model = ScriptedModel([step_one, [StreamPart.step_finish(FinishReason.STOP)]])
    reader = run(LoopOptions(model=model, messages=[user_message("go")], tools=[slow]))
    assert started.wait(5)
    assert seen["ctx"] is seen["model_ctx"]
    assert not seen["ctx"].cancelled
    reader.close()
    assert finished.wait(5)
    assert seen["cancelled"] is True


def test_ctx_by_annotation_and_positional() -> None:
    got: list[Any] = []

    @tool
    def f(run_context: Context, /, n: int) -> str:
        got.append((run_context, n))
        return ""

    ctx = Context()
    f.execute({"n": 1}, ctx)
    assert got == [(ctx, 1)]


# ---------------------------------------------------------------------------
# Results


class Mood(str, enum.Enum):
    HAPPY = "happy"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        ("", ""),
        ("ünïcode", "ünïcode"),
        (Mood.HAPPY, "happy"),
        (Color.GREEN, "green"),
        (Level.HIGH, "2"),
        (None, "null"),
        (3, "3"),
        (2.5, "2.5"),
        (True, "true"),
        ([1, "a", None], '[1, "a", null]'),
        ((1, 2), "[1, 2]"),
        ({"ü": [Color.RED]}, '{"ü": ["red"]}'),
        (Point(1, 2.5, ("t",)), '{"x": 1, "y": 2.5, "tags": ["t"]}'),
        (Stop("s", Point(0)), '{"name": "s", "at": {"x": 0, "y": 0.0, "tags": []}, "color": "red"}'),
        (Window(1), '{"start": 1, "end": 10}'),
        ({"b", "a"}, '["a", "b"]'),
    ],
)
def test_results_are_encoded(value: Any, text: str) -> None:
    @tool
    def f() -> Any:
        return value

    assert f.execute({}, Context()) == text


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"raw", "Object of type bytes is not JSON serializable"),
        (complex(1, 2), "Object of type complex is not JSON serializable"),
        (float("nan"), "Out of range float values are not JSON compliant"),
        ({Color.RED: 1}, "keys must be str"),
    ],
)
def test_unencodable_results_raise_a_clear_error(value: Any, reason: str) -> None:
    @tool
    def f() -> Any:
        return value

    with pytest.raises(
        TypeError, match=f"tool 'f' returned a value of type {type(value).__name__} that cannot be sent"
    ) as info:
        f.execute({}, Context())
    assert reason in str(info.value)


def test_unencodable_result_becomes_an_error_result_in_a_run() -> None:
    @tool
    def today() -> complex:
        return complex(1, 2)

    model = _call_then_answer(ToolCall("c1", "today", "{}"))
    result = run(LoopOptions(model=model, messages=[user_message("date?")], tools=[today])).result()
    (res,) = result.steps[0].tool_results
    assert res.is_error
    assert res.content.startswith(
        "Error: TypeError: tool 'today' returned a value of type complex that cannot be sent"
    )


# ---------------------------------------------------------------------------
# Raw-schema tools

SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"q": {"type": "string", "minLength": 1}, "k": {"type": "integer", "maximum": 10}},
    "required": ["q"],
    "additionalProperties": False,
}


def test_from_schema_validates_and_passes_the_dict() -> None:
    got: list[dict[str, Any]] = []

    def search(arguments: dict[str, Any]) -> list[str]:
        got.append(arguments)
        return [arguments["q"]] * arguments.get("k", 1)

    t = FunctionTool.from_schema("search", "Search the docs.", SEARCH_SCHEMA, search)
    assert t.definition == agentcore.ToolDefinition("search", "Search the docs.", json.dumps(SEARCH_SCHEMA))
    assert t.execute({"q": "x", "k": 2}, Context()) == '["x", "x"]'
    assert got == [{"q": "x", "k": 2}]
    with pytest.raises(ToolInputError) as info:
        t.execute({"q": "", "k": 11}, Context())
    assert str(info.value).splitlines()[1:3] == [
        "- k: 11 is greater than the maximum of 10",
        "- q: '' should be non-empty",
    ]
    assert len(got) == 1
    assert t({"q": "direct"}) == ["direct"]


def test_from_schema_with_ctx_and_json_text() -> None:
    seen: list[Any] = []

    def echo(arguments: dict[str, Any], ctx: Context) -> str:
        seen.append(ctx)
        return str(arguments["q"])

    t = FunctionTool.from_schema("echo", "", json.dumps(SEARCH_SCHEMA), echo)
    ctx = Context()
    assert t.execute({"q": "hi"}, ctx) == "hi"
    assert seen == [ctx]

    model = _call_then_answer(ToolCall("c1", "echo", '{"q": 5}'))
    result = run(LoopOptions(model=model, messages=[user_message("x")], tools=[t])).result()
    assert result.steps[0].tool_results[0].content == (
        "Error: ToolInputError: invalid arguments for tool 'echo'; it was not run:\n"
        "- q: 5 is not of type 'string'\n"
        "Call it again with arguments that match its input schema."
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "array"}, '"type": "object"'),
        ({"properties": {}}, '"type": "object"'),
        ("not json", "the schema is not JSON"),
        (
            {"type": "object", "properties": {"a": {"type": "strnig"}}},
            "not a valid JSON Schema at properties.a.type",
        ),
        ({"type": "object", "required": "a"}, "not a valid JSON Schema at required"),
        ({"type": "object", "default": object()}, "the schema is not JSON"),
    ],
)
def test_from_schema_rejects_bad_schemas(schema: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        FunctionTool.from_schema("t", "", schema, lambda arguments: "")


# ---------------------------------------------------------------------------
# Errors at decoration time


async def f_async_gen(x: int) -> Any:
    yield x


def f_gen(x: int) -> Iterator[int]:
    yield x


def f_star_args(*names: str) -> None: ...
def f_unannotated(x) -> None: ...  # type: ignore[no-untyped-def]  # unannotated on purpose: its schema is tested
def f_bytes(data: bytes) -> None: ...
def f_int_keys(counts: dict[int, str]) -> None: ...
def f_bad_ctx(ctx: str) -> None: ...
def f_two_ctx(ctx: Context, other: Context) -> None: ...
def f_bad_literal(x: Literal[b"raw"]) -> None: ...
def f_nested_bad(p: list[tuple[int, bytes]]) -> None: ...
def f_recursive(node: Node) -> None: ...
def f_not_a_type(x: [int]) -> None: ...  # type: ignore[valid-type,misc]  # not a type on purpose: refused
def f_unresolved(x: "Missing") -> None: ...  # type: ignore[name-defined]  # noqa: F821  # unresolvable on purpose


@pytest.mark.parametrize(
    ("func", "message"),
    [
        (f_async_gen, "is an async generator; a tool returns its whole result"),
        (f_gen, "is a generator function"),
        (f_star_args, r"\*names cannot be filled from JSON arguments"),
        (f_unannotated, r"parameter 'x' has no type hint; annotate it \(typing.Any accepts any JSON value\)"),
        (f_bytes, r"parameter 'data': unsupported type hint bytes; supported: str"),
        (f_int_keys, "dict keys must be str"),
        (f_bad_ctx, "parameter 'ctx' receives the run's Context; annotate it agentcore.Context or rename it"),
        (f_two_ctx, "at most one Context parameter"),
        (f_bad_literal, r"Literal values must be str, int, float, bool or None, got \[b'raw'\]"),
        (f_nested_bad, r"parameter 'p' \(items\) \(item 1\): unsupported type hint bytes"),
        (f_recursive, "Node refers to itself; recursive types are not supported"),
        (f_not_a_type, r"parameter 'x': unsupported type hint \[<class 'int'>\]"),
        (f_unresolved, "cannot read the signature and type hints of .*name 'Missing' is not defined"),
        (lambda x: x, "invalid tool name '<lambda>'"),
    ],
)
def test_bad_functions_are_refused_at_decoration(func: Callable[..., Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        tool(func)
    if func.__name__ != "<lambda>":
        assert str(info.value).startswith(f"tool {func.__name__!r}: ")


def test_nameless_callables_are_refused() -> None:
    with pytest.raises(ConfigError, match="has no __name__; pass name="):
        tool(Nameless())


class Nameless:
    def __call__(self, x: int) -> int:
        return x


def test_methods_become_tools_when_bound() -> None:
    class Counter:
        def __init__(self) -> None:
            self.total = 0

        def add(self, n: int) -> int:
            """Add n to the total."""
            self.total += n
            return self.total

    counter = Counter()
    t = FunctionTool(counter.add)
    assert _schema(t) == _obj({"n": {"type": "integer"}}, ["n"])
    assert (t.definition.name, t.definition.description) == ("add", "Add n to the total.")
    assert t.execute({"n": 2}, Context()) == "2"
    assert counter.total == 2
    with pytest.raises(
        ConfigError, match=r"parameter 'self' has no type hint.*make the tool from the bound method"
    ):
        tool(Counter.add)


def test_bad_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="invalid tool name 'has space'"):
        tool(name="has space")(f_none)
    with pytest.raises(ConfigError, match="invalid tool name"):
        FunctionTool(f_none, name="x" * 65)
    assert FunctionTool(f_none, name="x" * 64).definition.name == "x" * 64


# ---------------------------------------------------------------------------
# Import cost


def test_import_agentcore_does_not_import_jsonschema() -> None:
    code = "import agentcore, sys; assert 'jsonschema' not in sys.modules, 'jsonschema imported'"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    # Defining a function tool does not import it either; validating does.
    code = (
        "import sys, agentcore\n"
        "@agentcore.tool\n"
        "def f(x: int) -> int:\n"
        "    return x\n"
        "assert 'jsonschema' not in sys.modules\n"
        "assert f.execute({\"x\": 1}, agentcore.Context()) == '1'\n"
        "assert 'jsonschema' in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
