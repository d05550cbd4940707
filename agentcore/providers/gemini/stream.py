"""What a Gemini API stream means: the pure stream mapping of
:class:`agentcore.providers.gemini.GeminiModel` (no I/O).

``streamGenerateContent?alt=sse`` sends Server-Sent Events whose data is a
whole ``GenerateContentResponse`` each
(https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent,
https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse):
``candidates[0].content.parts`` (the new parts), ``finishReason`` on the
last chunk, ``usageMetadata`` (running totals: the last one wins) and
``promptFeedback`` (a blocked prompt). There is no end marker: the body
ends after the chunk with the finish reason.

Parts (https://ai.google.dev/api/caching#Part):

* ``text``: a ``text-delta``; with ``thought: true`` a ``reasoning-delta``
  of the open thought block, which ends (a ``reasoning`` part holding its
  text and its ``thoughtSignature``) where a part that is no thought comes,
  or at the end (https://ai.google.dev/gemini-api/docs/thinking).
* a ``thoughtSignature`` on a text part (Gemini 3 puts one on the last part
  of an answer without calls, often an empty text; Gemini 2.5 on the first
  text after its thoughts, https://ai.google.dev/gemini-api/docs/thought-signatures):
  a ``reasoning`` part without text holding the signature, before the text,
  which the request mapping puts back on the text.
* ``functionCall {name, args, id?}``: a ``tool-call`` part, whole (the
  Gemini API streams a call in one part); ``args`` as JSON text. Its id is
  Gemini's when it gives one, else ``gemini-`` and 24 random hex digits
  (:data:`ID_PREFIX`); ``ToolCall.provider_data`` is ``{"thoughtSignature":
  ..., "id": true}`` (the signature on the part, and whether the id is
  Gemini's), with the API's origin.
* Streamed arguments (Vertex AI's ``streamFunctionCallArguments``,
  https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/Content#FunctionCall
  and ``PartialArg``): a ``functionCall`` with ``willContinue: true`` opens a
  call (its name, id and signature); the ``partialArgs`` of the parts after
  it each set one argument, ``jsonPath`` (RFC 9535: ``$.a.b[0].c``) saying
  where, ``stringValue``, ``numberValue``, ``boolValue`` or ``nullValue``
  what; a string whose ``PartialArg`` says ``willContinue`` goes on in the
  next piece at the same path. The call ends (a ``tool-call`` part with the
  arguments assembled, :class:`StreamedCall`) at the first ``functionCall``
  part without ``willContinue`` (an empty ``{}``, or the last piece), at a
  part that is no function call, or at the end of the stream. A part that
  only says ``willContinue`` is a separator. With
  ``Request.stream_tool_input`` the call's argument text streams as
  ``tool-call-delta`` parts as its pieces come (:meth:`StreamedCall.deltas`).
* any other part (``executableCode``, ``codeExecutionResult``, a server
  tool's ``toolCall``/``toolResponse``, ``inlineData`` made by the model): a
  provider item of type ``gemini-part`` holding the part's JSON as it came,
  its signature included, sent back in place.

The built-in tools (server tools, :mod:`agentcore.providers.gemini.request`):

* ``groundingMetadata`` on a candidate
  (https://ai.google.dev/api/generate-content#GroundingMetadata, filled on
  the last chunk, ``{}`` before it; https://ai.google.dev/gemini-api/docs/google-search):
  ``citation`` parts (:func:`grounding_citations`), each once in a step,
  where the metadata comes; the step's web searches are its distinct
  non-empty ``webSearchQueries`` (Gemini 3 bills each query, and not the
  empty ones the list may hold): ``Usage.web_search_requests``.
  ``searchEntryPoint`` (the search suggestions' HTML) is not kept.
* ``urlContextMetadata.urlMetadata`` (https://ai.google.dev/gemini-api/docs/url-context):
  each distinct ``retrievedUrl`` is a page fetched, ``Usage.web_fetch_requests``.
* ``executableCode`` / ``codeExecutionResult`` parts
  (https://ai.google.dev/gemini-api/docs/code-execution) and the
  ``toolCall`` / ``toolResponse`` parts of a built-in tool are kept parts,
  as above, with a line to read (:func:`kept_text`); each
  ``codeExecutionResult`` is a code run (``Usage.code_execution_requests``),
  each ``toolCall`` of type ``FILE_SEARCH`` a file search
  (``Usage.file_search_requests``; a file search shows its call only when
  the request asked ``includeServerSideToolInvocations``, else it counts
  none: the API reports no count).

Finish reasons (https://ai.google.dev/api/generate-content#FinishReason) are
:func:`map_finish_reason`'s; usage is :func:`usage_from`'s; an ``error``
object in the stream is :func:`error_event`'s.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agentcore.errors import ErrorClass, ModelError, classify_status
from agentcore.providers import fields
from agentcore.providers.gemini.request import FORMAT, KEPT_PART
from agentcore.providers.openai.shared import InputDeltas
from agentcore.transport.errors import google_retry_delay, looks_like_context_length
from agentcore.transport.sse import Event
from agentcore.types import Citation, FinishReason, ProviderItem, Reasoning, StreamPart, ToolCall, Usage

ID_PREFIX = "gemini-"
"""The start of a tool call id made here, for a ``functionCall`` without one."""

CONTENT_FILTER_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
    }
)
"""Finish reasons that stop an answer for its content: ``content-filter``
(``MODEL_ARMOR``: Vertex AI's Model Armor screened it,
https://cloud.google.com/vertex-ai/generative-ai/docs/reference/rest/v1/GenerateContentResponse#FinishReason)."""
RETRIED_REASONS = frozenset({"MALFORMED_FUNCTION_CALL"})
"""Finish reasons that fail the step as ``TRANSIENT``: the model wrote a
function call that does not parse, which the same request usually does not
repeat (retried only before any output reached the reader, loop rule 7)."""


def map_finish_reason(reason: str, calls: int, message: str = "") -> FinishReason:
    """The :class:`FinishReason` of Gemini's ``finishReason``
    (https://ai.google.dev/api/generate-content#FinishReason).

    ``STOP`` is ``tool-calls`` when the step made calls (Gemini says ``STOP``
    after function calls), else ``stop``; ``MAX_TOKENS`` is ``length``;
    :data:`CONTENT_FILTER_REASONS` are ``content-filter``.

    Raises:
        ModelError: ``TRANSIENT`` for :data:`RETRIED_REASONS`; ``UPSTREAM``
            for any other reason (``OTHER``, ``LANGUAGE``,
            ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``,
            ``MISSING_THOUGHT_SIGNATURE``, ``NO_IMAGE``, an unknown one),
            naming it and Gemini's ``finishMessage``.
    """
    if reason == "STOP":
        return FinishReason.TOOL_CALLS if calls else FinishReason.STOP
    if reason == "MAX_TOKENS":
        return FinishReason.LENGTH
    if reason in CONTENT_FILTER_REASONS:
        return FinishReason.CONTENT_FILTER
    error_class = ErrorClass.TRANSIENT if reason in RETRIED_REASONS else ErrorClass.UPSTREAM
    detail = f": {message}" if message else ""
    raise ModelError(error_class, message=f"Gemini stopped the answer with {reason[:100]!r}{detail}"[:500])


def usage_from(usage: Mapping[str, Any]) -> Usage:
    """The :class:`Usage` of a ``usageMetadata`` object
    (https://ai.google.dev/api/generate-content#UsageMetadata), design.md
    "Usage":

    * ``input = promptTokenCount + toolUsePromptTokenCount``: every prompt
      token billed as input; ``promptTokenCount`` includes the cached
      tokens, and tools' prompts (search results, fetched pages) are billed
      as input too.
    * ``cache_read = cachedContentTokenCount`` (implicit or explicit
      caching, https://ai.google.dev/gemini-api/docs/caching); Gemini bills
      no cache write on a request (``cache_write`` stays 0).
    * ``output = candidatesTokenCount + thoughtsTokenCount``: thinking
      tokens are billed as output, and ``candidatesTokenCount`` leaves them
      out (https://ai.google.dev/gemini-api/docs/thinking#pricing).

    An absent count is 0 (``candidatesTokenCount`` is absent until answer
    text starts). Raises ``UPSTREAM`` for a count that is not one.
    """

    def count(key: str) -> int:
        return fields.token_count(usage, key, f"usageMetadata.{key}") or 0

    return Usage(
        input=count("promptTokenCount") + count("toolUsePromptTokenCount"),
        output=count("candidatesTokenCount") + count("thoughtsTokenCount"),
        cache_read=count("cachedContentTokenCount"),
    )


def error_event(data: Mapping[str, Any]) -> ModelError:
    """The :class:`ModelError` of an ``error`` object in the stream (Google's
    error model, ``{"error": {"code", "message", "status", "details"}}``,
    https://ai.google.dev/gemini-api/docs/troubleshooting): classified by its
    HTTP ``code`` as an error status is (a 429 rate-limited, a 503
    overloaded, a prompt over the context window context-length), with the
    ``RetryInfo`` delay as ``retry_after``."""
    error = fields.mapping(data, "error", "error")
    code = error.get("code")
    message = fields.text(error, "message", "error.message")
    status = fields.text(error, "status", "error.status")
    number = code if type(code) is int else 0
    hint = looks_like_context_length(message, status)
    error_class = classify_status(number, hint) if number else ErrorClass.UPSTREAM
    text = f"{status}: {message}" if status else message
    return ModelError(
        error_class,
        message=(text or json.dumps(data))[:2000],
        status=number,
        retry_after=google_retry_delay(data),
    )


def _chunk_citation(chunk: Any, where: str) -> Citation:
    """The :class:`Citation` of one grounding chunk (``web``,
    ``retrievedContext`` or ``maps``: its ``uri`` and ``title``; a retrieved
    context's ``text`` is the passage cited)."""
    if not isinstance(chunk, dict):
        raise fields.wrong_shape(where, chunk, "an object")
    for kind in ("web", "retrievedContext", "maps"):
        source = fields.mapping(chunk, kind, f"{where}.{kind}")
        if source:
            passage = fields.text(source, "text", f"{where}.{kind}.text")
            return Citation(
                url=fields.text(source, "uri", f"{where}.{kind}.uri"),
                title=fields.text(source, "title", f"{where}.{kind}.title"),
                cited_text=passage if kind == "retrievedContext" else "",
                type=kind,
            )
    return Citation(type="groundingChunk")


def grounding_citations(metadata: Mapping[str, Any]) -> list[Citation]:
    """The citations of a ``groundingMetadata`` object
    (https://ai.google.dev/api/generate-content#GroundingMetadata): one per
    chunk each ``groundingSupports`` entry cites (``groundingChunkIndices``),
    in order, then one per chunk no support cites, so no source is lost.

    ``url`` and ``title`` are the chunk's (a web chunk's ``uri`` is often
    Google's redirect to the page, as the API gives it); ``cited_text`` is a
    retrieved context's ``text`` (a file search's passage), "" for the web,
    whose chunks hold no passage; ``type`` is the chunk's kind (``web``,
    ``retrievedContext``, ``maps``); ``data`` is ``{"segment": ...,
    "chunk": ...}``, the answer's segment the chunk supports (its offsets
    and text) and the chunk as the API gave them.

    Raises:
        ModelError: ``UPSTREAM`` for a field of the wrong JSON type, or an
            index with no chunk.
    """
    chunks = fields.array(metadata, "groundingChunks", "groundingMetadata.groundingChunks")
    cited: set[int] = set()
    out: list[Citation] = []
    supports = fields.array(metadata, "groundingSupports", "groundingMetadata.groundingSupports")
    for number, support in enumerate(supports):
        where = f"groundingMetadata.groundingSupports[{number}]"
        if not isinstance(support, dict):
            raise fields.wrong_shape(where, support, "an object")
        segment = fields.mapping(support, "segment", f"{where}.segment")
        for index in fields.array(support, "groundingChunkIndices", f"{where}.groundingChunkIndices"):
            if type(index) is not int or not 0 <= index < len(chunks):
                raise fields.wrong_shape(
                    f"{where}.groundingChunkIndices", index, "an index into groundingChunks"
                )
            cited.add(index)
            citation = _chunk_citation(chunks[index], f"groundingMetadata.groundingChunks[{index}]")
            data = json.dumps({"segment": segment, "chunk": chunks[index]}, ensure_ascii=False)
            out.append(attrs.evolve(citation, data=data))
    for index, chunk in enumerate(chunks):
        if index not in cited:
            citation = _chunk_citation(chunk, f"groundingMetadata.groundingChunks[{index}]")
            out.append(attrs.evolve(citation, data=json.dumps({"chunk": chunk}, ensure_ascii=False)))
    return out


def kept_text(part: Mapping[str, Any]) -> str:
    """What a person may read of a kept part: the code of an
    ``executableCode``, the outcome and output of a ``codeExecutionResult``,
    a built-in tool's type and arguments for a ``toolCall`` (its type for a
    ``toolResponse``); "" for another part. Never answer text."""
    code = part.get("executableCode")
    if isinstance(code, dict):
        return str(code.get("code", ""))
    result = part.get("codeExecutionResult")
    if isinstance(result, dict):
        return f"{result.get('outcome', '')}: {result.get('output', '')}".strip(": ")
    call = part.get("toolCall")
    if isinstance(call, dict):
        arguments = call.get("args")
        shown = f" {json.dumps(arguments, ensure_ascii=False)}" if arguments else ""
        return f"{call.get('toolType', '')}{shown}"
    response = part.get("toolResponse")
    if isinstance(response, dict):
        return str(response.get("toolType", ""))
    return ""


def _random_id() -> str:
    return ID_PREFIX + uuid.uuid4().hex[:24]


_PATH_STEP = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]")
"""One step of a ``jsonPath``: ``.name``, ``[index]``, ``['name']`` or ``["name"]``."""
_VALUES = ("stringValue", "numberValue", "boolValue", "nullValue")


def json_path(path: str) -> list[str | int]:
    """The steps of a ``PartialArg.jsonPath`` (``$.recipe.steps[1]`` is
    ``["recipe", "steps", 1]``).

    Raises:
        ModelError: ``UPSTREAM`` for a path that is not ``$`` and such steps.
    """
    where = "functionCall.partialArgs[].jsonPath"
    if not path.startswith("$"):
        raise fields.wrong_shape(where, path, "a JSON path starting with $")
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        found = _PATH_STEP.match(path, at)
        if found is None:
            raise fields.wrong_shape(where, path, "a path of names and indexes")
        name, index, single, double = found.groups()
        if index is not None:
            steps.append(int(index))
        else:
            quoted = single if single is not None else double
            try:
                steps.append(name if quoted is None else json.loads(f'"{quoted}"'))
            except ValueError:
                raise fields.wrong_shape(where, path, "a path of names") from None
        at = found.end()
    return steps


class StreamedCall:
    """A function call whose arguments stream in pieces (Vertex AI's
    ``partialArgs``, the module docstring): its name, id and signature, the
    arguments assembled so far, and, when asked, the ``tool-call-delta``
    parts of their JSON text.

    The text streamed is a prefix of the final arguments' JSON text (the
    arguments as the ``tool-call`` part holds them) while the pieces come in
    document order, as every recorded stream's do: after each piece, the
    JSON text of the arguments so far less its closing brackets (and the
    closing quote of a string that goes on) is final. A piece that changes
    text already streamed (a path earlier in the document) stops the live
    deltas; the ``tool-call`` part is what counts.
    """

    def __init__(self, call_id: str, name: str, arguments: Mapping[str, Any], kept: dict[str, Any]) -> None:
        self.id, self.name, self.kept = call_id, name, kept
        self.arguments: dict[str, Any] = dict(arguments)
        self._continuing: list[str | int] | None = None
        self._deltas = InputDeltas()
        self._final = ""  # the arguments' text made final so far

    def add(self, piece: Mapping[str, Any], where: str) -> None:
        """Set the argument one ``PartialArg`` carries.

        Raises:
            ModelError: ``UPSTREAM`` for a piece without a path or a value,
                whose path runs through a value of another kind, or skips
                array items (they come in order).
        """
        steps = json_path(fields.text(piece, "jsonPath", f"{where}.jsonPath"))
        names = [name for name in _VALUES if name in piece]
        if not steps or len(names) != 1:
            raise fields.wrong_shape(where, dict(piece), "a jsonPath into the arguments and one value")
        value = None if names[0] == "nullValue" else piece[names[0]]
        container: Any = self.arguments
        for step, following in zip(steps, [*steps[1:], None], strict=True):
            if isinstance(step, int) and isinstance(container, list) and step <= len(container):
                if step == len(container):
                    container.append(None)  # the next item: items come in order
                current = container[step]
            elif isinstance(step, str) and isinstance(container, dict):
                current = container.get(step)
            else:
                raise fields.wrong_shape(where, dict(piece), "a path that matches the arguments so far")
            if following is None:
                if steps == self._continuing and isinstance(current, str) and isinstance(value, str):
                    value = current + value
                container[step] = value
            else:
                if current is None:
                    current = container[step] = {} if isinstance(following, str) else []
                container = current
        self._continuing = steps if isinstance(value, str) and piece.get("willContinue") is True else None

    def input(self) -> str:
        """The arguments' JSON text, as the ``tool-call`` part holds it."""
        return json.dumps(self.arguments, ensure_ascii=False)

    def deltas(self) -> list[StreamPart]:
        """The ``tool-call-delta`` part of the text the last piece made final."""
        text = self.input().rstrip("]}")
        if self._continuing is not None:
            text = text[:-1]  # the closing quote of a string that goes on
        if self._deltas.stopped or not text.startswith(self._final):
            self._deltas.stop()
            return []
        fragment, self._final = text[len(self._final) :], text
        return self._deltas.add(self.id, self.name, fragment)

    def tool_call(self, origin: str, stream_tool_input: bool) -> list[StreamPart]:
        """The call's last ``tool-call-delta`` (when asked) and its ``tool-call`` part."""
        text = self.input()
        out = self._deltas.rest(self.id, self.name, text) if stream_tool_input else []
        call = ToolCall(
            id=self.id,
            name=self.name,
            input=text,
            provider_data=json.dumps(self.kept) if self.kept else "",
            origin=origin if self.kept else "",
        )
        return [*out, StreamPart.tool_call_event(call)]


class StreamState:
    """One step's state over the Gemini stream (the
    :class:`agentcore.providers.shell.StateMachine` protocol).

    Args:
        origin: the API's origin, stamped on the step's reasoning blocks,
            signed tool calls and kept parts.
        new_id: makes the id of a call Gemini gave none (None:
            :data:`ID_PREFIX` and 24 random hex digits).
        stream_tool_input: emit ``tool-call-delta`` parts as streamed
            arguments come (``Request.stream_tool_input``).
    """

    def __init__(
        self, origin: str, new_id: Callable[[], str] | None = None, *, stream_tool_input: bool = False
    ) -> None:
        self.complete = False
        self._streamed: StreamedCall | None = None
        self._stream_tool_input = stream_tool_input
        self._new_id = new_id or _random_id
        self.done = False  # no end marker: the body ends
        self._origin = origin
        self._thought: list[str] = []
        self._thought_open = False
        self._thought_signature = ""
        self._calls = 0
        self._finish = ""
        self._finish_message = ""
        self._blocked = ""
        self._usage: Mapping[str, Any] = {}
        self._cited: set[str] = set()  # the citations' data sent this step
        self._queries: set[str] = set()  # the web searches' queries
        self._fetched: set[str] = set()  # the URLs url context retrieved
        self._code_runs = 0
        self._file_searches = 0

    def feed(self, event: Event) -> list[StreamPart]:
        """The parts one chunk completes.

        Raises:
            ModelError: an ``error`` object (:func:`error_event`); ``UPSTREAM``
                for a field of the wrong JSON type.
        """
        data = event.data
        if not isinstance(data, dict):
            raise fields.wrong_shape("the event", data, "an object")
        if "error" in data:
            raise error_event(data)
        usage = fields.mapping(data, "usageMetadata", "usageMetadata")
        if usage:
            self._usage = usage
        feedback = fields.mapping(data, "promptFeedback", "promptFeedback")
        blocked = fields.text(feedback, "blockReason", "promptFeedback.blockReason")
        if blocked:
            self._blocked, self.complete = blocked, True
        out: list[StreamPart] = []
        candidates = fields.array(data, "candidates", "candidates")
        if candidates:
            candidate = candidates[0]
            if not isinstance(candidate, dict):
                raise fields.wrong_shape("candidates[0]", candidate, "an object")
            content = fields.mapping(candidate, "content", "candidates[0].content")
            for index, part in enumerate(fields.array(content, "parts", "candidates[0].content.parts")):
                if not isinstance(part, dict):
                    raise fields.wrong_shape(f"candidates[0].content.parts[{index}]", part, "an object")
                out += self._part(part, f"candidates[0].content.parts[{index}]")
            if "groundingMetadata" in candidate or "urlContextMetadata" in candidate:
                out += self._grounding(candidate)
            finish = fields.text(candidate, "finishReason", "candidates[0].finishReason")
            if finish:
                self._finish, self.complete = finish, True
                self._finish_message = fields.text(candidate, "finishMessage", "candidates[0].finishMessage")
        return out

    def _part(self, part: Mapping[str, Any], where: str) -> list[StreamPart]:
        if "functionCall" in part:
            return self._call(part, where)
        out = self._close_call()
        return out + self._other(part, where)

    def _other(self, part: Mapping[str, Any], where: str) -> list[StreamPart]:
        signature = fields.text(part, "thoughtSignature", f"{where}.thoughtSignature")
        if "text" in part:
            text = fields.text(part, "text", f"{where}.text")
            if part.get("thought") is True:
                self._thought_open = True
                self._thought.append(text)
                if signature:
                    self._thought_signature = signature
                return [StreamPart.reasoning_delta(text)] if text else []
            out = self._close_thought()
            if signature:
                block = Reasoning(signature=signature, format=FORMAT, origin=self._origin)
                out.append(StreamPart.reasoning_event(block))
            if text:
                out.append(StreamPart.text_delta(text))
            return out
        out = self._close_thought()
        self._count_tool_part(part)
        item = ProviderItem(
            type=KEPT_PART,
            data=json.dumps(part, ensure_ascii=False),
            format=FORMAT,
            origin=self._origin,
            text=kept_text(part),
        )
        out.append(StreamPart.provider_item_event(item))
        return out

    def _grounding(self, candidate: Mapping[str, Any]) -> list[StreamPart]:
        """The ``citation`` parts of a candidate's ``groundingMetadata`` not
        sent yet this step, and the searches and fetches it reports
        (the module docstring)."""
        metadata = fields.mapping(candidate, "groundingMetadata", "candidates[0].groundingMetadata")
        queries = fields.array(metadata, "webSearchQueries", "groundingMetadata.webSearchQueries")
        self._queries.update(query for query in queries if isinstance(query, str) and query.strip())
        context = fields.mapping(candidate, "urlContextMetadata", "candidates[0].urlContextMetadata")
        for entry in fields.array(context, "urlMetadata", "urlContextMetadata.urlMetadata"):
            if isinstance(entry, dict) and isinstance(entry.get("retrievedUrl"), str):
                self._fetched.add(entry["retrievedUrl"])
        out = []
        for citation in grounding_citations(metadata) if metadata else []:
            if citation.data not in self._cited:
                self._cited.add(citation.data)
                out.append(StreamPart.citation_event(citation))
        return out

    def _count_tool_part(self, part: Mapping[str, Any]) -> None:
        """Count a code run or a file search a kept part shows."""
        if "codeExecutionResult" in part:
            self._code_runs += 1
        call = part.get("toolCall")
        if isinstance(call, dict) and call.get("toolType") == "FILE_SEARCH":
            self._file_searches += 1

    def _server_tool_usage(self, usage: Usage) -> Usage:
        """``usage`` with the step's server-tool counts (the module docstring)."""
        return attrs.evolve(
            usage,
            web_search_requests=len(self._queries),
            web_fetch_requests=len(self._fetched),
            code_execution_requests=self._code_runs,
            file_search_requests=self._file_searches,
        )

    def _call(self, part: Mapping[str, Any], where: str) -> list[StreamPart]:
        """The parts a ``functionCall`` part completes: a whole call, or a
        piece of a streamed one (the module docstring)."""
        call = fields.mapping(part, "functionCall", f"{where}.functionCall")
        name = fields.text(call, "name", f"{where}.functionCall.name")
        pieces = fields.array(call, "partialArgs", f"{where}.functionCall.partialArgs")
        more = call.get("willContinue") is True
        out = self._close_thought()
        if name or (self._streamed is None and not pieces):
            out += self._close_call()  # a new call ends the streamed one
            if not name:
                return out  # a separator or a closing {} with no call open
            signature = fields.text(part, "thoughtSignature", f"{where}.thoughtSignature")
            given = fields.text(call, "id", f"{where}.functionCall.id")
            kept: dict[str, Any] = {}
            if signature:
                kept["thoughtSignature"] = signature
            if given:
                kept["id"] = True
            self._calls += 1
            arguments = fields.mapping(call, "args", f"{where}.functionCall.args")
            self._streamed = StreamedCall(given or self._new_id(), name, arguments, kept)
        streamed = self._streamed
        if streamed is None:
            expected = "a call's name before its partialArgs"
            raise fields.wrong_shape(f"{where}.functionCall", dict(call), expected)
        for index, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                raise fields.wrong_shape(f"{where}.functionCall.partialArgs[{index}]", piece, "an object")
            streamed.add(piece, f"{where}.functionCall.partialArgs[{index}]")
            if self._stream_tool_input:
                out += streamed.deltas()
        return out if more else out + self._close_call()

    def _close_call(self) -> list[StreamPart]:
        """The ``tool-call`` part of the call whose arguments streamed, if one is open."""
        streamed, self._streamed = self._streamed, None
        return [] if streamed is None else streamed.tool_call(self._origin, self._stream_tool_input)

    def _close_thought(self) -> list[StreamPart]:
        """The ``reasoning`` part of the open thought block, if any."""
        if not self._thought_open:
            return []
        block = Reasoning(
            text="".join(self._thought),
            signature=self._thought_signature,
            format=FORMAT,
            origin=self._origin,
        )
        self._thought, self._thought_open, self._thought_signature = [], False, ""
        return [StreamPart.reasoning_event(block)] if block.text or block.signature else []

    def finish(self) -> list[StreamPart]:
        """The open thought block and the ``step-finish``: ``content-filter``
        for a blocked prompt (``promptFeedback.blockReason``,
        https://ai.google.dev/api/generate-content#BlockReason), else the
        mapped finish reason, with the last usage.

        Raises:
            ModelError: ``TRANSIENT`` when the stream ended before a finish
                reason or a block; as :func:`map_finish_reason`.
        """
        if not self.complete:
            raise ModelError(ErrorClass.TRANSIENT, message="the stream ended before Gemini's finish reason")
        out = self._close_thought() + self._close_call()
        usage = self._server_tool_usage(usage_from(self._usage))
        if self._blocked and not self._finish:
            return [*out, StreamPart.step_finish(FinishReason.CONTENT_FILTER, usage)]
        reason = map_finish_reason(self._finish, self._calls, self._finish_message)
        return [*out, StreamPart.step_finish(reason, usage)]
