"""The OpenAI adapter against the real local HTTP server: error statuses and
bodies (design.md, fault 13), errors inside a 200 stream, cut and stalled
streams (fault 16), cancellation and closing (fault 15), and a one-connection
pool that must never starve."""

# ruff: noqa: E501  (real error bodies are kept on one line, as servers send them)

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Model,
    ModelError,
    Request,
    StreamPart,
    Usage,
    run,
    user_message,
)
from agentcore.providers.openai import OpenAIChatModel
from agentcore.testing import check_model
from agentcore.transport import Timeout
from agentcore.transport.errors import error_from_body
from agentcore.transport.http import CancellableHTTPAdapter, HTTPTransport
from tests.localserver import Close, LocalServer, Pause, Reply, Reset, Stall, json_reply, sse_reply
from tests.loop_helpers import not_utf8_requests, wait_until

HELLO = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}\n\n'
    b"data: [DONE]\n\n"
)
HI = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
REQUEST = Request(messages=(user_message("hi"),))


class PortServer(LocalServer):
    """A local server that also records the client port of every request,
    so a test can tell a reused connection from a new one."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        super().__init__()

    def _handle(self, handler: Any) -> None:
        with self._lock:
            self.ports.append(handler.client_address[1])
        super()._handle(handler)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[PortServer]:
    """One server for the module (stopping a server takes up to 0.5 s)."""
    srv = PortServer()
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def server(shared_server: PortServer) -> PortServer:
    """The shared server with an empty script, request log and disconnect count."""
    shared_server.reset()
    with shared_server._lock:
        shared_server.ports.clear()
    return shared_server


def model_for(server: LocalServer, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("timeout", Timeout(connect=5, read=10))
    return OpenAIChatModel("test-model", base_url=server.url + "/v1", **kwargs)


def collect(
    model: OpenAIChatModel, ctx: Context | None = None
) -> tuple[list[StreamPart], BaseException | None]:
    """The parts the stream yielded, and what it raised (or None)."""
    parts: list[StreamPart] = []
    try:
        for part in model.stream(REQUEST, ctx or Context()):
            parts.append(part)
    except (ModelError, Canceled) as exc:
        return parts, exc
    return parts, None


def failure(server: LocalServer, *replies: Reply, **kwargs: Any) -> ModelError:
    server.add(*replies)
    parts, error = collect(model_for(server, **kwargs))
    assert parts == []
    assert isinstance(error, ModelError)
    return error


@pytest.mark.parametrize("place", list(not_utf8_requests()))
def test_text_that_is_not_unicode_is_an_invalid_request_before_anything_is_sent(
    server: LocalServer, place: str
) -> None:
    # outside a run (a run replaces it first): a typed error, not UnicodeEncodeError
    with pytest.raises(ModelError) as info:
        list(model_for(server).stream(not_utf8_requests()[place], Context()))
    assert info.value.error_class is ErrorClass.INVALID_REQUEST
    assert "not valid Unicode" in info.value.message
    assert server.hits == 0


# --- context overflow (fault 13) and other statuses ---------------------------

CONTEXT_OVERFLOW = {
    "1-openai-context-length": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 8192 tokens, but your request used 10061 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        ErrorClass.CONTEXT_LENGTH,
    ),
    "2-anthropic-prompt-too-long": (
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            },
        },
        ErrorClass.CONTEXT_LENGTH,
    ),
    "3-gateway-code-400": (
        400,
        {
            "error": {
                "message": "input length and max_tokens exceed context limit: 179000 + 32000 > 200000",
                "code": 400,
            }
        },
        ErrorClass.CONTEXT_LENGTH,
    ),
    "4-413-any-body": (413, b"<html><body>Request Entity Too Large</body></html>", ErrorClass.CONTEXT_LENGTH),
    "5-control-invalid-request": (
        400,
        {"error": {"message": "Invalid value for 'temperature'", "type": "invalid_request_error"}},
        ErrorClass.INVALID_REQUEST,
    ),
}


@pytest.mark.parametrize("case", list(CONTEXT_OVERFLOW))
def test_context_window_overflow(server: LocalServer, case: str) -> None:
    status, payload, expected = CONTEXT_OVERFLOW[case]
    error = failure(server, json_reply(status, payload))
    assert error.error_class is expected
    assert error.status == status
    assert server.hits == 1
    if expected is ErrorClass.CONTEXT_LENGTH:
        assert str(error).startswith("context window exceeded")


CONTEXT_WORDINGS = {
    "vllm-v0": {
        "object": "error",
        "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
        "(4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    },
    "vllm-v1": {
        "error": {
            "message": "The decoder prompt (length 5000) is longer than the maximum model length of 4096. "
            "Make sure that `max_model_len` is no smaller than the number of text tokens.",
            "type": "BadRequestError",
            "code": 400,
        }
    },
    "vllm-too-long": {
        "message": "Input prompt (5000 tokens) is too long and exceeds limit of 4096",
        "code": 400,
    },
    "llama-cpp": {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5000,
            "n_ctx": 4096,
        }
    },
    "llama-cpp-type-only": {"error": {"code": 400, "message": "", "type": "exceed_context_size_error"}},
    "ollama": {
        "error": {
            "message": "prompt too long; exceeded max context length by 100 tokens",
            "type": "api_error",
        }
    },
    "ollama-input-length": {"error": "input length exceeds the context length"},
    "openrouter": {
        "error": {
            "message": "This endpoint's maximum context length is 131072 tokens. However, you requested about "
            "200000 tokens (190000 of text input, 10000 in the output). Please reduce the length of either one.",
            "code": 400,
        }
    },
    "azure": {
        "error": {
            "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
            "130000 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "groq": {
        "error": {
            "message": "Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    "mistral": {
        "object": "error",
        "message": "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        "type": "invalid_request_message_error",
        "code": "3051",
    },
    "xai": {
        "code": "Client specified an invalid argument",
        "error": "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
    },
    "gemini-compat": [
        {
            "error": {
                "code": 400,
                "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                "status": "INVALID_ARGUMENT",
            }
        }
    ],
    "tgi": {
        "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 512 `max_new_tokens`",
        "error_type": "validation",
    },
}


@pytest.mark.parametrize("server_name", list(CONTEXT_WORDINGS))
def test_context_length_wordings_of_compatible_servers(server: LocalServer, server_name: str) -> None:
    payload = CONTEXT_WORDINGS[server_name]
    if isinstance(payload, list):  # Gemini wraps its error in an array
        payload = payload[0]
    error = failure(server, json_reply(400, payload))
    assert error.error_class is ErrorClass.CONTEXT_LENGTH, str(error)


def test_context_length_pattern_does_not_fire_on_other_400s() -> None:
    for message in [
        "Invalid value for 'temperature'",
        "'messages' must contain the word 'json'",
        "max_tokens is too large: 10000000",
        "Unknown model: gpt-9",
    ]:
        error = error_from_body(400, f'{{"error":{{"message":"{message}"}}}}'.encode())
        assert error.error_class is ErrorClass.INVALID_REQUEST, message


@pytest.mark.parametrize(
    ("reply", "expected", "retry_after"),
    [
        (
            json_reply(429, {"error": {"message": "Rate limit"}}, {"retry-after-ms": "1500"}),
            ErrorClass.RATE_LIMITED,
            1.5,
        ),
        (
            json_reply(429, {"error": {"message": "Rate limit"}}, {"Retry-After": "7"}),
            ErrorClass.RATE_LIMITED,
            7.0,
        ),
        (
            json_reply(503, {"error": {"message": "overloaded"}}, {"Retry-After": "2"}),
            ErrorClass.OVERLOADED,
            2.0,
        ),
        (json_reply(529, {"error": {"message": "Overloaded"}}), ErrorClass.OVERLOADED, 0.0),
        (json_reply(401, {"error": {"message": "Incorrect API key provided"}}), ErrorClass.AUTH, 0.0),
        (json_reply(403, b""), ErrorClass.AUTH, 0.0),
        (
            json_reply(404, {"error": {"message": "The model `x` does not exist"}}),
            ErrorClass.INVALID_REQUEST,
            0.0,
        ),
        (json_reply(500, b""), ErrorClass.UPSTREAM, 0.0),
        (json_reply(500, b"<html><h1>Internal Server Error</h1></html>"), ErrorClass.UPSTREAM, 0.0),
        (
            Reply(
                status=502,
                actions=[b"<html><body>Bad Gateway</body></html>"],
                headers={"Content-Type": "text/html"},
            ),
            ErrorClass.TRANSIENT,
            0.0,
        ),
        (json_reply(504, b"upstream timed out"), ErrorClass.TRANSIENT, 0.0),
    ],
    ids=[
        "429-ms",
        "429-seconds",
        "503",
        "529",
        "401",
        "403-empty",
        "404",
        "500-empty",
        "500-html",
        "502-chunked-html",
        "504",
    ],
)
def test_error_statuses(server: LocalServer, reply: Reply, expected: ErrorClass, retry_after: float) -> None:
    error = failure(server, reply)
    assert error.error_class is expected
    assert error.retry_after == retry_after
    assert error.status == reply.status


def test_html_error_body_becomes_plain_text(server: LocalServer) -> None:
    error = failure(server, json_reply(500, b"<html><h1>Internal Server Error</h1></html>"))
    assert error.message == "Internal Server Error"


def test_the_api_key_never_appears_in_errors(server: LocalServer) -> None:
    key = "sk-proj-abcdef0123456789"
    error = failure(server, json_reply(401, {"error": {"message": f"Invalid API key: {key}"}}), api_key=key)
    assert error.error_class is ErrorClass.AUTH
    assert key not in str(error)
    assert key not in repr(error)
    assert "[REDACTED]" in error.message
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {key}"
    assert not any(key in line for line in traceback.format_exception(error))
    linked: BaseException | None = error
    while linked is not None:  # also the links format_exception hides (__suppress_context__)
        assert key not in str(linked)
        assert key not in repr(linked)
        linked = linked.__cause__ or linked.__context__


def test_connection_refused_is_transient() -> None:
    probe = LocalServer()
    url = probe.url
    probe.close()
    model = OpenAIChatModel("m", base_url=url + "/v1", timeout=Timeout(connect=2, read=2))
    parts, error = collect(model)
    assert parts == []
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT


# --- errors inside a 200 stream -------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (b'data: {"error":{"message":"Rate limit exceeded","code":429}}\n\n', ErrorClass.RATE_LIMITED),
        (
            b'data: {"error":{"code":502,"message":"Provider disconnected"},"choices":[{"index":0,"delta":{"content":""},'
            b'"finish_reason":"error"}]}\n\n',
            ErrorClass.TRANSIENT,
        ),
        (
            b'data: {"error":{"message":"The server had an error","type":"server_error"}}\n\n',
            ErrorClass.UPSTREAM,
        ),
        (b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}\n\n', ErrorClass.UPSTREAM),
        (
            b'event: error\ndata: {"error":{"message":"overloaded","type":"overloaded_error"}}\n\n',
            ErrorClass.OVERLOADED,
        ),
        (
            b'data: {"error":{"message":"This model\'s maximum context length is 8192 tokens","code":"context_length_exceeded"}}\n\n',
            ErrorClass.CONTEXT_LENGTH,
        ),
    ],
    ids=[
        "alone-429",
        "next-to-choices-502",
        "server-error-type",
        "finish-reason-error",
        "event-error",
        "context",
    ],
)
def test_errors_inside_a_200_stream(server: LocalServer, tail: bytes, expected: ErrorClass) -> None:
    server.add(sse_reply(HI + tail + b"data: [DONE]\n\n"))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is expected


def test_an_error_after_the_finish_reason_is_still_an_error(server: LocalServer) -> None:
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}\n\n'
        b'data: {"error":{"code":400,"message":"Token limit reached"},"choices":[{"index":0,"delta":{"content":""},'
        b'"finish_reason":null}],"usage":{"prompt_tokens":43,"completion_tokens":10}}\n\n'
        b"data: [DONE]\n\n"
    )
    error = failure(server, sse_reply(body))
    assert error.error_class is ErrorClass.INVALID_REQUEST
    assert "Token limit reached" in str(error)


# --- cut, reset and stalled streams (faults 14 and 16) --------------------------


@pytest.mark.parametrize("end", [Close(), Reset()], ids=["close", "reset"])
def test_a_stream_cut_before_the_finish_is_transient(server: LocalServer, end: Close | Reset) -> None:
    server.add(Reply(actions=[HI, b'data: {"choices":[{"index":0,"delta":{"content":" wor"}}]}\n\n', end]))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi"), StreamPart.text_delta(" wor")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT


def test_a_clean_end_of_body_without_finish_or_done_is_transient(server: LocalServer) -> None:
    server.add(sse_reply(HI))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT
    assert "before the step completed" in str(error)


def test_a_cut_in_the_middle_of_an_event_is_transient(server: LocalServer) -> None:
    server.add(sse_reply(HI + b'data: {"choices":[{"index":0,"delta":{"cont'))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT


def test_a_clean_end_after_the_finish_reason_completes_the_step(server: LocalServer) -> None:
    server.add(sse_reply(HI + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'))
    parts, error = collect(model_for(server))
    assert error is None
    assert parts == [StreamPart.text_delta("Hi"), StreamPart.step_finish(FinishReason.STOP)]


@pytest.mark.parametrize("end", [Close(), Reset(), Stall()], ids=["close", "reset", "stall"])
def test_a_break_after_the_finish_reason_keeps_the_step(
    server: LocalServer, end: Close | Reset | Stall
) -> None:
    finish = (
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
        b'"usage":{"prompt_tokens":4,"completion_tokens":1}}\n\n'
    )
    server.add(Reply(actions=[HI, finish, end]))
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=0.5)))
    assert error is None
    assert parts == [
        StreamPart.text_delta("Hi"),
        StreamPart.step_finish(FinishReason.STOP, Usage(4, 1, 0, 0)),
    ]


def test_stall_after_one_delta_times_out_as_transient(server: LocalServer) -> None:
    server.add(Reply(actions=[HI, Stall()]))
    started = time.monotonic()
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=0.5)))
    assert time.monotonic() - started < 1.5
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT
    assert "timed out" in str(error)


def test_stall_right_after_the_headers_is_transient(server: LocalServer) -> None:
    server.add(Reply(actions=[Stall()]))
    started = time.monotonic()
    error = failure(server, timeout=Timeout(connect=5, read=0.5))
    assert time.monotonic() - started < 1.5
    assert error.error_class is ErrorClass.TRANSIENT


def test_stall_before_the_headers_is_transient(server: LocalServer) -> None:
    server.add(Reply(before_headers=[Stall()]))
    started = time.monotonic()
    error = failure(server, timeout=Timeout(connect=5, read=0.5))
    assert time.monotonic() - started < 1.5
    assert error.error_class is ErrorClass.TRANSIENT


@pytest.mark.parametrize(
    "keepalive",
    [b": ping\n\n", b'event: ping\ndata: {"type":"ping"}\n\n'],
    ids=["comment", "ping-event"],
)
def test_keepalives_without_content_hit_the_idle_timeout(server: LocalServer, keepalive: bytes) -> None:
    server.add(Reply(actions=[keepalive, Pause(0.2)] * 25))
    started = time.monotonic()
    error = failure(server, timeout=Timeout(idle=0.5))
    assert time.monotonic() - started < 1.5
    assert error.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(error)


def test_keepalives_between_content_do_not_fire_the_idle_timeout(server: LocalServer) -> None:
    delta = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    actions: list[Any] = []
    for _ in range(4):
        actions += [delta, Pause(0.2), b": ping\n\n", Pause(0.2)]
    actions.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    server.add(Reply(actions=actions))
    # Content every 0.4 s, a ping between: well inside a 1 s idle timeout even
    # on a loaded machine (0.5 s left 0.1 s of margin, which load took away).
    parts, error = collect(model_for(server, timeout=Timeout(idle=1.0)))
    assert error is None
    assert [p.text for p in parts[:-1]] == ["x"] * 4


def test_a_slow_reader_does_not_fire_the_idle_timeout(server: LocalServer) -> None:
    # The server streams steadily; the reader takes 0.3 s per part, so the
    # worker waits on the full queue (bound 1) longer than the idle timeout.
    delta = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    actions: list[Any] = []
    for _ in range(4):
        actions += [delta, Pause(0.02)]
    actions.append(b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    server.add(Reply(actions=actions))
    options = LoopOptions(
        model=model_for(server, timeout=Timeout(idle=0.2)), messages=[user_message("hi")], queue_size=1
    )
    kinds = []
    with run(options) as reader:
        for part in reader:
            kinds.append(part.kind.value)
            time.sleep(0.3)
    assert kinds == ["text-delta"] * 4 + ["step-finish", "finish"]


# --- closing and cancelling (fault 15) ---------------------------------------------


def endless() -> Reply:
    delta = b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
    return Reply(actions=[delta, Pause(0.05)] * 400)


def test_closing_the_generator_closes_the_response(server: LocalServer) -> None:
    server.add(endless())
    stream = model_for(server).stream(REQUEST, Context())
    assert next(stream) == StreamPart.text_delta("x")
    assert next(stream) == StreamPart.text_delta("x")
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 0.5
    assert wait_until(lambda: server.disconnects >= 1)
    assert server.hits == 1


def test_cancel_from_another_thread_while_blocked(server: LocalServer) -> None:
    server.add(Reply(actions=[HI, Stall()]))
    ctx = Context()
    stream = model_for(server, timeout=Timeout(connect=5, read=30)).stream(REQUEST, ctx)
    assert next(stream) == StreamPart.text_delta("Hi")
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.monotonic())
        ctx.cancel()

    timer = threading.Timer(0.2, cancel)
    timer.start()
    with pytest.raises(Canceled):
        next(stream)
    elapsed = time.monotonic() - cancelled_at[0]
    timer.join()
    assert elapsed < 0.5
    assert wait_until(lambda: server.disconnects >= 1)


def test_cancel_while_waiting_for_the_headers(server: LocalServer) -> None:
    server.add(Reply(before_headers=[Stall()]))
    ctx = Context()
    cancelled_at: list[float] = []

    def cancel() -> None:
        cancelled_at.append(time.monotonic())
        ctx.cancel()

    timer = threading.Timer(0.2, cancel)
    timer.start()
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=30)), ctx)
    elapsed = time.monotonic() - cancelled_at[0]
    timer.join()
    assert parts == []
    assert isinstance(error, Canceled)
    assert elapsed < 0.5


@pytest.mark.parametrize("mounted", [True, False], ids=["adapter-mounted", "plain"])
def test_a_callers_session_ends_the_header_wait_on_cancel_only_with_the_adapter_mounted(
    server: LocalServer, mounted: bool
) -> None:
    """A session of the caller's with ``CancellableHTTPAdapter`` mounted: a
    cancel ends the wait for response headers at once. A plain one: the
    worker waits for the read timeout (1 s here), as docs/cancellation.md
    says under "Known limits"."""
    server.add(Reply(before_headers=[Stall()]))
    session = requests.Session()
    session.trust_env = False
    if mounted:
        session.mount("http://", CancellableHTTPAdapter())
    ctx = Context()
    cancelled_at: list[float] = []

    def cancel_once_the_server_has_the_request() -> None:
        wait_until(lambda: server.hits >= 1, timeout=30)
        cancelled_at.append(time.monotonic())
        ctx.cancel()

    canceller = threading.Thread(target=cancel_once_the_server_has_the_request)
    canceller.start()
    try:
        parts, error = collect(
            model_for(server, timeout=Timeout(connect=5, read=1.0), transport=HTTPTransport(session)), ctx
        )
        elapsed = time.monotonic() - cancelled_at[0]
    finally:
        canceller.join()
        session.close()
    assert parts == []
    assert isinstance(error, Canceled)
    if mounted:
        assert elapsed < 0.5
    else:
        assert elapsed >= 0.5  # the rest of the 1 s read timeout
    assert wait_until(lambda: server.disconnects >= 1, timeout=30)


def test_an_already_cancelled_context_sends_nothing(server: LocalServer) -> None:
    ctx = Context()
    ctx.cancel()
    parts, error = collect(model_for(server), ctx)
    assert parts == []
    assert isinstance(error, Canceled)
    assert server.hits == 0


# --- connection pool -------------------------------------------------------------


def one_connection_session() -> requests.Session:
    """A session whose pool holds one connection and blocks for it when busy."""
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", CancellableHTTPAdapter(pool_maxsize=1, pool_block=True))
    return session


def test_error_responses_are_closed_so_a_one_connection_pool_never_starves(server: LocalServer) -> None:
    session = one_connection_session()
    server.add(
        json_reply(429, {"error": {"message": "slow down"}}),
        json_reply(500, b"<html>oops</html>"),
        Reply(status=502, actions=[b"<html>bad gateway</html>"]),
        json_reply(400, b""),
        json_reply(401, {"error": {"message": "bad key"}}),
        Reply(status=503, actions=[b'{"error":', Pause(0.05), b'{"message":"busy"}}']),
        sse_reply(HELLO),
    )
    model = model_for(server, transport=HTTPTransport(session))
    classes: list[Any] = []

    def work() -> None:
        for _ in range(7):
            parts, error = collect(model)
            classes.append(error.error_class if isinstance(error, ModelError) else parts[-1].finish_reason)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the one-connection pool starved"
    assert classes == [
        ErrorClass.RATE_LIMITED,
        ErrorClass.UPSTREAM,
        ErrorClass.TRANSIENT,
        ErrorClass.INVALID_REQUEST,
        ErrorClass.AUTH,
        ErrorClass.OVERLOADED,
        FinishReason.STOP,
    ]


def test_streams_that_end_in_error_release_the_connection_too(server: LocalServer) -> None:
    session = one_connection_session()
    error_tail = b'data: {"error":{"message":"boom","code":500}}\n\n'
    server.add(
        sse_reply(HI + error_tail),
        Reply(actions=[HI, Close()]),
        sse_reply(HI),
        sse_reply(HELLO),
    )
    model = model_for(server, transport=HTTPTransport(session))
    outcomes: list[Any] = []

    def work() -> None:
        for _ in range(4):
            _, error = collect(model)
            outcomes.append(error.error_class if isinstance(error, ModelError) else None)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the one-connection pool starved"
    assert outcomes == [ErrorClass.UPSTREAM, ErrorClass.TRANSIENT, ErrorClass.TRANSIENT, None]


def test_finished_streams_reuse_the_connection(server: PortServer) -> None:
    session = one_connection_session()
    server.add(sse_reply(HELLO))
    model = model_for(server, transport=HTTPTransport(session))
    for _ in range(3):
        parts, error = collect(model)
        assert error is None
        assert parts == [
            StreamPart.text_delta("Hello"),
            StreamPart.step_finish(FinishReason.STOP, Usage(5, 1, 0, 0)),
        ]
    assert len(set(server.ports)) == 1
    assert server.hits == 3


def test_closing_after_the_finish_reason_drains_the_rest_and_reuses_the_connection(
    server: PortServer,
) -> None:
    session = one_connection_session()
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n"
    )
    server.add(Reply(actions=[body[:80], body[80:]]))
    model = model_for(server, transport=HTTPTransport(session))
    for _ in range(3):
        stream = model.stream(REQUEST, Context())
        assert next(stream) == StreamPart.text_delta("Hello")  # the step is complete here
        stream.close()
    assert server.hits == 3
    assert len(set(server.ports)) == 1


def test_closing_before_the_finish_does_not_reuse_a_half_read_connection(server: PortServer) -> None:
    session = one_connection_session()
    server.add(sse_reply(HELLO))
    model = model_for(server, transport=HTTPTransport(session))
    stream = model.stream(REQUEST, Context())
    assert next(stream) == StreamPart.text_delta("Hello")
    stream.close()
    parts, error = collect(model)
    assert error is None
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.step_finish(FinishReason.STOP, Usage(5, 1, 0, 0)),
    ]
    assert len(set(server.ports)) == 2


def test_the_adapter_passes_the_model_conformance_check(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    model = model_for(server)
    assert isinstance(model, Model)
    check_model(model)
    assert server.hits == 2  # the full stream, then the one closed after its first part
