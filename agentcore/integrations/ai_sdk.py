"""Speak the AI SDK's UI message stream protocol: what its ``useChat`` reads and sends.

The protocol is the AI SDK's "data stream protocol" for AI SDK UI
(https://ai-sdk.dev/docs/ai-sdk-ui/stream-protocol, AI SDK 6), checked against
the ``uiMessageChunkSchema`` the npm package ``ai`` 6.0.325 parses every event
with, and pinned there: examples/chat_ui/package.json and the test that runs
the package's own reader (``readUIMessageStream`` behind ``DefaultChatTransport``)
on what this module writes. ``ai`` 7.x (which needs Node 22) reads the same
stream: the same header version ``v1`` and the same part names and required
fields; it adds parts and optional fields this module does not send.

A response is a Server-Sent Events stream with the header in
:data:`UI_MESSAGE_STREAM_HEADERS` (``x-vercel-ai-ui-message-stream: v1``),
each event a ``data:`` line holding one JSON part, and ``data: [DONE]`` last.
:class:`UIMessageStreamEncoder` writes it, given as ``encode`` to
:func:`agentcore.integrations.web.sse_stream` (WSGI) or
:func:`agentcore.integrations.asgi.sse_body` (ASGI), which keep their
heartbeats (SSE comments, which the AI SDK's parser skips) and their cancel on
disconnect::

    body = request.get_json()
    messages = messages_from_ui(body["messages"])
    reader = run(LoopOptions(model=model, messages=messages, tools=tools), Context(timeout=300))
    stream = sse_stream(reader, encode=UIMessageStreamEncoder())
    return Response(stream, mimetype=CONTENT_TYPE, headers={**SSE_HEADERS, **UI_MESSAGE_STREAM_HEADERS})

The parts, in the order :class:`~agentcore.integrations.chat.ChatStreamEncoder`
gives them:

===================  ==================================================
agentcore part       UI message stream parts
===================  ==================================================
(the first part)     ``start`` with ``messageId``
(a step's first)     ``start-step``; ``finish-step`` when the next step
                     starts or the run ends (after the step's tool results)
``text-delta``       ``text-start``, ``text-delta`` ..., ``text-end``
``reasoning-delta``  ``reasoning-start``, ``reasoning-delta`` ...,
``reasoning``        ``reasoning-end`` (visible text only)
``tool-call-delta``  ``tool-input-start``, ``tool-input-delta`` ...
``tool-call``        ``tool-input-available`` (``input`` the parsed JSON;
                     the raw text when the model's JSON is malformed)
``tool-result``      ``tool-output-available`` (``output`` the result's
                     text), or ``tool-output-error`` (``errorText``) for an
                     error result; then a ``file`` part per file of the
                     result that has a URL or is small enough to inline
                     (:func:`agentcore.integrations.web.file_to_dict`)
``citation``         ``source-url`` (a web source) or ``source-document``
                     (a file or document: ``mediaType`` ``text/plain``,
                     ``title`` the citation's title or type)
``compaction``       ``data-compaction``, transient (``useChat``'s ``onData``
                     sees it; the message keeps no part):
                     :meth:`Compaction.to_dict`
``provider-item``    nothing (opaque, for the provider only)
``nested``           ``data-nested``, transient: ``{"path": [...], "part":
                     ...}``, the sub-run's part in agentcore's own JSON
                     (:func:`agentcore.integrations.web.part_to_dict`); the
                     message keeps only the agent tool's output
``handoff``          ``data-handoff`` ``{"agent": name}``, kept in the
                     message (the chat shows who answers from there on)
``finish``           ``finish`` with ``finishReason`` (``stop``,
                     ``length``, ``content-filter``, ``tool-calls``; the
                     rest ``other``) and ``messageMetadata``
                     ``{"finish_reason", "total_usage"}``: agentcore's own
                     reason and :meth:`Usage.to_dict`
``error``            ``error`` with ``errorText`` (``str(err)``, as
                     :func:`agentcore.integrations.web.error_to_dict` gives
                     it) and ``finish`` with ``finishReason`` ``error``
                     (a guardrail's trip and a deadline that passed too); a
                     cancel sends ``abort``
                     with ``reason`` instead
===================  ==================================================

Tool parts are dynamic (``dynamic: true``; in the message, ``dynamic-tool``
parts with a ``toolName``): the tools are the server's, and the browser has
no types for them. :func:`messages_from_ui` reads them back, and static
``tool-<name>`` parts as well.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ChatRequestError
from agentcore.integrations.chat import (
    ChatStreamEncoder,
    Event,
    answerable,
    field,
    file_from_url,
    input_value,
    json_input,
    objects,
    stopped,
)
from agentcore.integrations.web import error_to_dict, file_to_dict, part_to_dict
from agentcore.types import (
    Citation,
    Compaction,
    ContentPart,
    ContentPartKind,
    FinishReason,
    Message,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    text_part,
    tool_call_part,
    tool_result_part,
)

__all__ = ["DONE", "UI_MESSAGE_STREAM_HEADERS", "UIMessageStreamEncoder", "messages_from_ui"]

UI_MESSAGE_STREAM_HEADERS: dict[str, str] = {"x-vercel-ai-ui-message-stream": "v1"}
"""The header that marks a response as a UI message stream, version 1 (send
it with :data:`agentcore.integrations.web.SSE_HEADERS`)."""

DONE = b"data: [DONE]\n\n"
"""The event that ends the stream."""

_FINISH_REASONS = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.CONTENT_FILTER: "content-filter",
    FinishReason.TOOL_CALLS: "tool-calls",
    FinishReason.ERROR: "error",
}


class UIMessageStreamEncoder(ChatStreamEncoder):
    """Writes a run as the AI SDK's UI message stream (the module's table):
    the ``encode`` of :func:`agentcore.integrations.web.sse_stream` or
    :func:`agentcore.integrations.asgi.sse_body`. One per response.

    Args:
        message_id: the assistant message's id (the ``start`` part's
            ``messageId``); a fresh ``msg-<hex>`` when None.
    """

    def __init__(self, message_id: str | None = None) -> None:
        super().__init__(message_id or f"msg-{uuid.uuid4().hex}")

    def on_start(self) -> list[Event]:
        return [{"type": "start", "messageId": self.message_id}]

    def on_step_start(self, step: int) -> list[Event]:
        return [{"type": "start-step"}]

    def on_step_end(self, step: int) -> list[Event]:
        return [{"type": "finish-step"}]

    def on_text_start(self, block: str) -> list[Event]:
        return [{"type": "text-start", "id": block}]

    def on_text_delta(self, block: str, text: str) -> list[Event]:
        return [{"type": "text-delta", "id": block, "delta": text}]

    def on_text_end(self, block: str) -> list[Event]:
        return [{"type": "text-end", "id": block}]

    def on_reasoning_start(self, block: str) -> list[Event]:
        return [{"type": "reasoning-start", "id": block}]

    def on_reasoning_delta(self, block: str, text: str) -> list[Event]:
        return [{"type": "reasoning-delta", "id": block, "delta": text}]

    def on_reasoning_end(self, block: str) -> list[Event]:
        return [{"type": "reasoning-end", "id": block}]

    def on_tool_input_start(self, call: ToolCall) -> list[Event]:
        return [{"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name, "dynamic": True}]

    def on_tool_input_delta(self, call: ToolCall) -> list[Event]:
        return [{"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": call.input}]

    def on_tool_input_end(self, call: ToolCall, streamed: bool) -> list[Event]:
        return [
            {
                "type": "tool-input-available",
                "toolCallId": call.id,
                "toolName": call.name,
                "input": input_value(call.input),
                "dynamic": True,
            }
        ]

    def on_tool_result(self, result: ToolResult) -> list[Event]:
        out: list[Event]
        if result.is_error:
            out = [
                {"type": "tool-output-error", "toolCallId": result.tool_call_id, "errorText": result.content}
            ]
        else:
            out = [
                {"type": "tool-output-available", "toolCallId": result.tool_call_id, "output": result.content}
            ]
        out[0]["dynamic"] = True
        for file in result.files:
            shown = file_to_dict(file)
            url = shown.get("url") or shown.get("data_url")
            if url:
                out.append({"type": "file", "url": url, "mediaType": file.media_type})
        return out

    def on_citation(self, citation: Citation, source_id: str) -> list[Event]:
        if citation.url:
            event: Event = {"type": "source-url", "sourceId": source_id, "url": citation.url}
            if citation.title:
                event["title"] = citation.title
            return [event]
        title = citation.title or citation.type or "source"
        return [{"type": "source-document", "sourceId": source_id, "mediaType": "text/plain", "title": title}]

    def on_compaction(self, compaction: Compaction) -> list[Event]:
        return [{"type": "data-compaction", "data": compaction.to_dict(), "transient": True}]

    def on_finish(self, part: StreamPart) -> list[Event]:
        assert part.finish_reason is not None
        return [self._finish(part, _FINISH_REASONS.get(part.finish_reason, "other"))]

    def on_error(self, part: StreamPart) -> list[Event]:
        assert part.err is not None
        message = error_to_dict(part.err)["err"]
        if stopped(part):
            return [{"type": "abort", "reason": message}]
        return [{"type": "error", "errorText": message}, self._finish(part, "error")]

    def _finish(self, part: StreamPart, reason: str) -> Event:
        assert part.finish_reason is not None
        return {
            "type": "finish",
            "finishReason": reason,
            "messageMetadata": {
                "finish_reason": part.finish_reason.value,
                "total_usage": part.total_usage.to_dict(),
            },
        }

    def on_nested(self, path: tuple[str, ...], part: StreamPart) -> list[Event]:
        return [
            {
                "type": "data-nested",
                "data": {"path": list(path), "part": part_to_dict(part)},
                "transient": True,
            }
        ]

    def on_handoff(self, agent: str) -> list[Event]:
        return [{"type": "data-handoff", "data": {"agent": agent}}]

    def trailer(self) -> bytes:
        return DONE


def messages_from_ui(messages: Any) -> list[Message]:
    """The history ``useChat`` sent (the ``messages`` of its request body, a
    list of UI messages) as agentcore messages.

    Rules:

    * A user message's ``text`` parts become text, its ``file`` parts files
      (a ``data:`` URL's bytes, or an ``http(s)`` URL the provider fetches).
    * An assistant message is cut at its ``step-start`` parts; each step
      becomes an assistant message (its text and tool calls) followed by a
      tool message with the results of those calls (``output-available``: the
      output, as text or JSON text; ``output-error`` and ``output-denied``:
      an error result). A call with no result yet (a run stopped while its
      tool ran) is left out, with its step's text kept: a provider refuses a
      call without its result.
    * ``reasoning`` parts are left out: a provider takes reasoning back only
      with its signature or encrypted data, which the browser never had.
      Keep the history on the server (a session) where reasoning matters.
    * ``source-*``, ``step-start`` and ``data-*`` parts are display only and
      left out, and so are an assistant message's ``file`` parts (a tool's
      files as the stream showed them): the model saw them in that turn, and
      a server that keeps the history (a session) keeps them whole.
    * A ``system`` message is refused: the system prompt is the server's
      (``LoopOptions.system``), never the browser's.

    Args:
        messages: the decoded JSON list.

    Returns:
        The messages, oldest first.

    Raises:
        ChatRequestError: the JSON does not fit the protocol (its ``path``
            says where), a ``system`` message, a user message with neither
            text nor files, nothing left to answer, or tool calls and results
            that do not pair up (two calls with one id, two results for one
            call: :func:`agentcore.integrations.chat.answerable`).
    """
    if not isinstance(messages, list):
        raise ChatRequestError("messages", f"must be a list of UI messages, got {type(messages).__name__}")
    out: list[Message] = []
    for path, message in objects(messages, "messages"):
        role = field(message, "role", str, path)
        parts = field(message, "parts", list, path)
        if role == "user":
            out.append(_user_message(parts, path))
        elif role == "assistant":
            out.extend(_assistant_messages(parts, path))
        elif role == "system":
            raise ChatRequestError(
                f"{path}.role", "a system message is the server's to give, not the browser's"
            )
        else:
            raise ChatRequestError(f"{path}.role", f"must be 'user' or 'assistant', got {role!r}")
    return answerable(out)


def _parts(parts: Sequence[Any], path: str) -> list[tuple[str, Mapping[str, Any], str]]:
    """Each part with its type and path; checks that it is an object with a ``type``."""
    return [(field(part, "type", str, where), part, where) for where, part in objects(parts, f"{path}.parts")]


def _user_message(parts: Sequence[Any], path: str) -> Message:
    content: list[ContentPart] = []
    for kind, part, where in _parts(parts, path):
        if kind == "text":
            content.append(text_part(field(part, "text", str, where)))
        elif kind == "file":
            file = file_from_url(
                field(part, "url", str, where),
                field(part, "mediaType", str, where),
                field(part, "filename", str, where, default=""),
                where,
            )
            content.append(ContentPart(kind=ContentPartKind.FILE, file=file))
    if not content:
        raise ChatRequestError(f"{path}.parts", "a user message needs a text or a file part")
    return Message(role=Role.USER, content=tuple(content))


def _assistant_messages(parts: Sequence[Any], path: str) -> list[Message]:
    out: list[Message] = []
    content: list[ContentPart] = []
    results: list[ContentPart] = []

    def end_step() -> None:
        if content:
            out.append(Message(role=Role.ASSISTANT, content=tuple(content)))
        if results:
            out.append(Message(role=Role.TOOL, content=tuple(results)))
        content.clear()
        results.clear()

    for kind, part, where in _parts(parts, path):
        if kind == "step-start":
            end_step()
        elif kind == "text":
            content.append(text_part(field(part, "text", str, where)))
        elif kind == "dynamic-tool" or kind.startswith("tool-"):
            name = field(part, "toolName", str, where) if kind == "dynamic-tool" else kind[len("tool-") :]
            result = _tool_result(part, name, where)
            if result is not None:
                call_id = result.tool_call_id
                content.append(tool_call_part(ToolCall(call_id, name, json_input(part.get("input"), where))))
                results.append(tool_result_part(result))
    end_step()
    return out


def _tool_result(part: Mapping[str, Any], name: str, where: str) -> ToolResult | None:
    """The result a tool part holds; None while it has none."""
    call_id = field(part, "toolCallId", str, where)
    state = field(part, "state", str, where)
    if state == "output-available":
        if "output" not in part:
            raise ChatRequestError(where, "'output' is missing")
        output = part["output"]
        return ToolResult(
            call_id, name, output if isinstance(output, str) else json_input(output, f"{where}.output")
        )
    if state == "output-error":
        return ToolResult(call_id, name, field(part, "errorText", str, where), is_error=True)
    if state == "output-denied":
        approval = part.get("approval")
        reason = approval.get("reason") if isinstance(approval, Mapping) else None
        return ToolResult(
            call_id, name, reason if isinstance(reason, str) and reason else "denied", is_error=True
        )
    return None
