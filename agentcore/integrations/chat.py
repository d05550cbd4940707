"""What the chat front ends' protocols share: the order of a run's events, and
the reading of a request's JSON.

:class:`ChatStreamEncoder` is the state machine behind
:class:`agentcore.integrations.ai_sdk.UIMessageStreamEncoder` and
:class:`agentcore.integrations.ag_ui.AGUIEncoder`. Both protocols stream a
reply as blocks that open and close (a text block, a reasoning block, a tool
call's input) inside steps, where agentcore streams bare deltas; the base
class turns the parts of a run into that shape, and each protocol's subclass
only says how one event is spelled. The rules, the same for both:

* The first part opens the message (the protocol's start event), and each
  model step is one step of the protocol, opened by its first part. A step
  closes when the next one opens or the run ends, not at agentcore's
  ``step-finish``: the tools a step asked for run after that part, and their
  results belong to the step, as they do in both protocols' own servers.
* A text block opens with the first ``text-delta`` after anything that is
  not text and closes at the next part that is not text or a citation; a
  reasoning block likewise with ``reasoning-delta`` and the ``reasoning``
  part that completes it (a whole block that came without deltas is sent as
  one delta). A reasoning block with no visible text (redacted, encrypted)
  is not shown: its signature and data are for the provider, which the
  server keeps in the history.
* ``tool-call-delta`` parts (``LoopOptions(stream_tool_input=True)``) open a
  call's input and stream it; the ``tool-call`` part completes it (opening
  it first when no delta came).
* ``provider-item`` parts are not sent: they are opaque blocks only their
  provider reads, kept in the server's history.
* ``nested`` parts (a sub-run's, :meth:`agentcore.Agent.as_tool`) and
  ``handoff`` parts are sent as the protocol's own custom data, outside the
  blocks: a sub-run streams while its tool call runs, after the step's
  blocks closed, and its parts are not the message's own text.
* The terminal part closes what is open, then ends the message with the
  protocol's finish, cancel or error events; usage goes with it.

A subclass implements the ``on_*`` methods, each returning the list of event
objects (JSON-ready dicts) for one transition, and :meth:`trailer`; parts of
every kind of part has its method. Each encoder serves one stream: it keeps
state.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentcore.errors import ChatRequestError, ConfigError, DeadlineExceeded
from agentcore.files import File
from agentcore.history import check_history
from agentcore.integrations.web import sse_event
from agentcore.types import (
    Citation,
    Compaction,
    FinishReason,
    Message,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
)

__all__ = [
    "ChatStreamEncoder",
    "Event",
    "answerable",
    "field",
    "file_from_url",
    "input_value",
    "json_input",
    "objects",
    "stopped",
    "without_unanswered",
]

Event = dict[str, Any]

_BLOCK_KINDS = frozenset(
    {
        StreamPartKind.REASONING_DELTA,
        StreamPartKind.REASONING,
        StreamPartKind.TOOL_CALL_DELTA,
        StreamPartKind.TOOL_CALL,
        StreamPartKind.COMPACTION,
    }
)


class ChatStreamEncoder:
    """Turns a run's parts into a chat protocol's Server-Sent Events; call it
    with each part (``encode`` of :func:`agentcore.integrations.web.sse_stream`).

    Args:
        message_id: the id of the assistant message the events build; the ids
            of its blocks are made from it (``<message_id>-text-1`` ...).
    """

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self._started = False
        self._steps = 0
        self._step_open = False
        self._step_done = False  # the step's step-finish came: its tools' results may follow
        self._text: str | None = None  # the id of the open text block
        self._reasoning: str | None = None  # the id of the open reasoning block
        self._inputs: set[str] = set()  # calls whose input was opened by a delta
        self._ids = 0

    def __call__(self, part: StreamPart) -> bytes:
        """The bytes of the events for ``part``: ``data: <json>`` events, then
        :meth:`trailer` after the terminal part."""
        body = b"".join(sse_event(event) for event in self.events(part))
        return body + self.trailer() if part.terminal else body

    def events(self, part: StreamPart) -> list[Event]:
        """The event objects for ``part``, in order (see the module's rules)."""
        out: list[Event] = []
        if not self._started:
            self._started = True
            out += self.on_start()
        kind = part.kind
        if part.terminal:
            self._close_blocks(out)
            if self._step_open:
                out += self.on_step_end(self._steps)
            self._step_open = False
            out += self.on_finish(part) if kind is StreamPartKind.FINISH else self.on_error(part)
        elif kind is StreamPartKind.PROVIDER_ITEM:
            pass
        elif kind is StreamPartKind.STEP_FINISH:
            if not self._step_open:
                self._open_step(out)
            self._close_blocks(out)
            self._step_done = True
        elif kind is StreamPartKind.TOOL_RESULT:
            assert part.tool_result is not None
            if not self._step_open:  # a resumed run's approved calls run before its first step
                self._open_step(out)
            out += self.on_tool_result(part.tool_result)
        elif kind is StreamPartKind.TEXT_DELTA or kind is StreamPartKind.CITATION or kind in _BLOCK_KINDS:
            if self._step_done or not self._step_open:
                self._open_step(out)
            self._content(part, out)
        elif kind is StreamPartKind.NESTED:
            assert part.nested is not None
            out += self.on_nested(part.path, part.nested)
        else:
            out += self.on_handoff(part.agent)
        return out

    def _content(self, part: StreamPart, out: list[Event]) -> None:
        kind = part.kind
        if kind is StreamPartKind.TEXT_DELTA:
            if self._reasoning is not None:
                out += self.on_reasoning_end(self._reasoning)
                self._reasoning = None
            if not part.text:
                return
            if self._text is None:
                self._text = self.new_id("text")
                out += self.on_text_start(self._text)
            out += self.on_text_delta(self._text, part.text)
            return
        if kind is StreamPartKind.CITATION:
            assert part.citation is not None
            out += self.on_citation(part.citation, self.new_id("source"))
            return
        if self._text is not None:
            out += self.on_text_end(self._text)
            self._text = None
        if kind is StreamPartKind.REASONING_DELTA:
            if not part.text:
                return
            if self._reasoning is None:
                self._reasoning = self.new_id("reasoning")
                out += self.on_reasoning_start(self._reasoning)
            out += self.on_reasoning_delta(self._reasoning, part.text)
        elif kind is StreamPartKind.REASONING:
            assert part.reasoning is not None
            if self._reasoning is not None:
                out += self.on_reasoning_end(self._reasoning)
                self._reasoning = None
            elif part.reasoning.text:
                block = self.new_id("reasoning")
                out += self.on_reasoning_start(block)
                out += self.on_reasoning_delta(block, part.reasoning.text)
                out += self.on_reasoning_end(block)
        else:
            if self._reasoning is not None:
                out += self.on_reasoning_end(self._reasoning)
                self._reasoning = None
            if kind is StreamPartKind.COMPACTION:
                assert part.compaction is not None
                out += self.on_compaction(part.compaction)
                return
            call = part.tool_call
            assert call is not None
            if kind is StreamPartKind.TOOL_CALL_DELTA:
                if call.id not in self._inputs:
                    self._inputs.add(call.id)
                    out += self.on_tool_input_start(call)
                out += self.on_tool_input_delta(call)
            else:
                out += self.on_tool_input_end(call, call.id in self._inputs)
                self._inputs.discard(call.id)

    def _open_step(self, out: list[Event]) -> None:
        if self._step_open:
            out += self.on_step_end(self._steps)
        self._steps += 1
        self._step_open = True
        self._step_done = False
        out += self.on_step_start(self._steps)

    def _close_blocks(self, out: list[Event]) -> None:
        if self._text is not None:
            out += self.on_text_end(self._text)
            self._text = None
        if self._reasoning is not None:
            out += self.on_reasoning_end(self._reasoning)
            self._reasoning = None

    def new_id(self, what: str) -> str:
        """A fresh id for a block of this message: ``<message_id>-<what>-<n>``."""
        self._ids += 1
        return f"{self.message_id}-{what}-{self._ids}"

    # What each protocol spells; every method returns the events of one transition.

    def on_start(self) -> list[Event]:
        """The message (or run) starts."""
        raise NotImplementedError

    def on_step_start(self, step: int) -> list[Event]:
        """Model step ``step`` (1, 2, ...) starts."""
        raise NotImplementedError

    def on_step_end(self, step: int) -> list[Event]:
        """Model step ``step`` ends, its tools' results sent."""
        raise NotImplementedError

    def on_text_start(self, block: str) -> list[Event]:
        """A text block opens."""
        raise NotImplementedError

    def on_text_delta(self, block: str, text: str) -> list[Event]:
        """More text (never "") for the open block."""
        raise NotImplementedError

    def on_text_end(self, block: str) -> list[Event]:
        """The text block closes."""
        raise NotImplementedError

    def on_reasoning_start(self, block: str) -> list[Event]:
        """A reasoning block opens."""
        raise NotImplementedError

    def on_reasoning_delta(self, block: str, text: str) -> list[Event]:
        """More reasoning text (never "") for the open block."""
        raise NotImplementedError

    def on_reasoning_end(self, block: str) -> list[Event]:
        """The reasoning block closes."""
        raise NotImplementedError

    def on_tool_input_start(self, call: ToolCall) -> list[Event]:
        """A tool call's input starts streaming (``call.input`` is its first fragment)."""
        raise NotImplementedError

    def on_tool_input_delta(self, call: ToolCall) -> list[Event]:
        """The next fragment (``call.input``) of a tool call's JSON arguments."""
        raise NotImplementedError

    def on_tool_input_end(self, call: ToolCall, streamed: bool) -> list[Event]:
        """The whole call; ``streamed``: its start and deltas were sent."""
        raise NotImplementedError

    def on_tool_result(self, result: ToolResult) -> list[Event]:
        """A tool's result (or error result)."""
        raise NotImplementedError

    def on_citation(self, citation: Citation, source_id: str) -> list[Event]:
        """A source the open text cites."""
        raise NotImplementedError

    def on_compaction(self, compaction: Compaction) -> list[Event]:
        """A history policy changed the run's history before this step."""
        raise NotImplementedError

    def on_finish(self, part: StreamPart) -> list[Event]:
        """The run finished (``part`` is the ``finish`` part)."""
        raise NotImplementedError

    def on_error(self, part: StreamPart) -> list[Event]:
        """The run ended in error or was cancelled (``part`` is the ``error`` part)."""
        raise NotImplementedError

    def on_nested(self, path: tuple[str, ...], part: StreamPart) -> list[Event]:
        """A sub-run's ``part``; ``path`` the tool call ids of the agent-tool
        calls that lead to it (:meth:`StreamPart.nested_event`)."""
        raise NotImplementedError

    def on_handoff(self, agent: str) -> list[Event]:
        """The run moved to the agent named ``agent`` (:func:`agentcore.handoff`)."""
        raise NotImplementedError

    def trailer(self) -> bytes:
        """Bytes after the terminal part's events (none by default)."""
        return b""


def stopped(part: StreamPart) -> bool:
    """Whether the ``error`` part ``part`` ends a run someone stopped (a
    cancel: the client went away, or the server's code cancelled), which both
    protocols tell apart from a failure; a deadline that passed is a failure
    (the server gave up), not a stop."""
    return part.finish_reason is FinishReason.CANCELED and not isinstance(part.err, DeadlineExceeded)


# Reading a request: every failure is a ChatRequestError naming where it is.


def field(
    data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: str, *, default: Any = ...
) -> Any:
    """``data[key]`` checked to be of ``kind``; ``default`` when missing (if given).

    Raises:
        ChatRequestError: the key is missing (and has no default), or its
            value is not of ``kind``.
    """
    if key not in data or data[key] is None:
        if default is not ...:
            return default
        raise ChatRequestError(path, f"{key!r} is missing")
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _kinds(kind)):
        names = " or ".join(k.__name__ for k in _kinds(kind))
        raise ChatRequestError(f"{path}.{key}", f"must be {names}, got {type(value).__name__}")
    return value


def objects(items: Sequence[Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each item of the JSON list ``items`` (found at ``path``) with its own
    path, ``path[i]``.

    Raises:
        ChatRequestError: an item is not an object.
    """
    for index, item in enumerate(items):
        where = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            raise ChatRequestError(where, f"must be an object, got {type(item).__name__}")
        yield where, item


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.DOTALL)


def file_from_url(url: str, media_type: str, filename: str, path: str, url_key: str = "url") -> File:
    """A file a browser sent: a ``data:`` URL (its bytes, decoded) or an
    ``http(s)://`` URL (which the provider fetches).

    Args:
        url: the URL.
        media_type: the file's MIME type ("" takes a ``data:`` URL's own).
        filename: its name, or "".
        path: where the file is in the request (``messages[0].parts[1]``);
            a bad URL is reported at ``<path>.<url_key>``, a bad type at ``path``.
        url_key: the name of the URL's key in the protocol.

    Raises:
        ChatRequestError: another scheme, a ``data:`` URL that is not base64
            or does not decode, or a malformed media type.
    """
    match = _DATA_URL.fullmatch(url)
    data: bytes | None = None
    if match is not None:
        if ";base64" not in match.group(2):
            raise ChatRequestError(f"{path}.{url_key}", "a data: URL must be base64 (data:<type>;base64,...)")
        try:
            data = base64.b64decode(match.group(3), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ChatRequestError(
                f"{path}.{url_key}", f"the data: URL's base64 does not decode: {exc}"
            ) from exc
        media_type = media_type or match.group(1)
    elif not url.startswith(("https://", "http://")):
        raise ChatRequestError(
            f"{path}.{url_key}", f"a file's URL must be a data: or http(s) URL, got {url[:40]!r}"
        )
    try:
        if data is not None:
            return File(media_type=media_type, data=data, filename=filename)
        return File(media_type=media_type, url=url, filename=filename)
    except (TypeError, ValueError) as exc:
        raise ChatRequestError(path, str(exc)) from exc


def input_value(text: str) -> Any:
    """A tool call's JSON text as a JSON value for a browser; the text itself
    when it is not JSON (a model's malformed arguments, shown as they came)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def json_input(value: Any, path: str) -> str:
    """A tool call's input, as a browser holds it (a JSON value), as JSON text.

    Raises:
        ChatRequestError: the value cannot be written as JSON.
    """
    try:
        return json.dumps({} if value is None else value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ChatRequestError(path, f"the tool input is not JSON: {exc}") from exc


def answerable(messages: list[Message]) -> list[Message]:
    """``messages``, converted from a request, once they are a history a
    model can answer: not empty, and every tool call paired with its result
    (:func:`agentcore.history.check_history`), so a bad request is refused
    before a run starts rather than failing in its stream.

    Raises:
        ChatRequestError: (``path`` ``messages``) nothing is left to answer
            (no message, only display parts, or an assistant message last),
            a user message with neither text nor a file, a tool call id used
            twice (providers refuse it across the whole request), or calls
            and results that do not pair up (the indexes the error names
            are of the converted history, ``Message`` by ``Message``).
    """
    if not messages or messages[-1].role is Role.ASSISTANT:
        raise ChatRequestError(
            "messages",
            "no message to answer (none, only parts that are display only, or an assistant message last)",
        )
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.role is Role.USER and not message.text.strip() and not message.files:
            raise ChatRequestError("messages", f"message {index} is a user message with no text and no file")
        for call in message.tool_calls:
            if call.id in seen:
                raise ChatRequestError("messages", f"the tool call id {call.id!r} is used twice")
            seen.add(call.id)
    try:
        check_history(messages)
    except ConfigError as exc:
        raise ChatRequestError("messages", f"the history cannot be sent to a model: {exc}") from None
    return messages


def without_unanswered(messages: list[Message]) -> list[Message]:
    """``messages`` without the tool calls no later tool message answers
    before the next assistant message (a run stopped while its tool ran): a
    provider refuses a call without its result. An assistant message left
    with nothing is left out."""
    answered: set[str] = set()
    for message in messages:
        if message.role is Role.TOOL:
            answered.update(result.tool_call_id for result in message.tool_results)
    out: list[Message] = []
    for message in messages:
        if message.role is Role.ASSISTANT and message.tool_calls:
            content = [
                part for part in message.content if part.tool_call is None or part.tool_call.id in answered
            ]
            if not content:
                continue
            message = Message(role=message.role, content=content)
        out.append(message)
    return out
