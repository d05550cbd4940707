"""Canned answers for an adapter on the in-memory transport
(:mod:`agentcore.transport.memory`): the counterparts of the replies of
``tests/localserver.py``, for the tests that need no socket."""

from __future__ import annotations

import json
from typing import Any

from agentcore.transport.memory import Reply


def json_answer(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    """A JSON document (an error body) with ``status``; ``payload`` as bytes is sent as it is."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return Reply.of(body, status=status, headers={"content-type": "application/json", **(headers or {})})
