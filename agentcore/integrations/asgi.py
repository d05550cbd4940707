"""Stream a run to a browser from an ASGI app (Starlette, FastAPI, Django async views).

The asyncio counterpart of :mod:`agentcore.integrations.web`: :func:`sse_body` turns a
run's reader into an async iterator of Server-Sent Events, the same bytes
as :func:`agentcore.integrations.web.sse_stream` sends (one ``data:`` line of JSON per
part, :func:`agentcore.integrations.web.part_to_dict`, the terminal part last, and a
heartbeat comment, :data:`agentcore.integrations.web.HEARTBEAT`, whenever no part came
for ``heartbeat`` seconds). ``EventSource`` ignores comments; they keep
proxies and load balancers from closing a quiet connection (a tool working
for minutes), and make the server write, so that a vanished client is
noticed. Serve it with :data:`agentcore.integrations.web.CONTENT_TYPE` and
:data:`agentcore.integrations.web.SSE_HEADERS`.

Starlette or FastAPI::

    from starlette.responses import StreamingResponse
    from agentcore import Context, LoopOptions, user_message
    from agentcore.aio import arun
    from agentcore.integrations.asgi import sse_body
    from agentcore.integrations.web import CONTENT_TYPE, SSE_HEADERS

    async def stream(request):
        options = LoopOptions(model=model, messages=[user_message(request.query_params["q"])])
        reader = arun(options, Context(timeout=300))
        return StreamingResponse(sse_body(reader), media_type=CONTENT_TYPE, headers=SSE_HEADERS)

Django (an ``async def`` view served by an ASGI server)::

    async def stream(request):
        reader = arun(options, Context(timeout=300))
        return StreamingHttpResponse(sse_body(reader), content_type=CONTENT_TYPE, headers=SSE_HEADERS)

Client disconnect: Starlette (and so FastAPI) and Django's ASGI handler
listen for the ASGI ``http.disconnect`` message while they stream, and
cancel the task that reads the body. That task waits in the reader nearly
all the time, so the cancel lands there: the reader closes and the run is
cancelled, its upstream HTTP request included (see :mod:`agentcore.aio`).
Should the cancel land elsewhere (inside the server's ``send`` of an event,
which waits only when the client reads slower than the run writes), the
body is dropped with the response and its finalizer cancels the run.
:meth:`SSEBody.close` (Django calls it when the response ends) closes the
reader too.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from agentcore.aio import AsyncRunReader
from agentcore.engine.channel import RunReader
from agentcore.integrations.web import DEFAULT_HEARTBEAT, HEARTBEAT, encode_part
from agentcore.types import StreamPart

__all__ = ["SSEBody", "sse_body"]


class SSEBody:
    """The response body made by :func:`sse_body`: an async iterator of event
    bytes whose :meth:`close` (or ``aclose()``) closes the reader.

    Iteration yields one event per part and heartbeats in between, and stops
    after the terminal part (or when the reader was closed).
    """

    def __init__(
        self,
        reader: AsyncRunReader,
        heartbeat: float | None,
        encode: Callable[[StreamPart], bytes] = encode_part,
    ) -> None:
        self._reader = reader
        self._heartbeat = heartbeat
        self._encode = encode

    @property
    def reader(self) -> AsyncRunReader:
        """The run's reader (for its ``result()`` or ``messages`` once streamed)."""
        return self._reader

    def __aiter__(self) -> SSEBody:
        return self

    async def __anext__(self) -> bytes:
        while True:
            part = await self._reader.recv(self._heartbeat)  # StopAsyncIteration after the terminal part
            if part is None:
                return HEARTBEAT
            body = self._encode(part)
            if body:  # a part the encoder does not send is no chunk (an empty body chunk may end a response)
                return body

    def close(self) -> None:
        """Close the reader, which cancels a run still going; safe to call twice."""
        self._reader.close()

    async def aclose(self) -> None:
        """The same as :meth:`close`."""
        self.close()

    async def __aenter__(self) -> SSEBody:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def sse_body(
    reader: AsyncRunReader | RunReader,
    *,
    heartbeat: float | None = DEFAULT_HEARTBEAT,
    encode: Callable[[StreamPart], bytes] = encode_part,
) -> SSEBody:
    """Turn a run's reader into Server-Sent Events for an ASGI streaming response.

    Args:
        reader: an :class:`~agentcore.aio.AsyncRunReader` (from
            :func:`agentcore.aio.arun`) or the reader :func:`agentcore.run`
            returned (wrapped in one).
        heartbeat: seconds without a part after which
            :data:`agentcore.integrations.web.HEARTBEAT` is sent (> 0); None sends none.
        encode: turns one part into the bytes of its events, as the
            ``encode`` of :func:`agentcore.integrations.web.sse_stream`
            (agentcore's own events by default; a chat protocol's encoder).

    Returns:
        An async iterator of ``data: <json>\\n\\n`` events (as
        :func:`agentcore.integrations.web.sse_stream`) and heartbeats. Pass it to
        Starlette's or FastAPI's ``StreamingResponse`` or Django's
        ``StreamingHttpResponse`` with :data:`agentcore.integrations.web.CONTENT_TYPE` and
        :data:`agentcore.integrations.web.SSE_HEADERS`.

    Raises:
        ValueError: ``heartbeat`` is not positive.
    """
    if heartbeat is not None and not heartbeat > 0:
        raise ValueError(f"heartbeat must be a positive number of seconds or None, got {heartbeat!r}")
    return SSEBody(
        reader if isinstance(reader, AsyncRunReader) else AsyncRunReader(reader), heartbeat, encode
    )
