"""Shared helpers for the loop's tests (test_loop*.py, test_retry.py): part
builders, a small function tool, exact summaries of a run's parts, a history
validity check and a thread census."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from agentcore import (
    FinishReason,
    LoopOptions,
    Message,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.context import Context
from agentcore.engine.channel import StreamReader

STOP = FinishReason.STOP
TOOL_CALLS = FinishReason.TOOL_CALLS
LENGTH = FinishReason.LENGTH


def text(value: str) -> StreamPart:
    return StreamPart.text_delta(value)


def call(call_id: str, name: str, arguments: str = "{}") -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(id=call_id, name=name, input=arguments))


def nested(levels: int) -> str:
    """Tool call arguments: a JSON object nesting ``levels`` levels deep (the
    outer object one)."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


NOT_UTF8 = b"caf\xe9".decode("utf-8", "surrogateescape")
"""``"caf\\udce9"``: text with a lone surrogate, as a Latin-1 file read as
UTF-8 with ``surrogateescape`` gives; UTF-8 cannot encode it."""


def not_utf8_requests() -> dict[str, Request]:
    """Requests holding :data:`NOT_UTF8` in each place a caller's text goes, by place."""
    call = ToolCall(id="call_1", name="ls")
    asked = Message(role=Role.ASSISTANT, content=[tool_call_part(call)])
    return {
        "system prompt": Request(system=NOT_UTF8, messages=(user_message("hi"),)),
        "prompt": Request(messages=(user_message(NOT_UTF8),)),
        "tool result": Request(
            messages=(
                user_message("hi"),
                asked,
                Message(role=Role.TOOL, content=[tool_result_part(ToolResult("call_1", "ls", NOT_UTF8))]),
            )
        ),
        "tool definition": Request(
            messages=(user_message("hi"),), tools=(ToolDefinition(name="ls", description=NOT_UTF8),)
        ),
    }


def step_finish(reason: FinishReason = STOP, usage: Usage | None = None) -> StreamPart:
    return StreamPart.step_finish(reason, usage or Usage())


def text_step(*texts: str, usage: Usage | None = None) -> list[StreamPart]:
    """A step that streams ``texts`` and stops."""
    return [*(text(t) for t in texts), step_finish(STOP, usage)]


def tool_step(*calls: StreamPart, usage: Usage | None = None) -> list[StreamPart]:
    """A step that makes ``calls`` and finishes with ``tool-calls``."""
    return [*calls, step_finish(TOOL_CALLS, usage)]


class FuncTool:
    """A ``Tool`` over ``fn(arguments, ctx) -> str`` that records the arguments of every call."""

    def __init__(
        self,
        name: str,
        fn: Callable[[dict[str, Any], Context], Any] | None = None,
        *,
        schema: str = '{"type":"object","properties":{}}',
        description: str = "",
    ) -> None:
        self._definition = ToolDefinition(name=name, description=description, input_schema=schema)
        self._fn = fn or (lambda _arguments, _ctx: f"{name} ok")
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    def execute(self, arguments: dict[str, Any], ctx: Context) -> Any:
        with self._lock:
            self.calls.append(arguments)
        return self._fn(arguments, ctx)


def options(model: Any, *, messages: Sequence[Message] | None = None, **kwargs: Any) -> LoopOptions:
    """LoopOptions with one user message ``"hi"`` unless ``messages`` is given."""
    return LoopOptions(model=model, messages=list(messages or [user_message("hi")]), **kwargs)


def collect(reader: StreamReader, timeout: float = 10.0) -> list[StreamPart]:
    """Read the whole run; check it ends with exactly one terminal part and is then exhausted."""
    parts: list[StreamPart] = []
    deadline = time.monotonic() + timeout
    for part in reader:
        parts.append(part)
        assert time.monotonic() < deadline, "the run did not end in time"
    terminals = [p for p in parts if p.terminal]
    assert len(terminals) == 1, f"expected exactly one terminal part, got {summary(parts)}"
    assert parts[-1].terminal, "the terminal part must be the last part"
    assert next(reader, None) is None, "the reader must be exhausted after the terminal part"
    return parts


def summary(parts: Iterable[StreamPart]) -> list[tuple[Any, ...]]:
    """Each part as a tuple of its kind and meaningful fields, for exact comparisons."""
    out: list[tuple[Any, ...]] = []
    for p in parts:
        if p.kind is StreamPartKind.TEXT_DELTA:
            out.append(("text-delta", p.text))
        elif p.kind is StreamPartKind.TOOL_CALL:
            assert p.tool_call is not None
            out.append(("tool-call", p.tool_call.id, p.tool_call.name, p.tool_call.input))
        elif p.kind is StreamPartKind.TOOL_RESULT:
            r = p.tool_result
            assert r is not None
            out.append(("tool-result", r.tool_call_id, r.name, r.content, r.is_error))
        elif p.kind is StreamPartKind.STEP_FINISH:
            assert p.finish_reason is not None
            out.append(("step-finish", p.finish_reason.value, p.usage))
        elif p.kind is StreamPartKind.FINISH:
            assert p.finish_reason is not None
            out.append(("finish", p.finish_reason.value, p.total_usage))
        else:
            assert p.finish_reason is not None
            out.append(("error", p.finish_reason.value, p.total_usage, p.err))
    return out


def kinds(parts: Iterable[StreamPart]) -> list[str]:
    return [p.kind.value for p in parts]


def assert_valid_history(messages: Sequence[Message]) -> None:
    """Every assistant tool call is answered, in order, by the very next message,
    which is one ``tool`` message; a ``tool`` message only follows such calls."""
    for index, message in enumerate(messages):
        if message.role is Role.TOOL:
            assert index > 0, "a tool message cannot open the history"
            previous = messages[index - 1]
            where = f"tool message {index} does not follow an assistant message with tool calls"
            assert previous.role is Role.ASSISTANT, where
            assert previous.tool_calls, where
        if message.role is Role.ASSISTANT and message.tool_calls:
            assert index + 1 < len(messages), f"assistant tool calls at {index} have no results"
            answer = messages[index + 1]
            assert answer.role is Role.TOOL, f"message {index + 1} should hold the tool results"
            assert [r.tool_call_id for r in answer.tool_results] == [c.id for c in message.tool_calls]
            assert [r.name for r in answer.tool_results] == [c.name for c in message.tool_calls]
            assert answer.text == ""
            assert answer.tool_calls == []


def alive_threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


def wait_no_threads(prefix: str, timeout: float = 5.0) -> list[threading.Thread]:
    """Poll until no thread whose name starts with ``prefix`` is alive; return those left."""
    deadline = time.monotonic() + timeout
    while True:
        alive = alive_threads(prefix)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.005)


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


SEND = "agentcore/engine/channel.py:send"
"""Where a run's worker sleeps while the queue to its reader is full (see :func:`asleep_in`)."""
RETRY_WAIT = "agentcore/engine/retry.py:retried"
"""Where a run's worker sleeps before a retry (see :func:`asleep_in`)."""


def asleep_in(thread_name: str, where: str, *, untimed: bool = False) -> bool:
    """True if a live thread called ``thread_name`` sleeps in a ``threading``
    wait (a condition or an event) that the function ``where`` called,
    directly or not; ``where`` is ``"path/of/module.py:function"``. What a
    test checks instead of sleeping and hoping that the thread got there.

    With ``untimed``, only a wait without a time limit counts, and only once
    the thread sleeps in the kernel (Linux): nothing but a notify or a
    signal can end it, so nothing wakes the thread until then."""
    path, _, function = where.rpartition(":")
    frames = sys._current_frames()
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1) if thread.name == thread_name else None
        if (
            frame is None
            or frame.f_code.co_name != "wait"
            or not frame.f_code.co_filename.endswith("threading.py")
        ):
            continue
        if untimed and (frame.f_locals.get("timeout") is not None or kernel_state(thread) != "S"):
            continue
        while frame is not None:
            if frame.f_code.co_name == function and frame.f_code.co_filename.endswith(path):
                return True
            frame = frame.f_back
    return False


def kernel_state(thread: threading.Thread) -> str:
    """The thread's state letter in Linux's ``/proc`` (``S``: asleep in the
    kernel, ``R``: running)."""
    with open(f"/proc/self/task/{thread.native_id}/stat") as stat:
        return stat.read().rpartition(")")[2].split()[0]


def together(count: int, work: Callable[[int], object]) -> None:
    """Call ``work(0)`` ... ``work(count - 1)``, each on a thread of its own,
    all released at once by a barrier; return when every one has returned,
    and raise the first error any of them raised."""
    start = threading.Barrier(count)
    errors: list[BaseException] = []

    def one(index: int) -> None:
        try:
            start.wait()
            work(index)
        except BaseException as exc:  # raised below, on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
