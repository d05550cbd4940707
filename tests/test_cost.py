"""Step and run costs (agentcore/cost.py): recorded usages priced by
agentcore against genai-prices' own calculation, and the costs a run reports.

For every recorded stream whose model genai-prices lists, the adapter reads
the stream into agentcore's :class:`Usage`, agentcore prices it, and
genai-prices prices the provider's own usage object from the same recording
(its ``extract_usage``, then ``calc_price``): the two must be equal to the
last digit. Where an API reports a server tool's calls only as output items
(Responses, Gemini), genai-prices' extractors, which read the usage object,
cannot see them: its usage gets the counts agentcore read, so the per-call
fees are priced by genai-prices' own units too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import pytest

from agentcore import (
    FinishReason,
    LoopOptions,
    ModelSettings,
    StepResult,
    StreamPart,
    ToolCall,
    Usage,
    cli,
    generate,
    tool,
    user_message,
)
from agentcore.context import Context
from agentcore.cost import Pricer, price_usage, usage_for_prices
from agentcore.errors import ModelError
from agentcore.integrations.cli_output import cost_text
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.gemini.model import GeminiModel
from agentcore.providers.openai.chat.model import OpenAIChatModel
from agentcore.providers.openai.responses.model import OpenAIResponsesModel
from agentcore.testing import ScriptedModel
from agentcore.transport import sse
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import Request

FIXTURES = Path(__file__).parent / "fixtures"
ANTHROPIC = "https://api.anthropic.com"
OPENAI = "https://api.openai.com/v1"
GOOGLE = "https://generativelanguage.googleapis.com"
COMPAT_URLS = {
    "deepseek": "https://api.deepseek.com",
    "groq": "https://api.groq.com/openai/v1",
    "mistral": "https://api.mistral.ai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "zai": "https://api.z.ai/api/paas/v4",
}
"""The OpenAI-compatible recordings, by the provider their name starts with,
and the provider's API root. xAI's recording is left out: its Chat
Completions ``completion_tokens`` leave the reasoning tokens out, and so
does agentcore's ``output`` there (docs/usage.md), while genai-prices adds
them: the two counts differ by design, not by the price."""


def events(path: Path) -> Iterator[dict[str, Any]]:
    for event in sse.iter_events([path.read_bytes()]):
        if isinstance(event.data, dict):
            yield event.data


def step_usage(model: Any) -> Usage:
    """The usage of the one step ``model`` streams from its recorded reply."""
    parts = list(model.stream(Request(messages=(user_message("x"),)), Context()))
    usage: Usage = parts[-1].usage
    return usage


def known(model_id: str, base_url: str) -> bool:
    try:
        genai_prices.calc_price(genai_prices.Usage(), model_id, provider_api_url=base_url)
    except LookupError:
        return False
    return True


def theirs(extracted: Any, extra: genai_prices.Usage | None = None) -> Decimal:
    usage = extracted.usage if extra is None else extracted.usage + extra
    total: Decimal = extracted.model.calc_price(usage, extracted.provider).total_price
    return total


def tool_counts(usage: Usage) -> genai_prices.Usage:
    """The server-tool counts agentcore read from output items, in genai-prices' units."""
    return genai_prices.Usage(
        web_searches=usage.web_search_requests,
        storage_searches=usage.file_search_requests,
        code_executions=usage.code_execution_requests,
    )


# --- Anthropic -----------------------------------------------------------------------------


def anthropic_usage(path: Path) -> tuple[str, dict[str, Any]]:
    """The model and the final usage object of a Messages stream: the
    ``message_start`` usage, each field a ``message_delta`` reports replacing it."""
    model, usage = "", dict[str, Any]()
    for data in events(path):
        if data.get("type") == "message_start":
            model = data["message"]["model"]
            usage.update(data["message"].get("usage") or {})
        elif data.get("type") == "message_delta":
            usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
    return model, usage


ANTHROPIC_CASES = sorted(p.name for p in (FIXTURES / "anthropic").glob("*.sse"))


@pytest.mark.parametrize("name", ANTHROPIC_CASES)
def test_anthropic_recorded_usage_is_priced_as_genai_prices_prices_it(name: str) -> None:
    path = FIXTURES / "anthropic" / name
    model_id, raw = anthropic_usage(path)
    model = AnthropicModel(model_id, api_key="k", transport=MemoryTransport(Reply.of(path.read_bytes())))
    ours = price_usage(step_usage(model), model_id, ANTHROPIC)
    if raw.get("iterations"):
        # Server-side compaction: the top-level counts leave out the compaction
        # iteration, which is billed too; agentcore adds it (docs/usage.md).
        iterations = [
            genai_prices.extract_usage({"model": model_id, "usage": item}, provider_id="anthropic")
            for item in raw["iterations"]
        ]
        expected = theirs(iterations[0], sum((i.usage for i in iterations[1:]), genai_prices.Usage()))
        assert ours > theirs(
            genai_prices.extract_usage({"model": model_id, "usage": raw}, provider_id="anthropic")
        )
    else:
        expected = theirs(
            genai_prices.extract_usage({"model": model_id, "usage": raw}, provider_id="anthropic")
        )
    assert ours == expected
    assert ours > 0


# --- OpenAI Chat Completions and compatible servers -----------------------------------------


def chat_usage(path: Path) -> tuple[str, dict[str, Any] | None]:
    """The model and the last usage object of a Chat Completions stream."""
    model_id, raw = "", None
    for data in events(path):
        model_id = data.get("model", model_id)
        raw = data.get("usage") or raw
    return model_id, raw


def chat_cases() -> list[tuple[Path, str]]:
    """The Chat recordings genai-prices can price, and the API root of each."""
    paths = [(path, OPENAI) for path in sorted((FIXTURES / "openai_chat").glob("*.sse"))]
    for path in sorted((FIXTURES / "openai_compat").glob("*.sse")):
        url = COMPAT_URLS.get(path.name.split("_")[0])
        if url is not None:
            paths.append((path, url))
    cases = []
    for path, url in paths:
        model_id, raw = chat_usage(path)
        if raw is not None and known(model_id, url):
            cases.append((path, url))
    return cases


CHAT_CASES = chat_cases()


@pytest.mark.parametrize(("path", "base_url"), CHAT_CASES, ids=[path.name for path, _ in CHAT_CASES])
def test_chat_recorded_usage_is_priced_as_genai_prices_prices_it(path: Path, base_url: str) -> None:
    model_id, raw = chat_usage(path)
    transport = MemoryTransport(Reply.of(path.read_bytes()))
    model = OpenAIChatModel(model_id, api_key="k", base_url=base_url, transport=transport)
    ours = price_usage(step_usage(model), model_id, base_url)
    for flavor in ("chat", "default"):  # genai-prices names Groq's and Mistral's Chat format "default"
        try:
            extracted = genai_prices.extract_usage(
                {"model": model_id, "usage": raw}, provider_api_url=base_url, api_flavor=flavor
            )
            break
        except ValueError:
            continue
    assert ours == theirs(extracted)
    assert ours > 0


def test_the_chat_cases_cover_openai_and_five_compatible_providers() -> None:
    assert len(CHAT_CASES) >= 19  # genai-prices 0.1.13 (the last for Python 3.10) lists 19 of them; 0.2 more
    missing = {OPENAI, *COMPAT_URLS.values()} - {url for _path, url in CHAT_CASES}
    assert missing <= {"https://api.z.ai/api/paas/v4"}  # which genai-prices 0.1.13 does not list


# --- OpenAI Responses ------------------------------------------------------------------------


def completed(path: Path) -> dict[str, Any] | None:
    """The response of a Responses stream's ``response.completed`` (or
    ``.incomplete``) event; None when it has none or its JSON is broken (a
    recording kept for a test of the adapter's errors)."""
    ends = ("response.completed", "response.incomplete")
    try:
        return next((data["response"] for data in events(path) if data.get("type") in ends), None)
    except ModelError:
        return None


def responses_cases() -> list[Path]:
    cases = []
    for folder in ("mirascope", "pydantic", "vercel_openai"):
        for path in sorted((FIXTURES / "openai_responses" / folder).glob("*.sse")):
            response = completed(path)
            if response is not None and response.get("usage") and known(response["model"], OPENAI):
                cases.append(path)
    return cases


RESPONSES_CASES = responses_cases()


@pytest.mark.parametrize("path", RESPONSES_CASES, ids=[path.name for path in RESPONSES_CASES])
def test_responses_recorded_usage_is_priced_as_genai_prices_prices_it(path: Path) -> None:
    response = completed(path)
    assert response is not None
    model_id = response["model"]
    transport = MemoryTransport(Reply.of(path.read_bytes()))
    usage = step_usage(OpenAIResponsesModel(model_id, api_key="k", transport=transport))
    extracted = genai_prices.extract_usage(response, provider_id="openai", api_flavor="responses")
    assert price_usage(usage, model_id, OPENAI) == theirs(extracted, tool_counts(usage))


def test_most_responses_recordings_are_priced() -> None:
    assert len(RESPONSES_CASES) >= 60


def test_responses_web_searches_are_priced_per_call() -> None:
    # The recording ran two web searches: $10 per 1,000 calls on top of the tokens.
    name = "pydantic/test_openai_responses.test_openai_include_raw_annotations_streaming.i0.sse"
    transport = MemoryTransport(Reply.of((FIXTURES / "openai_responses" / name).read_bytes()))
    usage = step_usage(OpenAIResponsesModel("gpt-5.2", api_key="k", transport=transport))
    assert usage.web_search_requests == 2
    without = price_usage(Usage(usage.input, usage.output, usage.cache_read), "gpt-5.2", OPENAI)
    assert price_usage(usage, "gpt-5.2", OPENAI) - without == Decimal("0.02")


# --- Gemini ----------------------------------------------------------------------------------


def gemini_usage(path: Path) -> tuple[str, dict[str, Any] | None]:
    model_id, raw = "", None
    for data in events(path):
        model_id = data.get("modelVersion", model_id)
        raw = data.get("usageMetadata") or raw
    return model_id, raw


GEMINI_CASES = [
    path
    for path in sorted((FIXTURES / "gemini").glob("*.sse"))
    if gemini_usage(path)[1] is not None and known(gemini_usage(path)[0], GOOGLE)
]


@pytest.mark.parametrize("path", GEMINI_CASES, ids=[path.name for path in GEMINI_CASES])
def test_gemini_recorded_usage_is_priced_as_genai_prices_prices_it(path: Path) -> None:
    model_id, raw = gemini_usage(path)
    model = GeminiModel(model_id, api_key="k", transport=MemoryTransport(Reply.of(path.read_bytes())))
    usage = step_usage(model)
    extracted = genai_prices.extract_usage(
        {"modelVersion": model_id, "usageMetadata": raw}, provider_api_url=GOOGLE
    )
    # genai-prices counts toolUsePromptTokenCount (grounding's own prompt) as
    # input, as agentcore does; a tool's calls, listed as parts, it cannot see.
    assert price_usage(usage, model_id, GOOGLE) == theirs(extracted, tool_counts(usage))


def test_most_gemini_recordings_are_priced() -> None:
    assert len(GEMINI_CASES) >= 12


# --- the mapping ------------------------------------------------------------------------------


def test_the_usage_mapping_counts_cache_writes_as_input_and_names_each_unit() -> None:
    usage = Usage(
        input=1000,
        output=50,
        cache_read=600,
        cache_write=300,
        web_search_requests=2,
        web_fetch_requests=1,
        code_execution_requests=3,
        file_search_requests=4,
    )
    assert usage_for_prices(usage) == {
        "input_tokens": 1300,
        "cache_read_tokens": 600,
        "cache_write_tokens": 300,
        "output_tokens": 50,
        "web_searches": 2,
        "storage_searches": 4,
        "code_executions": 3,
    }
    assert usage_for_prices(usage, "1h")["cache_write_1h_tokens"] == 300
    assert usage_for_prices(Usage()) == {}


def test_one_hour_cache_writes_are_priced_at_the_one_hour_rate() -> None:
    usage = Usage(input=2000, output=100, cache_read=500, cache_write=10_000)
    model = "claude-sonnet-4-5"
    five = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=12_000, cache_read_tokens=500, cache_write_tokens=10_000, output_tokens=100
        ),
        model,
        provider_api_url=ANTHROPIC,
    ).total_price
    hour = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=12_000,
            cache_read_tokens=500,
            cache_write_tokens=10_000,
            cache_write_1h_tokens=10_000,
            output_tokens=100,
        ),
        model,
        provider_api_url=ANTHROPIC,
    ).total_price
    assert hour > five
    assert price_usage(usage, model, ANTHROPIC) == five
    assert price_usage(usage, model, ANTHROPIC, "1h") == hour
    assert price_usage(usage, model, ANTHROPIC, "5m") == five


def test_an_unknown_model_or_provider_raises_lookup_error() -> None:
    with pytest.raises(LookupError):
        price_usage(Usage(input=10), "no-such-model-anywhere", ANTHROPIC)
    with pytest.raises(LookupError):
        price_usage(Usage(input=10), "gpt-4o", "http://127.0.0.1:8080/v1")


# --- what a run reports --------------------------------------------------------------------------


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def anthropic_run_model(settings: ModelSettings | None = None) -> tuple[AnthropicModel, list[Usage]]:
    """A Claude model replaying two recorded steps: a tool call, then text."""
    bodies = [
        (FIXTURES / "anthropic" / "parallel_tools_empty_args.sse").read_bytes(),
        (FIXTURES / "anthropic" / "text_after_tool_result_emoji.sse").read_bytes(),
    ]
    model = AnthropicModel(
        "claude-haiku-4-5",
        api_key="k",
        settings=settings,
        transport=MemoryTransport(*(Reply.of(body) for body in bodies)),
    )
    usages = [
        step_usage(AnthropicModel("claude-haiku-4-5", api_key="k", transport=MemoryTransport(Reply.of(body))))
        for body in bodies
    ]
    return model, usages


@tool
def get_weather(location: str = "") -> str:
    """The weather."""
    return "sunny"


@tool
def get_time(timezone: str = "") -> str:
    """The time."""
    return "noon"


def test_a_run_prices_each_step_and_sums_them() -> None:
    model, usages = anthropic_run_model()
    result = generate(
        LoopOptions(
            model=model, messages=[user_message("weather and time?")], tools=[get_weather, get_time, ping]
        )
    )
    assert [step.usage for step in result.steps] == usages
    prices = [price_usage(usage, "claude-haiku-4-5", ANTHROPIC) for usage in usages]
    assert [step.cost for step in result.steps] == prices
    assert result.cost == prices[0] + prices[1]
    assert all(price > 0 for price in prices)


def test_the_cache_lifetime_priced_is_the_runs_else_the_models() -> None:
    usage = Usage(input=100, output=10, cache_write=5000)
    seen: list[tuple[str, str, str | None]] = []

    def price(usage: Usage, model_id: str, base_url: str, ttl: str | None) -> Decimal:
        seen.append((model_id, base_url, ttl))
        return Decimal("0.5")

    pricer = Pricer(price, installed=True)
    scripted = ScriptedModel([], model_id="claude-haiku-4-5", base_url=ANTHROPIC)
    assert pricer.cost(usage, scripted, ModelSettings(cache_ttl="1h")) == Decimal("0.5")
    assert pricer.cost(usage, scripted) == Decimal("0.5")
    hourly, _ = anthropic_run_model(ModelSettings(cache_ttl="1h"))
    assert pricer.cost(usage, hourly) == Decimal("0.5")
    assert pricer.cost(usage, hourly, ModelSettings(cache_ttl="5m")) == Decimal("0.5")
    assert seen == [
        ("claude-haiku-4-5", ANTHROPIC, "1h"),
        ("claude-haiku-4-5", ANTHROPIC, None),
        ("claude-haiku-4-5", ANTHROPIC, "1h"),
        ("claude-haiku-4-5", ANTHROPIC, "5m"),
    ]


def test_a_run_with_the_one_hour_cache_prices_its_writes_at_that_rate() -> None:
    usage = Usage(input=100, output=10, cache_write=5000)
    model = ScriptedModel(
        [[StreamPart.text_delta("hi"), StreamPart.step_finish(FinishReason.STOP, usage)]] * 2,
        model_id="claude-sonnet-4-5",
        base_url=ANTHROPIC,
    )
    hour = generate(
        LoopOptions(model=model, messages=[user_message("hi")], settings=ModelSettings(cache_ttl="1h"))
    )
    five = generate(LoopOptions(model=model, messages=[user_message("hi")]))
    assert hour.cost == price_usage(usage, "claude-sonnet-4-5", ANTHROPIC, "1h")
    assert five.cost == price_usage(usage, "claude-sonnet-4-5", ANTHROPIC)
    assert hour.cost is not None
    assert five.cost is not None
    assert hour.cost > five.cost


def script() -> list[list[StreamPart]]:
    return [
        [
            StreamPart.tool_call_event(ToolCall(id="c1", name="ping")),
            StreamPart.step_finish(FinishReason.TOOL_CALLS),
        ],
        [StreamPart.text_delta("pong"), StreamPart.step_finish(FinishReason.STOP)],
    ]


def test_a_model_a_listed_provider_lacks_is_warned_of_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def unlisted() -> ScriptedModel:
        return ScriptedModel(script(), model_id="claude-of-next-year", base_url=ANTHROPIC)

    warned: set[tuple[str, str]] = set()
    pricer = Pricer(warned=warned)
    with caplog.at_level(logging.DEBUG, logger="agentcore"):
        assert pricer.cost(Usage(input=5), unlisted()) is None
        assert pricer.cost(Usage(input=5), unlisted()) is None
        result = generate(LoopOptions(model=unlisted(), messages=[user_message("ping")], tools=[ping]))
        generate(LoopOptions(model=unlisted(), messages=[user_message("ping")], tools=[ping]))
    assert warned == {("claude-of-next-year", ANTHROPIC)}
    assert [step.cost for step in result.steps] == [None, None]
    assert result.cost is None
    notes = [r for r in caplog.records if "no price" in r.getMessage()]
    # One from the test's own pricer, one from the runs (the process's): never one per run.
    assert [r.levelno for r in notes] == [logging.WARNING, logging.WARNING]
    assert all("'claude-of-next-year' at https://api.anthropic.com" in r.getMessage() for r in notes)


def test_an_unknown_endpoint_is_noted_at_debug_a_double_not_at_all(caplog: pytest.LogCaptureFixture) -> None:
    local = ScriptedModel(script(), model_id="llama-of-my-own-6b", base_url="http://127.0.0.1:11434/v1")
    double = ScriptedModel(script(), model_id="a-test-double")
    pricer = Pricer(warned=set())
    with caplog.at_level(logging.DEBUG, logger="agentcore"):
        assert pricer.cost(Usage(input=5), local) is None
        assert pricer.cost(Usage(input=5), double) is None
    notes = [r for r in caplog.records if "no price" in r.getMessage()]
    assert [r.levelno for r in notes] == [logging.DEBUG]  # a test double has nothing to be priced at
    assert "Unable to find provider" in notes[0].getMessage()


def test_without_genai_prices_costs_are_none_without_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    pricer = Pricer(installed=False)
    model, _ = anthropic_run_model()
    with caplog.at_level(logging.DEBUG, logger="agentcore"):
        assert pricer.cost(Usage(input=10, output=1), model) is None
    assert caplog.records == []


def test_a_step_cost_is_saved_and_read_back_exactly() -> None:
    step = StepResult("hi", (), (), Usage(input=3), FinishReason.STOP, cost=Decimal("0.000123456789"))
    data = step.to_dict()
    assert data["cost"] == "0.000123456789"
    assert json.loads(json.dumps(data)) == data
    assert StepResult.from_dict(data) == step
    unpriced = StepResult("hi", (), (), Usage(input=3), FinishReason.STOP)
    assert "cost" not in unpriced.to_dict()
    assert StepResult.from_dict(unpriced.to_dict()).cost is None


# --- what the command prints ----------------------------------------------------------------------


def priced_script() -> ScriptedModel:
    usages = (Usage(input=1200, output=40, cache_write=1000), Usage(input=1300, output=60, cache_read=1000))
    return ScriptedModel(
        [
            [
                StreamPart.tool_call_event(ToolCall(id="c1", name="ping")),
                StreamPart.step_finish(FinishReason.TOOL_CALLS, usages[0]),
            ],
            [StreamPart.text_delta("pong"), StreamPart.step_finish(FinishReason.STOP, usages[1])],
        ],
        model_id=HAIKU,
        base_url=ANTHROPIC,
    )


HAIKU = "claude-haiku-4-5"


def expected_cost() -> Decimal:
    model = priced_script()
    return sum(
        (price_usage(step[-1].usage, HAIKU, ANTHROPIC) for step in model.steps if isinstance(step, list)),
        Decimal(0),
    )


def test_the_command_prints_the_runs_cost_on_its_finish_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ping?"], model=priced_script(), tools=[ping]) == 0
    _out, err = capsys.readouterr()
    last = err.splitlines()[-1]
    assert last.startswith("finish: stop · usage: input 2500, output 100, cache read 1000, cache write 1000")
    assert last.endswith(f" · cost: ${format(expected_cost(), 'f')}")
    assert expected_cost() > 0


def test_the_command_puts_the_cost_on_the_json_finish_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--json", "ping?"], model=priced_script(), tools=[ping]) == 0
    out, _err = capsys.readouterr()
    finish = json.loads(out.splitlines()[-1])
    assert finish["kind"] == "finish"
    assert Decimal(finish["cost"]) == expected_cost()
    assert finish["cost"] == format(expected_cost(), "f")


def test_the_command_prints_no_cost_when_it_is_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    model = ScriptedModel([[StreamPart.text_delta("hi"), StreamPart.step_finish(FinishReason.STOP)]])
    assert cli.main(["--json", "hi"], model=model, tools=[]) == 0
    out, err = capsys.readouterr()
    assert "cost" not in json.loads(out.splitlines()[-1])
    assert "no price" not in err


def test_a_tiny_cost_is_printed_without_an_exponent() -> None:
    assert cost_text(Decimal("4.5E-7")) == "0.00000045"
    assert cost_text(Decimal("0.0126")) == "0.0126"
