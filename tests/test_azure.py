"""Azure OpenAI (agentcore.providers.azure) and the endpoint seam under it:
recorded Azure streams read through the Azure adapters, a local server on
127.0.0.1 that checks what Azure checks (the ``api-key`` header or a live
Entra ID token, the v1 path, the deployment in the body's ``model``), and
credentials whose tokens expire."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    ConfigError,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    ModelSettings,
    Request,
    Usage,
    cli,
    generate,
    user_message,
)
from agentcore.caching import CacheCause, CachePolicy, CacheReport, CacheTracker
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.azure import AzureOpenAIChatModel, AzureOpenAIResponsesModel
from agentcore.providers.azure.model import cache_policy
from agentcore.providers.endpoint import REFRESH_SECONDS, Endpoint, Token
from agentcore.transport.memory import MemoryTransport, Reply
from agentcore.types import StreamPart, StreamPartKind
from tests.localserver import LocalServer, json_reply, sse_reply
from tests.localserver import Reply as ServerReply

FIXTURES = Path(__file__).parent / "fixtures" / "azure"
KEY = "azure-key-0123456789abcdef"
DEPLOYMENT = "gpt-4o-mini-prod"
UNAUTHORIZED = {
    "error": {
        "code": "401",
        "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
        "provide a valid key for an active subscription and use a correct regional API endpoint for "
        "your resource.",
    }
}
"""Azure's 401 body for a missing or wrong key."""
CHAT_TEXT = (
    b'data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},'
    b'"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}}\n\n'
    b"data: [DONE]\n\n"
)


def recorded(stem: str) -> bytes:
    """The case's body: the ``.sse`` file as recorded, or the decoded JSON lines
    of a ``.chunks.jsonl`` file each framed as one ``data:`` event."""
    sse = FIXTURES / f"{stem}.sse"
    if sse.exists():
        return sse.read_bytes()
    lines = (FIXTURES / f"{stem}.chunks.jsonl").read_text(encoding="utf-8").splitlines()
    return b"".join(b"data: " + line.encode() + b"\n\n" for line in lines if line.strip())


def run(model: Any) -> list[StreamPart]:
    return list(model.stream(Request(messages=[user_message("hi")]), Context()))


def text_of(parts: list[StreamPart]) -> str:
    return "".join(part.text for part in parts if part.kind is StreamPartKind.TEXT_DELTA)


# --- recorded Azure streams -----------------------------------------------------


@pytest.mark.parametrize(
    ("stem", "text"),
    [
        (
            "chat_gpt35_prompt_filter_results_2024",
            "Why did the Opentelemetry developer bring a ladder to the coding competition? \n\n"
            "Because they wanted to reach new traces!",
        ),
        (
            "chat_gpt41mini_protected_material_2026",
            "Why did the developer bring a map to the OpenTelemetry conference? \n\n"
            "Because they wanted to trace every step!",
        ),
    ],
)
def test_a_recorded_azure_chat_stream_skips_the_prompt_filter_chunk(stem: str, text: str) -> None:
    # the source sent no stream_options, so Azure reported no usage: zero tokens, not a failure
    spec = json.loads((FIXTURES / f"{stem}.json").read_text(encoding="utf-8"))
    assert spec["request_line"].startswith("POST https://traceloop-stg.openai.azure.com/openai/")
    parts = run(AzureOpenAIChatModel(DEPLOYMENT, resource="res", api_key=KEY, transport=transport(stem)))
    assert text_of(parts) == text == spec["computed_here"]["values"]["text"]
    assert [part.kind for part in parts].count(StreamPartKind.TOOL_CALL) == 0
    assert (parts[-1].finish_reason, parts[-1].usage) == (FinishReason.STOP, Usage(0, 0))


def transport(stem: str) -> MemoryTransport:
    return MemoryTransport(Reply.of(recorded(stem), piece=97))


def test_the_foundry_deepseek_stream_gives_its_reasoning_then_its_text() -> None:
    parts = run(
        AzureOpenAIChatModel(
            "deepseek-v4-pro",
            resource="res",
            api_key=KEY,
            transport=transport("foundry_deepseek_reasoning_content"),
        )
    )
    kinds = [
        part.kind for part in parts if part.kind in (StreamPartKind.REASONING, StreamPartKind.TEXT_DELTA)
    ]
    assert kinds[0] is StreamPartKind.REASONING
    assert set(kinds[1:]) == {StreamPartKind.TEXT_DELTA}
    [reasoning] = [part.reasoning for part in parts if part.kind is StreamPartKind.REASONING]
    assert reasoning is not None
    # the source asserts the parts' order (reasoning, then text); the values are the stream's own
    values = json.loads((FIXTURES / "foundry_deepseek_reasoning_content.json").read_text("utf-8"))[
        "computed_here"
    ]
    assert reasoning.text.startswith("We need to invent a new holiday around the latest Knicks game.")
    assert len(reasoning.text) == values["values"]["reasoning_content_chars"]
    assert text_of(parts) == values["values"]["text"]
    assert (parts[-1].finish_reason, parts[-1].usage) == (FinishReason.STOP, Usage(19, 1720))


def test_the_recorded_azure_responses_text_stream() -> None:
    parts = run(
        AzureOpenAIResponsesModel(
            "gpt-5.1", resource="res", api_key=KEY, transport=transport("responses_text")
        )
    )
    assert text_of(parts) == "Hello"
    assert (parts[-1].finish_reason, parts[-1].usage) == (FinishReason.STOP, Usage(11, 11))


def test_the_recorded_azure_responses_tool_call_stream() -> None:
    model = AzureOpenAIResponsesModel(
        "gpt-5.1", resource="res", api_key=KEY, transport=transport("responses_function_call")
    )
    parts = run(model)
    [call] = [part.tool_call for part in parts if part.kind is StreamPartKind.TOOL_CALL]
    assert call is not None
    assert (call.id, call.name, json.loads(call.input)) == (
        "call_H5DxLSFnsGhiROnUiDHmgyc8",
        "weather",
        {"location": "San Francisco"},
    )
    assert (parts[-1].finish_reason, parts[-1].usage) == (FinishReason.TOOL_CALLS, Usage(45, 24))


# --- what is sent, and the mistakes refused -----------------------------------------


def test_the_v1_endpoint_gets_the_deployment_in_the_body_and_the_key_in_api_key() -> None:
    memory = MemoryTransport(Reply.of(CHAT_TEXT))
    run(AzureOpenAIChatModel(DEPLOYMENT, resource="contoso-eu", api_key=KEY, transport=memory))
    sent = memory.sent[0]
    assert sent.url == "https://contoso-eu.openai.azure.com/openai/v1/chat/completions"
    assert sent.headers["api-key"] == KEY
    assert "Authorization" not in sent.headers
    assert sent.json()["model"] == DEPLOYMENT
    memory = MemoryTransport(Reply.of(recorded("responses_text")))
    run(AzureOpenAIResponsesModel(DEPLOYMENT, resource="contoso-eu", api_key=KEY, transport=memory))
    assert memory.sent[0].url == "https://contoso-eu.openai.azure.com/openai/v1/responses"
    assert memory.sent[0].json()["model"] == DEPLOYMENT


@pytest.mark.parametrize("cls", [AzureOpenAIChatModel, AzureOpenAIResponsesModel])
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"api_key": KEY},
            r"^Azure OpenAI needs resource= \(the Azure OpenAI resource's name\) or base_url=",
        ),
        (
            {"api_key": KEY, "resource": "r", "base_url": "https://r.openai.azure.com/openai/v1"},
            r"^pass resource= or base_url=, not both",
        ),
        (
            {"api_key": KEY, "resource": "https://r.openai.azure.com"},
            r"^resource must be an Azure resource name .*; pass a URL as base_url=$",
        ),
        (
            {"resource": "r"},
            r"^Azure OpenAI needs api_key= \(the resource's key, sent as api-key\) or credentials=",
        ),
        (
            {"resource": "r", "api_key": KEY, "credentials": lambda: "t"},
            r"^pass api_key or credentials, not both",
        ),
        ({"resource": "r", "credentials": "a-token"}, r"^credentials must be a callable returning a token"),
    ],
)
def test_a_missing_resource_or_credential_is_a_config_error(
    cls: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        cls(DEPLOYMENT, **options)


def test_an_anthropic_endpoint_with_the_model_in_the_path_and_the_version_in_the_body() -> None:
    # the shape of Claude on Vertex AI: the same mapping, reached elsewhere
    vertex = Endpoint(
        "/v1/projects/p/locations/global/publishers/anthropic/models/{model}:streamRawPredict",
        headers={"content-type": "application/json"},
        body={"anthropic_version": "vertex-2023-10-16"},
        omit=("model",),
    )
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
        b'"role":"assistant","content":[],"model":"claude","usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":2}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    memory = MemoryTransport(Reply.of(body))
    model = AnthropicModel(
        "claude-sonnet-4@20250514",
        base_url="https://aiplatform.googleapis.com",
        endpoint=vertex,
        credentials=lambda: "ya29.token-0123456789",
        transport=memory,
        settings=None,
    )
    parts = run(model)
    assert text_of(parts) == "Hi"
    sent = memory.sent[0]
    assert sent.url == (
        "https://aiplatform.googleapis.com/v1/projects/p/locations/global/publishers/anthropic/models/"
        "claude-sonnet-4@20250514:streamRawPredict"
    )
    assert "model" not in sent.json()
    assert sent.json()["anthropic_version"] == "vertex-2023-10-16"
    assert sent.json()["stream"] is True
    assert sent.headers["Authorization"] == "Bearer ya29.token-0123456789"
    assert "anthropic-version" not in {name.lower() for name in sent.headers}


def test_a_model_id_with_a_slash_or_colon_is_one_path_segment() -> None:
    endpoint = Endpoint("/model/{model}/invoke")
    assert (
        endpoint.url("https://h", "arn:aws:bedrock:x/y")
        == "https://h/model/arn%3Aaws%3Abedrock%3Ax%2Fy/invoke"
    )


# --- an Azure server on 127.0.0.1 ---------------------------------------------------


class Azure:
    """What an Azure OpenAI resource checks: the v1 path, ``api-key`` (or a
    bearer token it issued and has not revoked), the deployment in ``model``."""

    def __init__(self) -> None:
        self.tokens: set[str] = set()
        self.lock = threading.Lock()
        self.server = LocalServer(responder=self.answer)

    def answer(self, request: dict[str, Any]) -> ServerReply:
        headers = {name.lower(): value for name, value in request["headers"].items()}
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        with self.lock:
            signed = headers.get("api-key") == KEY or bearer in self.tokens
        if not signed:
            return json_reply(401, UNAUTHORIZED)
        if request["path"] not in ("/openai/v1/chat/completions", "/openai/v1/responses"):
            return json_reply(404, {"error": {"code": "404", "message": "Resource not found"}})
        if request["body"].get("model") != DEPLOYMENT:
            return json_reply(
                404,
                {
                    "error": {
                        "code": "DeploymentNotFound",
                        "message": "The API deployment for this resource does not exist.",
                    }
                },
            )
        if request["path"].endswith("/responses"):
            return sse_reply(recorded("responses_text"), piece=64)
        return sse_reply(CHAT_TEXT, piece=64)


@pytest.fixture
def azure() -> Iterator[Azure]:
    server = Azure()
    try:
        yield server
    finally:
        server.server.close()


class TokenService:
    """Issues numbered tokens, each valid at the Azure server until revoked,
    with the expiry the test sets."""

    def __init__(self, azure: Azure, lifetime: float) -> None:
        self.azure = azure
        self.lifetime = lifetime
        self.issued: list[str] = []

    def __call__(self) -> Token:
        token = f"entra-token-{len(self.issued) + 1:04d}-abcdef"
        self.issued.append(token)
        with self.azure.lock:
            self.azure.tokens.add(token)
        return Token(token, time.time() + self.lifetime)


@pytest.mark.parametrize("cls", [AzureOpenAIChatModel, AzureOpenAIResponsesModel])
def test_the_server_answers_a_signed_request_and_refuses_a_wrong_key(azure: Azure, cls: Any) -> None:
    base_url = azure.server.url + "/openai/v1"
    parts = run(cls(DEPLOYMENT, base_url=base_url, api_key=KEY))
    assert text_of(parts) in ("Hi", "Hello")
    with pytest.raises(ModelError) as info:
        run(cls(DEPLOYMENT, base_url=base_url, api_key="wrong-key-0123456789"))
    assert (info.value.error_class, info.value.status) == (ErrorClass.AUTH, 401)
    assert "Access denied due to invalid subscription key" in info.value.message
    with pytest.raises(ModelError) as info:
        run(cls("gpt-4o", base_url=base_url, api_key=KEY))  # the model's name, not the deployment's
    assert (info.value.error_class, info.value.status) == (ErrorClass.INVALID_REQUEST, 404)
    assert "DeploymentNotFound" in info.value.message or "deployment" in info.value.message
    assert len(azure.server.requests) == 3  # a wrong key is not retried


def test_a_token_is_kept_while_it_is_fresh(azure: Azure) -> None:
    tokens = TokenService(azure, lifetime=3600.0)
    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=tokens)
    assert [text_of(run(model)) for _ in range(3)] == ["Hi", "Hi", "Hi"]
    assert tokens.issued == ["entra-token-0001-abcdef"]
    assert {r["headers"]["Authorization"] for r in azure.server.requests} == {
        "Bearer entra-token-0001-abcdef"
    }


def test_a_token_about_to_expire_is_refreshed_before_the_request(azure: Azure) -> None:
    tokens = TokenService(azure, lifetime=REFRESH_SECONDS - 60.0)  # fresh for the server, not for us
    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=tokens)
    run(model)
    run(model)
    assert tokens.issued == ["entra-token-0001-abcdef", "entra-token-0002-abcdef"]
    assert [r["headers"]["Authorization"] for r in azure.server.requests] == [
        "Bearer entra-token-0001-abcdef",
        "Bearer entra-token-0002-abcdef",
    ]


def test_a_401_signs_in_again_and_retries_that_request_once(azure: Azure) -> None:
    tokens = TokenService(azure, lifetime=3600.0)
    model = AzureOpenAIResponsesModel(
        DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=tokens
    )
    run(model)
    with azure.lock:
        azure.tokens.clear()  # the server expired the token before its stated expiry
    assert text_of(run(model)) == "Hello"
    assert tokens.issued == ["entra-token-0001-abcdef", "entra-token-0002-abcdef"]
    assert [r["headers"]["Authorization"] for r in azure.server.requests] == [
        "Bearer entra-token-0001-abcdef",
        "Bearer entra-token-0001-abcdef",
        "Bearer entra-token-0002-abcdef",
    ]


def test_a_token_refused_twice_is_not_sent_by_the_next_request(azure: Azure) -> None:
    class Revoking(TokenService):
        def __call__(self) -> Token:
            token = super().__call__()
            with self.azure.lock:
                self.azure.tokens.clear()  # revoked as soon as issued: every request is refused
            return token

    tokens = Revoking(azure, lifetime=3600.0)
    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=tokens)
    for _ in range(2):
        with pytest.raises(ModelError):
            run(model)
    # the second run starts with a new token, not the one the first run's retry was refused
    assert [
        r["headers"]["Authorization"].removeprefix("Bearer entra-token-") for r in azure.server.requests
    ] == [
        "0001-abcdef",
        "0002-abcdef",
        "0003-abcdef",
        "0004-abcdef",
    ]


def test_a_second_401_is_the_error_and_the_token_is_redacted(azure: Azure) -> None:
    issued: list[str] = []

    def revoked() -> str:  # a str: the callable caches, agentcore asks before every request
        issued.append(f"revoked-token-{len(issued)}-0123456789")
        return issued[-1]

    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=revoked)
    with pytest.raises(ModelError) as info:
        run(model)
    assert (info.value.error_class, info.value.status) == (ErrorClass.AUTH, 401)
    assert len(azure.server.requests) == 2
    assert len(issued) == 2
    assert not any(token in info.value.message for token in issued)


def test_a_credentials_callable_that_fails_is_an_auth_error_with_its_cause(azure: Azure) -> None:
    def broken() -> str:
        raise RuntimeError("no managed identity endpoint")

    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=broken)
    with pytest.raises(ModelError) as info:
        run(model)
    assert info.value.error_class is ErrorClass.AUTH
    assert info.value.message == "the credentials callable raised RuntimeError: no managed identity endpoint"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert azure.server.requests == []


def test_concurrent_requests_share_one_token_fetch(azure: Azure) -> None:
    gate = threading.Event()
    tokens = TokenService(azure, lifetime=3600.0)

    def slow() -> Token:  # every request arrives while the first fetch is still out
        gate.wait()
        return tokens()

    model = AzureOpenAIChatModel(DEPLOYMENT, base_url=azure.server.url + "/openai/v1", credentials=slow)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(text_of(run(model)))) for _ in range(6)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    assert results == ["Hi"] * 6
    assert tokens.issued == ["entra-token-0001-abcdef"]


# --- the command ----------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "answer"), [("azure", "Hi"), ("azure-responses", "Hello")])
@pytest.mark.parametrize("given", ["/", "/openai/v1/", "/openai"], ids=["endpoint", "v1 root", "openai"])
def test_the_command_reaches_a_deployment_with_the_azure_variables(
    azure: Azure, provider: str, answer: str, given: str
) -> None:
    out, err = io.StringIO(), io.StringIO()
    # the resource's endpoint, or the v1 root as Microsoft's v1 samples give it
    env = {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": azure.server.url + given}
    code = cli.main(["--model", f"{provider}:{DEPLOYMENT}", "hi"], env=env, stdout=out, stderr=err)
    assert code == 0
    assert out.getvalue().strip() == answer
    assert err.getvalue().startswith("finish: stop · usage: input ")
    [request] = azure.server.requests
    assert request["path"] in ("/openai/v1/chat/completions", "/openai/v1/responses")
    assert request["body"]["model"] == DEPLOYMENT
    assert {name.lower(): value for name, value in request["headers"].items()}["api-key"] == KEY


def test_the_command_takes_base_url_for_the_v1_root(azure: Azure) -> None:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--model", f"azure:{DEPLOYMENT}", "--base-url", azure.server.url + "/openai/v1", "hi"]
    assert cli.main(argv, env={"AZURE_OPENAI_API_KEY": KEY}, stdout=out, stderr=err) == 0
    assert out.getvalue().strip() == "Hi"


@pytest.mark.parametrize(
    ("env", "spec", "message"),
    [
        (
            {"AZURE_OPENAI_ENDPOINT": "https://r.openai.azure.com/"},
            f"azure:{DEPLOYMENT}",
            f"--model azure:{DEPLOYMENT} needs the AZURE_OPENAI_API_KEY environment variable",
        ),
        (
            {"AZURE_OPENAI_API_KEY": KEY},
            f"azure-responses:{DEPLOYMENT}",
            f"--model azure-responses:{DEPLOYMENT} needs the AZURE_OPENAI_ENDPOINT environment variable",
        ),
        (
            {"AZURE_OPENAI_API_KEY": KEY},
            "azure",
            "--model azure needs the deployment's name: azure:DEPLOYMENT",
        ),
        (
            {"AZURE_OPENAI_API_KEY": KEY, "AZURE_OPENAI_ENDPOINT": "contoso"},
            f"azure:{DEPLOYMENT}",
            "AZURE_OPENAI_ENDPOINT must be the resource's endpoint, https://RESOURCE.openai.azure.com/, "
            "got 'contoso'",
        ),
    ],
)
def test_a_missing_azure_variable_is_a_usage_error_naming_it(
    env: dict[str, str], spec: str, message: str
) -> None:
    err = io.StringIO()
    assert cli.main(["--model", spec, "hi"], env=env, stdout=io.StringIO(), stderr=err) == cli.EXIT_USAGE == 2
    assert f"agentcore: error: {message}" in err.getvalue()


# --- the prompt-cache report names Azure OpenAI -------------------------------------


def chat_with_usage(prompt_tokens: int, cached: int) -> bytes:
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    return CHAT_TEXT.replace(
        b'"usage":{"prompt_tokens":7,"completion_tokens":1,"total_tokens":8}',
        b'"usage":' + json.dumps(usage).encode(),
    )


def second_step_cache(model_of: Any, prompt_tokens: int, cached: int) -> CacheReport:
    """The cache report of a second run that extends the first, both answered
    with ``prompt_tokens`` of which ``cached`` were read."""
    body = chat_with_usage(prompt_tokens, cached)
    model = model_of(MemoryTransport(respond=lambda _sent: Reply.of(body)))
    first = generate(LoopOptions(model=model, messages=[user_message("hi")]))
    second = generate(LoopOptions(model=model, messages=[*first.messages, user_message("more")]))
    report = second.steps[0].cache
    assert report is not None
    return report


def azure_chat(transport: MemoryTransport, **where: Any) -> AzureOpenAIChatModel:
    where = where or {"resource": "contoso"}
    return AzureOpenAIChatModel(
        DEPLOYMENT, api_key=KEY, transport=transport, cache_tracker=CacheTracker(), **where
    )


def test_a_cache_miss_at_an_azure_resource_names_azure_openai() -> None:
    assert b'"cached_tokens": 0' in chat_with_usage(2000, 0)  # the usage chunk was replaced
    report = second_step_cache(azure_chat, 2000, 0)
    assert report.cause is CacheCause.NOT_SAID
    assert report.reason == (
        "read 0 of the 2,000 cached tokens: the prefix and the TTL allowed more; Azure OpenAI did not say why"
    )
    # a read short of the whole prompt by less than one 128-token step is no miss
    assert second_step_cache(azure_chat, 2000, 1920).cause is None


def test_a_prompt_below_azures_minimum_is_named_as_such() -> None:
    report = second_step_cache(azure_chat, 900, 0)
    assert report.cause is CacheCause.BELOW_MINIMUM
    assert report.reason == (
        "the earlier request's prompt (900 tokens) is below the 1,024-token minimum Azure OpenAI caches for "
        "this model, so nothing was cached"
    )


def test_the_responses_model_reports_azures_cache_too() -> None:
    completed = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 3000, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 0}},
        },
    }
    body = b"event: response.completed\ndata: " + json.dumps(completed).encode() + b"\n\n"
    model = AzureOpenAIResponsesModel(
        DEPLOYMENT,
        resource="contoso",
        api_key=KEY,
        reasoning=False,
        transport=MemoryTransport(respond=lambda _sent: Reply.of(body)),
        cache_tracker=CacheTracker(),
    )
    first = generate(LoopOptions(model=model, messages=[user_message("hi")]))
    second = generate(LoopOptions(model=model, messages=[*first.messages, user_message("more")]))
    report = second.steps[0].cache
    assert report is not None
    assert report.reason.endswith("Azure OpenAI did not say why")
    # 24-hour retention, where asked for, is the TTL
    assert cache_policy(ModelSettings(cache_retention="24h"), "contoso.openai.azure.com") == CachePolicy(
        "Azure OpenAI", 86400.0, 1024, reports_writes=False, granularity=128
    )


def test_another_azure_host_claims_no_miss() -> None:
    # a Foundry resource may serve models (DeepSeek, Grok ...) that cache otherwise, or not at all
    foundry = {"base_url": "https://contoso.services.ai.azure.com/openai/v1"}
    report = second_step_cache(lambda transport: azure_chat(transport, **foundry), 2000, 0)
    assert (report.cause, report.reason, report.shared_messages) == (
        None,
        "",
        1,
    )  # the prefix is still compared
