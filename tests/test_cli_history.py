"""The command's history policies (issue 23 item 5): ``--history-policy``
with the shipped policies' short forms, ``--context-window``, the line on
standard error when a policy or the provider's compaction acted, and the
``compaction`` object of ``--json`` (docs/cli.md, "Long runs")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcore import Compaction, FinishReason, Request, StreamPart, ToolCall, Usage, cli
from agentcore.compaction import ClearOldToolResults, ProviderCompaction, SlidingWindow, Summarize
from agentcore.integrations.cli_model import ModelChoice, build_model
from agentcore.integrations.cli_output import compaction_text
from agentcore.model import window_of
from agentcore.testing import ScriptedModel, TestModel
from agentcore.tokens import estimate_tokens
from agentcore.types import ProviderItem
from tests.conftest import FIXTURES
from tests.localserver import LocalServer, json_reply, sse_reply
from tests.loop_helpers import FuncTool


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("specs", "window", "expected"),
    [
        (["clear-tool-results"], None, [ClearOldToolResults()]),
        (["clear-tool-results:5"], None, [ClearOldToolResults(keep_last=5)]),
        (["window:30000"], None, [SlidingWindow(max_tokens=30_000)]),
        (["window:0.5"], 10_000, [SlidingWindow(max_tokens=5_000)]),
        (["window"], 10_000, [SlidingWindow(max_tokens=8_000)]),
        (["provider:150000"], None, [ProviderCompaction(trigger_tokens=150_000)]),
        (
            ["clear-tool-results:2", "window:9000"],
            None,
            [ClearOldToolResults(keep_last=2), SlidingWindow(max_tokens=9_000)],
        ),
    ],
)
def test_the_short_forms(specs: list[str], window: int | None, expected: list[Any]) -> None:
    assert cli.build_policies(specs, TestModel(), window) == expected


def test_summarize_writes_with_the_runs_model() -> None:
    model = TestModel()
    [policy] = cli.build_policies(["summarize:0.6:4"], model, 50_000)
    assert policy == Summarize(model, trigger_tokens=30_000, keep_last=4)
    [default] = cli.build_policies(["summarize"], model, 50_000)
    assert default == Summarize(model, trigger_tokens=40_000)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--history-policy", "trim:3"],
            "agentcore: error: --history-policy 'trim:3' is not one of clear-tool-results[:KEEP], "
            "window[:MAX], summarize[:TRIGGER[:KEEP]] or provider:TRIGGER",
        ),
        (
            ["--history-policy", "window:lots"],
            "agentcore: error: --history-policy window:lots: 'lots' is not a number of tokens or a share",
        ),
        (
            ["--history-policy", "clear-tool-results:0.5", "--context-window", "100"],
            "agentcore: error: --history-policy 'clear-tool-results:0.5' is not one of",
        ),
        (
            ["--history-policy", "window:0.8"],
            "agentcore: error: --history-policy window:0.8: 0.8 is a share of the context window, which is "
            "not known for test-model: give --context-window N, or a number of tokens",
        ),
        (
            ["--history-policy", "window:0"],
            "agentcore: error: SlidingWindow.max_tokens must be a number of tokens",
        ),
        (  # a share above 1 is refused as the policy refuses it, --context-window or not
            ["--history-policy", "window:1.5", "--context-window", "8000"],
            "agentcore: error: SlidingWindow.max_tokens must be a number of tokens (an int >= 1) or a share "
            "of the context window (a float in (0, 1]), got 1.5",
        ),
        (
            ["--history-policy", "summarize:2.0", "--context-window", "8000"],
            "agentcore: error: Summarize.trigger_tokens must be a number of tokens (an int >= 1) or a share "
            "of the context window (a float in (0, 1]), got 2.0",
        ),
        (
            ["--history-policy", "window:0.0", "--context-window", "8000"],
            "agentcore: error: SlidingWindow.max_tokens must be a number of tokens (an int >= 1) or a share "
            "of the context window (a float in (0, 1]), got 0.0",
        ),
    ],
)
def test_a_spec_that_cannot_be_read_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main([*argv, "hi"]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.splitlines()[-1].startswith(message)


def fetching(steps: int) -> ScriptedModel:
    """Calls ``fetch`` ``steps`` times, then answers; each step reports what it was sent, by the estimate."""

    def step(number: int) -> Any:
        def answer(request: Request) -> list[StreamPart]:
            usage = Usage(input=estimate_tokens(request.messages, system=request.system, tools=request.tools))
            if number == steps:
                return [StreamPart.text_delta("done"), StreamPart.step_finish(FinishReason.STOP, usage)]
            call = ToolCall(f"c{number}", "fetch", "{}")
            return [StreamPart.tool_call_event(call), StreamPart.step_finish(FinishReason.TOOL_CALLS, usage)]

        return answer

    return ScriptedModel([step(n) for n in range(steps + 1)])


FETCH = FuncTool("fetch", lambda arguments, _ctx: "y" * 900)


def test_a_line_on_stderr_each_time_a_policy_acted(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--history-policy", "clear-tool-results:1", "--history-policy", "window:700", "go"]
    assert cli.main(argv, model=fetching(3), tools=[FETCH]) == cli.EXIT_OK
    out, err = capsys.readouterr()
    assert out == "done\n"
    notes = [line for line in err.splitlines() if line.startswith("compaction:")]
    # Before steps 3 and 4: the older of two 900-character results cleared (about 290
    # tokens by the estimate), then the turn that held it dropped to get under 700.
    cleared = "compaction: before step {} · ClearOldToolResults rewrote 1 of 5 messages · 995 → 707 tokens"
    cleared += " (estimated)"
    dropped = (
        "compaction: before step {} · SlidingWindow removed 2 of 5 messages · 707 → 681 tokens (estimated)"
    )
    assert notes == [cleared.format(3), dropped.format(3), cleared.format(4), dropped.format(4)]


def test_json_carries_the_compaction_object(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--json", "--history-policy", "window:700", "go"]
    assert cli.main(argv, model=fetching(3), tools=[FETCH]) == cli.EXIT_OK
    out, err = capsys.readouterr()
    parts = [json.loads(line) for line in out.splitlines()]
    compactions = [part["compaction"] for part in parts if part["kind"] == "compaction"]
    assert compactions == [
        {
            "policy": "SlidingWindow",
            "removed": removed,
            "messages_before": 5,
            "messages_after": 3,
            "tokens_before": 995,
            "tokens_after": 681,
            "summary": "",
            "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0},
            "refused": False,
        }
        for removed in ([1, 2], [3, 4])
    ]
    assert "compaction:" not in err
    kinds = [part["kind"] for part in parts]
    assert kinds[kinds.index("compaction") - 1 : kinds.index("compaction") + 2] == [
        "tool-result",
        "compaction",
        "tool-call",
    ]


def test_a_line_when_the_provider_compacted(capsys: pytest.CaptureFixture[str]) -> None:
    item = ProviderItem(
        "compaction", '{"type": "compaction", "content": "earlier"}', "anthropic", "host", "x"
    )
    model = ScriptedModel(
        [
            [
                StreamPart.provider_item_event(item),
                StreamPart.text_delta("ok"),
                StreamPart.step_finish(FinishReason.STOP),
            ]
        ]
    )
    assert cli.main(["go"], model=model, tools=[]) == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "compaction: the provider compacted the context in step 1\n" in err


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-responses"])
def test_the_context_window_given_reaches_the_adapter(provider: str) -> None:
    # window_of: the window the loop gives the policies and the refusal fallback.
    assert window_of(build_model(ModelChoice(provider, "my-model", None, "k", context_window=8_000))) == 8_000
    assert window_of(build_model(ModelChoice(provider, "my-model", None, "k"))) is None  # not in the table


def test_the_offline_model_takes_no_context_window() -> None:
    model = build_model(ModelChoice("test", "test-model", context_window=8_000))
    assert isinstance(model, TestModel)
    assert window_of(model) is None


def test_a_refusal_that_names_no_size_is_taken_at_the_window_given(
    server: LocalServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two steps of tool calls, then a 413 (about bytes: no token count in it), then the answer.
    # The refused prompt counts as the window given plus one, so the model must have got it.
    calls = (FIXTURES / "anthropic" / "parallel_tools_empty_args.sse").read_bytes()
    answer = (FIXTURES / "anthropic" / "text_after_tool_result_emoji.sse").read_bytes()
    too_large = {
        "type": "error",
        "error": {
            "type": "request_too_large",
            "message": "Request exceeds the maximum allowed number of bytes",
        },
    }
    counted = json_reply(200, {"input_tokens": 40})  # the count at the first step
    server.add(counted, sse_reply(calls), sse_reply(calls), json_reply(413, too_large), sse_reply(answer))
    argv = ["--json", "--model", "anthropic:claude-x", "--base-url", server.url]
    argv += ["--context-window", "8000", "--history-policy", "window", "go"]
    assert cli.main(argv, env={"ANTHROPIC_API_KEY": "test-key"}) == cli.EXIT_OK
    parts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [compaction] = [part["compaction"] for part in parts if part["kind"] == "compaction"]
    assert (compaction["policy"], compaction["refused"], compaction["removed"]) == (
        "SlidingWindow",
        True,
        [1, 2],
    )
    assert compaction["tokens_before"] == 8_001
    assert [request["path"] for request in server.requests] == ["/v1/messages/count_tokens"] + [
        "/v1/messages"
    ] * 4
    assert [len(request["body"]["messages"]) for request in server.requests] == [1, 1, 3, 5, 3]


def test_a_line_for_a_policy_that_changed_nothing_but_cost_usage() -> None:
    unchanged = Compaction("Summarize", (), 5, 5, 1_204, 1_204, "", Usage(input=80, output=1))
    assert compaction_text(3, unchanged) == (
        "compaction: before step 3 · Summarize changed no message · "
        "usage: input 80, output 1, cache read 0, cache write 0"
    )
    refused = Compaction("Summarize", (), 5, 5, 9_001, 9_001, "", Usage(input=80, output=1), refused=True)
    assert compaction_text(4, refused).endswith(
        "Summarize changed no message · usage: input 80, output 1, cache read 0, cache write 0 · "
        "after the provider refused the prompt as too long"
    )
