"""How AWS is reached: Bedrock Runtime's URL, SigV4 signing and the
``application/vnd.amazon.eventstream`` framing, on botocore (the extra
``agentcore[aws]``; nothing of boto3).

* :func:`bedrock_base_url`: ``https://bedrock-runtime.{region}.amazonaws.com``
  (https://docs.aws.amazon.com/general/latest/gr/bedrock.html, "Amazon
  Bedrock Runtime APIs").
* :class:`SigV4`: an :class:`agentcore.providers.endpoint.Signer` that signs
  each request with botocore's ``SigV4Auth``
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html).
* :func:`event_stream`: a :class:`agentcore.providers.shell.Framing` for the
  AWS event stream, decoded by botocore's ``EventStreamBuffer`` (prelude,
  headers, CRCs): each ``event`` message is an :class:`Event`, each
  ``exception`` message a classified :class:`ModelError`.
* :func:`bedrock_signer`: a Bedrock API key or SigV4, one of the two.
* :func:`invoke_events`: the framing of InvokeModelWithResponseStream, whose
  ``chunk`` events each carry one event of the model's own API in base64
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_InvokeModelWithResponseStream.html).

botocore is imported when a function here needs it (:func:`require`), so
``import agentcore`` and the import of a Bedrock model's module never import
it; a model made without it raises :class:`ConfigError`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers.endpoint import Signer
from agentcore.transport.errors import aws_error_class
from agentcore.transport.sse import Event

EVENT_STREAM = "application/vnd.amazon.eventstream"
"""The media type of an AWS event stream (the ``Endpoint.media_type`` of a
Bedrock streaming operation)."""

INSTALL = "pip install 'agentcore[aws]'"

_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")
"""An AWS Region code: ``us-east-1``, ``eu-central-2``, ``us-gov-west-1``."""


def require() -> Any:
    """botocore, imported (with the modules this one uses).

    Raises:
        ConfigError: botocore is not installed (``pip install 'agentcore[aws]'``).
    """
    try:
        import botocore.auth
        import botocore.awsrequest
        import botocore.eventstream
    except ImportError as exc:
        raise ConfigError(f"the Bedrock models need botocore: {INSTALL}") from exc
    return botocore


def bedrock_base_url(region: str | None, base_url: str | None) -> str:
    """The Bedrock Runtime root of ``region``
    (``https://bedrock-runtime.{region}.amazonaws.com``), or ``base_url``
    when given (a VPC endpoint, a gateway, a local server: ``region`` is
    then only the Region requests are signed for).

    Raises:
        ConfigError: neither given, or a region that is not an AWS Region
            code.
    """
    if region is None and base_url is None:
        raise ConfigError(
            "Bedrock needs region= (the AWS Region, e.g. 'us-east-1') or base_url= "
            "(https://bedrock-runtime.REGION.amazonaws.com)"
        )
    if region is not None and (not isinstance(region, str) or not _REGION.fullmatch(region)):
        raise ConfigError(f"region must be an AWS Region code such as 'us-east-1', got {region!r}")
    return base_url if base_url is not None else f"https://bedrock-runtime.{region}.amazonaws.com"


_SIGNED = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
"""The headers SigV4 adds to a request."""


class SigV4:
    """Signs each request with AWS Signature Version 4 (botocore's
    ``SigV4Auth``): the ``Authorization``, ``X-Amz-Date`` and (for temporary
    credentials) ``X-Amz-Security-Token`` headers, over the request's exact
    URL, headers and body. An :class:`agentcore.providers.endpoint.Signer`,
    for an adapter's ``credentials=`` option.

    Args:
        region: the Region the requests go to (part of the signature).
        credentials: botocore credentials:
            ``botocore.session.get_session().get_credentials()`` (the
            standard chain: environment, ``~/.aws`` profiles, SSO, the
            instance or container role), or
            ``botocore.credentials.Credentials(key, secret, token)``. They are
            frozen for each request, so refreshable ones refresh themselves
            before they expire.
        service: the signing name (``bedrock`` for Bedrock Runtime).

    Raises:
        ConfigError: botocore is missing, no credentials (the chain found
            none: ``get_credentials()`` returned None), or a region that is not
            a str.
    """

    def __init__(self, region: str, credentials: Any, *, service: str = "bedrock") -> None:
        require()
        if not isinstance(region, str) or not region:
            raise ConfigError(f"region must be an AWS Region code such as 'us-east-1', got {region!r}")
        if not hasattr(credentials, "get_frozen_credentials"):
            raise ConfigError(
                "aws_credentials must be botocore credentials (botocore.session.get_session()"
                f".get_credentials(), or botocore.credentials.Credentials(key, secret, token)), got "
                f"{type(credentials).__name__}"
            )
        self._region = region
        self._credentials = credentials
        self._service = service
        self._lock = threading.Lock()
        self._refused: dict[str, str] | None = None
        """The headers of the last request AWS refused as expired (guarded by ``_lock``)."""

    def __repr__(self) -> str:
        return f"SigV4(region={self._region!r}, service={self._service!r})"

    def sign(self, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        """The SigV4 headers of a POST of ``body`` to ``url`` with ``headers``.

        When AWS refused the credentials they are (:meth:`refused`: an
        ``ExpiredTokenException``), refreshable ones are refreshed at once
        before signing (botocore has no public call for that: its refresh
        under its own lock).

        Raises:
            ModelError: ``AUTH`` when the credentials cannot be had (a
                refresh failed: an SSO session that expired), the cause
                chained.
        """
        botocore = require()
        try:
            frozen = self._credentials.get_frozen_credentials()
            with self._lock:
                stale = self._refused is not None and _signed_with(self._refused, frozen)
            if stale:
                frozen = self._refreshed()
        except Exception as exc:
            raise ModelError(
                ErrorClass.AUTH,
                err=exc,
                message=f"the AWS credentials could not be had: {type(exc).__name__}: {exc}"[:500],
            ) from exc
        request = botocore.awsrequest.AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
        botocore.auth.SigV4Auth(frozen, self._service, self._region).add_auth(request)
        return {name: request.headers[name] for name in _SIGNED if name in request.headers}

    def refused(self, signed: Mapping[str, str]) -> None:
        """AWS refused the credentials ``signed`` was signed with as expired:
        while they are still the current ones, :meth:`sign` refreshes them first."""
        with self._lock:
            self._refused = dict(signed)

    def _refreshed(self) -> Any:
        """The credentials refreshed now (refreshable ones), frozen."""
        lock = getattr(self._credentials, "_refresh_lock", None)
        refresh = getattr(self._credentials, "_protected_refresh", None)
        if lock is not None and refresh is not None:
            with lock:
                refresh(is_mandatory=True)
        return self._credentials.get_frozen_credentials()


def _signed_with(headers: Mapping[str, str], frozen: Any) -> bool:
    """``headers`` were signed with ``frozen``: their ``Authorization``
    names its access key, and their security token is its token."""
    lower = {name.lower(): value for name, value in headers.items()}
    token = lower.get("x-amz-security-token")
    same_key = f"Credential={frozen.access_key}/" in lower.get("authorization", "")
    return same_key and token == frozen.token


def event_stream(
    chunks: Iterable[bytes],
    *,
    idle_timeout: float | None,
    clock: Callable[[], float] = time.monotonic,
) -> Generator[Event, None, None]:
    """The messages of an AWS event stream
    (https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html
    describes the framing: a prelude of lengths, headers, a payload, CRC32s),
    decoded by botocore's ``EventStreamBuffer``.

    Args:
        chunks: the body, in reads of any size (a message may span reads).
        idle_timeout: seconds allowed without a message, measured as
            :func:`agentcore.transport.sse.iter_events` does: after each read,
            from the end of the read that last gave one (time the consumer
            takes over the events does not count); None for no limit.
        clock: monotonic clock in seconds, for tests.

    Yields:
        For each ``event`` message, ``Event(event=<its :event-type>,
        data=<its JSON payload>)``.

    Raises:
        ModelError: for an ``exception`` message, the class of its
            ``:exception-type`` (:func:`agentcore.transport.errors.aws_error_class`:
            ``throttlingException`` rate-limited, ``modelStreamErrorException``
            transient...) with its message; for an ``error`` message, the class
            of its ``:error-code``; ``TRANSIENT`` for a message cut at the end
            of the body or the idle timeout; ``UPSTREAM`` for a CRC mismatch,
            malformed framing or a payload that is not JSON. Errors raised
            by ``chunks`` pass through unchanged.
    """
    eventstream = require().eventstream
    buffer = eventstream.EventStreamBuffer()
    added = consumed = 0
    last_content = clock()
    for chunk in chunks:
        if not chunk:
            continue
        if idle_timeout is not None and clock() - last_content > idle_timeout:
            raise ModelError(
                ErrorClass.TRANSIENT,
                message=f"no content from the server for {idle_timeout:g} s (idle timeout)",
            )
        buffer.add_data(chunk)
        added += len(chunk)
        content = False
        while True:
            try:
                message = next(buffer, None)
            except eventstream.ParserError as exc:
                text = f"malformed AWS event stream ({type(exc).__name__}: {exc})"[:500]
                raise ModelError(ErrorClass.UPSTREAM, err=exc, message=text) from exc
            if message is None:
                break
            consumed += message.prelude.total_length
            content = True
            yield _event(message.headers, message.payload)
        if content:
            last_content = clock()
    if added != consumed:
        raise ModelError(
            ErrorClass.TRANSIENT,
            message=f"the stream was cut in the middle of an event-stream message ({added - consumed} bytes)",
        )


def _event(headers: Mapping[str, Any], payload: bytes) -> Event:
    """The event of one message, or the error it reports."""
    kind = headers.get(":message-type", "event")
    if kind == "event":
        try:
            data = json.loads(payload) if payload else {}
        except (ValueError, RecursionError) as exc:
            text = f"an event-stream message holds no JSON: {payload[:200]!r}"
            raise ModelError(ErrorClass.UPSTREAM, err=exc, message=text) from exc
        return Event(str(headers.get(":event-type", "")), data)
    if kind == "exception":
        name = str(headers.get(":exception-type", ""))
        try:
            body = json.loads(payload)
        except (ValueError, RecursionError):
            body = None
        said = body.get("message") or body.get("Message") if isinstance(body, dict) else None
        message = said if isinstance(said, str) else payload[:500].decode("utf-8", "replace")
        raise ModelError(aws_error_class(name, message), message=f"{name}: {message}"[:2000])
    if kind == "error":
        code = str(headers.get(":error-code", ""))
        message = str(headers.get(":error-message", ""))
        raise ModelError(aws_error_class(code, message), message=f"{code}: {message}"[:2000])
    raise ModelError(ErrorClass.UPSTREAM, message=f"an event-stream message of unknown type {kind!r}")


def invoke_events(
    chunks: Iterable[bytes],
    *,
    idle_timeout: float | None,
    clock: Callable[[], float] = time.monotonic,
) -> Generator[Event, None, None]:
    """The model's own events of an InvokeModelWithResponseStream body: each
    ``chunk`` event (``{"bytes": "<base64>"}``, the ``PayloadPart`` of
    https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_PayloadPart.html)
    holds one event of the model's API, JSON in base64; for Claude, one
    Messages API stream event, yielded as ``Event(event=<its "type">,
    data=<the event>)`` so the Anthropic stream mapping reads it as it reads
    Server-Sent Events. Other events are passed over.

    Args:
        chunks, idle_timeout, clock: as for :func:`event_stream`.

    Raises:
        ModelError: as :func:`event_stream`; ``UPSTREAM`` for a chunk without
            base64 ``bytes`` holding a JSON object.
    """
    for event in event_stream(chunks, idle_timeout=idle_timeout, clock=clock):
        if event.event != "chunk":
            continue
        encoded = event.data.get("bytes") if isinstance(event.data, dict) else None
        try:
            inner = json.loads(base64.b64decode(encoded, validate=True)) if isinstance(encoded, str) else None
        except (binascii.Error, ValueError, RecursionError) as exc:
            text = f"a chunk's bytes are not base64 JSON: {str(encoded)[:200]!r}"
            raise ModelError(ErrorClass.UPSTREAM, err=exc, message=text) from exc
        if not isinstance(inner, dict):
            raise ModelError(ErrorClass.UPSTREAM, message=f"a chunk holds no event: {event.data!r}"[:300])
        yield Event(str(inner.get("type", "")), inner)


def _region_of(base_url: str) -> str | None:
    """The Region named in ``base_url``'s host (``bedrock-runtime.us-east-1.amazonaws.com``,
    a VPC endpoint's ``vpce-1a2b.bedrock-runtime.us-east-1.vpce.amazonaws.com``)."""
    host = urllib.parse.urlsplit(base_url).hostname or ""
    return next((label for label in host.split(".") if _REGION.fullmatch(label)), None)


def bedrock_signer(
    api_key: str | None, aws_credentials: Any, region: str | None, base_url: str | None
) -> Signer | None:
    """How a Bedrock model signs in: None for a Bedrock API key (sent as
    ``Authorization: Bearer``,
    https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html), else
    a :class:`SigV4` signer of ``aws_credentials`` for ``region`` (or the
    Region of ``base_url``'s host), or ``aws_credentials`` itself when it is
    already a :class:`agentcore.providers.endpoint.Signer`.

    Raises:
        ConfigError: botocore is missing (every Bedrock model reads AWS
            event streams); neither or both of ``api_key`` and
            ``aws_credentials``; credentials without a Region to sign for;
            as :class:`SigV4` raises.
    """
    require()
    if api_key and aws_credentials is not None:
        raise ConfigError(
            "pass api_key= or aws_credentials=, not both (each says how requests are signed in)"
        )
    if not api_key and aws_credentials is None:
        raise ConfigError(
            "Bedrock needs api_key= (a Bedrock API key, sent as Authorization: Bearer) or aws_credentials= "
            "(botocore credentials, signed with SigV4: botocore.session.get_session().get_credentials(), "
            "which is None when the chain finds none: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY)"
        )
    if aws_credentials is None:
        return None
    if isinstance(aws_credentials, Signer):
        return aws_credentials
    signing = region or (_region_of(base_url) if base_url else None)
    if signing is None:
        raise ConfigError(
            f"base_url {base_url!r} names no AWS Region to sign for: pass region= with base_url= "
            "(the Region the requests are signed for)"
        )
    return SigV4(signing, aws_credentials)
