"""History policies: what keeps a long run's history inside the model's
context window (``LoopOptions(history_policy=...)``, ``docs/long-runs.md``).

Before each step the loop gives every policy, in list order, a
:class:`HistoryState`: the history it is about to send, and how large the
prompt is by then in tokens (the usage the provider reported for the
previous step plus :func:`agentcore.tokens.estimate_tokens` of the messages
added since; no count call per step). A policy returns None (no change) or a
:class:`HistoryEdit`: a new history, which the run keeps from then on,
and/or model settings for the step. Four are shipped:

* :class:`ClearOldToolResults`: the results of all but the last ``keep_last``
  tool calls become a short placeholder (:data:`CLEARED`); the calls stay.
* :class:`SlidingWindow`: the oldest turns are dropped, whole, until the
  prompt fits ``max_tokens``.
* :class:`Summarize`: older turns are replaced by a summary a model writes;
  a summary call that fails, times out or returns nothing leaves the
  history exactly as it was.
* :class:`ProviderCompaction`: changes no message; it turns on the
  provider's own compaction and context editing for every step.

What every policy keeps (and a policy of your own must keep): a tool call
and its result are removed or kept together (:func:`cut_points` says where
a history may be cut), reasoning blocks and provider items stay in their
assistant message, and the messages up to and including the first user
message stay as they are (:func:`pinned`: the first request usually says
what the run is for). The system prompt is not part of the history, so no
policy can drop it. The loop checks what a policy returns (its pairs with
:func:`agentcore.history.check_history`, the check every adapter makes; its
first messages against :func:`pinned`) and fails the run with a
:class:`ConfigError` naming the policy and the message otherwise.

The policy protocol is :class:`HistoryPolicy`: one method, ``apply``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from agentcore.context import Context
from agentcore.errors import Canceled, ConfigError, ErrorClass, ModelError
from agentcore.model import Model
from agentcore.settings import ModelSettings
from agentcore.tokens import estimate_tokens
from agentcore.tools import parse_arguments
from agentcore.types import (
    ContentPartKind,
    FinishReason,
    Message,
    Request,
    Role,
    StreamPartKind,
    ToolDefinition,
    ToolResult,
    Usage,
    text_part,
    tool_result_part,
    user_message,
)

__all__ = [
    "CLEARED",
    "SUMMARY_HEADING",
    "ClearOldToolResults",
    "HistoryEdit",
    "HistoryPolicy",
    "HistoryState",
    "ProviderCompaction",
    "SlidingWindow",
    "Summarize",
    "cut_points",
    "pinned",
]

_log = logging.getLogger("agentcore")

CLEARED = "[tool result cleared to save context]"
"""What :class:`ClearOldToolResults` puts in place of an old tool result's content."""

SUMMARY_HEADING = "Summary of the earlier conversation:\n\n"
"""What starts the user message holding a :class:`Summarize` summary."""

SUMMARY_INSTRUCTIONS = (
    "You write the summary that replaces the earlier part of a conversation between a user and an "
    "AI assistant that uses tools, so that the assistant can go on with the task without it. Keep "
    "what is still needed: the user's goal and requests, decisions made, facts and figures found, "
    "tool results that matter (names, values, identifiers, file paths), what was tried and failed, "
    "and what is left to do. Leave out pleasantries and repetition. Write it in the third person, "
    "as plain text."
)
"""The system prompt of a :class:`Summarize` call (its ``instructions``)."""

DEFAULT_SUMMARY_TIMEOUT = 120.0
"""Seconds a :class:`Summarize` call may take (within the run's own deadline)."""


@attrs.frozen(slots=False)  # a dict: tokens_per_estimated_token is computed once, on first use
class HistoryState:
    """What a history policy decides from, before one step.

    A policy that counts what it removes or adds should count it as
    :meth:`scaled` does, not by the bare estimate: when ``tokens`` is larger
    than the estimate of the prompt (a provider that counts more tokens than
    the estimate, or a refusal that named no size and is taken as the window
    plus one), each estimated token stands for
    :attr:`tokens_per_estimated_token` tokens of ``tokens``, so that a policy
    aiming at half the window removes about half the history.

    Attributes:
        messages: the history the step is about to send (as the earlier
            policies of the list left it).
        system: the system prompt.
        tools: the tool definitions the step offers.
        model: the run's model.
        tokens: the prompt's size in tokens: the input the provider reported
            for the previous step (its cache reads and writes included) plus
            :func:`~agentcore.tokens.estimate_tokens` of the messages added
            since; the estimate of the whole prompt when no step reported
            usage yet (the model's ``count_tokens`` at a run's first step,
            when it has one). On a retry after the provider refused the
            prompt as too long, the count its error gave when it gave one,
            else at least ``context_window + 1``. When it is larger than the
            estimate of the prompt, :meth:`scaled` counts messages in
            proportion.
        context_window: the model's context window in tokens (its
            ``context_window`` attribute, else
            :func:`agentcore.tokens.context_window` of its id); None when
            not known.
        refused: True when the provider just refused this step's prompt as
            too long (``ErrorClass.CONTEXT_LENGTH``): the policy should cut
            now, whatever its trigger; the step is tried once more.
        ctx: the run's context, for a policy that calls a model.
    """

    messages: tuple[Message, ...]
    system: str
    tools: tuple[ToolDefinition, ...]
    model: Model
    tokens: int
    context_window: int | None
    refused: bool = False
    ctx: Context = attrs.field(factory=Context)

    @functools.cached_property
    def tokens_per_estimated_token(self) -> float:
        """How many tokens of :attr:`tokens` one estimated token stands for:
        ``tokens`` divided by :func:`~agentcore.tokens.estimate_tokens` of the
        prompt (``messages``, ``system`` and ``tools``) when that is more than
        1, else 1.0 (the estimate errs high; it is not scaled down)."""
        estimate = estimate_tokens(self.messages, system=self.system, tools=self.tools)
        return max(self.tokens / estimate, 1.0) if estimate else 1.0

    def scaled(self, messages: Sequence[Message]) -> int:
        """What ``messages`` count for in :attr:`tokens`, in tokens: their
        :func:`~agentcore.tokens.estimate_tokens` times
        :attr:`tokens_per_estimated_token`, rounded; what a policy subtracts
        from ``tokens`` for the messages it removes (and adds for those it
        puts in)."""
        return round(estimate_tokens(messages) * self.tokens_per_estimated_token)


def _optional_messages(value: Iterable[Message] | None) -> tuple[Message, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class HistoryEdit:
    """What a history policy changed.

    Attributes:
        messages: the new history, kept by the run from this step on; None
            leaves it as it was. Messages it keeps should be the same
            objects (that is how the loop tells what was removed or
            replaced: ``Compaction.removed``).
        settings: model settings for this step: each field set overrides
            the run's (:meth:`ModelSettings.merged`); None for none.
        summary: the summary that replaced messages, if any (reported in
            ``Compaction.summary``).
        usage: what a model call the policy made cost (counted in the run's
            usage, also when ``messages`` is None).
    """

    messages: tuple[Message, ...] | None = attrs.field(default=None, converter=_optional_messages)
    settings: ModelSettings | None = None
    summary: str = ""
    usage: Usage = attrs.field(factory=Usage)


@runtime_checkable
class HistoryPolicy(Protocol):
    """A history policy: what ``LoopOptions(history_policy=...)`` takes.

    ``apply`` runs on the run's worker thread before each step (after the
    policies before it in the list, before ``prepare_step``), and once
    more with ``state.refused`` set when the provider refused a step's
    prompt as too long. It returns None for no change, or a
    :class:`HistoryEdit`. The history it returns must keep every tool call
    with its result (cut only at :func:`cut_points`) and start with the
    messages :func:`pinned` names; the loop checks both
    (:func:`agentcore.history.check_history`), else a :class:`ConfigError`
    naming the policy ends the run. An
    exception it raises ends the run with that error. Its class name names
    it in ``Compaction.policy``.
    """

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        """What to change before the step described by ``state``; None: nothing."""
        ...


def cut_points(messages: Sequence[Message]) -> tuple[int, ...]:
    """The indexes at which ``messages`` may be cut in two without
    separating a tool call from its result, ascending, 0 and
    ``len(messages)`` included (the latter unless a call at the end waits
    for its result): removing ``messages[a:b]`` keeps every call with its
    result when ``a`` and ``b`` are both cut points."""
    cuts: list[int] = []
    waiting: set[str] = set()  # the ids of the calls that wait for their results
    for index, message in enumerate(messages):
        if not waiting:
            cuts.append(index)
        if message.role is Role.ASSISTANT:
            waiting = {call.id for call in message.tool_calls}
            continue
        waiting.difference_update(result.tool_call_id for result in message.tool_results)
    if not waiting:
        cuts.append(len(messages))
    return tuple(cuts)


def pinned(messages: Sequence[Message]) -> int:
    """How many leading messages no policy removes: those up to and
    including the first user message (the first cut point after it, so
    that what follows may be cut). The whole history when it has no user
    message."""
    first = next((i for i, message in enumerate(messages) if message.role is Role.USER), len(messages))
    return next((cut for cut in cut_points(messages) if cut > first), len(messages))


def _tokens(value: int | float, window: int | None, owner: object, field: str) -> int:
    """A token threshold: ``value`` tokens, or for a float in (0, 1] that share of ``window``.

    Raises:
        ConfigError: a share of a window that is not known.
    """
    if isinstance(value, int):
        return value
    if window is None:
        raise ConfigError(
            f"{type(owner).__name__}({field}={value}) is a share of the model's context window, which is "
            "not known for this model: give the number of tokens, or the model's context_window="
        )
    return int(window * value)


def _threshold(field: str, *, optional: bool = False) -> Any:
    """A validator: a number of tokens (an int >= 1) or a share of the
    context window (a float in (0, 1]); None too when ``optional``."""

    def check(instance: Any, _attribute: Any, value: object) -> None:
        if value is None and optional:
            return
        tokens = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        share = isinstance(value, float) and 0 < value <= 1
        if not (tokens or share):
            raise ConfigError(
                f"{type(instance).__name__}.{field} must be a number of tokens (an int >= 1) or a share "
                f"of the context window (a float in (0, 1]){' or None' if optional else ''}, got {value!r}"
            )

    return check


def _count(minimum: int) -> Any:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(
                f"{type(instance).__name__}.{attribute.name} must be an int >= {minimum}, got {value!r}"
            )

    return check


def _over(state: HistoryState, trigger: int | float | None, owner: object, field: str) -> bool:
    """Whether a policy with this trigger acts now: after a refusal always,
    else once the prompt is above the trigger (None: always)."""
    if state.refused or trigger is None:
        return True
    return state.tokens > _tokens(trigger, state.context_window, owner, field)


@attrs.frozen
class ClearOldToolResults:
    """Replace the results of all but the last ``keep_last`` tool calls with
    :data:`CLEARED` (their files dropped too); the calls stay, so every call
    keeps its result and the history stays valid. A result cleared before,
    or no longer than the placeholder (and without files), is left as it is.

    Clearing changes the prompt from the first cleared result on, so the
    provider's prompt cache is read only up to there once (the next steps
    cache the new prefix); a ``trigger_tokens`` clears in batches, which
    breaks the cache less often than clearing at every step.

    Args:
        keep_last: how many of the latest tool results stay whole (>= 0).
        trigger_tokens: clear only once the prompt is above this many
            tokens (an int), or this share of the context window (a float in
            (0, 1]); None (the default) clears whenever there is something
            to clear.
    """

    keep_last: int = attrs.field(default=3, validator=_count(0))
    trigger_tokens: int | float | None = attrs.field(
        default=None, validator=_threshold("trigger_tokens", optional=True)
    )

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        if not _over(state, self.trigger_tokens, self, "trigger_tokens"):
            return None
        places = [
            (index, position)
            for index, message in enumerate(state.messages)
            if message.role is not Role.ASSISTANT
            for position, part in enumerate(message.content)
            if part.tool_result is not None
        ]
        old = places[: max(len(places) - self.keep_last, 0)]
        messages = list(state.messages)
        for index, position in old:
            content = list(messages[index].content)
            result = content[position].tool_result
            assert result is not None
            if len(result.content) <= len(CLEARED) and not result.files:
                continue  # cleared before, or no longer than the placeholder: nothing to gain
            cleared = ToolResult(result.tool_call_id, result.name, CLEARED, result.is_error)
            content[position] = tool_result_part(cleared)
            messages[index] = Message(role=messages[index].role, content=content)
        if all(new is was for new, was in zip(messages, state.messages, strict=True)):
            return None
        return HistoryEdit(messages=messages)


@attrs.frozen
class SlidingWindow:
    """Drop the oldest turns, whole, until the prompt fits ``max_tokens``.

    It removes messages right after the :func:`pinned` ones (the first user
    message stays), up to a :func:`cut_points` index, so a tool call goes
    with its result; the last turn always stays. Each turn removed counts
    as :meth:`HistoryState.scaled` says (its estimate, in proportion when
    the prompt's size is larger than the estimate). When even that is not
    enough it removes all it may, and the step goes on (a provider's refusal
    then ends the run, unless a later policy in the list cuts more).

    Args:
        max_tokens: the most tokens the prompt may have: an int, or a share
            of the model's context window (a float in (0, 1]; the default,
            0.8, leaves room for the answer).
    """

    max_tokens: int | float = attrs.field(default=0.8, validator=_threshold("max_tokens"))

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        limit = _tokens(self.max_tokens, state.context_window, self, "max_tokens")
        if state.tokens <= limit and not state.refused:
            return None
        messages = state.messages
        cuts = cut_points(messages)
        head = pinned(messages)
        last = max((cut for cut in cuts if cut < len(messages)), default=0)  # where the last turn starts
        tokens, end = state.tokens, head
        for cut in cuts:
            if cut <= head:
                continue
            if cut > last:
                break
            tokens -= state.scaled(messages[end:cut])
            end = cut
            if tokens <= limit:
                break
        if end == head:
            return None
        return HistoryEdit(messages=(*messages[:head], *messages[end:]))


def _transcript(messages: Iterable[Message]) -> str:
    """The messages as plain text for a summary call: one paragraph per
    text, tool call and tool result; files named by their type; the text of
    a provider's compaction summary; reasoning and opaque provider items
    left out."""
    lines: list[str] = []
    for message in messages:
        for part in message.content:
            if part.kind is ContentPartKind.TEXT and part.text:
                lines.append(f"{message.role.value}: {part.text}")
            elif part.tool_call is not None:
                call = part.tool_call
                try:
                    arguments = repr(parse_arguments(call.input))
                except ValueError:
                    arguments = call.input
                lines.append(f"assistant called the tool {call.name} with {arguments}")
            elif part.tool_result is not None:
                result = part.tool_result
                outcome = "failed" if result.is_error else "returned"
                files = "".join(f" [a file: {file.media_type}]" for file in result.files)
                lines.append(f"the tool {result.name} {outcome}: {result.content}{files}")
            elif part.file is not None:
                lines.append(f"{message.role.value}: [a file: {part.file.media_type}]")
            elif part.provider_item is not None and part.provider_item.text:
                lines.append(f"(the provider's summary of what came before) {part.provider_item.text}")
    return "\n\n".join(lines)


def _complete(model: Model, request: Request, ctx: Context) -> tuple[str, Usage]:
    """The text ``model`` answers ``request`` with, and the call's usage.

    Raises:
        ModelError: the call failed, or ended without a ``step-finish``.
        Canceled: ``ctx`` was cancelled.
    """
    texts: list[str] = []
    stream = model.stream(request, ctx)
    try:
        for part in stream:
            if part.kind is StreamPartKind.TEXT_DELTA:
                texts.append(part.text)
            elif part.kind is StreamPartKind.STEP_FINISH:
                if part.finish_reason is FinishReason.LENGTH:
                    _log.info("agentcore: the summary was cut off at the output token limit; kept as it is")
                return "".join(texts), part.usage
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    raise ModelError(ErrorClass.TRANSIENT, message="the summary call ended without a step-finish part")


@attrs.frozen
class Summarize:
    """Replace the older turns with a summary a model writes.

    Once the prompt is above ``trigger_tokens``, the messages after the
    :func:`pinned` ones and before the last ``keep_last`` and the last turn
    (moved back to a :func:`cut_points` index, so a call stays with its
    result) are sent to
    ``model`` as a transcript, with :data:`SUMMARY_INSTRUCTIONS`; its answer
    replaces them as one user message starting with
    :data:`SUMMARY_HEADING`. The call's usage is counted in the run's usage
    (``Compaction.usage``).

    A summary call that raises, that passes ``timeout`` seconds (or the
    run's deadline), or that answers with no text leaves the history
    exactly as it was: logged at WARNING, and the run goes on (after a
    refusal, it fails with the provider's error). A cancel of the run
    still ends the run. The summary costs a model call and breaks the
    prompt cache from the first summarized message on.

    Args:
        model: the model that writes the summary (the run's, or a cheaper one).
        trigger_tokens: summarize once the prompt is above this many tokens
            (an int) or this share of the context window (a float in (0, 1]).
        keep_last: how many of the latest messages stay as they are (at
            least; more when the cut must move back to a call's start; the
            last turn always stays).
        timeout: seconds the summary call may take.
        instructions: the summary call's system prompt.
        max_output_tokens: the summary call's output cap; None: the model's default.
    """

    model: Model = attrs.field()
    trigger_tokens: int | float = attrs.field(default=0.8, validator=_threshold("trigger_tokens"))
    keep_last: int = attrs.field(default=10, validator=_count(0))
    timeout: float = attrs.field(default=DEFAULT_SUMMARY_TIMEOUT)
    instructions: str = attrs.field(default=SUMMARY_INSTRUCTIONS)
    max_output_tokens: int | None = attrs.field(default=None)

    @model.validator
    def _check_model(self, _attribute: Any, value: object) -> None:
        if getattr(value, "stream", None) is None or not hasattr(value, "model_id"):
            raise ConfigError(f"Summarize.model must be a Model (.model_id and .stream), got {value!r}")

    @timeout.validator
    def _check_timeout(self, _attribute: Any, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ConfigError(f"Summarize.timeout must be a number of seconds > 0, got {value!r}")

    @max_output_tokens.validator
    def _check_output(self, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None:
            _count(1)(self, attribute, value)

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        if not _over(state, self.trigger_tokens, self, "trigger_tokens"):
            return None
        messages = state.messages
        head = pinned(messages)
        cuts = cut_points(messages)
        last = max((cut for cut in cuts if cut < len(messages)), default=0)  # where the last turn starts
        end = max((cut for cut in cuts if cut <= min(len(messages) - self.keep_last, last)), default=0)
        if end <= head:
            return None
        request = Request(
            system=self.instructions,
            messages=(user_message(_transcript(messages[head:end])),),
            max_output_tokens=self.max_output_tokens,
        )
        ctx = Context(self.timeout, parent=state.ctx)
        try:
            text, usage = _complete(self.model, request, ctx)
        except Canceled:
            if state.ctx.cancelled:
                raise
            _log.warning(
                "agentcore: the summary call passed its %g s; the history is left as it was", self.timeout
            )
            return None
        except Exception as exc:  # noqa: BLE001 - a failed summary leaves the history as it was
            _log.warning("agentcore: the summary call failed (%s); the history is left as it was", exc)
            return None
        finally:
            ctx.detach()
        if not text.strip():
            _log.warning("agentcore: the summary call answered with no text; the history is left as it was")
            return HistoryEdit(usage=usage)
        summary = Message(role=Role.USER, content=(text_part(SUMMARY_HEADING + text.strip()),))
        return HistoryEdit(
            messages=(*messages[:head], summary, *messages[end:]), summary=text.strip(), usage=usage
        )


@attrs.frozen
class ProviderCompaction:
    """Turn on the provider's own compaction and context editing for every
    step; no message is changed here (``docs/providers.md``).

    It sets the step's :class:`ModelSettings` ``compaction_trigger``,
    ``clear_tool_uses`` and ``clear_thinking``; an adapter whose API has no
    such field raises :class:`ConfigError` naming it, before any HTTP call.

    Args:
        trigger_tokens: the input tokens at which the provider compacts the
            context itself (``compaction_trigger``); None: no compaction.
        clear_tool_uses: let the provider clear old tool uses (Anthropic's
            context editing); False leaves the setting unset.
        clear_thinking: let the provider clear old thinking blocks
            (Anthropic); False leaves the setting unset.

    Raises:
        ConfigError: nothing is turned on, or a value of the wrong type.
    """

    trigger_tokens: int | None = attrs.field(default=None)
    clear_tool_uses: bool = attrs.field(default=False)
    clear_thinking: bool = attrs.field(default=False)

    def __attrs_post_init__(self) -> None:
        value = self.trigger_tokens
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"ProviderCompaction.trigger_tokens must be an int >= 1 or None, got {value!r}")
        for name in ("clear_tool_uses", "clear_thinking"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"ProviderCompaction.{name} must be True or False, got {getattr(self, name)!r}"
                )
        if value is None and not self.clear_tool_uses and not self.clear_thinking:
            raise ConfigError(
                "ProviderCompaction turns nothing on: give trigger_tokens, clear_tool_uses or clear_thinking"
            )

    @property
    def settings(self) -> ModelSettings:
        """The settings it sets for every step."""
        return ModelSettings(
            compaction_trigger=self.trigger_tokens,
            clear_tool_uses=True if self.clear_tool_uses else None,
            clear_thinking=True if self.clear_thinking else None,
        )

    def apply(self, state: HistoryState) -> HistoryEdit | None:
        return HistoryEdit(settings=self.settings)
