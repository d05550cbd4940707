"""Property tests (hypothesis): framing never changes the parts, and random runs keep the loop's rules.

1. Any re-chunking of any recorded stream in ``tests/fixtures`` (down to one
   byte per read), with LF, CRLF or CR line ends, gives exactly the parts of
   the stream read whole.
2. Random scripted runs (:class:`agentcore.testing.ScriptedModel`): random
   text, tool calls (working, failing, unknown, with malformed arguments),
   retryable and terminal errors at random points, random step limits and
   retry counts, sequential or parallel tools, and a cancel after a random
   number of parts. Each run is checked against an oracle written from
   design.md's loop rules: the parts are exactly the oracle's (a prefix of
   them when a cancel came first, then a ``canceled`` terminal part), so there
   is exactly one terminal part, the total usage is the sum of the completed
   steps' usage, every tool call has exactly one result in call order (unless
   loop rule 2, length, or the cancel stopped it), each step adds one tool message, and the
   history is valid to send again, through both adapters' request builders.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Request,
    Role,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    run,
    user_message,
)
from agentcore.providers.anthropic import request as anthropic_request
from agentcore.providers.anthropic import stream as anthropic_stream
from agentcore.providers.gemini import stream as gemini_stream
from agentcore.providers.openai.chat import request as chat_request
from agentcore.providers.openai.chat import stream as chat_stream
from agentcore.providers.shell import StateMachine
from agentcore.testing import ScriptedModel
from agentcore.transport.sse import iter_events
from tests.loop_helpers import FuncTool, assert_valid_history

FIXTURES = Path(__file__).parent / "fixtures"
RECORDINGS = sorted(FIXTURES.glob("*/*.sse"))
LINE_ENDS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}
RECHUNK_EXAMPLES = 300
RUN_EXAMPLES = 250


# --- 1. re-chunking recorded streams ----------------------------------------------------------


def with_line_ends(body: bytes, end: bytes) -> bytes:
    return body.replace(b"\r\n", b"\n").replace(b"\n", end)


def parts_of(path: Path, chunks: Iterable[bytes]) -> tuple[Any, ...]:
    """The parts a recording gives through the SSE reader and its adapter's
    state machine, and the error class if it ends in one."""
    parts: list[StreamPart] = []
    error: ErrorClass | None = None
    state: StateMachine
    if path.parent.name == "anthropic":
        state = anthropic_stream.StreamState()
    elif path.parent.name in ("gemini", "vertex"):
        ids = (f"gemini-synth-{n}" for n in itertools.count())
        state = gemini_stream.StreamState("", new_id=lambda: next(ids))
    else:
        ids = (f"call_synth_{n}" for n in itertools.count())
        state = chat_stream.StreamState(new_id=lambda: next(ids))
    try:
        for event in iter_events(chunks):
            parts += state.feed(event)
            if state.done:
                break
        parts += state.finish()
    except ModelError as exc:
        error = exc.error_class
    return tuple(parts), error


WHOLE = {path: parts_of(path, [path.read_bytes()]) for path in RECORDINGS}


def test_every_recording_gives_parts() -> None:
    assert len(RECORDINGS) >= 53
    for path, (parts, error) in WHOLE.items():
        assert parts or error is not None, path.name
        # the line-end variants assume LF; Gemini's and Vertex's recordings are
        # CRLF, which with_line_ends turns into LF first
        if path.parent.name not in ("gemini", "vertex"):
            assert b"\r" not in path.read_bytes(), (
                f"{path.name} has CR bytes: the line-end variants assume LF"
            )


@pytest.mark.parametrize("end", sorted(LINE_ENDS))
@pytest.mark.parametrize("path", RECORDINGS, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDINGS])
def test_one_byte_per_read_gives_the_same_parts(path: Path, end: str) -> None:
    body = with_line_ends(path.read_bytes(), LINE_ENDS[end])
    assert parts_of(path, [body[i : i + 1] for i in range(len(body))]) == WHOLE[path]


@st.composite
def rechunked(draw: st.DrawFn) -> tuple[Path, list[bytes]]:
    path = draw(st.sampled_from(RECORDINGS))
    body = with_line_ends(path.read_bytes(), LINE_ENDS[draw(st.sampled_from(sorted(LINE_ENDS)))])
    small = draw(st.booleans())
    cuts: set[int] = set()
    if small:  # runs of tiny reads somewhere in the body
        start = draw(st.integers(0, len(body)))
        cuts.update(range(start, min(len(body), start + draw(st.integers(1, 400)))))
    cuts.update(draw(st.lists(st.integers(1, max(1, len(body) - 1)), max_size=60)))
    edges = [0, *sorted(c for c in cuts if 0 < c < len(body)), len(body)]
    return path, [body[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=RECHUNK_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rechunked())
def test_any_rechunking_gives_the_same_parts(case: tuple[Path, list[bytes]]) -> None:
    path, chunks = case
    assert parts_of(path, chunks) == WHOLE[path]


# --- 2. random scripted runs against an oracle --------------------------------------------------

RETRYABLE = (ErrorClass.RATE_LIMITED, ErrorClass.OVERLOADED, ErrorClass.TRANSIENT)
TERMINAL = (ErrorClass.UPSTREAM, ErrorClass.AUTH, ErrorClass.INVALID_REQUEST, ErrorClass.CONTEXT_LENGTH)
ARGUMENTS = ('{"a": 1}', "{}", "", "not json", "[1, 2]")


class Boom(Exception):
    """A foreign exception a model may raise: terminal, never retried."""


@attrs.frozen
class Step:
    """One scripted model call."""

    texts: tuple[str, ...]
    calls: tuple[ToolCall, ...]
    reason: FinishReason
    usage: Usage
    error: ErrorClass | str | None = None
    error_at: int = 0
    """The error is raised after this many of the step's parts (0: before any)."""

    def parts(self) -> list[StreamPart]:
        out = [StreamPart.text_delta(t) for t in self.texts]
        out += [StreamPart.tool_call_event(c) for c in self.calls]
        return out

    def script(self) -> list[StreamPart | BaseException]:
        parts: list[StreamPart | BaseException] = list(self.parts())
        if self.error is None:
            return [*parts, StreamPart.step_finish(self.reason, self.usage)]
        at = min(self.error_at, len(parts))
        exc: Exception = (
            ModelError(self.error, message="scripted") if isinstance(self.error, ErrorClass) else Boom("boom")
        )
        return [*parts[:at], exc]


ids = itertools.count()


@st.composite
def steps(draw: st.DrawFn) -> Step:
    texts = tuple(draw(st.lists(st.text(min_size=1, max_size=5), max_size=3)))
    calls = tuple(
        ToolCall(id=f"c{next(ids)}", name=draw(st.sampled_from(["ok", "fail", "nope"])), input=arguments)
        for arguments in draw(st.lists(st.sampled_from(ARGUMENTS), max_size=3))
    )
    reason = draw(st.sampled_from([FinishReason.STOP, FinishReason.TOOL_CALLS, FinishReason.LENGTH]))
    say_tool_calls: bool = draw(st.booleans())
    if calls and say_tool_calls:
        reason = FinishReason.TOOL_CALLS
    usage = Usage(*(draw(st.integers(0, 1000)) for _ in range(4)))
    fate = draw(st.sampled_from(["ok"] * 6 + ["retryable"] * 3 + ["terminal", "foreign"]))
    error: ErrorClass | str | None = None
    if fate == "retryable":
        error = draw(st.sampled_from(RETRYABLE))
    elif fate == "terminal":
        error = draw(st.sampled_from(TERMINAL))
    elif fate == "foreign":
        error = "foreign"
    at = draw(st.integers(0, 3)) if error is not None and draw(st.booleans()) else 0
    return Step(texts, calls, reason, usage, error, at)


class Billing:
    """Wraps the scripted model and records each step-finish as it reaches the
    loop: that step is complete (billed), whatever happens next."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.billed: list[Usage] = []

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        parts = self.inner.stream(request, ctx)
        try:
            for part in parts:
                if part.kind is StreamPartKind.STEP_FINISH:
                    self.billed.append(part.usage)
                yield part
        finally:
            close = getattr(parts, "close", None)
            if close is not None:
                close()


def ok_tool(arguments: dict[str, Any], _ctx: Context) -> str:
    return f"ok {json.dumps(arguments)}"


def failing_tool(_arguments: dict[str, Any], _ctx: Context) -> str:
    raise RuntimeError("the tool failed")


def is_error_result(call: ToolCall) -> bool:
    try:
        value = json.loads(call.input or "{}")
    except ValueError:
        return True
    return call.name != "ok" or not isinstance(value, dict)


@attrs.frozen
class Outcome:
    parts: tuple[Any, ...]
    """Summaries of the non-terminal parts."""
    terminal: tuple[Any, ...]


def summarize(part: StreamPart) -> tuple[Any, ...]:
    if part.kind is StreamPartKind.TEXT_DELTA:
        return ("text", part.text)
    if part.kind is StreamPartKind.TOOL_CALL:
        assert part.tool_call is not None
        return ("call", part.tool_call)
    if part.kind is StreamPartKind.TOOL_RESULT:
        result = part.tool_result
        assert result is not None
        content = result.content if not result.is_error else None
        return ("result", result.tool_call_id, result.name, result.is_error, content)
    if part.kind is StreamPartKind.STEP_FINISH:
        return ("step-finish", part.finish_reason, part.usage)
    if part.kind is StreamPartKind.FINISH:
        return ("finish", part.finish_reason, part.total_usage)
    err = part.err
    what = err.error_class if isinstance(err, ModelError) else type(err).__name__
    return ("error", part.finish_reason, what, part.total_usage)


def oracle(script: list[Step], step_limit: int, max_retries: int) -> Outcome:
    """The parts design.md's loop rules give for ``script`` (no cancel)."""
    parts: list[tuple[Any, ...]] = []
    total = Usage()
    calls_made = 0
    for number in range(1, step_limit + 1):
        retries = 0
        while True:
            if calls_made >= len(script):
                return Outcome(tuple(parts), ("error", FinishReason.ERROR, "ScriptExhausted", total))
            step = script[calls_made]
            calls_made += 1
            if step.error is None:
                break
            forwarded = step.parts()[: step.error_at]
            parts += [summarize(p) for p in forwarded]
            retryable = step.error in RETRYABLE
            if not forwarded and retryable and retries < max_retries:
                retries += 1
                continue
            what = "Boom" if step.error == "foreign" else step.error
            return Outcome(tuple(parts), ("error", FinishReason.ERROR, what, total))
        parts += [summarize(p) for p in step.parts()]
        reason = step.reason
        if step.calls and reason is FinishReason.STOP:
            reason = FinishReason.TOOL_CALLS
        parts.append(("step-finish", reason, step.usage))
        total += step.usage
        if reason is FinishReason.LENGTH:
            return Outcome(tuple(parts), ("finish", FinishReason.LENGTH, total))
        if not step.calls:
            final = FinishReason.STOP if reason is FinishReason.TOOL_CALLS else reason
            return Outcome(tuple(parts), ("finish", final, total))
        for call in step.calls:
            error = is_error_result(call)
            ok = None if error else f"ok {json.dumps(json.loads(call.input or '{}'))}"
            parts.append(("result", call.id, call.name, error, ok))
        if number == step_limit:
            return Outcome(tuple(parts), ("finish", FinishReason.STEP_LIMIT, total))
    raise AssertionError("unreachable")


def check_sendable(history: list[Message]) -> None:
    """The history is valid, and both adapters build a well-formed request from it."""
    assert_valid_history(history)
    body = anthropic_request.request_body(Request(messages=history), "claude-x", max_tokens=100)
    roles = [turn["role"] for turn in body["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert roles[0] == "user"
    open_calls: list[str] = []
    for turn in body["messages"]:
        blocks = turn["content"]
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert results == open_calls, (results, open_calls)
        assert blocks, "an empty turn"
        open_calls = [b["id"] for b in blocks if b["type"] == "tool_use"]
        assert all(isinstance(b["input"], dict) for b in blocks if b["type"] == "tool_use")
    assert open_calls == []
    messages = chat_request.request_body(Request(messages=history), "gpt-x")["messages"]
    pending: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert pending, "a tool message without a call"
            assert message["tool_call_id"] == pending.pop(0)
        else:
            assert pending == [], "tool calls left unanswered"
            pending = [c["id"] for c in message.get("tool_calls", [])]
            for c in message.get("tool_calls", []):
                assert isinstance(json.loads(c["function"]["arguments"]), dict)
    assert pending == []


@settings(max_examples=RUN_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(steps(), min_size=1, max_size=7),
    step_limit=st.integers(1, 5),
    retries=st.sampled_from([0, 1, 2, 3]),
    parallel=st.booleans(),
    cancel_after=st.one_of(st.none(), st.integers(0, 10)),
)
def test_random_scripted_runs_keep_the_loop_rules(
    script: list[Step], step_limit: int, retries: int, parallel: bool, cancel_after: int | None
) -> None:
    model = Billing(ScriptedModel([step.script() for step in script]))
    on_step: list[Usage] = []
    tools = [FuncTool("ok", ok_tool), FuncTool("fail", failing_tool)]
    options = LoopOptions(
        model=model,
        messages=[user_message("go")],
        tools=tools,
        step_limit=step_limit,
        max_retries=retries,
        retry_base_delay=0.0005,
        retry_max_delay=0.001,
        parallel_tools=parallel,
        on_step=on_step.append,
        queue_size=2,
    )
    ctx = Context()
    reader = run(options, ctx)
    seen: list[StreamPart] = []
    canceled = cancel_after == 0
    if canceled:
        ctx.cancel()
    for part in reader:
        seen.append(part)
        if cancel_after is not None and len(seen) == cancel_after and not part.terminal:
            ctx.cancel()
            canceled = True
    expected = oracle(script, step_limit, retries)

    terminals = [p for p in seen if p.terminal]
    assert len(terminals) == 1, "exactly one terminal part"
    assert seen[-1].terminal, "the terminal part comes last"
    body = tuple(summarize(p) for p in seen[:-1])
    terminal = summarize(seen[-1])
    if canceled and terminal != expected.terminal:
        assert expected.parts[: len(body)] == body, "the parts before a cancel follow the rules"
        assert seen[-1].finish_reason is FinishReason.CANCELED
        assert isinstance(seen[-1].err, Canceled)
    else:
        assert body == expected.parts
        assert terminal == expected.terminal

    finishes = [p.usage for p in seen if p.kind is StreamPartKind.STEP_FINISH]
    assert seen[-1].total_usage == sum(model.billed, Usage()), "usage = the completed steps' usage"
    assert finishes == model.billed[: len(finishes)], "each completed step's step-finish, once, in order"
    assert len(model.billed) - len(finishes) <= (1 if canceled else 0)
    assert on_step == finishes, "on_step saw each delivered step once"

    calls = [p.tool_call.id for p in seen if p.tool_call is not None]
    results = [p.tool_result.tool_call_id for p in seen if p.tool_result is not None]
    assert len(set(results)) == len(results), "one result per call"
    assert set(results) <= set(calls)

    if seen[-1].kind is StreamPartKind.FINISH:
        result = reader.result()
        history = list(result.messages)
    else:
        with pytest.raises(RunError) as info:
            reader.result()
        assert info.value.usage == seen[-1].total_usage
        history = info.value.messages
    assistant_with_calls = [m for m in history if m.role is Role.ASSISTANT and m.tool_calls]
    tool_messages = [m for m in history if m.role is Role.TOOL]
    assert len(tool_messages) == len(assistant_with_calls), "one tool message per step with calls"
    check_sendable(history)
    again = ScriptedModel([[StreamPart.step_finish(FinishReason.STOP, Usage(1, 1))]])
    follow = LoopOptions(model=again, messages=[*history, user_message("more")])
    assert run(follow).result().finish_reason is FinishReason.STOP


def test_the_oracle_agrees_on_a_hand_written_run() -> None:
    # The oracle itself, on fault 9 of design.md: a tool step, then an error after text.
    call = ToolCall(id="call_1", name="ok", input="{}")
    script = [
        Step((), (call,), FinishReason.TOOL_CALLS, Usage(100, 20, 50, 0)),
        Step(("partial",), (), FinishReason.STOP, Usage(1, 1), ErrorClass.UPSTREAM, 1),
    ]
    outcome = oracle(script, 5, 2)
    assert outcome.parts == (
        ("call", call),
        ("step-finish", FinishReason.TOOL_CALLS, Usage(100, 20, 50, 0)),
        ("result", "call_1", "ok", False, "ok {}"),
        ("text", "partial"),
    )
    assert outcome.terminal == ("error", FinishReason.ERROR, ErrorClass.UPSTREAM, Usage(100, 20, 50, 0))
