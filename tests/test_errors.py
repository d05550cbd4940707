"""ErrorClass, classify_status and ModelError (agentcore/errors.py)."""

from __future__ import annotations

import copy
import math
import pickle

import attrs
import pytest

from agentcore.errors import (
    AgentcoreError,
    Canceled,
    ConfigError,
    DeadlineExceeded,
    ErrorClass,
    ModelError,
    RunError,
    classify_status,
)
from agentcore.types import FinishReason, Usage, user_message

# The whole table of design.md, "Defaults and choices where the APIs leave room": (status, hint) -> class.
CLASSIFY_TABLE = [
    (429, False, ErrorClass.RATE_LIMITED),
    (429, True, ErrorClass.RATE_LIMITED),
    (503, False, ErrorClass.OVERLOADED),
    (503, True, ErrorClass.OVERLOADED),
    (529, False, ErrorClass.OVERLOADED),
    (529, True, ErrorClass.OVERLOADED),
    (401, False, ErrorClass.AUTH),
    (401, True, ErrorClass.AUTH),
    (403, False, ErrorClass.AUTH),
    (403, True, ErrorClass.AUTH),
    (413, False, ErrorClass.CONTEXT_LENGTH),
    (413, True, ErrorClass.CONTEXT_LENGTH),
    (408, False, ErrorClass.TRANSIENT),
    (408, True, ErrorClass.TRANSIENT),
    (502, False, ErrorClass.TRANSIENT),
    (502, True, ErrorClass.TRANSIENT),
    (504, False, ErrorClass.TRANSIENT),
    (504, True, ErrorClass.TRANSIENT),
    (400, False, ErrorClass.INVALID_REQUEST),
    (400, True, ErrorClass.CONTEXT_LENGTH),
    (404, False, ErrorClass.INVALID_REQUEST),
    (404, True, ErrorClass.CONTEXT_LENGTH),
    (422, False, ErrorClass.INVALID_REQUEST),
    (422, True, ErrorClass.CONTEXT_LENGTH),
    (409, False, ErrorClass.INVALID_REQUEST),
    (499, False, ErrorClass.INVALID_REQUEST),
    (500, False, ErrorClass.UPSTREAM),
    (500, True, ErrorClass.CONTEXT_LENGTH),
    (501, False, ErrorClass.UPSTREAM),
    (501, True, ErrorClass.UPSTREAM),
    (505, False, ErrorClass.UPSTREAM),
    (599, False, ErrorClass.UPSTREAM),
    (599, True, ErrorClass.UPSTREAM),
]


@pytest.mark.parametrize(("status", "hint", "expected"), CLASSIFY_TABLE)
def test_classify_status_table(status: int, hint: bool, expected: ErrorClass) -> None:
    assert classify_status(status, hint) is expected


def test_classify_status_hint_defaults_to_false() -> None:
    assert classify_status(400) is ErrorClass.INVALID_REQUEST
    assert classify_status(500) is ErrorClass.UPSTREAM


@pytest.mark.parametrize(
    ("error_class", "retryable"),
    [
        (ErrorClass.UPSTREAM, False),
        (ErrorClass.RATE_LIMITED, True),
        (ErrorClass.OVERLOADED, True),
        (ErrorClass.TRANSIENT, True),
        (ErrorClass.AUTH, False),
        (ErrorClass.INVALID_REQUEST, False),
        (ErrorClass.CONTEXT_LENGTH, False),
    ],
)
def test_error_class_retryable(error_class: ErrorClass, retryable: bool) -> None:
    assert error_class.retryable is retryable


def test_error_class_values_are_0_to_6_in_a_fixed_order() -> None:
    assert [int(c) for c in ErrorClass] == list(range(7))
    assert [c.name for c in ErrorClass] == [
        "UPSTREAM",
        "RATE_LIMITED",
        "OVERLOADED",
        "TRANSIENT",
        "AUTH",
        "INVALID_REQUEST",
        "CONTEXT_LENGTH",
    ]


def test_every_error_class_is_truthy_although_upstream_is_0() -> None:
    """``if err.error_class:`` and ``err.error_class or fallback`` must not
    mistake UPSTREAM (value 0) for a missing class."""
    assert [bool(c) for c in ErrorClass] == [True] * 7
    assert (ErrorClass.UPSTREAM or None) is ErrorClass.UPSTREAM
    assert int(ErrorClass.UPSTREAM) == 0


def test_model_error_fields_and_defaults() -> None:
    err = ModelError(ErrorClass.OVERLOADED)
    assert err.error_class is ErrorClass.OVERLOADED
    assert err.retry_after == 0.0
    assert err.err is None
    assert err.message == ""
    assert err.status == 0
    assert err.__cause__ is None
    assert isinstance(err, AgentcoreError)
    assert isinstance(err, Exception)


def test_model_error_design_signature() -> None:
    cause = ConnectionResetError("reset by peer")
    err = ModelError(ErrorClass.OVERLOADED, retry_after=0.5, err=cause)
    assert err.error_class is ErrorClass.OVERLOADED
    assert err.retry_after == 0.5
    assert err.err is cause
    assert err.__cause__ is cause
    positional = ModelError(ErrorClass.RATE_LIMITED, 2, cause, message="slow down", status=429)
    assert positional.retry_after == 2.0
    assert isinstance(positional.retry_after, float)
    assert positional.err is cause
    assert positional.message == "slow down"
    assert positional.status == 429


def test_model_error_converts_int_class() -> None:
    err = ModelError(3)
    assert err.error_class is ErrorClass.TRANSIENT
    with pytest.raises(ValueError, match="99"):
        ModelError(99)


def test_model_error_cause_chain_when_raised() -> None:
    cause = KeyError("missing")
    with pytest.raises(ModelError) as info:
        raise ModelError(ErrorClass.UPSTREAM, err=cause)
    assert info.value.__cause__ is cause
    assert info.value.__suppress_context__ is True


def test_model_error_cause_chain_with_raise_from() -> None:
    def fail() -> None:
        try:
            raise OSError("boom")
        except OSError as exc:
            raise ModelError(ErrorClass.TRANSIENT, err=exc) from exc

    with pytest.raises(ModelError) as info:
        fail()
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__ is info.value.err


def test_model_error_str_context_length_wording() -> None:
    err = ModelError(
        ErrorClass.CONTEXT_LENGTH,
        message="prompt is too long: 210000 tokens > 200000 maximum",
        status=400,
    )
    text = str(err)
    assert text == "context window exceeded: prompt is too long: 210000 tokens > 200000 maximum (HTTP 400)"
    assert "context window" in text


def test_model_error_str_variants() -> None:
    assert str(ModelError(ErrorClass.OVERLOADED)) == "overloaded"
    assert str(ModelError(ErrorClass.TRANSIENT, err=TimeoutError("read timed out"))) == (
        "transient failure: read timed out"
    )
    assert str(ModelError(ErrorClass.RATE_LIMITED, retry_after=1.5, message="slow down", status=429)) == (
        "rate limited: slow down (HTTP 429) (retry after 1.5 s)"
    )
    assert str(ModelError(ErrorClass.AUTH, status=401)) == "authentication failed (HTTP 401)"
    assert str(ModelError(ErrorClass.INVALID_REQUEST, message="bad")) == "invalid request: bad"
    assert str(ModelError(ErrorClass.UPSTREAM, message="oops")) == "upstream error: oops"
    # The explicit message wins over the cause's text.
    assert str(ModelError(ErrorClass.TRANSIENT, err=OSError("x"), message="y")) == "transient failure: y"


@pytest.mark.parametrize("field", ["error_class", "retry_after", "err", "message", "status"])
def test_model_error_fields_cannot_be_reassigned(field: str) -> None:
    err = ModelError(ErrorClass.TRANSIENT, retry_after=1.0, message="m", status=502)
    before = getattr(err, field)
    with pytest.raises(attrs.exceptions.FrozenAttributeError):
        setattr(err, field, None)
    assert getattr(err, field) == before


@pytest.mark.parametrize("bad", [-1.0, -0.001, math.nan, -math.inf])
def test_model_error_rejects_negative_or_nan_retry_after(bad: float) -> None:
    with pytest.raises(ValueError, match="retry_after"):
        ModelError(ErrorClass.RATE_LIMITED, retry_after=bad)


def test_model_error_rejects_non_numeric_retry_after() -> None:
    with pytest.raises(ValueError, match="could not convert"):
        ModelError(ErrorClass.RATE_LIMITED, retry_after="soon")


def test_model_error_compares_by_identity() -> None:
    a = ModelError(ErrorClass.TRANSIENT, message="x")
    b = ModelError(ErrorClass.TRANSIENT, message="x")
    assert a != b
    assert a == a
    assert len({a, b}) == 2


def test_model_error_survives_copy_and_pickle() -> None:
    """Exceptions cross process and thread-pool boundaries (logging queues,
    concurrent.futures); a ModelError must keep its fields when it does."""
    err = ModelError(ErrorClass.RATE_LIMITED, 1.5, ValueError("cause"), message="slow", status=429)
    for clone in (copy.copy(err), pickle.loads(pickle.dumps(err))):
        assert isinstance(clone, ModelError)
        assert clone.error_class is ErrorClass.RATE_LIMITED
        assert clone.retry_after == 1.5
        assert isinstance(clone.err, ValueError)
        assert str(clone.err) == "cause"
        assert clone.message == "slow"
        assert clone.status == 429
        assert str(clone) == str(err)


def test_run_error_without_a_policy_has_one_history_and_survives_pickle() -> None:
    messages = [user_message("hi")]
    err = RunError(ModelError(ErrorClass.AUTH, message="no"), Usage(input=3), FinishReason.ERROR, messages)
    assert err.full_messages is err.messages
    clone = pickle.loads(pickle.dumps(err))
    assert clone.messages == messages
    assert clone.full_messages is clone.messages
    assert (clone.usage, clone.finish_reason, str(clone)) == (Usage(input=3), FinishReason.ERROR, str(err))


def test_hierarchy() -> None:
    # Canceled is a BaseException, like asyncio.CancelledError: a broad
    # ``except Exception`` in a tool does not swallow a cancel.
    assert issubclass(Canceled, BaseException)
    assert not issubclass(Canceled, Exception)
    assert not issubclass(Canceled, AgentcoreError)
    assert issubclass(DeadlineExceeded, Canceled)
    assert issubclass(ConfigError, ValueError)
    assert issubclass(ConfigError, AgentcoreError)
    assert not issubclass(ModelError, Canceled)
    assert not issubclass(Canceled, ModelError)
