"""Where and how a wire format is reached, apart from what it says.

A model speaks a wire format (the request and stream mappings of its
package); the same format is served at several places, each reached its own
way: the Anthropic Messages API at api.anthropic.com (the model id in the
body, the key in ``x-api-key``, the version in a header) and on a cloud (the
model id in the URL's path, the version in the body, a bearer token that
expires); the OpenAI APIs at api.openai.com and on Azure OpenAI (the key in
``api-key``, or an Entra ID token). Two values say the difference:

* :class:`Endpoint`: the path under ``base_url`` (with ``{model}`` where the
  model id goes in the path), the default headers, the header an API key
  and a token go in, the fields added to or left out of every body, and the
  framing of the stream. Each adapter has its API's own; its ``endpoint=``
  option takes another.
* the ``credentials`` option every adapter takes: a callable returning a
  bearer token (a ``str``, or a :class:`Token` with its expiry), called
  before a request (:class:`TokenCache`), for credentials that expire; or a
  :class:`Signer`, which computes the headers of each request from its URL
  and body (AWS's SigV4, :class:`agentcore.providers.aws.SigV4`).

Adapters read no environment: a token comes from the caller's callable
(``azure.identity.get_bearer_token_provider(...)``, google-auth's
credentials, a company's token service), never from a file or variable
agentcore reads.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.transport.headers import credential, header_dict
from agentcore.transport.sse import iter_events

if TYPE_CHECKING:
    from agentcore.providers.shell import Framing

REFRESH_SECONDS = 300.0
"""A cached :class:`Token` is refreshed this many seconds before its
``expires_at``: a request never leaves with a token about to expire on the
way (azure-core's bearer token policy refreshes five minutes early too)."""

MODEL_SAFE = "@"
"""The characters besides letters, digits and ``_.-~`` a model id keeps
unencoded in a path: Vertex AI's ``claude-sonnet-4@20250514``; a ``/`` or
``:`` (an ARN, Bedrock's ``...-v1:0``) is percent-encoded, as one path
segment."""


@attrs.frozen
class Token:
    """A bearer token and when it expires.

    Attributes:
        value: the token, sent as the endpoint's ``token_header`` says
            (``Authorization: Bearer {token}``); never shown in ``repr``.
        expires_at: when it expires, in seconds since the epoch (the
            ``time.time()`` clock; azure-identity's ``AccessToken.expires_on``
            is one); None: it does not say (kept until a 401).

    ``Token(*credential.get_token(scope))`` makes one of an azure-identity
    ``AccessToken``.
    """

    value: str = attrs.field(repr=False)
    expires_at: float | None = None


Credentials = Callable[[], str | Token]
"""The ``credentials`` option: called with no arguments before a request,
it returns the bearer token to send: a ``str`` (called again before every
request: the callable caches, as azure-identity's
``get_bearer_token_provider`` does) or a :class:`Token` (cached by the
adapter until :data:`REFRESH_SECONDS` before its ``expires_at``)."""


@runtime_checkable
class Signer(Protocol):
    """What signs a request in: called before each request is sent, with what
    it sends, for the headers that sign it in. :class:`TokenCache` (a bearer
    token) and :class:`agentcore.providers.aws.SigV4` (a signature over the
    URL, the headers and the body) are two.
    """

    def sign(self, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        """The headers to add to a request.

        Args:
            url: the request's URL, exactly as it is sent (the model id
                percent-encoded in its path).
            headers: the request's own headers (the adapter's and the
                request's), which the signed headers go over.
            body: the request's body, the exact bytes sent.

        Returns:
            The headers to add (they replace ``headers`` of the same name).

        Raises:
            ModelError: ``AUTH`` when no credentials can be had (not
                retried), ``TRANSIENT`` when they could not be had for now
                (a token service out of reach).
        """
        ...

    def refused(self, signed: Mapping[str, str]) -> None:
        """The server refused a request signed with ``signed`` (the headers it
        was sent with) as signed in with expired or revoked credentials (a
        401, or AWS's expired-token 403): what made them is not used again
        (the next :meth:`sign` gets new credentials)."""
        ...


def _path(path: str) -> str:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise ConfigError(f"an endpoint's path must be a str starting with '/' (or ''), got {path!r}")
    return path


def _header_template(value: tuple[str, str]) -> tuple[str, str]:
    if not (isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise ConfigError(f"a header template must be a (name, value) pair of str, got {value!r}")
    return value


def _fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return dict(fields)


def _names(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    return tuple(names)


@attrs.frozen
class Endpoint:
    """Where a wire format is reached under ``base_url``, and how.

    Attributes:
        path: appended to ``base_url`` (``"/v1/messages"``); ``{model}``
            stands for the model id, percent-encoded as one path segment
            (:data:`MODEL_SAFE`): ``"/model/{model}/invoke-with-response-stream"``.
        headers: the endpoint's default headers (content types, a version):
            the adapter's ``headers`` option and ``Request.headers`` go over
            them.
        key_header: the header an ``api_key`` goes in and its value,
            ``{key}`` standing for the key: ``("x-api-key", "{key}")``,
            ``("api-key", "{key}")``.
        token_header: the header a token from ``credentials`` goes in,
            ``{token}`` standing for it: ``("Authorization", "Bearer {token}")``.
        body: fields added to every request body (``{"anthropic_version":
            "vertex-2023-10-16"}``), over the mapping's.
        omit: fields of the mapping's body left out of every request
            (``("model",)`` when the model id goes in the path).
        framing: bytes to events (:class:`agentcore.providers.shell.Framing`);
            Server-Sent Events by default.
        media_type: the content type of the stream ``framing`` reads, lower
            case, without parameters: a 200 body of that type is streamed.

    Raises:
        ConfigError: a ``path`` that is not empty and does not start with
            ``/``; a header template that is not a pair of str; headers that
            are not a mapping of str to str.
    """

    path: str = attrs.field(converter=_path)
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=header_dict)
    key_header: tuple[str, str] = attrs.field(
        default=("Authorization", "Bearer {key}"), converter=_header_template
    )
    token_header: tuple[str, str] = attrs.field(
        default=("Authorization", "Bearer {token}"), converter=_header_template
    )
    body: Mapping[str, Any] = attrs.field(factory=dict, converter=_fields)
    omit: tuple[str, ...] = attrs.field(default=(), converter=_names)
    framing: Framing = iter_events
    media_type: str = "text/event-stream"

    def url(self, base_url: str, model: str, path: str | None = None) -> str:
        """The URL of a request for ``model``: ``base_url`` and ``path`` (the
        endpoint's by default), its ``{model}`` replaced."""
        path = self.path if path is None else path
        if "{model}" in path:
            path = path.replace("{model}", urllib.parse.quote(model, safe=MODEL_SAFE))
        return base_url + path

    def request_body(self, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """``body`` (the mapping's) without the ``omit`` fields and with the
        ``body`` fields; ``body`` itself when there are none."""
        if not self.omit and not self.body:
            return body
        kept = {name: value for name, value in body.items() if name not in self.omit}
        return {**kept, **self.body}

    def key_headers(self, api_key: str | None) -> dict[str, str]:
        """The header an API key goes in; none for None or ""."""
        if not api_key:
            return {}
        name, value = self.key_header
        return {name: value.format(key=credential("api_key", api_key))}


class TokenCache:
    """The bearer token of one adapter's ``credentials`` callable, shared by
    every request it sends (thread-safe: the callable is called by one
    request at a time, and the others wait for its token). A
    :class:`Signer` whose headers do not depend on the request.

    A callable returning a ``str`` is called before every request; a
    :class:`Token` is kept until :data:`REFRESH_SECONDS` before its
    ``expires_at`` (a token without one is kept until a 401).

    Args:
        credentials: the :data:`Credentials` callable.
        header: the endpoint's ``token_header``.
        clock: seconds since the epoch (``time.time``), for tests.
    """

    def __init__(
        self,
        credentials: Credentials,
        header: tuple[str, str],
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not callable(credentials):
            raise ConfigError(
                f"credentials must be a callable returning a token (str or Token), got "
                f"{type(credentials).__name__}"
            )
        self._credentials = credentials
        self._header = header
        self._clock = clock
        self._lock = threading.Lock()
        self._token: Token | None = None

    def sign(self, url: str, headers: Mapping[str, str], body: bytes) -> dict[str, str]:
        """The token header (:meth:`headers`); ``url``, ``headers`` and
        ``body`` do not change it (the :class:`Signer` protocol)."""
        return self.headers()

    def headers(self) -> dict[str, str]:
        """The token header for the next request: the cached token while it
        is fresh, else a new one from the callable.

        Raises:
            ModelError: ``AUTH`` when the callable raised (the cause chained:
                azure-identity's ``ClientAuthenticationError``, a token
                service's refusal; not retried), or the callable's own
                :class:`ModelError` as it is (a ``TRANSIENT`` one is retried).
            ConfigError: the callable returned neither a str nor a
                :class:`Token`, or a token holding a line break.
        """
        with self._lock:
            token = self._token
            if token is None or not self._fresh(token):
                token = self._fetch()
            return {self._header[0]: self._value(token)}

    def refused(self, signed: Mapping[str, str]) -> None:
        """The server refused the token of ``signed`` (a 401): it is not sent
        again, by this adapter (the cache drops it) nor, when the callable
        has a ``refused(token)`` method (:func:`agentcore.providers.vertex.credentials.google_credentials`'s),
        by another adapter sharing the callable (it is told which token)."""
        value = signed.get(self._header[0])
        with self._lock:
            token = self._token
            if token is not None and value == self._value(token):
                self._token = None
        told = getattr(self._credentials, "refused", None)
        prefix, _, suffix = self._header[1].partition("{token}")
        if callable(told) and value is not None and value.startswith(prefix) and value.endswith(suffix):
            told(value[len(prefix) : len(value) - len(suffix)])

    def _value(self, token: Token) -> str:
        return self._header[1].format(token=token.value)

    def _fresh(self, token: Token) -> bool:
        return token.expires_at is None or self._clock() < token.expires_at - REFRESH_SECONDS

    def _fetch(self) -> Token:
        """A token from the callable, kept when it has an expiry (or none)."""
        try:
            got = self._credentials()
        except ModelError:
            raise  # the callable's own class (a token service out of reach is TRANSIENT)
        except Exception as exc:
            raise ModelError(
                ErrorClass.AUTH,
                err=exc,
                message=f"the credentials callable raised {type(exc).__name__}: {exc}"[:500],
            ) from exc
        token = Token(got) if isinstance(got, str) else got
        if not isinstance(token, Token) or not isinstance(token.value, str):
            raise ConfigError(
                f"credentials must return a token (a str or an agentcore.providers.endpoint.Token), "
                f"got {type(got).__name__}"
            )
        credential("the token credentials returned", token.value)
        self._token = None if isinstance(got, str) else token  # a plain str is the callable's to cache
        return token
