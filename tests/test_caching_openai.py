"""Prompt caching through the OpenAI adapters: ``prompt_cache_key`` and
``prompt_cache_retention`` in Chat Completions and Responses requests (field
names and values as https://developers.openai.com/api/docs/guides/prompt-caching
documents them), the Anthropic-only settings refused, cache points left out,
and the cache policy each server gets."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import ConfigError, LoopOptions, ModelSettings, Request, cache_point, generate, user_message
from agentcore.caching import PrefixChange
from agentcore.context import Context
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.openai.chat.request import request_body as chat_body
from agentcore.providers.openai.responses.request import request_body as responses_body
from agentcore.providers.openai.shared import (
    CACHE_READ_GRANULARITY,
    MIN_CACHEABLE_TOKENS,
    RETENTION_SECONDS,
    cache_fields,
    cache_policy,
)
from agentcore.transport.memory import MemoryTransport, Reply

CHAT_OK = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":2000,"completion_tokens":1,'
    b'"prompt_tokens_details":{"cached_tokens":1920}}}\n\n'
    b"data: [DONE]\n\n"
)
RESPONSES_OK = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1",'
    b'"output_index":0,"content_index":0,"delta":"Hello"}\n\n'
    b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_1",'
    b'"status":"completed","output":[],"usage":{"input_tokens":2000,"output_tokens":1,'
    b'"input_tokens_details":{"cached_tokens":1920}}}}\n\n'
)


def chat(transport: MemoryTransport, **settings: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        "gpt-4o-mini",
        base_url="http://localhost:8000/v1",
        transport=transport,
        settings=ModelSettings(**settings),
    )


def responses(transport: MemoryTransport, **settings: Any) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        "gpt-5",
        base_url="http://localhost:8000/v1",
        transport=transport,
        settings=ModelSettings(**settings),
    )


CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({"cache_key": "conversation-42"}, {"prompt_cache_key": "conversation-42"}),
    ({"cache_retention": "24h"}, {"prompt_cache_retention": "24h"}),
    (
        {"cache_key": "user-7", "cache_retention": "in_memory"},
        {"prompt_cache_key": "user-7", "prompt_cache_retention": "in_memory"},
    ),
]


@pytest.mark.parametrize(("settings", "fields"), CASES)
def test_cache_fields(settings: dict[str, Any], fields: dict[str, Any]) -> None:
    assert cache_fields(ModelSettings(**settings)) == fields


@pytest.mark.parametrize(("settings", "fields"), CASES)
def test_chat_request_carries_the_cache_fields(
    transport: MemoryTransport, settings: dict[str, Any], fields: dict[str, Any]
) -> None:
    transport.add(Reply.of(CHAT_OK))
    parts = list(chat(transport, **settings).stream(Request(messages=[user_message("Hi")]), Context()))
    assert parts[-1].usage.cache_read == 1920
    body = transport.sent[0].json()
    assert {k: v for k, v in body.items() if k.startswith("prompt_cache")} == fields


@pytest.mark.parametrize(("settings", "fields"), CASES)
def test_responses_request_carries_the_cache_fields(
    transport: MemoryTransport, settings: dict[str, Any], fields: dict[str, Any]
) -> None:
    transport.add(Reply.of(RESPONSES_OK))
    parts = list(responses(transport, **settings).stream(Request(messages=[user_message("Hi")]), Context()))
    assert parts[-1].usage.cache_read == 1920
    body = transport.sent[0].json()
    assert {k: v for k, v in body.items() if k.startswith("prompt_cache")} == fields


def test_a_runs_settings_override_the_models(transport: MemoryTransport) -> None:
    transport.add(Reply.of(CHAT_OK))
    model = chat(transport, cache_key="model-wide")
    request = Request(messages=[user_message("Hi")], settings=ModelSettings(cache_key="this-run"))
    list(model.stream(request, Context()))
    assert transport.sent[0].json()["prompt_cache_key"] == "this-run"


@pytest.mark.parametrize("field", ["cache", "cache_ttl", "cache_system", "cache_tools"])
def test_anthropic_cache_settings_are_refused(field: str) -> None:
    value: dict[str, Any] = {field: "1h" if field == "cache_ttl" else True}
    settings = ModelSettings(**value)
    request = Request(messages=[user_message("Hi")], settings=settings)
    with pytest.raises(
        ConfigError, match=f"ModelSettings.{field} is not supported by the Chat Completions API"
    ):
        chat_body(request, "gpt-4o-mini", origin="api.openai.com")
    with pytest.raises(
        ConfigError, match=f"ModelSettings.{field} is not supported by the OpenAI Responses API"
    ):
        OpenAIResponsesModel("gpt-5", settings=settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cache_retention": "1h"}, "ModelSettings.cache_retention must be one of in_memory, 24h, got '1h'"),
        ({"cache_ttl": "24h"}, "ModelSettings.cache_ttl must be one of 5m, 1h, got '24h'"),
        ({"cache_key": ""}, "ModelSettings.cache_key must be a non-empty str, got ''"),
        ({"cache": "yes"}, "ModelSettings.cache must be True, False or None, got 'yes'"),
    ],
)
def test_bad_cache_settings(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ModelSettings(**settings)
    assert str(caught.value) == message


def test_cache_points_send_nothing() -> None:
    plain = Request(messages=[user_message("A long document."), user_message("What does it say?")])
    marked = Request(
        messages=[user_message("A long document.", cache_point()), user_message("What does it say?")]
    )
    assert chat_body(marked, "gpt-4o-mini") == chat_body(plain, "gpt-4o-mini")
    assert responses_body(marked, "gpt-5", origin="") == responses_body(plain, "gpt-5", origin="")


def test_cache_policy() -> None:
    default = cache_policy(ModelSettings(), "api.openai.com")
    assert (default.ttl, default.min_tokens, default.reports_writes, default.granularity) == (
        300.0,
        1024,
        False,
        128,
    )
    assert cache_policy(ModelSettings(cache_retention="24h"), "api.openai.com").ttl == 86400.0
    assert cache_policy(ModelSettings(cache_retention="24h"), "localhost:11434").ttl is None
    assert (MIN_CACHEABLE_TOKENS, CACHE_READ_GRANULARITY, RETENTION_SECONDS) == (
        1024,
        128,
        {"in_memory": 300.0, "24h": 86400.0},
    )


def test_each_step_reports_the_prefix_it_shares(transport: MemoryTransport) -> None:
    transport.add(Reply.of(CHAT_OK), Reply.of(CHAT_OK))
    model = chat(transport)
    first = generate(LoopOptions(model=model, messages=[user_message("Hi")], system="Be brief."))
    second = generate(
        LoopOptions(model=model, messages=[*first.messages, user_message("More")], system="Be brief.")
    )
    report = second.steps[0].cache
    assert report is not None
    assert (report.messages, report.shared_messages, report.previous_messages, report.change) == (
        3,
        1,
        1,
        None,
    )
    assert not report.miss  # a server other than api.openai.com: no claim about its cache
    assert report.cache_read == 1920


@pytest.mark.parametrize("system_role", ["instructions", "developer"])
def test_a_changed_system_prompt_is_seen_through_the_responses_api(
    transport: MemoryTransport, system_role: str
) -> None:
    transport.add(*[Reply.of(RESPONSES_OK)] * 3)
    model = OpenAIResponsesModel(
        "gpt-5", base_url="http://localhost:8000/v1", transport=transport, system_role=system_role
    )
    first = generate(LoopOptions(model=model, messages=[user_message("Hi")], system="Be brief."))
    same = generate(
        LoopOptions(model=model, messages=[*first.messages, user_message("More")], system="Be brief.")
    )
    other = generate(
        LoopOptions(model=model, messages=[*first.messages, user_message("More")], system="Be long.")
    )
    kept, changed = same.steps[0].cache, other.steps[0].cache
    assert kept is not None
    assert changed is not None
    assert (kept.shared_messages, kept.change) == (1, None)  # the first request had one message
    assert (changed.shared_messages, changed.change) == (0, PrefixChange.SYSTEM)
