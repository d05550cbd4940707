"""The built-in demo tools of the ``agentcore`` command.

Four small tools that are safe to offer any model (:func:`demo_tools`):

* ``calculator``: evaluates an arithmetic expression with Python's operator
  semantics, without ``eval``: the text is parsed with :mod:`ast` and only
  numbers (int and float literals), ``+ - * / // % **``, unary ``+``/``-``
  and parentheses are accepted. Names, calls, attributes, subscripts,
  comparisons, strings and everything else are refused. To keep a hostile
  expression from eating the CPU or memory, the text is at most
  :data:`MAX_EXPRESSION_LENGTH` characters, a power whose result would pass
  :data:`MAX_MAGNITUDE` is refused before it is computed, and every
  intermediate result must stay within :data:`MAX_MAGNITUDE` in absolute
  value. An int result is printed as an int (``42``), a float with
  ``repr`` (``3.5``, ``2.0``).
* ``utc_now``: the current UTC time in ISO 8601 (``2025-01-31T12:00:00+00:00``).
* ``word_count``: counts the words, characters and lines of a text.
* ``color_swatch`` (:func:`color_swatch`): paints a 16 x 16 square of a
  named colour (one of :data:`COLORS`) as a PNG of under 100 bytes, written
  with the standard library (:func:`swatch_png`), and returns a line of text and
  the image: a tool handing an image back to the model (``docs/files.md``).

A failure (division by zero, a refused expression, a bad argument) raises
:class:`agentcore.ToolInputError`; the loop turns it into an error result the model
sees (``Error: ToolInputError: division by zero``), never a failed run.

Every parameter's JSON Schema carries ``examples``, so
:class:`agentcore.testing.TestModel` calls the tools with sensible arguments
(``calculator`` with ``6 * 7``).
"""

from __future__ import annotations

import ast
import datetime
import json
import math
import struct
import zlib
from collections.abc import Callable
from typing import Any

from agentcore.context import Context
from agentcore.tools import Tool, ToolInputError, ToolOutput
from agentcore.types import ToolDefinition, file_part

MAX_EXPRESSION_LENGTH = 1000
"""The longest expression, in characters, that ``calculator`` accepts."""
MAX_MAGNITUDE = 10**308
"""The largest absolute value of any (intermediate) ``calculator`` result;
about the largest finite float."""

_MAX_RESULT_BITS = MAX_MAGNITUDE.bit_length()


def _string_argument(arguments: dict[str, Any], name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise ToolInputError(f"{name!r} must be a string")
    return value


class _DemoTool:
    """A :class:`agentcore.Tool` made of a definition and a function of the call's arguments."""

    def __init__(self, definition: ToolDefinition, function: Callable[[dict[str, Any]], ToolOutput]) -> None:
        self._definition = definition
        self._function = function

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    def execute(self, arguments: dict[str, Any], ctx: Context) -> ToolOutput:
        ctx.check()
        return self._function(arguments)

    def __repr__(self) -> str:
        return f"<demo tool {self._definition.name}>"


# --- calculator -------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: lambda a: +a,
    ast.USub: lambda a: -a,
}
_REFUSED = {
    ast.Name: "names are not allowed",
    ast.Call: "function calls are not allowed",
    ast.Attribute: "attribute access is not allowed",
    ast.Subscript: "subscripts are not allowed",
    ast.Compare: "comparisons are not allowed",
    ast.BoolOp: "'and'/'or' are not allowed",
    ast.Lambda: "lambdas are not allowed",
}


def evaluate(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely (see the module docstring).

    Args:
        expression: e.g. ``"(1 + 2) * 3 / 4"``.

    Returns:
        The value, an int or a float.

    Raises:
        ToolInputError: the expression is too long, not valid syntax, uses
            anything but numbers and the arithmetic operators, divides by
            zero, or its result (or an intermediate one) is too large or not
            a real number.
    """
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ToolInputError(f"the expression is longer than {MAX_EXPRESSION_LENGTH} characters")
    source = expression.strip()
    if not source:
        raise ToolInputError("the expression is empty")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ToolInputError(f"not a valid expression ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise ToolInputError("the expression is too deeply nested") from None
    try:
        return _Evaluator(source).eval(tree.body)
    except RecursionError:
        raise ToolInputError("the expression is too deeply nested") from None


class _Evaluator:
    """Walks the tree of ``source``; refusals quote the offending part of the source."""

    def __init__(self, source: str) -> None:
        self.source = source

    def eval(self, node: ast.AST) -> int | float:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ToolInputError(f"only numbers are allowed, not {self.quote(node)}")
            return _checked(value)
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _checked(_UNARY[type(node.op)](self.eval(node.operand)))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self.eval(node.left)
            right = self.eval(node.right)
            if isinstance(node.op, ast.Pow):
                _check_power(left, right)
            try:
                return _checked(_BINARY[type(node.op)](left, right))
            except ZeroDivisionError:
                raise ToolInputError("division by zero") from None
            except OverflowError:
                raise ToolInputError("the result is too large") from None
        for kind, message in _REFUSED.items():
            if isinstance(node, kind):
                raise ToolInputError(f"{message}: {self.quote(node)}")
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            raise ToolInputError(f"only + - * / // % ** and unary + - are allowed: {self.quote(node)}")
        raise ToolInputError(f"only numbers and arithmetic operators are allowed: {self.quote(node)}")

    def quote(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ast.unparse(node)


def _check_power(base: int | float, exponent: int | float) -> None:
    """Refuse a power whose result would pass MAX_MAGNITUDE, before computing it."""
    if exponent <= 0 or abs(base) <= 1:
        return
    if math.log2(abs(base)) * exponent > _MAX_RESULT_BITS:
        raise ToolInputError("the result is too large")


def _checked(value: Any) -> int | float:
    if isinstance(value, complex):
        raise ToolInputError("the result is not a real number")
    if isinstance(value, float) and math.isnan(value):
        raise ToolInputError("the result is not a number")
    if not abs(value) <= MAX_MAGNITUDE:  # also catches inf
        raise ToolInputError("the result is too large")
    result: int | float = value
    return result


def format_number(value: int | float) -> str:
    """How ``calculator`` prints a value: ints as ints, floats with ``repr``."""
    return str(value) if isinstance(value, int) else repr(value)


def _calculator(arguments: dict[str, Any]) -> str:
    return format_number(evaluate(_string_argument(arguments, "expression")))


CALCULATOR_DEFINITION = ToolDefinition(
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly as Python would. Supports numbers, "
        "+ - * / // % ** (power), unary minus and parentheses; no variables or functions."
    ),
    input_schema=json.dumps(
        {
            "type": "object",
            "properties": {
                "expression": {
                    "type": "string",
                    "description": "The arithmetic expression, e.g. '(2 + 3) * 4 / 5'.",
                    "examples": ["6 * 7"],
                }
            },
            "required": ["expression"],
            "additionalProperties": False,
        }
    ),
)


# --- utc_now ----------------------------------------------------------------


def _utc_now_function(clock: Callable[[], datetime.datetime]) -> Callable[[dict[str, Any]], str]:
    def utc_now(_arguments: dict[str, Any]) -> str:
        return clock().astimezone(datetime.timezone.utc).isoformat(timespec="seconds")

    return utc_now


def _system_clock() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


UTC_NOW_DEFINITION = ToolDefinition(
    name="utc_now",
    description="The current date and time in UTC, in ISO 8601 (e.g. 2025-01-31T12:00:00+00:00).",
    input_schema=json.dumps({"type": "object", "properties": {}, "additionalProperties": False}),
)


# --- word_count -------------------------------------------------------------


def count_words(text: str) -> str:
    """``"4 words, 19 characters, 1 line"``: whitespace-separated words,
    characters (code points) and lines of ``text``."""
    words = len(text.split())
    chars = len(text)
    lines = len(text.splitlines())
    return (
        f"{words} word{'' if words == 1 else 's'}, {chars} character{'' if chars == 1 else 's'}, "
        f"{lines} line{'' if lines == 1 else 's'}"
    )


def _word_count(arguments: dict[str, Any]) -> str:
    return count_words(_string_argument(arguments, "text"))


WORD_COUNT_DEFINITION = ToolDefinition(
    name="word_count",
    description="Count the words, characters and lines of a text exactly.",
    input_schema=json.dumps(
        {
            "type": "object",
            "properties": {
                "text": {
                    "type": "string",
                    "description": "The text to count.",
                    "examples": ["The quick brown fox"],
                }
            },
            "required": ["text"],
            "additionalProperties": False,
        }
    ),
)


# --- color_swatch -------------------------------------------------------------

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 160, 70),
    "blue": (40, 80, 220),
    "yellow": (240, 200, 40),
    "black": (0, 0, 0),
    "white": (255, 255, 255),
}
"""The colours ``color_swatch`` paints, as 8-bit RGB."""
SWATCH_SIZE = 16
"""The side of a swatch, in pixels."""


def swatch_png(rgb: tuple[int, int, int], size: int = SWATCH_SIZE) -> bytes:
    """A ``size`` x ``size`` PNG of one colour: 8-bit RGB, no interlacing,
    every row filtered with "None", the image data deflated with :mod:`zlib`,
    each chunk closed with its CRC-32 (the PNG specification, ISO/IEC 15948)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    rows = (b"\x00" + bytes(rgb) * size) * size
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _color_swatch(arguments: dict[str, Any]) -> ToolOutput:
    color = _string_argument(arguments, "color")
    if color not in COLORS:
        raise ToolInputError(f"unknown colour {color!r}; use one of {', '.join(COLORS)}")
    png = swatch_png(COLORS[color])
    text = f"a {SWATCH_SIZE}x{SWATCH_SIZE} {color} swatch"
    return [text, file_part(png, media_type="image/png", filename=f"{color}.png")]


COLOR_SWATCH_DEFINITION = ToolDefinition(
    name="color_swatch",
    description="Paint a small square of one colour and return it as a PNG image.",
    input_schema=json.dumps(
        {
            "type": "object",
            "properties": {
                "color": {
                    "type": "string",
                    "enum": list(COLORS),
                    "description": "The colour to paint.",
                    "examples": ["red"],
                }
            },
            "required": ["color"],
            "additionalProperties": False,
        }
    ),
)


def color_swatch() -> Tool:
    """The ``color_swatch`` tool: its result is a line of text and a PNG
    (:func:`swatch_png`) of the colour asked for (one of :data:`COLORS`)."""
    return _DemoTool(COLOR_SWATCH_DEFINITION, _color_swatch)


def demo_tools(*, clock: Callable[[], datetime.datetime] | None = None) -> list[Tool]:
    """The demo tools, in the order they are offered: calculator, utc_now,
    word_count, color_swatch.

    Args:
        clock: returns the current time (an aware datetime) for ``utc_now``;
            the system clock by default (tests pass a fixed one).
    """
    return [
        _DemoTool(CALCULATOR_DEFINITION, _calculator),
        _DemoTool(UTC_NOW_DEFINITION, _utc_now_function(clock or _system_clock)),
        _DemoTool(WORD_COUNT_DEFINITION, _word_count),
        color_swatch(),
    ]
