"""The OpenAI adapters: Chat Completions (:class:`OpenAIChatModel`) and the
Responses API (:class:`OpenAIResponsesModel`), for OpenAI and every server
that copies either API.

:class:`OpenAIResponsesModel` posts to ``{base_url}/responses``
(https://platform.openai.com/docs/api-reference/responses/create) and reads
its typed events (https://platform.openai.com/docs/api-reference/responses-streaming);
:mod:`agentcore.providers.responses` holds its pure request and stream
mapping and the decisions about them (stateless by default with encrypted
reasoning sent back in place, reasoning only to its own origin, nothing read
after the first terminal event). The rest of this docstring is about Chat
Completions.

:class:`OpenAIChatModel` posts to ``{base_url}/chat/completions`` with
``"stream": true`` and reads the Server-Sent Events it gets back. The same
class talks to Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's
server, LM Studio, OpenRouter, Groq, DeepSeek, Mistral, xAI and gateways:
point ``base_url`` at them (local servers need no ``api_key``).

The adapter is a thin shell: :func:`request_body` and :func:`request_headers`
build the request, :class:`agentcore.providers.openai_stream.ChunkState`
turns decoded events into parts (its docstring lists every server quirk it
reads), and ``agentcore.transport.http`` / ``agentcore.transport.sse`` own the
transport and its errors.

Decisions written down here so nobody "fixes" them:

* The request asks for ``stream_options: {"include_usage": true}`` by default
  (usage then arrives in a last chunk with ``"choices": []``); pass
  ``include_usage=False`` for servers that reject the field.
* Tool-call parts are emitted together with the step-finish, once the stream
  is over (``[DONE]`` or the end of the body), so that fragments arriving late
  and an error chunk sent after the finish reason are still taken into account.
* The stream is read past the finish reason, for the usage chunk. Once a
  finish reason arrived the step is complete (design.md, "Defaults and
  choices where the APIs leave room"): a connection that then breaks, stalls
  or ends without ``[DONE]`` ends the step normally with the usage seen so
  far. Before it, such a break is ``TRANSIENT``.
* An error result is sent as a ``tool`` message whose content starts with
  ``"Error: "``, since Chat Completions has no error flag.
* A ``tool`` message holds text only, so the files a tool returned go in a
  ``user`` message right after the step's ``tool`` messages, opening with
  ``Files returned by the tool call 'call_1' (render_chart):``
  (:func:`file_content` maps each file). That message is built for each
  request and never enters the history.
* The read timeout given to ``requests`` is ``min(read, idle_timeout)``, so a
  stream that sends nothing at all fails within the idle timeout too.
* Before anything is sent, the history is checked
  (:func:`agentcore.providers.history.check_history`: tool calls and results
  that do not pair up, reasoning outside assistant turns) and so is this
  adapter's own ``provider_data`` (JSON it wrote; an edited one is a
  ``ConfigError`` naming the message), then the settings
  (:func:`settings_fields`).

Reasoning sent back. Chat Completions has no reasoning field of its own; each
server that streams reasoning documents a field to send it back in, on the
assistant message it belongs to, and some refuse a tool-call turn without it.
:func:`reasoning_dialect` picks the server's field (the ``reasoning_format``
option, else :data:`KNOWN_DIALECTS`, else what the history holds from the
same origin, else nothing), and each assistant turn carries:

* ``reasoning_content`` (DeepSeek, Kimi / Moonshot, GLM / Z.ai): the turn's
  reasoning text. DeepSeek answers 400 "The reasoning_content in the thinking
  mode must be passed back to the API" when an assistant turn with
  ``tool_calls`` comes back without it, in every later request, and ignores
  it on turns without calls
  (https://api-docs.deepseek.com/guides/thinking_mode, "Tool Calls"); Kimi
  answers 400 "thinking is enabled but reasoning_content is missing in
  assistant tool call message"
  (https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model); GLM
  asks for the thinking to be returned with tool results
  (https://docs.z.ai/guides/capabilities/thinking-mode, "Interleaved
  thinking"). DeepSeek's rule covers every assistant turn between two user
  messages once the model called a tool there, so every assistant turn gets
  the field: ``""`` when it has no reasoning (a turn another model made, or
  one with thinking off), which DeepSeek ignores where it needs none.
* ``reasoning`` (Groq): the turn's own reasoning text, only when there is
  some: Groq takes the field back for its reasoning models and refuses it,
  like any unknown field, for others (https://console.groq.com/docs/reasoning),
  so reasoning another server produced is not sent there (it says nothing
  about whether the Groq model takes the field).
* ``reasoning_details`` (OpenRouter): the entries of the turn's blocks,
  unmodified, in order (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens,
  "Preserving reasoning blocks").
* Mistral: ``content`` becomes the chunks of the turn in order, each
  reasoning block a ``{"type": "thinking", "thinking": [{"type": "text",
  "text": ...}]}`` chunk, each text a ``{"type": "text"}`` chunk, as Mistral's
  assistant messages take them (https://docs.mistral.ai/capabilities/reasoning/).
* Gemini (``generativelanguage.googleapis.com``): each tool call gets its
  ``extra_content`` back; Gemini 3 answers 400 "Function call is missing a
  thought_signature in functionCall parts" otherwise
  (https://ai.google.dev/gemini-api/docs/thought-signatures). A turn whose
  calls carry no signature of Gemini's gets the documented dummy,
  :data:`GEMINI_DUMMY_SIGNATURE`, on its first call. Gemini has no reasoning
  field: reasoning blocks are not sent.
* api.openai.com, and servers whose dialect is unknown and whose history
  holds nothing of theirs: no reasoning (OpenAI refuses unknown message
  fields). Nor api.x.ai: xAI documents ``reasoning_content`` in responses
  (``grok-3-mini``) and nothing about taking it back
  (https://docs.x.ai/docs/guides/reasoning).

Switching providers: a block goes back verbatim only to its ``format`` and
``origin``. Reasoning from elsewhere (another server's, an Anthropic thinking
block, a Responses summary) is sent only where the field is plain, unsigned
text that any of the server's models takes (``reasoning_content``, Mistral
thinking): its visible text, blocks separated by a blank line. OpenRouter's ``reasoning_details``
carry signatures and encrypted data the upstream verifies, so foreign blocks
are dropped there; signatures and encrypted data never travel to another
origin. Tool-call ``provider_data`` goes back only to its origin, and only
the ``extra_content`` this adapter wrote.

Settings: :func:`settings_fields` maps :class:`agentcore.ModelSettings`;
``thinking`` has no field in OpenAI's API, so it follows the convention of
the servers that have one (``thinking: {"type": "enabled" | "disabled"}``,
OpenRouter's ``reasoning``) and is a ``ConfigError`` for api.openai.com and
Gemini.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import requests

from agentcore.context import Context
from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers import attachments, caching, config, responses
from agentcore.providers.history import check_history, marked_error
from agentcore.providers.memo import MessageMemo
from agentcore.providers.openai_stream import (
    MISTRAL_THINKING,
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    REASONING_FORMATS,
    ChunkState,
)
from agentcore.settings import TOOL_CHOICES, ModelSettings, extra_body_dict, unsupported
from agentcore.transport import http, sse
from agentcore.transport.headers import credential, header_dict
from agentcore.types import (
    ContentPartKind,
    File,
    Message,
    OutputSchema,
    Reasoning,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""OpenAI's API root; ``/chat/completions`` is appended."""
SYSTEM_ROLES = ("system", "developer")
"""Roles the system prompt can be sent as (newer OpenAI models prefer ``developer``)."""
MAX_TOKENS_FIELDS = ("max_tokens", "max_completion_tokens")
"""Body fields the output cap can be sent as (newer OpenAI models require the second)."""
GEMINI = "gemini"
"""Dialect of Gemini's OpenAI-compatible endpoint: no reasoning field, a
thought signature in ``extra_content`` on tool calls."""
NONE = "none"
"""Dialect of a server that takes no reasoning back (api.openai.com)."""
REASONING_DIALECTS = (*REASONING_FORMATS, GEMINI, NONE)
"""Values of the ``reasoning_format`` option: the field a server takes
reasoning back in (a reasoning block's ``format`` names the field it came in)."""
OPENAI_ORIGIN = "api.openai.com"
KNOWN_DIALECTS: Mapping[str, str] = {
    OPENAI_ORIGIN: NONE,
    "api.deepseek.com": REASONING_CONTENT,
    "api.moonshot.ai": REASONING_CONTENT,
    "api.moonshot.cn": REASONING_CONTENT,
    "api.z.ai": REASONING_CONTENT,
    "open.bigmodel.cn": REASONING_CONTENT,
    "api.x.ai": NONE,
    "api.groq.com": REASONING,
    "openrouter.ai": REASONING_DETAILS,
    "api.mistral.ai": MISTRAL_THINKING,
    "generativelanguage.googleapis.com": GEMINI,
}
"""The documented dialect of well-known servers, by origin (the module
docstring cites each)."""
GEMINI_DUMMY_SIGNATURE = "skip_thought_signature_validator"
"""The thought signature Gemini documents for function calls it did not
produce (https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ)."""
CHAT_SETTINGS = (
    "cache_key",
    "cache_retention",
    "temperature",
    "top_p",
    "stop_sequences",
    "seed",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "thinking",
    "thinking_budget",
    "extra_body",
)
"""The :class:`agentcore.ModelSettings` fields this adapter maps (:func:`settings_fields`)."""
FILE_TYPES = (*attachments.IMAGE_TYPES, attachments.PDF, "text/*")
"""The media types sent (:func:`file_content`): images, PDFs, and text files as text."""
_API = "the OpenAI Chat Completions API"
CACHE_DOCS = "https://developers.openai.com/api/docs/guides/prompt-caching"
"""OpenAI's prompt caching guide: the rules :func:`cache_policy` and
:func:`agentcore.providers.responses.cache_fields` follow."""
MIN_CACHEABLE_TOKENS = 1024
"""OpenAI caches prompts of 1,024 tokens or more (:data:`CACHE_DOCS`)."""
CACHE_READ_GRANULARITY = 128
"""Cache hits come in increments of 128 tokens, per OpenAI's prompt caching
cookbook that :data:`CACHE_DOCS` links to."""
RETENTION_SECONDS = {"in_memory": 300.0, "24h": 86400.0}
"""How long a cached prefix is kept, by ``prompt_cache_retention``: in
memory, "typically cleared within 5 to 10 minutes of inactivity" (the
shorter bound here), or up to 24 hours (:data:`CACHE_DOCS`, "Prompt cache
retention"); in memory is the default."""


__all__ = [
    "OpenAIResponsesModel",
    "CACHE_DOCS",
    "CACHE_READ_GRANULARITY",
    "CHAT_SETTINGS",
    "DEFAULT_BASE_URL",
    "FILE_TYPES",
    "GEMINI",
    "GEMINI_DUMMY_SIGNATURE",
    "KNOWN_DIALECTS",
    "MAX_TOKENS_FIELDS",
    "MIN_CACHEABLE_TOKENS",
    "NONE",
    "OPENAI_ORIGIN",
    "REASONING_DIALECTS",
    "RETENTION_SECONDS",
    "SYSTEM_ROLES",
    "OpenAIChatModel",
    "cache_policy",
    "file_content",
    "reasoning_dialect",
    "request_body",
    "request_headers",
    "settings_fields",
]


# --- request mapping (pure) -------------------------------------------------


def _arguments(text: str) -> str:
    """The ``arguments`` text of a call in the history: as sent when it is a
    JSON object, else ``"{}"``. Servers that render chat templates (vLLM,
    llama.cpp, Ollama) parse it and reject the whole request when it is not;
    the call's error result already told the model what was wrong."""
    try:
        value = json.loads(text)
    except ValueError:
        return "{}"
    return text if isinstance(value, dict) else "{}"


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments(call.input)},
    }


def _result_json(result: ToolResult) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": marked_error(result)}


def file_content(file: File, where: str) -> dict[str, Any]:
    """The content part of a file in a ``user`` message.

    * An image (JPEG, PNG, GIF, WebP) is ``{"type": "image_url",
      "image_url": {"url": ...}}``, a ``data:`` URL for bytes or the file's
      URL (https://developers.openai.com/api/docs/guides/images-vision).
    * A PDF is ``{"type": "file", "file": {"filename", "file_data": <data:
      URL>}}``; Chat Completions takes PDFs only, and not by URL
      (https://developers.openai.com/api/docs/guides/file-inputs).
    * A text file (any ``text/`` type) is a ``text`` part: its name on a line,
      then its text, as the file inputs guide advises for text in Chat
      Completions.

    Raises:
        ConfigError: another media type (:data:`FILE_TYPES`), a PDF or text
            file by URL, text that is not UTF-8, a file over
            :data:`agentcore.providers.attachments.OPENAI_MAX_BYTES`.
    """
    image = file.media_type in attachments.IMAGE_TYPES
    attachments.check_type(file, where, FILE_TYPES, _API, url=image)
    attachments.check_size(file, where, attachments.OPENAI_MAX_BYTES, _API)
    if image:
        return {"type": "image_url", "image_url": {"url": file.url or attachments.data_url(file)}}
    if file.media_type == attachments.PDF:
        return {
            "type": "file",
            "file": {"filename": attachments.filename(file), "file_data": attachments.data_url(file)},
        }
    try:
        text = (file.data or b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where} holds a {file.media_type} file that is not UTF-8 ({exc})") from None
    return {"type": "text", "text": f"{attachments.filename(file)}:\n{text}"}


def _tool_files_json(message: Message, index: int) -> list[dict[str, Any]]:
    """The ``user`` message that carries a message's tool results' files, or
    none: a ``tool`` message's content is text only
    (https://platform.openai.com/docs/api-reference/chat/create), so each
    result's files follow a sentence naming its call."""
    content: list[dict[str, Any]] = []
    for result in message.tool_results:
        if result.files:
            where = attachments.place(index, result)
            sentence = f"Files returned by the tool call {result.tool_call_id!r} ({result.name}):"
            content.append({"type": "text", "text": sentence})
            content += [file_content(file, where) for file in result.files]
    return [{"role": "user", "content": content}] if content else []


# --- reasoning sent back ----------------------------------------------------


def reasoning_dialect(origin: str, messages: Sequence[Message], reasoning_format: str | None = None) -> str:
    """The field the server at ``origin`` takes reasoning back in: one of
    :data:`REASONING_DIALECTS`.

    ``reasoning_format`` when given (the adapter option); else the server's
    entry in :data:`KNOWN_DIALECTS`; else what the history holds from this
    origin, latest first (the format of its last reasoning block of this
    adapter's formats, or :data:`GEMINI` for a tool call carrying
    ``extra_content``); else :data:`NONE`: a server that never sent reasoning
    gets none (api.openai.com and strict servers such as Groq refuse fields
    they do not know, with a 400).
    """
    if reasoning_format is not None:
        return reasoning_format
    known = KNOWN_DIALECTS.get(origin)
    if known is not None:
        return known
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        for block in reversed(message.reasoning):
            if block.origin == origin and block.format in REASONING_FORMATS:
                return block.format
        if any(_extra_content(call, index, origin) is not None for call in message.tool_calls):
            return GEMINI
    return NONE


def _stored(text: str, index: int, what: str) -> Any:
    """The JSON this adapter wrote into ``provider_data``.

    Raises:
        ConfigError: it is not JSON (the history was edited).
    """
    try:
        return json.loads(text)
    except ValueError:
        raise ConfigError(f"messages[{index}] holds {what} whose provider_data is not JSON") from None


def _extra_content(call: ToolCall, index: int, origin: str) -> Any:
    """The ``extra_content`` object this origin put on ``call`` (Gemini's
    thought signature), or None."""
    if call.origin != origin or not call.provider_data:
        return None
    stored = _stored(call.provider_data, index, "a tool call")
    return stored.get("extra_content") if isinstance(stored, dict) else None


def _details(block: Reasoning, index: int) -> list[Any]:
    """The ``reasoning_details`` entries of one of this adapter's blocks.

    Raises:
        ConfigError: its ``provider_data`` is not a JSON array of objects.
    """
    entries = _stored(block.provider_data, index, "a reasoning part")
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise ConfigError(
            f"messages[{index}] holds a reasoning part whose provider_data is not a JSON array of "
            "reasoning_details objects"
        )
    return entries


def _plain_reasoning(blocks: Sequence[Reasoning], dialect: str, origin: str) -> str:
    """The text of a plain reasoning field: this server's own blocks of that
    field joined as they streamed; any other block's visible text, blocks
    separated by a blank line."""
    own = all(block.origin == origin and block.format == dialect for block in blocks)
    return ("" if own else "\n\n").join(block.text for block in blocks if block.text)


def _mistral_content(message: Message) -> list[dict[str, Any]]:
    """An assistant turn's ``content`` as Mistral chunks, in the model's order:
    each reasoning block with text as a ``thinking`` chunk, each text as a
    ``text`` chunk (https://docs.mistral.ai/capabilities/reasoning/)."""
    chunks: list[dict[str, Any]] = []
    for part in message.content:
        if part.reasoning is not None and part.reasoning.text:
            chunks.append({"type": "thinking", "thinking": [{"type": "text", "text": part.reasoning.text}]})
        elif part.kind is ContentPartKind.TEXT and part.text:
            chunks.append({"type": "text", "text": part.text})
    return chunks


def _calls_json(calls: Sequence[ToolCall], index: int, dialect: str, origin: str) -> list[dict[str, Any]]:
    """The ``tool_calls`` of an assistant turn: each call's own ``extra_content``
    back on it (unless the dialect is :data:`NONE`); for :data:`GEMINI`, a
    turn whose calls carry none (another model made them) gets
    :data:`GEMINI_DUMMY_SIGNATURE` on its first call, where Gemini looks for
    the signature of a step (https://ai.google.dev/gemini-api/docs/thought-signatures,
    parallel calls and the FAQ on calls from other models)."""
    out = [_call_json(call) for call in calls]
    if dialect == NONE:
        return out
    signed = False
    for call, item in zip(calls, out, strict=True):
        extra = _extra_content(call, index, origin)
        if extra is not None:
            item["extra_content"] = extra
            signed = True
    if dialect == GEMINI and not signed:
        out[0]["extra_content"] = {"google": {"thought_signature": GEMINI_DUMMY_SIGNATURE}}
    return out


def _assistant_json(message: Message, index: int, dialect: str, origin: str) -> dict[str, Any]:
    """One assistant turn, with its reasoning in the form ``dialect`` names
    (the module docstring has the rules and their sources)."""
    calls = message.tool_calls
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or (None if calls else "")}
    blocks = message.reasoning
    if dialect == MISTRAL_THINKING and any(block.text for block in blocks):
        entry["content"] = _mistral_content(message)
    elif dialect == REASONING_CONTENT:
        entry[dialect] = _plain_reasoning(blocks, dialect, origin)
    elif dialect == REASONING:
        text = _plain_reasoning(
            [b for b in blocks if b.origin == origin and b.format == REASONING], dialect, origin
        )
        if text:
            entry[dialect] = text
    elif dialect == REASONING_DETAILS:
        own = [b for b in blocks if b.origin == origin and b.format == REASONING_DETAILS]
        details = [entry for block in own for entry in _details(block, index)]
        if details:
            entry[REASONING_DETAILS] = details
    if calls:
        entry["tool_calls"] = _calls_json(calls, index, dialect, origin)
    return entry


def _message_json(message: Message, index: int, dialect: str, origin: str) -> list[dict[str, Any]]:
    """One history message as Chat Completions messages: a ``tool`` message per
    result (whatever the role), then the user or assistant message. Text in a
    ``tool``-role message has no place in the API and is left out."""
    out = [_result_json(result) for result in message.tool_results]
    if message.role is Role.ASSISTANT:
        out.append(_assistant_json(message, index, dialect, origin))
    elif message.role is Role.USER and message.files:
        content = [{"type": "text", "text": message.text}] if message.text else []
        content += [file_content(file, attachments.place(index)) for file in message.files]
        out.append({"role": "user", "content": content})
    elif message.role is Role.USER and (message.text or not out):
        out.append({"role": "user", "content": message.text})
    return out


def _tool_json(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = json.loads(tool.input_schema)
    return {"type": "function", "function": function}


# --- settings ---------------------------------------------------------------


def _tool_choice(settings: ModelSettings, tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """``tool_choice`` and ``parallel_tool_calls`` fields: ``"auto"``,
    ``"none"``, ``"required"`` as they are, a tool's name as ``{"type":
    "function", "function": {"name": ...}}``
    (https://platform.openai.com/docs/api-reference/chat/create). With no
    tools there is nothing to choose (and OpenAI refuses both fields without
    ``tools``): ``auto``, ``none`` and ``parallel_tool_calls`` hold as they
    are and nothing is sent.

    Raises:
        ConfigError: ``required`` or a tool's name with no tools, or a name
            that is not one of ``tools``.
    """
    choice = settings.tool_choice
    if not tools:
        if choice in (None, "auto", "none"):
            return {}
        raise ConfigError(f"ModelSettings.tool_choice is {choice!r} but the request has no tools")
    fields: dict[str, Any] = {}
    if choice in TOOL_CHOICES:
        fields["tool_choice"] = choice
    elif choice is not None:
        if choice not in {tool.name for tool in tools}:
            raise ConfigError(
                f"ModelSettings.tool_choice names the tool {choice!r}, which is not among the request's tools"
            )
        fields["tool_choice"] = {"type": "function", "function": {"name": choice}}
    if settings.parallel_tool_calls is not None:
        fields["parallel_tool_calls"] = settings.parallel_tool_calls
    return fields


def _reasoning_settings(settings: ModelSettings, dialect: str) -> dict[str, Any]:
    """``reasoning_effort``, ``thinking`` and ``thinking_budget`` as body fields.

    For OpenRouter (:data:`REASONING_DETAILS`) all three go into its
    ``reasoning`` object as ``effort``, ``enabled`` and ``max_tokens``
    (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens).
    Elsewhere ``reasoning_effort`` is the ``reasoning_effort`` field as given
    (OpenAI, DeepSeek, Gemini, xAI, Groq, Mistral each accept a subset of the
    values), and thinking is the ``thinking`` object of DeepSeek, Kimi and
    GLM: ``{"type": "enabled"}`` or ``{"type": "disabled"}``
    (https://api-docs.deepseek.com/guides/thinking_mode), a budget as
    ``budget_tokens`` in it (Anthropic's OpenAI SDK compatibility layer,
    https://docs.anthropic.com/en/api/openai-sdk); a budget alone turns
    thinking on.

    Raises:
        ConfigError: a budget with ``thinking=False``; for OpenRouter, a
            budget with a ``reasoning_effort`` (it takes one or the other).
    """
    effort, thinking, budget = settings.reasoning_effort, settings.thinking, settings.thinking_budget
    if budget is not None and thinking is False:
        raise ConfigError("ModelSettings.thinking_budget is set but ModelSettings.thinking is False")
    if dialect == REASONING_DETAILS:
        if budget is not None and effort is not None:
            raise ConfigError(
                "ModelSettings.thinking_budget and ModelSettings.reasoning_effort are both set; "
                "OpenRouter's reasoning takes max_tokens or effort, not both"
            )
        options = {"effort": effort, "enabled": thinking, "max_tokens": budget}
        reasoning = {name: value for name, value in options.items() if value is not None}
        return {"reasoning": reasoning} if reasoning else {}
    fields: dict[str, Any] = {}
    if effort is not None:
        fields["reasoning_effort"] = effort
    if thinking is not None or budget is not None:
        fields["thinking"] = {"type": "disabled" if thinking is False else "enabled"}
        if budget is not None:
            fields["thinking"]["budget_tokens"] = budget
    return fields


def cache_policy(settings: ModelSettings, origin: str) -> caching.CachePolicy:
    """What a request to ``origin`` asks of the cache: at api.openai.com,
    caching is automatic (:data:`CACHE_DOCS`) with the TTL of the retention
    (:data:`RETENTION_SECONDS`), prompts from :data:`MIN_CACHEABLE_TOKENS`,
    reads in steps of :data:`CACHE_READ_GRANULARITY`, the whole prompt cached
    (writes are not reported). Other servers document their own caching, or
    none: no cache miss is claimed for them (the report still compares
    prefixes)."""
    if origin != OPENAI_ORIGIN:
        return caching.CachePolicy("this server", None)
    ttl = RETENTION_SECONDS[settings.cache_retention or "in_memory"]
    return caching.CachePolicy(
        "OpenAI",
        ttl,
        MIN_CACHEABLE_TOKENS,
        reports_writes=False,
        granularity=CACHE_READ_GRANULARITY,
    )


def check_settings(settings: ModelSettings, dialect: str, origin: str) -> None:
    """Raise :class:`ConfigError` for ``settings`` the Chat Completions API at
    ``origin`` (speaking the reasoning ``dialect``) cannot take, whatever the
    request: see :func:`settings_fields`, which calls it for every request
    (the adapter also calls it at construction, for its own settings)."""
    supported = set(CHAT_SETTINGS)
    if origin == OPENAI_ORIGIN or dialect == GEMINI:
        supported -= {"thinking", "thinking_budget"}
    unsupported(settings, supported, f"the Chat Completions API at {origin or 'this server'}")
    _reasoning_settings(settings, dialect)


def settings_fields(
    settings: ModelSettings, tools: Sequence[ToolDefinition], dialect: str, origin: str
) -> dict[str, Any]:
    """The request body fields for ``settings`` (``extra_body`` aside).

    =====================  =============================================
    ModelSettings          Chat Completions field
    =====================  =============================================
    temperature, top_p     ``temperature``, ``top_p``
    stop_sequences         ``stop`` (a list)
    seed                   ``seed``
    tool_choice            ``tool_choice`` (see :func:`_tool_choice`)
    parallel_tool_calls    ``parallel_tool_calls`` (only with tools)
    reasoning_effort,      ``reasoning_effort`` and ``thinking``, or
    thinking,              OpenRouter's ``reasoning`` (see
    thinking_budget        :func:`_reasoning_settings`)
    cache_key,             ``prompt_cache_key``, ``prompt_cache_retention``
    cache_retention        (:func:`agentcore.providers.responses.cache_fields`)
    =====================  =============================================

    ``cache``, ``cache_ttl``, ``cache_system`` and ``cache_tools`` have no
    field here (OpenAI caches long prompts on its own) and are a
    :class:`ConfigError`, as any unsupported field.

    Raises:
        ConfigError: ``thinking`` or ``thinking_budget`` for api.openai.com
            (OpenAI's API has no such field and refuses unknown ones; use
            ``reasoning_effort``, ``"none"`` for no reasoning) or for Gemini
            (:data:`GEMINI`, whose OpenAI-compatible endpoint takes
            ``reasoning_effort``, https://ai.google.dev/gemini-api/docs/openai);
            and as :func:`_tool_choice` and :func:`_reasoning_settings`.
    """
    check_settings(settings, dialect, origin)
    fields: dict[str, Any] = {}
    for name in ("temperature", "top_p", "seed"):
        value = getattr(settings, name)
        if value is not None:
            fields[name] = value
    if settings.stop_sequences is not None:
        fields["stop"] = list(settings.stop_sequences)
    fields.update(_tool_choice(settings, tools))
    fields.update(_reasoning_settings(settings, dialect))
    fields.update(responses.cache_fields(settings))
    return fields


def response_format(output: OutputSchema) -> dict[str, Any]:
    """The ``response_format`` field of native structured output:
    ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``
    (https://platform.openai.com/docs/api-reference/chat/create,
    ``response_format``; https://platform.openai.com/docs/guides/structured-outputs),
    ``strict`` when the schema qualifies as written
    (:func:`agentcore.providers.responses.json_schema_format`). Sent to
    every server, whatever its base URL; for a compatible server that
    refuses the field, ``LoopOptions(output_mode="tool")`` asks through a
    tool instead.
    """
    from agentcore.providers.responses import json_schema_format  # _responses imports this module

    return {"type": "json_schema", "json_schema": json_schema_format(output)}


def request_body(
    model: str,
    request: Request,
    *,
    system_role: str = "system",
    max_tokens_field: str = "max_tokens",
    include_usage: bool = True,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    reasoning_format: str | None = None,
    settings: ModelSettings | None = None,
    sent: list[Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed Chat Completions request.

    Follows the OpenAI API reference ("Create chat completion"): the system
    prompt first, as a ``system_role`` message; user turns as text (with
    files, a list of a ``text`` part and the files' parts,
    :func:`file_content`); assistant
    turns with ``content`` (null when empty and the turn has tool calls) and
    ``tool_calls`` whose ``function.arguments`` is JSON text; one ``tool``
    message per result with ``tool_call_id`` (an error result's content starts
    with ``"Error: "``; its files follow all the step's ``tool`` messages in
    a ``user`` message, after a sentence naming the call: a ``tool``
    message holds text only); tools as ``{"type": "function", "function": {name,
    description, parameters}}`` (left out when there are none, since some
    servers reject an empty list); ``request.output`` as ``response_format``
    (:func:`response_format`); the output cap as ``max_tokens_field``,
    only when ``request.max_output_tokens`` is set. Reasoning goes back on the
    assistant turn it belongs to, in the field :func:`reasoning_dialect`
    names (the module docstring has the rules). Then the fields of
    ``settings`` merged with ``request.settings`` (the run's win, field by
    field; :func:`settings_fields`, with the dialect ``reasoning_format`` or
    :data:`KNOWN_DIALECTS` gives, never the history's, so that every request
    of a run sends the same fields), then ``extra_body``, then the merged
    settings' ``extra_body``: the last one wins.

    Args:
        model: the model id sent as ``model``.
        request: the step's request.
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: ask for ``stream_options: {"include_usage": true}``.
        extra_body: fields merged into the body.
        origin: the server's origin (:func:`agentcore.providers.config.origin`):
            reasoning and tool-call data from it go back verbatim.
        reasoning_format: the field the server takes reasoning back in (one of
            :data:`REASONING_DIALECTS`), or None to work it out
            (:func:`reasoning_dialect`).
        settings: the adapter's :class:`agentcore.ModelSettings`.
        sent: when given, gets the messages sent for each message of
            ``request.messages`` appended, one list per message (its ``tool``
            messages, its own, the ``user`` message of its tool results'
            files; for :func:`agentcore.providers.caching.fingerprint`).

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: before anything is sent: a history the server would
            refuse (:func:`agentcore.providers.history.check_history`,
            naming the message; or this adapter's ``provider_data`` edited
            into something that is not its JSON; a file part outside a user
            message, or a file :func:`file_content` refuses), or a setting it
            cannot send (:func:`settings_fields`).
    """
    return _request_body(
        model,
        request,
        system_role=system_role,
        max_tokens_field=max_tokens_field,
        include_usage=include_usage,
        extra_body=extra_body,
        origin=origin,
        reasoning_format=reasoning_format,
        settings=settings,
        sent=sent,
        memo=None,
    )


def _request_body(
    model: str,
    request: Request,
    *,
    system_role: str,
    max_tokens_field: str,
    include_usage: bool,
    extra_body: Mapping[str, Any] | None,
    origin: str,
    reasoning_format: str | None,
    settings: ModelSettings | None,
    sent: list[Any] | None,
    memo: MessageMemo[tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None,
) -> dict[str, Any]:
    """:func:`request_body`, taking each message's wire JSON from ``memo``
    when it was mapped before (by an earlier step) under the same reasoning
    dialect and origin, and keeping there what it maps now. The body then
    shares those values with the memo: only the adapter's own, never
    changed after, may be built this way.
    """
    check_history(request.messages)
    attachments.check_places(request.messages)
    dialect = reasoning_dialect(origin, request.messages, reasoning_format)
    merged = (settings or ModelSettings()).merged(request.settings)
    # the settings follow the dialect the server is known by, not the history:
    # the same fields on every request of a run
    fields = settings_fields(merged, request.tools, reasoning_dialect(origin, (), reasoning_format), origin)
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": system_role, "content": request.system})
    held: list[dict[str, Any]] = []  # tool results' files: sent after the step's last tool message
    known = memo.find(request.messages, (dialect, origin)) if memo is not None else ()
    fresh: list[tuple[object, tuple[list[dict[str, Any]], list[dict[str, Any]]]]] = []
    for index, message in enumerate(request.messages):
        mapped = known[index] if known else None
        if mapped is None:
            mapped = (_message_json(message, index, dialect, origin), _tool_files_json(message, index))
            fresh.append((message, mapped))
        entries, files = mapped
        if held and not (entries and entries[0]["role"] == "tool"):
            messages += held
            held = []
        messages += entries
        held += files
        if sent is not None:
            sent.append(entries + files)
    messages += held
    if memo is not None:
        memo.store(fresh, (dialect, origin))
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": True}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    if request.tools:
        body["tools"] = [_tool_json(tool) for tool in request.tools]
    if request.output is not None:
        body["response_format"] = response_format(request.output)
    if request.max_output_tokens:
        body[max_tokens_field] = request.max_output_tokens
    body.update(fields)
    body.update(extra_body or {})
    body.update(merged.extra_body or {})
    return body


def _merge_headers(target: dict[str, str], extra: Mapping[str, str]) -> None:
    for name, value in extra.items():
        for existing in [k for k in target if k.lower() == name.lower()]:
            del target[existing]
        target[name] = value


def request_headers(
    api_key: str | None,
    headers: Mapping[str, str] | None = None,
    request_headers: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The HTTP headers of one request.

    ``Authorization: Bearer <key>`` only when a key is given (local servers
    need none), then the adapter's ``headers``, then the request's own
    ``headers``; a later header replaces an earlier one of the same name,
    whatever its case.
    """
    out = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        out["Authorization"] = f"Bearer {api_key}"
    _merge_headers(out, headers or {})
    _merge_headers(out, request_headers or {})
    return out


# --- the adapter -----------------------------------------------------------


class _OpenAIModel:
    """What both OpenAI adapters share: the model id, the transport options
    and their checks, ``model_id``, ``base_url`` and a ``repr`` without the key.

    Raises:
        ConfigError: an empty model id, ``settings`` that are not a
            ``ModelSettings``, an ``api_key`` that is not a str, and as
            :func:`agentcore.providers.config.timeouts`, ``header_dict``,
            ``check_base_url`` and :func:`agentcore.settings.extra_body_dict`.
    """

    _path = ""
    """What the adapter appends to ``base_url`` (``"/chat/completions"``)."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str,
        session: requests.Session | None,
        timeout: tuple[float, float],
        idle_timeout: float | None,
        headers: Mapping[str, str] | None,
        extra_body: Mapping[str, Any] | None,
        settings: ModelSettings | None,
        cache_tracker: caching.CacheTracker | None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigError("model must be a non-empty string")
        if settings is not None and not isinstance(settings, ModelSettings):
            raise ConfigError(f"settings must be a ModelSettings or None, got {type(settings).__name__}")
        if api_key is not None and not isinstance(api_key, str):
            raise ConfigError(f"api_key must be a str or None, got {type(api_key).__name__}")
        self._model = model
        self._settings = settings or ModelSettings()
        self._timeout, self._idle_timeout = config.timeouts(timeout, idle_timeout)
        self._headers = header_dict(headers)
        self._extra_body = extra_body_dict(extra_body)
        self._api_key = credential("api_key", api_key) if api_key else None
        self._base_url = config.check_base_url(base_url)
        self._url = self._base_url + self._path
        self._origin = config.origin(self._base_url)
        self._session = session if session is not None else http.new_session()
        self._cache = caching.tracker(cache_tracker)
        self._digests = caching.MessageDigests()

    @property
    def model_id(self) -> str:
        """The model id sent with every request."""
        return self._model

    @property
    def base_url(self) -> str:
        """The API root requests go to."""
        return self._base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"


class OpenAIChatModel(_OpenAIModel):
    """A :class:`agentcore.Model` over the OpenAI Chat Completions streaming API.

    Args:
        model: the model id (``"gpt-4o-mini"``, ``"llama3.2"``, ...).
        api_key: sent as ``Authorization: Bearer``; None for servers without
            authentication. Never shown in ``repr``, logs or errors.
        base_url: the API root, without ``/chat/completions``.
        session: a ``requests.Session`` to send with (its pool, proxies and
            TLS settings are the caller's policy); by default the adapter makes
            one that ignores the environment.
        timeout: ``(connect, read)`` seconds; ``read`` bounds the wait for the
            response headers and for each network read.
        idle_timeout: seconds the stream may go without a content-bearing event
            (comments and pings do not count); None for no limit.
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: send ``stream_options: {"include_usage": true}``.
        headers: extra HTTP headers on every request (a request's own headers
            come after them).
        extra_body: fields merged into every request body.
        settings: the model's :class:`agentcore.ModelSettings`, for every
            request; a run's settings (``LoopOptions(settings=...)``) override
            them field by field.
        reasoning_format: the field this server takes reasoning back in, one
            of :data:`REASONING_DIALECTS`: ``"reasoning_content"`` (DeepSeek,
            Kimi, GLM, Qwen), ``"reasoning"`` (Groq), ``"reasoning_details"``
            (OpenRouter), ``"mistral-thinking"``, ``"gemini"`` or ``"none"``;
            None (the default) works it out from the server and the history
            (:func:`reasoning_dialect`).
        cache_tracker: compares each request with the earlier ones for the
            step's :class:`agentcore.types.CacheReport`; by default one of
            this instance's own (pass one to share it between instances).

    Raises:
        ConfigError: an option is out of range or of the wrong type: a
            ``timeout`` that is not a ``(connect, read)`` pair of positive
            seconds, ``headers`` that are not a mapping of ``str`` to ``str``,
            an ``extra_body`` that is not a mapping of ``str`` keys to JSON
            values, ``settings`` that are not a ``ModelSettings``, an unknown
            ``reasoning_format``; ``settings`` the server cannot take
            (:func:`check_settings`: ``thinking`` at api.openai.com, say).
    """

    _path = "/chat/completions"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (http.DEFAULT_CONNECT_TIMEOUT, http.DEFAULT_READ_TIMEOUT),
        idle_timeout: float | None = http.DEFAULT_IDLE_TIMEOUT,
        system_role: str = "system",
        max_tokens_field: str = "max_tokens",
        include_usage: bool = True,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        settings: ModelSettings | None = None,
        reasoning_format: str | None = None,
        cache_tracker: caching.CacheTracker | None = None,
    ) -> None:
        if system_role not in SYSTEM_ROLES:
            raise ConfigError(f"system_role must be one of {SYSTEM_ROLES}, got {system_role!r}")
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise ConfigError(
                f"max_tokens_field must be one of {MAX_TOKENS_FIELDS}, got {max_tokens_field!r}"
            )
        if reasoning_format is not None and reasoning_format not in REASONING_DIALECTS:
            raise ConfigError(
                f"reasoning_format must be None or one of {REASONING_DIALECTS}, got {reasoning_format!r}"
            )
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            session=session,
            timeout=timeout,
            idle_timeout=idle_timeout,
            headers=headers,
            extra_body=extra_body,
            settings=settings,
            cache_tracker=cache_tracker,
        )
        self._reasoning_format = reasoning_format
        check_settings(self._settings, reasoning_dialect(self._origin, (), reasoning_format), self._origin)
        self._mapped: MessageMemo[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = MessageMemo()
        """Each history message's Chat Completions JSON, mapped at an earlier step."""
        self._system_role = system_role
        self._max_tokens_field = max_tokens_field
        self._include_usage = include_usage

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Run one streamed completion and yield its parts.

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive, a
            ``reasoning`` part where each reasoning block ends, then the
            step's ``tool-call`` parts in index order and exactly one
            ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, a history or a setting the
                server would refuse (:func:`request_body`).
            ModelError: a non-200 status, an error inside the stream, a
                transport failure, or a stream cut before the step completed.
            Canceled: ``ctx`` was cancelled.
        """
        sent: list[Any] = []
        body = _request_body(
            self._model,
            request,
            system_role=self._system_role,
            max_tokens_field=self._max_tokens_field,
            include_usage=self._include_usage,
            extra_body=self._extra_body,
            origin=self._origin,
            reasoning_format=self._reasoning_format,
            settings=self._settings,
            sent=sent,
            memo=self._mapped,
        )
        headers = request_headers(self._api_key, self._headers, request.headers)
        system = body["messages"][0] if request.system else None
        prompt = self._digests.fingerprint(body.get("tools"), system, request.messages, sent)
        policy = cache_policy(self._settings.merged(request.settings), self._origin)
        yield from self._cache.watch(http.redacted(self._stream(body, headers, ctx), headers), prompt, policy)

    def _stream(self, body: dict[str, Any], headers: dict[str, str], ctx: Context) -> Iterator[StreamPart]:
        response = http.open_stream(
            self._session, self._url, headers=headers, body=body, timeout=self._timeout, ctx=ctx
        )
        state = ChunkState(origin=self._origin)

        def complete() -> None:  # a finish reason or [DONE] came: the rest may be drained for reuse
            response.complete = True

        events = sse.iter_events(http.iter_body(response), idle_timeout=self._idle_timeout)
        try:
            yield from state.parts(_until_broken(events, state, response), complete)
            yield from state.finish()
        finally:
            events.close()
            response.close()


def _until_broken(
    events: Iterator[sse.Event], state: ChunkState, response: http.StreamResponse
) -> Iterator[sse.Event]:
    """``events``, ending quietly at a ``TRANSIENT`` read failure once a finish
    reason arrived: the step is complete then, only the usage chunk is lost
    (module docstring). The broken connection is not drained."""
    try:
        yield from events
    except ModelError as exc:
        if state.finish_reason is None or exc.error_class is not ErrorClass.TRANSIENT:
            raise
        response.complete = False


# --- the Responses API adapter -------------------------------------------------


class OpenAIResponsesModel(_OpenAIModel):
    """A :class:`agentcore.Model` over the OpenAI Responses streaming API.

    Pick it over :class:`~agentcore.providers.openai.OpenAIChatModel` for
    OpenAI's reasoning models (o-series, GPT-5 and later): their reasoning is
    carried from one tool call to the next, which Chat Completions throws away.

    Args:
        model: the model id (``"gpt-5"``, ``"o4-mini"``, ...).
        api_key: sent as ``Authorization: Bearer``; None for servers without
            authentication. Never shown in ``repr``, logs or errors.
        base_url: the API root, without ``/responses``.
        session: a ``requests.Session`` to send with (its pool, proxies and
            TLS settings are the caller's policy); by default the adapter makes
            one that ignores the environment.
        timeout: ``(connect, read)`` seconds; ``read`` bounds the wait for the
            response headers and for each network read.
        idle_timeout: seconds the stream may go without a content-bearing event
            (comments and pings do not count); None for no limit.
        settings: the default :class:`agentcore.ModelSettings` of every
            request; a run's settings override them field by field.
            ``reasoning_effort`` is ``reasoning.effort`` (one of ``none``,
            ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``; each model
            takes a subset); ``stop_sequences``, ``seed``, ``thinking`` and
            ``thinking_budget`` have no field in the API and are a
            :class:`ConfigError`.
        reasoning: the model reasons (the default): ask for encrypted
            reasoning (``include: ["reasoning.encrypted_content"]``) and a
            reasoning summary. Pass False for models without reasoning
            (``gpt-4o``, ``gpt-4.1``), which answer 400 ("Encrypted content is
            not supported with this model") to that.
        reasoning_summary: ``reasoning.summary``: ``"auto"`` (the default),
            ``"concise"`` or ``"detailed"``, the reasoning text streamed as
            ``reasoning-delta`` parts; None asks for none. OpenAI requires a
            verified organization for summaries and answers 400 (``param:
            reasoning.summary``) otherwise: pass None then.
        system_role: ``"instructions"`` (the system prompt as the
            ``instructions`` field, the default) or ``"developer"`` (as a
            first ``developer`` message, for servers without ``instructions``).
        server_state: keep the conversation on the server: ``store: true``,
            and each request after a tool call names the stored response
            with ``previous_response_id`` and sends only the new items (the
            tool results). Less to upload per step, but: the stored
            responses count against the organization's data retention (30
            days by default) and are not available under Zero Data Retention;
            edits to the history before the stored response are not seen by
            the server; a chain whose stored response expired or was deleted
            fails with a 4xx; every earlier input token is still billed as
            input. The default (False) is stateless.
        headers: extra HTTP headers on every request (a request's own headers
            come after them).
        extra_body: fields merged into every request body (before the
            settings' ``extra_body``).
        cache_tracker: compares each request with the earlier ones for the
            step's :class:`agentcore.types.CacheReport`; by default one of
            this instance's own (pass one to share it between instances).

    Raises:
        ConfigError: an option is out of range or of the wrong type (as for
            :class:`~agentcore.providers.openai.OpenAIChatModel`), or
            ``settings`` the API cannot take.
    """

    _path = "/responses"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (http.DEFAULT_CONNECT_TIMEOUT, http.DEFAULT_READ_TIMEOUT),
        idle_timeout: float | None = http.DEFAULT_IDLE_TIMEOUT,
        settings: ModelSettings | None = None,
        reasoning: bool = True,
        reasoning_summary: str | None = "auto",
        system_role: str = "instructions",
        server_state: bool = False,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        cache_tracker: caching.CacheTracker | None = None,
    ) -> None:
        for name, flag in (("reasoning", reasoning), ("server_state", server_state)):
            if not isinstance(flag, bool):
                raise ConfigError(f"{name} must be True or False, got {flag!r}")
        if reasoning_summary is not None and reasoning_summary not in responses.SUMMARIES:
            raise ConfigError(
                f"reasoning_summary must be one of {responses.SUMMARIES} or None, got {reasoning_summary!r}"
            )
        if system_role not in responses.SYSTEM_ROLES:
            raise ConfigError(f"system_role must be one of {responses.SYSTEM_ROLES}, got {system_role!r}")
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            session=session,
            timeout=timeout,
            idle_timeout=idle_timeout,
            headers=headers,
            extra_body=extra_body,
            settings=settings,
            cache_tracker=cache_tracker,
        )
        responses.check_settings(self._settings, reasoning=reasoning)
        self._reasoning = reasoning
        self._reasoning_summary = reasoning_summary
        self._system_role = system_role
        self._server_state = server_state

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        """Run one streamed response and yield its parts.

        Yields:
            ``text-delta`` and ``reasoning-delta`` parts as they arrive, a
            ``reasoning`` part as each reasoning item completes and a
            ``tool-call`` part as each function call completes (in the
            model's order), then exactly one ``step-finish``.

        Raises:
            ConfigError: before any HTTP call, for a request the API refuses
                (:func:`agentcore.providers.responses.request_body`).
            ModelError: a non-200 status, an ``error`` event or
                ``response.failed``, a transport failure, or a stream cut
                before the response completed.
            Canceled: ``ctx`` was cancelled.
        """
        settings = self._settings.merged(request.settings)
        sent: list[Any] = []
        body = responses.request_body(
            self._model,
            request,
            origin=self._origin,
            settings=settings,
            system_role=self._system_role,
            reasoning=self._reasoning,
            reasoning_summary=self._reasoning_summary,
            server_state=self._server_state,
            extra_body=self._extra_body,
            sent=sent,
        )
        headers = request_headers(self._api_key, self._headers, request.headers)
        system = body.get("instructions")
        if self._system_role == "developer" and request.system:
            system = body["input"][0]  # the developer message comes first
        prompt = self._digests.fingerprint(body.get("tools"), system, request.messages, sent)
        policy = cache_policy(settings, self._origin)
        yield from self._cache.watch(http.redacted(self._stream(body, headers, ctx), headers), prompt, policy)

    def _stream(self, body: dict[str, Any], headers: dict[str, str], ctx: Context) -> Iterator[StreamPart]:
        response = http.open_stream(
            self._session, self._url, headers=headers, body=body, timeout=self._timeout, ctx=ctx
        )
        state = responses.ResponseState(self._origin, stored=self._server_state)

        def done() -> None:  # the response is over: the rest may be drained for reuse
            response.complete = True

        events = sse.iter_events(http.iter_body(response), idle_timeout=self._idle_timeout)
        try:
            yield from state.parts(events, done)
            yield from state.finish()
        finally:
            events.close()
            response.close()
