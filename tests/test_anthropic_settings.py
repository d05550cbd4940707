"""``ModelSettings`` on the Anthropic adapter: the mapping table, the
ConfigErrors for what the API would refuse, and what ``AnthropicModel`` sends
(adapter settings, per-run overrides, ``extra_body``) to the in-memory transport."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore.context import Context
from agentcore.errors import ConfigError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic.request import settings_fields
from agentcore.settings import ModelSettings
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import Request, ToolDefinition, user_message
from tests.test_anthropic_loop import text_step

TOOLS = (ToolDefinition(name="get_weather"), ToolDefinition(name="get_time"))

FIELD_CASES: list[tuple[str, ModelSettings, dict[str, Any]]] = [
    ("nothing set: nothing sent", ModelSettings(), {}),
    (
        "sampling fields as they are",
        ModelSettings(temperature=0.2, top_p=0.9, stop_sequences=["END", "\n\nHuman:"]),
        {"temperature": 0.2, "top_p": 0.9, "stop_sequences": ["END", "\n\nHuman:"]},
    ),
    ("temperature 0 and 1 are in range", ModelSettings(temperature=1), {"temperature": 1}),
    ("tool_choice auto", ModelSettings(tool_choice="auto"), {"tool_choice": {"type": "auto"}}),
    ("tool_choice none", ModelSettings(tool_choice="none"), {"tool_choice": {"type": "none"}}),
    ("tool_choice required is any", ModelSettings(tool_choice="required"), {"tool_choice": {"type": "any"}}),
    (
        "tool_choice a tool's name",
        ModelSettings(tool_choice="get_time"),
        {"tool_choice": {"type": "tool", "name": "get_time"}},
    ),
    (
        "parallel_tool_calls False alone: auto, at most one call",
        ModelSettings(parallel_tool_calls=False),
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
    ),
    (
        "parallel_tool_calls True with required",
        ModelSettings(tool_choice="required", parallel_tool_calls=True),
        {"tool_choice": {"type": "any", "disable_parallel_tool_use": False}},
    ),
    (
        "parallel_tool_calls with a named tool",
        ModelSettings(tool_choice="get_weather", parallel_tool_calls=False),
        {"tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}},
    ),
    (
        "parallel_tool_calls means nothing with none",
        ModelSettings(tool_choice="none", parallel_tool_calls=False),
        {"tool_choice": {"type": "none"}},
    ),
    (
        "thinking on without a budget: adaptive",
        ModelSettings(thinking=True),
        {"thinking": {"type": "adaptive"}},
    ),
    ("thinking off", ModelSettings(thinking=False), {"thinking": {"type": "disabled"}}),
    (
        "thinking with a budget: manual extended thinking",
        ModelSettings(thinking=True, thinking_budget=2048),
        {"thinking": {"type": "enabled", "budget_tokens": 2048}},
    ),
    (
        "a budget alone turns thinking on",
        ModelSettings(thinking_budget=1024),
        {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    ),
    (
        "thinking on: temperature 1 and top_p from 0.95 are allowed",
        ModelSettings(thinking=True, temperature=1.0, top_p=0.95),
        {"thinking": {"type": "adaptive"}, "temperature": 1.0, "top_p": 0.95},
    ),
    (
        "thinking off: any temperature",
        ModelSettings(thinking=False, temperature=0.0),
        {"thinking": {"type": "disabled"}, "temperature": 0.0},
    ),
    (
        "adaptive thinking allows a forced tool call",
        ModelSettings(thinking=True, tool_choice="required"),
        {"thinking": {"type": "adaptive"}, "tool_choice": {"type": "any"}},
    ),
    *[
        (
            f"reasoning_effort {effort}",
            ModelSettings(reasoning_effort=effort),
            {"output_config": {"effort": effort}},
        )
        for effort in ("low", "medium", "high", "xhigh", "max")
    ],
    ("extra_body is not a field here", ModelSettings(extra_body={"top_k": 5}), {}),
]


@pytest.mark.parametrize(("name", "settings", "expected"), FIELD_CASES, ids=[c[0] for c in FIELD_CASES])
def test_settings_fields(name: str, settings: ModelSettings, expected: dict[str, Any]) -> None:
    assert settings_fields(settings, TOOLS, 4096) == expected


def test_without_tools_auto_none_and_parallel_send_nothing() -> None:
    for settings in (
        ModelSettings(tool_choice="auto"),
        ModelSettings(tool_choice="none"),
        ModelSettings(parallel_tool_calls=False),
    ):
        assert settings_fields(settings, (), 4096) == {}


def test_a_budget_may_reach_max_tokens_with_the_interleaved_thinking_beta() -> None:
    fields = settings_fields(ModelSettings(thinking_budget=8000), TOOLS, 4096, interleaved=True)
    assert fields == {"thinking": {"type": "enabled", "budget_tokens": 8000}}


ERROR_CASES: list[tuple[str, ModelSettings, tuple[ToolDefinition, ...], str]] = [
    ("seed: no such field", ModelSettings(seed=7), TOOLS, r"ModelSettings\.seed is not supported"),
    ("temperature above 1", ModelSettings(temperature=1.5), TOOLS, r"temperature must be between 0 and 1"),
    (
        "effort none",
        ModelSettings(reasoning_effort="none"),
        TOOLS,
        r"reasoning_effort 'none' is not an effort level of the Anthropic Messages API",
    ),
    ("effort minimal", ModelSettings(reasoning_effort="minimal"), TOOLS, r"reasoning_effort 'minimal'"),
    (
        "required without tools",
        ModelSettings(tool_choice="required"),
        (),
        r"'required' but the request has no",
    ),
    ("a named tool without tools", ModelSettings(tool_choice="get_time"), (), r"has no tools"),
    ("an unknown tool", ModelSettings(tool_choice="lookup"), TOOLS, r"names the tool 'lookup', which is not"),
    (
        "a budget with thinking off",
        ModelSettings(thinking=False, thinking_budget=2048),
        TOOLS,
        r"thinking_budget is set but ModelSettings\.thinking is False",
    ),
    ("a budget under 1024", ModelSettings(thinking_budget=1000), TOOLS, r"at least 1024 tokens"),
    (
        "a budget not under max_tokens",
        ModelSettings(thinking_budget=4096),
        TOOLS,
        r"thinking_budget \(4096\) must be less than the output cap max_tokens \(4096\)",
    ),
    (
        "temperature with thinking on",
        ModelSettings(thinking=True, temperature=0.5),
        TOOLS,
        r"temperature may only be 1 \(or unset\) while thinking is on",
    ),
    (
        "temperature with manual thinking",
        ModelSettings(thinking_budget=2048, temperature=0.0),
        TOOLS,
        r"temperature may only be 1",
    ),
    (
        "top_p under 0.95 with thinking",
        ModelSettings(thinking=True, top_p=0.9),
        TOOLS,
        r"top_p must be at least 0\.95",
    ),
    (
        "a forced call with manual thinking",
        ModelSettings(thinking_budget=2048, tool_choice="required"),
        TOOLS,
        r"tool_choice 'required' forces a tool call",
    ),
    (
        "a named tool with manual thinking",
        ModelSettings(thinking_budget=2048, tool_choice="get_time"),
        TOOLS,
        r"tool_choice 'get_time' forces a tool call",
    ),
]


@pytest.mark.parametrize(("name", "settings", "tools", "match"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_settings_the_api_refuses_are_config_errors(
    name: str, settings: ModelSettings, tools: tuple[ToolDefinition, ...], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        settings_fields(settings, tools, 4096)


# --- through the adapter ---------------------------------------------------------------------


@pytest.fixture
def transport() -> MemoryTransport:
    """Answers every request of a test with one text step."""
    return MemoryTransport(*[Reply.of(text_step("ok"))] * 4)


def model(transport: MemoryTransport, **kwargs: Any) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-ant-settings-0000", transport=transport, **kwargs)


def sent(transport: MemoryTransport, model_: AnthropicModel, request: Request) -> dict[str, Any]:
    parts = list(model_.stream(request, Context()))
    assert parts[-1].finish_reason is not None
    body = transport.sent[-1].json()
    assert isinstance(body, dict)
    return body


def test_adapter_settings_are_sent_and_a_run_overrides_them_field_by_field(
    transport: MemoryTransport,
) -> None:
    adapter = model(
        transport,
        settings=ModelSettings(
            temperature=0.3, stop_sequences=["X"], extra_body={"top_k": 5, "metadata": {"a": 1}}
        ),
        extra_body={"top_k": 1, "service_tier": "auto"},
    )
    body = sent(transport, adapter, Request(messages=[user_message("Hi")]))
    assert body["temperature"] == 0.3
    assert body["stop_sequences"] == ["X"]
    assert (body["top_k"], body["service_tier"], body["metadata"]) == (5, "auto", {"a": 1})
    run = ModelSettings(temperature=0.9, reasoning_effort="low", extra_body={"metadata": {"b": 2}})
    body = sent(transport, adapter, Request(messages=[user_message("Hi")], settings=run))
    assert body["temperature"] == 0.9
    assert body["stop_sequences"] == ["X"]
    assert body["output_config"] == {"effort": "low"}
    assert (body["top_k"], body["metadata"]) == (5, {"b": 2})


def test_extra_body_is_sent_as_given_last(transport: MemoryTransport) -> None:
    adapter = model(
        transport, extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}, "stream": True}
    )
    body = sent(
        transport, adapter, Request(messages=[user_message("Hi")], settings=ModelSettings(thinking=False))
    )
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}


def test_the_interleaved_thinking_beta_header_lets_the_budget_reach_max_tokens(
    transport: MemoryTransport,
) -> None:
    beta = {"anthropic-beta": "fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14"}
    adapter = model(transport, headers=beta, max_tokens=2048, settings=ModelSettings(thinking_budget=4000))
    assert (
        sent(transport, adapter, Request(messages=[user_message("Hi")]))["thinking"]["budget_tokens"] == 4000
    )
    plain = model(transport, max_tokens=2048, settings=ModelSettings(thinking_budget=4000))
    with pytest.raises(ConfigError, match="must be less than the output cap"):
        sent(transport, plain, Request(messages=[user_message("Hi")]))


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        (ModelSettings(seed=1), r"ModelSettings\.seed is not supported by the Anthropic Messages API"),
        (ModelSettings(temperature=2.0), r"between 0 and 1"),
        (ModelSettings(thinking=True, temperature=0.1), r"while thinking is on"),
    ],
)
def test_a_refused_run_setting_is_a_config_error_before_any_http_call(
    transport: MemoryTransport, settings: ModelSettings, match: str
) -> None:
    stream = model(transport).stream(Request(messages=[user_message("Hi")], settings=settings), Context())
    with pytest.raises(ConfigError, match=match):
        next(stream)
    assert transport.sent == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"settings": ModelSettings(seed=3)}, r"ModelSettings\.seed is not supported"),
        ({"settings": {"temperature": 0.5}}, r"settings must be a ModelSettings or None, got dict"),
        ({"extra_body": ["top_k"]}, r"extra_body must be a mapping"),
        ({"extra_body": {"x": float("nan")}}, r"extra_body must be JSON-serializable"),
    ],
)
def test_bad_settings_options_are_config_errors_at_construction(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        AnthropicModel("claude-test", api_key="k", **kwargs)
