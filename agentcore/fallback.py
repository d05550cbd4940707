"""Fallback models: a step one model cannot answer goes to the next
(design.md, "Fallback models"; ``docs/controls.md``).

:class:`FallbackModel` is a :class:`~agentcore.model.Model` made of a
primary model and the models to fall back to, in order. In a run the loop
streams each step from the primary, with the run's retries (loop rule 7);
when the step still fails before any of its parts reached the reader, with
an error class the model falls back on, the loop sends the same request to
the next model, which gets the run's retries afresh. Once a part of the step
went to the reader nothing falls back, as nothing retries: the reader would
get the answer twice. Each step starts again at the primary.

Called directly (``stream(request, ctx)`` outside a run, as
:func:`agentcore.testing.check_model` does), it does the same with one
attempt per model: retries are the loop's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.model import Model, window_of
from agentcore.types import Request, StreamPart

__all__ = ["DEFAULT_FALLBACK_ON", "FallbackModel"]

_log = logging.getLogger("agentcore")

DEFAULT_FALLBACK_ON = frozenset(
    {ErrorClass.RATE_LIMITED, ErrorClass.OVERLOADED, ErrorClass.TRANSIENT, ErrorClass.CONTEXT_LENGTH}
)
"""The error classes a :class:`FallbackModel` falls back on by default: a
rate limit, an overloaded server and a transient failure once the run's
retries for them are spent, and a context-length refusal when a later model
has a larger window. An invalid request, an authentication failure and an
upstream error (a plain 500) are not in it: another model would most likely
be refused the same way, or the caller should hear of it."""


class FallbackModel:
    """A model that sends a step its primary cannot answer to the next model.

    Args:
        primary: the model every step goes to first.
        *fallbacks: the models to try next, in order (at least one). A
            fallback may itself be a ``FallbackModel``.
        fallback_on: the :class:`ErrorClass` members to fall back on
            (default :data:`DEFAULT_FALLBACK_ON`). A retryable class
            (``RATE_LIMITED``, ``OVERLOADED``, ``TRANSIENT``) falls back once
            the run's retries of that model are spent (``max_retries``; a
            Retry-After above ``retry_after_limit``, or a wait that would
            outlast the run's deadline, spends them at once);
            ``CONTEXT_LENGTH`` goes to the first later model whose context
            window (its ``context_window``, else the table's
            :func:`agentcore.tokens.context_window`) is known and larger than
            the refusing model's, and to none when the refusing model's
            window is not known; any other class falls back at once.

    The request goes to a fallback as it is: the run's settings, tools and
    structured-output schema must be ones every model accepts (a model that
    refuses them raises its :class:`ConfigError`, which never falls back).
    Reasoning and server-tool blocks a provider made go back only to that
    provider; the adapters leave another's out (design.md, "Reasoning").

    Attributes:
        models: the primary, then the fallbacks.
        fallback_on: the classes it falls back on.

    Raises:
        ConfigError: no fallback, a model that is not a ``Model`` (no
            ``model_id`` or ``stream``), or a ``fallback_on`` that is not an
            iterable of :class:`ErrorClass` members.
    """

    def __init__(
        self, primary: Model, *fallbacks: Model, fallback_on: Iterable[ErrorClass] = DEFAULT_FALLBACK_ON
    ) -> None:
        if not fallbacks:
            raise ConfigError("FallbackModel needs at least one model to fall back to after the primary")
        for position, model in enumerate((primary, *fallbacks)):
            if not isinstance(model, Model):
                raise ConfigError(
                    f"FallbackModel's model {position} must be a Model (model_id and stream), "
                    f"got {type(model).__name__}"
                )
        if isinstance(fallback_on, (str, bytes, ErrorClass)) or not isinstance(fallback_on, Iterable):
            raise ConfigError(
                f"fallback_on must be an iterable of ErrorClass members, got {type(fallback_on).__name__}"
            )
        classes = tuple(fallback_on)
        stray = [value for value in classes if not isinstance(value, ErrorClass)]
        if stray:
            raise ConfigError(f"fallback_on holds {stray[0]!r}, not an ErrorClass member")
        self.models: tuple[Model, ...] = (primary, *fallbacks)
        self.fallback_on: frozenset[ErrorClass] = frozenset(classes)

    @property
    def model_id(self) -> str:
        """The primary's model id (the id of the model that answered a step
        is on its ``StepResult.model_id``)."""
        return self.models[0].model_id

    @property
    def context_window(self) -> int | None:
        """The primary's context window in tokens (None: not known): the
        window the history policies keep a run's prompt under."""
        return window_of(self.models[0])

    @property
    def count_tokens(self) -> Callable[..., int] | None:
        """The primary's ``count_tokens`` (None when it has none: a history
        policy then estimates)."""
        count: Callable[..., int] | None = getattr(self.models[0], "count_tokens", None)
        return count if callable(count) else None

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(repr(model) for model in self.models)})"

    def next_model(self, err: ModelError, index: int) -> int | None:
        """Where a step goes after ``models[index]`` failed with ``err``
        before any of its parts reached the reader (its retries spent): the
        index of the next model, or None when the step fails with ``err``
        (a class not in :attr:`fallback_on`, no model left, or for a
        context-length refusal no later model with a larger known window)."""
        if err.error_class not in self.fallback_on:
            return None
        later = range(index + 1, len(self.models))
        if err.error_class is not ErrorClass.CONTEXT_LENGTH:
            return later[0] if later else None
        refused = window_of(self.models[index])
        if refused is None:
            return None
        return next((i for i in later if (window_of(self.models[i]) or 0) > refused), None)

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Stream ``request`` from the primary, falling back as :meth:`next_model`
        says after a failure before the first part; one attempt per model (a
        run's loop does not call this: it streams each model with its retries).

        Raises:
            ConfigError: a model refused the request before sending it.
            ModelError: the last model tried failed, or one failed after a part.
            Canceled: ``ctx`` was cancelled.
        """
        index = 0
        while True:
            parts: Any = None
            started = False
            try:
                parts = self.models[index].stream(request, ctx)
                for part in parts:
                    started = True
                    yield part
                return
            except ModelError as exc:
                following = None if started else self.next_model(exc, index)
                if following is None:
                    raise
                log_fallback(self.models[index], exc, self.models[following])
                index = following
            finally:
                close = getattr(parts, "close", None)
                if close is not None:
                    close()


def log_fallback(failed: Model, err: ModelError, following: Model) -> None:
    """One WARNING line: a step goes from ``failed`` to ``following``."""
    _log.warning(
        "agentcore: %s failed with %s (%s); the step goes to %s",
        failed.model_id,
        err.error_class.name,
        err,
        following.model_id,
    )
