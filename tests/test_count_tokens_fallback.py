"""What every adapter's ``count_tokens`` does when it cannot ask, and its
``context_window``: a count endpoint that fails (an error status, a server
without the endpoint, an answer of another shape, a broken transport) gives
the estimate and one WARNING naming the failure, with no credential in it; a
cancel or a deadline is never swallowed (in memory, and on a real server
holding the answer back); Chat Completions, which has no endpoint, estimates
after its request mapping accepted the request; ``context_window=`` overrides
the table and is checked."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentcore import user_message
from agentcore.context import Context, ManualClock
from agentcore.errors import Canceled, ConfigError, DeadlineExceeded, ErrorClass, ModelError
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel, OpenAIResponsesModel
from agentcore.tokens import estimate_tokens
from agentcore.transport import Timeout
from agentcore.transport.memory import MemoryTransport, Reply, SentRequest
from agentcore.types import Message, Role, ToolResult, tool_result_part
from tests import test_count_tokens_anthropic as anthropic_api
from tests import test_count_tokens_responses as responses_api
from tests.localserver import LocalServer, Stall
from tests.localserver import Reply as ServerReply
from tests.loop_helpers import wait_until

HISTORY = anthropic_api.HISTORY
TOOLS = [anthropic_api.WEATHER]
SYSTEM = "Be brief."
ESTIMATE = estimate_tokens(HISTORY, system=SYSTEM, tools=TOOLS)

Make = Callable[[Any], AnthropicModel | OpenAIResponsesModel]
ENDPOINTS: list[tuple[str, Make, str]] = [
    ("anthropic", lambda transport: anthropic_api.model_for(transport), anthropic_api.KEY),
    ("responses", lambda transport: responses_api.model_for(transport), responses_api.KEY),
]
EVERY_ENDPOINT = pytest.mark.parametrize(
    ("make", "key"), [case[1:] for case in ENDPOINTS], ids=[c[0] for c in ENDPOINTS]
)


def plain(status: int, body: bytes, content_type: str = "application/json") -> Reply:
    return Reply.of(body, status=status, headers={"content-type": content_type})


FAILURES = [
    (
        "a 500",
        plain(500, b'{"type":"error","error":{"type":"api_error","message":"Internal server error"}}'),
        "500",
    ),
    (
        "a 529 overloaded",
        plain(529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'),
        "Overloaded",
    ),
    (
        "a 404 from a server without the endpoint",
        plain(404, b"404 page not found", "text/plain"),
        "404 page not found",
    ),
    ("a redirect", Reply(302, {"location": "https://elsewhere.example/"}), "redirect"),
    (
        "a body that is not JSON",
        plain(200, b"<html><body>gateway</body></html>", "text/html"),
        "not a JSON document",
    ),
    ("an answer without input_tokens", plain(200, b'{"tokens": 12}'), "no input_tokens"),
    ("a negative count", plain(200, b'{"input_tokens": -1}'), "no input_tokens"),
    ("a count as text", plain(200, b'{"input_tokens": "12"}'), "no input_tokens"),
    ("a count as a bool", plain(200, b'{"input_tokens": true}'), "no input_tokens"),
    ("a JSON array", plain(200, b"[12]"), "no input_tokens"),
    ("an answer too long", plain(200, b" " * (1024 * 1024 + 1)), "longer than"),
    (
        "a refused connection",
        Reply(failure=ModelError(ErrorClass.TRANSIENT, message="connection refused")),
        "connection refused",
    ),
    (
        "a reset mid-answer",
        Reply(chunks=[b'{"input_tok', ModelError(ErrorClass.TRANSIENT, message="reset by peer")]),
        "reset by peer",
    ),
]


@EVERY_ENDPOINT
@pytest.mark.parametrize(
    ("reply", "named"), [case[1:] for case in FAILURES], ids=[case[0] for case in FAILURES]
)
def test_a_failed_count_gives_the_estimate_and_one_warning_naming_the_failure(
    make: Make, key: str, reply: Reply, named: str, caplog: pytest.LogCaptureFixture
) -> None:
    transport = MemoryTransport(reply)
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        assert make(transport).count_tokens(HISTORY, system=SYSTEM, tools=TOOLS) == ESTIMATE
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert record.name == "agentcore.providers.shell"
    assert named in record.getMessage()
    assert "using the estimate" in record.getMessage()
    assert len(transport.sent) == 1  # one try: a count is not retried


@EVERY_ENDPOINT
def test_the_warning_holds_no_credential_a_server_echoed(
    make: Make, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    echo = plain(
        401, b'{"error": {"message": "invalid key: ' + key.encode() + b'", "type": "authentication_error"}}'
    )
    with caplog.at_level(logging.WARNING, logger="agentcore"):
        assert make(MemoryTransport(echo)).count_tokens(HISTORY, system=SYSTEM, tools=TOOLS) == ESTIMATE
    assert "invalid key: [REDACTED]" in caplog.text
    assert key not in caplog.text


@EVERY_ENDPOINT
def test_a_cancel_during_the_count_is_raised_not_swallowed(
    make: Make, key: str, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = Context()

    def cancel_then_answer(sent: SentRequest) -> Reply:
        ctx.cancel()
        return plain(200, b'{"input_tokens": 12}')

    with caplog.at_level(logging.WARNING, logger="agentcore"), pytest.raises(Canceled):
        make(MemoryTransport(respond=cancel_then_answer)).count_tokens(HISTORY, ctx=ctx)
    assert caplog.records == []


@EVERY_ENDPOINT
def test_a_deadline_that_passes_during_the_count_is_raised(make: Make, key: str) -> None:
    clock = ManualClock()
    ctx = Context(timeout=5.0, clock=clock)

    def slow(sent: SentRequest) -> Reply:
        clock.advance(6.0)
        return plain(200, b'{"input_tokens": 12}')

    with pytest.raises(DeadlineExceeded):
        make(MemoryTransport(respond=slow)).count_tokens(HISTORY, ctx=ctx)


@EVERY_ENDPOINT
def test_a_cancelled_context_sends_nothing(make: Make, key: str) -> None:
    ctx = Context()
    ctx.cancel()
    transport = MemoryTransport(plain(200, b'{"input_tokens": 12}'))
    with pytest.raises(Canceled):
        make(transport).count_tokens(HISTORY, ctx=ctx)
    assert transport.sent == []


@pytest.mark.parametrize("adapter", [AnthropicModel, OpenAIResponsesModel], ids=["anthropic", "responses"])
def test_a_cancel_interrupts_a_count_the_server_holds_back(
    adapter: type[AnthropicModel | OpenAIResponsesModel], server: LocalServer
) -> None:
    server.add(ServerReply(before_headers=[Stall()]))
    model = adapter("claude-sonnet-4-5", base_url=server.url, timeout=Timeout(connect=5.0, read=60.0))
    ctx = Context()
    errors: list[BaseException] = []

    def count() -> None:
        try:
            model.count_tokens(HISTORY, ctx=ctx)
        except BaseException as exc:  # the test wants whatever ends the count
            errors.append(exc)

    worker = threading.Thread(target=count)
    worker.start()
    assert wait_until(lambda: server.hits >= 1)
    ctx.cancel()
    worker.join()
    assert [type(error) for error in errors] == [Canceled]


def test_chat_completions_estimates_after_the_mapping_accepts_the_request() -> None:
    transport = MemoryTransport()  # no reply: nothing may be sent
    model = OpenAIChatModel("gpt-4o", transport=transport)
    assert model.count_tokens(HISTORY, system=SYSTEM, tools=TOOLS) == ESTIMATE
    assert model.count_tokens(HISTORY) == estimate_tokens(HISTORY)
    orphan = Message(Role.TOOL, [tool_result_part(ToolResult("call_9", "weather", "?"))])
    with pytest.raises(ConfigError, match=r"messages\[1\]"):
        model.count_tokens([user_message("hi"), orphan])
    cancelled = Context()
    cancelled.cancel()
    with pytest.raises(Canceled):
        model.count_tokens(HISTORY, ctx=cancelled)
    assert transport.sent == []


ADAPTERS = [
    (AnthropicModel, "claude-sonnet-4-5", 200_000),
    (OpenAIResponsesModel, "gpt-5", 400_000),
    (OpenAIChatModel, "gpt-4o-mini", 128_000),
]
EVERY_ADAPTER = pytest.mark.parametrize(
    ("adapter", "model_id", "window"), ADAPTERS, ids=[a[0].__name__ for a in ADAPTERS]
)


@EVERY_ADAPTER
def test_the_context_window_is_the_tables_unless_the_option_says_otherwise(
    adapter: type[AnthropicModel | OpenAIResponsesModel | OpenAIChatModel], model_id: str, window: int
) -> None:
    assert adapter(model_id).context_window == window
    assert adapter(model_id, context_window=32_768).context_window == 32_768
    assert adapter("my-local-model").context_window is None
    assert adapter("my-local-model", context_window=8_192).context_window == 8_192
    assert adapter(model_id, context_window=None).context_window == window


@EVERY_ADAPTER
@pytest.mark.parametrize("value", [0, -1, True, 1.5, "100000", 10**6 * 1.0])
def test_a_context_window_that_is_not_a_positive_int_is_refused(
    adapter: type[AnthropicModel | OpenAIResponsesModel | OpenAIChatModel],
    model_id: str,
    window: int,
    value: Any,
) -> None:
    with pytest.raises(ConfigError, match=r"^context_window must be a positive int \(tokens\) or None, got "):
        adapter(model_id, context_window=value)


def test_tools_none_and_system_none_count_as_none() -> None:
    transport = MemoryTransport(respond=anthropic_api.count_api)
    model = anthropic_api.model_for(transport)
    assert model.count_tokens(HISTORY, system=None, tools=None) == model.count_tokens(
        HISTORY, system="", tools=[]
    )
    assert {"system", "tools"}.isdisjoint(transport.sent[0].json())
