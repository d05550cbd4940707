"""The OpenAI Responses adapter over a real local socket: HTTP errors with the
Responses error body, errors inside a 200 stream (``error`` events and
``response.failed``, retried only before any output), cut and stalled
streams, cancellation and closing, connection reuse, and the model
conformance check."""

# ruff: noqa: E501  (real error bodies are kept on one line, as servers send them)

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from agentcore import (
    Canceled,
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    Model,
    ModelError,
    ModelSettings,
    Request,
    RunError,
    StreamPart,
    Usage,
    generate,
    tool,
    user_message,
)
from agentcore.providers.openai import OpenAIResponsesModel
from agentcore.testing import check_model
from agentcore.transport import Timeout
from agentcore.transport.http import CancellableHTTPAdapter, HTTPTransport
from tests.localserver import Action, Close, LocalServer, Pause, Reply, Reset, Stall, json_reply, sse_reply
from tests.loop_helpers import nested, not_utf8_requests, wait_until

REQUEST = Request(messages=(user_message("hi"),))


def event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def delta(text: str) -> bytes:
    return event("response.output_text.delta", item_id="msg_1", output_index=0, content_index=0, delta=text)


CREATED = event("response.created", response={"id": "resp_1", "status": "in_progress", "output": []})
COMPLETED = event(
    "response.completed",
    response={
        "id": "resp_1",
        "status": "completed",
        "output": [],
        "usage": {"input_tokens": 5, "output_tokens": 1},
    },
)
HELLO = CREATED + delta("Hello") + COMPLETED
HI = CREATED + delta("Hi")
DONE_PARTS = [StreamPart.text_delta("Hello"), StreamPart.step_finish(FinishReason.STOP, Usage(5, 1, 0, 0))]


@pytest.fixture
def server(shared_server: LocalServer) -> LocalServer:
    """The module's one server, reset for each test (tests/conftest.py)."""
    return shared_server


def model_for(server: LocalServer, **kwargs: Any) -> OpenAIResponsesModel:
    kwargs.setdefault("timeout", Timeout(connect=5, read=10))
    return OpenAIResponsesModel("gpt-5", base_url=server.url + "/v1", **kwargs)


def collect(
    model: OpenAIResponsesModel, ctx: Context | None = None, request: Request = REQUEST
) -> tuple[list[StreamPart], BaseException | None]:
    parts: list[StreamPart] = []
    try:
        for part in model.stream(request, ctx or Context()):
            parts.append(part)
    except (ModelError, Canceled, ConfigError) as exc:
        return parts, exc
    return parts, None


def failure(server: LocalServer, *replies: Reply, **kwargs: Any) -> ModelError:
    server.add(*replies)
    parts, error = collect(model_for(server, **kwargs))
    assert parts == []
    assert isinstance(error, ModelError)
    return error


def test_a_stream_posts_to_responses_and_yields_its_parts(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    parts, error = collect(model_for(server, api_key="sk-test-0123456789"))
    assert error is None
    assert parts == DONE_PARTS
    sent = server.requests[0]
    assert sent["path"] == "/v1/responses"
    assert sent["headers"]["Authorization"] == "Bearer sk-test-0123456789"
    assert sent["headers"]["Accept"] == "text/event-stream"
    assert sent["body"]["stream"] is True


def test_a_request_the_api_refuses_is_a_config_error_before_any_http_call(server: LocalServer) -> None:
    request = Request(messages=(user_message("hi"),), settings=ModelSettings(stop_sequences=["END"]))
    parts, error = collect(model_for(server), request=request)
    assert parts == []
    assert isinstance(error, ConfigError)
    assert "ModelSettings.stop_sequences" in str(error)
    assert server.hits == 0


@pytest.mark.parametrize("place", list(not_utf8_requests()))
def test_text_that_is_not_unicode_is_an_invalid_request_before_anything_is_sent(
    server: LocalServer, place: str
) -> None:
    # outside a run (a run replaces it first): a typed error, not UnicodeEncodeError
    parts, error = collect(model_for(server), request=not_utf8_requests()[place])
    assert parts == []
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.INVALID_REQUEST
    assert "not valid Unicode" in error.message
    assert server.hits == 0


def test_per_run_settings_override_the_models(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    model = model_for(server, settings=ModelSettings(temperature=0.1, reasoning_effort="low"))
    request = Request(messages=(user_message("hi"),), settings=ModelSettings(reasoning_effort="high"))
    assert collect(model, request=request) == (DONE_PARTS, None)
    body = server.requests[0]["body"]
    assert body["temperature"] == 0.1
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}


# --- HTTP errors with the Responses error body -----------------------------------


def openai_error(
    message: str, kind: str = "invalid_request_error", param: Any = None, code: Any = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@pytest.mark.parametrize(
    ("reply", "expected", "words"),
    [
        (
            json_reply(
                400, openai_error("Encrypted content is not supported with this model.", param="include")
            ),
            ErrorClass.INVALID_REQUEST,
            "Encrypted content is not supported",
        ),
        (
            json_reply(
                400,
                openai_error(
                    "Your organization must be verified to generate reasoning summaries. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just verified, it can take up to 15 minutes for access to propagate.",
                    param="reasoning.summary",
                    code="unsupported_value",
                ),
            ),
            ErrorClass.INVALID_REQUEST,
            "must be verified",
        ),
        (
            json_reply(
                400,
                openai_error(
                    "Your input exceeds the context window of this model. Please adjust your input and try again.",
                    param="input",
                    code="context_length_exceeded",
                ),
            ),
            ErrorClass.CONTEXT_LENGTH,
            "context window",
        ),
        (
            json_reply(
                429,
                openai_error(
                    "Rate limit reached for gpt-5 on tokens per min (TPM).",
                    "tokens",
                    code="rate_limit_exceeded",
                ),
                {"retry-after-ms": "1500"},
            ),
            ErrorClass.RATE_LIMITED,
            "Rate limit reached",
        ),
        (
            json_reply(
                503,
                openai_error("The engine is currently overloaded, please try again later", "server_error"),
            ),
            ErrorClass.OVERLOADED,
            "overloaded",
        ),
        (
            json_reply(
                500, openai_error("The server had an error while processing your request.", "server_error")
            ),
            ErrorClass.UPSTREAM,
            "The server had an error",
        ),
        (
            json_reply(
                404,
                openai_error(
                    "The model `gpt-9` does not exist or you do not have access to it.",
                    code="model_not_found",
                ),
            ),
            ErrorClass.INVALID_REQUEST,
            "does not exist",
        ),
        (
            json_reply(
                400,
                openai_error("Previous response with id 'resp_x' not found.", param="previous_response_id"),
            ),
            ErrorClass.INVALID_REQUEST,
            "Previous response",
        ),
    ],
    ids=[
        "encrypted-not-supported",
        "summary-needs-verification",
        "context",
        "429",
        "503",
        "500",
        "404",
        "chain-expired",
    ],
)
def test_http_errors(server: LocalServer, reply: Reply, expected: ErrorClass, words: str) -> None:
    error = failure(server, reply)
    assert error.error_class is expected
    assert error.status == reply.status
    assert words in error.message
    if reply.status == 429:
        assert error.retry_after == 1.5


def test_the_api_key_never_appears_in_errors(server: LocalServer) -> None:
    key = "sk-proj-abcdef0123456789"
    reply = json_reply(401, openai_error(f"Incorrect API key provided: {key}.", code="invalid_api_key"))
    error = failure(server, reply, api_key=key)
    assert error.error_class is ErrorClass.AUTH
    assert key not in str(error)
    assert "[REDACTED]" in error.message


# --- errors inside a 200 stream -------------------------------------------------------

RATE_LIMIT_EVENT = event("error", code="rate_limit_exceeded", message="Rate limit reached", param=None)
FAILED_OVERLOADED = event(
    "response.failed",
    response={
        "id": "resp_1",
        "status": "failed",
        "error": {"code": "server_is_overloaded", "message": "Overloaded"},
    },
)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        (RATE_LIMIT_EVENT, ErrorClass.RATE_LIMITED),
        (FAILED_OVERLOADED, ErrorClass.OVERLOADED),
        (
            event(
                "response.failed",
                response={"status": "failed", "error": {"code": "server_error", "message": "boom"}},
            ),
            ErrorClass.UPSTREAM,
        ),
        (
            event(
                "error",
                error={
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                    "message": "You exceeded your current quota",
                },
            ),
            ErrorClass.UPSTREAM,
        ),
    ],
    ids=["error-event-rate-limit", "failed-overloaded", "failed-server-error", "error-event-quota"],
)
def test_errors_inside_a_200_stream(server: LocalServer, tail: bytes, expected: ErrorClass) -> None:
    server.add(sse_reply(HI + tail + COMPLETED))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is expected


def loop(server: LocalServer) -> LoopOptions:
    return LoopOptions(model=model_for(server), messages=[user_message("hi")], retry_base_delay=0.01)


@pytest.mark.parametrize("tail", [RATE_LIMIT_EVENT, FAILED_OVERLOADED], ids=["rate-limit", "overloaded"])
def test_rate_limits_and_overload_are_retried_before_any_output(server: LocalServer, tail: bytes) -> None:
    server.add(sse_reply(CREATED + tail), sse_reply(HELLO))
    result = generate(loop(server))
    assert result.text == "Hello"
    assert server.hits == 2


@pytest.mark.parametrize("tail", [RATE_LIMIT_EVENT, FAILED_OVERLOADED], ids=["rate-limit", "overloaded"])
def test_rate_limits_and_overload_are_not_retried_after_output(server: LocalServer, tail: bytes) -> None:
    server.add(sse_reply(HI + tail), sse_reply(HELLO))
    with pytest.raises(RunError) as caught:
        generate(loop(server))
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class.retryable
    assert server.hits == 1


def test_reasoning_output_counts_as_output_for_the_retry_rule(server: LocalServer) -> None:
    reasoning = event(
        "response.reasoning_summary_text.delta",
        item_id="rs_1",
        output_index=0,
        summary_index=0,
        delta="Thinking",
    )
    server.add(sse_reply(CREATED + reasoning + RATE_LIMIT_EVENT), sse_reply(HELLO))
    with pytest.raises(RunError):
        generate(loop(server))
    assert server.hits == 1


def test_a_call_nested_too_deeply_gets_its_error_and_its_history_goes_on(server: LocalServer) -> None:
    # arguments beyond Python's JSON decoder: the loop answers the call with an
    # error, and the history holding it goes back (the Responses API takes the
    # arguments as text, so they go as the model sent them)
    deep = nested(20_000)
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "find", "arguments": deep}
    server.add(
        sse_reply(CREATED + event("response.output_item.done", output_index=0, item=call) + COMPLETED),
        sse_reply(HELLO),
        sse_reply(HELLO),
    )
    runs: list[str] = []

    @tool
    def find(q: str) -> str:
        """Find a thing."""
        runs.append(q)
        return "found"

    options = LoopOptions(model=model_for(server), messages=[user_message("hi")], tools=[find])
    result = generate(options)
    assert result.text == "Hello"
    assert runs == []
    [error] = result.steps[0].tool_results
    assert error.is_error
    assert "nested too deeply" in error.content
    sent = server.requests[1]["body"]["input"][1:]
    assert sent == [
        {"type": "function_call", "call_id": "call_1", "name": "find", "arguments": deep, "id": "fc_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": error.content},
    ]
    history = [Message.from_dict(json.loads(json.dumps(m.to_dict()))) for m in result.messages]
    again = generate(attrs.evolve(options, messages=[*history, user_message("again")]))
    assert again.text == "Hello"
    assert server.requests[2]["body"]["input"][1:3] == sent


# --- cut, reset and stalled streams -----------------------------------------------------


@pytest.mark.parametrize("end", [Close(), Reset()], ids=["close", "reset"])
def test_a_stream_cut_before_the_response_completed_is_transient(
    server: LocalServer, end: Close | Reset
) -> None:
    server.add(Reply(actions=[HI, delta(" there"), end]))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi"), StreamPart.text_delta(" there")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT


@pytest.mark.parametrize(
    "body",
    [HI, HI + b"data: [DONE]\n\n", HI + b'data: {"type":"response.output_te'],
    ids=["clean-end", "done", "mid-event"],
)
def test_a_body_that_ends_before_the_response_completed_is_transient(
    server: LocalServer, body: bytes
) -> None:
    server.add(sse_reply(body))
    parts, error = collect(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT


def test_nothing_after_the_completed_event_is_waited_for(server: LocalServer) -> None:
    server.add(Reply(actions=[HELLO, Stall()]))
    started = time.monotonic()
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=30)))
    assert error is None
    assert parts == DONE_PARTS
    assert time.monotonic() - started < 1.5


def test_a_stall_after_one_delta_times_out_as_transient(server: LocalServer) -> None:
    server.add(Reply(actions=[HI, Stall()]))
    started = time.monotonic()
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=0.5)))
    assert time.monotonic() - started < 1.5
    assert parts == [StreamPart.text_delta("Hi")]
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT
    assert "timed out" in str(error)


def test_keepalives_without_content_hit_the_idle_timeout(server: LocalServer) -> None:
    keepalive: list[Action] = [b": keep-alive\n\n", Pause(0.2)]
    server.add(Reply(actions=[CREATED, *(keepalive * 25)]))
    started = time.monotonic()
    parts, error = collect(model_for(server, timeout=Timeout(idle=0.5)))
    assert time.monotonic() - started < 1.5
    assert parts == []
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(error)


# --- closing and cancelling ------------------------------------------------------------------


def endless() -> Reply:
    chunk: list[Action] = [delta("x"), Pause(0.05)]
    return Reply(actions=[CREATED, *(chunk * 400)])


def test_closing_the_generator_closes_the_response(server: LocalServer) -> None:
    server.add(endless())
    stream = model_for(server).stream(REQUEST, Context())
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
    timer = threading.Timer(0.2, ctx.cancel)
    timer.start()
    started = time.monotonic()
    parts, error = collect(model_for(server, timeout=Timeout(connect=5, read=30)), ctx)
    timer.join()
    assert parts == []
    assert isinstance(error, Canceled)
    assert time.monotonic() - started < 0.7


def test_an_already_cancelled_context_sends_nothing(server: LocalServer) -> None:
    ctx = Context()
    ctx.cancel()
    parts, error = collect(model_for(server), ctx)
    assert parts == []
    assert isinstance(error, Canceled)
    assert server.hits == 0


# --- connections ----------------------------------------------------------------------------


class PortServer(LocalServer):
    """A local server that records the client port of every request."""

    def __init__(self) -> None:
        self.ports: list[int] = []
        super().__init__()

    def _handle(self, handler: Any) -> None:
        with self._lock:
            self.ports.append(handler.client_address[1])
        super()._handle(handler)


@pytest.fixture
def port_server() -> Iterator[PortServer]:
    srv = PortServer()
    try:
        yield srv
    finally:
        srv.close()


def one_connection_session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False
    session.mount("http://", CancellableHTTPAdapter(pool_maxsize=1, pool_block=True))
    return session


def test_finished_streams_reuse_the_connection_even_with_data_after_the_terminal_event(
    port_server: PortServer,
) -> None:
    port_server.add(sse_reply(HELLO + b"data: [DONE]\n\n" + FAILED_OVERLOADED))
    model = model_for(port_server, transport=HTTPTransport(one_connection_session()))
    for _ in range(3):
        assert collect(model) == (DONE_PARTS, None)
    assert port_server.hits == 3
    assert len(set(port_server.ports)) == 1


def test_error_streams_release_the_connection(port_server: PortServer) -> None:
    port_server.add(
        sse_reply(HI + RATE_LIMIT_EVENT),
        Reply(actions=[HI, Close()]),
        json_reply(500, openai_error("boom", "server_error")),
        sse_reply(HELLO),
    )
    model = model_for(port_server, transport=HTTPTransport(one_connection_session()))
    outcomes: list[Any] = []

    def work() -> None:
        for _ in range(4):
            _, error = collect(model)
            outcomes.append(error.error_class if isinstance(error, ModelError) else None)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the one-connection pool starved"
    assert outcomes == [ErrorClass.RATE_LIMITED, ErrorClass.TRANSIENT, ErrorClass.UPSTREAM, None]


def test_the_adapter_passes_the_model_conformance_check(server: LocalServer) -> None:
    reasoning_item = {"id": "rs_1", "type": "reasoning", "encrypted_content": "enc", "summary": []}
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a":1}'}
    body = (
        CREATED
        + event(
            "response.reasoning_summary_text.delta",
            item_id="rs_1",
            output_index=0,
            summary_index=0,
            delta="Hm",
        )
        + event("response.output_item.done", output_index=0, item=reasoning_item)
        + event("response.output_item.done", output_index=1, item=call)
        + COMPLETED
    )
    server.add(sse_reply(body))
    model = model_for(server)
    assert isinstance(model, Model)
    check_model(model)
    assert server.hits == 2  # the whole step, then one closed after its first part
