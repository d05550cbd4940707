"""``GeminiModel`` over a real local socket, against a server that checks
what the Gemini API checks and answers with its real errors:

* the key in ``x-goog-api-key`` (else 400 ``API_KEY_INVALID``);
* Gemini 3's thought-signature rule
  (https://ai.google.dev/gemini-api/docs/thought-signatures): in the current
  turn, the first function call of each model step carries the signature
  the server issued with it, or the documented dummy, else 400
  ``INVALID_ARGUMENT`` "Function call is missing a thought_signature in
  functionCall parts" (the body as reported verbatim at
  discuss.ai.google.dev/t/109823 and github.com/ccch1mneyyy/dsh-Go/discussions/2016);
* a 429 ``RESOURCE_EXHAUSTED`` with its ``RetryInfo``
  (https://ai.google.dev/gemini-api/docs/troubleshooting).

Then the three-step reasoning tool loop the other adapters' emulators run
(saved as JSON after two steps and continued with a new adapter), retries,
a cancel mid-stream, the idle timeout, ``:countTokens`` and the command line.
"""

# ruff: noqa: E501  (the API's error bodies are kept on one line, as sent)

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
import requests

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    Message,
    ModelError,
    ModelSettings,
    Request,
    StreamPartKind,
    cli,
    run,
    user_message,
)
from agentcore.providers.gemini import GeminiModel
from agentcore.providers.gemini.request import DUMMY_SIGNATURE
from agentcore.transport import Timeout
from tests.localserver import LocalServer, Pause, Reply, Stall, json_reply, sse_reply
from tests.loop_helpers import FuncTool, collect, wait_until

KEY = "AIzaSy-test-0123456789"
REASONING = (
    "The user asks about Paris. I need the weather first.",
    "Sunny in Paris. Now the local time, to say whether it is still light.",
    "It is 14:00 and sunny: a good afternoon for a walk.",
)
ANSWER = "It is sunny in Paris and 14:00 there: go for a walk."
SIGNATURES = ("Q2lJQkFYTEkybng=", "Q2lJQkFYTEkybnk=", "Q2lJQkFYTEkybnp=")
CALLS = (("get_weather", {"city": "Paris"}, ""), ("get_time", {"tz": "Europe/Paris"}, "fc7t2x9q"))
"""The step's call: name, args and Gemini's id ("": none, as Gemini 3 Pro)."""

MISSING_SIGNATURE = {
    "error": {
        "code": 400,
        "message": "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:get_weather` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
        "status": "INVALID_ARGUMENT",
    }
}
BAD_KEY = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
            }
        ],
    }
}
RATE_LIMITED = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"},
        ],
    }
}


def chunk(*parts: dict[str, Any], finish: str = "", usage: dict[str, int] | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    data: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-3-pro-preview"}
    data["usageMetadata"] = usage or {
        "promptTokenCount": 40,
        "candidatesTokenCount": 5,
        "thoughtsTokenCount": 20,
    }
    return b"data: " + json.dumps(data).encode() + b"\r\n\r\n"


def step_stream(step: int) -> bytes:
    thoughts = [
        chunk({"text": REASONING[step][i : i + 9], "thought": True})
        for i in range(0, len(REASONING[step]), 9)
    ]
    if step < 2:
        name, args, given = CALLS[step]
        call: dict[str, Any] = {"name": name, "args": args, **({"id": given} if given else {})}
        body = chunk({"functionCall": call, "thoughtSignature": SIGNATURES[step]})
        return b"".join(thoughts) + body + chunk({"text": ""}, finish="STOP")
    text = [chunk({"text": ANSWER[i : i + 9]}) for i in range(0, len(ANSWER), 9)]
    return b"".join(thoughts + text) + chunk({"text": "", "thoughtSignature": SIGNATURES[2]}, finish="STOP")


def current_turn(contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The contents after the last user content holding text (not function responses)."""
    starts = [
        i for i, c in enumerate(contents) if c["role"] == "user" and any("text" in p for p in c["parts"])
    ]
    return contents[starts[-1] + 1 :] if starts else contents


def answer_step(body: dict[str, Any]) -> Reply:
    """The answer to a ``GenerateContentRequest``: the API's 400 for a tool turn
    missing its thought signature (the module docstring), else the next step's
    stream (shared with the Vertex AI emulator, tests/test_vertex_http.py)."""
    turn = current_turn(body["contents"])
    for content in turn:
        calls = [p for p in content["parts"] if "functionCall" in p] if content["role"] == "model" else []
        if calls and calls[0].get("thoughtSignature") not in (*SIGNATURES, DUMMY_SIGNATURE):
            return json_reply(400, MISSING_SIGNATURE)
    step = sum(1 for c in turn if c["role"] == "model")
    return sse_reply(step_stream(step), piece=50)


class GeminiAPI:
    """The Gemini API's checks on 127.0.0.1, then the step's stream."""

    def __init__(self) -> None:
        self.server = LocalServer(responder=self.respond)
        self.rate_limit_first = False

    def respond(self, request: dict[str, Any]) -> Reply:
        if request["headers"].get("x-goog-api-key") != KEY:
            return json_reply(400, BAD_KEY)
        if request["path"].endswith(":countTokens"):
            return json_reply(
                200, {"totalTokens": 4321, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 4321}]}
            )
        if self.rate_limit_first:
            self.rate_limit_first = False
            return json_reply(429, RATE_LIMITED)
        return answer_step(request["body"])


@pytest.fixture
def api() -> Any:
    fake = GeminiAPI()
    try:
        yield fake
    finally:
        fake.server.close()


def model(api: GeminiAPI, **options: Any) -> GeminiModel:
    return GeminiModel(
        "gemini-3-pro-preview",
        api_key=KEY,
        base_url=api.server.url,
        settings=ModelSettings(thinking=True),
        **options,
    )


def tools() -> list[FuncTool]:
    return [
        FuncTool("get_weather", lambda arguments, _ctx: "sunny in " + arguments["city"]),
        FuncTool("get_time", lambda _raw, _ctx: "14:00"),
    ]


def test_three_step_reasoning_loop_saved_and_continued(api: GeminiAPI) -> None:
    reader = run(
        LoopOptions(
            model=model(api), messages=[user_message("Weather in Paris?")], tools=tools(), step_limit=2
        )
    )
    first_parts = collect(reader)
    first = reader.result()
    assert first.finish_reason is FinishReason.STEP_LIMIT
    assert first.reasoning == REASONING[:2]
    kinds = [p.kind for p in first_parts]
    assert kinds.index(StreamPartKind.REASONING) < kinds.index(StreamPartKind.TOOL_CALL)
    saved = json.dumps([m.to_dict() for m in first.messages])

    history = [Message.from_dict(m) for m in json.loads(saved)]
    reader = run(LoopOptions(model=model(api), messages=history, tools=tools()))
    collect(reader)
    second = reader.result()
    assert second.finish_reason is FinishReason.STOP
    assert second.text == ANSWER
    assert second.reasoning == (REASONING[2],)

    bodies = [r["body"] for r in api.server.requests]
    assert len(bodies) == 3  # none refused
    last = bodies[2]["contents"]
    assert [c["role"] for c in last] == ["user", "model", "user", "model", "user"]
    # thoughts and signatures go back on the parts they came on
    assert last[1]["parts"][0] == {"text": REASONING[0], "thought": True}
    assert last[1]["parts"][1]["thoughtSignature"] == SIGNATURES[0]
    assert last[3]["parts"][1]["thoughtSignature"] == SIGNATURES[1]
    # Gemini's id goes back on the call and its response; a made-up one does not
    assert "id" not in last[1]["parts"][1]["functionCall"]
    assert last[2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "sunny in Paris"}}}
    ]
    assert last[3]["parts"][1]["functionCall"] == {
        "name": "get_time",
        "args": {"tz": "Europe/Paris"},
        "id": "fc7t2x9q",
    }
    assert last[4]["parts"] == [
        {"functionResponse": {"name": "get_time", "response": {"output": "14:00"}, "id": "fc7t2x9q"}}
    ]
    assert bodies[0]["generationConfig"] == {"thinkingConfig": {"includeThoughts": True}}
    assert bodies[0]["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    # the answer's signature, on the trailing empty text, is kept on the turn's text
    answer = second.messages[-1]
    assert [b.signature for b in answer.reasoning] == ["", SIGNATURES[2]]


def test_a_tool_turn_without_its_signature_gets_the_apis_400(api: GeminiAPI) -> None:
    reader = run(
        LoopOptions(
            model=model(api), messages=[user_message("Weather in Paris?")], tools=tools(), step_limit=1
        )
    )
    collect(reader)
    history = list(reader.result().messages)
    stripped = [
        Message(
            m.role,
            tuple(
                p
                if p.tool_call is None
                else type(p)(
                    p.kind, tool_call=type(p.tool_call)(p.tool_call.id, p.tool_call.name, p.tool_call.input)
                )
                for p in m.content
            ),
        )
        for m in history
    ]
    # the stripped call has no signature of Gemini's: the dummy goes in its place, and Gemini accepts it
    reader = run(LoopOptions(model=model(api), messages=stripped, tools=tools(), step_limit=1))
    collect(reader)
    assert api.server.requests[-1]["body"]["contents"][1]["parts"][1]["thoughtSignature"] == DUMMY_SIGNATURE
    # the control: the same history sent without any signature is refused with the API's own 400
    body = api.server.requests[-1]["body"]
    del body["contents"][1]["parts"][1]["thoughtSignature"]
    answer = requests.post(
        api.server.url + "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
        json=body,
        headers={"x-goog-api-key": KEY},
        timeout=10,
    )
    assert (answer.status_code, answer.json()) == (400, MISSING_SIGNATURE)


def test_a_wrong_key_is_the_apis_400_an_auth_error_and_never_shown(api: GeminiAPI) -> None:
    wrong = GeminiModel("gemini-3-pro-preview", api_key="AIzaSy-wrong-key-987654", base_url=api.server.url)
    with pytest.raises(ModelError) as caught:
        list(wrong.stream(Request(messages=[user_message("hi")]), Context()))
    # a 400, but its ErrorInfo says the key was refused: an authentication error
    assert (caught.value.error_class, caught.value.status) == (ErrorClass.AUTH, 400)
    assert "API key not valid" in str(caught.value)
    assert "wrong-key" not in str(caught.value)
    assert (
        api.server.requests[0]["path"] == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    )


def test_a_429_is_rate_limited_with_its_retry_delay_and_retried(api: GeminiAPI) -> None:
    api.rate_limit_first = True
    with pytest.raises(ModelError) as caught:
        list(model(api).stream(Request(messages=[user_message("hi")]), Context()))
    assert (caught.value.error_class, caught.value.retry_after, caught.value.status) == (
        ErrorClass.RATE_LIMITED,
        0.05,
        429,
    )
    api.rate_limit_first = True
    reader = run(
        LoopOptions(
            model=model(api), messages=[user_message("Weather in Paris?")], tools=tools(), step_limit=1
        )
    )
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert len(api.server.requests) == 3  # the refused request, then its retry


def test_count_tokens_asks_count_tokens(api: GeminiAPI) -> None:
    assert model(api).count_tokens([user_message("hi")], system="Be brief.") == 4321
    sent = api.server.requests[0]
    assert sent["path"] == "/v1beta/models/gemini-3-pro-preview:countTokens"
    assert sent["body"]["generateContentRequest"]["model"] == "models/gemini-3-pro-preview"
    assert sent["body"]["generateContentRequest"]["systemInstruction"] == {"parts": [{"text": "Be brief."}]}


def test_a_cancel_mid_stream_stops_the_read(server: LocalServer) -> None:
    server.add(Reply(actions=[chunk({"text": "Hel"}), Stall()]))
    ctx = Context()
    gemini = GeminiModel("gemini-2.5-flash", api_key=KEY, base_url=server.url)
    stream = gemini.stream(Request(messages=[user_message("hi")]), ctx)
    assert next(stream).text == "Hel"
    threading.Timer(0.05, ctx.cancel).start()
    with pytest.raises(Canceled):
        next(stream)
    assert wait_until(lambda: server.disconnects >= 1)


def test_a_stream_without_content_hits_the_idle_timeout(server: LocalServer) -> None:
    server.add(
        Reply(
            actions=[
                chunk({"text": "Hel"}),
                b": keep-alive\r\n\r\n",
                Pause(0.3),
                b": keep-alive\r\n\r\n",
                Stall(),
            ]
        )
    )
    gemini = GeminiModel(
        "gemini-2.5-flash", api_key=KEY, base_url=server.url, timeout=Timeout(read=5, idle=0.2)
    )
    stream = gemini.stream(Request(messages=[user_message("hi")]), Context())
    assert next(stream).text == "Hel"
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is ErrorClass.TRANSIENT


def test_a_stream_cut_before_the_finish_reason_is_transient_and_retried_before_output(
    server: LocalServer,
) -> None:
    server.add(sse_reply(b""), sse_reply(chunk({"text": "Hi"}, finish="STOP")))
    gemini = GeminiModel("gemini-2.5-flash", api_key=KEY, base_url=server.url)
    reader = run(LoopOptions(model=gemini, messages=[user_message("hi")]))
    collect(reader)
    assert reader.result().text == "Hi"
    assert server.hits == 2


def test_the_command_runs_the_loop_against_the_server(api: GeminiAPI) -> None:
    argv = ["--model", "gemini:gemini-3-pro-preview", "--base-url", api.server.url, "--json", "Weather?"]
    out = io.StringIO()
    assert cli.main(argv, env={"GEMINI_API_KEY": KEY}, tools=tools(), stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    assert "".join(line.get("text", "") for line in lines if line["kind"] == "text-delta") == ANSWER
    assert len(api.server.requests) == 3
    assert api.server.requests[0]["headers"]["x-goog-api-key"] == KEY
    usage = io.StringIO()
    code = cli.main(
        ["--model", "gemini:gemini-3-pro-preview", "hi"], env={}, stderr=usage, stdout=io.StringIO()
    )
    assert code == 2
    assert "GOOGLE_API_KEY or GEMINI_API_KEY" in usage.getvalue()
