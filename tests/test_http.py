"""HTTP plumbing against the real local server: the requests transport
(agentcore/transport/http.py) and the shell's opening of a stream through it
(:func:`agentcore.providers.shell.open_stream`)."""

from __future__ import annotations

import email.utils
import gc
import gzip
import json
import logging
import os
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from agentcore.context import Context
from agentcore.errors import Canceled, ConfigError, DeadlineExceeded, ErrorClass, ModelError
from agentcore.providers.config import check_base_url
from agentcore.providers.shell import encode_body, open_stream
from agentcore.transport import MAX_SECONDS, Response, Timeout
from agentcore.transport.errors import (
    CONTEXT_LENGTH_PATTERN,
    error_fields,
    error_from_body,
    looks_like_context_length,
    parse_retry_after,
)
from agentcore.transport.http import CancellableHTTPAdapter, HTTPTransport, new_session
from tests.faults.measure import socket_inodes
from tests.localserver import Close, LocalServer, Pause, Reply, Reset, Stall, json_reply, sse_reply
from tests.loop_helpers import wait_until

SSE = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'


@pytest.fixture
def session() -> Iterator[requests.Session]:
    s = new_session()
    try:
        yield s
    finally:
        s.close()


class Opened:
    """A stream the shell opened: its response and body chunks; leaving the
    ``with`` block closes it, with ``reuse`` when the test says the step was
    complete."""

    def __init__(self, response: Response, chunks: Iterator[bytes]) -> None:
        self.response = response
        self.chunks = chunks
        self.reuse = False

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.response.close(reuse=self.reuse)


def send(
    session: requests.Session,
    url: str,
    ctx: Context | None = None,
    *,
    headers: dict[str, str] | None = None,
    body: dict[str, Any] | None = None,
    timeout: Timeout = Timeout(connect=5.0, read=10.0),  # noqa: B008 - a frozen value
) -> Opened:
    """Open a stream as the adapters do: :func:`open_stream` through an
    :class:`HTTPTransport` over ``session``."""
    response, chunks = open_stream(
        HTTPTransport(session),
        url,
        headers=headers if headers is not None else {},
        body=encode_body(body if body is not None else {}),
        timeout=timeout,
        ctx=ctx or Context(),
    )
    return Opened(response, chunks)


def post(
    session: requests.Session,
    server: LocalServer,
    ctx: Context | None = None,
    *,
    read_timeout: float = 10.0,
    body: dict[str, Any] | None = None,
) -> Opened:
    return send(
        session,
        server.url + "/v1/chat/completions",
        ctx,
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"},
        body=body if body is not None else {"model": "m", "stream": True},
        timeout=Timeout(connect=5.0, read=read_timeout),
    )


def collect(items: Iterator[bytes], into: list[bytes]) -> None:
    """Append every item to ``into`` (so that what came before a failure is kept)."""
    into.extend(items)


def fail(session: requests.Session, server: LocalServer, **kwargs: Any) -> ModelError:
    with pytest.raises(ModelError) as info:
        post(session, server, **kwargs)
    return info.value


# --- open_stream and Response.chunks(): success -------------------------------------------------


def test_open_stream_returns_the_200_response_and_chunks_yields_its_body(
    server: LocalServer, session: requests.Session
) -> None:
    server.add(sse_reply(SSE, piece=10))
    stream = post(session, server, body={"model": "m", "messages": [{"content": "héllo 👋"}]})
    with stream:
        assert stream.response.status == 200
        assert stream.response.headers["content-type"] == "text/event-stream"
        chunks = list(stream.chunks)
    assert b"".join(chunks) == SSE
    assert len(chunks) > 1
    assert server.hits == 1
    request = server.requests[0]
    assert request["method"] == "POST"
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "m", "messages": [{"content": "héllo 👋"}]}
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["headers"]["Content-Type"] == "application/json"


def test_chunks_yields_each_chunk_as_it_arrives(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Pause(0.5), b"data: 2\n\n"]))
    started = time.monotonic()
    arrivals: list[tuple[float, bytes]] = []
    with post(session, server) as stream:
        for chunk in stream.chunks:
            arrivals.append((time.monotonic() - started, chunk))
    assert [c for _, c in arrivals] == [b"data: 1\n\n", b"data: 2\n\n"]
    assert arrivals[0][0] < 0.4
    assert arrivals[1][0] >= 0.45


def test_chunks_streams_a_body_without_chunked_encoding(
    server: LocalServer, session: requests.Session
) -> None:
    """``requests``' iter_content waits for a full chunk of a body without chunked
    encoding; chunks() hands each event on as it arrives (design.md, "Transport hazards")."""
    server.add(Reply(chunked=False, actions=[b"data: 1\n\n", Pause(0.5), b"data: 2\n\n", Close()]))
    started = time.monotonic()
    arrivals: list[tuple[float, bytes]] = []
    with post(session, server) as stream:
        assert "chunked" not in stream.response.headers.get("transfer-encoding", "")
        for chunk in stream.chunks:
            arrivals.append((time.monotonic() - started, chunk))
    assert b"".join(c for _, c in arrivals) == b"data: 1\n\ndata: 2\n\n"
    assert arrivals[0][1] == b"data: 1\n\n"
    assert arrivals[0][0] < 0.4


def test_chunks_decodes_a_gzip_body(server: LocalServer, session: requests.Session) -> None:
    """requests sends ``Accept-Encoding: gzip, deflate``; a server (or proxy)
    that takes it up must not hand compressed bytes to the SSE parser."""
    compressor = zlib.compressobj(wbits=31)
    events = [b'data: {"n":%d}\n\n' % i for i in range(3)]
    actions: list[Any] = []
    for event in events:
        actions += [compressor.compress(event) + compressor.flush(zlib.Z_SYNC_FLUSH), Pause(0.2)]
    actions.append(compressor.flush())
    server.add(
        Reply(actions=actions, headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"})
    )
    started = time.monotonic()
    with post(session, server) as stream:
        chunks = []
        first_at = None
        for chunk in stream.chunks:
            first_at = first_at or time.monotonic() - started
            chunks.append(chunk)
    assert "gzip" in server.requests[0]["headers"]["Accept-Encoding"]
    assert b"".join(chunks) == b"".join(events)
    assert first_at is not None
    assert first_at < 0.3  # decoded as it streams, not at the end


def test_gzip_error_body_is_decoded(server: LocalServer, session: requests.Session) -> None:
    body = json.dumps({"error": {"message": "prompt is too long", "type": "invalid_request_error"}}).encode()
    server.add(json_reply(400, gzip.compress(body), headers={"Content-Encoding": "gzip"}))
    err = fail(session, server)
    assert err.error_class is ErrorClass.CONTEXT_LENGTH
    assert "prompt is too long" in err.message


# --- non-200 statuses ---------------------------------------------------------------

OPENAI_CONTEXT: dict[str, Any] = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens, but your request used 10061 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC_CONTEXT: dict[str, Any] = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum",
    },
}
GATEWAY_CONTEXT: dict[str, Any] = {
    "error": {
        "message": "input length and max_tokens exceed context limit: 179000 + 32000 > 200000",
        "code": 400,
    }
}
CONTROL_400 = {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}}
ANTHROPIC_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)


def http_date(offset: float) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


@pytest.mark.parametrize(
    ("reply", "error_class", "retry_after", "words"),
    [
        (json_reply(429, {"error": {"message": "Rate limit reached"}}, {"Retry-After": "7"}),
         ErrorClass.RATE_LIMITED, 7.0, "Rate limit reached"),
        (json_reply(429, {"error": {"message": "slow"}}, {"Retry-After": "0.25"}),
         ErrorClass.RATE_LIMITED, 0.25, "slow"),
        (json_reply(429, {"error": {"message": "slow"}}, {"retry-after-ms": "1500", "Retry-After": "9"}),
         ErrorClass.RATE_LIMITED, 1.5, "slow"),
        (json_reply(429, {"error": {"message": "slow"}}, {"Retry-After": "soon-ish"}),
         ErrorClass.RATE_LIMITED, 0.0, "slow"),
        (json_reply(429, {"error": {"message": "slow"}}, {"Retry-After": http_date(-60)}),
         ErrorClass.RATE_LIMITED, 0.0, "slow"),
        (json_reply(529, ANTHROPIC_OVERLOADED), ErrorClass.OVERLOADED, 0.0, "overloaded_error: Overloaded"),
        (json_reply(503, {"error": {"message": "The server is overloaded"}}, {"Retry-After": "2"}),
         ErrorClass.OVERLOADED, 2.0, "The server is overloaded"),
        (json_reply(400, OPENAI_CONTEXT), ErrorClass.CONTEXT_LENGTH, 0.0, "maximum context length is 8192"),
        (json_reply(400, ANTHROPIC_CONTEXT), ErrorClass.CONTEXT_LENGTH, 0.0, "prompt is too long"),
        (json_reply(400, GATEWAY_CONTEXT), ErrorClass.CONTEXT_LENGTH, 0.0, "exceed context limit"),
        (json_reply(400, CONTROL_400), ErrorClass.INVALID_REQUEST, 0.0, "Invalid value for 'temperature'"),
        (json_reply(413, b"request entity too large"),
         ErrorClass.CONTEXT_LENGTH, 0.0, "request entity too large"),
        (json_reply(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
         ErrorClass.AUTH, 0.0, "Incorrect API key provided"),
        (json_reply(403, {"type": "error", "error": {"type": "permission_error", "message": "no access"}}),
         ErrorClass.AUTH, 0.0, "permission_error: no access"),
        (json_reply(404, {"error": {"message": "model not found"}}),
         ErrorClass.INVALID_REQUEST, 0.0, "not found"),
        (json_reply(500, {"error": {"message": "internal error", "type": "api_error"}}),
         ErrorClass.UPSTREAM, 0.0, "api_error: internal error"),
        (json_reply(502, {"error": {"message": "upstream connect error"}}),
         ErrorClass.TRANSIENT, 0.0, "upstream connect error"),
        (json_reply(502, HTML_502, {"Content-Type": "text/html"}), ErrorClass.TRANSIENT, 0.0,
         "502 Bad Gateway nginx"),
        (json_reply(504, b""), ErrorClass.TRANSIENT, 0.0, "(empty body)"),
        (json_reply(500, b""), ErrorClass.UPSTREAM, 0.0, "(empty body)"),
        (Reply(status=503, actions=[b'{"error":', b'{"message":"busy"}}'], headers={"Retry-After": "3"}),
         ErrorClass.OVERLOADED, 3.0, "busy"),
    ],
    ids=[
        "429-seconds", "429-float-seconds", "429-retry-after-ms", "429-garbage", "429-past-date",
        "529-anthropic", "503", "400-openai-context", "400-anthropic-context", "400-gateway-context",
        "400-control", "413", "401", "403", "404", "500", "502-json", "502-html", "504-empty", "500-empty",
        "503-chunked-body",
    ],
)  # fmt: skip
def test_non_200_status_becomes_a_classified_model_error(
    server: LocalServer,
    session: requests.Session,
    reply: Reply,
    error_class: ErrorClass,
    retry_after: float,
    words: str,
) -> None:
    server.add(reply)
    err = fail(session, server)
    assert err.error_class is error_class
    assert err.status == reply.status
    assert err.retry_after == pytest.approx(retry_after)
    assert words in err.message
    text = str(err)
    assert words in text
    assert f"(HTTP {reply.status})" in text
    assert "<" not in text
    assert "sk-test" not in text
    assert server.hits == 1


def test_429_with_http_date_in_the_future(server: LocalServer, session: requests.Session) -> None:
    server.add(json_reply(429, {"error": {"message": "slow"}}, {"Retry-After": http_date(30)}))
    err = fail(session, server)
    assert err.error_class is ErrorClass.RATE_LIMITED
    assert 27.0 <= err.retry_after <= 31.0


def test_context_length_message_says_so(server: LocalServer, session: requests.Session) -> None:
    for body in (OPENAI_CONTEXT, ANTHROPIC_CONTEXT, GATEWAY_CONTEXT):
        server.add(json_reply(400, body))
    for _ in range(3):
        assert str(fail(session, server)).startswith("context window exceeded: ")
    assert server.hits == 3


def test_a_huge_error_body_is_cut_and_the_connection_closed(
    server: LocalServer, session: requests.Session
) -> None:
    message = "x" * 200_000
    server.add(json_reply(500, {"error": {"message": message}}), sse_reply(SSE))
    err = fail(session, server)
    assert err.error_class is ErrorClass.UPSTREAM
    assert len(err.message) <= 2000
    with post(session, server) as stream:
        assert b"".join(stream.chunks) == SSE


@pytest.mark.parametrize("chunked", [False, True])
def test_every_error_response_is_closed_before_raising(server: LocalServer, chunked: bool) -> None:
    """With one pooled connection and a blocking pool, a response left open
    would make the next request wait forever. (A body read to its end frees
    the connection by itself; the 200 kB one is not read to its end.)"""
    errors = [
        json_reply(429, {"error": {"message": "slow"}}, {"Retry-After": "1"}),
        json_reply(500, b""),
        json_reply(400, CONTROL_400),
        json_reply(502, HTML_502),
        json_reply(529, ANTHROPIC_OVERLOADED),
        json_reply(500, {"error": {"message": "m" * 200_000}}),  # more than is read of an error body
    ]
    for reply in errors:
        reply.chunked = chunked
    server.add(*errors, sse_reply(SSE))
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", CancellableHTTPAdapter(pool_maxsize=1, pool_block=True))
    outcome: list[object] = []

    def run() -> None:
        try:
            for _ in errors:
                try:
                    post(session, server, read_timeout=5)
                except ModelError as exc:
                    outcome.append(exc.status)
            with post(session, server, read_timeout=5) as stream:
                outcome.append(b"".join(stream.chunks))
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    session.close()
    assert not worker.is_alive(), "the pool starved: an error response was not released"
    assert outcome == [429, 500, 400, 502, 529, 500, SSE]
    assert server.hits == 7


# --- transport failures -------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_connection_refused_is_transient(session: requests.Session) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        send(session, f"http://127.0.0.1:{port}/v1", headers={}, timeout=Timeout(connect=2.0, read=2.0))
    assert time.monotonic() - started < 2.0
    err = info.value
    assert err.error_class is ErrorClass.TRANSIENT
    assert isinstance(err.__cause__, requests.ConnectionError)
    assert err.status == 0
    assert "could not connect" in str(err)


def test_a_refused_connection_names_the_url_without_its_credentials(session: requests.Session) -> None:
    """The URL says which server is down; its user info and query (which may
    hold a credential) and the request's headers are left out."""
    port = free_port()
    url = f"http://user:secret-password@127.0.0.1:{port}/v1/messages?key=secret-query#secret-fragment"
    with pytest.raises(ModelError) as info:
        send(session, url, headers={"x-api-key": "secret-key"}, timeout=Timeout(connect=2.0, read=2.0))
    assert (
        info.value.message == f"could not connect to http://127.0.0.1:{port}/v1/messages (connection refused)"
    )
    assert "secret" not in str(info.value)


def full_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket whose accept queue is full (nothing accepts), so a
    new connection to it is never made: connecting times out (Linux drops
    the handshake). Returns it with the connections that fill it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    filling: list[socket.socket] = []
    for _ in range(64):
        client = socket.socket()
        client.settimeout(0.2)
        filling.append(client)
        try:
            client.connect(listener.getsockname())
        except TimeoutError:
            return listener, filling
    raise AssertionError("the accept queue never filled: this system accepts every handshake")


def test_a_connect_timeout_names_the_url_without_its_credentials(session: requests.Session) -> None:
    listener, filling = full_listener()
    port = listener.getsockname()[1]
    try:
        with pytest.raises(ModelError) as info:
            send(
                session,
                f"http://key:secret@127.0.0.1:{port}/v1/chat/completions?api_key=secret",
                timeout=Timeout(connect=0.3, read=5.0),
            )
    finally:
        for sock in [listener, *filling]:
            sock.close()
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert info.value.message == f"timed out connecting to http://127.0.0.1:{port}/v1/chat/completions"


@pytest.mark.parametrize("action", [Reset(), Close()], ids=["reset", "close"])
def test_connection_lost_before_headers_is_transient(
    server: LocalServer, session: requests.Session, action: Reset | Close
) -> None:
    server.add(Reply(before_headers=[action]))
    started = time.monotonic()
    err = fail(session, server)
    assert time.monotonic() - started < 2.0  # the failure itself, not the 10 s read timeout
    assert err.error_class is ErrorClass.TRANSIENT
    assert isinstance(err.__cause__, requests.RequestException)
    assert str(err).startswith("transient failure: ")


def test_stall_before_headers_times_out_as_transient(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(before_headers=[Stall()]))
    started = time.monotonic()
    err = fail(session, server, read_timeout=0.5)
    elapsed = time.monotonic() - started
    assert 0.4 <= elapsed < 3.0
    assert err.error_class is ErrorClass.TRANSIENT
    assert isinstance(err.__cause__, requests.Timeout)
    assert "timed out" in str(err)


@pytest.mark.parametrize("action", [Reset(), Close()], ids=["reset", "close"])
def test_connection_lost_mid_body_is_transient(
    server: LocalServer, session: requests.Session, action: Reset | Close
) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Pause(0.05), action]))
    got: list[bytes] = []
    with post(session, server) as stream, pytest.raises(ModelError) as info:
        collect(stream.chunks, got)
    assert got == [b"data: 1\n\n"]
    assert info.value.error_class is ErrorClass.TRANSIENT


def test_plain_body_cut_before_its_content_length_is_transient(
    server: LocalServer, session: requests.Session
) -> None:
    server.add(Reply(chunked=False, actions=[b"data: 1\n\n", Close()], headers={"Content-Length": "100"}))
    with post(session, server) as stream, pytest.raises(ModelError) as info:
        list(stream.chunks)
    assert info.value.error_class is ErrorClass.TRANSIENT


def test_stall_mid_body_times_out_as_transient(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Stall()]))
    got: list[bytes] = []
    with post(session, server, read_timeout=0.5) as stream:
        started = time.monotonic()
        with pytest.raises(ModelError) as info:
            collect(stream.chunks, got)
        elapsed = time.monotonic() - started
    assert got == [b"data: 1\n\n"]
    assert 0.4 <= elapsed < 3.0
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "timed out" in str(info.value)
    assert wait_until(lambda: server.disconnects == 1)


def test_no_foreign_exception_escapes(server: LocalServer, session: requests.Session) -> None:
    server.add(
        Reply(before_headers=[Reset()]),
        Reply(actions=[b"x", Reset()]),
        Reply(actions=[b"x", Close()]),
        json_reply(500, b"<html>oops</html>"),
    )
    for _ in range(4):
        try:
            with post(session, server, read_timeout=2) as stream:
                list(stream.chunks)
        except ModelError:
            pass
        except Exception as exc:
            pytest.fail(f"a foreign exception escaped: {exc!r}")
    assert server.hits == 4


# --- cancellation -------------------------------------------------------------------


def cancel_later(ctx: Context, delay: float) -> tuple[threading.Timer, list[float]]:
    """Cancel ``ctx`` from another thread after ``delay`` seconds; record when."""
    when: list[float] = []

    def cancel() -> None:
        when.append(time.monotonic())
        ctx.cancel()

    timer = threading.Timer(delay, cancel)
    timer.start()
    return timer, when


def cancel_when(ctx: Context, condition: Callable[[], bool]) -> None:
    """Cancel ``ctx`` as soon as ``condition()`` holds (within 5 s)."""
    assert wait_until(condition)
    ctx.cancel()


def test_cancel_while_waiting_for_headers(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(before_headers=[Stall()]))
    ctx = Context()
    timer, when = cancel_later(ctx, 0.2)
    with pytest.raises(Canceled):
        post(session, server, ctx, read_timeout=30)
    returned = time.monotonic()
    timer.join()
    assert returned - when[0] < 0.5
    assert server.hits == 1
    assert wait_until(lambda: server.disconnects == 1)


def test_cancel_while_blocked_reading_the_body(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Stall()]))
    ctx = Context()
    got: list[bytes] = []
    with post(session, server, ctx, read_timeout=30) as stream:
        body = stream.chunks
        got.append(next(body))
        timer, when = cancel_later(ctx, 0.2)
        with pytest.raises(Canceled):
            got.append(next(body))
        returned = time.monotonic()
    timer.join()
    assert got == [b"data: 1\n\n"]
    assert returned - when[0] < 0.5
    assert wait_until(lambda: server.disconnects == 1)


def test_cancel_while_reading_a_plain_body(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(chunked=False, actions=[b"data: 1\n\n", Stall()]))
    ctx = Context()
    with post(session, server, ctx, read_timeout=30) as stream:
        body = stream.chunks
        assert next(body) == b"data: 1\n\n"
        timer, when = cancel_later(ctx, 0.1)
        with pytest.raises(Canceled):
            next(body)
        assert time.monotonic() - when[0] < 0.5
    timer.join()
    assert wait_until(lambda: server.disconnects == 1)


def test_cancel_on_a_plain_requests_session_while_reading_the_body(server: LocalServer) -> None:
    """A caller's own session without CancellableHTTPAdapter: the socket is
    reached through the response once headers have arrived."""
    server.add(Reply(actions=[b"data: 1\n\n", Stall()]))
    plain = requests.Session()
    plain.trust_env = False
    ctx = Context()
    try:
        with post(plain, server, ctx, read_timeout=30) as stream:
            body = stream.chunks
            assert next(body) == b"data: 1\n\n"
            timer, when = cancel_later(ctx, 0.1)
            with pytest.raises(Canceled):
                next(body)
            assert time.monotonic() - when[0] < 0.5
        timer.join()
    finally:
        plain.close()
    assert wait_until(lambda: server.disconnects == 1)


def test_deadline_while_waiting_for_headers(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(before_headers=[Stall()]))
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        post(session, server, Context(timeout=0.3), read_timeout=30)
    assert 0.25 <= time.monotonic() - started < 1.0
    assert wait_until(lambda: server.disconnects == 1)


def test_already_cancelled_context_sends_nothing(server: LocalServer, session: requests.Session) -> None:
    server.add(sse_reply(SSE))
    ctx = Context()
    ctx.cancel()
    with pytest.raises(Canceled):
        post(session, server, ctx)
    assert server.hits == 0


def test_cancel_during_an_error_response_is_canceled(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(status=500, actions=[b'{"error":', Stall()]))
    ctx = Context()
    timer, when = cancel_later(ctx, 0.2)
    with pytest.raises(Canceled):
        post(session, server, ctx, read_timeout=30)
    assert time.monotonic() - when[0] < 0.5
    timer.join()


class InterruptedAdapter(CancellableHTTPAdapter):
    """Ctrl-C arrives inside ``session.post`` once the response headers are
    in, when the request's canceller already holds the socket."""

    def __init__(self) -> None:
        super().__init__()
        self.sockets: list[socket.socket] = []
        self.responses: list[requests.Response] = []

    def send(self, *args: Any, **kwargs: Any) -> requests.Response:
        response = super().send(*args, **kwargs)
        self.responses.append(response)
        connection = response.raw.connection
        assert connection is not None
        assert connection.sock is not None
        self.sockets.append(connection.sock)
        raise KeyboardInterrupt


def test_ctrl_c_while_sending_leaves_no_canceller_on_the_context(server: LocalServer) -> None:
    """A KeyboardInterrupt inside ``session.post`` goes up unchanged, and the
    request's canceller is detached on the way: cancelling the (longer lived)
    context afterwards does not shut down the socket the request left."""
    server.add(Reply(actions=[b"data: 1\n\n", Stall()]))
    adapter = InterruptedAdapter()
    with requests.Session() as interrupted:
        interrupted.mount("http://", adapter)
        ctx = Context()
        with pytest.raises(KeyboardInterrupt):
            post(interrupted, server, ctx)
        ctx.cancel()
        [sock] = adapter.sockets
        assert sock.send(b"\r\n") == 2  # still open: a shut down socket raises BrokenPipeError
        adapter.responses[0].close()
    assert wait_until(lambda: server.disconnects == 1)


def test_cancel_after_the_response_is_closed_does_nothing(
    server: LocalServer, session: requests.Session
) -> None:
    """The cancel callback is removed before the connection goes back to the
    pool: a late cancel must not shut down a socket that another request uses."""
    server.add(sse_reply(SSE), Reply(actions=[b"data: 1\n\n", Pause(0.3), b"data: 2\n\n"]))
    first = Context()
    with post(session, server, first) as stream:
        assert b"".join(stream.chunks) == SSE
    with post(session, server) as stream:
        body = stream.chunks
        assert next(body) == b"data: 1\n\n"
        first.cancel()
        assert list(body) == [b"data: 2\n\n"]
    assert server.connections == 1


# --- connection reuse ---------------------------------------------------------------


def test_connection_is_reused_after_a_complete_drained_stream(
    server: LocalServer, session: requests.Session
) -> None:
    # The reader stops at [DONE] without reading the terminating chunk, like an
    # adapter does; close() drains the rest because the step is complete.
    server.add(Reply(actions=[SSE, Pause(0.05)]), sse_reply(SSE))
    with post(session, server) as stream:
        assert next(stream.chunks) == SSE
        stream.reuse = True
    with post(session, server) as stream:
        assert b"".join(stream.chunks) == SSE
    assert server.hits == 2
    assert server.connections == 1


def test_the_drain_at_the_end_of_a_step_starts_no_deadline(
    server: LocalServer, session: requests.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every step ends with a drain; a deadline context per drain woke the
    # deadline thread on every step. The socket's own timeout bounds it now.
    deadlines: list[float | None] = []
    init = Context.__init__

    def recording(self: Context, timeout: float | None = None, parent: Context | None = None) -> None:
        deadlines.append(timeout)
        init(self, timeout, parent)

    server.add(Reply(actions=[SSE, Pause(0.05)]), sse_reply(SSE))
    with post(session, server) as stream:
        assert next(stream.chunks) == SSE
        stream.reuse = True
        monkeypatch.setattr(Context, "__init__", recording)
    monkeypatch.undo()
    assert deadlines == []
    with post(session, server) as stream:
        assert b"".join(stream.chunks) == SSE
    assert server.connections == 1  # drained and reused


def test_connection_is_reused_after_reading_to_the_end(
    server: LocalServer, session: requests.Session
) -> None:
    server.add(sse_reply(SSE, piece=7))
    for _ in range(3):
        with post(session, server) as stream:
            assert b"".join(stream.chunks) == SSE
    assert server.hits == 3
    assert server.connections == 1


def test_an_incomplete_stream_is_not_drained(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Pause(2.0), b"data: 2\n\n"]), sse_reply(SSE))
    with post(session, server) as stream:
        assert next(stream.chunks) == b"data: 1\n\n"
        started = time.monotonic()
    assert time.monotonic() - started < 0.5  # closed at once, not drained
    with post(session, server) as stream:
        assert b"".join(stream.chunks) == SSE
    assert server.connections == 2


def test_drain_is_bounded(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: [DONE]\n\n", Stall()]), sse_reply(SSE))
    with post(session, server) as stream:
        assert next(stream.chunks) == b"data: [DONE]\n\n"
        stream.reuse = True
        started = time.monotonic()
    assert time.monotonic() - started < 1.5
    with post(session, server) as stream:
        assert b"".join(stream.chunks) == SSE
    assert server.connections == 2


def test_closing_a_response_twice_is_harmless(server: LocalServer, session: requests.Session) -> None:
    server.add(Reply(actions=[b"data: 1\n\n", Stall()]), Reply(actions=[b"data: 1\n\n", Stall()]))
    stream = post(session, server)
    stream.close()
    assert wait_until(lambda: server.disconnects == 1)  # an unfinished body: the connection is closed
    stream.close()
    stream.reuse = True
    stream.close()
    # closing twice released nothing twice: the next request streams normally
    with post(session, server) as second:
        assert next(second.chunks) == b"data: 1\n\n"


# --- redirects ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_naming_the_new_location(
    server: LocalServer, session: requests.Session, status: int
) -> None:
    # Following it would re-send the request and its key elsewhere, and a
    # cancel could no longer interrupt the second request.
    location = server.url + "/v2/chat/completions"
    server.add(Reply(status=status, actions=[b"moved"], headers={"Location": location}, chunked=False))
    err = fail(session, server)
    assert err.error_class is ErrorClass.INVALID_REQUEST
    assert err.status == status
    assert location in err.message
    assert "redirects are not followed" in err.message
    assert server.hits == 1


# --- a caller's own session ---------------------------------------------------------------


def test_a_late_cancel_on_a_callers_session_never_shuts_a_socket_another_request_took(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a plain requests session the cancel shuts the socket through
    urllib3's ``shutdown()``, which checks that the response still holds its
    connection and then shuts it. Here the cancelling thread is held between
    the check and the shutdown while the body ends, the connection goes back
    to the pool, and a second request takes it: the second request must not
    be cut."""
    import urllib3.response

    checked, proceed = threading.Event(), threading.Event()

    def shutdown_held_after_the_check(self: Any) -> None:
        if self._connection is None:  # urllib3's own check
            raise RuntimeError("Cannot shutdown as connection has already been released to the pool")
        checked.set()
        assert proceed.wait(10)
        self._sock_shutdown(socket.SHUT_RD)

    monkeypatch.setattr(urllib3.response.HTTPResponse, "shutdown", shutdown_held_after_the_check)
    caller_session = requests.Session()
    caller_session.trust_env = False
    caller_session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=1, pool_block=True))
    server.add(sse_reply(SSE), Reply(actions=[b"data: 1\n\n", Pause(0.3), b"data: 2\n\n"]))
    first_ctx = Context()
    first = post(caller_session, server, first_ctx)
    canceller = threading.Thread(target=first_ctx.cancel)
    canceller.start()
    assert checked.wait(5)
    finished: list[bytes] = []
    # reads to the end of the body, where urllib3 gives the connection back to the pool
    reader = threading.Thread(target=lambda: finished.append(first.response.read(1 << 20, 10.0)))
    reader.start()
    reader.join(0.5)  # the release either happened or waits for the cancel in progress
    second_body: list[bytes] = []
    second_error: list[BaseException] = []

    def second_request() -> None:
        try:
            with post(caller_session, server, read_timeout=5) as second:
                body = second.chunks
                second_body.append(next(body))
                proceed.set()  # the held cancel goes on while this request reads
                second_body.extend(body)
        except BaseException as exc:
            second_error.append(exc)

    second = threading.Thread(target=second_request)
    second.start()
    if reader.is_alive():  # the release waits for the cancel: let it finish
        proceed.set()
    for thread in (canceller, reader, second):
        thread.join(10)
    first.close()
    caller_session.close()
    assert finished == [SSE]
    assert second_error == []
    assert b"".join(second_body) == b"data: 1\n\ndata: 2\n\n"


# --- sessions and resources ---------------------------------------------------------


def test_concurrent_streams_on_one_new_session_keep_their_connections(
    server: LocalServer, caplog: pytest.LogCaptureFixture
) -> None:
    # requests' default pool keeps 10 connections per host and closes the
    # rest as they come back ("Connection pool is full, discarding connection").
    runs = 20
    server.add(sse_reply(SSE))
    session = new_session()
    all_open = threading.Barrier(runs, timeout=30)
    bodies: list[bytes] = []
    errors: list[BaseException] = []

    def stream_once() -> None:
        try:
            with post(session, server) as stream:
                all_open.wait()  # every connection is in use at once
                bodies.append(b"".join(stream.chunks))
        except BaseException as exc:
            errors.append(exc)
            all_open.abort()

    caplog.set_level(logging.WARNING, logger="urllib3")
    threads = [threading.Thread(target=stream_once) for _ in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    session.close()
    assert errors == []
    assert bodies == [SSE] * runs
    assert [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()] == []


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_new_session_refuses_a_bad_pool_size(bad: Any) -> None:
    with pytest.raises(ConfigError, match="pool_size must be an int >= 1"):
        new_session(bad)


def test_new_session_ignores_the_environment(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    session = new_session()
    try:
        assert session.trust_env is False
        assert isinstance(session.get_adapter("http://example.invalid/"), CancellableHTTPAdapter)
        assert isinstance(session.get_adapter("https://example.invalid/"), CancellableHTTPAdapter)
        dead = f"http://127.0.0.1:{free_port()}"
        monkeypatch.setenv("HTTP_PROXY", dead)
        monkeypatch.setenv("http_proxy", dead)
        monkeypatch.setenv("ALL_PROXY", dead)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        server.add(sse_reply(SSE))
        with post(session, server) as stream:
            assert b"".join(stream.chunks) == SSE
    finally:
        session.close()


def test_each_new_session_is_separate() -> None:
    a, b = new_session(), new_session()
    try:
        assert a is not b
        assert a.get_adapter("http://x/") is not b.get_adapter("http://x/")
    finally:
        a.close()
        b.close()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_cancelled_requests_leave_no_open_socket(server: LocalServer) -> None:
    session = new_session()
    gc.collect()
    baseline = socket_inodes()  # by identity: sockets other tests leave or free do not count
    server.script = [Reply(before_headers=[Stall()]), Reply(actions=[b"data: 1\n\n", Stall()])] * 25
    canceled = 0
    during: list[int] = []
    timer: threading.Thread
    try:
        for i in range(50):
            ctx = Context()
            if i % 2 == 0:  # cancelled while waiting for the headers, once the server has the request
                # (a cancel before it arrives would leave this request's reply to the next one)
                timer = threading.Thread(target=cancel_when, args=(ctx, lambda i=i: server.hits > i))
                timer.start()
                try:
                    post(session, server, ctx, read_timeout=30)
                except Canceled:
                    canceled += 1
            else:  # cancelled while blocked reading the body
                with post(session, server, ctx, read_timeout=30) as stream:
                    body = stream.chunks
                    assert next(body) == b"data: 1\n\n"
                    during.append(len(socket_inodes() - baseline))
                    timer, _ = cancel_later(ctx, 0.0)
                    try:
                        next(body)
                    except Canceled:
                        canceled += 1
            timer.join()
        assert canceled == 50
        assert server.hits == 50
        assert min(during) >= 2  # the client's and the server's end of the open request
        assert wait_until(lambda: server.disconnects == 50, 5.0)
        assert wait_until(lambda: not socket_inodes() - baseline, 5.0), socket_inodes() - baseline
    finally:
        session.close()


# --- parse_retry_after --------------------------------------------------------------

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, 0.0),
        ({"Retry-After": "5"}, 5.0),
        ({"retry-after": " 12 "}, 12.0),
        ({"RETRY-AFTER": "0"}, 0.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"Retry-After": email.utils.formatdate(NOW + 90, usegmt=True)}, 90.0),
        ({"Retry-After": email.utils.formatdate(NOW - 90, usegmt=True)}, 0.0),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
        ({"Retry-After-Ms": "2000.5", "Retry-After": "9"}, 2.0005),
        ({"retry-after-ms": "junk", "Retry-After": "9"}, 9.0),
        ({"retry-after-ms": "-5", "Retry-After": "4"}, 4.0),
        ({"Retry-After": "garbage"}, 0.0),
        ({"Retry-After": ""}, 0.0),
        ({"Retry-After": "-3"}, 0.0),
        ({"Retry-After": "inf"}, 0.0),
        ({"Retry-After": "-inf"}, 0.0),
        ({"Retry-After": "nan"}, 0.0),
        ({"retry-after-ms": "nan"}, 0.0),
        ({"retry-after-ms": "inf"}, 0.0),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float) -> None:
    assert parse_retry_after(headers, now=NOW) == pytest.approx(expected)


def test_parse_retry_after_uses_the_clock_by_default() -> None:
    value = parse_retry_after({"Retry-After": email.utils.formatdate(time.time() + 60, usegmt=True)})
    assert 57.0 <= value <= 61.0


def test_parse_retry_after_reads_requests_headers() -> None:
    headers = requests.structures.CaseInsensitiveDict({"Retry-After-MS": "100"})
    assert parse_retry_after(headers) == pytest.approx(0.1)


# --- error_from_body ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "raw", "error_class", "message"),
    [
        (400, json.dumps(OPENAI_CONTEXT).encode(), ErrorClass.CONTEXT_LENGTH,
         "invalid_request_error: This model's maximum context length is 8192 tokens, "
         "but your request used 10061 tokens."),
        (400, json.dumps(ANTHROPIC_CONTEXT).encode(), ErrorClass.CONTEXT_LENGTH,
         "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"),
        (400, json.dumps(GATEWAY_CONTEXT).encode(), ErrorClass.CONTEXT_LENGTH,
         "input length and max_tokens exceed context limit: 179000 + 32000 > 200000"),
        (400, json.dumps(CONTROL_400).encode(), ErrorClass.INVALID_REQUEST,
         "invalid_request_error: Invalid value for 'temperature'"),
        (400, b'{"error":{"message":"too big","code":"context_length_exceeded"}}', ErrorClass.CONTEXT_LENGTH,
         "too big"),
        (400, b'{"error":{"message":"x","type":"string_above_max_length"}}', ErrorClass.CONTEXT_LENGTH,
         "string_above_max_length: x"),
        (500, b'{"error":{"message":"prompt is too long"}}', ErrorClass.CONTEXT_LENGTH, "prompt is too long"),
        (500, b'{"error":{"message":"boom"}}', ErrorClass.UPSTREAM, "boom"),
        (413, b"", ErrorClass.CONTEXT_LENGTH, "(empty body)"),
        (422, b'{"detail":"field required"}', ErrorClass.INVALID_REQUEST, "field required"),
        (401, b'{"error":"invalid x-api-key"}', ErrorClass.AUTH, "invalid x-api-key"),
        (529, json.dumps(ANTHROPIC_OVERLOADED).encode(), ErrorClass.OVERLOADED,
         "overloaded_error: Overloaded"),
        (502, HTML_502, ErrorClass.TRANSIENT, "502 Bad Gateway nginx"),
        (500, b"   ", ErrorClass.UPSTREAM, "(empty body)"),
        (500, b"plain text failure", ErrorClass.UPSTREAM, "plain text failure"),
        (500, b'["a", "list"]', ErrorClass.UPSTREAM, '["a", "list"]'),
        (500, b'{"error":{"message":{"nested":"obj"}}}', ErrorClass.UPSTREAM, '{"nested": "obj"}'),
        (500, b"\xff\xfe not utf-8", ErrorClass.UPSTREAM, "\ufffd\ufffd not utf-8"),
        (400, b'{"error":{"message":"overloaded_error","type":"overloaded_error"}}',
         ErrorClass.INVALID_REQUEST, "overloaded_error"),
    ],
)  # fmt: skip
def test_error_from_body(status: int, raw: bytes, error_class: ErrorClass, message: str) -> None:
    err = error_from_body(status, raw, retry_after=1.25)
    assert err.error_class is error_class
    assert err.status == status
    assert err.retry_after == 1.25
    assert err.message == message
    assert err.err is None


def test_error_from_body_message_is_bounded() -> None:
    err = error_from_body(500, json.dumps({"error": {"message": "m" * 10_000}}).encode())
    assert len(err.message) == 2000
    html = error_from_body(502, b"<p>" + b"w " * 10_000 + b"</p>")
    assert len(html.message) <= 500


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (OPENAI_CONTEXT,
         ("invalid_request_error", OPENAI_CONTEXT["error"]["message"], "context_length_exceeded")),
        (ANTHROPIC_CONTEXT, ("invalid_request_error", ANTHROPIC_CONTEXT["error"]["message"], None)),
        (GATEWAY_CONTEXT, ("", GATEWAY_CONTEXT["error"]["message"], 400)),
        ({"message": "bare"}, ("", "bare", None)),
        ({"error": "text", "code": 7}, ("", "text", 7)),
        ({"error": None}, ("", "", None)),
        ("string", ("", "", None)),
        (None, ("", "", None)),
        ({"error": {"type": 5, "message": ["a"]}}, ("5", '["a"]', None)),
    ],
)  # fmt: skip
def test_error_fields(payload: Any, expected: tuple[str, str, Any]) -> None:
    assert error_fields(payload) == expected


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 8192 tokens",
        "context_length_exceeded",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and max_tokens exceed context limit",
        "Please reduce the length of the messages.",
        "the request exceeds the available context size",
    ],
)
def test_looks_like_context_length(text: str) -> None:
    assert looks_like_context_length(text)
    assert CONTEXT_LENGTH_PATTERN.search(text.upper())


@pytest.mark.parametrize("text", ["Invalid value for 'temperature'", "Overloaded", "", "rate limit exceeded"])
def test_does_not_look_like_context_length(text: str) -> None:
    assert not looks_like_context_length(text, None, 400)


# --- options and secrets shared by the adapters --------------------------------------


@pytest.mark.parametrize("field", ["connect", "read", "idle"])
@pytest.mark.parametrize(("value", "expected"), [(1, 1.0), (0.25, 0.25), (600.0, 600.0)])
def test_timeout_fields_are_float_seconds(field: str, value: float, expected: float) -> None:
    result = getattr(Timeout(**{field: value}), field)
    assert result == expected
    assert type(result) is float


@pytest.mark.parametrize("field", ["connect", "read", "idle"])
@pytest.mark.parametrize("value", [0, 0.0, -1, float("nan"), True, "5", 1e10, -float("inf")])
def test_a_bad_timeout_field_is_a_config_error(field: str, value: Any) -> None:
    # 1e10 s overflowed the socket timeout under the transport (OverflowError
    # out of a run, not a ConfigError at construction)
    with pytest.raises(
        ConfigError, match=rf"^Timeout\.{field} must be a positive number of seconds up to 1e\+09, or None"
    ):
        Timeout(**{field: value})


@pytest.mark.parametrize("field", ["connect", "read", "idle"])
@pytest.mark.parametrize("value", [None, float("inf")])
def test_none_or_infinity_is_no_limit(field: str, value: Any) -> None:
    assert getattr(Timeout(**{field: value}), field) is None
    assert getattr(Timeout(**{field: MAX_SECONDS}), field) == MAX_SECONDS


def test_the_timeout_defaults_each_take_effect() -> None:
    timeout = Timeout()
    assert (timeout.connect, timeout.read, timeout.idle) == (10.0, 300.0, 600.0)
    assert timeout.read_wait == 300.0  # the read limit fires before the idle one for a silent server


@pytest.mark.parametrize(
    ("timeout", "wait"),
    [
        (Timeout(read=60.0, idle=30.0), 30.0),
        (Timeout(read=5.0, idle=30.0), 5.0),
        (Timeout(read=5.0, idle=None), 5.0),
        (Timeout(read=None, idle=30.0), 30.0),
        (Timeout(read=None, idle=None), None),
    ],
)
def test_a_read_waits_no_longer_than_the_idle_limit(timeout: Timeout, wait: float | None) -> None:
    assert timeout.read_wait == wait


# --- bad input and replies that are not event streams -------------------------------------------


def test_text_that_is_not_unicode_is_refused_before_anything_is_sent(server: LocalServer) -> None:
    with pytest.raises(ModelError) as info:
        post(new_session(), server, body={"messages": [{"content": "caf\udce9"}]})
    assert info.value.error_class is ErrorClass.INVALID_REQUEST
    assert "not valid Unicode" in info.value.message
    assert server.hits == 0


@pytest.mark.parametrize("url", ["notaurl", "ftp://example.com", "http://", "://x", "localhost:8080/v1"])
def test_a_base_url_that_is_not_http_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="base_url"):
        check_base_url(url)


def test_a_base_url_loses_its_trailing_slash() -> None:
    assert check_base_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/v1"


def document(content_type: str, body: bytes) -> Reply:
    return Reply(actions=[body], headers={"Content-Type": content_type}, chunked=False)


@pytest.mark.parametrize(
    ("reply", "expected_class", "words"),
    [
        (
            document("application/json", b'{"id": "chatcmpl-1", "choices": []}'),
            ErrorClass.UPSTREAM,
            "answered with a JSON document, not an event stream",
        ),
        (
            document(
                "text/html; charset=utf-8", b"<html><title>Hi</title><body><h1>Welcome</h1></body></html>"
            ),
            ErrorClass.UPSTREAM,
            "answered with an HTML page, not an event stream",
        ),
        (
            document("application/json", b'{"error": {"message": "slow down", "code": 429}}'),
            ErrorClass.RATE_LIMITED,
            "slow down",
        ),
    ],
)
def test_a_200_that_is_a_document_fails_at_once_and_says_why(
    server: LocalServer, reply: Reply, expected_class: ErrorClass, words: str
) -> None:
    server.add(reply)
    with pytest.raises(ModelError) as info:
        post(new_session(), server)
    assert info.value.error_class is expected_class
    assert words in info.value.message


def test_an_event_stream_with_a_json_content_type_is_still_streamed(server: LocalServer) -> None:
    body = b'data: {"a": 1}\n\ndata: [DONE]\n\n'
    server.add(Reply(actions=[body], headers={"Content-Type": "application/json"}))
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == body


# --- a slow error body; a 200 document whatever its content type ---------------------------


def trickle(body: bytes, every: float = 0.2) -> list[Any]:
    """``body`` one byte at a time, ``every`` seconds apart."""
    actions: list[Any] = []
    for i in range(len(body)):
        actions += [body[i : i + 1], Pause(every)]
    return actions


TRICKLED = b"internal server error: the database is on fire, please come back later"


@pytest.mark.parametrize(
    ("status", "chunked", "headers", "error_class", "retry_after"),
    [
        (500, True, {}, ErrorClass.UPSTREAM, 0.0),
        (500, False, {}, ErrorClass.UPSTREAM, 0.0),
        (429, True, {"Retry-After": "3"}, ErrorClass.RATE_LIMITED, 3.0),
        (502, False, {"Content-Type": "text/plain"}, ErrorClass.TRANSIENT, 0.0),
    ],
    ids=["500-chunked", "500-plain", "429-chunked", "502-plain"],
)
def test_a_trickled_error_body_is_read_for_a_bounded_time(
    server: LocalServer,
    session: requests.Session,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    chunked: bool,
    headers: dict[str, str],
    error_class: ErrorClass,
    retry_after: float,
) -> None:
    """Every read of the body is quick, but the whole of it would take 14 s:
    the error is raised once the bound is spent, with the bytes that arrived."""
    from agentcore.providers import shell

    assert 1.0 <= shell.ERROR_BODY_SECONDS <= 10.0  # "a few seconds"
    monkeypatch.setattr(shell, "ERROR_BODY_SECONDS", 0.6)
    slow = Reply(status=status, actions=trickle(TRICKLED), headers=headers, chunked=chunked)
    server.add(slow, sse_reply(SSE))
    started = time.monotonic()
    err = fail(session, server)
    elapsed = time.monotonic() - started
    assert elapsed < 1.6
    assert err.error_class is error_class
    assert err.status == status
    assert err.retry_after == pytest.approx(retry_after)
    assert len(err.message) >= 2
    assert TRICKLED.decode().startswith(err.message)  # what arrived, and only that
    assert len(err.message) < len(TRICKLED)
    with post(session, server) as stream:  # the slow response was closed, the session still works
        assert b"".join(stream.chunks) == SSE


def test_a_trickled_200_document_is_read_for_a_bounded_time(
    server: LocalServer, session: requests.Session, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr("agentcore.providers.shell.ERROR_BODY_SECONDS", 0.6)
    body = b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0}]}'
    server.add(Reply(actions=[body[:1], *trickle(body[1:])], headers={"Content-Type": "application/json"}))
    started = time.monotonic()
    err = fail(session, server)
    assert time.monotonic() - started < 1.6
    assert err.error_class is ErrorClass.UPSTREAM
    assert "not an event stream" in err.message
    assert '{"id' in err.message


JSON_ANSWER = (
    b'{"id": "chatcmpl-1", "object": "chat.completion", '
    b'"choices": [{"index": 0, "message": {"content": "hi"}}]}'
)


@pytest.mark.parametrize(
    ("headers", "body", "what"),
    [
        ({}, JSON_ANSWER, "a JSON document"),
        ({"Content-Type": "text/plain"}, JSON_ANSWER, "a JSON document"),
        ({"Content-Type": "text/plain; charset=utf-8"}, b"\r\n  " + JSON_ANSWER, "a JSON document"),
        ({"Content-Type": "application/x-ndjson"}, JSON_ANSWER + b"\n", "a JSON document"),
        ({"Content-Type": "application/octet-stream"}, b'[{"id": 1}]', "a JSON document"),
        ({"Content-Type": "application/json"}, b'[{"id": 1}]', "a JSON document"),
        ({}, b"<!DOCTYPE html><html><body>Welcome</body></html>", "an HTML page"),
        ({"Content-Type": "text/plain"}, b"<html><body>Welcome</body></html>", "an HTML page"),
    ],
    ids=["no-type", "text-plain", "text-plain-leading-space", "ndjson", "octet-array", "json-array",
         "html-no-type", "html-text-plain"],
)  # fmt: skip
@pytest.mark.parametrize("chunked", [False, True])
def test_a_200_document_of_any_type_but_event_stream_fails_at_once(
    server: LocalServer, headers: dict[str, str], body: bytes, what: str, chunked: bool
) -> None:
    server.add(Reply(actions=[body], headers=headers, chunked=chunked))
    err = fail(new_session(), server)
    assert err.error_class is ErrorClass.UPSTREAM
    assert err.status == 200
    assert f"answered with {what}, not an event stream" in err.message
    assert server.hits == 1


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-ndjson"])
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_given_a_200_json_document_fails_without_retrying(
    server: LocalServer, content_type: str | None, provider: str
) -> None:
    """Not three TRANSIENT attempts that each say the stream ended early."""
    from agentcore import LoopOptions, RunError, generate, user_message
    from agentcore.providers.anthropic import AnthropicModel
    from agentcore.providers.openai import OpenAIChatModel

    headers = {} if content_type is None else {"Content-Type": content_type}
    server.add(Reply(actions=[JSON_ANSWER], headers=headers, chunked=False))
    model: Any
    if provider == "openai":
        model = OpenAIChatModel("m", base_url=server.url + "/v1", timeout=Timeout(connect=5, read=10))
    else:
        model = AnthropicModel(
            "m", api_key="sk-test", base_url=server.url, timeout=Timeout(connect=5, read=10)
        )
    try:
        generate(LoopOptions(model=model, messages=[user_message("hi")], retry_base_delay=0.01))
    except RunError as error:  # not pytest.raises: its ExceptionInfo would keep the response alive
        cause = error.err
    else:
        pytest.fail("the run should have failed")
    assert isinstance(cause, ModelError)
    assert cause.error_class is ErrorClass.UPSTREAM
    assert "not an event stream" in cause.message
    assert "stream ended" not in cause.message
    assert server.hits == 1


@pytest.mark.parametrize(
    "body",
    [
        SSE,
        b"\n\n" + SSE,
        b'event: message\ndata: {"a": 1}\n\n',
        b": keep-alive\n\n" + SSE,
        b"id: 1\ndata: x\n\n",
        b"retry: 1000\n\n" + SSE,
    ],
    ids=["data", "blank-lines-first", "event", "comment", "id", "retry"],
)
@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-ndjson", "application/json"])
def test_an_event_stream_of_another_type_is_still_streamed(
    server: LocalServer, body: bytes, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    server.add(Reply(actions=[body[:7], Pause(0.05), body[7:]], headers=headers))
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == body


@pytest.mark.parametrize("body", [JSON_ANSWER, b"<html><body>Welcome</body></html>"])
def test_a_text_event_stream_is_always_streamed(server: LocalServer, body: bytes) -> None:
    """The content type says it is a stream: its events decide (the adapters
    then fail on what they cannot parse)."""
    server.add(Reply(actions=[body], headers={"Content-Type": "text/event-stream; charset=utf-8"}))
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == body


def test_a_200_whose_first_read_fails_is_closed_and_transient(server: LocalServer) -> None:
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", CancellableHTTPAdapter(pool_maxsize=1, pool_block=True))
    server.add(Reply(actions=[Reset()], headers={"Content-Type": "text/plain"}), sse_reply(SSE))
    err = fail(session, server, read_timeout=5)
    assert err.error_class is ErrorClass.TRANSIENT
    with post(session, server, read_timeout=5) as stream:  # the pool's one connection was released
        assert b"".join(stream.chunks) == SSE
    session.close()


def test_whitespace_before_the_first_byte_is_read_past(server: LocalServer) -> None:
    server.add(
        Reply(actions=[b"\n", Pause(0.05), b"  \r\n", Pause(0.05), JSON_ANSWER], headers={}),
        Reply(actions=[b"\n", Pause(0.05), b"\n", Pause(0.05), SSE], headers={"Content-Type": "text/plain"}),
    )
    err = fail(new_session(), server)
    assert err.error_class is ErrorClass.UPSTREAM
    assert "answered with a JSON document, not an event stream" in err.message
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == b"\n\n" + SSE


def test_endless_whitespace_is_streamed_after_a_few_reads(server: LocalServer) -> None:
    from agentcore.providers import shell

    actions: list[Any] = []
    for _ in range(shell.PEEK_READS + 2):
        actions += [b"\n", Pause(0.02)]
    server.add(Reply(actions=[*actions, JSON_ANSWER], headers={"Content-Type": "text/plain"}))
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == b"\n" * (shell.PEEK_READS + 2) + JSON_ANSWER


def test_an_empty_200_body_is_returned_to_the_adapter(server: LocalServer) -> None:
    server.add(Reply(actions=[], headers={}))
    with post(new_session(), server) as stream:
        assert b"".join(stream.chunks) == b""


@pytest.mark.parametrize(
    ("actions", "content_type"),
    [
        ([Stall()], "text/plain"),  # waiting for the first bytes of a 200
        ([b'{"id": ', Stall()], "application/json"),  # reading a 200 document
    ],
    ids=["first-bytes", "document"],
)
def test_cancel_while_a_200_is_checked_for_a_document_is_canceled(
    server: LocalServer, actions: list[Any], content_type: str
) -> None:
    server.add(Reply(actions=actions, headers={"Content-Type": content_type}))
    ctx = Context()
    timer, _ = cancel_later(ctx, 0.2)
    started = time.monotonic()
    with pytest.raises(Canceled):
        post(new_session(), server, ctx)
    timer.join()
    assert time.monotonic() - started < 1.5
    assert wait_until(lambda: server.disconnects == 1)
