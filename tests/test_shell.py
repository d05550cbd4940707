"""The shared shell (``agentcore.providers.shell``) around a stream mapping of
one's own: whatever a mapping raises on a stream it did not expect leaves the
adapter as an ``UPSTREAM`` ``ModelError`` naming it (MUST 2 of
``agentcore.model``), at an event and at the end of the stream alike; a
framing of one's own streams a body of its media type."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Mapping
from typing import Any

import pytest

from agentcore import Context, ErrorClass, FinishReason, ModelError, Request, StreamPart, Usage, user_message
from agentcore.caching import CachePolicy
from agentcore.providers.endpoint import Endpoint
from agentcore.providers.shell import Adapter, Framing
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.transport.sse import Event, iter_events


class Strict:
    """A stream mapping that reads its fields without looking at their types."""

    def __init__(self) -> None:
        self.complete = False
        self.done = False
        self._end: Mapping[str, Any] = {}

    def feed(self, event: Event) -> list[StreamPart]:
        data = event.data
        if data["type"] == "text":  # a list or a str here is a TypeError
            return [StreamPart.text_delta(data["text"])]
        self._end, self.complete, self.done = data, True, True
        return []

    def finish(self) -> list[StreamPart]:
        usage = Usage(int(self._end["input_tokens"]), int(self._end["output_tokens"]))
        return [StreamPart.step_finish(FinishReason.STOP, usage)]


class StrictModel(Adapter):
    def __init__(
        self,
        transport: MemoryTransport,
        framing: Framing = iter_events,
        media_type: str = "text/event-stream",
    ) -> None:
        super().__init__(
            "strict-1",
            api_key=None,
            base_url="https://strict.example",
            transport=transport,
            timeout=None,
            headers=None,
            settings=None,
            extra_body=None,
            cache_tracker=None,
            endpoint=Endpoint(
                "/v1/generate",
                headers={"content-type": "application/json"},
                key_header=("authorization", "Bearer {key}"),
                framing=framing,
                media_type=media_type,
            ),
        )

    def stream(self, request: Request, ctx: Context) -> Generator[StreamPart, None, None]:
        body = {"prompt": request.messages[0].text}
        prompt = self._digests.fingerprint(None, None, request.messages, [body])
        yield from self._stream(
            body, self._request_headers(request), Strict(), prompt, CachePolicy("x", None), ctx
        )


def stream(body: bytes) -> list[StreamPart]:
    transport = MemoryTransport()
    transport.add(Reply.of(body))
    return list(StrictModel(transport).stream(Request(messages=[user_message("hi")]), Context()))


def test_a_well_formed_stream_goes_through() -> None:
    text = b'data: {"type": "text", "text": "Hi"}\n\n'
    parts = stream(text + b'data: {"type": "done", "input_tokens": 3, "output_tokens": 1}\n\n')
    assert parts[0] == StreamPart.text_delta("Hi")
    assert parts[1] == StreamPart.step_finish(FinishReason.STOP, Usage(3, 1))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            b"data: [1, 2]\n\n",
            "unexpected 'message' event: TypeError: list indices must be integers or slices, not str",
        ),
        (b'data: {"text": "Hi"}\n\n', "unexpected 'message' event: KeyError: 'type'"),
        (
            b'data: {"type": "done", "input_tokens": "abc", "output_tokens": 1}\n\n',
            "unexpected end of the stream: ValueError: invalid literal for int() with base 10: 'abc'",
        ),
        (
            b'data: {"type": "done", "output_tokens": 1}\n\n',
            "unexpected end of the stream: KeyError: 'input_tokens'",
        ),
    ],
    ids=["event-list", "event-missing-field", "finish-bad-count", "finish-missing-field"],
)
def test_what_a_mapping_raises_is_an_upstream_error_naming_it(body: bytes, message: str) -> None:
    # the finish cases escaped as a bare ValueError or KeyError
    with pytest.raises(ModelError) as info:
        stream(body)
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message == message
    assert isinstance(info.value.__cause__, (TypeError, KeyError, ValueError))


def json_lines(chunks: Iterable[bytes], *, idle_timeout: float | None) -> Generator[Event, None, None]:
    """One JSON object per line (nothing is slow here: no idle timeout)."""
    for line in b"".join(chunks).splitlines():
        if line.strip():
            yield Event("message", json.loads(line))


LINES = b'{"type": "text", "text": "Hi"}\n{"type": "done", "input_tokens": 3, "output_tokens": 1}\n'


def test_a_framing_of_its_own_streams_a_body_of_its_media_type() -> None:
    # a body starting with "{" that was not text/event-stream was taken for a JSON document
    transport = MemoryTransport(Reply.of(LINES, piece=9, headers={"Content-Type": "application/x-ndjson"}))
    model = StrictModel(transport, json_lines, "application/x-ndjson")
    parts = list(model.stream(Request(messages=[user_message("hi")]), Context()))
    assert parts == [StreamPart.text_delta("Hi"), StreamPart.step_finish(FinishReason.STOP, Usage(3, 1))]
    assert transport.sent[0].reused is True


def test_a_json_document_of_another_type_is_still_no_stream() -> None:
    transport = MemoryTransport(Reply.of(LINES, headers={"Content-Type": "application/json"}))
    model = StrictModel(transport, json_lines, "application/x-ndjson")
    with pytest.raises(ModelError) as info:
        list(model.stream(Request(messages=[user_message("hi")]), Context()))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert info.value.message.startswith("the server answered with a JSON document, not an event stream")
