"""The ``agentcore`` command, in process: output, exit statuses, provider choice, demo tools."""

from __future__ import annotations

import base64
import datetime
import io
import json
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import agentcore
import agentcore_command
from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    ModelSettings,
    Reasoning,
    Request,
    RunReader,
    StreamPart,
    ToolCall,
    Usage,
    cli,
    user_message,
)
from agentcore.integrations import cli_model, cli_output, demo_tools
from agentcore.integrations.cli_output import TextPrinter
from agentcore.integrations.demo_tools import COLORS, count_words, evaluate, swatch_png
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.settings import unsupported
from agentcore.testing import ScriptedModel, TestModel
from agentcore.tools import ToolInputError
from tests.conftest import wait_for_threads
from tests.loop_helpers import asleep_in, nested, wait_until

FIXED_NOW = datetime.datetime(2025, 1, 31, 12, 0, 0, tzinfo=datetime.timezone.utc)
NOTICE = (
    "agentcore: no ANTHROPIC_API_KEY or OPENAI_API_KEY set; using the offline TestModel "
    "(see --help to use a real model)"
)
KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
)
FIRST_THOUGHT = (
    "I can use calculator, utc_now, word_count and color_swatch; "
    "I will call each of them once and answer from the results."
)
SECOND_THOUGHT = "The tools have answered; I will report what they said."


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def call(name: str, arguments: str, call_id: str = "c1") -> StreamPart:
    return StreamPart.tool_call_event(ToolCall(id=call_id, name=name, input=arguments))


def finish(reason: FinishReason, usage: Usage | None = None) -> StreamPart:
    return StreamPart.step_finish(reason, usage or Usage(input=10, output=5))


def test_offline_default_uses_test_model_and_shows_everything(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["What", "is", "6 * 7?"], tools=demo_tools.demo_tools(clock=lambda: FIXED_NOW))
    out, err = capsys.readouterr()

    expected = agentcore.run(
        LoopOptions(
            model=TestModel(reasoning=True),
            messages=[user_message("What is 6 * 7?")],
            tools=demo_tools.demo_tools(clock=lambda: FIXED_NOW),
        )
    ).result()
    assert code == 0
    assert out == (
        "Here is what the tools said. calculator returned: 42 utc_now returned: "
        "2025-01-31T12:00:00+00:00 word_count returned: 4 words, 19 characters, 1 line "
        "color_swatch returned: a 16x16 red swatch with 1 file: image/png, 79 bytes\n"
    )
    assert out == expected.text + "\n"
    u = expected.usage
    assert u.input > 0
    assert u.output > 0
    assert expected.reasoning == (FIRST_THOUGHT, SECOND_THOUGHT)
    assert err.splitlines() == [
        NOTICE,
        "thinking: " + FIRST_THOUGHT,  # plain: stderr is not a terminal here
        '→ calculator({"expression": "6 * 7"})',
        "→ utc_now({})",
        '→ word_count({"text": "The quick brown fox"})',
        '→ color_swatch({"color": "red"})',
        "← 42",
        "← 2025-01-31T12:00:00+00:00",
        "← 4 words, 19 characters, 1 line",
        "← a 16x16 red swatch [image/png, 79 bytes]",
        "thinking: " + SECOND_THOUGHT,
        f"finish: stop · usage: input {u.input}, output {u.output}, cache read 0, cache write 0",
    ]


def test_json_lines(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["--json", "What is 6 * 7?"])
    out, err = capsys.readouterr()

    assert code == 0
    assert err == NOTICE + "\n"
    parts = [json.loads(line) for line in out.splitlines()]
    thought = [p for p in parts if p["kind"] in ("reasoning-delta", "reasoning")]
    assert (
        "".join(p["text"] for p in thought if p["kind"] == "reasoning-delta")
        == FIRST_THOUGHT + SECOND_THOUGHT
    )
    assert [p["reasoning"] for p in thought if p["kind"] == "reasoning"] == [
        {"text": FIRST_THOUGHT, "format": "test"},
        {"text": SECOND_THOUGHT, "format": "test"},
    ]
    first_block = len(FIRST_THOUGHT.split(" ")) + 1  # the deltas, word by word, then the block
    assert [p["kind"] for p in parts[:first_block]] == ["reasoning-delta"] * (first_block - 1) + ["reasoning"]
    parts = [p for p in parts if p not in thought]
    # The command asks for tool input as it streams: each call's fragments come before it.
    deltas = [p["tool_call"] for p in parts if p["kind"] == "tool-call-delta"]
    calls = [p["tool_call"] for p in parts if p["kind"] == "tool-call"]
    for call_id in ("call_1", "call_2", "call_3", "call_4"):
        at = [n for n, p in enumerate(parts) if p.get("tool_call", {}).get("id") == call_id]
        assert [parts[n]["kind"] for n in at][-1] == "tool-call"  # the whole call after its fragments
        assert {parts[n]["kind"] for n in at[:-1]} == {"tool-call-delta"}
    assert {c["id"]: c["input"] for c in calls} == {
        call_id: "".join(d["input"] for d in deltas if d["id"] == call_id)
        for call_id in {d["id"] for d in deltas}
    }
    assert len(calls) == 4
    parts = [p for p in parts if p["kind"] != "tool-call-delta"]
    kinds = [p["kind"] for p in parts]
    assert kinds[:5] == ["tool-call"] * 4 + ["step-finish"]
    assert kinds[5:9] == ["tool-result"] * 4
    assert kinds[-2:] == ["step-finish", "finish"]
    assert set(kinds[9:-2]) == {"text-delta"}
    assert parts[0] == {
        "kind": "tool-call",
        "tool_call": {"id": "call_1", "name": "calculator", "input": '{"expression": "6 * 7"}'},
    }
    assert parts[5] == {
        "kind": "tool-result",
        "tool_result": {"tool_call_id": "call_1", "name": "calculator", "content": "42", "is_error": False},
    }
    png = swatch_png(COLORS["red"])
    assert parts[8] == {
        "kind": "tool-result",
        "tool_result": {
            "tool_call_id": "call_4",
            "name": "color_swatch",
            "content": "a 16x16 red swatch",
            "is_error": False,
            "files": [
                {
                    "media_type": "image/png",
                    "size": len(png),
                    "filename": "red.png",
                    "data_url": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
                }
            ],
        },
    }
    assert parts[4]["finish_reason"] == "tool-calls"
    steps = [p["usage"] for p in parts if p["kind"] == "step-finish"]
    last = parts[-1]
    assert last["finish_reason"] == "stop"
    assert last["total_usage"] == {
        key: steps[0][key] + steps[1][key] for key in ("input", "output", "cache_read", "cache_write")
    }
    assert "".join(p["text"] for p in parts if p["kind"] == "text-delta").startswith("Here is what")


def test_json_error_part(capsys: pytest.CaptureFixture[str]) -> None:
    failure = ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401)
    code = cli.main(["--json", "hi"], model=ScriptedModel([failure]))
    out, err = capsys.readouterr()

    assert code == 1
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "kind": "error",
            "finish_reason": "error",
            "total_usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
            "err": "authentication failed: invalid x-api-key (HTTP 401)",
            "error_type": "ModelError",
            "error_class": "auth",
            "status": 401,
            "retry_after": None,
            "cost": "0",  # no step completed: nothing was billed, whatever the model's price
        }
    ]
    assert err == "agentcore: error: authentication failed: invalid x-api-key (HTTP 401)\n"


def test_text_of_a_tool_step_gets_its_own_line(capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel(
        [
            [
                StreamPart.text_delta("Let me "),
                StreamPart.text_delta("compute."),
                call("calculator", '{"expression":"1 / 0"}'),
                finish(FinishReason.TOOL_CALLS, Usage(input=100, output=20, cache_read=60, cache_write=7)),
            ],
            [
                StreamPart.text_delta("It is undefined."),
                finish(FinishReason.STOP, Usage(input=130, output=9)),
            ],
        ]
    )
    code = cli.main(["--system", "Be brief.", "what is 1/0"], model=model)
    out, err = capsys.readouterr()

    assert code == 0
    assert out == "Let me compute.\nIt is undefined.\n"
    assert err.splitlines() == [
        '→ calculator({"expression": "1 / 0"})',
        "cache: step 1 · read 60 of 107 prompt tokens (56%) · wrote 7",
        "← Error: ToolInputError: division by zero",
        "finish: stop · usage: input 230, output 29, cache read 60, cache write 7",
    ]
    assert model.requests[0].system == "Be brief."
    assert model.requests[0].messages[0].text == "what is 1/0"
    assert [t.name for t in model.requests[0].tools] == [
        "calculator",
        "utc_now",
        "word_count",
        "color_swatch",
    ]


def test_long_and_multiline_results_are_shown_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel(
        [
            [
                call("word_count", json.dumps({"text": "x"}), "a"),
                call("nope", "{}", "b"),
                finish(FinishReason.STOP),
            ],
            [finish(FinishReason.STOP)],
        ]
    )
    assert cli.main(["go"], model=model) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[:4] == [
        '→ word_count({"text": "x"})',
        "→ nope({})",
        "← 1 word, 1 character, 1 line",
        "← Error: unknown tool 'nope'. Available tools: calculator, utc_now, word_count, color_swatch.",
    ]
    long = agentcore.ToolResult("i", "t", "line1\nline2 " + "y" * 400)
    assert cli_output.result_text(long) == "← line1\\nline2 " + "y" * 287 + "… (113 more characters)"
    assert cli_output.call_text(ToolCall("i", "t", '{"a":\n 1}')) == '→ t({"a": 1})'
    assert cli_output.call_text(ToolCall("i", "t", '{"a": ')) == '→ t({"a":)'
    assert cli_output.call_text(ToolCall("i", "t", nested(20_000))) == f"→ t({nested(20_000)})"


def test_step_limit_and_length_still_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--max-steps", "1", "hi"]) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("finish: step-limit · usage: input ")

    model = ScriptedModel([[StreamPart.text_delta("cut"), finish(FinishReason.LENGTH)]])
    assert cli.main(["hi"], model=model) == 0
    out, err = capsys.readouterr()
    assert out == "cut\n"
    assert err == "finish: length · usage: input 10, output 5, cache read 0, cache write 0\n"


def test_prompt_from_stdin(capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel([[StreamPart.text_delta("ok\n"), finish(FinishReason.STOP)]])
    assert cli.main(["-"], model=model, stdin=io.StringIO("from a pipe\n")) == 0
    assert model.requests[0].messages[0].text == "from a pipe\n"
    assert capsys.readouterr().out == "ok\n"


# --- reasoning and model settings --------------------------------------------


def think(*pieces: str, **fields: str) -> list[StreamPart]:
    """A reasoning block streamed as ``pieces``, then the whole block."""
    block = Reasoning(text=fields.pop("text", "".join(pieces)), **fields)
    return [*(StreamPart.reasoning_delta(piece) for piece in pieces), StreamPart.reasoning_event(block)]


def thinking_script() -> list[Any]:
    """Step 1: a thought, a tool call; step 2: a thought, the answer."""
    return [
        [
            *think("Six times ", "seven: ", "use the calculator."),
            call("calculator", '{"expression": "6 * 7"}'),
            finish(FinishReason.TOOL_CALLS),
        ],
        [
            *think("It said 42.", signature="c2ln"),
            StreamPart.text_delta("It is "),
            StreamPart.text_delta("42."),
            finish(FinishReason.STOP),
        ],
    ]


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_reasoning_streams_on_stderr_and_stdout_keeps_only_the_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["6 * 7?"], model=ScriptedModel(thinking_script())) == 0
    out, err = capsys.readouterr()
    assert out == "It is 42.\n"
    assert err.splitlines() == [
        "thinking: Six times seven: use the calculator.",
        '→ calculator({"expression": "6 * 7"})',
        "← 42",
        "thinking: It said 42.",
        "finish: stop · usage: input 20, output 10, cache read 0, cache write 0",
    ]


def test_one_screen_shows_each_thought_on_its_own_lines() -> None:
    # stdout and stderr on one terminal: each switch starts a new line.
    screen = io.StringIO()
    steps = [
        [
            StreamPart.text_delta("Let me think"),
            *think("first\n", "second line"),
            StreamPart.text_delta("Done."),
            *think("again\n"),
            finish(FinishReason.STOP),
        ]
    ]
    assert cli.main(["q"], model=ScriptedModel(steps), stdout=screen, stderr=screen) == 0
    assert screen.getvalue() == (
        "Let me think\n"
        "thinking: first\nsecond line\n"
        "Done.\n"
        "thinking: again\n"
        "finish: stop · usage: input 10, output 5, cache read 0, cache write 0\n"
    )


def test_reasoning_is_dimmed_on_a_terminal_unless_no_color() -> None:
    steps = [[*think("a ", "b"), StreamPart.text_delta("x"), finish(FinishReason.STOP)]]
    err = Terminal()
    assert cli.main(["q"], model=ScriptedModel(steps), stdout=io.StringIO(), stderr=err, env={}) == 0
    assert err.getvalue().splitlines()[0] == "\x1b[2mthinking: a \x1b[0m\x1b[2mb\x1b[0m"
    for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        err = Terminal()
        assert cli.main(["q"], model=ScriptedModel(steps), stdout=io.StringIO(), stderr=err, env=env) == 0
        assert err.getvalue().splitlines()[0] == "thinking: a b"
    err = Terminal()  # NO_COLOR set but empty counts as unset (no-color.org)
    assert (
        cli.main(["q"], model=ScriptedModel(steps), stdout=io.StringIO(), stderr=err, env={"NO_COLOR": ""})
        == 0
    )
    assert err.getvalue().startswith("\x1b[2mthinking: a ")


def test_a_block_that_arrives_whole_is_shown_once(capsys: pytest.CaptureFixture[str]) -> None:
    streamed = "streamed, then text, then the block"
    steps = [
        [
            StreamPart.reasoning_event(Reasoning(text="no deltas before me", signature="sig")),
            StreamPart.reasoning_event(Reasoning(data="ZW5jcnlwdGVk", format="anthropic")),  # redacted
            StreamPart.reasoning_delta("streamed, "),
            StreamPart.reasoning_delta("then text, then the block"),
            StreamPart.text_delta("answer"),
            # An adapter that emits the block at the step's end: it is not shown twice.
            StreamPart.reasoning_event(Reasoning(text=streamed)),
            finish(FinishReason.STOP),
        ]
    ]
    assert cli.main(["q"], model=ScriptedModel(steps)) == 0
    out, err = capsys.readouterr()
    assert out == "answer\n"
    assert err.splitlines()[:3] == [
        "thinking: no deltas before me",
        "thinking: (not shown by the provider)",
        "thinking: streamed, then text, then the block",
    ]
    assert err.splitlines()[3].startswith("finish: stop")


def test_an_interrupt_mid_thought_ends_its_line() -> None:
    screen = io.StringIO()
    printer = TextPrinter(screen, screen)
    printer.part(StreamPart.reasoning_delta("half a tho"))
    printer.interrupted()
    assert screen.getvalue() == "thinking: half a tho\n"


def test_hide_reasoning(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--hide-reasoning", "6 * 7?"], model=ScriptedModel(thinking_script())) == 0
    out, err = capsys.readouterr()
    assert out == "It is 42.\n"
    assert "thinking" not in err
    assert err.splitlines()[0] == '→ calculator({"expression": "6 * 7"})'

    assert cli.main(["--json", "--hide-reasoning", "6 * 7?"], model=ScriptedModel(thinking_script())) == 0
    kinds = [json.loads(line)["kind"] for line in capsys.readouterr().out.splitlines()]
    assert kinds == [
        "tool-call",
        "step-finish",
        "tool-result",
        "text-delta",
        "text-delta",
        "step-finish",
        "finish",
    ]


def test_json_reasoning_objects_carry_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    block = Reasoning("t", "sig", "ZGF0YQ==", "rs_1", "anthropic", "api.example.com", '{"k": [1]}')
    steps = [[StreamPart.reasoning_delta("t"), StreamPart.reasoning_event(block), finish(FinishReason.STOP)]]
    assert cli.main(["--json", "q"], model=ScriptedModel(steps)) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == {"kind": "reasoning-delta", "text": "t"}
    assert lines[1] == {
        "kind": "reasoning",
        "reasoning": {
            "text": "t",
            "signature": "sig",
            "data": "ZGF0YQ==",
            "id": "rs_1",
            "format": "anthropic",
            "origin": "api.example.com",
            "provider_data": '{"k": [1]}',
        },
    }
    assert Reasoning.from_dict(lines[1]["reasoning"]) == block


@pytest.mark.parametrize(
    ("flags", "settings", "max_output_tokens"),
    [
        ([], None, None),
        (["--temperature", "0.5"], ModelSettings(temperature=0.5), None),
        (["--reasoning-effort", "high"], ModelSettings(reasoning_effort="high"), None),
        (["--thinking-budget", "2048"], ModelSettings(thinking=True, thinking_budget=2048), None),
        (["--no-thinking"], ModelSettings(thinking=False), None),
        (
            ["--thinking-budget", "1024", "--max-output-tokens", "8000", "--temperature", "1"],
            ModelSettings(temperature=1.0, thinking=True, thinking_budget=1024),
            8000,
        ),
    ],
)
def test_setting_flags_become_the_runs_model_settings(
    flags: list[str], settings: ModelSettings | None, max_output_tokens: int | None
) -> None:
    model = ScriptedModel([[finish(FinishReason.STOP)]])
    assert cli.main([*flags, "q"], model=model, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    [request] = model.requests
    assert request.settings == settings
    assert request.max_output_tokens == max_output_tokens


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--temperature", "3"],
            "agentcore: error: ModelSettings.temperature must be between 0.0 and 2.0, got 3.0",
        ),
        (["--temperature", "nan"], "agentcore: error: ModelSettings.temperature must be a number, got nan"),
        (["--temperature", "warm"], "argument --temperature: must be a number, got 'warm'"),
        (["--reasoning-effort", "huge"], "argument --reasoning-effort: invalid choice: 'huge'"),
        (["--thinking-budget", "0"], "argument --thinking-budget: must be at least 1, got 0"),
        (["--thinking-budget", "9", "--no-thinking"], "not allowed with argument --thinking-budget"),
    ],
)
def test_bad_setting_flags_exit_2(flags: list[str], message: str) -> None:
    err = io.StringIO()
    model = ScriptedModel([])
    assert cli.main([*flags, "q"], model=model, stdout=io.StringIO(), stderr=err) == 2
    assert message in err.getvalue()
    assert model.requests == []


class PickyModel:
    """A model whose API has only a temperature: it refuses any other setting, as an adapter does."""

    model_id = "picky"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        unsupported(request.settings or ModelSettings(), {"temperature"}, "the Picky API")
        yield finish(FinishReason.STOP)


def test_a_setting_the_provider_lacks_is_one_usage_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--temperature", "0.2", "q"], model=PickyModel()) == 0
    capsys.readouterr()
    assert cli.main(["--thinking-budget", "2048", "q"], model=PickyModel()) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "agentcore: error: ModelSettings.thinking is not supported by the Picky API; "
        "leave it unset or use extra_body\n"
    )


def test_the_offline_model_thinks_unless_told_not_to(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--no-thinking", "What is 6 * 7?"]) == 0
    err = capsys.readouterr().err
    assert "thinking" not in err
    assert err.splitlines()[1] == '→ calculator({"expression": "6 * 7"})'
    assert cli.main(["--model", "test", "--reasoning-effort", "low", "hi"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "thinking: " + FIRST_THOUGHT


# --- the calculator and the other demo tools ---------------------------------


@pytest.mark.parametrize(
    ("expression", "output"),
    [
        ("6 * 7", "42"),
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("2 ** 3 ** 2", "512"),
        ("-3 ** 2", "-9"),
        ("(-3) ** 2", "9"),
        ("--5", "5"),
        ("+5 - -2", "7"),
        ("7 / 2", "3.5"),
        ("6 / 3", "2.0"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("2 ** -1", "0.5"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("1_000 + 0x10", "1016"),
        ("  1.5e3 ", "1500.0"),
        ("2 ** 0.5", "1.4142135623730951"),
        ("1 ** (10 ** 300)", "1"),
        ("2 ** 1023", str(2**1023)),
    ],
)
def test_calculator_values(expression: str, output: str) -> None:
    tool = demo_tools.demo_tools()[0]
    assert tool.definition.name == "calculator"
    assert tool.execute({"expression": expression}, Context()) == output


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os')", "function calls are not allowed: __import__('os')"),
        ("abs(-1)", "function calls are not allowed: abs(-1)"),
        ("(1).__class__", "attribute access is not allowed: (1).__class__"),
        ("os.system", "attribute access is not allowed: os.system"),
        ("x + 1", "names are not allowed: x"),
        ("[1][0]", "subscripts are not allowed: [1][0]"),
        ("1 < 2", "comparisons are not allowed: 1 < 2"),
        ("lambda: 1", "lambdas are not allowed: lambda: 1"),
        ("'a' * 3", "only numbers are allowed, not 'a'"),
        ("True + 1", "only numbers are allowed, not True"),
        ("1j", "only numbers are allowed, not 1j"),
        ("1 & 2", "only + - * / // % ** and unary + - are allowed: 1 & 2"),
        ("~1", "only + - * / // % ** and unary + - are allowed: ~1"),
        ("(1, 2)", "only numbers and arithmetic operators are allowed: (1, 2)"),
        ("9**9**9", "the result is too large"),
        ("2 ** 1100", "the result is too large"),
        ("10.0 ** 400", "the result is too large"),
        ("1e308 * 10", "the result is too large"),
        ("1e999", "the result is too large"),
        ("10 ** 308 + 1", "the result is too large"),
        ("1 / 0", "division by zero"),
        ("1 // 0", "division by zero"),
        ("1 % 0.0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("(-8) ** (1 / 3)", "the result is not a real number"),
        ("", "the expression is empty"),
        ("1 +", "not a valid expression (invalid syntax)"),
        ("-" * 990 + "1", "the expression is too deeply nested"),
        ("1" * 1001, "the expression is longer than 1000 characters"),
    ],
)
def test_calculator_refusals(expression: str, message: str) -> None:
    with pytest.raises(ToolInputError) as info:
        evaluate(expression)
    assert str(info.value) == message


def test_calculator_arguments_are_checked() -> None:
    tool = demo_tools.demo_tools()[0]
    with pytest.raises(ToolInputError, match=r"^'expression' must be a string$"):
        tool.execute({"expression": 42}, Context())


def test_utc_now_and_word_count() -> None:
    calc, now, words, swatch = demo_tools.demo_tools(
        clock=lambda: FIXED_NOW.astimezone(datetime.timezone(datetime.timedelta(hours=2)))
    )
    assert now.execute({}, Context()) == "2025-01-31T12:00:00+00:00"
    assert words.execute({"text": "one two\nthree"}, Context()) == "3 words, 13 characters, 2 lines"
    assert count_words("") == "0 words, 0 characters, 0 lines"
    for tool in (calc, now, words, swatch):
        schema = json.loads(tool.definition.input_schema)
        assert schema["type"] == "object"
        assert all(p.get("examples") for p in schema["properties"].values())
    cancelled = Context()
    cancelled.cancel()
    with pytest.raises(agentcore.Canceled):
        calc.execute({"expression": "1"}, cancelled)


# --- choosing the provider -------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "base_url", "env", "expected"),
    [
        (None, None, {}, ("test", "test-model", None, "")),
        (None, None, {"ANTHROPIC_API_KEY": "  "}, ("test", "test-model", None, "")),
        (None, None, {"ANTHROPIC_API_KEY": "ak"}, ("anthropic", "claude-sonnet-4-5", None, "ak")),
        (None, None, {"OPENAI_API_KEY": "ok"}, ("openai", "gpt-4o-mini", None, "ok")),
        (
            None,
            None,
            {"ANTHROPIC_API_KEY": "ak", "OPENAI_API_KEY": "ok"},
            ("anthropic", "claude-sonnet-4-5", None, "ak"),
        ),
        (
            None,
            "http://gw/",
            {"ANTHROPIC_API_KEY": "ak"},
            ("anthropic", "claude-sonnet-4-5", "http://gw/", "ak"),
        ),
        ("test", None, {"ANTHROPIC_API_KEY": "ak"}, ("test", "test-model", None, "")),
        ("test:mine", None, {}, ("test", "mine", None, "")),
        ("anthropic:claude-x", None, {"ANTHROPIC_API_KEY": "ak"}, ("anthropic", "claude-x", None, "ak")),
        ("anthropic", None, {"ANTHROPIC_API_KEY": "ak"}, ("anthropic", "claude-sonnet-4-5", None, "ak")),
        ("anthropic:claude-x", "http://gw", {}, ("anthropic", "claude-x", "http://gw", "")),
        (
            "anthropic:claude-x",
            None,
            {"ANTHROPIC_API_KEY": "ak", "ANTHROPIC_BASE_URL": "http://env-gw"},
            ("anthropic", "claude-x", "http://env-gw", "ak"),
        ),
        (
            "anthropic:claude-x",
            "http://flag",
            {"ANTHROPIC_BASE_URL": "http://env-gw"},
            ("anthropic", "claude-x", "http://flag", ""),
        ),
        ("openai:gpt-4o", None, {"OPENAI_API_KEY": "ok"}, ("openai", "gpt-4o", None, "ok")),
        (
            "OpenAI:gpt-4o",
            None,
            {"OPENAI_API_KEY": "ok", "ANTHROPIC_API_KEY": "ak"},
            ("openai", "gpt-4o", None, "ok"),
        ),
        (
            "openai:llama3.2",
            "http://localhost:11434/v1",
            {},
            ("openai", "llama3.2", "http://localhost:11434/v1", ""),
        ),
        ("openai:x", None, {"OPENAI_BASE_URL": "http://local/v1"}, ("openai", "x", "http://local/v1", "")),
        ("openai-responses:gpt-5", None, {"OPENAI_API_KEY": "ok"}, ("openai-responses", "gpt-5", None, "ok")),
        ("openai-responses", None, {"OPENAI_API_KEY": "ok"}, ("openai-responses", "gpt-5-mini", None, "ok")),
        (
            "openai-responses:m",
            None,
            {"OPENAI_BASE_URL": "http://local/v1"},
            ("openai-responses", "m", "http://local/v1", ""),
        ),
    ],
)
def test_choose_model(
    spec: str | None, base_url: str | None, env: dict[str, str], expected: tuple[str, str, str | None, str]
) -> None:
    choice = cli_model.choose_model(spec, base_url, env)
    assert (choice.provider, choice.model, choice.base_url, choice.api_key) == expected
    assert bool(choice.notice) == (spec is None and expected[0] == "test")
    assert "ak" not in repr(choice)


@pytest.mark.parametrize(
    ("choice", "cls", "text"),
    [
        (
            cli_model.ModelChoice("test", "test-model"),
            TestModel,
            "TestModel(model_id='test-model', reasoning=True)",
        ),
        (
            cli_model.ModelChoice("anthropic", "claude-x", None, "sk-secret"),
            AnthropicModel,
            "AnthropicModel(model='claude-x', base_url='https://api.anthropic.com')",
        ),
        (
            cli_model.ModelChoice("anthropic", "claude-x", "http://127.0.0.1:9/", ""),
            AnthropicModel,
            "AnthropicModel(model='claude-x', base_url='http://127.0.0.1:9')",
        ),
        (
            cli_model.ModelChoice("openai", "gpt-4o-mini", None, "sk-secret"),
            OpenAIChatModel,
            "OpenAIChatModel(model='gpt-4o-mini', base_url='https://api.openai.com/v1')",
        ),
        (
            cli_model.ModelChoice("openai", "llama3.2", "http://localhost:11434/v1", ""),
            OpenAIChatModel,
            "OpenAIChatModel(model='llama3.2', base_url='http://localhost:11434/v1')",
        ),
        (
            cli_model.ModelChoice("openai-responses", "gpt-5", None, "sk-secret"),
            OpenAIResponsesModel,
            "OpenAIResponsesModel(model='gpt-5', base_url='https://api.openai.com/v1')",
        ),
        (
            cli_model.ModelChoice("openai-responses", "gpt-oss", "http://127.0.0.1:9/v1", ""),
            OpenAIResponsesModel,
            "OpenAIResponsesModel(model='gpt-oss', base_url='http://127.0.0.1:9/v1')",
        ),
    ],
)
def test_build_model(choice: cli_model.ModelChoice, cls: type, text: str) -> None:
    model = cli_model.build_model(choice)
    assert type(model) is cls
    assert model.model_id == choice.model
    assert repr(model) == text
    assert "secret" not in repr(model)


def test_main_builds_the_chosen_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[cli_model.ModelChoice] = []
    monkeypatch.setenv("OPENAI_API_KEY", "ok")

    def fake_build(choice: cli_model.ModelChoice) -> agentcore.Model:
        built.append(choice)
        return ScriptedModel([[StreamPart.text_delta("hi"), finish(FinishReason.STOP)]])

    monkeypatch.setattr(cli, "build_model", fake_build)
    assert cli.main(["hello"]) == 0
    assert built == [cli_model.ModelChoice("openai", "gpt-4o-mini", None, "ok")]
    out, err = capsys.readouterr()
    assert out == "hi\n"
    assert "TestModel" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "anthropic:claude-x", "hi"],
            "agentcore: error: --model anthropic:claude-x needs the ANTHROPIC_API_KEY environment variable "
            "(or --base-url for a server that needs no key)",
        ),
        (
            ["--model", "openai:gpt-4o", "hi"],
            "agentcore: error: --model openai:gpt-4o needs the OPENAI_API_KEY environment variable "
            "(or --base-url for a server that needs no key)",
        ),
        (
            ["--model", "mistral:large", "hi"],
            "agentcore: error: --model must be anthropic:MODEL, openai:MODEL, openai-responses:MODEL, "
            "azure:DEPLOYMENT, azure-responses:DEPLOYMENT, gemini:MODEL, vertex:MODEL, "
            "vertex-anthropic:MODEL, bedrock:MODEL_ID, bedrock-anthropic:MODEL_ID or test, "
            "got 'mistral:large' "
            "(unknown provider 'mistral')",
        ),
        (
            ["--model", "gemini:gemini-2.5-flash", "hi"],
            "agentcore: error: --model gemini:gemini-2.5-flash needs the GOOGLE_API_KEY or GEMINI_API_KEY "
            "environment variable (or --base-url for a server that needs no key)",
        ),
        (
            ["--model", "anthropic:", "hi"],
            "agentcore: error: --model 'anthropic:' names no model; use anthropic:MODEL or just anthropic",
        ),
        (
            ["--base-url", "http://localhost:11434/v1", "hi"],
            "agentcore: error: --base-url needs --model anthropic:NAME or openai:NAME "
            "to say which API the server speaks",
        ),
        (["   "], "agentcore: error: the prompt is empty"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == message + "\n"


@pytest.mark.parametrize(
    "argv", [[], ["--max-steps", "0", "hi"], ["--max-steps", "x", "hi"], ["--bogus", "hi"]]
)
def test_argparse_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("usage: agentcore ")
    assert "agentcore: error: " in err


def test_version_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"agentcore {agentcore.__version__}\n"
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    words = ["--model", "--base-url", "--system", "--max-steps", "--json", "ANTHROPIC_API_KEY", "130"]
    words += ["--hide-reasoning", "--thinking-budget", "--no-thinking", "--reasoning-effort", "NO_COLOR"]
    for word in words:
        assert word in text


def test_a_bad_option_value_from_a_model_constructor_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(choice: cli_model.ModelChoice) -> agentcore.Model:
        raise agentcore.ConfigError("model must be a non-empty string")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "build_model", broken)
        assert cli.main(["--model", "openai:gpt-4o", "--base-url", "http://h/v1", "hi"]) == 2
    assert capsys.readouterr().err == "agentcore: error: model must be a non-empty string\n"


# --- run errors and interruption ---------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "line"),
    [
        (
            ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401),
            "agentcore: error: authentication failed: invalid x-api-key (HTTP 401)",
        ),
        (
            ModelError(ErrorClass.INVALID_REQUEST, message="bad\nrequest:  two lines", status=400),
            "agentcore: error: invalid request: bad request: two lines (HTTP 400)",
        ),
        (RuntimeError("boom"), "agentcore: error: RuntimeError: boom"),
        (RuntimeError(), "agentcore: error: RuntimeError"),
    ],
)
def test_run_error_exits_1_with_one_line(
    failure: BaseException, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli.main(["hi"], model=ScriptedModel([failure]))
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err == line + "\n"


def test_run_error_after_text_ends_the_text_line(capsys: pytest.CaptureFixture[str]) -> None:
    failure = ModelError(ErrorClass.UPSTREAM, message="stream broke")
    model = ScriptedModel([[StreamPart.text_delta("partial"), failure]])
    assert cli.main(["hi"], model=model) == 1
    out, err = capsys.readouterr()
    assert out == "partial\n"
    assert err == "agentcore: error: upstream error: stream broke\n"


def _blocking_step(
    started: threading.Event, seen: list[bool], text: str = ""
) -> Callable[[Request, Context], Iterator[StreamPart]]:
    """A step that yields ``text`` (if any), then blocks until its context is cancelled."""

    def step(request: Request, ctx: Context) -> Iterator[StreamPart]:
        if text:
            yield StreamPart.text_delta(text)
        started.set()
        ctx.wait(10)
        seen.append(ctx.cancelled)
        ctx.check()
        yield finish(FinishReason.STOP)

    return step


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs pthread_kill (POSIX)")
def test_sigint_exits_130_and_cancels_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    started = threading.Event()
    seen: list[bool] = []
    model = ScriptedModel([_blocking_step(started, seen)])
    main_thread = threading.main_thread().ident
    assert main_thread is not None
    assert threading.current_thread() is threading.main_thread()

    def interrupt() -> None:
        # Ctrl-C while the command waits for the run: the main thread sleeps in a
        # wait of cli.main (a signal that lands just before such a wait starts is
        # seen at its next time slice).
        if started.wait(5) and wait_until(lambda: asleep_in("MainThread", "agentcore/cli.py:main")):
            signal.pthread_kill(main_thread, signal.SIGINT)

    killer = threading.Thread(target=interrupt)
    killer.start()
    try:
        code = cli.main(["hi"], model=model)
    finally:
        killer.join()
    out, err = capsys.readouterr()
    assert code == 130
    assert out == ""
    assert err == "agentcore: interrupted\n"
    assert wait_for_threads("agentcore-stream") == 0
    assert seen == [True]


def test_keyboard_interrupt_in_the_reader_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    started = threading.Event()
    seen: list[bool] = []
    model = ScriptedModel([_blocking_step(started, seen, "thinking...")])
    original = RunReader.__next__
    calls = []

    def next_part(self: RunReader) -> StreamPart:
        calls.append(1)
        if len(calls) == 2:
            assert started.wait(5)
            raise KeyboardInterrupt
        return original(self)

    monkeypatch.setattr(RunReader, "__next__", next_part)
    assert cli.main(["--json", "hi"], model=model) == 130
    out, err = capsys.readouterr()
    assert [json.loads(line) for line in out.splitlines()] == [{"kind": "text-delta", "text": "thinking..."}]
    assert err == "agentcore: interrupted\n"
    assert wait_for_threads("agentcore-stream") == 0
    assert seen == [True]


def test_keyboard_interrupt_inside_a_tool_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    class Interrupting:
        definition = agentcore.ToolDefinition(name="calculator")

        def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
            raise KeyboardInterrupt

    model = ScriptedModel([[call("calculator", "{}"), finish(FinishReason.TOOL_CALLS)]])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cli, "demo_tools", lambda: [Interrupting()])
        assert cli.main(["hi"], model=model) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "agentcore: interrupted"


def test_argparse_writes_to_the_given_streams() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["--version"], stdout=out, stderr=err) == 0
    assert cli.main(["--bogus"], stdout=out, stderr=err) == 2
    assert out.getvalue() == f"agentcore {agentcore.__version__}\n"
    assert err.getvalue().startswith("usage: agentcore ")


def test_unencodable_output_is_escaped() -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    err = io.StringIO()
    model = ScriptedModel([[StreamPart.text_delta("pelican 🦅"), finish(FinishReason.STOP)]])
    assert cli.main(["hi"], model=model, stdout=out, stderr=err) == 0
    out.flush()
    assert raw.getvalue() == b"pelican \\U0001f985\n"
    assert err.getvalue().startswith("finish: stop")


def test_main_module_runs_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    monkeypatch.setattr(sys, "argv", ["agentcore", "--version"])
    with pytest.raises(SystemExit) as info:
        runpy.run_module("agentcore", run_name="__main__")
    assert info.value.code == 0
    assert capsys.readouterr().out == f"agentcore {agentcore.__version__}\n"


# --- outputs and inputs a user's shell can hand over --------------------------------------------


class FullDisk(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_an_output_that_cannot_be_written_is_one_error_line() -> None:
    err = io.StringIO()
    code = cli.main(["--model", "test", "hi"], stdout=FullDisk(), stderr=err, env={})
    assert code == 1
    assert err.getvalue().splitlines()[-1] == (
        "agentcore: error: cannot write the output: [Errno 28] No space left on device"
    )


def test_a_closed_stdout_is_treated_as_the_null_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", None)
    err = io.StringIO()
    assert cli.main(["--model", "test", "hi"], stderr=err, env={}) == 0
    assert err.getvalue().splitlines()[-1].startswith("finish: stop")


def test_a_prompt_that_is_not_utf8_is_a_usage_error() -> None:
    err = io.StringIO()
    code = cli.main(["--model", "test", "caf\udce9"], stdout=io.StringIO(), stderr=err, env={})
    assert code == 2
    assert err.getvalue() == "agentcore: error: the prompt is not valid UTF-8 text\n"


def test_a_system_prompt_that_is_not_utf8_is_a_usage_error() -> None:
    err = io.StringIO()
    code = cli.main(
        ["--model", "test", "--system", "caf\udce9", "hi"], stdout=io.StringIO(), stderr=err, env={}
    )
    assert code == 2
    assert err.getvalue() == "agentcore: error: the --system text is not valid UTF-8 text\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--model", "openai:x", "--base-url", "notaurl", "hi"],
            "agentcore: error: base_url must be an http:// or https:// URL with a host, got 'notaurl'\n",
        ),
        (
            ["--model", "test", "--base-url", "http://127.0.0.1:9", "hi"],
            "agentcore: error: --base-url does not apply to the offline test model\n",
        ),
        (
            ["--model", "openai:x", "--base-url", "http://127.0.0.1:99999/v1", "hi"],
            "agentcore: error: base_url must be an http:// or https:// URL with a host, "
            "got 'http://127.0.0.1:99999/v1': Port out of range 0-65535\n",
        ),
        (
            ["--model", "anthropic", "--base-url", "http://[::1", "hi"],
            "agentcore: error: base_url must be an http:// or https:// URL with a host, "
            "got 'http://[::1': Invalid IPv6 URL\n",
        ),
        (
            ["--model", "anthropic", "--base-url", "http://:80/v1", "hi"],
            "agentcore: error: base_url must be an http:// or https:// URL with a host, got 'http://:80/v1'\n",
        ),
        (
            ["--model", "openai:x", "--base-url", "http://127.0.0.1:8/v1?x=1", "hi"],
            "agentcore: error: base_url must not have a query or fragment (agentcore appends the API "
            "path), got 'http://127.0.0.1:8/v1?x=1'\n",
        ),
    ],
)
def test_bad_base_urls_are_usage_errors(argv: list[str], message: str) -> None:
    err = io.StringIO()
    assert cli.main(argv, stdout=io.StringIO(), stderr=err, env={}) == 2
    assert err.getvalue() == message


def test_the_entry_point_exits_with_the_commands_interrupted_status() -> None:
    # agentcore_command cannot import it: it runs before the package is imported.
    assert agentcore_command.EXIT_INTERRUPTED == cli.EXIT_INTERRUPTED == 130
