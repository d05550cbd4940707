"""``BedrockAnthropicModel`` over a real local socket, against the local
Bedrock Runtime of tests/bedrock_server.py: each request's SigV4 signature
computed again and refused with AWS's 403, a Bedrock API key, real
event-stream frames; and behind it Claude's rules for thinking with tool use
(tests/test_anthropic_reasoning_loop.py's ``ThinkingAPI``: signatures sent
back byte for byte, the tool-use turn starting with its thinking, the API's
own 400 messages, which Bedrock passes on as a ``ValidationException``).

Then the three-step reasoning tool loop (saved as JSON after two steps and
continued with a new adapter), throttling as a 429 and inside the stream,
an expired token, a cancel mid-stream, the idle timeout and the cuts of the
fault matrix before and after the stop reason.
"""

# ruff: noqa: E501  (AWS's error messages are kept on one line, as sent)

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.credentials import Credentials, RefreshableCredentials

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    Request,
    RunError,
    Usage,
    cli,
    run,
    user_message,
)
from agentcore.providers.aws import SigV4
from agentcore.providers.bedrock import BedrockAnthropicModel
from agentcore.transport import Timeout
from tests import bedrock_server as bedrock
from tests.bedrock_server import BedrockServer, chunk_frame, error_reply, exception_frame, stream_reply
from tests.localserver import Action, Close, Pause, Reply, Reset, Stall
from tests.loop_helpers import collect, wait_until
from tests.test_anthropic_reasoning import redacted_start, signature_delta, thinking_delta, thinking_start
from tests.test_anthropic_reasoning_loop import (
    QUESTION,
    SETTINGS,
    STEPS,
    TOOLS,
    ThinkingAPI,
    get_time,
    get_weather,
    issued_blocks,
    thinking_text,
)

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
EXTRANEOUS = "Malformed input request: #: extraneous key [{key}] is not permitted, please reformat your input and try again."
"""Bedrock's 400 for a body field InvokeModel does not take (``model``, ``stream``)."""
THROTTLED = "Too many requests, please wait before trying again."


def step_events(blocks: list[tuple[str, ...]]) -> list[dict[str, Any]]:
    """The Messages API events of a scripted step (as the SSE of
    tests/test_anthropic_reasoning_loop.py's ``step_body``), Bedrock's way:
    ``message_stop`` with its invocation metrics."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bdrk_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 40, "output_tokens": 1},
        },
    }
    events: list[dict[str, Any]] = [start]
    calls = False
    for index, (kind, *rest) in enumerate(blocks):
        if kind == "thinking":
            events += [
                thinking_start(index),
                thinking_delta(index, rest[0]),
                thinking_delta(index, rest[1]),
                signature_delta(index, rest[2]),
            ]
        elif kind == "redacted_thinking":
            events.append(redacted_start(index, rest[0]))
        elif kind == "text":
            events += [
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": rest[0]},
                },
            ]
        else:
            block = {"type": "tool_use", "id": rest[0], "name": rest[1], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": rest[2]}
            events += [
                {"type": "content_block_start", "index": index, "content_block": block},
                {"type": "content_block_delta", "index": index, "delta": delta},
            ]
            calls = True
        events.append({"type": "content_block_stop", "index": index})
    reason = "tool_use" if calls else "end_turn"
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": 30},
        }
    )
    events.append(
        {
            "type": "message_stop",
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": 40,
                "outputTokenCount": 29,
                "invocationLatency": 900,
                "firstByteLatency": 300,
            },
        }
    )
    return events


class ClaudeOnBedrock:
    """Bedrock's checks of an InvokeModel body, Claude's of its history,
    then the scripted step as chunk frames, in reads of 53 bytes."""

    def __init__(self) -> None:
        self.claude = ThinkingAPI()
        self.before: list[Reply] = []
        """Replies sent (in order) before the scripted answers."""

    def __call__(self, record: dict[str, Any], model: str, operation: str) -> Reply:
        assert (model, operation) == (MODEL, "invoke-with-response-stream")
        if self.before:
            return self.before.pop(0)
        body = record["body"]
        for key in ("model", "stream", "cache_control"):  # the last: automatic caching is not Bedrock's
            if key in body:
                return error_reply(400, "ValidationException", EXTRANEOUS.format(key=key))
        if body.get("anthropic_version") != "bedrock-2023-05-31":
            return error_reply(
                400,
                "ValidationException",
                "Malformed input request: #: required key [anthropic_version] not found, please reformat your input and try again.",
            )
        with self.claude.lock:
            problem = self.claude.check(body)
            if problem is not None:
                self.claude.refusals.append(problem)
                return error_reply(400, "ValidationException", problem)
            blocks = self.claude.next_step(body["messages"])
            thinking = issued_blocks(blocks)
            for block in thinking:
                if block["type"] == "thinking":
                    self.claude.signatures[block["signature"]] = block["thinking"]
                else:
                    self.claude.data.add(block["data"])
            for kind, *rest in blocks:
                if kind == "tool_use":
                    self.claude.issued[rest[0]] = thinking
        return stream_reply([chunk_frame(e) for e in step_events(blocks)], piece=53)


@pytest.fixture
def claude() -> ClaudeOnBedrock:
    return ClaudeOnBedrock()


@pytest.fixture
def aws(claude: ClaudeOnBedrock) -> Iterator[BedrockServer]:
    fake = BedrockServer(claude)
    try:
        yield fake
    finally:
        fake.close()


def model(aws: BedrockServer, **options: Any) -> BedrockAnthropicModel:
    """The model at the local server, signing for us-east-1 (its URL names no
    Region) with the session credentials unless ``options`` say otherwise."""
    if "api_key" not in options:
        credentials = options.pop("aws_credentials", bedrock.credentials(session=True))
        options["aws_credentials"] = SigV4(bedrock.REGION, credentials)
    return BedrockAnthropicModel(MODEL, base_url=aws.url, **options)


def loop(aws: BedrockServer, messages: list[Message], **options: Any) -> LoopOptions:
    return LoopOptions(
        model=model(aws, settings=SETTINGS, max_tokens=4096),
        messages=messages,
        tools=TOOLS,
        max_retries=2,
        retry_base_delay=0.01,
        retry_max_delay=0.02,
        **options,
    )


def test_three_step_reasoning_loop_signed_saved_and_continued(
    aws: BedrockServer, claude: ClaudeOnBedrock
) -> None:
    reader = run(loop(aws, [user_message(QUESTION)], step_limit=2))
    collect(reader)
    first = reader.result()
    assert first.finish_reason is FinishReason.STEP_LIMIT
    assert first.reasoning == tuple("\n\n".join(thinking_text(step)) for step in STEPS[:2])
    saved = json.dumps([m.to_dict() for m in first.messages])

    history = [Message.from_dict(m) for m in json.loads(saved)]
    reader = run(loop(aws, history))
    collect(reader)
    second = reader.result()
    assert (second.finish_reason, second.text) == (FinishReason.STOP, "Oslo: rain. Lima: sun. It is noon.")
    assert second.reasoning == tuple(thinking_text(STEPS[2]))
    assert claude.claude.refusals == []
    assert aws.refused == 0
    requests = aws.server.requests
    assert len(requests) == 3
    assert all(r["headers"]["X-Amz-Security-Token"] == bedrock.SESSION_TOKEN for r in requests)
    last = requests[2]["body"]["messages"]
    # the thinking of each tool-use turn went back first, signature and all, byte for byte
    assert last[1]["content"][0] == {
        "type": "thinking",
        "thinking": "The user wants two things. First the weather in Oslo.",
        "signature": "EqQBCkgIARAB+/s1==",
    }
    assert last[3]["content"][0]["signature"] == "EqQBCkgIARAB+/s3=="
    assert requests[0]["body"]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert second.usage == Usage(input=40, output=30)


def test_a_tool_turn_without_its_thinking_gets_claudes_400_and_is_not_retried(
    aws: BedrockServer, claude: ClaudeOnBedrock
) -> None:
    reader = run(loop(aws, [user_message(QUESTION)], step_limit=1))
    collect(reader)
    history = list(reader.result().messages)
    stripped = [Message(m.role, tuple(p for p in m.content if p.reasoning is None)) for m in history]
    reader = run(loop(aws, stripped))
    collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    err = caught.value.err
    assert isinstance(err, ModelError)
    assert (err.error_class, err.status) == (ErrorClass.INVALID_REQUEST, 400)
    [refusal] = claude.claude.refusals
    assert err.message == f"ValidationException: {refusal}"
    assert (
        "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified"
        in refusal
    )
    assert aws.server.hits == 2


def test_a_wrong_secret_gets_awss_403_and_is_not_retried(aws: BedrockServer) -> None:
    wrong = Credentials(bedrock.ACCESS_KEY, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGKEY")
    reader = run(
        LoopOptions(model=model(aws, aws_credentials=wrong), messages=[user_message("hi")], max_retries=2)
    )
    collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    err = caught.value.err
    assert isinstance(err, ModelError)
    assert (err.error_class, err.status) == (ErrorClass.AUTH, 403)
    assert err.message == f"InvalidSignatureException: {bedrock.SIGNATURE_MISMATCH}"
    assert aws.server.hits == 1
    assert "WRONGKEY" not in str(err)


def test_a_bedrock_api_key_runs_the_loop(aws: BedrockServer) -> None:
    options = loop(aws, [user_message(QUESTION)])
    keyed = BedrockAnthropicModel(
        MODEL, base_url=aws.url, api_key=bedrock.API_KEY, settings=SETTINGS, max_tokens=4096
    )
    reader = run(LoopOptions(model=keyed, messages=options.messages, tools=TOOLS))
    collect(reader)
    assert reader.result().text == "Oslo: rain. Lima: sun. It is noon."
    assert {r["headers"]["Authorization"] for r in aws.server.requests} == {f"Bearer {bedrock.API_KEY}"}


def test_an_expired_token_is_signed_again_once(aws: BedrockServer) -> None:
    tokens = iter(["IQoJ-expired-token", bedrock.SESSION_TOKEN])

    def refresh() -> dict[str, str]:
        return {
            "access_key": bedrock.SESSION_ACCESS_KEY,
            "secret_key": bedrock.SESSION_SECRET_KEY,
            "token": next(tokens),
            "expiry_time": "2999-01-01T00:00:00Z",
        }

    aws.expired_tokens.add("IQoJ-expired-token")
    refreshable = RefreshableCredentials.create_from_metadata(refresh(), refresh, "sso")
    reader = run(
        loop(aws, [user_message(QUESTION)], step_limit=1).__class__(
            model=model(aws, aws_credentials=refreshable, settings=SETTINGS, max_tokens=4096),
            messages=[user_message(QUESTION)],
            tools=TOOLS,
            step_limit=1,
            max_retries=0,
        )
    )
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert [r["headers"]["X-Amz-Security-Token"] for r in aws.server.requests] == [
        "IQoJ-expired-token",
        bedrock.SESSION_TOKEN,
    ]


def test_throttling_is_retried_before_output(aws: BedrockServer, claude: ClaudeOnBedrock) -> None:
    claude.before = [
        error_reply(429, "ThrottlingException", THROTTLED),
        stream_reply([exception_frame("throttlingException", THROTTLED)]),
    ]
    reader = run(loop(aws, [user_message(QUESTION)], step_limit=1))
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert aws.server.hits == 3


def test_throttling_after_text_fails_the_step(aws: BedrockServer, claude: ClaudeOnBedrock) -> None:
    events = step_events([("text", "Partial answer")])[:3]
    claude.before = [
        stream_reply([*(chunk_frame(e) for e in events), exception_frame("throttlingException", THROTTLED)])
    ]
    reader = run(loop(aws, [user_message(QUESTION)]))
    parts = collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class is ErrorClass.RATE_LIMITED
    assert "".join(p.text for p in parts if p.text) == "Partial answer"
    assert aws.server.hits == 1


def hello(tail: list[Action], upto: int) -> Reply:
    events = step_events([("text", "Hello there")])
    return stream_reply([chunk_frame(e) for e in events[:upto]], tail=tail)


def test_a_cancel_mid_stream_stops_the_read(aws: BedrockServer, claude: ClaudeOnBedrock) -> None:
    claude.before = [hello([Stall()], upto=3)]
    ctx = Context()
    stream = model(aws).stream(Request(messages=[user_message("hi")]), ctx)
    assert next(stream).text == "Hello there"
    threading.Timer(0.05, ctx.cancel).start()
    with pytest.raises(Canceled):
        next(stream)
    assert wait_until(lambda: aws.server.disconnects >= 1)


def test_a_stream_without_a_whole_message_hits_the_idle_timeout(
    aws: BedrockServer, claude: ClaudeOnBedrock
) -> None:
    frame = chunk_frame(step_events([("text", "more")])[2])
    trickle: list[Action] = []
    for i in range(12):  # a byte every 0.1 s for 1.2 s: never a whole message
        trickle += [frame[i : i + 1], Pause(0.1)]
    claude.before = [hello([*trickle, Stall()], upto=3)]
    stream = model(aws, timeout=Timeout(read=5, idle=0.2)).stream(
        Request(messages=[user_message("hi")]), Context()
    )
    assert next(stream).text == "Hello there"
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in caught.value.message


CUTS: dict[str, list[Action]] = {
    "reset": [Pause(0.1), Reset()],
    "stall": [Stall()],
    "close": [Close()],
    "end": [],
    "half-frame": [b"\x00\x00\x01\x00\x00\x00\x00\x40"],
}


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_cut_before_the_stop_reason_is_retried_before_output(
    aws: BedrockServer, claude: ClaudeOnBedrock, cut: str
) -> None:
    claude.before = [hello(CUTS[cut], upto=2)]  # message_start and the block's start: no output yet
    options = loop(aws, [user_message(QUESTION)], step_limit=1)
    options = LoopOptions(
        model=model(aws, settings=SETTINGS, max_tokens=4096, timeout=Timeout(read=0.5, idle=0.5)),
        messages=options.messages,
        tools=TOOLS,
        step_limit=1,
        max_retries=1,
        retry_base_delay=0.01,
    )
    reader = run(options)
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert aws.server.hits == 2


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_cut_after_text_fails_the_step_transient_with_the_text_once(
    aws: BedrockServer, claude: ClaudeOnBedrock, cut: str
) -> None:
    claude.before = [hello(CUTS[cut], upto=3)]
    reader = run(
        LoopOptions(
            model=model(aws, timeout=Timeout(read=0.5, idle=0.5)),
            messages=[user_message("hi")],
            max_retries=2,
            retry_base_delay=0.01,
        )
    )
    parts = collect(reader)
    with pytest.raises(RunError) as caught:
        reader.result()
    assert isinstance(caught.value.err, ModelError)
    assert caught.value.err.error_class is ErrorClass.TRANSIENT
    assert "".join(p.text for p in parts if p.text) == "Hello there"
    assert aws.server.hits == 1


@pytest.mark.parametrize("cut", sorted(CUTS))
def test_a_cut_after_the_stop_reason_ends_the_step_with_its_usage(
    aws: BedrockServer, claude: ClaudeOnBedrock, cut: str
) -> None:
    claude.before = [hello(CUTS[cut], upto=5)]  # through message_delta: no message_stop
    reader = run(
        LoopOptions(
            model=model(aws, timeout=Timeout(read=0.5, idle=0.5)),
            messages=[user_message("hi")],
            max_retries=2,
        )
    )
    collect(reader)
    result = reader.result()
    assert (result.finish_reason, result.text, result.usage) == (
        FinishReason.STOP,
        "Hello there",
        Usage(input=40, output=30),
    )
    assert aws.server.hits == 1


def test_the_command_runs_the_thinking_loop_with_a_bedrock_api_key(
    aws: BedrockServer, claude: ClaudeOnBedrock
) -> None:
    env = {"AWS_REGION": bedrock.REGION, "AWS_BEARER_TOKEN_BEDROCK": bedrock.API_KEY}
    argv = ["--model", f"bedrock-anthropic:{MODEL}", "--base-url", aws.url, "--thinking-budget", "2048"]
    out = io.StringIO()
    assert cli.main([*argv, "--json", QUESTION], env=env, tools=[get_weather, get_time], stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    text = "".join(line.get("text", "") for line in lines if line["kind"] == "text-delta")
    assert text.startswith("Let me check.")
    assert text.endswith("Oslo: rain. Lima: sun. It is noon.")
    assert claude.claude.refusals == []
    requests = aws.server.requests
    assert [r["body"]["thinking"] for r in requests] == [{"type": "enabled", "budget_tokens": 2048}] * 3
    assert {r["headers"]["Authorization"] for r in requests} == {f"Bearer {bedrock.API_KEY}"}


def test_the_cache_breakpoint_goes_on_the_last_block_not_the_request(aws: BedrockServer) -> None:
    reader = run(loop(aws, [user_message(QUESTION)]))
    collect(reader)
    assert reader.result().text == "Oslo: rain. Lima: sun. It is noon."
    for record in aws.server.requests:
        messages = record["body"]["messages"]
        marked = [
            (index, block["type"])
            for index, turn in enumerate(messages)
            for block in turn["content"]
            if "cache_control" in block
        ]
        assert marked == [(len(messages) - 1, messages[-1]["content"][-1]["type"])]
        assert messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
