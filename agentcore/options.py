"""``LoopOptions``: what one run of the loop is given, checked when it is built.

Every option is checked at construction: a value out of range or of the
wrong type is a :class:`ConfigError` naming the field, never a failure inside
the run later.

One rule for the fields with a ``DEFAULT_*`` constant (``step_limit``,
``max_retries``, ``retry_base_delay``, ``retry_max_delay``, ``queue_size``):
``None`` (the default) means the constant, and the field then holds its
value; every other value means itself, 0 included (``max_retries=0`` is no
retry, ``retry_base_delay=0`` no wait). Where zero makes no sense (a step
limit, a queue, an output cap of 0) it is a :class:`ConfigError`. The loop
reads the fields as they are. ``max_output_tokens=None`` leaves the cap to
the adapter, and ``retry_after_limit=None``, like a timeout, is no limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from agentcore.compaction import HistoryPolicy
from agentcore.durable import CheckpointStore, StepRunner
from agentcore.errors import ConfigError
from agentcore.guardrails import Guardrails
from agentcore.limits import UsageLimits
from agentcore.middleware import check_middleware
from agentcore.model import Model
from agentcore.output import output_spec
from agentcore.redaction import headers_repr
from agentcore.result import StepResult
from agentcore.server_tools import SERVER_TOOL_TYPES, ServerTool
from agentcore.sessions import Session
from agentcore.settings import ModelSettings
from agentcore.tools import Tool, ToolSet
from agentcore.transport.headers import header_dict
from agentcore.types import Message, Usage

DEFAULT_STEP_LIMIT = 20
"""Model steps per run when ``LoopOptions.step_limit`` is None."""
DEFAULT_MAX_RETRIES = 2
"""Retries of a step that failed retryably before any output, when
``LoopOptions.max_retries`` is None."""
DEFAULT_RETRY_BASE_DELAY = 0.5
"""Seconds, when ``LoopOptions.retry_base_delay`` is None: the first computed
backoff is between 0.75 and 1.0 times this."""
DEFAULT_RETRY_MAX_DELAY = 8.0
"""Seconds, when ``LoopOptions.retry_max_delay`` is None: the cap of one
computed backoff (a server's Retry-After may exceed it)."""
DEFAULT_RUN_QUEUE_SIZE = 1024
"""Parts, when ``LoopOptions.queue_size`` is None. Larger than the 64 of
``stream_func`` (:mod:`agentcore.engine.channel`) because a run carries one
part per text delta, and a worker that finds the queue full stops for two
thread switches; at 64 that cost 16 ms per 20,000 deltas
(``bench/stream_throughput.py``). 1,024 waiting parts take ~0.3 MB."""
OUTPUT_MODES = ("native", "tool")
"""How a structured answer is asked for (``LoopOptions.output_mode``)."""


Tools = ToolSet | Iterable[Tool | ServerTool] | Mapping[str, Tool | ServerTool]
"""What ``LoopOptions.tools`` and ``StepPlan.tools`` take: function and MCP
tools and server tools, as a :class:`ToolSet`, a list or a name -> tool mapping."""


def _tool_set(value: Tools | None, field: str = "LoopOptions.tools") -> ToolSet:
    """``LoopOptions.tools`` (or ``field``) as a :class:`ToolSet` (a lone
    tool and a ``str``, easy mistakes, are ConfigErrors that say so)."""
    if isinstance(value, ToolSet):
        return value
    given: object = value  # the annotation says what is allowed, not what callers pass
    # A list or tuple is no Tool: isinstance() against the Tool protocol (its
    # members listed again at each call) costs more than the rest of the options.
    if isinstance(given, SERVER_TOOL_TYPES) or (
        not isinstance(given, (list, tuple)) and isinstance(given, Tool)
    ):
        name = type(given).__name__
        raise ConfigError(f"{field} must be a list of tools, got one {name} (wrap it: [...])")
    if isinstance(value, (str, bytes)):
        raise ConfigError(
            f"{field} must be tools (a list, a ToolSet or a name -> tool mapping), got the text {value!r}"
        )
    return ToolSet(value or ())


def _headers(value: Mapping[str, str] | None) -> dict[str, str]:
    return header_dict(value, "LoopOptions.headers")


def _messages(value: Iterable[Message], field: str = "LoopOptions.messages") -> tuple[Message, ...]:
    if isinstance(value, Message) or not isinstance(value, Iterable):
        raise ConfigError(
            f"{field} must be a list of Message objects, got {type(value).__name__}"
            + (" (wrap it: [user_message(...)])" if isinstance(value, Message) else "")
        )
    messages = tuple(value)
    for message in messages:
        if not isinstance(message, Message):
            raise ConfigError(f"messages must be Message objects, got {type(message).__name__}")
    return messages


def _run_id(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"LoopOptions.run_id must be a non-empty str or None, got {value!r}")


def _approvals(value: Mapping[str, bool | str] | None) -> Mapping[str, bool | str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(f"LoopOptions.approvals must be a mapping of call id to decision, got {value!r}")
    for call_id, decision in value.items():
        if not isinstance(call_id, str) or not isinstance(decision, (bool, str)):
            raise ConfigError(
                "LoopOptions.approvals maps a tool call's id to True (run it), or to False or a "
                f"reason (str) to deny it; got {call_id!r}: {decision!r}"
            )
    return dict(value)


def _count(minimum: int) -> Callable[[Any, attrs.Attribute[Any], object], None]:
    """A validator: an int (not a bool), at least ``minimum``."""

    def check(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"LoopOptions.{attribute.name} must be an int, got {value!r}")
        if value < minimum:
            raise ConfigError(f"LoopOptions.{attribute.name} must be >= {minimum}, got {value}")

    return check


def _step_limit(value: int | None) -> int:
    return DEFAULT_STEP_LIMIT if value is None else value


def _max_retries(value: int | None) -> int:
    return DEFAULT_MAX_RETRIES if value is None else value


def _retry_base_delay(value: float | None) -> float:
    return DEFAULT_RETRY_BASE_DELAY if value is None else value


def _retry_max_delay(value: float | None) -> float:
    return DEFAULT_RETRY_MAX_DELAY if value is None else value


def _queue_size(value: int | None) -> int:
    return DEFAULT_RUN_QUEUE_SIZE if value is None else value


def _seconds(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    """A validator: a number of seconds (not a bool) >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(f"LoopOptions.{attribute.name} must be a number of seconds >= 0, got {value!r}")


def _of_type(kind: type, description: str) -> Callable[[Any, attrs.Attribute[Any], object], None]:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, kind):
            raise ConfigError(
                f"{type(instance).__name__}.{attribute.name} must be {description}, got {value!r}"
            )

    return check


def _callback(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not callable(value):
        raise ConfigError(f"LoopOptions.{attribute.name} must be callable or None, got {value!r}")


def _policies(value: HistoryPolicy | Iterable[HistoryPolicy] | None) -> tuple[HistoryPolicy, ...]:
    """``LoopOptions.history_policy`` as a tuple of policies (empty for None)."""
    if value is None:
        return ()
    given: object = value
    policies = (
        (given,)
        if callable(getattr(given, "apply", None)) or not isinstance(given, Iterable)
        else tuple(given)
    )
    for policy in policies:
        if not callable(getattr(policy, "apply", None)):
            raise ConfigError(
                "LoopOptions.history_policy must be a history policy (an object with apply(state)) "
                f"or a list of them, got {policy!r}"
            )
    return policies


def _plan_tools(value: Tools | None) -> ToolSet | None:
    return None if value is None else _tool_set(value, "StepPlan.tools")


def _plan_messages(value: Iterable[Message] | None) -> tuple[Message, ...] | None:
    if value is None:
        return None
    messages = _messages(value, "StepPlan.messages")
    if not messages:
        raise ConfigError("StepPlan.messages needs at least one message (None keeps the step's)")
    return messages


def _plan_model(_instance: Any, _attribute: Any, value: object) -> None:
    if value is not None and (getattr(value, "stream", None) is None or not hasattr(value, "model_id")):
        raise ConfigError(f"StepPlan.model must be a Model (.model_id and .stream) or None, got {value!r}")


@attrs.frozen
class StepDraft:
    """What a step is about to send: the value ``LoopOptions.prepare_step`` gets.

    Attributes:
        number: the step's number, from 1.
        messages: the history the step will send (after the history
            policies acted: what the run keeps).
        system: the system prompt.
        tools: the tools the model may call (the run's, with
            ``final_answer`` in the tool mode of structured output); the
            server tools the step asks for are its ``server_tools``.
        model: the run's model.
        settings: the step's settings: the run's, with what the history
            policies set (``ProviderCompaction``); None for none.
        usage: the run's usage so far (the steps done, and summary calls).
        steps: the steps done so far.
    """

    number: int
    messages: tuple[Message, ...]
    system: str
    tools: ToolSet
    model: Model
    settings: ModelSettings | None
    usage: Usage
    steps: tuple[StepResult, ...] = ()


@attrs.frozen
class StepPlan:
    """What ``LoopOptions.prepare_step`` changes for one step. Each field
    left None keeps the step's own; each set field replaces it for this step
    only (the run's history, tools, model and settings are as before at the
    next step).

    Attributes:
        messages: the history to send this step (the run still keeps its
            own, and the model's answer is added to that). Checked before
            the step: a history the providers refuse is a ``ConfigError``
            naming the message index, before any HTTP call.
        system: the system prompt ("" for none).
        tools: the tools of this step, as ``LoopOptions.tools`` takes them:
            the model may call only these (a call to another is an unknown
            tool, an error result); an empty list offers none. Server tools
            included: the step asks for the plan's server tools only (keep
            the run's with ``[*draft.tools.server_tools, ...]``).
        model: the model this step is sent to.
        settings: this step's settings, in place of the run's (field by
            field over the model's own, as ever).

    Raises:
        ConfigError: a value of the wrong type, or an empty ``messages``.
    """

    messages: tuple[Message, ...] | None = attrs.field(default=None, converter=_plan_messages)
    system: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(str, "a str or None"))
    )
    tools: ToolSet | None = attrs.field(default=None, converter=_plan_tools)
    model: Model | None = attrs.field(default=None, validator=_plan_model)
    settings: ModelSettings | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(ModelSettings, "a ModelSettings or None"))
    )


@attrs.frozen
class LoopOptions:
    """Configures one run of the loop.

    Attributes:
        model: the model to drive. Required.
        messages: the initial conversation, at least one message (typically
            ``[user_message("...")]``). The loop works on a copy. May be
            empty with ``checkpoints``, to resume the saved run ``run_id``;
            with a ``session``, the new turn (empty: continue the stored
            conversation).
        system: the system prompt for every step; "" for none.
        tools: the tools the model may call: a :class:`ToolSet`, an iterable
            of tools or a name -> tool mapping; empty for text only. Tools
            the provider runs itself (:mod:`agentcore.server_tools`:
            ``WebSearch()``, ``WebFetch()``, ``CodeExecution()``,
            ``FileSearch(...)``) go among them: every step's request asks
            for them (``docs/server-tools.md``); a function or MCP tool with
            a server tool's name is a ``ConfigError``.
        step_limit: the most model steps, >= 1; None:
            :data:`DEFAULT_STEP_LIMIT` (20).
        max_output_tokens: the most output tokens per step (reasoning
            included), >= 1; None lets the adapter choose.
        headers: extra HTTP headers for every model request.
        on_step: called with each step's :class:`Usage` (see the module docstring).
        max_retries: retries of a step that failed retryably before any of
            its output reached the reader, >= 0 (0: none); None:
            :data:`DEFAULT_MAX_RETRIES` (2).
        retry_base_delay: backoff base in seconds, >= 0 (0: retry at once);
            None: :data:`DEFAULT_RETRY_BASE_DELAY` (0.5).
        retry_max_delay: cap of a computed backoff in seconds, >= 0; None:
            :data:`DEFAULT_RETRY_MAX_DELAY` (8.0).
        retry_after_limit: the longest server Retry-After in seconds the loop
            waits for (0: none); a longer hint ends the run with the error.
            None: no limit.
        retry_sleep: waits the given number of seconds before a retry, in
            place of the default wait on the run's context (which a cancel
            or deadline ends at once); tests pass a recorder, so nothing
            sleeps. None: the default.
        retry_jitter: ``retry_jitter(0.75, 1.0)`` gives the factor a computed
            backoff is multiplied by; None: ``random.uniform``.
        parallel_tools: run a step's tool calls concurrently in threads.
        queue_size: parts that may wait in the queue between the worker and
            the reader, >= 1; None: :data:`DEFAULT_RUN_QUEUE_SIZE` (1024). A
            full queue pauses the worker. The reader takes the whole queue at
            once, so it may hold one more batch of up to this many parts.
        settings: this run's :class:`ModelSettings`; each field that is set
            overrides the model's own (``AnthropicModel(settings=...)``).
        output_type: ask for a structured final answer: a dataclass, a
            ``TypedDict``, a pydantic model, an attrs class or another type a
            tool parameter may have, or a JSON Schema ``dict``;
            ``result().output`` is then the validated value (see
            :mod:`agentcore.output`). None: a free text answer.
        output_retries: how many more answers the model may give after one
            that fails validation (each failure is sent back to it as one
            more step); then the run fails with
            :class:`~agentcore.output.OutputValidationError`. Default 1.
        output_mode: ``"native"`` (default): the adapter's native structured
            output field, whatever the server; ``"tool"``: a ``final_answer``
            tool whose arguments are the answer, for servers that refuse the
            native field.
        agent_name: names the run in its trace (the ``invoke_agent`` span,
            ``gen_ai.agent.name``; see :mod:`agentcore.integrations.otel`);
            "" for none.
        trace_content: record message contents (system prompt, messages,
            model output, tool definitions, arguments and results) on the
            run's OpenTelemetry spans; off by default, as the conventions ask.
        run_id: the run's id: with ``checkpoints``, the key its state is
            saved under and resumed from; it also makes each tool call's
            ``ctx.idempotency_key``. None: an anonymous run.
        checkpoints: a :class:`~agentcore.durable.CheckpointStore`
            (:class:`~agentcore.durable.SQLiteCheckpoints`): the run's state
            is saved after each model step and each tool call, and a run
            whose ``run_id`` has a saved state resumes from it; ``messages``
            may then be empty. Needs ``run_id``.
        approvals: decisions on tool calls that wait for approval, by call
            id or by step-qualified key (``RunResult.approval_keys``: a key
            given again once the run moved on is ignored): True runs the
            call; False, or a reason (str) the model reads, denies it.
            Without ``checkpoints``, pass the history of the run that ended
            with ``approval-required`` (a history ending with an assistant
            message's unanswered calls resumes them, with or without
            decisions).
        step_runner: runs each model step and tool call
            (:class:`~agentcore.durable.StepRunner`), for durable-execution
            engines; None: called directly.
        prepare_step: called on the worker thread before every step with a
            :class:`StepDraft` (what the step is about to send), after the
            history policies; returns None (no change) or a
            :class:`StepPlan` whose set fields replace the step's for this
            step only. An exception it raises ends the run with that error.
            None: no hook.
        stream_tool_input: ask the model for ``tool-call-delta`` parts, the
            fragments of each tool call's JSON arguments as they stream
            (for display: the whole ``tool-call`` part follows); off by
            default.
        history_policy: one history policy
            (:class:`agentcore.compaction.HistoryPolicy`: ``SlidingWindow``,
            ``ClearOldToolResults``, ``Summarize``, ``ProviderCompaction``,
            your own) or a list of them, applied in list order before each
            step to the history the run keeps (``docs/long-runs.md``). With
            one, a step the provider refuses as too long is tried once more
            after the policies cut again. None: no policy.
        limits: the most the run may use (:class:`agentcore.UsageLimits`:
            tokens, requests, tool calls, US dollars), checked before each
            request and after each step; going over one ends the run with
            ``limit`` (``RunResult.limit`` says which; ``docs/controls.md``,
            "Limits and cost"). None: no limit but ``step_limit``.
    )
        deps: the run's dependencies (a database pool, an HTTP client, the
            current user: any object), given to every tool call as
            ``ctx.deps`` and inherited by the contexts made from the run's;
            kept out of ``repr``. None: the caller context's ``deps`` (None
            without one).
        middleware: objects with ``wrap_model(request, ctx, call_next)``,
            ``wrap_tool(call, ctx, call_next)`` or both
            (:class:`agentcore.middleware.Middleware`), around each attempt
            of a model step and each tool call; the first is the outermost
            (``docs/controls.md``). Empty: none.
        guardrails: a :class:`agentcore.guardrails.Guardrails`: checks on
            the input, the answer (also as it streams) and each tool call
            and result; a tripwire ends the run with ``guardrail``
            (``docs/controls.md``). None: none.
        session: a conversation session (:class:`agentcore.sessions.Session`:
            ``SQLiteSession``, ``PostgresSession``, your own): the run waits
            for the session's other runs to end, loads the stored
            conversation and sends ``messages`` (the new turn; may be
            empty) after it; when the run finishes its turn is stored
            (``docs/sessions.md``). Not with ``step_runner``. None: no
            session.

    Raises:
        ConfigError: a value is out of range or of the wrong type.
    """

    model: Model = attrs.field()
    messages: tuple[Message, ...] = attrs.field(default=(), converter=_messages)
    system: str = attrs.field(default="", validator=_of_type(str, "a str"))
    tools: ToolSet = attrs.field(factory=ToolSet, converter=_tool_set)
    step_limit: int = attrs.field(default=None, converter=_step_limit, validator=_count(1))
    max_output_tokens: int | None = attrs.field(default=None, validator=attrs.validators.optional(_count(1)))
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_headers, repr=headers_repr)
    on_step: Callable[[Usage], object] | None = attrs.field(default=None, validator=_callback)
    max_retries: int = attrs.field(default=None, converter=_max_retries, validator=_count(0))
    retry_base_delay: float = attrs.field(default=None, converter=_retry_base_delay, validator=_seconds)
    retry_max_delay: float = attrs.field(default=None, converter=_retry_max_delay, validator=_seconds)
    retry_after_limit: float | None = attrs.field(default=None, validator=attrs.validators.optional(_seconds))
    retry_sleep: Callable[[float], object] | None = attrs.field(default=None, validator=_callback)
    retry_jitter: Callable[[float, float], float] | None = attrs.field(default=None, validator=_callback)
    parallel_tools: bool = attrs.field(default=False, validator=_of_type(bool, "True or False"))
    queue_size: int = attrs.field(default=None, converter=_queue_size, validator=_count(1))
    settings: ModelSettings | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(ModelSettings, "a ModelSettings or None"))
    )
    output_type: Any = attrs.field(default=None)
    output_retries: int = attrs.field(default=1, validator=_count(0))
    output_mode: str = attrs.field(default="native")
    agent_name: str = attrs.field(default="", validator=_of_type(str, "a str"))
    trace_content: bool = attrs.field(default=False, validator=_of_type(bool, "True or False"))
    run_id: str | None = attrs.field(default=None, validator=_run_id)
    checkpoints: CheckpointStore | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(
            _of_type(CheckpointStore, "a CheckpointStore (load, save) or None")
        ),
    )
    approvals: Mapping[str, bool | str] | None = attrs.field(default=None, converter=_approvals)
    step_runner: StepRunner | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(
            _of_type(StepRunner, "a StepRunner (model_step, tool_call) or None")
        ),
    )
    prepare_step: Callable[[StepDraft], StepPlan | None] | None = attrs.field(
        default=None, validator=_callback
    )
    history_policy: tuple[HistoryPolicy, ...] = attrs.field(default=None, converter=_policies)
    stream_tool_input: bool = attrs.field(default=False, validator=_of_type(bool, "True or False"))
    limits: UsageLimits | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(UsageLimits, "a UsageLimits or None"))
    )
    deps: Any = attrs.field(default=None, repr=False)
    middleware: tuple[Any, ...] = attrs.field(default=(), converter=check_middleware)
    guardrails: Guardrails | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(Guardrails, "a Guardrails or None"))
    )
    session: Session | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(_of_type(Session, "a session (lock, turns, write) or None")),
    )

    @model.validator
    def _check_model(self, _attribute: Any, value: object) -> None:
        # The protocol's own test (every member present, the method not None)
        # spelled out: isinstance() against a runtime-checkable protocol lists
        # its members again at each call; it still decides what this does not
        # accept (a class registered as a Model).
        if (getattr(value, "stream", None) is None or not hasattr(value, "model_id")) and not isinstance(
            value, Model
        ):
            raise ConfigError(f"{value!r} is not a Model (it needs .model_id and .stream(request, ctx))")

    def __attrs_post_init__(self) -> None:
        if self.checkpoints is not None and self.run_id is None:
            raise ConfigError(
                "LoopOptions.checkpoints needs a run_id: the key the run's state is saved under"
            )
        if not self.messages and self.checkpoints is None and self.session is None:
            raise ConfigError("LoopOptions.messages needs at least one message")
        if self.session is not None and self.step_runner is not None:
            # The engine replays the run in another process, where the
            # session holds more turns by then: its first request would differ.
            raise ConfigError(
                "LoopOptions.session does not compose with step_runner: load the conversation "
                "in a workflow step and pass it as messages (docs/sessions.md)"
            )

    @output_type.validator
    def _check_output_type(self, _attribute: Any, value: object) -> None:
        if value is not None:
            output_spec(value)  # a ConfigError now rather than when the run starts

    @output_mode.validator
    def _check_output_mode(self, _attribute: Any, value: object) -> None:
        if value not in OUTPUT_MODES:
            raise ConfigError(f"LoopOptions.output_mode must be 'native' or 'tool', got {value!r}")
