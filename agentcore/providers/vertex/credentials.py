"""google-auth's credentials as an adapter's ``credentials`` callable:
:func:`google_credentials`.

google-auth (the ``agentcore[google]`` extra) is imported here only when the
bridge is made, never by ``import agentcore``.
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers.endpoint import REFRESH_SECONDS, Token

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope Vertex AI's REST API takes
(https://cloud.google.com/vertex-ai/docs/authentication): ask
``google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])`` for it."""
INSTALL = "pip install 'agentcore[google]'"


def _requests_transport() -> Any:
    """google-auth's HTTP transport for refreshing, on a session that reads
    no environment (design.md: sessions the library makes do not)."""
    try:
        import google.auth.transport.requests
        import requests
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ConfigError(f"Vertex AI credentials need google-auth: {INSTALL}") from exc
    session = requests.Session()
    session.trust_env = False
    return google.auth.transport.requests.Request(session)


def _epoch(expiry: datetime.datetime | None) -> float | None:
    """google-auth's ``expiry`` (a naive datetime in UTC) in seconds since the epoch."""
    if expiry is None:
        return None
    if expiry.tzinfo is None:
        expiry = expiry.replace(tzinfo=datetime.timezone.utc)
    return expiry.timestamp()


def google_credentials(credentials: Any) -> GoogleCredentials:
    """The ``credentials`` callable of a Vertex AI adapter, from google-auth's
    credentials (``google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])[0]``: a
    service account, Application Default Credentials from ``gcloud auth
    application-default login``, a metadata server, workload identity); one
    can be shared by several adapters (:class:`GoogleCredentials`).

    Args:
        credentials: a ``google.auth.credentials.Credentials``.

    Returns:
        A :data:`agentcore.providers.endpoint.Credentials` callable.

    Raises:
        ConfigError: google-auth is not installed (``agentcore[google]``), or
            ``credentials`` has no ``refresh`` method.
    """
    if not callable(getattr(credentials, "refresh", None)):
        raise ConfigError(
            "google_credentials needs google-auth credentials (e.g. google.auth.default("
            f"scopes=[{CLOUD_PLATFORM_SCOPE!r}])[0]), got {type(credentials).__name__}"
        )
    return GoogleCredentials(credentials, _requests_transport())


class GoogleCredentials:
    """google-auth's credentials as a ``credentials`` callable
    (:func:`google_credentials` makes one).

    Called, it returns a :class:`agentcore.providers.endpoint.Token` (the
    access token, its ``expiry`` in seconds since the epoch), refreshing the
    credentials first, under a lock (one refresh at a time, whichever thread
    or adapter asks), when google-auth says they are not valid, when they
    expire within :data:`agentcore.providers.endpoint.REFRESH_SECONDS` (an
    adapter asks that early), or when a server refused their token (an
    adapter tells it through :meth:`refused` after a 401): a token refused
    once is not sent again, by any adapter sharing the callable, while a
    valid one is handed to each of them. The refresh goes through
    google-auth's ``requests`` transport, on a session that reads no proxy
    variables.

    Raises (from the call, through the adapter):
        ModelError: ``AUTH`` when the refresh was refused (google-auth's
            ``RefreshError``: a revoked key, a token endpoint that refused the
            assertion; not retried); ``TRANSIENT`` when the token endpoint
            could not be reached (google-auth's ``TransportError``: retried
            as the step is); the cause chained.
    """

    def __init__(self, credentials: Any, transport: Any) -> None:
        self._credentials = credentials
        self._transport = transport
        self._lock = threading.Lock()
        self._refused: set[str] = set()
        """Tokens a server refused (guarded by ``_lock``)."""

    def __call__(self) -> Token:
        credentials = self._credentials
        with self._lock:
            expires_at = _epoch(credentials.expiry)
            soon = expires_at is not None and expires_at - REFRESH_SECONDS <= time.time()
            if not credentials.valid or soon or credentials.token in self._refused:
                self._refresh()
                expires_at = _epoch(credentials.expiry)
            return Token(credentials.token, expires_at)

    def refused(self, token: str) -> None:
        """A server refused ``token`` (a 401): the next call refreshes while
        the credentials still hold it."""
        with self._lock:
            self._refused = {token} if token == self._credentials.token else set()

    def _refresh(self) -> None:
        import google.auth.exceptions

        try:
            self._credentials.refresh(self._transport)
        except google.auth.exceptions.TransportError as exc:
            raise ModelError(
                ErrorClass.TRANSIENT,
                err=exc,
                message=f"the Google token endpoint could not be reached: {exc}"[:500],
            ) from exc
        self._refused.clear()
