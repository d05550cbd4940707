"""Speak AG-UI's event protocol: runs for an AG-UI client (CopilotKit, ``@ag-ui/client``).

The protocol is AG-UI 1.0 (https://docs.ag-ui.com/concepts/events, and the
event and message types of https://docs.ag-ui.com/sdk/python/core/events),
checked against the models of the PyPI package ``ag-ui-protocol`` 1.0.0,
which are generated from the protocol's published JSON schema
(``https://ag-ui.com/spec/1.0/schema.json``): the tests validate every event
this module writes with them. AG-UI 1.0 names reasoning ``REASONING_*``; the
``THINKING_*`` events of 0.x left the protocol and are not sent.

A run is a Server-Sent Events stream of ``data:`` lines, each one event as a
JSON object with camelCase keys. :class:`AGUIEncoder` writes it, given as
``encode`` to :func:`agentcore.integrations.web.sse_stream` (WSGI) or
:func:`agentcore.integrations.asgi.sse_body` (ASGI), which keep their
heartbeats (SSE comments) and their cancel on disconnect::

    run_input = request.get_json()  # AG-UI's RunAgentInput
    messages = messages_from_run_input(run_input)
    reader = run(LoopOptions(model=model, messages=messages, tools=tools), Context(timeout=300))
    encoder = AGUIEncoder(thread_id=run_input["threadId"], run_id=run_input["runId"])
    return Response(sse_stream(reader, encode=encoder), mimetype=CONTENT_TYPE, headers=SSE_HEADERS)

The events, in the order :class:`~agentcore.integrations.chat.ChatStreamEncoder`
gives them:

===================  ==================================================
agentcore part       AG-UI events
===================  ==================================================
(the first part)     ``RUN_STARTED`` (``threadId``, ``runId``)
(a step's first)     ``STEP_STARTED`` (``stepName`` ``step-1`` ...);
                     ``STEP_FINISHED`` when the next step starts or the run
                     ends (after the step's tool results)
``text-delta``       ``TEXT_MESSAGE_START`` (role ``assistant``),
                     ``TEXT_MESSAGE_CONTENT`` ..., ``TEXT_MESSAGE_END``
``reasoning-delta``  ``REASONING_START``, ``REASONING_MESSAGE_START``,
``reasoning``        ``REASONING_MESSAGE_CONTENT`` ..., ``REASONING_MESSAGE_END``,
                     ``REASONING_END`` (visible text only; the signature and
                     encrypted data stay on the server)
``tool-call-delta``  ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` ...
``tool-call``        ``TOOL_CALL_END`` (``TOOL_CALL_START`` and one
                     ``TOOL_CALL_ARGS`` with the whole input first when no
                     delta came); ``parentMessageId`` is the step's last text
                     message, when it had text
``tool-result``      ``TOOL_CALL_RESULT`` (role ``tool``): ``content`` the
                     result's text, or a list of parts (a text part, then an
                     image, audio, video or document part per file of the
                     result that has a URL or is small enough to inline,
                     :data:`agentcore.integrations.web.INLINE_FILE_LIMIT`);
                     an error result has ``metadata``
                     ``{"agentcore": {"is_error": true}}``
``citation``         ``CUSTOM`` named ``agentcore.citation``, ``value``
                     :meth:`Citation.to_dict`
``compaction``       ``CUSTOM`` named ``agentcore.compaction``, ``value``
                     :meth:`Compaction.to_dict`
``provider-item``    nothing (opaque, for the provider only)
``nested``           ``CUSTOM`` named ``agentcore.nested``, ``value``
                     ``{"path": [...], "part": ...}``: the sub-run's part in
                     agentcore's own JSON
                     (:func:`agentcore.integrations.web.part_to_dict`)
``handoff``          ``CUSTOM`` named ``agentcore.handoff``, ``value``
                     ``{"agent": name}``
``finish``           ``RUN_FINISHED`` with ``outcome`` ``success``,
                     ``result`` ``{"finish_reason"}`` and ``usage``
``error``            ``RUN_ERROR`` with ``message`` (``str(err)``), ``code``
                     (the :class:`~agentcore.ErrorClass` name in lower case
                     for a model error, else the error's class name) and
                     ``usage`` (a deadline that passed too); a cancel is
                     ``RUN_FINISHED`` with ``outcome`` ``cancelled`` instead
===================  ==================================================

``usage`` is a list of one AG-UI ``TokenUsage``: ``inputTokens`` every input token
billed (agentcore's ``input`` plus ``cache_write``: AG-UI counts cache
writes in the input), ``outputTokens``, ``totalTokens`` (their sum),
``cachedInputTokens`` (``cache_read``), ``cacheWriteInputTokens``
(``cache_write``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ChatRequestError
from agentcore.files import File
from agentcore.integrations.chat import (
    ChatStreamEncoder,
    Event,
    answerable,
    field,
    file_from_url,
    objects,
    stopped,
    without_unanswered,
)
from agentcore.integrations.web import error_to_dict, file_to_dict, part_to_dict
from agentcore.types import (
    Citation,
    Compaction,
    ContentPart,
    ContentPartKind,
    Message,
    Role,
    StreamPart,
    ToolCall,
    ToolResult,
    Usage,
    text_part,
    tool_call_part,
    tool_result_part,
)

__all__ = ["AGUIEncoder", "messages_from_run_input", "token_usage"]

_MEDIA_PARTS = {"image": "image", "audio": "audio", "video": "video"}


def token_usage(usage: Usage) -> dict[str, int]:
    """agentcore's usage as AG-UI's ``TokenUsage`` (the module's rule)."""
    billed_input = usage.input + usage.cache_write
    return {
        "inputTokens": billed_input,
        "outputTokens": usage.output,
        "totalTokens": billed_input + usage.output,
        "cachedInputTokens": usage.cache_read,
        "cacheWriteInputTokens": usage.cache_write,
    }


class AGUIEncoder(ChatStreamEncoder):
    """Writes a run as AG-UI events (the module's table): the ``encode`` of
    :func:`agentcore.integrations.web.sse_stream` or
    :func:`agentcore.integrations.asgi.sse_body`. One per response.

    Args:
        thread_id: the ``threadId`` of the client's ``RunAgentInput``.
        run_id: its ``runId``; the ids of the run's messages are made from it
            (``<run_id>-text-1`` ...).
    """

    def __init__(self, thread_id: str, run_id: str) -> None:
        super().__init__(run_id)
        self.thread_id = thread_id
        self.run_id = run_id
        self._parent: str | None = None  # the step's last text message

    def on_start(self) -> list[Event]:
        return [{"type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id}]

    def on_step_start(self, step: int) -> list[Event]:
        self._parent = None
        return [{"type": "STEP_STARTED", "stepName": f"step-{step}"}]

    def on_step_end(self, step: int) -> list[Event]:
        return [{"type": "STEP_FINISHED", "stepName": f"step-{step}"}]

    def on_text_start(self, block: str) -> list[Event]:
        self._parent = block
        return [{"type": "TEXT_MESSAGE_START", "messageId": block, "role": "assistant"}]

    def on_text_delta(self, block: str, text: str) -> list[Event]:
        return [{"type": "TEXT_MESSAGE_CONTENT", "messageId": block, "delta": text}]

    def on_text_end(self, block: str) -> list[Event]:
        return [{"type": "TEXT_MESSAGE_END", "messageId": block}]

    def on_reasoning_start(self, block: str) -> list[Event]:
        return [
            {"type": "REASONING_START", "messageId": block},
            {"type": "REASONING_MESSAGE_START", "messageId": block, "role": "reasoning"},
        ]

    def on_reasoning_delta(self, block: str, text: str) -> list[Event]:
        return [{"type": "REASONING_MESSAGE_CONTENT", "messageId": block, "delta": text}]

    def on_reasoning_end(self, block: str) -> list[Event]:
        return [
            {"type": "REASONING_MESSAGE_END", "messageId": block},
            {"type": "REASONING_END", "messageId": block},
        ]

    def on_tool_input_start(self, call: ToolCall) -> list[Event]:
        event: Event = {"type": "TOOL_CALL_START", "toolCallId": call.id, "toolCallName": call.name}
        if self._parent is not None:
            event["parentMessageId"] = self._parent
        return [event]

    def on_tool_input_delta(self, call: ToolCall) -> list[Event]:
        return [{"type": "TOOL_CALL_ARGS", "toolCallId": call.id, "delta": call.input}]

    def on_tool_input_end(self, call: ToolCall, streamed: bool) -> list[Event]:
        out = [] if streamed else [*self.on_tool_input_start(call), *self.on_tool_input_delta(call)]
        return [*out, {"type": "TOOL_CALL_END", "toolCallId": call.id}]

    def on_tool_result(self, result: ToolResult) -> list[Event]:
        parts = [_media_part(file) for file in result.files]
        shown = [part for part in parts if part is not None]
        content: Any = [{"type": "text", "text": result.content}, *shown] if shown else result.content
        event: Event = {
            "type": "TOOL_CALL_RESULT",
            "messageId": f"{self.run_id}-result-{result.tool_call_id}",
            "toolCallId": result.tool_call_id,
            "content": content,
            "role": "tool",
        }
        if result.is_error:
            event["metadata"] = {"agentcore": {"is_error": True}}
        return [event]

    def on_citation(self, citation: Citation, source_id: str) -> list[Event]:
        return [{"type": "CUSTOM", "name": "agentcore.citation", "value": citation.to_dict()}]

    def on_compaction(self, compaction: Compaction) -> list[Event]:
        return [{"type": "CUSTOM", "name": "agentcore.compaction", "value": compaction.to_dict()}]

    def on_finish(self, part: StreamPart) -> list[Event]:
        assert part.finish_reason is not None
        return [self._finished(part, "success", {"finish_reason": part.finish_reason.value})]

    def on_error(self, part: StreamPart) -> list[Event]:
        assert part.err is not None
        if stopped(part):
            return [self._finished(part, "cancelled", None)]
        error = error_to_dict(part.err)
        return [
            {
                "type": "RUN_ERROR",
                "message": error["err"],
                "code": error["error_class"] or error["error_type"],
                "usage": [token_usage(part.total_usage)],
            }
        ]

    def _finished(self, part: StreamPart, outcome: str, result: Any) -> Event:
        event: Event = {
            "type": "RUN_FINISHED",
            "threadId": self.thread_id,
            "runId": self.run_id,
            "outcome": {"type": outcome},
            "usage": [token_usage(part.total_usage)],
        }
        if result is not None:
            event["result"] = result
        return event

    def on_nested(self, path: tuple[str, ...], part: StreamPart) -> list[Event]:
        value = {"path": list(path), "part": part_to_dict(part)}
        return [{"type": "CUSTOM", "name": "agentcore.nested", "value": value}]

    def on_handoff(self, agent: str) -> list[Event]:
        return [{"type": "CUSTOM", "name": "agentcore.handoff", "value": {"agent": agent}}]


def _media_part(file: File) -> Event | None:
    """A tool's file as an AG-UI content part; None when it is too large to
    inline and has no URL."""
    shown = file_to_dict(file)
    kind = _MEDIA_PARTS.get(file.media_type.split("/")[0], "document")
    if "url" in shown:
        return {"type": kind, "source": {"type": "url", "value": shown["url"], "mimeType": file.media_type}}
    if "data_url" in shown:
        data = shown["data_url"].split(",", 1)[1]
        return {"type": kind, "source": {"type": "data", "value": data, "mimeType": file.media_type}}
    return None


def messages_from_run_input(run_input: Any) -> list[Message]:
    """The ``messages`` of AG-UI's ``RunAgentInput`` (the decoded JSON body a
    client POSTs) as agentcore messages.

    Rules:

    * A ``user`` message's ``content`` (a string, or a list of parts) becomes
      text and files: ``text`` parts, and ``image``, ``audio``, ``video`` and
      ``document`` parts whose ``source`` is ``data`` (base64 bytes) or
      ``url``; a ``file`` source (a handle at one provider) is refused.
    * An ``assistant`` message becomes text and its ``toolCalls``; the
      ``tool`` messages after it become one tool message with their results
      (``error`` set: an error result). A tool message whose call is not in
      an earlier assistant message is refused; a call with no result (a run
      stopped while its tool ran: the client keeps the call) is left out,
      with its message's text kept, since a provider refuses a call without
      its result.
    * ``reasoning`` and ``activity`` messages are left out: reasoning goes
      back to a provider only with its signature, and activities are the
      UI's. ``system`` and ``developer`` messages are refused: the system
      prompt is the server's (``LoopOptions.system``).
    * The input's ``tools`` (tools the client runs), ``state``, ``context``
      and ``forwardedProps`` are not read; the server's tools run.

    Args:
        run_input: the decoded ``RunAgentInput`` object.

    Returns:
        The messages, oldest first.

    Raises:
        ChatRequestError: the JSON does not fit the protocol (its ``path``
            says where), a system or developer message, a tool result with no
            call before it, nothing left to answer, or tool calls and results
            that do not pair up (two calls with one id, two results for one
            call: :func:`agentcore.integrations.chat.answerable`).
    """
    if not isinstance(run_input, Mapping):
        raise ChatRequestError("", f"RunAgentInput must be an object, got {type(run_input).__name__}")
    messages = field(run_input, "messages", list, "")
    out: list[Message] = []
    names: dict[str, str] = {}  # tool call id -> tool name
    results: list[ContentPart] = []
    for path, message in objects(messages, "messages"):
        role = field(message, "role", str, path)
        if role == "tool":
            results.append(tool_result_part(_tool_result(message, names, path)))
            continue
        if results:
            out.append(Message(role=Role.TOOL, content=tuple(results)))
            results = []
        if role == "user":
            out.append(Message(role=Role.USER, content=tuple(_user_content(message, path))))
        elif role == "assistant":
            assistant = _assistant_message(message, names, path)
            if assistant is not None:
                out.append(assistant)
        elif role in ("system", "developer"):
            raise ChatRequestError(
                f"{path}.role", f"a {role} message is the server's to give, not the client's"
            )
        elif role not in ("reasoning", "activity"):
            raise ChatRequestError(f"{path}.role", f"unknown role {role!r}")
    if results:
        out.append(Message(role=Role.TOOL, content=tuple(results)))
    return answerable(without_unanswered(out))


def _user_content(message: Mapping[str, Any], path: str) -> list[ContentPart]:
    content = field(message, "content", (str, list), path)
    if isinstance(content, str):
        return [text_part(content)]
    parts = _content_parts(content, f"{path}.content")
    if not parts:
        raise ChatRequestError(f"{path}.content", "a user message needs a text or a media part")
    return parts


def _content_parts(content: Sequence[Any], path: str) -> list[ContentPart]:
    out: list[ContentPart] = []
    for where, part in objects(content, path):
        kind = field(part, "type", str, where)
        if kind == "text":
            out.append(text_part(field(part, "text", str, where)))
        elif kind in ("image", "audio", "video", "document"):
            out.append(ContentPart(kind=ContentPartKind.FILE, file=_file(part, where)))
        else:
            raise ChatRequestError(f"{where}.type", f"unknown content part type {kind!r}")
    return out


def _file(part: Mapping[str, Any], where: str) -> File:
    source = field(part, "source", Mapping, where)
    kind = field(source, "type", str, f"{where}.source")
    value = field(source, "value", str, f"{where}.source")
    media_type = field(source, "mimeType", str, f"{where}.source", default="")
    if kind == "data":
        if not media_type:
            raise ChatRequestError(f"{where}.source", "'mimeType' is missing")
        return file_from_url(f"data:{media_type};base64,{value}", media_type, "", f"{where}.source", "value")
    if kind == "url":
        if not media_type:
            raise ChatRequestError(f"{where}.source", "'mimeType' is needed: agentcore sends a file's type")
        return file_from_url(value, media_type, "", f"{where}.source", "value")
    raise ChatRequestError(f"{where}.source.type", f"must be 'data' or 'url', got {kind!r}")


def _assistant_message(message: Mapping[str, Any], names: dict[str, str], path: str) -> Message | None:
    content: list[ContentPart] = []
    text = field(message, "content", str, path, default="")
    if text:
        content.append(text_part(text))
    for where, call in objects(field(message, "toolCalls", list, path, default=[]), f"{path}.toolCalls"):
        call_id = field(call, "id", str, where)
        function = field(call, "function", Mapping, where)
        name = field(function, "name", str, f"{where}.function")
        arguments = field(function, "arguments", str, f"{where}.function")
        names[call_id] = name
        content.append(tool_call_part(ToolCall(call_id, name, arguments or "{}")))
    return Message(role=Role.ASSISTANT, content=tuple(content)) if content else None


def _tool_result(message: Mapping[str, Any], names: dict[str, str], path: str) -> ToolResult:
    call_id = field(message, "toolCallId", str, path)
    if call_id not in names:
        raise ChatRequestError(f"{path}.toolCallId", f"no assistant message before it called {call_id!r}")
    content = field(message, "content", (str, list), path)
    error = field(message, "error", str, path, default="")
    files: tuple[File, ...] = ()
    if isinstance(content, str):
        text = content
    else:
        parts = _content_parts(content, f"{path}.content")
        text = "".join(part.text for part in parts if part.kind is ContentPartKind.TEXT)
        files = tuple(part.file for part in parts if part.file is not None)
    if error and not text:
        text = error
    return ToolResult(call_id, names[call_id], text, is_error=bool(error), files=files)
