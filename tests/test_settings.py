"""ModelSettings (agentcore/settings.py): validation that names the field, merging
(per-run settings override the model's), extra_body, the unsupported-setting error,
and LoopOptions(settings=...) reaching the model in every step's Request."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest

from agentcore import ConfigError, FinishReason, ModelSettings, StreamPart, ToolCall, generate
from agentcore.settings import REASONING_EFFORTS, TOOL_CHOICES, extra_body_dict, unsupported
from agentcore.testing import ScriptedModel
from tests.loop_helpers import FuncTool, options, step_finish, text_step

FIELDS = (
    "temperature",
    "top_p",
    "stop_sequences",
    "seed",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "thinking",
    "thinking_budget",
    "cache",
    "cache_ttl",
    "cache_system",
    "cache_tools",
    "cache_key",
    "cache_retention",
    "compaction_trigger",
    "clear_tool_uses",
    "clear_thinking",
    "extra_body",
)


def test_every_field_defaults_to_unset() -> None:
    settings = ModelSettings()
    assert tuple(field.name for field in attrs.fields(ModelSettings)) == FIELDS
    assert all(getattr(settings, name) is None for name in FIELDS)
    assert settings.set_fields() == []


def test_set_fields_lists_what_is_set_in_declaration_order() -> None:
    settings = ModelSettings(thinking_budget=1024, temperature=0.0, thinking=False, extra_body={})
    assert settings.set_fields() == ["temperature", "thinking", "thinking_budget", "extra_body"]


@pytest.mark.parametrize(
    ("kwargs", "stored"),
    [
        ({"temperature": 0}, 0),
        ({"temperature": 2.0}, 2.0),
        ({"top_p": 1}, 1),
        ({"stop_sequences": ["END", "\n\n"]}, ("END", "\n\n")),
        ({"stop_sequences": ("END",)}, ("END",)),
        ({"stop_sequences": []}, ()),
        ({"seed": -(2**63)}, -(2**63)),
        ({"seed": 0}, 0),
        ({"tool_choice": "required"}, "required"),
        ({"tool_choice": "get_weather"}, "get_weather"),
        ({"parallel_tool_calls": False}, False),
        ({"reasoning_effort": "xhigh"}, "xhigh"),
        ({"thinking": False}, False),
        ({"thinking_budget": 1}, 1),
        ({"compaction_trigger": 50_000}, 50_000),
        ({"clear_tool_uses": True}, True),
        ({"clear_thinking": False}, False),
        (
            {"extra_body": {"metadata": {"user_id": "u1"}, "top_k": 5}},
            {"metadata": {"user_id": "u1"}, "top_k": 5},
        ),
    ],
)
def test_valid_values_are_kept(kwargs: dict[str, Any], stored: Any) -> None:
    [(name, _)] = kwargs.items()
    assert getattr(ModelSettings(**kwargs), name) == stored


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"temperature": -0.1}, "ModelSettings.temperature must be between 0.0 and 2.0, got -0.1"),
        ({"temperature": 2.5}, "ModelSettings.temperature must be between 0.0 and 2.0, got 2.5"),
        ({"temperature": "0.5"}, "ModelSettings.temperature must be a number, got '0.5'"),
        ({"temperature": True}, "ModelSettings.temperature must be a number, got True"),
        ({"temperature": math.nan}, "ModelSettings.temperature must be a number, got nan"),
        ({"temperature": math.inf}, "ModelSettings.temperature must be a number, got inf"),
        ({"top_p": 1.5}, "ModelSettings.top_p must be between 0.0 and 1.0, got 1.5"),
        ({"top_p": [0.5]}, "ModelSettings.top_p must be a number"),
        (
            {"stop_sequences": "END"},
            "ModelSettings.stop_sequences must be a list of str, got str (wrap it: [...])",
        ),
        ({"stop_sequences": {"END"}}, "ModelSettings.stop_sequences must be a list of str, got set"),
        ({"stop_sequences": ["END", ""]}, "ModelSettings.stop_sequences must hold non-empty str, got ''"),
        ({"stop_sequences": [1]}, "ModelSettings.stop_sequences must hold non-empty str, got 1"),
        ({"seed": 1.5}, "ModelSettings.seed must be an int"),
        ({"seed": True}, "ModelSettings.seed must be an int"),
        ({"seed": -(2**63) - 1}, "ModelSettings.seed must be an int >= "),
        ({"tool_choice": ""}, "ModelSettings.tool_choice must be 'auto', 'none', 'required' or a tool name"),
        ({"tool_choice": 3}, "ModelSettings.tool_choice must be"),
        ({"parallel_tool_calls": "yes"}, "ModelSettings.parallel_tool_calls must be True, False or None"),
        ({"parallel_tool_calls": 1}, "ModelSettings.parallel_tool_calls must be True, False or None"),
        ({"reasoning_effort": "extreme"}, "ModelSettings.reasoning_effort must be one of none, minimal, low"),
        ({"reasoning_effort": "HIGH"}, "ModelSettings.reasoning_effort must be one of"),
        ({"thinking": "on"}, "ModelSettings.thinking must be True, False or None, got 'on'"),
        ({"thinking_budget": 0}, "ModelSettings.thinking_budget must be an int >= 1, got 0"),
        ({"thinking_budget": 1024.0}, "ModelSettings.thinking_budget must be an int >= 1, got 1024.0"),
        ({"thinking_budget": True}, "ModelSettings.thinking_budget must be an int >= 1, got True"),
        ({"compaction_trigger": 0}, "ModelSettings.compaction_trigger must be an int >= 1, got 0"),
        ({"compaction_trigger": 5e4}, "ModelSettings.compaction_trigger must be an int >= 1, got 50000.0"),
        (
            {"compaction_trigger": "50000"},
            "ModelSettings.compaction_trigger must be an int >= 1, got '50000'",
        ),
        ({"clear_tool_uses": 1}, "ModelSettings.clear_tool_uses must be True, False or None, got 1"),
        ({"clear_thinking": "yes"}, "ModelSettings.clear_thinking must be True, False or None, got 'yes'"),
        (
            {"extra_body": [("a", 1)]},
            "ModelSettings.extra_body must be a mapping of str keys to JSON values, got list",
        ),
        (
            {"extra_body": {1: "a"}},
            "ModelSettings.extra_body must be a mapping of str keys to JSON values; the key 1",
        ),
        ({"extra_body": {"a": object()}}, "ModelSettings.extra_body must be JSON-serializable"),
        ({"extra_body": {"a": math.nan}}, "ModelSettings.extra_body must be JSON-serializable"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_field(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ModelSettings(**kwargs)
    assert str(info.value).startswith(message)


def test_the_documented_value_lists() -> None:
    assert TOOL_CHOICES == ("auto", "none", "required")
    assert REASONING_EFFORTS == ("none", "minimal", "low", "medium", "high", "xhigh", "max")
    for effort in REASONING_EFFORTS:
        assert ModelSettings(reasoning_effort=effort).reasoning_effort == effort


def test_extra_body_is_copied_when_the_settings_are_made() -> None:
    body: dict[str, Any] = {"top_k": 5}
    settings = ModelSettings(extra_body=body)
    body["top_k"] = 50
    assert settings.extra_body == {"top_k": 5}


def test_extra_body_dict_names_the_option_it_checks() -> None:
    assert extra_body_dict(None) == {}
    original = {"a": [1, 2]}
    copy = extra_body_dict(original)
    assert copy == original
    assert copy is not original
    with pytest.raises(ConfigError, match=r"^AnthropicModel\.extra_body must be a mapping"):
        extra_body_dict("a=1", "AnthropicModel.extra_body")  # type: ignore[arg-type]  # a wrong type on purpose: refused


# --- merged(): per-run settings over the model's -----------------------------------------------


def test_merged_with_none_or_nothing_set_is_the_same_settings() -> None:
    base = ModelSettings(temperature=0.3, extra_body={"a": 1})
    assert base.merged(None) is base
    assert base.merged(ModelSettings()) is base


def test_merged_takes_every_field_the_override_sets() -> None:
    base = ModelSettings(temperature=0.3, top_p=0.9, thinking=True, thinking_budget=4096, tool_choice="auto")
    override = ModelSettings(temperature=1.0, thinking=False, stop_sequences=["END"], seed=7)
    merged = base.merged(override)
    assert merged == ModelSettings(
        temperature=1.0,  # the override's
        top_p=0.9,  # the base's: the override leaves it unset
        stop_sequences=["END"],
        seed=7,
        tool_choice="auto",
        thinking=False,  # False is a value: it overrides True
        thinking_budget=4096,
    )
    # Neither input changed.
    assert base == ModelSettings(
        temperature=0.3, top_p=0.9, thinking=True, thinking_budget=4096, tool_choice="auto"
    )
    assert override.temperature == 1.0
    assert override.top_p is None


@pytest.mark.parametrize(
    ("base", "override", "merged"),
    [
        ({"a": 1, "b": {"x": 1}}, {"b": {"y": 2}, "c": 3}, {"a": 1, "b": {"y": 2}, "c": 3}),
        ({"a": 1}, None, {"a": 1}),
        (None, {"c": 3}, {"c": 3}),
        ({"a": 1}, {}, {"a": 1}),
    ],
)
def test_merged_merges_extra_body_key_by_key(
    base: dict[str, Any] | None, override: dict[str, Any] | None, merged: dict[str, Any]
) -> None:
    result = ModelSettings(extra_body=base).merged(ModelSettings(extra_body=override, seed=1))
    assert result.extra_body == merged  # top-level keys: the override's win, as a whole value
    assert result.seed == 1


# --- unsupported() -----------------------------------------------------------------------------


def test_unsupported_names_the_first_set_field_the_api_lacks() -> None:
    settings = ModelSettings(temperature=0.5, seed=3, thinking_budget=100)
    unsupported(settings, {"temperature", "seed", "thinking_budget"}, "the Test API")  # all supported
    with pytest.raises(ConfigError) as info:
        unsupported(settings, {"temperature"}, "the Test API")
    assert str(info.value) == (
        "ModelSettings.seed is not supported by the Test API; leave it unset or use extra_body"
    )
    unsupported(ModelSettings(), set(), "the Test API")  # nothing set: nothing to refuse


# --- LoopOptions(settings=...) and Request.settings --------------------------------------------


@pytest.mark.parametrize("value", [{"temperature": 0.5}, "temperature=0.5", 0.5])
def test_loop_options_settings_must_be_model_settings(value: Any) -> None:
    with pytest.raises(ConfigError, match="settings must be a ModelSettings or None"):
        options(ScriptedModel([]), settings=value)
    assert options(ScriptedModel([])).settings is None


def test_the_runs_settings_reach_the_model_in_every_step() -> None:
    settings = ModelSettings(temperature=0.2, thinking=True, thinking_budget=2048, extra_body={"top_k": 3})
    model = ScriptedModel(
        [
            [StreamPart.tool_call_event(ToolCall("c1", "noop", "{}")), step_finish(FinishReason.TOOL_CALLS)],
            text_step("done"),
        ]
    )
    result = generate(options(model, tools=[FuncTool("noop")], settings=settings))
    assert result.text == "done"
    assert [request.settings for request in model.requests] == [settings, settings]
    without = ScriptedModel([text_step("ok")])
    generate(options(without))
    assert without.requests[0].settings is None
