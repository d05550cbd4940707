"""OpenTelemetry (agentcore/integrations/otel.py): the span tree, attributes,
events and metrics of runs, captured with the SDK's in-memory span exporter
and metric reader; message contents only when a run opts in; nothing
imported or recorded without OpenTelemetry.

The SDK providers are handed to agentcore through the API's own
``get_tracer_provider`` / ``get_meter_provider`` (monkeypatched per test), so
no test leaves a global provider behind; one test in a subprocess sets real
global providers, as an application does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, SpanKind, StatusCode

from agentcore import (
    Canceled,
    ConfigError,
    ContentPart,
    Context,
    DeadlineExceeded,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    Reasoning,
    RunError,
    ToolCall,
    ToolResult,
    Usage,
    file_part,
    generate,
    reasoning_part,
    run,
    text_part,
    tool,
    tool_call_part,
    tool_result_part,
    user_message,
)
from agentcore.integrations.otel import (
    DURATION_BUCKETS,
    TOKEN_BUCKETS,
    error_type,
    finish_reason,
    message_part,
    observe,
    provider_name,
    server_attributes,
)
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.testing import ScriptedModel
from tests.localserver import LocalServer, json_reply, sse_reply
from tests.loop_helpers import FuncTool, call, nested, options, text_step, tool_step
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    block_stop,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
)


@attrs.define
class Telemetry:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider
    ended: threading.Condition

    def wait_for(self, name: str) -> list[ReadableSpan]:
        """The finished spans once one named ``name`` has ended."""
        with self.ended:
            assert self.ended.wait_for(
                lambda: any(s.name == name for s in self.spans.get_finished_spans()), 10
            )
        return list(self.spans.get_finished_spans())

    def histograms(self) -> dict[str, list[HistogramDataPoint]]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return {
            metric.name: [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }


class _Notify(SpanProcessor):
    def __init__(self, ended: threading.Condition) -> None:
        self._ended = ended

    def on_end(self, span: ReadableSpan) -> None:
        with self._ended:
            self._ended.notify_all()


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    ended = threading.Condition()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer_provider.add_span_processor(_Notify(ended))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: tracer_provider)
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: meter_provider)
    yield Telemetry(exporter, reader, tracer_provider, ended)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def tree(spans: Sequence[ReadableSpan]) -> list[tuple[str, str, SpanKind, StatusCode]]:
    """(name, parent's name, kind, status) of each span, in the order they ended."""
    names = {span.context.span_id: span.name for span in spans}
    return [
        (
            span.name,
            names.get(span.parent.span_id, "?") if span.parent else "",
            span.kind,
            span.status.status_code,
        )
        for span in spans
    ]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


OVERLOADED = ModelError(ErrorClass.OVERLOADED, message="Overloaded", status=529)
USAGE_1 = Usage(input=100, output=20, cache_read=60, cache_write=10)
USAGE_2 = Usage(input=150, output=5, cache_read=110)
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}


def broken(_arguments: dict[str, Any], _ctx: Context) -> str:
    raise ValueError("no such city")


def retry_tool_run(**kwargs: Any) -> Any:
    """A run whose first step fails once with 529 (retried without sleeping),
    then calls ``lookup`` (fine) and ``broken`` (raises); the second step answers."""
    model = ScriptedModel(
        [
            OVERLOADED,
            tool_step(call("call_1", "lookup", '{"city":"Paris"}'), call("call_2", "broken"), usage=USAGE_1),
            text_step("Rainy.", usage=USAGE_2),
        ]
    )
    tools = [
        FuncTool("lookup", lambda _i, _c: "rainy, 12 C", description="Look up the weather."),
        FuncTool("broken", broken),
    ]
    reader = run(
        options(
            model,
            messages=[user_message("Weather in Paris?")],
            tools=tools,
            retry_sleep=lambda _s: None,
            retry_jitter=lambda _a, _b: 1.0,
            **kwargs,
        )
    )
    assert reader.result().text == "Rainy."
    return reader


CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "unknown",
    "gen_ai.request.model": "scripted",
    "gen_ai.request.stream": True,
}


def test_a_run_with_a_retry_and_a_tool_error_makes_the_documented_spans(otel: Telemetry) -> None:
    retry_tool_run(agent_name="forecaster")
    spans = otel.wait_for("invoke_agent forecaster")
    ok, error = StatusCode.UNSET, StatusCode.ERROR
    assert tree(spans) == [
        ("chat scripted", "invoke_agent forecaster", SpanKind.CLIENT, ok),
        ("execute_tool lookup", "invoke_agent forecaster", SpanKind.INTERNAL, ok),
        ("execute_tool broken", "invoke_agent forecaster", SpanKind.INTERNAL, error),
        ("chat scripted", "invoke_agent forecaster", SpanKind.CLIENT, ok),
        ("invoke_agent forecaster", "", SpanKind.INTERNAL, ok),
    ]
    chat_1, lookup, failed, chat_2, agent = spans
    assert attributes(chat_1) == {
        **CHAT,
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.response.model": "scripted",
        "gen_ai.usage.input_tokens": 110,
        "gen_ai.usage.output_tokens": 20,
        "gen_ai.usage.cache_read.input_tokens": 60,
        "gen_ai.usage.cache_creation.input_tokens": 10,
    }
    assert [(e.name, dict(e.attributes or {})) for e in chat_1.events] == [
        (
            "gen_ai.client.operation.exception",
            {
                "exception.type": "agentcore.errors.ModelError",
                "exception.message": str(OVERLOADED),
                "error.type": "overloaded",
                "agentcore.retry.attempt": 1,
                "agentcore.retry.delay": 0.5,
            },
        )
    ]
    assert attributes(lookup) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Look up the weather.",
    }
    assert attributes(failed) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "broken",
        "gen_ai.tool.call.id": "call_2",
        "gen_ai.tool.type": "function",
        "error.type": "tool_error",
    }
    assert attributes(chat_2) == {
        **CHAT,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.response.model": "scripted",
        "gen_ai.usage.input_tokens": 150,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 110,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }
    assert chat_2.events == ()
    assert attributes(agent) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "unknown",
        "gen_ai.request.model": "scripted",
        "gen_ai.agent.name": "forecaster",
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.usage.input_tokens": 260,
        "gen_ai.usage.output_tokens": 25,
        "gen_ai.usage.cache_read.input_tokens": 170,
        "gen_ai.usage.cache_creation.input_tokens": 10,
    }
    # One trace; the run span is a root (no span was current where run() was called).
    assert {span.context.trace_id for span in spans} == {agent.context.trace_id}
    assert agent.parent is None


def test_the_metrics_count_each_step_once(otel: Telemetry) -> None:
    retry_tool_run()
    otel.wait_for("invoke_agent")
    points = otel.histograms()
    assert set(points) == {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "unknown",
        "gen_ai.request.model": "scripted",
    }
    tokens = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert {k: (dict(p.attributes or {}), p.count, p.sum) for k, p in tokens.items()} == {
        "input": ({**common, "gen_ai.token.type": "input"}, 2, 110 + 150),
        "output": ({**common, "gen_ai.token.type": "output"}, 2, 20 + 5),
    }
    assert tuple(tokens["input"].explicit_bounds) == TOKEN_BUCKETS
    (duration,) = points["gen_ai.client.operation.duration"]
    assert (dict(duration.attributes or {}), duration.count) == (common, 2)
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    assert 0 < duration.sum < 10


def test_no_content_is_recorded_by_default(otel: Telemetry) -> None:
    retry_tool_run(system="Be brief.")
    spans = otel.wait_for("invoke_agent")
    assert len(spans) == 5
    assert all(not CONTENT_KEYS & set(attributes(span)) for span in spans)


def test_content_is_recorded_when_the_run_opts_in(otel: Telemetry) -> None:
    retry_tool_run(system="Be brief.", trace_content=True)
    chat_1, lookup, failed, chat_2, agent = otel.wait_for("invoke_agent")
    system = '[{"type":"text","content":"Be brief."}]'
    question = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}
    calls = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"city": "Paris"}},
            {"type": "tool_call", "id": "call_2", "name": "broken", "arguments": {}},
        ],
    }
    results = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": "call_1", "response": "rainy, 12 C"},
            {"type": "tool_call_response", "id": "call_2", "response": "Error: ValueError: no such city"},
        ],
    }
    assert json.loads(attributes(chat_1)["gen_ai.input.messages"]) == [question]
    assert json.loads(attributes(chat_1)["gen_ai.output.messages"]) == [
        {**calls, "finish_reason": "tool_call"}
    ]
    assert json.loads(attributes(chat_2)["gen_ai.input.messages"]) == [question, calls, results]
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}], "finish_reason": "stop"}
    assert json.loads(attributes(chat_2)["gen_ai.output.messages"]) == [answer]
    assert attributes(chat_1)["gen_ai.system_instructions"] == system
    assert json.loads(attributes(chat_1)["gen_ai.tool.definitions"]) == [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look up the weather.",
            "parameters": {"type": "object", "properties": {}},
        },
        {
            "type": "function",
            "name": "broken",
            "description": "",
            "parameters": {"type": "object", "properties": {}},
        },
    ]
    assert attributes(lookup)["gen_ai.tool.call.arguments"] == '{"city":"Paris"}'
    assert attributes(lookup)["gen_ai.tool.call.result"] == "rainy, 12 C"
    assert attributes(failed)["gen_ai.tool.call.arguments"] == "{}"
    assert "gen_ai.tool.call.result" not in attributes(failed)  # only a successful call's result
    assert attributes(agent)["gen_ai.system_instructions"] == system
    assert json.loads(attributes(agent)["gen_ai.input.messages"]) == [question]
    assert json.loads(attributes(agent)["gen_ai.output.messages"]) == [answer]


def test_a_cancel_ends_the_tool_and_run_spans_as_canceled(otel: Telemetry) -> None:
    started = threading.Event()

    def wait(_arguments: dict[str, Any], ctx: Context) -> str:
        started.set()
        ctx.wait()
        ctx.check()
        return "never"

    model = ScriptedModel([tool_step(call("call_1", "wait"), usage=Usage(7, 3))])
    reader = run(options(model, tools=[FuncTool("wait", wait)]))
    assert started.wait(10)
    reader.close()
    spans = otel.wait_for("invoke_agent")
    assert tree(spans) == [
        ("chat scripted", "invoke_agent", SpanKind.CLIENT, StatusCode.UNSET),
        ("execute_tool wait", "invoke_agent", SpanKind.INTERNAL, StatusCode.ERROR),
        ("invoke_agent", "", SpanKind.INTERNAL, StatusCode.ERROR),
    ]
    _chat, tool, agent = spans
    assert attributes(tool)["error.type"] == "agentcore.errors.Canceled"
    assert attributes(agent)["error.type"] == "agentcore.errors.Canceled"
    assert attributes(agent)["gen_ai.response.finish_reasons"] == ("canceled",)
    assert attributes(agent)["gen_ai.usage.input_tokens"] == 7


def test_a_failed_step_ends_its_chat_span_with_the_error_and_its_duration(otel: Telemetry) -> None:
    auth = ModelError(ErrorClass.AUTH, message="invalid x-api-key", status=401)
    reader = run(options(ScriptedModel([auth])))
    with pytest.raises(RunError) as caught:
        reader.result()
    assert caught.value.err is auth
    spans = otel.wait_for("invoke_agent")
    assert tree(spans) == [
        ("chat scripted", "invoke_agent", SpanKind.CLIENT, StatusCode.ERROR),
        ("invoke_agent", "", SpanKind.INTERNAL, StatusCode.ERROR),
    ]
    assert [attributes(span)["error.type"] for span in spans] == ["auth", "auth"]
    assert attributes(spans[0]).get("gen_ai.response.finish_reasons") is None
    points = otel.histograms()
    (duration,) = points["gen_ai.client.operation.duration"]
    assert dict(duration.attributes or {})["error.type"] == "auth"
    assert "gen_ai.client.token.usage" not in points


def test_a_step_refused_as_too_long_and_sent_again_is_one_span_with_a_retry_event(otel: Telemetry) -> None:
    from agentcore.compaction import SlidingWindow

    refusal = ModelError(ErrorClass.CONTEXT_LENGTH, message="prompt is too long: 900 tokens > 800 maximum")
    fetch = FuncTool("fetch", lambda _arguments, _ctx: "x" * 600)
    model = ScriptedModel(
        [tool_step(call("c1", "fetch")), tool_step(call("c2", "fetch")), refusal, text_step("ok")]
    )
    result = run(options(model, tools=[fetch], history_policy=SlidingWindow(max_tokens=10**6))).result()
    assert result.text == "ok"
    spans = otel.wait_for("invoke_agent")
    chats = [span for span in spans if span.name == "chat scripted"]
    assert len(chats) == 3  # the refused step and its second sending are one span
    assert [span.status.status_code for span in chats] == [StatusCode.UNSET] * 3
    [event] = chats[2].events
    assert event.name == "gen_ai.client.operation.exception"
    assert dict(event.attributes or {})["error.type"] == "context_length"


def test_spans_nest_across_the_worker_and_tool_threads(otel: Telemetry) -> None:
    tracer = otel.tracer_provider.get_tracer("test")

    def inside(_arguments: dict[str, Any], _ctx: Context) -> str:
        with tracer.start_as_current_span("inside the tool"):
            return "ok"

    def step(_request: Any) -> Any:
        with tracer.start_as_current_span("inside the model"):
            pass
        return tool_step(call("call_1", "a"), call("call_2", "b"))

    model = ScriptedModel([step, text_step("done")])
    with tracer.start_as_current_span("the caller's request"):
        reader = run(
            options(model, tools=[FuncTool("a", inside), FuncTool("b", inside)], parallel_tools=True)
        )
    reader.result()
    spans = otel.wait_for("the caller's request")
    parents = {(name, parent) for name, parent, _kind, _status in tree(spans)}
    assert parents == {
        ("inside the model", "chat scripted"),
        ("chat scripted", "invoke_agent"),
        ("inside the tool", "execute_tool a"),
        ("inside the tool", "execute_tool b"),
        ("execute_tool a", "invoke_agent"),
        ("execute_tool b", "invoke_agent"),
        ("invoke_agent", "the caller's request"),
        ("the caller's request", ""),
    }
    assert len(spans) == 9  # with the second step's chat span
    assert len({span.context.trace_id for span in spans}) == 1


def test_an_anthropic_run_over_http_names_the_provider_and_server(otel: Telemetry) -> None:
    server = LocalServer(
        [
            json_reply(
                529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            ),
            sse_reply(
                sse(
                    message_start(input_tokens=10, output_tokens=1),
                    text_start(0),
                    text_delta(0, "Hello"),
                    block_stop(0),
                    message_delta("end_turn", output_tokens=5),
                    MESSAGE_STOP,
                )
            ),
        ]
    )
    try:
        model = AnthropicModel("claude-test", api_key="k", base_url=server.url)
        reader = run(
            options(
                model, max_output_tokens=256, retry_sleep=lambda _s: None, retry_jitter=lambda _a, _b: 1.0
            )
        )
        assert reader.result().text == "Hello"
    finally:
        server.close()
    chat, agent = otel.wait_for("invoke_agent")
    port = int(server.url.rsplit(":", 1)[1])
    server_attributes = {"server.address": "127.0.0.1", "server.port": port}
    assert attributes(chat) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-test",
        **server_attributes,
        "gen_ai.request.stream": True,
        "gen_ai.request.max_tokens": 256,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.response.model": "claude-test",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 0,
        "gen_ai.usage.cache_creation.input_tokens": 0,
    }
    (event,) = chat.events
    assert dict(event.attributes or {})["error.type"] == "overloaded"
    assert attributes(agent)["gen_ai.provider.name"] == "anthropic"


def test_a_structured_answer_asks_for_json_output(otel: Telemetry) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    reader = run(options(ScriptedModel([text_step('{"a": 1}')]), output_type=schema))
    assert reader.result().output == {"a": 1}
    chat, _agent = otel.wait_for("invoke_agent")
    assert attributes(chat)["gen_ai.output.type"] == "json"


def test_without_a_provider_a_run_is_not_observed() -> None:
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert observe(options(ScriptedModel([text_step("hi")]))) is None


def python(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_import_agentcore_does_not_import_opentelemetry() -> None:
    out = python(
        """
        import sys, agentcore
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry") or m.endswith(".otel")))
        """
    )
    assert out == "[]\n"


def test_without_opentelemetry_runs_work_and_import_nothing() -> None:
    out = python(
        """
        import sys

        class Absent:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ModuleNotFoundError(f"No module named {name!r}")

        sys.meta_path.insert(0, Absent())
        from agentcore import LoopOptions, generate, user_message
        from agentcore.integrations.demo_tools import demo_tools
        from agentcore.testing import TestModel

        question = [user_message("What time is it?")]
        result = generate(LoopOptions(model=TestModel(), messages=question, tools=demo_tools()))
        loaded = [m for m in sys.modules if "opentelemetry" in m or m.endswith(".otel")]
        print(len(result.steps), loaded)
        """
    )
    assert out == "2 []\n"


def test_a_global_provider_set_by_the_application_traces_runs_with_no_further_setup() -> None:
    out = python(
        """
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from agentcore import LoopOptions, generate, user_message
        from agentcore.integrations.demo_tools import demo_tools
        from agentcore.testing import TestModel

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        utc_now = demo_tools()[1]
        generate(LoopOptions(model=TestModel(), messages=[user_message("What time is it?")], tools=[utc_now]))
        spans = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in spans}
        print([(s.name, names.get(s.parent.span_id) if s.parent else None) for s in spans])
        data = reader.get_metrics_data()
        print(sorted(m.name for r in data.resource_metrics for sc in r.scope_metrics for m in sc.metrics))
        """
    )
    assert out.splitlines() == [
        "[('chat test-model', 'invoke_agent'), ('execute_tool utc_now', 'invoke_agent'), "
        "('chat test-model', 'invoke_agent'), ('invoke_agent', None)]",
        "['gen_ai.client.operation.duration', 'gen_ai.client.token.usage']",
    ]


# --- the pure mappings, table by table ------------------------------------------


class Branded(ScriptedModel):
    provider_name = "acme"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (AnthropicModel("claude-test", api_key="k"), "anthropic"),
        (OpenAIChatModel("gpt-test"), "openai"),
        (OpenAIResponsesModel("gpt-test"), "openai"),
        (OpenAIChatModel("llama", base_url="http://127.0.0.1:11434/v1"), "openai"),
        (Branded([]), "acme"),
        (ScriptedModel([]), "unknown"),
    ],
)
def test_provider_name(model: Any, expected: str) -> None:
    assert provider_name(model) == expected


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.anthropic.com", {"server.address": "api.anthropic.com", "server.port": 443}),
        ("http://127.0.0.1:11434/v1", {"server.address": "127.0.0.1", "server.port": 11434}),
        ("http://[::1]/v1", {"server.address": "::1", "server.port": 80}),
        ("", {}),
        (None, {}),
    ],
)
def test_server_attributes(base_url: object, expected: dict[str, Any]) -> None:
    assert server_attributes(base_url) == expected


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (ModelError(ErrorClass.RATE_LIMITED, status=429), "rate_limited"),
        (ModelError(ErrorClass.CONTEXT_LENGTH), "context_length"),
        (ModelError(ErrorClass.UPSTREAM), "upstream"),
        (Canceled("run canceled"), "agentcore.errors.Canceled"),
        (DeadlineExceeded("deadline"), "agentcore.errors.DeadlineExceeded"),
        (ConfigError("bad"), "agentcore.errors.ConfigError"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
    ],
)
def test_error_type(err: BaseException, expected: str) -> None:
    assert error_type(err) == expected


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (FinishReason.STOP, "stop"),
        (FinishReason.TOOL_CALLS, "tool_call"),
        (FinishReason.LENGTH, "length"),
        (FinishReason.STEP_LIMIT, "step_limit"),
        (FinishReason.CANCELED, "canceled"),
        (FinishReason.ERROR, "error"),
        (FinishReason.APPROVAL_REQUIRED, "approval_required"),
        (None, "error"),
    ],
)
def test_finish_reason(reason: FinishReason | None, expected: str) -> None:
    assert finish_reason(reason) == expected


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        (text_part("hi"), {"type": "text", "content": "hi"}),
        (reasoning_part(Reasoning(text="hmm", signature="s")), {"type": "reasoning", "content": "hmm"}),
        (
            tool_call_part(ToolCall(id="c1", name="f", input='{"a":1}')),
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"a": 1}},
        ),
        (
            tool_call_part(ToolCall(id="c1", name="f", input="{broken")),
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": "{broken"},
        ),
        (  # beyond the JSON decoder: the text as it came
            tool_call_part(ToolCall(id="c1", name="f", input=nested(20_000))),
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": nested(20_000)},
        ),
        (
            tool_result_part(ToolResult("c1", "f", "42")),
            {"type": "tool_call_response", "id": "c1", "response": "42"},
        ),
        (
            file_part(b"PNG", media_type="image/png"),
            {"type": "blob", "mime_type": "image/png", "modality": "image", "content": "UE5H"},
        ),
        (
            file_part(url="https://example.com/a.pdf", media_type="application/pdf"),
            {
                "type": "uri",
                "mime_type": "application/pdf",
                "modality": "document",
                "uri": "https://example.com/a.pdf",
            },
        ),
    ],
)
def test_message_part(part: ContentPart, expected: dict[str, Any]) -> None:
    assert message_part(part) == expected


def test_a_run_waiting_for_approval_is_traced_and_keeps_its_outcome(otel: Telemetry) -> None:
    @tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file.

        Args:
            path: the file.
        """
        return path

    model = ScriptedModel([tool_step(call("call_1", "delete", '{"path": "a"}'))])
    result = generate(LoopOptions(model=model, messages=[user_message("tidy")], tools=[delete]))
    assert result.finish_reason is FinishReason.APPROVAL_REQUIRED
    assert [c.id for c in result.pending] == ["call_1"]
    run_span = next(s for s in otel.wait_for("invoke_agent") if s.name == "invoke_agent")
    assert attributes(run_span)["gen_ai.response.finish_reasons"] == ("approval_required",)


class _Failing(SpanProcessor):
    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: Span, parent_context: object = None) -> None:
        if self.where == "start":
            raise RuntimeError("exporter down")

    def on_end(self, span: ReadableSpan) -> None:
        if self.where == "end":
            raise RuntimeError("exporter down")


@pytest.mark.parametrize(
    ("where", "logged"),
    [
        ("start", ["agentcore: tracing this run failed to start; the run goes on untraced"]),
        (
            "end",
            [
                "agentcore: tracing failed in step_finished; the run goes on",
                "agentcore: tracing failed in _tool_ended; the run goes on",
                "agentcore: tracing failed in step_finished; the run goes on",
                "agentcore: tracing failed in run_ended; the run goes on",
            ],
        ),
    ],
)
def test_a_failing_span_processor_does_not_change_the_run(
    otel: Telemetry, caplog: pytest.LogCaptureFixture, where: str, logged: list[str]
) -> None:
    otel.tracer_provider.add_span_processor(_Failing(where))
    model = ScriptedModel([tool_step(call("call_1", "broken")), text_step("done")])
    tools = [FuncTool("broken", broken)]
    result = generate(LoopOptions(model=model, messages=[user_message("hi")], tools=tools))
    assert (result.finish_reason, result.text) == (FinishReason.STOP, "done")
    assert [r.is_error for r in result.steps[0].tool_results] == [True]
    assert [r.getMessage() for r in caplog.records if r.name == "agentcore.integrations.otel"] == logged
