"""What a Bedrock Converse request sends: the pure request mapping of
:class:`agentcore.providers.bedrock.BedrockConverseModel` (no I/O).

The body is a ``ConverseStream`` request
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html;
the same fields as ``Converse``,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):
``messages`` (``user`` and ``assistant`` turns of content blocks),
``system`` (a list of system blocks), ``toolConfig``, ``inferenceConfig`` and
``additionalModelRequestFields`` (what one model family takes beyond the
common fields). The model id is in the URL.

* **Turns.** A user message is a ``user`` turn of a ``text`` block and its
  files; an assistant message an ``assistant`` turn whose blocks keep the
  message's order (reasoning, text, tool uses, kept blocks); a tool message a
  ``user`` turn of one ``toolResult`` per result, in call order (the
  ``Message`` reference: roles are ``user`` and ``assistant``,
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Message.html).
  Neighbouring turns of one role are merged (a tool message and the user
  message after it), empty text blocks are dropped (and an assistant's
  blank ones), and an assistant turn left empty is skipped; a user message's
  text is sent as it is, a lone line break included (Bedrock takes it).
* **Tool results** are ``{"toolResult": {"toolUseId", "content": [{"text"},
  files...], "status"}}``, ``status`` ``"error"`` for an error result and
  ``"success"`` otherwise (the ``ToolResultBlock`` reference,
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolResultBlock.html);
  a result's files are image and document blocks inside its ``content``.
* **Files** (:func:`file_json`): images (PNG, JPEG, GIF, WebP) and documents
  (PDF, CSV, Word, Excel, HTML, plain text, Markdown) as bytes; another
  media type, a file given by URL, a file over the documented
  size, or a document in a user turn without text is a :class:`ConfigError`
  before any HTTP call (the ``Message`` reference: "up to 20 images ... no
  more than 3.75 MB", "up to five documents ... no more than 4.5 MB", "If
  you include a ContentBlock with a document field in the array, you must
  also include a ContentBlock with a text field").
* **Reasoning** (``reasoningContent``,
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ReasoningContentBlock.html)
  read from the same service (``Reasoning.format`` :data:`FORMAT`,
  ``Reasoning.origin`` the host of ``base_url``) goes back in place, byte for
  byte: ``{"reasoningText": {"text", "signature"}}``, or
  ``{"redactedContent": data}`` for redacted reasoning (the base64 text it
  came as). The ``ReasoningTextBlock`` reference says the signature "must"
  be submitted in later requests. Reasoning from elsewhere is left out
  (Bedrock could not verify it). Reasoning without a signature (gpt-oss,
  whose reasoning has none) goes back as text, except to a Claude model, which
  refuses an unsigned thinking block ("thinking.signature: Field required").
* **Kept blocks.** A server tool's blocks (Nova's ``toolUse`` of type
  ``server_tool_use`` and its ``toolResult`` of type
  ``nova_code_interpreter_result``) are provider items of type
  :data:`KEPT_BLOCK`, sent back in place, as they came, to the same origin.
* **Prompt caching** (https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html):
  a ``{"cachePoint": {"type": "default"}}`` block ends the cached prefix: after
  the system prompt (``cache_system``), after the last tool
  (``cache_tools``), where an :func:`agentcore.cache_point` part is, and after
  the last message (``cache``: the loop's growing prefix). More than
  :data:`MAX_CACHE_POINTS` is a :class:`ConfigError`. Which models cache is
  Bedrock's to say (Claude and Nova do): another model's 400 is an
  ``INVALID_REQUEST`` :class:`ModelError`.
* **Tools** are ``{"toolSpec": {"name", "description", "inputSchema":
  {"json": schema}}}`` (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolSpecification.html).
  Server tools (:mod:`agentcore.server_tools`) are refused
  (:func:`check_server_tools`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentcore.errors import ConfigError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.providers import attachments
from agentcore.providers.anthropic.request import thinking_config
from agentcore.providers.history import arguments_object, log_foreign_items
from agentcore.server_tools import ServerTool
from agentcore.settings import ModelSettings, unsupported
from agentcore.types import ContentPartKind, Message, Reasoning, Request, Role, ToolDefinition, ToolResult

_log = logging.getLogger(__name__)

FORMAT = "bedrock-converse"
"""The wire format this adapter stamps on its reasoning blocks and provider items."""
KEPT_BLOCK = "bedrock-block"
"""The ``ProviderItem.type`` of a content block kept and sent back as it came
(a server tool's ``toolUse`` or ``toolResult``)."""
DEFAULT_MAX_TOKENS = 4096
"""``inferenceConfig.maxTokens`` with thinking on when ``Request.max_output_tokens``
is None: Claude's thinking budget must be under it, and without it the
model's own default applies, which may be smaller."""
SETTINGS = frozenset(
    {
        "temperature",
        "top_p",
        "stop_sequences",
        "tool_choice",
        "reasoning_effort",
        "thinking",
        "thinking_budget",
        "cache",
        "cache_system",
        "cache_tools",
        "extra_body",
    }
)
"""The :class:`agentcore.ModelSettings` fields this adapter maps (:func:`settings_fields`)."""
REASONING_EFFORTS = ("low", "medium", "high")
"""The ``reasoning_effort`` values Bedrock's OpenAI (gpt-oss) and Nova 2
models take (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-openai.html,
https://docs.aws.amazon.com/nova/latest/nova2-userguide/extended-thinking.html)."""
CACHE_POINT = {"cachePoint": {"type": "default"}}
"""The block that ends a cached prefix (the ``CachePointBlock`` reference,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CachePointBlock.html)."""
MAX_CACHE_POINTS = 4
"""The most cache checkpoints one request may hold (the prompt caching page)."""
CACHE_TTL_SECONDS = 300.0
"""How long a cached prefix lives after its last use: five minutes (the prompt caching page)."""
IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
"""The ``ImageBlock`` formats by media type
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ImageBlock.html)."""
DOCUMENT_FORMATS = {
    attachments.PDF: "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    attachments.TEXT: "txt",
    "text/markdown": "md",
}
"""The ``DocumentBlock`` formats by media type
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_DocumentBlock.html)."""
MAX_IMAGE_BYTES = int(3.75 * attachments.MB)
"""The largest image: 3.75 MB (the ``Message`` reference)."""
MAX_DOCUMENT_BYTES = int(4.5 * attachments.MB)
"""The largest document: 4.5 MB (the ``Message`` reference)."""
_NAME_DISALLOWED = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
_API = "Bedrock Converse"


def is_claude(model_id: str) -> bool:
    """Whether ``model_id`` names an Anthropic Claude model (``anthropic.`` in
    the id, an inference profile's ``us.anthropic.`` included, or ``claude``
    in an ARN): the family whose thinking fields :func:`settings_fields` sends."""
    lowered = model_id.lower()
    return "anthropic." in lowered or "claude" in lowered


def check_server_tools(tools: Sequence[ServerTool]) -> None:
    """Raise :class:`ConfigError` for any server tool: ``BedrockConverseModel``
    maps none (Nova's code interpreter is a ``systemTool`` in ``toolConfig``,
    which ``extra_body`` can send with the tools; its blocks are kept and
    sent back). The error names the first tool."""
    if tools:
        tool = tools[0]
        raise ConfigError(
            f"{type(tool).__name__} ({tool.name}): BedrockConverseModel maps no server tool; send a "
            'Bedrock system tool through extra_body (e.g. {"toolConfig": {"tools": [..., {"systemTool": '
            '{"name": "nova_code_interpreter"}}]}}), or use BedrockAnthropicModel'
        )


def check_settings(settings: ModelSettings, model_id: str = "") -> None:
    """Raise :class:`ConfigError` for ``settings`` Converse cannot take for
    ``model_id`` (:func:`settings_fields`): a field not in :data:`SETTINGS`;
    ``thinking`` or ``thinking_budget`` for a model that is not Claude;
    ``reasoning_effort`` for Claude or outside :data:`REASONING_EFFORTS`."""
    unsupported(settings, set(SETTINGS), f"the {_API} API")
    claude = is_claude(model_id)
    if not claude and (settings.thinking is not None or settings.thinking_budget is not None):
        raise ConfigError(
            f"ModelSettings.thinking and thinking_budget are Claude's on {_API} ({model_id!r} is not "
            "a Claude model); use reasoning_effort (gpt-oss, Nova 2) or extra_body"
        )
    effort = settings.reasoning_effort
    if effort is not None and (effort_family(model_id) is None or effort not in REASONING_EFFORTS):
        raise ConfigError(
            f"ModelSettings.reasoning_effort={effort!r}: {_API} sends {', '.join(REASONING_EFFORTS)} to "
            f"gpt-oss and Nova 2 models ({model_id!r} is neither); a Claude model takes thinking_budget, "
            "another model's reasoning fields go in extra_body"
        )


def effort_family(model_id: str) -> str | None:
    """The family whose reasoning-effort field ``model_id`` takes: ``"nova-2"``
    (``reasoningConfig``), ``"gpt-oss"`` (``reasoning_effort``), or None
    (Claude, Nova 1 and the others have no such field)."""
    lowered = model_id.lower()
    return next((family for family in ("nova-2", "gpt-oss") if family in lowered), None)


def settings_fields(
    settings: ModelSettings, tools: Sequence[ToolDefinition], model_id: str, max_tokens: int
) -> dict[str, Any]:
    """The body fields for ``settings`` (``extra_body`` and caching aside).

    =====================  =============================================
    ModelSettings          Converse field
    =====================  =============================================
    temperature, top_p     ``inferenceConfig.temperature``, ``topP``
    stop_sequences         ``inferenceConfig.stopSequences``
                           (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InferenceConfiguration.html)
    tool_choice            ``toolConfig.toolChoice``: ``auto`` ``{"auto":
                           {}}``, ``required`` ``{"any": {}}``, a tool's
                           name ``{"tool": {"name"}}``
                           (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ToolChoice.html);
                           ``none`` has no Converse field: a ConfigError
    thinking,              Claude: ``additionalModelRequestFields.thinking``
    thinking_budget        as the Anthropic mapping sends it
                           (:func:`agentcore.providers.anthropic.request.thinking_config`:
                           a budget ``{"type": "enabled", "budget_tokens"}``,
                           ``thinking=True`` alone ``{"type": "adaptive"}``)
                           (https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-extended-thinking.html)
    reasoning_effort       gpt-oss: ``additionalModelRequestFields.reasoning_effort``;
                           Nova 2: ``additionalModelRequestFields.reasoningConfig``
                           ``{"type": "enabled", "maxReasoningEffort"}``
                           (:data:`REASONING_EFFORTS`' pages)
    =====================  =============================================

    Returns:
        ``{"inferenceConfig": {...}, "toolChoice": {...},
        "additionalModelRequestFields": {...}}``, each only when it has a
        field (``toolChoice`` goes into ``toolConfig``).

    Raises:
        ConfigError: as :func:`check_settings`; a ``tool_choice`` of
            ``none``, or naming a tool the request does not offer, or
            ``required`` without tools; as ``thinking_config`` (a budget
            under 1,024 tokens or not under the output cap).
    """
    check_settings(settings, model_id)
    config: dict[str, Any] = {}
    for name, key in (("temperature", "temperature"), ("top_p", "topP")):
        value = getattr(settings, name)
        if value is not None:
            config[key] = value
    if settings.stop_sequences is not None:
        config["stopSequences"] = list(settings.stop_sequences)
    fields: dict[str, Any] = {"inferenceConfig": config} if config else {}
    choice = settings.tool_choice
    if choice is not None:
        names = {tool.name for tool in tools}
        if choice == "none":
            raise ConfigError(
                f"ModelSettings.tool_choice='none' has no {_API} field (it takes auto, any and a tool); "
                "send no tools instead"
            )
        if choice != "auto" and not names:
            raise ConfigError(f"ModelSettings.tool_choice is {choice!r} but the request has no tools")
        if choice not in ("auto", "required") and choice not in names:
            raise ConfigError(f"tool_choice={choice!r} names a tool the request does not offer")
        chosen: dict[str, Any] = {"auto": {"auto": {}}, "required": {"any": {}}}.get(
            choice, {"tool": {"name": choice}}
        )
        if names:
            fields["toolChoice"] = chosen
    extra: dict[str, Any] = {}
    if is_claude(model_id):
        thinking = thinking_config(settings, max_tokens)
        if thinking is not None:
            extra["thinking"] = thinking
    elif settings.reasoning_effort is not None:
        if effort_family(model_id) == "nova-2":
            extra["reasoningConfig"] = {"type": "enabled", "maxReasoningEffort": settings.reasoning_effort}
        else:
            extra["reasoning_effort"] = settings.reasoning_effort
    if extra:
        fields["additionalModelRequestFields"] = extra
    return fields


def tool_json(tool: ToolDefinition) -> dict[str, Any]:
    """A ``toolSpec`` entry: ``{"toolSpec": {"name", "description",
    "inputSchema": {"json": schema}}}``, the schema sent as it is."""
    spec: dict[str, Any] = {"name": tool.name, "inputSchema": {"json": json.loads(tool.input_schema)}}
    if tool.description:
        spec["description"] = tool.description
    return {"toolSpec": spec}


def document_name(file: File, index: int) -> str:
    """A ``DocumentBlock.name``: the file's name without its extension, each
    run of characters the API does not take (it takes letters, digits,
    single spaces, hyphens, parentheses and square brackets) made one space,
    at most 200 characters; ``document-N`` (N counting from 1 in the turn)
    when nothing is left. Two documents of one turn need different names."""
    stem = (file.filename or "").rsplit(".", 1)[0]
    name = " ".join(_NAME_DISALLOWED.sub(" ", stem).split())[:200].strip()
    return name or f"document-{index}"


def file_json(file: File, where: str, index: int = 1) -> dict[str, Any]:
    """The block of a file: ``{"image": {"format", "source"}}`` or
    ``{"document": {"format", "name", "source"}}``, the source ``{"bytes":
    base64}`` (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ImageSource.html).
    Converse fetches no web URL (its other source is an S3 location, which a
    :class:`agentcore.File` does not name). ``index`` numbers the documents of
    one turn, for :func:`document_name`.

    Raises:
        ConfigError: a media type not in :data:`IMAGE_FORMATS` or
            :data:`DOCUMENT_FORMATS`, a file given by URL, bytes over
            :data:`MAX_IMAGE_BYTES` or :data:`MAX_DOCUMENT_BYTES`.
    """
    image = file.media_type in IMAGE_FORMATS
    attachments.check_type(file, where, (*IMAGE_FORMATS, *DOCUMENT_FORMATS), _API, url=False)
    attachments.check_size(file, where, MAX_IMAGE_BYTES if image else MAX_DOCUMENT_BYTES, _API)
    source = {"bytes": attachments.base64_text(file)}
    if image:
        return {"image": {"format": IMAGE_FORMATS[file.media_type], "source": source}}
    name = document_name(file, index)
    return {"document": {"format": DOCUMENT_FORMATS[file.media_type], "name": name, "source": source}}


def _files(files: Sequence[File], where: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    documents = 0
    for file in files:
        documents += file.media_type in DOCUMENT_FORMATS
        blocks.append(file_json(file, where, documents))
    return blocks


def reasoning_block(block: Reasoning, origin: str, claude: bool) -> dict[str, Any] | None:
    """The ``reasoningContent`` block of ``block``, or None when it does not go
    back: reasoning of another format or origin, and unsigned reasoning to a
    Claude model (the module docstring)."""
    if block.format != FORMAT or block.origin != origin:
        return None
    if block.data:
        return {"reasoningContent": {"redactedContent": block.data}}
    if claude and not block.signature:
        return None
    text: dict[str, Any] = {"text": block.text}
    if block.signature:
        text["signature"] = block.signature
    return {"reasoningContent": {"reasoningText": text}}


def _result_json(result: ToolResult, index: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if result.content or not result.files:
        content.append({"text": result.content})
    content += _files(result.files, attachments.place(index, result))
    status = "error" if result.is_error else "success"
    return {"toolResult": {"toolUseId": result.tool_call_id, "content": content, "status": status}}


def _assistant_blocks(message: Message, origin: str, claude: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if part.kind is ContentPartKind.TEXT and part.text.strip():
            blocks.append({"text": part.text})
        elif part.kind is ContentPartKind.REASONING and part.reasoning is not None:
            block = reasoning_block(part.reasoning, origin, claude)
            if block is not None:
                blocks.append(block)
        elif part.kind is ContentPartKind.TOOL_CALL and part.tool_call is not None:
            call = part.tool_call
            arguments = arguments_object(call.input)
            tool_use = {"toolUseId": call.id, "name": call.name, "input": arguments or {}}
            blocks.append({"toolUse": tool_use})
        elif part.kind is ContentPartKind.PROVIDER_ITEM and part.provider_item is not None:
            item = part.provider_item
            if item.format == FORMAT and item.origin == origin and item.type == KEPT_BLOCK:
                blocks.append(json.loads(item.data))
        elif part.kind is ContentPartKind.CACHE_POINT and blocks:
            blocks.append(dict(CACHE_POINT))
    return blocks


def _user_blocks(message: Message, index: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [_result_json(result, index) for result in message.tool_results]
    files = 0
    for part in message.content:
        if part.kind is ContentPartKind.TEXT and part.text:
            blocks.append({"text": part.text})
        elif part.kind is ContentPartKind.FILE and part.file is not None:
            files += part.file.media_type in DOCUMENT_FORMATS
            blocks.append(file_json(part.file, attachments.place(index), files))
        elif part.kind is ContentPartKind.CACHE_POINT:
            if not blocks:
                raise ConfigError(f"messages[{index}] has a cache point with no content before it to cache")
            blocks.append(dict(CACHE_POINT))
    if files and not any("text" in block for block in blocks):
        raise ConfigError(
            f"messages[{index}] holds a document without text; {_API} needs a text block in a turn "
            "with a document: add a sentence about it"
        )
    return blocks


def messages_json(
    messages: Sequence[Message], origin: str, model_id: str, sent: list[Any] | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` of ``messages`` (the module docstring), appending the
    blocks sent for each message to ``sent``.

    Raises:
        ConfigError: no message; a user or tool message with nothing to
            send; as :func:`file_json`.
    """
    if not messages:
        raise ConfigError(f"the request has no messages; {_API} needs at least one user message")
    claude = is_claude(model_id)
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role is Role.ASSISTANT:
            role, blocks = "assistant", _assistant_blocks(message, origin, claude)
        else:
            role, blocks = "user", _user_blocks(message, index)
            if not blocks:
                raise ConfigError(
                    f"messages[{index}] is a {message.role.value} message with nothing {_API} accepts "
                    "(no text other than blanks, no file, no tool result): give it text or remove it"
                )
        if sent is not None:
            sent.append(blocks)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = [*turns[-1]["content"], *blocks]
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _continues_turn_without_reasoning(turns: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the request continues a tool-use turn (its last turn holds tool
    results) whose assistant turn does not start with reasoning."""
    if len(turns) < 2 or not any("toolResult" in block for block in turns[-1]["content"]):
        return False
    return "reasoningContent" not in turns[-2]["content"][0]


def cache_points(body: Mapping[str, Any]) -> int:
    """The ``cachePoint`` blocks a request body holds (system, tools, messages)."""
    tool_config = body.get("toolConfig") or {}
    blocks = [
        *body.get("system", []),
        *tool_config.get("tools", []),
        *(block for turn in body.get("messages", []) for block in turn["content"]),
    ]
    return sum("cachePoint" in block for block in blocks)


def request_body(
    request: Request,
    model_id: str,
    *,
    settings: ModelSettings | None = None,
    extra_body: Mapping[str, Any] | None = None,
    origin: str = "",
    sent: list[Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one ``ConverseStream`` request: ``messages``
    (:func:`messages_json`), ``system`` (``[{"text"}]`` when there is a
    system prompt), ``toolConfig`` (``tools``, :func:`tool_json`, and the
    tool choice), ``inferenceConfig`` (``maxTokens`` from
    ``request.max_output_tokens``, or :data:`DEFAULT_MAX_TOKENS` with Claude's
    thinking on; then the settings, :func:`settings_fields`),
    ``additionalModelRequestFields``, the cache points (the module
    docstring), then ``extra_body``, then the merged settings'
    ``extra_body``: the last one wins.

    With Claude's manual thinking (``{"type": "enabled"}``) the API requires
    the assistant turn of a tool-use turn being continued to start with a
    reasoning block (its ValidationException: "Expected `thinking` or
    `redacted_thinking`, but found `tool_use`"); when it does not (the turn
    began with thinking off or on another service), ``thinking`` is left out
    of this request, as the Anthropic mapping does
    (:func:`agentcore.providers.anthropic.request.request_body`).

    Args:
        request: the step's request.
        model_id: the model id (or inference profile, or ARN): its family
            decides the reasoning fields.
        settings: the adapter's :class:`agentcore.ModelSettings`
            (``request.settings`` override them).
        extra_body: fields merged into the body.
        origin: the service's origin: reasoning and kept blocks from it go
            back verbatim.
        sent: when given, gets the blocks sent for each message appended.

    Returns:
        A JSON-serializable dict.

    Raises:
        ConfigError: before anything is sent: a server tool
            (:func:`check_server_tools`), an output schema (Converse's
            structured output is not mapped), a history the API would refuse
            (:func:`agentcore.history.check_history`, :func:`messages_json`),
            a setting (:func:`settings_fields`), a file (:func:`file_json`),
            more than :data:`MAX_CACHE_POINTS` cache points.
    """
    check_server_tools(request.server_tools)
    if request.output is not None:
        raise ConfigError(
            f"BedrockConverseModel does not send an output schema ({request.output.name}); "
            "ask for JSON in the prompt, or use BedrockAnthropicModel"
        )
    check_history(request.messages)
    attachments.check_places(request.messages)
    merged = (settings or ModelSettings()).merged(request.settings)
    claude = is_claude(model_id)
    thinking_on = claude and (merged.thinking or merged.thinking_budget is not None)
    cap = request.max_output_tokens or (DEFAULT_MAX_TOKENS if thinking_on else None)
    fields = settings_fields(merged, request.tools, model_id, cap or DEFAULT_MAX_TOKENS)
    log_foreign_items(request.messages, FORMAT, origin)
    turns = messages_json(request.messages, origin, model_id, sent)
    if merged.cache and "cachePoint" not in turns[-1]["content"][-1]:
        turns[-1]["content"] = [*turns[-1]["content"], dict(CACHE_POINT)]
    body: dict[str, Any] = {"messages": turns}
    if request.system:
        body["system"] = [{"text": request.system}]
        if merged.cache_system:
            body["system"].append(dict(CACHE_POINT))
    if request.tools:
        tools = [tool_json(tool) for tool in request.tools]
        if merged.cache_tools:
            tools.append(dict(CACHE_POINT))
        body["toolConfig"] = {"tools": tools}
        if "toolChoice" in fields:
            body["toolConfig"]["toolChoice"] = fields["toolChoice"]
    config = {"maxTokens": cap} if cap else {}
    config.update(fields.get("inferenceConfig", {}))
    if config:
        body["inferenceConfig"] = config
    extra = dict(fields.get("additionalModelRequestFields", {}))
    thinking = extra.get("thinking")
    if thinking is not None and thinking["type"] == "enabled" and _continues_turn_without_reasoning(turns):
        _log.info("agentcore: thinking left out: the tool-use turn being continued began without it")
        del extra["thinking"]
    if extra:
        body["additionalModelRequestFields"] = extra
    count = cache_points(body)
    if count > MAX_CACHE_POINTS:
        raise ConfigError(
            f"the request has {count} cache points; {_API} takes at most {MAX_CACHE_POINTS}: remove cache "
            "points, or turn off cache, cache_system or cache_tools"
        )
    body.update(extra_body or {})
    body.update(merged.extra_body or {})
    return body


COUNT_DOCS = "https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_CountTokens.html"
"""The reference of ``POST /model/{modelId}/count-tokens``."""
COUNT_FIELDS = ("messages", "system", "toolConfig", "additionalModelRequestFields")
"""The fields of a step's body a Converse count takes
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseTokensRequest.html)."""


def count_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body of ``POST /model/{modelId}/count-tokens`` for the step whose
    body :func:`request_body` made: ``{"input": {"converse": {...}}}`` with its
    messages, system prompt, tools and model fields (:data:`COUNT_FIELDS`);
    the answer is ``{"inputTokens": N}`` (:data:`COUNT_DOCS`)."""
    return {"input": {"converse": {name: body[name] for name in COUNT_FIELDS if name in body}}}
