"""OpenTelemetry traces and metrics for runs, per the GenAI semantic conventions.

Install ``agentcore[otel]`` (``opentelemetry-api``) and set a global tracer
provider (and, for metrics, a meter provider) with the OpenTelemetry SDK:
every run is traced from then on, with no further setup. The loop looks for
OpenTelemetry only once the application has imported ``opentelemetry.trace``
or ``opentelemetry.metrics`` (nobody can have set a provider before that), so
a process without it pays two dictionary lookups per run and imports nothing;
while no provider is set, a run is not observed either.

What a run records follows the OpenTelemetry semantic conventions for
generative AI (development status) in the form semantic-conventions v1.37.0
gave them (``gen_ai.provider.name`` in place of ``gen_ai.system``, message
contents as ``gen_ai.input.messages`` / ``gen_ai.output.messages``), as
published since in the ``semantic-conventions-genai`` repository
(``docs/gen-ai/gen-ai-spans.md``, ``gen-ai-agent-spans.md``,
``gen-ai-metrics.md``; read in its late-2026 version, which adds the
``gen_ai.usage.cache_read.input_tokens`` and
``gen_ai.usage.cache_creation.input_tokens`` attributes):

* one ``invoke_agent {agent_name}`` span (kind INTERNAL) per run, a child of
  the span current where :func:`agentcore.run` was called;
* under it one ``chat {model}`` span (kind CLIENT) per model step, covering
  its retries; each retried failure is a ``gen_ai.client.operation.exception``
  event on it; the span is current while the model streams, so an
  instrumented HTTP client's spans nest under it;
* under the run span one ``execute_tool {tool}`` span (kind INTERNAL) per tool
  call, on whichever thread runs the call, current while the tool runs;
* the ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``
  histograms, recorded once per model step.

Message contents (system prompt, messages, model output, tool definitions,
arguments and results) are recorded only with ``LoopOptions(trace_content=True)``.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextvars import Token
from typing import Any, ParamSpec
from urllib.parse import urlsplit

from opentelemetry import context, metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from agentcore import __version__
from agentcore.errors import ModelError
from agentcore.model import Model
from agentcore.options import LoopOptions
from agentcore.tools import ToolInputError, parse_arguments
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
)

__all__ = ["RunTelemetry", "observe"]

_log = logging.getLogger(__name__)

SCOPE = "agentcore"
"""The instrumentation scope name of agentcore's tracer and meter."""

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
"""Bucket boundaries of ``gen_ai.client.token.usage`` (the conventions' advice), in tokens."""
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""Bucket boundaries of ``gen_ai.client.operation.duration`` (the conventions' advice), in seconds."""

RETRY_EVENT = "gen_ai.client.operation.exception"
"""The span event recorded on a ``chat`` span for each failed attempt that is retried."""

TOOL_ERROR = "tool_error"
"""``error.type`` of an ``execute_tool`` span whose result is an error the model reads."""

_PROVIDERS = {"agentcore.providers.anthropic": "anthropic", "agentcore.providers.openai": "openai"}
"""``gen_ai.provider.name`` by the package that defines the model's class."""

_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.TOOL_CALLS: "tool_call",
    FinishReason.LENGTH: "length",
    FinishReason.STEP_LIMIT: "step_limit",
    FinishReason.CANCELED: "canceled",
    FinishReason.ERROR: "error",
    FinishReason.APPROVAL_REQUIRED: "approval_required",
}
"""agentcore's finish reasons as the conventions' output messages spell them
(``stop``, ``tool_call``, ``length``, ``error``; the run-only ``step_limit`` and
``canceled`` in the same style)."""


class _Instruments:
    """The tracer and the two histograms of one pair of providers."""

    def __init__(self, tracer_provider: trace.TracerProvider, meter_provider: metrics.MeterProvider) -> None:
        self.tracer = tracer_provider.get_tracer(SCOPE, __version__)
        meter = meter_provider.get_meter(SCOPE, __version__)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )


_lock = threading.Lock()
_instruments: dict[tuple[int, int], tuple[object, object, _Instruments]] = {}
"""Instruments by ``(id(tracer provider), id(meter provider))``; the providers
are kept with them, so an id is never reused while its entry exists."""


def _instruments_of(
    tracer_provider: trace.TracerProvider, meter_provider: metrics.MeterProvider
) -> _Instruments:
    key = (id(tracer_provider), id(meter_provider))
    with _lock:
        entry = _instruments.get(key)
        if entry is None:
            entry = (tracer_provider, meter_provider, _Instruments(tracer_provider, meter_provider))
            _instruments[key] = entry
        return entry[2]


def observe(options: LoopOptions) -> RunTelemetry | None:
    """Start tracing a run about to start: its run span begins now, in the
    caller's context. None while neither a tracer provider nor a meter
    provider is set (nothing to record).

    Called by :func:`agentcore.run` on the caller's thread once the
    application has imported OpenTelemetry; the global providers are read
    every time, so a provider set after the first run is used from the next.
    """
    try:
        tracer_provider = trace.get_tracer_provider()
        meter_provider = metrics.get_meter_provider()
        if _unset(tracer_provider) and _unset(meter_provider):
            return None
        return RunTelemetry(_instruments_of(tracer_provider, meter_provider), options)
    except Exception:  # noqa: BLE001 - tracing must never change a run's outcome
        _log.warning("agentcore: tracing this run failed to start; the run goes on untraced", exc_info=True)
        return None


_P = ParamSpec("_P")


def _guarded(hook: Callable[_P, None]) -> Callable[_P, None]:
    """``hook`` with its exceptions logged (WARNING, with the traceback) instead
    of raised: an exporter or span processor that fails must not fail the run."""

    @functools.wraps(hook)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> None:
        try:
            hook(*args, **kwargs)
        except Exception:  # noqa: BLE001 - logged; the run goes on
            _log.warning("agentcore: tracing failed in %s; the run goes on", hook.__name__, exc_info=True)

    return guarded


def _unset(provider: object) -> bool:
    """True for the API's stand-ins while no provider is set: its proxies and
    no-op providers (the meter's proxy class is private, so it is known by
    its name; were it renamed, runs would be traced into the no-op, not lost)."""
    stand_ins = (trace.ProxyTracerProvider, trace.NoOpTracerProvider, metrics.NoOpMeterProvider)
    return isinstance(provider, stand_ins) or type(provider).__name__ == "_ProxyMeterProvider"


def provider_name(model: Model) -> str:
    """``gen_ai.provider.name`` for ``model``: ``anthropic`` and ``openai`` for
    agentcore's adapters (also for OpenAI-compatible servers, as the
    conventions ask: ``server.address`` tells them apart), else the model's
    ``provider_name`` attribute when it has one, else ``unknown``."""
    name = getattr(model, "provider_name", None)
    if isinstance(name, str) and name:
        return name
    package = ".".join(type(model).__module__.split(".")[:3])
    return _PROVIDERS.get(package, "unknown")


def server_attributes(base_url: object) -> dict[str, Any]:
    """``server.address`` and ``server.port`` from a model's ``base_url``
    (the scheme's default port when the URL has none); {} without one."""
    if not isinstance(base_url, str) or not base_url:
        return {}
    parts = urlsplit(base_url)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {"server.address": parts.hostname, "server.port": port}


def error_type(err: BaseException) -> str:
    """``error.type`` of a failure: a :class:`ModelError`'s class in lower case
    (``rate_limited``, ``overloaded``, ``transient``, ``auth``,
    ``invalid_request``, ``context_length``, ``upstream``), otherwise the
    exception's qualified class name (``agentcore.errors.Canceled``)."""
    if isinstance(err, ModelError):
        return err.error_class.name.lower()
    return qualified_name(err)


def qualified_name(err: BaseException) -> str:
    """``exception.type``: the module and qualified name of ``err``'s class
    (just the name for a builtin: ``KeyError``)."""
    kind = type(err)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def usage_attributes(usage: Usage) -> dict[str, int]:
    """The ``gen_ai.usage.*`` attributes of ``usage``. The conventions count
    cache reads and writes in ``input_tokens``; agentcore's ``Usage.input``
    holds the reads but not the writes, which are added here."""
    return {
        "gen_ai.usage.input_tokens": usage.input + usage.cache_write,
        "gen_ai.usage.output_tokens": usage.output,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write,
    }


def finish_reason(reason: FinishReason | None) -> str:
    """A finish reason as the conventions spell it (see :data:`_FINISH`)."""
    if reason is None:
        return "error"
    return _FINISH.get(reason) or reason.value.replace("-", "_")


def _arguments(text: str) -> Any:
    """Tool arguments as an object when they are a JSON object (as the
    conventions ask), else the text as it came."""
    try:
        return parse_arguments(text)
    except ToolInputError:
        return text


def _modality(media_type: str) -> str:
    kind = media_type.split("/", 1)[0]
    return kind if kind in ("image", "video", "audio") else "document"


def message_part(part: ContentPart) -> dict[str, Any]:
    """One content part in the conventions' message-part shape (``text``,
    ``reasoning``, ``tool_call``, ``tool_call_response``, ``uri`` or
    ``blob`` with base64 ``content``; a provider item as a generic part of
    its own ``type``, its readable ``text`` as ``content``)."""
    kind = part.kind
    if kind is ContentPartKind.TOOL_CALL and part.tool_call is not None:
        call = part.tool_call
        return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": _arguments(call.input)}
    if kind is ContentPartKind.TOOL_RESULT and part.tool_result is not None:
        result = part.tool_result
        return {"type": "tool_call_response", "id": result.tool_call_id, "response": result.content}
    if kind is ContentPartKind.REASONING and part.reasoning is not None:
        return {"type": "reasoning", "content": part.reasoning.text}
    if kind is ContentPartKind.PROVIDER_ITEM and part.provider_item is not None:
        return {"type": part.provider_item.type, "content": part.provider_item.text}
    if kind is ContentPartKind.FILE and part.file is not None:
        file = part.file
        shape = {"mime_type": file.media_type, "modality": _modality(file.media_type)}
        if file.data is None:
            return {"type": "uri", **shape, "uri": file.url}
        return {"type": "blob", **shape, "content": base64.b64encode(file.data).decode("ascii")}
    return {"type": "text", "content": part.text}


def messages_json(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages``: the messages as the conventions' JSON array."""
    return _json([{"role": m.role.value, "parts": [message_part(p) for p in m.content]} for m in messages])


def output_json(content: Sequence[ContentPart], reason: FinishReason | None) -> str:
    """``gen_ai.output.messages``: one assistant message with its finish reason."""
    parts = [message_part(p) for p in content]
    return _json([{"role": "assistant", "parts": parts, "finish_reason": finish_reason(reason)}])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class RunTelemetry:
    """Records one run: created on the caller's thread by :func:`observe`,
    which starts the run span; then called by the loop on its worker thread
    (steps, retries, the run's end) and on whichever thread runs a tool call.

    Only the worker touches the step state; a tool call touches nothing
    shared but the immutable run context, so no lock is needed.
    """

    def __init__(self, instruments: _Instruments, options: LoopOptions) -> None:
        model = options.model
        self._instruments = instruments
        self._content = options.trace_content
        self._common: dict[str, Any] = {
            "gen_ai.provider.name": provider_name(model),
            "gen_ai.request.model": model.model_id,
            **server_attributes(getattr(model, "base_url", None)),
        }
        self._system = options.system
        self._metric = {"gen_ai.operation.name": "chat", **self._common}
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **self._common}
        if options.agent_name:
            attributes["gen_ai.agent.name"] = options.agent_name
        if self._content:
            attributes.update(self._inputs(options.messages))
        name = f"invoke_agent {options.agent_name}" if options.agent_name else "invoke_agent"
        self._run = instruments.tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        self._context = trace.set_span_in_context(self._run)
        self._step: Span | None = None
        self._token: Token[Context] | None = None
        self._started = 0.0
        self._output_type = "json" if options.output_type is not None else None
        self._descriptions: dict[str, str] = {}

    def _inputs(self, messages: Sequence[Message]) -> dict[str, str]:
        attributes = {"gen_ai.input.messages": messages_json(messages)}
        if self._system:
            attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": self._system}])
        return attributes

    @_guarded
    def step_started(self, request: Request) -> None:
        """Start the step's ``chat`` span and make it current on the worker."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            **self._common,
            "gen_ai.request.stream": True,
        }
        if request.max_output_tokens:
            attributes["gen_ai.request.max_tokens"] = request.max_output_tokens
        if self._output_type is not None:
            attributes["gen_ai.output.type"] = self._output_type
        if self._content:
            attributes.update(self._inputs(request.messages))
            definitions = [
                {
                    "type": "function",
                    "name": d.name,
                    "description": d.description,
                    "parameters": _arguments(d.input_schema),
                }
                for d in request.tools
            ]
            attributes["gen_ai.tool.definitions"] = _json(definitions)
        self._descriptions = {d.name: d.description for d in request.tools if d.description}
        name = f"chat {self._common['gen_ai.request.model']}"
        span = self._instruments.tracer.start_span(name, self._context, SpanKind.CLIENT, attributes)
        self._step = span
        self._started = time.perf_counter()
        self._token = context.attach(trace.set_span_in_context(span, self._context))

    @_guarded
    def retried(self, err: BaseException, attempt: int, delay: float) -> None:
        """Record a failed attempt that is retried after ``delay`` seconds."""
        if self._step is None:
            return
        attributes: dict[str, Any] = {
            "exception.type": qualified_name(err),
            "error.type": error_type(err),
            "agentcore.retry.attempt": attempt,
            "agentcore.retry.delay": delay,
        }
        if isinstance(err, ModelError):
            attributes["exception.message"] = str(err)
        self._step.add_event(RETRY_EVENT, attributes)

    @_guarded
    def step_finished(self, finish: StreamPart, content: Sequence[ContentPart]) -> None:
        """End the step's span with its finish reason and usage, and record its metrics."""
        span = self._end_step()
        if span is None:
            return
        usage = finish.usage or Usage()
        span.set_attribute("gen_ai.response.finish_reasons", (finish_reason(finish.finish_reason),))
        if finish.model_id:  # the model that answered: a FallbackModel's fallback, a plan's model
            span.set_attribute("gen_ai.response.model", finish.model_id)
        span.set_attributes(usage_attributes(usage))
        if self._content:
            span.set_attribute("gen_ai.output.messages", output_json(content, finish.finish_reason))
        span.end()
        metric = self._metric
        self._instruments.duration.record(time.perf_counter() - self._started, metric)
        self._instruments.tokens.record(
            usage.input + usage.cache_write, {**metric, "gen_ai.token.type": "input"}
        )
        self._instruments.tokens.record(usage.output, {**metric, "gen_ai.token.type": "output"})

    def _end_step(self) -> Span | None:
        span, self._step = self._step, None
        token, self._token = self._token, None
        if token is not None:
            context.detach(token)
        return span

    def tool_call(self, call: ToolCall, execute: Callable[[], ToolResult]) -> ToolResult:
        """Run ``execute`` (the call) under its ``execute_tool`` span."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        description = self._descriptions.get(call.name)
        if description:
            attributes["gen_ai.tool.description"] = description
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = call.input
        try:
            span = self._instruments.tracer.start_span(
                f"execute_tool {call.name}", self._context, SpanKind.INTERNAL, attributes
            )
            token = context.attach(trace.set_span_in_context(span, self._context))
        except Exception:  # noqa: BLE001 - tracing must never change a run's outcome
            _log.warning("agentcore: tracing failed in tool_call; the run goes on", exc_info=True)
            return execute()
        try:
            result = execute()
        except BaseException as exc:
            self._tool_ended(span, token, error_type(exc), None)
            raise
        self._tool_ended(span, token, TOOL_ERROR if result.is_error else None, result)
        return result

    @_guarded
    def _tool_ended(
        self, span: Span, token: Token[Context], failure: str | None, result: ToolResult | None
    ) -> None:
        """End a call's span: failed with ``failure``, or with the result's
        content when contents are recorded."""
        try:
            if failure is not None:
                _failed(span, failure)
            elif self._content and result is not None:
                span.set_attribute("gen_ai.tool.call.result", result.content)
        finally:
            context.detach(token)
            span.end()

    @_guarded
    def run_ended(self, terminal: StreamPart, history: Sequence[Message]) -> None:
        """End the run: a step still open ends with the run's error, then the
        run span with the finish reason, the usage of the whole run and, with
        content, the last assistant message."""
        err = terminal.err
        step = self._end_step()
        if step is not None:
            kind = error_type(err) if err is not None else "error"
            _failed(step, kind)
            step.end()
            metric = {**self._metric, "error.type": kind}
            self._instruments.duration.record(time.perf_counter() - self._started, metric)
        span = self._run
        span.set_attribute("gen_ai.response.finish_reasons", (finish_reason(terminal.finish_reason),))
        span.set_attributes(usage_attributes(terminal.total_usage or Usage()))
        if self._content:
            last = next((m for m in reversed(history) if m.role is Role.ASSISTANT), None)
            if last is not None:
                span.set_attribute(
                    "gen_ai.output.messages", output_json(last.content, terminal.finish_reason)
                )
        if err is not None:
            _failed(span, error_type(err))
        span.end()


def _failed(span: Span, kind: str) -> None:
    """Mark ``span`` failed, as the conventions' "Recording Errors" asks:
    status ERROR and ``error.type``."""
    span.set_status(Status(StatusCode.ERROR))
    span.set_attribute("error.type", kind)
