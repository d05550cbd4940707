"""The Anthropic Messages API, what a request sends: small pure functions,
each following the documented API and tested on its own.

:func:`request_body` builds the JSON body of ``POST /v1/messages``
(https://docs.anthropic.com/en/api/messages), with :func:`reasoning_block`
for the reasoning that goes back, :func:`file_json` for files and
:func:`settings_fields` (with :func:`thinking_config` and :func:`tool_choice`)
for the :class:`~agentcore.ModelSettings`; :func:`count_body` makes a token
count's body from it. The stream is
:mod:`agentcore.providers.anthropic.stream`'s, the model class
:mod:`agentcore.providers.anthropic.model`'s.

Decisions:

* Request: the API rejects empty text blocks and needs user and assistant
  turns to alternate, so blank text parts and assistant turns left empty are
  dropped, ``tool`` messages become ``user`` turns of ``tool_result`` blocks,
  and neighbouring turns of one role are merged (``tool_result`` blocks
  first); blocks keep their order, so an assistant turn that started with a
  thinking block still does. A user or tool message with nothing to send,
  or no message at all, is a :class:`ConfigError` naming it (the API would
  answer 400). A call whose input is not a JSON object is sent with
  ``input: {}``; a call id the API would refuse (another provider's) is
  rewritten the same way in the call and its result (:func:`tool_use_id`).
  An empty tool result is sent without ``content``.
* Files: images, PDFs and plain text as the API documents them
  (:func:`file_json`), in user turns and inside tool results; another media
  type, or a file over its documented size, is a :class:`ConfigError`
  naming the message before any HTTP call.
* Reasoning (https://platform.claude.com/docs/en/build-with-claude/thinking):
  thinking and redacted thinking blocks read from this service
  (``Reasoning.format == "anthropic"``, ``Reasoning.origin`` the host of
  ``base_url``) go back in place, byte for byte, never merged, reordered or
  trimmed. The API verifies every signature, so reasoning from another
  provider or another Anthropic endpoint (a gateway) is not sent; its visible
  text is not turned into answer text either. A tool-use turn continued with
  manual extended thinking (``thinking_budget``) whose assistant message
  does not start with a thinking block (begun on another provider or with
  thinking off) is sent without ``thinking``: in manual mode the API
  requires that first block (its 400: "a final `assistant` message must
  start with a thinking block"), and the docs' own answer to a mid-turn
  change is to finish the turn without thinking. Adaptive thinking has no
  such rule and is sent as set.
* Settings: :data:`SETTINGS` are mapped as :func:`settings_fields` says;
  ``seed`` (no such field) and values the API refuses whatever the model
  (temperature above 1; with thinking on, a temperature other than 1, a
  ``top_p`` under 0.95, a forced tool choice in manual mode; a budget under
  1,024 or not under ``max_tokens``; an unknown effort level or tool name)
  are ConfigErrors before any HTTP call. What depends on the model (which
  thinking modes and effort levels it takes, sampling fields refused by the
  newest models) is left to the API: its 400 is an ``INVALID_REQUEST``
  :class:`ModelError`. ``extra_body`` goes last and is sent as given.
* Compaction (the compaction page,
  https://platform.claude.com/docs/en/build-with-claude/compaction) and
  context editing (the context editing page,
  https://platform.claude.com/docs/en/build-with-claude/context-editing):
  ``compaction_trigger``, ``clear_tool_uses`` and ``clear_thinking`` become
  ``context_management.edits``
  (:func:`context_management`), and the beta features the body uses go in
  the ``anthropic-beta`` header, next to the caller's (:func:`beta_features`,
  :func:`with_betas`). A compaction block read from this service goes back
  in place, unchanged (:func:`item_block`); one from elsewhere is left out,
  with a line at INFO.
* Server tools (the server tools page,
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools;
  the code execution page,
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/code-execution-tool;
  :data:`WEB_SEARCH_DOCS`, :data:`WEB_FETCH_DOCS`; :func:`server_tool_entry`): ``Request.server_tools`` go
  after the function tools as the API's own tool entries (web search, web
  fetch, code execution), with the beta features the docs name for them in
  ``anthropic-beta`` (:func:`beta_features`); ``FileSearch`` (no such tool
  here) and a function tool named like a server tool are
  :class:`ConfigError`. The server-tool blocks read from this service go
  back in place, byte for byte (:func:`item_block`); a server tool's result
  whose ``server_tool_use`` is not earlier in the same assistant turn is a
  :class:`ConfigError` (:func:`check_server_results`). A history ending with
  a paused assistant turn (``pause_turn``: server-tool blocks last) is sent
  with that turn last, unchanged, thinking on or not: the API continues it
  (:data:`agentcore.providers.anthropic.stream.STOP_REASONS_DOCS`). Code
  execution's container (a :data:`~agentcore.providers.anthropic.stream.CONTAINER`
  provider item) becomes the body's ``container`` while it has not expired
  (:func:`container_id`).
* Prompt caching (:data:`CACHE_DOCS`): automatic caching is on by
  default (``ModelSettings(cache=True)`` is the adapter's default setting; a
  loop sends its whole growing prefix every step), as the request-level
  ``cache_control``; ``cache_system``, ``cache_tools`` and
  :func:`agentcore.cache_point` parts add explicit breakpoints
  (:func:`cache_control`); more than :data:`MAX_CACHE_BREAKPOINTS` in one
  request is a :class:`ConfigError`. Each step's ``step-finish`` part carries
  its :class:`agentcore.caching.CacheReport` (:func:`cache_policy`).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from agentcore import caching
from agentcore.errors import ConfigError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.providers import attachments
from agentcore.providers.anthropic.stream import (
    COMPACTION,
    CONTAINER,
    FORMAT,
    SERVER_TOOL_USE,
    is_server_block,
)
from agentcore.providers.history import arguments_object, log_foreign_items
from agentcore.schema.signature import rewrite_schema
from agentcore.server_tools import (
    CodeExecution,
    FileSearch,
    ServerTool,
    WebFetch,
    WebSearch,
    check_server_names,
)
from agentcore.settings import ModelSettings, unsupported
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    Message,
    OutputSchema,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    ToolDefinition,
    ToolResult,
)

DEFAULT_MAX_TOKENS = 4096
"""Output token cap sent when ``Request.max_output_tokens`` is None (the API requires one)."""

SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "stop_sequences",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "thinking",
        "thinking_budget",
        "cache",
        "cache_ttl",
        "cache_system",
        "cache_tools",
        "compaction_trigger",
        "clear_tool_uses",
        "clear_thinking",
        "extra_body",
    }
)
"""The :class:`ModelSettings` fields this adapter maps; ``seed`` is not one:
the Messages API has no seed (https://docs.anthropic.com/en/api/messages)."""
COMPACTION_EDIT = "compact_20260112"
"""The compaction edit's type (the compaction page)."""
CLEAR_TOOL_USES_EDIT = "clear_tool_uses_20250919"
"""The context edit that clears old tool results (the context editing page)."""
CLEAR_THINKING_EDIT = "clear_thinking_20251015"
"""The context edit that clears earlier turns' thinking (the context editing page)."""
COMPACTION_BETA = "compact-2026-01-12"
"""The beta the compaction edit and compaction blocks need (the compaction page)."""
CONTEXT_EDITING_BETA = "context-management-2025-06-27"
"""The beta the context edits need (the context editing page)."""
MIN_COMPACTION_TRIGGER = 50_000
"""The smallest compaction trigger the API takes, in input tokens (the compaction page)."""
BETA_HEADER = "anthropic-beta"
"""The header that names the beta features a request uses, comma-separated."""
EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""The ``output_config.effort`` levels (https://platform.claude.com/docs/en/build-with-claude/effort)."""
MIN_THINKING_BUDGET = 1024
"""The smallest ``budget_tokens`` the API accepts."""
DEFAULT_SETTINGS = ModelSettings(cache=True)
"""The adapter's own settings, under the caller's: automatic prompt caching on."""
FILE_TYPES = (*attachments.IMAGE_TYPES, attachments.PDF, attachments.TEXT)
"""The media types the API takes: images (https://platform.claude.com/docs/en/build-with-claude/vision),
PDFs (https://platform.claude.com/docs/en/build-with-claude/pdf-support) and plain
text documents (https://platform.claude.com/docs/en/build-with-claude/citations)."""
MAX_IMAGE_BASE64 = 5 * attachments.MB
"""The largest image, counted as its base64 text: "Maximum 5MB per image" on the API
(https://platform.claude.com/docs/en/build-with-claude/vision, FAQ), and the API's
400 says "image exceeds 5 MB maximum: N bytes > 5242880 bytes" of the base64 data."""
MAX_DOCUMENT_BASE64 = 32 * attachments.MB
"""The largest PDF or text document: the 32 MB request size limit that
https://platform.claude.com/docs/en/build-with-claude/pdf-support states for documents
(the whole request counts, so a smaller file may still be refused: a 413)."""
CACHE_DOCS = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
"""Anthropic's prompt caching page: the rules :func:`cache_control`,
:func:`cache_breakpoints` and :func:`cache_policy` follow."""
MAX_CACHE_BREAKPOINTS = 4
"""The most cache breakpoints one request may hold, the automatic one
included (:data:`CACHE_DOCS`)."""
CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
"""Each ``cache_ttl`` in seconds; ``"5m"`` is the API's default (:data:`CACHE_DOCS`)."""
MIN_CACHEABLE_TOKENS = (
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 1024),
    ("claude-sonnet-4-5", 1024),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
"""The minimum cacheable prompt length in tokens, by model (its id, or its id
and a date): shorter prompts are processed without caching, even when marked
(:data:`CACHE_DOCS`, "Cache limitations"). Models not listed: not known."""
WEB_SEARCH_DOCS = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool"
"""Anthropic's web search tool page."""
WEB_FETCH_DOCS = "https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool"
"""Anthropic's web fetch tool page."""
WEB_SEARCH_TOOL = "web_search_20250305"
"""The web search tool's type: the basic version, on every model that has web
search (the later ``web_search_20260209`` and ``web_search_20260318`` add
dynamic filtering on Claude 4.6 and later only; :data:`WEB_SEARCH_DOCS`)."""
WEB_FETCH_TOOL = "web_fetch_20250910"
"""The web fetch tool's type: the basic version, on every model that has web
fetch (later versions add dynamic filtering on Claude 4.6 and later;
:data:`WEB_FETCH_DOCS`)."""
CODE_EXECUTION_TOOL = "code_execution_20250825"
"""The code execution tool's type: Bash commands and file operations, on every
model that has code execution (the code execution page)."""
WEB_FETCH_BETA = "web-fetch-2025-09-10"
"""The beta :data:`WEB_FETCH_TOOL` was introduced under (:data:`WEB_FETCH_DOCS`)."""
CODE_EXECUTION_BETA = "code-execution-2025-08-25"
"""The beta :data:`CODE_EXECUTION_TOOL` was introduced under (the code execution page)."""
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_IN_ID = re.compile(r"[^a-zA-Z0-9_-]")
_API = "the Anthropic Messages API"
_log = logging.getLogger("agentcore.providers.anthropic")


def tool_input(text: str) -> dict[str, Any]:
    """The ``input`` object of a ``tool_use`` block from a call's JSON text.

    The API requires an object; text that is empty, malformed, not an
    object or nested too deeply
    (:func:`agentcore.providers.history.arguments_object`) gives ``{}`` so a
    history holding such a call can be sent again (the call's error result
    already told the model what was wrong).
    """
    value = arguments_object(text)
    return {} if value is None else value


def reasoning_block(reasoning: Reasoning, origin: str) -> dict[str, Any] | None:
    """The content block a reasoning part goes back as, or None when it is not sent.

    Thinking blocks go back complete and unmodified
    (https://platform.claude.com/docs/en/build-with-claude/thinking,
    "Preserving thinking blocks"): a block this adapter read from the same
    service (``format == "anthropic"`` and the same ``origin``) is sent as
    ``{"type": "redacted_thinking", "data": ...}`` when it holds ``data``,
    else as ``{"type": "thinking", "thinking": ..., "signature": ...}`` (the
    text may be "": an omitted display). The API verifies every signature, so
    nothing else is sent: reasoning of another format or origin, and a
    thinking block without a signature (cut off before the signature came),
    which the API could not verify.
    """
    if reasoning.format != FORMAT or reasoning.origin != origin:
        return None
    if reasoning.data:
        return {"type": "redacted_thinking", "data": reasoning.data}
    if reasoning.signature:
        return {"type": "thinking", "thinking": reasoning.text, "signature": reasoning.signature}
    return None


def item_block(item: ProviderItem, origin: str) -> dict[str, Any] | None:
    """The content block a provider item goes back as, or None when it is not sent.

    A compaction block goes back unchanged, in the place it had in the
    assistant turn (before the text that followed it), on every later
    request (the compaction page, "How compaction works"); so do server-tool
    calls and results (the server tools page: the assistant content goes
    back as it came, ids included): the block this adapter read from the same
    service (``format == "anthropic"`` and the same ``origin``) is sent as
    its ``data`` holds it. A container item is no block (see
    :func:`container_id`). Any other provider item (another provider's,
    another endpoint's) is not sent: the API could not read it.
    """
    if item.format != FORMAT or item.origin != origin or item.type == CONTAINER:
        return None
    block: dict[str, Any] = json.loads(item.data)
    return block


def tool_use_id(call_id: str) -> str:
    """The id a tool call is sent with: as it is when the API accepts it
    (``^[a-zA-Z0-9_-]+$``, https://docs.anthropic.com/en/api/messages), else
    its disallowed characters replaced by ``_`` and a hash of the original
    added, so distinct ids stay distinct. Other providers' ids (Kimi's
    ``functions.get_weather:0``) would make the API refuse the whole history;
    a call and its result get the same id, so nothing is lost."""
    if _TOOL_USE_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_NOT_IN_ID.sub('_', call_id)}_{digest}"


def file_json(file: File, where: str) -> dict[str, Any]:
    """The content block of a file, in a user turn or inside a ``tool_result``.

    * An image (JPEG, PNG, GIF, WebP) is ``{"type": "image", "source": ...}``
      with a ``base64`` source (``media_type``, ``data``) or a ``url`` source
      (https://platform.claude.com/docs/en/build-with-claude/vision).
    * A PDF is ``{"type": "document", "source": ...}``, base64 or URL
      (https://platform.claude.com/docs/en/build-with-claude/pdf-support).
    * Plain text is a document with a ``text`` source holding the text
      itself (https://platform.claude.com/docs/en/build-with-claude/citations,
      "Plain text documents"); the bytes must be UTF-8.
    * A document gets the file name as its ``title``.

    Tool results take the same image and document blocks
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls).

    Args:
        file: the file.
        where: where it is, for errors (:func:`agentcore.providers.attachments.place`).

    Raises:
        ConfigError: another media type (:data:`FILE_TYPES`), a text document
            by URL or not UTF-8, an image over :data:`MAX_IMAGE_BASE64` or a
            document over :data:`MAX_DOCUMENT_BASE64` (as base64).
    """
    image = file.media_type in attachments.IMAGE_TYPES
    attachments.check_type(file, where, FILE_TYPES, _API, url=file.media_type != attachments.TEXT)
    limit = MAX_IMAGE_BASE64 if image else MAX_DOCUMENT_BASE64
    attachments.check_size(file, where, limit, _API, encoded=True)
    source: dict[str, Any]
    if file.url:
        source = {"type": "url", "url": file.url}
    elif file.media_type == attachments.TEXT:
        try:
            text = (file.data or b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where} holds a text/plain file that is not UTF-8 ({exc})") from None
        source = {"type": "text", "media_type": attachments.TEXT, "data": text}
    else:
        source = {"type": "base64", "media_type": file.media_type, "data": attachments.base64_text(file)}
    block: dict[str, Any] = {"type": "image" if image else "document", "source": source}
    if file.filename and not image:
        block["title"] = file.filename
    return block


def _result_block(result: ToolResult, index: int) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id(result.tool_call_id)}
    if result.files:
        where = attachments.place(index, result)
        content = [{"type": "text", "text": result.content}] if result.content.strip() else []
        block["content"] = content + [file_json(file, where) for file in result.files]
    elif result.content:
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block


def _block(part: ContentPart, index: int, origin: str) -> dict[str, Any] | None:
    if part.provider_item is not None:
        return item_block(part.provider_item, origin)
    if part.reasoning is not None:
        return reasoning_block(part.reasoning, origin)
    if part.file is not None:
        return file_json(part.file, attachments.place(index))
    if part.tool_call is not None:
        call = part.tool_call
        return {
            "type": "tool_use",
            "id": tool_use_id(call.id),
            "name": call.name,
            "input": tool_input(call.input),
        }
    if part.tool_result is not None:
        return _result_block(part.tool_result, index)
    if part.text.strip():
        return {"type": "text", "text": part.text}
    return None  # the API rejects empty and whitespace-only text blocks


def _messages(
    messages: tuple[Message, ...], origin: str, cache: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """The ``messages`` turns, and the blocks sent for each message (what
    :func:`agentcore.providers.digests.fingerprint` digests). A cache point puts
    ``cache`` on the last block before it that is not a thinking block (the
    API does not cache those on their own)."""
    if not messages:
        raise ConfigError(f"the request has no messages; {_API} needs at least one user message")
    turns: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = []
    last: dict[str, Any] | None = None
    log_foreign_items(messages, FORMAT, origin)
    calls: set[object] = set()  # the server_tool_use ids of the assistant turn so far
    for index, message in enumerate(messages):
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        if role == "user":
            calls = set()
        blocks: list[dict[str, Any]] = []
        for part in message.content:
            if part.kind is ContentPartKind.CACHE_POINT:
                if last is None:
                    raise ConfigError(
                        f"messages[{index}] has a cache point with no content before it for {_API} "
                        "to cache up to (a thinking block cannot be one)"
                    )
                last["cache_control"] = dict(cache)
                continue
            block = _block(part, index, origin)
            if block is not None:
                check_server_results(block, calls, index)
                blocks.append(block)
                if block["type"] not in _THINKING_BLOCKS:
                    last = block
        sent.append(blocks)
        if not blocks:
            if role == "user":
                raise ConfigError(
                    f"messages[{index}] is a {message.role.value} message with nothing {_API} accepts "
                    "(no text other than blanks, no file, no tool result): give it text or remove it"
                )
            continue  # an assistant message of blanks or of reasoning that cannot go back
        if turns and turns[-1]["role"] == role:
            blocks = turns.pop()["content"] + blocks
        if role == "user":  # tool_result blocks must open the user turn
            blocks.sort(key=lambda b: b["type"] != "tool_result")
        turns.append({"role": role, "content": blocks})
    return turns, sent


def check_server_results(block: Mapping[str, Any], calls: set[object], index: int) -> None:
    """Check one block of an assistant turn going out: a ``server_tool_use``
    adds its id to ``calls`` (the turn's so far); a server tool's result
    (``*_tool_result``) must answer one of them, as the API requires
    (the server tools page: a result block follows its call in the same
    assistant content; the API answers 400 ``invalid_request_error``
    otherwise).

    Raises:
        ConfigError: a result whose ``tool_use_id`` no earlier
            ``server_tool_use`` of the turn has, naming ``messages[index]``.
    """
    kind = block.get("type")
    if not is_server_block(kind):
        return
    if kind == SERVER_TOOL_USE:
        calls.add(block.get("id"))
        return
    if block.get("tool_use_id") not in calls:
        raise ConfigError(
            f"messages[{index}] holds a {kind} block for the server tool call {block.get('tool_use_id')!r}, "
            f"but no server_tool_use with that id comes before it in its assistant turn; {_API} refuses "
            "a server tool's result without its call: keep the call's provider item before it"
        )


def server_tool_entry(tool: ServerTool) -> dict[str, Any]:
    """The ``tools`` entry of a server tool.

    * :class:`~agentcore.server_tools.WebSearch`: ``{"type":
      "web_search_20250305", "name": "web_search"}`` with ``max_uses``,
      ``allowed_domains``, ``blocked_domains`` and ``user_location``
      (``{"type": "approximate", "city", "region", "country", "timezone"}``,
      the fields set) when set (:data:`WEB_SEARCH_DOCS`).
    * :class:`~agentcore.server_tools.WebFetch`: ``{"type":
      "web_fetch_20250910", "name": "web_fetch"}`` with ``max_uses`` and
      ``allowed_domains`` when set (:data:`WEB_FETCH_DOCS`).
    * :class:`~agentcore.server_tools.CodeExecution`: ``{"type":
      "code_execution_20250825", "name": "code_execution"}`` (the code execution page).

    Raises:
        ConfigError: a :class:`~agentcore.server_tools.FileSearch` (the API
            has no file search over vector stores).
    """
    entry: dict[str, Any]
    if isinstance(tool, WebSearch):
        entry = {"type": WEB_SEARCH_TOOL, "name": tool.name}
        _limits(entry, tool.max_uses, tool.allowed_domains)
        if tool.blocked_domains is not None:
            entry["blocked_domains"] = list(tool.blocked_domains)
        if tool.user_location is not None:
            entry["user_location"] = {"type": "approximate", **tool.user_location.fields()}
    elif isinstance(tool, WebFetch):
        entry = {"type": WEB_FETCH_TOOL, "name": tool.name}
        _limits(entry, tool.max_uses, tool.allowed_domains)
    elif isinstance(tool, CodeExecution):
        entry = {"type": CODE_EXECUTION_TOOL, "name": tool.name}
    elif isinstance(tool, FileSearch):
        raise ConfigError(
            f"FileSearch ({tool.name}) is not a tool of {_API}: AnthropicModel cannot search vector stores; "
            "remove it, or use OpenAIResponsesModel"
        )
    else:  # the ServerTool union is closed; a new class must be mapped here
        raise ConfigError(f"{type(tool).__name__} is not a server tool AnthropicModel knows")
    return entry


def _limits(entry: dict[str, Any], max_uses: int | None, allowed: Iterable[str] | None) -> None:
    if max_uses is not None:
        entry["max_uses"] = max_uses
    if allowed is not None:
        entry["allowed_domains"] = list(allowed)


def _tool_entries(request: Request) -> list[dict[str, Any]]:
    """The function tools' entries, then the server tools'.

    Raises:
        ConfigError: a function tool named like a server tool of the request
            (the model could not tell them apart), and as :func:`server_tool_entry`.
    """
    tools = []
    for tool in request.tools:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["input_schema"] = json.loads(tool.input_schema)
        tools.append(entry)
    check_server_names(request.server_tools, (tool.name for tool in request.tools))
    tools.extend(server_tool_entry(server_tool) for server_tool in request.server_tools)
    return tools


def container_id(messages: Iterable[Message], origin: str, now: float) -> str | None:
    """The id of code execution's container to reuse, or None.

    The last :data:`~agentcore.providers.anthropic.stream.CONTAINER` provider
    item of the history read from this service (``format == "anthropic"``,
    the same ``origin``) whose ``expires_at`` is after ``now`` (seconds since
    the epoch; an ``expires_at`` that is absent or not an ISO 8601 time
    counts as not expired). Sending its id as ``container`` reuses the
    sandbox and the files it holds (the code execution page, "Reuse
    containers"); an expired one would be refused, so a new one is made.
    """
    found: str | None = None
    for message in messages:
        for item in message.provider_items:
            if item.type != CONTAINER or item.format != FORMAT or item.origin != origin:
                continue
            container = json.loads(item.data)
            expires = container.get("expires_at")
            if isinstance(expires, str):
                try:
                    moment = datetime.datetime.fromisoformat(expires.replace("Z", "+00:00"))
                except ValueError:
                    moment = None
                if moment is not None and moment.tzinfo is not None and moment.timestamp() <= now:
                    continue
            if isinstance(container.get("id"), str):
                found = container["id"]
    return found


def _paused(turns: list[dict[str, Any]]) -> bool:
    """Whether the last turn is an assistant turn holding server-tool blocks:
    a paused turn sent back to be continued, not a prefill."""
    return turns[-1]["role"] == "assistant" and any(is_server_block(b["type"]) for b in turns[-1]["content"])


def _continues_turn_without_thinking(turns: list[dict[str, Any]]) -> bool:
    """True when the request continues a tool-use turn (its last turn holds
    tool results) whose assistant message does not start with a thinking
    block (a compaction block before it does not count: the API reads the
    turn from that block on)."""
    if len(turns) < 2 or not any(b["type"] == "tool_result" for b in turns[-1]["content"]):
        return False
    first = next((b["type"] for b in turns[-2]["content"] if b["type"] != COMPACTION), None)
    return turns[-2]["role"] == "assistant" and first not in _THINKING_BLOCKS


def thinking_config(
    settings: ModelSettings, max_tokens: int, *, interleaved: bool = False
) -> dict[str, Any] | None:
    """The ``thinking`` field for ``settings``, or None to send none.

    ``thinking=True`` with a ``thinking_budget`` -> ``{"type": "enabled",
    "budget_tokens": N}`` (manual extended thinking, the only mode of models
    before Claude 4.6); ``thinking=True`` alone -> ``{"type": "adaptive"}``
    (Claude 4.6 and later); a budget alone implies ``thinking=True``;
    ``thinking=False`` -> ``{"type": "disabled"}``; neither -> None (the
    model's default). Which mode a model accepts is the API's to say (a 400,
    ``INVALID_REQUEST``): https://platform.claude.com/docs/en/build-with-claude/thinking.

    Raises:
        ConfigError: a budget with ``thinking=False``; a budget under 1,024
            tokens or not under ``max_tokens`` (unless ``interleaved``: the
            ``interleaved-thinking`` beta lets the budget span the whole turn),
            as https://platform.claude.com/docs/en/build-with-claude/extended-thinking
            ("Budget rules and tuning") requires.
    """
    budget = settings.thinking_budget
    if settings.thinking is False:
        if budget is not None:
            raise ConfigError("ModelSettings.thinking_budget is set but ModelSettings.thinking is False")
        return {"type": "disabled"}
    if budget is None:
        return {"type": "adaptive"} if settings.thinking else None
    if budget < MIN_THINKING_BUDGET:
        raise ConfigError(
            f"ModelSettings.thinking_budget must be at least {MIN_THINKING_BUDGET} tokens for {_API}, "
            f"got {budget}"
        )
    if budget >= max_tokens and not interleaved:
        raise ConfigError(
            f"ModelSettings.thinking_budget ({budget}) must be less than the output cap max_tokens "
            f"({max_tokens}) for {_API} (raise max_output_tokens, or send the interleaved-thinking beta)"
        )
    return {"type": "enabled", "budget_tokens": budget}


def tool_choice(
    settings: ModelSettings, tools: tuple[ToolDefinition, ...], *, manual_thinking: bool = False
) -> dict[str, Any] | None:
    """The ``tool_choice`` field for ``settings``, or None to send none.

    ``"auto"`` -> ``{"type": "auto"}``, ``"none"`` -> ``{"type": "none"}``,
    ``"required"`` -> ``{"type": "any"}``, a tool's name -> ``{"type": "tool",
    "name": ...}``; ``parallel_tool_calls`` adds ``disable_parallel_tool_use``
    (its negation; to ``{"type": "auto"}`` when no choice is set), except to
    ``none`` (no calls at all)
    (https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use,
    "Forcing tool use"; .../parallel-tool-use). With no tools there is nothing
    to choose: ``auto``, ``none`` and ``parallel_tool_calls`` hold as they
    are and nothing is sent.

    Raises:
        ConfigError: ``required`` or a tool's name with no tools, a name that
            is not one of ``tools``, or a forced choice (``required``, a name)
            with manual extended thinking (``thinking: enabled``), which the
            API refuses (https://platform.claude.com/docs/en/build-with-claude/thinking,
            "Thinking with tool use").
    """
    choice, parallel = settings.tool_choice, settings.parallel_tool_calls
    if choice is None and parallel is None:
        return None
    kind = {"auto": "auto", "none": "none", "required": "any"}.get(choice or "auto", "tool")
    if not tools:
        if kind in ("auto", "none"):
            return None
        raise ConfigError(f"ModelSettings.tool_choice is {choice!r} but the request has no tools")
    out: dict[str, Any] = {"type": kind}
    if kind == "tool":
        if choice not in {tool.name for tool in tools}:
            raise ConfigError(
                f"ModelSettings.tool_choice names the tool {choice!r}, which is not among the request's tools"
            )
        out["name"] = choice
    if manual_thinking and kind in ("any", "tool"):
        raise ConfigError(
            f"ModelSettings.tool_choice {choice!r} forces a tool call, which {_API} refuses with "
            "thinking_budget (manual extended thinking); use 'auto' or thinking without a budget (adaptive)"
        )
    if parallel is not None and kind != "none":
        out["disable_parallel_tool_use"] = not parallel
    return out


def context_management(settings: ModelSettings, *, thinking_on: bool) -> dict[str, Any] | None:
    """The ``context_management`` field for ``settings``, or None to send none.

    Its ``edits``, in this order: ``clear_thinking`` as
    ``{"type": "clear_thinking_20251015"}`` (the docs want it listed first;
    the API's default keeps the last turn's thinking), ``clear_tool_uses`` as
    ``{"type": "clear_tool_uses_20250919"}`` (its defaults: it acts from
    100,000 input tokens and keeps the last 3 tool uses), then
    ``compaction_trigger`` as ``{"type": "compact_20260112", "trigger":
    {"type": "input_tokens", "value": N}}`` (the compaction page,
    the context editing page). False and None ask for nothing.

    Args:
        settings: the request's merged settings.
        thinking_on: the request turns thinking on (manual or adaptive).

    Raises:
        ConfigError: a ``compaction_trigger`` under
            :data:`MIN_COMPACTION_TRIGGER`; ``clear_thinking`` without
            thinking on, which the API refuses ("`clear_thinking_20251015`
            strategy requires `thinking` to be enabled").
    """
    edits: list[dict[str, Any]] = []
    if settings.clear_thinking:
        if not thinking_on:
            raise ConfigError(
                f"ModelSettings.clear_thinking needs thinking on: {_API} clears thinking blocks only "
                "while thinking is on; set ModelSettings(thinking=True) or leave clear_thinking unset"
            )
        edits.append({"type": CLEAR_THINKING_EDIT})
    if settings.clear_tool_uses:
        edits.append({"type": CLEAR_TOOL_USES_EDIT})
    trigger = settings.compaction_trigger
    if trigger is not None:
        if trigger < MIN_COMPACTION_TRIGGER:
            raise ConfigError(
                f"ModelSettings.compaction_trigger must be at least {MIN_COMPACTION_TRIGGER:,} input tokens "
                f"for {_API}, got {trigger:,}"
            )
        edits.append({"type": COMPACTION_EDIT, "trigger": {"type": "input_tokens", "value": trigger}})
    return {"edits": edits} if edits else None


def beta_features(body: Mapping[str, Any]) -> list[str]:
    """The beta features ``body`` uses, for the ``anthropic-beta`` header:
    :data:`COMPACTION_BETA` for a compaction edit or a compaction block in
    its messages (the compaction page), :data:`CONTEXT_EDITING_BETA` for
    any other ``context_management`` edit (the context editing page).
    Without them the API refuses the body ("context_management: Extra inputs
    are not permitted"). :data:`WEB_FETCH_BETA` for a web fetch tool or a
    ``web_fetch_tool_result`` block, :data:`CODE_EXECUTION_BETA` for a code
    execution tool, a code execution result block or a ``container``: the
    betas these tool versions were introduced under (:data:`WEB_FETCH_DOCS`,
    the code execution page); the API accepts them now they are generally
    available, so a body that needs them always names them."""
    management = body.get("context_management")
    edits = management.get("edits", []) if isinstance(management, Mapping) else []
    kinds = {edit.get("type") for edit in edits if isinstance(edit, Mapping)}
    blocks = {
        str(block.get("type"))
        for turn in body.get("messages", [])
        for block in turn["content"]
        if isinstance(block, Mapping)
    }
    tools = {str(tool.get("type")) for tool in body.get("tools", []) if isinstance(tool, Mapping)}
    features = [COMPACTION_BETA] if COMPACTION_EDIT in kinds or COMPACTION in blocks else []
    if kinds - {COMPACTION_EDIT}:
        features.append(CONTEXT_EDITING_BETA)
    if WEB_FETCH_TOOL in tools or "web_fetch_tool_result" in blocks:
        features.append(WEB_FETCH_BETA)
    code = CODE_EXECUTION_TOOL in tools or "container" in body
    if code or any(kind.endswith("code_execution_tool_result") for kind in blocks):
        features.append(CODE_EXECUTION_BETA)
    return features


def with_betas(headers: Mapping[str, str], features: list[str]) -> Mapping[str, str]:
    """``headers`` with ``features`` added to their ``anthropic-beta`` header
    (whatever the case of its name), after the features already named
    there; each feature named once. ``headers`` themselves when nothing is
    added."""
    name = next((key for key in headers if key.lower() == BETA_HEADER), BETA_HEADER)
    named = [value.strip() for value in headers.get(name, "").split(",") if value.strip()]
    missing = [feature for feature in dict.fromkeys(features) if feature not in named]
    if not missing:
        return headers
    return {**headers, name: ",".join([*named, *missing])}


def betas_in_body(
    headers: Mapping[str, str], body: Mapping[str, Any]
) -> tuple[dict[str, str], dict[str, Any]]:
    """``headers`` without their ``anthropic-beta`` header, and ``body`` with
    its features in ``anthropic_beta`` (after those already there, each
    once), for an endpoint that takes them in the body (Bedrock's InvokeModel:
    https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages-request-response.html)."""
    kept = {name: value for name, value in headers.items() if name.lower() != BETA_HEADER}
    named = [
        f.strip() for name, value in headers.items() if name.lower() == BETA_HEADER for f in value.split(",")
    ]
    features = list(dict.fromkeys([*body.get("anthropic_beta", ()), *(f for f in named if f)]))
    return kept, ({**body, "anthropic_beta": features} if features else dict(body))


def check_settings(settings: ModelSettings) -> None:
    """Raise :class:`ConfigError` for a set field that is not one of
    :data:`SETTINGS` (the adapter checks its own settings at construction;
    :func:`settings_fields` checks each request's)."""
    unsupported(settings, set(SETTINGS), _API)


def settings_fields(
    settings: ModelSettings,
    tools: tuple[ToolDefinition, ...],
    max_tokens: int,
    *,
    interleaved: bool = False,
) -> dict[str, Any]:
    """The request body fields for ``settings`` (``extra_body`` aside).

    ``temperature``, ``top_p`` and ``stop_sequences`` (a list) as they are;
    ``thinking`` from :func:`thinking_config`; ``tool_choice`` from
    :func:`tool_choice`; ``reasoning_effort`` as ``output_config: {"effort":
    ...}`` (one of :data:`EFFORTS`); ``compaction_trigger``,
    ``clear_tool_uses`` and ``clear_thinking`` as ``context_management``
    (:func:`context_management`).

    Raises:
        ConfigError: a field the API does not support (``seed``), a
            ``temperature`` above 1 (the API's range is 0 to 1), a
            ``reasoning_effort`` it has no level for (``none``, ``minimal``),
            or, with thinking on, a ``temperature`` other than 1 or a
            ``top_p`` under 0.95, which the API refuses
            (https://platform.claude.com/docs/en/build-with-claude/thinking,
            "Limits and feature compatibility"); and as :func:`thinking_config`,
            :func:`tool_choice` and :func:`context_management`.
    """
    check_settings(settings)
    fields: dict[str, Any] = {}
    thinking = thinking_config(settings, max_tokens, interleaved=interleaved)
    thinking_on = thinking is not None and thinking["type"] != "disabled"
    if thinking is not None:
        fields["thinking"] = thinking
    if settings.temperature is not None:
        if settings.temperature > 1:
            raise ConfigError(
                f"ModelSettings.temperature must be between 0 and 1 for {_API}, got {settings.temperature!r}"
            )
        if thinking_on and settings.temperature != 1:
            raise ConfigError(
                f"ModelSettings.temperature may only be 1 (or unset) while thinking is on with {_API}"
            )
        fields["temperature"] = settings.temperature
    if settings.top_p is not None:
        if thinking_on and settings.top_p < 0.95:
            raise ConfigError(
                f"ModelSettings.top_p must be at least 0.95 (or unset) while thinking is on with {_API}"
            )
        fields["top_p"] = settings.top_p
    if settings.stop_sequences is not None:
        fields["stop_sequences"] = list(settings.stop_sequences)
    manual = thinking is not None and thinking["type"] == "enabled"
    choice = tool_choice(settings, tools, manual_thinking=manual)
    if choice is not None:
        fields["tool_choice"] = choice
    effort = settings.reasoning_effort
    if effort is not None:
        if effort not in EFFORTS:
            raise ConfigError(
                f"ModelSettings.reasoning_effort {effort!r} is not an effort level of {_API}; "
                f"use one of {', '.join(EFFORTS)}"
            )
        fields["output_config"] = {"effort": effort}
    management = context_management(settings, thinking_on=thinking_on)
    if management is not None:
        fields["context_management"] = management
    return fields


_OUTPUT_CONSTRAINTS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "prefixItems",
)
"""Schema keywords structured outputs do not take (and ``minItems`` above 1)."""


def output_format(output: OutputSchema) -> dict[str, Any]:
    """The ``output_config.format`` of native structured output.

    ``{"type": "json_schema", "schema": ...}`` as
    https://platform.claude.com/docs/en/build-with-claude/structured-outputs
    documents it ("JSON outputs"). Its "JSON Schema limitations" list
    keywords the API refuses: numeric bounds (``minimum``, ``maximum``,
    their exclusive forms, ``multipleOf``), string lengths (``minLength``,
    ``maxLength``), array sizes other than ``minItems`` 0 or 1
    (``maxItems``, and ``uniqueItems`` and ``prefixItems``, which it does
    not list as supported). Each such keyword moves into its schema's
    ``description`` (``"at most 5 long. Constraints: maxLength 5"``), so the
    model still reads it; the loop checks the answer against the full
    schema and sends a violation back (``LoopOptions.output_retries``).
    """
    return {"type": "json_schema", "schema": rewrite_schema(json.loads(output.schema), _without_constraints)}


def _without_constraints(node: dict[str, Any]) -> dict[str, Any]:
    moved = [key for key in _OUTPUT_CONSTRAINTS if key in node]
    if isinstance(node.get("minItems"), int) and node["minItems"] > 1:
        moved.append("minItems")
    if not moved:
        return node
    out = {key: value for key, value in node.items() if key not in moved}
    said = "; ".join(f"{key} {json.dumps(node[key], ensure_ascii=False)}" for key in moved)
    description = node.get("description")
    out["description"] = f"{description} Constraints: {said}" if description else f"Constraints: {said}"
    return out


def cache_control(settings: ModelSettings) -> dict[str, Any]:
    """The ``cache_control`` object of every breakpoint: ``{"type":
    "ephemeral"}``, with ``"ttl": settings.cache_ttl`` when set (``"5m"``,
    the default, or ``"1h"``), as :data:`CACHE_DOCS` documents it for the
    request-level field (automatic caching) and for blocks alike."""
    out: dict[str, Any] = {"type": "ephemeral"}
    if settings.cache_ttl is not None:
        out["ttl"] = settings.cache_ttl
    return out


def cache_breakpoints(body: Mapping[str, Any]) -> int:
    """The cache breakpoints a request body holds: the request-level
    ``cache_control`` (automatic caching), and each system, tool and message
    block carrying one."""
    system = body.get("system")
    blocks = [
        *(system if isinstance(system, list) else []),
        *body.get("tools", []),
        *(block for turn in body.get("messages", []) for block in turn["content"]),
    ]
    return ("cache_control" in body) + sum("cache_control" in block for block in blocks)


@functools.lru_cache(maxsize=64)  # every step asks, of a handful of model ids
def min_cacheable_tokens(model: str) -> int | None:
    """The minimum cacheable prompt length of ``model`` from
    :data:`MIN_CACHEABLE_TOKENS` (its id, or its id and a ``-YYYYMMDD``
    date); None for a model not listed."""
    for name, tokens in MIN_CACHEABLE_TOKENS:
        if re.fullmatch(re.escape(name) + r"(-\d{8})?", model):
            return tokens
    return None


def cache_policy(settings: ModelSettings, model: str, body: Mapping[str, Any]) -> caching.CachePolicy:
    """What a request asked of the cache (:class:`agentcore.caching.CachePolicy`):
    the TTL of ``settings.cache_ttl`` (:data:`CACHE_TTL_SECONDS`) when the body
    holds a breakpoint, else no caching; the model's minimum
    (:func:`min_cacheable_tokens`); usage reports cache writes, and the cache
    then holds the prompt up to the last breakpoint: read + write tokens
    (:data:`CACHE_DOCS`, "Tracking cache performance")."""
    ttl = CACHE_TTL_SECONDS[settings.cache_ttl or "5m"] if cache_breakpoints(body) else None
    return caching.CachePolicy("Anthropic", ttl, min_cacheable_tokens(model), reports_writes=True)


def request_body(
    request: Request,
    model_id: str,
    *,
    settings: ModelSettings | None = None,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    sent: list[Any] | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    interleaved: bool = False,
    now: float | None = None,
) -> dict[str, Any]:
    """The JSON body of a streaming ``POST /v1/messages``.

    Follows https://docs.anthropic.com/en/api/messages: ``system`` is a
    top-level string; ``messages`` alternate ``user`` and ``assistant`` (tool
    results travel in ``user`` turns as ``tool_result`` blocks, first in the
    turn); tools are ``{name, description, input_schema}`` with the schema as
    an object. Files become image and document blocks (:func:`file_json`),
    in user turns and inside ``tool_result`` content, after the result's
    text. Blank text parts are dropped (the API rejects them), an
    assistant message left empty is skipped and neighbouring turns of one
    role are merged. Reasoning parts go back in place as
    :func:`reasoning_block` says, never merged, reordered or trimmed. Then the
    settings (``settings`` merged with ``request.settings``, which win,
    mapped by :func:`settings_fields`), then ``request.output`` as
    ``output_config.format`` (:func:`output_format`, next to a reasoning
    effort's ``output_config.effort``), then ``extra_body``, then the
    settings' ``extra_body`` (both sent as given, last).

    With manual extended thinking (``thinking: enabled``) the API requires the
    assistant message of a tool-use turn being continued to start with a
    thinking block; when it does not (the turn began with thinking off, or on
    another provider whose reasoning cannot go back), ``thinking`` is left
    out of this request, the API's own documented answer to a mid-turn change
    (https://platform.claude.com/docs/en/build-with-claude/thinking, "Thinking
    with tool use"): the turn ends in the mode it began in, and the next turn
    thinks again. Adaptive thinking has no such rule.

    Prompt caching (:data:`CACHE_DOCS`): ``settings.cache`` sends the
    request-level ``cache_control`` (automatic caching: the API puts the
    breakpoint on the last cacheable block); ``cache_system`` sends the
    system prompt as one text block with ``cache_control``; ``cache_tools``
    puts it on the last tool; each :func:`agentcore.cache_point` part puts
    it on the last block before it (not a thinking block); every one is
    :func:`cache_control`. With no system prompt or no tools,
    ``cache_system`` or ``cache_tools`` marks nothing.

    Args:
        request: the step's request.
        model_id: the model id.
        settings: the adapter's settings (``request.settings`` override them).
        extra_body: the adapter's extra body fields.
        origin: the service the request goes to (see :func:`reasoning_block`).
        sent: when given, gets the blocks sent for each message of
            ``request.messages`` appended, one list per message (the same
            objects as in the body; for :func:`agentcore.providers.digests.fingerprint`).
        max_tokens: the cap used when ``request.max_output_tokens`` is None.
        interleaved: the request carries the ``interleaved-thinking`` beta.
        now: the time a container's expiry is compared with, in seconds
            since the epoch (:func:`container_id`); None for the clock's.

    Server tools (``request.server_tools``) follow the function tools
    (:func:`server_tool_entry`); with code execution asked for, the
    history's container goes as ``container`` (:func:`container_id`). A
    history ending with a paused assistant turn (server-tool blocks in its
    last turn) goes with that turn last, unchanged: it is not a prefill, so
    thinking may be on.

    Returns:
        A JSON-ready dict with ``stream: true``.

    Raises:
        ConfigError: more than :data:`MAX_CACHE_BREAKPOINTS` cache breakpoints
            (the message counts them), a ``cache_ttl`` with no breakpoint to
            apply to, a cache point with no block before it; a history the API would refuse (see
            :func:`agentcore.history.check_history`; no messages; a
            user or tool message with nothing to send; an assistant message
            last, a prefill, while thinking is on; a file part outside a user
            message; a file the API refuses, see :func:`file_json`; a server
            tool's result without its call, see :func:`check_server_results`),
            server tools it does not have (see :func:`server_tool_entry`) or
            settings it would refuse (see :func:`settings_fields`).
    """
    check_history(request.messages)
    attachments.check_places(request.messages)
    merged = (settings or ModelSettings()).merged(request.settings)
    cap = request.max_output_tokens or max_tokens
    body: dict[str, Any] = {"model": model_id, "max_tokens": cap, "stream": True}
    cache = cache_control(merged)
    if request.system:
        system = {"type": "text", "text": request.system, "cache_control": cache}
        body["system"] = [system] if merged.cache_system else request.system
    turns, blocks = _messages(request.messages, origin, cache)
    if sent is not None:
        sent.extend(blocks)
    body["messages"] = turns
    tools = _tool_entries(request)
    if tools:
        if merged.cache_tools:
            tools[-1]["cache_control"] = cache
        body["tools"] = tools
    if any(isinstance(tool, CodeExecution) for tool in request.server_tools):
        container = container_id(request.messages, origin, time.time() if now is None else now)
        if container is not None:
            body["container"] = container
    if merged.cache:
        body["cache_control"] = cache
    fields = settings_fields(merged, request.tools, cap, interleaved=interleaved)
    thinking = fields.get("thinking")
    prefill = turns[-1]["role"] == "assistant" and not _paused(turns)
    if thinking is not None and thinking["type"] != "disabled" and prefill:
        raise ConfigError(
            f"messages[{len(request.messages) - 1}] is an assistant message last (a prefill), which "
            f"{_API} refuses while thinking is on; end with a user message or turn thinking off"
        )
    if thinking is not None and thinking["type"] == "enabled" and _continues_turn_without_thinking(turns):
        _log.info("agentcore: thinking left out: the tool-use turn being continued began without it")
        del fields["thinking"]
        _without_clear_thinking(fields)
    body.update(fields)
    if request.output is not None:
        body["output_config"] = {**body.get("output_config", {}), "format": output_format(request.output)}
    body.update(extra_body or {})
    body.update(merged.extra_body or {})
    _check_breakpoints(body, merged)
    return body


def _without_clear_thinking(fields: dict[str, Any]) -> None:
    """Drop the thinking-clearing edit from ``fields``: the request goes
    without thinking, and the API refuses that edit then."""
    management = fields.get("context_management")
    if management is None:
        return
    edits = [edit for edit in management["edits"] if edit["type"] != CLEAR_THINKING_EDIT]
    if len(edits) == len(management["edits"]):
        return
    _log.info("agentcore: clear_thinking left out with the thinking")
    if edits:
        fields["context_management"] = {"edits": edits}
    else:
        del fields["context_management"]


def _check_breakpoints(body: Mapping[str, Any], settings: ModelSettings) -> None:
    count = cache_breakpoints(body)
    if count > MAX_CACHE_BREAKPOINTS:
        found = [
            name
            for name, on in (
                ("automatic caching", "cache_control" in body),
                ("the system prompt", isinstance(body.get("system"), list)),
                ("the tools", any("cache_control" in tool for tool in body.get("tools", []))),
            )
            if on
        ]
        points = count - len(found)
        raise ConfigError(
            f"the request has {count} cache breakpoints ({', '.join([*found, f'{points} cache points'])}); "
            f"{_API} takes at most {MAX_CACHE_BREAKPOINTS}: remove cache points or set "
            "ModelSettings(cache=False) to drop the automatic one"
        )
    if count == 0 and settings.cache_ttl is not None:
        raise ConfigError(
            f"ModelSettings.cache_ttl is {settings.cache_ttl!r} but the request asks for no caching "
            "(cache=False, no cache_system, cache_tools or cache point)"
        )


COUNT_DOCS = "https://platform.claude.com/docs/en/api/messages/count_tokens"
"""The reference of ``POST /v1/messages/count_tokens``; the guide is
https://platform.claude.com/docs/en/build-with-claude/token-counting."""
COUNT_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "cache_control",
        "context_management",
        "mcp_servers",
    }
)
"""The body fields ``POST /v1/messages/count_tokens`` takes (:data:`COUNT_DOCS`;
``context_management`` and ``mcp_servers`` with their beta headers)."""


def breakpoint_on_last_block(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with its request-level ``cache_control`` (automatic caching)
    moved onto the last block of its last message that can hold one, where
    automatic caching puts the breakpoint (:data:`CACHE_DOCS`): the same
    cache, asked for block by block, as the clouds that serve the Messages
    API document it (explicit caching, ``cache_control`` on blocks:
    https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html,
    https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/prompt-caching;
    neither names the request-level field). The block is a copy: the blocks
    a digest was taken of are not changed. ``body`` itself when it has none."""
    cache = body.get("cache_control")
    if cache is None:
        return body
    moved = {name: value for name, value in body.items() if name != "cache_control"}
    turns = list(moved["messages"])
    blocks = list(turns[-1]["content"])
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") not in _THINKING_BLOCKS:
            blocks[index] = {**blocks[index], "cache_control": blocks[index].get("cache_control", cache)}
            turns[-1] = {**turns[-1], "content": blocks}
            break
    moved["messages"] = turns
    return moved


def count_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``POST /v1/messages/count_tokens`` for the step whose body
    :func:`request_body` made: its fields the endpoint takes
    (:data:`COUNT_FIELDS`: the same messages, system prompt, tools, tool
    choice, thinking, output configuration, cache control and context
    management), without what it refuses (``max_tokens``, ``stream``, the
    sampling settings, ``stop_sequences``, and any other field of the
    ``extra_body``). Its answer is ``{"input_tokens": N}`` (:data:`COUNT_DOCS`).
    """
    return {name: value for name, value in body.items() if name in COUNT_FIELDS}
