"""Credentials kept out of what agentcore shows: one rule for every place.

Which headers carry a credential (:data:`SECRET_HEADER`), their values shown
as :data:`REDACTED` in a ``repr`` (:func:`headers_repr`: ``Request``,
``LoopOptions``, an MCP server), the secrets a set of headers holds
(:func:`secret_values`), and those secrets cut out of a message
(:func:`redact`) or out of a :class:`ModelError` (:func:`without_secret`), as
a server may echo the key it was sent. The adapters' streams, the transport
and the MCP integration all redact with these.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from agentcore.errors import ModelError

SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie", re.IGNORECASE)
"""Header names whose values are credentials: never shown in a ``repr``."""

REDACTED = "[REDACTED]"
"""What stands for a credential in a ``repr`` or a message."""

MIN_SECRET_LENGTH = 8
"""Secrets shorter than this many characters are not cut out of messages:
they would blank out ordinary words."""


def headers_repr(headers: Mapping[str, str]) -> str:
    """``repr`` of a header mapping with credential values shown as ``'[REDACTED]'``."""
    return repr({k: REDACTED if SECRET_HEADER.search(k) else v for k, v in headers.items()})


def secret_values(headers: Mapping[str, str]) -> list[str]:
    """The secrets a request carries in its headers: the values of
    ``Authorization``, ``x-api-key``, ``api-key`` and any header whose name
    says key, token, secret or cookie, and the credential after a scheme
    word (``Bearer sk-...`` gives ``sk-...`` too); each also as ``repr``
    escapes it and without surrounding whitespace."""
    found: list[str] = []
    for name, value in headers.items():
        if SECRET_HEADER.search(name) and isinstance(value, str):
            # also as a repr() in an error message shows it (a newline as \n), and stripped
            found += [value, repr(value)[1:-1], value.strip()]
            scheme, _, credential = value.partition(" ")
            if credential and scheme.isalpha():
                found += [credential.strip(), repr(credential)[1:-1]]
    return list(dict.fromkeys(found))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with each of ``secrets`` of :data:`MIN_SECRET_LENGTH`
    characters or more replaced by :data:`REDACTED` (the longest first, so a
    secret that contains another goes whole)."""
    for secret in _long_secrets(secrets):
        text = text.replace(secret, REDACTED)
    return text


def without_secret(exc: ModelError, secrets: Iterable[str | None]) -> ModelError:
    """``exc``, or a copy whose message is :func:`redact`-ed of ``secrets``.

    Every other field is kept, ``err`` too unless it (or an exception
    chained to it) quotes a secret: it would be chained as ``__cause__``
    (``requests`` refusing a header value quotes the value).
    """
    found = _long_secrets(secrets)
    message = redact(exc.message, found)
    err = None if _quotes_any(exc.err, found) else exc.err
    if message == exc.message and err is exc.err:
        return exc
    return ModelError(exc.error_class, exc.retry_after, err, message=message, status=exc.status)


def _long_secrets(secrets: Iterable[str | None]) -> list[str]:
    """The secrets long enough to redact, longest first."""
    return sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)


def _quotes_any(err: BaseException | None, secrets: list[str]) -> bool:
    """True when ``err`` or an exception chained to it mentions one of ``secrets``."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        text = f"{err!s} {err.args!r}"
        if any(secret in text for secret in secrets):
            return True
        err = err.__cause__ or err.__context__
    return False
