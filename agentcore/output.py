"""Structured output: a run's final answer as a validated, typed value.

``LoopOptions(output_type=T)`` asks the model for a final answer matching
``T``'s JSON Schema; ``result().output`` is the validated value. ``T`` is any
type a tool parameter may have (:mod:`agentcore.schema.signature`): a dataclass, a
``TypedDict``, a pydantic model (when pydantic is installed), an attrs
class, ``list[X]``, ... (the value is an instance of ``T``), or a JSON
Schema as a ``dict`` (the value is the parsed JSON).

This module holds the parts the loop and the adapters share:
:func:`output_spec` compiles ``T`` once (:class:`OutputSpec`: the schema,
its validator and converter); :meth:`OutputSpec.parse` checks one answer;
:class:`OutputValidationError` is how a run fails when the answers keep
failing; :func:`partial_json` reads the JSON prefix of an answer still
streaming (for UIs); :func:`retry_prompt` is what the model reads after a
failed answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import attrs

from agentcore.errors import AgentcoreError, ConfigError
from agentcore.schema import signature, validation
from agentcore.types import OutputSchema, ToolDefinition, Usage

__all__ = [
    "OUTPUT_TOOL",
    "OutputSpec",
    "OutputValidationError",
    "output_spec",
    "partial_json",
    "retry_prompt",
]

OUTPUT_TOOL = "final_answer"
"""The name of the tool that carries the answer in ``output_mode="tool"``."""

_NAME = re.compile(r"[^A-Za-z0-9_-]+")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*)\n\s*```$", re.DOTALL)


class OutputValidationError(AgentcoreError):
    """The model's final answer did not match the run's ``output_type``, on
    the first try and on each of the ``output_retries`` more.

    It is the ``err`` of the run's :class:`~agentcore.RunError`.

    Attributes:
        raw: the last answer as the model wrote it (the text, or the
            ``final_answer`` tool's arguments).
        problems: what is wrong with it, one line each (``path: reason``).
        usage: the run's total usage, every attempt counted.
        attempts: how many answers were checked.
    """

    def __init__(self, raw: str, problems: Sequence[str], usage: Usage, attempts: int) -> None:
        self.raw = raw
        self.problems = tuple(problems)
        self.usage = usage
        self.attempts = attempts
        lines = "\n".join(f"- {p}" for p in self.problems)
        tries = "1 answer" if attempts == 1 else f"{attempts} answers"
        super().__init__(
            f"the model's final answer does not match the output type ({tries} checked):\n{lines}"
        )


@attrs.frozen(eq=False)
class OutputSpec:
    """A compiled ``output_type``.

    Attributes:
        name: the schema's name for the APIs that want one (``[A-Za-z0-9_-]``,
            at most 64): the class's name, a raw schema's ``title``, or
            ``"output"``.
        schema: the JSON Schema the answer must match.
        convert: turns the validated JSON into the Python value (None: the
            JSON value is the output).
    """

    name: str
    schema: dict[str, Any]
    convert: signature.Convert | None
    validator: validation.SchemaValidator

    @property
    def request_schema(self) -> OutputSchema:
        """What a :class:`~agentcore.Request` carries for native structured output."""
        return OutputSchema(self.name, json.dumps(self.schema, ensure_ascii=False))

    @property
    def tool(self) -> ToolDefinition:
        """The ``final_answer`` tool of ``output_mode="tool"``: its input is the answer."""
        return ToolDefinition(
            OUTPUT_TOOL,
            "Give your final answer by calling this tool; its arguments are the answer. "
            "Call it once, when you are done, instead of answering in text.",
            json.dumps(self._tool_schema(), ensure_ascii=False),
        )

    def _tool_schema(self) -> dict[str, Any]:
        """A tool's input is an object: a schema of another type is wrapped in ``{"value": ...}``."""
        if self.schema.get("type") == "object":
            return self.schema
        return {
            "type": "object",
            "properties": {"value": self.schema},
            "required": ["value"],
            "additionalProperties": False,
        }

    def parse(self, text: str, *, tool: bool = False) -> tuple[Any, list[str]]:
        """Check one answer.

        Args:
            text: the answer's JSON text (a surrounding Markdown code fence
                is ignored); with ``tool``, the ``final_answer`` arguments.
            tool: ``text`` is the tool's arguments (unwrapped as
                :attr:`tool` wrapped them).

        Returns:
            ``(value, [])`` for a valid answer (the converted value), else
            ``(None, problems)`` with one line per problem.
        """
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        try:
            value = json.loads(body)
        except ValueError as exc:
            return None, [f"(top level): the answer is not valid JSON ({exc})"]
        return self.check(value, tool=tool)

    def check(self, value: Any, *, tool: bool = False) -> tuple[Any, list[str]]:
        """Check one answer already decoded from JSON (as :meth:`parse` does
        after decoding it); with ``tool``, ``value`` is the ``final_answer``
        arguments."""
        if tool and self.schema.get("type") != "object":
            if not isinstance(value, dict) or "value" not in value:
                return None, ['(top level): the arguments must be {"value": <the answer>}']
            value = value["value"]
        problems = self.validator.problems(value)
        if problems:
            return None, problems
        if self.convert is None:
            return value, []
        try:
            return self.convert(value), []
        except signature.ConversionError as exc:  # a pydantic, attrs or dataclass validator refused it
            return None, exc.lines()


def output_spec(output_type: Any) -> OutputSpec:
    """Compile an ``output_type``.

    Args:
        output_type: a type hint a tool parameter may have, or a JSON Schema
            as a ``dict`` (draft 2020-12 unless its ``$schema`` says
            otherwise).

    Raises:
        ConfigError: the type has no JSON Schema, or the dict is not a valid
            JSON Schema.
    """
    owner = "LoopOptions.output_type"
    if isinstance(output_type, dict):
        try:
            schema: dict[str, Any] = json.loads(json.dumps(output_type))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{owner}: the schema is not JSON: {exc}") from exc
        validation.check_schema(schema, owner)
        title = schema.get("title")
        name = title if isinstance(title, str) else ""
        convert = None
    else:
        schema, convert = signature.type_schema(output_type, owner)
        name = getattr(output_type, "__name__", "")
    name = _NAME.sub("_", name).strip("_")[:64] or "output"
    return OutputSpec(name, schema, convert, validation.SchemaValidator(schema))


def retry_prompt(problems: Sequence[str], *, tool: bool = False) -> str:
    """The message that sends a failed answer back to the model (``tool``:
    the answer is to come as a ``final_answer`` call)."""
    lines = "\n".join(f"- {p}" for p in problems)
    again = (
        f"Call the {OUTPUT_TOOL} tool with the answer."
        if tool
        else "Answer again with only the corrected JSON value."
    )
    return f"Your final answer is not valid:\n{lines}\n{again}"


# ---------------------------------------------------------------------------
# Partial output


class _Incomplete(Exception):
    """The text ends before a value could be read."""


def partial_json(text: str) -> Any:
    """The value that the JSON text read so far holds, for showing an answer
    as it streams (best-effort).

    Objects and arrays still open hold what is complete in them, plus the
    unfinished string or number at the end (a string as far as it goes, so
    a UI can show a field while it is written); a key without its value yet
    is left out. The result is plain JSON data (dicts, lists, ...), never an
    instance of the output type, and it may miss fields the finished answer
    will have. A leading Markdown code fence is skipped.

    Args:
        text: the answer's text so far (all text deltas of the step, joined).

    Returns:
        The partial value; None when no value has started yet or the text is
        not the start of a JSON value.
    """
    body = text.lstrip()
    if body.startswith("```"):
        newline = body.find("\n")
        body = "" if newline < 0 else body[newline + 1 :].lstrip()
    try:
        value, _ = _Reader(body).value()
    except (_Incomplete, ValueError):
        return None
    return value


class _Reader:
    """A JSON reader that stops, without failing, where the text ends."""

    _NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d*)?(?:[eE][+-]?\d*)?")
    _WHITESPACE = " \t\r\n"

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def _skip(self) -> bool:
        """Skip whitespace; False at the end of the text."""
        while self.at < len(self.text) and self.text[self.at] in self._WHITESPACE:
            self.at += 1
        return self.at < len(self.text)

    def value(self) -> tuple[Any, bool]:
        """Read one value: ``(value, complete)``.

        Raises:
            _Incomplete: the text ends before anything of the value can be shown.
            ValueError: the text is not JSON.
        """
        if not self._skip():
            raise _Incomplete
        char = self.text[self.at]
        if char == "{":
            return self._object()
        if char == "[":
            return self._array()
        if char == '"':
            return self._string()
        for word, meaning in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, self.at):
                self.at += len(word)
                return meaning, True
            if word.startswith(self.text[self.at :]):
                raise _Incomplete
        return self._number()

    def _string(self) -> tuple[str, bool]:
        start = self.at
        at = start + 1
        while at < len(self.text):
            char = self.text[at]
            if char == "\\":
                at += 2
                continue
            if char == '"':
                self.at = at + 1
                text: str = json.loads(self.text[start : self.at])
                return text, True
            at += 1
        self.at = len(self.text)
        rest = self.text[start:]
        for cut in range(min(len(rest), 6)):  # drop an escape cut in half (\u00e)
            try:
                partial: str = json.loads(rest[: len(rest) - cut] + '"')
            except ValueError:
                continue
            if partial and "\ud800" <= partial[-1] <= "\udbff":
                partial = partial[:-1]  # half of a surrogate pair: the other half is still coming
            return partial, False
        raise ValueError("not a JSON string")

    def _number(self) -> tuple[int | float, bool]:
        match = self._NUMBER.match(self.text, self.at)
        if not match or not match.group():
            raise ValueError("not JSON")
        self.at = match.end()
        complete = self.at < len(self.text)
        digits = match.group().rstrip("eE+-").rstrip(".")
        if digits in ("", "-"):
            raise _Incomplete
        number: int | float = json.loads(digits)
        return number, complete

    def _array(self) -> tuple[list[Any], bool]:
        self.at += 1
        items: list[Any] = []
        while self._skip():
            if self.text[self.at] == "]":
                self.at += 1
                return items, True
            try:
                item, complete = self.value()
            except _Incomplete:
                return items, False
            items.append(item)
            if not complete or not self._skip():
                return items, False
            if self.text[self.at] == ",":
                self.at += 1
            elif self.text[self.at] != "]":
                raise ValueError("not JSON")
        return items, False

    def _object(self) -> tuple[dict[str, Any], bool]:
        self.at += 1
        members: dict[str, Any] = {}
        while self._skip():
            char = self.text[self.at]
            if char == "}":
                self.at += 1
                return members, True
            if char != '"':
                raise ValueError("not JSON")
            key, complete = self._string()
            if not complete or not self._skip():
                return members, False
            if self.text[self.at] != ":":
                raise ValueError("not JSON")
            self.at += 1
            try:
                members[key], complete = self.value()
            except _Incomplete:
                return members, False
            if not complete or not self._skip():
                return members, False
            if self.text[self.at] == ",":
                self.at += 1
            elif self.text[self.at] != "}":
                raise ValueError("not JSON")
        return members, False
