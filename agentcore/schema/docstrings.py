"""Google-style docstrings read for function tools: summaries and per-name descriptions.

:func:`parse_docstring` splits a docstring into its summary and the entries of
its ``Args:`` and ``Attributes:`` sections (and their synonyms);
:func:`class_doc` does the same for a class's own docstring.
:mod:`agentcore.schema.signature` uses them for the tool's description and the
``description`` of each property.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
import types
from collections.abc import Mapping
from typing import NamedTuple

_SECTION_NAMES = frozenset(
    {
        "args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
        "other parameters", "attributes", "keys", "returns", "return", "yields", "yield", "raises",
        "examples", "example", "note", "notes", "see also", "warning", "warnings", "warns",
        "todo", "references", "methods",
    }
)  # fmt: skip
_ARG_SECTIONS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "other parameters"}
)
_ATTRIBUTE_SECTIONS = frozenset({"attributes", "keys"})
_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_ENTRY = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:(?P<text>.*)$")


class Docstring(NamedTuple):
    """A parsed Google-style docstring.

    Attributes:
        summary: the text before the first section, stripped.
        args: name -> description from ``Args:`` (and its synonyms).
        attributes: name -> description from ``Attributes:`` (or ``Keys:``).
    """

    summary: str = ""
    args: Mapping[str, str] = types.MappingProxyType({})
    attributes: Mapping[str, str] = types.MappingProxyType({})


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into its summary and its entries.

    A section starts at a line such as ``Args:`` at the docstring's left
    margin and ends at the next unindented line. In an entry
    ``name (type): text``, the type is ignored and the text continues on the
    more indented lines below; wrapped lines are joined with spaces, and
    paragraphs (split by blank lines) with a blank line.
    """
    if not doc:
        return Docstring()
    summary: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = summary
    for line in inspect.cleandoc(doc).splitlines():
        header = _HEADER.match(line)
        if header and header.group(1).lower() in _SECTION_NAMES:
            current = sections.setdefault(header.group(1).lower(), [])
        elif current is not summary and line[:1].strip():
            current = None  # unindented text ends a section
        elif current is not None:
            current.append(line)
    args: dict[str, str] = {}
    attributes: dict[str, str] = {}
    for name, lines in sections.items():
        if name in _ARG_SECTIONS:
            args.update(_entries(lines))
        elif name in _ATTRIBUTE_SECTIONS:
            attributes.update(_entries(lines))
    return Docstring("\n".join(summary).strip(), args, attributes)


def _entries(lines: list[str]) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in textwrap.dedent("\n".join(lines)).splitlines():
        if line[:1].strip():
            match = _ENTRY.match(line)
            current = entries.setdefault(match["name"], []) if match else None
            if current is not None and match is not None:
                current.append(match["text"])
        elif current is not None:
            current.append(line)
    return {name: _join(text) for name, text in entries.items()}


def _join(lines: list[str]) -> str:
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(p) for p in paragraphs if p)


def class_doc(cls: type) -> Docstring:
    """The parsed docstring a class declares itself (empty when it has none)."""
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or (dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}(")):
        return Docstring()  # no docstring of its own (dataclasses invent one)
    return parse_docstring(doc)
