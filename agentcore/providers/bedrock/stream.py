"""What a Bedrock ``ConverseStream`` stream means: the pure stream mapping of
:class:`agentcore.providers.bedrock.BedrockConverseModel` (no I/O).

The body is an AWS event stream whose messages the framing decodes to
``Event(event=<:event-type>, data=<JSON payload>)``
(:func:`agentcore.providers.aws.event_stream`); an exception message is a
:class:`ModelError` there. The events
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html),
each with a random ``p`` padding field that is ignored:

* ``messageStart {role}``: nothing.
* ``contentBlockStart {contentBlockIndex, start}``: a ``toolUse`` block's
  ``toolUseId`` and ``name`` (and ``type``: ``server_tool_use`` for a
  server tool), or a server tool's ``toolResult`` (``toolUseId``,
  ``status``, ``type``). Text and reasoning blocks have no start event.
* ``contentBlockDelta {contentBlockIndex, delta}``
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlockDelta.html):
  ``text`` (a ``text-delta``), ``toolUse.input`` (a fragment of the call's
  JSON input; a ``tool-call-delta`` with ``stream_tool_input``),
  ``reasoningContent`` (``text``: a ``reasoning-delta``; ``signature``;
  ``redactedContent``, base64 text), ``toolResult`` (a list of a server
  tool's result items), ``citation`` (a source the text cites).
* ``contentBlockStop {contentBlockIndex}``: the block is whole: a
  ``reasoning`` part (text, signature, or the redacted data), a ``tool-call``
  part (the input joined; ``{}`` when none came), or a ``provider-item`` of
  type :data:`~agentcore.providers.bedrock.request.KEPT_BLOCK` for a server
  tool's block, holding it as the request sends it back.
* ``messageStop {stopReason, additionalModelResponseFields}``: why the step
  stopped (:func:`map_finish_reason`). The step is ``complete`` from here.
* ``metadata {usage, metrics, trace}``: the usage (:func:`usage_from`), after
  ``messageStop``; it ends the stream (``done``).

Decided here: the step is complete at ``messageStop``, not at ``metadata``:
the answer is whole by then, and a stream cut between the two (a reset, the
idle timeout) ends the step with what came, its usage unknown and counted 0,
with a WARNING naming the lost usage; failing the step would throw the answer
away and bill it again on a retry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from agentcore.errors import ErrorClass, ModelError
from agentcore.providers import fields
from agentcore.providers.bedrock.request import FORMAT, KEPT_BLOCK
from agentcore.transport.sse import Event
from agentcore.types import Citation, FinishReason, ProviderItem, Reasoning, StreamPart, ToolCall, Usage

_log = logging.getLogger(__name__)

SERVER_TOOL_USE = "server_tool_use"
"""The ``toolUse.type`` of a call a server tool ran (Nova's code interpreter,
https://docs.aws.amazon.com/nova/latest/nova2-userguide/code-interpreter.html)."""
STOP_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
}
"""The ``stopReason`` values
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_MessageStopEvent.html)
and their :class:`FinishReason`."""
RETRIED_REASONS = frozenset({"malformed_model_output", "malformed_tool_use"})
"""Stop reasons that fail the step as ``TRANSIENT``: the model wrote output or
a tool use that does not parse, which the same request usually does not
repeat (retried only before any output reached the reader)."""


def map_finish_reason(reason: str, calls: int) -> FinishReason:
    """The :class:`FinishReason` of a ``stopReason`` (:data:`STOP_REASONS`):
    ``end_turn`` and ``stop_sequence`` ``stop``, ``tool_use`` ``tool-calls``
    (``stop`` when the step made no client call: a server tool's use only),
    ``max_tokens`` and ``model_context_window_exceeded`` ``length`` (as the
    Anthropic mapping decides), ``guardrail_intervened`` and
    ``content_filtered`` ``content-filter``.

    Raises:
        ModelError: ``TRANSIENT`` for :data:`RETRIED_REASONS`; ``UPSTREAM``
            for an unknown reason, naming it.
    """
    if reason in RETRIED_REASONS:
        raise ModelError(ErrorClass.TRANSIENT, message=f"Bedrock stopped the answer with {reason!r}")
    mapped = STOP_REASONS.get(reason)
    if mapped is None:
        raise ModelError(
            ErrorClass.UPSTREAM, message=f"Bedrock stopped with the unknown reason {reason[:100]!r}"
        )
    if mapped is FinishReason.TOOL_CALLS and not calls:
        return FinishReason.STOP
    return mapped


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """The :class:`Usage` of ``metadata.usage``
    (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html),
    design.md "Usage": ``inputTokens`` leaves the cache reads and writes out
    (``totalTokens`` is their sum with the output), so ``input = inputTokens
    + cacheReadInputTokens``, ``cache_read = cacheReadInputTokens``,
    ``cache_write = cacheWriteInputTokens``, ``output = outputTokens``. An
    absent count is 0; a count that is not one is ``UPSTREAM``."""

    def count(key: str) -> int:
        return fields.token_count(usage, key, f"metadata.usage.{key}") or 0

    read = count("cacheReadInputTokens")
    return Usage(
        input=count("inputTokens") + read,
        output=count("outputTokens"),
        cache_read=read,
        cache_write=count("cacheWriteInputTokens"),
    )


class _Block:
    """One content block as it streams."""

    def __init__(self) -> None:
        self.kind = ""  # "text", "reasoning", "tool", "kept-use", "kept-result"
        self.parts: list[str] = []
        self.signature = ""
        self.redacted = ""
        self.start: Mapping[str, Any] = {}
        self.results: list[Any] = []


class StreamState:
    """One step's state over a ``ConverseStream`` stream (the
    :class:`agentcore.providers.shell.StateMachine` protocol).

    Args:
        origin: the service's origin, stamped on the step's reasoning blocks
            and kept blocks.
        stream_tool_input: emit ``tool-call-delta`` parts as client tool
            calls' input streams (``Request.stream_tool_input``).
    """

    def __init__(self, origin: str = "", *, stream_tool_input: bool = False) -> None:
        self.complete = False
        self.done = False
        self._origin = origin
        self._deltas = stream_tool_input
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        self._stop = ""
        self._usage: Mapping[str, Any] | None = None

    def feed(self, event: Event) -> list[StreamPart]:
        """The parts one event completes (the module docstring); an event of
        another type is ignored.

        Raises:
            ModelError: ``UPSTREAM`` for a field of the wrong JSON type.
        """
        data = event.data
        if not isinstance(data, dict):
            raise fields.wrong_shape(f"the {event.event} event", data, "an object")
        if event.event == "contentBlockDelta":
            return self._delta(data)
        if event.event == "contentBlockStart":
            self._start(data)
        elif event.event == "contentBlockStop":
            return self._stop_block(data)
        elif event.event == "messageStop":
            self._stop = fields.text(data, "stopReason", "messageStop.stopReason")
            self.complete = True
        elif event.event == "metadata":
            self._usage = fields.mapping(data, "usage", "metadata.usage")
            self.done = self.complete
        return []

    def _block(self, data: Mapping[str, Any], where: str) -> _Block:
        index = data.get("contentBlockIndex", 0)
        if type(index) is not int:
            raise fields.wrong_shape(f"{where}.contentBlockIndex", index, "an integer")
        return self._blocks.setdefault(index, _Block())

    def _start(self, data: Mapping[str, Any]) -> None:
        block = self._block(data, "contentBlockStart")
        start = fields.mapping(data, "start", "contentBlockStart.start")
        if "toolUse" in start:
            tool = fields.mapping(start, "toolUse", "contentBlockStart.start.toolUse")
            server = fields.text(tool, "type", "contentBlockStart.start.toolUse.type") == SERVER_TOOL_USE
            block.kind, block.start = ("kept-use" if server else "tool"), tool
        elif "toolResult" in start:
            block.kind = "kept-result"
            block.start = fields.mapping(start, "toolResult", "contentBlockStart.start.toolResult")

    def _delta(self, data: Mapping[str, Any]) -> list[StreamPart]:
        block = self._block(data, "contentBlockDelta")
        delta = fields.mapping(data, "delta", "contentBlockDelta.delta")
        if "text" in delta:
            text = fields.text(delta, "text", "contentBlockDelta.delta.text")
            block.kind = block.kind or "text"
            return [StreamPart.text_delta(text)] if text else []
        if "reasoningContent" in delta:
            reasoning = fields.mapping(delta, "reasoningContent", "contentBlockDelta.delta.reasoningContent")
            block.kind = "reasoning"
            text = fields.text(reasoning, "text", "delta.reasoningContent.text")
            block.parts.append(text)
            block.signature += fields.text(reasoning, "signature", "delta.reasoningContent.signature")
            block.redacted += fields.text(
                reasoning, "redactedContent", "delta.reasoningContent.redactedContent"
            )
            return [StreamPart.reasoning_delta(text)] if text else []
        if "toolUse" in delta:
            tool = fields.mapping(delta, "toolUse", "contentBlockDelta.delta.toolUse")
            fragment = fields.text(tool, "input", "contentBlockDelta.delta.toolUse.input")
            block.parts.append(fragment)
            if self._deltas and fragment and block.kind == "tool":
                call_id = fields.text(block.start, "toolUseId", "toolUse.toolUseId")
                name = fields.text(block.start, "name", "toolUse.name")
                return [StreamPart.tool_call_delta(call_id, name, fragment)]
            return []
        if "toolResult" in delta:
            block.results += fields.array(delta, "toolResult", "contentBlockDelta.delta.toolResult")
        elif "citation" in delta:
            citation = fields.mapping(delta, "citation", "contentBlockDelta.delta.citation")
            return [StreamPart.citation_event(_citation(citation))]
        return []

    def _stop_block(self, data: Mapping[str, Any]) -> list[StreamPart]:
        index = data.get("contentBlockIndex", 0)
        block = self._blocks.pop(index, None) if type(index) is int else None
        if block is None:
            return []
        if block.kind == "reasoning":
            reasoning = Reasoning(
                text="".join(block.parts),
                signature=block.signature,
                data=block.redacted,
                format=FORMAT,
                origin=self._origin,
            )
            return [StreamPart.reasoning_event(reasoning)]
        if block.kind == "tool":
            self._calls += 1
            call = ToolCall(
                id=fields.text(block.start, "toolUseId", "toolUse.toolUseId"),
                name=fields.text(block.start, "name", "toolUse.name"),
                input="".join(block.parts) or "{}",
            )
            return [StreamPart.tool_call_event(call)]
        if block.kind == "kept-use":
            text = "".join(block.parts)
            kept = {**block.start, "input": json.loads(text) if text else {}}
            return [self._kept({"toolUse": kept})]
        if block.kind == "kept-result":
            return [self._kept({"toolResult": {**block.start, "content": block.results}})]
        return []

    def _kept(self, block: Mapping[str, Any]) -> StreamPart:
        data = json.dumps(block, ensure_ascii=False)
        item = ProviderItem(type=KEPT_BLOCK, data=data, format=FORMAT, origin=self._origin)
        return StreamPart.provider_item_event(item)

    def finish(self) -> list[StreamPart]:
        """The ``step-finish``: the mapped stop reason with the usage
        (all zero, with a WARNING, when ``metadata`` never came).

        Raises:
            ModelError: ``TRANSIENT`` when the stream ended before
                ``messageStop``; as :func:`map_finish_reason`.
        """
        if not self.complete:
            raise ModelError(ErrorClass.TRANSIENT, message="the stream ended before Bedrock's messageStop")
        if self._usage is None:
            _log.warning(
                "agentcore: the Bedrock stream ended before its usage (metadata); counted as 0 tokens"
            )
        reason = map_finish_reason(self._stop, self._calls)
        return [StreamPart.step_finish(reason, usage_from(self._usage or {}))]


def _citation(citation: Mapping[str, Any]) -> Citation:
    """A :class:`Citation` of a ``citation`` delta
    (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CitationsDelta.html):
    its ``title``, the cited text of ``sourceContent``, the whole object as ``data``."""
    cited = "".join(
        fields.text(item, "text", "citation.sourceContent.text")
        for item in fields.array(citation, "sourceContent", "citation.sourceContent")
        if isinstance(item, dict)
    )
    return Citation(
        title=fields.text(citation, "title", "citation.title"),
        cited_text=cited,
        type="bedrock-citation",
        data=json.dumps(citation, ensure_ascii=False),
    )
