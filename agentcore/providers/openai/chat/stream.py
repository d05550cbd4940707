"""The OpenAI Chat Completions API, what a stream means: its chunks mapped
to agentcore parts.

No I/O here: :class:`StreamState` (a :class:`agentcore.providers.shell.StateMachine`)
is fed one decoded SSE event at a time (:class:`agentcore.transport.sse.Event`)
and returns the parts it can emit; :func:`map_finish_reason`,
:func:`usage_from` and :func:`agentcore.providers.openai.shared.error_event`
are small functions tested table by table.
:class:`agentcore.providers.openai.chat.model.OpenAIChatModel` runs it inside
the shell (:mod:`agentcore.providers.shell`).

The wire format (OpenAI API reference, "The chat completion chunk object"):
every ``data:`` event is a chunk ``{"choices": [{"index", "delta",
"finish_reason"}], "usage"}``; ``delta`` carries ``content`` and
``tool_calls`` fragments ``{"index", "id", "type", "function": {"name",
"arguments"}}``; with ``stream_options.include_usage`` a last chunk with
``"choices": []`` carries ``usage``; ``data: [DONE]`` ends the stream.

What OpenAI-compatible servers do differently, and how it is read (each seen
in a recording under ``tests/fixtures/openai_*`` or in a hand-written stream
of ``tests/test_openai_cases.py``):

* ``content`` may be an array of typed parts (Mistral): parts of type
  ``"text"`` are text, parts of type ``"thinking"`` are reasoning (below);
  other parts, ``annotations``, ``obfuscation``, ``x_groq`` and other extras
  are passed over.
* ``refusal`` (OpenAI: the model declines, instead of ``content``) is text:
  the user reads the refusal as the answer, and it goes into the history as
  the assistant's text (a refusal was an empty answer before).
* Tool-call fragments are grouped by ``index``. A missing index is the
  fragment's position in the ``tool_calls`` array (0 for the usual single
  entry; Mistral sends none); index 0 is a real index. Explicit ``null`` and
  ``""`` mean absent (Alibaba sends ``"id": ""``, Mistral ``"name": ""`` on
  continuations). The first non-empty id and name are kept: ids repeated on
  every fragment (design.md, fault 4) and names repeated with the arguments
  (Kimi) are not concatenated, and a name may arrive after the arguments
  (fault 5). A new, different non-empty id at an index already in use starts
  a new call (servers that put every call at index 0). Indices need not be
  dense (a gateway's only call has index 1). Calls are emitted in index order, then arrival order.
* Arguments are the fragments joined. Some servers repeat the whole arguments
  in a trailing fragment; a fragment that starts with everything accumulated
  so far is therefore also read as a snapshot (replace, not append), and that
  reading is used when the plain join is not valid JSON but the snapshot
  reading is. Empty or whitespace-only arguments mean ``"{}"`` (fault 1). Other
  text is passed on as sent, even when it is not valid JSON: the loop turns it
  into an error result.
* A call without an id gets ``"call_" + uuid4().hex``, fixed once, so the
  ToolCall part, the history and the tool result share it (fault 3). A call
  that never got a name is still emitted, with name ``""``: the loop treats it
  as an unknown tool (faults 5 and 20).
* ``finish_reason`` ``""`` or ``null`` does not end the step and does not undo
  an earlier finish (OpenRouter sends ``null`` on the usage chunk after
  ``stop``); the last non-empty value wins. The usage chunk comes after the
  finish chunk, so the stream is read on to ``[DONE]`` or the end of the body.
* ``[DONE]`` without any finish reason ends the step too: OpenRouter relaying
  Novita's Kimi K2 and Snowflake Cortex send none in any chunk (both recorded
  in ``tests/fixtures/openai_compat``; llama-cpp-python did the same, its
  issue 735). The reason is inferred: tool-calls with a call, else stop. Such
  a stream that brought no text and no tool call is a cut stream
  (``TRANSIENT``), never an empty answer.
* Fields are read by their documented JSON types
  (:mod:`agentcore.providers.fields`): absent or ``null`` is absent (vLLM
  sends ``"choices": null`` on its usage chunk, OpenRouter leaves
  ``choices`` out there); any other type (a chunk that is not an object,
  ``choices`` or ``delta`` not an object or list as documented, an entry of
  ``choices`` that is not an object, ``delta.content`` a number, a usage
  count that is a string or a fraction) is an ``UPSTREAM``
  :class:`ModelError` naming the field. Fields agentcore does not read are
  not looked at; a tool call's ``id`` and ``index`` of another type are
  read as absent (an id is then made up, fault 3).
* Usage: the last non-null ``usage`` object wins, never summed (servers that
  repeat it, a moderation chunk with ``"usage": null`` after it). Groq's
  ``x_groq.usage`` is read only when no top-level usage came at all.
* Errors inside a 200 stream: a chunk with an ``error`` object (OpenRouter,
  alone or next to ``choices``), an SSE event named ``error`` (Groq), or
  ``finish_reason: "error"`` raise :class:`ModelError` at once, never a
  normal finish, even after a finish reason (OpenRouter sends ``length`` and
  then an error chunk). Text in the error chunk itself is dropped (servers
  send ``""`` there); its usage is recorded first (:attr:`StreamState.usage`),
  though no step-finish carries it.

Reasoning. Each server streams its reasoning in a field of its own; every
fragment becomes a ``reasoning-delta`` part as it arrives, and each block (a
run of reasoning that text, a tool call or the end of the step closes) one
``reasoning`` part holding a :class:`agentcore.Reasoning` whose ``format``
names the field, whose ``origin`` is the server's (given to
:class:`StreamState`), and whose ``text`` is every fragment joined, byte for
byte. The block's part comes before the text or the tool calls that follow
it, so the loop stores the assistant turn in the order the model produced it.

* ``delta.reasoning_content`` (format :data:`REASONING_CONTENT`): DeepSeek
  (https://api-docs.deepseek.com/guides/thinking_mode), Kimi / Moonshot
  (https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model), GLM /
  Z.ai (https://docs.z.ai/guides/capabilities/thinking-mode), Qwen /
  DashScope (https://www.alibabacloud.com/help/en/model-studio/deep-thinking), xAI
  ``grok-3-mini`` (https://docs.x.ai/docs/guides/reasoning); vLLM and other
  servers that copy them.
* ``delta.reasoning`` (format :data:`REASONING`): Groq with
  ``reasoning_format: "parsed"`` (https://console.groq.com/docs/reasoning);
  OpenRouter sends it next to ``reasoning_details``. When a delta carries
  both ``reasoning_content`` and ``reasoning``, only ``reasoning_content`` is
  read (servers that send both repeat the same text).
* ``delta.reasoning_details`` (format :data:`REASONING_DETAILS`): OpenRouter's
  typed entries ``reasoning.text`` (``text``, ``signature``),
  ``reasoning.summary`` (``summary``) and ``reasoning.encrypted`` (``data``),
  each with ``id``, ``format`` and ``index``
  (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens). They
  must go back unmodified, so the block keeps them verbatim, as a JSON array,
  in ``Reasoning.provider_data`` (:func:`merge_details` joins the streamed
  fragments of one entry). The visible text is the ``reasoning`` field sent
  with them, or, when a delta has none, the entries' ``text`` and ``summary``.
* A Mistral ``content`` part ``{"type": "thinking", "thinking": [{"type":
  "text", "text": ...}]}`` (format :data:`MISTRAL_THINKING`;
  https://docs.mistral.ai/capabilities/reasoning/).
* Gemini's OpenAI-compatible endpoint puts a thought signature on tool calls:
  ``tool_calls[].extra_content.google.thought_signature``
  (https://ai.google.dev/gemini-api/docs/thought-signatures). The
  ``extra_content`` object is kept in ``ToolCall.provider_data`` as the JSON
  text ``{"extra_content": ...}`` (the fields to put back on the call), with
  the call's ``origin`` set.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agentcore.errors import ErrorClass, ModelError
from agentcore.providers import fields
from agentcore.providers.openai.shared import InputDeltas, error_event, synthesize_id, token_usage
from agentcore.transport.sse import DONE, Event
from agentcore.types import FinishReason, Reasoning, StreamPart, ToolCall, Usage

REASONING_CONTENT = "reasoning_content"
"""``Reasoning.format`` of a block read from ``delta.reasoning_content``."""
REASONING = "reasoning"
"""``Reasoning.format`` of a block read from ``delta.reasoning`` alone."""
REASONING_DETAILS = "reasoning_details"
"""``Reasoning.format`` of a block that came with OpenRouter's ``reasoning_details``."""
MISTRAL_THINKING = "mistral-thinking"
"""``Reasoning.format`` of a block read from Mistral's ``thinking`` content parts."""
REASONING_FORMATS = (REASONING_CONTENT, REASONING, REASONING_DETAILS, MISTRAL_THINKING)
"""Every ``Reasoning.format`` this module writes: each names the field the
reasoning travels in, and goes back there (:mod:`agentcore.providers.openai.chat.request`)."""


# --- finish reasons ---------------------------------------------------------

_LENGTH_REASONS = frozenset({"length", "max_tokens", "max_output_tokens"})
_TOOL_REASONS = frozenset({"tool_calls", "function_call", "tool_use"})


def map_finish_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """Map an OpenAI-style ``finish_reason`` onto a step's :class:`FinishReason`.

    Documented values (OpenAI API reference, chat completion chunk):
    ``stop`` -> stop, ``tool_calls`` and the legacy ``function_call`` ->
    tool-calls, ``length`` -> length, ``content_filter`` -> content-filter
    (the provider's filter cut the output; the text so far is still the
    answer). ``max_tokens`` and
    ``tool_use`` (Anthropic's words, passed through by some gateways) count as
    length and tool-calls. Any assembled tool call makes it tool-calls, except
    after ``length`` or ``content_filter`` (a cut call is not run), since
    servers say ``stop`` or ``eos`` while sending calls
    (design.md, fault 10). Unknown values (vLLM's ``eos``, ``abort``), or none
    at all, give tool-calls or stop by the content. ``"error"`` never reaches this
    function: :class:`StreamState` raises on it.

    Args:
        raw: the last non-empty ``finish_reason`` of the stream, or None.
        has_tool_calls: whether the step assembled at least one tool call.
    """
    reason = (raw or "").lower()
    if reason in _LENGTH_REASONS:
        return FinishReason.LENGTH
    if reason == "content_filter":
        return FinishReason.CONTENT_FILTER
    if has_tool_calls or reason in _TOOL_REASONS:
        return FinishReason.TOOL_CALLS
    return FinishReason.STOP


# --- usage ------------------------------------------------------------------


def usage_from(usage: Any, field: str = "usage") -> Usage:
    """Normalize a Chat Completions ``usage`` object (design.md, "Usage"):
    :func:`agentcore.providers.openai.shared.token_usage` of ``prompt_tokens``
    (cached tokens included, per the OpenAI reference), ``completion_tokens``
    (reasoning tokens included on OpenAI; xAI leaves them out, and so does
    this count then), ``prompt_tokens_details`` (``cached_tokens``, and
    ``cache_write_tokens`` where a gateway reports cache writes: OpenRouter)
    and DeepSeek's ``prompt_cache_hit_tokens``. No usage object is zeros.

    Args:
        usage: the decoded ``usage`` value; None for none.
        field: its name in error messages.

    Raises:
        ModelError: ``UPSTREAM``, ``usage`` is not an object or a count is
            not a whole number of at least 0 (:func:`agentcore.providers.fields.token_count`).
    """
    if usage is None:
        return Usage()
    return token_usage(
        usage, field, prompt="prompt_tokens", completion="completion_tokens", details="prompt_tokens_details"
    )


# --- reasoning --------------------------------------------------------------

_APPENDED = ("text", "summary")
"""``reasoning_details`` fields that stream as fragments to join; any other
field keeps its first non-empty value."""


def merge_details(entries: list[dict[str, Any]], fragments: Iterable[Any]) -> None:
    """Add streamed ``reasoning_details`` fragments to ``entries``, in place.

    OpenRouter streams each entry of the array in pieces that share its
    ``index`` (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens):
    a fragment whose integer ``index`` matches an entry's is joined to it
    (``text`` and ``summary`` appended; any other field, such as
    ``signature``, ``data``, ``id`` or ``format``, set when the entry has no
    non-empty value for it yet), any other fragment is a new entry. Entries
    keep every field as sent. Fragments that are not objects are skipped.

    Args:
        entries: the block's entries so far (JSON objects).
        fragments: one delta's ``reasoning_details`` array.
    """
    for fragment in fragments:
        if not isinstance(fragment, Mapping):
            continue
        index = fragment.get("index")
        entry = next(
            (e for e in entries if type(index) is int and e.get("index") == index),
            None,
        )
        if entry is None:
            entries.append(dict(fragment))
            continue
        for name, value in fragment.items():
            if name in _APPENDED and isinstance(value, str):
                entry[name] = _text(entry.get(name)) + value
            elif value not in (None, "") and entry.get(name) in (None, ""):
                entry[name] = value


def _details_text(fragments: Iterable[Any]) -> str:
    """The visible text of ``reasoning_details`` fragments (``text`` and ``summary``)."""
    return "".join(
        _text(f.get("text")) + _text(f.get("summary")) for f in fragments if isinstance(f, Mapping)
    )


def _plain_text(delta: Mapping[str, Any]) -> str:
    """A delta's plain reasoning text: ``reasoning_content``, or ``reasoning``."""
    return fields.text(delta, REASONING_CONTENT, _DELTA + REASONING_CONTENT) or fields.text(
        delta, REASONING, _DELTA + REASONING
    )


def _thinking_texts(part: Mapping[str, Any], field: str) -> list[str]:
    """The texts of a Mistral ``thinking`` part's ``thinking`` list (or string)."""
    value = part.get("thinking")
    if isinstance(value, str):
        return [value]
    texts = []
    for position, item in enumerate(fields.array(part, "thinking", f"{field}.thinking")):
        if not isinstance(item, Mapping):
            raise fields.wrong_shape(f"{field}.thinking[{position}]", item, "an object")
        texts.append(fields.text(item, "text", f"{field}.thinking[{position}].text"))
    return texts


class _Block:
    """One block of reasoning being assembled from its fragments."""

    __slots__ = ("details", "format", "texts")

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.texts: list[str] = []
        self.details: list[dict[str, Any]] = []

    def reasoning(self, origin: str) -> Reasoning:
        if self.details:
            return Reasoning(
                text="".join(self.texts),
                format=REASONING_DETAILS,
                origin=origin,
                provider_data=json.dumps(self.details, ensure_ascii=False, separators=(",", ":")),
            )
        return Reasoning(text="".join(self.texts), format=self.format, origin=origin)


# --- tool-call assembly -----------------------------------------------------


def _text(value: Any) -> str:
    """A string field, with null and non-strings meaning absent ("")."""
    return value if isinstance(value, str) else ""


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _CallBuilder:
    """One tool call being assembled from its fragments."""

    __slots__ = (
        "deltas",
        "extra",
        "fragments",
        "id",
        "index",
        "name",
        "resolved_len",
        "shown",
        "snapshot_from",
    )

    def __init__(self, index: int) -> None:
        self.index = index
        self.id = ""
        self.name = ""
        self.deltas = InputDeltas()
        """Its ``tool-call-delta`` parts (``tool_input`` only)."""
        self.shown = 0
        """How many of ``fragments`` were given to ``deltas``."""
        self.extra: Mapping[str, Any] | None = None
        """Gemini's ``extra_content`` object, as sent on the call's fragments."""
        self.fragments: list[str] = []
        self.snapshot_from = 0
        """Under the snapshot reading the arguments are ``fragments[snapshot_from:]``."""
        self.resolved_len = 0

    def add(self, fragment: str) -> None:
        # Cheap length test first: only a fragment at least as long as the
        # snapshot reading so far can repeat it.
        if (
            self.resolved_len
            and len(fragment) >= self.resolved_len
            and fragment.startswith("".join(self.fragments[self.snapshot_from :]))
        ):
            self.snapshot_from = len(self.fragments)
            self.resolved_len = 0
            self.deltas.stop()  # the final reading may be this snapshot: the rest comes at the end
        self.fragments.append(fragment)
        self.resolved_len += len(fragment)

    def arguments(self) -> str:
        joined = "".join(self.fragments)
        if not joined.strip():
            return "{}"
        if self.snapshot_from == 0 or _is_json(joined):
            return joined
        snapshot = "".join(self.fragments[self.snapshot_from :])
        return snapshot if _is_json(snapshot) else joined


def _arguments_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        # A few servers send the arguments as a JSON object instead of text.
        try:
            return json.dumps(value, ensure_ascii=False)
        except RecursionError as exc:
            message = "a tool call's arguments in the stream are nested too deeply to keep"
            raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc
    if value is None:
        return ""
    raise fields.wrong_shape(_DELTA + "tool_calls[].function.arguments", value, "a string")


def _index_of(value: Any, position: int) -> int:
    if isinstance(value, bool):
        return position
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return position


# --- the state machine ------------------------------------------------------

_DELTA = "choices[0].delta."
"""How error messages name a field of the delta."""
_PLAIN_KEYS = frozenset({"role", "content", REASONING_CONTENT, REASONING, "channel"})
"""The delta keys :meth:`StreamState.feed` reads on its short paths (Groq's
``channel`` names gpt-oss's reasoning channel)."""
_text_delta = StreamPart.text_delta
_reasoning_delta = StreamPart.reasoning_delta


class StreamState:
    """The state of one streamed step, fed one decoded SSE event at a time
    (a :class:`agentcore.providers.shell.StateMachine`).

    Usage::

        state = StreamState(origin="api.deepseek.com")
        for event in events:
            yield from state.feed(event)    # text and reasoning; raises on an error
            if state.done:
                break
        yield from state.finish()           # the open reasoning block, tool calls, one step-finish

    Args:
        origin: the server's origin (:func:`agentcore.providers.config.origin`),
            recorded on every reasoning block and on tool-call provider data.
        new_id: makes an id for a tool call the server sent without one
            (default :func:`agentcore.providers.openai.shared.synthesize_id`);
            injected by tests.
        tool_input: emit ``tool-call-delta`` parts as each tool call's
            arguments stream (``Request.stream_tool_input``): a call's
            fragments are passed on as they come once its id and name are
            known (OpenAI sends both in the call's first fragment, the
            arguments after them by ``index``, parallel calls interleaved),
            and what its final arguments hold beyond them comes at the end,
            before its ``tool-call`` part
            (:class:`agentcore.providers.openai.shared.InputDeltas`). A call
            whose id the server left out or gave another call too gets its
            id only at the end, so its arguments come in one part then.

    Only choice 0 is read (agentcore never asks for ``n`` > 1).
    """

    def __init__(
        self, origin: str = "", *, new_id: Callable[[], str] = synthesize_id, tool_input: bool = False
    ) -> None:
        self._new_id = new_id
        self._tool_input = tool_input
        self._origin = origin
        self._block: _Block | None = None
        """The reasoning block being streamed, until text, a tool call or the end closes it."""
        self._calls: list[_CallBuilder] = []
        self._by_index: dict[int, _CallBuilder] = {}
        self._usage: Mapping[str, Any] | None = None
        self._groq_usage: Mapping[str, Any] | None = None
        self.finish_reason: str | None = None
        """The last non-empty ``finish_reason`` seen, as sent."""
        self.done = False
        """True once ``data: [DONE]`` arrived."""
        self._answered = False
        """Text came (what, with the tool calls, makes a step without a finish reason an answer)."""

    @property
    def complete(self) -> bool:
        """True once the step is complete: a finish reason or ``[DONE]`` arrived."""
        return self.done or self.finish_reason is not None

    @property
    def usage(self) -> Usage:
        """The step's usage so far (the last non-null usage object).

        Raises:
            ModelError: ``UPSTREAM``, it is not an object or holds a count
                that is not one (:func:`usage_from`).
        """
        if self._usage is not None:
            return usage_from(self._usage)
        return usage_from(self._groq_usage, "x_groq.usage")

    def feed(self, event: Event) -> list[StreamPart]:
        """Take one event; return the text-delta, reasoning-delta and
        reasoning parts it carries (a reasoning block's part when the event
        closes it).

        A chunk of one choice whose delta has keys of :data:`_PLAIN_KEYS` only
        takes a short path: text while no reasoning block is open (the hot
        path: ``{"content": "..."}``; DeepSeek adds a ``null``
        ``reasoning_content`` to each), or plain reasoning without text.
        Every other event takes the general one (:meth:`_event`).

        Raises:
            ModelError: the event reports an error (see the module docstring).
        """
        data = event[1]
        if type(data) is dict and event[0] != "error":
            choices = data.get("choices")
            if (
                type(choices) is list
                and len(choices) == 1
                and data.get("usage") is None
                and not data.get("error")
                and "x_groq" not in data
            ):
                choice = choices[0]
                delta = choice.get("delta") if type(choice) is dict else None
                if (
                    type(delta) is dict
                    and choice.get("finish_reason") is None
                    and choice.get("index") in (None, 0)
                ):
                    block = self._block
                    if len(delta) == 1:  # the hot path: {"content": "..."}
                        content = delta.get("content")
                        if type(content) is str and block is None:
                            if not content:
                                return []
                            self._answered = True
                            return [_text_delta(content)]
                    if delta.keys() <= _PLAIN_KEYS:
                        content = delta.get("content")
                        if not content:
                            fragment = delta.get(REASONING_CONTENT)
                            if block is not None and type(fragment) is str and fragment:
                                # the reasoning hot path: one more fragment of the open block
                                block.texts.append(fragment)
                                return [_reasoning_delta(fragment)]
                            part = self._plain_reasoning(delta)
                            if part is not None:
                                return [part]
                        elif (
                            type(content) is str
                            and block is None
                            and not delta.get(REASONING_CONTENT)
                            and not delta.get(REASONING)
                        ):
                            self._answered = True
                            return [_text_delta(content)]
        return self._event(event)

    def _event(self, event: Event) -> list[StreamPart]:
        """The general path of :meth:`feed`."""
        data = event.data
        if data == DONE:
            self.done = True
            return []
        if event.event == "error":
            self._record_usage(data)
            raise error_event(data, fallback="the server sent an error event")
        if not isinstance(data, Mapping):
            raise fields.wrong_shape("the chunk", data, "an object")
        self._record_usage(data)
        if data.get("error"):
            raise error_event(data)
        parts: list[StreamPart] = []
        for position, choice in enumerate(fields.array(data, "choices", "choices")):
            if not isinstance(choice, Mapping):
                raise fields.wrong_shape(f"choices[{position}]", choice, "an object")
            if choice.get("index") not in (None, 0):
                continue
            self._read_delta(fields.mapping(choice, "delta", "choices[0].delta"), parts)
            reason = fields.text(choice, "finish_reason", "choices[0].finish_reason")
            if reason == "error":
                raise error_event(data, fallback="the server ended the stream with finish_reason 'error'")
            if reason:
                self.finish_reason = reason
        return parts

    def _record_usage(self, data: Any) -> None:
        """Keep the chunk's non-null ``usage`` (and Groq's ``x_groq.usage``),
        read at the end (:attr:`usage`)."""
        if not isinstance(data, Mapping):
            return
        usage = data.get("usage")
        if usage is not None:
            self._usage = usage
        groq = data.get("x_groq")
        if isinstance(groq, Mapping) and groq.get("usage") is not None:
            self._groq_usage = groq["usage"]

    def _read_delta(self, delta: Mapping[str, Any], parts: list[StreamPart]) -> None:
        details = fields.array(delta, REASONING_DETAILS, _DELTA + REASONING_DETAILS)
        if details:
            part = self._reason(REASONING_DETAILS, _plain_text(delta) or _details_text(details))
            assert self._block is not None
            merge_details(self._block.details, details)
        else:
            part = self._plain_reasoning(delta)
        if part is not None:
            parts.append(part)
        content = delta.get("content")
        if isinstance(content, str):
            self._say(content, parts)
        elif isinstance(content, list):
            for position, item in enumerate(content):
                if not isinstance(item, Mapping):
                    raise fields.wrong_shape(f"{_DELTA}content[{position}]", item, "an object (a typed part)")
                kind = item.get("type")
                if kind == "text":
                    self._say(fields.text(item, "text", f"{_DELTA}content[{position}].text"), parts)
                elif kind == "thinking":
                    for text in _thinking_texts(item, f"{_DELTA}content[{position}]"):
                        part = self._reason(MISTRAL_THINKING, text)
                        if part is not None:
                            parts.append(part)
        elif content is not None:
            raise fields.wrong_shape(_DELTA + "content", content, "a string or a list of typed parts")
        self._say(fields.text(delta, "refusal", _DELTA + "refusal"), parts)
        for position, fragment in enumerate(fields.array(delta, "tool_calls", _DELTA + "tool_calls")):
            if not isinstance(fragment, Mapping):
                raise fields.wrong_shape(f"{_DELTA}tool_calls[{position}]", fragment, "an object")
            self._close(parts)
            call = self._add_fragment(fragment, _index_of(fragment.get("index"), position))
            if self._tool_input:
                self._show(call, parts)
        legacy = fields.mapping(delta, "function_call", _DELTA + "function_call")
        if legacy:  # the pre-tools "functions" API: one call
            self._close(parts)
            self._add_fragment({"function": legacy}, 0)

    def _plain_reasoning(self, delta: Mapping[str, Any]) -> StreamPart | None:
        """Add the delta's ``reasoning_content`` or, without one, its
        ``reasoning``; return its reasoning-delta part (None for none)."""
        text = fields.text(delta, REASONING_CONTENT, _DELTA + REASONING_CONTENT)
        if text:
            return self._reason(REASONING_CONTENT, text)
        return self._reason(REASONING, fields.text(delta, REASONING, _DELTA + REASONING))

    def _reason(self, fmt: str, text: str) -> StreamPart | None:
        """Add a fragment of reasoning read from the field ``fmt`` names and
        return its reasoning-delta part (None for an empty fragment, which
        opens the block only for ``reasoning_details``)."""
        if not text and fmt != REASONING_DETAILS:
            return None
        if self._block is None:
            self._block = _Block(fmt)
        if not text:
            return None
        self._block.texts.append(text)
        return StreamPart.reasoning_delta(text)

    def _say(self, text: str, parts: list[StreamPart]) -> None:
        """Add a fragment of text: it closes the open reasoning block first."""
        if text:
            self._close(parts)
            self._answered = True
            parts.append(StreamPart.text_delta(text))

    def _close(self, parts: list[StreamPart]) -> None:
        """Close the open reasoning block, if any, adding its reasoning part."""
        if self._block is not None:
            parts.append(StreamPart.reasoning_event(self._block.reasoning(self._origin)))
            self._block = None

    def _show(self, call: _CallBuilder, parts: list[StreamPart]) -> None:
        """Add the ``tool-call-delta`` parts of the call's fragments not
        shown yet, once its id and name are known and its id is its own."""
        if not (call.id and call.name):
            return
        if any(other.id == call.id for other in self._calls if other is not call):
            return
        for fragment in call.fragments[call.shown :]:
            parts += call.deltas.add(call.id, call.name, fragment)
        call.shown = len(call.fragments)

    def _add_fragment(self, fragment: Mapping[str, Any], index: int) -> _CallBuilder:
        function = fields.mapping(fragment, "function", _DELTA + "tool_calls[].function")
        call_id = _text(fragment.get("id"))
        call = self._by_index.get(index)
        if call is None or (call_id and call.id and call_id != call.id):
            call = _CallBuilder(index)
            self._calls.append(call)
            self._by_index[index] = call
        if call_id and not call.id:
            call.id = call_id
        name = fields.text(function, "name", _DELTA + "tool_calls[].function.name")
        if name and not call.name:
            call.name = name
        extra = fragment.get("extra_content")
        if isinstance(extra, Mapping) and extra and call.extra is None:
            call.extra = extra
        arguments = _arguments_text(function.get("arguments"))
        if arguments:
            call.add(arguments)
        return call

    def tool_calls(self) -> list[ToolCall]:
        """The calls assembled so far, in index order (then arrival order).

        Ids the server did not send, and an id an earlier call of the step
        already has (servers that name every call ``call_0``), are
        synthesized once and then kept.
        """
        return [call for _, call in self._assembled()]

    def _assembled(self) -> list[tuple[_CallBuilder, ToolCall]]:
        """Each call's builder and its :class:`ToolCall` (:meth:`tool_calls`)."""
        ordered = sorted(enumerate(self._calls), key=lambda item: (item[1].index, item[0]))
        result: list[tuple[_CallBuilder, ToolCall]] = []
        seen: set[str] = set()
        for _, call in ordered:
            if not call.id or call.id in seen:
                call.id = self._new_id()
            seen.add(call.id)
            if call.extra is None:
                result.append((call, ToolCall(id=call.id, name=call.name, input=call.arguments())))
                continue
            data = json.dumps({"extra_content": call.extra}, ensure_ascii=False, separators=(",", ":"))
            result.append((call, ToolCall(call.id, call.name, call.arguments(), data, self._origin)))
        return result

    def finish(self) -> list[StreamPart]:
        """End the step: the open reasoning block's part, the tool-call parts,
        then exactly one step-finish.

        Call once the stream is over (``[DONE]`` or the end of the body).

        Raises:
            ModelError: ``TRANSIENT`` when neither a finish reason nor
                ``[DONE]`` arrived, or ``[DONE]`` came without a finish reason
                after no text and no tool call: the stream was cut.
                ``UPSTREAM`` for a usage of the wrong shape (:attr:`usage`).
        """
        if not self.complete:
            raise ModelError(
                ErrorClass.TRANSIENT,
                message="the stream ended before the step completed (no finish_reason and no [DONE])",
            )
        assembled = self._assembled()
        calls = [call for _, call in assembled]
        if self.finish_reason is None and not calls and not self._answered:
            raise ModelError(
                ErrorClass.TRANSIENT,
                message="the stream ended with [DONE] but without a finish_reason, text or tool call",
            )
        parts: list[StreamPart] = []
        self._close(parts)
        for builder, call in assembled:
            if self._tool_input:
                parts += builder.deltas.rest(call.id, call.name, call.input)
            parts.append(StreamPart.tool_call_event(call))
        reason = map_finish_reason(self.finish_reason, bool(calls))
        parts.append(StreamPart.step_finish(reason, self.usage))
        return parts
