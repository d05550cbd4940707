"""The retry policy of a step: a ``tenacity`` policy built from ``LoopOptions``.

A step that fails with a retryable :class:`ModelError` (``RATE_LIMITED``,
``OVERLOADED``, ``TRANSIENT``) before any of its parts reached the reader is
tried again, up to ``LoopOptions.max_retries`` more times (0: never). Once a
part was forwarded, a failure is terminal: a retry would repeat text the
reader already has (design.md, loop rule 7). The step's attempt
(:mod:`agentcore.engine.step`) keeps that rule: it raises only a failure
that came before any part went to the reader, and returns a later one. The
defaults are ``LoopOptions``' (:mod:`agentcore.options`); this module gets
the values already resolved.

The wait before retry ``n`` (counting from 0) is
``min(base * 2**n, cap) * random.uniform(0.75, 1.0)`` seconds, the vendor SDKs'
formula, with ``base`` = ``retry_base_delay`` and ``cap`` =
``retry_max_delay``. A server's Retry-After (``ModelError.retry_after``)
replaces the computed wait and is honoured as given, even above the cap
(loop rule 7); ``retry_after_limit`` (seconds, None = no limit) refuses a
longer hint and ends the run with the error instead, and so does any wait
(hint or computed) that would outlast the context's deadline.

Waits sleep on the run's :class:`Context`, so a cancel or deadline ends them at
once with :class:`Canceled`. tenacity would call the attempt again after an
interrupted sleep, so each attempt also checks the context first.

A step's first attempt runs without tenacity (in
:meth:`agentcore.engine.step.StepStreamer.stream`); tenacity is imported and
the policy built only once that attempt failed retryably (:func:`retried`),
so ``import agentcore`` does not load tenacity (nor the asyncio it imports)
and a step that succeeds pays nothing for its retry policy.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from agentcore.context import Context
from agentcore.errors import ModelError

if TYPE_CHECKING:
    import tenacity

_T = TypeVar("_T")

_log = logging.getLogger("agentcore")


@attrs.frozen
class RetrySettings:
    """How a run retries a step: ``LoopOptions``' retry fields, defaults applied.

    Attributes:
        max_retries: additional attempts (>= 0).
        base_delay: backoff base in seconds (> 0).
        max_delay: backoff cap in seconds (> 0).
        retry_after_limit: the longest server hint in seconds to wait for; None = any.
        sleep: replaces the wait on the run's context (``LoopOptions.retry_sleep``); None.
        jitter: ``jitter(0.75, 1.0)`` gives a backoff's random factor.
    """

    max_retries: int
    base_delay: float
    max_delay: float
    retry_after_limit: float | None = None
    sleep: Callable[[float], object] | None = None
    jitter: Callable[[float, float], float] = random.uniform


def backoff_delay(retry: int, base: float, cap: float, jitter: float) -> float:
    """The computed wait in seconds before retry ``retry`` (from 0).

    Args:
        retry: how many retries came before this one.
        base: ``retry_base_delay`` in seconds.
        cap: ``retry_max_delay`` in seconds.
        jitter: a factor in [0.75, 1.0].
    """
    return min(base * 2.0**retry, cap) * jitter


class _Wait:
    def __init__(self, base: float, cap: float, rand: Callable[[float, float], float]) -> None:
        self._base = base
        self._cap = cap
        self._rand = rand

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        assert retry_state.outcome is not None
        exc = retry_state.outcome.exception()
        if isinstance(exc, ModelError) and exc.retry_after > 0:
            return exc.retry_after
        return backoff_delay(retry_state.attempt_number - 1, self._base, self._cap, self._rand(0.75, 1.0))


class _StopBeforeDeadline:
    """Give up (re-raising the error) when the next wait would outlast the
    context's deadline: the caller learns why, instead of a bare deadline."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        remaining = self._ctx.remaining()
        return remaining is not None and retry_state.upcoming_sleep > remaining


def retry_policy(
    *,
    max_retries: int,
    base_delay: float,
    max_delay: float,
    retry_after_limit: float | None,
    ctx: Context,
    describe: str = "model step",
    sleep: Callable[[float], object] | None = None,
    rand: Callable[[float, float], float] = random.uniform,
    on_retry: Callable[[BaseException, int, float], object] | None = None,
) -> tenacity.Retrying:
    """Build the tenacity policy for one step.

    Args:
        max_retries: additional attempts (>= 0; 0: none).
        base_delay: backoff base in seconds (>= 0).
        max_delay: backoff cap in seconds (>= 0).
        retry_after_limit: the longest server hint in seconds to wait for; None = any.
        ctx: the run's context; waits end at once when it is cancelled.
        describe: what is retried, for the log line.
        sleep: replaces the cancellable wait (``LoopOptions.retry_sleep``:
            tests record the sequence instead of sleeping).
        rand: ``rand(0.75, 1.0)`` gives the jitter factor (``LoopOptions.retry_jitter``).
        on_retry: called with the error, the attempt that failed (from 1)
            and the wait in seconds before each retry (the run's tracing).

    Returns:
        A ``tenacity.Retrying`` that re-raises the last error when it gives up.
    """
    import tenacity  # here, not at the top: see the module docstring

    def should_retry(exc: BaseException) -> bool:
        if not isinstance(exc, ModelError) or not exc.error_class.retryable:
            return False
        if ctx.cancelled:
            return False
        return retry_after_limit is None or exc.retry_after <= retry_after_limit

    def wait(seconds: float) -> None:
        if sleep is not None:
            sleep(seconds)
        elif ctx.wait(seconds):
            ctx.check()

    def log_retry(state: tenacity.RetryCallState) -> None:
        assert state.outcome is not None
        assert state.next_action is not None
        exc = state.outcome.exception()
        kind = exc.error_class.name if isinstance(exc, ModelError) else type(exc).__name__
        _log.warning(
            "agentcore: %s failed with %s (attempt %d of %d); retrying in %.2f s: %s",
            describe,
            kind,
            state.attempt_number,
            max_retries + 1,
            state.next_action.sleep,
            str(exc),  # text, not the exception: a record kept by a handler must not hold its traceback
        )
        if on_retry is not None and exc is not None:
            on_retry(exc, state.attempt_number, state.next_action.sleep)

    out_of_attempts = tenacity.stop_after_attempt(max_retries + 1)
    too_late = _StopBeforeDeadline(ctx)
    return tenacity.Retrying(
        stop=lambda state: out_of_attempts(state) or too_late(state),
        wait=_Wait(base_delay, max_delay, rand),
        retry=tenacity.retry_if_exception(should_retry),
        sleep=wait,
        before_sleep=log_retry,
        reraise=True,
    )


def retried(failed: ModelError, attempt: Callable[[], _T], policy: Callable[[], tenacity.Retrying]) -> _T:
    """The rest of a step whose first ``attempt()`` failed with ``failed``,
    a retryable :class:`ModelError`: ``policy()`` (built now) sees that
    failure as its attempt 1 and calls ``attempt()`` again as it decides (the
    same decisions, waits and log lines as a policy wrapped around every
    attempt).

    Raises:
        ModelError: the last failure, when the policy gives up.
        Canceled: the run was cancelled during a wait.
    """
    return policy()(_Replay(failed, attempt))


class _Replay(Generic[_T]):
    """Raises ``failed`` on its first call, then calls ``attempt``.

    A class, not a closure: the frames of a kept error's traceback must not
    reach the attempt (and the model it streams from) through closure cells.
    """

    def __init__(self, failed: ModelError, attempt: Callable[[], _T]) -> None:
        self._failed: ModelError | None = failed
        self._attempt = attempt

    def __call__(self) -> _T:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed
        return self._attempt()
