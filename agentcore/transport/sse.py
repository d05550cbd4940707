"""Server-Sent Events over sseclient-py, with the repairs a real client needs.

sseclient-py does the framing (fields, multi-line data, comments, CR / LF /
CRLF line ends). This wrapper fixes what it gets wrong for LLM streams
(design.md, "Transport hazards"):

* a UTF-8 byte order mark before the first field would hide the first event:
  it is stripped, even when split across reads;
* a final block cut at end of file is dispatched as if complete: its JSON
  failing to parse is reported as a cut stream (``TRANSIENT``), while a
  malformed data line inside the stream is ``UPSTREAM``;
* a bare ``data`` line gives an empty event: empty events are skipped, never
  JSON-decoded;
* comments (``: keep-alive``) never reach the event level, so the idle
  timeout is measured on network reads: after each read, if no
  content-bearing event (anything but ``ping``) arrived for ``idle_timeout``
  seconds, the stream fails as ``TRANSIENT``.

UTF-8 characters split across reads are safe: sseclient-py decodes whole lines.
"""

from __future__ import annotations

import codecs
import json
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any, NamedTuple

from sseclient import SSEClient

from agentcore.errors import ErrorClass, ModelError

_BOM = codecs.BOM_UTF8
_TERMINATORS = (b"\n\n", b"\r\r", b"\r\n\r\n")
DONE = "[DONE]"
"""The data of OpenAI's end-of-stream marker event."""


class Event(NamedTuple):
    """One decoded SSE event (a named tuple: one is made per event).

    Attributes:
        event: the event name (``"message"`` when the server gave none).
        data: the JSON payload, or the string ``"[DONE]"`` for OpenAI's end marker.
    """

    event: str
    data: Any


_event = tuple.__new__
"""``_event(Event, (name, data))``: an Event without the generated ``__new__``'s call (hot path)."""

_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The (C) scanner under ``json.loads``: ``_scan(text, 0)`` returns ``(value, end)``.

``json.loads`` wraps it in two Python calls and two whitespace regex matches,
which cost more than the scan of a short event. :func:`iter_events` calls it
directly and hands anything it does not consume whole (surrounding
whitespace, malformed text) to ``json.loads``, so the values and the errors
are those of ``json.loads``."""


class _Reads:
    """The byte source handed to SSEClient: strips the BOM, tracks the end,
    and checks the idle timeout after every read.

    The idle clock restarts when SSEClient asks for the next read after a
    read that carried content (``content`` is set per content-bearing
    event): by then every event of that read has reached the consumer, so
    the time a slow consumer keeps the worker waiting never counts as idle.
    """

    def __init__(
        self, chunks: Iterable[bytes], idle_timeout: float | None, clock: Callable[[], float]
    ) -> None:
        self._chunks = chunks
        self._idle_timeout = idle_timeout
        self._clock = clock
        self.last_content = clock()
        self.content = False
        """True once a content-bearing event was decoded since the last read."""
        self.at_eof = False
        self.ended_cleanly = True

    def __iter__(self) -> Iterator[bytes]:
        head: bytes | None = b""
        tail = b""
        for chunk in self._chunks:
            if not chunk:
                continue
            if head is not None:
                head += chunk
                if len(head) < len(_BOM) and _BOM.startswith(head):
                    continue
                chunk = head[len(_BOM) :] if head.startswith(_BOM) else head
                head = None
                if not chunk:
                    continue
            tail = chunk[-4:] if len(chunk) >= 4 else (tail + chunk)[-4:]
            self._check_idle()
            yield chunk
            if self.content:
                self.content = False
                self.last_content = self._clock()
        self.at_eof = True
        self.ended_cleanly = tail == b"" or tail.endswith(_TERMINATORS)

    def _check_idle(self) -> None:
        if self._idle_timeout is not None and self._clock() - self.last_content > self._idle_timeout:
            raise ModelError(
                ErrorClass.TRANSIENT,
                message=f"no content from the server for {self._idle_timeout:g} s (idle timeout)",
            )


def iter_events(
    chunks: Iterable[bytes],
    *,
    idle_timeout: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Generator[Event, None, None]:
    """Decode an SSE byte stream into JSON events.

    Args:
        chunks: the body, in reads of any size.
        idle_timeout: seconds allowed without a content-bearing event (events
            named ``ping`` and comments do not count; time the consumer takes
            over the events does not either); None for no limit.
        clock: monotonic clock in seconds, for tests.

    Yields:
        :class:`Event` objects; ``data`` is parsed JSON or ``"[DONE]"``.

    Raises:
        ModelError: ``TRANSIENT`` for a block cut at end of stream or an idle
            timeout; ``UPSTREAM`` for a malformed JSON data line mid-stream,
            JSON nested too deeply to decode, or bytes that are not UTF-8. Errors raised by ``chunks`` pass
            through unchanged.
    """
    reads = _Reads(chunks, idle_timeout, clock)
    loads = json.loads
    try:
        for raw in SSEClient(iter(reads)).events():
            data = raw.data
            if not data:
                continue
            name = raw.event
            if name != "ping":
                reads.content = True
            if data == DONE:
                yield _event(Event, (name, DONE))
                continue
            try:
                try:
                    payload, end = _scan(data, 0)
                except (StopIteration, ValueError):  # not JSON at its first character, or malformed
                    end = -1
                if end != len(data):
                    payload = loads(data)
            except RecursionError as exc:
                message = f"an event in the stream is nested too deeply to decode: {data[:200]!r}"
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc
            except ValueError as exc:
                if reads.at_eof and not reads.ended_cleanly:
                    raise ModelError(
                        ErrorClass.TRANSIENT, err=exc, message="the stream was cut in the middle of an event"
                    ) from exc
                message = f"malformed JSON in the event stream: {data[:200]!r}"
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc
            yield _event(Event, (name, payload))
    except UnicodeDecodeError as exc:  # sseclient-py decodes each line as UTF-8
        raise ModelError(ErrorClass.UPSTREAM, err=exc, message="the event stream is not valid UTF-8") from exc
