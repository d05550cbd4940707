"""The fault catalogue: every way the network and the server can fail, as one table.

Each :class:`Fault` is a script for the real local HTTP server
(:class:`tests.localserver.LocalServer`) plus the outcome design.md's loop
rules and faults require. A row of the table is a fault driven through one adapter
(:class:`AnthropicModel` or :class:`OpenAIChatModel`) by :func:`agentcore.run`:

1. step 1 is a healthy tool call (usage :data:`U1`), and the ``echo`` tool runs;
2. step 2 meets the fault; when the fault is retryable and comes before any
   part of the step reached the reader, the loop retries and the next reply
   is the healthy answer ``"Done."`` (usage :data:`U2`).

:func:`run_row` runs a row and returns what was :class:`Observed`: the error
class (or None when the run finished), how many model calls the faulted step
took, the text the reader got (each delta once), the run's total usage (on
error: the completed steps' usage, which must never be lost), the wait before
the first retry as the server saw it, and any broken invariant (one terminal
part, each tool call once with one result, a valid history, the server hit
once per model call). ``tests/test_reliability_faults.py`` asserts each row;
``tests/faults/report.py`` runs the same rows and writes ``docs/reliability.md``.

Timeouts are small so the table runs in seconds: read and idle timeouts
:data:`READ_TIMEOUT`, retry backoff 10 ms to 50 ms; Retry-After hints are
honoured verbatim, so the rows that send one wait that long.
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Model,
    ModelError,
    Request,
    StreamPart,
    StreamPartKind,
    ToolDefinition,
    Usage,
    run,
    user_message,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport import Timeout
from tests.localserver import (
    Action,
    Close,
    LocalServer,
    Pause,
    Reply,
    Reset,
    Stall,
    json_reply,
    refused_url,
)
from tests.loop_helpers import assert_valid_history

KEY = "sk-fault-matrix-key-0123456789abcdef"
"""The API key every row's model is built with (tests/test_secrets.py checks it never leaks)."""

READ_TIMEOUT = 1.0
"""Seconds: the adapters' read timeout and idle timeout in the table."""
RETRY_BASE_DELAY = 0.01
RETRY_MAX_DELAY = 0.05
MAX_RETRIES = 2
RUN_TIMEOUT = 30.0
"""Seconds: a guard deadline on every row, so a hang fails the row instead of the suite."""

U1 = Usage(input=120, output=12, cache_read=20)
"""Usage of step 1, the healthy tool call."""
U2 = Usage(input=230, output=23, cache_read=30)
"""Usage of the faulted step when it succeeds."""
U3 = Usage(input=340, output=34, cache_read=40)
"""Usage of the step after the faulted one, where there is one."""

STEP1_ARGS = '{"n": 1}'
BIG_ARGUMENT = 5 * 1024 * 1024
"""Characters of the 5 MB tool argument."""
TINY_DELTAS = 100_000


# --- wire formats -------------------------------------------------------------------------------


def _event(name: str | None, data: Any) -> bytes:
    head = f"event: {name}\n" if name else ""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"{head}data: {body}\n\n".encode()


class Dialect:
    """How one provider puts a step on the wire, and how to build its model."""

    name = ""
    label = ""

    def model(self, url: str, **kwargs: Any) -> Model:
        raise NotImplementedError

    def head(self, usage: Usage) -> list[bytes]:
        """Events that open a text step, before any content."""
        raise NotImplementedError

    def text(self, text: str) -> bytes:
        """One text delta."""
        raise NotImplementedError

    def reason(self, usage: Usage, reason: str = "stop") -> list[bytes]:
        """The events that say why the step stopped (and carry its usage)."""
        raise NotImplementedError

    def end(self) -> list[bytes]:
        """The end marker."""
        raise NotImplementedError

    def tool_step(self, call_id: str, name: str, fragments: Sequence[str], usage: Usage) -> list[bytes]:
        """A whole step that makes one tool call, its arguments in ``fragments``."""
        raise NotImplementedError

    def ping(self) -> bytes:
        raise NotImplementedError

    def unknown(self) -> list[bytes]:
        """Events, comments and fields this client does not know."""
        raise NotImplementedError

    def error_event(self, overloaded: bool = True) -> bytes:
        """An error reported inside a 200 stream."""
        raise NotImplementedError

    def error_body(self, kind: str, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def context_length_body(self) -> dict[str, Any]:
        raise NotImplementedError

    def text_step(self, usage: Usage, *texts: str) -> list[bytes]:
        return [*self.head(usage), *(self.text(t) for t in texts), *self.reason(usage), *self.end()]


class AnthropicDialect(Dialect):
    name = "anthropic"
    label = "Anthropic"

    def model(self, url: str, **kwargs: Any) -> Model:
        return AnthropicModel("claude-fault", api_key=KEY, base_url=url, **kwargs)

    def _start(self, usage: Usage) -> bytes:
        message: dict[str, Any] = {
            "id": "msg_fault",
            "type": "message",
            "role": "assistant",
            "model": "claude-fault",
            "content": [],
            "stop_reason": None,
            "usage": {
                "input_tokens": usage.input - usage.cache_read,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation_input_tokens": usage.cache_write,
                "output_tokens": 1,
            },
        }
        return _event("message_start", {"type": "message_start", "message": message})

    def head(self, usage: Usage) -> list[bytes]:
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        return [self._start(usage), _event("content_block_start", block)]

    def text(self, text: str) -> bytes:
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        return _event("content_block_delta", delta)

    def _delta(self, usage: Usage, reason: str) -> bytes:
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": usage.output},
        }
        return _event("message_delta", delta)

    def reason(self, usage: Usage, reason: str = "stop") -> list[bytes]:
        wire = {"stop": "end_turn", "tool-calls": "tool_use"}[reason]
        return [
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            self._delta(usage, wire),
        ]

    def end(self) -> list[bytes]:
        return [_event("message_stop", {"type": "message_stop"})]

    def tool_step(self, call_id: str, name: str, fragments: Sequence[str], usage: Usage) -> list[bytes]:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events = [self._start(usage)]
        events.append(
            _event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
        )
        for fragment in fragments:
            delta = {"type": "input_json_delta", "partial_json": fragment}
            events.append(
                _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            )
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(self._delta(usage, "tool_use"))
        return events + self.end()

    def ping(self) -> bytes:
        return _event("ping", {"type": "ping"})

    def unknown(self) -> list[bytes]:
        widget = {"type": "content_block_start", "index": 7, "content_block": {"type": "widget", "x": 1}}
        widget_delta = {
            "type": "content_block_delta",
            "index": 7,
            "delta": {"type": "widget_delta", "y": [1]},
        }
        return [
            b": keep-alive comment\n\n",
            _event("future_event", {"type": "future_event", "payload": {"a": 1}}),
            _event("content_block_start", widget),
            _event("content_block_delta", widget_delta),
            _event("content_block_stop", {"type": "content_block_stop", "index": 7}),
            b"id: 42\nretry: 3000\n\n",
        ]

    def error_event(self, overloaded: bool = True) -> bytes:
        kind = "overloaded_error" if overloaded else "api_error"
        return _event("error", {"type": "error", "error": {"type": kind, "message": "Overloaded"}})

    def error_body(self, kind: str, message: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def context_length_body(self) -> dict[str, Any]:
        return self.error_body("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")


class OpenAIDialect(Dialect):
    name = "openai"
    label = "OpenAI"

    def model(self, url: str, **kwargs: Any) -> Model:
        return OpenAIChatModel("gpt-fault", api_key=KEY, base_url=url + "/v1", **kwargs)

    @staticmethod
    def _chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return _event(None, {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "choices": [choice]})

    @staticmethod
    def _usage(usage: Usage) -> bytes:
        wire = {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        }
        return _event(None, {"id": "chatcmpl-fault", "choices": [], "usage": wire})

    def head(self, usage: Usage) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def text(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def reason(self, usage: Usage, reason: str = "stop") -> list[bytes]:
        wire = {"stop": "stop", "tool-calls": "tool_calls"}[reason]
        return [self._chunk({}, wire), self._usage(usage)]

    def end(self) -> list[bytes]:
        return [b"data: [DONE]\n\n"]

    def tool_step(self, call_id: str, name: str, fragments: Sequence[str], usage: Usage) -> list[bytes]:
        first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        events = [self._chunk({"role": "assistant", "content": None, "tool_calls": [first]})]
        for fragment in fragments:
            events.append(self._chunk({"tool_calls": [{"index": 0, "function": {"arguments": fragment}}]}))
        return events + self.reason(usage, "tool-calls") + self.end()

    def ping(self) -> bytes:
        return b": ping\n\n"

    def unknown(self) -> list[bytes]:
        return [
            b": OPENROUTER PROCESSING\n\n",
            _event("future", {"object": "future.event", "payload": {"a": 1}}),
            self._chunk({"reasoning_content": "thinking...", "annotations": []}),
            _event(
                None,
                {"object": "chat.completion.chunk", "choices": [{"index": 1, "delta": {"content": "n=2"}}]},
            ),
            b"id: 42\nretry: 3000\n\n",
        ]

    def error_event(self, overloaded: bool = True) -> bytes:
        code = 503 if overloaded else 500
        return _event(
            None, {"error": {"message": "The server is overloaded", "type": "server_error", "code": code}}
        )

    def error_body(self, kind: str, message: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "code": None}}

    def context_length_body(self) -> dict[str, Any]:
        message = "This model's maximum context length is 8192 tokens, but your request used 10061 tokens."
        return {
            "error": {"message": message, "type": "invalid_request_error", "code": "context_length_exceeded"}
        }


ANTHROPIC = AnthropicDialect()
OPENAI = OpenAIDialect()
DIALECTS: tuple[Dialect, ...] = (ANTHROPIC, OPENAI)


# --- faults -------------------------------------------------------------------------------------


@attrs.frozen
class Expect:
    """What the contract requires of a row.

    Attributes:
        error: the run's error class, or None when the run must finish (``stop``).
        attempts: model calls the faulted step takes (1 = not retried).
        text: every text delta the reader gets, joined (each exactly once).
        usage: the run's total usage; on error, that of the completed steps.
        later_steps: healthy steps after the faulted one.
        wait: bounds in seconds of the pause before the first retry, as the server saw it.
        tool_inputs: the length of each input the ``echo`` tool got.
    """

    error: ErrorClass | None
    attempts: int
    text: str
    usage: Usage
    later_steps: int = 0
    wait: tuple[float, float] | None = None
    tool_inputs: tuple[int, ...] = (len(STEP1_ARGS),)


@attrs.frozen
class Fault:
    """One fault: the server's replies to the faulted step and the expected outcome.

    Attributes:
        name: a short id (the test id).
        group: connection, status, cut stream or content.
        what: one line for the table in docs/reliability.md.
        replies: the replies, in order, to the faulted step's requests (the
            last one repeats).
        expect: the expected outcome for a dialect.
        refused: the model points at a port where nothing listens (no step 1).
        options: extra ``LoopOptions`` fields.
        known_bugs: dialect name -> the library bug that makes this row fail.
        slow: the row takes a second or more (a long Retry-After, 100,000 deltas).
    """

    name: str
    group: str
    what: str
    replies: Callable[[Dialect], list[Reply]]
    expect: Callable[[Dialect], Expect]
    refused: bool = False
    options: dict[str, Any] = attrs.field(factory=dict)
    known_bugs: dict[str, str] = attrs.field(factory=dict)
    slow: bool = False


def _stream(*actions: Action | Sequence[Action]) -> Reply:
    flat: list[Action] = []
    for action in actions:
        if isinstance(action, (bytes, Pause, Stall, Reset, Close)):
            flat.append(action)
        else:
            flat.extend(action)
    return Reply(actions=flat)


def ok(d: Dialect) -> Reply:
    """The healthy answer to the faulted step: ``"Done."`` in two deltas, usage U2."""
    return _stream(d.text_step(U2, "Do", "ne."))


def recovered(attempts: int, *, wait: tuple[float, float] | None = None) -> Callable[[Dialect], Expect]:
    return lambda _d: Expect(None, attempts, "Done.", U1 + U2, wait=wait)


def failed(error: ErrorClass, attempts: int = 1, text: str = "") -> Callable[[Dialect], Expect]:
    return lambda _d: Expect(error, attempts, text, U1)


def _status(d: Dialect, status: int, headers: dict[str, str] | None = None, kind: str = "api_error") -> Reply:
    return json_reply(status, d.error_body(kind, f"HTTP {status} from the fault server"), headers)


def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


# A reset makes the client's kernel drop what it received but the client did not
# read yet, so the server pauses first: the bytes before the cut are delivered.
_CUTS: dict[str, tuple[str, Callable[[], list[Action]]]] = {
    "reset": ("a TCP reset", lambda: [Pause(0.1), Reset()]),
    "stall": ("a stall (no more bytes, socket open)", lambda: [Stall()]),
    "cut": ("a close inside the chunked body", lambda: [Close()]),
    "end": ("a clean end of the body", lambda: []),
}


def _cut_before(actions: Callable[[], list[Action]]) -> Callable[[Dialect], list[Reply]]:
    return lambda d: [_stream(d.head(U2), *actions()), ok(d)]


def _cut_after_content(actions: Callable[[], list[Action]]) -> Callable[[Dialect], list[Reply]]:
    return lambda d: [_stream(d.head(U2), d.text("Hel"), *actions()), ok(d)]


def _cut_after_reason(actions: Callable[[], list[Action]]) -> Callable[[Dialect], list[Reply]]:
    return lambda d: [_stream(d.head(U2), d.text("Do"), d.text("ne."), d.reason(U2), *actions()), ok(d)]


def _cut_faults() -> list[Fault]:
    faults = []
    for key, (words, actions) in _CUTS.items():
        faults.append(
            Fault(
                f"{key}-before-content",
                "cut stream",
                f"200, stream opened, then {words} before any content",
                _cut_before(actions),
                recovered(2),
            )
        )
        faults.append(
            Fault(
                f"{key}-after-content",
                "cut stream",
                f'200, text "Hel" streamed, then {words} before the stop reason',
                _cut_after_content(actions),
                failed(ErrorClass.TRANSIENT, 1, "Hel"),
            )
        )
    for key, (words, actions) in _CUTS.items():
        faults.append(
            Fault(
                f"{key}-after-stop-reason",
                "cut stream",
                f"whole step and its stop reason (with usage) streamed, then {words} before the end marker",
                _cut_after_reason(actions),
                recovered(1),
            )
        )
    return faults


def _pings(d: Dialect) -> Reply:
    actions: list[Action] = []
    for _ in range(60):
        actions += [d.ping(), Pause(0.05)]
    return _stream(*actions, Stall())


def _big_tool(d: Dialect) -> Reply:
    argument = json.dumps({"blob": "a" * BIG_ARGUMENT})
    fragments = [argument[i : i + 65536] for i in range(0, len(argument), 65536)]
    return _stream(d.tool_step("call_big", "echo", fragments, U2))


def _tiny(d: Dialect) -> Reply:
    body = b"".join([*d.head(U2), *(d.text("x") for _ in range(TINY_DELTAS)), *d.reason(U2), *d.end()])
    return Reply(actions=[body])


def _malformed(d: Dialect) -> Reply:
    return _stream(
        d.head(U2), b'data: {"type":"content_block_delta","index":0,"delta":{"text":"x"\n\n', ok(d).actions
    )


def _invalid_utf8(d: Dialect) -> Reply:
    bad = d.text("\u00ff\u00fe").replace("\u00ff\u00fe".encode(), b"\xff\xfe")
    return _stream(d.head(U2), bad, d.text("Done."), d.reason(U2), d.end())


FAULTS: tuple[Fault, ...] = (
    # --- the connection
    Fault(
        "refused",
        "connection",
        "connection refused (nothing listens on the port)",
        lambda d: [],
        lambda _d: Expect(ErrorClass.TRANSIENT, 3, "", Usage(), tool_inputs=()),
        refused=True,
    ),
    Fault(
        "reset-before-headers",
        "connection",
        "TCP reset before the response headers",
        lambda d: [Reply(before_headers=[Reset()]), ok(d)],
        recovered(2),
    ),
    Fault(
        "reset-before-headers-always",
        "connection",
        "TCP reset before the headers, on every attempt",
        lambda d: [Reply(before_headers=[Reset()])],
        failed(ErrorClass.TRANSIENT, 3),
    ),
    Fault(
        "stall-before-headers",
        "connection",
        "no response headers (read timeout)",
        lambda d: [Reply(before_headers=[Stall()]), ok(d)],
        recovered(2),
    ),
    # --- HTTP statuses
    Fault(
        "429-retry-after-seconds",
        "status",
        "429 with `Retry-After: 1` (seconds)",
        lambda d: [_status(d, 429, {"Retry-After": "1"}, "rate_limit_error"), ok(d)],
        recovered(2, wait=(1.0, 1.5)),
        slow=True,
    ),
    Fault(
        "429-retry-after-ms",
        "status",
        "429 with `retry-after-ms: 80` (wins over `Retry-After: 30`)",
        lambda d: [_status(d, 429, {"retry-after-ms": "80", "Retry-After": "30"}, "rate_limit_error"), ok(d)],
        recovered(2, wait=(0.08, 0.5)),
    ),
    Fault(
        "503-retry-after-date",
        "status",
        "503 with `Retry-After: <HTTP date 2 s ahead>`",
        lambda d: [_status(d, 503, {"Retry-After": _http_date(2.0)}, "overloaded_error"), ok(d)],
        recovered(2, wait=(0.9, 2.5)),
        slow=True,
    ),
    Fault(
        "529-retry-after-garbage",
        "status",
        "529 with `Retry-After: soon` (unparsable: computed backoff)",
        lambda d: [_status(d, 529, {"Retry-After": "soon"}, "overloaded_error"), ok(d)],
        recovered(2, wait=(0.0, 0.5)),
    ),
    Fault(
        "429-always",
        "status",
        "429 on every attempt",
        lambda d: [_status(d, 429, {"retry-after-ms": "10"}, "rate_limit_error")],
        failed(ErrorClass.RATE_LIMITED, 3),
    ),
    Fault(
        "429-hint-over-limit",
        "status",
        "429 with `Retry-After: 120`, `retry_after_limit=5`",
        lambda d: [_status(d, 429, {"Retry-After": "120"}, "rate_limit_error"), ok(d)],
        failed(ErrorClass.RATE_LIMITED, 1),
        options={"retry_after_limit": 5.0},
    ),
    Fault("500", "status", "500", lambda d: [_status(d, 500), ok(d)], failed(ErrorClass.UPSTREAM)),
    Fault("502", "status", "502 (gateway)", lambda d: [_status(d, 502), ok(d)], recovered(2)),
    Fault(
        "401",
        "status",
        "401",
        lambda d: [_status(d, 401, kind="authentication_error"), ok(d)],
        failed(ErrorClass.AUTH),
    ),
    Fault(
        "400-context-length",
        "status",
        "400 whose body says the prompt is too long",
        lambda d: [json_reply(400, d.context_length_body()), ok(d)],
        failed(ErrorClass.CONTEXT_LENGTH),
    ),
    Fault(
        "400-invalid",
        "status",
        "400 invalid request (control)",
        lambda d: [_status(d, 400, kind="invalid_request_error"), ok(d)],
        failed(ErrorClass.INVALID_REQUEST),
    ),
    Fault(
        "413",
        "status",
        "413 request too large",
        lambda d: [_status(d, 413, kind="request_too_large"), ok(d)],
        failed(ErrorClass.CONTEXT_LENGTH),
    ),
    # --- the stream cut short
    *_cut_faults(),
    # --- what the stream carries
    Fault(
        "malformed-json",
        "content",
        "a data line that is not JSON, before any content",
        lambda d: [_malformed(d), ok(d)],
        failed(ErrorClass.UPSTREAM),
    ),
    Fault(
        "invalid-utf8",
        "content",
        "bytes that are not UTF-8 inside a data line",
        lambda d: [_invalid_utf8(d), ok(d)],
        failed(ErrorClass.UPSTREAM),
    ),
    Fault(
        "bom",
        "content",
        "a UTF-8 byte order mark before the first event",
        lambda d: [Reply(actions=[b"\xef\xbb\xbf" + b"".join(d.text_step(U2, "Do", "ne."))])],
        recovered(1),
    ),
    Fault(
        "unknown-events",
        "content",
        "unknown events, blocks, comments and fields between the content",
        lambda d: [
            _stream(d.head(U2), d.unknown(), d.text("Do"), d.unknown(), d.text("ne."), d.reason(U2), d.end())
        ],
        recovered(1),
    ),
    Fault(
        "5mb-tool-argument",
        "content",
        "a tool call with a 5 MB argument in 64 KB fragments",
        lambda d: [_big_tool(d), _stream(d.text_step(U3, "Done."))],
        lambda _d: Expect(
            None,
            1,
            "Done.",
            U1 + U2 + U3,
            later_steps=1,
            tool_inputs=(len(STEP1_ARGS), len(json.dumps({"blob": "a" * BIG_ARGUMENT}))),
        ),
    ),
    Fault(
        "100k-tiny-deltas",
        "content",
        f"{TINY_DELTAS:,} one-character text deltas",
        lambda d: [_tiny(d)],
        lambda _d: Expect(None, 1, "x" * TINY_DELTAS, U1 + U2),
        slow=True,
    ),
    Fault(
        "pings-only",
        "content",
        "pings every 50 ms and never any content (idle timeout)",
        lambda d: [_pings(d), ok(d)],
        recovered(2),
    ),
    Fault(
        "error-event-before-content",
        "content",
        "an overloaded error inside the 200 stream, before any content",
        lambda d: [_stream(d.head(U2), d.error_event()), ok(d)],
        recovered(2),
    ),
    Fault(
        "error-event-after-content",
        "content",
        'an overloaded error inside the 200 stream, after text "Hel"',
        lambda d: [_stream(d.head(U2), d.text("Hel"), d.error_event()), ok(d)],
        failed(ErrorClass.OVERLOADED, 1, "Hel"),
    ),
)


@attrs.frozen
class Row:
    fault: Fault
    dialect: Dialect

    @property
    def id(self) -> str:
        return f"{self.dialect.name}-{self.fault.name}"

    @property
    def known_bug(self) -> str | None:
        return self.fault.known_bugs.get(self.dialect.name)


ROWS: tuple[Row, ...] = tuple(Row(fault, dialect) for fault in FAULTS for dialect in DIALECTS)


# --- running a row ------------------------------------------------------------------------------


class Counting:
    """A transparent ``Model`` wrapper that counts ``stream`` calls."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def stream(self, request: Request, ctx: Context) -> Any:
        self.calls += 1
        return self.inner.stream(request, ctx)


class Echo:
    """The ``echo`` tool: records each call's arguments as JSON text
    (``json.dumps``) and answers with its length."""

    definition = ToolDefinition(name="echo", description="Echo.", input_schema='{"type":"object"}')

    def __init__(self) -> None:
        self.inputs: list[str] = []
        self._lock = threading.Lock()

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        text = json.dumps(arguments)
        with self._lock:
            self.inputs.append(text)
        return f"got {len(text)} characters"


@attrs.frozen
class Observed:
    error: ErrorClass | str | None
    attempts: int
    text: str
    usage: Usage
    later_steps: int
    wait: float | None
    tool_inputs: tuple[int, ...]
    problems: tuple[str, ...]
    seconds: float

    def mismatches(self, expect: Expect) -> list[str]:
        """Every way this falls short of ``expect`` (empty: the row passes)."""
        out = list(self.problems)
        if self.error != expect.error:
            out.append(f"outcome {_outcome(self.error)}, expected {_outcome(expect.error)}")
        if self.attempts != expect.attempts:
            out.append(f"{self.attempts} attempts, expected {expect.attempts}")
        if self.text != expect.text:
            out.append(f"text {_short(self.text)}, expected {_short(expect.text)}")
        if self.usage != expect.usage:
            out.append(f"usage {self.usage}, expected {expect.usage}")
        if self.error is None and self.later_steps != expect.later_steps:
            out.append(f"{self.later_steps} later steps, expected {expect.later_steps}")
        if expect.wait is not None:
            low, high = expect.wait
            if self.wait is None or not low <= self.wait <= high:
                out.append(f"first retry after {self.wait} s, expected {low} to {high} s")
        if self.tool_inputs != expect.tool_inputs:
            out.append(f"tool inputs of {self.tool_inputs} characters, expected {expect.tool_inputs}")
        return out


def _outcome(error: ErrorClass | str | None) -> str:
    return "finish" if error is None else error.name if isinstance(error, ErrorClass) else error


def _short(text: str) -> str:
    return repr(text) if len(text) <= 20 else f"{text[:8]!r}...({len(text)} characters)"


def _check_parts(parts: list[StreamPart], problems: list[str]) -> None:
    terminals = [p for p in parts if p.terminal]
    if len(terminals) != 1 or not parts[-1].terminal:
        problems.append(f"{len(terminals)} terminal parts (expected exactly one, last)")
    calls = [p.tool_call.id for p in parts if p.tool_call is not None]
    results = [p.tool_result.tool_call_id for p in parts if p.tool_result is not None]
    if len(set(calls)) != len(calls):
        problems.append(f"a tool call was delivered twice: {calls}")
    if results != calls:
        problems.append(f"tool results {results} do not answer the calls {calls} one to one")
    finishes = [p.usage for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    if terminals and terminals[-1].total_usage != sum(finishes, Usage()):
        problems.append("the total usage is not the sum of the step-finish parts")


def run_row(row: Row) -> Observed:
    """Run one row against a fresh local server; see the module docstring."""
    fault, dialect = row.fault, row.dialect
    server = LocalServer()
    started = time.monotonic()
    try:
        prefix = [] if fault.refused else [_stream(dialect.tool_step("call_1", "echo", [STEP1_ARGS], U1))]
        server.add(*prefix, *fault.replies(dialect))
        url = refused_url() if fault.refused else server.url
        model = Counting(
            dialect.model(url, timeout=Timeout(connect=2.0, read=READ_TIMEOUT, idle=READ_TIMEOUT))
        )
        echo = Echo()
        options = LoopOptions(
            model=model,
            messages=[user_message("go")],
            tools=[echo],
            max_retries=MAX_RETRIES,
            retry_base_delay=RETRY_BASE_DELAY,
            retry_max_delay=RETRY_MAX_DELAY,
            **fault.options,
        )
        reader = run(options, Context(timeout=RUN_TIMEOUT))
        parts = list(reader)
        seconds = time.monotonic() - started
        problems: list[str] = []
        _check_parts(parts, problems)
        terminal = parts[-1]
        error: ErrorClass | str | None = None
        if terminal.kind is StreamPartKind.ERROR:
            err = terminal.err
            error = err.error_class if isinstance(err, ModelError) else f"{type(err).__name__}: {err}"
            if terminal.finish_reason is not FinishReason.ERROR:
                problems.append(f"finish reason {terminal.finish_reason}")
        elif terminal.finish_reason is not FinishReason.STOP:
            problems.append(f"finished with {terminal.finish_reason}, expected stop")
        try:
            assert_valid_history(reader.messages)
        except AssertionError as exc:
            problems.append(f"history not valid to send again: {exc}")
        steps_before = len(prefix)
        if not fault.refused and server.hits != model.calls:
            problems.append(f"the server saw {server.hits} requests for {model.calls} model calls")
        finishes = sum(1 for p in parts if p.kind is StreamPartKind.STEP_FINISH)
        later = max(0, finishes - steps_before - 1) if error is None else 0
        attempts = model.calls - steps_before - later
        wait = None
        if len(server.requests) > steps_before + 1:
            wait = round(server.requests[steps_before + 1]["at"] - server.requests[steps_before]["at"], 3)
        return Observed(
            error=error,
            attempts=attempts,
            text="".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA),
            usage=terminal.total_usage,
            later_steps=later,
            wait=wait,
            tool_inputs=tuple(len(i) for i in echo.inputs),
            problems=tuple(problems),
            seconds=seconds,
        )
    finally:
        server.close()
