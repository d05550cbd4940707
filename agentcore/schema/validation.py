"""The runtime side of function tools: JSON arguments checked, return values encoded.

:class:`SchemaValidator` checks arguments against a tool's input schema and
says what is wrong in lines the model can act on; :func:`check_schema` refuses
a raw schema that is not valid JSON Schema; :func:`encode_result` turns a
tool's return value into the text for the model (:func:`json_default` is its
``json.dumps`` hook, shared with the schema defaults in
:mod:`agentcore.schema.signature`). ``jsonschema`` is imported on first use, so that
``import agentcore`` stays fast.

String formats: a validator asserts the ``format`` of the strings that
:mod:`agentcore.schema.signature` writes for dates, times and UUIDs (:data:`FORMATS`):
a string passes exactly when the parser that later builds the Python value
accepts it, so validation and conversion never disagree. Other formats stay
annotations (the JSON Schema 2020-12 default). pydantic, when a tool uses
it, is found in ``sys.modules``: it is never imported here.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import functools
import json
import pathlib
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from agentcore.errors import ConfigError

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

# ---------------------------------------------------------------------------
# String formats


_FRACTION = re.compile(r"(\d\d:\d\d:\d\d)\.(\d+)")


def _utc(text: str) -> str:
    """``text`` as every supported Python's ``fromisoformat`` reads it: ``Z``
    (UTC, as RFC 3339 writes it) as ``+00:00``, and a fraction of a second of
    any length as six digits (Python 3.10 reads only ``+00:00`` and fractions
    of three or six digits; later versions read both forms)."""
    text = _FRACTION.sub(lambda m: f"{m[1]}.{m[2][:6].ljust(6, '0')}", text, count=1)
    return text[:-1] + "+00:00" if text[-1:] in ("Z", "z") else text


def parse_datetime(text: str) -> datetime.datetime:
    """An ISO 8601 date and time, ``2024-05-01T09:30:00+02:00``.

    What :meth:`datetime.datetime.fromisoformat` reads, plus a trailing ``Z``
    for UTC, with a time part (a bare date is refused). Without an offset
    the result is naive.

    Raises:
        ValueError: the text is not such a date and time.
    """
    if len(text) < 11 or text[10] not in "Tt ":
        raise ValueError(f"{text!r} is not an ISO 8601 date and time (YYYY-MM-DDTHH:MM:SS, then Z or +HH:MM)")
    return datetime.datetime.fromisoformat(_utc(text))


def parse_time(text: str) -> datetime.time:
    """An ISO 8601 time of day, ``09:30:00`` (an offset or ``Z`` optional).

    Raises:
        ValueError: the text is not such a time.
    """
    return datetime.time.fromisoformat(_utc(text))


FORMATS: dict[str, Callable[[str], Any]] = {
    "date-time": parse_datetime,
    "date": datetime.date.fromisoformat,
    "time": parse_time,
    "uuid": uuid.UUID,
}
"""JSON Schema ``format`` name -> the parser of such strings (ValueError if not)."""


def _format_check(parse: Callable[[str], Any]) -> Callable[[object], bool]:
    """A format check: a string passes when ``parse`` reads it (ValueError
    otherwise); other JSON types are not the format's business."""

    def check(instance: object) -> bool:
        if isinstance(instance, str):
            parse(instance)
        return True

    return check


@functools.cache
def _format_checker() -> Any:
    import jsonschema  # lazy: keeps `import agentcore` fast

    checker = jsonschema.FormatChecker(formats=())
    for name, parse in FORMATS.items():
        checker.checks(name, raises=ValueError)(_format_check(parse))
    return checker


# ---------------------------------------------------------------------------
# Arguments

_MAX_PROBLEMS = 8
_MAX_PROBLEM_CHARS = 300


class SchemaValidator:
    """Validates JSON values against one schema; builds the ``jsonschema``
    validator on first use (the import stays out of ``import agentcore``)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema = schema
        self._validator: Validator | None = None

    def _get(self) -> Validator:
        if self._validator is None:
            import jsonschema  # lazy: keeps `import agentcore` fast

            cls = jsonschema.validators.validator_for(self.schema, default=jsonschema.Draft202012Validator)
            self._validator = cls(self.schema, format_checker=_format_checker())
        return self._validator

    def is_valid(self, instance: Any) -> bool:
        """True when ``instance`` matches the schema."""
        return self._get().is_valid(instance)

    def problems(self, instance: Any) -> list[str]:
        """What is wrong with ``instance``, one line per error: ``path: reason``.

        Paths look like ``items[0].name``; ``(top level)`` is the arguments
        object itself. At most 8 lines, each at most 300 characters.
        """
        found = [e for error in self._get().iter_errors(instance) for e in _flatten(error)]
        errors = sorted(found, key=lambda e: [str(p) for p in e.absolute_path])
        lines = [_clip(f"{path_text(e.absolute_path)}: {_reason(e)}") for e in errors]
        if len(lines) > _MAX_PROBLEMS:
            lines[_MAX_PROBLEMS:] = [f"... and {len(lines) - _MAX_PROBLEMS} more problems"]
        return lines


def check_schema(schema: dict[str, Any], owner: str) -> None:
    """Raise :class:`ConfigError` unless ``schema`` is a valid JSON Schema."""
    import jsonschema  # lazy: keeps `import agentcore` fast

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = path_text(exc.absolute_path) if exc.absolute_path else "the schema"
        raise ConfigError(f"{owner}: not a valid JSON Schema at {where}: {exc.message}") from exc


def path_text(parts: Iterable[Any]) -> str:
    """A JSON location for people and models: ``stops[1].name``, ``(top level)``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(top level)"


def _flatten(error: ValidationError) -> Iterator[ValidationError]:
    """Report an ``X | None`` mismatch as X's own errors, at their full paths."""
    options = error.validator_value
    if error.validator == "anyOf" and isinstance(options, list) and error.context:
        real = [i for i, option in enumerate(options) if option != {"type": "null"}]
        if len(real) == 1 and len(options) == 2:
            for sub in error.context:
                if sub.relative_schema_path and sub.relative_schema_path[0] == real[0]:
                    yield from _flatten(sub)
            return
    yield error


def _reason(error: ValidationError) -> str:
    if not error.context:
        return error.message
    seen: list[str] = []
    for sub in error.context:
        text = f"{path_text(sub.relative_path)}: {sub.message}" if sub.relative_path else sub.message
        if text not in seen:
            seen.append(text)
    return f"{error.message} ({'; '.join(seen[:4])})"


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_PROBLEM_CHARS else text[: _MAX_PROBLEM_CHARS - 3] + "..."


# ---------------------------------------------------------------------------
# Return values


def json_default(value: Any) -> Any:
    """``default`` hook for ``json.dumps``: Enums by value, attrs classes,
    dataclasses and pydantic models as objects, sets as arrays, datetimes,
    dates and times in ISO 8601, UUIDs, Decimals and paths as strings;
    anything else is a ``TypeError``.

    Raises:
        TypeError: the value has no JSON form.
        ValueError: a Decimal that is not finite.
    """
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, (uuid.UUID, pathlib.PurePath)):
        return str(value)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ValueError(f"Decimal {value} is not a finite number")
        return str(value)  # a string keeps every digit; the schema of a Decimal accepts it
    pydantic = sys.modules.get("pydantic")  # a model exists only if pydantic was imported
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_result(value: Any, owner: str) -> str:
    """The text the model sees for a tool's return value.

    An Enum member stands for its value. A ``str`` is returned as it is;
    anything else is encoded as JSON text (see :func:`json_default`).

    Raises:
        TypeError: the value cannot be encoded as JSON (the message says why).
    """
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, str):
        return str.__str__(value)
    try:
        return json.dumps(value, default=json_default, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{owner} returned a value of type {type(value).__name__} that cannot be sent to the model "
            f"({exc}); "
            "a function tool returns a str, or JSON data: dict, list, tuple, str, int, finite float, "
            "bool, None, attrs, dataclass or pydantic instances, Enums, datetime, date, time, UUID, "
            "Decimal, Path"
        ) from exc
