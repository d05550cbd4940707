"""Usage limits of a run: ``LoopOptions(limits=UsageLimits(...))``
(``docs/controls.md``, "Limits and cost"; design.md, loop rule 16).

A limit of N allows N: a run may count exactly N of a thing; it ends with
``FinishReason.LIMIT`` once a count would go over N, as a normal finish
(``RunResult.limit`` says which limit, as a :class:`LimitReached`). What
each limit counts, over the whole run (a resumed durable run counts its
saved steps too):

* ``requests``: model steps (one request each; an attempt that failed and
  was retried bills nothing and is not counted). Checked before each
  request: the run never sends request N + 1.
* ``tool_calls``: the client tool calls the loop runs (the ``final_answer``
  of structured output's tool mode is not counted). Checked before a step's
  calls run: the first calls up to the limit run, in call order; each call
  over it gets an error result saying so, and the run ends.
* ``input_tokens``: every prompt token, ``Usage.input + Usage.cache_write``
  (agentcore's ``input`` holds the cache reads but not the writes).
* ``output_tokens``: ``Usage.output`` (reasoning included).
* ``total_tokens``: the two together.
* ``cost``: US dollars, the sum of the steps' costs (:mod:`agentcore.cost`) and of
  the costs of the sub-runs of the run's agent tools (``RunResult.sub_run_cost``).

Token and cost counts are known only once a step's usage is: they are
checked after each step and before each request. Before a request, the input
limits (``input_tokens``, ``total_tokens``) add the request's projected
input: the prompt tokens the provider reported for the previous step, when
this request sends that history again, grown (no history policy cut it, no
``prepare_step`` plan replaced it). The prompt only grows, so the projection
never stops a run that would have stayed within its limit; it costs no HTTP
call. The first request's input is not known before it is sent.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import attrs

from agentcore.errors import ConfigError
from agentcore.types import Usage

__all__ = ["LimitReached", "UsageLimits", "prompt_tokens", "sub_run_limits"]

LIMIT_KINDS = ("requests", "tool_calls", "input_tokens", "output_tokens", "total_tokens", "cost")
"""The limits, in the order they are checked (the first one over is the one reported)."""


def prompt_tokens(usage: Usage) -> int:
    """Every prompt token of ``usage``: ``input + cache_write``."""
    return usage.input + usage.cache_write


def _count(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"UsageLimits.{attribute.name} must be an int >= 0 or None, got {value!r}")


def _dollars(value: object) -> Decimal | None:
    """A ``cost`` limit as a :class:`Decimal` (a float through its shortest
    text, so ``0.1`` is ``Decimal("0.1")``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        raise ConfigError(
            "UsageLimits.cost must be a Decimal, an int, a float, a str holding a number or None, "
            f"got {value!r}"
        )
    try:
        dollars = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise ConfigError(f"UsageLimits.cost must be a number of US dollars, got {value!r}") from None
    if not dollars.is_finite() or dollars < 0:
        raise ConfigError(f"UsageLimits.cost must be a finite number >= 0, got {value!r}")
    return dollars


@attrs.frozen
class LimitReached:
    """Which limit ended a run (``RunResult.limit``).

    Attributes:
        kind: the limit's name, a field of :class:`UsageLimits`
            (``"input_tokens"``, ``"cost"`` ...).
        limit: the limit's value.
        count: the count that went over it: the run's count, plus, when
            ``before_request`` is True, what the request not sent would
            have added (one request; its projected input tokens).
        before_request: True when the run ended before a request that
            would have gone over; False when a step (or a step's tool
            calls) went over.
    """

    kind: str
    limit: int | Decimal
    count: int | Decimal
    before_request: bool = False

    def __str__(self) -> str:
        when = "the next request would go over it" if self.before_request else "the run went over it"
        return f"the {self.kind} limit ({self.limit:,}) was reached: {when} ({self.count:,})"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: ``{"kind", "limit", "count", "before_request"}``; a
        cost is the text of its :class:`Decimal` (exact, as JSON numbers are not)."""
        return {
            "kind": self.kind,
            "limit": str(self.limit) if isinstance(self.limit, Decimal) else self.limit,
            "count": str(self.count) if isinstance(self.count, Decimal) else self.count,
            "before_request": self.before_request,
        }


@attrs.frozen
class UsageLimits:
    """The most a run may use (see the module docstring for what each counts).

    Every field is None (no limit) or a number >= 0; a limit of N allows N.

    Attributes:
        input_tokens: prompt tokens, cache reads and writes included.
        output_tokens: generated tokens, reasoning included.
        total_tokens: input and output tokens together.
        requests: model steps.
        tool_calls: client tool calls run.
        cost: US dollars (a :class:`Decimal`; an int or a float is turned
            into one). Needs prices (``pip install 'agentcore[prices]'``)
            and a model they list: otherwise ``run()`` raises ``ConfigError``.

    Raises:
        ConfigError: a value that is not None, or a negative or non-integer count.
    """

    input_tokens: int | None = attrs.field(default=None, validator=_count)
    output_tokens: int | None = attrs.field(default=None, validator=_count)
    total_tokens: int | None = attrs.field(default=None, validator=_count)
    requests: int | None = attrs.field(default=None, validator=_count)
    tool_calls: int | None = attrs.field(default=None, validator=_count)
    cost: Decimal | None = attrs.field(default=None, converter=_dollars)

    def before_request(
        self, usage: Usage, requests: int, cost: Decimal | None, projected_input: int = 0
    ) -> LimitReached | None:
        """The limit the next request would go over, or None.

        Args:
            usage: the run's usage so far.
            requests: the requests (model steps) so far.
            cost: the run's cost so far (None: unknown).
            projected_input: the next request's prompt tokens, as far as
                they are known (0: not known).
        """
        if self.requests is not None and requests + 1 > self.requests:
            return LimitReached("requests", self.requests, requests + 1, before_request=True)
        return self._over(usage, cost, projected_input)

    def after_step(self, usage: Usage, cost: Decimal | None) -> LimitReached | None:
        """The limit the run's ``usage`` (and ``cost``) went over, or None."""
        return self._over(usage, cost, 0)

    def calls_allowed(self, calls_run: int) -> int | None:
        """How many more tool calls may run after ``calls_run``; None: no limit."""
        return None if self.tool_calls is None else max(self.tool_calls - calls_run, 0)

    def _over(self, usage: Usage, cost: Decimal | None, projected: int) -> LimitReached | None:
        prompt = prompt_tokens(usage)
        counts = (
            ("input_tokens", self.input_tokens, prompt, projected),
            ("output_tokens", self.output_tokens, usage.output, 0),
            ("total_tokens", self.total_tokens, prompt + usage.output, projected),
        )
        for kind, limit, count, _ in counts:
            if limit is not None and count > limit:
                return LimitReached(kind, limit, count)
        if self.cost is not None and cost is not None and cost > self.cost:
            return LimitReached("cost", self.cost, cost)
        for kind, limit, count, more in counts:
            if limit is not None and more and count + more > limit:
                return LimitReached(kind, limit, count + more, before_request=True)
        return None


def sub_run_limits(
    own: UsageLimits | None, calling: UsageLimits, used: Usage, cost: Decimal | None
) -> UsageLimits:
    """The limits of a sub-run (an agent tool's, :meth:`agentcore.Agent.as_tool`):
    the agent's ``own``, each token limit and the cost limit no higher than
    what the ``calling`` run's limit leaves after ``used`` (tokens) and
    ``cost`` (US dollars) when the call starts.

    Raises:
        ConfigError: the calling run has a cost limit and a part of its
            ``cost`` has no price (None): the limit cannot be kept.
    """
    prompt = prompt_tokens(used)
    left = {
        "input_tokens": (calling.input_tokens, prompt),
        "output_tokens": (calling.output_tokens, used.output),
        "total_tokens": (calling.total_tokens, prompt + used.output),
    }
    base = own or UsageLimits()
    changes: dict[str, int] = {}
    for name, (limit, count) in left.items():
        if limit is not None:
            mine = getattr(base, name)
            rest = max(limit - count, 0)
            changes[name] = rest if mine is None else min(mine, rest)
    if calling.cost is None:
        return attrs.evolve(base, **changes)
    if cost is None:
        raise ConfigError("UsageLimits(cost=...) cannot be kept: the calling run has a step without a price")
    dollars = max(calling.cost - cost, Decimal(0))
    return attrs.evolve(base, **changes, cost=dollars if base.cost is None else min(base.cost, dollars))
