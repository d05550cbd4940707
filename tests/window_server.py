"""A fake of each API agentcore speaks that enforces a context window, on the
in-memory transport (``MemoryTransport(respond=server.respond)``): for the
long-run tests (tests/test_long_runs.py) and the history-policy bench.

The rule it counts by (fixed, so a test can reason about it): a request's
prompt is the UTF-8 bytes of the compact JSON (``separators=(",", ":")``)
of the fields that carry the conversation, divided by :data:`BYTES_PER_TOKEN`
(4) and rounded up. The fields: Anthropic Messages ``system``, ``messages``
and ``tools``; Chat Completions ``messages`` and ``tools``; Responses
``instructions``, ``input`` and ``tools``. It reports that count as the
step's input tokens, and a prompt above the window gets the provider's real
context-length error:

* Anthropic: HTTP 400 ``{"type": "error", "error": {"type":
  "invalid_request_error", "message": "prompt is too long: N tokens > M
  maximum"}, "request_id": ...}`` (https://docs.anthropic.com/en/api/errors
  for the shape; the message as the API sends it, e.g. in
  anthropics/claude-code#59696);
* Chat Completions: HTTP 400 ``{"error": {"message": "This model's maximum
  context length is M tokens. However, your messages resulted in N tokens.
  Please reduce the length of the messages.", "type":
  "invalid_request_error", "param": "messages", "code":
  "context_length_exceeded"}}`` (https://platform.openai.com/docs/guides/error-codes;
  the body as users reported it, e.g. ChatGPTNextWeb/NextChat#2358);
* Responses: HTTP 200 and, after ``response.created`` and
  ``response.in_progress``, an ``error`` event whose error has the code
  ``context_length_exceeded``, the param ``input`` and the message "Your
  input exceeds the context window of this model. Please adjust your input
  and try again." (the ``error`` stream event,
  https://platform.openai.com/docs/api-reference/responses-streaming/error;
  the event as the API sent it, nested error object and
  ``sequence_number`` 2, in dyad-sh/dyad#1672).

It answers the count endpoints by the same rule: Anthropic's ``POST
/v1/messages/count_tokens`` with ``{"input_tokens": N}``
(https://platform.claude.com/docs/en/build-with-claude/token-counting),
the Responses API's ``POST /responses/input_tokens`` with ``{"object":
"response.input_tokens", "input_tokens": N}``.

The model it plays calls the ``fetch`` tool (``{"page": n}``) at each step
until its ``steps``-th, which answers with text; a request whose system
prompt is :data:`agentcore.compaction.SUMMARY_INSTRUCTIONS` is a summary
call, answered with a short summary (and not counted as a step).
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from agentcore.compaction import SUMMARY_INSTRUCTIONS
from agentcore.transport.memory import Reply, SentRequest

BYTES_PER_TOKEN = 4
"""The server's rule: this many bytes of the conversation's JSON make a token."""

APIS = ("anthropic", "chat", "responses")
FIELDS = {
    "anthropic": ("system", "messages", "tools"),
    "chat": ("messages", "tools"),
    "responses": ("instructions", "input", "tools"),
}
"""The request fields a prompt's tokens are counted over, by API."""

SUMMARY = "The agent fetched the earlier pages; each held the text it needed."


def prompt_tokens(api: str, body: dict[str, Any]) -> int:
    """The prompt's tokens by the server's rule (see the module docstring)."""
    carried = {field: body[field] for field in FIELDS[api] if field in body}
    size = len(json.dumps(carried, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return math.ceil(size / BYTES_PER_TOKEN)


def _sse(events: list[dict[str, Any]], *, named: bool) -> bytes:
    out = []
    for number, event in enumerate(events):
        head = f"event: {event['type']}\n" if named else ""
        if named:
            event = {**event, "sequence_number": number}
        out.append(f"{head}data: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def _json(status: int, payload: dict[str, Any]) -> Reply:
    return Reply.of(json.dumps(payload).encode(), status=status, headers={"content-type": "application/json"})


class WindowServer:
    """One API that enforces a context window of ``window`` tokens.

    Args:
        api: ``"anthropic"``, ``"chat"`` or ``"responses"``.
        window: the context window in tokens.
        steps: the model answers with text at this step (it calls ``fetch`` before).

    Attributes:
        prompts: the prompt tokens of each request, in order (summary calls
            and refused requests included).
        counts: the tokens of each count request it answered.
        refused: how many requests were refused as too long.
        summaries: how many summary calls it answered.
    """

    def __init__(self, api: str, window: int, steps: int) -> None:
        assert api in APIS
        self.api = api
        self.window = window
        self.steps = steps
        self.step = 0
        self.prompts: list[int] = []
        self.counts: list[int] = []
        self.refused = 0
        self.summaries = 0
        self._lock = threading.Lock()

    def respond(self, sent: SentRequest) -> Reply:
        """The answer to one request (a ``MemoryTransport`` ``respond`` function)."""
        body = sent.json()
        tokens = prompt_tokens(self.api, body)
        if sent.url.endswith(("/count_tokens", "/input_tokens")):
            with self._lock:
                self.counts.append(tokens)
            counted = {"input_tokens": tokens}
            return _json(
                200, counted if self.api == "anthropic" else {"object": "response.input_tokens", **counted}
            )
        with self._lock:
            self.prompts.append(tokens)
            if tokens > self.window:
                self.refused += 1
                return self._too_long(tokens)
            system = body.get("system") or body.get("instructions")
            if self.api == "chat" and body["messages"][0]["role"] in ("system", "developer"):
                system = body["messages"][0]["content"]
            if system == SUMMARY_INSTRUCTIONS:
                self.summaries += 1
                return Reply.of(self._text(SUMMARY, tokens))
            self.step += 1
            if self.step >= self.steps:
                return Reply.of(self._text("All pages fetched.", tokens))
            return Reply.of(self._call(f"call_{self.step}", json.dumps({"page": self.step}), tokens))

    def _too_long(self, tokens: int) -> Reply:
        if self.api == "anthropic":
            message = f"prompt is too long: {tokens} tokens > {self.window} maximum"
            return _json(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": message},
                    "request_id": "req_011CWindowServer",
                },
            )
        if self.api == "chat":
            message = (
                f"This model's maximum context length is {self.window} tokens. However, your messages "
                f"resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            error = {"message": message, "type": "invalid_request_error", "param": "messages"}
            return _json(400, {"error": {**error, "code": "context_length_exceeded"}})
        response = {"id": "resp_window", "object": "response", "status": "in_progress", "output": []}
        error = {
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
            "message": (
                "Your input exceeds the context window of this model. Please adjust your input and try again."
            ),
            "param": "input",
        }
        events = [
            {"type": "response.created", "response": response},
            {"type": "response.in_progress", "response": response},
            {"type": "error", "error": error},
        ]
        return Reply.of(_sse(events, named=True))

    def _text(self, text: str, tokens: int) -> bytes:
        if self.api == "anthropic":
            block = {"type": "text", "text": ""}
            return _anthropic(block, {"type": "text_delta", "text": text}, "end_turn", tokens)
        if self.api == "chat":
            return _chat([{"role": "assistant", "content": text}], "stop", tokens)
        item = {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return _responses(
            item,
            [
                {
                    "type": "response.output_text.delta",
                    "output_index": 0,
                    "item_id": "msg_1",
                    "content_index": 0,
                    "delta": text,
                },
            ],
            tokens,
        )

    def _call(self, call_id: str, arguments: str, tokens: int) -> bytes:
        if self.api == "anthropic":
            block = {"type": "tool_use", "id": call_id, "name": "fetch", "input": {}}
            return _anthropic(
                block, {"type": "input_json_delta", "partial_json": arguments}, "tool_use", tokens
            )
        if self.api == "chat":
            call = {
                "index": 0,
                "id": call_id,
                "type": "function",
                "function": {"name": "fetch", "arguments": arguments},
            }
            return _chat([{"role": "assistant", "tool_calls": [call]}], "tool_calls", tokens)
        item = {
            "id": f"fc_{call_id}",
            "type": "function_call",
            "status": "completed",
            "call_id": call_id,
            "name": "fetch",
            "arguments": arguments,
        }
        delta = {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": item["id"],
            "delta": arguments,
        }
        return _responses(item, [delta], tokens)


def _anthropic(block: dict[str, Any], delta: dict[str, Any], stop: str, tokens: int) -> bytes:
    """A Messages API stream of one content block: ``block`` opened, one ``delta``, ``stop``."""
    return _sse(
        [
            _message_start(tokens),
            {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 10}},
            {"type": "message_stop"},
        ],
        named=False,
    )


def _message_start(tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": "msg_window",
        "type": "message",
        "role": "assistant",
        "model": "claude-window",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": tokens, "output_tokens": 1},
    }
    return {"type": "message_start", "message": message}


def _chat(deltas: list[dict[str, Any]], finish: str, tokens: int) -> bytes:
    chunks: list[dict[str, Any]] = [
        {
            "id": "chatcmpl-window",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
        }
        for delta in deltas
    ]
    chunks.append({"id": "chatcmpl-window", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append(
        {
            "id": "chatcmpl-window",
            "choices": [],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12},
        }
    )
    body = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
    return body + b"data: [DONE]\n\n"


def _responses(item: dict[str, Any], deltas: list[dict[str, Any]], tokens: int) -> bytes:
    response: dict[str, Any] = {
        "id": "resp_window",
        "object": "response",
        "status": "in_progress",
        "output": [],
    }
    empty = {**item, "arguments": ""} if item["type"] == "function_call" else {**item, "content": []}
    done = {
        **response,
        "status": "completed",
        "output": [item],
        "usage": {"input_tokens": tokens, "output_tokens": 12, "total_tokens": tokens + 12},
    }
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": empty},
        *deltas,
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": done},
    ]
    return _sse(events, named=True)
