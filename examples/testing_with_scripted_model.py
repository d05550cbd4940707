"""How to unit-test your own agent code with agentcore's test doubles.

    python -m pytest examples/testing_with_scripted_model.py

``ScriptedModel`` replays canned model steps, so a test decides exactly what
"the model" says (a tool call, then an answer; an error) and then checks what
your code did with it, including what your code sent back to the model
(``model.requests``). ``TestModel`` needs no script: it calls every tool once
with arguments made from the tool's schema and answers from the results, which
makes a good smoke test. Neither touches the network.

The first part of this file is the "code under test", which in a real project
lives in your own package; the tests follow.
"""

from __future__ import annotations

import pytest

from agentcore import (
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Model,
    ModelError,
    Request,
    RunError,
    RunResult,
    StreamPart,
    ToolCall,
    Usage,
    generate,
    tool,
    user_message,
)
from agentcore.testing import ScriptedModel, TestModel

# --- the code under test ------------------------------------------------------

ORDERS = {"A-1001": "shipped", "A-1002": "waiting for stock"}


@tool
def order_status(order_id: str) -> str:
    """Look up the delivery status of an order.

    Args:
        order_id: the order number, e.g. "A-1001".
    """
    return ORDERS.get(order_id, "unknown order")


def answer(question: str, model: Model, ctx: Context | None = None) -> RunResult:
    """The function a support bot calls for each question."""
    options = LoopOptions(
        model=model,
        system="You answer questions about orders. Use the order_status tool.",
        messages=[user_message(question)],
        tools=[order_status],
        step_limit=4,
        retry_base_delay=0.01,  # keep the retry test fast (seconds)
    )
    return generate(options, ctx)


# --- the tests ------------------------------------------------------------------


def tool_call_step(call_id: str, name: str, arguments: str) -> list[StreamPart]:
    """One model step that asks for one tool call."""
    return [
        StreamPart.tool_call_event(ToolCall(id=call_id, name=name, input=arguments)),
        StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=120, output=20)),
    ]


def text_step(text: str) -> list[StreamPart]:
    """One model step that answers with text (streamed in two pieces)."""
    half = len(text) // 2
    return [
        StreamPart.text_delta(text[:half]),
        StreamPart.text_delta(text[half:]),
        StreamPart.step_finish(FinishReason.STOP, Usage(input=160, output=12, cache_read=100)),
    ]


def test_a_tool_call_then_the_answer() -> None:
    model = ScriptedModel(
        [
            tool_call_step("call_1", "order_status", '{"order_id": "A-1001"}'),
            text_step("Order A-1001 has shipped."),
        ]
    )

    result = answer("Where is my order A-1001?", model)

    # What the caller gets.
    assert result.text == "Order A-1001 has shipped."
    assert result.finish_reason is FinishReason.STOP
    assert [step.finish_reason for step in result.steps] == [FinishReason.TOOL_CALLS, FinishReason.STOP]
    # Usage is summed over the steps, cache fields included.
    assert result.usage == Usage(input=280, output=32, cache_read=100)

    # What the model was sent: step 1 the question and the tool, step 2 also the tool's result.
    assert len(model.requests) == 2
    first = model.requests[0]
    assert first.system.startswith("You answer questions about orders")
    assert [t.name for t in first.tools] == ["order_status"]
    tool_message = model.requests[1].messages[-1]
    [tool_result] = tool_message.tool_results
    assert tool_result.tool_call_id == "call_1"
    assert tool_result.content == "shipped"
    assert not tool_result.is_error

    # The history is ready to continue the conversation: user, assistant (the call), tool, assistant.
    assert [m.role.value for m in result.messages] == ["user", "assistant", "tool", "assistant"]


def test_bad_arguments_are_fed_back_to_the_model() -> None:
    model = ScriptedModel(
        [
            tool_call_step("call_1", "order_status", '{"order": "A-1001"}'),  # wrong argument name
            text_step("Which order do you mean?"),
        ]
    )

    result = answer("Where is my order?", model)

    [tool_result] = model.requests[1].messages[-1].tool_results
    assert tool_result.is_error
    assert "order_id" in tool_result.content  # the message tells the model what was wrong
    assert result.text == "Which order do you mean?"


def test_a_model_error_ends_the_run_with_run_error() -> None:
    model = ScriptedModel([ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401)])

    with pytest.raises(RunError) as info:
        answer("Where is my order A-1001?", model)

    error = info.value
    assert error.finish_reason is FinishReason.ERROR
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.AUTH
    assert error.err.status == 401
    assert str(error) == "run error: authentication failed: invalid x-api-key (HTTP 401)"
    assert error.usage == Usage()  # no step completed, so nothing was billed
    assert len(model.requests) == 1  # AUTH is not retried


def test_an_error_after_a_step_keeps_that_steps_usage_and_history() -> None:
    model = ScriptedModel(
        [
            tool_call_step("call_1", "order_status", '{"order_id": "A-1002"}'),
            ModelError(ErrorClass.UPSTREAM, message="internal error", status=500),
        ]
    )

    with pytest.raises(RunError) as info:
        answer("Where is my order A-1002?", model)

    assert info.value.usage == Usage(input=120, output=20)
    # The history up to the failure holds the call and its result: valid to send again.
    assert [m.role.value for m in info.value.messages] == ["user", "assistant", "tool"]


def test_a_retryable_error_is_retried() -> None:
    model = ScriptedModel(
        [
            ModelError(ErrorClass.OVERLOADED, message="overloaded", status=529),
            text_step("Hello again."),
        ]
    )

    result = answer("Hello?", model)

    assert result.text == "Hello again."
    assert len(model.requests) == 2  # the failed attempt and the retry


def test_a_deadline_cancels_the_run() -> None:
    def never_answers(request: Request, ctx: Context) -> list[StreamPart]:
        ctx.wait()  # a model that waits until the run is cancelled
        ctx.check()  # raises the context's Canceled (here DeadlineExceeded)
        return []

    with pytest.raises(RunError) as info:
        answer("Hello?", ScriptedModel([never_answers]), Context(timeout=0.05))

    assert info.value.finish_reason is FinishReason.CANCELED


def test_smoke_with_the_offline_test_model() -> None:
    result = answer("Where is my order?", TestModel())

    assert result.finish_reason is FinishReason.STOP
    assert "order_status returned" in result.text
    assert result.usage.input > 0
    assert result.usage.output > 0


def test_the_tool_itself_is_still_a_plain_function() -> None:
    assert order_status("A-1002") == "waiting for stock"
    assert order_status.definition.name == "order_status"
