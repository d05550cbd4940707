"""How a history's tool calls and results go back to an API: an error
result's text for an API without an error flag, the arguments of a call
that cannot go back as they are, and another service's provider items left
out. The check that a history pairs its calls and results is
:func:`agentcore.history.check_history`, which every adapter makes first.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from agentcore.types import ERROR_PREFIX, Message, ToolResult

_log = logging.getLogger("agentcore.providers")


def marked_error(result: ToolResult) -> str:
    """The text of ``result`` as an API without an error flag gets it: an
    error result's text starts with :data:`ERROR_PREFIX`, unless it already
    says so (the loop's own error results start with "Error: ")."""
    content = result.content
    if result.is_error and not content.lower().startswith("error"):
        return ERROR_PREFIX + content
    return content


def log_foreign_items(messages: Sequence[Message], format: str, origin: str, *, start: int = 0) -> None:
    """Log at INFO the provider items of ``messages`` that an adapter of
    ``format`` at ``origin`` leaves out of its request (another provider's
    compaction blocks, which it could not read), one line naming each by its
    message index (``start`` is the index of ``messages[0]``); nothing when
    there are none."""
    foreign = [
        f"messages[{start + index}]: {item.type} from {item.format or '?'} at {item.origin or '?'}"
        for index, message in enumerate(messages)
        for item in message.provider_items
        if item.format != format or item.origin != origin
    ]
    if foreign:
        _log.info("agentcore: another service's provider items left out: %s", "; ".join(foreign))


MAX_ARGUMENTS_DEPTH = 512
"""How deeply a tool call's arguments may nest (objects and arrays, the
outer object counting one) to go back to an API as they are. Python's JSON
decoder and encoder stop at about 1,000 levels (less on a deep stack;
Python 3.12: 1,500, 3.13: 10,000), and a request body holds the arguments a
few levels deeper than the call: arguments near that limit could be decoded
for the call but not encoded again in a request."""


def arguments_object(text: str) -> dict[str, Any] | None:
    """The JSON object a tool call's arguments text holds, or None when it
    holds none that can go back to an API: the text is empty, malformed, not
    an object, or nests deeper than :data:`MAX_ARGUMENTS_DEPTH` levels.

    The adapters send such arguments as ``{}``, so a history holding the call
    can be sent again; the call's error result already told the model what
    was wrong (the loop runs no tool on arguments that are not an object;
    arguments nested too deeply for the decoder are such).
    """
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if text.count("{") + text.count("[") > MAX_ARGUMENTS_DEPTH and _nests_deeper(value, MAX_ARGUMENTS_DEPTH):
        return None  # (fewer brackets than the limit, brackets in strings included, cannot nest deeper)
    return value


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` (decoded JSON) nests objects and arrays more than
    ``limit`` levels deep, walked one level at a time (no recursion)."""
    level = [value]
    for _ in range(limit):
        below: list[Any] = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if isinstance(child, (dict, list)):
                    below.append(child)
        if not below:
            return False
        level = below
    return True
