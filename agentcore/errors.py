"""Every exception a user of agentcore can see, and how model failures are classified.

Every class below is importable from ``agentcore`` (``from agentcore import
ModelError``); the module named after a class is where it is defined when
that is not this one. Hierarchy::

    BaseException
    +-- Canceled                       the context was cancelled (not an Exception)
    |   +-- DeadlineExceeded           ... because its deadline passed
    +-- Exception
        +-- AgentcoreError             base of every other exception agentcore raises
            +-- ModelError             a model call failed; carries an ErrorClass
            +-- RunError               raised by ``result()``: the run ended in error;
            |                          its ``err`` is the cause (any class here)
            +-- ConfigError (ValueError)  a caller mistake: bad options at construction,
            |                          or a request the provider would refuse (raised
            |                          by an adapter before any HTTP call)
            +-- ToolInputError (ValueError)  a function tool's arguments do not fit
            |                          (agentcore.tools; becomes an error result)
            +-- OutputValidationError  a structured answer failed validation
            |                          (agentcore.output; the err of a RunError)
            +-- GuardrailTripped       a guardrail returned a Tripwire (agentcore.guardrails;
            |                          the err of a RunError whose finish reason is guardrail)
            +-- CheckpointConflict     a newer state of the run is saved: another
            |                          process resumed it (agentcore.durable)
            +-- ReplayDiverged         a step runner replayed a step recorded for
            |                          another request (agentcore.durable)
            +-- SessionLocked          another run held the session past its
            |                          lock_timeout (agentcore.sessions)
            +-- MCPServerError         an MCP server cannot be started or reached,
            |                          refused a request or broke during a call
            +-- MCPToolError           an MCP tool's result had ``isError`` set
            +-- ChatRequestError (ValueError)  a chat front end's messages do not fit
                                       their protocol (the AI SDK's UI messages,
                                       AG-UI's RunAgentInput; agentcore.integrations)

A tool that raises becomes an error result the model reads, not a failed
run: ``ToolInputError``, ``MCPServerError`` and ``MCPToolError`` reach a
caller only when the caller runs a tool itself.

:class:`Canceled` derives from ``BaseException`` (as ``asyncio.CancelledError``
and trio's ``Cancelled`` do) so that tool and model code with a broad
``except Exception`` does not swallow a cancel and go on working after the
run ended. A run's cancel still reaches ``result()`` callers as a
:class:`RunError` (an ``Exception``) whose ``err`` is the :class:`Canceled`.

Model failures (HTTP statuses, error events inside a stream, timeouts, resets)
become :class:`ModelError` at exactly one boundary per adapter; the loop decides
on retries from :attr:`ModelError.error_class` alone and never inspects a
``requests`` type. Tool failures never raise: they become error tool results
(design.md, loop rule 6).
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from agentcore.types import FinishReason, Message, Usage


class ErrorClass(enum.IntEnum):
    """The failure bucket of a :class:`ModelError`, used for the retry decision.

    The integer values are part of the public API: 0 to 6, in the order below.
    Every member is truthy, ``UPSTREAM`` (0) included, so ``if
    err.error_class:`` never mistakes it for a missing class; compare with
    ``is`` or ``==`` to test for one.
    """

    UPSTREAM = 0
    """Generic, terminal upstream failure (a plain 500 included: the same request at once rarely cures it)."""
    RATE_LIMITED = 1
    """HTTP 429 or a provider's rate-limit error. Retryable."""
    OVERLOADED = 2
    """HTTP 503 / 529 or a provider's overloaded error. Retryable."""
    TRANSIENT = 3
    """Connection reset, timeout, stream cut before the step completed. Retryable."""
    AUTH = 4
    """HTTP 401 / 403. Terminal: the same credential cannot succeed."""
    INVALID_REQUEST = 5
    """HTTP 400 and other 4xx. Terminal."""
    CONTEXT_LENGTH = 6
    """The prompt exceeded the model's context window (413, or a 400 saying so). Terminal."""

    def __bool__(self) -> bool:
        """Always True: a class is never "nothing", whatever its value."""
        return True

    @property
    def retryable(self) -> bool:
        """True for RATE_LIMITED, OVERLOADED and TRANSIENT; False otherwise."""
        return self in (ErrorClass.RATE_LIMITED, ErrorClass.OVERLOADED, ErrorClass.TRANSIENT)


_CLASS_WORDS = {
    ErrorClass.UPSTREAM: "upstream error",
    ErrorClass.RATE_LIMITED: "rate limited",
    ErrorClass.OVERLOADED: "overloaded",
    ErrorClass.TRANSIENT: "transient failure",
    ErrorClass.AUTH: "authentication failed",
    ErrorClass.INVALID_REQUEST: "invalid request",
    ErrorClass.CONTEXT_LENGTH: "context window exceeded",
}


def classify_status(status: int, context_length_hint: bool = False) -> ErrorClass:
    """Map an HTTP status to an :class:`ErrorClass`.

    The table (design.md, "Defaults and choices where the APIs leave room"):
    429 rate-limited; 503 and 529 overloaded; 401 and 403 auth; 413
    context-length; 408, 502 and 504 transient; with ``context_length_hint``
    set, 400, other 4xx and 500 are context-length; without it 400 and other
    4xx are invalid-request; everything else, 500 included, is upstream.

    Args:
        status: the HTTP status code (or an error object's numeric ``code``).
        context_length_hint: True when the error body says the prompt was too
            long for the model's context window.

    Returns:
        The error class.
    """
    if status == 429:
        return ErrorClass.RATE_LIMITED
    if status in (503, 529):
        return ErrorClass.OVERLOADED
    if status in (401, 403):
        return ErrorClass.AUTH
    if status == 413:
        return ErrorClass.CONTEXT_LENGTH
    if status in (408, 502, 504):
        return ErrorClass.TRANSIENT
    if context_length_hint and (400 <= status < 500 or status == 500):
        return ErrorClass.CONTEXT_LENGTH
    if 400 <= status < 500:
        return ErrorClass.INVALID_REQUEST
    return ErrorClass.UPSTREAM


class AgentcoreError(Exception):
    """Base class of every exception agentcore raises."""


@attrs.define(auto_exc=True, on_setattr=attrs.setters.frozen, eq=False)
class ModelError(AgentcoreError):
    """A model call failed.

    Attributes:
        error_class: the failure bucket; :attr:`ErrorClass.retryable` decides
            whether the loop tries the step again.
        retry_after: the server's requested wait before a retry, in seconds
            (from ``retry-after-ms`` or ``Retry-After``); 0.0 when it gave none.
            The loop honours it verbatim over its computed backoff.
        err: the underlying cause, also chained as ``__cause__``; may be None.
        message: a human-readable description (the provider's error message,
            the HTTP status); never contains an API key.
        status: the HTTP status when the failure came with one, else 0.

    The fields cannot be reassigned after construction.
    """

    error_class: ErrorClass = attrs.field(converter=ErrorClass)
    retry_after: float = attrs.field(default=0.0, converter=float)
    err: BaseException | None = attrs.field(default=None)
    message: str = attrs.field(default="", kw_only=True)
    status: int = attrs.field(default=0, kw_only=True)

    @retry_after.validator
    def _check_retry_after(self, _attribute: Any, value: float) -> None:
        if not value >= 0.0:  # also rejects NaN
            raise ValueError(f"retry_after must be >= 0 seconds, got {value!r}")

    def __attrs_post_init__(self) -> None:
        if self.err is not None:
            object.__setattr__(self, "__cause__", self.err)

    def __reduce__(self) -> tuple[Any, ...]:
        # BaseException copies and pickles as ``cls(*args)``, which the
        # keyword-only ``message`` and ``status`` do not accept.
        fields = (self.error_class, self.retry_after, self.err, self.message, self.status)
        return _rebuild_model_error, (type(self), *fields)

    def __str__(self) -> str:
        words = _CLASS_WORDS[self.error_class]
        detail = self.message or (str(self.err) if self.err is not None else "")
        text = f"{words}: {detail}" if detail else words
        if self.status:
            text += f" (HTTP {self.status})"
        if self.retry_after:
            text += f" (retry after {self.retry_after:g} s)"
        return text


def _rebuild_model_error(
    cls: type[ModelError],
    error_class: ErrorClass,
    retry_after: float,
    err: BaseException | None,
    message: str,
    status: int,
) -> ModelError:
    return cls(error_class, retry_after, err, message=message, status=status)


class Canceled(BaseException):
    """The run's context was cancelled: the reader was closed, the caller
    cancelled its context, or (subclass :class:`DeadlineExceeded`) the
    deadline passed.

    A ``BaseException``, not an ``Exception``: ``except Exception`` in a tool
    does not catch it, so a tool that calls ``ctx.check()`` stops when the run
    is cancelled. Catch it by name (``except Canceled``) where a cancel is
    expected.
    """


class DeadlineExceeded(Canceled):
    """The context's deadline (``Context(timeout=...)``) passed."""


class ConfigError(AgentcoreError, ValueError):
    """A caller mistake found at construction: bad options, duplicate tool names."""


class RunError(AgentcoreError):
    """Raised by ``result()`` when a run ended in error or was cancelled.

    Attributes:
        err: the cause (a :class:`ModelError`, a :class:`Canceled`, or what
            an ``on_step`` callback raised); also chained as ``__cause__``.
        usage: the total usage of the steps that completed before the failure,
            so that billed tokens are not lost (an ``agentcore.Usage``).
        finish_reason: ``FinishReason.ERROR``, ``FinishReason.CANCELED``, or
            ``FinishReason.GUARDRAIL`` (``err`` is then a
            :class:`~agentcore.guardrails.GuardrailTripped`).
        messages: the conversation history up to the failure, valid to send
            again: as the loop keeps it (compacted by the history policies,
            as ``RunResult.messages``).
        full_messages: the whole history up to the failure, nothing a
            history policy removed left out (as ``RunResult.full_messages``);
            the same list as ``messages`` when no policy acted.
    """

    def __init__(
        self,
        err: BaseException,
        usage: Usage,
        finish_reason: FinishReason,
        messages: list[Message],
        full_messages: list[Message] | None = None,
    ) -> None:
        super().__init__(f"run {finish_reason.value}: {err}")
        self.err = err
        self.usage = usage
        self.finish_reason = finish_reason
        self.messages = messages
        self.full_messages = messages if full_messages is None else full_messages
        self.__cause__ = err

    def __reduce__(self) -> tuple[Any, ...]:
        # BaseException pickles as ``cls(*args)``, and args holds only the
        # message: a durable-execution engine records a failed run's RunError
        # and raises it again in another process.
        return type(self), (self.err, self.usage, self.finish_reason, self.messages, self.full_messages)


class MCPServerError(AgentcoreError):
    """An MCP server could not be started or reached, refused a request, or
    the connection broke during a call
    (:mod:`agentcore.integrations.mcp`). Raised from a tool call, the loop
    feeds it back to the model as an error result."""


class MCPToolError(AgentcoreError):
    """An MCP tool's result had ``isError`` set
    (:mod:`agentcore.integrations.mcp`); the message is the result's text,
    fed back to the model as an error result."""


class ChatRequestError(AgentcoreError, ValueError):
    """A chat front end's request does not fit its protocol: the AI SDK's UI
    messages (:func:`agentcore.integrations.ai_sdk.messages_from_ui`) or
    AG-UI's ``RunAgentInput`` (:func:`agentcore.integrations.ag_ui.messages_from_run_input`).
    A web endpoint answers it with HTTP 400.

    Attributes:
        path: where in the request's JSON the fault is, as
            ``messages[2].parts[0].url``; "" for the request as a whole.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
