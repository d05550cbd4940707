"""Loop rule 7 of design.md, retries: the tenacity policy alone (engine/retry.py) and through the loop.

The policy takes ``sleep`` and ``rand``, so the tests record the exact waits
instead of sleeping; loop-level tests pass them as ``LoopOptions.retry_sleep``
and ``retry_jitter``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentcore import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_BASE_DELAY,
    DEFAULT_RETRY_MAX_DELAY,
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    RunError,
    Usage,
    run,
)
from agentcore.engine.retry import backoff_delay, retried, retry_policy
from agentcore.testing import ScriptedModel
from tests.loop_helpers import FuncTool, call, collect, options, summary, text, text_step, tool_step

RETRYABLE = [ErrorClass.RATE_LIMITED, ErrorClass.OVERLOADED, ErrorClass.TRANSIENT]
TERMINAL = [ErrorClass.UPSTREAM, ErrorClass.AUTH, ErrorClass.INVALID_REQUEST, ErrorClass.CONTEXT_LENGTH]


class Jitter:
    """A ``rand`` that returns ``values`` in turn and records its arguments."""

    def __init__(self, *values: float) -> None:
        self.values = values
        self.calls: list[tuple[float, float]] = []

    def __call__(self, low: float, high: float) -> float:
        self.calls.append((low, high))
        return self.values[(len(self.calls) - 1) % len(self.values)]


class Failing:
    """An attempt function that raises ``errors`` in turn, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.attempts = 0

    def __call__(self) -> str:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def policy(
    waits: list[float],
    *,
    max_retries: int = 2,
    base: float = 0.5,
    cap: float = 8.0,
    limit: float | None = None,
    ctx: Context | None = None,
    rand: Callable[[float, float], float] | None = None,
) -> Any:
    return retry_policy(
        max_retries=max_retries,
        base_delay=base,
        max_delay=cap,
        retry_after_limit=limit,
        ctx=ctx or Context(),
        sleep=waits.append,
        rand=rand or Jitter(1.0),
    )


# --- the policy alone --------------------------------------------------------------------------


def test_defaults() -> None:
    assert (DEFAULT_MAX_RETRIES, DEFAULT_RETRY_BASE_DELAY, DEFAULT_RETRY_MAX_DELAY) == (2, 0.5, 8.0)


@pytest.mark.parametrize(
    ("retry", "base", "cap", "jitter", "expected"),
    [
        (0, 0.5, 8.0, 1.0, 0.5),
        (1, 0.5, 8.0, 0.75, 0.75),
        (2, 0.5, 8.0, 1.0, 2.0),
        (4, 0.5, 8.0, 1.0, 8.0),
        (5, 0.5, 8.0, 0.75, 6.0),
        (3, 1.0, 5.0, 1.0, 5.0),
        (0, 2.0, 1.0, 0.75, 0.75),
    ],
)
def test_backoff_delay_formula(retry: int, base: float, cap: float, jitter: float, expected: float) -> None:
    assert backoff_delay(retry, base, cap, jitter) == expected


def test_backoff_sequence_is_exact_with_injected_sleep_and_jitter() -> None:
    waits: list[float] = []
    jitter = Jitter(1.0, 0.75)
    errors = [ModelError(ErrorClass.TRANSIENT, message=f"try {n}") for n in range(7)]
    attempt = Failing(*errors)
    with pytest.raises(ModelError) as info:
        policy(waits, max_retries=6, rand=jitter)(attempt)
    # min(0.5 * 2**n, 8) * (1.0 | 0.75) for n = 0..5
    assert waits == [0.5 * 1.0, 1.0 * 0.75, 2.0 * 1.0, 4.0 * 0.75, 8.0 * 1.0, 8.0 * 0.75]
    assert set(jitter.calls) == {(0.75, 1.0)}  # tenacity also computes a wait before it gives up
    assert attempt.attempts == 7
    assert info.value is errors[-1]


def test_success_after_retries_returns_the_value() -> None:
    waits: list[float] = []
    attempt = Failing(ModelError(ErrorClass.OVERLOADED), ModelError(ErrorClass.RATE_LIMITED))
    assert policy(waits, base=0.1, cap=1.0)(attempt) == "ok"
    assert waits == pytest.approx([0.1, 0.2])
    assert attempt.attempts == 3


def test_retry_after_is_honoured_verbatim_even_above_the_cap() -> None:
    waits: list[float] = []
    attempt = Failing(
        ModelError(ErrorClass.RATE_LIMITED, retry_after=20.0), ModelError(ErrorClass.OVERLOADED)
    )
    assert policy(waits, cap=8.0, rand=Jitter(0.75))(attempt) == "ok"
    # The hint replaces the first wait; the second is computed for retry 1: min(0.5*2, 8)*0.75.
    assert waits == [20.0, 0.75]


@pytest.mark.parametrize("error_class", RETRYABLE)
def test_retryable_classes_are_retried(error_class: ErrorClass) -> None:
    waits: list[float] = []
    attempt = Failing(ModelError(error_class))
    assert policy(waits)(attempt) == "ok"
    assert attempt.attempts == 2
    assert waits == [0.5]


@pytest.mark.parametrize("error_class", TERMINAL)
def test_terminal_classes_are_not_retried(error_class: ErrorClass) -> None:
    waits: list[float] = []
    error = ModelError(error_class, retry_after=1.0)
    attempt = Failing(error)
    with pytest.raises(ModelError) as info:
        policy(waits, max_retries=5)(attempt)
    assert info.value is error
    assert (attempt.attempts, waits) == (1, [])


@pytest.mark.parametrize("error", [ValueError("bug"), Canceled("gone"), KeyboardInterrupt()])
def test_other_exceptions_are_not_retried(error: BaseException) -> None:
    waits: list[float] = []
    attempt = Failing(error)
    with pytest.raises(type(error)):
        policy(waits, max_retries=5)(attempt)
    assert (attempt.attempts, waits) == (1, [])


def test_no_retry_when_the_context_is_cancelled() -> None:
    waits: list[float] = []
    ctx = Context()
    ctx.cancel()
    attempt = Failing(ModelError(ErrorClass.TRANSIENT))
    with pytest.raises(ModelError):
        policy(waits, ctx=ctx)(attempt)
    assert (attempt.attempts, waits) == (1, [])


def test_retry_after_limit_refuses_a_longer_hint_but_accepts_a_shorter_one() -> None:
    waits: list[float] = []
    long_hint = ModelError(ErrorClass.RATE_LIMITED, retry_after=30.0)
    with pytest.raises(ModelError) as info:
        policy(waits, limit=10.0)(Failing(long_hint))
    assert info.value is long_hint
    assert waits == []
    assert policy(waits, limit=10.0)(Failing(ModelError(ErrorClass.RATE_LIMITED, retry_after=10.0))) == "ok"
    assert waits == [10.0]


def test_a_hint_beyond_the_deadline_is_not_waited_for() -> None:
    waits: list[float] = []
    hint = ModelError(ErrorClass.OVERLOADED, retry_after=30.0)
    with pytest.raises(ModelError) as info:
        policy(waits, ctx=Context(timeout=5))(Failing(hint))
    assert info.value is hint
    assert waits == []
    assert (
        policy(waits, ctx=Context(timeout=60))(Failing(ModelError(ErrorClass.OVERLOADED, retry_after=3.0)))
        == "ok"
    )
    assert waits == [3.0]


@pytest.mark.parametrize(("max_retries", "attempts"), [(0, 1), (1, 2), (3, 4)])
def test_max_retries_counts_additional_attempts(max_retries: int, attempts: int) -> None:
    waits: list[float] = []
    attempt = Failing(*[ModelError(ErrorClass.TRANSIENT) for _ in range(10)])
    with pytest.raises(ModelError):
        policy(waits, max_retries=max_retries)(attempt)
    assert attempt.attempts == attempts
    assert len(waits) == attempts - 1


def test_the_default_wait_ends_at_once_on_cancel() -> None:
    ctx = Context()
    attempt = Failing(ModelError(ErrorClass.RATE_LIMITED, retry_after=30.0), ModelError(ErrorClass.TRANSIENT))
    retrying = retry_policy(max_retries=2, base_delay=0.5, max_delay=8.0, retry_after_limit=None, ctx=ctx)
    timer = threading.Timer(0.1, ctx.cancel)
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(Canceled):
            retrying(attempt)
    finally:
        timer.cancel()
    assert time.monotonic() - start < 5
    assert attempt.attempts == 1  # tenacity did not call the attempt again after the interrupted wait


def test_a_warning_is_logged_per_retry(caplog: pytest.LogCaptureFixture) -> None:
    waits: list[float] = []
    attempt = Failing(ModelError(ErrorClass.RATE_LIMITED), ModelError(ErrorClass.OVERLOADED, retry_after=3.0))
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        assert policy(waits, rand=Jitter(0.75))(attempt) == "ok"
    records = [r for r in caplog.records if r.name == "agentcore"]
    assert [r.levelno for r in records] == [logging.WARNING, logging.WARNING]
    first, second = (r.getMessage() for r in records)
    assert "RATE_LIMITED" in first
    assert "attempt 1 of 3" in first
    assert "retrying in 0.38 s" in first
    assert "OVERLOADED" in second
    assert "attempt 2 of 3" in second
    assert "retrying in 3.00 s" in second


# --- through the loop --------------------------------------------------------------------------


class Recorded(list[float]):
    """The waits of every retry of a run, recorded through
    ``LoopOptions.retry_sleep`` (with jitter 1.0 then 0.75): nothing sleeps."""

    def options(self, model: Any, **kwargs: Any) -> LoopOptions:
        return options(model, retry_sleep=self.append, retry_jitter=Jitter(1.0, 0.75), **kwargs)


@pytest.fixture
def recorded() -> Recorded:
    return Recorded()


@pytest.mark.parametrize("error_class", RETRYABLE)
def test_loop_retries_a_retryable_failure_before_any_output(
    error_class: ErrorClass, recorded: Recorded
) -> None:
    model = ScriptedModel([ModelError(error_class), text_step("Done", usage=Usage(3, 1))])
    parts = collect(run(recorded.options(model)))
    assert summary(parts) == [
        ("text-delta", "Done"),
        ("step-finish", "stop", Usage(3, 1)),
        ("finish", "stop", Usage(3, 1)),
    ]
    assert len(model.requests) == 2
    assert model.requests[0] == model.requests[1]
    assert recorded == [0.5]


@pytest.mark.parametrize("error_class", TERMINAL)
def test_loop_never_retries_a_terminal_failure(error_class: ErrorClass, recorded: Recorded) -> None:
    error = ModelError(error_class, message="prompt is too long: 210000 tokens > 200000 maximum", status=400)
    model = ScriptedModel([error, text_step("never")])
    parts = collect(run(recorded.options(model, max_retries=5)))
    assert summary(parts) == [("error", "error", Usage(), error)]
    assert len(model.requests) == 1
    assert recorded == []
    if error_class is ErrorClass.CONTEXT_LENGTH:
        assert "context window exceeded" in str(parts[-1].err)


def test_overloaded_event_before_any_content_is_retried(recorded: Recorded) -> None:
    model = ScriptedModel([[ModelError(ErrorClass.OVERLOADED, message="Overloaded")], text_step("Done")])
    parts = collect(run(recorded.options(model)))
    assert summary(parts) == [
        ("text-delta", "Done"),
        ("step-finish", "stop", Usage()),
        ("finish", "stop", Usage()),
    ]
    assert len(model.requests) == 2
    assert recorded == [0.5]


def test_overloaded_event_after_content_is_terminal(recorded: Recorded) -> None:
    error = ModelError(ErrorClass.OVERLOADED, message="Overloaded")
    model = ScriptedModel(
        [
            tool_step(call("c1", "search"), usage=Usage(8, 2)),
            [text("Hel"), error],
            text_step("Hello"),
        ]
    )
    parts = collect(run(recorded.options(model, tools=[FuncTool("search")])))
    assert summary(parts)[3:] == [("text-delta", "Hel"), ("error", "error", Usage(8, 2), error)]
    assert len(model.requests) == 2
    assert recorded == []


def test_http_529_then_a_stream_is_retried(recorded: Recorded) -> None:
    model = ScriptedModel([ModelError(ErrorClass.OVERLOADED, status=529), text_step("Done")])
    parts = collect(run(recorded.options(model)))
    assert [s[0] for s in summary(parts)] == ["text-delta", "step-finish", "finish"]
    assert parts[0].text == "Done"
    assert len(model.requests) == 2


def test_no_retry_once_text_was_delivered(recorded: Recorded) -> None:
    reset = ModelError(ErrorClass.TRANSIENT, message="connection reset")
    model = ScriptedModel([[text("Hello"), text(" wor"), reset], text_step("Hello world!")])
    parts = collect(run(recorded.options(model, max_retries=5)))
    assert summary(parts) == [
        ("text-delta", "Hello"),
        ("text-delta", " wor"),
        ("error", "error", Usage(), reset),
    ]
    assert len(model.requests) == 1
    assert recorded == []


def test_a_reset_before_the_first_delta_is_retried(recorded: Recorded) -> None:
    model = ScriptedModel([[ModelError(ErrorClass.TRANSIENT)], text_step("Hello", " world!")])
    parts = collect(run(recorded.options(model)))
    assert [p.text for p in parts if p.kind.value == "text-delta"] == ["Hello", " world!"]
    assert len(model.requests) == 2


def test_a_failure_after_a_tool_call_part_is_terminal(recorded: Recorded) -> None:
    error = ModelError(ErrorClass.TRANSIENT)
    model = ScriptedModel([[call("c1", "search"), error], tool_step(call("c1", "search"))])
    search = FuncTool("search")
    parts = collect(run(recorded.options(model, tools=[search])))
    assert summary(parts) == [("tool-call", "c1", "search", "{}"), ("error", "error", Usage(), error)]
    assert search.calls == []
    assert len(model.requests) == 1


@pytest.mark.parametrize(("max_retries", "calls"), [(None, 3), (0, 1), (1, 2), (5, 6)])
def test_loop_max_retries(max_retries: int | None, calls: int, recorded: Recorded) -> None:
    errors = [ModelError(ErrorClass.RATE_LIMITED, message=f"call {n}") for n in range(calls)]
    model = ScriptedModel([*errors, text_step("one call too many")])
    parts = collect(run(recorded.options(model, max_retries=max_retries)))
    assert len(model.requests) == calls
    assert summary(parts) == [("error", "error", Usage(), errors[-1])]
    assert len(recorded) == calls - 1


def test_loop_backoff_uses_the_defaults_for_unset_delays(recorded: Recorded) -> None:
    model = ScriptedModel([ModelError(ErrorClass.TRANSIENT)] * 3 + [text_step("ok")])
    parts = collect(run(recorded.options(model, max_retries=3, retry_base_delay=None, retry_max_delay=None)))
    assert parts[0].text == "ok"
    assert recorded == [0.5 * 1.0, 1.0 * 0.75, 2.0 * 1.0]


def test_loop_retries_at_once_with_zero_delays(recorded: Recorded) -> None:
    model = ScriptedModel([ModelError(ErrorClass.TRANSIENT)] * 2 + [text_step("ok")])
    parts = collect(run(recorded.options(model, retry_base_delay=0, retry_max_delay=0)))
    assert parts[0].text == "ok"
    assert recorded == [0.0, 0.0]


def test_loop_backoff_uses_the_configured_delays(recorded: Recorded) -> None:
    model = ScriptedModel([ModelError(ErrorClass.TRANSIENT)] * 4 + [text_step("ok")])
    collect(run(recorded.options(model, max_retries=4, retry_base_delay=1.0, retry_max_delay=3.0)))
    assert recorded == [1.0, 2.0 * 0.75, 3.0, 3.0 * 0.75]


def test_loop_honours_retry_after_verbatim_above_the_max_delay(recorded: Recorded) -> None:
    model = ScriptedModel([ModelError(ErrorClass.RATE_LIMITED, retry_after=20.0), text_step("ok")])
    parts = collect(run(recorded.options(model, retry_max_delay=8.0)))
    assert recorded == [20.0]
    assert parts[-1].finish_reason is FinishReason.STOP


def test_loop_retry_after_limit_refuses_a_longer_hint() -> None:
    hint = ModelError(ErrorClass.RATE_LIMITED, retry_after=30.0)
    model = ScriptedModel([hint, text_step("never")])
    start = time.monotonic()
    reader = run(options(model, retry_after_limit=10.0))
    parts = collect(reader)
    assert time.monotonic() - start < 2
    assert summary(parts) == [("error", "error", Usage(), hint)]
    assert len(model.requests) == 1
    with pytest.raises(RunError) as info:
        reader.result()
    assert isinstance(info.value.err, ModelError)
    assert info.value.err.retry_after == 30.0
    assert info.value.finish_reason is FinishReason.ERROR


def test_loop_deadline_shorter_than_the_hint_ends_at_once_with_the_model_error() -> None:
    hint = ModelError(ErrorClass.OVERLOADED, retry_after=30.0)
    model = ScriptedModel([hint, text_step("never")])
    start = time.monotonic()
    parts = collect(run(options(model), Context(timeout=5.0)))
    assert time.monotonic() - start < 2
    assert summary(parts) == [("error", "error", Usage(), hint)]
    assert len(model.requests) == 1


def test_loop_logs_a_warning_per_retry(caplog: pytest.LogCaptureFixture, recorded: Recorded) -> None:
    model = ScriptedModel(
        [
            ModelError(ErrorClass.RATE_LIMITED, retry_after=0.01),
            ModelError(ErrorClass.TRANSIENT, retry_after=0.02),
            text_step("ok"),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        collect(run(recorded.options(model)))
    assert recorded == [0.01, 0.02]
    warnings = [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name == "agentcore"
    ]
    assert len(warnings) == 2
    assert "RATE_LIMITED" in warnings[0]
    assert "attempt 1 of 3" in warnings[0]
    assert "0.01 s" in warnings[0]
    assert "TRANSIENT" in warnings[1]
    assert "attempt 2 of 3" in warnings[1]
    assert "0.02 s" in warnings[1]
    assert all("step 1 (scripted)" in w for w in warnings)


def test_loop_retries_each_step_independently(recorded: Recorded) -> None:
    model = ScriptedModel(
        [
            ModelError(ErrorClass.OVERLOADED),
            tool_step(call("c1", "search"), usage=Usage(1, 1)),
            ModelError(ErrorClass.OVERLOADED),
            ModelError(ErrorClass.OVERLOADED),
            text_step("ok", usage=Usage(2, 2)),
        ]
    )
    parts = collect(run(recorded.options(model, tools=[FuncTool("search")])))
    assert summary(parts)[-1] == ("finish", "stop", Usage(3, 3))
    assert len(model.requests) == 5
    # Each step starts its backoff from retry 0 again.
    # The jitter sequence (1.0, 0.75, 1.0) runs on across steps.
    assert recorded == [0.5 * 1.0, 0.5 * 0.75, 1.0 * 1.0]


def test_tenacity_is_imported_only_when_a_step_fails_retryably() -> None:
    # import agentcore stays light (tenacity imports asyncio); a step that
    # succeeds never needs the policy, a retryable failure builds it.
    code = (
        "import sys, agentcore\n"
        "from agentcore.testing import ScriptedModel\n"
        "from agentcore import ErrorClass, LoopOptions, ModelError, StreamPart, FinishReason, user_message\n"
        "assert 'tenacity' not in sys.modules and 'asyncio' not in sys.modules\n"
        "done = [StreamPart.text_delta('ok'), StreamPart.step_finish(FinishReason.STOP)]\n"
        "opts = LoopOptions(model=ScriptedModel([done]), messages=[user_message('hi')])\n"
        "assert agentcore.generate(opts).text == 'ok'\n"
        "assert 'tenacity' not in sys.modules\n"
        "model = ScriptedModel([ModelError(ErrorClass.TRANSIENT), done])\n"
        "opts = LoopOptions(model=model, messages=[user_message('hi')], retry_base_delay=0.001)\n"
        "assert agentcore.generate(opts).text == 'ok'\n"
        "assert 'tenacity' in sys.modules\n"
        "print(len(model.requests))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2"]


def test_retried_goes_on_from_the_first_failure_as_the_policys_attempt_1() -> None:
    # The step's first attempt runs without a policy (agentcore/engine/step.py); its
    # retryable failure is the policy's attempt 1: two retries remain, with the usual waits.
    waits: list[float] = []
    attempt = Failing(ModelError(ErrorClass.RATE_LIMITED, retry_after=2.0))
    assert retried(ModelError(ErrorClass.TRANSIENT), attempt, lambda: policy(waits)) == "ok"
    assert attempt.attempts == 2
    assert waits == [0.5, 2.0]
    exhausted = Failing(*[ModelError(ErrorClass.OVERLOADED) for _ in range(5)])
    waits.clear()
    with pytest.raises(ModelError):
        retried(ModelError(ErrorClass.OVERLOADED), exhausted, lambda: policy(waits))
    assert exhausted.attempts == 2
    assert waits == [0.5, 1.0]
