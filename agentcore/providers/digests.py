"""The digests of what an adapter sends, for the prompt-cache report
(:mod:`agentcore.caching`): one for the tool definitions, one for the system
prompt and one per history message, each of the JSON exactly as sent, so two
requests share a cached prefix exactly when their digests match.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.caching import Fingerprint
from agentcore.memo import MessageMemo

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every digest: ``json.dumps`` with options builds a new
encoder per call, which costs more than encoding a small message."""


def digest(value: Any) -> str:
    """A stable digest of ``value`` as the adapters send it: SHA-256 of its
    compact JSON text (keys in the order given, non-ASCII kept), as 32 hex
    characters. Equal JSON text gives the same digest in every process."""
    return hashlib.sha256(_COMPACT.encode(value).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fingerprint(tools: Any, system: Any, messages: Sequence[Any]) -> Fingerprint:
    """The :class:`Fingerprint` of a request from the JSON values sent for its
    tools, its system prompt and each of its messages (None: not sent)."""
    digests = tuple(digest(message) for message in messages)
    return Fingerprint(digest(tools), digest(system), digests, compacted_at(messages))


COMPACTION = "compaction"
"""The ``type`` of an Anthropic compaction block and of a Responses compaction item."""


def compacted_at(sent: Sequence[Any]) -> int | None:
    """The index of the last message whose JSON as sent (a list of content
    blocks or input items) holds a compaction block or item, or None: where
    the provider starts reading the prompt
    (:attr:`agentcore.caching.Fingerprint.compacted_at`)."""
    for index in range(len(sent) - 1, -1, -1):
        entries = sent[index]
        if isinstance(entries, list) and any(
            isinstance(entry, Mapping) and entry.get("type") == COMPACTION for entry in entries
        ):
            return index
    return None


class MessageDigests:
    """:func:`fingerprint` for an adapter that sends the same history
    messages again at every step: a message digested before is not encoded
    and hashed again (:class:`agentcore.memo.MessageMemo`).

    The JSON an adapter sends for a message depends on more than the message
    (a cache point in the next message adds ``cache_control`` to its last
    block), so a remembered digest is reused only while the message's JSON
    value compares equal to the one digested: one adapter builds a message's
    blocks in one key order, so equal values are equal text.
    """

    def __init__(self) -> None:
        self._memo: MessageMemo[tuple[Any, str]] = MessageMemo()

    def fingerprint(
        self, tools: Any, system: Any, messages: Sequence[object], sent: Sequence[Any]
    ) -> Fingerprint:
        """:func:`fingerprint` of ``tools``, ``system`` and ``sent`` (the JSON
        value sent for each of ``messages``, in order)."""
        digests: list[str] = []
        fresh: list[tuple[object, tuple[Any, str]]] = []
        known = self._memo.find(messages, None)
        for message, value, entry in zip(messages, sent, known, strict=True):
            if entry is not None and entry[0] == value:
                digests.append(entry[1])
            else:
                fresh.append((message, (value, digest(value))))
                digests.append(fresh[-1][1][1])
        self._memo.store(fresh, None)
        return Fingerprint(digest(tools), digest(system), tuple(digests), compacted_at(sent))
