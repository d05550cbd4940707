"""``BedrockConverseModel`` over a real local socket, against a Converse
emulator on :class:`tests.bedrock_server.BedrockServer` (every request's SigV4
signature recomputed with the test credentials, or a Bedrock API key; real
event-stream frames) that checks what Bedrock checks for Claude with thinking
and tools: a tool turn continued with thinking on whose assistant turn does
not start with a signed reasoning block is refused with Bedrock's real
``ValidationException`` (the message Claude's check gives through Converse,
as reported in langchain-ai/langchain-aws#844, pydantic/pydantic-ai#2453 and
vercel/ai#14765).

Then the three-step reasoning tool loop for Claude with thinking and for
gpt-oss (reasoning without a signature), saved as JSON after two steps and
continued with a new adapter; every recorded ``.eventstream.b64`` body
through the real framing; throttling retried before output; a cancel mid-stream;
the idle timeout; a cut stream; ``CountTokens``.
"""

# ruff: noqa: E501  (Bedrock's error messages are kept on one line, as sent)

from __future__ import annotations

import base64
import io
import json
import os
import pathlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from agentcore import (
    Canceled,
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    Request,
    Role,
    StreamPartKind,
    Usage,
    cli,
    run,
    user_message,
)
from agentcore.providers.bedrock import BedrockConverseModel
from agentcore.providers.bedrock.request import request_body
from agentcore.transport import Timeout
from agentcore.types import ContentPart, ContentPartKind
from tests import bedrock_server
from tests.bedrock_server import BedrockServer, error_reply, event_frame, exception_frame, stream_reply
from tests.localserver import Pause, Reply, Reset, Stall, json_reply
from tests.loop_helpers import FuncTool, collect, wait_until
from tests.test_bedrock_converse_fixtures import CASES, text

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "bedrock_converse"
CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"
GPT_OSS = "openai.gpt-oss-120b-1:0"
REASONING = (
    "The user asks about Paris. I need the weather first.",
    "Sunny in Paris. Now the local time, to say whether it is still light.",
    "It is 14:00 and sunny: a good afternoon for a walk.",
)
ANSWER = "It is sunny in Paris and 14:00 there: go for a walk."
SIGNATURES = ("EqQBCkgIBxABGAIiQLsig0", "EqQBCkgIBxABGAIiQLsig1", "EqQBCkgIBxABGAIiQLsig2")
CALLS = (("tooluse_w1", "get_weather", {"city": "Paris"}), ("tooluse_t2", "get_time", {"tz": "Europe/Paris"}))
THROTTLED = "Too many requests, please wait before trying again."

NO_THINKING_FIRST = "The model returned the following errors: messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
NO_SIGNATURE = (
    "The model returned the following errors: messages.{index}.content.0.thinking.signature: Field required"
)


def claude_rule(body: dict[str, Any]) -> str:
    """Claude's rule for thinking with tools, as Bedrock reports it: "" when
    the request passes, else the ValidationException's message."""
    thinking = body.get("additionalModelRequestFields", {}).get("thinking", {})
    turns = body["messages"]
    if thinking.get("type") != "enabled" or not any("toolResult" in b for b in turns[-1]["content"]):
        return ""
    index = len(turns) - 2
    first = turns[index]["content"][0]
    if "reasoningContent" not in first:
        found = "tool_use" if "toolUse" in first else "text"
        return NO_THINKING_FIRST.format(index=index, found=found)
    readable = first["reasoningContent"].get("reasoningText")
    if readable is not None and readable.get("signature") not in SIGNATURES:
        return NO_SIGNATURE.format(index=index)
    return ""


def step_frames(step: int, signed: bool) -> list[bytes]:
    """One step's ConverseStream events: reasoning (with its signature delta
    when ``signed``), then a tool use (steps 0 and 1) or the answer."""
    frames = [event_frame("messageStart", {"role": "assistant", "p": "abcdefghijklmnop"})]
    thought = REASONING[step]
    for i in range(0, len(thought), 11):
        delta = {"reasoningContent": {"text": thought[i : i + 11]}}
        frames.append(event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta, "p": "abc"}))
    if signed:
        delta = {"reasoningContent": {"signature": SIGNATURES[step]}}
        frames.append(event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": delta}))
    frames.append(event_frame("contentBlockStop", {"contentBlockIndex": 0}))
    if step < 2:
        call_id, name, arguments = CALLS[step]
        start = {"toolUse": {"toolUseId": call_id, "name": name}}
        frames.append(event_frame("contentBlockStart", {"contentBlockIndex": 1, "start": start}))
        encoded = json.dumps(arguments)
        for i in range(0, len(encoded), 7):
            delta = {"toolUse": {"input": encoded[i : i + 7]}}
            frames.append(event_frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": delta}))
        stop = "tool_use"
    else:
        for i in range(0, len(ANSWER), 9):
            piece: dict[str, Any] = {"text": ANSWER[i : i + 9]}
            frames.append(event_frame("contentBlockDelta", {"contentBlockIndex": 1, "delta": piece}))
        stop = "end_turn"
    frames.append(event_frame("contentBlockStop", {"contentBlockIndex": 1}))
    frames.append(event_frame("messageStop", {"stopReason": stop, "p": "ab"}))
    usage = {"inputTokens": 40 + step, "outputTokens": 25, "totalTokens": 65 + step}
    frames.append(event_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 321}, "p": "a"}))
    return frames


class ConverseAPI:
    """Bedrock's Converse on 127.0.0.1: signed in by :class:`BedrockServer`,
    then Claude's thinking rule, then the step's stream."""

    def __init__(self) -> None:
        self.bedrock = BedrockServer(self.respond)
        self.throttle: list[Reply] = []
        self.counted: list[dict[str, Any]] = []

    def respond(self, record: dict[str, Any], model_id: str, operation: str) -> Reply:
        body = record["body"]
        if operation == "count-tokens":
            self.counted.append(body)
            return json_reply(200, {"inputTokens": 4321})
        if operation != "converse-stream":
            return error_reply(404, "UnknownOperationException", "")
        if self.throttle:
            return self.throttle.pop(0)
        refusal = claude_rule(body) if "anthropic" in model_id else ""
        if refusal:
            return error_reply(400, "ValidationException", refusal)
        step = sum(1 for turn in body["messages"] if turn["role"] == "assistant")
        return stream_reply(step_frames(step, signed="anthropic" in model_id), piece=61)


@pytest.fixture
def api() -> Iterator[ConverseAPI]:
    fake = ConverseAPI()
    try:
        yield fake
    finally:
        fake.bedrock.close()


def claude(api: ConverseAPI, **options: Any) -> BedrockConverseModel:
    settings = options.pop("settings", ModelSettings(thinking_budget=1024))
    return BedrockConverseModel(
        CLAUDE,
        region=bedrock_server.REGION,
        base_url=api.bedrock.url,
        aws_credentials=bedrock_server.credentials(session=True),
        settings=settings,
        **options,
    )


def tools() -> list[FuncTool]:
    return [
        FuncTool("get_weather", lambda arguments, _ctx: "sunny in " + arguments["city"]),
        FuncTool("get_time", lambda _raw, _ctx: "14:00"),
    ]


def loop_in_two_runs(model: Any, again: Any) -> tuple[Any, Any]:
    """Two steps, the history saved as JSON, then the rest with ``again``."""
    reader = run(
        LoopOptions(model=model, messages=[user_message("Weather in Paris?")], tools=tools(), step_limit=2)
    )
    parts = collect(reader)
    first = reader.result()
    kinds = [p.kind for p in parts]
    assert kinds.index(StreamPartKind.REASONING) < kinds.index(StreamPartKind.TOOL_CALL)
    history = [Message.from_dict(m) for m in json.loads(json.dumps([m.to_dict() for m in first.messages]))]
    reader = run(LoopOptions(model=again, messages=history, tools=tools()))
    collect(reader)
    return first, reader.result()


def test_three_step_reasoning_loop_with_claude_thinking_signed_with_sigv4(api: ConverseAPI) -> None:
    first, second = loop_in_two_runs(claude(api), claude(api))
    assert first.finish_reason is FinishReason.STEP_LIMIT
    assert first.reasoning == REASONING[:2]
    assert (second.finish_reason, second.text, second.reasoning) == (
        FinishReason.STOP,
        ANSWER,
        (REASONING[2],),
    )
    assert second.usage == Usage(input=42, output=25)  # the second run's one step
    assert api.bedrock.refused == 0
    records = api.bedrock.server.requests
    assert [r["path"] for r in records] == [
        "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    ] * 3
    last = records[2]["body"]
    assert [turn["role"] for turn in last["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    assert last["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": REASONING[0], "signature": SIGNATURES[0]}}},
        {"toolUse": {"toolUseId": "tooluse_w1", "name": "get_weather", "input": {"city": "Paris"}}},
    ]
    assert last["messages"][4]["content"] == [
        {"toolResult": {"toolUseId": "tooluse_t2", "content": [{"text": "14:00"}], "status": "success"}}
    ]
    assert last["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert last["inferenceConfig"] == {"maxTokens": 4096}
    assert [t["toolSpec"]["name"] for t in last["toolConfig"]["tools"]] == ["get_weather", "get_time"]


def test_three_step_reasoning_loop_with_gpt_oss_reasoning_without_a_signature(api: ConverseAPI) -> None:
    def gpt_oss() -> BedrockConverseModel:
        return BedrockConverseModel(
            GPT_OSS,
            base_url=api.bedrock.url,
            api_key=bedrock_server.API_KEY,
            settings=ModelSettings(reasoning_effort="high"),
        )

    first, second = loop_in_two_runs(gpt_oss(), gpt_oss())
    assert first.reasoning == REASONING[:2]
    assert (second.text, second.reasoning) == (ANSWER, (REASONING[2],))
    last = api.bedrock.server.requests[2]
    assert last["headers"]["Authorization"] == f"Bearer {bedrock_server.API_KEY}"
    assert last["body"]["messages"][3]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": REASONING[1]}}
    }
    assert last["body"]["additionalModelRequestFields"] == {"reasoning_effort": "high"}


def test_a_tool_turn_whose_reasoning_lost_its_signature_gets_bedrocks_validation_exception(
    api: ConverseAPI,
) -> None:
    reader = run(
        LoopOptions(
            model=claude(api), messages=[user_message("Weather in Paris?")], tools=tools(), step_limit=1
        )
    )
    collect(reader)
    history = list(reader.result().messages)
    definitions = [tool.definition for tool in tools()]
    settings = ModelSettings(thinking_budget=1024)
    body = request_body(
        Request(messages=history, tools=definitions), CLAUDE, settings=settings, origin=claude(api)._origin
    )
    assert claude_rule(body) == ""
    unsigned = json.loads(json.dumps(body))
    del unsigned["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"]
    dropped = json.loads(json.dumps(body))
    del dropped["messages"][1]["content"][0]
    url = api.bedrock.url + "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    for sent, message in ((unsigned, NO_SIGNATURE), (dropped, NO_THINKING_FIRST)):
        answer = requests.post(
            url, json=sent, headers={"Authorization": f"Bearer {bedrock_server.API_KEY}"}, timeout=10
        )
        assert (answer.status_code, answer.json()) == (
            400,
            {"message": message.format(index=1, found="tool_use")},
        )
        assert answer.headers["x-amzn-ErrorType"].startswith("ValidationException:")
    # through the adapter, reasoning that lost its signature is not sent to Claude, and the tool turn goes on
    # without thinking (the documented answer to a turn that began without it): Bedrock takes it
    stripped = Message(
        Role.ASSISTANT,
        [
            part
            if part.reasoning is None
            else ContentPart(ContentPartKind.REASONING, reasoning=attrs.evolve(part.reasoning, signature=""))
            for part in history[1].content
        ],
    )
    parts = list(
        claude(api).stream(Request(messages=[history[0], stripped, history[2]], tools=definitions), Context())
    )
    assert parts[-1].finish_reason is FinishReason.TOOL_CALLS
    sent = api.bedrock.server.requests[-1]["body"]
    assert "additionalModelRequestFields" not in sent
    assert list(sent["messages"][1]["content"][0]) == ["toolUse"]


def test_throttling_before_output_is_retried(api: ConverseAPI) -> None:
    api.throttle = [
        error_reply(429, "ThrottlingException", THROTTLED),
        stream_reply([exception_frame("throttlingException", THROTTLED)]),
    ]
    with pytest.raises(ModelError) as caught:
        list(claude(api).stream(Request(messages=[user_message("hi")]), Context()))
    assert (caught.value.error_class, caught.value.status) == (ErrorClass.RATE_LIMITED, 429)
    waits: list[float] = []
    reader = run(
        LoopOptions(
            model=claude(api),
            messages=[user_message("Weather in Paris?")],
            tools=tools(),
            step_limit=1,
            retry_base_delay=0.01,
            retry_sleep=waits.append,
        )
    )
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert len(waits) == 1  # the exception inside the stream, before any output, then the step
    assert len(api.bedrock.server.requests) == 3


def test_count_tokens_asks_count_tokens(api: ConverseAPI) -> None:
    model = claude(api)
    assert model.count_tokens([user_message("hi")], system="Be brief.") == 4321
    record = api.bedrock.server.requests[0]
    assert record["path"] == "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/count-tokens"
    assert api.counted == [
        {
            "input": {
                "converse": {
                    "messages": [{"role": "user", "content": [{"text": "hi"}]}],
                    "system": [{"text": "Be brief."}],
                    "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
                }
            }
        }
    ]


def server_model(api: ConverseAPI, **options: Any) -> BedrockConverseModel:
    return BedrockConverseModel(
        "amazon.nova-micro-v1:0", base_url=api.bedrock.url, api_key=bedrock_server.API_KEY, **options
    )


def test_a_cancel_mid_stream_stops_the_read(api: ConverseAPI) -> None:
    api.throttle = [
        stream_reply(
            [event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})],
            tail=[Stall()],
        )
    ]
    ctx = Context()
    stream = server_model(api).stream(Request(messages=[user_message("hi")]), ctx)
    assert next(stream).text == "Hel"
    threading.Timer(0.05, ctx.cancel).start()
    with pytest.raises(Canceled):
        next(stream)
    assert wait_until(lambda: api.bedrock.server.disconnects >= 1)


def test_a_stream_without_messages_hits_the_idle_timeout(api: ConverseAPI) -> None:
    first = event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})
    # bytes keep coming (each read within the read timeout), but no whole message for longer than 0.2 s
    api.throttle = [
        Reply(
            actions=[first, first[:10], Pause(0.15), first[10:12], Pause(0.15), first[12:14], Stall()],
            headers={"Content-Type": bedrock_server.EVENT_STREAM},
        )
    ]
    stream = server_model(api, timeout=Timeout(read=5, idle=0.2)).stream(
        Request(messages=[user_message("hi")]), Context()
    )
    assert next(stream).text == "Hel"
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is ErrorClass.TRANSIENT
    assert "idle timeout" in str(caught.value)


def test_a_stream_cut_before_message_stop_is_retried_before_output(api: ConverseAPI) -> None:
    frames = step_frames(2, signed=False)
    api.throttle = [stream_reply(frames[:1], tail=[Reset()]), stream_reply(frames)]
    reader = run(LoopOptions(model=server_model(api), messages=[user_message("hi")], retry_base_delay=0))
    collect(reader)
    assert reader.result().text == ANSWER
    assert len(api.bedrock.server.requests) == 2


def test_a_stream_cut_after_message_stop_ends_the_step_with_the_answer(api: ConverseAPI) -> None:
    frames = step_frames(2, signed=False)
    api.throttle = [stream_reply(frames[:-1], tail=[Reset()])]
    reader = run(LoopOptions(model=server_model(api), messages=[user_message("hi")]))
    collect(reader)
    result = reader.result()
    assert (result.text, result.usage) == (ANSWER, Usage())
    assert len(api.bedrock.server.requests) == 1


def test_a_wrong_signature_is_awss_403_and_not_retried(api: ConverseAPI) -> None:
    from botocore.credentials import Credentials

    wrong = Credentials(bedrock_server.ACCESS_KEY, "not-the-secret")
    model = BedrockConverseModel(CLAUDE, region="us-east-1", base_url=api.bedrock.url, aws_credentials=wrong)
    with pytest.raises(ModelError) as caught:
        list(model.stream(Request(messages=[user_message("hi")]), Context()))
    assert (caught.value.error_class, caught.value.status) == (ErrorClass.AUTH, 403)
    assert "signature we calculated does not match" in str(caught.value)


def test_the_options_say_what_is_missing() -> None:
    with pytest.raises(ConfigError, match=r"api_key= .* or aws_credentials="):
        BedrockConverseModel(CLAUDE, region="us-east-1")
    with pytest.raises(ConfigError, match="not both"):
        BedrockConverseModel(
            CLAUDE, region="us-east-1", api_key="k", aws_credentials=bedrock_server.credentials()
        )
    with pytest.raises(ConfigError, match="names no AWS Region to sign for: pass region= with base_url="):
        BedrockConverseModel(
            CLAUDE, base_url="http://127.0.0.1:1", aws_credentials=bedrock_server.credentials()
        )
    with pytest.raises(ConfigError, match=r"region= .* or base_url="):
        BedrockConverseModel(CLAUDE, api_key="k")
    model = BedrockConverseModel(CLAUDE, region="eu-west-3", api_key="k")
    assert model.base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    with pytest.raises(ConfigError, match="reasoning_effort"):
        BedrockConverseModel(
            CLAUDE, region="eu-west-3", api_key="k", settings=ModelSettings(reasoning_effort="low")
        )


RECORDED = [case for case in CASES if case[0].endswith(".events.jsonl")]


@pytest.mark.parametrize("case", RECORDED, ids=[case[0].split(".")[0] for case in RECORDED])
def test_a_recorded_event_stream_body_gives_the_same_through_the_real_framing(
    api: ConverseAPI, case: Any
) -> None:
    name, answer, _thought, _signature, _redacted, calls, finish, usage = case
    raw = base64.b64decode((FIXTURES / name.replace(".events.jsonl", ".eventstream.b64")).read_text())
    api.throttle = [stream_reply([raw], piece=97)]
    parts = list(server_model(api).stream(Request(messages=[user_message("hi")]), Context()))
    assert text(parts) == answer
    assert [
        (p.tool_call.id, p.tool_call.name, json.loads(p.tool_call.input)) for p in parts if p.tool_call
    ] == calls
    assert (parts[-1].finish_reason, parts[-1].usage) == (finish, usage)


def test_the_package_imports_without_botocore_and_a_model_asks_for_the_extra() -> None:
    code = (
        "import sys\n"
        "import agentcore.providers.bedrock as bedrock\n"
        "print('botocore' in sys.modules)\n"
        "sys.modules['botocore'] = None  # as if it were not installed\n"
        "try:\n"
        "    bedrock.BedrockConverseModel('amazon.nova-micro-v1:0', region='us-east-1', api_key='k')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "False",
        "ConfigError the Bedrock models need botocore: pip install 'agentcore[aws]'",
    ]


# --- the command line ----------------------------------------------------------------------------


def test_the_command_runs_the_reasoning_loop_signed_with_the_environments_keys(api: ConverseAPI) -> None:
    env = {
        "AWS_REGION": bedrock_server.REGION,
        "AWS_ACCESS_KEY_ID": bedrock_server.SESSION_ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": bedrock_server.SESSION_SECRET_KEY,
        "AWS_SESSION_TOKEN": bedrock_server.SESSION_TOKEN,
    }
    argv = ["--model", f"bedrock:{CLAUDE}", "--base-url", api.bedrock.url, "--thinking-budget", "1024"]
    out = io.StringIO()
    assert cli.main([*argv, "--json", "Weather in Paris?"], env=env, tools=tools(), stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    assert "".join(line.get("text", "") for line in lines if line["kind"] == "text-delta") == ANSWER
    assert [line["reasoning"]["text"] for line in lines if line["kind"] == "reasoning"] == list(REASONING)
    records = api.bedrock.server.requests
    assert api.bedrock.refused == 0  # every request's SigV4 signature matched
    assert [r["headers"]["X-Amz-Security-Token"] for r in records] == [bedrock_server.SESSION_TOKEN] * 3
    assert records[2]["body"]["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 1024}
    }


@pytest.fixture
def no_aws_chain(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    """botocore's chain finds nothing: no keys, files, SSO or instance role."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {},
            "needs the AWS Region the requests go to and are signed for: set AWS_REGION (or AWS_DEFAULT_REGION",
        ),
        ({"AWS_BEARER_TOKEN_BEDROCK": "k"}, "set AWS_REGION"),
        ({"AWS_REGION": "us-east-1"}, "needs AWS credentials: AWS_BEARER_TOKEN_BEDROCK"),
        ({"AWS_REGION": "us-east-1", "AWS_PROFILE": "nowhere"}, "nowhere"),
        ({"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIA"}, "needs AWS credentials"),
    ],
    ids=[
        "no region",
        "a key and no region",
        "no credentials",
        "an unknown profile",
        "a key id without its secret",
    ],
)
@pytest.mark.usefixtures("no_aws_chain")
def test_a_missing_region_or_credential_is_a_usage_error_naming_what_to_set(
    env: dict[str, str], named: str
) -> None:
    err = io.StringIO()
    assert cli.main(["--model", f"bedrock:{CLAUDE}", "hi"], env=env, stderr=err, stdout=io.StringIO()) == 2
    assert named in err.getvalue()


@pytest.mark.usefixtures("no_aws_chain")
def test_the_command_signs_with_a_profile_and_its_region_from_the_aws_files(
    api: ConverseAPI, tmp_path: pathlib.Path
) -> None:
    (tmp_path / "config").write_text(f"[profile dev]\nregion = {bedrock_server.REGION}\n")
    (tmp_path / "credentials").write_text(
        f"[dev]\naws_access_key_id = {bedrock_server.ACCESS_KEY}\n"
        f"aws_secret_access_key = {bedrock_server.SECRET_KEY}\n"
    )
    argv = ["--model", f"bedrock:{GPT_OSS}", "--base-url", api.bedrock.url, "--json", "Weather in Paris?"]
    out = io.StringIO()
    assert cli.main(argv, env={"AWS_PROFILE": "dev"}, tools=tools(), stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    assert api.bedrock.refused == 0  # signed for the profile's Region with the profile's keys
    assert all(
        f"Credential={bedrock_server.ACCESS_KEY}/" in r["headers"]["Authorization"]
        for r in api.bedrock.server.requests
    )


def test_a_model_id_is_required() -> None:
    err = io.StringIO()
    env = {"AWS_REGION": "us-east-1", "AWS_BEARER_TOKEN_BEDROCK": "k"}
    assert cli.main(["--model", "bedrock", "hi"], env=env, stderr=err, stdout=io.StringIO()) == 2
    assert "needs the model id: bedrock:MODEL_ID" in err.getvalue()
