"""Streams other projects recorded for their own test suites, replayed through
the adapters and compared with what those projects assert.

Each ``tests/fixtures/peer/<folder>/<case>.sse`` is one response body; the
``<case>.json`` beside it holds its source and two oracles (sources, licences
and the format in ``tests/fixtures/README.md`` and ``peer/SOURCES.md``):

* ``sdk``: what the official SDK's stream accumulator (anthropic-sdk-python or
  openai-python) makes of the same bytes: text, tool calls, finish reason,
  usage, or ``error`` when it raised; ``sdk_failed`` when the SDK could not
  read the stream at all (then it states nothing);
* ``vercel``: what the Vercel AI SDK's own tests assert about the stream
  (null when it is not a Vercel fixture), often only some of the fields;
  ``vercel_scope`` limits it to the listed fields.

``exclude`` names oracle statements left out, with the reason.

Every case is answered whole on the in-memory transport and read through
``AnthropicModel`` or ``OpenAIChatModel``, shell included, as a real
response is. The text,
the client tool calls (id, name, parsed input), the finish reason, the usage
and whether the stream ended in a :class:`ModelError` must equal each oracle.
Where agentcore deliberately differs from an oracle, the oracle value is
normalised below with a comment naming the rule; any other difference fails
and the failure lists every differing field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import Context, ModelError, Request, StreamPart, StreamPartKind, user_message
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.transport.memory import MemoryTransport, Reply

PEER = Path(__file__).parent / "fixtures" / "peer"
CASES = sorted(p.relative_to(PEER).as_posix()[: -len(".sse")] for p in PEER.glob("*/*.sse"))
KEY = "sk-ant-fixture-key-0123456789"
FOLDERS = {
    "anthropic_python_sdk": "anthropic",
    "pydantic_anthropic": "anthropic",
    "vercel_anthropic": "anthropic",
    "openai_python_sdk": "openai",
    "pydantic_openai": "openai",
    "vercel_openai": "openai",
}


def load(case: str) -> tuple[bytes, dict[str, Any]]:
    body = (PEER / f"{case}.sse").read_bytes()
    spec: dict[str, Any] = json.loads((PEER / f"{case}.json").read_text(encoding="utf-8"))
    return body, spec


def test_every_case_is_here_with_its_source() -> None:
    assert len(CASES) == 185
    assert {case.split("/")[0] for case in CASES} == set(FOLDERS)
    for case in CASES:
        _, spec = load(case)
        assert spec["provider"] == FOLDERS[case.split("/")[0]]
        assert spec["source"]["repo"] in {
            "vercel/ai",
            "pydantic/pydantic-ai",
            "openai/openai-python",
            "anthropics/anthropic-sdk-python",
        }
        assert len(spec["source"]["commit"]) == 40
        assert spec["sdk"] is not None


def adapter_parts(
    transport: MemoryTransport, provider: str, body: bytes
) -> tuple[list[StreamPart], ModelError | None]:
    """The parts ``AnthropicModel`` (``provider`` "anthropic") or
    ``OpenAIChatModel`` yields for ``body`` answered on ``transport``, and the
    ModelError the stream ended in, if any."""
    transport.add(Reply.of(body))
    model: AnthropicModel | OpenAIChatModel
    if provider == "anthropic":
        model = AnthropicModel("claude-test", api_key=KEY, transport=transport)
    else:
        model = OpenAIChatModel("test-model", transport=transport)
    parts: list[StreamPart] = []
    error: ModelError | None = None
    try:
        for part in model.stream(Request(messages=[user_message("Hi")]), Context()):
            parts.append(part)
    except ModelError as exc:
        error = exc
    assert len(transport.sent) == 1
    return parts, error


def replay(transport: MemoryTransport, provider: str, body: bytes) -> dict[str, Any]:
    """The adapter's reading of ``body``: the oracles' fields, plus ``error``
    (whether the stream ended in a ModelError)."""
    parts, error = adapter_parts(transport, provider, body)
    finishes = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    if error is None:
        # a stream read to its end gives exactly one step-finish, the last part
        assert len(finishes) == 1, [p.kind for p in parts]
        assert parts[-1] is finishes[0], [p.kind for p in parts]
    else:
        assert finishes == [], "a stream that ended in an error has no step-finish"
    reason = finishes[0].finish_reason if finishes else None
    return {
        "text": "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA),
        "tool_calls": [
            {"id": p.tool_call.id, "name": p.tool_call.name, "input": json.loads(p.tool_call.input)}
            for p in parts
            if p.tool_call is not None
        ],
        "finish_reason": None if reason is None else reason.value,
        "usage": finishes[0].usage.to_dict() if finishes else None,
        "error": error is not None,
    }


def payloads(body: bytes) -> list[dict[str, Any]]:
    """The JSON objects of the ``data:`` lines of a body, in order (every
    recorded event is one ``data:`` line; ``[DONE]`` is skipped)."""
    found = []
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:") and line[5:].strip() != "[DONE]":
            data = json.loads(line[5:])
            if isinstance(data, dict):
                found.append(data)
    return found


def last_usage(body: bytes) -> dict[str, Any]:
    """The last ``usage`` object of an Anthropic body (message_start or message_delta)."""
    usage: dict[str, Any] = {}
    for data in payloads(body):
        found = data.get("usage") or (data.get("message") or {}).get("usage")
        if isinstance(found, dict):
            usage = found
    return usage


def unstopped_tool_ids(body: bytes) -> set[str]:
    """Ids of the ``tool_use`` blocks of an Anthropic body that never got their
    ``content_block_stop``."""
    open_blocks: dict[object, str] = {}
    for data in payloads(body):
        if data.get("type") == "content_block_start" and data["content_block"].get("type") == "tool_use":
            open_blocks[data.get("index")] = data["content_block"].get("id")
        elif data.get("type") == "content_block_stop":
            open_blocks.pop(data.get("index"), None)
    return set(open_blocks.values())


def refusal_text(body: bytes) -> str:
    """The ``choices[].delta.refusal`` strings of an OpenAI-style body, joined."""
    return "".join(
        choice["delta"]["refusal"]
        for data in payloads(body)
        for choice in data.get("choices") or []
        if isinstance((choice.get("delta") or {}).get("refusal"), str)
    )


def compaction_usage(body: bytes) -> dict[str, int]:
    """Usage of the compaction passes listed in the last ``usage.iterations``,
    in agentcore's normalised fields."""
    total = {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0}
    for item in last_usage(body).get("iterations") or []:
        if item.get("type") == "compaction":
            read = item.get("cache_read_input_tokens") or 0
            total["input"] += (item.get("input_tokens") or 0) + read
            total["output"] += item.get("output_tokens") or 0
            total["cache_read"] += read
            total["cache_write"] += item.get("cache_creation_input_tokens") or 0
    return total


def sdk_expectation(spec: dict[str, Any], body: bytes) -> dict[str, Any] | None:
    """The ``sdk`` oracle as agentcore's fields, or None when it states nothing."""
    sdk = spec["sdk"]
    if "sdk" in (spec.get("exclude") or {}):
        return None  # the case says why (a hand-written corrupt stream the SDK accumulates blindly)
    if "sdk_failed" in sdk:
        return None  # the SDK could not read the stream, so it asserts nothing about it
    if "error" in sdk:
        return {"error": True}
    want = {k: sdk[k] for k in ("text", "tool_calls", "finish_reason", "usage")}
    want["error"] = False
    if spec["provider"] != "anthropic":
        # Convention (OpenAI refusals): the refusal the model streams in
        # ``delta.refusal`` reaches the user as the answer's text; the SDK
        # keeps it apart from ``content``.
        want["text"] += refusal_text(body)
        return want
    if want["finish_reason"] == "length":
        # Convention (Anthropic tool call cut off by max_tokens): a tool_use
        # block that never stopped is dropped on a ``length`` finish; the SDK
        # keeps what its partial-JSON parser made of the cut-off input.
        cut = unstopped_tool_ids(body)
        want["tool_calls"] = [call for call in want["tool_calls"] if call["id"] not in cut]
    extra = compaction_usage(body)
    if any(extra.values()):
        # Convention (Anthropic compaction): the top-level usage leaves out the
        # compaction passes listed in ``usage.iterations``; agentcore counts
        # them, as they are billed. The SDK reports the top-level numbers only.
        want["usage"] = {k: v + extra[k] for k, v in want["usage"].items()}
    return want


def vercel_expectation(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The ``vercel`` oracle as agentcore's fields (only those it states), or
    None for a case that is not a Vercel fixture."""
    vercel = spec.get("vercel")
    if vercel is None:
        return None
    scope = spec.get("vercel_scope")
    excluded = {key.split(".", 1)[1] for key in spec.get("exclude") or {} if key.startswith("vercel.")}
    want: dict[str, Any] = {}
    for key in ("text", "tool_calls", "finish_reason", "usage"):
        if key in vercel and key not in excluded and (scope is None or key in scope):
            want[key] = vercel[key]
    if "error" in vercel:
        want["error"] = vercel["error"]
    elif "errors" in vercel and (scope is None or "errors" in scope):
        # Convention (server-side tools are passed over): the only error parts
        # Vercel reports come from its own JSON parse of a server tool's input
        # (``server_tool_use``), which agentcore never parses; they do not end
        # the stream, whose finish reason Vercel still reports.
        assert all("AI_JSONParseError" in text for text in vercel["errors"]), vercel["errors"]
        want["error"] = False
    if "usage" in want:
        want["usage"] = dict(want["usage"])
        if "xai-output-excludes-reasoning" in (spec.get("conventions") or []):
            # Convention (xAI output tokens): agentcore's ``output`` is the
            # provider's ``completion_tokens`` as sent; xAI leaves reasoning
            # tokens out of it, and Vercel adds them back in.
            want["usage"]["output"] -= vercel["usage_vercel"]["outputTokens"]["reasoning"]
    return want


def differences(got: dict[str, Any], want: dict[str, Any] | None, oracle: str) -> list[str]:
    """One line per field of ``want`` (a usage dict field by field) that ``got`` does not match."""
    if want is None:
        return []
    lines: list[str] = []
    for key, value in want.items():
        if key == "usage" and got["usage"] is not None:
            for name, count in value.items():
                if got["usage"][name] != count:
                    lines.append(f"{oracle}.usage.{name}: got {got['usage'][name]}, want {count}")
        elif got[key] != value:
            lines.append(f"{oracle}.{key}: got {got[key]!r}, want {value!r}")
    return lines


@pytest.mark.parametrize("case", CASES)
def test_peer_case(transport: MemoryTransport, case: str) -> None:
    body, spec = load(case)
    got = replay(transport, spec["provider"], body)
    sdk = sdk_expectation(spec, body)
    vercel = vercel_expectation(spec)
    if sdk is None and vercel is None:
        # Neither oracle states anything (the SDK failed, no Vercel test): the
        # stream is still read to a normal finish.
        assert got["error"] is False
        assert got["finish_reason"] is not None
    problems = differences(got, sdk, "sdk") + differences(got, vercel, "vercel")
    assert problems == [], "\n".join(problems)
