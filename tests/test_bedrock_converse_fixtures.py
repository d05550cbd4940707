"""Bedrock ConverseStream streams recorded from the real API by other projects
(``tests/fixtures/bedrock_converse/``, README there) give, through the Converse
stream mapping, the text, tool calls, reasoning (signature, redacted data),
finish reason and usage their sources assert; and the request mapping sends
back what the recorded follow-up requests sent (reasoning with its signature,
redacted reasoning, toolUse/toolResult, a server tool's blocks, cache points).
"""

from __future__ import annotations

import base64
import json
import pathlib
from typing import Any

import pytest

from agentcore import FinishReason, Message, Request, Role, StreamPart, StreamPartKind, Usage, user_message
from agentcore.files import File
from agentcore.providers.bedrock.request import FORMAT, KEPT_BLOCK, request_body
from agentcore.providers.bedrock.stream import StreamState
from agentcore.settings import ModelSettings
from agentcore.transport.sse import Event
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    ProviderItem,
    Reasoning,
    ToolCall,
    ToolDefinition,
    ToolResult,
    cache_point,
)

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "bedrock_converse"
ORIGIN = "bedrock-runtime.us-east-1.amazonaws.com"


def events(name: str) -> list[Event]:
    """The decoded events of a case: each line of a ``.events.jsonl``
    (``{"headers": {":event-type"}, "payload"}``) or of a Vercel
    ``.chunks.jsonl`` (``{"<event type>": payload}``)."""
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        record = json.loads(line)
        if "headers" in record:
            out.append(Event(event=record["headers"][":event-type"], data=record["payload"]))
        else:
            [(kind, payload)] = record.items()
            out.append(Event(event=kind, data=payload))
    return out


def parts_of(name: str) -> list[StreamPart]:
    state = StreamState(ORIGIN)
    parts: list[StreamPart] = []
    for event in events(name):
        parts += state.feed(event)
        if state.done:
            break
    assert state.done  # every recording ends with its metadata
    return parts + state.finish()


def text(parts: list[StreamPart]) -> str:
    return "".join(p.text for p in parts if p.kind is StreamPartKind.TEXT_DELTA)


# (case, text, reasoning text, signature length, redacted blocks, tool calls (id, name, input), finish, usage)
CASES: list[tuple[str, str, str, int, int, list[tuple[str, str, Any]], FinishReason, Usage]] = [
    (
        "claude_sonnet4_reasoning_signature.events.jsonl",
        "Hello! It's nice to meet you. How can I help you today?",
        'The user has greeted me with a simple "Hello". I should respond in a friendly and welcoming manner. '
        "This is a straightforward greeting, so I'll respond warmly and ask how I can help them today.",
        496,
        0,
        [],
        FinishReason.STOP,
        Usage(36, 73),
    ),
    (
        "claude37_redacted_reasoning.events.jsonl",
        "I notice you've sent what appears to be some kind of command or trigger string, but I don't respond "
        "to special codes or triggers. That string doesn't have any special meaning to me.\n\nIf you have a "
        "question you'd like to discuss or need assistance with something, I'd be happy to help in a "
        "straightforward conversation. What would you like to talk about today?",
        "",
        0,
        2,
        [],
        FinishReason.STOP,
        Usage(92, 253),
    ),
    (
        "claude3_sonnet_text_then_tool_use.events.jsonl",
        "Okay, let me check the weather for Barcelona using the available tool:",
        "",
        0,
        0,
        [("tooluse_yypYDr71TwCwByoyao4-Vg", "get_weather", {"location": "Barcelona"})],
        FinishReason.TOOL_CALLS,
        Usage(236, 58),
    ),
    (
        "gpt_oss_empty_text_block_then_reasoning.events.jsonl",
        "Hello! How can I help you today?",
        'The user just says "Hi". We need to respond appropriately, friendly greeting. No special '
        "instructions. Should be short.",
        0,
        0,
        [],
        FinishReason.STOP,
        Usage(70, 43),
    ),
    (
        "nova2_lite_server_tool_code_interpreter.events.jsonl",
        "",
        "",
        0,
        0,
        [("tooluse_ptgCcZ0uQu-UUMz0abqoWw", "final_result", {"result": 7006652.0})],
        FinishReason.TOOL_CALLS,
        Usage(1002, 59),
    ),
    (
        "nova_micro_after_tool_result.events.jsonl",
        "The current temperature in Paris, the capital of France, is 30°C.",
        "",
        0,
        0,
        [],
        FinishReason.STOP,
        Usage(577, 18),
    ),
    (
        "nova_micro_prompt_cache_read.events.jsonl",
        "It sounds like you're initiating a test scenario",
        "",
        0,
        0,
        [],
        FinishReason.LENGTH,
        Usage(input=4 + 2701, output=10, cache_read=2701),
    ),
    (
        "nova_micro_prompt_cache_write.events.jsonl",
        "Got it, this is a test. If you",
        "",
        0,
        0,
        [],
        FinishReason.LENGTH,
        Usage(input=4, output=10, cache_write=2701),
    ),
    (
        "nova_micro_text.events.jsonl",
        "The capital of France is Paris. Paris is not only the capital city but also the most populous city "
        "in France, and it is a major center for culture, commerce, fashion, and international diplomacy. "
        "Known for its historical landmarks, such as the Eiffel Tower, the Louvre Museum, and Notre-Dame "
        'Cathedral, Paris is often referred to as "The City of Light" or "The City of Love."',
        "",
        0,
        0,
        [],
        FinishReason.STOP,
        Usage(13, 82),
    ),
    (
        "nova_micro_text_then_tool_use.events.jsonl",
        "<thinking> To find the temperature of the capital of France, I need to first determine the capital "
        "of France and then get the current temperature in that city. The capital of France is Paris. I will "
        'use the "get_temperature" tool to find the current temperature in Paris.</thinking>\n',
        "",
        0,
        0,
        [("tooluse_lAG_zP8QRHmSYOwZzzaCqA", "get_temperature", {"city": "Paris"})],
        FinishReason.TOOL_CALLS,
        Usage(471, 91),
    ),
    (
        "titan_guardrail_intervened.events.jsonl",
        "\nThe capital of {ADDRESS} is {ADDRESS}. The capital of {ADDRESS} is {ADDRESS}.",
        "",
        0,
        0,
        [],
        FinishReason.CONTENT_FILTER,
        Usage(17, 16),
    ),
    (
        "vercel_claude_reasoning_chunks.chunks.jsonl",
        'There are **3** r\'s in "strawberry":\n\n1. st**r**awbe**r****r**y',
        'Let me count the r\'s in "strawberry":\n\ns-t-r-a-w-b-e-r-r-y\n\nr appears at positions 3, 8, and '
        "9.\n\nSo there are 3 r's.",
        388,
        0,
        [],
        FinishReason.STOP,
        Usage(51, 94),
    ),
    (
        "vercel_claude_text_chunks.chunks.jsonl",
        'Let me count the "r"s in "strawberry":\n\ns-t-**r**-a-w-b-e-**r**-**r**-y\n\nThere are **3** r\'s '
        'in "strawberry."',
        "",
        0,
        0,
        [],
        FinishReason.STOP,
        Usage(22, 55),
    ),
]


@pytest.mark.parametrize(
    ("case", "answer", "thought", "signature", "redacted", "calls", "finish", "usage"),
    CASES,
    ids=[case[0].split(".")[0] for case in CASES],
)
def test_a_recorded_stream_gives_what_its_source_asserts(
    case: str,
    answer: str,
    thought: str,
    signature: int,
    redacted: int,
    calls: list[tuple[str, str, Any]],
    finish: FinishReason,
    usage: Usage,
) -> None:
    parts = parts_of(case)
    assert text(parts) == answer
    blocks = [p.reasoning for p in parts if p.kind is StreamPartKind.REASONING and p.reasoning is not None]
    readable = [block for block in blocks if not block.data]
    assert "".join(block.text for block in readable) == thought
    assert sum(len(block.signature) for block in readable) == signature
    assert len([block for block in blocks if block.data]) == redacted
    assert all(block.format == FORMAT and block.origin == ORIGIN for block in blocks)
    reasoning_deltas = "".join(p.text for p in parts if p.kind is StreamPartKind.REASONING_DELTA)
    assert reasoning_deltas == thought
    got = [(p.tool_call.id, p.tool_call.name, json.loads(p.tool_call.input)) for p in parts if p.tool_call]
    assert got == calls
    last = parts[-1]
    assert last.kind is StreamPartKind.STEP_FINISH
    assert (last.finish_reason, last.usage) == (finish, usage)


def test_redacted_reasoning_keeps_each_blob_byte_for_byte() -> None:
    recorded = [
        record["payload"]["delta"]["reasoningContent"]["redactedContent"]
        for record in map(
            json.loads, (FIXTURES / "claude37_redacted_reasoning.events.jsonl").read_text().splitlines()
        )
        if "reasoningContent" in record["payload"].get("delta", {})
    ]
    blocks = [p.reasoning for p in parts_of("claude37_redacted_reasoning.events.jsonl") if p.reasoning]
    assert [block.data for block in blocks] == recorded
    assert all(len(blob) > 100 for blob in recorded)


def test_a_server_tools_blocks_are_kept_as_the_request_sends_them_back() -> None:
    items = [p.provider_item for p in parts_of("nova2_lite_server_tool_code_interpreter.events.jsonl")]
    kept = [json.loads(item.data) for item in items if item is not None]
    assert [item.type for item in items if item is not None] == [KEPT_BLOCK, KEPT_BLOCK]
    assert kept == [
        {
            "toolUse": {
                "name": "nova_code_interpreter",
                "toolUseId": "tooluse_VQNZJRUFMoqZzszVsRd4og",
                "type": "server_tool_use",
                "input": {"snippet": "1234 * 5678"},
            }
        },
        {
            "toolResult": {
                "status": "success",
                "toolUseId": "tooluse_VQNZJRUFMoqZzszVsRd4og",
                "type": "nova_code_interpreter_result",
                "content": [{"json": {"stdOut": "7006652", "stdErr": "", "exitCode": 0, "isError": False}}],
            }
        },
    ]


# --- round trips: the request this mapping builds for a recorded history ----


def recorded(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return value


def assistant_of(response: str, origin: str = ORIGIN) -> Message:
    """The assistant message the loop keeps for a recorded non-streaming
    Converse response (its ``output.message.content`` blocks, in order)."""
    content: list[ContentPart] = []
    for block in recorded(response)["output"]["message"]["content"]:
        if "text" in block:
            content.append(ContentPart(ContentPartKind.TEXT, text=block["text"]))
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]
            readable = reasoning.get("reasoningText", {})
            kept = Reasoning(
                text=readable.get("text", ""),
                signature=readable.get("signature", ""),
                data=reasoning.get("redactedContent", ""),
                format=FORMAT,
                origin=origin,
            )
            content.append(ContentPart(ContentPartKind.REASONING, reasoning=kept))
        elif "toolUse" in block and block["toolUse"].get("type") != "server_tool_use":
            use = block["toolUse"]
            call = ToolCall(use["toolUseId"], use["name"], json.dumps(use["input"]))
            content.append(ContentPart(ContentPartKind.TOOL_CALL, tool_call=call))
        else:
            item = ProviderItem(type=KEPT_BLOCK, data=json.dumps(block), format=FORMAT, origin=origin)
            content.append(ContentPart(ContentPartKind.PROVIDER_ITEM, provider_item=item))
    return Message(Role.ASSISTANT, content)


def tool_message(*results: ToolResult) -> Message:
    return Message(Role.TOOL, [ContentPart(ContentPartKind.TOOL_RESULT, tool_result=r) for r in results])


def test_reasoning_and_its_signature_go_back_as_the_recorded_tool_turn_sent_them() -> None:
    sent = recorded("roundtrip_claude37_thinking_tool.i1.request.json")
    assistant = assistant_of("roundtrip_claude37_thinking_tool.i0.response.json")
    call = assistant.tool_calls[0]
    history = [
        user_message("What is the largest city in the user country?"),
        assistant,
        tool_message(ToolResult(call.id, call.name, "Mexico")),
    ]
    schema = json.dumps(sent["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"])
    request = Request(messages=history, tools=[ToolDefinition("get_user_country", "", schema)])
    settings = ModelSettings(thinking=True, thinking_budget=1024)
    body = request_body(
        request, "us.anthropic.claude-3-7-sonnet-20250219-v1:0", settings=settings, origin=ORIGIN
    )
    assert body["messages"] == sent["messages"]
    assert body["toolConfig"] == sent["toolConfig"]
    assert body["additionalModelRequestFields"] == sent["additionalModelRequestFields"]


def test_redacted_reasoning_goes_back_as_the_recorded_next_turn_sent_it() -> None:
    sent = recorded("roundtrip_claude37_redacted_reasoning.i1.request.json")
    history = [
        user_message(sent["messages"][0]["content"][0]["text"]),
        assistant_of("roundtrip_claude37_redacted_reasoning.i0.response.json"),
        user_message("What was that?"),
    ]
    settings = ModelSettings(thinking_budget=1024)
    body = request_body(
        Request(messages=history),
        "us.anthropic.claude-3-7-sonnet-20250219-v1:0",
        settings=settings,
        origin=ORIGIN,
    )
    assert body["messages"] == sent["messages"]
    assert body["additionalModelRequestFields"] == sent["additionalModelRequestFields"]


def test_reasoning_from_another_origin_is_left_out() -> None:
    assistant = assistant_of(
        "roundtrip_claude37_redacted_reasoning.i0.response.json", origin="elsewhere.example"
    )
    history = [user_message("hi"), assistant, user_message("What was that?")]
    body = request_body(
        Request(messages=history), "us.anthropic.claude-3-7-sonnet-20250219-v1:0", origin=ORIGIN
    )
    assert [list(block) for block in body["messages"][1]["content"]] == [["text"]]


def test_a_server_tools_blocks_and_the_client_call_go_back_as_recorded() -> None:
    sent = recorded("roundtrip_nova2_code_interpreter.i1.request.json")
    assistant = Message(Role.ASSISTANT, [])
    blocks = sent["messages"][1]["content"]
    content = [
        ContentPart(
            ContentPartKind.PROVIDER_ITEM,
            provider_item=ProviderItem(type=KEPT_BLOCK, data=json.dumps(block), format=FORMAT, origin=ORIGIN),
        )
        for block in blocks[:2]
    ]
    use = blocks[2]["toolUse"]
    call = ToolCall(use["toolUseId"], use["name"], json.dumps(use["input"]))
    assistant = Message(Role.ASSISTANT, [*content, ContentPart(ContentPartKind.TOOL_CALL, tool_call=call)])
    history = [
        user_message("What is 1234 * 5678?"),
        assistant,
        tool_message(ToolResult(call.id, call.name, "Final result processed.")),
        user_message("Now multiply that by 2"),
    ]
    body = request_body(
        Request(system="You are a helpful chatbot.", messages=history),
        "us.amazon.nova-2-lite-v1:0",
        origin=ORIGIN,
    )
    assert body["messages"] == sent["messages"]
    assert body["system"] == sent["system"]


def test_a_tool_turn_goes_back_as_the_recorded_request_sent_it() -> None:
    sent = recorded("nova_micro_after_tool_result.request.json")
    use = sent["messages"][1]["content"][1]["toolUse"]
    call = ToolCall(use["toolUseId"], use["name"], json.dumps(use["input"]))
    assistant = Message(
        Role.ASSISTANT,
        [
            ContentPart(ContentPartKind.TEXT, text=sent["messages"][1]["content"][0]["text"]),
            ContentPart(ContentPartKind.TOOL_CALL, tool_call=call),
        ],
    )
    history = [
        user_message("What is the temperature of the capital of France?"),
        assistant,
        tool_message(ToolResult(call.id, call.name, "30°C")),
    ]
    tools = [
        ToolDefinition(
            spec["toolSpec"]["name"],
            spec["toolSpec"]["description"],
            json.dumps(spec["toolSpec"]["inputSchema"]["json"]),
        )
        for spec in sent["toolConfig"]["tools"]
    ]
    request = Request(system="You are a helpful chatbot.", messages=history, tools=tools)
    body = request_body(
        request, "us.amazon.nova-micro-v1:0", settings=ModelSettings(top_p=0.5), origin=ORIGIN
    )
    assert body == sent


def test_cache_points_stand_where_the_recorded_request_put_them() -> None:
    sent = recorded("nova_micro_prompt_cache_write.request.json")
    system = sent["system"]
    assert system[1] == {"cachePoint": {"type": "default"}}
    body = request_body(
        Request(system=system[0]["text"], messages=[user_message(sent["messages"][0]["content"][0]["text"])]),
        "us.amazon.nova-micro-v1:0",
        settings=ModelSettings(cache_system=True),
        origin=ORIGIN,
    )
    assert body["system"] == system
    assert body["messages"] == sent["messages"]


def test_cache_points_in_the_system_prompt_the_tools_and_a_message_go_as_recorded() -> None:
    sent = recorded("roundtrip_claude45_cache_point.i0.request.json")
    blocks = sent["messages"][0]["content"]
    document = blocks[1]["document"]
    data = base64.b64decode(document["source"]["bytes"])
    parts = [
        ContentPart(ContentPartKind.TEXT, text=blocks[0]["text"]),
        ContentPart(
            ContentPartKind.FILE, file=File(media_type="text/plain", data=data, filename="Document 1.txt")
        ),
        ContentPart(ContentPartKind.TEXT, text=blocks[2]["text"]),
        cache_point(),
        ContentPart(ContentPartKind.TEXT, text=blocks[4]["text"]),
        cache_point(),
    ]
    tools = [
        ToolDefinition(spec["toolSpec"]["name"], "", json.dumps(spec["toolSpec"]["inputSchema"]["json"]))
        for spec in sent["toolConfig"]["tools"]
        if "toolSpec" in spec
    ]
    request = Request(system=sent["system"][0]["text"], messages=[Message(Role.USER, parts)], tools=tools)
    settings = ModelSettings(cache_system=True, cache_tools=True)
    body = request_body(
        request, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", settings=settings, origin=ORIGIN
    )
    assert {key: body[key] for key in ("messages", "system")} == {
        key: sent[key] for key in ("messages", "system")
    }
    assert body["toolConfig"]["tools"] == sent["toolConfig"]["tools"]
