"""SSE framing (agentcore/transport/sse.py), pure: ``iter_events`` over lists of reads.

Faults 17 (framing variants) and 18 (UTF-8 split across reads) of design.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from agentcore.errors import ErrorClass, ModelError
from agentcore.transport.sse import DONE, Event, iter_events

BASELINE = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n'
    b"\n"
    b'data: {"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":null}]}\n'
    b"\n"
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n'
    b"\n"
    b"data: [DONE]\n"
    b"\n"
)

EXPECTED = [
    Event(
        "message",
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": "Hello"}, "finish_reason": None}
            ]
        },
    ),
    Event("message", {"choices": [{"index": 0, "delta": {"content": " world"}, "finish_reason": None}]}),
    Event("message", {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    Event("message", DONE),
]

BOM = b"\xef\xbb\xbf"


def events(chunks: Iterable[bytes], **kwargs: Any) -> list[Event]:
    return list(iter_events(chunks, **kwargs))


def collect(items: Iterator[Event], into: list[Event]) -> None:
    """Append every event to ``into`` (so that what came before a failure is kept)."""
    into.extend(items)


def pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def text_and_finish(evs: list[Event]) -> tuple[str, list[str]]:
    """What an OpenAI adapter makes of the events: the text and the finish reasons."""
    text = ""
    reasons: list[str] = []
    for ev in evs:
        if ev.data == DONE or ev.event != "message":
            continue
        for choice in ev.data["choices"]:
            text += choice["delta"].get("content") or ""
            if choice["finish_reason"]:
                reasons.append(choice["finish_reason"])
    return text, reasons


def test_baseline() -> None:
    evs = events([BASELINE])
    assert evs == EXPECTED
    assert text_and_finish(evs) == ("Hello world", ["stop"])


CRLF = BASELINE.replace(b"\n", b"\r\n")
CR = BASELINE.replace(b"\n", b"\r")
NO_SPACE = BASELINE.replace(b"data: ", b"data:")
MULTILINE = BASELINE.replace(
    b'data: {"choices":[{"index":0,"delta":{"role"',
    b'data: {"choices":[{"index":0,\ndata: "delta":{"role"',
)
NOISE = b": OPENROUTER PROCESSING\n\n" + BASELINE.replace(b"data: {", b"id: 7\ndata: {", 1).replace(
    b"\n\ndata: {", b'\n\n: ping\n\nretry: 3000\n\nevent: ping\ndata: {"type":"ping"}\n\ndata: {', 1
)
BOM_BODY = BOM + BASELINE


@pytest.mark.parametrize(
    "body",
    [BASELINE, CRLF, CR, NO_SPACE, MULTILINE, BOM_BODY, BOM + CRLF, BOM + CR],
    ids=["lf", "crlf", "cr", "no-space", "multi-line", "bom", "bom-crlf", "bom-cr"],
)
@pytest.mark.parametrize("read_size", [0, 1, 2, 3, 7, 64])
def test_framing_variants_give_the_same_events(body: bytes, read_size: int) -> None:
    chunks = [body] if read_size == 0 else pieces(body, read_size)
    evs = events(chunks)
    assert evs == EXPECTED
    assert text_and_finish(evs) == ("Hello world", ["stop"])


def test_variant_bodies_are_what_their_names_say() -> None:
    assert b"\r\n\r\n" in CRLF
    assert b"\n" not in CRLF.replace(b"\r\n", b"")
    assert b"\n" not in CR
    assert b"\r\r" in CR
    assert b"data:{" in NO_SPACE
    assert b"data:[DONE]" in NO_SPACE
    assert b'data: {"choices":[{"index":0,\ndata: "delta":{"role":"assistant","content":"Hello"}' in MULTILINE
    for noise in (b": OPENROUTER PROCESSING\n\n", b"id: 7\n", b": ping\n\n", b"retry: 3000\n\n"):
        assert noise in NOISE


def test_crlf_split_across_two_reads() -> None:
    cut = CRLF.index(b"}\r\n\r\n") + 2  # ...}\r | \n\r\n...
    assert CRLF[:cut].endswith(b"}\r")
    assert CRLF[cut:].startswith(b"\n\r\n")
    assert events([CRLF[:cut], CRLF[cut:]]) == EXPECTED


@pytest.mark.parametrize("body", [BASELINE, CRLF, CR, MULTILINE, NOISE, BOM_BODY], ids=lambda b: repr(b[:12]))
def test_framing_every_two_read_split(body: bytes) -> None:
    expected = events([body])
    for cut in range(len(body) + 1):
        assert events([body[:cut], body[cut:]]) == expected, cut


@pytest.mark.parametrize("seed", range(20))
def test_framing_random_read_sizes(seed: int) -> None:
    rng = random.Random(seed)
    for body in (CRLF, CR, NOISE, BOM + CRLF):
        chunks, i = [], 0
        while i < len(body):
            size = rng.randint(0, 9)  # empty reads included
            chunks.append(body[i : i + size])
            i += size
        assert events(chunks) == events([body])


@pytest.mark.parametrize("read_size", [0, 1, 5])
def test_noise_between_events(read_size: int) -> None:
    chunks = [NOISE] if read_size == 0 else pieces(NOISE, read_size)
    evs = events(chunks)
    # Comments, id-only and retry-only blocks never surface and are never JSON-decoded;
    # the Anthropic-style ping pair is an event named "ping".
    assert evs == [EXPECTED[0], Event("ping", {"type": "ping"}), *EXPECTED[1:]]
    assert text_and_finish(evs) == ("Hello world", ["stop"])


@pytest.mark.parametrize(
    "chunks",
    [
        [BOM, BASELINE],
        [b"\xef", b"\xbb", b"\xbf", BASELINE],
        [b"\xef", b"\xbb\xbf" + BASELINE],
        [b"\xef\xbb", b"\xbf" + BASELINE],
        [b"", b"\xef", b"", b"\xbb\xbfd", BASELINE[1:]],
        pieces(BOM_BODY, 1),
        pieces(BOM_BODY, 2),
    ],
    ids=["whole", "bytewise-bom", "1+2", "2+1", "empty-reads", "1-byte-reads", "2-byte-reads"],
)
def test_bom_split_across_reads(chunks: list[bytes]) -> None:
    assert b"".join(chunks) == BOM_BODY
    assert events(chunks) == EXPECTED


def test_only_the_leading_bom_is_stripped() -> None:
    body = b'data: {"a":"\xef\xbb\xbf"}\n\n'
    assert events([BOM + body]) == [Event("message", {"a": "\ufeff"})]


def test_only_one_space_after_the_colon_is_stripped() -> None:
    body = b'event:  spaced\ndata:  {"a": 1}\n\nevent:tight\ndata:{"b":2}\n\n'
    assert events([body]) == [Event(" spaced", {"a": 1}), Event("tight", {"b": 2})]


def test_event_names_are_kept() -> None:
    body = (
        b"event: message_start\n"
        b'data: {"type":"message_start"}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta"}\n\n'
        b"event: message_stop\n"
        b'data: {"type":"message_stop"}\n\n'
    )
    assert events(pieces(body, 3)) == [
        Event("message_start", {"type": "message_start"}),
        Event("content_block_delta", {"type": "content_block_delta"}),
        Event("message_stop", {"type": "message_stop"}),
    ]


SPLIT_UTF8 = (
    'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"héllo 你好 👋"},'
    '"finish_reason":null}]}\n\n'
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    "data: [DONE]\n\n"
).encode()


def splits_inside(body: bytes, char: str, size: int) -> bool:
    """True when reads of ``size`` bytes put a boundary inside ``char``."""
    start = body.index(char.encode())
    end = start + len(char.encode())
    return any(start < b < end for b in range(0, len(body), size))


@pytest.mark.parametrize("read_size", [1, 7])
def test_utf8_split_across_reads(read_size: int) -> None:
    chunks = pieces(SPLIT_UTF8, read_size)
    if read_size == 7:
        # The case asks for boundaries inside é (2 bytes), 你 (3) and 👋 (4).
        assert splits_inside(SPLIT_UTF8, "é", 7)
        assert splits_inside(SPLIT_UTF8, "你", 7)
        assert splits_inside(SPLIT_UTF8, "👋", 7)
    evs = events(chunks)
    text, reasons = text_and_finish(evs)
    assert text == "héllo 你好 👋"
    assert "\ufffd" not in text
    assert reasons == ["stop"]
    assert evs[-1] == Event("message", DONE)


def test_utf8_every_two_read_split() -> None:
    for cut in range(len(SPLIT_UTF8) + 1):
        halves = [SPLIT_UTF8[:cut], SPLIT_UTF8[cut:]]
        assert text_and_finish(events(halves)) == ("héllo 你好 👋", ["stop"]), cut


def test_anthropic_tool_input_split_inside_a_character() -> None:
    body = (
        "event: content_block_delta\n"
        'data: {"type":"content_block_delta","index":1,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"city\\":\\"Zürich\\"}"}}\n\n'
    ).encode()
    u = body.index("ü".encode())
    evs = events([body[: u + 1], body[u + 1 :]])
    assert evs == [
        Event(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city":"Zürich"}'},
            },
        )
    ]
    assert json.loads(evs[0].data["delta"]["partial_json"]) == {"city": "Zürich"}


@pytest.mark.parametrize(
    "cut_body",
    [
        b'data: {"a":1}\n\ndata: {"choices":[{"ind',
        b'data: {"a":1}\n\ndata: {"choices":[{"index":0}',
        b'data: {"a":1}\n\ndata: {"choices":[{"index":0,\n',
        b'data: {"a":1}\r\n\r\ndata: {"choices":[{"index":0,\r\n',
        b'data: {"a":1}\r\rdata: {"choices":[{"index":0,\r',
        b'data: {"a":1}\n\ndata: {"choices":[{"index":0,\ndata: "delta":{',
    ],
)
@pytest.mark.parametrize("read_size", [0, 1, 4])
def test_final_block_cut_mid_json_at_eof_is_transient(cut_body: bytes, read_size: int) -> None:
    chunks = [cut_body] if read_size == 0 else pieces(cut_body, read_size)
    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events(chunks), got)
    assert got == [Event("message", {"a": 1})]
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert isinstance(info.value.__cause__, json.JSONDecodeError)
    assert "cut" in str(info.value)


@pytest.mark.parametrize("read_size", [0, 1, 3])
def test_malformed_json_mid_stream_is_upstream(read_size: int) -> None:
    body = b'data: {"a":1}\n\ndata: {not json}\n\ndata: {"b":2}\n\n'
    chunks = [body] if read_size == 0 else pieces(body, read_size)
    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events(chunks), got)
    assert got == [Event("message", {"a": 1})]
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert isinstance(info.value.__cause__, json.JSONDecodeError)
    assert "{not json}" in str(info.value)


def test_an_event_nested_too_deeply_is_upstream_not_a_recursion_error() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events([b'data: {"a":1}\n\n', b"data: " + deep + b"\n\n"]), got)
    assert got == [Event("message", {"a": 1})]
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert isinstance(info.value.__cause__, RecursionError)
    assert "nested too deeply" in str(info.value)


def test_malformed_json_in_a_complete_last_block_is_upstream() -> None:
    with pytest.raises(ModelError) as info:
        events([b'data: {"a":1}\n\n', b"data: {oops}\n\n"])
    assert info.value.error_class is ErrorClass.UPSTREAM


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"text":"\xff\xfe"}\n\n',
        b'data: {"text":"\xc3"}\n\n',  # a lone lead byte
        b"event: \x80\ndata: {}\n\n",
        b": comment \xff\n\n",
    ],
)
def test_invalid_utf8_is_a_model_error(body: bytes) -> None:
    with pytest.raises(ModelError) as info:
        events(pieces(body, 2))
    assert info.value.error_class is ErrorClass.UPSTREAM
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    assert "UTF-8" in str(info.value)


def test_invalid_utf8_never_escapes_as_unicode_decode_error() -> None:
    try:
        events([b'data: {"a":1}\n\n', b"data: \xff\n\n"])
    except ModelError:
        pass
    except Exception as exc:
        pytest.fail(f"a foreign exception escaped: {exc!r}")
    else:
        pytest.fail("invalid UTF-8 was accepted")


@pytest.mark.parametrize("empty", [b"data\n\n", b"data:\n\n", b"data: \n\n", b"event: x\ndata\n\n"])
def test_empty_data_is_skipped(empty: bytes) -> None:
    body = b'data: {"a":1}\n\n' + empty + b'data: {"b":2}\n\n'
    assert events([body]) == [Event("message", {"a": 1}), Event("message", {"b": 2})]


def test_blocks_without_data_are_skipped() -> None:
    body = b"event: ping\n\nid: 1\n\nretry: 10\n\n:\n\n\n\n" + b'data: {"x":true}\n\n'
    assert events([body]) == [Event("message", {"x": True})]


def test_done_marker() -> None:
    for body in (b"data: [DONE]\n\n", b"data:[DONE]\n\n", b"data: [DONE]\r\n\r\n"):
        assert events([body]) == [Event("message", "[DONE]")]
    assert DONE == "[DONE]"


def test_empty_stream() -> None:
    assert events([]) == []
    assert events([b"", b""]) == []
    assert events([b"\n\n"]) == []


def test_errors_from_the_reads_pass_through_unchanged() -> None:
    failure = ModelError(ErrorClass.TRANSIENT, message="connection reset")

    def reads() -> Iterator[bytes]:
        yield b'data: {"a":1}\n\n'
        raise failure

    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events(reads()), got)
    assert info.value is failure
    assert got == [Event("message", {"a": 1})]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def timed(clock: FakeClock, reads: list[tuple[float, bytes]]) -> Iterator[bytes]:
    """Yield each read after advancing the fake clock by its delay (seconds)."""
    for delay, chunk in reads:
        clock.now += delay
        yield chunk


PING = b'event: ping\ndata: {"type":"ping"}\n\n'
CONTENT = b'event: content_block_delta\ndata: {"type":"content_block_delta"}\n\n'


def test_idle_timeout_pings_do_not_reset_it() -> None:
    clock = FakeClock()
    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events(timed(clock, [(0.2, PING)] * 50), idle_timeout=1.0, clock=clock), got)
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(info.value)
    assert got == [Event("ping", {"type": "ping"})] * len(got)
    assert 4 <= len(got) <= 5  # 1.0 s of pings at 0.2 s each
    assert clock.now == pytest.approx(1000.0 + 0.2 * (len(got) + 1))


def test_idle_timeout_comments_do_not_reset_it() -> None:
    clock = FakeClock()
    reads = [(0.1, CONTENT)] + [(0.3, b": keep-alive\n\n")] * 20
    got: list[Event] = []
    with pytest.raises(ModelError) as info:
        collect(iter_events(timed(clock, reads), idle_timeout=1.0, clock=clock), got)
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert [e.event for e in got] == ["content_block_delta"]
    assert clock.now == pytest.approx(1000.0 + 0.1 + 0.3 * 4)


def test_idle_timeout_content_events_reset_it() -> None:
    clock = FakeClock()
    reads = [(0.3, PING), (0.3, PING), (0.3, CONTENT)] * 20
    got = events(timed(clock, reads), idle_timeout=1.0, clock=clock)
    assert len(got) == 60
    assert clock.now == pytest.approx(1000.0 + 0.3 * 60)


def test_idle_timeout_counts_from_the_start() -> None:
    clock = FakeClock()
    with pytest.raises(ModelError) as info:
        events(timed(clock, [(1.5, CONTENT)]), idle_timeout=1.0, clock=clock)
    assert info.value.error_class is ErrorClass.TRANSIENT


def test_idle_timeout_none_never_fires() -> None:
    clock = FakeClock()
    got = events(timed(clock, [(1000.0, PING)] * 5), idle_timeout=None, clock=clock)
    assert len(got) == 5


def test_idle_timeout_not_exceeded_exactly_at_the_limit() -> None:
    clock = FakeClock()
    got = events(timed(clock, [(1.0, CONTENT)] * 3), idle_timeout=1.0, clock=clock)
    assert len(got) == 3


def test_idle_timeout_does_not_count_the_time_a_slow_consumer_takes() -> None:
    # The loop's worker waits for room in the queue while the reader is slow;
    # those waits happen between reads and are not the server being idle.
    clock = FakeClock()
    got = []
    for event in iter_events(timed(clock, [(0.1, CONTENT)] * 5), idle_timeout=1.0, clock=clock):
        got.append(event)
        clock.now += 10.0
    assert [e.event for e in got] == ["content_block_delta"] * 5


def test_idle_timeout_still_counts_a_slow_read_after_a_slow_consumer() -> None:
    clock = FakeClock()
    events = iter_events(timed(clock, [(0.1, CONTENT), (1.5, CONTENT)]), idle_timeout=1.0, clock=clock)
    assert next(events).event == "content_block_delta"
    clock.now += 10.0
    with pytest.raises(ModelError) as info:
        next(events)
    assert info.value.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        '{"a": 1}',
        '  {"a": [1, 2.5, null, true]}  ',  # whitespace around: the scanner leaves it, json.loads takes it
        "[1, 2]",
        '"just a string"',
        "42",
        "-0.5e3",
        "NaN",
        '{"a": "\\ud83d"}',  # a lone surrogate escape decodes as json.loads decodes it
        "\ufeff{}",  # a byte order mark inside the data: json.loads refuses it
        '{"a": 1} {"b": 2}',  # two values: json.loads refuses the extra data
        '{"a": 1',
        "nul",
        "",
    ],
)
def test_an_event_decodes_as_json_loads_decodes_it(data: str) -> None:
    """The scanner short path gives json.loads' value, or the error json.loads raises."""
    body = f"data: {data}\n\ndata: [DONE]\n\n".encode()
    try:
        expected: list[Any] = [json.loads(data), DONE] if data else [DONE]
    except ValueError:
        with pytest.raises(ModelError) as info:
            events([body])
        assert info.value.error_class is ErrorClass.UPSTREAM
        assert "malformed JSON" in str(info.value)
        return
    got = [event.data for event in events([body])]
    assert repr(got) == repr(expected)  # repr: NaN != NaN
