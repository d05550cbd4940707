"""The run engine carries the caller's contextvars into its threads (agentcore/engine/channel.py
start_worker, agentcore/engine/loop.py tool calls): a tracing span or a workflow context set by
the caller is seen by the model and by every tool, and what a tool sets stays its own."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import Any

import pytest

from agentcore import Context, Request, StreamPart, run
from agentcore.testing import ScriptedModel
from tests.loop_helpers import FuncTool, call, collect, options, text_step, tool_step

CALLER = contextvars.ContextVar("CALLER", default="unset")


class Seeing(ScriptedModel):
    """A ScriptedModel that records the caller's variable on every request."""

    def __init__(self, steps: list[list[StreamPart]]) -> None:
        super().__init__(steps)
        self.seen: list[str] = []

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        self.seen.append(CALLER.get())
        return super().stream(request, ctx)


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "one-by-one"])
def test_the_model_and_every_tool_see_the_callers_context_and_tools_do_not_leak(parallel: bool) -> None:
    seen_by_tools: list[str] = []

    def look(_arguments: dict[str, Any], _ctx: Context) -> str:
        seen_by_tools.append(CALLER.get())
        CALLER.set("set by a tool")
        return "ok"

    model = Seeing([tool_step(call("call_1", "look"), call("call_2", "look")), text_step("done")])
    token = CALLER.set("request 42")
    try:
        reader = run(options(model, tools=[FuncTool("look", look)], parallel_tools=parallel))
    finally:
        CALLER.reset(token)
    collect(reader)
    assert reader.result().text == "done"
    assert seen_by_tools == ["request 42", "request 42"]
    assert model.seen == ["request 42", "request 42"]
    assert CALLER.get() == "unset"
