"""``VertexGeminiModel`` and ``VertexAnthropicModel`` over real local sockets,
signed in with google-auth's service-account credentials, against servers
that check what Google checks:

* a token endpoint (Google's OAuth 2.0 token exchange for service accounts,
  https://developers.google.com/identity/protocols/oauth2/service-account#httprest):
  the ``jwt-bearer`` grant's assertion must be signed with the key of the
  service-account file (checked with its public key), name Google's token
  endpoint as its ``aud``, come from the account's email and ask the ``cloud-platform`` scope, else 400
  ``invalid_grant``; its tokens expire after ``expires_in`` seconds on a
  clock the test moves;
* a Vertex AI server that wants ``Authorization: Bearer`` with a token the
  endpoint issued and that has not expired, else 401 with Google's body
  (``UNAUTHENTICATED``, reason ``ACCESS_TOKEN_EXPIRED`` or
  ``CREDENTIALS_MISSING``, as Vertex AI sends it: the bodies reported at
  github.com/google-github-actions/run-gemini-cli/issues/123 and
  github.com/a2aproject/a2a-samples/issues/43); that enforces the Gemini 3
  thought-signature rule with the API's 400 (the Gemini emulator's
  :func:`tests.test_gemini_http.answer_step`); and that serves
  ``:streamRawPredict`` for Claude with the Anthropic emulator's checks
  (:class:`tests.test_anthropic_reasoning_loop.ThinkingAPI`), after checking
  Vertex's own rules (``anthropic_version: vertex-2023-10-16`` in the body,
  no ``model``).

Through each model: the three-step reasoning tool loop (a token expiring
mid-run, refreshed after the server's 401, proved by both servers' logs),
tokens refreshed before they expire, a refused assertion, retries before
output, a cancel mid-stream, the idle timeout, a cut stream, token counts and
the command line.
"""

# ruff: noqa: E501  (the services' error bodies are kept on one line, as sent)

from __future__ import annotations

import base64
import io
import json
import pathlib
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from google.oauth2 import service_account

from agentcore import (
    Canceled,
    Context,
    ErrorClass,
    FinishReason,
    LoopOptions,
    ModelError,
    ModelSettings,
    Request,
    StreamPartKind,
    cli,
    run,
    tool,
    user_message,
)
from agentcore.model import Model
from agentcore.providers.gemini.request import DUMMY_SIGNATURE
from agentcore.providers.vertex import VertexAnthropicModel, VertexGeminiModel
from agentcore.providers.vertex.credentials import CLOUD_PLATFORM_SCOPE, google_credentials
from agentcore.tools import Tool
from agentcore.transport import Timeout
from agentcore.transport.memory import SentRequest
from tests.localserver import LocalServer, Pause, Reply, Stall, json_reply, sse_reply
from tests.loop_helpers import FuncTool, collect, wait_until
from tests.test_anthropic_mapping import (
    MESSAGE_STOP,
    message_delta,
    message_start,
    sse,
    text_delta,
    text_start,
)
from tests.test_anthropic_reasoning_loop import QUESTION, STEPS, ThinkingAPI, thinking_text
from tests.test_gemini_http import ANSWER, REASONING, SIGNATURES, answer_step, chunk

PROJECT = "agentcore-test-7"
LOCATION = "us-central1"
GEMINI = "gemini-3-pro-preview"
CLAUDE = "claude-sonnet-4@20250514"
EMAIL = "agent@agentcore-test-7.iam.gserviceaccount.com"
HOUR = 3600
AUDIENCE = "https://oauth2.googleapis.com/token"
"""The ``aud`` of a service account's assertion: Google's token endpoint
(whichever URL the key file's ``token_uri`` gives, google-auth names this one)."""

UNAUTHENTICATED = {
    "error": {
        "code": 401,
        "message": "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        "status": "UNAUTHENTICATED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "ACCESS_TOKEN_EXPIRED",
                "domain": "googleapis.com",
                "metadata": {
                    "service": "aiplatform.googleapis.com",
                    "method": "google.cloud.aiplatform.v1.PredictionService.StreamGenerateContent",
                },
            }
        ],
    }
}
MISSING = {
    "error": {
        "code": 401,
        "message": "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        "status": "UNAUTHENTICATED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "CREDENTIALS_MISSING",
                "domain": "googleapis.com",
                "metadata": {
                    "service": "aiplatform.googleapis.com",
                    "method": "google.cloud.aiplatform.v1.PredictionService.StreamGenerateContent",
                },
            }
        ],
    }
}
EXHAUSTED = {
    "error": {
        "code": 429,
        "message": "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details.",
        "status": "RESOURCE_EXHAUSTED",
    }
}
INVALID_GRANT = {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}


class Clock:
    """The servers' clock, in seconds; the test moves it."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenEndpoint:
    """Google's token endpoint for service accounts, on 127.0.0.1."""

    def __init__(self, public_key: rsa.RSAPublicKey, clock: Clock, expires_in: int = HOUR) -> None:
        self.server = LocalServer(responder=self.respond)
        self.url = self.server.url + "/token"
        self.public_key, self.clock, self.expires_in = public_key, clock, expires_in
        self.lock = threading.Lock()
        self.expiry: dict[str, float] = {}
        """Each token issued -> when it expires on the clock."""
        self.issued: list[str] = []
        self.refused = 0

    def respond(self, request: dict[str, Any]) -> Reply:
        form = urllib.parse.parse_qs(bytes(request["body"]).decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"] or not self.valid(
            form.get("assertion", [""])[0]
        ):
            with self.lock:
                self.refused += 1
            return json_reply(400, INVALID_GRANT)
        with self.lock:
            token = f"ya29.c.test-{len(self.issued) + 1}"
            self.issued.append(token)
            self.expiry[token] = self.clock.now + self.expires_in
        return json_reply(200, {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"})

    def valid(self, assertion: str) -> bool:
        """The assertion is a JWT signed (RS256) with the service account's
        key, for Google's token endpoint, asking the cloud-platform scope."""
        try:
            header, payload, signature = assertion.split(".")
            self.public_key.verify(
                b64url(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except Exception:  # any malformed or forged assertion is refused
            return False
        claims = json.loads(b64url(payload))
        return (
            json.loads(b64url(header))["alg"] == "RS256"
            and claims["aud"] == AUDIENCE
            and claims["iss"] == EMAIL
            and CLOUD_PLATFORM_SCOPE in claims["scope"].split()
        )


def to_local(reply: Any) -> Reply:
    """The local server's reply of an in-memory one (the Anthropic emulator's)."""
    chunks = [c for c in reply.chunks if isinstance(c, bytes)]
    return Reply(status=reply.status, actions=[b"".join(chunks)], headers=dict(reply.headers), chunked=False)


class VertexAI:
    """Vertex AI's checks on 127.0.0.1, then the Gemini or Claude emulator."""

    def __init__(self, tokens: TokenEndpoint) -> None:
        self.tokens = tokens
        self.server = LocalServer(responder=self.respond)
        self.claude = ThinkingAPI()
        self.rate_limit_first = False
        self.statuses: list[int] = []

    def respond(self, request: dict[str, Any]) -> Reply:
        reply = self.answer(request)
        self.statuses.append(reply.status)
        return reply

    def answer(self, request: dict[str, Any]) -> Reply:
        auth = request["headers"].get("Authorization", "")
        if not auth.startswith("Bearer "):
            return json_reply(401, MISSING)
        expires = self.tokens.expiry.get(auth.removeprefix("Bearer "))
        if expires is None or self.tokens.clock.now >= expires:
            return json_reply(401, UNAUTHENTICATED)
        path, body = request["path"], request["body"]
        models = f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/"
        if not path.startswith(models):
            return json_reply(
                404, {"error": {"code": 404, "message": f"Not found: {path}", "status": "NOT_FOUND"}}
            )
        if self.rate_limit_first and "count" not in path.lower():
            self.rate_limit_first = False
            return json_reply(429, EXHAUSTED)
        if path == f"{models}google/models/{GEMINI}:streamGenerateContent?alt=sse":
            return answer_step(body)
        if path == f"{models}google/models/{GEMINI}:countTokens":
            return json_reply(200, {"totalTokens": 77, "totalBillableCharacters": 300})
        if path == f"{models}anthropic/models/count-tokens:rawPredict":
            return json_reply(200, {"input_tokens": 55})
        if path == f"{models}anthropic/models/{CLAUDE}:streamRawPredict":
            if body.get("anthropic_version") != "vertex-2023-10-16" or "model" in body:
                return json_reply(
                    400,
                    {
                        "error": {
                            "code": 400,
                            "message": "Invalid request: anthropic_version must be vertex-2023-10-16 and model goes in the URL",
                            "status": "INVALID_ARGUMENT",
                        }
                    },
                )
            sent = SentRequest("POST", path, request["headers"], json.dumps(body).encode(), Timeout())
            return to_local(self.claude(sent))
        return json_reply(
            404,
            {
                "error": {
                    "code": 404,
                    "message": f"Publisher Model `{path}` not found.",
                    "status": "NOT_FOUND",
                }
            },
        )


@pytest.fixture(scope="module")
def key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def key_file(directory: pathlib.Path, key: rsa.RSAPrivateKey, token_uri: str) -> pathlib.Path:
    """A service-account key file as the Cloud console downloads it, its
    ``token_uri`` the local token endpoint."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "0123456789abcdef",
        "private_key": pem,
        "client_email": EMAIL,
        "client_id": "100000000000000000001",
        "token_uri": token_uri,
    }
    path = directory / "service-account.json"
    path.write_text(json.dumps(info))
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tokens(key: rsa.RSAPrivateKey, clock: Clock) -> Iterator[TokenEndpoint]:
    endpoint = TokenEndpoint(key.public_key(), clock)
    try:
        yield endpoint
    finally:
        endpoint.server.close()


@pytest.fixture
def vertex(tokens: TokenEndpoint) -> Iterator[VertexAI]:
    fake = VertexAI(tokens)
    try:
        yield fake
    finally:
        fake.server.close()


@pytest.fixture
def account(tmp_path: pathlib.Path, key: rsa.RSAPrivateKey, tokens: TokenEndpoint) -> pathlib.Path:
    return key_file(tmp_path, key, tokens.url)


def signed_in(account: pathlib.Path) -> Any:
    load = service_account.Credentials.from_service_account_file
    credentials = load(str(account), scopes=[CLOUD_PLATFORM_SCOPE])  # type: ignore[no-untyped-call]  # google-auth's
    return google_credentials(credentials)


def gemini(vertex: VertexAI, account: pathlib.Path, **options: Any) -> VertexGeminiModel:
    return VertexGeminiModel(
        GEMINI,
        project=PROJECT,
        location=LOCATION,
        base_url=vertex.server.url,
        credentials=signed_in(account),
        settings=ModelSettings(thinking=True),
        **options,
    )


def claude(vertex: VertexAI, account: pathlib.Path, **options: Any) -> VertexAnthropicModel:
    return VertexAnthropicModel(
        CLAUDE,
        project=PROJECT,
        location=LOCATION,
        base_url=vertex.server.url,
        credentials=signed_in(account),
        settings=ModelSettings(thinking=True, thinking_budget=2048),
        **options,
    )


def gemini_tools(clock: Clock) -> list[FuncTool]:
    """The Gemini emulator's tools; an hour passes while the first runs."""

    def weather(arguments: Any, _ctx: Any) -> str:
        clock.advance(HOUR + 1)
        return "sunny in " + str(arguments["city"])

    return [FuncTool("get_weather", weather), FuncTool("get_time", lambda _raw, _ctx: "14:00")]


def claude_tools(clock: Clock) -> list[Tool]:
    """The Anthropic emulator's tools; an hour passes while the first call runs."""

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        if city == "Oslo":
            clock.advance(HOUR + 1)
        return {"Oslo": "rain", "Lima": "sun"}[city]

    @tool
    def get_time() -> str:
        """The time now."""
        return "noon"

    return [get_weather, get_time]


def bearer(request: dict[str, Any]) -> str:
    return str(request["headers"].get("Authorization", "")).removeprefix("Bearer ")


def test_gemini_three_step_loop_with_a_token_that_expires_mid_run(
    vertex: VertexAI, tokens: TokenEndpoint, account: pathlib.Path, clock: Clock
) -> None:
    reader = run(
        LoopOptions(
            model=gemini(vertex, account), messages=[user_message("Weather?")], tools=gemini_tools(clock)
        )
    )
    parts = collect(reader)
    result = reader.result()
    assert result.finish_reason is FinishReason.STOP
    assert (result.text, result.reasoning) == (ANSWER, REASONING)
    kinds = [p.kind for p in parts]
    assert kinds.index(StreamPartKind.REASONING) < kinds.index(StreamPartKind.TOOL_CALL)
    # the first token expired while the tool ran: the second step was refused once (401), then signed
    # in again with a token exchanged for it, and the third went with that one
    assert tokens.issued == ["ya29.c.test-1", "ya29.c.test-2"]
    assert [bearer(r) for r in vertex.server.requests] == [
        "ya29.c.test-1",
        "ya29.c.test-1",
        "ya29.c.test-2",
        "ya29.c.test-2",
    ]
    assert vertex.statuses == [200, 401, 200, 200]
    last = vertex.server.requests[-1]["body"]["contents"]
    assert [c["role"] for c in last] == ["user", "model", "user", "model", "user"]
    assert last[1]["parts"][1]["thoughtSignature"] == SIGNATURES[0]
    assert last[3]["parts"][1]["thoughtSignature"] == SIGNATURES[1]
    assert result.usage.input == 3 * 40


def test_claude_three_step_loop_with_a_token_that_expires_mid_run(
    vertex: VertexAI, tokens: TokenEndpoint, account: pathlib.Path, clock: Clock
) -> None:
    model = claude(vertex, account, headers={"anthropic-beta": "interleaved-thinking-2025-05-14"})
    reader = run(LoopOptions(model=model, messages=[user_message(QUESTION)], tools=claude_tools(clock)))
    collect(reader)
    result = reader.result()
    assert vertex.claude.refusals == []  # every thinking block went back as it came
    assert result.finish_reason is FinishReason.STOP
    assert result.text.endswith("Oslo: rain. Lima: sun. It is noon.")
    assert result.reasoning == tuple("\n\n".join(thinking_text(step)) for step in STEPS)
    assert tokens.issued == ["ya29.c.test-1", "ya29.c.test-2"]
    assert vertex.statuses == [200, 401, 200, 200]
    first = vertex.server.requests[0]
    assert first["path"].endswith(f"/publishers/anthropic/models/{CLAUDE}:streamRawPredict")  # the @ kept
    assert first["body"]["anthropic_version"] == "vertex-2023-10-16"
    assert "model" not in first["body"]
    assert first["headers"]["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    # explicit caching, as Vertex documents it: the breakpoint on the last block, not the request
    assert "cache_control" not in first["body"]
    assert first["body"]["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize("build", [gemini, claude], ids=["gemini", "claude"])
def test_tokens_about_to_expire_are_exchanged_before_each_request_without_a_401(
    build: Any, vertex: VertexAI, tokens: TokenEndpoint, account: pathlib.Path
) -> None:
    tokens.expires_in = 299  # under the 300 s the adapter keeps in hand: each request wants a new one
    model = build(vertex, account)
    for _ in range(3):
        list(model.stream(Request(messages=[user_message(QUESTION)]), Context()))
    assert tokens.issued == ["ya29.c.test-1", "ya29.c.test-2", "ya29.c.test-3"]
    assert [bearer(r) for r in vertex.server.requests] == tokens.issued
    assert vertex.statuses == [200, 200, 200]


@pytest.mark.parametrize("build", [gemini, claude], ids=["gemini", "claude"])
def test_an_assertion_signed_with_another_key_is_refused_and_an_auth_error(
    build: Any, vertex: VertexAI, tokens: TokenEndpoint, tmp_path: pathlib.Path
) -> None:
    other = key_file(tmp_path, rsa.generate_private_key(public_exponent=65537, key_size=2048), tokens.url)
    with pytest.raises(ModelError) as caught:
        list(build(vertex, other).stream(Request(messages=[user_message("hi")]), Context()))
    assert caught.value.error_class is ErrorClass.AUTH
    assert "RefreshError" in str(caught.value)
    assert "invalid_grant" in str(caught.value)
    assert (tokens.refused, tokens.issued, vertex.server.hits) == (1, [], 0)


def test_without_a_token_vertex_answers_401_unauthenticated(vertex: VertexAI) -> None:
    answer = requests.post(
        vertex.server.url
        + f"/v1/projects/{PROJECT}/locations/{LOCATION}/publishers/google/models/{GEMINI}:streamGenerateContent?alt=sse",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        timeout=10,
    )
    assert (answer.status_code, answer.json()) == (401, MISSING)


def test_a_gemini_tool_turn_without_its_signature_is_the_apis_400_and_the_dummy_is_accepted(
    vertex: VertexAI, tokens: TokenEndpoint, account: pathlib.Path, clock: Clock
) -> None:
    model = gemini(vertex, account)
    reader = run(
        LoopOptions(model=model, messages=[user_message("Weather?")], tools=gemini_tools(clock), step_limit=2)
    )
    collect(reader)
    body = vertex.server.requests[-1]["body"]
    assert body["contents"][1]["parts"][1]["thoughtSignature"] == SIGNATURES[0]
    del body["contents"][1]["parts"][1]["thoughtSignature"]
    url = model._url
    refused = requests.post(
        url, json=body, headers={"Authorization": "Bearer " + tokens.issued[-1]}, timeout=10
    )
    assert refused.status_code == 400
    assert "missing a thought_signature" in refused.json()["error"]["message"]
    body["contents"][1]["parts"][1]["thoughtSignature"] = DUMMY_SIGNATURE
    accepted = requests.post(
        url, json=body, headers={"Authorization": "Bearer " + tokens.issued[-1]}, timeout=10
    )
    assert accepted.status_code == 200


@pytest.mark.parametrize("build", [gemini, claude], ids=["gemini", "claude"])
def test_a_429_before_output_is_retried(build: Any, vertex: VertexAI, account: pathlib.Path) -> None:
    vertex.rate_limit_first = True
    reader = run(
        LoopOptions(
            model=build(vertex, account),
            messages=[user_message(QUESTION)],
            step_limit=1,
            retry_base_delay=0.01,
        )
    )
    collect(reader)
    assert reader.result().finish_reason is FinishReason.STEP_LIMIT
    assert vertex.statuses == [429, 200]


def test_count_tokens_ask_vertex_count_endpoints(vertex: VertexAI, account: pathlib.Path) -> None:
    assert gemini(vertex, account).count_tokens([user_message("hi")], system="Be brief.") == 77
    assert claude(vertex, account).count_tokens([user_message("hi")], system="Be brief.") == 55
    gemini_count, claude_count = (r["body"] for r in vertex.server.requests)
    assert gemini_count["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert "generateContentRequest" not in gemini_count  # Vertex takes the fields at the top level
    assert claude_count["model"] == CLAUDE  # the count endpoint is one model: the body names the model
    assert claude_count["system"] == "Be brief." or claude_count["system"][0]["text"] == "Be brief."


# --- faults on a scripted server: the token is a plain callable ----------------------------------


def first_text(provider: str) -> bytes:
    if provider == "gemini":
        return chunk({"text": "Hel"})
    return sse(message_start(input_tokens=5, output_tokens=1), text_start(0), text_delta(0, "Hel"))


def whole(provider: str) -> bytes:
    if provider == "gemini":
        return chunk({"text": "Hi"}, finish="STOP")
    return sse(
        message_start(input_tokens=5, output_tokens=1),
        text_start(0),
        text_delta(0, "Hi"),
        message_delta("end_turn", output_tokens=2),
        MESSAGE_STOP,
    )


def scripted(provider: str, server: LocalServer, **options: Any) -> Model:
    adapter = VertexGeminiModel if provider == "gemini" else VertexAnthropicModel
    model = GEMINI if provider == "gemini" else CLAUDE
    return adapter(
        model,
        project=PROJECT,
        location=LOCATION,
        base_url=server.url,
        credentials=lambda: "ya29.x",
        **options,
    )


PROVIDERS = pytest.mark.parametrize("provider", ["gemini", "claude"])


@PROVIDERS
def test_a_cancel_mid_stream_stops_the_read(provider: str, server: LocalServer) -> None:
    server.add(Reply(actions=[first_text(provider), Stall()]))
    ctx = Context()
    stream = scripted(provider, server).stream(Request(messages=[user_message("hi")]), ctx)
    assert next(part for part in stream if part.kind is StreamPartKind.TEXT_DELTA).text == "Hel"
    threading.Timer(0.05, ctx.cancel).start()
    with pytest.raises(Canceled):
        next(stream)
    assert wait_until(lambda: server.disconnects >= 1)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer ya29.x"


@PROVIDERS
def test_a_stream_without_content_hits_the_idle_timeout(provider: str, server: LocalServer) -> None:
    server.add(
        Reply(
            actions=[
                first_text(provider),
                b": keep-alive\r\n\r\n",
                Pause(0.3),
                b": keep-alive\r\n\r\n",
                Stall(),
            ]
        )
    )
    model = scripted(provider, server, timeout=Timeout(read=5, idle=0.2))
    stream = model.stream(Request(messages=[user_message("hi")]), Context())
    assert next(part for part in stream if part.kind is StreamPartKind.TEXT_DELTA).text == "Hel"
    with pytest.raises(ModelError) as caught:
        next(stream)
    assert caught.value.error_class is ErrorClass.TRANSIENT


@PROVIDERS
def test_a_stream_cut_before_its_end_is_transient_and_retried_before_output(
    provider: str, server: LocalServer
) -> None:
    server.add(sse_reply(b""), sse_reply(whole(provider)))
    reader = run(
        LoopOptions(model=scripted(provider, server), messages=[user_message("hi")], retry_base_delay=0.01)
    )
    collect(reader)
    assert reader.result().text == "Hi"
    assert server.hits == 2


# --- the command line ----------------------------------------------------------------------------


def test_the_command_runs_the_gemini_loop_with_application_default_credentials(
    vertex: VertexAI, tokens: TokenEndpoint, account: pathlib.Path, clock: Clock
) -> None:
    env = {
        "GOOGLE_APPLICATION_CREDENTIALS": str(account),
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GOOGLE_CLOUD_LOCATION": LOCATION,
    }
    argv = ["--model", f"vertex:{GEMINI}", "--base-url", vertex.server.url, "--json", "Weather?"]
    out = io.StringIO()
    assert cli.main(argv, env=env, tools=gemini_tools(clock), stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    assert "".join(line.get("text", "") for line in lines if line["kind"] == "text-delta") == ANSWER
    assert tokens.issued == ["ya29.c.test-1", "ya29.c.test-2"]  # the token expired mid-run here too
    assert vertex.statuses == [200, 401, 200, 200]


def test_the_command_runs_claude_on_vertex(vertex: VertexAI, account: pathlib.Path, clock: Clock) -> None:
    env = {
        "GOOGLE_APPLICATION_CREDENTIALS": str(account),
        "GOOGLE_CLOUD_PROJECT": PROJECT,
        "GOOGLE_CLOUD_LOCATION": LOCATION,
    }
    argv = ["--model", f"vertex-anthropic:{CLAUDE}", "--base-url", vertex.server.url, "--json", QUESTION]
    out = io.StringIO()
    assert cli.main(argv, env=env, tools=claude_tools(clock), stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (lines[-1]["kind"], lines[-1]["finish_reason"]) == ("finish", "stop")
    assert vertex.server.requests[0]["path"].endswith(f"{CLAUDE}:streamRawPredict")


def test_without_google_cloud_project_the_command_takes_the_key_files_project(
    vertex: VertexAI, account: pathlib.Path, clock: Clock
) -> None:
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(account), "GOOGLE_CLOUD_LOCATION": LOCATION}
    argv = ["--model", f"vertex-anthropic:{CLAUDE}", "--base-url", vertex.server.url, "--json", QUESTION]
    assert cli.main(argv, env=env, tools=claude_tools(clock), stdout=io.StringIO()) == 0
    assert f"/projects/{PROJECT}/locations/{LOCATION}/" in vertex.server.requests[0]["path"]


def authorized_user_file(directory: pathlib.Path) -> pathlib.Path:
    """What ``gcloud auth application-default login`` writes: no project in it."""
    path = directory / "application_default_credentials.json"
    info = {"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r"}
    path.write_text(json.dumps(info))
    return path


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"GOOGLE_APPLICATION_CREDENTIALS": "user"}, "GOOGLE_CLOUD_PROJECT"),
        (
            {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/key.json"},
            "GOOGLE_APPLICATION_CREDENTIALS",
        ),
    ],
    ids=["no project", "no credentials"],
)
def test_a_missing_project_or_credential_is_a_usage_error_naming_what_to_set(
    env: dict[str, str], named: str, tmp_path: pathlib.Path
) -> None:
    if env["GOOGLE_APPLICATION_CREDENTIALS"] == "user":
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(authorized_user_file(tmp_path))
    err = io.StringIO()
    assert cli.main(["--model", f"vertex:{GEMINI}", "hi"], env=env, stderr=err, stdout=io.StringIO()) == 2
    assert named in err.getvalue()
