"""Prompt caching through ``AnthropicModel``: the request shape of every
caching setting and of the default, the breakpoint limit, cache points, and
whole runs against a fake API (on the in-memory transport) that caches as
Anthropic documents
(https://platform.claude.com/docs/en/build-with-claude/prompt-caching): a
ten-step tool loop that reads its growing prefix back at every step, and
one run per cause of a cache miss."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from agentcore import (
    ConfigError,
    Context,
    LoopOptions,
    Message,
    ModelSettings,
    Reasoning,
    Request,
    Role,
    RunResult,
    StreamPart,
    ToolDefinition,
    Usage,
    cache_point,
    generate,
    reasoning_part,
    run,
    text_part,
    tool_result_part,
    user_message,
)
from agentcore.caching import CacheCause, CacheTracker, PrefixChange
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import (
    CACHE_TTL_SECONDS,
    MAX_CACHE_BREAKPOINTS,
    cache_breakpoints,
    cache_policy,
    min_cacheable_tokens,
    request_body,
)
from agentcore.providers.anthropic.stream import FORMAT
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from tests.loop_helpers import FuncTool
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
    tool_start,
)

KEY = "sk-ant-api03-caching-test-key-0000"
EPHEMERAL = {"type": "ephemeral"}
TOOLS = (
    ToolDefinition(name="lookup", description="Look a thing up."),
    ToolDefinition(name="store", description="Store a thing."),
)
SYSTEM = "You answer questions about the archive. " * 150  # about 1,500 tokens at 4 characters a token


def body_of(request: Request, **settings: Any) -> dict[str, Any]:
    return request_body(request, "claude-sonnet-4-5", max_tokens=1000, settings=ModelSettings(**settings))


# --- request shapes (pure) -----------------------------------------------------

EMPTY_SCHEMA = {"type": "object", "properties": {}}
SHAPE_CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("no caching setting: nothing", {}, {}),
    ("cache: the request-level field", {"cache": True}, {"cache_control": EPHEMERAL}),
    ("cache off", {"cache": False}, {}),
    (
        "cache with a 1 h TTL",
        {"cache": True, "cache_ttl": "1h"},
        {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ),
    (
        "cache with the 5 min TTL said",
        {"cache": True, "cache_ttl": "5m"},
        {"cache_control": {"type": "ephemeral", "ttl": "5m"}},
    ),
    (
        "the system prompt as a cached block",
        {"cache_system": True},
        {"system": [{"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL}]},
    ),
    (
        "the tools: the last one carries the breakpoint",
        {"cache_tools": True, "cache_ttl": "1h"},
        {
            "tools": [
                {"name": "lookup", "description": "Look a thing up.", "input_schema": EMPTY_SCHEMA},
                {
                    "name": "store",
                    "description": "Store a thing.",
                    "input_schema": EMPTY_SCHEMA,
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                },
            ]
        },
    ),
]


@pytest.mark.parametrize(("name", "settings", "fields"), SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_request_shape(name: str, settings: dict[str, Any], fields: dict[str, Any]) -> None:
    request = Request(system="Be brief.", messages=[user_message("Hi")], tools=TOOLS)
    plain = body_of(request)
    body = body_of(request, **settings)
    assert {key: value for key, value in body.items() if plain.get(key) != value} == fields
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]


def test_cache_points_mark_the_block_before_them() -> None:
    thinking = Reasoning(text="hm", signature="sig", format=FORMAT, origin="")
    messages = [
        user_message("A long document.", cache_point(), text_part("What does it say?")),
        Message(
            role=Role.ASSISTANT,
            content=[text_part("It says hello."), reasoning_part(thinking), cache_point()],
        ),
        user_message("And then?"),
    ]
    body = body_of(Request(messages=messages), cache_ttl="1h")
    marked = {"type": "ephemeral", "ttl": "1h"}
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "A long document.", "cache_control": marked},
                {"type": "text", "text": "What does it say?"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "It says hello.", "cache_control": marked},
                {"type": "thinking", "thinking": "hm", "signature": "sig"},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "And then?"}]},
    ]
    assert cache_breakpoints(body) == 2
    assert "cache_control" not in body


def test_a_cache_point_with_nothing_before_it_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"messages\[0\] has a cache point with no content before it"):
        body_of(Request(messages=[Message(role=Role.USER, content=[cache_point(), text_part("Hi")])]))


def test_more_breakpoints_than_the_api_takes_are_refused_naming_them() -> None:
    messages = [user_message("one", cache_point()), user_message("two", cache_point())]
    request = Request(system="Be brief.", messages=messages, tools=TOOLS)
    assert (
        cache_breakpoints(body_of(request, cache_system=True, cache_tools=True)) == MAX_CACHE_BREAKPOINTS == 4
    )
    with pytest.raises(ConfigError) as caught:
        body_of(request, cache=True, cache_system=True, cache_tools=True)
    assert str(caught.value) == (
        "the request has 5 cache breakpoints "
        "(automatic caching, the system prompt, the tools, 2 cache points); "
        "the Anthropic Messages API takes at most 4: remove cache points or set ModelSettings(cache=False) "
        "to drop the automatic one"
    )


def test_a_ttl_without_anything_to_cache_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"ModelSettings\.cache_ttl is '1h' but the request asks for no caching"
    ):
        body_of(Request(messages=[user_message("Hi")]), cache=False, cache_ttl="1h")


@pytest.mark.parametrize(
    ("settings", "field"),
    [({"cache_key": "user-1"}, "cache_key"), ({"cache_retention": "24h"}, "cache_retention")],
)
def test_openai_cache_settings_are_refused(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(
        ConfigError, match=f"ModelSettings.{field} is not supported by the Anthropic Messages API"
    ):
        AnthropicModel("claude-sonnet-4-5", api_key=KEY, settings=ModelSettings(**settings))


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-sonnet-4-5", 1024),
        ("claude-sonnet-4-5-20250929", 1024),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-opus-4-20250514", 1024),
        ("claude-haiku-4-5", 4096),
        ("claude-3-haiku-20240307", 2048),
        ("claude-opus-4-10", None),
        ("claude-test", None),
    ],
)
def test_min_cacheable_tokens(model: str, tokens: int | None) -> None:
    assert min_cacheable_tokens(model) == tokens


def test_cache_policy() -> None:
    cached = cache_policy(ModelSettings(cache_ttl="1h"), "claude-haiku-4-5", {"cache_control": EPHEMERAL})
    assert (cached.ttl, cached.min_tokens, cached.reports_writes) == (3600.0, 4096, True)
    assert cache_policy(ModelSettings(), "claude-test", {"messages": []}).ttl is None
    assert CACHE_TTL_SECONDS == {"5m": 300.0, "1h": 3600.0}


# --- a fake API that caches as Anthropic documents ---------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _unmarked(item) for key, item in value.items() if key != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(item) for item in value]
    return value


class CachingServer:
    """Answers ``POST /v1/messages`` as a scripted model (a ``lookup`` call at
    each of the first nine steps when the request has tools, then text) and
    reports usage as Anthropic's cache would: blocks in the order tools,
    system, messages; the prompt is cached up to the last breakpoint (the
    request-level ``cache_control`` or the last marked block) when that
    prefix holds at least ``min_tokens`` tokens, for ``ttl`` seconds after
    its last use; a request reads the longest cached prefix ending at one of
    the 20 blocks before its breakpoint. Markers are not part of a prefix."""

    def __init__(self, clock: Clock, *, min_tokens: int = 1024, ttl: float = 300.0) -> None:
        self.clock = clock
        self.min_tokens = min_tokens
        self.ttl = ttl
        self.cached: dict[str, float] = {}
        self.usages: list[Usage] = []

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        system = body.get("system")
        blocks: list[Any] = [*body.get("tools", [])]
        blocks += system if isinstance(system, list) else [] if system is None else [system]
        blocks += [[turn["role"], block] for turn in body["messages"] for block in turn["content"]]
        plain = [_unmarked(block) for block in blocks]
        sizes = [_tokens(block) for block in plain]
        keys = [hashlib.sha256(json.dumps(plain[: n + 1]).encode()).hexdigest() for n in range(len(plain))]
        marked = [n for n, block in enumerate(blocks) if plain[n] != block]
        if "cache_control" in body:
            marked.append(len(blocks) - 1)
        total = sum(sizes)
        end = max(marked, default=-1)
        prefix = sum(sizes[: end + 1])
        if end < 0 or prefix < self.min_tokens:
            return {"input_tokens": total, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        now = self.clock()
        read = 0
        for n in range(end, max(end - 20, -1), -1):
            seen = self.cached.get(keys[n])
            if seen is not None and now - seen <= self.ttl:
                read = sum(sizes[: n + 1])
                self.cached[keys[n]] = now
                break
        self.cached[keys[end]] = now
        return {
            "input_tokens": total - prefix,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": prefix - read,
        }

    def __call__(self, sent: SentRequest) -> Reply:
        body = sent.json()
        usage = self.usage(body)
        self.usages.append(
            Usage(
                input=usage["input_tokens"] + usage["cache_read_input_tokens"],
                output=5,
                cache_read=usage["cache_read_input_tokens"],
                cache_write=usage["cache_creation_input_tokens"],
            )
        )
        number = sum(1 for turn in body["messages"] if turn["role"] == "assistant") + 1
        if number < 10 and body.get("tools"):
            blocks = [
                tool_start(0, f"toolu_{number}", "lookup"),
                json_delta(0, json.dumps({"n": number})),
                block_stop(0),
                message_delta("tool_use", output_tokens=5),
            ]
        else:
            blocks = [
                text_start(0),
                text_delta(0, "Done."),
                block_stop(0),
                message_delta("end_turn", output_tokens=5),
            ]
        return Reply(chunks=[sse(message_start(**usage, output_tokens=1), *blocks, MESSAGE_STOP)])


class Turns:
    """A model that lets the steps of several runs (told apart by their
    ``X-Run`` header) through ``model`` one whole step at a time, in the
    order of ``order`` (run names): a step starts once the steps before it
    in that order have ended, so the runs interleave in that order whatever
    their threads do."""

    def __init__(self, model: AnthropicModel, order: str) -> None:
        self.model = model
        self.order = order
        self.done = 0
        self.turn = threading.Condition()

    @property
    def model_id(self) -> str:
        return self.model.model_id

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        name = request.headers["X-Run"]
        with self.turn:
            # a guard against a hang, not a measure: the turn comes once the step before it ends
            assert self.turn.wait_for(lambda: self.order[self.done] == name, timeout=60.0), (name, self.done)
        try:
            yield from self.model.stream(request, ctx)
        finally:
            with self.turn:
                self.done += 1
                self.turn.notify_all()


def serving(cache: CachingServer) -> MemoryTransport:
    """An in-memory transport answering with ``cache``."""
    return MemoryTransport(respond=cache)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def model(
    transport: MemoryTransport, clock: Clock, name: str = "claude-sonnet-4-5", **settings: Any
) -> AnthropicModel:
    return AnthropicModel(
        name,
        api_key=KEY,
        transport=transport,
        settings=ModelSettings(**settings) if settings else None,
        cache_tracker=CacheTracker(clock=clock),
    )


def loop(
    llm: AnthropicModel, messages: list[Message], *, tools: bool = True, system: str = SYSTEM
) -> RunResult:
    lookup = FuncTool(
        "lookup", lambda arguments, _ctx: "found " + json.dumps(arguments), description="Look a thing up."
    )
    return generate(
        LoopOptions(
            model=llm, messages=messages, system=system, tools=[lookup] if tools else [], step_limit=12
        )
    )


def test_a_ten_step_loop_sends_the_cache_setting_every_step_and_reads_its_prefix_back(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    result = loop(model(transport, clock), [user_message("Look up the ten records.")])
    assert len(result.steps) == 10
    assert result.text == "Done."
    bodies = [sent.json() for sent in transport.sent]
    assert len(bodies) == 10
    for number, body in enumerate(bodies):
        assert body["cache_control"] == {"type": "ephemeral"}
        assert len(body["messages"]) == 1 + 2 * number
        assert body["system"] == SYSTEM  # the automatic breakpoint leaves the blocks as they are
        assert not any("cache_control" in block for turn in body["messages"] for block in turn["content"])
    usages = [step.usage for step in result.steps]
    assert [(u.input, u.cache_read, u.cache_write) for u in usages] == [
        (u.input, u.cache_read, u.cache_write) for u in cache.usages
    ]
    assert usages[0].cache_read == 0
    assert usages[0].cache_write > 1024
    for before, after in itertools.pairwise(usages):
        assert after.cache_read == before.cache_read + before.cache_write  # the whole earlier prompt
        assert 0 < after.cache_write < 100  # only the new turn
    assert result.usage.cache_read == sum(u.cache_read for u in usages) > 9 * 1024
    reports = [step.cache for step in result.steps]
    assert all(report is not None and not report.miss for report in reports)
    assert [r.shared_messages for r in reports if r] == [0, 1, 3, 5, 7, 9, 11, 13, 15, 17]
    assert [r.expected_read for r in reports if r] == [0, *(u.cache_read for u in usages[1:])]


def test_caching_off_sends_no_cache_control_and_claims_no_miss(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    result = loop(model(transport, clock, cache=False), [user_message("Look up two.")])
    assert all("cache_control" not in request for request in [sent.json() for sent in transport.sent])
    assert all(step.usage.cache_read == step.usage.cache_write == 0 for step in result.steps)
    assert all(step.cache is not None and not step.cache.miss for step in result.steps)


def test_an_edited_message_is_named_in_the_next_run(clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    llm = model(transport, clock)
    first = loop(llm, [user_message("Look up the records.")])
    history = list(first.messages)
    assert len(history) == 20
    result = history[2].tool_results[0]
    history[2] = Message(
        role=Role.TOOL, content=[tool_result_part(attrs.evolve(result, content="found none"))]
    )
    clock.now += 30
    with caplog.at_level(logging.INFO, logger="agentcore"):
        second = loop(llm, [*history, user_message("Thanks. Summarize.")])
    report = second.steps[0].cache
    assert report is not None
    assert (report.cause, report.change, report.changed_at, report.shared_messages) == (
        CacheCause.PREFIX_CHANGED,
        PrefixChange.MESSAGE,
        2,
        2,
    )
    assert report.previous_messages == 19  # the first run's last request
    assert report.seconds_since_previous == 30.0
    assert report.cache_read < report.expected_read
    assert report.reason == (
        f"read {report.cache_read:,} of the {report.expected_read:,} cached tokens: "
        "message 2 changed (edited or replaced since the earlier request)"
    )
    assert [
        (r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name == "agentcore.caching"
    ] == [
        (
            "agentcore.caching",
            "INFO",
            f"agentcore: prompt cache miss (prefix-changed): {report.reason}",
        )
    ]


def test_an_edit_is_named_against_the_conversations_last_request(clock: Clock) -> None:
    # message 3 edited: the new run holds all of the first run's step 2 (3
    # messages) but parts at message 3 from its last request, the prefix the
    # provider holds for this conversation
    cache = CachingServer(clock)
    server = serving(cache)
    llm = model(server, clock)
    first = loop(llm, [user_message("Look up the records.")])
    history = list(first.messages)
    assert history[3].role is Role.ASSISTANT
    history[3] = Message(role=Role.ASSISTANT, content=[text_part("Looking again."), *history[3].content])
    clock.now += 30
    second = loop(llm, [*history, user_message("Thanks. Summarize.")])
    report = second.steps[0].cache
    assert report is not None
    assert (report.previous_messages, report.shared_messages, report.change, report.changed_at) == (
        19,
        3,
        PrefixChange.MESSAGE,
        3,
    )
    last = first.steps[-1].usage
    assert report.expected_read == last.cache_read + last.cache_write
    assert report.cache_read == first.steps[1].usage.cache_read + first.steps[1].usage.cache_write
    assert report.cause is CacheCause.PREFIX_CHANGED
    assert report.reason == (
        f"read {report.cache_read:,} of the {report.expected_read:,} cached tokens: "
        "message 3 changed (edited or replaced since the earlier request)"
    )


def found(run: str, text: str, _ctx: Context) -> str:
    return f"{run} found {text}"


def test_runs_that_began_alike_interleaved_on_one_model_each_compare_with_their_own_steps(
    clock: Clock,
) -> None:
    # the same question twice at once; the lookups answer differently, so the
    # runs part at message 2, each after the other run's step of the same number
    cache = CachingServer(clock)
    server = serving(cache)
    turns = Turns(model(server, clock), "AB" * 10)
    readers = [
        run(
            LoopOptions(
                model=turns,
                messages=[user_message("Look up the records.")],
                system=SYSTEM,
                tools=[FuncTool("lookup", functools.partial(found, name))],
                headers={"X-Run": name},
                step_limit=12,
            )
        )
        for name in "AB"
    ]
    results = [reader.result() for reader in readers]
    assert turns.done == 20
    first, second = ([step.cache for step in result.steps] for result in results)
    assert all(result.text == "Done." for result in results)
    # run B's first request is run A's, cached a moment before
    assert [r.previous_messages for r in first if r] == [None, *range(1, 19, 2)]
    assert [r.previous_messages for r in second if r] == [1, *range(1, 19, 2)]
    assert [r.shared_messages for r in first if r] == [0, *range(1, 19, 2)]
    assert [r.shared_messages for r in second if r] == [1, *range(1, 19, 2)]
    for result in results:
        for step in result.steps:
            assert step.cache is not None
            assert not step.cache.miss
        assert [step.usage.cache_read for step in result.steps[1:]] == [
            step.cache.expected_read for step in result.steps[1:] if step.cache
        ]


def test_a_changed_system_prompt_is_named(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    llm = model(transport, clock)
    first = loop(llm, [user_message("Hello there")], tools=False)
    second = loop(
        llm, [*first.messages, user_message("Again")], tools=False, system=SYSTEM + "Today is Monday."
    )
    report = second.steps[0].cache
    assert report is not None
    assert report.cause is CacheCause.PREFIX_CHANGED
    assert (report.change, report.changed_at, report.shared_messages) == (PrefixChange.SYSTEM, None, 0)
    assert report.reason.endswith(": the system prompt changed")


def test_an_expired_cache_is_named(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    llm = model(transport, clock)
    first = loop(llm, [user_message("Hello there")], tools=False)
    clock.now += 301
    second = loop(llm, [*first.messages, user_message("Still there?")], tools=False)
    assert second.steps[0].usage.cache_read == 0
    report = second.steps[0].cache
    assert report is not None
    assert report.cause is CacheCause.TTL_EXPIRED
    assert report.reason == (
        f"read 0 of the {report.expected_read:,} cached tokens: the cache probably expired: 301 s passed "
        "since the earlier request, more than its 300 s TTL"
    )


def test_a_one_hour_ttl_keeps_it(clock: Clock) -> None:
    cache = CachingServer(clock, ttl=3600.0)
    transport = serving(cache)
    llm = model(transport, clock, cache_ttl="1h")
    first = loop(llm, [user_message("Hello there")], tools=False)
    clock.now += 1800
    second = loop(llm, [*first.messages, user_message("Still there?")], tools=False)
    assert transport.sent[0].json()["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    report = second.steps[0].cache
    assert report is not None
    assert not report.miss
    assert second.steps[0].usage.cache_read == report.expected_read > 1024


def test_a_prompt_below_the_minimum_is_named(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    result = loop(model(transport, clock), [user_message("Look up two.")], system="Be brief.")
    assert all(step.usage.cache_read == step.usage.cache_write == 0 for step in result.steps)
    first, second = result.steps[0].cache, result.steps[1].cache
    assert first is not None
    assert not first.miss
    assert second is not None
    assert second.cause is CacheCause.BELOW_MINIMUM
    assert second.reason == (
        f"the earlier request's prompt ({result.steps[0].usage.input:,} tokens) is below the 1,024-token "
        "minimum Anthropic caches for this model, so nothing was cached"
    )


def test_a_miss_the_request_does_not_explain_is_said_so(clock: Clock) -> None:
    cache = CachingServer(clock)
    transport = serving(cache)
    llm = model(transport, clock)
    first = loop(llm, [user_message("Hello there")], tools=False)
    cache.cached.clear()  # the provider evicted it early
    second = loop(llm, [*first.messages, user_message("Again")], tools=False)
    report = second.steps[0].cache
    assert report is not None
    assert report.cause is CacheCause.NOT_SAID
    assert report.reason.endswith("the prefix and the TTL allowed more; Anthropic did not say why")


def test_a_shared_tracker_compares_across_model_instances(clock: Clock) -> None:
    cache = CachingServer(clock)
    shared = CacheTracker(clock=clock)
    transport = serving(cache)

    def fresh() -> AnthropicModel:
        return AnthropicModel("claude-sonnet-4-5", api_key=KEY, transport=transport, cache_tracker=shared)

    first = loop(fresh(), [user_message("Hello there")], tools=False)
    second = loop(fresh(), [*first.messages, user_message("Again")], tools=False)
    report = second.steps[0].cache
    assert report is not None
    assert (report.previous_messages, report.shared_messages, report.miss) == (1, 1, False)
    assert report.cache_read == report.expected_read > 1024
