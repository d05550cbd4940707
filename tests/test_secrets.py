"""Secrets: an API key never shows, wherever it could.

For both adapters and failures of every kind (an error status, a server that
echoes the key or the whole request back, an error event, malformed stream
data, a refused connection, a reset, a timeout, retries), driven through
:func:`agentcore.run` with DEBUG logging on (urllib3 included), the key must
not appear in:

* ``str`` / ``repr`` of the model, the options, the ``RunError``, its
  ``ModelError`` and every exception chained to them (``__cause__`` and
  ``__context__``, printed or not);
* ``traceback.format_exception`` of the ``RunError`` and of the ``ModelError``;
* any log record (message, arguments, formatted traceback).

``Authorization`` and ``x-api-key`` values are redacted wherever a request is
described: ``repr`` of a ``Request`` or ``LoopOptions`` carrying them as
headers, and error messages in which a server echoes them back.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

from agentcore import ConfigError, Context, LoopOptions, ModelError, Request, RunError, user_message
from agentcore.errors import ErrorClass
from agentcore.providers.anthropic import AnthropicModel
from agentcore.providers.openai import OpenAIChatModel
from agentcore.redaction import headers_repr, redact, secret_values, without_secret
from agentcore.testing import ScriptedModel
from agentcore.transport import Timeout
from tests.faults import ANTHROPIC, OPENAI, U2, Dialect
from tests.localserver import LocalServer, Pause, Reply, Reset, Stall, json_reply, refused_url

KEY = "sk-live-SECRET-0123456789abcdefXYZ"
DIALECTS = {"anthropic": ANTHROPIC, "openai": OPENAI}


@pytest.fixture
def server(shared_server: LocalServer) -> LocalServer:
    """The module's one server, reset for each test (tests/conftest.py)."""
    return shared_server


def make_model(dialect: str, url: str, *, key_in: str = "api_key") -> Any:
    """A model holding KEY as its api_key, or (``key_in="headers"``) in its own headers."""
    timeouts: dict[str, Any] = {"timeout": Timeout(connect=1.0, read=0.3, idle=0.3)}
    if dialect == "anthropic":
        if key_in == "headers":
            return AnthropicModel(
                "claude-s", api_key="", base_url=url, headers={"x-api-key": KEY}, **timeouts
            )
        return AnthropicModel("claude-s", api_key=KEY, base_url=url, **timeouts)
    if key_in == "headers":
        return OpenAIChatModel(
            "gpt-s", base_url=url + "/v1", headers={"Authorization": f"Bearer {KEY}"}, **timeouts
        )
    return OpenAIChatModel("gpt-s", api_key=KEY, base_url=url + "/v1", **timeouts)


def exception_chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception reachable through ``__cause__`` and ``__context__``."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo += [e for e in (current.__cause__, current.__context__) if e is not None]
        inner = getattr(current, "err", None)
        if isinstance(inner, BaseException):
            todo.append(inner)
    return seen


def texts_of_error(error: BaseException) -> dict[str, str]:
    out = {"format_exception": "".join(traceback.format_exception(error))}
    for i, exc in enumerate(exception_chain(error)):
        out[f"str #{i} {type(exc).__name__}"] = str(exc)
        out[f"repr #{i} {type(exc).__name__}"] = repr(exc)
        out[f"args #{i}"] = repr(exc.args)
        if isinstance(exc, ModelError):
            out[f"message #{i}"] = exc.message
            out[f"format_exception #{i}"] = "".join(traceback.format_exception(exc))
    return out


def texts_of_logs(records: list[logging.LogRecord]) -> dict[str, str]:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    out = {}
    for i, record in enumerate(records):
        out[f"log #{i} {record.name}"] = formatter.format(record) + repr(record.args)
    return out


def assert_no_key(texts: dict[str, str], secret: str = KEY) -> None:
    # Also no long piece of it, e.g. a key cut off in a shortened message.
    pieces = {secret, secret[:16], secret[-16:]}
    leaks = {where: text for where, text in texts.items() if any(p in text for p in pieces)}
    assert leaks == {}


def failing_run(model: Any, caplog: pytest.LogCaptureFixture, **options: Any) -> RunError:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="urllib3")
    caplog.set_level(logging.DEBUG, logger="agentcore")
    reader = agentcore_run(model, **options)
    with pytest.raises(RunError) as info:
        reader.result()
    return info.value


def agentcore_run(model: Any, **options: Any) -> Any:
    from agentcore import run

    defaults: dict[str, Any] = {"max_retries": 1, "retry_base_delay": 0.01, "retry_max_delay": 0.02}
    return run(
        LoopOptions(model=model, messages=[user_message("hi")], **{**defaults, **options}),
        Context(timeout=20),
    )


def echo_body(d: Dialect, text: str) -> dict[str, Any]:
    return d.error_body("authentication_error", text)


def stream(d: Dialect, *actions: Any) -> Reply:
    flat: list[Any] = []
    for action in actions:
        flat.extend(action) if isinstance(action, list) else flat.append(action)
    return Reply(actions=flat)


SCENARIOS: dict[str, Any] = {
    "401 echoing the key": lambda d: [json_reply(401, echo_body(d, f"Incorrect API key provided: {KEY}."))],
    "400 echoing the request headers": lambda d: [
        json_reply(
            400, echo_body(d, f"bad request; headers were x-api-key: {KEY}, authorization: Bearer {KEY}")
        )
    ],
    "429 echoing the key, retried, then 500": lambda d: [
        json_reply(429, echo_body(d, f"slow down, {KEY}"), {"retry-after-ms": "5"}),
        json_reply(500, echo_body(d, f"server error for {KEY}")),
    ],
    "error event echoing the key": lambda d: [
        stream(
            d,
            d.head(U2),
            d.error_event(overloaded=False)
            .replace(b"Overloaded", KEY.encode())
            .replace(b"overloaded", KEY.encode()),
        )
    ],
    "malformed data line holding the key": lambda d: [
        stream(d, d.head(U2), f'data: {{"key": "{KEY}"\n\n'.encode())
    ],
    "reset mid-stream": lambda d: [stream(d, d.head(U2), d.text("Hel"), Pause(0.05), Reset())],
    "read timeout": lambda d: [stream(d, d.head(U2), d.text("Hel"), Stall())],
    "reset before headers": lambda d: [Reply(before_headers=[Reset()])],
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_key_never_shows_in_errors_or_logs(
    server: LocalServer, caplog: pytest.LogCaptureFixture, dialect: str, scenario: str
) -> None:
    d = DIALECTS[dialect]
    server.add(*SCENARIOS[scenario](d))
    error = failing_run(make_model(dialect, server.url), caplog)
    assert isinstance(error.err, ModelError)
    assert server.hits >= 1
    assert_no_key({**texts_of_error(error), **texts_of_error(error.err), **texts_of_logs(caplog.records)})
    assert caplog.records, "DEBUG logging produced records to check"


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_key_never_shows_when_the_connection_is_refused(
    caplog: pytest.LogCaptureFixture, dialect: str
) -> None:
    error = failing_run(make_model(dialect, refused_url()), caplog)
    assert isinstance(error.err, ModelError)
    assert error.err.error_class is ErrorClass.TRANSIENT
    assert_no_key({**texts_of_error(error), **texts_of_logs(caplog.records)})


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_key_is_sent_but_never_logged_on_success(
    server: LocalServer, caplog: pytest.LogCaptureFixture, dialect: str
) -> None:
    d = DIALECTS[dialect]
    server.add(stream(d, d.text_step(U2, "Hi")))
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="urllib3")
    result = agentcore_run(make_model(dialect, server.url)).result()
    assert result.text == "Hi"
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")  # it was sent
    assert_no_key(
        {**texts_of_logs(caplog.records), "result": repr(result), "messages": repr(result.messages)}
    )


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_model_repr_and_str_hide_the_key(dialect: str) -> None:
    model = make_model(dialect, "http://127.0.0.1:9")
    options = LoopOptions(model=model, messages=[user_message("hi")])
    assert_no_key({"repr": repr(model), "str": str(model), "options": repr(options), "vars": ""})


@pytest.mark.parametrize("header", ["Authorization", "x-api-key"])
def test_request_and_options_repr_redact_credential_headers(header: str) -> None:
    value = f"Bearer {KEY}" if header == "Authorization" else KEY
    request = Request(messages=[user_message("hi")], headers={header: value, "X-Title": "app"})
    headers: Any = {header: value}
    options = LoopOptions(model=ScriptedModel([]), messages=[user_message("hi")], headers=headers)
    texts = {"request repr": repr(request), "request str": str(request), "options repr": repr(options)}
    assert_no_key(texts)
    assert "X-Title" in repr(request)  # other headers are still shown


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_key_given_as_a_header_is_redacted_when_echoed(
    server: LocalServer, caplog: pytest.LogCaptureFixture, dialect: str
) -> None:
    d = DIALECTS[dialect]
    server.add(json_reply(401, echo_body(d, f"Incorrect API key provided: {KEY}.")))
    error = failing_run(make_model(dialect, server.url, key_in="headers"), caplog)
    headers = {k.lower(): v for k, v in server.requests[0]["headers"].items()}
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert_no_key({**texts_of_error(error), **texts_of_logs(caplog.records)})


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize(
    "scenario", ["401 echoing the key", "error event echoing the key", "malformed data line holding the key"]
)
def test_the_key_never_shows_in_the_adapters_own_errors(
    server: LocalServer, dialect: str, scenario: str
) -> None:
    # The adapter used directly, without the loop: its ModelError and every
    # exception linked to it (the redacted copy must not keep the original).
    server.add(*SCENARIOS[scenario](DIALECTS[dialect]))
    model = make_model(dialect, server.url)
    with pytest.raises(ModelError) as info:
        for _ in model.stream(Request(messages=[user_message("hi")]), Context()):
            pass
    assert_no_key(texts_of_error(info.value))


# --- a key with a line break (read from a file with its newline) ---------------------------------

NEWLINE_KEY = KEY + "\n"


@pytest.mark.parametrize("make", [AnthropicModel, OpenAIChatModel])
def test_a_key_with_a_line_break_is_refused_at_construction_without_showing_it(make: Any) -> None:
    with pytest.raises(ConfigError, match="api_key holds a line break") as info:
        make("m", api_key=NEWLINE_KEY, base_url=refused_url())
    assert KEY not in str(info.value)


@pytest.mark.parametrize("make", [AnthropicModel, OpenAIChatModel])
def test_a_header_value_with_a_line_break_is_refused_without_showing_it(make: Any) -> None:
    with pytest.raises(ConfigError, match="header 'x-api-key' holds a line break") as info:
        make("m", api_key="", base_url=refused_url(), headers={"x-api-key": KEY + "\r\nX-Injected: 1"})
    assert KEY not in str(info.value)
    with pytest.raises(ConfigError, match="header 'authorization' holds a line break") as info:
        LoopOptions(
            model=ScriptedModel([]), messages=[user_message("hi")], headers={"authorization": NEWLINE_KEY}
        )
    assert KEY not in str(info.value)


@pytest.mark.parametrize("make", [AnthropicModel, OpenAIChatModel])
def test_a_request_header_with_a_line_break_fails_without_echoing_the_key(make: Any) -> None:
    # Request headers reach the adapter at run time; requests refuses the
    # value and quotes it escaped ('...\n'), which is redacted too.
    model = make("m", api_key="", base_url=refused_url())
    request = Request(messages=[user_message("hi")], headers={"x-api-key": NEWLINE_KEY})
    with pytest.raises(ModelError) as info:
        list(model.stream(request, Context()))
    assert KEY not in str(info.value)
    assert "[REDACTED]" in str(info.value)
    assert KEY not in "".join(traceback.format_exception(info.value))


def test_extra_body_must_be_json_without_nan() -> None:
    with pytest.raises(ConfigError, match="extra_body must be JSON-serializable"):
        OpenAIChatModel("m", base_url=refused_url(), extra_body={"temperature": float("nan")})


# --- the redaction helpers (agentcore/redaction.py) -----------------------------------------------


def test_without_secret_replaces_every_occurrence_and_keeps_the_rest() -> None:
    cause = OSError("reset")
    exc = ModelError(ErrorClass.AUTH, 1.5, cause, message="key sk-abcdef12 bad; sk-abcdef12", status=401)
    clean = without_secret(exc, ["sk-abcdef12"])
    assert clean is not exc
    assert clean.message == "key [REDACTED] bad; [REDACTED]"
    assert (clean.error_class, clean.retry_after, clean.status) == (ErrorClass.AUTH, 1.5, 401)
    assert clean.err is cause
    assert clean.__cause__ is cause


@pytest.mark.parametrize("secrets", [[None], [""], ["absent-key-1"], ["key"], []])
def test_without_secret_leaves_the_error_alone(secrets: list[str | None]) -> None:
    exc = ModelError(ErrorClass.AUTH, message="invalid key: key")
    assert without_secret(exc, secrets) is exc


def test_secret_values_are_the_credentials_in_the_headers() -> None:
    headers = {
        "Authorization": "Bearer sk-proj-123456",
        "x-api-key": "sk-ant-abcdef",
        "api-key": "azure-key-1",
        "X-Gateway-Token": "gw-token-9",
        "anthropic-version": "2023-06-01",
        "Content-Type": "application/json",
    }
    assert secret_values(headers) == [
        "Bearer sk-proj-123456",
        "sk-proj-123456",
        "sk-ant-abcdef",
        "azure-key-1",
        "gw-token-9",
    ]
    # A value with a line break, as repr() quotes it in an error, and stripped.
    found = secret_values({"x-api-key": "sk-ant-abcdef\n"})
    assert found == ["sk-ant-abcdef\n", "sk-ant-abcdef\\n", "sk-ant-abcdef"]


def test_redact_cuts_the_longest_secret_first_and_leaves_short_ones() -> None:
    # One rule for the transport, the adapters and MCP: a secret inside a
    # longer one goes with it, and one under 8 characters is left alone.
    text = "Bearer sk-proj-123456 / sk-proj-123456 / key"
    assert redact(text, ["sk-proj-123456", "Bearer sk-proj-123456", "key", None]) == (
        "[REDACTED] / [REDACTED] / key"
    )


def test_headers_repr_hides_only_credential_values() -> None:
    headers = {"Authorization": "Bearer sk-1", "Cookie": "a=b", "X-Team": "blue"}
    assert (
        headers_repr(headers) == "{'Authorization': '[REDACTED]', 'Cookie': '[REDACTED]', 'X-Team': 'blue'}"
    )
