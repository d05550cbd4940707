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

from agentcore.errors import ConfigError
from agentcore.providers.endpoint import REFRESH_SECONDS, Credentials, Token

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


def google_credentials(credentials: Any) -> Credentials:
    """The ``credentials`` callable of a Vertex AI adapter, from google-auth's
    credentials (``google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])[0]``: a
    service account, Application Default Credentials from ``gcloud auth
    application-default login``, a metadata server, workload identity).

    The callable returns a :class:`agentcore.providers.endpoint.Token` (the
    access token, its ``expiry`` in seconds since the epoch), refreshing the
    credentials first, under a lock (one refresh at a time, whichever thread
    asks), when google-auth says they are not valid, when they expire within
    :data:`agentcore.providers.endpoint.REFRESH_SECONDS` (the adapter asks
    that early), or when their token is the one it handed out last: the
    adapter asks again only for a new token (its own is about to expire, or
    the server answered 401), and a token refused once is not sent again.
    The refresh goes through google-auth's ``requests`` transport, on a
    session that reads no proxy variables.

    Args:
        credentials: a ``google.auth.credentials.Credentials``.

    Returns:
        A :data:`agentcore.providers.endpoint.Credentials` callable.

    Raises:
        ConfigError: google-auth is not installed (``agentcore[google]``), or
            ``credentials`` has no ``refresh`` method.
        (from the callable, through the adapter) ModelError: ``AUTH`` when
            the refresh failed (google-auth's ``RefreshError``: a revoked
            key, a token endpoint that refused the assertion), the cause
            chained; not retried.
    """
    if not callable(getattr(credentials, "refresh", None)):
        raise ConfigError(
            "google_credentials needs google-auth credentials (e.g. google.auth.default("
            f"scopes=[{CLOUD_PLATFORM_SCOPE!r}])[0]), got {type(credentials).__name__}"
        )
    transport = _requests_transport()
    lock = threading.Lock()
    handed: list[str] = []

    def token() -> Token:
        with lock:
            expires_at = _epoch(credentials.expiry)
            soon = expires_at is not None and expires_at - REFRESH_SECONDS <= time.time()
            if not credentials.valid or soon or (handed and handed[-1] == credentials.token):
                credentials.refresh(transport)
                expires_at = _epoch(credentials.expiry)
            handed[:] = [credentials.token]
            return Token(credentials.token, expires_at)

    return token
