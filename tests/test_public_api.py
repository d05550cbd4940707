"""Pins the public API: the names ``agentcore`` exports and the shapes other code relies on.

Adding or removing a name from ``agentcore.__all__`` must be a deliberate
change of this file too.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentcore
import agentcore.errors

PUBLIC_NAMES = {
    "__version__",
    # The loop, its options and what a run returns.
    "run",
    "generate",
    "LoopOptions",
    "Context",
    "ManualClock",
    "RunReader",
    "RunResult",
    "StepResult",
    # Usage limits and which one ended a run (docs/controls.md).
    "UsageLimits",
    "LimitReached",
    # Control of each step, and what a history policy changed (docs/long-runs.md).
    "StepDraft",
    "StepPlan",
    "Compaction",
    # A source the answer cites (docs/server-tools.md).
    "Citation",
    "Model",
    "ModelSettings",
    # A model that falls back to others (docs/controls.md), and its default classes.
    "FallbackModel",
    "DEFAULT_FALLBACK_ON",
    # What None means for a LoopOptions field.
    "DEFAULT_STEP_LIMIT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_BASE_DELAY",
    "DEFAULT_RETRY_MAX_DELAY",
    "DEFAULT_RUN_QUEUE_SIZE",
    # The value types, their enums and constructors.
    "Request",
    "Message",
    "Role",
    "ContentPart",
    "ContentPartKind",
    "StreamPart",
    "StreamPartKind",
    "FinishReason",
    "ToolCall",
    "ToolResult",
    "ToolDefinition",
    "Reasoning",
    "ProviderItem",
    "Usage",
    "File",
    "user_message",
    "text_part",
    "reasoning_part",
    "provider_item_part",
    "tool_call_part",
    "tool_result_part",
    "file_part",
    "file_part_from_path",
    "cache_point",
    # The per-step prompt-cache report.
    "CacheCause",
    "CacheReport",
    "PrefixChange",
    # Tools.
    "Tool",
    "ToolSet",
    "FunctionTool",
    "tool",
    # Agents, agents as tools and handoffs (docs/agents.md).
    "Agent",
    "handoff",
    # Middleware and guardrails (docs/controls.md).
    "Middleware",
    "RedactionMiddleware",
    "LoggingMiddleware",
    "Guardrails",
    "Tripwire",
    # Every exception a caller may catch (agentcore/errors.py draws the tree), and the classification.
    "AgentcoreError",
    "ModelError",
    "ErrorClass",
    "classify_status",
    "RunError",
    "Canceled",
    "DeadlineExceeded",
    "ChatRequestError",
    "ConfigError",
    "ToolInputError",
    "OutputValidationError",
    "GuardrailTripped",
    "CheckpointConflict",
    "ReplayDiverged",
    "SessionLocked",
    "MCPServerError",
    "MCPToolError",
}
"""Every name ``agentcore`` exports, each once: adding or removing one is a
deliberate change of this set."""

NOT_AT_THE_TOP = {
    "agentcore.cli.UsageError": "the command's own: its helpers raise it, main() exits with status 2",
    "agentcore.testing.ScriptExhausted": "a failed test (an AssertionError), kept with the test doubles",
    "agentcore.schema.signature.ConversionError": "never reaches a caller: its problems become the "
    "lines of an OutputValidationError or a ToolInputError",
}
"""The exception classes of the package that ``agentcore`` does not export, and why."""

CAUGHT_FROM_THEIR_MODULE = {"agentcore.testing.ScriptExhausted"}
"""Of :data:`NOT_AT_THE_TOP`, the classes a caller may catch (in a test of
their own): every sentence saying the exceptions are importable from
``agentcore`` names each, with its module."""


def test_all_is_exactly_the_pinned_set() -> None:
    assert len(agentcore.__all__) == len(set(agentcore.__all__)), "duplicates in __all__"
    assert set(agentcore.__all__) == PUBLIC_NAMES


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from agentcore import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(agentcore.__all__)


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class a module of the package defines, by its dotted
    name (the optional extras are installed with the tests)."""
    found: dict[str, type[BaseException]] = {}
    for module in pkgutil.walk_packages(agentcore.__path__, "agentcore."):
        if module.name == "agentcore.__main__":  # importing it runs the command
            continue
        for name, value in vars(importlib.import_module(module.name)).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.name
                and not name.startswith("_")
            ):
                found[f"{module.name}.{name}"] = value
    return found


def test_every_exception_class_of_the_package_is_importable_from_agentcore() -> None:
    found = package_exceptions()
    exported = {name for name, cls in found.items() if getattr(agentcore, cls.__name__, None) is cls}
    assert set(found) - exported == set(NOT_AT_THE_TOP)
    drawn = agentcore.errors.__doc__ or ""
    assert [name for name in sorted(exported) if f" {found[name].__name__} " not in drawn] == []


def test_the_documents_name_the_exceptions_kept_in_their_module() -> None:
    assert set(NOT_AT_THE_TOP) >= CAUGHT_FROM_THEIR_MODULE
    root = Path(__file__).resolve().parent.parent
    claims = [
        (path.relative_to(root).as_posix(), paragraph)
        for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        for paragraph in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))
        if "importable from" in " ".join(paragraph.split())
    ]
    assert {name for name, _ in claims} >= {"README.md", "docs/README.md", "docs/errors.md"}
    unnamed = [
        (name, dotted)
        for name, paragraph in claims
        for dotted in sorted(CAUGHT_FROM_THEIR_MODULE)
        if dotted.rsplit(".", 1)[1] not in paragraph or dotted.rsplit(".", 1)[0] not in paragraph
    ]
    assert unnamed == []


def test_import_agentcore_does_not_import_the_test_doubles() -> None:
    code = "import sys, agentcore\nprint('agentcore.testing' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_import_agentcore_imports_no_optional_extra() -> None:
    # The MCP errors are defined in agentcore.errors so that agentcore can
    # export them without the mcp SDK; the same holds for every extra.
    extras = (
        "mcp",
        "pydantic",
        "opentelemetry",
        "dbos",
        "flask",
        "django",
        "starlette",
        "botocore",
        "google",
        "genai_prices",
    )
    code = (
        "import sys\n"
        "from agentcore import MCPServerError, MCPToolError, OutputValidationError, UsageLimits\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({extras!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


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
    assert get_weather.execute({"city": "Lima"}, agentcore.Context()) == "Lima: sunny"


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
