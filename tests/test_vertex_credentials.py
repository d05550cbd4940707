"""``google_credentials``: google-auth's credentials as an adapter's
``credentials`` callable (when it refreshes, the expiry it reports, its
lock), on a stand-in with google-auth's ``Credentials`` interface (``token``,
``expiry`` as a naive UTC datetime, ``valid``, ``refresh(request)``)."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest

from agentcore.errors import ConfigError, ErrorClass, ModelError
from agentcore.providers.endpoint import Token, TokenCache
from agentcore.providers.vertex.credentials import google_credentials
from tests.loop_helpers import wait_until

TOKEN_HEADER = ("Authorization", "Bearer {token}")


def utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Stand:
    """google-auth's credentials interface: ``refresh`` issues ``t1``, ``t2``...,
    each valid ``lifetime`` seconds; ``checks`` counts the ``valid`` reads."""

    def __init__(self, token: str | None = None, lifetime: float = 3600, valid: bool = True) -> None:
        self.token, self.lifetime, self._valid = token, lifetime, valid
        self.expiry = utcnow() + datetime.timedelta(seconds=lifetime) if token else None
        self.refreshes = 0
        self.checks = 0
        self.inside = 0
        self.most_inside = 0
        self.gate: threading.Event | None = None
        self.lock = threading.Lock()

    @property
    def valid(self) -> bool:
        self.checks += 1
        return self._valid and self.token is not None

    def refresh(self, request: Any) -> None:
        with self.lock:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
        if self.gate is not None:
            self.gate.wait(5)
        with self.lock:
            self.refreshes += 1
            self.token = f"t{self.refreshes}"
            self.expiry = utcnow() + datetime.timedelta(seconds=self.lifetime)
            self._valid = True
            self.inside -= 1


def epoch(expiry: datetime.datetime | None) -> float:
    assert expiry is not None
    return expiry.replace(tzinfo=datetime.timezone.utc).timestamp()


def test_valid_credentials_are_shared_and_a_refused_token_is_refreshed_once() -> None:
    stand = Stand("t0")
    bridge = google_credentials(stand)
    first, second = TokenCache(bridge, TOKEN_HEADER), TokenCache(bridge, TOKEN_HEADER)
    assert bridge() == Token("t0", epoch(stand.expiry))
    # two adapters sharing the callable both send the valid token, without a refresh
    assert first.headers() == second.headers() == {"Authorization": "Bearer t0"}
    assert stand.refreshes == 0
    # a 401 to the first: its token is refused, for every adapter sharing the callable
    first.refused({"Authorization": "Bearer t0"})
    assert first.headers() == {"Authorization": "Bearer t1"}
    assert stand.refreshes == 1
    assert bridge() == Token("t1", epoch(stand.expiry))  # asked again: no second refresh
    # the second adapter's cached t0 is refused late: t1 is current, so nothing is refreshed
    second.refused({"Authorization": "Bearer t0"})
    assert (second.headers(), stand.refreshes) == ({"Authorization": "Bearer t1"}, 1)


def test_a_token_endpoint_out_of_reach_is_transient() -> None:
    import google.auth.exceptions

    class Unreachable(Stand):
        def refresh(self, request: Any) -> None:
            raise google.auth.exceptions.TransportError("Connection refused")  # type: ignore[no-untyped-call]  # google-auth ships no annotation for it

    with pytest.raises(ModelError) as caught:
        TokenCache(google_credentials(Unreachable()), TOKEN_HEADER).headers()
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "could not be reached: Connection refused" in caught.value.message


@pytest.mark.parametrize(
    ("stand", "why"),
    [
        (Stand(), "no token yet"),
        (Stand("t0", valid=False), "google-auth says not valid"),
        (Stand("t0", lifetime=200), "expiring within 300 s"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_credentials_are_refreshed_first_when_they_need_it(stand: Stand, why: str) -> None:
    token = google_credentials(stand)()
    assert isinstance(token, Token)
    assert (token.value, stand.refreshes) == ("t1", 1), why
    assert token.expires_at == pytest.approx(epoch(stand.expiry))


def test_one_refresh_at_a_time_whichever_thread_asks() -> None:
    stand = Stand()
    stand.gate = threading.Event()
    bridge = google_credentials(stand)
    got: list[Any] = []
    asked = []

    def ask() -> None:
        asked.append(1)
        got.append(bridge())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    assert wait_until(lambda: len(asked) == 8 and stand.inside == 1)
    # the first refresh is held open while the other seven ask: none of them got in to look
    assert (stand.checks, stand.most_inside) == (1, 1)
    stand.gate.set()
    for thread in threads:
        thread.join(5)
    assert (stand.checks, stand.most_inside, stand.refreshes) == (8, 1, 1)
    assert [t.value for t in got] == ["t1"] * 8  # the others found it valid once it came


def test_something_that_is_not_google_auth_credentials_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="google_credentials needs google-auth credentials"):
        google_credentials("ya29.a-token")
