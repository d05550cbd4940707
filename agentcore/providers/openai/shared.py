"""What the two OpenAI APIs, Chat Completions (:mod:`agentcore.providers.openai.chat`)
and the Responses API (:mod:`agentcore.providers.openai.responses`), share:
the base URL and the key's header, prompt caching (both cache automatically,
under the same rules and fields), the structured-output schema, the usage
counts under their two sets of names, the errors reported inside a
stream, and a tool call's arguments streamed as ``tool-call-delta`` parts
(:class:`InputDeltas`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from typing import Any

from agentcore import caching
from agentcore.errors import ErrorClass, ModelError, classify_status
from agentcore.providers import fields
from agentcore.providers.endpoint import Endpoint
from agentcore.settings import ModelSettings
from agentcore.transport.errors import error_fields, looks_like_context_length
from agentcore.types import OutputSchema, StreamPart, Usage

DEFAULT_BASE_URL = "https://api.openai.com/v1"
"""OpenAI's API root; each API appends its path (``/chat/completions``, ``/responses``)."""
OPENAI_ORIGIN = "api.openai.com"
"""The origin of :data:`DEFAULT_BASE_URL`."""
HEADERS = {"Content-Type": "application/json", "Accept": "text/event-stream"}
"""The headers of every request, before the adapter's and the request's."""
KEY_HEADER = ("Authorization", "Bearer {key}")
"""The header the API key is sent in (none without a key: local servers need none)."""
CHAT_ENDPOINT = Endpoint("/chat/completions", headers=HEADERS, key_header=KEY_HEADER)
"""Chat Completions at OpenAI (and the servers that copy it):
``POST {base_url}/chat/completions``, the model id in the body, the key as a
bearer token (https://platform.openai.com/docs/api-reference/chat/create)."""
RESPONSES_ENDPOINT = Endpoint("/responses", headers=HEADERS, key_header=KEY_HEADER)
"""The Responses API at OpenAI: ``POST {base_url}/responses``, the model id
in the body, the key as a bearer token
(https://platform.openai.com/docs/api-reference/responses/create)."""

# --- prompt caching -----------------------------------------------------------

CACHE_DOCS = "https://developers.openai.com/api/docs/guides/prompt-caching"
"""OpenAI's prompt caching guide: the rules :func:`cache_policy` and
:func:`cache_fields` follow."""
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


# --- structured output ----------------------------------------------------------

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


# --- the stream -------------------------------------------------------------------


class InputDeltas:
    """The ``tool-call-delta`` parts of one client tool call
    (``Request.stream_tool_input``), whose fragments joined are exactly the
    call's final arguments (``tool_call.input`` of its ``tool-call`` part).

    Each argument fragment the server streams is passed on as it comes
    (:meth:`add`), with two exceptions that keep the join exact where the
    adapter's final reading differs from the plain join of the fragments:
    leading whitespace is held back until the first fragment that is not
    whitespace (arguments that are only whitespace are read as ``"{}"``),
    and once :meth:`stop` is called (a Chat Completions server that repeats
    the whole arguments in a later fragment: the final reading may take
    that snapshot instead) nothing more is passed on live. When the call
    completes, :meth:`rest` gives what the final arguments hold beyond the
    fragments passed on. Should the final arguments not start with them (a
    server whose done arguments contradict its deltas; no recorded stream
    does), nothing more is sent: the ``tool-call`` part is what counts.
    """

    __slots__ = ("_held", "_sent", "stopped")

    def __init__(self) -> None:
        self._sent: list[str] = []
        self._held = ""
        self.stopped = False
        """No fragment is passed on live any more (:meth:`stop`)."""

    def add(self, call_id: str, name: str, fragment: str) -> list[StreamPart]:
        """The part for the next ``fragment`` of the call ``call_id`` to
        ``name`` ([] while held back, or after :meth:`stop`)."""
        if self.stopped or not fragment:
            return []
        if not self._sent and not (self._held + fragment).strip():
            self._held += fragment
            return []
        text, self._held = self._held + fragment, ""
        self._sent.append(text)
        return [StreamPart.tool_call_delta(call_id, name, text)]

    def stop(self) -> None:
        """Pass nothing more on live; :meth:`rest` sends the rest at the end."""
        self.stopped = True

    def rest(self, call_id: str, name: str, final: str) -> list[StreamPart]:
        """The part carrying what ``final`` (the call's arguments as its
        ``tool-call`` part holds them) adds to the fragments passed on; []
        when nothing is missing (or ``final`` does not start with them)."""
        sent = "".join(self._sent)
        if len(final) <= len(sent) or not final.startswith(sent):
            return []
        self._sent.append(final[len(sent) :])
        return [StreamPart.tool_call_delta(call_id, name, self._sent[-1])]


def synthesize_id() -> str:
    """A tool-call id for a server that sent none: ``"call_"`` + 32 hex digits."""
    return "call_" + uuid.uuid4().hex


def token_usage(usage: Any, field: str, *, prompt: str, completion: str, details: str) -> Usage:
    """:class:`Usage` from the counts both APIs report under their own names
    (design.md, "Usage"): ``usage[prompt]`` (which already includes the
    cached tokens), ``usage[completion]`` (reasoning included), the prompt's
    ``usage[details]`` object (``cached_tokens``, and ``cache_write_tokens``
    where a gateway reports cache writes) and DeepSeek's
    ``prompt_cache_hit_tokens``.

    ``input = prompt - details.cache_write_tokens``, ``cache_read =
    details.cached_tokens`` (or ``prompt_cache_hit_tokens`` when the details
    lack it), ``cache_write = details.cache_write_tokens``, ``output =
    completion``. Missing or null counts are 0.

    Args:
        usage: the decoded usage object.
        field: its name in error messages (``"usage"``, ``"response.usage"``).
        prompt, completion, details: the API's names of the input and output
            counts and of the input details object.

    Raises:
        ModelError: ``UPSTREAM``, ``usage`` is not an object or a count is
            not a whole number of at least 0
            (:func:`agentcore.providers.fields.token_count`): read as 0 it
            would under-count the tokens billed.
    """
    if not isinstance(usage, Mapping):
        raise fields.wrong_shape(field, usage, "an object")
    inside = fields.mapping(usage, details, f"{field}.{details}")
    cache_read = fields.token_count(inside, "cached_tokens", f"{field}.{details}.cached_tokens")
    if cache_read is None:
        cache_read = fields.token_count(usage, "prompt_cache_hit_tokens", f"{field}.prompt_cache_hit_tokens")
    cache_write = (
        fields.token_count(inside, "cache_write_tokens", f"{field}.{details}.cache_write_tokens") or 0
    )
    return Usage(
        input=max(0, (fields.token_count(usage, prompt, f"{field}.{prompt}") or 0) - cache_write),
        output=fields.token_count(usage, completion, f"{field}.{completion}") or 0,
        cache_read=cache_read or 0,
        cache_write=cache_write,
    )


_WORD_CLASSES: tuple[tuple[re.Pattern[str], ErrorClass], ...] = (
    (re.compile(r"rate[_ ]?limit|too[_ ]many[_ ]requests"), ErrorClass.RATE_LIMITED),
    (re.compile(r"overload|unavailable|capacity"), ErrorClass.OVERLOADED),
    (re.compile(r"timeout|timed[_ ]out"), ErrorClass.TRANSIENT),
    (re.compile(r"auth|permission|api[_ ]key"), ErrorClass.AUTH),
    (re.compile(r"invalid|bad[_ ]request|not[_ ]found|tool_use_failed"), ErrorClass.INVALID_REQUEST),
)


def _status_like(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
        return value
    return 0


def error_event(payload: Any, *, fallback: str = "the server reported an error") -> ModelError:
    """A :class:`ModelError` for an error reported inside a 200 stream of
    either API.

    Accepts OpenRouter's ``{"error": {"code": 400, "message"}, "choices": ...}``,
    Groq's ``event: error`` data ``{"error": {"message", "type", "code":
    "tool_use_failed", "status_code": 400}}``, OpenAI's ``{"error":
    {"message", "type": "server_error"}}``, the Responses API's documented
    ``{"type": "error", "code", "message", "param"}`` (``"error"``, the
    envelope's own type, is not the error's) and Anthropic-shaped errors
    passed through by gateways.

    Classification (design.md, "Defaults and choices where the APIs leave
    room"): a numeric ``code`` (or Groq's ``status_code``) that is an HTTP
    status goes through :func:`classify_status`, with the context-length hint
    taken from the type, code and message. Without one, the context-length words win, then
    the type and code words: ``rate_limit`` rate-limited; ``overloaded``,
    ``unavailable``, ``capacity`` overloaded; ``timeout`` transient;
    ``auth``, ``permission`` auth; ``invalid``, ``not_found``,
    ``tool_use_failed`` invalid-request; anything else (``server_error``,
    ``api_error``, no type at all) upstream, which is terminal, as a plain 500
    is.

    Args:
        payload: the decoded event data.
        fallback: the message to use when the payload has none.
    """
    kind, message, code = error_fields(payload)
    kind = "" if kind == "error" else kind
    inner = payload.get("error") if isinstance(payload, Mapping) else None
    status = _status_like(code)
    if not status and isinstance(inner, Mapping):
        status = _status_like(inner.get("status_code")) or _status_like(inner.get("status"))
    code_text = code if isinstance(code, str) else ""
    hint = looks_like_context_length(kind, message, code_text)
    if status:
        error_class = classify_status(status, hint)
    elif hint:
        error_class = ErrorClass.CONTEXT_LENGTH
    else:
        words = f"{kind} {code_text}".lower()
        error_class = next((c for p, c in _WORD_CLASSES if p.search(words)), ErrorClass.UPSTREAM)
    label = ", ".join(str(x) for x in (kind, code) if x not in ("", None))
    detail = message or fallback
    text = f"error in the stream ({label}): {detail}" if label else f"error in the stream: {detail}"
    return ModelError(error_class, message=text[:2000])
