"""Stream a run to a browser as Server-Sent Events.

:func:`sse_stream` turns a run's reader into the body of a ``text/event-stream``
response: one event per :class:`~agentcore.StreamPart`, each a single
``data:`` line holding the part as a JSON object (:func:`part_to_dict`), the
terminal ``finish`` or ``error`` part last::

    data: {"kind":"text-delta","text":"Hel"}

    data: {"kind":"step-finish","finish_reason":"stop","usage":{"input":12,"output":3,...}}

    data: {"kind":"finish","finish_reason":"stop","total_usage":{"input":12,"output":3,...}}

When no part came for ``heartbeat`` seconds (:data:`DEFAULT_HEARTBEAT`), a
heartbeat comment goes out instead (:data:`HEARTBEAT`, ``: heartbeat``),
which ``EventSource`` ignores: it keeps proxies and load balancers from
closing a quiet stream (a tool working for minutes), and makes the server
write, so that a browser that went away is noticed.

Serve it with content type :data:`CONTENT_TYPE` (``text/event-stream``) and
the headers in :data:`SSE_HEADERS`: ``Cache-Control: no-cache`` (no cache or
proxy may store or merge the stream) and ``X-Accel-Buffering: no`` (nginx
passes each event on at once instead of buffering the response). Put no
compressing middleware in front of the stream (Django's ``GZipMiddleware``,
Flask-Compress): it holds events back until its buffer fills.

Flask::

    from flask import Flask, Response, request
    from agentcore import Context, LoopOptions, run, user_message
    from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS, sse_stream

    @app.get("/stream")
    def stream() -> Response:
        options = LoopOptions(model=model, messages=[user_message(request.args["q"])], tools=tools)
        reader = run(options, Context(timeout=300))
        return Response(sse_stream(reader), mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

Django::

    from django.http import StreamingHttpResponse
    from agentcore import Context, LoopOptions, run, user_message
    from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS, sse_stream

    def stream(request):
        options = LoopOptions(model=model, messages=[user_message(request.GET["q"])], tools=tools)
        reader = run(options, Context(timeout=300))
        return StreamingHttpResponse(sse_stream(reader), content_type=CONTENT_TYPE, headers=SSE_HEADERS)

In the browser, ``new EventSource("/stream?q=...")`` and ``JSON.parse(event.data)``
in ``onmessage``; call ``source.close()`` on the terminal part, or the browser
reconnects when the response ends and asks the question again.

When the browser goes away, the WSGI server's next write fails and it calls
``close()`` on the response iterable (PEP 3333 requires this "whether the
request was completed normally, or terminated early ... or an early
disconnect of the browser"); Flask and Django pass that on to the
:class:`SSEStream`, which closes the reader: the run is cancelled, a blocked
network read is interrupted, and the upstream HTTP response is closed. The
tests check this under Werkzeug and Django's runserver. A WSGI server notices
a closed connection only when it writes: the heartbeats make it write while
a run is silent (a slow tool, a model thinking in silence), so the run is
cancelled within a few heartbeats of the browser leaving (TCP takes a write
or two after the peer left). Give long runs a deadline as well
(``run(options, Context(timeout=...))``). Serve the stream from a WSGI
server: under ASGI, Django consumes a synchronous iterator in a worker
thread (and warns about it); ASGI apps use :func:`agentcore.integrations.asgi.sse_body`,
which sends the same events and heartbeats.

Decisions:

* :func:`sse_stream` returns an iterator object with ``close()``, not a bare
  generator: closing a generator that never started skips its ``finally``
  block, and a WSGI server may close a response before reading it (a client
  gone before the first part). ``close()`` here always closes the reader.
* Heartbeats need a reader that can wait with a time limit: the reader
  :func:`agentcore.run` returns (:meth:`agentcore.engine.channel.StreamReader.recv`
  with ``timeout``). Any other iterable of parts is streamed without them.
* Each event is one ``data:`` line of compact JSON, so plain
  ``EventSource.onmessage`` receives every part; there is no ``event:`` or
  ``id:`` field and no reconnection support (a retried question is a new run).
* JSON is written with non-ASCII characters as UTF-8 (the encoding SSE
  requires); text that cannot be encoded as UTF-8 (a lone surrogate) is
  written with ``\\u`` escapes instead, so the stream never fails.
* The keys of an event are the part's field names (``err`` holds
  ``str(err)``), as in the ``--json`` output of the ``agentcore`` command. An
  ``error`` part adds ``error_type`` (the exception's class name) and, for a
  :class:`~agentcore.ModelError`, ``error_class`` (the :class:`ErrorClass`
  member's name in lower case, e.g. ``"rate_limited"``), ``status`` (the HTTP
  status) and ``retry_after`` (seconds); each is ``null`` when there is none.
* Tool input as it streams (``tool-call-delta``, when the run asks for it)
  and citations (``citation``) are forwarded as they come, so a page can
  show a tool's name as soon as the model starts its call, and a source
  beside the text it supports; the history keeps the citations on the text
  (``Message.citations``), not the deltas.
* Reasoning is forwarded like every other part: ``reasoning-delta`` events
  as the model thinks (what a page shows, folded), then one ``reasoning``
  event with the whole block as the history stores it (signature and
  encrypted data included: they are opaque to the browser, and a client
  that keeps the conversation needs them to send it back). A page that does
  not show reasoning ignores both kinds.
* A tool's files are described, not sent whole: each event would otherwise
  carry every byte as base64. A file of up to :data:`INLINE_FILE_LIMIT`
  bytes (a chart, a thumbnail) comes as a ``data:`` URL a page can show at
  once; a larger one as its type, name and size only (serve it from the
  run's history if the page needs it).
* The message is ``str(err)``: adapters keep API keys out of their errors
  (they redact a key a server echoes), and nothing else is sent, neither the
  cause chain nor a traceback.
"""

from __future__ import annotations

import base64
import enum
import functools
import json
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any

import attrs

from agentcore.engine.channel import StreamReader
from agentcore.errors import ModelError
from agentcore.files import File
from agentcore.types import StreamPart, StreamPartKind

CONTENT_TYPE = "text/event-stream"
"""The content type of a Server-Sent Events response."""

SSE_HEADERS: dict[str, str] = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
"""Headers to send with the stream: no caching, no proxy buffering (nginx)."""

DEFAULT_HEARTBEAT = 15.0
"""Seconds without a part after which a heartbeat comment is sent."""

HEARTBEAT = b": heartbeat\n\n"
"""The heartbeat: an SSE comment, which ``EventSource`` ignores."""

INLINE_FILE_LIMIT = 256 * 1024
"""The largest file, in bytes, that an event carries inline as a ``data:`` URL
(:func:`file_to_dict`); a larger one is described without its bytes."""

__all__ = [
    "CONTENT_TYPE",
    "DEFAULT_HEARTBEAT",
    "HEARTBEAT",
    "SSE_HEADERS",
    "SSEStream",
    "INLINE_FILE_LIMIT",
    "error_to_dict",
    "file_to_dict",
    "part_to_dict",
    "encode_part",
    "sse_event",
    "sse_stream",
]


def error_to_dict(err: BaseException) -> dict[str, Any]:
    """The JSON fields of a run's error, safe to show a browser.

    Args:
        err: the ``err`` of an ``error`` part.

    Returns:
        ``{"err": str(err), "error_type": class name, "error_class",
        "status", "retry_after"}``. For a :class:`~agentcore.ModelError`,
        ``error_class`` is its :class:`~agentcore.ErrorClass` member's name in
        lower case (``"rate_limited"``), ``status`` the HTTP status and
        ``retry_after`` the server's requested wait in seconds; each of the
        three is None when the error is of another type or has none.
    """
    try:
        message = str(err)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the stream
        message = ""
    model_error = err if isinstance(err, ModelError) else None
    return {
        "err": message or type(err).__name__,
        "error_type": type(err).__name__,
        "error_class": model_error.error_class.name.lower() if model_error else None,
        "status": (model_error.status or None) if model_error else None,
        "retry_after": (model_error.retry_after or None) if model_error else None,
    }


def file_to_dict(file: File) -> dict[str, Any]:
    """A tool's file as an event shows it, without inlining megabytes.

    Returns:
        ``{"media_type", "size"}`` (bytes; 0 for a file given by URL), plus
        ``filename`` when it has one, ``url`` for a file given by URL, and
        ``data_url`` (``data:<type>;base64,...``, ready for an ``<img src>``)
        for a file of at most :data:`INLINE_FILE_LIMIT` bytes. A larger
        file's bytes stay on the server, in the run's history.
    """
    out: dict[str, Any] = {"media_type": file.media_type, "size": file.size}
    if file.filename:
        out["filename"] = file.filename
    if file.url:
        out["url"] = file.url
    elif file.size <= INLINE_FILE_LIMIT:
        out["data_url"] = (
            f"data:{file.media_type};base64,{base64.b64encode(file.data or b'').decode('ascii')}"
        )
    return out


def _enum_value(_instance: object, _field: object, value: object) -> object:
    return value.value if isinstance(value, enum.Enum) else value


def part_to_dict(part: StreamPart) -> dict[str, Any]:
    """The JSON form of a stream part: ``kind`` (its string value) and the
    fields that kind carries.

    ===================  ==================================================
    kind                 keys besides ``kind``
    ===================  ==================================================
    ``text-delta``       ``text``
    ``reasoning-delta``  ``text`` (a fragment of the model's reasoning, to show)
    ``reasoning``        ``reasoning``: the whole block, :meth:`Reasoning.to_dict`
                         (``text`` always; ``signature``, ``data``, ``id``,
                         ``format``, ``origin``, ``provider_data`` when set)
    ``tool-call``        ``tool_call``: ``{"id", "name", "input"}`` (input is JSON
                         text), plus ``provider_data`` and ``origin`` when set
    ``tool-call-delta``  ``tool_call``: ``{"id", "name", "input"}``, ``input``
                         the next fragment of the call's JSON arguments
                         (``LoopOptions(stream_tool_input=True)`` only; the
                         whole ``tool-call`` follows)
    ``citation``         ``citation``: :meth:`Citation.to_dict` (``url``,
                         ``title``, ``cited_text``, ``type``, ``data``, each
                         when not ""): a source the text around it cites
    ``provider-item``    ``provider_item``: :meth:`ProviderItem.to_dict`
                         (``type``, ``data``, ``format``, ``origin``, and
                         ``text`` when set: a compaction summary)
    ``tool-result``      ``tool_result``: ``{"tool_call_id", "name", "content", "is_error"}``,
                         plus ``files`` (each :func:`file_to_dict`) when the
                         tool returned files
    ``step-finish``      ``finish_reason``, ``usage``, and ``cache`` (the
                         fields of :class:`agentcore.caching.CacheReport`,
                         enums as their values) when the adapter compared
                         the request
    ``compaction``       ``compaction``: :meth:`Compaction.to_dict` (``policy``,
                         ``removed``, ``messages_before``, ``messages_after``,
                         ``tokens_before``, ``tokens_after``, ``summary``,
                         ``usage``, ``refused``): a history policy changed the
                         run's history before the next step; ``removed``
                         empty and as many messages after as before: it
                         changed nothing, and ``usage`` is what it cost
    ``finish``           ``finish_reason``, ``total_usage``
    ``error``            ``finish_reason`` (``error`` or ``canceled``), ``total_usage``,
                         ``err``, ``error_type``, ``error_class``, ``status``, ``retry_after``
    ``nested``           ``path`` (the agent-tool call ids, outermost first)
                         and ``part``: the sub-run's part in this form
                         (``docs/agents.md``)
    ``handoff``          ``agent``: the name of the agent now in charge
    ===================  ==================================================

    Usage objects are ``{"input", "output", "cache_read", "cache_write"}``
    token counts, plus the server-tool counts (``web_search_requests``,
    ``web_fetch_requests``, ``code_execution_requests``,
    ``file_search_requests``) that are not 0 (see
    :class:`~agentcore.Usage`); the error fields are
    :func:`error_to_dict` of the part's ``err``. A ``reasoning``,
    ``tool_call`` or ``provider_item`` object is the form
    :meth:`Message.to_dict` stores in a history, so ``Reasoning.from_dict`` /
    ``ToolCall.from_dict`` / ``ProviderItem.from_dict`` rebuild the value
    exactly.

    Args:
        part: any stream part.

    Returns:
        A dict of plain JSON values.
    """
    kind = part.kind
    data: dict[str, Any] = {"kind": kind.value}
    if kind is StreamPartKind.TEXT_DELTA or kind is StreamPartKind.REASONING_DELTA:
        data["text"] = part.text
    elif kind is StreamPartKind.REASONING:
        assert part.reasoning is not None
        data["reasoning"] = part.reasoning.to_dict()
    elif kind is StreamPartKind.TOOL_CALL or kind is StreamPartKind.TOOL_CALL_DELTA:
        assert part.tool_call is not None
        data["tool_call"] = part.tool_call.to_dict()
    elif kind is StreamPartKind.CITATION:
        assert part.citation is not None
        data["citation"] = part.citation.to_dict()
    elif kind is StreamPartKind.PROVIDER_ITEM:
        assert part.provider_item is not None
        data["provider_item"] = part.provider_item.to_dict()
    elif kind is StreamPartKind.TOOL_RESULT:
        assert part.tool_result is not None
        result = part.tool_result
        data["tool_result"] = attrs.evolve(result, files=()).to_dict()
        if result.files:
            data["tool_result"]["files"] = [file_to_dict(file) for file in result.files]
    elif kind is StreamPartKind.STEP_FINISH:
        assert part.finish_reason is not None
        data["finish_reason"] = part.finish_reason.value
        data["usage"] = part.usage.to_dict()
        if part.cache is not None:
            data["cache"] = attrs.asdict(part.cache, value_serializer=_enum_value)
    elif kind is StreamPartKind.COMPACTION:
        assert part.compaction is not None
        data["compaction"] = part.compaction.to_dict()
    elif kind is StreamPartKind.NESTED:
        assert part.nested is not None
        data["path"] = list(part.path)
        data["part"] = part_to_dict(part.nested)
    elif kind is StreamPartKind.HANDOFF:
        data["agent"] = part.agent
    else:
        assert part.finish_reason is not None
        data["finish_reason"] = part.finish_reason.value
        data["total_usage"] = part.total_usage.to_dict()
        if kind is StreamPartKind.ERROR:
            assert part.err is not None
            data.update(error_to_dict(part.err))
    return data


def sse_event(data: dict[str, Any]) -> bytes:
    """One Server-Sent Event, ``data: <compact JSON>\\n\\n``, as UTF-8 bytes.

    JSON escapes every line break inside strings, so the event is always a
    single ``data:`` line.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        body = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: let JSON escape it
        body = json.dumps(data, separators=(",", ":")).encode("ascii")
    return b"data: " + body + b"\n\n"


def encode_part(part: StreamPart) -> bytes:
    """agentcore's own event for a part: ``sse_event(part_to_dict(part))``.

    The default ``encode`` of :func:`sse_stream`; the chat protocols
    (:mod:`agentcore.integrations.ai_sdk`, :mod:`agentcore.integrations.ag_ui`)
    give their own.
    """
    return sse_event(part_to_dict(part))


class SSEStream:
    """The response body made by :func:`sse_stream`: an iterator of event
    bytes whose :meth:`close` closes the reader.

    Iteration yields ``encode(part)`` for each part (the events of one part,
    one chunk; nothing for a part it encodes as no bytes), and :data:`HEARTBEAT` after each
    ``heartbeat`` seconds without one (when ``reader`` is a
    :class:`~agentcore.engine.channel.StreamReader` and ``heartbeat`` is not None);
    it stops after the terminal part (or when the reader ends without one).
    A WSGI server calls :meth:`close` when the response is done or the client
    went away.
    """

    def __init__(
        self,
        reader: Iterable[StreamPart],
        heartbeat: float | None = None,
        encode: Callable[[StreamPart], bytes] = encode_part,
    ) -> None:
        self._reader = reader
        self._encode = encode
        self._parts = iter(reader)
        self._next_part: Callable[[], StreamPart | None] = self._parts.__next__
        if heartbeat is not None and isinstance(reader, StreamReader):
            self._next_part = functools.partial(reader.recv, heartbeat)
        self._ended = False  # the terminal part was read: the run is over
        self._closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        while True:
            if self._ended or self._closed:
                self.close()
                raise StopIteration
            try:
                part = self._next_part()
            except BaseException:
                self.close()
                raise
            if part is None:
                return HEARTBEAT
            if part.terminal:
                self._ended = True
            body = self._encode(part)
            if (
                body
            ):  # a part an encoder does not send is no chunk: some servers end a response on an empty one
                return body

    def close(self) -> None:
        """Close the reader, which cancels a run still going; safe to call twice.

        After the terminal part the run is over: the reader is read to its end
        first (at once), so that its ``result()`` reports the run's outcome
        rather than a cancel.
        """
        if self._closed:
            return
        self._closed = True
        if self._ended:
            next(self._parts, None)
        close = getattr(self._reader, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> SSEStream:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def sse_stream(
    reader: Iterable[StreamPart],
    *,
    heartbeat: float | None = DEFAULT_HEARTBEAT,
    encode: Callable[[StreamPart], bytes] = encode_part,
) -> SSEStream:
    """Turn a run's reader into Server-Sent Events bytes for a streaming response.

    Args:
        reader: the reader returned by :func:`agentcore.run` (or any iterable
            of stream parts; its ``close()``, if it has one, is called).
        heartbeat: seconds without a part after which :data:`HEARTBEAT` is
            sent (> 0); None sends none. Only a
            :class:`~agentcore.engine.channel.StreamReader` (what :func:`agentcore.run`
            returns) can be waited on with a time limit: another iterable
            gets no heartbeats.
        encode: turns one part into the bytes of its events (the default,
            :func:`encode_part`, agentcore's own event); a chat protocol's
            encoder (:class:`agentcore.integrations.ai_sdk.UIMessageStreamEncoder`,
            :class:`agentcore.integrations.ag_ui.AGUIEncoder`) speaks that
            protocol instead. One encoder per stream: they keep state.

    Returns:
        An iterator of ``data: <json>\\n\\n`` events, one per part
        (:func:`part_to_dict`), the terminal part last, and heartbeats in
        silences, with a ``close()`` that closes the reader and so cancels
        the run. Pass it to ``flask.Response`` or
        ``django.http.StreamingHttpResponse`` with :data:`CONTENT_TYPE` and
        :data:`SSE_HEADERS`.

    Raises:
        ValueError: ``heartbeat`` is not positive.
    """
    if heartbeat is not None and not heartbeat > 0:
        raise ValueError(f"heartbeat must be a positive number of seconds or None, got {heartbeat!r}")
    return SSEStream(reader, heartbeat, encode)
