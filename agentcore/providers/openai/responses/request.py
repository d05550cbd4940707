"""The OpenAI Responses API, what a request sends: small pure functions,
each tested on its own.

:func:`request_body` builds the JSON body of one streamed
``POST {base_url}/responses``, with :func:`file_json` for files and
:func:`check_settings` for the :class:`~agentcore.ModelSettings`, and
:func:`count_body` a token count's body from it. The stream
is :mod:`agentcore.providers.openai.responses.stream`'s, the model class
:mod:`agentcore.providers.openai.responses.model`'s.

The request (https://platform.openai.com/docs/api-reference/responses/create):

* Stateless by default: ``store: false`` and ``include:
  ["reasoning.encrypted_content"]``, so every reasoning item comes back with
  its encrypted content and goes back in the next request's ``input``,
  verbatim and in place, before the function calls it preceded
  (https://platform.openai.com/docs/guides/reasoning;
  https://cookbook.openai.com/examples/responses_api/reasoning_items).
  With ``server_state`` the request says ``store: true`` and, when the
  history holds the id of a stored response, chains to it with
  ``previous_response_id`` and sends only the messages after it
  (https://platform.openai.com/docs/guides/conversation-state).
* The system prompt is ``instructions`` (or a ``developer`` message); the
  history becomes input items: user and assistant messages, ``reasoning``
  items, ``function_call`` and ``function_call_output`` items paired by
  ``call_id`` (https://platform.openai.com/docs/guides/function-calling).
* Tools are function tools, ``strict`` when the schema qualifies as written
  (:func:`agentcore.providers.openai.shared.strict_schema`), then the hosted
  tools ``Request.server_tools`` asks for (:func:`server_tool_json`); their
  ``web_search_call``, ``file_search_call`` and ``code_interpreter_call``
  items go back in place, unchanged, to the server that made them
  (:func:`item_json`).
* Files (:func:`file_json`): images as ``input_image``, other documents as
  ``input_file``, in user messages and in ``function_call_output`` items.
* Compaction (the compaction guide,
  https://developers.openai.com/api/docs/guides/compaction): ``compaction_trigger`` is
  ``context_management: [{"type": "compaction", "compact_threshold": N}]``;
  a ``compaction`` item the server returned goes back as an input item in
  its place, unchanged (:func:`item_json`), and only to the server that
  made it. The API has no context editing: ``clear_tool_uses`` and
  ``clear_thinking`` are :class:`ConfigError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ConfigError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.providers import attachments
from agentcore.providers.history import log_foreign_items, marked_error
from agentcore.providers.openai.responses.stream import FORMAT
from agentcore.providers.openai.shared import cache_fields, json_schema_format, strict_schema
from agentcore.server_tools import CodeExecution, FileSearch, ServerTool, WebSearch, check_server_names
from agentcore.settings import ModelSettings, unsupported
from agentcore.types import (
    Message,
    ProviderItem,
    Reasoning,
    Request,
    Role,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

SYSTEM_ROLES = ("instructions", "developer")
"""How the system prompt is sent: the ``instructions`` field or a ``developer`` message."""
SUMMARIES = ("auto", "concise", "detailed")
"""The ``reasoning.summary`` values the API documents."""
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
"""The ``reasoning.effort`` values the API documents (each model takes a subset)."""
ENCRYPTED_CONTENT = "reasoning.encrypted_content"
"""The ``include`` entry that makes reasoning items carry their encrypted content."""
FILE_TYPES = (
    *attachments.IMAGE_TYPES,
    attachments.PDF,
    "text/*",
    "application/json",
    "application/xml",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/vnd.ms-excel",
)
"""The media types sent: images as ``input_image``
(https://developers.openai.com/api/docs/guides/images-vision); PDFs, text and
code (every ``text/`` type), JSON, XML, Word, PowerPoint and Excel files as
``input_file`` (https://developers.openai.com/api/docs/guides/file-inputs,
"Accepted file types")."""

_API = "the OpenAI Responses API"
SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "cache_key",
        "cache_retention",
        "compaction_trigger",
        "extra_body",
    }
)
"""The :class:`agentcore.ModelSettings` fields this adapter maps
(``extra_body`` is merged last); the API has no ``stop`` and no ``seed``,
thinking is asked for with ``reasoning_effort``, caching is automatic
(``cache``, ``cache_ttl``, ``cache_system`` and ``cache_tools`` have no
field), and it has compaction but no context editing (``clear_tool_uses``,
``clear_thinking``)."""


# --- tools ----------------------------------------------------------------------


def _tool_json(tool: ToolDefinition) -> dict[str, Any]:
    schema = json.loads(tool.input_schema)
    entry: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        entry["description"] = tool.description
    entry["parameters"] = schema
    entry["strict"] = strict_schema(schema)
    return entry


ADAPTER = "OpenAIResponsesModel"
"""The adapter named in the errors of the server-tool mapping."""
WEB_SEARCH_DOCS = "https://developers.openai.com/api/docs/guides/tools-web-search"
"""OpenAI's web search guide: the ``web_search`` tool, ``filters.allowed_domains``
(up to 100 domains), ``user_location`` (``type: "approximate"``, ``city``,
``region``, ``country``, ``timezone``), the ``web_search_call`` item and its
``action.sources``."""
CODE_INTERPRETER_DOCS = "https://developers.openai.com/api/docs/guides/tools-code-interpreter"
"""OpenAI's code interpreter guide: the ``code_interpreter`` tool and its
``container`` (``{"type": "auto"}``: a container made or reused for the
request), the ``code_interpreter_call`` item."""
FILE_SEARCH_DOCS = "https://developers.openai.com/api/docs/guides/tools-file-search"
"""OpenAI's file search guide: the ``file_search`` tool (``vector_store_ids``,
``max_num_results``), the ``file_search_call`` item."""
SERVER_TOOL_INCLUDES: dict[type[Any], str] = {
    WebSearch: "web_search_call.action.sources",
    CodeExecution: "code_interpreter_call.outputs",
}
"""The ``include`` entry asked for with each hosted tool
(https://platform.openai.com/docs/api-reference/responses/create, ``include``):
a web search's sources (the URLs it read, kept on the item for the reader)
and what the code printed (the outputs go back with the item, so the model
still sees them in later steps of a stateless conversation). A file
search's ``file_search_call.results`` is not asked for: the passages found
are long, and would be billed again as input at every later step; the
citations name the files."""


def server_tool_json(tool: ServerTool) -> dict[str, Any]:
    """The ``tools`` entry of a hosted tool, for ``Request.server_tools``.

    * :class:`~agentcore.server_tools.WebSearch` -> ``{"type": "web_search"}``
      with ``filters: {"allowed_domains": [...]}`` and ``user_location:
      {"type": "approximate", city, region, country, timezone}`` when set
      (:data:`WEB_SEARCH_DOCS`). The tool has no limit on the number of
      searches and no blocked domains: ``max_uses`` and ``blocked_domains``
      are a :class:`ConfigError`.
    * :class:`~agentcore.server_tools.CodeExecution` -> ``{"type":
      "code_interpreter", "container": {"type": "auto"}}``
      (:data:`CODE_INTERPRETER_DOCS`).
    * :class:`~agentcore.server_tools.FileSearch` -> ``{"type":
      "file_search", "vector_store_ids": [...]}``, with ``max_num_results``
      when set (:data:`FILE_SEARCH_DOCS`).
    * :class:`~agentcore.server_tools.WebFetch`: the Responses API has no
      such tool (its hosted tools, in the API reference's ``tools``: web
      search, file search, code interpreter, computer use, image generation,
      remote MCP): a :class:`ConfigError`.

    Raises:
        ConfigError: a tool or a field the API does not have, naming it and
            :data:`ADAPTER`.
    """
    if isinstance(tool, WebSearch):
        for field in ("max_uses", "blocked_domains"):
            if getattr(tool, field) is not None:
                raise ConfigError(
                    f"WebSearch.{field} has no field in the Responses API's web_search tool "
                    f"({WEB_SEARCH_DOCS}): {ADAPTER} cannot send it; leave it None"
                )
        entry: dict[str, Any] = {"type": "web_search"}
        if tool.allowed_domains is not None:
            entry["filters"] = {"allowed_domains": list(tool.allowed_domains)}
        if tool.user_location is not None:
            entry["user_location"] = {"type": "approximate", **tool.user_location.fields()}
        return entry
    if isinstance(tool, CodeExecution):
        return {"type": "code_interpreter", "container": {"type": "auto"}}
    if isinstance(tool, FileSearch):
        entry = {"type": "file_search", "vector_store_ids": list(tool.vector_store_ids)}
        if tool.max_num_results is not None:
            entry["max_num_results"] = tool.max_num_results
        return entry
    raise ConfigError(
        f"{type(tool).__name__} ({tool.name}): the Responses API has no such hosted tool, so {ADAPTER} "
        "cannot ask for it (it has web_search, file_search and code_interpreter: WebSearch, FileSearch, "
        "CodeExecution)"
    )


# --- settings -------------------------------------------------------------------


def check_settings(settings: ModelSettings, *, reasoning: bool) -> None:
    """Raise :class:`ConfigError` for settings the API cannot take.

    ``stop_sequences``, ``seed``, ``thinking`` and ``thinking_budget`` have no
    field in the Responses API (thinking is asked for with
    ``reasoning_effort``); ``reasoning_effort`` must be one of
    :data:`EFFORTS`, and is refused with ``reasoning=False`` (a model
    without reasoning answers 400 to ``reasoning.effort``).
    """
    supported = set(SETTINGS)
    api = _API
    if not reasoning:
        supported.discard("reasoning_effort")
        api += " with reasoning=False"
    unsupported(settings, supported, api)
    effort = settings.reasoning_effort
    if effort is not None and effort not in EFFORTS:
        raise ConfigError(
            f"ModelSettings.reasoning_effort {effort!r} is not one of the values {_API} documents "
            f"({', '.join(EFFORTS)})"
        )


def _tool_choice(choice: str, tools: Sequence[ToolDefinition]) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    if choice not in {tool.name for tool in tools}:
        raise ConfigError(
            f"ModelSettings.tool_choice names the tool {choice!r}, which the request does not hold"
        )
    return {"type": "function", "name": choice}


def settings_fields(settings: ModelSettings, tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The request body fields for ``settings`` (``extra_body`` and
    ``reasoning_effort``, which goes into ``reasoning``, aside):
    ``temperature``, ``top_p`` and ``parallel_tool_calls`` as they are,
    ``tool_choice`` (a tool's name as ``{"type": "function", "name"}``),
    the cache fields (:func:`agentcore.providers.openai.shared.cache_fields`)
    and ``compaction_trigger`` as ``context_management: [{"type":
    "compaction", "compact_threshold": N}]`` (server-side compaction,
    the compaction guide;
    https://platform.openai.com/docs/api-reference/responses/create).

    Raises:
        ConfigError: a ``tool_choice`` naming a tool the request does not hold.
    """
    out: dict[str, Any] = cache_fields(settings)
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.top_p is not None:
        out["top_p"] = settings.top_p
    if settings.tool_choice is not None:
        out["tool_choice"] = _tool_choice(settings.tool_choice, tools)
    if settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.compaction_trigger is not None:
        out["context_management"] = [{"type": "compaction", "compact_threshold": settings.compaction_trigger}]
    return out


# --- input items ----------------------------------------------------------------


def _stored(text: str, index: int, what: str) -> dict[str, Any]:
    """The JSON object this adapter wrote into a part's ``provider_data``."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ConfigError(f"messages[{index}] holds {what} whose provider_data is not a JSON object")
    return value


def file_json(file: File, where: str) -> dict[str, Any]:
    """The content item of a file, in a user message or a ``function_call_output``.

    An image is ``{"type": "input_image", "image_url": ..., "detail": "auto"}``
    with a ``data:`` URL for bytes or the file's URL
    (https://developers.openai.com/api/docs/guides/images-vision); any other
    file is ``{"type": "input_file", "filename": ..., "file_data": <data:
    URL>}`` or ``{"type": "input_file", "file_url": ...}``
    (https://developers.openai.com/api/docs/guides/file-inputs); the file name
    defaults to ``file`` with the type's extension.

    Raises:
        ConfigError: a media type not in :data:`FILE_TYPES`, or a file over
            :data:`agentcore.providers.attachments.OPENAI_MAX_BYTES`.
    """
    attachments.check_type(file, where, FILE_TYPES, _API)
    attachments.check_size(file, where, attachments.OPENAI_MAX_BYTES, _API)
    if file.media_type in attachments.IMAGE_TYPES:
        return {"type": "input_image", "image_url": file.url or attachments.data_url(file), "detail": "auto"}
    if file.url:
        return {"type": "input_file", "file_url": file.url}
    return {
        "type": "input_file",
        "filename": attachments.filename(file),
        "file_data": attachments.data_url(file),
    }


def _result_item(result: ToolResult, index: int) -> dict[str, Any]:
    output = marked_error(result)  # no error flag in the API
    item: dict[str, Any] = {"type": "function_call_output", "call_id": result.tool_call_id, "output": output}
    if result.files:  # text, image or file output (the API reference's function_call_output)
        where = attachments.place(index, result)
        text = [{"type": "input_text", "text": output}] if output else []
        item["output"] = text + [file_json(file, where) for file in result.files]
    return item


def _reasoning_item(reasoning: Reasoning, index: int, origin: str, store: bool) -> dict[str, Any] | None:
    """The ``reasoning`` input item, or None when it cannot go to this server."""
    if reasoning.format != FORMAT or reasoning.origin != origin:
        return None  # encrypted content only its issuer can verify: foreign reasoning is dropped
    stored = _stored(reasoning.provider_data, index, "a reasoning part")
    content = stored.get("content")
    if not (reasoning.data or content or (store and reasoning.id)):
        return None  # with store false the server keeps nothing to look the id up in
    item: dict[str, Any] = {"type": "reasoning"}
    if reasoning.id:
        item["id"] = reasoning.id
    item["summary"] = stored.get("summary", [])
    if content:
        item["content"] = content
    if reasoning.data:
        item["encrypted_content"] = reasoning.data
    return item


def item_json(item: ProviderItem, origin: str) -> dict[str, Any] | None:
    """The input item a provider item goes back as, or None when it is not sent.

    A ``compaction`` item goes back in the next request's ``input`` where it
    was produced (after the output items before it), as the server returned
    it: its ``id`` and ``encrypted_content`` unchanged (the compaction guide,
    "stateless input-array chaining"); only the server that made it can read
    it, so an item of another ``format`` or ``origin`` is not sent.

    A hosted tool's ``web_search_call``, ``file_search_call`` or
    ``code_interpreter_call`` item goes back the same way: in place, with
    its ``id`` and every field as the server sent them (the API takes these
    output items as input items, by id, in the API reference's ``input``;
    the client never sends an output of its own for them).
    """
    if item.format != FORMAT or item.origin != origin:
        return None
    value: dict[str, Any] = json.loads(item.data)
    return value


def _call_item(call: ToolCall, index: int, origin: str, with_item_id: bool) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.input,
    }
    if with_item_id and call.origin == origin:
        item_id = _stored(call.provider_data, index, "a tool call").get("id")
        if isinstance(item_id, str) and item_id:
            item["id"] = item_id
    return item


def _assistant_items(message: Message, index: int, origin: str, store: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    dropped = False
    for part in message.content:
        if part.reasoning is not None:
            item = _reasoning_item(part.reasoning, index, origin, store)
            dropped = dropped or item is None
            if item is not None:
                items.append(item)
        elif part.tool_call is not None:
            # An fc_ item id tells the API which reasoning item the call needs:
            # sent only when that reasoning is sent too.
            items.append(_call_item(part.tool_call, index, origin, not dropped))
        elif part.provider_item is not None:
            kept = item_json(part.provider_item, origin)
            if kept is not None:
                items.append(kept)
        elif part.text:
            items.append({"type": "message", "role": "assistant", "content": part.text})
    while items and items[-1]["type"] == "reasoning":
        items.pop()  # reasoning with nothing after it (a cut response): the API refuses it
    return items


def _message_items(message: Message, index: int, origin: str, store: bool) -> list[dict[str, Any]]:
    """One history message as input items: its tool results (whatever the
    role), then the user message or the assistant's items in order. Text in a
    ``tool``-role message has no place in the API and is left out."""
    items = [_result_item(result, index) for result in message.tool_results]
    if message.role is Role.ASSISTANT:
        items += _assistant_items(message, index, origin, store)
    elif message.role is Role.USER and message.files:
        content = [{"type": "input_text", "text": message.text}] if message.text else []
        content += [file_json(file, attachments.place(index)) for file in message.files]
        items.append({"type": "message", "role": "user", "content": content})
    elif message.role is Role.USER and (message.text or not items):
        items.append({"type": "message", "role": "user", "content": message.text})
    return items


def chain_point(messages: Sequence[Message], origin: str) -> tuple[str, int]:
    """``(response_id, index)`` of the latest assistant message whose tool
    calls carry the id of the response that produced them (``origin``'s),
    or ``("", -1)``: where a request with server-side state continues."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is not Role.ASSISTANT:
            continue
        for call in message.tool_calls:
            if call.origin == origin:
                response_id = _stored(call.provider_data, index, "a tool call").get("response_id")
                if isinstance(response_id, str) and response_id:
                    return response_id, index
    return "", -1


def request_body(
    request: Request,
    model_id: str,
    *,
    settings: ModelSettings | None = None,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    sent: list[Any] | None = None,
    system_role: str = "instructions",
    reasoning: bool = True,
    reasoning_summary: str | None = "auto",
    server_state: bool = False,
) -> dict[str, Any]:
    """The JSON body of one streamed Responses API request.

    Follows https://platform.openai.com/docs/api-reference/responses/create:

    * ``store`` is ``server_state``; with ``reasoning``, ``include:
      ["reasoning.encrypted_content"]`` and ``reasoning: {"summary":
      reasoning_summary, "effort": settings.reasoning_effort}`` (each only
      when set). Without ``reasoning`` neither is sent: models without
      reasoning answer 400 to both.
    * The system prompt is ``instructions``, or the first input item as a
      ``developer`` message (``system_role="developer"``).
    * ``input``: user messages as ``{"type": "message", "role": "user",
      "content": text}``, or with files a list of an ``input_text`` item
      then the files' items (:func:`file_json`); an assistant message as its
      parts in order: text as an assistant message, reasoning as a
      ``reasoning`` item (``id``,
      ``summary`` and ``content`` as received, ``encrypted_content``), tool
      calls as ``function_call`` items (``call_id``, ``name``, the
      ``arguments`` text as the model sent it, and the ``fc_`` item ``id``
      when its reasoning goes too); tool results as
      ``function_call_output`` items (an error result's output starts with
      ``"Error: "``, as the API has no error flag; a result with files has
      an ``output`` list: an ``input_text`` item, then the files' items).
    * Reasoning goes back only to the ``format`` and ``origin`` that produced
      it, and with ``store`` false only when it carries encrypted content or
      raw reasoning content; otherwise it is left out, and so are the ``fc_``
      item ids of the calls after it in that message (the API refuses a call
      item whose reasoning is missing). A reasoning item with nothing after
      it in its message (a response cut while reasoning) is left out too.
    * A provider item (a ``compaction`` item, a hosted tool's call item)
      goes back in place, unchanged, to the ``format`` and ``origin`` that
      made it (:func:`item_json`); another's (an Anthropic server-tool
      block) is left out, with a line at INFO.
    * With ``server_state``, when the history holds the id of a response the
      server stored (:func:`chain_point`), ``previous_response_id`` names it
      and only the messages after it are sent.
    * ``tools``: function tools, ``strict`` per :func:`strict_schema`, then
      the hosted tools of ``request.server_tools`` (:func:`server_tool_json`),
      each adding its ``include`` entry (:data:`SERVER_TOOL_INCLUDES`);
      ``request.output`` as ``text: {"format": {"type": "json_schema",
      ...}}`` (:func:`json_schema_format`);
      ``max_output_tokens`` when ``request.max_output_tokens`` is set;
      temperature, top_p, tool_choice (a tool name as ``{"type":
      "function", "name"}``), parallel_tool_calls, ``prompt_cache_key`` and
      ``prompt_cache_retention``
      (:func:`cache_fields`) from ``settings``;
      ``extra_body``, then ``settings.extra_body``, merged in last.

    Args:
        request: the step's request.
        model_id: the model id sent as ``model``.
        settings: the adapter's settings (``request.settings`` override them).
        extra_body: the adapter's fields merged into the body.
        origin: the server's origin (:func:`agentcore.providers.config.origin`).
        sent: when given, gets the input items sent for each message of
            ``request.messages`` appended, one list per message (None for a
            message not sent, before ``previous_response_id``; for
            :func:`agentcore.providers.digests.fingerprint`).
        system_role: ``"instructions"`` or ``"developer"``.
        reasoning: whether the model reasons (asks for encrypted reasoning
            and summaries).
        reasoning_summary: ``"auto"``, ``"concise"``, ``"detailed"``, or None
            to ask for no summary.
        server_state: use the server's stored state (``store: true``).

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: a history the API refuses (see
            :func:`agentcore.history.check_history`; a file part
            outside a user message; a file :func:`file_json` refuses), a setting the
            API does not take (:func:`check_settings`), a ``tool_choice``
            naming a tool the request does not hold, ``provider_data``
            that is not the JSON this adapter wrote, a server tool the API
            does not have (:func:`server_tool_json`), or a function tool
            named as a server tool of the request.
    """
    settings = (settings or ModelSettings()).merged(request.settings)
    check_history(request.messages)
    attachments.check_places(request.messages)
    check_settings(settings, reasoning=reasoning)
    hosted = [server_tool_json(tool) for tool in request.server_tools]
    check_server_names(request.server_tools, (tool.name for tool in request.tools))
    messages: Sequence[Message] = request.messages
    body: dict[str, Any] = {"model": model_id, "stream": True, "store": server_state}
    start = 0
    if server_state:
        response_id, index = chain_point(messages, origin)
        if response_id:
            body["previous_response_id"] = response_id
            start = index + 1
    items: list[dict[str, Any]] = []
    if request.system:
        if system_role == "instructions":
            body["instructions"] = request.system
        else:
            items.append({"type": "message", "role": "developer", "content": request.system})
    per_message: list[list[dict[str, Any]] | None] = [None] * start
    log_foreign_items(messages[start:], FORMAT, origin, start=start)
    for index in range(start, len(messages)):
        entries = _message_items(messages[index], index, origin, server_state)
        items += entries
        per_message.append(entries)
    if sent is not None:
        sent.extend(per_message)
    body["input"] = items
    include = [ENCRYPTED_CONTENT] if reasoning else []
    for tool in request.server_tools:
        if type(tool) in SERVER_TOOL_INCLUDES:
            include.append(SERVER_TOOL_INCLUDES[type(tool)])
    if include:
        body["include"] = include
    if reasoning:
        config: dict[str, Any] = {}
        if settings.reasoning_effort is not None:
            config["effort"] = settings.reasoning_effort
        if reasoning_summary is not None:
            config["summary"] = reasoning_summary
        if config:
            body["reasoning"] = config
    if request.tools or hosted:
        body["tools"] = [_tool_json(tool) for tool in request.tools] + hosted
    if request.output is not None:
        body["text"] = {"format": {"type": "json_schema", **json_schema_format(request.output)}}
    if request.max_output_tokens:
        body["max_output_tokens"] = request.max_output_tokens
    body.update(settings_fields(settings, request.tools))
    body.update(extra_body or {})
    body.update(settings.extra_body or {})
    return body


COUNT_DOCS = "https://developers.openai.com/api/docs/guides/token-counting"
"""OpenAI's guide to ``POST /v1/responses/input_tokens``: it "accepts the same
input format as the Responses API" and answers ``{"object":
"response.input_tokens", "input_tokens": N}``; its reference is
https://developers.openai.com/api/reference/python/resources/responses/subresources/input_tokens/methods/count."""
COUNT_FIELDS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "previous_response_id",
        "conversation",
        "reasoning",
        "text",
        "truncation",
    }
)
"""The body fields ``POST /v1/responses/input_tokens`` takes (:data:`COUNT_DOCS`)."""


COMPACT_FIELDS = frozenset({"model", "input", "instructions", "prompt_cache_key", "prompt_cache_retention"})
"""The body fields ``POST /v1/responses/compact`` takes that a stateless
history uses (https://platform.openai.com/docs/api-reference/responses/compact;
``previous_response_id`` is the other)."""


def compact_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``POST {base_url}/responses/compact`` for the history whose
    step body :func:`request_body` made: its model, input items, instructions
    and prompt-cache fields (:data:`COMPACT_FIELDS`), without ``stream`` (the
    endpoint answers one JSON document) and what else a step sends (tools,
    sampling, ``store``, ``include``, ``context_management``).
    """
    return {name: value for name, value in body.items() if name in COMPACT_FIELDS}


def count_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``POST {base_url}/responses/input_tokens`` for the step whose
    body :func:`request_body` made: its fields the endpoint takes
    (:data:`COUNT_FIELDS`: the same model, input items, instructions, tools,
    tool choice, reasoning configuration, output format and
    ``previous_response_id``), without what it refuses (``stream``,
    ``store``, ``include``, ``max_output_tokens``, the sampling settings,
    the prompt-cache fields, and any other field of the ``extra_body``).
    """
    return {name: value for name, value in body.items() if name in COUNT_FIELDS}
