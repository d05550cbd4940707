"""Structured output through the loop and the adapters: LoopOptions(output_type=...).

* The native fields per adapter, as pure mappings and in request bodies:
  Anthropic ``output_config.format``, Chat Completions ``response_format``,
  Responses ``text.format`` (field names as each API's reference documents).
* The loop with scripted models: a valid answer becomes ``result().output``;
  an invalid one goes back to the model with its problems, up to
  ``output_retries``, then the run fails with :class:`OutputValidationError`
  carrying the raw answer, the problems and the usage of every attempt;
  tools keep working; ``output_mode="tool"`` (the ``final_answer`` tool).
* Each adapter end to end against a local server, retry included.
* TestModel answers every output type with schema-valid JSON.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypedDict

import jsonschema
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcore import (
    ConfigError,
    FinishReason,
    LoopOptions,
    RunError,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    cli,
    run,
    tool,
    user_message,
)
from agentcore.model import Model
from agentcore.output import OUTPUT_TOOL, OutputValidationError, partial_json
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.anthropic import request as anthropic_request
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.providers.openai.chat import request as chat_request
from agentcore.providers.openai.responses.request import request_body as responses_body
from agentcore.providers.openai.shared import json_schema_format
from agentcore.schema.validation import SchemaValidator
from agentcore.testing import ScriptedModel, TestModel, example_value
from agentcore.types import OutputSchema, Request
from tests.localserver import LocalServer, Reply
from tests.test_output import Reading
from tests.test_responses_loop import stream as responses_stream


@dataclasses.dataclass
class Weather:
    """The weather in a city."""

    city: str
    celsius: float
    sky: Literal["clear", "cloudy", "rain"]


class Event(TypedDict):
    name: str
    day: datetime.date


class Invoice(pydantic.BaseModel):
    number: int = pydantic.Field(gt=0)
    total: float


WEATHER_SCHEMA = {
    "description": "The weather in a city.",
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "celsius": {"type": "number"},
        "sky": {"type": "string", "enum": ["clear", "cloudy", "rain"]},
    },
    "required": ["city", "celsius", "sky"],
    "additionalProperties": False,
}
GOOD = '{"city": "Oslo", "celsius": 7.5, "sky": "rain"}'
BAD = '{"city": "Oslo", "celsius": "warm", "sky": "rain"}'
OSLO = Weather("Oslo", 7.5, "rain")
ASK = [user_message("Weather in Oslo?")]


# --- the native fields ------------------------------------------------------------------


def test_chat_and_responses_formats_are_strict_only_when_the_schema_qualifies() -> None:
    strict = OutputSchema("Weather", json.dumps(WEATHER_SCHEMA))
    assert json_schema_format(strict) == {"name": "Weather", "schema": WEATHER_SCHEMA, "strict": True}
    loose = {**WEATHER_SCHEMA, "required": ["city"]}  # optional properties: not strict as written
    assert json_schema_format(OutputSchema("W", json.dumps(loose)))["strict"] is False


def test_anthropic_moves_the_constraints_it_refuses_into_descriptions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "minimum": {"type": "integer", "minimum": 1, "maximum": 9},  # a property named like a keyword
            "tags": {
                "type": "array",
                "items": {"type": "string", "maxLength": 5},
                "minItems": 2,
                "maxItems": 4,
            },
            "one": {"type": "array", "minItems": 1},
        },
        "required": ["minimum", "tags", "one"],
        "additionalProperties": False,
    }
    out = anthropic_request.output_format(OutputSchema("S", json.dumps(schema)))
    assert out == {
        "type": "json_schema",
        "schema": {
            "type": "object",
            "properties": {
                "minimum": {"type": "integer", "description": "Constraints: minimum 1; maximum 9"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "description": "Constraints: maxLength 5"},
                    "description": "Constraints: maxItems 4; minItems 2",
                },
                "one": {"type": "array", "minItems": 1},
            },
            "required": ["minimum", "tags", "one"],
            "additionalProperties": False,
        },
    }
    described = {"type": "string", "description": "A code.", "minLength": 3}
    assert anthropic_request.output_format(OutputSchema("S", json.dumps(described)))["schema"] == {
        "type": "string",
        "description": "A code. Constraints: minLength 3",
    }


def _request(**kwargs: Any) -> Request:
    return Request(messages=ASK, output=OutputSchema("Weather", json.dumps(WEATHER_SCHEMA)), **kwargs)


def test_request_bodies_carry_the_native_field() -> None:
    body = anthropic_request.request_body(_request(), "claude-x", max_tokens=1024)
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": WEATHER_SCHEMA}}
    chat = chat_request.request_body(_request(), "gpt-x")
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Weather", "schema": WEATHER_SCHEMA, "strict": True},
    }
    responses = responses_body(_request(), "gpt-x", origin="api.openai.com")
    assert responses["text"] == {
        "format": {"type": "json_schema", "name": "Weather", "schema": WEATHER_SCHEMA, "strict": True}
    }
    for plain in (
        anthropic_request.request_body(Request(messages=ASK), "claude-x", max_tokens=1024),
        chat_request.request_body(Request(messages=ASK), "gpt-x"),
        responses_body(Request(messages=ASK), "gpt-x", origin="api.openai.com"),
    ):
        assert not plain.keys() & {"output_config", "response_format", "text"}


def test_anthropic_keeps_the_effort_next_to_the_format() -> None:
    from agentcore import ModelSettings

    body = anthropic_request.request_body(
        _request(settings=ModelSettings(reasoning_effort="low")), "claude-x", max_tokens=1024
    )
    assert body["output_config"] == {
        "effort": "low",
        "format": {"type": "json_schema", "schema": WEATHER_SCHEMA},
    }


# --- the loop -------------------------------------------------------------------------------


USAGE = Usage(input=10, output=5)


def _answer(text: str, usage: Usage = USAGE) -> list[StreamPart]:
    half = len(text) // 2
    return [
        StreamPart.text_delta(text[:half]),
        StreamPart.text_delta(text[half:]),
        StreamPart.step_finish(FinishReason.STOP, usage),
    ]


def test_a_valid_answer_is_the_output_and_the_request_asks_for_it() -> None:
    model = ScriptedModel([_answer(GOOD)])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Weather)).result()
    assert result.output == OSLO
    assert result.text == GOOD
    assert model.requests[0].output == OutputSchema("Weather", json.dumps(WEATHER_SCHEMA))


def test_an_invalid_answer_is_sent_back_once_then_accepted() -> None:
    model = ScriptedModel([_answer(BAD, Usage(input=10, output=5)), _answer(GOOD, Usage(input=30, output=6))])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Weather)).result()
    assert result.output == OSLO
    assert result.usage == Usage(input=40, output=11)
    assert len(result.steps) == 2
    retry = model.requests[1].messages[-1]
    assert retry.role.value == "user"
    assert retry.text == (
        "Your final answer is not valid:\n"
        "- celsius: 'warm' is not of type 'number'\n"
        "Answer again with only the corrected JSON value."
    )
    assert [m.text for m in result.messages] == [ASK[0].text, BAD, retry.text, GOOD]


def test_a_validator_failure_is_sent_back_naming_the_field_and_its_message() -> None:
    hot, fine = '{"city": "Lima", "celsius": 99}', '{"city": "Lima", "celsius": 19}'
    model = ScriptedModel([_answer(hot), _answer(fine)])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Reading)).result()
    assert result.output == Reading(city="Lima", celsius=19)
    assert model.requests[1].messages[-1].text == (
        "Your final answer is not valid:\n"
        "- celsius: Value error, no place on Earth is that hot\n"
        "Answer again with only the corrected JSON value."
    )


def test_answers_that_keep_failing_end_the_run_with_the_typed_error() -> None:
    model = ScriptedModel(
        [_answer(BAD, Usage(input=10, output=5)), _answer("not json", Usage(input=30, output=2))]
    )
    with pytest.raises(RunError) as info:
        run(LoopOptions(model=model, messages=ASK, output_type=Weather)).result()
    err = info.value.err
    assert isinstance(err, OutputValidationError)
    assert err.raw == "not json"
    assert err.problems == (
        "(top level): the answer is not valid JSON (Expecting value: line 1 column 1 (char 0))",
    )
    assert err.usage == Usage(input=40, output=7)
    assert err.attempts == 2
    assert info.value.usage == Usage(input=40, output=7)
    assert info.value.finish_reason is FinishReason.ERROR


@pytest.mark.parametrize("retries", [0, 2])
def test_output_retries_sets_the_number_of_second_chances(retries: int) -> None:
    model = ScriptedModel([_answer(BAD)] * (retries + 1) + [_answer(GOOD)])
    with pytest.raises(RunError) as info:
        run(LoopOptions(model=model, messages=ASK, output_type=Weather, output_retries=retries)).result()
    assert isinstance(info.value.err, OutputValidationError)
    assert info.value.err.attempts == retries + 1
    assert len(model.requests) == retries + 1


@pytest.mark.parametrize(
    ("reason", "problem"),
    [
        (FinishReason.LENGTH, "the answer was cut off at the output token limit (finish reason length)"),
        (
            FinishReason.CONTENT_FILTER,
            "the provider's content filter stopped the answer (finish reason content-filter)",
        ),
    ],
)
def test_a_cut_off_answer_is_not_retried(reason: FinishReason, problem: str) -> None:
    model = ScriptedModel([[StreamPart.text_delta('{"city": "Os'), StreamPart.step_finish(reason)]] * 2)
    with pytest.raises(RunError) as info:
        run(LoopOptions(model=model, messages=ASK, output_type=Weather)).result()
    err = info.value.err
    assert isinstance(err, OutputValidationError)
    assert err.raw == '{"city": "Os'
    assert err.problems == (f"(top level): {problem}",)
    assert len(model.requests) == 1


def test_tools_keep_working_in_a_structured_run() -> None:
    @tool
    def thermometer(city: str) -> float:
        """Read the temperature."""
        return 7.5

    model = ScriptedModel(
        [
            [
                StreamPart.tool_call_event(ToolCall("c1", "thermometer", '{"city": "Oslo"}')),
                StreamPart.step_finish(FinishReason.TOOL_CALLS),
            ],
            _answer(GOOD),
        ]
    )
    result = run(LoopOptions(model=model, messages=ASK, tools=[thermometer], output_type=Weather)).result()
    assert result.output == OSLO
    assert result.steps[0].tool_results[0].content == "7.5"
    assert [d.name for d in model.requests[0].tools] == ["thermometer"]
    assert model.requests[0].output is not None


def test_the_step_limit_before_an_answer_is_the_typed_error() -> None:
    model = ScriptedModel([_answer(BAD), _answer(BAD)])
    with pytest.raises(RunError) as info:
        run(
            LoopOptions(model=model, messages=ASK, output_type=Weather, output_retries=3, step_limit=2)
        ).result()
    assert isinstance(info.value.err, OutputValidationError)
    assert info.value.err.attempts == 2


def test_a_raw_schema_gives_json_and_a_pydantic_model_an_instance() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    model = ScriptedModel([_answer('{"n": 4}')])
    assert run(LoopOptions(model=model, messages=ASK, output_type=schema)).result().output == {"n": 4}
    model = ScriptedModel([_answer('{"number": 0, "total": 1}'), _answer('{"number": 7, "total": 9.5}')])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Invoice)).result()
    assert result.output == Invoice(number=7, total=9.5)
    assert "- number: 0 is less than or equal to the minimum of 0" in model.requests[1].messages[-1].text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"type": "wrong"}, "LoopOptions.output_type: not a valid JSON Schema"),
        (bytes, "unsupported type hint bytes"),
    ],
)
def test_a_bad_output_type_fails_when_the_options_are_made(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LoopOptions(model=TestModel(), messages=ASK, output_type=value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("output_retries", -1, "LoopOptions.output_retries must be >= 0"),
        ("output_mode", "json", "LoopOptions.output_mode must be 'native' or 'tool'"),
    ],
)
def test_output_options_are_checked(field: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        LoopOptions(model=TestModel(), messages=ASK, output_type=Weather, **{field: value})


# --- output_mode="tool" ------------------------------------------------------------------------


def _final(arguments: str, call_id: str = "f1") -> list[StreamPart]:
    return [
        StreamPart.tool_call_event(ToolCall(call_id, OUTPUT_TOOL, arguments)),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=10, output=5)),
    ]


def test_tool_mode_offers_final_answer_and_takes_its_arguments() -> None:
    model = ScriptedModel([_final(BAD, "f1"), _final(GOOD, "f2")])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Weather, output_mode="tool")).result()
    assert result.output == OSLO
    request = model.requests[0]
    assert request.output is None
    assert [d.name for d in request.tools] == [OUTPUT_TOOL]
    assert json.loads(request.tools[0].input_schema) == WEATHER_SCHEMA
    first, second = (step.tool_results[0] for step in result.steps)
    assert first.is_error
    assert "- celsius: 'warm' is not of type 'number'" in first.content
    assert (second.content, second.is_error) == ("Final answer received.", False)
    assert result.finish_reason is FinishReason.STOP
    assert result.usage == Usage(input=20, output=10)


def test_tool_mode_accepts_a_json_text_answer_and_retries_prose() -> None:
    model = ScriptedModel([_answer("It rains in Oslo."), _answer(GOOD)])
    result = run(LoopOptions(model=model, messages=ASK, output_type=Weather, output_mode="tool")).result()
    assert result.output == OSLO
    assert model.requests[1].messages[-1].text == (
        "Your final answer is not valid:\n"
        f"- (top level): give the final answer by calling the {OUTPUT_TOOL} tool\n"
        f"Call the {OUTPUT_TOOL} tool with the answer."
    )


def test_tool_mode_failures_end_with_the_typed_error() -> None:
    model = ScriptedModel([_final(BAD, "f1"), _final('{"city": 1}', "f2")])
    with pytest.raises(RunError) as info:
        run(LoopOptions(model=model, messages=ASK, output_type=Weather, output_mode="tool")).result()
    err = info.value.err
    assert isinstance(err, OutputValidationError)
    assert err.raw == '{"city": 1}'
    assert err.usage == Usage(input=20, output=10)
    # The history stays valid: every call has its result.
    assert [r.is_error for r in info.value.messages[-1].tool_results] == [True]


def test_a_tool_named_final_answer_clashes_in_tool_mode() -> None:
    @tool(name=OUTPUT_TOOL)
    def mine() -> str:
        return ""

    with pytest.raises(ConfigError, match="two tools are named 'final_answer'"):
        run(
            LoopOptions(
                model=TestModel(), messages=ASK, tools=[mine], output_type=Weather, output_mode="tool"
            )
        )


# --- TestModel and partial output --------------------------------------------------------------


EVENT = {"name": "example", "day": datetime.date(2024, 1, 1)}


@pytest.mark.parametrize("mode", ["native", "tool"])
@pytest.mark.parametrize(
    ("output_type", "expected"),
    [
        (Weather, Weather("example", 1.5, "clear")),
        (Event, EVENT),
        (Invoice, Invoice(number=1, total=1.5)),
        (list[Event], [EVENT]),
        ({"type": "object", "properties": {"ok": {"type": "boolean"}}}, {"ok": True}),
    ],
)
def test_test_model_answers_with_valid_output(output_type: Any, expected: Any, mode: str) -> None:
    @tool
    def thermometer(city: str) -> float:
        """Read the temperature."""
        return 7.5

    options = LoopOptions(
        model=TestModel(), messages=ASK, tools=[thermometer], output_type=output_type, output_mode=mode
    )
    result = run(options).result()
    assert result.steps[0].tool_calls[0].name == "thermometer"
    assert result.output == expected
    assert type(result.output) is type(expected)


def test_partial_output_while_streaming() -> None:
    seen: list[Any] = []
    text = ""
    reader = run(LoopOptions(model=TestModel(), messages=ASK, output_type=Weather))
    for part in reader:
        if part.kind is StreamPartKind.TEXT_DELTA:
            text += part.text
            seen.append(partial_json(text))
    result = reader.result()
    assert seen[-1] == dataclasses.asdict(result.output)
    assert len(seen) > 2
    assert all(isinstance(value, dict) for value in seen)
    assert seen[0] != seen[-1]


# --- each adapter against a local server ------------------------------------------------------


def _anthropic_reply(text: str, output_tokens: int) -> Reply:
    def event(payload: dict[str, Any]) -> bytes:
        return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()

    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 1},
    }
    return Reply(
        actions=[
            event({"type": "message_start", "message": message})
            + event(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
            )
            + event(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
            )
            + event({"type": "content_block_stop", "index": 0})
            + event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": output_tokens},
                }
            )
            + event({"type": "message_stop"})
        ]
    )


def _chat_reply(text: str, output_tokens: int) -> Reply:
    chunks = [
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}],
        },
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        },
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {"prompt_tokens": 20, "completion_tokens": output_tokens},
        },
    ]
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    return Reply(actions=[body])


def _responses_reply(text: str, output_tokens: int) -> Reply:
    item = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return Reply(actions=[responses_stream("resp_1", [item], text)])


ADAPTERS: dict[str, tuple[Callable[[str], Model], Callable[[str, int], Reply]]] = {
    "anthropic": (lambda url: AnthropicModel("claude-x", api_key="k", base_url=url), _anthropic_reply),
    "chat": (lambda url: OpenAIChatModel("gpt-x", api_key="k", base_url=url), _chat_reply),
    "responses": (lambda url: OpenAIResponsesModel("gpt-x", api_key="k", base_url=url), _responses_reply),
}


def _native_field(adapter: str, body: dict[str, Any]) -> Any:
    if adapter == "anthropic":
        return body["output_config"]["format"]
    if adapter == "chat":
        return body["response_format"]
    return body["text"]["format"]


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_each_adapter_asks_natively_retries_and_returns_the_instance(
    adapter: str, server: LocalServer
) -> None:
    make, reply = ADAPTERS[adapter]
    server.add(reply(BAD, 5), reply(GOOD, 6))
    result = run(LoopOptions(model=make(server.url), messages=ASK, output_type=Weather)).result()
    assert result.output == OSLO
    first, second = (r["body"] for r in server.requests)
    expected = {
        "anthropic": {"type": "json_schema", "schema": WEATHER_SCHEMA},
        "chat": {
            "type": "json_schema",
            "json_schema": {"name": "Weather", "schema": WEATHER_SCHEMA, "strict": True},
        },
        "responses": {"type": "json_schema", "name": "Weather", "schema": WEATHER_SCHEMA, "strict": True},
    }[adapter]
    assert _native_field(adapter, first) == expected
    assert _native_field(adapter, second) == expected
    assert "- celsius: 'warm' is not of type 'number'" in json.dumps(second)
    assert result.usage.output == (5 + 6 if adapter != "responses" else 240)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_each_adapter_reports_the_raw_answer_and_usage_when_retries_run_out(
    adapter: str, server: LocalServer
) -> None:
    make, reply = ADAPTERS[adapter]
    server.add(reply(BAD, 5), reply('{"city": "Oslo"}', 4))
    with pytest.raises(RunError) as info:
        run(LoopOptions(model=make(server.url), messages=ASK, output_type=Weather)).result()
    err = info.value.err
    assert isinstance(err, OutputValidationError)
    assert err.raw == '{"city": "Oslo"}'
    assert err.problems == (
        "(top level): 'celsius' is a required property",
        "(top level): 'sky' is a required property",
    )
    assert err.usage == info.value.usage
    assert err.usage.output == (5 + 4 if adapter != "responses" else 240)
    assert server.hits == 2


# --- the agentcore command ---------------------------------------------------------------------

CLI_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "required": ["city", "when", "tags"],
    "additionalProperties": False,
}


def _main(args: list[str], model: Any = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(args, model=model, env={}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(CLI_SCHEMA), encoding="utf-8")
    return path


def test_the_command_prints_the_validated_answer_offline(schema_file: Path) -> None:
    code, out, err = _main(["--model", "test", "--output-schema", str(schema_file), "Plan", "a", "trip"])
    assert code == 0, err
    answer = json.loads(out)
    jsonschema.Draft202012Validator(CLI_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(answer)
    assert out == json.dumps(answer, indent=2) + "\n"  # only the answer: the streamed text is not repeated
    assert "finish: stop" in err


def test_the_command_with_json_ends_with_an_output_line(schema_file: Path) -> None:
    code, out, _ = _main(["--model", "test", "--json", "--output-schema", str(schema_file), "trip"])
    assert code == 0
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-2]["kind"] == "finish"
    assert lines[-1] == {
        "kind": "output",
        "output": json.loads("".join(p["text"] for p in lines if p["kind"] == "text-delta")),
    }


def test_the_command_reports_an_answer_that_keeps_failing(schema_file: Path) -> None:
    model = ScriptedModel([_answer('{"city": 1}'), _answer('{"city": 2}')])
    code, out, err = _main(["--output-schema", str(schema_file), "trip"], model)
    assert (code, out) == (1, "")
    assert "agentcore: error: " in err
    assert "does not match the output type (2 answers checked)" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the output schema"),
        ("{not json", "cannot read the output schema"),
        ("[1]", "must be a JSON object, got list"),
        ('{"type": "wrong"}', "LoopOptions.output_type: not a valid JSON Schema"),
    ],
)
def test_a_bad_schema_file_is_a_usage_error(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, out, err = _main(["--model", "test", "--output-schema", str(path), "trip"])
    assert (code, out) == (2, "")
    assert message in err


def test_python_m_agentcore_output_schema_offline(schema_file: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    proc = subprocess.run(
        [sys.executable, "-m", "agentcore", "--output-schema", str(schema_file), "Plan a trip"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    jsonschema.Draft202012Validator(CLI_SCHEMA).validate(json.loads(proc.stdout))


# --- property: TestModel's answer fits any schema of the supported shapes --------------------------


def _bounded(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    low = st.integers(-100, 100)
    width = st.integers(2, 50)

    def build(start: int, span: int, keys: tuple[str, str]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": kind}
        if keys[0]:
            schema[keys[0]] = start
        if keys[1]:
            schema[keys[1]] = start + span
        return schema

    pairs = st.tuples(
        st.sampled_from(["", "minimum", "exclusiveMinimum"]),
        st.sampled_from(["", "maximum", "exclusiveMaximum"]),
    )
    return st.builds(build, low, width, pairs)


def _string() -> st.SearchStrategy[dict[str, Any]]:
    lengths = st.tuples(st.integers(0, 12), st.integers(0, 12)).map(
        lambda p: {"type": "string", "minLength": min(p), "maxLength": max(p)}
    )
    formats = st.sampled_from(["date-time", "date", "time", "uuid", "email", "uri"]).map(
        lambda f: {"type": "string", "format": f}
    )
    patterns = st.sampled_from(["^[0-9]+$", "^[a-z]+$", "^[A-Z]$", "^[a-z0-9]{6}$"]).map(
        lambda p: {"type": "string", "pattern": p}
    )
    return st.just({"type": "string"}) | lengths | formats | patterns


SCALARS = st.one_of(
    _string(),
    _bounded("integer"),
    _bounded("number"),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(st.one_of(st.integers(), st.text(max_size=4), st.booleans()), min_size=1, max_size=3).map(
        lambda values: {"enum": values}
    ),
    st.integers().map(lambda value: {"const": value}),
)


def _containers(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    arrays = st.tuples(inner, st.integers(0, 3), st.integers(0, 3)).map(
        lambda t: {"type": "array", "items": t[0], "minItems": min(t[1:]), "maxItems": max(t[1:])}
    )
    tuples = st.lists(inner, min_size=1, max_size=3).map(
        lambda items: {"type": "array", "prefixItems": items, "minItems": len(items), "items": False}
    )
    objects = st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), inner, max_size=4).flatmap(
        lambda props: st.sets(st.sampled_from(sorted(props)) if props else st.nothing()).map(
            lambda required: {
                "type": "object",
                "properties": props,
                "required": sorted(required),
                "additionalProperties": False,
            }
        )
    )
    unions = st.lists(inner, min_size=1, max_size=3).map(lambda options: {"anyOf": options})
    return arrays | tuples | objects | unions


SCHEMAS = st.recursive(SCALARS, _containers, max_leaves=10)


@settings(max_examples=300, deadline=None)
@given(schema=SCHEMAS)
def test_test_model_output_fits_random_schemas(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    value = example_value(schema)
    assert SchemaValidator(schema).problems(value) == []
    jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.FormatChecker(["date", "uuid", "email"])
    ).validate(value)
