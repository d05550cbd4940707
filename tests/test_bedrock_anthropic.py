"""``BedrockAnthropicModel`` on the recorded InvokeModelWithResponseStream
bodies of tests/fixtures/bedrock_invoke_anthropic/ (each streamed from the
local server as recorded, in reads that cut its messages), and the request
it sends: the recorded requests, ``anthropic_version`` in the body, no
``model`` or ``stream``, betas in ``anthropic_beta``, its options."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    Context,
    FinishReason,
    Message,
    ModelSettings,
    Request,
    StreamPartKind,
    ToolDefinition,
    Usage,
    user_message,
)
from agentcore.errors import ConfigError
from agentcore.providers.aws import SigV4
from agentcore.providers.bedrock import BedrockAnthropicModel
from agentcore.types import ToolResult, text_part, tool_call_part, tool_result_part
from tests import bedrock_server as bedrock
from tests.bedrock_server import API_KEY
from tests.localserver import LocalServer, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "bedrock_invoke_anthropic"
EXPECTED: dict[str, dict[str, Any]] = {
    "claude35_sonnet_text_then_two_tool_uses": {
        "finish": FinishReason.TOOL_CALLS,
        "usage": Usage(input=392, output=134),
        "calls": [
            ("toolu_bdrk_01KatiGijVFb9yuMPcnVk38e", "get_current_weather", {"location": "Seattle"}),
            ("toolu_bdrk_01Tzb35EydKHWz4UZP3puTbF", "get_current_weather", {"location": "San Francisco"}),
        ],
    },
    "claude35_sonnet_after_tool_results": {
        "finish": FinishReason.STOP,
        "usage": Usage(input=603, output=146),
    },
    "claude3_sonnet_text_no_padding": {"finish": FinishReason.STOP, "usage": Usage(input=16, output=21)},
    "claude_v2_messages_max_tokens": {"finish": FinishReason.LENGTH, "usage": Usage(input=14, output=10)},
}
"""What each case's ``computed_here`` and source assert: the finish reason,
the usage of the Messages API's events (``message_delta`` 134 output
tokens, where ``amazon-bedrock-invocationMetrics`` says 90), the calls."""


def recorded(case: str) -> bytes:
    return base64.b64decode((FIXTURES / f"{case}.eventstream.b64").read_text())


def meta(case: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / f"{case}.json").read_text()))


def output(result: dict[str, Any]) -> str:
    content = result["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def model(
    url: str, name: str = "us.anthropic.claude-3-5-sonnet-20240620-v1:0", **options: Any
) -> BedrockAnthropicModel:
    return BedrockAnthropicModel(name, base_url=url, api_key=API_KEY, **options)


@pytest.mark.parametrize("case", sorted(EXPECTED))
@pytest.mark.parametrize("piece", [0, 97])
def test_every_recorded_stream_conforms(server: LocalServer, case: str, piece: int) -> None:
    server.add(bedrock.stream_reply([recorded(case)], piece=piece))
    parts = list(model(server.url).stream(Request(messages=[user_message("hi")]), Context()))
    values = meta(case)["computed_here"]["values"]
    expected = EXPECTED[case]
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    assert text == values["text"]
    calls = [(p.tool_call.id, p.tool_call.name, json.loads(p.tool_call.input)) for p in parts if p.tool_call]
    assert calls == expected.get("calls", [])
    finish = parts[-1]
    assert finish.kind is StreamPartKind.STEP_FINISH
    assert (finish.finish_reason, finish.usage) == (expected["finish"], expected["usage"])
    wire = values["usage_final_merged"]
    assert (finish.usage.input, finish.usage.output) == (wire["input_tokens"], wire["output_tokens"])


def test_the_request_after_tool_results_is_the_recorded_one(server: LocalServer) -> None:
    case = "claude35_sonnet_after_tool_results"
    wire = json.loads((FIXTURES / f"{case}.request.json").read_text())
    first = recorded("claude35_sonnet_text_then_two_tool_uses")
    server.add(bedrock.stream_reply([first]), bedrock.stream_reply([recorded(case)]))
    tools = [
        ToolDefinition(t["name"], t["description"], json.dumps(t["input_schema"])) for t in wire["tools"]
    ]
    claude = model(server.url)
    question = wire["messages"][0]["content"][0]["text"]
    parts = list(
        claude.stream(
            Request(messages=[user_message(question)], tools=tools, max_output_tokens=wire["max_tokens"]),
            Context(),
        )
    )
    text = "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)
    calls = [p.tool_call for p in parts if p.tool_call]
    results = [block for block in wire["messages"][2]["content"] if block["type"] == "tool_result"]
    history = [
        user_message(question),
        Message("assistant", (text_part(text), *(tool_call_part(c) for c in calls))),
        Message(
            "user",
            tuple(
                tool_result_part(ToolResult(r["tool_use_id"], "get_current_weather", output(r)))
                for r in results
            ),
        ),
    ]
    list(
        claude.stream(Request(messages=history, tools=tools, max_output_tokens=wire["max_tokens"]), Context())
    )
    sent = server.requests[1]["body"]
    assert sent["anthropic_version"] == wire["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in sent
    assert "stream" not in sent
    assert sent["max_tokens"] == wire["max_tokens"]
    assert [m["role"] for m in sent["messages"]] == [m["role"] for m in wire["messages"]]
    assistant = [
        {k: b[k] for k in ("type", "id", "name", "input", "text") if k in b}
        for b in sent["messages"][1]["content"]
    ]
    assert assistant == [
        {k: b[k] for k in ("type", "id", "name", "input", "text") if k in b}
        for b in wire["messages"][1]["content"]
    ]
    sent_results = [(b["tool_use_id"], b["type"]) for m in sent["messages"][2:] for b in m["content"]]
    assert sent_results == [(r["tool_use_id"], "tool_result") for r in results]
    assert [t["name"] for t in sent["tools"]] == [t["name"] for t in wire["tools"]]
    assert (
        server.requests[1]["path"]
        == "/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke-with-response-stream"
    )


def test_betas_go_in_the_body_and_thinking_as_anthropic_maps_it(server: LocalServer) -> None:
    server.add(bedrock.stream_reply([recorded("claude3_sonnet_text_no_padding")]))
    claude = model(
        server.url,
        headers={"anthropic-beta": "interleaved-thinking-2025-05-14, context-1m-2025-08-07"},
        settings=ModelSettings(thinking=True, thinking_budget=2048),
        max_tokens=4096,
    )
    list(claude.stream(Request(messages=[user_message("hi")], system="Be brief."), Context()))
    sent = server.requests[0]
    assert sent["body"]["anthropic_beta"] == ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]
    assert not any(name.lower() == "anthropic-beta" for name in sent["headers"])
    assert sent["body"]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert "Be brief." in json.dumps(sent["body"]["system"])
    assert sent["headers"]["accept"] == "application/vnd.amazon.eventstream"


def test_count_tokens_asks_bedrocks_count_tokens(server: LocalServer) -> None:
    server.add(
        Reply(actions=[b'{"inputTokens": 57}'], headers={"Content-Type": "application/json"}, chunked=False)
    )
    assert model(server.url).count_tokens([user_message("hi")], system="Be brief.") == 57
    sent = server.requests[0]
    assert sent["path"] == "/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/count-tokens"
    inner = json.loads(base64.b64decode(sent["body"]["input"]["invokeModel"]["body"]))
    assert inner["anthropic_version"] == "bedrock-2023-05-31"
    cached = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}  # as a step sends it
    assert inner["messages"] == [{"role": "user", "content": [cached]}]
    assert "model" not in inner
    assert "cache_control" not in inner


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"region": "us-east-1"}, "api_key= (a Bedrock API key"),
        ({"region": "us-east-1", "api_key": API_KEY, "aws_credentials": bedrock.credentials()}, "not both"),
        ({"api_key": API_KEY}, "region= (the AWS Region"),
        ({"base_url": "http://127.0.0.1:9", "aws_credentials": bedrock.credentials()}, "names no AWS Region"),
        ({"region": "us-east-1", "aws_credentials": None, "api_key": ""}, "api_key= "),
    ],
)
def test_options_that_cannot_sign_in_are_config_errors(options: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        BedrockAnthropicModel("anthropic.claude-sonnet-4-5-20250929-v1:0", **options)


def test_the_region_gives_the_url_and_signs() -> None:
    claude = BedrockAnthropicModel(
        "anthropic.claude-sonnet-4-5-20250929-v1:0", region="eu-west-3", aws_credentials=bedrock.credentials()
    )
    assert claude.base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    vpce = "https://vpce-0a1b2c.bedrock-runtime.eu-west-3.vpce.amazonaws.com"
    assert BedrockAnthropicModel("m", base_url=vpce, aws_credentials=bedrock.credentials()).base_url == vpce
    signer = SigV4("eu-west-3", bedrock.credentials())
    assert (
        BedrockAnthropicModel("m", base_url="http://127.0.0.1:9", aws_credentials=signer).base_url
        == "http://127.0.0.1:9"
    )
