"""What an adapter computed from a history message, remembered for the next step.

A loop sends its whole history again at every step, a few messages longer
each time, and messages are immutable: an adapter that maps or digests each
message once per request repeats for step n the work of every step before
it. :class:`MessageMemo` keeps such a result by the message object's
identity, so a step does that work for its new messages only.
"""

from __future__ import annotations

import collections
import functools
import threading
import weakref
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

V = TypeVar("V")

DEFAULT_KEEP = 1024
"""How many results a :class:`MessageMemo` keeps."""


class MessageMemo(Generic[V]):
    """Results computed from messages, by message object and a key (what
    else the result depends on: the adapter's dialect, say).

    An entry is found only for its very message object (a weak reference
    tells: an ``id`` may be reused once its object is gone) and an equal
    key. It holds no message: it goes when its message is collected, so a
    history with large files is not kept alive by it; the least recently
    used entries go beyond ``keep``. Safe for concurrent runs: one lock
    guards the entries; the values are shared between the requests that
    find them, so they must never be changed once stored.

    Args:
        keep: how many results to keep.
    """

    def __init__(self, keep: int = DEFAULT_KEEP) -> None:
        # Reentrant: a message collected (by the cycle collector) while this
        # thread holds the lock removes its entry from inside it.
        self._lock = threading.RLock()
        self._keep = keep
        self._known: collections.OrderedDict[int, tuple[weakref.ref[object], Hashable, V]] = (
            collections.OrderedDict()
        )

    def find(self, messages: Sequence[object], key: Hashable) -> list[V | None]:
        """The stored result of each of ``messages`` under ``key``, or None
        where there is none."""
        found: list[V | None] = []
        with self._lock:
            for message in messages:
                entry = self._known.get(id(message))
                if entry is not None and entry[0]() is message and entry[1] == key:
                    self._known.move_to_end(id(message))
                    found.append(entry[2])
                else:
                    found.append(None)
        return found

    def store(self, results: Sequence[tuple[object, V]], key: Hashable) -> None:
        """Keep each ``(message, value)`` of ``results`` under ``key`` (replacing
        what the message had)."""
        if not results:
            return
        with self._lock:
            for message, value in results:
                ref = weakref.ref(message, functools.partial(self._forget, id(message)))
                self._known[id(message)] = (ref, key, value)
                self._known.move_to_end(id(message))
            while len(self._known) > self._keep:
                self._known.popitem(last=False)

    def _forget(self, ident: int, ref: weakref.ref[object]) -> None:
        """Drop the entry of a message that was collected (unless its ``id``
        already holds a newer message's entry)."""
        with self._lock:
            entry = self._known.get(ident)
            if entry is not None and entry[0] is ref:
                del self._known[ident]
