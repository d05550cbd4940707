"""Pins the public API: the names ``agentcore`` exports and the shapes other code relies on.

Adding or removing a name from ``agentcore.__all__`` must be a deliberate
change of this file too.
"""

from __future__ import annotations

import inspect
import json

import pytest

import agentcore

# The core of the public API: the loop, its value types, errors and defaults.
CORE_NAMES = {
    "run",
    "stream_func",
    "Context",
    "LoopOptions",
    "Request",
    "Message",
    "ContentPart",
    "ContentPartKind",
    "Role",
    "ToolCall",
    "ToolResult",
    "ToolDefinition",
    "Tool",
    "ToolSet",
    "Usage",
    "StreamPart",
    "StreamPartKind",
    "FinishReason",
    "ErrorClass",
    "ModelError",
    "classify_status",
    "cache_point",
    "text_part",
    "user_message",
    "DEFAULT_STEP_LIMIT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_BASE_DELAY",
    "DEFAULT_RETRY_MAX_DELAY",
    # The errors a failed or cancelled run raises, and the function-tool decorator.
    "RunError",
    "Canceled",
    "tool",
}

# Everything else the package exports today.
EXTRA_NAMES = {
    "__version__",
    "AgentcoreError",
    "ConfigError",
    "DeadlineExceeded",
    "DEFAULT_QUEUE_SIZE",
    "DEFAULT_RUN_QUEUE_SIZE",
    "FunctionTool",
    "Model",
    "RunReader",
    "RunResult",
    "SendFunc",
    "StepResult",
    "StreamReader",
    "ToolInputError",
    "generate",
    "tool_call_part",
    "tool_result_part",
    # Reasoning blocks and per-run model settings.
    "ModelSettings",
    "Reasoning",
    "reasoning_part",
    # Images and documents in user messages and tool results.
    "File",
    "file_part",
    "file_part_from_path",
    # The per-step prompt-cache report.
    "CacheCause",
    "CacheReport",
    "PrefixChange",
}


def test_all_is_exactly_the_pinned_set() -> None:
    assert len(agentcore.__all__) == len(set(agentcore.__all__)), "duplicates in __all__"
    assert set(agentcore.__all__) == CORE_NAMES | EXTRA_NAMES


@pytest.mark.parametrize("name", sorted(CORE_NAMES | EXTRA_NAMES))
def test_every_name_is_importable(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from agentcore import {name}", namespace)
    assert namespace[name] is getattr(agentcore, name)


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agentcore import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(agentcore.__all__)


@pytest.mark.parametrize(
    ("enum_name", "member", "value"),
    [
        ("StreamPartKind", "TEXT_DELTA", "text-delta"),
        ("FinishReason", "STEP_LIMIT", "step-limit"),
        ("ContentPartKind", "TOOL_CALL", "tool-call"),
        ("Role", "TOOL", "tool"),
    ],
)
def test_enum_members_are_upper_snake_case_with_wire_string_values(
    enum_name: str, member: str, value: str
) -> None:
    enum = getattr(agentcore, enum_name)
    assert getattr(enum, member).value == value


def test_error_class_members() -> None:
    assert agentcore.ErrorClass.RATE_LIMITED.retryable is True
    assert int(agentcore.ErrorClass.RATE_LIMITED) == 1
    assert agentcore.classify_status(429, False) is agentcore.ErrorClass.RATE_LIMITED


def test_default_values() -> None:
    assert agentcore.DEFAULT_STEP_LIMIT == 20
    assert agentcore.DEFAULT_MAX_RETRIES == 2
    assert agentcore.DEFAULT_RETRY_BASE_DELAY == 0.5
    assert agentcore.DEFAULT_RETRY_MAX_DELAY == 8.0
    assert isinstance(agentcore.DEFAULT_RETRY_BASE_DELAY, float)
    assert isinstance(agentcore.DEFAULT_RETRY_MAX_DELAY, float)


def test_value_type_constructor_shapes() -> None:
    part = agentcore.StreamPart(kind=agentcore.StreamPartKind.TEXT_DELTA, text="hi")
    assert part.text == "hi"
    cause = OSError("reset")
    err = agentcore.ModelError(agentcore.ErrorClass.OVERLOADED, retry_after=0.5, err=cause)
    assert (err.error_class, err.retry_after, err.err, err.__cause__) == (
        agentcore.ErrorClass.OVERLOADED,
        0.5,
        cause,
        cause,
    )
    assert agentcore.ModelError(agentcore.ErrorClass.AUTH).retry_after == 0.0
    # Defaults for every field but the discriminating one.
    assert agentcore.StreamPart(kind=agentcore.StreamPartKind.TEXT_DELTA).text == ""
    assert agentcore.ContentPart(kind=agentcore.ContentPartKind.TEXT).text == ""
    assert agentcore.Message(role=agentcore.Role.USER).content == ()
    assert agentcore.Usage() == agentcore.Usage(input=0, output=0, cache_read=0, cache_write=0)
    assert agentcore.Request().messages == ()


def test_context_shape() -> None:
    ctx = agentcore.Context()
    before = ctx.cancelled
    ctx.cancel()
    assert (before, ctx.cancelled) == (False, True)
    assert isinstance(ctx.err, agentcore.Canceled)
    assert agentcore.Context(timeout=60).cancelled is False
    assert issubclass(agentcore.DeadlineExceeded, agentcore.Canceled)


def test_run_reader_has_result_and_close() -> None:
    from agentcore.testing import ScriptedModel

    model = ScriptedModel(
        [
            [
                agentcore.StreamPart.text_delta("hi"),
                agentcore.StreamPart.step_finish(agentcore.FinishReason.STOP),
            ]
        ]
    )
    reader = agentcore.run(agentcore.LoopOptions(model=model, messages=[agentcore.user_message("hi")]))
    assert isinstance(reader, agentcore.RunReader)
    assert isinstance(reader, agentcore.StreamReader)
    result = reader.result()
    assert isinstance(result, agentcore.RunResult)
    assert {"text", "steps", "usage", "finish_reason", "messages"} <= set(dir(result))
    assert {"err", "usage", "finish_reason", "messages"} <= set(
        inspect.signature(agentcore.RunError.__init__).parameters
    )
    reader.close()


def test_tool_turns_a_typed_function_into_a_tool() -> None:
    @agentcore.tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny"

    assert isinstance(get_weather, agentcore.Tool)
    assert get_weather.definition.name == "get_weather"
    assert "city" in json.loads(get_weather.definition.input_schema)["properties"]
    assert get_weather.execute('{"city": "Lima"}', agentcore.Context()) == "Lima: sunny"


def test_message_json_round_trip_methods() -> None:
    message = agentcore.user_message("hi")
    assert agentcore.Message.from_dict(json.loads(json.dumps(message.to_dict()))) == message


def test_testing_module_names() -> None:
    from agentcore import testing

    for name in ("ScriptedModel", "ScriptExhausted", "TestModel", "check_model", "example_value"):
        assert hasattr(testing, name), name
    model = testing.ScriptedModel([])
    assert model.requests == []


def test_provider_constructors_follow_the_design() -> None:
    from agentcore.providers.anthropic import AnthropicModel
    from agentcore.providers.openai import OpenAIChatModel

    for cls, base_url in (
        (AnthropicModel, "https://api.anthropic.com"),
        (OpenAIChatModel, "https://api.openai.com/v1"),
    ):
        params = inspect.signature(cls.__init__).parameters
        assert list(params)[:2] == ["self", "model"]
        assert params["api_key"].kind is inspect.Parameter.KEYWORD_ONLY
        assert params["api_key"].default is None
        assert params["base_url"].default == base_url
        assert params["transport"].default is None
