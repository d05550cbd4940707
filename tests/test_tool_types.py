"""The types people write in tool signatures: schema, conversion in, encoding out, bad values.

Each hint in :data:`CASES` is checked three ways: the schema the model sees,
the Python value a JSON argument becomes (value and exact type), and the JSON
a returned value becomes. :data:`BAD` lists values that must come back to the
model as an error naming the argument and what was expected. A property test
draws random nested hints and values and checks that a value encoded as JSON,
validated against the published schema and converted back is the same value.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import subprocess
import sys
import uuid
from pathlib import Path, PurePosixPath
from types import GenericAlias
from typing import Annotated, Any, Literal, Optional, TypedDict

import jsonschema
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import (
    ConfigError,
    Context,
    FinishReason,
    FunctionTool,
    LoopOptions,
    StreamPart,
    ToolCall,
    run,
    tool,
    user_message,
)
from agentcore.schema.validation import json_default
from agentcore.testing import ScriptedModel
from agentcore.tools import ToolInputError

UTC = datetime.timezone.utc
PLUS_2 = datetime.timezone(datetime.timedelta(hours=2))
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Slot:
    start: datetime.datetime
    minutes: int = 30


class Guest(TypedDict):
    """A guest."""

    name: str
    born: datetime.date


class Room(pydantic.BaseModel):
    """A hotel room."""

    number: int = pydantic.Field(gt=0, description="the room number")
    kind: Color
    price: decimal.Decimal

    @pydantic.field_validator("number")
    @classmethod
    def _not_13(cls, value: int) -> int:
        if value == 13:
            raise ValueError("there is no room 13")
        return value


class Stay(pydantic.BaseModel):
    room: Room
    nights: list[datetime.date] = []
    note: Optional[str] = None  # noqa: UP045 - the spelling people write


@pydantic.dataclasses.dataclass
class Voucher:
    code: uuid.UUID
    value: decimal.Decimal = decimal.Decimal("10")


class Tree(pydantic.BaseModel):
    children: list[Tree] = []


ROOM_SCHEMA = {
    "description": "A hotel room.",
    "properties": {
        "number": {"description": "the room number", "exclusiveMinimum": 0, "type": "integer"},
        "kind": {"enum": ["red", "green"], "type": "string"},
        "price": {"anyOf": [{"type": "number"}, {"type": "string"}]},
    },
    "required": ["number", "kind", "price"],
    "type": "object",
    "additionalProperties": False,
}
DECIMAL_SCHEMA = {
    "anyOf": [
        {"type": "number"},
        {"type": "string", "pattern": r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"},
    ]
}

# hint, its schema, a JSON argument, the Python value it becomes, the JSON that value is returned as
CASES: list[tuple[Any, dict[str, Any], Any, Any, Any]] = [
    (
        datetime.datetime,
        {"type": "string", "format": "date-time"},
        "2024-05-01T09:30:00+02:00",
        datetime.datetime(2024, 5, 1, 9, 30, tzinfo=PLUS_2),
        "2024-05-01T09:30:00+02:00",
    ),
    (
        datetime.datetime,
        {"type": "string", "format": "date-time"},
        "2024-05-01T07:30:00.250Z",
        datetime.datetime(2024, 5, 1, 7, 30, 0, 250000, tzinfo=UTC),
        "2024-05-01T07:30:00.250000+00:00",
    ),
    (
        datetime.datetime,
        {"type": "string", "format": "date-time"},
        "2024-05-01T07:30:00",
        datetime.datetime(2024, 5, 1, 7, 30),
        "2024-05-01T07:30:00",
    ),
    (
        datetime.date,
        {"type": "string", "format": "date"},
        "2024-02-29",
        datetime.date(2024, 2, 29),
        "2024-02-29",
    ),
    (
        datetime.time,
        {"type": "string", "format": "time"},
        "09:30:15.5",
        datetime.time(9, 30, 15, 500000),
        "09:30:15.500000",
    ),
    (
        datetime.time,
        {"type": "string", "format": "time"},
        "23:00Z",
        datetime.time(23, 0, tzinfo=UTC),
        "23:00:00+00:00",
    ),
    (uuid.UUID, {"type": "string", "format": "uuid"}, str(ID), ID, str(ID)),
    (decimal.Decimal, DECIMAL_SCHEMA, "12.50", decimal.Decimal("12.50"), "12.50"),
    (decimal.Decimal, DECIMAL_SCHEMA, 0.1, decimal.Decimal("0.1"), "0.1"),
    (decimal.Decimal, DECIMAL_SCHEMA, 7, decimal.Decimal(7), "7"),
    (decimal.Decimal, DECIMAL_SCHEMA, "-1.5e3", decimal.Decimal("-1.5e3"), "-1.5E+3"),
    (Path, {"type": "string"}, "/tmp/report.txt", Path("/tmp/report.txt"), "/tmp/report.txt"),
    (PurePosixPath, {"type": "string"}, "a/b", PurePosixPath("a/b"), "a/b"),
    (Color, {"type": "string", "enum": ["red", "green"]}, "green", Color.GREEN, "green"),
    (Literal["fast", "slow"], {"type": "string", "enum": ["fast", "slow"]}, "slow", "slow", "slow"),
    (
        Optional[datetime.date],  # noqa: UP045 - the spelling people write
        {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        "2024-01-02",
        datetime.date(2024, 1, 2),
        "2024-01-02",
    ),
    (uuid.UUID | None, {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}, None, None, None),
    (
        int | datetime.date,
        {"anyOf": [{"type": "integer"}, {"type": "string", "format": "date"}]},
        "2024-01-02",
        datetime.date(2024, 1, 2),
        "2024-01-02",
    ),
    (
        list[uuid.UUID],
        {"type": "array", "items": {"type": "string", "format": "uuid"}},
        [str(ID)],
        [ID],
        [str(ID)],
    ),
    (
        dict[str, decimal.Decimal],
        {"type": "object", "additionalProperties": DECIMAL_SCHEMA},
        {"tea": "2.40"},
        {"tea": decimal.Decimal("2.40")},
        {"tea": "2.40"},
    ),
    (
        tuple[datetime.date, Color],
        {
            "type": "array",
            "prefixItems": [
                {"type": "string", "format": "date"},
                {"type": "string", "enum": ["red", "green"]},
            ],
            "minItems": 2,
            "maxItems": 2,
        },
        ["2024-01-02", "red"],
        (datetime.date(2024, 1, 2), Color.RED),
        ["2024-01-02", "red"],
    ),
    (
        Annotated[datetime.time, "when the shop opens"],
        {"description": "when the shop opens", "type": "string", "format": "time"},
        "08:00",
        datetime.time(8),
        "08:00:00",
    ),
    (
        Annotated[Path, pydantic.Field(description="where to write")],
        {"description": "where to write", "type": "string"},
        "out.txt",
        Path("out.txt"),
        "out.txt",
    ),
    (
        Slot,
        {
            "type": "object",
            "properties": {
                "start": {"type": "string", "format": "date-time"},
                "minutes": {"type": "integer", "default": 30},
            },
            "required": ["start"],
            "additionalProperties": False,
        },
        {"start": "2024-05-01T09:00:00Z"},
        Slot(datetime.datetime(2024, 5, 1, 9, tzinfo=UTC)),
        {"start": "2024-05-01T09:00:00+00:00", "minutes": 30},
    ),
    (
        Guest,
        {
            "description": "A guest.",
            "type": "object",
            "properties": {"name": {"type": "string"}, "born": {"type": "string", "format": "date"}},
            "required": ["name", "born"],
            "additionalProperties": False,
        },
        {"name": "Ada", "born": "1815-12-10"},
        {"name": "Ada", "born": datetime.date(1815, 12, 10)},
        {"name": "Ada", "born": "1815-12-10"},
    ),
    (
        Room,
        ROOM_SCHEMA,
        {"number": 7, "kind": "red", "price": "99.90"},
        Room(number=7, kind=Color.RED, price=decimal.Decimal("99.90")),
        {"number": 7, "kind": "red", "price": "99.90"},
    ),
    (
        Stay,
        {
            "properties": {
                "room": ROOM_SCHEMA,
                "nights": {"default": [], "items": {"format": "date", "type": "string"}, "type": "array"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            },
            "required": ["room"],
            "type": "object",
            "additionalProperties": False,
        },
        {"room": {"number": 1, "kind": "green", "price": 50}, "nights": ["2024-01-02"]},
        Stay(
            room=Room(number=1, kind=Color.GREEN, price=decimal.Decimal(50)),
            nights=[datetime.date(2024, 1, 2)],
        ),
        {"room": {"number": 1, "kind": "green", "price": "50"}, "nights": ["2024-01-02"], "note": None},
    ),
    (
        Voucher,
        {
            "properties": {
                "code": {"format": "uuid", "type": "string"},
                "value": {"anyOf": [{"type": "number"}, {"type": "string"}], "default": "10"},
            },
            "required": ["code"],
            "type": "object",
            "additionalProperties": False,
        },
        {"code": str(ID)},
        Voucher(code=ID),
        {"code": str(ID), "value": "10"},
    ),
    (
        list[Room],
        {"type": "array", "items": ROOM_SCHEMA},
        [{"number": 2, "kind": "red", "price": 1}],
        [Room(number=2, kind=Color.RED, price=decimal.Decimal(1))],
        [{"number": 2, "kind": "red", "price": "1"}],
    ),
]


def sent(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` as a tool gets them: what the JSON the model sends decodes to."""
    decoded: dict[str, Any] = json.loads(json.dumps(arguments, default=json_default))
    return decoded


def _one_parameter_tool(hint: Any, seen: list[Any]) -> FunctionTool[..., Any]:
    def take(x: Any) -> Any:
        seen.append(x)
        return {"x": x}

    take.__annotations__ = {"x": hint, "return": Any}
    return tool(take)


@pytest.mark.parametrize(("hint", "schema", "argument", "value", "returned"), CASES)
def test_schema_conversion_and_encoding(
    hint: Any, schema: dict[str, Any], argument: Any, value: Any, returned: Any
) -> None:
    seen: list[Any] = []
    t = _one_parameter_tool(hint, seen)
    published = json.loads(t.definition.input_schema)
    assert published == {
        "type": "object",
        "properties": {"x": schema},
        "required": ["x"],
        "additionalProperties": False,
    }
    text = t.execute(sent({"x": argument}), Context())
    assert isinstance(text, str)  # a dict result is encoded as JSON text
    assert seen == [value]
    assert type(seen[0]) is type(value)
    if isinstance(value, (list, tuple)):
        assert [type(v) for v in seen[0]] == [type(v) for v in value]
    assert json.loads(text) == {"x": returned}
    # What a tool returns is what it accepts: the returned JSON goes back in as the same value.
    assert t.execute(sent({"x": returned}), Context()) == text
    assert seen[1] == value


# hint, a JSON argument that must be refused, the problem line the model reads
BAD: list[tuple[Any, Any, str]] = [
    (datetime.datetime, "2024-05-01", "- x: '2024-05-01' is not a 'date-time'"),
    (datetime.datetime, "tomorrow at 9", "- x: 'tomorrow at 9' is not a 'date-time'"),
    (datetime.datetime, 1714550400, "- x: 1714550400 is not of type 'string'"),
    (datetime.date, "2024-02-30", "- x: '2024-02-30' is not a 'date'"),
    (datetime.time, "25:00", "- x: '25:00' is not a 'time'"),
    (uuid.UUID, "not-a-uuid", "- x: 'not-a-uuid' is not a 'uuid'"),
    (decimal.Decimal, "12,50", "- x: '12,50' is not valid under any of the given schemas"),
    (decimal.Decimal, True, "- x: True is not valid under any of the given schemas"),
    (Path, 3, "- x: 3 is not of type 'string'"),
    (Color, "blue", "- x: 'blue' is not one of ['red', 'green']"),
    (list[datetime.date], ["2024-01-01", "soon"], "- x[1]: 'soon' is not a 'date'"),
    (Slot, {"start": "noon"}, "- x.start: 'noon' is not a 'date-time'"),
    (
        Slot,
        {"start": "2024-05-01T09:00:00Z", "end": 1},
        "- x: Additional properties are not allowed ('end' was unexpected)",
    ),
    (Guest, {"name": "Ada"}, "- x: 'born' is a required property"),
    (
        Room,
        {"number": 0, "kind": "red", "price": 1},
        "- x.number: 0 is less than or equal to the minimum of 0",
    ),
    (
        Room,
        {"number": 1, "kind": "red", "price": 1, "floor": 2},
        "- x: Additional properties are not allowed ('floor' was unexpected)",
    ),
    # pydantic's own validators run after the schema: the problem names the field.
    (
        Room,
        {"number": 13, "kind": "red", "price": 1},
        "- x.number: Value error, there is no room 13",
    ),
    (Stay, {"room": {"number": 1, "kind": "red"}}, "- x.room: 'price' is a required property"),
]


@pytest.mark.parametrize(("hint", "argument", "problem"), BAD)
def test_bad_values_are_reported_to_the_model(hint: Any, argument: Any, problem: str) -> None:
    seen: list[Any] = []
    t = _one_parameter_tool(hint, seen)
    with pytest.raises(ToolInputError) as info:
        t.execute(sent({"x": argument}), Context())
    lines = str(info.value).splitlines()
    assert lines[0] == "invalid arguments for tool 'take'; it was not run:"
    assert lines[1].startswith(problem)
    assert seen == []


def test_a_conversion_error_keeps_pydantics_error_as_its_cause() -> None:
    t = _one_parameter_tool(Room, [])
    with pytest.raises(ToolInputError) as info:
        t.execute({"x": {"number": 13, "kind": "red", "price": 1}}, Context())
    assert isinstance(info.value.__cause__, ValueError)
    assert isinstance(info.value.__cause__.__cause__, pydantic.ValidationError)


def test_a_recursive_pydantic_model_is_refused() -> None:
    with pytest.raises(
        ConfigError, match="parameter 'x': Tree refers to itself; recursive types are not supported"
    ):
        _one_parameter_tool(Tree, [])


def test_non_finite_decimal_results_are_errors() -> None:
    @tool
    def f() -> decimal.Decimal:
        return decimal.Decimal("NaN")

    with pytest.raises(
        TypeError, match=r"returned a value of type Decimal that cannot be sent.*not a finite number"
    ):
        f.execute({}, Context())


@dataclasses.dataclass
class Booking:
    room: Room
    guest: uuid.UUID
    arrives: datetime.datetime


def test_a_function_with_everyday_types_is_a_tool_in_a_run() -> None:
    booked: list[Booking] = []

    @tool
    def book(room: Room, guest: uuid.UUID, arrives: datetime.datetime, kind: Color) -> Booking:
        """Book a room.

        Args:
            room: the room to book.
            guest: the guest's id.
            arrives: when the guest arrives.
            kind: the room colour wanted.
        """
        booking = Booking(room, guest, arrives)
        booked.append(booking)
        return booking

    good = {
        "room": {"number": 12, "kind": "green", "price": "80.00"},
        "guest": str(ID),
        "arrives": "2024-06-01T15:00:00Z",
        "kind": "green",
    }
    model = ScriptedModel(
        [
            [
                StreamPart.tool_call_event(ToolCall("c1", "book", json.dumps(good))),
                StreamPart.tool_call_event(ToolCall("c2", "book", json.dumps({**good, "arrives": "June"}))),
                StreamPart.step_finish(FinishReason.TOOL_CALLS),
            ],
            [StreamPart.text_delta("booked"), StreamPart.step_finish(FinishReason.STOP)],
        ]
    )
    result = run(LoopOptions(model=model, messages=[user_message("book it")], tools=[book])).result()
    assert booked == [
        Booking(
            Room(number=12, kind=Color.GREEN, price=decimal.Decimal("80.00")),
            ID,
            datetime.datetime(2024, 6, 1, 15, tzinfo=UTC),
        )
    ]
    ok, bad = result.steps[0].tool_results
    assert not ok.is_error
    assert json.loads(ok.content) == {
        "room": {"number": 12, "kind": "green", "price": "80.00"},
        "guest": str(ID),
        "arrives": "2024-06-01T15:00:00+00:00",
    }
    assert bad.is_error
    assert bad.content == (
        "Error: ToolInputError: invalid arguments for tool 'book'; it was not run:\n"
        "- arrives: 'June' is not a 'date-time'\n"
        "Call it again with arguments that match its input schema."
    )
    assert result.text == "booked"


def test_typed_dicts_never_go_through_pydantic() -> None:
    # pydantic refuses typing.TypedDict before Python 3.12; agentcore reads it itself on every version.
    if sys.version_info < (3, 12):
        with pytest.raises(pydantic.PydanticUserError):
            pydantic.TypeAdapter(Guest)
    seen: list[Any] = []
    t = _one_parameter_tool(list[Guest], seen)
    t.execute({"x": [{"name": "Ada", "born": "1815-12-10"}]}, Context())
    assert seen == [[{"name": "Ada", "born": datetime.date(1815, 12, 10)}]]


def test_everything_but_pydantic_works_without_pydantic() -> None:
    code = """
import sys
sys.modules["pydantic"] = None  # as if it were not installed: importing it fails
import dataclasses, datetime, decimal, enum, json, uuid
from pathlib import Path
from typing import TypedDict
import agentcore

class Kind(enum.Enum):
    A = "a"

@dataclasses.dataclass
class Slot:
    start: datetime.datetime

class Guest(TypedDict):
    name: str

@agentcore.tool
def f(
    slot: Slot, guest: Guest, id: uuid.UUID, price: decimal.Decimal, p: Path, kind: Kind, day: datetime.date
) -> dict:
    return {"slot": slot, "guest": guest, "id": id, "price": price, "p": p, "kind": kind, "day": day}

args = {"slot": {"start": "2024-01-01T00:00:00Z"}, "guest": {"name": "Ada"},
        "id": "12345678-1234-5678-1234-567812345678", "price": "1.50", "p": "a/b", "kind": "a",
        "day": "2024-01-02"}
out = json.loads(f.execute(args, agentcore.Context()))
assert out == {**args, "slot": {"start": "2024-01-01T00:00:00+00:00"}}, out
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_import_agentcore_does_not_import_pydantic() -> None:
    code = "import sys, agentcore, agentcore.tools; assert 'pydantic' not in sys.modules"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------------
# Property: encode -> validate against the published schema -> convert is the identity.

Case = tuple[Any, st.SearchStrategy[Any], bool]  # hint, its values, whether pydantic may hold it


def _offsets() -> st.SearchStrategy[datetime.timezone]:
    return st.integers(-23 * 60 - 59, 23 * 60 + 59).map(
        lambda m: datetime.timezone(datetime.timedelta(minutes=m))
    )


LEAVES: list[Case] = [
    (int, st.integers(), True),
    (float, st.floats(allow_nan=False, allow_infinity=False), True),
    (bool, st.booleans(), True),
    (str, st.text(max_size=8), True),
    (datetime.datetime, st.datetimes(timezones=st.none() | _offsets()), True),
    (datetime.date, st.dates(), True),
    (datetime.time, st.times(timezones=st.none() | _offsets()), True),
    (uuid.UUID, st.uuids(), True),
    (decimal.Decimal, st.decimals(allow_nan=False, allow_infinity=False), True),
    (Path, st.text("ab./", max_size=6).map(Path), True),
    (Color, st.sampled_from(Color), True),
    (Literal["a", 1], st.sampled_from(["a", 1]), True),
]
_names = iter(range(10**9))


def _dataclass(fields: list[Case]) -> Case:
    cls = dataclasses.make_dataclass(
        f"D{next(_names)}", [(f"f{i}", hint) for i, (hint, _, _) in enumerate(fields)]
    )
    return cls, st.builds(cls, *(values for _, values, _ in fields)), all(ok for _, _, ok in fields)


def _typed_dict(fields: list[Case]) -> Case:
    cls = TypedDict(f"T{next(_names)}", {f"f{i}": hint for i, (hint, _, _) in enumerate(fields)})  # type: ignore[misc]  # a TypedDict built at run time from drawn hints
    values = st.fixed_dictionaries({f"f{i}": v for i, (_, v, _) in enumerate(fields)})
    return cls, values, False


def _model(fields: list[Case]) -> Case:
    cls = pydantic.create_model(
        f"M{next(_names)}", **{f"f{i}": (hint, ...) for i, (hint, _, _) in enumerate(fields)}
    )  # type: ignore[call-overload]  # a model built at run time from drawn hints
    values = st.fixed_dictionaries({f"f{i}": v for i, (_, v, _) in enumerate(fields)}).map(lambda d: cls(**d))
    return cls, values, True


def _extend(inner: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    fields = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        inner.map(lambda c: (GenericAlias(list, c[0]), st.lists(c[1], max_size=3), c[2])),
        inner.map(
            lambda c: (
                GenericAlias(dict, (str, c[0])),
                st.dictionaries(st.text(max_size=3), c[1], max_size=2),
                c[2],
            )
        ),
        inner.map(lambda c: (Optional[c[0]], st.none() | c[1], c[2])),  # noqa: UP045
        st.tuples(inner, inner).map(
            lambda p: (
                GenericAlias(tuple, (p[0][0], p[1][0])),
                st.tuples(p[0][1], p[1][1]),
                p[0][2] and p[1][2],
            )
        ),
        fields.map(_dataclass),
        fields.map(_typed_dict),
        fields.filter(lambda fs: all(ok for _, _, ok in fs)).map(_model),
    )


CASE = st.recursive(st.sampled_from(LEAVES), _extend, max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=CASE, data=st.data())
def test_conversion_round_trips(case: Case, data: st.DataObject) -> None:
    hint, values, _ = case
    value = data.draw(values)
    seen: list[Any] = []
    t = _one_parameter_tool(hint, seen)
    text = t.execute(sent({"x": value}), Context())
    assert isinstance(text, str)  # a dict result is encoded as JSON text
    assert seen == [value]
    # The returned JSON is valid against the published schema (checked independently here, with
    # jsonschema's own date and uuid checks; its date-time and time checks require the UTC offset
    # that a naive Python value has not) and converts back to the same value.
    schema = json.loads(t.definition.input_schema)
    checker = jsonschema.FormatChecker(formats=["date", "uuid"])
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(json.loads(text))
    t.execute(json.loads(text), Context())
    assert seen == [value, value]
