"""The fault server in a process of its own, for measurements of the client alone.

Hygiene and concurrency figures count the threads, sockets and memory of the
process that runs agentcore; a server in the same process would add its own.
``python -m tests.faults.server`` starts a :class:`tests.localserver.LocalServer`
whose replies are chosen by :func:`route` from the request path,
``/<dialect>/<scenario>/...``, and from what the request carries, prints the
port and serves until its stdin closes. :class:`RemoteServer` runs it.

Scenarios (each for ``anthropic`` and ``openai``):

* ``stream``: 400 text deltas, in 40 pieces 2 ms apart;
* ``stall``: one delta ``"Hi"``, then nothing (a blocked network read);
* ``tool``: a call to the ``wait`` tool; once the request carries tool
  results, the answer ``"done"``;
* ``retry``: 429 with ``Retry-After: 30``;
* ``flood``: 3,000 deltas in one write;
* ``done``: the answer ``"Done."``;
* ``echo``: step 1 calls ``lookup`` with the token of the first user message
  (``run-<n>``), step 2 answers ``"answer run-<n>: <tool result>"`` in deltas
  1 ms apart; usage is made from ``n``, so every run's figures differ.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentcore import Usage
from tests.faults import ANTHROPIC, OPENAI, U1, U2, Dialect
from tests.localserver import Action, LocalServer, Pause, Reply, Stall

ROOT = Path(__file__).resolve().parents[2]
DIALECTS = {"anthropic": ANTHROPIC, "openai": OPENAI}


def _messages(body: Any) -> list[dict[str, Any]]:
    messages = body.get("messages") if isinstance(body, dict) else None
    return messages if isinstance(messages, list) else []


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    out.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    out.append(str(block.get("content", "")))
        return out
    return []


def first_user_text(body: Any) -> str:
    for message in _messages(body):
        if message.get("role") == "user":
            texts = _texts(message.get("content"))
            if texts:
                return texts[0]
    return ""


def tool_result_text(body: Any) -> str | None:
    """The content of the last tool result in the request, or None without one."""
    found = None
    for message in _messages(body):
        if message.get("role") == "tool":
            found = str(message.get("content", ""))
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found = str(block.get("content", ""))
    return found


def echo_usage(n: int, step: int) -> Usage:
    return Usage(input=1000 * step + n, output=step * n, cache_read=n % 7)


def _flat(*items: bytes | Action | list[bytes]) -> list[Action]:
    out: list[Action] = []
    for item in items:
        out.extend(item) if isinstance(item, list) else out.append(item)
    return out


def route(record: dict[str, Any]) -> Reply:
    parts = record["path"].strip("/").split("/")
    d: Dialect = DIALECTS[parts[0]]
    scenario = parts[1]
    body = record["body"]
    result = tool_result_text(body)
    if scenario == "stream":
        pieces: list[Action] = []
        for _ in range(40):
            pieces += [b"".join(d.text("x") for _ in range(10)), Pause(0.002)]
        return Reply(actions=_flat(d.head(U2), *pieces, d.reason(U2), d.end()))
    if scenario == "stall":
        return Reply(actions=_flat(d.head(U2), d.text("Hi"), Stall()))
    if scenario == "tool":
        if result is None:
            return Reply(actions=_flat(d.tool_step("call_wait", "wait", ["{}"], U1)))
        return Reply(actions=_flat(d.text_step(U2, "done")))
    if scenario == "retry":
        payload = json.dumps(d.error_body("rate_limit_error", "slow down")).encode()
        headers = {"Content-Type": "application/json", "Retry-After": "30"}
        return Reply(status=429, actions=[payload], headers=headers, chunked=False)
    if scenario == "flood":
        return Reply(
            actions=[b"".join([*d.head(U2), *(d.text("x") for _ in range(3000)), *d.reason(U2), *d.end()])]
        )
    if scenario == "done":
        return Reply(actions=_flat(d.text_step(U2, "Do", "ne.")))
    if scenario == "echo":
        token = first_user_text(body)
        n = int(token.rpartition("-")[2] or 0)
        if result is None:
            arguments = json.dumps({"key": token})
            return Reply(
                actions=_flat(
                    d.tool_step(f"call_{token}", "lookup", [arguments[:5], arguments[5:]], echo_usage(n, 1))
                )
            )
        words = f"answer {token}: {result}".split(" ")
        deltas: list[Action] = []
        for i, word in enumerate(words):
            deltas += [d.text(word if i == 0 else " " + word), Pause(0.001)]
        usage = echo_usage(n, 2)
        return Reply(actions=_flat(d.head(usage), *deltas, d.reason(usage), d.end()))
    return Reply(status=404, actions=[b"unknown scenario"], chunked=False)


def main() -> None:
    server = LocalServer(responder=route)
    print(server.port, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.close()


class RemoteServer:
    """Runs ``python -m tests.faults.server`` and knows its URL; close() stops it."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.server"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        port = self._proc.stdout.readline().strip()
        if not port.isdigit():
            self.close()
            raise RuntimeError(f"the fault server did not start: {port!r}")
        self.url = f"http://127.0.0.1:{port}"

    def base_url(self, dialect: str, scenario: str) -> str:
        """The ``base_url`` for a model of ``dialect`` served ``scenario``."""
        return f"{self.url}/{dialect}/{scenario}"

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def __enter__(self) -> RemoteServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    main()
