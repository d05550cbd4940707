"""Checks of HTTP header values given as options (by the adapters and by
``LoopOptions``): a ``ConfigError`` that names the header, never its value."""

from __future__ import annotations

from collections.abc import Mapping

from agentcore.errors import ConfigError


def header_dict(headers: Mapping[str, str] | None, option: str = "headers") -> dict[str, str]:
    """A copy of a headers option (named ``option`` in errors), once it is
    None or a mapping of ``str`` to ``str`` without line breaks or NUL in a
    value. The error names a bad header but never shows a value (it may be a
    credential)."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise ConfigError(
            f"{option} must be a mapping of str header names to str values, got {type(headers).__name__}"
        )
    for name, value in headers.items():
        if not isinstance(name, str):
            raise ConfigError(
                f"{option} must be a mapping of str header names to str values; "
                f"the name {name!r} is not a str"
            )
        if not isinstance(value, str):
            raise ConfigError(
                f"{option} must be a mapping of str header names to str values; {name!r} has a "
                f"{type(value).__name__} value"
            )
        credential(f"the value of header {name!r}", value)
    return dict(headers)


def credential(option: str, value: str) -> str:
    """``value`` once it holds no line break or NUL, which HTTP forbids in a
    header (a key read from a file often ends with a newline); the error
    never shows the value.

    Raises:
        ConfigError: ``value`` holds ``\\r``, ``\\n`` or ``\\0``.
    """
    if any(c in value for c in "\r\n\0"):
        raise ConfigError(
            f"{option} holds a line break or NUL character, which an HTTP header cannot carry "
            "(not shown: it may be a credential; a key read from a file keeps its newline: strip it)"
        )
    return value
