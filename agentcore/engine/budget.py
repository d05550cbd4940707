"""A run's budget: what each step cost (:mod:`agentcore.cost`) and whether
the run may go on under its usage limits (:mod:`agentcore.limits`, loop
rule 16). The loop makes one :class:`Budget` for a run with limits, or at
its first step whose model has a price to look up; a plain run on a test
double never does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from agentcore.cost import Pricer, model_name
from agentcore.errors import ConfigError
from agentcore.fallback import FallbackModel
from agentcore.limits import LimitReached, UsageLimits
from agentcore.model import Model
from agentcore.options import LoopOptions
from agentcore.result import StepResult, total_cost
from agentcore.settings import ModelSettings
from agentcore.types import ToolCall, ToolResult, Usage


def check_prices(options: LoopOptions) -> None:
    """Refuse a ``cost`` limit the run could not keep: without prices, or
    for a model (the run's, every model of a :class:`FallbackModel`, or a
    history policy's) that has none.

    Raises:
        ConfigError: naming the model and why it has no price.
    """
    pricer = Pricer()
    if not pricer.installed:
        raise ConfigError(
            "UsageLimits(cost=...) needs prices: pip install 'agentcore[prices]' (the genai-prices package)"
        )
    # A policy with a model (Summarize) calls it; one without (SlidingWindow) calls none.
    models = [options.model, *(policy.model for policy in options.history_policy if hasattr(policy, "model"))]
    for model in (leaf for each in models for leaf in leaves(each)):
        reason = pricer.unknown_reason(model)
        if reason is not None:
            raise ConfigError(
                f"UsageLimits(cost=...) cannot be kept: no price for {model_name(model)}: {reason}"
            )


def leaves(model: Model) -> list[Model]:
    """The models that may answer a step sent to ``model``: a
    :class:`FallbackModel`'s models (a nested one's too), else ``model``."""
    if isinstance(model, FallbackModel):
        return [leaf for inner in model.models for leaf in leaves(inner)]
    return [model]


class Budget:
    """The prices and the usage limits of one run (used by its worker only).

    Args:
        limits: the run's ``LoopOptions.limits``; None: none (the budget then
            only prices steps).
    """

    def __init__(self, limits: UsageLimits | None) -> None:
        self.limits = limits
        self._pricer: Pricer | None = None

    def step_cost(
        self,
        usage: Usage,
        model: Model,
        settings: ModelSettings | None,
        summaries: Sequence[tuple[Usage, object]],
    ) -> Decimal | None:
        """The cost of a step ``model`` answered with ``usage`` under the
        request's ``settings``, and of the summary calls before it (each
        priced with its policy's model); None when one has no price."""
        if self._pricer is None:
            self._pricer = Pricer()
        total = self._pricer.cost(usage, model, settings)
        for summary_usage, summary_model in summaries:
            summary = self._pricer.cost(summary_usage, summary_model)
            total = None if total is None or summary is None else total + summary
        return total

    def before_request(
        self, usage: Usage, steps: list[StepResult], sub_runs: Decimal | None, projected: int
    ) -> LimitReached | None:
        """The usage limit the next request would go over, its prompt
        ``projected`` tokens at least (0: not known); None. ``usage``
        counts the sub-runs' tokens; ``sub_runs`` is their cost (US dollars;
        None: not priced)."""
        if self.limits is None:
            return None
        return self.limits.before_request(usage, len(steps), self._run_cost(steps, sub_runs), projected)

    def after_step(
        self, usage: Usage, steps: list[StepResult], sub_runs: Decimal | None
    ) -> LimitReached | None:
        """The usage limit the run went over with its last step (or its
        sub-runs, see :meth:`before_request`); None."""
        if self.limits is None:
            return None
        return self.limits.after_step(usage, self._run_cost(steps, sub_runs))

    def refused_calls(
        self,
        calls: Sequence[ToolCall],
        steps: list[StepResult],
        over: LimitReached | None,
        uncounted: Callable[[ToolCall | ToolResult], bool],
    ) -> tuple[LimitReached | None, set[str]]:
        """The limit that keeps some of ``calls`` from running, and their
        ids: every call when the step went ``over`` a limit, else those past
        the ``tool_calls`` limit, in call order; ``(None, set())`` for none.
        A call ``uncounted`` says is (the ``final_answer`` of the tool mode)
        is never refused nor counted."""
        if self.limits is None:
            return None, set()
        countable = [call for call in calls if not uncounted(call)]
        if over is not None:
            return over, {call.id for call in countable}
        calls_run = sum(1 for step in steps for result in step.tool_results if not uncounted(result))
        allowed = self.limits.calls_allowed(calls_run)
        if allowed is None or len(countable) <= allowed:
            return None, set()
        assert self.limits.tool_calls is not None
        reached = LimitReached("tool_calls", self.limits.tool_calls, calls_run + len(countable))
        return reached, {call.id for call in countable[allowed:]}

    def _run_cost(self, steps: list[StepResult], sub_runs: Decimal | None) -> Decimal | None:
        """The run's cost so far, its steps' and its sub-runs', for a
        ``cost`` limit (None without one).

        Raises:
            ConfigError: a step's or a sub-run's price is unknown
                (``prepare_step`` chose a model without one): the limit
                cannot be kept.
        """
        if self.limits is None or self.limits.cost is None:
            return None
        if sub_runs is None:
            raise ConfigError(
                "UsageLimits(cost=...) cannot be kept: an agent tool's sub-run has no price "
                "(its model, or a history policy's, is not in genai-prices)"
            )
        cost = total_cost(steps)
        if cost is None:
            unpriced = next(n for n, step in enumerate(steps, 1) if step.cost is None)
            raise ConfigError(
                f"UsageLimits(cost=...) cannot be kept: step {unpriced} has no price "
                "(its model, or a history policy's, is not in genai-prices)"
            )
        return cost + sub_runs
