"""The provider-neutral cache bookkeeping of ``agentcore.caching`` (and the
digests of ``agentcore.providers.digests``): digests,
prefix comparison, the diagnosis of each cause table by table, and the
tracker's choice of the earlier request under concurrent runs."""

from __future__ import annotations

import threading

import pytest

from agentcore import ConfigError, Context, FinishReason, StreamPart, Usage
from agentcore.caching import (
    CacheCause,
    CachePolicy,
    CacheReport,
    CacheTracker,
    Earlier,
    Fingerprint,
    Match,
    PrefixChange,
    compare,
    diagnose,
    tracker,
)
from agentcore.providers.digests import digest, fingerprint

ANTHROPIC = CachePolicy("Anthropic", 300.0, 1024, reports_writes=True)
OPENAI = CachePolicy("OpenAI", 300.0, 1024, reports_writes=False, granularity=128)


def prompt(tools: str = "t", system: str = "s", *messages: str) -> Fingerprint:
    return fingerprint([tools], system, list(messages))


def test_digest_is_the_json_text_as_sent() -> None:
    assert digest({"a": 1, "b": "é"}) == digest({"a": 1, "b": "é"})
    assert digest({"a": 1, "b": 2}) != digest({"b": 2, "a": 1})  # key order is part of the bytes
    assert digest(None) != digest("")
    assert len(digest([1, 2])) == 32


COMPARE_CASES = [
    ("the same prompt", prompt("t", "s", "a", "b"), prompt("t", "s", "a", "b"), Match(2, None)),
    ("one more message", prompt("t", "s", "a", "b", "c"), prompt("t", "s", "a", "b"), Match(2, None)),
    ("tools changed", prompt("T", "s", "a"), prompt("t", "s", "a"), Match(0, PrefixChange.TOOLS)),
    ("system changed", prompt("t", "S", "a"), prompt("t", "s", "a"), Match(0, PrefixChange.SYSTEM)),
    (
        "message 1 edited",
        prompt("t", "s", "a", "B", "c"),
        prompt("t", "s", "a", "b", "c"),
        Match(1, PrefixChange.MESSAGE, 1),
    ),
    ("first message edited", prompt("t", "s", "A"), prompt("t", "s", "a"), Match(0, PrefixChange.MESSAGE, 0)),
    (
        "history cut",
        prompt("t", "s", "a"),
        prompt("t", "s", "a", "b", "c"),
        Match(1, PrefixChange.SHORTER, 1),
    ),
]


@pytest.mark.parametrize(
    ("name", "current", "earlier", "expected"), COMPARE_CASES, ids=[c[0] for c in COMPARE_CASES]
)
def test_compare(name: str, current: Fingerprint, earlier: Fingerprint, expected: Match) -> None:
    assert compare(current, earlier) == expected


def earlier(usage: Usage, messages: int = 3, at: float = 100.0) -> Earlier:
    return Earlier(prompt("t", "s", *"abcdefgh"[:messages]), at, usage)


CACHED_BEFORE = Usage(input=2010, cache_read=2000, cache_write=500)
"""An earlier Anthropic step: 2,000 tokens read, 500 written, 10 after the breakpoint."""

DIAGNOSE_CASES: list[tuple[str, Match, Earlier, Usage, CachePolicy, float, CacheCause | None, int, str]] = [
    (
        "Anthropic: read all the earlier request cached",
        Match(3, None),
        earlier(CACHED_BEFORE),
        Usage(input=2510, cache_read=2500, cache_write=90),
        ANTHROPIC,
        130.0,
        None,
        2500,
        "",
    ),
    (
        "Anthropic: an edited message",
        Match(1, PrefixChange.MESSAGE, 1),
        earlier(CACHED_BEFORE),
        Usage(input=810, cache_read=800, cache_write=1900),
        ANTHROPIC,
        130.0,
        CacheCause.PREFIX_CHANGED,
        2500,
        "read 800 of the 2,500 cached tokens: "
        "message 1 changed (edited or replaced since the earlier request)",
    ),
    (
        "Anthropic: the system prompt changed",
        Match(0, PrefixChange.SYSTEM),
        earlier(CACHED_BEFORE),
        Usage(input=10, cache_write=2600),
        ANTHROPIC,
        130.0,
        CacheCause.PREFIX_CHANGED,
        2500,
        "read 0 of the 2,500 cached tokens: the system prompt changed",
    ),
    (
        "Anthropic: the tools changed",
        Match(0, PrefixChange.TOOLS),
        earlier(CACHED_BEFORE),
        Usage(input=10, cache_write=2600),
        ANTHROPIC,
        130.0,
        CacheCause.PREFIX_CHANGED,
        2500,
        "read 0 of the 2,500 cached tokens: the tool definitions changed",
    ),
    (
        "Anthropic: the history is shorter",
        Match(1, PrefixChange.SHORTER, 1),
        earlier(CACHED_BEFORE),
        Usage(input=10, cache_write=1200),
        ANTHROPIC,
        130.0,
        CacheCause.PREFIX_CHANGED,
        2500,
        "read 0 of the 2,500 cached tokens: the history is shorter than the earlier request's "
        "(it ends before message 1)",
    ),
    (
        "Anthropic: 400 s after, TTL 300 s",
        Match(3, None),
        earlier(CACHED_BEFORE),
        Usage(input=10, cache_write=2600),
        ANTHROPIC,
        500.0,
        CacheCause.TTL_EXPIRED,
        2500,
        "read 0 of the 2,500 cached tokens: the cache probably expired: 400 s passed since the earlier "
        "request, more than its 300 s TTL",
    ),
    (
        "Anthropic: 400 s after but read anyway",
        Match(3, None),
        earlier(CACHED_BEFORE),
        Usage(input=2510, cache_read=2500, cache_write=100),
        ANTHROPIC,
        500.0,
        None,
        2500,
        "",
    ),
    (
        "Anthropic: the earlier prompt below the minimum",
        Match(3, None),
        earlier(Usage(input=900)),
        Usage(input=1100),
        ANTHROPIC,
        130.0,
        CacheCause.BELOW_MINIMUM,
        0,
        "the earlier request's prompt (900 tokens) is below the 1,024-token minimum Anthropic caches "
        "for this model, so nothing was cached",
    ),
    (
        "Anthropic: same prefix, in time, not read",
        Match(3, None),
        earlier(CACHED_BEFORE),
        Usage(input=10, cache_write=2600),
        ANTHROPIC,
        130.0,
        CacheCause.NOT_SAID,
        2500,
        "read 0 of the 2,500 cached tokens: the prefix and the TTL allowed more; Anthropic did not say why",
    ),
    (
        "Anthropic: the earlier request cached nothing although long enough",
        Match(3, None),
        earlier(Usage(input=3000)),
        Usage(input=3200),
        ANTHROPIC,
        130.0,
        CacheCause.NOT_SAID,
        3000,
        "read 0 of the 3,000 cached tokens: the prefix and the TTL allowed more; Anthropic did not say why",
    ),
    (
        "the earlier request cached nothing, the model's minimum not known: no claim",
        Match(3, None),
        earlier(Usage(input=3000)),
        Usage(input=3200),
        CachePolicy("Anthropic", 300.0, None),
        130.0,
        None,
        0,
        "",
    ),
    (
        "caching off: nothing expected",
        Match(0, PrefixChange.SYSTEM),
        earlier(Usage(input=3000)),
        Usage(input=3200),
        CachePolicy("Anthropic", None, 1024),
        130.0,
        None,
        0,
        "",
    ),
    (
        "OpenAI: reads in steps of 128 fall short by less than one step",
        Match(3, None),
        earlier(Usage(input=2000, cache_read=1024)),
        Usage(input=2300, cache_read=1920),
        OPENAI,
        130.0,
        None,
        2000,
        "",
    ),
    (
        "OpenAI: read nothing of a long same prefix",
        Match(3, None),
        earlier(Usage(input=2000, cache_read=1024)),
        Usage(input=2300),
        OPENAI,
        130.0,
        CacheCause.NOT_SAID,
        2000,
        "read 0 of the 2,000 cached tokens: the prefix and the TTL allowed more; OpenAI did not say why",
    ),
]


@pytest.mark.parametrize(
    ("name", "match", "before", "usage", "policy", "at", "cause", "expected", "reason"),
    DIAGNOSE_CASES,
    ids=[c[0] for c in DIAGNOSE_CASES],
)
def test_diagnose(
    name: str,
    match: Match,
    before: Earlier,
    usage: Usage,
    policy: CachePolicy,
    at: float,
    cause: CacheCause | None,
    expected: int,
    reason: str,
) -> None:
    report = diagnose(5, match, before, usage, policy, at)
    assert (report.cause, report.expected_read, report.reason) == (cause, expected, reason)
    assert report.miss is (cause is not None)
    assert report.cache_read == usage.cache_read
    assert (report.messages, report.shared_messages, report.previous_messages) == (5, match.shared, 3)
    assert (report.change, report.changed_at) == (match.change, match.at)
    assert report.seconds_since_previous == at - 100.0


def test_the_first_request_has_nothing_to_compare_with() -> None:
    report = diagnose(1, None, None, Usage(input=10, cache_write=3000), ANTHROPIC, 5.0)
    assert report == CacheReport(messages=1)
    assert not report.miss


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def report_of(
    cache: CacheTracker, request: Fingerprint, usage: Usage, run: Context | None = None
) -> CacheReport:
    finish = StreamPart.step_finish(FinishReason.STOP, usage)
    part = cache.watch(request, ANTHROPIC, run).report(finish)
    assert part == finish  # the report is not part of the comparison
    assert part.cache is not None
    return part.cache


def test_interleaved_runs_are_each_compared_with_their_own_previous_step() -> None:
    clock = Clock()
    cache = CacheTracker(clock=clock)
    report_of(cache, prompt("t", "s", "a1"), Usage(input=10, cache_write=2000))
    report_of(cache, prompt("t", "s", "b1"), Usage(input=10, cache_write=2100))
    clock.now += 10
    first = report_of(cache, prompt("t", "s", "a1", "a2"), Usage(input=2010, cache_read=2000, cache_write=50))
    second = report_of(cache, prompt("t", "s", "b1", "b2"), Usage(input=10, cache_write=2150))
    assert (first.shared_messages, first.previous_messages, first.miss) == (1, 1, False)
    assert (second.shared_messages, second.previous_messages, second.expected_read) == (1, 1, 2100)
    assert second.cause is CacheCause.NOT_SAID
    assert second.seconds_since_previous == 10.0


def test_runs_that_began_alike_are_each_compared_with_their_own_previous_step() -> None:
    # two runs of the same question, interleaved on one model: the second
    # run's step 2 holds all of its own step 1, and shares as much with the
    # other run's later step 2 (the same question, another answer)
    cache = CacheTracker(clock=Clock())
    one, two = Context(), Context()
    report_of(cache, prompt("t", "s", "q"), Usage(input=10, cache_write=2000), one)
    report_of(cache, prompt("t", "s", "q"), Usage(input=2010, cache_read=2000), two)
    report_of(
        cache, prompt("t", "s", "q", "a1", "r1"), Usage(input=2010, cache_read=2000, cache_write=90), one
    )
    report = report_of(
        cache, prompt("t", "s", "q", "b1", "s1"), Usage(input=2010, cache_read=2000, cache_write=80), two
    )
    assert (report.previous_messages, report.shared_messages, report.change, report.miss) == (
        1,
        1,
        None,
        False,
    )
    assert report.expected_read == 2000


def test_an_edit_is_compared_with_the_conversations_last_request() -> None:
    # a run of three steps, then its history with message 3 edited in a new
    # run: the provider holds the first run's last prompt, and message 3 is
    # where the new one parts from it (not the step that ended before it)
    cache = CacheTracker(clock=Clock())
    first = Context()
    report_of(cache, prompt("t", "s", "q"), Usage(input=10, cache_write=2000), first)
    report_of(
        cache, prompt("t", "s", "q", "a1", "r1"), Usage(input=2010, cache_read=2000, cache_write=90), first
    )
    report_of(
        cache,
        prompt("t", "s", "q", "a1", "r1", "a2", "r2"),
        Usage(input=2100, cache_read=2090, cache_write=95),
        first,
    )
    report = report_of(
        cache,
        prompt("t", "s", "q", "a1", "r1", "A2", "r2", "q2"),
        Usage(input=2200, cache_read=2090, cache_write=110),
        Context(),
    )
    assert (report.previous_messages, report.shared_messages) == (5, 3)
    assert (report.change, report.changed_at, report.expected_read) == (PrefixChange.MESSAGE, 3, 2185)
    assert report.cause is CacheCause.PREFIX_CHANGED
    assert report.reason == (
        "read 2,090 of the 2,185 cached tokens: "
        "message 3 changed (edited or replaced since the earlier request)"
    )


def test_a_step_that_does_not_hold_its_runs_previous_one_is_compared_by_prefix() -> None:
    # (a run whose history was cut back): compared as a run's first step is,
    # here with the request it holds all of, sent by another run
    cache = CacheTracker(clock=Clock())
    run = Context()
    report_of(cache, prompt("t", "s", "q", "b"), Usage(input=10, cache_write=2000), Context())
    report_of(cache, prompt("t", "s", "q", "a", "r"), Usage(input=10, cache_write=2100), run)
    report = report_of(cache, prompt("t", "s", "q", "b", "z"), Usage(input=2050, cache_read=2000), run)
    assert (report.previous_messages, report.shared_messages, report.change, report.miss) == (
        2,
        2,
        None,
        False,
    )


def test_a_request_that_extends_an_earlier_one_is_compared_with_it() -> None:
    cache = CacheTracker(clock=Clock())
    report_of(cache, prompt("t", "s", "a", "b"), Usage(input=10, cache_write=2000))
    report_of(
        cache, prompt("t", "s", "a", "b", "c", "d"), Usage(input=2010, cache_read=2000, cache_write=300)
    )
    # back to the shorter history: the request that ended there is the one to read
    report = report_of(cache, prompt("t", "s", "a", "b"), Usage(input=2010, cache_read=2000))
    assert (report.previous_messages, report.change, report.miss) == (2, None, False)


def test_a_failed_attempt_is_not_remembered() -> None:
    cache = CacheTracker(clock=Clock())
    cache.watch(prompt("t", "s", "a"), ANTHROPIC, None)  # an attempt that never reached its step-finish
    assert (
        report_of(cache, prompt("t", "s", "a"), Usage(input=10, cache_write=2000)).previous_messages is None
    )


def test_concurrent_steps_are_all_remembered() -> None:
    cache = CacheTracker(clock=Clock(), keep=64)
    start = threading.Barrier(8)

    def run(number: int) -> None:
        start.wait()
        for index in range(5):
            report_of(
                cache, prompt("t", "s", f"run{number}", *[f"m{i}" for i in range(index)]), Usage(input=9)
            )

    threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # each run's last request extends its own fourth one, not another run's
    for number in range(8):
        report = report_of(
            cache, prompt("t", "s", f"run{number}", "m0", "m1", "m2", "m3", "m4"), Usage(input=9)
        )
        assert (report.shared_messages, report.previous_messages) == (5, 5)


def test_tracker_option() -> None:
    mine = CacheTracker()
    assert tracker(mine) is mine
    assert isinstance(tracker(None), CacheTracker)
    with pytest.raises(ConfigError, match="cache_tracker must be a CacheTracker or None, got dict"):
        tracker({})  # type: ignore[arg-type]  # a wrong type on purpose
