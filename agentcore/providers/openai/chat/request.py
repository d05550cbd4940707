"""The OpenAI Chat Completions API, what a request sends, for OpenAI and
every server that copies the API: small pure functions, each tested on its
own.

:func:`request_body` builds the JSON body of ``POST {base_url}/chat/completions``
with ``"stream": true``, :func:`reasoning_dialect` picks the field reasoning
goes back in, :func:`file_json` maps files and :func:`settings_fields` the
:class:`~agentcore.ModelSettings`. The stream is
:mod:`agentcore.providers.openai.chat.stream`'s (its docstring lists every
server quirk it reads), the model class
:mod:`agentcore.providers.openai.chat.model`'s. The same API is spoken by
Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp's server, LM Studio,
OpenRouter, Groq, DeepSeek, Mistral, xAI and gateways.

Decisions written down here so nobody "fixes" them:

* The request asks for ``stream_options: {"include_usage": true}`` by default
  (usage then arrives in a last chunk with ``"choices": []``); pass
  ``include_usage=False`` for servers that reject the field.
* Tool-call parts are emitted together with the step-finish, once the stream
  is over (``[DONE]`` or the end of the body), so that fragments arriving late
  and an error chunk sent after the finish reason are still taken into account.
* The stream is read past the finish reason, for the usage chunk. Once a
  finish reason arrived the step is complete: a connection that then breaks,
  stalls or ends without ``[DONE]`` ends the step normally with the usage
  seen so far (the shell's rule for every adapter,
  :mod:`agentcore.providers.shell`). Before it, such a break is ``TRANSIENT``.
* An error result is sent as a ``tool`` message whose content starts with
  ``"Error: "``, since Chat Completions has no error flag.
* A ``tool`` message holds text only, so the files a tool returned go in a
  ``user`` message right after the step's ``tool`` messages, opening with
  ``Files returned by the tool call 'call_1' (render_chart):``
  (:func:`file_json` maps each file). That message is built for each
  request and never enters the history.
* Before anything is sent, the history is checked
  (:func:`agentcore.history.check_history`: tool calls and results
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
  :data:`agentcore.providers.gemini.request.DUMMY_SIGNATURE`, on its first call. Gemini has no reasoning
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

Provider items (an Anthropic compaction or server-tool block, a Responses
compaction or hosted-tool item) have no place in the API: they are left out,
with a line at INFO. Server tools (``Request.server_tools``) are a
``ConfigError`` (:func:`check_server_tools`).

Settings: :func:`settings_fields` maps :class:`agentcore.ModelSettings`;
``thinking`` has no field in OpenAI's API, so it follows the convention of
the servers that have one (``thinking: {"type": "enabled" | "disabled"}``,
OpenRouter's ``reasoning``) and is a ``ConfigError`` for api.openai.com and
Gemini.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ConfigError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.memo import MessageMemo
from agentcore.providers import attachments
from agentcore.providers.gemini.request import DUMMY_SIGNATURE
from agentcore.providers.history import arguments_object, log_foreign_items, marked_error
from agentcore.providers.openai.chat.stream import (
    MISTRAL_THINKING,
    REASONING,
    REASONING_CONTENT,
    REASONING_DETAILS,
    REASONING_FORMATS,
)
from agentcore.providers.openai.shared import OPENAI_ORIGIN, cache_fields, json_schema_format
from agentcore.server_tools import ServerTool
from agentcore.settings import TOOL_CHOICES, ModelSettings, unsupported
from agentcore.types import (
    ContentPartKind,
    Message,
    OutputSchema,
    Reasoning,
    Request,
    Role,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

FORMAT = "openai-chat"
"""What this adapter would name its own provider items: it has none, so every
provider item in a history is another API's (:func:`agentcore.providers.history.log_foreign_items`)."""


def check_server_tools(tools: Sequence[ServerTool]) -> None:
    """Raise :class:`ConfigError` for any server tool: Chat Completions has
    no tool the provider runs (its ``tools`` are function tools only,
    https://platform.openai.com/docs/api-reference/chat/create; OpenAI's web
    search there is the ``web_search_options`` field of its search models,
    https://developers.openai.com/api/docs/guides/tools-web-search, which
    ``extra_body`` can send). The error names the first tool and the
    Responses API's models, which have hosted tools.
    """
    if tools:
        tool = tools[0]
        raise ConfigError(
            f"{type(tool).__name__} ({tool.name}): the Chat Completions API has no server tool; use the "
            "Responses API (OpenAIResponsesModel or AzureOpenAIResponsesModel; on the command line "
            "openai-responses: or azure-responses:) for web search, file search and code execution, or "
            "Anthropic's API"
        )


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
SETTINGS = frozenset(
    {
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
    }
)
"""The :class:`agentcore.ModelSettings` fields this adapter maps (:func:`settings_fields`)."""
FILE_TYPES = (*attachments.IMAGE_TYPES, attachments.PDF, "text/*")
"""The media types sent (:func:`file_json`): images, PDFs, and text files as text."""
_API = "the OpenAI Chat Completions API"


# --- request mapping (pure) -------------------------------------------------


def _arguments(text: str) -> str:
    """The ``arguments`` text of a call in the history: as sent when it is a
    JSON object, else (malformed, not an object, nested too deeply:
    :func:`agentcore.providers.history.arguments_object`) ``"{}"``. Servers
    that render chat templates (vLLM, llama.cpp, Ollama) parse it and reject
    the whole request when it is not; the call's error result already told
    the model what was wrong."""
    return "{}" if arguments_object(text) is None else text


def _call_json(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments(call.input)},
    }


def _result_json(result: ToolResult) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": marked_error(result)}


def file_json(file: File, where: str) -> dict[str, Any]:
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
            content += [file_json(file, where) for file in result.files]
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
    :data:`agentcore.providers.gemini.request.DUMMY_SIGNATURE` on its first call, where Gemini looks for
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
        out[0]["extra_content"] = {"google": {"thought_signature": DUMMY_SIGNATURE}}
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
    ``tool``-role message has no place in the API and is left out, and so is
    an assistant message whose only content is provider items (another
    API's, as an Anthropic turn paused before any text holds): nothing of it
    is left to send."""
    out = [_result_json(result) for result in message.tool_results]
    if message.role is Role.ASSISTANT:
        entry = _assistant_json(message, index, dialect, origin)
        if entry.keys() != {"role", "content"} or entry["content"] or not message.provider_items:
            out.append(entry)  # else it held only another API's items: nothing of it is left to send
    elif message.role is Role.USER and message.files:
        content = [{"type": "text", "text": message.text}] if message.text else []
        content += [file_json(file, attachments.place(index)) for file in message.files]
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


def check_settings(settings: ModelSettings, dialect: str, origin: str) -> None:
    """Raise :class:`ConfigError` for ``settings`` the Chat Completions API at
    ``origin`` (speaking the reasoning ``dialect``) cannot take, whatever the
    request: see :func:`settings_fields`, which calls it for every request
    (the adapter also calls it at construction, for its own settings)."""
    supported = set(SETTINGS)
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
    cache_retention        (:func:`agentcore.providers.openai.shared.cache_fields`)
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
    fields.update(cache_fields(settings))
    return fields


def response_format(output: OutputSchema) -> dict[str, Any]:
    """The ``response_format`` field of native structured output:
    ``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``
    (https://platform.openai.com/docs/api-reference/chat/create,
    ``response_format``; https://platform.openai.com/docs/guides/structured-outputs),
    ``strict`` when the schema qualifies as written
    (:func:`agentcore.providers.openai.shared.json_schema_format`). Sent to
    every server, whatever its base URL; for a compatible server that
    refuses the field, ``LoopOptions(output_mode="tool")`` asks through a
    tool instead.
    """
    return {"type": "json_schema", "json_schema": json_schema_format(output)}


def request_body(
    request: Request,
    model_id: str,
    *,
    settings: ModelSettings | None = None,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    sent: list[Any] | None = None,
    system_role: str = "system",
    max_tokens_field: str = "max_tokens",
    include_usage: bool = True,
    reasoning_format: str | None = None,
    memo: MessageMemo[tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """The JSON body of one streamed Chat Completions request.

    Follows the OpenAI API reference ("Create chat completion"): the system
    prompt first, as a ``system_role`` message; user turns as text (with
    files, a list of a ``text`` part and the files' parts,
    :func:`file_json`); assistant
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
        request: the step's request.
        model_id: the model id sent as ``model``.
        settings: the adapter's :class:`agentcore.ModelSettings`
            (``request.settings`` override them).
        extra_body: fields merged into the body.
        origin: the server's origin (:func:`agentcore.providers.config.origin`):
            reasoning and tool-call data from it go back verbatim.
        sent: when given, gets the messages sent for each message of
            ``request.messages`` appended, one list per message (its ``tool``
            messages, its own, the ``user`` message of its tool results'
            files; for :func:`agentcore.providers.digests.fingerprint`).
        system_role: ``"system"`` or ``"developer"``.
        max_tokens_field: ``"max_tokens"`` or ``"max_completion_tokens"``.
        include_usage: ask for ``stream_options: {"include_usage": true}``.
        reasoning_format: the field the server takes reasoning back in (one of
            :data:`REASONING_DIALECTS`), or None to work it out
            (:func:`reasoning_dialect`).
        memo: where each message's JSON is kept for the next steps (an
            adapter's own): a message mapped before under the same dialect
            and origin is taken from it. The body then shares those values
            with the memo, so they must never be changed.

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: before anything is sent: a history the server would
            refuse (:func:`agentcore.history.check_history`,
            naming the message; or this adapter's ``provider_data`` edited
            into something that is not its JSON; a file part outside a user
            message, or a file :func:`file_json` refuses), a setting it
            cannot send (:func:`settings_fields`), or a server tool
            (:func:`check_server_tools`).
    """
    check_server_tools(request.server_tools)
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
    log_foreign_items(request.messages, FORMAT, origin)
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
    body: dict[str, Any] = {"model": model_id, "messages": messages, "stream": True}
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
