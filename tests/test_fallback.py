"""FallbackModel (docs/controls.md, "Fallback models"; design.md, "Fallback models").

The rules, each checked below: a step goes to the next model once the
failing model's retries (loop rule 7) are spent, for the error classes named
(429, 529/503, transient faults, and context length only towards a larger
window); never once a part of the step reached the reader; each step starts
at the primary; the step says which model answered (``StepResult.model_id``,
the ``step-finish`` part, a durable run's records); usage is counted per
model. The HTTP cases run real adapters against the local server, each
adapter once as the primary and once as the fallback; the retry waits are
recorded through ``retry_sleep``, never slept.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    DEFAULT_FALLBACK_ON,
    ConfigError,
    Context,
    ErrorClass,
    FallbackModel,
    FinishReason,
    LoopOptions,
    Model,
    ModelError,
    RunError,
    StepPlan,
    StreamPart,
    StreamPartKind,
    ToolCall,
    Usage,
    generate,
    run,
    tool,
    user_message,
)
from agentcore.durable import RunState, SQLiteCheckpoints, StepRecord
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.bedrock import BedrockConverseModel
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.result import StepResult
from agentcore.testing import ScriptedModel
from agentcore.types import Request
from tests import bedrock_server
from tests.localserver import Close, LocalServer, Reply, Reset, json_reply
from tests.loop_helpers import assert_valid_history, text_step, tool_step

FIXTURES = Path(__file__).parent / "fixtures"
OVERLOADED = ModelError(ErrorClass.OVERLOADED, status=529, message="Overloaded")
RATE_LIMITED = ModelError(ErrorClass.RATE_LIMITED, status=429, message="slow down")
TRANSIENT = ModelError(ErrorClass.TRANSIENT, message="connection reset")
AUTH = ModelError(ErrorClass.AUTH, status=401, message="bad key")
TOO_LONG = ModelError(ErrorClass.CONTEXT_LENGTH, status=400, message="prompt is too long")
GO = [user_message("Go.")]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class Windowed(ScriptedModel):
    """A scripted model with a context window (as the adapters' ``context_window``)."""

    def __init__(self, steps: list[Any], *, model_id: str, window: int | None) -> None:
        super().__init__(steps, model_id=model_id)
        self.context_window = window


def options(model: Model, waits: list[float] | None = None, **kwargs: Any) -> LoopOptions:
    """Two retries whose waits are recorded in ``waits``, not slept."""
    kwargs.setdefault("max_retries", 2)
    kwargs.setdefault("retry_sleep", (waits if waits is not None else []).append)
    return LoopOptions(
        model=model, messages=kwargs.pop("messages", GO), retry_jitter=lambda low, high: 1.0, **kwargs
    )


# --- construction and the primary's face ---------------------------------------------


def test_the_default_classes_are_rate_limits_overload_transient_faults_and_context_length() -> None:
    classes = {
        ErrorClass.RATE_LIMITED,
        ErrorClass.OVERLOADED,
        ErrorClass.TRANSIENT,
        ErrorClass.CONTEXT_LENGTH,
    }
    assert classes == DEFAULT_FALLBACK_ON
    assert FallbackModel(ScriptedModel([]), ScriptedModel([])).fallback_on == DEFAULT_FALLBACK_ON


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((ScriptedModel([]),), {}, r"^FallbackModel needs at least one model to fall back to"),
        ((ScriptedModel([]), "gpt-4o"), {}, r"^FallbackModel's model 1 must be a Model .*got str$"),
        ((object(), ScriptedModel([])), {}, r"^FallbackModel's model 0 must be a Model .*got object$"),
        (
            (ScriptedModel([]), ScriptedModel([])),
            {"fallback_on": ErrorClass.OVERLOADED},
            r"^fallback_on must be an iterable of ErrorClass members, got ErrorClass$",
        ),
        (
            (ScriptedModel([]), ScriptedModel([])),
            {"fallback_on": "overloaded"},
            r"^fallback_on must be an iterable of ErrorClass members, got str$",
        ),
        (
            (ScriptedModel([]), ScriptedModel([])),
            {"fallback_on": [ErrorClass.OVERLOADED, 529]},
            r"^fallback_on holds 529, not an ErrorClass member$",
        ),
    ],
)
def test_a_mistake_in_the_models_or_the_classes_is_a_config_error(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        FallbackModel(*args, **kwargs)


def test_model_id_context_window_and_count_tokens_are_the_primarys() -> None:
    primary = AnthropicModel("claude-sonnet-4-5", api_key="k", context_window=150_000)
    chain = FallbackModel(primary, OpenAIChatModel("gpt-4.1", api_key="k"))
    assert isinstance(chain, Model)
    assert chain.model_id == "claude-sonnet-4-5"
    assert chain.context_window == 150_000
    assert chain.count_tokens == primary.count_tokens
    assert FallbackModel(ScriptedModel([], model_id="claude-opus-4-5"), primary).context_window == 200_000
    assert FallbackModel(ScriptedModel([]), primary).count_tokens is None
    assert repr(chain) == (
        "FallbackModel(AnthropicModel(model='claude-sonnet-4-5', base_url='https://api.anthropic.com'), "
        "OpenAIChatModel(model='gpt-4.1', base_url='https://api.openai.com/v1'))"
    )


@pytest.mark.parametrize(
    ("err", "index", "expected"),
    [
        (OVERLOADED, 0, 1),
        (RATE_LIMITED, 1, 2),
        (TRANSIENT, 0, 1),
        (OVERLOADED, 2, None),  # no model left
        (AUTH, 0, None),  # not a class it falls back on
        (ModelError(ErrorClass.UPSTREAM, status=500), 0, None),
        (ModelError(ErrorClass.INVALID_REQUEST, status=400), 0, None),
        (TOO_LONG, 0, 2),  # the 128k model is passed over for the 1M one
        (TOO_LONG, 2, None),
    ],
)
def test_the_next_model_by_error_class_and_window(err: ModelError, index: int, expected: int | None) -> None:
    chain = FallbackModel(
        Windowed([], model_id="a", window=200_000),
        Windowed([], model_id="b", window=128_000),
        Windowed([], model_id="c", window=1_000_000),
    )
    assert chain.next_model(err, index) == expected


def test_context_length_falls_back_to_none_when_a_window_is_unknown() -> None:
    unknown_first = FallbackModel(
        Windowed([], model_id="a", window=None), Windowed([], model_id="b", window=10**6)
    )
    assert unknown_first.next_model(TOO_LONG, 0) is None
    unknown_next = FallbackModel(
        Windowed([], model_id="a", window=8_000), Windowed([], model_id="b", window=None)
    )
    assert unknown_next.next_model(TOO_LONG, 0) is None


def test_only_the_classes_named_fall_back() -> None:
    chain = FallbackModel(ScriptedModel([]), ScriptedModel([]), fallback_on=[ErrorClass.AUTH])
    assert chain.next_model(AUTH, 0) == 1
    assert chain.next_model(OVERLOADED, 0) is None


# --- in a run: retries first, then the next model ------------------------------------


def test_an_overloaded_primary_gets_its_retries_then_the_fallback_answers() -> None:
    primary = ScriptedModel([OVERLOADED] * 3, model_id="primary")
    fallback = ScriptedModel([text_step("hello", usage=Usage(7, 2))], model_id="fallback")
    waits: list[float] = []
    reader = run(options(FallbackModel(primary, fallback), waits))
    parts = list(reader)
    result = reader.result()
    assert len(primary.requests) == 3  # the first attempt and max_retries=2
    assert waits == [0.5, 1.0]  # the run's backoff, before the fallback (none after)
    assert len(fallback.requests) == 1
    assert fallback.requests[0] == primary.requests[0]  # the same request
    assert result.text == "hello"
    assert result.steps[0].model_id == "fallback"
    finish = next(part for part in parts if part.kind is StreamPartKind.STEP_FINISH)
    assert finish.model_id == "fallback"
    assert result.usage_by_model == {"fallback": Usage(7, 2)}


@tool
def lookup() -> str:
    """Look it up."""
    return "found"


def test_each_step_starts_at_the_primary_and_usage_is_counted_per_model() -> None:
    call = StreamPart.tool_call_event(ToolCall("c1", "lookup", "{}"))
    primary = ScriptedModel(
        [
            tool_step(call, usage=Usage(10, 1)),
            RATE_LIMITED,
            RATE_LIMITED,
            text_step("back", usage=Usage(40, 2)),
        ],
        model_id="primary",
    )
    fallback = ScriptedModel(
        [tool_step(call, usage=Usage(20, 3))],
        model_id="fallback",
    )
    result = generate(options(FallbackModel(primary, fallback), max_retries=1, tools=[lookup]))
    assert [step.model_id for step in result.steps] == ["primary", "fallback", "primary"]
    assert len(primary.requests) == 4
    assert result.usage_by_model == {"primary": Usage(50, 3), "fallback": Usage(20, 3)}
    assert result.usage == Usage(70, 6)
    assert result.text == "back"
    assert_valid_history(result.messages)


def test_a_retry_after_above_the_limit_falls_back_at_once() -> None:
    primary = ScriptedModel(
        [ModelError(ErrorClass.RATE_LIMITED, status=429, retry_after=120.0)], model_id="primary"
    )
    fallback = ScriptedModel([text_step("now")], model_id="fallback")
    waits: list[float] = []
    result = generate(options(FallbackModel(primary, fallback), waits, retry_after_limit=10.0))
    assert waits == []
    assert len(primary.requests) == 1
    assert result.steps[0].model_id == "fallback"


def test_a_failure_after_output_never_falls_back() -> None:
    primary = ScriptedModel([[StreamPart.text_delta("Hel"), OVERLOADED]], model_id="primary")
    fallback = ScriptedModel([text_step("hello")], model_id="fallback")
    reader = run(options(FallbackModel(primary, fallback)))
    parts = list(reader)
    with pytest.raises(RunError) as info:
        reader.result()
    assert info.value.err is OVERLOADED
    assert fallback.requests == []
    assert len(primary.requests) == 1
    assert [part.text for part in parts if part.kind is StreamPartKind.TEXT_DELTA] == ["Hel"]


def test_the_last_models_error_ends_the_run_when_every_model_fails() -> None:
    primary = ScriptedModel([OVERLOADED] * 2, model_id="primary")
    last = ModelError(ErrorClass.RATE_LIMITED, status=429, message="the fallback is busy too")
    fallback = ScriptedModel([last] * 2, model_id="fallback")
    with pytest.raises(RunError) as info:
        generate(options(FallbackModel(primary, fallback), max_retries=1))
    assert info.value.err is last
    assert (len(primary.requests), len(fallback.requests)) == (2, 2)


def test_a_class_not_named_ends_the_run_without_a_fallback() -> None:
    primary = ScriptedModel([AUTH], model_id="primary")
    fallback = ScriptedModel([text_step("hello")], model_id="fallback")
    with pytest.raises(RunError) as info:
        generate(options(FallbackModel(primary, fallback)))
    assert info.value.err is AUTH
    assert fallback.requests == []


def test_a_config_error_of_a_fallback_is_never_passed_over() -> None:
    refusal = ConfigError("this API has no field for thinking")
    primary = ScriptedModel([OVERLOADED], model_id="primary")
    second = ScriptedModel([refusal], model_id="second")
    third = ScriptedModel([text_step("hello")], model_id="third")
    with pytest.raises(RunError) as info:
        generate(options(FallbackModel(primary, second, third), max_retries=0))
    assert info.value.err is refusal
    assert third.requests == []


def test_context_length_goes_to_the_larger_window_at_once() -> None:
    primary = Windowed([TOO_LONG], model_id="small", window=8_000)
    same = Windowed([text_step("unused")], model_id="same", window=8_000)
    large = Windowed([text_step("fits")], model_id="large", window=200_000)
    waits: list[float] = []
    result = generate(options(FallbackModel(primary, same, large), waits))
    assert waits == []  # context length is not retried
    assert (len(primary.requests), len(same.requests), len(large.requests)) == (1, 0, 1)
    assert result.steps[0].model_id == "large"


def test_a_nested_fallback_model_answers_with_its_own_models() -> None:
    primary = ScriptedModel([OVERLOADED], model_id="a")
    inner = FallbackModel(
        ScriptedModel([OVERLOADED], model_id="b"), ScriptedModel([text_step("c")], model_id="c")
    )
    result = generate(options(FallbackModel(primary, inner), max_retries=0))
    assert result.steps[0].model_id == "c"


def test_a_plan_may_swap_in_a_fallback_model_or_swap_one_out() -> None:
    plain = ScriptedModel([text_step("one")], model_id="plain")
    primary = ScriptedModel([OVERLOADED], model_id="primary")
    fallback = ScriptedModel([text_step("two")], model_id="fallback")
    chain = FallbackModel(primary, fallback)
    script = iter([StepPlan(model=chain)])

    def plan(draft: Any) -> StepPlan | None:
        return next(script, None)

    swapped_in = generate(options(plain, max_retries=0, prepare_step=plan))
    assert swapped_in.steps[0].model_id == "fallback"
    assert plain.requests == []

    p = ScriptedModel([], model_id="p")
    out = ScriptedModel([text_step("three")], model_id="out")
    swapped_out = generate(options(FallbackModel(p, plain), prepare_step=lambda draft: StepPlan(model=out)))
    assert swapped_out.steps[0].model_id == "out"
    assert p.requests == []


def test_a_cancel_during_the_retries_ends_the_run_without_a_fallback() -> None:
    ctx = Context()
    primary = ScriptedModel([OVERLOADED] * 3, model_id="primary")
    fallback = ScriptedModel([text_step("hello")], model_id="fallback")
    with pytest.raises(RunError) as info:
        generate(options(FallbackModel(primary, fallback), retry_sleep=lambda seconds: ctx.cancel()), ctx)
    assert info.value.finish_reason is FinishReason.CANCELED
    assert fallback.requests == []


# --- durable runs -----------------------------------------------------------------------


class RecordingRunner:
    """Keeps each step's record as JSON, by key, and replays it (as DBOS does)."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    def model_step(self, key: str, call: Callable[[], StepRecord]) -> StepRecord:
        if key not in self.records:
            self.records[key] = json.loads(json.dumps(call().to_dict()))
        return StepRecord.from_dict(self.records[key])

    def tool_call(self, key: str, call: Callable[[], Any]) -> Any:
        return call()


def test_a_replayed_step_gives_the_model_id_it_recorded(tmp_path: Path) -> None:
    runner = RecordingRunner()
    chain = FallbackModel(
        ScriptedModel([OVERLOADED], model_id="p"), ScriptedModel([text_step("hi")], model_id="f")
    )
    store = SQLiteCheckpoints(tmp_path / "runs.db")
    first = generate(options(chain, max_retries=0, run_id="r1", step_runner=runner, checkpoints=store))
    assert runner.records["r1:step:1"]["model_id"] == "f"
    saved = store.load("r1")
    assert isinstance(saved, RunState)
    assert [step.model_id for step in saved.steps] == ["f"]
    assert saved.steps[0].to_dict()["model_id"] == "f"

    idle = FallbackModel(ScriptedModel([], model_id="p"), ScriptedModel([], model_id="f"))
    replayed = generate(options(idle, run_id="r2", step_runner=runner_with(runner, "r1", "r2")))
    assert replayed.steps[0].model_id == "f"
    assert replayed.text == first.text


def runner_with(runner: RecordingRunner, old: str, new: str) -> RecordingRunner:
    """``runner``'s records of run ``old`` under run ``new``'s keys."""
    copy = RecordingRunner()
    copy.records = {key.replace(old, new, 1): value for key, value in runner.records.items()}
    return copy


def test_a_step_result_keeps_its_model_id_through_json_and_an_old_one_loads_without() -> None:
    step = StepResult("hi", (), (), Usage(1, 2), FinishReason.STOP, model_id="gpt-4.1")
    loaded = StepResult.from_dict(json.loads(json.dumps(step.to_dict())))
    assert loaded.model_id == "gpt-4.1"
    old = step.to_dict()
    del old["model_id"]
    assert StepResult.from_dict(old).model_id == ""
    assert "model_id" not in StepResult("hi", (), (), Usage(), FinishReason.STOP).to_dict()
    record = StepRecord([], Usage(1, 1), FinishReason.STOP, "f" * 64, model_id="m")
    assert StepRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


# --- called directly: one attempt per model ----------------------------------------------


def test_stream_called_directly_falls_back_before_the_first_part_only() -> None:
    request = Request(messages=GO)
    chain = FallbackModel(ScriptedModel([OVERLOADED]), ScriptedModel([text_step("hi")]))
    parts = list(chain.stream(request, Context()))
    assert [part.kind for part in parts] == [StreamPartKind.TEXT_DELTA, StreamPartKind.STEP_FINISH]

    fallback = ScriptedModel([text_step("hi")])
    cut = FallbackModel(ScriptedModel([[StreamPart.text_delta("Hel"), OVERLOADED]]), fallback)
    seen: list[StreamPart] = []
    with pytest.raises(ModelError) as info:
        seen.extend(cut.stream(request, Context()))
    assert info.value is OVERLOADED
    assert [part.text for part in seen] == ["Hel"]
    assert fallback.requests == []


def test_closing_a_direct_stream_closes_the_model_streaming() -> None:
    closed: list[str] = []

    def answer(request: Request) -> Iterator[StreamPart]:
        try:
            yield StreamPart.text_delta("a")
            yield StreamPart.text_delta("b")
        finally:
            closed.append("closed")

    stream: Any = FallbackModel(ScriptedModel([answer]), ScriptedModel([])).stream(
        Request(messages=GO), Context()
    )
    assert next(stream).text == "a"
    stream.close()
    assert closed == ["closed"]


# --- real adapters against the local server -----------------------------------------------

ERROR_BODY = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


NOVA_TEXT = (
    "The capital of France is Paris. Paris is not only the capital city but also the most populous city in "
    "France, and it is a major center for culture, commerce, fashion, and international diplomacy. Known for "
    "its historical landmarks, such as the Eiffel Tower, the Louvre Museum, and Notre-Dame Cathedral, Paris "
    'is often referred to as "The City of Light" or "The City of Love."'
)


def answer(kind: str) -> Reply:
    """The recorded answer of ``kind``'s API, as its server sends it."""
    name = ANSWERS[kind][0]
    if name.endswith(".b64"):
        body = base64.b64decode(fixture(name))
        return Reply(actions=[body], headers={"Content-Type": "application/vnd.amazon.eventstream"})
    return Reply(actions=[fixture(name)])


def busy(kind: str, status: int) -> Reply:
    """``kind``'s API answering ``status`` (Bedrock names the error in a header)."""
    if kind == "bedrock":
        return bedrock_server.error_reply(status, "ServiceUnavailableException", "Too many connections")
    return json_reply(status, ERROR_BODY)


def adapter(kind: str, server: LocalServer, **kwargs: Any) -> Any:
    """An adapter of ``kind`` that talks to ``server``."""
    if kind == "anthropic":
        return AnthropicModel("claude-sonnet-4-5", api_key="k", base_url=server.url, **kwargs)
    if kind == "chat":
        return OpenAIChatModel("gpt-4o", api_key="k", base_url=server.url + "/v1", **kwargs)
    if kind == "responses":
        return OpenAIResponsesModel("deepseek-chat", api_key="k", base_url=server.url + "/v1", **kwargs)
    if kind == "gemini":
        return GeminiModel("gemini-2.0-flash", api_key="k", base_url=server.url, **kwargs)
    return BedrockConverseModel("amazon.nova-micro-v1:0", api_key="k", base_url=server.url, **kwargs)


ANSWERS = {
    "anthropic": (
        "anthropic/text_basic_sonnet45.sse",
        "Hello! I'm doing well, thank you for asking. How are you doing today? "
        "Is there anything I can help you with?",
        Usage(12, 30),
    ),
    "chat": (
        "openai_chat/text_usage_in_final_chunk_gpt4o.sse",
        "The capital of Mexico is Mexico City.",
        Usage(14, 8),
    ),
    "responses": (
        "openai_responses/pydantic/test_deepseek_responses.test_deepseek_responses_text_stream_.i0.sse",
        "The capital of France is Paris.",
        Usage(90, 15),
    ),
    "gemini": ("gemini/gemini20flash_text.sse", "The capital of France is Paris.\n", Usage(13, 8)),
    "bedrock": ("bedrock_converse/nova_micro_text.eventstream.b64", NOVA_TEXT, Usage(13, 82)),
}
RING = [
    ("anthropic", 529, "chat"),
    ("chat", 503, "responses"),
    ("responses", 429, "gemini"),
    ("gemini", 503, "bedrock"),
    ("bedrock", 503, "anthropic"),
]


@pytest.mark.parametrize(("first", "status", "second"), RING, ids=[f"{a}-{s}-{b}" for a, s, b in RING])
def test_every_adapter_falls_back_and_is_fallen_back_to_over_http(
    first: str, status: int, second: str
) -> None:
    down = LocalServer([busy(first, status)])
    _name, text, usage = ANSWERS[second]
    healthy = LocalServer([answer(second)])
    try:
        waits: list[float] = []
        chain = FallbackModel(adapter(first, down), adapter(second, healthy))
        result = generate(options(chain, waits, max_retries=1))
    finally:
        down.close()
        healthy.close()
    assert (down.hits, healthy.hits) == (2, 1)
    assert waits == [0.5]
    assert result.text == text
    assert result.steps[0].model_id == adapter(second, healthy).model_id
    assert result.usage_by_model == {result.steps[0].model_id: usage}


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param([Reset()], id="reset-before-headers"),
        pytest.param(None, id="cut-before-any-text"),
    ],
)
def test_a_transient_fault_falls_back_after_the_retries(fault: list[Any] | None) -> None:
    if fault is None:  # a 200 stream that ends before any content
        broken = Reply(
            actions=[
                fixture("anthropic/text_basic_sonnet45.sse").split(b"event: content_block_start")[0],
                Close(),
            ]
        )
    else:
        broken = Reply(before_headers=fault)
    primary = LocalServer([broken])
    name, text, _ = ANSWERS["chat"]
    fallback = LocalServer([Reply(actions=[fixture(name)])])
    try:
        result = generate(
            options(FallbackModel(adapter("anthropic", primary), adapter("chat", fallback)), max_retries=1)
        )
    finally:
        primary.close()
        fallback.close()
    assert (primary.hits, fallback.hits) == (2, 1)
    assert result.text == text


def test_no_fallback_once_text_reached_the_reader_over_http() -> None:
    head = b"".join(fixture("anthropic/text_basic_sonnet45.sse").splitlines(keepends=True)[:15])  # to "! I"
    primary = LocalServer([Reply(actions=[head, Reset()])])
    fallback = LocalServer([Reply(actions=[fixture(ANSWERS["chat"][0])])])
    try:
        reader = run(options(FallbackModel(adapter("anthropic", primary), adapter("chat", fallback))))
        parts = list(reader)
    finally:
        primary.close()
        fallback.close()
    assert (primary.hits, fallback.hits) == (1, 0)
    assert parts[-1].kind is StreamPartKind.ERROR
    assert isinstance(parts[-1].err, ModelError)
    assert parts[-1].err.error_class is ErrorClass.TRANSIENT
    text = "".join(part.text for part in parts if part.kind is StreamPartKind.TEXT_DELTA)
    assert text == "Hello! I"


def test_a_prompt_too_long_goes_to_a_model_with_a_larger_window_over_http() -> None:
    refusal = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 210000 tokens > 200000 maximum",
        },
    }
    primary = LocalServer([json_reply(400, refusal)])
    fallback = LocalServer([Reply(actions=[fixture(ANSWERS["chat"][0])])])
    try:
        larger = FallbackModel(
            adapter("anthropic", primary), adapter("chat", fallback, context_window=1_000_000)
        )
        result = generate(options(larger))
        assert (primary.hits, fallback.hits) == (1, 1)
        assert result.steps[0].model_id == "gpt-4o"
        primary.reset()
        primary.add(json_reply(400, refusal))
        fallback.reset()
        smaller = FallbackModel(adapter("anthropic", primary), adapter("chat", fallback))  # gpt-4o: 128,000
        with pytest.raises(RunError) as info:
            generate(options(smaller))
    finally:
        primary.close()
        fallback.close()
    assert isinstance(info.value.err, ModelError)
    assert info.value.err.error_class is ErrorClass.CONTEXT_LENGTH
    assert (primary.hits, fallback.hits) == (1, 0)


def test_the_primarys_reasoning_never_reaches_another_provider() -> None:
    # Step 1: Claude thinks (a signed block) and calls a tool; step 2: Claude is
    # overloaded and Chat Completions answers from the same history.
    thinking = fixture("anthropic/thinking_then_tool_empty_args.sse")
    primary = LocalServer([Reply(actions=[thinking]), json_reply(529, ERROR_BODY)])
    fallback = LocalServer([Reply(actions=[fixture(ANSWERS["chat"][0])])])

    @tool
    def fixed_version() -> str:
        """The fixed version."""
        return "1.2.3"

    try:
        chain = FallbackModel(adapter("anthropic", primary), adapter("chat", fallback))
        result = generate(options(chain, max_retries=0, tools=[fixed_version]))
    finally:
        primary.close()
        fallback.close()
    assert [step.model_id for step in result.steps] == ["claude-sonnet-4-5", "gpt-4o"]
    assert result.steps[0].reasoning[0].signature  # the history keeps Claude's block
    sent = fallback.requests[0]
    signature = result.steps[0].reasoning[0].signature
    assert signature.encode() not in sent["raw"]
    assistant = next(m for m in sent["body"]["messages"] if m["role"] == "assistant")
    assert [call["function"]["name"] for call in assistant["tool_calls"]] == ["fixed_version"]
    assert next(m for m in sent["body"]["messages"] if m["role"] == "tool")["content"] == "1.2.3"
    assert result.usage_by_model == {"claude-sonnet-4-5": Usage(598, 92), "gpt-4o": Usage(14, 8)}
    assert_valid_history(result.messages)


# --- with history policies, agentcore.aio and check_model ---------------------------------


def long_history() -> list[Any]:
    from agentcore import Message, Role, text_part

    return [
        user_message("x " * 2000),
        Message(Role.ASSISTANT, [text_part("noted")]),
        user_message("And now?"),
    ]


def too_long(tokens: int) -> ModelError:
    return ModelError(
        ErrorClass.CONTEXT_LENGTH, status=400, message=f"prompt is too long: {tokens} tokens > 2000 maximum"
    )


def test_a_larger_window_answers_before_any_policy_cuts() -> None:
    from agentcore.compaction import SlidingWindow

    primary = Windowed([too_long(2500)], model_id="small", window=2_000)
    large = Windowed([text_step("whole")], model_id="large", window=100_000)
    result = generate(
        options(
            FallbackModel(primary, large),
            messages=long_history(),
            history_policy=[SlidingWindow(max_tokens=0.9)],
        )
    )
    assert result.steps[0].model_id == "large"
    assert result.steps[0].compactions == ()
    assert len(large.requests[0].messages) == 3


def test_when_no_model_takes_the_step_the_policies_cut_and_the_chain_is_tried_again() -> None:
    from agentcore.compaction import SlidingWindow

    primary = Windowed([too_long(2500), text_step("cut")], model_id="small", window=2_000)
    smaller = Windowed([], model_id="smaller", window=1_000)
    result = generate(
        options(
            FallbackModel(primary, smaller),
            messages=long_history(),
            history_policy=[SlidingWindow(max_tokens=0.9)],
        )
    )
    assert smaller.requests == []  # a smaller window is never tried for a prompt too long
    assert result.steps[0].model_id == "small"
    [compaction] = result.steps[0].compactions
    assert compaction.refused
    assert [len(request.messages) for request in primary.requests] == [3, 2]
    assert primary.requests[1].messages[-1] == user_message("And now?")
    assert compaction.removed == (1,)  # the sliding window keeps the first turn, drops the answer


def test_an_async_consumer_sees_the_fallbacks_answer() -> None:
    import asyncio

    from agentcore.aio import arun

    async def main() -> tuple[list[str], Any]:
        primary = ScriptedModel([OVERLOADED], model_id="primary")
        reader = arun(
            options(FallbackModel(primary, ScriptedModel([text_step("hi")], model_id="f")), max_retries=0)
        )
        ids = [part.model_id async for part in reader if part.kind is StreamPartKind.STEP_FINISH]
        return ids, await reader.result()

    ids, result = asyncio.run(main())
    assert ids == ["f"]
    assert result.text == "hi"


def test_check_model_passes_a_fallback_model_whose_primary_is_down() -> None:
    from agentcore.testing import check_model

    check_model(FallbackModel(ScriptedModel([OVERLOADED] * 3), ScriptedModel([text_step("hi")] * 3)))


def test_the_primarys_server_tool_blocks_never_reach_another_provider() -> None:
    searched = fixture("anthropic/server_web_search_thinking_citations.sse")
    primary = LocalServer([Reply(actions=[searched])])
    fallback = LocalServer([Reply(actions=[fixture(ANSWERS["chat"][0])])])
    try:
        first = generate(options(adapter("anthropic", primary)))
        primary.reset()
        primary.add(json_reply(529, ERROR_BODY))
        chain = FallbackModel(adapter("anthropic", primary), adapter("chat", fallback))
        result = generate(options(chain, max_retries=0, messages=[*first.messages, user_message("More?")]))
    finally:
        primary.close()
        fallback.close()
    assert sum(1 for part in first.messages[1].content if part.provider_item is not None) == 4
    assert result.steps[0].model_id == "gpt-4o"
    sent = fallback.requests[0]
    assert b"server_tool_use" not in sent["raw"]
    assert b"web_search_tool_result" not in sent["raw"]
    assert [m["role"] for m in sent["body"]["messages"]] == ["user", "assistant", "user"]
    assert sent["body"]["messages"][1]["content"] == first.text


def test_a_fallback_is_logged_once_at_warning(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    primary = ScriptedModel([OVERLOADED], model_id="claude-sonnet-4-5")
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        generate(
            options(
                FallbackModel(primary, ScriptedModel([text_step("hi")], model_id="gpt-4.1")), max_retries=0
            )
        )
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.WARNING,
            "agentcore: claude-sonnet-4-5 failed with OVERLOADED (overloaded: Overloaded (HTTP 529)); "
            "the step goes to gpt-4.1",
        )
    ]


def test_a_plain_runs_steps_name_the_runs_model() -> None:
    model = ScriptedModel([text_step("hi")], model_id="gpt-4.1")
    reader = run(options(model))
    finishes = [part.model_id for part in reader if part.kind is StreamPartKind.STEP_FINISH]
    assert finishes == ["gpt-4.1"]
    assert reader.result().steps[0].model_id == "gpt-4.1"


def test_only_a_step_finish_part_carries_a_model_id() -> None:
    with pytest.raises(ValueError, match=r"^a 'text-delta' StreamPart cannot carry model_id$"):
        StreamPart(StreamPartKind.TEXT_DELTA, text="x", model_id="m")
    with pytest.raises(ValueError, match=r"^a 'finish' StreamPart cannot carry model_id$"):
        StreamPart(StreamPartKind.FINISH, finish_reason=FinishReason.STOP, model_id="m")
    assert StreamPart.step_finish(FinishReason.STOP, model_id="m").model_id == "m"
    assert StreamPart.step_finish(FinishReason.STOP, model_id="m") == StreamPart.step_finish(
        FinishReason.STOP
    )


def test_a_wait_that_would_outlast_the_deadline_falls_back_at_once() -> None:
    from agentcore import ManualClock

    ctx = Context(timeout=0.2, clock=ManualClock())  # the 0.5 s backoff would outlast it
    primary = ScriptedModel([OVERLOADED] * 3, model_id="primary")
    fallback = ScriptedModel([text_step("in time")], model_id="fallback")
    waits: list[float] = []
    result = generate(options(FallbackModel(primary, fallback), waits), ctx)
    assert waits == []
    assert len(primary.requests) == 1
    assert result.steps[0].model_id == "fallback"
