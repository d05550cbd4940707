"""A 100-step tool loop against a server that enforces a context window
(tests/window_server.py: it counts each prompt by a fixed rule, reports the
count as the step's usage and answers the provider's real context-length
error above the window), for each adapter: it finishes under each shipped
policy that edits the history, and fails with the provider's error
without one; with a policy whose trigger is never reached, each refusal is
cut and retried once (issue 23 item 6; docs/long-runs.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentcore import ErrorClass, LoopOptions, Model, ModelError, RunError, generate, user_message
from agentcore.compaction import ClearOldToolResults, HistoryPolicy, SlidingWindow, Summarize
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.transport.memory import MemoryTransport
from tests.loop_helpers import FuncTool
from tests.window_server import APIS, WindowServer

WINDOW = 12_000
"""The server's context window, in its tokens."""
STEPS = 100
PAGE = "lorem ipsum dolor sit amet " * 80
"""What each ``fetch`` returns: 2,160 characters, about 550 of the server's tokens."""

POLICIES: dict[str, Callable[[Model], HistoryPolicy]] = {
    "clear-tool-results": lambda model: ClearOldToolResults(keep_last=3),
    "sliding-window": lambda model: SlidingWindow(max_tokens=2 / 3),
    "summarize": lambda model: Summarize(model, trigger_tokens=8_000, keep_last=6),
}
"""Each shipped policy that edits the history, as the tests set it up
(``ProviderCompaction`` edits none: the server compaction tests cover it)."""


def model_for(api: str, server: WindowServer) -> Model:
    transport = MemoryTransport(respond=server.respond)
    key, window = "sk-window-0000", WINDOW  # the window the policies' shares are of
    if api == "anthropic":
        return AnthropicModel("claude-window", api_key=key, transport=transport, context_window=window)
    if api == "chat":
        return OpenAIChatModel("gpt-window", api_key=key, transport=transport, context_window=window)
    return OpenAIResponsesModel("gpt-window", api_key=key, transport=transport, context_window=window)


def options(model: Model, policy: HistoryPolicy | None) -> LoopOptions:
    fetch = FuncTool(
        "fetch",
        lambda arguments, _ctx: f"page {arguments.get('page')}: {PAGE}",
        schema='{"type":"object","properties":{"page":{"type":"integer"}}}',
    )
    return LoopOptions(
        model=model,
        messages=[user_message("Fetch every page and tell me when you are done.")],
        system="You fetch pages.",
        tools=[fetch],
        step_limit=STEPS,
        history_policy=policy,
        retry_base_delay=0,
    )


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_a_100_step_loop_finishes_under_each_policy(api: str, name: str) -> None:
    server = WindowServer(api, WINDOW, STEPS)
    model = model_for(api, server)
    result = generate(options(model, POLICIES[name](model)))
    assert result.text == "All pages fetched."
    assert len(result.steps) == STEPS
    assert server.refused == 0  # each policy kept every prompt inside the window
    assert max(server.prompts) <= WINDOW
    # One count call, at the first step, where the API can count (Chat Completions cannot).
    assert server.counts == ([] if api == "chat" else [server.prompts[0]])
    assert sum(server.prompts[:5]) < sum(server.prompts[-5:])  # the history did grow
    full = result.full_messages
    assert len(full) == 1 + 2 * (STEPS - 1) + 1  # nothing is lost from the full history
    assert [message.tool_results[0].tool_call_id for message in full[2::2][: STEPS - 1]] == [
        f"call_{n}" for n in range(1, STEPS)
    ]
    assert len(result.messages) < len(full) or name == "clear-tool-results"
    if name == "summarize":
        assert server.summaries == sum(len(step.compactions) for step in result.steps) > 0


@pytest.mark.parametrize("api", APIS)
def test_without_a_policy_the_run_fails_with_the_providers_error(api: str) -> None:
    server = WindowServer(api, WINDOW, STEPS)
    with pytest.raises(RunError) as failure:
        generate(options(model_for(api, server), None))
    err = failure.value.err
    assert isinstance(err, ModelError)
    assert err.error_class is ErrorClass.CONTEXT_LENGTH
    expected: dict[str, Any] = {
        "anthropic": f"tokens > {WINDOW} maximum",
        "chat": f"This model's maximum context length is {WINDOW} tokens",
        "responses": "Your input exceeds the context window of this model",
    }
    assert expected[api] in err.message
    assert server.refused == 1  # not retried: the error is terminal
    assert 15 < server.step < STEPS


@pytest.mark.parametrize("api", APIS)
def test_a_policy_that_never_triggers_cuts_each_refusal_once(api: str) -> None:
    server = WindowServer(api, WINDOW, STEPS)
    result = generate(options(model_for(api, server), SlidingWindow(max_tokens=10**9)))
    assert result.text == "All pages fetched."
    refusals = [c for step in result.steps for c in step.compactions]
    assert refusals
    assert all(c.refused for c in refusals)
    assert server.refused == len(refusals)  # each refusal cut once, then the retry went through
    assert all(len(step.compactions) <= 1 for step in result.steps)
