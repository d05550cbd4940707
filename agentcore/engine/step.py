"""One model step: stream it, forward its parts to the reader as they come,
and gather what it produced (design.md, loop rules 1, 3, 7 and 10).

:meth:`StepStreamer.stream` sends one :class:`Request` and returns the
:class:`Step`: its text; its text, reasoning, tool-call and provider-item
parts in the order the model produced them; its tool calls, its reasoning
blocks and its ``step-finish`` part. The model's ``text-delta``,
``reasoning-delta``, ``reasoning``, ``tool-call``, ``tool-call-delta``,
``citation`` and ``provider-item`` parts go to the reader as they arrive; the
``step-finish`` part is the loop's to forward (after it recorded the step).
``reasoning-delta`` and ``tool-call-delta`` parts are for the reader only:
the whole block or call follows. A ``citation`` goes on a text part
(:attr:`ContentPart.citations`): the citations that came since the last text
part closed go on the next text part the step makes; those with no text
after them in the step go on the step's last text part, or, in a step
without text, on a text part of its own whose text is "" (adapters send no
empty text, so it stays in the history only). Nothing is lost, and a
citation is never moved to another step.

A step's first attempt runs directly. One that fails with a retryable
:class:`ModelError` before any of its parts went to the reader is tried again
by :mod:`agentcore.engine.retry` (loop rule 7); an attempt that fails after a
part went returns the error instead of raising it, so nothing retries it, and
:meth:`StepStreamer.stream` raises it then. A step whose model is a
:class:`~agentcore.fallback.FallbackModel` is streamed from each of its
models in turn, each with those retries, while the step fails before any
part went out with an error the model falls back on (design.md, "Fallback
models"): the decision is made here, where the cut-off is known.

Text enters the history as valid Unicode (:func:`valid_unicode`): a server
may split an emoji's UTF-16 surrogate pair across two deltas, so a delta that
ends with a high surrogate keeps it back until the next one (a lone one
becomes U+FFFD).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.engine import retry
from agentcore.engine.channel import SendFunc
from agentcore.errors import ErrorClass, ModelError
from agentcore.fallback import FallbackModel, log_fallback
from agentcore.middleware import ModelWrap, model_stream
from agentcore.model import Model
from agentcore.types import (
    Citation,
    ContentPart,
    FinishReason,
    Reasoning,
    Request,
    StreamPart,
    StreamPartKind,
    ToolCall,
    provider_item_part,
    reasoning_part,
    text_part,
    tool_call_part,
)

_JOIN_EVERY = 1024
"""Text fragments a step keeps before joining them (memory: ~60 bytes a fragment)."""

_ITEM = StreamPartKind.PROVIDER_ITEM
_TOOL_CALL_DELTA = StreamPartKind.TOOL_CALL_DELTA
_CITATION = StreamPartKind.CITATION
STEP_REASONS = (
    FinishReason.STOP,
    FinishReason.TOOL_CALLS,
    FinishReason.LENGTH,
    FinishReason.CONTENT_FILTER,
    FinishReason.PAUSED,
)
"""The reasons a model may end a step with (design.md, loop rules 2, 3 and 15)."""
_REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def nothing() -> None:
    """What closing a stream that is already closed (or has no ``close``) does."""


@attrs.frozen
class Step:
    """What one model step produced, streamed now or replayed by a step runner.

    Attributes:
        text: the step's text.
        content: its text, reasoning, tool-call and provider-item parts in
            the order the model produced them (consecutive text deltas joined
            into one text part).
        calls: its tool calls, in order.
        reasoning: its reasoning blocks, in order.
        finish: its ``step-finish`` part (``tool-calls`` whenever it carried
            calls), with the ``model_id`` of the model that answered.
        release: closes the model's stream, left open until ``finish`` is
            forwarded: an adapter drains the rest of the body there, which
            must not delay it.
    """

    text: str
    content: list[ContentPart]
    calls: list[ToolCall]
    reasoning: tuple[Reasoning, ...]
    finish: StreamPart
    release: Callable[[], object] = nothing


@attrs.frozen
class _CutOff:
    """An attempt that failed after one of its parts went to the reader:
    returned, not raised, so that no retry repeats output the reader has."""

    err: ModelError


class StepStreamer:
    """Streams the model steps of one run.

    Args:
        model: the run's model.
        ctx: the run's context.
        send: hands a part to the reader (the run's channel); False once
            the reader is gone or the run ended.
        retry_settings: how a failed step is retried.
        on_retry: called with the error, the attempt that failed (from 1)
            and the wait in seconds before each retry (the run's tracing); None.
        wraps: the ``wrap_model`` layers each attempt streams through, the
            first outermost (:func:`agentcore.engine.guarded.model_layers`);
            what they give is what goes to the reader.
    """

    def __init__(
        self,
        model: Model,
        ctx: Context,
        send: SendFunc,
        retry_settings: retry.RetrySettings,
        on_retry: Callable[[BaseException, int, float], object] | None,
        wraps: tuple[ModelWrap, ...] = (),
    ) -> None:
        self.model = model
        self.ctx = ctx
        self.send = send
        self.retry_settings = retry_settings
        self.on_retry = on_retry
        self.wraps = wraps
        self.cut_off: ModelError | None = None
        """The last error that ended a step after some of its parts went to
        the reader (no retry may repeat them: loop rule 7)."""

    def stream(self, request: Request, number: int, model: Model | None = None) -> Step:
        """Stream step ``number`` (from 1) of the run, retried as loop rule 7 says.

        Args:
            request: the step's request.
            number: the step's number.
            model: the model to send it to (``StepPlan.model``); None: the run's.

        Raises:
            ModelError: the step failed (after its retries, if it had any);
                :attr:`cut_off` tells whether a part of it had gone to the reader.
            Canceled: the run was cancelled, or the reader went away.
        """
        model = model or self.model
        if isinstance(model, FallbackModel):
            return self._fall_back(request, number, model)
        try:
            outcome = self._attempt(request, model)
        except ModelError as exc:
            if not exc.error_class.retryable:
                raise
            # A method, not a closure: the frames of a kept error's traceback
            # must not reach the streamer (and its model) through a closure's cells.
            attempt = functools.partial(self._attempt, request, model)
            outcome = retry.retried(exc, attempt, functools.partial(self._policy, number, model))
        if isinstance(outcome, _CutOff):
            self.cut_off = outcome.err
            raise outcome.err
        return outcome

    def _fall_back(self, request: Request, number: int, chain: FallbackModel) -> Step:
        """Step ``number`` through ``chain``'s models in turn, each retried
        as loop rule 7 says, until one answers (or a failure cannot fall back:
        one after a part went to the reader never does)."""
        index = 0
        while True:
            model = chain.models[index]
            try:
                return self.stream(request, number, model)
            except ModelError as exc:
                following = None if self.cut_off is exc else chain.next_model(exc, index)
                if following is None:
                    raise
                log_fallback(model, exc, chain.models[following])
                index = following

    def _policy(self, number: int, model: Model) -> Any:
        settings = self.retry_settings
        return retry.retry_policy(
            max_retries=settings.max_retries,
            base_delay=settings.base_delay,
            max_delay=settings.max_delay,
            retry_after_limit=settings.retry_after_limit,
            ctx=self.ctx,
            describe=f"step {number} ({model.model_id})",
            sleep=settings.sleep,
            rand=settings.jitter,
            on_retry=self.on_retry,
        )

    def _attempt(self, request: Request, model: Model) -> Step | _CutOff:
        """Stream one attempt of a step.

        Raises:
            ModelError: the attempt failed before any of its parts went to
                the reader (a failure after that is returned).
        """
        ctx = self.ctx
        ctx.check()
        send = self.send
        forwarded = False
        content = _Content()
        calls: list[ToolCall] = []
        fragments = content.fragments
        add_text = fragments.append
        text_delta = StreamPartKind.TEXT_DELTA
        reasoning_delta = StreamPartKind.REASONING_DELTA  # the per-part kinds, bound once
        high_surrogate = ""  # ended the last text delta: the next may open with its pair
        stream = (
            model.stream(request, ctx) if not self.wraps else model_stream(self.wraps, model, request, ctx)
        )
        release: Callable[[], object] = getattr(stream, "close", None) or nothing
        try:
            for part in stream:
                kind = part.kind
                if (
                    high_surrogate
                    and kind is not text_delta
                    and kind is not reasoning_delta
                    and kind is not _TOOL_CALL_DELTA
                    and kind is not _CITATION
                ):
                    high_surrogate = ""  # its pair never came
                    add_text(_REPLACEMENT)
                    forwarded = True
                    if not send(StreamPart.text_delta(_REPLACEMENT)):
                        ctx.cancel()
                        ctx.check()
                if kind is text_delta:
                    text = part.text
                    if high_surrogate or not text.isascii():
                        text, high_surrogate = _split_high_surrogate(high_surrogate + text)
                        if not text:
                            continue
                        part = StreamPart.text_delta(text)
                    add_text(text)
                    if len(fragments) >= _JOIN_EVERY:  # a long answer: few strings, not a million small ones
                        content.join_fragments()
                elif kind is reasoning_delta or kind is _TOOL_CALL_DELTA:
                    pass  # for the reader only: the complete block or call follows
                elif kind is _CITATION:
                    assert part.citation is not None
                    content.citations.append(part.citation)
                elif kind is StreamPartKind.REASONING or kind is StreamPartKind.TOOL_CALL or kind is _ITEM:
                    content.close_text()
                    if part.provider_item is not None:  # a block the provider needs back, in place
                        content.parts.append(provider_item_part(part.provider_item))
                    elif part.tool_call is not None:
                        if not part.tool_call.input.isascii():
                            arguments = valid_unicode(part.tool_call.input)
                            part = StreamPart.tool_call_event(attrs.evolve(part.tool_call, input=arguments))
                        assert part.tool_call is not None
                        calls.append(part.tool_call)
                        content.parts.append(tool_call_part(part.tool_call))
                    else:
                        assert part.reasoning is not None
                        content.reasoning.append(part.reasoning)
                        content.parts.append(reasoning_part(part.reasoning))
                elif kind is StreamPartKind.STEP_FINISH:
                    forwarded = True
                    content.close_text()
                    content.keep_citations()
                    return _finished(content, calls, part, release, model.model_id)
                else:
                    raise ModelError(
                        ErrorClass.UPSTREAM,
                        message=f"the model emitted a {kind.value!r} part; models emit only text-delta, "
                        "reasoning-delta, reasoning, tool-call, tool-call-delta, citation, provider-item "
                        "and step-finish parts",
                    )
                forwarded = True
                # send() is False once the reader closed or a cancel ended the run
                # (run() queues the terminal part then): no per-part context check.
                if not send(part):
                    ctx.cancel()
                    ctx.check()
            raise ModelError(
                ErrorClass.TRANSIENT, message="the model's stream ended without a step-finish part"
            )
        except ModelError as exc:
            release()
            if forwarded:
                return _CutOff(exc)
            raise
        except BaseException:
            release()
            raise


class _Content:
    """A step's assistant content as it streams: a run of text deltas becomes
    one text part when a reasoning or tool-call part (or the step's end)
    closes it, so the parts keep the order the model produced them in."""

    def __init__(self) -> None:
        self.parts: list[ContentPart] = []
        self.texts: list[str] = []
        """The step's text parts' texts (joined: the step's text)."""
        self.reasoning: list[Reasoning] = []
        self.fragments: list[str] = []
        """The text deltas since the last text part closed."""
        self.blocks: list[str] = []
        """Runs of :data:`_JOIN_EVERY` fragments, joined, since the last text part closed."""
        self.citations: list[Citation] = []
        """The citations since the last text part closed: the next text part's."""

    def join_fragments(self) -> None:
        self.blocks.append("".join(self.fragments))
        self.fragments.clear()

    def close_text(self) -> None:
        """Turn the text gathered since the last text part into one text
        part (none when it is empty)."""
        if self.blocks or self.fragments:
            text = "".join([*self.blocks, *self.fragments])
            self.blocks.clear()
            self.fragments.clear()
            if text:
                self.texts.append(text)
                self.parts.append(text_part(text, self.citations))
                self.citations = []

    def keep_citations(self) -> None:
        """At the step's end: put the citations no text followed on the
        step's last text part, or on a text part of their own ("" text) in
        a step without text."""
        if not self.citations:
            return
        last = next((i for i in range(len(self.parts) - 1, -1, -1) if self.parts[i].text), None)
        if last is None:
            self.parts.append(text_part("", self.citations))
        else:
            part = self.parts[last]
            self.parts[last] = text_part(part.text, (*part.citations, *self.citations))
        self.citations = []


def _finished(
    content: _Content, calls: list[ToolCall], finish: StreamPart, release: Callable[[], object], model_id: str
) -> Step:
    """The step a ``step-finish`` part ended, answered by the model
    ``model_id`` (on its finish part); a step that carried calls
    finishes with ``tool-calls`` whatever it said (loop rule 3), unless it
    was cut off (``length``, ``content-filter``: its calls never run, loop
    rule 2); a paused step with calls is a tool step (loop rule 15).

    Raises:
        ModelError: ``UPSTREAM``: a finish reason a step cannot have, or two
            calls with one id.
    """
    reason = finish.finish_reason
    if reason not in STEP_REASONS:
        raise ModelError(
            ErrorClass.UPSTREAM,
            message=f"the model finished a step with {reason.value if reason else None!r}; "
            "a step ends with stop, tool-calls, length, content-filter or paused",
        )
    ids = [call.id for call in calls]
    twice = next((i for n, i in enumerate(ids) if i in ids[:n]), None)
    if twice is not None:  # before any call runs: their results could not be told apart
        raise ModelError(
            ErrorClass.UPSTREAM,
            message=f"the model sent two tool calls with the id {twice!r} in one step; "
            "each call needs its own id",
        )
    if calls and (reason is FinishReason.STOP or reason is FinishReason.PAUSED):
        reason = FinishReason.TOOL_CALLS
    finish = StreamPart.step_finish(reason, finish.usage, finish.cache, model_id)
    return Step("".join(content.texts), content.parts, calls, tuple(content.reasoning), finish, release)


def valid_unicode(text: str) -> str:
    """``text`` as it can enter the history: surrogate pairs joined into the
    characters they encode and lone surrogates replaced by U+FFFD.

    Text with surrogates cannot be encoded as UTF-8, so a history holding
    any could never be sent again. They come from tool output (file names
    that ``os.listdir`` decoded with ``surrogateescape``) and from servers
    that split an emoji's UTF-16 surrogate pair across two JSON strings.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _split_high_surrogate(text: str) -> tuple[str, str]:
    """``text`` made valid (:func:`valid_unicode`), less a trailing high
    surrogate, returned second: the next text delta may open with its pair."""
    if text and "\ud800" <= text[-1] <= "\udbff":
        return valid_unicode(text[:-1]), text[-1]
    return valid_unicode(text), ""
