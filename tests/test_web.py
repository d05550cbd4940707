"""agentcore.integrations.web: Server-Sent Events bytes from a run, and closing them cancels the run.

Also holds the helpers the example and browser tests share: reading SSE events
from a ``requests`` response as they arrive, and a slow Anthropic upstream.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import requests

from agentcore import (
    Canceled,
    Compaction,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    Reasoning,
    Request,
    RunError,
    StreamPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    run,
    user_message,
)
from agentcore.caching import CacheCause, CacheReport, PrefixChange
from agentcore.integrations.web import (
    CONTENT_TYPE,
    HEARTBEAT,
    SSE_HEADERS,
    SSEStream,
    error_to_dict,
    part_to_dict,
    sse_event,
    sse_stream,
)
from agentcore.testing import ScriptedModel
from agentcore.transport.http import HTTPTransport, new_session
from tests.conftest import wait_for_threads
from tests.localserver import LocalServer, Pause, Reply, json_reply
from tests.loop_helpers import FuncTool, wait_until

# --- shared helpers -----------------------------------------------------------


class Add:
    """A tool that adds two numbers."""

    definition = ToolDefinition(
        name="add",
        description="Add two numbers.",
        input_schema=json.dumps(
            {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            }
        ),
    )

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        return str(arguments["a"] + arguments["b"])


def add_script() -> list[Any]:
    """Two steps: a call to ``add``, then the answer in two deltas."""
    return [
        [
            StreamPart.tool_call_event(ToolCall(id="c1", name="add", input='{"a": 2, "b": 3}')),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=50, output=10)),
        ],
        [
            StreamPart.text_delta("2 + 3 = "),
            StreamPart.text_delta("5"),
            StreamPart.step_finish(FinishReason.STOP, Usage(input=70, output=8, cache_read=20)),
        ],
    ]


class Endless:
    """A scripted step that streams text every ``interval`` seconds until cancelled.

    ``started`` is set with the first part, ``cancelled`` once the run's context
    was seen cancelled; ``sent`` counts the parts handed to the loop.
    """

    def __init__(self, interval: float = 0.02, limit: int = 1500) -> None:
        self.interval = interval
        self.limit = limit
        self.started = threading.Event()
        self.cancelled = threading.Event()
        self.sent = 0

    def __call__(self, request: Any, ctx: Context) -> Iterator[StreamPart]:
        try:
            for index in range(self.limit):
                self.sent += 1
                yield StreamPart.text_delta(f"tick {index} ")
                self.started.set()
                if ctx.wait(self.interval):
                    return
            yield StreamPart.step_finish(FinishReason.STOP)
        finally:
            if ctx.cancelled:
                self.cancelled.set()


class Quiet:
    """A step that sends one delta, then is silent until ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.cancelled = threading.Event()

    def __call__(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        yield StreamPart.text_delta("a")
        while not self.release.is_set():
            if ctx.wait(0.005):
                self.cancelled.set()
                return
        yield StreamPart.text_delta("b")
        yield StreamPart.step_finish(FinishReason.STOP)


def read_raw_events(response: requests.Response) -> Iterator[bytes]:
    """Yield each event of a streaming response (up to its blank line, which
    is left out) as it arrives: a ``data:`` line, or a ``:`` comment.

    Reads with ``read1`` (a whole chunk of a chunked body, or what arrived of
    a plain one), so an event is seen as soon as the server sent it, also from
    servers that do not use chunked encoding (wsgiref, Django's runserver).
    """
    buffer = b""
    while True:
        chunk = response.raw.read1(65536)
        if not chunk:
            assert buffer == b"", f"the stream ended inside an event: {buffer!r}"
            return
        buffer += chunk
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            assert event.startswith((b"data: ", b":")), event
            assert b"\n" not in event, event
            yield event


def read_events(response: requests.Response) -> Iterator[dict[str, Any]]:
    """Yield the JSON of each ``data:`` event of a streaming response as it
    arrives, skipping comments (heartbeats) as ``EventSource`` does."""
    for event in read_raw_events(response):
        if event.startswith(b"data: "):
            yield json.loads(event[len(b"data: ") :])


class KeepStreams:
    """Replaces a module's ``sse_stream`` to keep every stream it makes alive.

    A dropped stream's reader is collected and its finalizer cancels the run,
    which would hide a missing ``close()``; holding the streams leaves
    ``close()`` as the only way the run can be cancelled.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
        self.streams: list[SSEStream] = []
        monkeypatch.setattr(module, "sse_stream", self)

    def __call__(self, reader: Iterable[StreamPart], **options: Any) -> SSEStream:
        stream = sse_stream(reader, **options)
        self.streams.append(stream)
        return stream


TEXT_BLOCK = {"type": "text", "text": ""}


def text_delta(text: str) -> dict[str, str]:
    return {"type": "text_delta", "text": text}


def anthropic_event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def slow_anthropic_reply(deltas: int = 300, pause: float = 0.05) -> Reply:
    """An Anthropic Messages stream that sends one text delta every ``pause`` seconds.

    The whole reply takes ``deltas * pause`` seconds; a test that disconnects
    early must see the upstream connection closed long before that.
    """
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    actions: list[Any] = [
        anthropic_event(start)
        + anthropic_event(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        )
    ]
    for index in range(deltas):
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f"w{index} "},
        }
        actions += [anthropic_event(delta), Pause(pause)]
    actions.append(
        anthropic_event({"type": "content_block_stop", "index": 0})
        + anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": deltas},
            }
        )
        + anthropic_event({"type": "message_stop"})
    )
    return Reply(actions=actions)


def add_options() -> LoopOptions:
    return LoopOptions(model=ScriptedModel(add_script()), messages=[user_message("2+3?")], tools=[Add()])


# --- part_to_dict and the event bytes -------------------------------------------

EXPECTED_ADD_RUN = (
    b'data: {"kind":"tool-call","tool_call":{"id":"c1","name":"add","input":"{\\"a\\": 2, \\"b\\": 3}"}}\n\n'
    b'data: {"kind":"step-finish","finish_reason":"tool-calls",'
    b'"usage":{"input":50,"output":10,"cache_read":0,"cache_write":0}}\n\n'
    b'data: {"kind":"tool-result",'
    b'"tool_result":{"tool_call_id":"c1","name":"add","content":"5","is_error":false}}\n\n'
    b'data: {"kind":"text-delta","text":"2 + 3 = "}\n\n'
    b'data: {"kind":"text-delta","text":"5"}\n\n'
    b'data: {"kind":"step-finish","finish_reason":"stop",'
    b'"usage":{"input":70,"output":8,"cache_read":20,"cache_write":0}}\n\n'
    b'data: {"kind":"finish","finish_reason":"stop",'
    b'"total_usage":{"input":120,"output":18,"cache_read":20,"cache_write":0}}\n\n'
)


def test_a_scripted_run_becomes_these_exact_bytes() -> None:
    reader = run(
        LoopOptions(model=ScriptedModel(add_script()), messages=[user_message("2+3?")], tools=[Add()])
    )
    events = list(sse_stream(reader))
    assert b"".join(events) == EXPECTED_ADD_RUN
    assert len(events) == 7  # one event per part
    assert json.loads(events[-1][len(b"data: ") :])["kind"] == "finish"  # the terminal part is last
    assert reader.closed


def test_the_stream_stops_after_the_terminal_part_and_closes_the_reader() -> None:
    reader = run(
        LoopOptions(model=ScriptedModel(add_script()), messages=[user_message("2+3?")], tools=[Add()])
    )
    stream = sse_stream(reader)
    kinds = [json.loads(event[6:])["kind"] for event in stream]
    assert kinds[-1] == "finish"
    assert kinds.count("finish") == 1
    assert reader.closed
    with pytest.raises(StopIteration):
        next(stream)


def test_the_run_result_is_still_there_after_streaming() -> None:
    # For code that stores the history once the browser has the answer.
    for _ in range(20):
        reader = run(add_options())
        for _event in sse_stream(reader):
            pass
        result = reader.result()
        assert result.text == "2 + 3 = 5"
        assert len(result.messages) == 4


def test_content_type_and_headers() -> None:
    assert CONTENT_TYPE == "text/event-stream"
    assert SSE_HEADERS == {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (StreamPart.text_delta("hi"), {"kind": "text-delta", "text": "hi"}),
        (
            StreamPart.tool_call_event(ToolCall("c1", "add", '{"a":1}')),
            {"kind": "tool-call", "tool_call": {"id": "c1", "name": "add", "input": '{"a":1}'}},
        ),
        (
            StreamPart.tool_result_event(ToolResult("c1", "add", "boom", True)),
            {
                "kind": "tool-result",
                "tool_result": {"tool_call_id": "c1", "name": "add", "content": "boom", "is_error": True},
            },
        ),
        (StreamPart.reasoning_delta("Hmm, "), {"kind": "reasoning-delta", "text": "Hmm, "}),
        (
            StreamPart.reasoning_event(Reasoning(text="Hmm, 2 + 3.", signature="c2ln", format="anthropic")),
            {
                "kind": "reasoning",
                "reasoning": {"text": "Hmm, 2 + 3.", "signature": "c2ln", "format": "anthropic"},
            },
        ),
        (
            StreamPart.reasoning_event(Reasoning(data="ZW5j", id="rs_1", provider_data='[{"type": "x"}]')),
            {
                "kind": "reasoning",
                "reasoning": {"text": "", "data": "ZW5j", "id": "rs_1", "provider_data": '[{"type": "x"}]'},
            },
        ),
        (
            StreamPart.tool_call_event(
                ToolCall("c1", "add", "{}", provider_data='{"sig": "x"}', origin="h:1")
            ),
            {
                "kind": "tool-call",
                "tool_call": {
                    "id": "c1",
                    "name": "add",
                    "input": "{}",
                    "provider_data": '{"sig": "x"}',
                    "origin": "h:1",
                },
            },
        ),
        (
            StreamPart.step_finish(FinishReason.LENGTH, Usage(1, 2, 3, 4)),
            {
                "kind": "step-finish",
                "finish_reason": "length",
                "usage": {"input": 1, "output": 2, "cache_read": 3, "cache_write": 4},
            },
        ),
        (
            StreamPart.step_finish(
                FinishReason.STOP,
                Usage(1, 2, 3, 4),
                CacheReport(
                    messages=5,
                    shared_messages=2,
                    previous_messages=3,
                    change=PrefixChange.MESSAGE,
                    changed_at=2,
                    seconds_since_previous=1.5,
                    cache_read=3,
                    expected_read=900,
                    cause=CacheCause.PREFIX_CHANGED,
                    reason="message 2 changed",
                ),
            ),
            {
                "kind": "step-finish",
                "finish_reason": "stop",
                "usage": {"input": 1, "output": 2, "cache_read": 3, "cache_write": 4},
                "cache": {
                    "messages": 5,
                    "shared_messages": 2,
                    "previous_messages": 3,
                    "change": "message",
                    "changed_at": 2,
                    "seconds_since_previous": 1.5,
                    "cache_read": 3,
                    "expected_read": 900,
                    "cause": "prefix-changed",
                    "reason": "message 2 changed",
                },
            },
        ),
        (
            StreamPart.compaction_event(
                Compaction("Summarize", (1, 2), 7, 5, 9000, 2100, "Pages 1 and 2.", Usage(800, 40))
            ),
            {
                "kind": "compaction",
                "compaction": {
                    "policy": "Summarize",
                    "removed": [1, 2],
                    "messages_before": 7,
                    "messages_after": 5,
                    "tokens_before": 9000,
                    "tokens_after": 2100,
                    "summary": "Pages 1 and 2.",
                    "usage": {"input": 800, "output": 40, "cache_read": 0, "cache_write": 0},
                    "refused": False,
                },
            },
        ),
        (
            StreamPart.finish(FinishReason.STEP_LIMIT, Usage(5, 6)),
            {
                "kind": "finish",
                "finish_reason": "step-limit",
                "total_usage": {"input": 5, "output": 6, "cache_read": 0, "cache_write": 0},
            },
        ),
        (
            StreamPart.error(Canceled("run canceled"), Usage(7, 8), FinishReason.CANCELED),
            {
                "kind": "error",
                "finish_reason": "canceled",
                "total_usage": {"input": 7, "output": 8, "cache_read": 0, "cache_write": 0},
                "err": "run canceled",
                "error_type": "Canceled",
                "error_class": None,
                "status": None,
                "retry_after": None,
            },
        ),
    ],
)
def test_part_to_dict(part: StreamPart, expected: dict[str, Any]) -> None:
    assert part_to_dict(part) == expected
    assert json.loads(json.dumps(part_to_dict(part))) == expected  # plain JSON values only


def test_reasoning_parts_become_events_in_order_and_the_block_rebuilds_exactly() -> None:
    block = Reasoning(
        text="2 + 3 is 5.", signature="c2lnbmF0dXJl", format="anthropic", origin="api.anthropic.com"
    )
    model = ScriptedModel(
        [
            [
                StreamPart.reasoning_delta("2 + 3 "),
                StreamPart.reasoning_delta("is 5."),
                StreamPart.reasoning_event(block),
                StreamPart.text_delta("5"),
                StreamPart.step_finish(FinishReason.STOP, Usage(input=9, output=4)),
            ]
        ]
    )
    reader = run(LoopOptions(model=model, messages=[user_message("2+3?")]))
    events = [json.loads(event.removeprefix(b"data: ")) for event in sse_stream(reader)]
    assert [event["kind"] for event in events] == [
        "reasoning-delta",
        "reasoning-delta",
        "reasoning",
        "text-delta",
        "step-finish",
        "finish",
    ]
    assert events[0] == {"kind": "reasoning-delta", "text": "2 + 3 "}
    assert Reasoning.from_dict(events[2]["reasoning"]) == block
    assert reader.result().messages[-1].reasoning == [block]


def test_a_model_error_carries_its_class_retry_after_and_status() -> None:
    err = ModelError(ErrorClass.RATE_LIMITED, retry_after=2.5, message="slow down", status=429)
    assert error_to_dict(err) == {
        "err": "rate limited: slow down (HTTP 429) (retry after 2.5 s)",
        "error_type": "ModelError",
        "error_class": "rate_limited",
        "status": 429,
        "retry_after": 2.5,
    }


def test_the_cli_json_output_is_the_same_part_form() -> None:
    import io

    from agentcore.integrations.cli_output import JsonPrinter

    for err in (
        ModelError(ErrorClass.AUTH, message="bad key", status=401),
        ModelError(ErrorClass.RATE_LIMITED, retry_after=3.0),
        Canceled("run canceled"),
    ):
        part = StreamPart.error(err, Usage(1, 2), FinishReason.ERROR)
        out = io.StringIO()
        JsonPrinter(out).part(part)
        assert json.loads(out.getvalue()) == part_to_dict(part)


def test_a_failed_run_ends_with_one_error_event() -> None:
    failure = ModelError(ErrorClass.OVERLOADED, message="try later", status=529)
    reader = run(LoopOptions(model=ScriptedModel([failure]), messages=[user_message("hi")], max_retries=0))
    events = [json.loads(event[6:]) for event in sse_stream(reader)]
    assert events == [
        {
            "kind": "error",
            "finish_reason": "error",
            "total_usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
            "err": "overloaded: try later (HTTP 529)",
            "error_type": "ModelError",
            "error_class": "overloaded",
            "status": 529,
            "retry_after": None,
        }
    ]


def test_parts_sent_before_a_failure_come_first() -> None:
    model = ScriptedModel([[StreamPart.text_delta("par")]])  # cut before its step-finish
    reader = run(LoopOptions(model=model, messages=[user_message("hi")], max_retries=0))
    events = [json.loads(event[6:]) for event in sse_stream(reader)]
    assert [e["kind"] for e in events] == ["text-delta", "error"]
    assert events[-1]["error_class"] == "transient"


def test_an_error_with_a_broken_str_still_becomes_an_event() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert error_to_dict(Broken())["err"] == "Broken"


def test_line_breaks_stay_inside_one_data_line_and_text_is_utf8() -> None:
    event = sse_event(part_to_dict(StreamPart.text_delta("a\nb\r\nc \u2713 h\u00e9")))
    assert event == 'data: {"kind":"text-delta","text":"a\\nb\\r\\nc \u2713 h\u00e9"}\n\n'.encode()
    assert event.count(b"\n") == 2


def test_a_lone_surrogate_is_escaped_instead_of_failing() -> None:
    event = sse_event(part_to_dict(StreamPart.text_delta("x\ud83d \u00e9")))
    assert event == b'data: {"kind":"text-delta","text":"x\\ud83d \\u00e9"}\n\n'


def test_any_iterable_of_parts_works() -> None:
    parts = [StreamPart.text_delta("a"), StreamPart.finish(FinishReason.STOP), StreamPart.text_delta("after")]
    events = list(sse_stream(parts))
    assert [json.loads(e[6:])["kind"] for e in events] == ["text-delta", "finish"]


# --- heartbeats ----------------------------------------------------------------


def quiet_run(step: Quiet) -> Any:
    return run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("go")]))


def test_silence_is_filled_with_heartbeats() -> None:
    step = Quiet()
    chunks: list[bytes] = []
    with sse_stream(quiet_run(step), heartbeat=0.01) as body:
        for chunk in body:
            chunks.append(chunk)
            if chunks.count(HEARTBEAT) == 2:
                step.release.set()
    assert HEARTBEAT == b": heartbeat\n\n"
    assert chunks[:2] == [b'data: {"kind":"text-delta","text":"a"}\n\n', HEARTBEAT]
    events = [json.loads(c[6:])["kind"] for c in chunks if c != HEARTBEAT]
    assert events == ["text-delta", "text-delta", "step-finish", "finish"]
    assert not step.cancelled.is_set()


def test_without_heartbeats_silence_stays_silent() -> None:
    step = Quiet()
    body = sse_stream(quiet_run(step), heartbeat=None)
    assert next(body) == b'data: {"kind":"text-delta","text":"a"}\n\n'
    second: list[bytes] = []
    waiting = threading.Thread(target=lambda: second.append(next(body)))
    waiting.start()
    waiting.join(0.05)
    assert second == []
    step.release.set()
    waiting.join(5)
    assert second == [b'data: {"kind":"text-delta","text":"b"}\n\n']
    body.close()


def test_an_iterable_that_is_not_a_reader_gets_no_heartbeats() -> None:
    """Only a reader can be waited on with a time limit."""

    def parts() -> Iterator[StreamPart]:
        yield StreamPart.text_delta("a")
        threading.Event().wait(0.05)  # a silence a heartbeat of 0.01 s would fill
        yield StreamPart.finish(FinishReason.STOP)

    chunks = list(sse_stream(parts(), heartbeat=0.01))
    assert [json.loads(c[6:])["kind"] for c in chunks] == ["text-delta", "finish"]


@pytest.mark.parametrize("heartbeat", [0, -1.0, float("nan")])
def test_heartbeat_must_be_positive(heartbeat: float) -> None:
    with pytest.raises(ValueError, match="heartbeat must be a positive number of seconds or None"):
        sse_stream([], heartbeat=heartbeat)


# --- closing the stream cancels the run -----------------------------------------


def test_closing_the_stream_mid_run_closes_the_reader_and_cancels_the_run() -> None:
    step = Endless()
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("go")]))
    stream = sse_stream(reader)
    first = json.loads(next(stream)[6:])
    assert first == {"kind": "text-delta", "text": "tick 0 "}
    stream.close()
    assert reader.closed
    assert step.cancelled.wait(2.0)
    assert wait_for_threads("agentcore-stream") == 0
    with pytest.raises(StopIteration):
        next(stream)
    with pytest.raises(RunError) as info:
        reader.result()
    assert isinstance(info.value.err, Canceled)


def test_closing_a_stream_that_never_started_still_cancels_the_run() -> None:
    # A generator closed before its first next() skips its finally block; SSEStream does not.
    step = Endless()
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("go")]))
    assert step.started.wait(2.0)
    stream = sse_stream(reader)
    stream.close()
    assert reader.closed
    assert step.cancelled.wait(2.0)
    assert wait_for_threads("agentcore-stream") == 0


def test_the_stream_is_a_context_manager() -> None:
    step = Endless()
    reader = run(LoopOptions(model=ScriptedModel([step]), messages=[user_message("go")]))
    with sse_stream(reader) as stream:
        next(stream)
    assert step.cancelled.wait(2.0)
    assert wait_for_threads("agentcore-stream") == 0


def test_closing_the_stream_closes_the_upstream_http_response(server: LocalServer) -> None:
    from agentcore.providers.anthropic import AnthropicModel

    server.add(slow_anthropic_reply())
    model = AnthropicModel("claude-test", api_key="test", base_url=server.url)
    stream = sse_stream(run(LoopOptions(model=model, messages=[user_message("go")])))
    assert json.loads(next(stream)[6:]) == {"kind": "text-delta", "text": "w0 "}
    started = time.monotonic()
    stream.close()
    assert wait_until(lambda: server.disconnects == 1, timeout=5.0)
    assert time.monotonic() - started < 5.0  # long before the 15 s reply would end
    assert wait_for_threads("agentcore-stream") == 0


def test_no_api_key_reaches_the_browser(server: LocalServer) -> None:
    from agentcore.providers.anthropic import AnthropicModel

    key = "sk-ant-api03-SECRET-0123456789abcdef"
    body = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {key}"}}
    server.add(json_reply(401, body))
    with new_session() as session:  # closed here: no pooled connection outlives the test
        model = AnthropicModel(
            "claude-test", api_key=key, base_url=server.url, transport=HTTPTransport(session)
        )
        data = b"".join(sse_stream(run(LoopOptions(model=model, messages=[user_message("hi")]))))
    assert server.requests[0]["headers"]["x-api-key"] == key  # it was sent upstream ...
    assert key.encode() not in data  # ... and never downstream
    assert b"SECRET" not in data
    error = json.loads(data[6:])
    assert error["error_class"] == "auth"
    assert error["status"] == 401


def test_a_compaction_is_an_event_before_the_step_it_preceded() -> None:
    from agentcore.compaction import SlidingWindow

    fetch = FuncTool("fetch", lambda _arguments, _ctx: "z" * 900)
    steps = [
        [
            StreamPart.tool_call_event(ToolCall(f"c{n}", "fetch")),
            StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=400 * n)),
        ]
        for n in (1, 2)
    ]
    model = ScriptedModel([*steps, [StreamPart.text_delta("ok"), StreamPart.step_finish(FinishReason.STOP)]])
    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        tools=[fetch],
        history_policy=SlidingWindow(max_tokens=500),
    )
    data = b"".join(sse_stream(run(options), heartbeat=None))
    events = [json.loads(chunk[6:]) for chunk in data.split(b"\n\n") if chunk]
    kinds = [event["kind"] for event in events]
    assert kinds == [
        "tool-call",
        "step-finish",
        "tool-result",
        "tool-call",
        "step-finish",
        "tool-result",
        "compaction",
        "text-delta",
        "step-finish",
        "finish",
    ]
    compaction = events[6]["compaction"]
    assert (compaction["policy"], compaction["removed"]) == ("SlidingWindow", [1, 2])
