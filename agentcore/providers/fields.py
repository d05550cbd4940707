"""Reading the fields of decoded stream events by their documented JSON types.

A field that is absent or ``null`` is absent (servers send ``null`` for
fields they leave out). A field present with another JSON type than the API
documents (``delta.content`` a number, ``usage.prompt_tokens`` the string
``"12"``) is an ``UPSTREAM`` :class:`ModelError` naming the field, as
malformed JSON is (:func:`agentcore.transport.sse.iter_events`): read as
empty or 0, it would end a step with a short answer or under-count billed
tokens, and nobody would know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcore.errors import ErrorClass, ModelError


def wrong_shape(field: str, value: object, expected: str) -> ModelError:
    """The ``UPSTREAM`` error for ``field`` holding ``value`` where the API
    documents ``expected`` (``"a string"``): ``an event of the wrong shape
    in the stream: choices[0].delta.content is the number 5, not a string``."""
    return ModelError(
        ErrorClass.UPSTREAM,
        message=f"an event of the wrong shape in the stream: {field} is {_described(value)}, not {expected}",
    )


def _described(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return "null"


def text(container: Mapping[str, Any], key: str, field: str) -> str:
    """``container[key]`` as a string: "" when absent or null.

    Raises:
        ModelError: ``UPSTREAM``, the field holds another JSON type.
    """
    value = container.get(key)
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    raise wrong_shape(field, value, "a string")


def mapping(container: Mapping[str, Any], key: str, field: str) -> Mapping[str, Any]:
    """``container[key]`` as a JSON object: empty when absent or null.

    Raises:
        ModelError: ``UPSTREAM``, the field holds another JSON type.
    """
    value = container.get(key)
    if isinstance(value, Mapping):
        return value
    if value is None:
        return {}
    raise wrong_shape(field, value, "an object")


def array(container: Mapping[str, Any], key: str, field: str) -> list[Any]:
    """``container[key]`` as a JSON array: empty when absent or null.

    Raises:
        ModelError: ``UPSTREAM``, the field holds another JSON type.
    """
    value = container.get(key)
    if isinstance(value, list):
        return value
    if value is None:
        return []
    raise wrong_shape(field, value, "a list")


def token_count(container: Mapping[str, Any], key: str, field: str) -> int | None:
    """``container[key]`` as a token count: a whole number of at least 0
    (``12.0`` is 12); None when absent or null.

    Raises:
        ModelError: ``UPSTREAM``, the field holds anything else (a string,
            a fraction, a negative number, a boolean): counted as 0 it would
            under-count the tokens billed.
    """
    value = container.get(key)
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    if type(value) is float and value.is_integer() and value >= 0:
        return int(value)
    raise wrong_shape(field, value, "a token count")
