"""The OpenAI Responses API, what a stream means: its typed events mapped
to agentcore parts.

No I/O here: :class:`StreamState` (a :class:`agentcore.providers.shell.StateMachine`)
turns the decoded stream events into parts, and :func:`usage_from`,
:func:`map_finish_reason` and
:func:`agentcore.providers.openai.shared.error_event` are small functions
tested table by table.
:class:`agentcore.providers.openai.responses.model.OpenAIResponsesModel`
runs it inside the shell (:mod:`agentcore.providers.shell`).

The stream (https://platform.openai.com/docs/api-reference/responses-streaming),
and what the recorded streams in ``tests/fixtures/openai_responses`` show
servers do, read as follows:

* Events are dispatched on the JSON ``type``; the ``event:`` line is
  optional (several servers send ``data:`` lines only). ``data: [DONE]`` ends
  the stream, and nothing after the first ``response.completed``,
  ``response.incomplete`` or ``response.failed`` is read.
* Output items are keyed by ``output_index``: item ids, and even the
  response id, may change mid-stream. A tool call's id is its ``call_id``
  (the one in ``response.output_item.done`` wins), never the ``fc_`` item id.
* Only deltas are streamed: the full text repeated in ``.done`` events and
  in ``response.completed`` is not added again. ``output_text`` and
  ``refusal`` deltas are text the user sees; ``reasoning_summary_text`` and
  ``reasoning_text`` (raw reasoning, gpt-oss style servers) deltas are
  ``reasoning-delta`` parts, several summary parts joined with nothing
  between them.
* Each ``reasoning`` item becomes one ``reasoning`` part at its
  ``output_item.done`` (so before the function calls that follow it), each
  ``function_call`` item one ``tool-call`` part, its arguments from the done
  item, else ``function_call_arguments.done``, else the deltas joined. Items
  that never got their ``output_item.done`` are completed at the terminal
  event, from the terminal response's ``output`` and what their events
  brought, in output order. Parts come in the order the items completed:
  OpenRouter completes a raw-reasoning item after the message that follows
  it, so there the reasoning lands after the text.
* Only ``function_call`` items are tool calls. With ``tool_input`` (the
  request's ``stream_tool_input``) each ``function_call_arguments.delta``
  is also a ``tool-call-delta`` part, with the ``call_id`` and ``name`` of
  the call's ``output_item.added`` item, and what the final arguments add
  to the deltas comes in one more before the ``tool-call`` part
  (:class:`agentcore.providers.openai.shared.InputDeltas`: the fragments
  joined are the call's input).
* The hosted tools' items (:data:`SERVER_TOOL_ITEMS`: ``web_search_call``,
  ``file_search_call``, ``code_interpreter_call``) become ``provider-item``
  parts where they complete, as compaction items do (below): the done item,
  byte for byte as the API wants it back, and a readable ``text``
  (:func:`server_tool_text`). An item completes at its
  ``output_item.done`` whatever status it states there: Azure's done
  ``web_search_call`` still says ``searching`` and no
  ``web_search_call.completed`` event comes. The progress events
  (``*.in_progress``, ``.searching``, ``.interpreting``, ``.completed``)
  and the code deltas (``code_interpreter_call_code.delta``) are passed
  over: the done item holds the whole code. Each completed item counts
  one in the step's usage (:data:`SERVER_TOOL_ITEMS` names the
  :class:`agentcore.Usage` field): the API bills these tools per call and
  reports no count of them in ``usage``. Other built-in items (MCP, image
  generation) and other client tool kinds (custom tools, shell,
  apply-patch) are passed over.
* Citations: each ``response.output_text.annotation.added`` is a
  ``citation`` part (:func:`citation_of`) as it arrives, within the text it
  belongs to. The annotations a done ``message`` item repeats are not sent
  again (an annotation is known by its output, content and annotation
  index); one that only a done item holds (a server that sends no
  annotation events) is sent then, before the next part.
* A ``compaction`` item (server-side compaction, :data:`COMPACTION_DOCS`;
  it may complete after the message it follows) becomes one
  ``provider-item`` part where it completes: a :class:`ProviderItem` of
  type ``compaction`` whose ``data`` is the done item as the server sent it
  (``id``, ``type``, ``encrypted_content``, in its order) and whose ``text``
  is "" (the content is encrypted). Only the done item (of
  ``output_item.done`` or the terminal response) counts: the recorded
  streams show an ``encrypted_content`` in ``output_item.added`` that
  differs from the final one, so an item that never completed is left out.
* Usage may be missing or zero: it is read from the terminal response only.
* Fields are read by their documented JSON types
  (:mod:`agentcore.providers.fields`): absent or ``null`` is absent; any
  other type (an event that is not an object, a delta or arguments that are
  not a string, an item or the terminal response that is not an object, a
  usage count that is a string or a fraction) is an ``UPSTREAM``
  :class:`ModelError` naming the field. A reasoning item's ``summary`` and
  ``content`` entries are kept as sent.
* An ``error`` event and ``response.failed`` (its ``response.error``) are
  classified as errors in a Chat Completions stream are
  (:func:`agentcore.providers.openai.shared.error_event`): a numeric status
  code by the status, else by the code and type words
  (``rate_limit_exceeded`` rate-limited, overloaded words overloaded,
  ``insufficient_quota`` and ``server_error`` upstream, which is terminal).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from agentcore.errors import ErrorClass, ModelError
from agentcore.providers import fields
from agentcore.providers.openai.shared import InputDeltas, error_event, synthesize_id, token_usage
from agentcore.transport.sse import DONE, Event
from agentcore.types import (
    Citation,
    FinishReason,
    Message,
    ProviderItem,
    Reasoning,
    Role,
    StreamPart,
    ToolCall,
    Usage,
    provider_item_part,
)

FORMAT = "openai-responses"
""":attr:`agentcore.Reasoning.format` (and ``ProviderItem.format``) of what this adapter reads and writes."""
COMPACTION_DOCS = "https://developers.openai.com/api/docs/guides/compaction"
"""OpenAI's compaction guide: ``context_management``, the compaction item, the compact endpoint."""
COMPACTION = "compaction"
"""The type of a compaction item (and of the ``ProviderItem`` that holds one)."""
SERVER_TOOL_ITEMS = {
    "web_search_call": "web_search_requests",
    "file_search_call": "file_search_requests",
    "code_interpreter_call": "code_execution_requests",
}
"""The hosted tools' output items kept as provider items, each with the
:class:`agentcore.Usage` field it counts in
(https://developers.openai.com/api/docs/guides/tools-web-search,
https://developers.openai.com/api/docs/guides/tools-file-search,
https://developers.openai.com/api/docs/guides/tools-code-interpreter)."""
_ITEM_TOOLS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
}


def server_tool_text(item: Mapping[str, Any]) -> str:
    """The readable ``text`` of a hosted tool's item: the tool's name and
    its input as JSON, ``web_search {"type": "search", "query": ...}`` (the
    ``action`` without its ``sources``), ``file_search {"queries": [...]}``,
    ``code_interpreter {"code": ...}``; then, for a web search, the URLs of
    its sources, one a line. "" for another item."""
    kind = item.get("type")
    name = _ITEM_TOOLS.get(kind) if isinstance(kind, str) else None
    if name is None:
        return ""
    if kind == "web_search_call":
        action = item.get("action")
        action = action if isinstance(action, Mapping) else {}
        shown: Any = {key: value for key, value in action.items() if key != "sources"}
        sources = action.get("sources")
        urls = (
            [s["url"] for s in sources if isinstance(s, Mapping) and isinstance(s.get("url"), str)]
            if (isinstance(sources, list))
            else []
        )
        return "\n".join([f"{name} {_compact(shown)}", *urls])
    key = "queries" if kind == "file_search_call" else "code"
    return f"{name} {_compact({key: item.get(key)})}"


def citation_of(annotation: Mapping[str, Any]) -> Citation:
    """A :class:`Citation` from a Responses text annotation
    (https://platform.openai.com/docs/api-reference/responses/object,
    ``output_text.annotations``): ``url_citation`` -> ``url``, ``title``;
    ``file_citation`` and ``container_file_citation`` -> ``title`` = the
    ``filename``; any other type (``file_path``) keeps only its ``type``.
    ``data`` is the annotation's JSON text, as sent."""
    kind = _text(annotation.get("type"))
    title = _text(annotation.get("title")) if kind == "url_citation" else _text(annotation.get("filename"))
    url = _text(annotation.get("url")) if kind == "url_citation" else ""
    return Citation(url=url, title=title, type=kind, data=_compact(annotation))


def usage_from(usage: Any) -> Usage:
    """Normalize a Responses ``usage`` object (design.md, "Usage"):
    :func:`agentcore.providers.openai.shared.token_usage` of ``input_tokens``
    (which include the cached tokens, per
    https://platform.openai.com/docs/api-reference/responses/object),
    ``output_tokens`` (reasoning tokens included) and
    ``input_tokens_details`` (``cached_tokens``, and ``cache_write_tokens``
    where a server reports cache writes: Amazon Bedrock). No usage object
    is zeros.

    Raises:
        ModelError: ``UPSTREAM``, ``usage`` is not an object or a count is not one.
    """
    if usage is None:
        return Usage()
    return token_usage(
        usage,
        "response.usage",
        prompt="input_tokens",
        completion="output_tokens",
        details="input_tokens_details",
    )


def map_finish_reason(response: Mapping[str, Any], incomplete: bool, has_tool_calls: bool) -> FinishReason:
    """The step's :class:`FinishReason` from the terminal response.

    ``response.completed`` (https://platform.openai.com/docs/api-reference/responses-streaming):
    tool-calls when the response holds a function call, else stop.
    ``response.incomplete`` (or a response whose ``status`` is
    ``incomplete``), by ``incomplete_details.reason``: ``max_output_tokens``
    -> length; ``content_filter`` -> content-filter (the provider's filter
    cut the output; what text came is still the answer text), whatever
    function calls came; any other reason -> length.
    """
    if incomplete or response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason == "content_filter":
            return FinishReason.CONTENT_FILTER
        return FinishReason.LENGTH
    return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP


# --- the compact endpoint ---------------------------------------------------------


def compacted_messages(
    answer: object, messages: Sequence[Message], sent: Sequence[Any], origin: str
) -> tuple[list[Message], Usage]:
    """The history a ``POST /responses/compact`` answer holds, and its usage.

    The answer is a ``response.compaction`` object whose ``output`` is "a list
    of all user messages, followed by a single compaction item"
    (https://platform.openai.com/docs/api-reference/responses/compact); the
    guide (:data:`COMPACTION_DOCS`) passes that window whole into the next
    request. Each user message of the output is the history's user message
    in the same place among the user messages sent (the very message, files
    and all); the compaction item becomes an assistant message holding it as
    a :class:`ProviderItem` (its ``data`` the item as answered), in its place.

    Args:
        answer: the decoded JSON answer.
        messages: the history that was compacted.
        sent: the input items sent for each of ``messages``
            (:func:`agentcore.providers.openai.responses.request.request_body`'s ``sent``).
        origin: the server's origin.

    Raises:
        ModelError: ``UPSTREAM``, an answer of another shape: not an object,
            no ``output`` list, an item that is neither a user message nor a
            compaction item, more user messages than were sent or one whose
            text is not the sent message's, no compaction item.
    """
    if not isinstance(answer, Mapping):
        raise fields.wrong_shape("the compact answer", answer, "an object")
    users = [
        messages[index]
        for index, entries in enumerate(sent)
        if any(entry.get("type") == "message" and entry.get("role") == "user" for entry in entries or ())
    ]
    history: list[Message] = []
    taken = 0
    compacted = False
    for position, item in enumerate(fields.array(answer, "output", "output (of the compact answer)")):
        where = f"output[{position}] (of the compact answer)"
        if not isinstance(item, Mapping):
            raise fields.wrong_shape(where, item, "an object")
        kind = item.get("type")
        if kind == COMPACTION:
            part = provider_item_part(ProviderItem(COMPACTION, _compact(item), FORMAT, origin))
            history.append(Message(Role.ASSISTANT, [part]))
            compacted = True
        elif kind == "message" and item.get("role") == "user" and taken < len(users):
            original = users[taken]
            taken += 1
            text = _texts(fields.array(item, "content", f"content of {where}"))
            if text != original.text:
                raise ModelError(
                    ErrorClass.UPSTREAM,
                    message=f"the compact answer's {where} is not the user message sent in its place",
                )
            history.append(original)
        else:
            raise ModelError(
                ErrorClass.UPSTREAM,
                message=f"the compact answer holds an item agentcore cannot place at {where}: "
                f"{str(kind)[:40]!r} (role {str(item.get('role'))[:20]!r})",
            )
    if not compacted:
        raise ModelError(ErrorClass.UPSTREAM, message="the compact answer holds no compaction item")
    return history, usage_from(answer.get("usage"))


# --- the state machine ----------------------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _position(data: Mapping[str, Any], key: str) -> int:
    """An event's integer index field (0 when absent or of another type)."""
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _compact(value: Any) -> str:
    """``value`` as compact JSON text; it came from a decoded event, so only
    depth can fail (the decoder's limit, reached again a few frames deeper)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError as exc:
        message = "an output item in the stream is nested too deeply to keep"
        raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc


def _item_text(done: Mapping[str, Any], added: Mapping[str, Any], key: str, kind: str) -> str:
    """A string field of a ``kind`` output item: the done item's, else the
    added item's ("" when neither has it; another JSON type is an error)."""
    where = f"{key} (of a {kind} item)"
    return fields.text(done, key, where) or fields.text(added, key, where)


def _texts(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(_text(part.get("text")) for part in parts if isinstance(part, Mapping))


class _Item:
    """One output item as its events arrive."""

    __slots__ = ("added", "arguments", "call_id", "deltas", "fragments", "reasoning")

    def __init__(self, added: Mapping[str, Any]) -> None:
        self.added = added
        self.fragments: list[str] = []
        self.reasoning: list[str] = []
        self.arguments = ""
        """From ``response.function_call_arguments.done``."""
        self.call_id = ""
        """The call id its ``tool-call-delta`` parts carry (made up when the added item has none)."""
        self.deltas: InputDeltas | None = None
        """Its ``tool-call-delta`` parts so far (``tool_input`` only)."""


_EMPTY: Mapping[str, Any] = {}
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_TEXT_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})
_STARTS = frozenset({"response.created", "response.in_progress", "response.queued"})


_text_delta = StreamPart.text_delta


class StreamState:
    """The state of one streamed response, fed one decoded SSE event at a
    time (a :class:`agentcore.providers.shell.StateMachine`).

    Usage::

        state = StreamState(origin)
        for event in events:
            yield from state.feed(event)  # text, reasoning and tool-call parts
            if state.done:
                break
        yield from state.finish()         # one step-finish

    Args:
        origin: the server's origin, recorded in every reasoning part and
            tool call (:attr:`agentcore.Reasoning.origin`).
        stored: the request said ``store: true``: each tool call records the
            response's id, for ``previous_response_id`` (a response the
            server did not store cannot be chained to).
        new_id: makes a call id for a function call sent without one
            (default ``"call_" + uuid4().hex``); injected by tests.
        tool_input: emit ``tool-call-delta`` parts as each function call's
            arguments stream (``Request.stream_tool_input``).

    The parts (module docstring): ``text-delta`` for output text and refusal
    deltas; ``reasoning-delta`` for summary and raw reasoning deltas; a
    ``reasoning`` part per reasoning item (``text``: its summary or raw
    reasoning text; ``id``: the item id; ``data``: ``encrypted_content``;
    ``provider_data``: JSON ``{"summary": [...]}`` with the item's
    ``summary`` list as received, plus ``"content"`` when the item carries
    raw reasoning content); a ``tool-call`` part per function call
    (``provider_data``: JSON ``{"id": fc item id}``, plus ``"response_id"``
    when ``stored``), after its ``tool-call-delta`` parts with
    ``tool_input``; a ``provider-item`` part per compaction item and per
    hosted tool's item; a ``citation`` part per text annotation.
    """

    def __init__(
        self,
        origin: str = "",
        *,
        stored: bool = False,
        new_id: Callable[[], str] = synthesize_id,
        tool_input: bool = False,
    ) -> None:
        self._origin = origin
        self._stored = stored
        self._new_id = new_id
        self._tool_input = tool_input
        self._cited: set[tuple[int, int, int]] = set()
        """(output, content, annotation) index of each annotation sent as a citation."""
        self._server_calls: dict[str, int] = {}
        """Completed hosted-tool items, by the Usage field they count in."""
        self._items: dict[int, _Item] = {}
        self._finished: set[int] = set()
        self._last = 0
        self._response: Mapping[str, Any] | None = None
        self._incomplete = False
        self.response_id = ""
        """The latest response id seen (it may change mid-stream)."""
        self.calls = 0
        """How many tool-call parts were emitted."""
        self.done = False
        """True once a terminal event or ``[DONE]`` arrived: read no further."""

    @property
    def complete(self) -> bool:
        """True once ``response.completed`` or ``response.incomplete`` arrived."""
        return self._response is not None

    def feed(self, event: Event) -> list[StreamPart]:
        """Take one event; return the parts it completes.

        An output text delta takes a short path (the hot path: most events
        are one); every other event the general one (:meth:`_event`).

        Raises:
            ModelError: an ``error`` event or ``response.failed``.
        """
        data = event[1]
        if type(data) is dict and data.get("type") == "response.output_text.delta":
            delta = data.get("delta")
            if type(delta) is str:
                return [_text_delta(delta)] if delta else []
        return self._event(event)

    def _event(self, event: Event) -> list[StreamPart]:
        """The general path of :meth:`feed`."""
        data = event.data
        if data == DONE:
            self.done = True
            return []
        if not isinstance(data, Mapping):
            raise fields.wrong_shape(f"the {event.event!r} event", data, "an object")
        kind = data.get("type")
        if not isinstance(kind, str):
            kind = event.event
        if kind in _TEXT_DELTAS:
            delta = fields.text(data, "delta", f"delta (in {kind})")
            return [StreamPart.text_delta(delta)] if delta else []
        if kind in _REASONING_DELTAS:
            delta = fields.text(data, "delta", f"delta (in {kind})")
            if not delta:
                return []
            self._item(data).reasoning.append(delta)
            return [StreamPart.reasoning_delta(delta)]
        if kind == "response.function_call_arguments.delta":
            delta = fields.text(data, "delta", f"delta (in {kind})")
            streaming = self._item(data)
            streaming.fragments.append(delta)
            if self._tool_input:
                return self._input_delta(streaming, delta)
        elif kind == "response.output_text.annotation.added":
            annotation = fields.mapping(data, "annotation", f"annotation (in {kind})")
            key = (self._index(data), _position(data, "content_index"), _position(data, "annotation_index"))
            return self._cite(key, annotation)
        elif kind == "response.function_call_arguments.done":
            self._item(data).arguments = fields.text(data, "arguments", f"arguments (in {kind})")
        elif kind == "response.output_item.added":
            item = fields.mapping(data, "item", f"item (in {kind})")
            index = self._index(data, max(self._items, default=-1) + 1)
            self._items[index] = _Item(item)
            self._last = index
        elif kind == "response.output_item.done":
            item = fields.mapping(data, "item", f"item (in {kind})")
            return self._complete(self._index(data), item)
        elif kind in _STARTS:
            self._record_id(data.get("response"))
        elif kind in ("response.completed", "response.incomplete"):
            self.done = True
            self._incomplete = kind == "response.incomplete"
            return self._terminal(fields.mapping(data, "response", f"response (in {kind})"))
        elif kind == "response.failed":
            self.done = True
            response = data.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            raise error_event(
                {"error": error if isinstance(error, Mapping) else {}}, fallback="the response failed"
            )
        elif kind == "error":
            self.done = True
            raise error_event(data, fallback="the server sent an error event")
        return []

    def finish(self) -> list[StreamPart]:
        """End the step: exactly one step-finish, with the terminal response's usage.

        Raises:
            ModelError: ``TRANSIENT`` when the stream ended (or sent ``[DONE]``)
                before ``response.completed`` or ``response.incomplete``.
        """
        if self._response is None:
            raise ModelError(
                ErrorClass.TRANSIENT,
                message="the stream ended before the response completed "
                "(no response.completed or response.incomplete event)",
            )
        reason = map_finish_reason(self._response, self._incomplete, self.calls > 0)
        usage = usage_from(self._response.get("usage"))
        if self._server_calls:
            usage = attrs.evolve(usage, **self._server_calls)
        return [StreamPart.step_finish(reason, usage)]

    # --- items ---

    def _index(self, data: Mapping[str, Any], default: int | None = None) -> int:
        """The event's ``output_index``; without one, ``default``, else the
        item added last."""
        index = data.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        return self._last if default is None else default

    def _item(self, data: Mapping[str, Any]) -> _Item:
        index = self._index(data)
        item = self._items.get(index)
        if item is None:
            item = self._items[index] = _Item(_EMPTY)
        return item

    def _record_id(self, response: Any) -> None:
        if isinstance(response, Mapping) and isinstance(response.get("id"), str) and response["id"]:
            self.response_id = response["id"]

    def _terminal(self, response: Mapping[str, Any]) -> list[StreamPart]:
        self._record_id(response)
        self._response = response
        output = fields.array(response, "output", "response.output")
        parts: list[StreamPart] = []
        for index in sorted(set(range(len(output))) | self._items.keys()):
            item = output[index] if 0 <= index < len(output) else _EMPTY
            if not isinstance(item, Mapping):
                raise fields.wrong_shape(f"response.output[{index}]", item, "an object")
            parts += self._complete(index, item)
        return parts

    def _complete(self, index: int, done: Mapping[str, Any]) -> list[StreamPart]:
        """The part of the output item at ``index``, now complete (once)."""
        if index in self._finished:
            return []
        self._finished.add(index)
        item = self._items.get(index) or _Item(_EMPTY)
        kind = done.get("type") or item.added.get("type")
        if kind == "reasoning":
            return [StreamPart.reasoning_event(self._reasoning(done, item))]
        if kind == "function_call":
            self.calls += 1
            call = self._call(done, item)
            if not self._tool_input:
                return [StreamPart.tool_call_event(call)]
            deltas = item.deltas or InputDeltas()  # (a server that streamed no argument deltas)
            return [*deltas.rest(call.id, call.name, call.input), StreamPart.tool_call_event(call)]
        if kind == "message":
            return self._message_citations(index, done)
        if not done or not isinstance(kind, str):
            return []  # the added item's content is not the final one
        counted = SERVER_TOOL_ITEMS.get(kind)
        if kind != COMPACTION and counted is None:
            return []
        if counted is not None:
            self._server_calls[counted] = self._server_calls.get(counted, 0) + 1
        kept = ProviderItem(kind, _compact(done), FORMAT, self._origin, server_tool_text(done))
        return [StreamPart.provider_item_event(kept)]

    def _input_delta(self, item: _Item, fragment: str) -> list[StreamPart]:
        """The ``tool-call-delta`` part of a function call's next ``fragment``."""
        if item.deltas is None:
            if item.added.get("type") != "function_call":
                return []
            item.call_id = _item_text(_EMPTY, item.added, "call_id", "function_call") or self._new_id()
            item.deltas = InputDeltas()
        name = _item_text(_EMPTY, item.added, "name", "function_call")
        return item.deltas.add(item.call_id, name, fragment)

    def _cite(self, key: tuple[int, int, int], annotation: Mapping[str, Any]) -> list[StreamPart]:
        """The ``citation`` part of an annotation, once per ``key``."""
        if key in self._cited:
            return []
        self._cited.add(key)
        return [StreamPart.citation_event(citation_of(annotation))]

    def _message_citations(self, index: int, done: Mapping[str, Any]) -> list[StreamPart]:
        """The citations of a done ``message`` item's annotations that no
        ``annotation.added`` event brought."""
        parts: list[StreamPart] = []
        content = done.get("content")
        for position, entry in enumerate(content if isinstance(content, list) else ()):
            annotations = entry.get("annotations") if isinstance(entry, Mapping) else None
            for number, annotation in enumerate(annotations if isinstance(annotations, list) else ()):
                if isinstance(annotation, Mapping):
                    parts += self._cite((index, position, number), annotation)
        return parts

    def _reasoning(self, done: Mapping[str, Any], item: _Item) -> Reasoning:
        summary = fields.array(done, "summary", "summary (of a reasoning item)")
        content = fields.array(done, "content", "content (of a reasoning item)")
        stored: dict[str, Any] = {"summary": summary}
        if content:
            stored["content"] = content
        text = "".join(item.reasoning) or _texts(summary) + _texts(content)
        return Reasoning(
            text=text,
            data=_item_text(done, item.added, "encrypted_content", "reasoning"),
            id=_item_text(done, item.added, "id", "reasoning"),
            format=FORMAT,
            origin=self._origin,
            provider_data=_compact(stored),
        )

    def _call(self, done: Mapping[str, Any], item: _Item) -> ToolCall:
        added = item.added
        where = "arguments (of a function_call item)"
        arguments = (
            fields.text(done, "arguments", where)
            or item.arguments
            or "".join(item.fragments)
            or fields.text(added, "arguments", where)
        )
        stored = {"id": _item_text(done, added, "id", "function_call")}
        if self._stored:
            stored["response_id"] = self.response_id
        stored = {key: value for key, value in stored.items() if value}
        return ToolCall(
            id=_item_text(done, added, "call_id", "function_call") or item.call_id or self._new_id(),
            name=_item_text(done, added, "name", "function_call"),
            input=arguments if arguments.strip() else "{}",
            provider_data=_compact(stored) if stored else "",
            origin=self._origin,
        )
