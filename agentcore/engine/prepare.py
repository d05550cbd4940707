"""What runs before each step of a run with history policies or a
``prepare_step`` hook (``LoopOptions.history_policy``,
``LoopOptions.prepare_step``; ``docs/long-runs.md``). A plain run has
neither and never comes here.

Before each step, in this order:

1. the history policies, in list order, on the history the run keeps
   (:mod:`agentcore.compaction`): a policy that changes it changes it for
   good (``RunResult.messages``), each change is one ``compaction`` part and
   one :class:`~agentcore.types.Compaction` on the step it preceded, and what
   it took out stays in the full history (``RunResult.full_messages``); an
   edit that changes no message but carries usage (a summary call that
   answered nothing) is one too, with nothing removed, so that the run's
   usage less its steps' is the sum of its compactions' usage;
2. ``prepare_step``, on what the step is about to send after that
   (:class:`~agentcore.options.StepDraft`); its :class:`~agentcore.options.StepPlan`
   changes this step only.

The policies come first because they change what the run keeps, and a
change for one step must not leak into that; ``prepare_step`` then sees
exactly what will be sent, and has the last word. A history a policy or a
plan gives is checked (:func:`agentcore.history.check_history`, the adapters' own) before the
step, for any model; a policy's must also start with the messages
:func:`agentcore.compaction.pinned` names (a plan's history is the plan's
business).

A policy decides from the prompt's size (:meth:`StepPreparer.tokens`): the
input the provider reported for the previous step plus the estimate of the
messages added since, without a count call per step. A step the provider
refuses as too long (``ErrorClass.CONTEXT_LENGTH``, before any of its parts
went out) is prepared once more with ``HistoryState.refused`` set, and tried
once more when a policy changed the history; otherwise, or when it is
refused again, the run fails with the provider's error.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from agentcore.caching import CacheReport, compacted
from agentcore.compaction import HistoryEdit, HistoryPolicy, HistoryState, pinned
from agentcore.context import Context
from agentcore.errors import ConfigError, ModelError
from agentcore.history import check_history
from agentcore.model import Model, window_of
from agentcore.options import LoopOptions, StepDraft, StepPlan
from agentcore.settings import ModelSettings
from agentcore.tokens import estimate_tokens
from agentcore.tools import ToolSet
from agentcore.types import Compaction, Message, Request, StreamPart, Usage

if TYPE_CHECKING:
    from agentcore.engine.loop import RunProgress

_log = logging.getLogger("agentcore")

_REPORTED = re.compile(
    r"(?P<anthropic>\d[\d,]*) tokens > \d[\d,]* maximum|resulted in (?P<openai>\d[\d,]*) tokens",
    re.IGNORECASE,
)
"""The prompt's size in a provider's context-length error: Anthropic's
"prompt is too long: 203284 tokens > 200000 maximum", Chat Completions'
"However, your messages resulted in 130000 tokens"."""


@attrs.frozen
class StepSetup:
    """What a step sends, as prepared: its request, the model it goes to,
    and the tools its calls may call."""

    request: Request
    model: Model
    tools: ToolSet


def reported_tokens(err: ModelError) -> int | None:
    """The prompt's size in tokens that a context-length error states, or None."""
    found = _REPORTED.search(err.message)
    if found is None:
        return None
    return int((found.group("anthropic") or found.group("openai")).replace(",", ""))


class StepPreparer:
    """The history policies and ``prepare_step`` of one run (see the module docstring).

    Args:
        options: the run's options.
        ctx: the run's context.
        forward: hands a ``compaction`` part to the reader.
        publish: publishes the run's snapshot (the history a policy changed).
    """

    def __init__(
        self,
        options: LoopOptions,
        ctx: Context,
        forward: Callable[[StreamPart], None],
        publish: Callable[[], None],
    ) -> None:
        self.options = options
        self.policies: tuple[HistoryPolicy, ...] = options.history_policy
        self.ctx = ctx
        self.forward = forward
        self.publish = publish
        self.window = window_of(options.model)
        self.counted = False
        """The first size was asked of the model's ``count_tokens`` (or needed none)."""
        self.compactions: list[Compaction] = []
        """The compactions since the last step was recorded."""
        self.summaries: list[tuple[Usage, object]] = []
        """The usage of each policy's model call before this step, and the
        model that made it (the policy's ``model``; the policy itself when it
        has none), for the step's cost."""
        self.changed_at: int | None = None
        """The first index of the history a compaction changed before this step."""
        self.sent_kept = True
        """The step sends the history the run keeps, to the run's model with
        the run's system prompt and tools (no plan replaced any of them)."""

    def switch(self, options: LoopOptions) -> None:
        """Prepare the next steps for ``options``, the options a handoff
        moved the run to (its model and ``prepare_step``; the run's history
        policies stay)."""
        self.options = options
        self.window = window_of(options.model)
        self.counted = False

    def prepare(
        self,
        number: int,
        request: Request,
        progress: RunProgress,
        tools: ToolSet,
        refused: ModelError | None = None,
    ) -> StepSetup:
        """The step ``number`` as it goes out: ``request`` (built from the
        history the run keeps) after the policies and ``prepare_step``.

        Args:
            number: the step's number, from 1.
            request: the step's request as the loop built it.
            progress: the run's progress (its history is replaced when a policy changes it).
            tools: the run's tools.
            refused: the context-length error the step's first try got; None
                for the first try.

        Raises:
            ModelError: ``refused``, when no policy changed the history this time.
            ConfigError: a policy or the plan gave a history the providers
                refuse, or ``prepare_step`` returned something else than a plan.
            Exception: what a policy or ``prepare_step`` raised.
        """
        if refused is None:
            self.compactions, self.changed_at, self.summaries = [], None, []
        settings = request.settings
        if self.policies:
            before = len(self.compactions)
            settings = self._policies(request, progress, refused)
            if refused is not None and not any(c.changed for c in self.compactions[before:]):
                raise refused  # nothing was cut: the same prompt would be refused again
            if len(self.compactions) > before:
                self.publish()
            request = attrs.evolve(request, messages=progress.history, settings=settings)
        model: Model = self.options.model
        self.sent_kept = True
        if self.options.prepare_step is not None:
            draft = StepDraft(
                number,
                request.messages,
                request.system,
                tools,
                model,
                request.settings,
                progress.usage,
                tuple(progress.steps),
            )
            plan = self.options.prepare_step(draft)
            if plan is not None:
                if not isinstance(plan, StepPlan):
                    raise ConfigError(
                        f"LoopOptions.prepare_step must return a StepPlan or None, got {type(plan).__name__}"
                    )
                request, model, tools = self._planned(plan, request, model, tools)
        return StepSetup(request, model, tools)

    def _planned(
        self, plan: StepPlan, request: Request, model: Model, tools: ToolSet
    ) -> tuple[Request, Model, ToolSet]:
        changes: dict[str, Any] = {}
        if plan.messages is not None:
            try:
                check_history(plan.messages)
            except ConfigError as exc:
                raise ConfigError(f"StepPlan.messages: {exc}") from None
            changes["messages"] = plan.messages
        if plan.system is not None:
            changes["system"] = plan.system
        if plan.tools is not None:
            tools = plan.tools
            changes["tools"] = tuple(tools.definitions())
            changes["server_tools"] = tools.server_tools
        if plan.settings is not None:
            changes["settings"] = plan.settings
        self.sent_kept = not ({"messages", "system", "tools"} & changes.keys()) and plan.model is None
        return attrs.evolve(request, **changes), plan.model or model, tools

    def tokens(self, request: Request, progress: RunProgress) -> int:
        """The size of ``request``'s prompt in tokens, as a policy sees it
        (see :attr:`agentcore.compaction.HistoryState.tokens`)."""
        messages = request.messages
        if progress.basis is not None:
            reported, sent = progress.basis
            return reported + estimate_tokens(messages[sent:])
        count = getattr(self.options.model, "count_tokens", None)
        if not self.counted and callable(count):
            self.counted = True
            try:
                own = {"ctx": self.ctx} if _takes_ctx(count) else {}  # a cancel reaches the count
                counted = count(messages, system=request.system or None, tools=request.tools or None, **own)
                if isinstance(counted, int) and not isinstance(counted, bool) and counted > 0:
                    return counted
                _log.warning(
                    "agentcore: the model's count_tokens returned %r, not a positive int; using the estimate",
                    counted,
                )
            except Exception as exc:  # noqa: BLE001 - the estimate will do
                _log.warning("agentcore: counting the prompt's tokens failed (%s); using the estimate", exc)
        self.counted = True
        return estimate_tokens(messages, system=request.system, tools=request.tools)

    def _policies(
        self, request: Request, progress: RunProgress, refused: ModelError | None
    ) -> ModelSettings | None:
        """Apply every policy in turn; the step's settings after them."""
        tokens = self.tokens(request, progress)
        if refused is not None:
            floor = (self.window or tokens - 1) + 1
            tokens = reported_tokens(refused) or max(tokens, floor)
        state = HistoryState(
            tuple(progress.history),
            request.system,
            request.tools,
            self.options.model,
            tokens,
            self.window,
            refused is not None,
            self.ctx,
        )
        settings = request.settings
        for policy in self.policies:
            edit = policy.apply(state)
            if edit is None:
                continue
            name = type(policy).__name__
            if not isinstance(edit, HistoryEdit):
                raise ConfigError(
                    f"the history policy {name} returned {type(edit).__name__}, not a HistoryEdit or None"
                )
            progress.usage += edit.usage
            if edit.usage != Usage():
                self.summaries.append((edit.usage, getattr(policy, "model", policy)))
            if edit.settings is not None:
                settings = (settings or ModelSettings()).merged(edit.settings)
            if edit.messages is None or _same(edit.messages, state.messages):
                if edit.usage != Usage():  # what it cost is recorded, though it changed nothing
                    size = len(state.messages)
                    unchanged = Compaction(
                        name,
                        (),
                        size,
                        size,
                        state.tokens,
                        state.tokens,
                        edit.summary,
                        edit.usage,
                        state.refused,
                    )
                    self.compactions.append(unchanged)
                    self.forward(StreamPart.compaction_event(unchanged))
                continue
            try:
                check_history(edit.messages)
                if not edit.messages:
                    raise ConfigError("it is empty")
            except ConfigError as exc:
                raise ConfigError(
                    f"the history policy {name} gave a history the providers refuse: {exc}"
                ) from None
            _check_pinned(edit.messages, state.messages, name)
            compaction = self._keep(progress, state, edit, name)
            state = attrs.evolve(state, messages=edit.messages, tokens=compaction.tokens_after)
            self.compactions.append(compaction)
            self.forward(StreamPart.compaction_event(compaction))
        return settings

    def _keep(self, progress: RunProgress, state: HistoryState, edit: HistoryEdit, name: str) -> Compaction:
        """Make ``edit.messages`` the history the run keeps, the full history
        holding what it took out; the :class:`Compaction` that says so."""
        old, new = state.messages, edit.messages
        assert new is not None
        full, origins = progress.full_history()
        unused: dict[int, list[int]] = {}
        for index, message in enumerate(old):
            unused.setdefault(id(message), []).append(index)
        kept_origins: list[int | None] = []
        inserted: list[Message] = []
        for message in new:
            indexes = unused.get(id(message)) or _equal(message, old, unused)
            if indexes:
                kept_origins.append(origins[indexes.pop(0)])
            else:
                kept_origins.append(None)
                inserted.append(message)
        gone = sorted(index for indexes in unused.values() for index in indexes)
        changed = next(
            (i for i, (a, b) in enumerate(zip(new, old, strict=False)) if a is not b and a != b),
            min(len(new), len(old)),
        )
        self.changed_at = changed if self.changed_at is None else min(self.changed_at, changed)
        after = state.tokens - state.scaled([old[i] for i in gone]) + state.scaled(inserted)
        progress.history = list(new)
        progress.full, progress.origins, progress.synced = full, kept_origins, len(new)
        progress.basis = None
        return Compaction(
            name,
            sorted(origin for origin in (origins[i] for i in gone) if origin is not None),
            len(old),
            len(new),
            state.tokens,
            max(after, 0),
            edit.summary,
            edit.usage,
            state.refused,
        )

    def finished(
        self, setup: StepSetup, usage: Usage, progress: RunProgress, cache: CacheReport | None
    ) -> tuple[tuple[Compaction, ...], CacheReport | None]:
        """The step sent ``setup`` and reported ``usage``: the size of the
        next prompt builds on it (unless the step sent something else than
        the history the run keeps, or no usage came). Returns the
        compactions before the step (then forgotten) and its cache report,
        a prefix change at or after the first index they changed named as
        compaction (:func:`agentcore.caching.compacted`; a compaction that
        changed no message, only a policy's usage, is not named)."""
        reported = usage.input + usage.cache_write
        kept = self.sent_kept and reported > 0
        progress.basis = (reported, len(setup.request.messages)) if kept else None
        compactions, self.compactions = tuple(self.compactions), []
        if cache is not None and self.changed_at is not None:  # a compaction changed a message
            cache = compacted(cache, self.changed_at, ", ".join(c.policy for c in compactions if c.changed))
        return compactions, cache


def _check_pinned(new: tuple[Message, ...], old: tuple[Message, ...], name: str) -> None:
    """Raise :class:`ConfigError` unless ``new`` starts with the messages of
    ``old`` that :func:`agentcore.compaction.pinned` names (the very same
    messages, or equal ones), naming the policy and the first one missing."""
    head = pinned(old)
    for index in range(head):
        if index >= len(new) or not (new[index] is old[index] or new[index] == old[index]):
            raise ConfigError(
                f"the history policy {name} gave a history that does not start with the messages a policy "
                f"keeps: messages[{index}] (a {old[index].role.value} message) is not in its place; the "
                f"first {head} message(s), up to and including the first user message "
                "(agentcore.compaction.pinned), must stay as they are"
            )


def _same(new: tuple[Message, ...], old: tuple[Message, ...]) -> bool:
    """The same messages (or equal copies), in the same order."""
    return len(new) == len(old) and all(a is b or a == b for a, b in zip(new, old, strict=True))


def _equal(message: Message, old: Sequence[Message], unused: dict[int, list[int]]) -> list[int] | None:
    """The unused indexes of the first message of ``old`` equal to
    ``message``: a policy that copies the messages it keeps has not removed
    them (a message it did not copy is found by identity, without this)."""
    for indexes in unused.values():
        if indexes and old[indexes[0]] == message:
            return indexes
    return None


def _takes_ctx(count: Callable[..., object]) -> bool:
    """Whether a model's ``count_tokens`` takes the run's context (``ctx=``, as
    the built-in adapters' does); a user's own may not."""
    try:
        return "ctx" in inspect.signature(count).parameters
    except (TypeError, ValueError):  # a callable whose signature cannot be read
        return False
