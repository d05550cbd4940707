"""The engine of function tools: type hints to JSON Schema, JSON back to Python.

:func:`function_plan` reads a function's signature, type hints and Google-style
docstring and returns the tool's input schema plus, for each parameter, how to
turn the validated JSON value into the annotated Python type.

Its neighbours: :mod:`agentcore.schema.docstrings` parses the docstrings (the
descriptions); :mod:`agentcore.schema.validation` checks each call's arguments
against the schema and encodes return values.

Decisions (so nobody "fixes" them by accident):

* Schemas are a draft 2020-12 subset that Anthropic and OpenAI both accept:
  ``type``, ``properties``, ``required``, ``additionalProperties``, ``items``,
  ``prefixItems``, ``minItems``/``maxItems``, ``uniqueItems``, ``enum``,
  ``anyOf``, ``description`` and ``default``. Nested classes are inlined (no
  ``$defs``/``$ref``), so a recursive type is refused at decoration time.
* Objects (the arguments themselves, attrs classes, dataclasses, TypedDicts)
  say ``"additionalProperties": false``: an unexpected argument is reported
  to the model instead of being dropped silently. ``**kwargs`` lifts this.
* ``X | None`` is ``{"anyOf": [X, {"type": "null"}]}``; a parameter is
  required exactly when it has no default, whatever its type.
* A default goes into the schema as ``default`` when it is JSON-encodable
  (Enums by value, tuples as arrays); otherwise it is left out of the schema
  and the parameter stays optional.
* Description priority: ``Annotated[X, "text"]``, then the docstring's
  ``Args:`` (for classes: ``Attributes:``) entry, then the nested class's own
  docstring summary.
* After validation, JSON numbers are converted to the annotated ``int``
  (``2.0`` is a valid JSON Schema integer) or ``float``; Enums, attrs classes,
  dataclasses, tuples and sets are built from their JSON form. A union picks
  the first member whose schema the value matches.
* ``datetime``, ``date``, ``time`` and ``UUID`` are strings with the JSON
  Schema ``format`` ``date-time``, ``date``, ``time``, ``uuid``; the
  validator asserts these formats with the very parsers that build the
  values (:data:`agentcore.schema.validation.FORMATS`), so a string that passes
  always converts. A ``Decimal`` is a JSON number or a decimal string (a
  string keeps every digit); a path is a string.
* pydantic models and pydantic dataclasses get pydantic's own JSON Schema
  (validation mode) with its ``$defs`` inlined, its ``title`` annotations
  dropped and ``"additionalProperties": false`` on objects that list
  properties and say nothing else, like every other class here; the value
  is then built by pydantic (so its own validators run too). pydantic is
  optional: it is looked up in ``sys.modules``, never imported (a class
  that is a pydantic model means pydantic is loaded). ``TypedDict`` never
  goes through pydantic (it refuses ``typing.TypedDict`` before Python
  3.12), whatever the Python version.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime
import decimal
import enum
import functools
import inspect
import json
import pathlib
import sys
import types
import typing
import uuid
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, NamedTuple, Union

import attrs

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.schema.docstrings import class_doc, parse_docstring
from agentcore.schema.validation import FORMATS, SchemaValidator, json_default, path_text

__all__ = [
    "Convert",
    "ConversionError",
    "FunctionPlan",
    "Param",
    "function_plan",
    "is_context",
    "rewrite_schema",
    "type_schema",
]

Convert = Callable[[Any], Any]
"""Turns a validated JSON value into the annotated Python value.

Raises:
    ConversionError: the type refused the value (a validator).
"""

Location = tuple[str | int, ...]
"""Where a value sits in the converted JSON value: keys and indexes from its root."""


class ConversionError(ValueError):
    """A value passed its JSON Schema, but its type refused it while being
    built: a pydantic, attrs or dataclass validator raised.

    Raised by the converters; :mod:`agentcore.output` and the function tools
    turn :meth:`lines` into what the model reads. ``__cause__`` is what the
    validator (or pydantic) raised.

    Attributes:
        problems: ``(location, message)`` per problem: where the refused
            value sits (the field whose validator raised, or ``()`` for the
            value converted) and the validator's message.
    """

    def __init__(self, problems: Iterable[tuple[Location, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.lines()))

    def lines(self, *prefix: str | int) -> list[str]:
        """One ``path: message`` line per problem (``stops[1].celsius: ...``),
        each path after ``prefix``."""
        return [f"{path_text((*prefix, *where))}: {message}" for where, message in self.problems]


def _member(key: str | int, convert: Convert, value: Any) -> Any:
    """``convert(value)`` for the member ``key`` of an array or object: what
    it refuses is located under ``key``."""
    try:
        return convert(value)
    except ConversionError as exc:
        raise ConversionError(((key, *where), message) for where, message in exc.problems) from exc.__cause__
    except Exception as exc:  # a type refusing a value, whatever it raises
        raise ConversionError([((key,), _refusal(exc))]) from exc


def _refusal(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _refused_field(cls: type, exc: BaseException) -> Location:
    """Where building ``cls`` failed with ``exc``: for an attrs class, the
    field whose validator raised (attrs calls each validator as
    ``validator(instance, attribute, value)``, so the validator's frame
    holds the field's ``attrs.Attribute``); otherwise, or for a converter
    or ``__attrs_post_init__``, ``()``: the object."""
    if not attrs.has(cls):
        return ()
    fields = {id(field): field for field in attrs.fields(cls)}
    trace = exc.__traceback__
    while trace is not None:
        for value in trace.tb_frame.f_locals.values():
            field = fields.get(id(value))
            if field is not None:
                return (field.alias or field.name,)
        trace = trace.tb_next
    return ()


_EMPTY = inspect.Parameter.empty
_NONE_TYPE = type(None)
_QUALIFIERS = frozenset({"Required", "NotRequired", "ReadOnly"})
_SUPPORTED = (
    "str, int, float, bool, None, Any, datetime, date, time, UUID, Decimal, Path, list[X], "
    "tuple[X, ...], tuple[X, Y], set[X], dict[str, X], Literal[...], Enum subclasses, X | None and "
    "other unions, Annotated[X, 'description'], attrs classes, dataclasses, TypedDicts and pydantic models"
)
_FORMAT_OF = {datetime.datetime: "date-time", datetime.date: "date", datetime.time: "time", uuid.UUID: "uuid"}
_DECIMAL_SCHEMA = {
    "anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"}]
}
# JSON Schema keywords whose values are schemas: a map of them, a list of them, or one.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"})
_SCHEMA_LISTS = frozenset({"prefixItems", "anyOf", "oneOf", "allOf"})
_SCHEMA_ONE = frozenset(
    {
        "items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else",
        "unevaluatedItems", "unevaluatedProperties",
    }
)  # fmt: skip


class _Field(NamedTuple):
    name: str
    hint: Any
    required: bool
    default: Any = _EMPTY  # _EMPTY: none to show in the schema


class _Property(NamedTuple):
    name: str
    schema: dict[str, Any]
    required: bool
    convert: Convert | None


class Param(NamedTuple):
    """How to fill one parameter of the function.

    Attributes:
        name: the parameter's (and the JSON property's) name.
        positional: the parameter is positional-only.
        context: the parameter receives the run's :class:`Context`.
        default: the Python default, or ``inspect.Parameter.empty``.
        convert: turns the validated JSON value into the annotated type
            (None: use the value as it is).
    """

    name: str
    positional: bool
    context: bool
    default: Any
    convert: Convert | None


class FunctionPlan(NamedTuple):
    """What :func:`function_plan` learned about a function.

    Attributes:
        schema: the input JSON Schema (an object schema).
        summary: the docstring's summary.
        params: the parameters in signature order.
        extra: True when ``**kwargs`` takes undeclared properties.
        extra_convert: the converter for their values (None: as they are).
    """

    schema: dict[str, Any]
    summary: str
    params: tuple[Param, ...]
    extra: bool
    extra_convert: Convert | None


def is_context(hint: Any) -> bool:
    """True for ``Context``, ``Context[Deps]`` and either ``| None``."""
    if hint is Context or typing.get_origin(hint) is Context:
        return True
    if typing.get_origin(hint) in (Union, types.UnionType):
        args = set(typing.get_args(hint))
        return len(args) == 2 and _NONE_TYPE in args and all(a is _NONE_TYPE or is_context(a) for a in args)
    return False


def is_coroutine_function(func: Callable[..., Any]) -> bool:
    """True when calling ``func`` gives a coroutine: an ``async def``
    function or method, a ``functools.partial`` of one, or an object whose
    ``__call__`` is one."""
    call = getattr(func, "__call__", None)  # noqa: B004 - the async check needs the bound method
    return inspect.iscoroutinefunction(func) or (
        not inspect.isroutine(func) and inspect.iscoroutinefunction(call)
    )


def function_plan(func: Callable[..., Any], owner: str) -> FunctionPlan:
    """Read ``func``'s signature, type hints and docstring.

    Args:
        func: a callable (or ``async def`` function) with type hints.
        owner: how error messages name the tool (``"tool 'get_weather'"``).

    Raises:
        ConfigError: the function is a generator (async or not), has
            ``*args``, an unannotated parameter or a hint that cannot be a
            JSON Schema.
    """
    if inspect.isasyncgenfunction(func):
        raise ConfigError(f"{owner}: {func!r} is an async generator; a tool returns its whole result")
    if inspect.isgeneratorfunction(func):
        raise ConfigError(f"{owner}: {func!r} is a generator function; a tool returns its whole result")
    try:
        signature = inspect.signature(func, eval_str=True)
    except (NameError, SyntaxError, TypeError, ValueError) as exc:
        raise ConfigError(f"{owner}: cannot read the signature and type hints of {func!r}: {exc}") from exc
    raw_doc = func.func.__doc__ if isinstance(func, functools.partial) else getattr(func, "__doc__", None)
    doc = parse_docstring(raw_doc)
    compiler = _Compiler(owner)
    params: list[Param] = []
    props: list[_Property] = []
    extra_convert: Convert | None = None
    extra_schema: Any = False
    context_seen = False
    for p in signature.parameters.values():
        where = f"parameter {p.name!r}"
        if p.name == "ctx" or is_context(p.annotation):
            if p.annotation is not _EMPTY and not is_context(p.annotation):
                raise ConfigError(
                    f"{owner}: {where} receives the run's Context; annotate it agentcore.Context or rename it"
                )
            if context_seen or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise ConfigError(f"{owner}: {where}: a tool takes at most one Context parameter")
            context_seen = True
            params.append(Param(p.name, p.kind is p.POSITIONAL_ONLY, True, p.default, None))
            continue
        if p.kind is p.VAR_POSITIONAL:
            raise ConfigError(f"{owner}: *{p.name} cannot be filled from JSON arguments; use a list")
        if p.annotation is _EMPTY:
            hint = "; for a method, make the tool from the bound method" if p.name in ("self", "cls") else ""
            raise ConfigError(
                f"{owner}: {where} has no type hint; annotate it (typing.Any accepts any JSON value){hint}"
            )
        if p.kind is p.VAR_KEYWORD:
            extra_schema, extra_convert = compiler.compile(p.annotation, f"**{p.name}")
            extra_schema = extra_schema or True
            continue
        field = _Field(p.name, p.annotation, p.default is _EMPTY, p.default)
        prop = compiler.compile_field(field, doc.args.get(p.name), where)
        props.append(prop)
        params.append(Param(p.name, p.kind is p.POSITIONAL_ONLY, False, p.default, prop.convert))
    schema = _object_schema("", props, extra_schema)
    return FunctionPlan(schema, doc.summary, tuple(params), extra_schema is not False, extra_convert)


def type_schema(hint: Any, owner: str) -> tuple[dict[str, Any], Convert | None]:
    """The JSON Schema of one type hint and the converter of its validated JSON
    (None: the JSON value as it is), by the rules of function tools.

    Args:
        hint: any hint a tool parameter may have (a dataclass, a TypedDict,
            a pydantic model, ``list[X]``, ...).
        owner: how error messages name the user (``"LoopOptions.output_type"``).

    Raises:
        ConfigError: the hint has no JSON Schema.
    """
    return _Compiler(owner).compile(hint, "the type")


def rewrite_schema(node: Any, rewrite: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    """A copy of a JSON Schema with ``rewrite`` applied to every schema in it.

    ``rewrite`` gets each schema object (a dict; the root first, then the
    schemas under ``properties``, ``items``, ``anyOf``, ``$defs`` and the
    other keywords that hold schemas) and returns its replacement; the
    subschemas of what it returns are rewritten next. Property names are
    never taken for keywords.
    """
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in rewrite(node).items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            value = {k: rewrite_schema(v, rewrite) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            value = [rewrite_schema(v, rewrite) for v in value]
        elif key in _SCHEMA_ONE:
            value = rewrite_schema(value, rewrite)
        out[key] = value
    return out


def _object_schema(description: str, props: list[_Property], extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": description} if description else {}
    schema["type"] = "object"
    schema["properties"] = {p.name: p.schema for p in props}
    required = [p.name for p in props if p.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = extra
    return schema


def _split_annotated(hint: Any) -> tuple[Any, str | None]:
    """Peel ``Required``/``NotRequired`` and ``Annotated[X, "text"]`` off a hint."""
    description = None
    while True:
        origin = typing.get_origin(hint)
        if getattr(origin, "_name", None) in _QUALIFIERS:
            hint = typing.get_args(hint)[0]
        elif origin is Annotated:
            hint, *metadata = typing.get_args(hint)
            description = description or next(filter(None, map(_description_of, metadata)), None)
        else:
            return hint, description


def _description_of(metadata: Any) -> str | None:
    """``Annotated`` metadata as a description: a str, or an object with a
    str ``description`` (a pydantic ``Field(description=...)``)."""
    if isinstance(metadata, str):
        return metadata
    text = getattr(metadata, "description", None)
    return text if isinstance(text, str) else None


def _required_key(name: str, hint: Any, required_keys: frozenset[str]) -> bool:
    """Whether a TypedDict key is required: ``Required[...]`` or
    ``NotRequired[...]`` on its hint decides, else the class's
    ``__required_keys__`` (its ``total``). On Python 3.10, ``typing.TypedDict``
    ignores the ``typing_extensions`` qualifiers and counts such keys by
    ``total`` alone, so the hint is read here."""
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated:
            hint = typing.get_args(hint)[0]
            continue
        qualifier = getattr(origin, "_name", None)
        if qualifier == "Required":
            return True
        if qualifier == "NotRequired":
            return False
        if qualifier == "ReadOnly":
            hint = typing.get_args(hint)[0]
            continue
        return name in required_keys


def _json_type(value: Any) -> str | None:
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if type(value) is kind:
            return name
    return None


def _to_int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _to_float(value: Any) -> Any:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _to_decimal(value: Any) -> decimal.Decimal:
    return decimal.Decimal(str(value))  # str(0.1) == "0.1": the number as the JSON text wrote it


def _pydantic_class(hint: Any) -> bool:
    """True for a pydantic model or pydantic dataclass (pydantic is never imported here)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(hint, type):
        return False
    return issubclass(hint, pydantic.BaseModel) or pydantic.dataclasses.is_pydantic_dataclass(hint)


def _schema_default(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=json_default, allow_nan=False))
    except (TypeError, ValueError):
        return _EMPTY


class _Compiler:
    """Compiles type hints; remembers the classes being expanded to refuse recursion."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.expanding: list[type] = []

    def fail(self, where: str, message: str) -> ConfigError:
        return ConfigError(f"{self.owner}: {where}: {message}")

    def compile_field(self, field: _Field, doc_text: str | None, where: str) -> _Property:
        """Compile one property of an object schema, with its description and default."""
        hint, description = _split_annotated(field.hint)
        schema, convert = self.compile(hint, where)
        description = description or doc_text
        prop: dict[str, Any] = {"description": description} if description else {}
        prop.update((k, v) for k, v in schema.items() if not (description and k == "description"))
        if not field.required and field.default is not _EMPTY:
            default = _schema_default(field.default)
            if default is not _EMPTY:
                prop["default"] = default
        return _Property(field.name, prop, field.required, convert)

    def compile(self, hint: Any, where: str) -> tuple[dict[str, Any], Convert | None]:
        """Return the JSON Schema for ``hint`` and its converter (None: identity)."""
        if hint is Any or hint is object:
            return {}, None
        if hint is None or hint is _NONE_TYPE:
            return {"type": "null"}, None
        if isinstance(hint, str):
            raise self.fail(where, f"the type hint {hint!r} is a string that could not be resolved")
        if type(hint).__name__ == "TypeAliasType":  # `type X = ...` (Python 3.12)
            return self.compile(hint.__value__, where)
        supertype = getattr(hint, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self.compile(supertype, where)
        origin = typing.get_origin(hint)
        args = typing.get_args(hint)
        if origin is Annotated or getattr(origin, "_name", None) in _QUALIFIERS:
            base, description = _split_annotated(hint)
            schema, convert = self.compile(base, where)
            if description:
                rest = {k: v for k, v in schema.items() if k != "description"}
                schema = {"description": description, **rest}
            return schema, convert
        if origin in (Union, types.UnionType):
            return self._union(args, where)
        if origin is Literal:
            return self._literal(args, where)
        if hint is str:
            return {"type": "string"}, None
        if hint is bool:
            return {"type": "boolean"}, None
        if hint is int:
            return {"type": "integer"}, _to_int
        if hint is float:
            return {"type": "number"}, _to_float
        if isinstance(hint, type) and hint in _FORMAT_OF:
            return {"type": "string", "format": _FORMAT_OF[hint]}, FORMATS[_FORMAT_OF[hint]]
        if hint is decimal.Decimal:
            return _DECIMAL_SCHEMA, _to_decimal
        if _pydantic_class(hint):
            return self._pydantic(hint, where)
        if isinstance(hint, type):
            if issubclass(hint, pathlib.PurePath):
                return {"type": "string"}, hint
            if issubclass(hint, enum.Enum):
                return self._enum(hint, where)
            if issubclass(hint, dict) and hasattr(hint, "__required_keys__"):
                return self._typed_dict(hint, where)
            if attrs.has(hint) or dataclasses.is_dataclass(hint):
                return self._class(hint, where)
        container = origin or hint
        if container in (list, collections.abc.Sequence, collections.abc.MutableSequence):
            return self._array(args, list, where)
        if container in (set, frozenset, collections.abc.Set, collections.abc.MutableSet):
            schema, convert = self._array(args, frozenset if container is frozenset else set, where)
            return {**schema, "uniqueItems": True}, convert
        if container is tuple:
            # tuple[()] has no args (Python 3.11+), like a bare tuple or Tuple
            empty = origin is tuple and not args and hint is not typing.Tuple  # noqa: UP006 - the object, not a hint
            return self._tuple(((),) if empty else args, where)
        if container in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
            return self._dict(args, where)
        raise self.fail(where, f"unsupported type hint {_name(hint)}; supported: {_SUPPORTED}")

    def _union(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], Convert | None]:
        members = [self.compile(a, where) for a in args if a is not _NONE_TYPE]
        nullable = _NONE_TYPE in args
        if len(members) == 1 and not nullable:
            return members[0]
        schemas = [s for s, _ in members] + ([{"type": "null"}] if nullable else [])
        if all(c is None for _, c in members):
            return {"anyOf": schemas}, None
        if len(members) == 1:
            only = members[0][1]
            assert only is not None
            return {"anyOf": schemas}, lambda v: None if v is None else only(v)
        checks = [(SchemaValidator(s), c) for s, c in members]

        def convert(value: Any) -> Any:
            if value is not None:
                for validator, member_convert in checks:
                    if validator.is_valid(value):
                        return value if member_convert is None else member_convert(value)
            return value

        return {"anyOf": schemas}, convert

    def _enum_values(self, values: Iterable[Any], where: str, what: str) -> dict[str, Any]:
        values = list(values)
        kinds = {_json_type(v) for v in values}
        if not values:
            raise self.fail(where, f"{what} has no values")
        if any(_json_type(v) is None for v in values):
            raise self.fail(where, f"{what} values must be str, int, float, bool or None, got {values!r}")
        schema: dict[str, Any] = {"type": kinds.pop()} if len(kinds) == 1 else {}
        schema["enum"] = values
        return schema

    def _literal(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], Convert | None]:
        values = [a.value if isinstance(a, enum.Enum) else a for a in args]
        schema = self._enum_values(values, where, "Literal")
        members = [(v, a) for v, a in zip(values, args, strict=True) if isinstance(a, enum.Enum)]
        if not members:
            return schema, None

        def convert(value: Any) -> Any:
            for json_value, member in members:
                if json_value == value and type(json_value) is type(value):
                    return member
            return value

        return schema, convert

    def _enum(self, cls: type[enum.Enum], where: str) -> tuple[dict[str, Any], Convert | None]:
        return self._enum_values((m.value for m in cls), where, f"Enum {cls.__name__}"), cls

    def _array(self, args: tuple[Any, ...], kind: type, where: str) -> tuple[dict[str, Any], Convert | None]:
        items, convert = self.compile(args[0], f"{where} (items)") if args else ({}, None)
        schema: dict[str, Any] = {"type": "array", "items": items} if items else {"type": "array"}
        if convert is None:
            return schema, None if kind is list else kind
        return schema, lambda v: kind(_member(i, convert, x) for i, x in enumerate(v))

    def _tuple(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], Convert | None]:
        if not args:
            return {"type": "array"}, tuple
        if len(args) == 2 and args[1] is Ellipsis:
            return self._array(args[:1], tuple, where)
        if args == ((),):
            return {"type": "array", "maxItems": 0}, tuple
        members = [self.compile(a, f"{where} (item {i})") for i, a in enumerate(args)]
        schema: dict[str, Any] = {"type": "array", "prefixItems": [s for s, _ in members]}
        schema.update(minItems=len(args), maxItems=len(args))
        converts = [c for _, c in members]
        return schema, lambda v: tuple(
            x if c is None else _member(i, c, x) for i, (x, c) in enumerate(zip(v, converts, strict=True))
        )

    def _dict(self, args: tuple[Any, ...], where: str) -> tuple[dict[str, Any], Convert | None]:
        if not args:
            return {"type": "object"}, None
        key, value = args
        if key is not str and key is not Any:
            raise self.fail(where, f"dict keys must be str (JSON object keys are strings), got {_name(key)}")
        values, convert = self.compile(value, f"{where} (values)")
        schema: dict[str, Any] = {"type": "object"}
        if values:
            schema["additionalProperties"] = values
        if convert is None:
            return schema, None
        return schema, lambda v: {k: _member(k, convert, x) for k, x in v.items()}

    def _pydantic(self, cls: type, where: str) -> tuple[dict[str, Any], Convert | None]:
        pydantic = sys.modules["pydantic"]
        adapter = pydantic.TypeAdapter(cls)
        try:
            raw = adapter.json_schema()
        except Exception as exc:  # pydantic's schema errors name the field; pass them on
            raise self.fail(where, f"pydantic cannot write a JSON Schema for {cls.__name__}: {exc}") from exc
        schema = self._inline(raw, raw.get("$defs", {}), (), where)

        def convert(value: Any) -> Any:
            try:
                return adapter.validate_python(value)
            except pydantic.ValidationError as exc:
                raise ConversionError((tuple(e["loc"]), e["msg"]) for e in exc.errors()) from exc

        return schema, convert

    def _inline(self, node: Any, defs: dict[str, Any], seen: tuple[str, ...], where: str) -> Any:
        """A pydantic schema without ``$ref``/``$defs``, ``title`` or ``discriminator``
        (an OpenAPI keyword whose mapping names the ``$defs``)."""
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                raise self.fail(where, f"{name} refers to itself; recursive types are not supported")
            if name not in defs:
                raise self.fail(where, f"unsupported $ref {ref!r} in a pydantic schema")
            out.update(self._inline(defs[name], defs, (*seen, name), where))
        for key, value in node.items():
            if key in ("$ref", "$defs", "title", "discriminator"):
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                value = {k: self._inline(v, defs, seen, where) for k, v in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                value = [self._inline(v, defs, seen, where) for v in value]
            elif key in _SCHEMA_ONE:
                value = self._inline(value, defs, seen, where)
            out[key] = value
        if out.get("type") == "object" and "properties" in out:
            out.setdefault("additionalProperties", False)
        return out

    def _hints(self, cls: type, where: str) -> dict[str, Any]:
        try:
            return typing.get_type_hints(cls, include_extras=True)
        except Exception as exc:  # any failure to resolve the hints is the user's to fix
            raise self.fail(where, f"cannot resolve the type hints of {cls.__name__}: {exc}") from exc

    def _typed_dict(self, cls: type, where: str) -> tuple[dict[str, Any], Convert | None]:
        hints = self._hints(cls, where)
        required: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        fields = [_Field(name, hint, _required_key(name, hint, required)) for name, hint in hints.items()]
        return self._object(cls, fields, dict, where)

    def _class(self, cls: type, where: str) -> tuple[dict[str, Any], Convert | None]:
        hints = self._hints(cls, where)
        fields: list[_Field] = []
        if attrs.has(cls):
            for a in attrs.fields(cls):
                if a.init:
                    hint = hints.get(a.name, a.type)
                    default = a.default
                    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                        default = _EMPTY
                    fields.append(_Field(a.alias or a.name, hint, a.default is attrs.NOTHING, default))
        else:
            for f in dataclasses.fields(cls):
                if f.init:
                    missing = f.default is dataclasses.MISSING
                    required = missing and f.default_factory is dataclasses.MISSING
                    default = _EMPTY if missing else f.default
                    fields.append(_Field(f.name, hints.get(f.name, f.type), required, default))
        return self._object(cls, fields, lambda kwargs: cls(**kwargs), where)

    def _object(
        self, cls: type, fields: list[_Field], build: Callable[[dict[str, Any]], Any], where: str
    ) -> tuple[dict[str, Any], Convert | None]:
        if cls in self.expanding:
            raise self.fail(where, f"{cls.__name__} refers to itself; recursive types are not supported")
        self.expanding.append(cls)
        try:
            doc = class_doc(cls)
            props: list[_Property] = []
            for field in fields:
                if field.hint is None or isinstance(field.hint, str):
                    raise self.fail(where, f"field {field.name!r} of {cls.__name__} has no usable type hint")
                text = doc.attributes.get(field.name) or doc.args.get(field.name)
                inner = f"{where}, field {field.name!r} of {cls.__name__}"
                props.append(self.compile_field(field, text, inner))
        finally:
            self.expanding.pop()
        schema = _object_schema(doc.summary, props, False)
        converts = {p.name: p.convert for p in props if p.convert is not None}
        if build is dict and not converts:
            return schema, None

        def convert(value: dict[str, Any]) -> Any:
            arguments = {k: _member(k, converts[k], v) if k in converts else v for k, v in value.items()}
            try:
                return build(arguments)
            except Exception as exc:  # a validator refusing the value, whatever it raises
                raise ConversionError([(_refused_field(cls, exc), _refusal(exc))]) from exc

        return schema, convert


def _name(hint: Any) -> str:
    if isinstance(hint, type):
        module = "" if hint.__module__ == "builtins" else f"{hint.__module__}."
        return module + hint.__qualname__
    return repr(hint)
