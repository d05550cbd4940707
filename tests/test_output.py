"""agentcore.output: compiling an output_type, checking answers, reading partial JSON."""

from __future__ import annotations

import dataclasses
import datetime
import json
import sys
from typing import Any, TypedDict

import attrs
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import ConfigError, Usage
from agentcore.output import OUTPUT_TOOL, OutputValidationError, output_spec, partial_json, retry_prompt
from agentcore.types import OutputSchema


@dataclasses.dataclass
class City:
    """A city."""

    name: str
    founded: datetime.date
    population: int = 0


class Person(TypedDict):
    name: str
    age: int


class Movie(pydantic.BaseModel):
    title: str
    year: int = pydantic.Field(ge=1888)


CITY_SCHEMA = {
    "description": "A city.",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "founded": {"type": "string", "format": "date"},
        "population": {"type": "integer", "default": 0},
    },
    "required": ["name", "founded"],
    "additionalProperties": False,
}


def test_a_dataclass_compiles_to_its_schema_and_its_answers_to_instances() -> None:
    spec = output_spec(City)
    assert spec.name == "City"
    assert spec.schema == CITY_SCHEMA
    assert spec.request_schema == OutputSchema("City", json.dumps(CITY_SCHEMA))
    assert spec.parse('{"name": "Oslo", "founded": "1048-01-01"}') == (
        City("Oslo", datetime.date(1048, 1, 1)),
        [],
    )
    assert spec.parse('{"name": "Oslo", "founded": "soon", "mayor": "x"}') == (
        None,
        [
            "(top level): Additional properties are not allowed ('mayor' was unexpected)",
            "founded: 'soon' is not a 'date'",
        ],
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        ('  \n{"name": "Ada", "age": 36}\n', {"name": "Ada", "age": 36}),
        ('```json\n{"name": "Ada", "age": 36}\n```', {"name": "Ada", "age": 36}),
        ('```\n{"name": "Ada", "age": 36}\n```\n', {"name": "Ada", "age": 36}),
    ],
)
def test_a_typed_dict_answer_with_or_without_a_code_fence(text: str, value: dict[str, Any]) -> None:
    assert output_spec(Person).parse(text) == (value, [])


def test_a_pydantic_model_is_built_and_its_constraints_checked() -> None:
    spec = output_spec(Movie)
    assert spec.parse('{"title": "Metropolis", "year": 1927}') == (Movie(title="Metropolis", year=1927), [])
    assert spec.parse('{"title": "Too early", "year": 1800}') == (
        None,
        ["year: 1800 is less than the minimum of 1888"],
    )


def test_a_raw_schema_gives_the_parsed_json_and_its_title_names_it() -> None:
    schema = {
        "title": "the answer!",
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
    }
    spec = output_spec(schema)
    assert spec.name == "the_answer"
    assert spec.schema == schema
    assert spec.convert is None
    assert spec.parse('{"n": 3}') == ({"n": 3}, [])
    assert output_spec({"type": "integer"}).name == "output"


@pytest.mark.parametrize(
    ("output_type", "message"),
    [
        ({"type": "nope"}, "LoopOptions.output_type: not a valid JSON Schema at type"),
        ({"type": "object", "default": object()}, "LoopOptions.output_type: the schema is not JSON"),
        (bytes, "LoopOptions.output_type: the type: unsupported type hint bytes"),
    ],
)
def test_bad_output_types_are_config_errors(output_type: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        output_spec(output_type)


def test_bad_answers_say_what_is_wrong() -> None:
    spec = output_spec(City)
    value, problems = spec.parse("Oslo, founded 1048")
    assert value is None
    assert problems == [
        "(top level): the answer is not valid JSON (Expecting value: line 1 column 1 (char 0))"
    ]


@dataclasses.dataclass
class Positive:
    n: int

    def __post_init__(self) -> None:
        if self.n <= 0:
            raise ValueError("n must be positive")


class Reading(pydantic.BaseModel):
    city: str
    celsius: float

    @pydantic.field_validator("celsius")
    @classmethod
    def on_earth(cls, value: float) -> float:
        if value > 60:
            raise ValueError("no place on Earth is that hot")
        return value


class Trip(pydantic.BaseModel):
    stops: list[Reading]


@attrs.frozen
class Point:
    x: int = attrs.field()
    y: int = attrs.field(validator=attrs.validators.ge(0))

    @x.validator
    def _east(self, _attribute: object, value: int) -> None:
        if value < 0:
            raise ValueError("must be east of the origin")


@attrs.frozen
class Route:
    name: str
    points: tuple[Point, ...]
    legs: dict[str, Positive] = attrs.Factory(dict)


@pytest.mark.parametrize(
    ("output_type", "answer", "problem"),
    [
        (Reading, {"city": "Lima", "celsius": 99}, "celsius: Value error, no place on Earth is that hot"),
        (
            Trip,
            {"stops": [{"city": "Oslo", "celsius": 1}, {"city": "Lima", "celsius": 99}]},
            "stops[1].celsius: Value error, no place on Earth is that hot",
        ),
        (Point, {"x": -1, "y": 0}, "x: must be east of the origin"),
        (Point, {"x": 1, "y": -2}, "y: 'y' must be >= 0: -2"),
        (
            Route,
            {"name": "r", "points": [{"x": 1, "y": 0}, {"x": -3, "y": 0}]},
            "points[1].x: must be east of the origin",
        ),
        (Route, {"name": "r", "points": [], "legs": {"a": {"n": 0}}}, "legs.a: n must be positive"),
        (
            list[Trip],
            [{"stops": []}, {"stops": [{"city": "Lima", "celsius": 61}]}],
            "[1].stops[0].celsius: Value error, no place on Earth is that hot",
        ),
        # A check of the whole object (dataclass __post_init__) names the object.
        (Positive, {"n": -1}, "(top level): n must be positive"),
    ],
)
def test_a_validator_that_refuses_names_the_field_and_its_message(
    output_type: Any, answer: Any, problem: str
) -> None:
    # The schema passes; the class's own validator refuses the value.
    spec = output_spec(output_type)
    assert spec.validator.problems(answer) == []
    assert spec.parse(json.dumps(answer)) == (None, [problem])


def test_the_final_answer_tool_wraps_a_type_that_is_not_an_object() -> None:
    spec = output_spec(list[int])
    tool = spec.tool
    assert tool.name == OUTPUT_TOOL
    assert json.loads(tool.input_schema) == {
        "type": "object",
        "properties": {"value": {"type": "array", "items": {"type": "integer"}}},
        "required": ["value"],
        "additionalProperties": False,
    }
    assert spec.parse('{"value": [1, 2]}', tool=True) == ([1, 2], [])
    assert spec.parse("[1, 2]", tool=True) == (
        None,
        ['(top level): the arguments must be {"value": <the answer>}'],
    )
    # An object type is the tool's input as it is.
    assert json.loads(output_spec(City).tool.input_schema) == CITY_SCHEMA
    assert output_spec(City).parse('{"name": "Rome", "founded": "0753-04-21"}', tool=True)[1] == []


def test_the_error_carries_the_raw_answer_problems_usage_and_attempts() -> None:
    err = OutputValidationError(
        '{"n": "x"}', ["n: 'x' is not of type 'integer'"], Usage(input=10, output=4), 2
    )
    assert (err.raw, err.problems, err.usage, err.attempts) == (
        '{"n": "x"}',
        ("n: 'x' is not of type 'integer'",),
        Usage(input=10, output=4),
        2,
    )
    assert str(err) == (
        "the model's final answer does not match the output type (2 answers checked):\n"
        "- n: 'x' is not of type 'integer'"
    )


def test_the_retry_prompt_lists_the_problems() -> None:
    assert retry_prompt(["a: bad", "b: worse"]) == (
        "Your final answer is not valid:\n- a: bad\n- b: worse\n"
        "Answer again with only the corrected JSON value."
    )


# --- partial_json ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", None),
        ("   ", None),
        ("{", {}),
        ('{"na', {}),
        ('{"name"', {}),
        ('{"name":', {}),
        ('{"name": "Os', {"name": "Os"}),
        ('{"name": "Oslo", "pop', {"name": "Oslo"}),
        ('{"name": "Oslo", "population": 70', {"name": "Oslo", "population": 70}),
        ('{"a": [1, 2, tr', {"a": [1, 2]}),
        ('{"a": [1, 2, true], "b": {"c": nu', {"a": [1, 2, True], "b": {}}),
        ('["x\\u00', ["x"]),
        ('["line\\', ["line"]),
        ('{"t": "caf\\u00e9"}', {"t": "café"}),
        ("-", None),
        ("-1.5e", -1.5),
        ('"half', "half"),
        ('```json\n{"a": 1', {"a": 1}),
        ("```json", None),
        ("not json", None),
        ('{"a" 1}', None),
        ("[1 2]", None),
    ],
)
def test_partial_json(text: str, value: Any) -> None:
    assert partial_json(text) == value


def _fits(partial: Any, full: Any) -> bool:
    """``partial`` could be what a prefix of ``full``'s JSON shows."""
    if partial is None:
        return True
    if isinstance(full, dict):
        return isinstance(partial, dict) and all(k in full and _fits(v, full[k]) for k, v in partial.items())
    if isinstance(full, list):
        return (
            isinstance(partial, list)
            and len(partial) <= len(full)
            and all(_fits(p, f) for p, f in zip(partial, full, strict=False))
        )
    if isinstance(full, str):
        return isinstance(partial, str) and full.startswith(partial)
    if isinstance(full, bool):
        return partial is full
    if isinstance(full, (int, float)):
        return isinstance(partial, (int, float)) and not isinstance(partial, bool)
    return False


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON, indent=st.sampled_from([None, 2]), ascii_only=st.booleans())
def test_every_prefix_reads_as_part_of_the_whole(value: Any, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert partial_json(text) == value
    for end in range(len(text)):
        assert _fits(partial_json(text[:end]), value), text[:end]


def test_import_agentcore_output_does_not_import_pydantic() -> None:
    import subprocess

    code = "import sys, agentcore.output; assert 'pydantic' not in sys.modules"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
