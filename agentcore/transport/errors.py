"""What a failed HTTP response says: the pure half of the adapters' plumbing.

* :func:`parse_retry_after`: ``retry-after-ms`` and ``Retry-After`` (seconds
  or an HTTP date) in seconds.
* :func:`google_retry_delay`: the ``RetryInfo`` delay of Google's error
  bodies, in seconds.
* :func:`error_fields`, :func:`error_from_body`,
  :func:`looks_like_context_length`: provider error bodies and objects, and
  the context-window overflow hint that :func:`classify_status` takes.
* :func:`aws_error_class`: the class of an AWS error type (Bedrock's
  ``ThrottlingException``), sent in the ``x-amzn-ErrorType`` header of an
  error response or as the ``:exception-type`` of an event-stream message.

The shell every adapter shares (:mod:`agentcore.providers.shell`) raises
these for a response whose status is not 200 and redacts its errors.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from agentcore.errors import ErrorClass, ModelError, classify_status


def json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float:
    """The server's requested wait, in seconds, from response headers.

    ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic) wins over
    ``Retry-After``, which is either seconds or an HTTP date (RFC 9110,
    section 10.2.3). Missing, negative or unparsable values give 0.0.

    Args:
        headers: the response headers (case-insensitive mapping or plain dict).
        now: the current time as a Unix timestamp, for tests; default time.time().
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        seconds = _finite_non_negative(ms)
        if seconds is not None:
            return seconds / 1000.0
    value = lower.get("retry-after")
    if value is None:
        return 0.0
    seconds = _finite_non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return 0.0
    if when.tzinfo is None:
        return 0.0
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _finite_non_negative(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        return None
    return value


_DURATION = re.compile(r"(\d+(?:\.\d+)?)s")
RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
"""The ``@type`` of the error detail that says how long to wait."""


def google_retry_delay(payload: Any) -> float:
    """The wait, in seconds, a Google error body asks for: the ``retryDelay``
    of its ``google.rpc.RetryInfo`` detail (``{"error": {"details": [{"@type":
    ".../google.rpc.RetryInfo", "retryDelay": "46s"}]}}``, a protobuf
    ``Duration`` in JSON: seconds with an ``s``), as the Gemini API sends with
    a 429 (https://ai.google.dev/gemini-api/docs/troubleshooting,
    https://cloud.google.com/apis/design/errors#error_details). 0.0 when the
    body has none."""
    for detail in _google_details(payload, RETRY_INFO):
        delay = detail.get("retryDelay")
        match = _DURATION.fullmatch(delay.strip()) if isinstance(delay, str) else None
        if match:
            return float(match.group(1))
    return 0.0


ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
"""The ``@type`` of the error detail that names the error's reason."""


def google_key_refused(payload: Any) -> bool:
    """The Google error body says the API key was refused: an ``ErrorInfo``
    detail whose ``reason`` starts ``API_KEY_`` (``API_KEY_INVALID``, a key
    expired or blocked for the service), which the Gemini API sends with a
    400 ``INVALID_ARGUMENT`` (https://cloud.google.com/apis/design/errors#error_info,
    https://ai.google.dev/gemini-api/docs/troubleshooting): an authentication
    error, not a request to fix."""
    return any(
        isinstance(detail.get("reason"), str) and detail["reason"].startswith("API_KEY_")
        for detail in _google_details(payload, ERROR_INFO)
    )


def _google_details(payload: Any, kind: str) -> list[dict[str, Any]]:
    """The details of type ``kind`` in a Google error body (``{"error": {"details": [...]}}``)."""
    inner = payload.get("error") if isinstance(payload, dict) else None
    details = inner.get("details") if isinstance(inner, dict) else None
    listed = details if isinstance(details, list) else ()
    return [detail for detail in listed if isinstance(detail, dict) and detail.get("@type") == kind]


CONTEXT_LENGTH_PATTERN = re.compile(
    r"context[_ ]length|context[_ ]window|context size|context limit|maximum context"
    r"|prompt is too long|too many tokens|input length.*exceed|exceeds? the (?:available )?context"
    r"|reduce the length of the (?:messages|prompt|input)|string_above_max_length|tokens? > \d+ maximum"
    r"|request too large for model|input is too long|prompt too long|exceed_context_size"
    r"|maximum model length|max_model_len|too long and exceeds|maximum prompt length"
    r"|exceeds the maximum number of tokens|inputs`? tokens \+ `?max_new_tokens",
    re.IGNORECASE,
)
"""Words by which OpenAI, Azure, vLLM, llama.cpp, Ollama, OpenRouter, xAI, the
Gemini and TGI OpenAI-compatible endpoints and Anthropic (directly or behind a
gateway) say the prompt did not fit."""


def looks_like_context_length(*texts: object) -> bool:
    """True when any of ``texts`` (error type, code, message) says the context
    window was exceeded (:data:`CONTEXT_LENGTH_PATTERN`)."""
    return any(isinstance(t, str) and CONTEXT_LENGTH_PATTERN.search(t) for t in texts)


AWS_ERROR_TYPE = "x-amzn-errortype"
"""The response header in which an AWS JSON API names an error's type
(``ThrottlingException:http://internal.amazon.com/coral/...``: the type, then
optionally a colon and a namespace); the body is ``{"message": "..."}``."""

AWS_ERROR_CLASSES = {
    "throttlingexception": ErrorClass.RATE_LIMITED,
    "servicequotaexceededexception": ErrorClass.INVALID_REQUEST,
    "serviceunavailableexception": ErrorClass.OVERLOADED,
    "modelnotreadyexception": ErrorClass.OVERLOADED,
    "modeltimeoutexception": ErrorClass.TRANSIENT,
    "modelstreamerrorexception": ErrorClass.TRANSIENT,
    "internalserverexception": ErrorClass.UPSTREAM,
    "modelerrorexception": ErrorClass.UPSTREAM,
    "validationexception": ErrorClass.INVALID_REQUEST,
    "resourcenotfoundexception": ErrorClass.INVALID_REQUEST,
    "accessdeniedexception": ErrorClass.AUTH,
    "expiredtokenexception": ErrorClass.AUTH,
    "unrecognizedclientexception": ErrorClass.AUTH,
    "invalidsignatureexception": ErrorClass.AUTH,
}
"""The class of each error type the Bedrock Runtime API reference lists for
InvokeModelWithResponseStream and ConverseStream ("Errors",
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html)
and the stream's exception members (``ResponseStream``,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ResponseStream.html),
keyed by the lower-case type (the header spells it ``ThrottlingException``,
the stream ``throttlingException``):

* ``ThrottlingException`` (429): rate limited.
* ``ServiceUnavailableException`` (503), ``ModelNotReadyException`` (429,
  "not ready to serve inference requests"; the SDKs retry it): overloaded.
* ``ModelTimeoutException`` (408) and ``ModelStreamErrorException`` (424,
  "An error occurred while streaming the response. Retry your request."):
  transient.
* ``InternalServerException`` (500): upstream, terminal, as agentcore takes
  every plain 500 (design.md), though the page says to retry it.
* ``ModelErrorException`` (424, "an error while processing the model"):
  upstream.
* ``ValidationException`` (400; context-length when its message says the
  input is too long), ``ResourceNotFoundException`` (404),
  ``ServiceQuotaExceededException`` (400: a quota of the account, not a
  rate; the SDKs do not retry it): invalid request.
* ``AccessDeniedException`` (403), and the signing errors every AWS API
  answers with 403 (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html):
  ``ExpiredTokenException``, ``UnrecognizedClientException``,
  ``InvalidSignatureException``: auth.
"""


def aws_error_class(error_type: str, message: str = "", status: int = 0) -> ErrorClass:
    """The class of an AWS error: by its type (:data:`AWS_ERROR_CLASSES`), with
    a ``ValidationException`` whose ``message`` says the prompt did not fit
    (:func:`looks_like_context_length`: "Input is too long for requested
    model.") context-length; a type the table does not hold goes by ``status``
    (:func:`classify_status`; ``UPSTREAM`` without one).

    Args:
        error_type: the type, as ``x-amzn-ErrorType`` or an event-stream
            ``:exception-type`` names it (the namespace after a colon is
            ignored).
        message: the error's message.
        status: the HTTP status it came with (0: none, inside a stream).
    """
    name = error_type.split(":", 1)[0].strip().lower()
    hint = looks_like_context_length(message)
    known = AWS_ERROR_CLASSES.get(name)
    if known is ErrorClass.INVALID_REQUEST and name == "validationexception" and hint:
        return ErrorClass.CONTEXT_LENGTH
    if known is not None:
        return known
    return classify_status(status, hint) if status else ErrorClass.UPSTREAM


def error_fields(payload: Any) -> tuple[str, str, Any]:
    """``(type, message, code)`` of a provider error object, wherever it sits.

    Accepts OpenAI's ``{"error": {"message", "type", "code"}}``, Anthropic's
    ``{"type": "error", "error": {"type", "message"}}``, a bare
    ``{"message": ...}`` or ``{"error": "text"}``. Missing parts are "" / None.
    """
    if not isinstance(payload, dict):
        return "", "", None
    inner = payload.get("error", payload)
    if isinstance(inner, str):
        return "", inner, payload.get("code")
    if not isinstance(inner, dict):
        return "", "", None
    kind = inner.get("type") or ""
    message = inner.get("message") or inner.get("detail") or ""
    code = inner.get("code", payload.get("code"))
    return (
        (kind if isinstance(kind, str) else str(kind)),
        (message if isinstance(message, str) else json.dumps(message)),
        code,
    )


def error_from_body(
    status: int,
    raw: bytes,
    *,
    retry_after: float = 0.0,
    error_type: str = "",
) -> ModelError:
    """A :class:`ModelError` for a non-200 response.

    The class comes from :func:`classify_status`, with the context-length hint
    taken from the body's error type, code and message (JSON, HTML or empty
    bodies are all accepted). Without a ``retry_after`` from the headers, a
    Google error body's ``RetryInfo`` gives it (:func:`google_retry_delay`).
    With an ``error_type`` (AWS's ``x-amzn-ErrorType`` header,
    :data:`AWS_ERROR_TYPE`), :func:`aws_error_class` classifies it instead,
    and the message starts with the type (``ExpiredTokenException: The
    security token included in the request is expired``). A Google body
    that says the API key was refused is ``AUTH`` whatever its status
    (:func:`google_key_refused`).
    """
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        payload = json.loads(text) if text else None
    except ValueError:
        payload = None
    kind, message, code = error_fields(payload)
    aws_type = error_type.split(":", 1)[0].strip()
    if aws_type and not kind:
        kind = aws_type
    if not retry_after:
        retry_after = google_retry_delay(payload)
    if not message:
        message = _plain_text(text) if payload is None else text
    hint = looks_like_context_length(kind, message, code if isinstance(code, str) else None)
    if aws_type:
        error_class = aws_error_class(aws_type, message, status)
    elif google_key_refused(payload):
        error_class = ErrorClass.AUTH
    else:
        error_class = classify_status(status, hint)
    detail = f"{kind}: {message}" if kind and kind not in message else message
    return ModelError(error_class, retry_after=retry_after, message=detail[:2000], status=status)


def _plain_text(text: str) -> str:
    body = re.search(r"<body[^>]*>(.*?)(?:</body>|$)", text, re.IGNORECASE | re.DOTALL)
    without_tags = re.sub(r"<[^>]+>", " ", body.group(1) if body else text)
    return " ".join(without_tags.split())[:500] or "(empty body)"
