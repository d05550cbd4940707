"""Pure mapping for the OpenAI Responses API: the request body and the stream.

No I/O here: :func:`request_body` builds the JSON body of one streamed
``POST {base_url}/responses``, :class:`ResponseState` turns the decoded
stream events into parts, and :func:`usage_from`, :func:`map_finish`,
:func:`error_event` and :func:`failed_response` are small functions tested
table by table. ``agentcore.providers.openai.OpenAIResponsesModel`` is the HTTP shell.

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
  (:func:`strict_schema`).
* Files (:func:`file_item`): images as ``input_image``, other documents as
  ``input_file``, in user messages and in ``function_call_output`` items.

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
* Only ``function_call`` items are tool calls: built-in tool items (web
  search, file search, code interpreter, MCP, image generation) and other
  client tool kinds (custom tools, shell, apply-patch) are passed over.
* Usage may be missing or zero: it is read from the terminal response only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers import attachments
from agentcore.providers.history import check_history, marked_error
from agentcore.providers.openai_stream import stream_error, synthesize_id
from agentcore.providers.openai_stream import usage_from as chat_usage_from
from agentcore.settings import ModelSettings, unsupported
from agentcore.transport.sse import DONE, Event
from agentcore.types import (
    File,
    FinishReason,
    Message,
    OutputSchema,
    Reasoning,
    Request,
    Role,
    StreamPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)

FORMAT = "openai-responses"
""":attr:`agentcore.Reasoning.format` of the reasoning this adapter reads and writes."""
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
_SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning_effort",
        "cache_key",
        "cache_retention",
    }
)
"""The ModelSettings fields the body maps (``extra_body`` is merged last);
the API has no ``stop`` and no ``seed``, thinking is asked for with
``reasoning_effort``, and caching is automatic (``cache``, ``cache_ttl``,
``cache_system`` and ``cache_tools`` have no field)."""


# --- request: tools ----------------------------------------------------------

_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "$defs",
        "definitions",
        "$ref",
        "pattern",
        "format",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "minItems",
        "maxItems",
    }
)
_STRICT_MAX_DEPTH = 10
_STRICT_MAX_PROPERTIES = 5000
_STRICT_MAX_LEVELS = 50
"""Schemas nested deeper than this (arrays and unions count too) are not
walked: not strict, and no recursion limit is reached."""


def strict_schema(schema: Any) -> bool:
    """Whether a tool's parameters qualify for strict mode exactly as written.

    The rules of https://platform.openai.com/docs/guides/structured-outputs
    ("Supported schemas"), which strict function calling follows
    (https://platform.openai.com/docs/guides/function-calling, "Strict mode"):
    the root is an object (not ``anyOf``); every object sets
    ``additionalProperties: false`` and lists all of its ``properties`` in
    ``required``; only the supported keywords appear (``type``,
    ``properties``, ``required``, ``additionalProperties``, ``items``,
    ``enum``, ``const``, ``anyOf``, ``description``, ``title``, ``$defs``,
    ``definitions``, a ``$ref`` standing alone, ``pattern``, ``format``,
    ``multipleOf``, ``maximum``, ``exclusiveMaximum``, ``minimum``,
    ``exclusiveMinimum``, ``minItems``, ``maxItems``), and every schema
    states a ``type`` (or ``enum``, ``const``, ``anyOf``, ``$ref``); at most
    10 levels of object nesting and 5000 properties in all.

    A schema is never rewritten to qualify (adding ``required`` or closing an
    object changes what the tool accepts): one that does not is sent with
    ``strict: false``, as before.
    """
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    counted: list[int] = [0]
    return _strict_node(schema, 0, 0, counted) and counted[0] <= _STRICT_MAX_PROPERTIES


def _strict_node(node: Any, depth: int, levels: int, counted: list[int]) -> bool:
    """``node`` qualifies; ``depth`` counts enclosing objects, ``levels``
    enclosing schemas of any kind, ``counted`` the properties seen so far."""
    if not isinstance(node, dict) or depth > _STRICT_MAX_DEPTH or levels > _STRICT_MAX_LEVELS:
        return False
    if not node.keys() <= _STRICT_KEYWORDS:
        return False
    if "$ref" in node and len(node) > 1:
        return False
    if not node.keys() & {"type", "enum", "const", "anyOf", "$ref"}:
        return False  # every schema says what it holds
    children: list[Any] = []
    types = node.get("type")
    properties = node.get("properties")
    if properties is not None or types == "object" or (isinstance(types, list) and "object" in types):
        required = node.get("required", [])
        if (
            not isinstance(properties, dict)
            or node.get("additionalProperties") is not False
            or not isinstance(required, list)
            or sorted(map(str, required)) != sorted(properties)
        ):
            return False
        counted[0] += len(properties)
        depth += 1
        children += properties.values()
    if "items" in node:
        children.append(node["items"])
    if "anyOf" in node:
        if not isinstance(node["anyOf"], list):
            return False
        children += node["anyOf"]
    for key in ("$defs", "definitions"):
        if key in node:
            if not isinstance(node[key], dict):
                return False
            children += node[key].values()
    return all(_strict_node(child, depth, levels + 1, counted) for child in children)


def json_schema_format(output: OutputSchema) -> dict[str, Any]:
    """``{"name", "schema", "strict"}``: a structured output's JSON schema, as
    Chat Completions' ``response_format.json_schema`` and the Responses
    API's ``text.format`` both take it
    (https://platform.openai.com/docs/guides/structured-outputs;
    https://platform.openai.com/docs/api-reference/chat/create,
    ``response_format``; https://platform.openai.com/docs/api-reference/responses/create,
    ``text.format``). ``strict`` is :func:`strict_schema`'s verdict: a
    schema is never rewritten to qualify; one that does not is sent with
    ``strict: false``, and the loop checks the answer itself.
    """
    schema = json.loads(output.schema)
    return {"name": output.name, "schema": schema, "strict": strict_schema(schema)}


def _tool_json(tool: ToolDefinition) -> dict[str, Any]:
    schema = json.loads(tool.input_schema)
    entry: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        entry["description"] = tool.description
    entry["parameters"] = schema
    entry["strict"] = strict_schema(schema)
    return entry


# --- request: settings -------------------------------------------------------


def check_settings(settings: ModelSettings, *, reasoning: bool) -> None:
    """Raise :class:`ConfigError` for settings the API cannot take.

    ``stop_sequences``, ``seed``, ``thinking`` and ``thinking_budget`` have no
    field in the Responses API (thinking is asked for with
    ``reasoning_effort``); ``reasoning_effort`` must be one of
    :data:`EFFORTS`, and is refused with ``reasoning=False`` (a model
    without reasoning answers 400 to ``reasoning.effort``).
    """
    supported = set(_SETTINGS) | {"extra_body"}
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


def cache_fields(settings: ModelSettings) -> dict[str, Any]:
    """``prompt_cache_key`` and ``prompt_cache_retention`` from
    ``settings.cache_key`` and ``settings.cache_retention`` (each when set), the
    fields of both Chat Completions and the Responses API (https://developers.openai.com/api/docs/guides/prompt-caching:
    the key is combined with the prefix hash to route requests that share
    a prefix to the same cache; the retention is ``"in_memory"`` or ``"24h"``)."""
    fields: dict[str, Any] = {}
    if settings.cache_key is not None:
        fields["prompt_cache_key"] = settings.cache_key
    if settings.cache_retention is not None:
        fields["prompt_cache_retention"] = settings.cache_retention
    return fields


def _settings_fields(settings: ModelSettings, tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    out: dict[str, Any] = cache_fields(settings)
    if settings.temperature is not None:
        out["temperature"] = settings.temperature
    if settings.top_p is not None:
        out["top_p"] = settings.top_p
    if settings.tool_choice is not None:
        out["tool_choice"] = _tool_choice(settings.tool_choice, tools)
    if settings.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = settings.parallel_tool_calls
    return out


# --- request: input items ----------------------------------------------------


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


def file_item(file: File, where: str) -> dict[str, Any]:
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
        item["output"] = text + [file_item(file, where) for file in result.files]
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
        content += [file_item(file, attachments.place(index)) for file in message.files]
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
    model: str,
    request: Request,
    *,
    origin: str,
    settings: ModelSettings | None = None,
    system_role: str = "instructions",
    reasoning: bool = True,
    reasoning_summary: str | None = "auto",
    server_state: bool = False,
    extra_body: Mapping[str, Any] | None = None,
    sent: list[Any] | None = None,
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
      then the files' items (:func:`file_item`); an assistant message as its
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
    * With ``server_state``, when the history holds the id of a response the
      server stored (:func:`chain_point`), ``previous_response_id`` names it
      and only the messages after it are sent.
    * ``tools``: function tools, ``strict`` per :func:`strict_schema`;
      ``request.output`` as ``text: {"format": {"type": "json_schema",
      ...}}`` (:func:`json_schema_format`);
      ``max_output_tokens`` when ``request.max_output_tokens`` is set;
      temperature, top_p, tool_choice (a tool name as ``{"type":
      "function", "name"}``), parallel_tool_calls, ``prompt_cache_key`` and
      ``prompt_cache_retention``
      (:func:`cache_fields`) from ``settings``;
      ``extra_body``, then ``settings.extra_body``, merged in last.

    Args:
        model: the model id sent as ``model``.
        request: the step's request.
        origin: the server's origin (:func:`agentcore.providers.config.origin`).
        settings: the merged settings of the request (adapter's, then the run's).
        system_role: ``"instructions"`` or ``"developer"``.
        reasoning: whether the model reasons (asks for encrypted reasoning
            and summaries).
        reasoning_summary: ``"auto"``, ``"concise"``, ``"detailed"``, or None
            to ask for no summary.
        server_state: use the server's stored state (``store: true``).
        extra_body: the adapter's fields merged into the body.
        sent: when given, gets the input items sent for each message of
            ``request.messages`` appended, one list per message (None for a
            message not sent, before ``previous_response_id``; for
            :func:`agentcore.providers.caching.fingerprint`).

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: a history the API refuses (see
            :func:`agentcore.providers.history.check_history`; a file part
            outside a user message; a file :func:`file_item` refuses), a setting the
            API does not take (:func:`check_settings`), a ``tool_choice``
            naming a tool the request does not hold, or ``provider_data``
            that is not the JSON this adapter wrote.
    """
    settings = settings or ModelSettings()
    check_history(request.messages)
    attachments.check_places(request.messages)
    check_settings(settings, reasoning=reasoning)
    messages: Sequence[Message] = request.messages
    body: dict[str, Any] = {"model": model, "stream": True, "store": server_state}
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
    for index in range(start, len(messages)):
        entries = _message_items(messages[index], index, origin, server_state)
        items += entries
        per_message.append(entries)
    if sent is not None:
        sent.extend(per_message)
    body["input"] = items
    if reasoning:
        body["include"] = [ENCRYPTED_CONTENT]
        config: dict[str, Any] = {}
        if settings.reasoning_effort is not None:
            config["effort"] = settings.reasoning_effort
        if reasoning_summary is not None:
            config["summary"] = reasoning_summary
        if config:
            body["reasoning"] = config
    if request.tools:
        body["tools"] = [_tool_json(tool) for tool in request.tools]
    if request.output is not None:
        body["text"] = {"format": {"type": "json_schema", **json_schema_format(request.output)}}
    if request.max_output_tokens:
        body["max_output_tokens"] = request.max_output_tokens
    body.update(_settings_fields(settings, request.tools))
    body.update(extra_body or {})
    body.update(settings.extra_body or {})
    return body


# --- stream: usage, finish, errors -------------------------------------------


def usage_from(usage: Any) -> Usage:
    """Normalize a Responses ``usage`` object.

    ``input = input_tokens`` (which include the cached tokens, per
    https://platform.openai.com/docs/api-reference/responses/object) minus
    ``input_tokens_details.cache_write_tokens`` where a server reports cache
    writes (Amazon Bedrock); ``cache_read = input_tokens_details.cached_tokens``;
    ``output = output_tokens`` (reasoning tokens included). Missing, null or
    non-numeric fields count as 0: the same reading as Chat Completions usage
    under other names, so it is that function's.
    """
    if not isinstance(usage, Mapping):
        return Usage()
    return chat_usage_from(
        {
            "prompt_tokens": usage.get("input_tokens"),
            "completion_tokens": usage.get("output_tokens"),
            "prompt_tokens_details": usage.get("input_tokens_details"),
        }
    )


def map_finish(response: Mapping[str, Any], incomplete: bool, has_tool_calls: bool) -> FinishReason:
    """The step's :class:`FinishReason` from the terminal response.

    ``response.completed`` (https://platform.openai.com/docs/api-reference/responses-streaming):
    tool-calls when the response holds a function call, else stop.
    ``response.incomplete`` (or a response whose ``status`` is
    ``incomplete``), by ``incomplete_details.reason``: ``max_output_tokens``
    -> length; ``content_filter`` -> as completed (the output was cut by the
    provider's filter; what came is the answer, as for Chat Completions'
    ``content_filter``); any other reason -> length.
    """
    if incomplete or response.get("status") == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        if reason != "content_filter":
            return FinishReason.LENGTH
    return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP


def error_event(data: Mapping[str, Any]) -> ModelError:
    """A :class:`ModelError` for an ``error`` event.

    The documented shape is ``{"type": "error", "code", "message", "param"}``;
    servers also nest it as ``{"type": "error", "error": {"type", "code",
    "message"}}``. Classified as errors in a Chat Completions stream are
    (:func:`agentcore.providers.openai_stream.stream_error`): a numeric
    status code by the status, else by the code and type words
    (``rate_limit_exceeded`` rate-limited, overloaded words overloaded,
    ``insufficient_quota`` and ``server_error`` upstream, which is terminal).
    """
    inner = data.get("error")
    if not isinstance(inner, Mapping):
        inner = {key: data[key] for key in ("code", "message") if key in data}
    return stream_error({"error": inner}, fallback="the server sent an error event")


def failed_response(response: Any) -> ModelError:
    """A :class:`ModelError` for ``response.failed``: its ``response.error``
    (``{"code", "message"}``) classified as :func:`error_event` does."""
    error = response.get("error") if isinstance(response, Mapping) else None
    return stream_error(
        {"error": error if isinstance(error, Mapping) else {}}, fallback="the response failed"
    )


# --- stream: the state machine -----------------------------------------------


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _compact(value: Any) -> str:
    """``value`` as compact JSON text; it came from a decoded event, so only
    depth can fail (the decoder's limit, reached again a few frames deeper)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError as exc:
        message = "an output item in the stream is nested too deeply to keep"
        raise ModelError(ErrorClass.UPSTREAM, err=exc, message=message) from exc


def _texts(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(_text(part.get("text")) for part in parts if isinstance(part, Mapping))


class _Item:
    """One output item as its events arrive."""

    __slots__ = ("added", "arguments", "fragments", "reasoning")

    def __init__(self, added: Mapping[str, Any]) -> None:
        self.added = added
        self.fragments: list[str] = []
        self.reasoning: list[str] = []
        self.arguments = ""
        """From ``response.function_call_arguments.done``."""


_EMPTY: Mapping[str, Any] = {}
_REASONING_DELTAS = frozenset({"response.reasoning_summary_text.delta", "response.reasoning_text.delta"})
_TEXT_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})
_STARTS = frozenset({"response.created", "response.in_progress", "response.queued"})


class ResponseState:
    """The state of one streamed response, fed one decoded SSE event at a time.

    Usage::

        state = ResponseState(origin)
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

    The parts (module docstring): ``text-delta`` for output text and refusal
    deltas; ``reasoning-delta`` for summary and raw reasoning deltas; a
    ``reasoning`` part per reasoning item (``text``: its summary or raw
    reasoning text; ``id``: the item id; ``data``: ``encrypted_content``;
    ``provider_data``: JSON ``{"summary": [...]}`` with the item's
    ``summary`` list as received, plus ``"content"`` when the item carries
    raw reasoning content); a ``tool-call`` part per function call
    (``provider_data``: JSON ``{"id": fc item id}``, plus ``"response_id"``
    when ``stored``).
    """

    def __init__(
        self, origin: str = "", *, stored: bool = False, new_id: Callable[[], str] = synthesize_id
    ) -> None:
        self._origin = origin
        self._stored = stored
        self._new_id = new_id
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

    def feed(self, event: Event) -> list[StreamPart]:
        """Take one event; return the parts it completes.

        Raises:
            ModelError: an ``error`` event or ``response.failed``.
        """
        data = event.data
        if data == DONE:
            self.done = True
            return []
        if not isinstance(data, Mapping):
            return []
        kind = data.get("type")
        if not isinstance(kind, str):
            kind = event.event
        if kind in _TEXT_DELTAS:
            delta = _text(data.get("delta"))
            return [StreamPart.text_delta(delta)] if delta else []
        if kind in _REASONING_DELTAS:
            delta = _text(data.get("delta"))
            if not delta:
                return []
            self._item(data).reasoning.append(delta)
            return [StreamPart.reasoning_delta(delta)]
        if kind == "response.function_call_arguments.delta":
            self._item(data).fragments.append(_text(data.get("delta")))
        elif kind == "response.function_call_arguments.done":
            self._item(data).arguments = _text(data.get("arguments"))
        elif kind == "response.output_item.added":
            item = data.get("item")
            index = self._index(data, max(self._items, default=-1) + 1)
            self._items[index] = _Item(item if isinstance(item, Mapping) else _EMPTY)
            self._last = index
        elif kind == "response.output_item.done":
            item = data.get("item")
            return self._complete(self._index(data), item if isinstance(item, Mapping) else _EMPTY)
        elif kind in _STARTS:
            self._record_id(data.get("response"))
        elif kind in ("response.completed", "response.incomplete"):
            self.done = True
            self._incomplete = kind == "response.incomplete"
            return self._terminal(data.get("response"))
        elif kind == "response.failed":
            self.done = True
            raise failed_response(data.get("response"))
        elif kind == "error":
            self.done = True
            raise error_event(data)
        return []

    def parts(self, events: Iterable[Event], on_done: Callable[[], object]) -> Iterator[StreamPart]:
        """Feed ``events`` in order and yield their parts, until a terminal
        event, ``[DONE]`` or the end of ``events``; ``on_done()`` is called
        once a terminal event or ``[DONE]`` arrived. Then call :meth:`finish`.

        The same as :meth:`feed` per event, with a short path for an output
        text delta (the hot path: most events are one).

        Raises:
            ModelError: as :meth:`feed`; errors raised by ``events`` pass through.
        """
        text_delta = StreamPart.text_delta
        for event in events:
            data = event.data
            if type(data) is dict and data.get("type") == "response.output_text.delta":
                delta = data.get("delta")
                if type(delta) is str:
                    if delta:
                        yield text_delta(delta)
                    continue
            parts = self.feed(event)
            if self.done:
                on_done()
            yield from parts
            if self.done:
                return

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
        reason = map_finish(self._response, self._incomplete, self.calls > 0)
        return [StreamPart.step_finish(reason, usage_from(self._response.get("usage")))]

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

    def _terminal(self, response: Any) -> list[StreamPart]:
        if not isinstance(response, Mapping):
            response = _EMPTY
        self._record_id(response)
        self._response = response
        output = response.get("output")
        if not isinstance(output, list):
            output = []
        parts: list[StreamPart] = []
        for index in sorted(set(range(len(output))) | self._items.keys()):
            item = output[index] if index < len(output) else _EMPTY
            parts += self._complete(index, item if isinstance(item, Mapping) else _EMPTY)
        return parts

    def _complete(self, index: int, done: Mapping[str, Any]) -> list[StreamPart]:
        """The part of the output item at ``index``, now complete (once)."""
        if index in self._finished:
            return []
        self._finished.add(index)
        item = self._items.get(index) or _Item(_EMPTY)
        kind = done.get("type") or item.added.get("type")
        if kind == "reasoning":
            return [StreamPart.reasoning_part(self._reasoning(done, item))]
        if kind == "function_call":
            self.calls += 1
            return [StreamPart.tool_call_part(self._call(done, item))]
        return []

    def _reasoning(self, done: Mapping[str, Any], item: _Item) -> Reasoning:
        summary = done.get("summary")
        content = done.get("content")
        stored: dict[str, Any] = {"summary": summary if isinstance(summary, list) else []}
        if isinstance(content, list) and content:
            stored["content"] = content
        text = "".join(item.reasoning) or _texts(summary) + _texts(content)
        return Reasoning(
            text=text,
            data=_text(done.get("encrypted_content")) or _text(item.added.get("encrypted_content")),
            id=_text(done.get("id")) or _text(item.added.get("id")),
            format=FORMAT,
            origin=self._origin,
            provider_data=_compact(stored),
        )

    def _call(self, done: Mapping[str, Any], item: _Item) -> ToolCall:
        added = item.added
        arguments = (
            _text(done.get("arguments"))
            or item.arguments
            or "".join(item.fragments)
            or _text(added.get("arguments"))
        )
        stored = {"id": _text(done.get("id")) or _text(added.get("id"))}
        if self._stored:
            stored["response_id"] = self.response_id
        stored = {key: value for key, value in stored.items() if value}
        return ToolCall(
            id=_text(done.get("call_id")) or _text(added.get("call_id")) or self._new_id(),
            name=_text(done.get("name")) or _text(added.get("name")),
            input=arguments if arguments.strip() else "{}",
            provider_data=_compact(stored) if stored else "",
            origin=self._origin,
        )
