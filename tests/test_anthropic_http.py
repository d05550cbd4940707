"""``AnthropicModel`` against a real HTTP server on 127.0.0.1: error statuses,
Retry-After, error events, stalls and timeouts, resets, cancellation, split
UTF-8, connection reuse, and keeping the API key out of every message.
"""

from __future__ import annotations

import email.utils
import gc
import gzip
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from agentcore.context import Context
from agentcore.errors import ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.testing import check_model
from agentcore.transport import Timeout
from agentcore.transport.http import HTTPTransport
from agentcore.types import FinishReason, Request, StreamPart, StreamPartKind, Usage, user_message
from tests.localserver import Close, LocalServer, Pause, Reply, Reset, Stall, json_reply, sse_reply
from tests.loop_helpers import not_utf8_requests, wait_until
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    PING,
    block_stop,
    error_payload,
    json_delta,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
    tool_start,
)

KEY = "sk-ant-api03-very-secret-test-key-XYZ"
REQUEST = Request(messages=[user_message("Hi")])
HELLO = sse(
    message_start(input_tokens=10, output_tokens=1),
    text_start(0),
    text_delta(0, "Hello"),
    block_stop(0),
    message_delta("end_turn", output_tokens=5),
    MESSAGE_STOP,
)


def model_for(server: LocalServer, **kwargs: Any) -> AnthropicModel:
    kwargs.setdefault("timeout", Timeout(connect=5.0, read=10.0))
    return AnthropicModel("claude-test", api_key=KEY, base_url=server.url, **kwargs)


def failure(model: AnthropicModel, request: Request = REQUEST) -> tuple[list[StreamPart], ModelError]:
    """Run one step that must fail; return the parts seen before the error and the error."""
    parts: list[StreamPart] = []
    with pytest.raises(ModelError) as info:
        collect_into(parts, model.stream(request, Context()))
    return parts, info.value


def collect_into(parts: list[StreamPart], stream: Iterator[StreamPart]) -> None:
    for part in stream:
        parts.append(part)


def test_passes_the_model_conformance_check(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    check_model(model_for(server))


@pytest.mark.parametrize("place", list(not_utf8_requests()))
def test_text_that_is_not_unicode_is_an_invalid_request_before_anything_is_sent(
    server: LocalServer, place: str
) -> None:
    # outside a run (a run replaces it first): a typed error, not UnicodeEncodeError
    _, error = failure(model_for(server), not_utf8_requests()[place])
    assert error.error_class is ErrorClass.INVALID_REQUEST
    assert "not valid Unicode" in error.message
    assert server.hits == 0


def test_plain_step_and_request_seen_by_the_server(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    parts = list(model_for(server).stream(REQUEST, Context()))
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.step_finish(FinishReason.STOP, Usage(10, 5, 0, 0)),
    ]
    seen = server.requests[0]
    assert (seen["method"], seen["path"]) == ("POST", "/v1/messages")
    assert seen["body"]["stream"] is True
    assert seen["headers"]["x-api-key"] == KEY


# --- HTTP error statuses (design.md, faults 12 and 13) --------------------------

ANTHROPIC_ERRORS = [
    (
        400,
        "invalid_request_error",
        "prompt is too long: 210000 tokens > 200000 maximum",
        ErrorClass.CONTEXT_LENGTH,
    ),
    (400, "invalid_request_error", "Invalid value for 'temperature'", ErrorClass.INVALID_REQUEST),
    (401, "authentication_error", "invalid x-api-key", ErrorClass.AUTH),
    (403, "permission_error", "Your API key does not have permission", ErrorClass.AUTH),
    (404, "not_found_error", "model: claude-nope", ErrorClass.INVALID_REQUEST),
    (
        413,
        "request_too_large",
        "Request exceeds the maximum allowed number of bytes.",
        ErrorClass.CONTEXT_LENGTH,
    ),
    (
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        ErrorClass.RATE_LIMITED,
    ),
    (500, "api_error", "Internal server error", ErrorClass.UPSTREAM),
    (504, "timeout_error", "Request timed out", ErrorClass.TRANSIENT),
    (529, "overloaded_error", "Overloaded", ErrorClass.OVERLOADED),
]


@pytest.mark.parametrize(("status", "kind", "message", "expected"), ANTHROPIC_ERRORS)
def test_error_status_with_anthropic_body(
    server: LocalServer, status: int, kind: str, message: str, expected: ErrorClass
) -> None:
    server.add(json_reply(status, {"type": "error", "error": {"type": kind, "message": message}}))
    parts, err = failure(model_for(server))
    assert parts == []
    assert err.error_class is expected
    assert err.status == status
    assert message in str(err)
    assert server.hits == 1  # the adapter never retries; that is the loop's job


def test_prompt_too_long_message_says_context_window(server: LocalServer) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    server.add(json_reply(400, body))
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.CONTEXT_LENGTH
    assert str(err).startswith("context window exceeded: ")
    assert "(HTTP 400)" in str(err)


@pytest.mark.parametrize("body", [b"", b"<html><body>413 Request Entity Too Large</body></html>", b"{}"])
def test_413_with_any_body_is_context_length(server: LocalServer, body: bytes) -> None:
    server.add(json_reply(413, body, headers={"Content-Type": "text/html"}))
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.CONTEXT_LENGTH
    assert err.status == 413


def test_529_overloaded(server: LocalServer) -> None:
    server.add(
        json_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    _, err = failure(model_for(server))
    assert (err.error_class, err.status, err.error_class.retryable) == (ErrorClass.OVERLOADED, 529, True)


# --- Retry-After ----------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 529])
@pytest.mark.parametrize(
    ("headers", "low", "high"),
    [
        ({"retry-after-ms": "1500"}, 1.5, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25, 0.25),
        ({"Retry-After": "7"}, 7.0, 7.0),
        ({"Retry-After": "0.5"}, 0.5, 0.5),
        ({}, 0.0, 0.0),
        ({"Retry-After": "soon"}, 0.0, 0.0),
    ],
)
def test_retry_after_in_seconds(
    server: LocalServer, status: int, headers: dict[str, str], low: float, high: float
) -> None:
    kind = "rate_limit_error" if status == 429 else "overloaded_error"
    server.add(
        json_reply(status, {"type": "error", "error": {"type": kind, "message": "wait"}}, headers=headers)
    )
    _, err = failure(model_for(server))
    assert low <= err.retry_after <= high


def test_retry_after_http_date(server: LocalServer) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.add(
        json_reply(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "x"}},
            {"Retry-After": when},
        )
    )
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.RATE_LIMITED
    assert 27.0 <= err.retry_after <= 30.0


# --- error events in a 200 stream (fault 12) --------------------------------------


def test_overloaded_event_before_any_content(server: LocalServer) -> None:
    body = sse(
        message_start(input_tokens=10, output_tokens=1), error_payload("overloaded_error", "Overloaded")
    )
    server.add(sse_reply(body))
    parts, err = failure(model_for(server))
    assert parts == []
    assert err.error_class is ErrorClass.OVERLOADED
    assert err.status == 0
    assert "Overloaded" in str(err)


def test_overloaded_event_after_content(server: LocalServer) -> None:
    body = sse(
        message_start(input_tokens=10, output_tokens=1),
        text_start(0),
        text_delta(0, "Hel"),
        error_payload("overloaded_error", "Overloaded"),
    )
    server.add(sse_reply(body))
    parts, err = failure(model_for(server))
    assert parts == [StreamPart.text_delta("Hel")]  # delivered once, no step-finish
    assert err.error_class is ErrorClass.OVERLOADED


def test_error_event_after_stop_reason_is_still_an_error(server: LocalServer) -> None:
    body = sse(
        text_start(0), text_delta(0, "Hi"), message_delta("end_turn"), error_payload("api_error", "boom")
    )
    server.add(sse_reply(body))
    parts, err = failure(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert err.error_class is ErrorClass.UPSTREAM


def test_gzip_encoded_stream_is_decoded(server: LocalServer) -> None:
    headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}
    packed = gzip.compress(HELLO)
    server.add(Reply(actions=[packed[:40], packed[40:]], headers=headers))
    parts = list(model_for(server).stream(REQUEST, Context()))
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.step_finish(FinishReason.STOP, Usage(10, 5, 0, 0)),
    ]


# --- cut, reset and malformed streams --------------------------------------------


def test_body_ending_before_the_step_completed_is_transient(server: LocalServer) -> None:
    server.add(sse_reply(sse(message_start(input_tokens=1), text_start(0), text_delta(0, "Hel"))))
    parts, err = failure(model_for(server))
    assert parts == [StreamPart.text_delta("Hel")]
    assert err.error_class is ErrorClass.TRANSIENT


def test_body_ending_after_stop_reason_without_message_stop_finishes(server: LocalServer) -> None:
    server.add(sse_reply(sse(text_start(0), text_delta(0, "Hi"), message_delta("end_turn", output_tokens=2))))
    parts = list(model_for(server).stream(REQUEST, Context()))
    assert parts == [
        StreamPart.text_delta("Hi"),
        StreamPart.step_finish(FinishReason.STOP, Usage(0, 2, 0, 0)),
    ]


@pytest.mark.parametrize("action", [Reset(), Close()], ids=["reset", "close-inside-chunked-body"])
def test_connection_lost_mid_stream_is_transient(server: LocalServer, action: Any) -> None:
    head = sse(message_start(input_tokens=1), text_start(0), text_delta(0, "Hello"), text_delta(0, " wor"))
    server.add(Reply(actions=[head, Pause(0.05), action]))
    parts, err = failure(model_for(server))
    assert "".join(p.text for p in parts) == "Hello wor"
    assert err.error_class is ErrorClass.TRANSIENT


def test_event_cut_in_half_at_the_end_is_transient(server: LocalServer) -> None:
    cut = sse(text_start(0), text_delta(0, "Hi")) + b'event: message_delta\ndata: {"type":"message_del'
    server.add(sse_reply(cut))
    parts, err = failure(model_for(server))
    assert parts == [StreamPart.text_delta("Hi")]
    assert err.error_class is ErrorClass.TRANSIENT


def test_connection_refused_is_transient() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = AnthropicModel(
        "claude-test",
        api_key=KEY,
        base_url=f"http://127.0.0.1:{port}",
        timeout=Timeout(connect=2.0, read=2.0),
    )
    _, err = failure(model)
    assert err.error_class is ErrorClass.TRANSIENT
    assert KEY not in str(err)
    assert KEY not in repr(err)


# --- stalls and timeouts (fault 16) ----------------------------------------------


def test_stall_after_one_delta_fails_within_a_second(server: LocalServer) -> None:
    server.add(
        Reply(actions=[sse(message_start(input_tokens=1), text_start(0), text_delta(0, "Hi")), Stall()])
    )
    model = model_for(server, timeout=Timeout(connect=2.0, read=0.5))
    start = time.monotonic()
    parts, err = failure(model)
    elapsed = time.monotonic() - start
    assert parts == [StreamPart.text_delta("Hi")]
    assert err.error_class is ErrorClass.TRANSIENT
    assert "timed out" in str(err)
    assert 0.4 < elapsed < 1.5


def test_stall_right_after_headers_is_transient(server: LocalServer) -> None:
    server.add(Reply(actions=[Stall()]))
    start = time.monotonic()
    parts, err = failure(model_for(server, timeout=Timeout(connect=2.0, read=0.5)))
    assert parts == []
    assert err.error_class is ErrorClass.TRANSIENT
    assert time.monotonic() - start < 1.5


def test_stall_before_headers_is_transient(server: LocalServer) -> None:
    server.add(Reply(before_headers=[Stall()]))
    start = time.monotonic()
    _, err = failure(model_for(server, timeout=Timeout(connect=2.0, read=0.5)))
    assert err.error_class is ErrorClass.TRANSIENT
    assert time.monotonic() - start < 1.5


def test_ping_only_stream_hits_the_idle_timeout(server: LocalServer) -> None:
    actions: list[Any] = [sse(message_start(input_tokens=1))]
    for _ in range(50):
        actions += [sse(PING), Pause(0.2)]
    server.add(Reply(actions=actions))
    model = model_for(server, timeout=Timeout(idle=0.5))
    start = time.monotonic()
    parts, err = failure(model)
    elapsed = time.monotonic() - start
    assert parts == []
    assert err.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(err)
    assert 0.4 < elapsed < 1.5


def test_idle_timeout_caps_the_read_timeout(server: LocalServer) -> None:
    server.add(Reply(actions=[sse(message_start(input_tokens=1)), Stall()]))
    start = time.monotonic()
    _, err = failure(model_for(server, timeout=Timeout(connect=2.0, read=600.0, idle=0.5)))
    assert err.error_class is ErrorClass.TRANSIENT
    assert time.monotonic() - start < 1.5


def test_slow_but_steady_content_is_not_idle(server: LocalServer) -> None:
    actions: list[Any] = [sse(message_start(input_tokens=1), text_start(0))]
    for word in ["a", "b", "c", "d", "e"]:
        actions += [Pause(0.15), sse(text_delta(0, word))]
    actions.append(sse(message_delta("end_turn"), MESSAGE_STOP))
    server.add(Reply(actions=actions))
    parts = list(model_for(server, timeout=Timeout(idle=0.4)).stream(REQUEST, Context()))
    assert "".join(p.text for p in parts) == "abcde"


def test_idle_timeout_none_streams_a_normal_reply(server: LocalServer) -> None:
    server.add(sse_reply(HELLO))
    parts = list(model_for(server, timeout=Timeout(idle=None)).stream(REQUEST, Context()))
    assert parts == [
        StreamPart.text_delta("Hello"),
        StreamPart.step_finish(FinishReason.STOP, Usage(10, 5, 0, 0)),
    ]


def test_idle_timeout_none_lets_pings_keep_a_stream_alive(server: LocalServer) -> None:
    actions: list[Any] = [sse(message_start(input_tokens=1))]
    for _ in range(6):  # 0.6 s of pings only, longer than the read timeout (which bounds one read)
        actions += [sse(PING), Pause(0.1)]
    actions.append(sse(text_start(0), text_delta(0, "late"), message_delta("end_turn"), MESSAGE_STOP))
    server.add(Reply(actions=actions))
    parts = list(
        model_for(server, timeout=Timeout(connect=2.0, read=0.5, idle=None)).stream(REQUEST, Context())
    )
    assert "".join(p.text for p in parts) == "late"
    assert parts[-1].finish_reason is FinishReason.STOP


def test_idle_timeout_none_leaves_the_read_timeout_in_charge(server: LocalServer) -> None:
    server.add(Reply(actions=[sse(message_start(input_tokens=1)), Stall()]))
    start = time.monotonic()
    _, err = failure(model_for(server, timeout=Timeout(connect=2.0, read=0.5, idle=None)))
    assert err.error_class is ErrorClass.TRANSIENT
    assert "timed out" in str(err)
    assert "idle timeout" not in str(err)
    assert time.monotonic() - start < 1.5


# --- split UTF-8 (fault 18) ------------------------------------------------------


def utf8_body() -> bytes:
    start = message_start(input_tokens=9, output_tokens=1)
    start["message"]["id"] = "msg_xxxxx"  # aligns 7-byte pieces to cut inside é, 你, 👋 and ü
    return sse(
        start,
        text_start(0),
        text_delta(0, "héllo 你好 👋"),
        block_stop(0),
        tool_start(1, "toolu_1", "get_weather"),
        json_delta(1, '{"city":"Zü'),
        json_delta(1, 'rich"}'),
        block_stop(1),
        message_delta("tool_use", output_tokens=20),
        MESSAGE_STOP,
    )


UTF8_BODY = utf8_body()


def splits_inside_a_character(body: bytes, piece: int) -> int:
    """How many piece boundaries fall on a UTF-8 continuation byte."""
    return sum(1 for i in range(piece, len(body), piece) if 0x80 <= body[i] <= 0xBF)


@pytest.mark.parametrize("piece", [1, 7])
def test_utf8_split_across_reads(server: LocalServer, piece: int) -> None:
    assert splits_inside_a_character(UTF8_BODY, piece) >= 4
    server.add(sse_reply(UTF8_BODY, piece=piece))
    parts = list(model_for(server).stream(REQUEST, Context()))
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    assert text == "héllo 你好 👋"
    assert "\ufffd" not in text
    calls = [p.tool_call for p in parts if p.tool_call is not None]
    assert len(calls) == 1
    assert (calls[0].id, calls[0].name, json.loads(calls[0].input)) == (
        "toolu_1",
        "get_weather",
        {"city": "Zürich"},
    )
    assert parts[-1] == StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(9, 20, 0, 0))


# --- closing and cancelling (fault 15) --------------------------------------------

ENDLESS_HEAD = sse(message_start(input_tokens=1), text_start(0), text_delta(0, "x"))


def test_closing_the_generator_closes_the_response(server: LocalServer) -> None:
    server.add(Reply(actions=[ENDLESS_HEAD, Stall()]))
    stream = model_for(server).stream(REQUEST, Context())
    assert next(stream) == StreamPart.text_delta("x")
    assert server.disconnects == 0
    stream.close()
    assert wait_until(lambda: server.disconnects == 1, timeout=1.0)
    with pytest.raises(StopIteration):
        next(stream)


def test_an_abandoned_stream_releases_its_response_when_collected(server: LocalServer) -> None:
    server.add(Reply(actions=[ENDLESS_HEAD, Stall()]))
    stream = model_for(server).stream(REQUEST, Context())
    assert next(stream) == StreamPart.text_delta("x")
    del stream
    gc.collect()
    assert wait_until(lambda: server.disconnects == 1, timeout=1.0)


def test_closing_while_the_server_keeps_streaming(server: LocalServer) -> None:
    actions: list[Any] = [ENDLESS_HEAD]
    for _ in range(200):
        actions += [Pause(0.05), sse(text_delta(0, "x"))]
    server.add(Reply(actions=actions))
    stream = model_for(server).stream(REQUEST, Context())
    assert [next(stream), next(stream)] == [StreamPart.text_delta("x")] * 2
    stream.close()
    assert wait_until(lambda: server.disconnects == 1, timeout=1.0)


@pytest.mark.parametrize("own_session", [True, False], ids=["adapter-session", "caller-session"])
def test_a_completed_step_leaves_the_connection_reusable(server: LocalServer, own_session: bool) -> None:
    server.add(Reply(actions=[HELLO, Pause(0.1)]))  # the end of the body comes after message_stop
    session = None if own_session else requests.Session()
    model = model_for(server, transport=None if session is None else HTTPTransport(session))
    for _ in range(3):
        stream = model.stream(REQUEST, Context())
        for part in stream:
            if part.kind is StreamPartKind.STEP_FINISH:
                break  # the loop stops reading here and closes the stream
        stream.close()
    assert server.hits == 3
    assert server.connections == 1  # one TCP connection served all three steps
    if session is not None:
        session.close()


# --- the API key never shows -------------------------------------------------------


def all_text(err: BaseException) -> str:
    """str and repr of an exception and of everything chained to it."""
    seen: list[str] = []
    current: BaseException | None = err
    while current is not None and len(seen) < 20:
        seen += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(seen)


def test_key_not_in_repr_or_str_of_the_model() -> None:
    model = AnthropicModel("claude-test", api_key=KEY, headers={"x-other": "1"})
    assert repr(model) == "AnthropicModel(model='claude-test', base_url='https://api.anthropic.com')"
    assert str(model) == repr(model)
    assert KEY not in repr(model)


def test_key_not_in_a_401_error(server: LocalServer) -> None:
    server.add(
        json_reply(
            401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        )
    )
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.AUTH
    assert KEY not in all_text(err)


def test_key_echoed_by_the_server_is_redacted(server: LocalServer) -> None:
    message = f"invalid x-api-key: {KEY}"
    server.add(
        json_reply(401, {"type": "error", "error": {"type": "authentication_error", "message": message}})
    )
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.AUTH
    assert err.status == 401
    assert "invalid x-api-key: [REDACTED]" in str(err)
    assert KEY not in all_text(err)


def test_key_echoed_in_an_error_event_is_redacted(server: LocalServer) -> None:
    server.add(sse_reply(sse(error_payload("permission_error", f"key {KEY} may not use this model"))))
    _, err = failure(model_for(server))
    assert err.error_class is ErrorClass.AUTH
    assert "key [REDACTED] may not use" in str(err)
    assert KEY not in all_text(err)


def test_short_keys_are_not_redacted_from_words(server: LocalServer) -> None:
    server.add(
        json_reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    )
    model = AnthropicModel("claude-test", api_key="a", base_url=server.url)
    _, err = failure(model)
    assert "Overloaded" in str(err)
