"""Middleware (agentcore/middleware.py, design.md "Middleware"): the order of a
stack, what a wrap_model and a wrap_tool may change, their exceptions handled
as the model's and the tool's own, cancellation through the context, the tool's
thread with parallel_tools, durable replays, and the shipped redaction and
logging middleware."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import pytest

from agentcore import (
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoggingMiddleware,
    LoopOptions,
    Middleware,
    ModelError,
    RedactionMiddleware,
    Request,
    Role,
    RunError,
    StepPlan,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    generate,
    run,
    user_message,
)
from agentcore.middleware import ModelNext, ToolNext
from agentcore.testing import ScriptedModel
from tests.loop_helpers import FuncTool, call, collect, options, step_finish, text, text_step, tool_step
from tests.test_durable import RecordingRunner


class Recorder(Middleware):
    """Records entering and leaving each call under ``name`` in the shared ``log``."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterator[StreamPart]:
        self.log.append(f"{self.name} model in")
        yield from call_next(request, ctx)
        self.log.append(f"{self.name} model out")  # never: the loop stops at step-finish

    def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
        self.log.append(f"{self.name} tool in")
        result = call_next(call, ctx)
        self.log.append(f"{self.name} tool out")
        return result


def test_a_stack_nests_in_list_order_the_first_outermost() -> None:
    log: list[str] = []

    def inner_tool(_arguments: dict[str, Any], _ctx: Context) -> str:
        log.append("tool")
        return "done"

    model = ScriptedModel([tool_step(call("c1", "t")), text_step("ok")])
    result = generate(
        options(model, tools=[FuncTool("t", inner_tool)], middleware=[Recorder("a", log), Recorder("b", log)])
    )
    assert result.text == "ok"
    assert log == [
        "a model in",
        "b model in",
        "a tool in",
        "b tool in",
        "tool",
        "b tool out",
        "a tool out",
        "a model in",
        "b model in",
    ]


class Stamp(Middleware):
    """Adds a user message to each request and records the request it got."""

    def __init__(self) -> None:
        self.seen: list[Request] = []

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        self.seen.append(request)
        return call_next(attrs.evolve(request, messages=(*request.messages, user_message("stamped"))), ctx)


def test_wrap_model_sees_the_request_after_prepare_step_and_changes_what_the_model_gets() -> None:
    stamp = Stamp()
    model = ScriptedModel([text_step("ok")])
    result = generate(
        options(model, middleware=[stamp], prepare_step=lambda draft: StepPlan(system="planned"))
    )
    assert [request.system for request in stamp.seen] == ["planned"]
    assert [m.text for m in model.requests[0].messages] == ["hi", "stamped"]
    # The change was for the request: the history the run keeps has no stamp.
    assert [m.text for m in result.messages] == ["hi", "ok"]


def test_wrap_model_may_answer_without_the_model() -> None:
    class Canned(Middleware):
        def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
            return [text("cached answer"), step_finish(FinishReason.STOP, Usage(0, 0))]

    idle = ScriptedModel([])
    result = generate(options(idle, middleware=[Canned()]))
    assert result.text == "cached answer"
    assert idle.requests == []


class Flaky(Middleware):
    """Raises ``errors`` in turn, one per attempt, then passes through."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.attempts = 0

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return call_next(request, ctx)


def test_a_retryable_model_error_from_wrap_model_is_retried_as_the_models_own() -> None:
    waits: list[float] = []
    flaky = Flaky(ModelError(ErrorClass.OVERLOADED, message="busy"))
    model = ScriptedModel([text_step("ok")])
    result = generate(
        options(model, middleware=[flaky], retry_sleep=waits.append, retry_jitter=lambda a, b: 1.0)
    )
    assert result.text == "ok"
    assert flaky.attempts == 2  # around each attempt, not around the retried step
    assert waits == [0.5]
    assert len(model.requests) == 1


def test_a_terminal_model_error_or_another_exception_from_wrap_model_ends_the_run() -> None:
    for err in (ModelError(ErrorClass.AUTH, message="no key"), ValueError("bad middleware")):
        flaky = Flaky(err)
        with pytest.raises(RunError) as info:
            generate(options(ScriptedModel([text_step("never")]), middleware=[flaky]))
        assert info.value.err is err
        assert info.value.finish_reason is FinishReason.ERROR
        assert flaky.attempts == 1


def transient_after(*texts: str) -> list[Any]:
    """A step that streams ``texts`` and then fails as a dropped connection does."""
    return [*(text(t) for t in texts), ModelError(ErrorClass.TRANSIENT, message="connection reset")]


def test_output_a_buffering_middleware_held_back_was_not_forwarded_so_the_step_is_retried() -> None:
    # Loop rule 7 counts what reached the reader: the outermost stream's parts.
    class Buffer(Middleware):
        def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
            return list(call_next(request, ctx))

    model = ScriptedModel([transient_after("Hel"), text_step("Hello")])
    parts = collect(run(options(model, middleware=[Buffer()], retry_sleep=lambda _s: None)))
    assert [p.text for p in parts if p.kind.value == "text-delta"] == ["Hello"]
    assert parts[-1].finish_reason is FinishReason.STOP
    assert len(model.requests) == 2


def test_output_a_passing_middleware_forwarded_is_not_retried() -> None:
    model = ScriptedModel([transient_after("Hel"), text_step("Hello")])
    reader = run(options(model, middleware=[Middleware()], retry_sleep=lambda _s: None))
    with pytest.raises(RunError) as info:
        reader.result()
    assert isinstance(info.value.err, ModelError)
    assert info.value.err.error_class is ErrorClass.TRANSIENT
    assert len(model.requests) == 1


class Rewrite(Middleware):
    def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
        if call.name == "skip":
            return ToolResult(call.id, call.name, "skipped by middleware")
        if call.name == "double":
            return call_next(attrs.evolve(call, input='{"n": 42}'), ctx)
        if call.name == "boom":
            raise RuntimeError("middleware broke")
        if call.name == "wrong":
            return ToolResult("other", call.name, "?")
        result = call_next(call, ctx)
        return attrs.evolve(result, content=result.content.upper())


def test_wrap_tool_changes_arguments_skips_calls_changes_results_and_its_exception_is_an_error_result() -> (
    None
):
    tools = [
        FuncTool("skip"),
        FuncTool("double", lambda arguments, _ctx: f"n={arguments['n']}"),
        FuncTool("boom"),
        FuncTool("wrong"),
        FuncTool("loud", lambda _arguments, _ctx: "quiet"),
    ]
    model = ScriptedModel(
        [
            tool_step(
                call("c1", "skip"),
                call("c2", "double", '{"n": 1}'),
                call("c3", "boom"),
                call("c4", "wrong"),
                call("c5", "loud"),
            ),
            text_step("ok"),
        ]
    )
    result = generate(options(model, tools=tools, middleware=[Rewrite()]))
    assert [(r.content, r.is_error) for r in result.steps[0].tool_results] == [
        ("skipped by middleware", False),
        ("n=42", False),
        ("Error: RuntimeError: middleware broke", True),
        ("Error: a middleware returned the result of call 'other'", True),
        ("QUIET", False),
    ]
    assert tools[0].calls == []  # skipped: the tool never ran
    assert tools[1].calls == [{"n": 42}]
    # What the model is sent next is what the middleware made.
    sent = model.requests[1].messages[-1].content
    assert [part.tool_result.content for part in sent if part.tool_result] == [
        r.content for r in result.steps[0].tool_results
    ]


def test_wrap_model_sees_the_runs_cancel_through_its_context() -> None:
    entered = threading.Event()
    left = threading.Event()
    seen: list[bool] = []

    class Waits(Middleware):
        def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
            entered.set()
            seen.append(ctx.wait())  # until the run is cancelled
            left.set()
            ctx.check()
            return call_next(request, ctx)

    caller = Context()
    model = ScriptedModel([text_step("never")])
    reader = run(options(model, middleware=[Waits()]), caller)
    assert entered.wait(10)
    caller.cancel()
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED  # queued by the cancel at once
    assert left.wait(10)
    assert seen == [True]
    assert model.requests == []


def test_wrap_tool_sees_the_reader_close_through_its_context() -> None:
    entered = threading.Event()
    left = threading.Event()
    seen: list[bool] = []

    class Waits(Middleware):
        def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
            entered.set()
            seen.append(ctx.wait())
            left.set()
            return call_next(call, ctx)

    model = ScriptedModel([tool_step(call("c1", "t")), text_step("never")])
    reader = run(options(model, tools=[FuncTool("t")], middleware=[Waits()]))
    assert entered.wait(10)
    reader.close()
    assert left.wait(10)
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.finish_reason is FinishReason.CANCELED
    assert seen == [True]
    # The call the cancel left has its result in the history (loop rule 8).
    assert info.value.messages[-1].role is Role.TOOL


def test_wrap_tool_runs_on_each_calls_own_thread_with_parallel_tools() -> None:
    # Forced interleaving: each call's middleware waits until the other's has
    # started, which only ends if both run at once.
    started = {"c1": threading.Event(), "c2": threading.Event()}
    threads: dict[str, str] = {}
    lock = threading.Lock()

    class Meet(Middleware):
        def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
            with lock:
                threads[call.id] = threading.current_thread().name
            started[call.id].set()
            other = "c2" if call.id == "c1" else "c1"
            assert started[other].wait(10)
            return call_next(call, ctx)

    model = ScriptedModel([tool_step(call("c1", "t"), call("c2", "t")), text_step("ok")])
    result = generate(options(model, tools=[FuncTool("t")], middleware=[Meet()], parallel_tools=True))
    assert [r.content for r in result.steps[0].tool_results] == ["t ok", "t ok"]
    assert threads == {"c1": "agentcore-tool", "c2": "agentcore-tool"}


def test_a_replayed_step_or_call_does_not_go_through_middleware() -> None:
    runner = RecordingRunner()
    log: list[str] = []
    first = LoopOptions(
        model=ScriptedModel([tool_step(call("c1", "t")), text_step("ok")]),
        messages=[user_message("go")],
        tools=[FuncTool("t")],
        run_id="wf-m",
        step_runner=runner,
        middleware=[Recorder("a", log)],
    )
    assert generate(first).text == "ok"
    assert log == ["a model in", "a tool in", "a tool out", "a model in"]
    log.clear()
    replay = attrs.evolve(first, model=ScriptedModel([]))
    assert generate(replay).text == "ok"
    assert log == []


def test_loop_options_refuses_what_is_not_a_middleware() -> None:
    with pytest.raises(ConfigError, match="wrap_model"):
        LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], middleware=[object()])
    one = Middleware()
    assert LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], middleware=one).middleware == (
        one,
    )


# --- the shipped middleware ---------------------------------------------------------------

SECRET = "sk-live-1234567890"


def test_redaction_takes_patterns_out_of_every_request_and_out_of_tool_results() -> None:
    redact = RedactionMiddleware(r"sk-live-\d+", lambda text: text.replace("Alice", "[NAME]"))
    tool = FuncTool("lookup", lambda _arguments, _ctx: f"Alice's key is {SECRET}")
    model = ScriptedModel([tool_step(call("c1", "lookup")), text_step("noted")])
    result = generate(
        LoopOptions(
            model=model,
            system=f"Never repeat {SECRET}.",
            messages=[user_message(f"My key is {SECRET}, I am Alice")],
            tools=[tool],
            middleware=[redact],
        )
    )
    for request in model.requests:
        assert SECRET not in request.system
        assert all(SECRET not in m.text and "Alice" not in m.text for m in request.messages)
    assert model.requests[0].system == "Never repeat [REDACTED]."
    assert model.requests[0].messages[0].text == "My key is [REDACTED], I am [NAME]"
    sent = model.requests[1].messages[-1].content[0].tool_result
    assert sent is not None
    assert sent.content == "[NAME]'s key is [REDACTED]"
    # The history keeps the tool result as redacted, and the caller's message as given.
    assert result.steps[0].tool_results[0].content == "[NAME]'s key is [REDACTED]"
    assert result.messages[0].text == f"My key is {SECRET}, I am Alice"
    assert result.messages[2].content[0].tool_result == result.steps[0].tool_results[0]


def test_redaction_refuses_what_is_not_a_pattern() -> None:
    with pytest.raises(TypeError, match="regular expressions or callables"):
        RedactionMiddleware(42)  # type: ignore[arg-type]  # the mistake under test


def test_logging_logs_one_line_per_call_with_its_duration_and_no_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedModel(
        [tool_step(call("c1", "t", '{"q": "private"}'), usage=Usage(10, 2)), text_step("secret answer")]
    )
    with caplog.at_level(logging.INFO, logger="agentcore.middleware"):
        generate(
            options(
                model,
                tools=[FuncTool("t", lambda _a, _c: "private result")],
                middleware=[LoggingMiddleware()],
            )
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "agentcore.middleware"]
    assert len(lines) == 3
    assert lines[0].startswith("agentcore: model call (1 message): ")
    assert lines[0].endswith(" s, finish tool-calls, 10 input, 2 output tokens")
    assert lines[1].startswith("agentcore: tool t (call c1): ")
    assert lines[1].endswith(" s, ok")
    assert lines[2].startswith("agentcore: model call (3 messages): ")
    assert not any("private" in line or "secret" in line for line in lines)


def test_logging_logs_the_content_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([tool_step(call("c1", "t", '{"q": 1}')), text_step("the ", "answer")])
    with caplog.at_level(logging.INFO, logger="agentcore.middleware"):
        generate(options(model, tools=[FuncTool("t")], middleware=[LoggingMiddleware(content=True)]))
    lines = [r.getMessage() for r in caplog.records if r.name == "agentcore.middleware"]
    assert lines[1].endswith(""", ok, arguments {"q": 1}, result 't ok'""")
    assert lines[2].endswith(", text 'the answer'")


def test_logging_logs_a_failed_model_call_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedModel([ModelError(ErrorClass.AUTH, message="no key")])
    with caplog.at_level(logging.INFO, logger="agentcore.middleware"), pytest.raises(RunError):
        generate(options(model, middleware=[LoggingMiddleware()]))
    records = [r for r in caplog.records if r.name == "agentcore.middleware"]
    assert [r.levelno for r in records] == [logging.WARNING]
    assert (
        records[0].getMessage().endswith(" s: authentication failed: no key")
    )  # the class, not just the type


def test_logging_takes_a_loggers_name_and_refuses_what_is_not_a_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="myapp.agent"):
        generate(
            options(ScriptedModel([text_step("hi")]), middleware=[LoggingMiddleware(logger="myapp.agent")])
        )
    assert [r.name for r in caplog.records if "model call" in r.getMessage()] == ["myapp.agent"]
    with pytest.raises(
        ConfigError, match=r"logger must be a logging\.Logger, a logger's name or None, got 3"
    ):
        LoggingMiddleware(logger=3)  # type: ignore[arg-type]  # what the check is for
