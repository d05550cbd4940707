"""``google_credentials``: google-auth's credentials as an adapter's
``credentials`` callable (when it refreshes, the expiry it reports, its
lock), on a stand-in with google-auth's ``Credentials`` interface (``token``,
``expiry`` as a naive UTC datetime, ``valid``, ``refresh(request)``)."""

from __future__ import annotations

import datetime
import threading
from typing import Any

import pytest

from agentcore.errors import ConfigError
from agentcore.providers.endpoint import Token
from agentcore.providers.vertex.credentials import google_credentials
from tests.loop_helpers import wait_until


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


def test_valid_credentials_are_used_as_they_are_then_refreshed_when_asked_again() -> None:
    stand = Stand("t0")
    bridge = google_credentials(stand)
    assert bridge() == Token("t0", epoch(stand.expiry))
    assert stand.refreshes == 0
    # the adapter asks again only for another token (its own is expiring, or was refused with 401)
    second = bridge()
    assert (second.value if isinstance(second, Token) else second, stand.refreshes) == ("t1", 1)


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
    assert (stand.checks, stand.most_inside) == (8, 1)
    assert sorted(t.value for t in got) == sorted(f"t{n}" for n in range(1, 9))


def test_something_that_is_not_google_auth_credentials_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="google_credentials needs google-auth credentials"):
        google_credentials("ya29.a-token")
