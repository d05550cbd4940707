"""What a Gemini API request sends: the pure request mapping of
:class:`agentcore.providers.gemini.GeminiModel` (no I/O).

The body is a ``GenerateContentRequest``
(https://ai.google.dev/api/generate-content#request-body): ``contents``
(the history, ``user`` and ``model`` turns of ``parts``),
``systemInstruction``, ``tools`` and ``toolConfig``, ``generationConfig``.

* **Turns.** A user message is a ``user`` content of a ``text`` part and its
  files (:func:`file_json`); an assistant message a ``model`` content whose
  parts keep the message's order (thoughts, text, function calls, kept
  parts); a tool message a ``user`` content of one ``functionResponse`` per
  result, in call order, then its files
  (https://ai.google.dev/gemini-api/docs/function-calling).
* **Function responses.** ``{"name", "response": {"output": text}}``, an
  error result ``{"error": text}``: the ``FunctionResponse`` reference says
  the ``output`` key holds the function's output and ``error`` its error
  (https://ai.google.dev/api/caching#FunctionResponse).
* **Tool call ids.** A ``functionCall`` with an ``id`` (Gemini 3 Flash gives
  one) keeps it as the call's id; one without (Gemini 2.5, Gemini 3 Pro) gets
  an id made here (``gemini-`` and 24 hex digits,
  :mod:`agentcore.providers.gemini.stream`). The id goes back in
  ``functionCall.id`` and ``functionResponse.id`` only when Gemini gave it:
  the API pairs calls and responses by id when it has them and by order
  otherwise, and an id it never issued is not sent to it.
* **Thought signatures** (https://ai.google.dev/gemini-api/docs/thought-signatures)
  go back exactly on the part they came on. A function call's is in its
  ``ToolCall.provider_data``; Gemini 3 refuses a function call of the current
  turn without it (400 ``INVALID_ARGUMENT``, "Function call is missing a
  thought_signature in functionCall parts"). Only the first call of parallel
  calls has one; a model turn whose calls carry none of Gemini's (another
  model made them, or another endpoint) gets the documented
  :data:`DUMMY_SIGNATURE` on its first call. A thought part's signature is
  on its reasoning block; a text part's is a reasoning block of its own,
  without text, just before the text (:func:`_model_parts` puts it back on
  the text part that follows it, or the last one before it when the turn's
  text ended; a turn without text drops it: the API requires text parts'
  signatures nowhere, and an empty text part may be refused).
* **Thoughts** (``thought: true`` parts, https://ai.google.dev/gemini-api/docs/thinking)
  go back as they came, ``{"text", "thought": true}`` with their signature,
  to the same origin. Reasoning from another provider is left out: Gemini
  cannot verify it, and its thoughts are not a field for plain text.
* **Kept parts.** A response part this mapping does not read (code
  execution, a server tool's call) is a provider item of type
  ``gemini-part`` holding the part's JSON, sent back in place, byte for byte,
  to the same origin (:data:`FORMAT`), and left out elsewhere with a line at
  INFO.
* **Tools** are ``functionDeclarations`` with ``parametersJsonSchema``, the
  field that takes JSON Schema as it is (``$ref``, ``anyOf``, ``enum``, ...),
  instead of ``parameters``, an OpenAPI subset that would need translating
  (https://ai.google.dev/api/caching#FunctionDeclaration). The schema must
  describe an object and a name must match :data:`NAME_PATTERN`; another is a
  :class:`ConfigError` naming the tool.
* **Server tools** (:mod:`agentcore.server_tools`) are Gemini's built-in
  tools, one ``Tool`` entry each after the function declarations
  (:func:`server_tool_json`): ``googleSearch``, ``urlContext``,
  ``codeExecution``, ``fileSearch``. With function tools beside them the
  request asks ``toolConfig.includeServerSideToolInvocations``, which
  combining the two needs (:data:`TOOL_COMBINATION_DOCS`); the built-in
  tools' ``toolCall`` and ``toolResponse`` parts then come back and go back
  as kept parts. An option the API has no field for is a
  :class:`ConfigError` before any request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ConfigError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.providers import attachments
from agentcore.providers.history import arguments_object, log_foreign_items, marked_error
from agentcore.server_tools import (
    CodeExecution,
    FileSearch,
    ServerTool,
    WebFetch,
    WebSearch,
    check_server_names,
)
from agentcore.settings import ModelSettings, unsupported
from agentcore.types import ContentPartKind, Message, Reasoning, Request, Role, ToolCall, ToolDefinition

FORMAT = "gemini"
"""The wire format this adapter stamps on its reasoning blocks and provider items."""
KEPT_PART = "gemini-part"
"""The ``ProviderItem.type`` of a response part kept and sent back as it came."""
DUMMY_SIGNATURE = "skip_thought_signature_validator"
"""The thought signature Gemini documents for function calls it did not make
(https://ai.google.dev/gemini-api/docs/thought-signatures, FAQ)."""
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
"""A function name the API takes: a letter or an underscore, then letters,
digits, underscores, dots, colons and dashes, 64 characters at most
(https://ai.google.dev/api/caching#FunctionDeclaration)."""
SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "stop_sequences",
        "seed",
        "tool_choice",
        "reasoning_effort",
        "thinking",
        "thinking_budget",
        "extra_body",
    }
)
"""The :class:`agentcore.ModelSettings` fields this adapter maps (:func:`settings_fields`)."""
THINKING_LEVELS = ("minimal", "low", "medium", "high")
"""The ``reasoning_effort`` values sent as ``thinkingConfig.thinkingLevel``
(Gemini 3, https://ai.google.dev/gemini-api/docs/thinking#thinking-levels)."""
FILE_TYPES = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
    attachments.PDF,
    "text/*",
    "audio/*",
    "video/*",
)
"""The media types sent as ``inlineData`` or ``fileData``
(https://ai.google.dev/gemini-api/docs/image-understanding,
https://ai.google.dev/gemini-api/docs/document-processing, the audio and
video pages)."""
INLINE_MAX_BYTES = 20 * attachments.MB
"""The largest file sent inline: a request of more than 20 MB needs the Files
API (https://ai.google.dev/gemini-api/docs/image-understanding, "Passing
images inline")."""
_API = "the Gemini API"


ADAPTER = "GeminiModel"
"""The adapter named in the errors of the server-tool mapping."""
GOOGLE_SEARCH_DOCS = "https://ai.google.dev/gemini-api/docs/google-search"
"""Grounding with Google Search: the ``googleSearch`` tool (no options the
request sets), the answer's ``groundingMetadata`` (``webSearchQueries``,
``groundingChunks``, ``groundingSupports``, ``searchEntryPoint``); Gemini 3
bills each search query the model runs."""
URL_CONTEXT_DOCS = "https://ai.google.dev/gemini-api/docs/url-context"
"""URL context: the ``urlContext`` tool reads the URLs the conversation
gives (up to 20 a request), ``urlContextMetadata.urlMetadata`` lists each
URL retrieved with its status."""
CODE_EXECUTION_DOCS = "https://ai.google.dev/gemini-api/docs/code-execution"
"""Code execution: the ``codeExecution`` tool, the ``executableCode`` and
``codeExecutionResult`` parts."""
FILE_SEARCH_DOCS = "https://ai.google.dev/gemini-api/docs/file-search"
"""File search: the ``fileSearch`` tool over File Search stores
(``fileSearchStoreNames``, each ``fileSearchStores/...``; ``topK``, the
number of chunks retrieved, https://ai.google.dev/api/caching#FileSearch),
the answer's ``groundingMetadata`` with ``retrievedContext`` chunks."""
TOOL_COMBINATION_DOCS = "https://ai.google.dev/gemini-api/docs/tool-combination"
"""Built-in tools with function calling in one request (Gemini 3):
``toolConfig.includeServerSideToolInvocations``, and the ``toolCall`` /
``toolResponse`` parts that must go back with the history."""
FILE_SEARCH_STORE_PREFIX = "fileSearchStores/"
"""The start of a File Search store's resource name (:data:`FILE_SEARCH_DOCS`)."""


def _refuse_fields(tool: ServerTool, names: Sequence[str], api_tool: str, docs: str) -> None:
    for name in names:
        if getattr(tool, name) is not None:
            raise ConfigError(
                f"{type(tool).__name__}.{name} has no field in the Gemini API's {api_tool} tool ({docs}): "
                f"{ADAPTER} cannot send it; leave it None"
            )


def server_tool_json(tool: ServerTool) -> dict[str, Any]:
    """The ``tools`` entry (a ``Tool``, https://ai.google.dev/api/caching#Tool)
    of a server tool.

    * :class:`~agentcore.server_tools.WebSearch` -> ``{"googleSearch": {}}``
      (:data:`GOOGLE_SEARCH_DOCS`). The tool takes no limit on searches, no
      domain lists and no place by name (the API's location is
      ``toolConfig.retrievalConfig.latLng``, coordinates): ``max_uses``,
      ``allowed_domains``, ``blocked_domains`` and ``user_location`` are a
      :class:`ConfigError`.
    * :class:`~agentcore.server_tools.WebFetch` -> ``{"urlContext": {}}``
      (:data:`URL_CONTEXT_DOCS`): the model reads the pages whose URLs the
      conversation holds, as Anthropic's web fetch does. ``max_uses`` and
      ``allowed_domains`` have no field: a :class:`ConfigError`.
    * :class:`~agentcore.server_tools.CodeExecution` -> ``{"codeExecution":
      {}}`` (:data:`CODE_EXECUTION_DOCS`).
    * :class:`~agentcore.server_tools.FileSearch` -> ``{"fileSearch":
      {"fileSearchStoreNames": [...], "topK": N}}`` (``topK`` from
      ``max_num_results``, when set; :data:`FILE_SEARCH_DOCS`). Gemini's File
      Search stores take the place of vector stores: each id must be a
      store's name, ``fileSearchStores/...``.

    Raises:
        ConfigError: a field the API does not have, or a ``FileSearch`` id
            that is no File Search store's name, naming it and :data:`ADAPTER`.
    """
    if isinstance(tool, WebSearch):
        options = ("max_uses", "allowed_domains", "blocked_domains", "user_location")
        _refuse_fields(tool, options, "googleSearch", GOOGLE_SEARCH_DOCS)
        return {"googleSearch": {}}
    if isinstance(tool, WebFetch):
        _refuse_fields(tool, ("max_uses", "allowed_domains"), "urlContext", URL_CONTEXT_DOCS)
        return {"urlContext": {}}
    if isinstance(tool, CodeExecution):
        return {"codeExecution": {}}
    if isinstance(tool, FileSearch):
        for name in tool.vector_store_ids:
            if not name.startswith(FILE_SEARCH_STORE_PREFIX):
                raise ConfigError(
                    f"FileSearch.vector_store_ids: {name!r} is not a File Search store's name; the "
                    "Gemini API's fileSearch tool takes names such as 'fileSearchStores/my-store-123' "
                    f"({FILE_SEARCH_DOCS})"
                )
        search: dict[str, Any] = {"fileSearchStoreNames": list(tool.vector_store_ids)}
        if tool.max_num_results is not None:
            search["topK"] = tool.max_num_results
        return {"fileSearch": search}
    raise ConfigError(f"{type(tool).__name__} is not a server tool {ADAPTER} knows")  # the union is closed


def _tools(request: Request) -> list[dict[str, Any]]:
    """The ``tools`` entries: the function declarations, then the server tools'.

    Raises:
        ConfigError: a function tool named like a server tool of the request
            (the model could not tell them apart), and as :func:`tool_json`
            and :func:`server_tool_json`.
    """
    check_server_names(request.server_tools, (tool.name for tool in request.tools))
    tools = [{"functionDeclarations": [tool_json(tool) for tool in request.tools]}] if request.tools else []
    return tools + [server_tool_json(tool) for tool in request.server_tools]


def check_settings(settings: ModelSettings, model_id: str = "") -> None:
    """Raise :class:`ConfigError` for ``settings`` the Gemini API cannot take
    (:func:`settings_fields`), for ``model_id`` when given: a thinking level
    (``reasoning_effort``) is Gemini 3's, and a Gemini 2 or 1 model id
    (``gemini-2.5-flash``) takes a ``thinking_budget`` instead
    (https://ai.google.dev/gemini-api/docs/thinking#thinking-levels)."""
    unsupported(settings, set(SETTINGS), _API)
    if settings.reasoning_effort is not None and re.match(r"(?:models/)?gemini-[12]\b", model_id):
        raise ConfigError(
            f"reasoning_effort={settings.reasoning_effort!r}: thinking levels are Gemini 3's; "
            f"{model_id} takes thinking_budget (tokens) instead"
        )
    if settings.reasoning_effort is not None and settings.reasoning_effort not in THINKING_LEVELS:
        raise ConfigError(
            f"reasoning_effort={settings.reasoning_effort!r}: the Gemini API's thinking levels are "
            f"{', '.join(THINKING_LEVELS)}"
        )
    if settings.thinking_budget is not None and settings.reasoning_effort is not None:
        raise ConfigError(
            "thinking_budget and reasoning_effort together: the Gemini API takes a thinking budget "
            "(Gemini 2.5) or a thinking level (Gemini 3), not both"
        )


def settings_fields(settings: ModelSettings, tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    """The body fields for ``settings`` (``extra_body`` aside): the
    ``generationConfig`` fields and ``toolConfig``
    (https://ai.google.dev/api/generate-content#generationconfig).

    =====================  =============================================
    ModelSettings          Gemini field
    =====================  =============================================
    temperature, top_p     ``temperature``, ``topP``
    stop_sequences         ``stopSequences``
    seed                   ``seed``
    thinking               ``thinkingConfig.includeThoughts`` (True: the
                           model's thought summaries stream as reasoning;
                           False also sends ``thinkingBudget: 0``, which
                           turns thinking off where the model allows it)
    thinking_budget        ``thinkingConfig.thinkingBudget`` (tokens)
    reasoning_effort       ``thinkingConfig.thinkingLevel`` (minimal, low,
                           medium, high: Gemini 3)
    tool_choice            ``toolConfig.functionCallingConfig``: ``auto``
                           AUTO, ``none`` NONE, ``required`` ANY, a tool's
                           name ANY with ``allowedFunctionNames``
                           (https://ai.google.dev/gemini-api/docs/function-calling#function_calling_modes)
    =====================  =============================================

    The caching fields, ``parallel_tool_calls`` and the context editing
    fields have no Gemini field and are a :class:`ConfigError`.

    Returns:
        ``{"generationConfig": {...}, "toolConfig": {...}}``, each only when
        it has a field.

    Raises:
        ConfigError: as :func:`check_settings`; a ``tool_choice`` naming a
            tool the request does not offer.
    """
    check_settings(settings)
    config: dict[str, Any] = {}
    for name, key in (("temperature", "temperature"), ("top_p", "topP"), ("seed", "seed")):
        value = getattr(settings, name)
        if value is not None:
            config[key] = value
    if settings.stop_sequences is not None:
        config["stopSequences"] = list(settings.stop_sequences)
    thinking: dict[str, Any] = {}
    if settings.thinking is not None:
        thinking["includeThoughts"] = settings.thinking
        if not settings.thinking:
            thinking["thinkingBudget"] = 0
    if settings.thinking_budget is not None:
        thinking["thinkingBudget"] = settings.thinking_budget
    if settings.reasoning_effort is not None:
        thinking["thinkingLevel"] = settings.reasoning_effort
    if thinking:
        config["thinkingConfig"] = thinking
    fields: dict[str, Any] = {"generationConfig": config} if config else {}
    choice = settings.tool_choice
    if choice is not None:
        modes = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
        calling: dict[str, Any] = {"mode": modes.get(choice, "ANY")}
        if choice not in modes:
            if choice not in {tool.name for tool in tools}:
                raise ConfigError(f"tool_choice={choice!r} names a tool the request does not offer")
            calling["allowedFunctionNames"] = [choice]
        fields["toolConfig"] = {"functionCallingConfig": calling}
    return fields


def tool_json(tool: ToolDefinition) -> dict[str, Any]:
    """A ``FunctionDeclaration``: ``{"name", "description",
    "parametersJsonSchema"}`` (the module docstring).

    Raises:
        ConfigError: a name the API refuses (:data:`NAME_PATTERN`), a schema
            that does not describe an object.
    """
    if not NAME_PATTERN.fullmatch(tool.name):
        raise ConfigError(
            f"tool {tool.name!r}: the Gemini API takes function names of letters, digits, '_', '.', ':' "
            "and '-', starting with a letter or '_', at most 64 characters"
        )
    schema = json.loads(tool.input_schema)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ConfigError(
            f"tool {tool.name!r}: the Gemini API takes a parameters schema of type object, got "
            f"{tool.input_schema[:200]}"
        )
    declaration: dict[str, Any] = {"name": tool.name, "parametersJsonSchema": schema}
    if tool.description:
        declaration["description"] = tool.description
    return declaration


def file_json(file: File, where: str) -> dict[str, Any]:
    """The part of a file: ``{"inlineData": {"mimeType", "data"}}`` (base64)
    for bytes, ``{"fileData": {"mimeType", "fileUri"}}`` for a URL (a Files
    API URI, or a YouTube or public URL where the model takes one)
    (https://ai.google.dev/api/caching#Part).

    Raises:
        ConfigError: a media type not in :data:`FILE_TYPES` (a GIF included:
            Gemini takes PNG, JPEG, WebP, HEIC and HEIF images), bytes over
            :data:`INLINE_MAX_BYTES`.
    """
    attachments.check_type(file, where, FILE_TYPES, _API, cloud_storage=True)  # refused by GeminiModel
    if file.url:
        return {"fileData": {"mimeType": file.media_type, "fileUri": file.url}}
    attachments.check_size(file, where, INLINE_MAX_BYTES, _API)
    return {"inlineData": {"mimeType": file.media_type, "data": attachments.base64_text(file)}}


def _stored(text: str, where: str) -> dict[str, Any]:
    """The JSON object this adapter wrote into a ``provider_data`` field.

    Raises:
        ConfigError: it is not one (the history was edited).
    """
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ConfigError(f"{where} holds provider_data that is not GeminiModel's JSON: {text[:100]!r}")
    return value


def _call_json(call: ToolCall, index: int, origin: str) -> tuple[dict[str, Any], bool]:
    """The ``functionCall`` part of ``call`` and whether it carries Gemini's
    signature (its id and signature only when they came from ``origin``)."""
    arguments = arguments_object(call.input)
    function: dict[str, Any] = {"name": call.name, "args": {} if arguments is None else arguments}
    part: dict[str, Any] = {"functionCall": function}
    if call.provider_data and call.origin == origin:
        data = _stored(call.provider_data, f"messages[{index}], tool call {call.id!r},")
        if data.get("id") is True:
            function["id"] = call.id
        signature = data.get("thoughtSignature")
        if isinstance(signature, str):
            part["thoughtSignature"] = signature
            return part, True
    return part, False


def _model_parts(message: Message, index: int, origin: str) -> list[dict[str, Any]]:
    """The parts of an assistant turn, in order (the module docstring)."""
    parts: list[dict[str, Any]] = []
    pending = ""  # a text part's signature, waiting for that text
    signed = False
    first_call: dict[str, Any] | None = None
    for part in message.content:
        if part.kind is ContentPartKind.TEXT and part.text:
            parts.append({"text": part.text})
            if pending:
                parts[-1]["thoughtSignature"], pending = pending, ""
        elif part.kind is ContentPartKind.REASONING and part.reasoning is not None:
            block: Reasoning = part.reasoning
            if block.format != FORMAT or block.origin != origin:
                continue
            if block.text:
                thought: dict[str, Any] = {"text": block.text, "thought": True}
                if block.signature:
                    thought["thoughtSignature"] = block.signature
                parts.append(thought)
            elif block.signature:
                pending = block.signature
        elif part.kind is ContentPartKind.TOOL_CALL and part.tool_call is not None:
            call, has_signature = _call_json(part.tool_call, index, origin)
            signed = signed or has_signature
            first_call = call if first_call is None else first_call
            parts.append(call)
        elif part.kind is ContentPartKind.PROVIDER_ITEM and part.provider_item is not None:
            item = part.provider_item
            if item.format == FORMAT and item.origin == origin and item.type == KEPT_PART:
                parts.append(json.loads(item.data))
    if pending:
        texts = [p for p in parts if "text" in p and not p.get("thought")]
        if texts:
            texts[-1]["thoughtSignature"] = pending
    if first_call is not None and not signed:
        first_call["thoughtSignature"] = DUMMY_SIGNATURE
    return parts


def _user_parts(message: Message, index: int, api_ids: set[str]) -> list[dict[str, Any]]:
    """The parts of a user or tool message: text and files, or the function
    responses (with their id when Gemini gave the call one) and their files."""
    parts: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    for result in message.tool_results:
        key = "error" if result.is_error else "output"
        response: dict[str, Any] = {"name": result.name, "response": {key: marked_error(result)}}
        if result.tool_call_id in api_ids:
            response["id"] = result.tool_call_id
        parts.append({"functionResponse": response})
        if result.files:
            where = attachments.place(index, result)
            sentence = f"Files returned by the tool call {result.tool_call_id!r} ({result.name}):"
            files.append({"text": sentence})
            files += [file_json(file, where) for file in result.files]
    if message.text:
        parts.append({"text": message.text})
    where = attachments.place(index)
    parts += [file_json(file, where) for file in message.files]
    return parts + files


def _api_ids(message: Message, index: int, origin: str) -> set[str]:
    """The ids of ``message``'s tool calls that Gemini gave."""
    ids = set()
    for call in message.tool_calls:
        where = f"messages[{index}], tool call {call.id!r},"
        ours = call.provider_data and call.origin == origin
        if ours and _stored(call.provider_data, where).get("id") is True:
            ids.add(call.id)
    return ids


def contents(messages: Sequence[Message], origin: str, sent: list[Any] | None = None) -> list[dict[str, Any]]:
    """The ``contents`` of ``messages``: one content per message (a message
    without parts sends none), appending each one's JSON to ``sent``.

    Raises:
        ConfigError: as :func:`file_json`; ``provider_data`` of this
            adapter's that is not its JSON.
    """
    out: list[dict[str, Any]] = []
    api_ids: set[str] = set()
    for index, message in enumerate(messages):
        if message.role is Role.ASSISTANT:
            api_ids = _api_ids(message, index, origin)
            content = {"role": "model", "parts": _model_parts(message, index, origin)}
        else:
            content = {"role": "user", "parts": _user_parts(message, index, api_ids)}
        if sent is not None:
            sent.append(content)
        if content["parts"]:
            out.append(content)
    return out


def request_body(
    request: Request,
    model_id: str,
    *,
    settings: ModelSettings | None = None,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    sent: list[Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one ``streamGenerateContent`` request
    (https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent):
    ``contents`` (:func:`contents`), ``systemInstruction`` (``{"parts":
    [{"text"}]}``, when there is a system prompt), ``tools`` (one ``{"functionDeclarations"}``,
    :func:`tool_json`, when there are tools, then one entry per server tool,
    :func:`server_tool_json`), ``generationConfig``
    (``maxOutputTokens`` from ``request.max_output_tokens``; ``request.output``
    as ``responseMimeType: application/json`` with ``responseJsonSchema``,
    https://ai.google.dev/gemini-api/docs/structured-output; then the settings,
    :func:`settings_fields`) and ``toolConfig`` (with
    ``includeServerSideToolInvocations`` when function and server tools are
    both asked for), then ``extra_body``, then the
    merged settings' ``extra_body``: the last one wins. The model id is in the
    URL, not the body.

    Args:
        request: the step's request.
        model_id: the model id (unused in the body; the URL carries it).
        settings: the adapter's :class:`agentcore.ModelSettings`
            (``request.settings`` override them).
        extra_body: fields merged into the body.
        origin: the API's origin: reasoning, signatures and kept parts from it
            go back verbatim.
        sent: when given, gets the content sent for each message appended.

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: before anything is sent: a server tool or a field of
            one the API does not have (:func:`server_tool_json`), a history the API would refuse
            (:func:`agentcore.history.check_history`), a setting
            (:func:`settings_fields`), a tool (:func:`tool_json`) or a file
            (:func:`file_json`) it cannot take.
    """
    tools = _tools(request)
    check_history(request.messages)
    attachments.check_places(request.messages)
    merged = (settings or ModelSettings()).merged(request.settings)
    check_settings(merged, model_id)  # the URL names the model; its generation decides the thinking fields
    fields = settings_fields(merged, request.tools)
    log_foreign_items(request.messages, FORMAT, origin)
    body: dict[str, Any] = {"contents": contents(request.messages, origin, sent)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if tools:
        body["tools"] = tools
    config: dict[str, Any] = {}
    if request.max_output_tokens:
        config["maxOutputTokens"] = request.max_output_tokens
    if request.output is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = json.loads(request.output.schema)
    config.update(fields.pop("generationConfig", {}))
    if config:
        body["generationConfig"] = config
    body.update(fields)
    if request.tools and request.server_tools:
        body.setdefault("toolConfig", {})["includeServerSideToolInvocations"] = True
    body.update(extra_body or {})
    body.update(merged.extra_body or {})
    return body


def count_body(body: Mapping[str, Any], model_id: str) -> dict[str, Any]:
    """The ``countTokens`` body for a step's ``body``: ``{"generateContentRequest":
    {"model": "models/<id>", ...}}``, which counts the system instruction and
    the tools too (https://ai.google.dev/api/tokens#method:-models.counttokens)."""
    return {"generateContentRequest": {"model": f"models/{model_id}", **body}}
