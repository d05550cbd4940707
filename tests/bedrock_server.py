"""A local Bedrock Runtime on 127.0.0.1 that checks what AWS checks, for
the Bedrock adapters' tests (built on :class:`tests.localserver.LocalServer`).

* **Signing in.** A request signed with SigV4 has its signature computed
  again with the test credentials (botocore's ``SigV4Auth``, on the method,
  URL, signed headers and body bytes the server received, at the request's
  own ``X-Amz-Date``). A signature that does not match gets AWS's 403
  ``InvalidSignatureException`` ("The request signature we calculated does
  not match the signature you provided..."); an unknown access key or
  security token AWS's 403 ``UnrecognizedClientException``; a token the
  server was told has expired (:attr:`BedrockServer.expired_tokens`) AWS's
  403 ``ExpiredTokenException``; a request without ``Authorization`` AWS's
  403 ``MissingAuthenticationTokenException``
  (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html).
  A Bedrock API key goes in ``Authorization: Bearer``
  (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html).
* **Errors** as Bedrock sends them: a JSON body ``{"message": ...}`` with
  the error's type in ``x-amzn-ErrorType`` (:func:`error_reply`).
* **Streams** of real event-stream frames (prelude, headers, CRC32s:
  :func:`frame`, checked by decoding with botocore in
  tests/test_aws.py), ``event`` and ``exception`` messages
  (:func:`event_frame`, :func:`exception_frame`), and the ``chunk`` events
  of InvokeModelWithResponseStream (:func:`chunk_frame`).

What a request is answered with, once signed in, is the test's:
:class:`BedrockServer` passes it to the ``respond`` function it was made
with, with the model id and the operation read from the path
(``/model/{modelId}/{operation}``).
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, ReadOnlyCredentials

from tests.localserver import Action, LocalServer, Pause, Reply

REGION = "us-east-1"
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_ACCESS_KEY = "ASIAIOSFODNN7SESSION"
SESSION_SECRET_KEY = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLE-session-token-1"
API_KEY = "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlLWtleQ=="
"""A Bedrock API key (a long-term key's ``ABSK`` form)."""

EVENT_STREAM = "application/vnd.amazon.eventstream"

SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)
UNRECOGNIZED = "The security token included in the request is invalid."
EXPIRED = "The security token included in the request is expired"
MISSING = "Missing Authentication Token"
_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.coral.service/"


def credentials(session: bool = False) -> Credentials:
    """The test credentials: long-term, or temporary ones with a token."""
    if session:
        return Credentials(SESSION_ACCESS_KEY, SESSION_SECRET_KEY, SESSION_TOKEN)
    return Credentials(ACCESS_KEY, SECRET_KEY)


# --- the event-stream encoding ------------------------------------------------------------------


def frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message: ``[total length][headers length][prelude
    CRC32][headers][payload][message CRC32]``, big-endian, every header a
    string (type 7: ``[name length u8][name][7][value length u16][value]``)."""
    encoded = b"".join(
        struct.pack("!B", len(name.encode()))
        + name.encode()
        + struct.pack("!BH", 7, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    head = prelude + struct.pack("!I", binascii.crc32(prelude))
    message = head + encoded + payload
    return message + struct.pack("!I", binascii.crc32(message))


def event_frame(event_type: str, payload: Any) -> bytes:
    """An ``event`` message whose payload is ``payload`` as JSON."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(payload).encode())


def exception_frame(exception_type: str, message: str) -> bytes:
    """An ``exception`` message (``throttlingException``...), as Bedrock
    reports an error in a stream: the payload ``{"message": ...}``."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return frame(headers, json.dumps({"message": message}).encode())


def chunk_frame(event: Mapping[str, Any], padding: str = "abcdefghij") -> bytes:
    """An InvokeModelWithResponseStream ``chunk`` event holding ``event`` (one
    of the model's stream events) in base64, with Bedrock's ``p`` padding."""
    inner = base64.b64encode(json.dumps(event).encode()).decode()
    return event_frame("chunk", {"bytes": inner, "p": padding})


# --- replies ------------------------------------------------------------------------------------


def error_reply(status: int, error_type: str, message: str) -> Reply:
    """An error as Bedrock sends it: ``{"message": ...}`` and the type in
    ``x-amzn-ErrorType``."""
    headers = {
        "Content-Type": "application/json",
        "x-amzn-ErrorType": f"{error_type}:{_NAMESPACE}",
        "x-amzn-RequestId": "6f1a9c2e-0000-4000-8000-000000000000",
    }
    return Reply(
        status=status, actions=[json.dumps({"message": message}).encode()], headers=headers, chunked=False
    )


def stream_reply(
    frames: list[bytes], *, piece: int = 0, pause: float = 0.0, tail: list[Action] | None = None
) -> Reply:
    """A 200 event stream of ``frames``, written whole or in pieces of
    ``piece`` bytes (a message then spans writes), with ``tail`` actions
    after (a stall, a reset)."""
    body = b"".join(frames)
    actions: list[Action] = []
    if piece <= 0:
        actions.append(body)
    else:
        for i in range(0, len(body), piece):
            actions.append(body[i : i + piece])
            if pause:
                actions.append(Pause(pause))
    headers = {"Content-Type": EVENT_STREAM, "X-Amzn-Bedrock-Content-Type": "application/json"}
    return Reply(actions=[*actions, *(tail or [])], headers=headers)


# --- signing in ---------------------------------------------------------------------------------


def _header(record: Mapping[str, Any], name: str) -> str | None:
    for key, value in record["headers"].items():
        if key.lower() == name:
            return str(value)
    return None


def signature_matches(record: Mapping[str, Any], secret: ReadOnlyCredentials, region: str = REGION) -> bool:
    """The request's SigV4 signature is the one botocore computes with
    ``secret`` for what the server received (its signed headers, its body's
    bytes, its ``X-Amz-Date``, its credential scope's date and ``region``)."""
    authorization = _header(record, "authorization") or ""
    fields = dict(
        part.strip().split("=", 1)
        for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(",")
        if "=" in part
    )
    signed = fields.get("SignedHeaders", "").split(";")
    headers = {name: _header(record, name) or "" for name in signed}
    host = headers.pop("host", _header(record, "host") or "")
    request = AWSRequest(
        method=record["method"], url=f"http://{host}{record['path']}", data=record["raw"], headers=headers
    )
    request.context["timestamp"] = _header(record, "x-amz-date") or ""
    auth = SigV4Auth(secret, "bedrock", region)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return fields.get("Signature") == expected and fields.get("Credential", "").endswith(
        f"/{region}/bedrock/aws4_request"
    )


class BedrockServer:
    """Bedrock Runtime's checks on 127.0.0.1, then the test's answer.

    Args:
        respond: what a signed-in request gets: called with the request's
            record (:class:`tests.localserver.LocalServer`), the model id
            and the operation (``invoke-with-response-stream``,
            ``converse-stream``).

    Attributes:
        server: the :class:`tests.localserver.LocalServer` (``url``,
            ``requests``).
        expired_tokens: security tokens answered ``ExpiredTokenException``.
        api_keys: the Bedrock API keys accepted as ``Authorization: Bearer``.
        keys: access key -> (secret key, security token or None) accepted.
        refused: how many requests were refused at sign-in.
    """

    def __init__(self, respond: Callable[[dict[str, Any], str, str], Reply], region: str = REGION) -> None:
        self.respond = respond
        self.region = region
        self.expired_tokens: set[str] = set()
        self.api_keys = {API_KEY}
        self.keys: dict[str, tuple[str, str | None]] = {
            ACCESS_KEY: (SECRET_KEY, None),
            SESSION_ACCESS_KEY: (SESSION_SECRET_KEY, SESSION_TOKEN),
        }
        self.refused = 0
        self.server = LocalServer(responder=self._respond)

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        self.server.close()

    def _respond(self, record: dict[str, Any]) -> Reply:
        refusal = self._sign_in(record)
        if refusal is not None:
            self.refused += 1
            return refusal
        parts = record["path"].split("?")[0].split("/")
        if len(parts) != 4 or parts[1] != "model":
            return error_reply(404, "UnknownOperationException", "")
        return self.respond(record, urllib.parse.unquote(parts[2]), parts[3])

    def _sign_in(self, record: dict[str, Any]) -> Reply | None:
        authorization = _header(record, "authorization")
        if authorization is None:
            return error_reply(403, "MissingAuthenticationTokenException", MISSING)
        if authorization.startswith("Bearer "):
            if authorization.removeprefix("Bearer ") in self.api_keys:
                return None
            return error_reply(403, "UnrecognizedClientException", UNRECOGNIZED)
        token = _header(record, "x-amz-security-token")
        if token is not None and token in self.expired_tokens:
            return error_reply(403, "ExpiredTokenException", EXPIRED)
        access_key = authorization.partition("Credential=")[2].split("/", 1)[0]
        known = self.keys.get(access_key)
        if known is None or known[1] != token:
            return error_reply(403, "UnrecognizedClientException", UNRECOGNIZED)
        if not signature_matches(record, ReadOnlyCredentials(access_key, known[0], token), self.region):
            return error_reply(403, "InvalidSignatureException", SIGNATURE_MISMATCH)
        return None
