"""Prompt caching: what each request shares with the requests before it, and
why a step read less from the provider's prompt cache than it could have.

Providers cache a request's prompt prefix (the tool definitions, then the
system prompt, then the messages, in that order) and bill a later request
that starts with the same bytes much less for that part. A prefix is found
again only when it is byte-identical, so one edited message, a new system
prompt or a changed tool throws away everything after it; a cache also
expires (its TTL), and a prompt shorter than the provider's minimum is not
cached at all. ``docs/caching.md`` has the cost model and how to read this.

Each built-in adapter fingerprints the JSON it sends
(:mod:`agentcore.providers.digests`: one digest for the tools, one for the
system prompt, one per history message, a :class:`Fingerprint`) and has its
:class:`CacheTracker` watch the step (:meth:`CacheTracker.watch`): the
tracker compares the request with the latest earlier request of the same
conversation through the same model instance (the run's previous step, or
for a run's first step the latest request sharing the longest prefix with
it) and, once the step's usage is known, attaches a :class:`CacheReport`
to its ``step-finish`` part (:func:`diagnose`); the loop puts it on
:attr:`agentcore.StepResult.cache`. A step that read less than it could
have is logged at INFO, naming the cause. The report's values and the
tracker that makes them live here together; the adapters only digest what
they send.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
import weakref
from collections.abc import Callable

import attrs

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.types import StreamPart, Usage

DEFAULT_KEEP = 32
"""How many earlier requests a :class:`CacheTracker` remembers."""

_log = logging.getLogger(__name__)


class PrefixChange(str, enum.Enum):
    """Where a request stopped matching the earlier request it is compared with."""

    TOOLS = "tools"
    """The tool definitions differ (nothing of the prefix is shared)."""
    SYSTEM = "system"
    """The system prompt differs (the tools are shared)."""
    MESSAGE = "message"
    """A message differs from the earlier request's message at the same index."""
    SHORTER = "shorter"
    """The history is a part of the earlier one's: it ends before it did."""
    COMPACTED = "compacted"
    """The provider compacted the history: the request holds a compaction
    block (:class:`agentcore.ProviderItem`) the earlier request did not, and
    the provider reads the prompt from that block on."""


class CacheCause(str, enum.Enum):
    """Why a step read less from the prompt cache than it could have."""

    PREFIX_CHANGED = "prefix-changed"
    """The prompt differs from the earlier request's before that request's end."""
    TTL_EXPIRED = "ttl-expired"
    """More time passed since the earlier request than the cache's TTL."""
    BELOW_MINIMUM = "below-minimum"
    """The earlier request's prompt was shorter than the provider caches."""
    COMPACTED = "compacted"
    """The history was compacted since the earlier request, by a history
    policy (the prompt changed at or after the first message it changed) or
    by the provider (a compaction block it reads the prompt from, or content
    its context editing cleared): what was cached before is no longer the
    prompt's prefix. The cost of compacting, not an edit."""
    NOT_SAID = "not-said"
    """None of the above: the provider did not say why."""


@attrs.frozen
class CacheReport:
    """How one step's request compared with the earlier request through the
    same model instance, and why its cache read fell short when it did.

    Attributes:
        messages: the request's messages.
        shared_messages: its leading messages byte-identical to the earlier
            request's (0 when the tools or the system prompt differ, or when
            there is no earlier request).
        previous_messages: the earlier request's messages; None when there is
            no earlier request (the first through this model instance).
        change: where the prompt stopped matching the earlier request, or None.
        changed_at: the message index :attr:`change` names, or None.
        seconds_since_previous: seconds from the earlier request to this one;
            None without one.
        cache_read: the tokens this step read from the cache.
        expected_read: the tokens it could have read: what the earlier request
            left in the cache (its cache read and write where the provider
            reports writes, else its whole prompt; that prompt when it cached
            nothing while caching was on and it reached the provider's
            minimum); 0 when caching was off, the earlier prompt was below the
            minimum, or it cached nothing and the minimum is not known.
        cause: why :attr:`cache_read` fell short of :attr:`expected_read`
            (or, :attr:`CacheCause.BELOW_MINIMUM`, why nothing could be
            cached); None when it did not.
        reason: one line saying what happened, for people and logs; "" when
            there is no :attr:`cause`.
    """

    messages: int
    shared_messages: int = 0
    previous_messages: int | None = None
    change: PrefixChange | None = None
    changed_at: int | None = None
    seconds_since_previous: float | None = None
    cache_read: int = 0
    expected_read: int = 0
    cause: CacheCause | None = None
    reason: str = ""

    @property
    def miss(self) -> bool:
        """True when the step read less than it could have (:attr:`cause` is set)."""
        return self.cause is not None


@attrs.frozen
class Fingerprint:
    """Digests of one request's prompt, in the order providers cache it.

    Attributes:
        tools: the digest of the tool definitions as sent (of ``null`` for none).
        system: the digest of the system prompt as sent (of ``null`` for none).
        messages: one digest per message of ``Request.messages``, of the JSON
            the adapter sent for it (of ``null`` for a message it did not send).
        compacted_at: the index of the message holding the request's latest
            compaction block (Anthropic) or item (OpenAI Responses), from
            which on the provider reads the prompt (it passes over what comes
            before it); None when the request holds none.
    """

    tools: str
    system: str
    messages: tuple[str, ...]
    compacted_at: int | None = None


@attrs.frozen
class Match:
    """How a request compares with an earlier one.

    Attributes:
        shared: the leading messages byte-identical to the earlier request's
            (0 when the tools or the system prompt differ).
        change: where the request stopped matching, or None when it holds the
            whole earlier request (and perhaps more messages after it).
        at: the index of the first message that differs (:attr:`PrefixChange.MESSAGE`)
            or of the first one the earlier request had and this one lacks
            (:attr:`PrefixChange.SHORTER`); None otherwise.
    """

    shared: int
    change: PrefixChange | None
    at: int | None = None


def compare(current: Fingerprint, earlier: Fingerprint) -> Match:
    """Compare ``current`` with ``earlier``, in the order providers cache a
    prompt: tools, system prompt, then the messages one by one.

    A provider that compacted reads the prompt from the latest compaction
    block on (:attr:`Fingerprint.compacted_at`). A request holding a
    compaction the earlier one did not (or not at its place) is
    :attr:`PrefixChange.COMPACTED` at the block's message, whatever came
    before it; two requests with the same latest compaction are compared
    from that block on, so dropping the messages before it, which the
    provider passes over, changes nothing (``shared`` counts in
    ``current``'s indexes)."""
    if current.tools != earlier.tools:
        return Match(0, PrefixChange.TOOLS)
    if current.system != earlier.system:
        return Match(0, PrefixChange.SYSTEM)
    mine, theirs, offset = current.messages, earlier.messages, 0
    at, before = current.compacted_at, earlier.compacted_at
    if at is not None:
        if before is None or theirs[before] != mine[at]:
            return Match(_leading(mine, theirs), PrefixChange.COMPACTED, at)
        mine, theirs, offset = mine[at:], theirs[before:], at
    shared = offset + _leading(mine, theirs)
    if shared - offset < min(len(mine), len(theirs)):
        return Match(shared, PrefixChange.MESSAGE, shared)
    if shared - offset < len(theirs):
        return Match(shared, PrefixChange.SHORTER, shared)
    return Match(shared, None)


def _leading(mine: tuple[str, ...], theirs: tuple[str, ...]) -> int:
    """How many leading digests ``mine`` and ``theirs`` share."""
    shared = 0
    for mine_digest, their_digest in zip(mine, theirs, strict=False):
        if mine_digest != their_digest:
            break
        shared += 1
    return shared


@attrs.frozen
class CachePolicy:
    """What an adapter asked of the provider's cache for one request, and the
    provider's documented rules that decide what a later request can read.

    Attributes:
        provider: the provider's name, for the reason text (``"Anthropic"``).
        ttl: seconds a cached prefix lives after its last use, as documented
            for the TTL in effect; None when the request asked for no caching
            (then no step is a miss).
        min_tokens: the shortest prompt the provider caches, for this model;
            None when not known.
        reports_writes: the provider reports the tokens written to the cache,
            so a request leaves ``cache_read + cache_write`` tokens cached
            (Anthropic); otherwise it caches its whole prompt (OpenAI).
        granularity: cache reads come in multiples of this many tokens
            (OpenAI: 128); a shortfall smaller than it is not a miss.
    """

    provider: str
    ttl: float | None
    min_tokens: int | None = None
    reports_writes: bool = True
    granularity: int = 1


@attrs.frozen
class Earlier:
    """An earlier request as a :class:`CacheTracker` remembers it.

    Attributes:
        print: its fingerprint.
        at: when it was sent, in seconds of the tracker's clock.
        usage: the usage of its step.
        run: a weak reference to the context of the run that sent it; None
            for a request sent without one.
    """

    print: Fingerprint
    at: float
    usage: Usage
    run: weakref.ref[Context] | None = None


def _what_changed(match: Match) -> str:
    if match.change is PrefixChange.TOOLS:
        return "the tool definitions changed"
    if match.change is PrefixChange.SYSTEM:
        return "the system prompt changed"
    if match.change is PrefixChange.MESSAGE:
        return f"message {match.at} changed (edited or replaced since the earlier request)"
    if match.change is PrefixChange.COMPACTED:
        return (
            f"the provider compacted the history at message {match.at}: it reads the prompt from that "
            "compaction block on, so what it cached before the compaction is not read again"
        )
    return f"the history is shorter than the earlier request's (it ends before message {match.at})"


def diagnose(
    messages: int,
    match: Match | None,
    earlier: Earlier | None,
    usage: Usage,
    policy: CachePolicy,
    at: float,
    edited: str = "",
) -> CacheReport:
    """The :class:`CacheReport` of a step.

    A step is a miss when caching was asked for (``policy.ttl`` set), an
    earlier request exists and the step read at least ``policy.granularity``
    tokens less than that request left in the cache (or than its prompt, when
    it cached nothing although it reached ``policy.min_tokens``; with the
    minimum not known, such a step is no miss). The cause is, in this order:
    the earlier prompt was below ``policy.min_tokens`` and nothing was read
    (:attr:`CacheCause.BELOW_MINIMUM`); the provider compacted the history
    since (:attr:`CacheCause.COMPACTED`, naming the message of the compaction
    block); the prompt changed before the earlier request's end
    (:attr:`CacheCause.PREFIX_CHANGED`, naming the tools, the system prompt
    or the message index); the provider edited this step's prompt itself
    (``edited``, Anthropic context editing: :attr:`CacheCause.COMPACTED`);
    more than ``policy.ttl`` seconds passed (:attr:`CacheCause.TTL_EXPIRED`,
    "probably": providers keep a prefix at least that long, sometimes
    longer); else :attr:`CacheCause.NOT_SAID`.

    Args:
        messages: the request's number of messages.
        match: how the request compares with ``earlier`` (None without one).
        earlier: the earlier request it is compared with, or None.
        usage: the step's usage.
        policy: what the request asked of the cache.
        at: when the request was sent, on the clock of ``earlier.at``.
        edited: what the provider said it removed from this step's prompt
            before reading it (the edits applied, in words); "" for nothing.
    """
    read = usage.cache_read
    if match is None or earlier is None:
        return CacheReport(messages, cache_read=read)
    report = CacheReport(
        messages,
        shared_messages=match.shared,
        previous_messages=len(earlier.print.messages),
        change=match.change,
        changed_at=match.at,
        seconds_since_previous=round(at - earlier.at, 3),
        cache_read=read,
    )
    if policy.ttl is None:
        return report
    before = earlier.usage
    prompt = before.input + before.cache_write
    if policy.min_tokens is not None and prompt < policy.min_tokens:
        if read:
            return report
        reason = (
            f"the earlier request's prompt ({prompt:,} tokens) is below the {policy.min_tokens:,}-token "
            f"minimum {policy.provider} caches for this model, so nothing was cached"
        )
        return attrs.evolve(report, cause=CacheCause.BELOW_MINIMUM, reason=reason)
    left = before.cache_read + before.cache_write if policy.reports_writes else before.input
    if not left and policy.min_tokens is None:
        return report  # nothing was cached, and whether the prompt was long enough is not known
    expected = left or prompt
    report = attrs.evolve(report, expected_read=expected)
    if expected - read < policy.granularity:
        return report
    if match.change is PrefixChange.COMPACTED:
        cause, why = CacheCause.COMPACTED, _what_changed(match)
    elif match.change is not None:
        cause, why = CacheCause.PREFIX_CHANGED, _what_changed(match)
    elif edited:
        cause, why = CacheCause.COMPACTED, f"the provider cleared content from the prompt first ({edited})"
    elif at - earlier.at > policy.ttl:
        cause = CacheCause.TTL_EXPIRED
        why = (
            f"the cache probably expired: {at - earlier.at:,.0f} s passed since the earlier request, "
            f"more than its {policy.ttl:,.0f} s TTL"
        )
    else:
        cause = CacheCause.NOT_SAID
        why = f"the prefix and the TTL allowed more; {policy.provider} did not say why"
    reason = f"read {read:,} of the {expected:,} cached tokens: {why}"
    return attrs.evolve(report, cause=cause, reason=reason)


def compacted(report: CacheReport, at: int, by: str) -> CacheReport:
    """``report`` with a prefix change at or after message ``at``, which a
    history policy changed before the step (``by`` names it), named as
    compaction (:attr:`CacheCause.COMPACTED`) rather than as an edit; any
    other report as it is. The loop calls it for the steps a compaction
    preceded (``docs/long-runs.md``)."""
    if report.cause is not CacheCause.PREFIX_CHANGED or report.changed_at is None or report.changed_at < at:
        return report
    reason = (
        f"read {report.cache_read:,} of the {report.expected_read:,} cached tokens: "
        f"the history was compacted from message {report.changed_at} on ({by})"
    )
    _log.info("agentcore: prompt cache miss (%s): %s", CacheCause.COMPACTED.value, reason)
    return attrs.evolve(report, cause=CacheCause.COMPACTED, reason=reason)


def _shared(current: Fingerprint, earlier: Fingerprint) -> int:
    """How much of ``earlier`` ``current`` shares: the tools and the system
    prompt count one each, then each leading message (:func:`compare`
    without building a :class:`Match`, for every remembered request at every
    step)."""
    if current.tools != earlier.tools:
        return 0
    if current.system != earlier.system:
        return 1
    mine, theirs = current.messages, earlier.messages
    if mine[: len(theirs)] == theirs:  # the usual case, a request that extends an earlier one
        return 2 + len(theirs)
    shared = 0
    for a, b in zip(mine, theirs, strict=False):
        if a != b:
            break
        shared += 1
    return 2 + shared


class CacheTracker:
    """Remembers the latest requests through one model instance and reports,
    for each step, how its request compares with them (:func:`diagnose`).

    A request is compared with what the provider's cache most likely holds
    for its conversation: the latest request the conversation sent. Within a
    run (``run``, the context the loop passes to ``Model.stream``) that is the
    run's previous step, when the request holds all of it (a tool loop only
    adds messages); so runs interleaved on one model, even ones that began
    with the same messages, are each compared with their own previous step.
    Otherwise (a run's first step: a conversation continued, perhaps edited,
    in a new run; or a request without a run) it is the remembered request
    sharing the longest prefix with it; among equals one identical to it (its
    whole prompt was cached), else the latest: after message 3 was edited,
    the conversation's last request, not an older step that happened to end
    before message 3. A step is remembered once its usage is known; a
    failed attempt is not. Safe for concurrent runs: one lock guards the
    remembered requests.

    Args:
        clock: seconds, monotonic (the time of each request).
        keep: how many requests to remember (the latest).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, keep: int = DEFAULT_KEEP) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._earlier: collections.deque[Earlier] = collections.deque(maxlen=keep)

    def _previous(self, current: Fingerprint, run: Context | None) -> Earlier | None:
        with self._lock:
            earlier = list(self._earlier)
        if run is not None:
            for entry in reversed(earlier):
                if entry.run is not None and entry.run() is run:
                    if _shared(current, entry.print) == 2 + len(entry.print.messages):
                        return entry  # the request holds all of the run's previous step
                    break
        best: Earlier | None = None
        best_score = (-1, False)
        for entry in earlier:  # oldest first: a later one wins a tie
            score = (_shared(current, entry.print), current == entry.print)
            if score >= best_score:
                best, best_score = entry, score
        return best

    def watch(self, request: Fingerprint, policy: CachePolicy, run: Context | None) -> CacheWatch:
        """Start watching one step: its request is compared with the
        remembered ones now, when it is sent; :meth:`CacheWatch.report` then
        gives the step's ``step-finish`` part its :class:`CacheReport`.

        Args:
            request: the request's fingerprint.
            policy: what the request asked of the cache.
            run: the context ``Model.stream`` was given (the run's, in a
                run), which ties the run's steps together; None for none.
        """
        return CacheWatch(self, request, policy, self._clock(), self._previous(request, run), run)

    def _remember(self, earlier: Earlier) -> None:
        with self._lock:
            self._earlier.append(earlier)


@attrs.frozen
class CacheWatch:
    """One step being watched (:meth:`CacheTracker.watch`): its request, what
    it asked of the cache, when it was sent, the earlier request it is
    compared with and the run that sent it."""

    tracker: CacheTracker
    request: Fingerprint
    policy: CachePolicy
    at: float
    earlier: Earlier | None
    run: Context | None

    def report(self, finish: StreamPart, edited: str = "") -> StreamPart:
        """``finish``, the step's ``step-finish`` part, with its
        :class:`CacheReport` (``cache``); the step is remembered (a failed
        attempt, which never gets here, is not) and a miss is logged at INFO.
        ``edited``: what the provider removed from the step's prompt itself
        (:func:`diagnose`)."""
        request, earlier = self.request, self.earlier
        match = None if earlier is None else compare(request, earlier.print)
        report = diagnose(len(request.messages), match, earlier, finish.usage, self.policy, self.at, edited)
        run = None if self.run is None else weakref.ref(self.run)
        self.tracker._remember(Earlier(request, self.at, finish.usage, run))
        if report.cause is not None:
            _log.info("agentcore: prompt cache miss (%s): %s", report.cause.value, report.reason)
        return attrs.evolve(finish, cache=report)


def tracker(value: CacheTracker | None) -> CacheTracker:
    """An adapter's ``cache_tracker`` option: ``value``, or a new
    :class:`CacheTracker` for None.

    Raises:
        ConfigError: anything else.
    """
    if value is None:
        return CacheTracker()
    if not isinstance(value, CacheTracker):
        raise ConfigError(f"cache_tracker must be a CacheTracker or None, got {type(value).__name__}")
    return value
