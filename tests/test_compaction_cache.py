"""The prompt-cache report after the provider compacted (``agentcore.caching``).

A provider that compacted reads the prompt from the latest compaction block on
(Anthropic: https://platform.claude.com/docs/en/build-with-claude/compaction, "How
compaction works" and "Prompt caching"; OpenAI Responses:
https://developers.openai.com/api/docs/guides/compaction): the prefix it cached before the
compaction is not read again, however unchanged the messages before the block are. The
fingerprint records where that block is (``Fingerprint.compacted_at``, from what the adapter
sent), the comparison names the change ``compacted`` (``CacheCause.COMPACTED``) instead of a
miss the provider "did not say why", and two requests with the same latest compaction
compare from the block on, so dropping the messages before it is not "message 0 changed".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    LoopOptions,
    Message,
    ModelSettings,
    ProviderItem,
    Request,
    Role,
    provider_item_part,
    run,
    text_part,
    user_message,
)
from agentcore.caching import (
    CacheCause,
    CachePolicy,
    CacheReport,
    Earlier,
    Fingerprint,
    Match,
    PrefixChange,
    compare,
    diagnose,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import request_body as anthropic_body
from agentcore.providers.digests import compacted_at, digest
from agentcore.providers.openai.responses.request import request_body as responses_body
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import Usage
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
)

FIXTURES = Path(__file__).parent / "fixtures" / "compaction" / "anthropic"
ANTHROPIC = CachePolicy("Anthropic", 300.0, 1024, reports_writes=True)


def printed(*messages: str, at: int | None = None) -> Fingerprint:
    return Fingerprint(digest(["t"]), digest("s"), tuple(digest(m) for m in messages), at)


COMPARE_CASES = [
    (
        "the first request holding the compaction block",
        printed("u0", "a1+block", "u2", at=1),
        printed("u0"),
        Match(1, PrefixChange.COMPACTED, 1),
    ),
    (
        "the steps after it extend it",
        printed("u0", "a1+block", "u2", "a3", at=1),
        printed("u0", "a1+block", "u2", at=1),
        Match(3, None),
    ),
    (
        "the messages before the block dropped: the provider passed over them anyway",
        printed("a1+block", "u2", "a3", at=0),
        printed("u0", "a1+block", "u2", at=1),
        Match(2, None),
    ),
    (
        "a message after the block edited",
        printed("u0", "a1+block", "U2", at=1),
        printed("u0", "a1+block", "u2", "a3", at=1),
        Match(2, PrefixChange.MESSAGE, 2),
    ),
    (
        "a message before the block edited: the provider does not read it",
        printed("U0", "a1+block", "u2", at=1),
        printed("u0", "a1+block", at=1),
        Match(2, None),
    ),
    (
        "a newer compaction",
        printed("u0", "a1+block", "u2", "a3+block", "u4", at=3),
        printed("u0", "a1+block", "u2", at=1),
        Match(3, PrefixChange.COMPACTED, 3),
    ),
    (
        "the block removed: an edit like any other",
        printed("u0", "a1", "u2"),
        printed("u0", "a1+block", "u2", at=1),
        Match(1, PrefixChange.MESSAGE, 1),
    ),
    ("no compaction anywhere: as before", printed("u0", "a1"), printed("u0"), Match(1, None)),
]


@pytest.mark.parametrize(
    ("name", "current", "earlier", "expected"), COMPARE_CASES, ids=[c[0] for c in COMPARE_CASES]
)
def test_compare(name: str, current: Fingerprint, earlier: Fingerprint, expected: Match) -> None:
    assert compare(current, earlier) == expected


def test_a_read_short_after_a_compaction_is_named_compacted() -> None:
    before = Earlier(printed("u0"), 100.0, Usage(input=55_377, output=91, cache_read=55_096))
    match = compare(printed("u0", "a1+block", "u2", at=1), before.print)
    report = diagnose(3, match, before, Usage(input=400, cache_read=0), ANTHROPIC, 101.0)
    assert report.cause is CacheCause.COMPACTED
    assert (report.change, report.changed_at, report.expected_read) == (PrefixChange.COMPACTED, 1, 55_096)
    assert report.reason == (
        "read 0 of the 55,096 cached tokens: the provider compacted the history at message 1: it reads "
        "the prompt from that compaction block on, so what it cached before the compaction is not read again"
    )
    read_all = diagnose(3, match, before, Usage(input=55_500, cache_read=55_096), ANTHROPIC, 101.0)
    assert read_all.cause is None  # nothing fell short: no cause, whatever changed


# --- what the adapters record ------------------------------------------------------------------

ANTHROPIC_BLOCK = ProviderItem(
    "compaction", '{"type":"compaction","content":"S"}', "anthropic", "api.anthropic.com", "S"
)
RESPONSES_ITEM = ProviderItem(
    "compaction",
    '{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAA"}',
    "openai-responses",
    "api.openai.com",
)


def history(item: ProviderItem) -> list[Message]:
    return [
        user_message("a long report"),
        Message(Role.ASSISTANT, [text_part("Read it.")]),
        user_message("and?"),
        Message(Role.ASSISTANT, [text_part("Done."), provider_item_part(item)]),
        user_message("now what?"),
    ]


@pytest.mark.parametrize(
    ("item", "build"),
    [
        (
            ANTHROPIC_BLOCK,
            lambda request, sent: anthropic_body(request, "m", origin="api.anthropic.com", sent=sent),
        ),
        (
            RESPONSES_ITEM,
            lambda request, sent: responses_body(request, "m", origin="api.openai.com", sent=sent),
        ),
    ],
)
def test_the_adapters_record_where_the_latest_compaction_is(item: ProviderItem, build: Any) -> None:
    sent: list[Any] = []
    build(Request(messages=history(item)), sent)
    assert compacted_at(sent) == 3
    elsewhere = ProviderItem(item.type, item.data, item.format, "gateway.example.com")
    sent = []
    build(Request(messages=history(elsewhere)), sent)
    assert compacted_at(sent) is None  # not sent: the provider reads the whole history


def test_compacted_at_reads_lists_of_blocks_and_skips_messages_not_sent() -> None:
    assert compacted_at([]) is None
    assert compacted_at([None, [{"type": "text"}], [{"type": "compaction"}], None]) == 2
    assert compacted_at([[{"type": "compaction"}], [{"type": "compaction"}, {"type": "text"}]]) == 1


# --- through AnthropicModel --------------------------------------------------------------------


def answer(text: str, **usage: int) -> Reply:
    events = [message_start(**usage), text_start(0), text_delta(0, text), block_stop(0)]
    return Reply.of(sse(*events, message_delta("end_turn", **usage), MESSAGE_STOP))


def test_the_step_after_a_compaction_is_reported_compacted_and_the_next_is_no_miss() -> None:
    """The recorded compaction (``compaction_usage_iterations_cache``: its
    compaction pass read 55,096 cached tokens), then a request holding its
    block, which reads nothing cached and writes 300 tokens, then one more
    that reads those 300 back, then one without the messages before the
    block that reads all the previous request left."""
    transport = MemoryTransport(
        Reply.of((FIXTURES / "compaction_usage_iterations_cache.sse").read_bytes()),
        answer(
            "You said hello.", input_tokens=200, cache_read_input_tokens=0, cache_creation_input_tokens=300
        ),
        answer("Yes.", input_tokens=20, cache_read_input_tokens=300, cache_creation_input_tokens=30),
        answer("Still yes.", input_tokens=20, cache_read_input_tokens=330, cache_creation_input_tokens=30),
    )
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", transport=transport)
    settings = ModelSettings(compaction_trigger=50_000)
    first = run(
        LoopOptions(model=model, messages=[user_message("Remember this. Now say hello.")], settings=settings)
    ).result()
    assert first.messages[1].provider_items
    reports: list[CacheReport | None] = []
    messages = list(first.messages)
    for question in ("What did I say?", "Sure?"):
        result = run(
            LoopOptions(model=model, messages=[*messages, user_message(question)], settings=settings)
        ).result()
        reports.append(result.steps[0].cache)
        messages = list(result.messages)
    compacted, after = reports
    assert compacted is not None
    assert after is not None
    assert (compacted.cause, compacted.change, compacted.changed_at) == (
        CacheCause.COMPACTED,
        PrefixChange.COMPACTED,
        1,
    )
    assert compacted.expected_read == 55_096
    assert "message 1 changed" not in compacted.reason
    assert after.cause is None
    assert (after.change, after.cache_read) == (None, 300)
    # the messages before the block dropped, as the compaction page allows: still no miss
    dropped = run(
        LoopOptions(model=model, messages=[*messages[1:], user_message("Once more?")], settings=settings)
    ).result()
    report = dropped.steps[0].cache
    assert report is not None
    assert report.cause is None
    assert report.change is None
    assert json.loads(transport.sent[3].body)["messages"][0]["content"][0]["type"] == "compaction"


def edited_answer(text: str, edits: list[dict[str, Any]], **usage: int) -> Reply:
    """An answer whose ``message_delta`` reports the context edits the API applied."""
    delta = {**message_delta("end_turn", **usage), "context_management": {"applied_edits": edits}}
    events = [message_start(**usage), text_start(0), text_delta(0, text), block_stop(0), delta, MESSAGE_STOP]
    return Reply.of(sse(*events))


CLEARED = [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": 4, "cleared_input_tokens": 1_800}]


@pytest.mark.parametrize(
    ("edits", "cause"),
    [(CLEARED, CacheCause.COMPACTED), ([], CacheCause.NOT_SAID)],
)
def test_a_step_whose_prompt_the_api_edited_names_the_edit(
    edits: list[dict[str, Any]], cause: CacheCause
) -> None:
    """Context editing clears old tool results from the prompt before the API
    reads it (https://platform.claude.com/docs/en/build-with-claude/context-editing),
    so that step reads less of the cache; the applied edits it reports name
    the cause. Without them the API did not say why."""
    transport = MemoryTransport(
        answer("First.", input_tokens=10, cache_read_input_tokens=0, cache_creation_input_tokens=2_000),
        edited_answer(
            "Second.", edits, input_tokens=10, cache_read_input_tokens=200, cache_creation_input_tokens=50
        ),
    )
    model = AnthropicModel("claude-sonnet-4-6", api_key="sk-ant-test", transport=transport)
    settings = ModelSettings(clear_tool_uses=True)
    first = run(LoopOptions(model=model, messages=[user_message("Go.")], settings=settings)).result()
    second = run(
        LoopOptions(model=model, messages=[*first.messages, user_message("On.")], settings=settings)
    ).result()
    report = second.steps[0].cache
    assert report is not None
    assert (report.cause, report.change, report.expected_read) == (cause, None, 2_000)
    if edits:
        assert report.reason == (
            "read 200 of the 2,000 cached tokens: the provider cleared content from the prompt first "
            "(clear_tool_uses_20250919 (cleared_tool_uses 4, cleared_input_tokens 1800))"
        )
