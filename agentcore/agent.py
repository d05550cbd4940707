"""Reusable agents: :class:`Agent`, agents as tools (:meth:`Agent.as_tool`) and :func:`handoff`.

An :class:`Agent` is a named, frozen configuration of the fields of
:class:`~agentcore.LoopOptions` that make an agent (model, system prompt,
tools, settings, output type, history policy, middleware, guardrails,
limits). :meth:`Agent.run` builds one ``LoopOptions`` from it, the messages
and the call's overrides, and calls :func:`agentcore.run`: there is no
second loop. An agent holds no state of a run, so one agent serves any
number of runs on any threads at once.

Two tools let agents work together (``docs/agents.md``):

* :meth:`Agent.as_tool`: the model of a run calls the agent with a task; the
  agent runs as a sub-run under a child of the call's context (a cancel or
  deadline of the run ends it at once: the cancel is a callback, nothing
  polls), its parts reach the run's stream as ``nested`` parts before the
  call's result, its usage and cost are added to the run's, and its answer is
  the call's result.
* :func:`handoff`: the model calls it to move the rest of the run to another
  agent, with the history so far.

Both reach their run through :class:`agentcore.engine.tool_calls.ToolScope`, the loop's
seam for what a running tool call may do to its run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs

from agentcore.compaction import HistoryPolicy
from agentcore.context import Context
from agentcore.engine.channel import RunReader
from agentcore.engine.loop import run as run_loop
from agentcore.engine.tool_calls import current
from agentcore.errors import AgentcoreError, Canceled, ConfigError, RunError
from agentcore.guardrails import Guardrails
from agentcore.limits import UsageLimits, sub_run_limits
from agentcore.model import Model
from agentcore.options import LoopOptions, StepDraft, StepPlan, Tools
from agentcore.output import OUTPUT_TOOL
from agentcore.result import RunResult
from agentcore.settings import ModelSettings
from agentcore.tools import FunctionTool, ToolInputError
from agentcore.types import (
    TOOL_NAME_CHARACTERS,
    TOOL_NAME_LENGTH,
    FinishReason,
    Message,
    Role,
    StreamPart,
    StreamPartKind,
    ToolDefinition,
    ToolResult,
    Usage,
    user_message,
)

if TYPE_CHECKING:
    from agentcore.aio import AsyncRunReader

__all__ = ["DEFAULT_MAX_DEPTH", "Agent", "AgentTool", "HandoffTool", "handoff"]

DEFAULT_MAX_DEPTH = 5
"""How deep sub-runs of agent tools may nest when ``Agent.as_tool(max_depth=...)``
is not given: a top-level run's agent tool starts a sub-run at depth 1, a
tool of that sub-run one at depth 2, and so on."""

AGENT_FIELDS = (
    "model",
    "system",
    "tools",
    "settings",
    "output_type",
    "output_mode",
    "output_retries",
    "max_output_tokens",
    "parallel_tools",
    "prepare_step",
    "middleware",
    "guardrails",
)
"""The fields of ``LoopOptions`` a :func:`handoff` replaces with the new
agent's (and ``agent_name``, its name); the others are the run's (its
``history_policy``, ``limits``, ``step_limit`` and every override)."""

_PLACEHOLDER = (user_message("(the messages of a run)"),)
"""The messages of an agent's options template: ``LoopOptions`` needs one."""

_TASK_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "What the agent should do, in full."}},
        "required": ["task"],
        "additionalProperties": False,
    }
)


_NOT_IN_A_TOOL_NAME = re.compile(f"[^{TOOL_NAME_CHARACTERS}]")


def _tool_name(text: str) -> str:
    """``text`` as a tool name: each character a tool name cannot hold
    (letters, digits, ``_``, ``-``) becomes ``_``, cut to 64 characters."""
    return _NOT_IN_A_TOOL_NAME.sub("_", text)[:TOOL_NAME_LENGTH]


def _name(_instance: Any, _attribute: Any, value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"Agent.name must be a str that is not blank, got {value!r}")


def _str(_instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str):
        raise ConfigError(f"Agent.{attribute.name} must be a str, got {value!r}")


@attrs.frozen(kw_only=True, eq=False)  # an agent is itself: compared and hashed by identity
class Agent:
    """A reusable agent: what :class:`~agentcore.LoopOptions` says about an
    agent, under a name.

    Frozen, and it holds nothing of a run: share one between threads and
    runs. Each field means what the ``LoopOptions`` field of that name
    means, and is checked as it is, when the agent is made.

    Attributes:
        name: the agent's name: each run's ``LoopOptions.agent_name`` (its
            trace's ``gen_ai.agent.name``), ``RunResult.agent``, the default
            name of :meth:`as_tool`'s tool and the ``handoff`` part's
            ``agent``. Required, non-empty.
        model: the model. Required.
        description: what the agent does, for the models that may call it
            (:meth:`as_tool`, :func:`handoff`); "" for none.
        system, tools, settings, output_type, output_mode, output_retries,
        max_output_tokens, step_limit, parallel_tools, history_policy,
        middleware, guardrails, limits, prepare_step: as in ``LoopOptions``.

    Raises:
        ConfigError: a value ``LoopOptions`` refuses (the message names the
            agent and the field), or an empty ``name``.
    """

    name: str = attrs.field(validator=_name)
    model: Model
    description: str = attrs.field(default="", validator=_str)
    system: str = ""
    tools: Tools = ()
    settings: ModelSettings | None = None
    output_type: Any = None
    output_mode: str = "native"
    output_retries: int = 1
    max_output_tokens: int | None = None
    step_limit: int | None = None
    parallel_tools: bool = False
    history_policy: HistoryPolicy | Iterable[HistoryPolicy] | None = None
    middleware: Sequence[Any] = ()
    guardrails: Guardrails | None = None
    limits: UsageLimits | None = None
    prepare_step: Callable[[StepDraft], StepPlan | None] | None = None
    _options: LoopOptions = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        try:
            options = self._template()
        except ConfigError as exc:
            raise ConfigError(f"Agent {self.name!r}: {exc}") from exc
        # The checked, converted values (a ToolSet, tuples): a list the caller
        # changes later changes nothing here.
        object.__setattr__(self, "_options", options)
        for field in ("tools", "history_policy", "middleware", "step_limit"):
            object.__setattr__(self, field, getattr(options, field))

    def _template(self) -> LoopOptions:
        return LoopOptions(
            model=self.model,
            messages=_PLACEHOLDER,
            system=self.system,
            tools=self.tools,
            settings=self.settings,
            output_type=self.output_type,
            output_mode=self.output_mode,
            output_retries=self.output_retries,
            max_output_tokens=self.max_output_tokens,
            step_limit=self.step_limit,
            parallel_tools=self.parallel_tools,
            history_policy=self.history_policy,
            middleware=self.middleware,
            guardrails=self.guardrails,
            limits=self.limits,
            prepare_step=self.prepare_step,
            agent_name=self.name,
        )

    def options(self, messages: str | Iterable[Message], /, **overrides: Any) -> LoopOptions:
        """The ``LoopOptions`` of a run of this agent on ``messages``.

        Args:
            messages: the conversation (a list of :class:`~agentcore.Message`),
                or a ``str``: one user message.
            overrides: ``LoopOptions`` fields for this run only (``deps=``,
                ``run_id=``, ``checkpoints=``, ``limits=``, ``system=`` ...).

        Raises:
            ConfigError: an override that is not a ``LoopOptions`` field
                (the message names it), ``messages`` or ``agent_name`` among
                the overrides, a value ``LoopOptions`` refuses, an empty or
                blank ``str`` (providers refuse an empty message), a
                :func:`handoff` the run may reach (its sub-runs' too) whose
                function raises or gives no :class:`Agent` (the message
                names the handoff), or an agent the run's agent tools reach
                with a tool that may need approval (see :meth:`as_tool`).
        """
        for key in overrides:
            if key in ("messages", "agent_name") or key not in _OPTION_FIELDS:
                why = (
                    "pass the messages as the first argument"
                    if key == "messages"
                    else "it is the agent's name"
                    if key == "agent_name"
                    else "overrides are LoopOptions fields"
                )
                raise ConfigError(f"Agent {self.name!r}: unknown override {key!r} ({why})")
        if isinstance(messages, str) and not messages.strip():
            raise ConfigError(f"Agent {self.name!r}: the message is empty (providers refuse an empty text)")
        history = (user_message(messages),) if isinstance(messages, str) else messages
        options = attrs.evolve(self._options, messages=history, **overrides)
        self._check()
        return options

    def run(
        self, messages: str | Iterable[Message], /, ctx: Context | None = None, **overrides: Any
    ) -> RunReader:
        """Start a run of this agent: :func:`agentcore.run` of :meth:`options`.

        A durable run (``run_id=`` and ``checkpoints=``) that a :func:`handoff`
        moved to another agent resumes with that agent: the one the last
        handoff in the saved history named, found among the agents this
        agent's handoffs reach. A run with a ``session=`` goes on the same
        way with the agent the last handoff in the session's conversation
        named (``agentcore.run(agent.options(...))`` starts with this agent).

        Args:
            messages: the conversation, or a ``str`` (one user message).
            ctx: the caller's context (cancel, deadline), as ``run``'s.
            overrides: ``LoopOptions`` fields for this run only.

        Returns:
            The run's :class:`~agentcore.RunReader`.

        Raises:
            ConfigError: see :meth:`options` and :func:`agentcore.run`; a
                ``step_runner`` without ``checkpoints`` for an agent whose
                handoffs could move the run (a replayed handoff would not
                move it again).
        """
        options = self.options(messages, **overrides)
        return run_loop(self._resumed(options), ctx)

    def generate(
        self, messages: str | Iterable[Message], /, ctx: Context | None = None, **overrides: Any
    ) -> RunResult:
        """Run this agent to the end: ``run(...).result()``.

        Raises:
            ConfigError: see :meth:`options`.
            RunError: the run ended in error or was cancelled.
        """
        return self.run(messages, ctx, **overrides).result()

    def arun(
        self, messages: str | Iterable[Message], /, ctx: Context | None = None, **overrides: Any
    ) -> AsyncRunReader:
        """Start a run of this agent for asyncio code: :func:`agentcore.aio.arun`
        of :meth:`options` (``buffer`` is an override of its own here).

        Raises:
            ConfigError: see :meth:`options`.
        """
        # Imported here: asyncio is loaded for asyncio users only (import agentcore stays light).
        from agentcore.aio import DEFAULT_BUFFER, AsyncRunReader

        buffer = overrides.pop("buffer", DEFAULT_BUFFER)
        return AsyncRunReader(self.run(messages, ctx, **overrides), buffer=buffer)

    def as_tool(
        self, name: str | None = None, description: str | None = None, *, max_depth: int = DEFAULT_MAX_DEPTH
    ) -> AgentTool:
        """This agent as a tool another run's model calls with a task.

        Args:
            name: the tool's name; None: the agent's, each character a tool
                name cannot hold replaced by ``_``, cut to 64 characters.
            description: the tool's description; None: the agent's
                ``description`` (or a line naming the agent).
            max_depth: how deep sub-runs may nest when this tool is called
                (:data:`DEFAULT_MAX_DEPTH`, 5): a call from a run that is
                already that deep gets an error result the model reads
                (``agent 'x' not run: sub-runs nest at most N deep``) and
                starts nothing.

        Returns:
            An :class:`AgentTool` (see there for what a call does).

        Raises:
            ConfigError: ``max_depth`` is not an int >= 1, ``name`` is not
                a valid tool name, or this agent, or an agent its handoffs
                reach (those given as an :class:`Agent`, not a function), has
                a tool that may need approval (``@tool(requires_approval=...)``
                or a ``needs_approval`` method): a sub-run cannot ask a human.
        """
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise ConfigError(f"Agent.as_tool(max_depth=...) must be an int >= 1, got {max_depth!r}")
        for agent in self._reachable():
            for tool in agent._options.tools.values():
                if _may_ask(tool):
                    raise ConfigError(
                        f"Agent.as_tool(): agent {agent.name!r} has the tool {tool.definition.name!r} "
                        "that needs approval: a sub-run cannot ask a human (its run would end "
                        "approval-required)"
                    )
        text = description if description is not None else self.description or f"Ask the {self.name} agent."
        try:
            definition = ToolDefinition(name or _tool_name(self.name), text, _TASK_SCHEMA)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"Agent.as_tool(): {exc}") from exc
        return AgentTool(self, definition, max_depth)

    def _resumed(self, options: LoopOptions) -> LoopOptions:
        """``options``, or for a conversation handed off before (in the
        session's stored turns, in the messages given: a chat client sends
        the whole history back, or in a durable run's saved state), the
        options of the agent the last handoff named."""
        handoffs = self._handoffs()
        if not handoffs:
            return options
        checkpoints, run_id = options.checkpoints, options.run_id
        if (checkpoints is None or run_id is None) and options.step_runner is not None:
            # A runner replays a handoff's recorded result without running it:
            # without a saved history the run could not tell who is in charge.
            raise ConfigError(
                f"Agent {self.name!r} can hand off: a run with a step_runner needs checkpoints= "
                "and run_id= too (the agent in charge is found in the saved history)"
            )
        results: list[ToolResult] = []
        if (
            options.session is not None
        ):  # the stored conversation, the new turn, the saved run (which holds both)
            results += _tool_results(m for turn in options.session.turns() for m in turn.messages)
        results += _tool_results(options.messages)
        if checkpoints is not None and run_id is not None:
            state = checkpoints.load(run_id)
            if state is not None:
                results += [*_tool_results(state.messages), *state.results]
        agent = None
        for result in results:
            if result.name in handoffs and not result.is_error:
                agent = handoffs[result.name]
        return options if agent is None else agent.switched(options)

    def _check(self) -> None:
        """Resolve every handoff a run of this agent may reach, through
        handoffs and agent tools, and refuse a tool that may need approval
        in an agent that runs as a sub-run (what :meth:`as_tool` could not
        see: an agent a handoff function gives).

        Raises:
            ConfigError: see :meth:`options`.
        """
        todo: list[tuple[Agent, bool]] = [(self, False)]  # (agent, runs in a sub-run)
        seen: set[tuple[int, bool]] = set()
        while todo:
            agent, sub = todo.pop()
            if (id(agent), sub) in seen:
                continue
            seen.add((id(agent), sub))
            for tool in agent._options.tools.values():
                if isinstance(tool, HandoffTool):
                    todo.append((_target(agent, tool), sub))
                elif isinstance(tool, AgentTool):
                    todo.append((tool.agent, True))
                elif sub and _may_ask(tool):
                    raise ConfigError(
                        f"Agent {agent.name!r} runs in a sub-run (an agent tool) and has the tool "
                        f"{tool.definition.name!r} that needs approval: a sub-run cannot ask a human"
                    )

    def _handoffs(self) -> dict[str, Agent]:
        """The agents this agent's handoffs reach (theirs too), by tool name,
        each handoff's function called.

        Raises:
            ConfigError: a handoff's function raised or gave no Agent
                (naming the agent that holds it and the handoff).
        """
        found: dict[str, Agent] = {}
        for agent in self._reachable(resolve=True):
            for tool in agent._options.tools.values():
                if isinstance(tool, HandoffTool):
                    found.setdefault(tool.definition.name, _target(agent, tool))
        return found

    def _reachable(self, *, resolve: bool = False) -> list[Agent]:
        """This agent and the agents its handoffs reach, theirs too (with
        ``resolve`` False, only through the handoffs given an Agent).

        Raises:
            ConfigError: see :meth:`_handoffs`.
        """
        reached: list[Agent] = []
        todo = [self]
        seen: set[int] = set()
        while todo:
            agent = todo.pop()
            if id(agent) in seen:
                continue
            seen.add(id(agent))
            reached.append(agent)
            for tool in agent._options.tools.values():
                if isinstance(tool, HandoffTool) and (resolve or isinstance(tool.target, Agent)):
                    todo.append(_target(agent, tool))
        return reached

    def switched(self, options: LoopOptions) -> LoopOptions:
        """``options`` with this agent in charge: its :data:`AGENT_FIELDS`
        and name, the run's other fields as they are (what a handoff does)."""
        mine = self._options
        return attrs.evolve(
            options, agent_name=self.name, **{field: getattr(mine, field) for field in AGENT_FIELDS}
        )


_OPTION_FIELDS = frozenset(attrs.fields_dict(LoopOptions))


def _target(holder: Agent, tool: HandoffTool) -> Agent:
    """The agent ``tool`` (a handoff of ``holder``) hands the run to.

    Raises:
        ConfigError: its function raised or gave no Agent.
    """
    try:
        return tool.agent
    except ConfigError as exc:
        raise ConfigError(f"Agent {holder.name!r}: {exc}") from exc


def _tool_results(messages: Iterable[Message]) -> list[ToolResult]:
    """The tool results of ``messages``, in order."""
    return [
        part.tool_result
        for message in messages
        if message.role is Role.TOOL
        for part in message.content
        if part.tool_result is not None
    ]


def _may_ask(tool: object) -> bool:
    """True when ``tool`` may wait for a human's approval: a function tool
    with ``requires_approval`` (True or a function), or another tool with a
    ``needs_approval`` method (``agentcore.engine.tool_calls.needs_approval``)."""
    if isinstance(tool, FunctionTool):
        return tool.requires_approval is not False
    return callable(getattr(tool, "needs_approval", None))


@attrs.frozen
class AgentTool:
    """An agent as a tool (:meth:`Agent.as_tool`); its input is
    ``{"task": "..."}``.

    A call runs the agent on one user message, the task, as a sub-run:

    * under a child of the call's context: the calling run's cancel or
      deadline cancels the sub-run at once (a callback of the context; its
      reader ends, its model stream and tools see the cancel); a cancelled
      sub-run ends the calling run as cancelled too;
    * each part of the sub-run goes into the calling run's stream as a
      ``nested`` part (``StreamPart.nested_event((call id,), part)``; a
      sub-run's own nested parts get the call id in front of their path),
      in order, before the call's ``tool-result`` part;
    * its usage (tokens) is added to the calling run's usage
      (``RunResult.usage``, the ``finish`` part's ``total_usage``, and so the
      calling run's token limits, checked before its next request), its cost
      to ``RunResult.sub_run_cost`` (and ``RunResult.cost``, and so the
      calling run's cost limit, checked then too); its steps are
      not the calling run's (``steps``, ``usage_by_model`` and the
      ``requests`` limit count the calling run's own);
    * the calling run's token limits (``input_tokens``, ``output_tokens``,
      ``total_tokens``) and ``cost`` limit bound the sub-run: it runs with
      the agent's own ``limits``, each of those lowered to what the calling
      run had left when the call started (the calling run's cost: its steps'
      and its sub-runs'), so a sub-run whose model has no price under a
      calling run with a cost limit is refused (``ConfigError``, an error
      result); its ``requests`` and ``tool_calls`` limits are the agent's
      own (the calling run's count its own steps);
    * its answer is the call's result: the text, or with an ``output_type``
      the answer's JSON text (the ``final_answer`` arguments in the tool
      mode). A sub-run that fails, or ends for another reason than
      ``stop`` (a limit, the step limit, a cut-off answer), gives an error
      result saying why; the calling run goes on.

    The sub-run's options are the agent's, with the calling run's ``deps``.
    A call outside a run (no scope: a step runner's process) runs the agent
    without forwarding parts or usage.
    """

    agent: Agent
    definition: ToolDefinition
    max_depth: int

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Run the agent on ``arguments["task"]``; see the class docstring.

        Raises:
            AgentcoreError: the calling run is ``max_depth`` deep already,
                or the sub-run failed (error results).
            ToolInputError: ``task`` is not a non-empty str (an error result).
            Canceled: the calling run was cancelled (or its deadline passed).
        """
        task = arguments.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolInputError('the input must be {"task": "<what to do>"}, a non-empty string')
        scope = current()
        depth = 0 if scope is None else scope.depth
        if depth >= self.max_depth:
            raise AgentcoreError(
                f"agent {self.agent.name!r} not run: sub-runs nest at most {self.max_depth} deep "
                "(Agent.as_tool(max_depth=...))"
            )
        overrides: dict[str, Any] = {}
        if scope is not None:
            if scope.options.deps is not None:
                overrides["deps"] = scope.options.deps
            if scope.options.limits is not None:
                overrides["limits"] = sub_run_limits(
                    self.agent.limits, scope.options.limits, scope.usage, scope.cost
                )
        reader = self.agent.run(task, ctx, **overrides)
        outcome: RunResult | RunError
        spent = Usage()
        try:
            for part in reader:
                if scope is not None:
                    used = _used(part)
                    if used is not None:  # counted before the part is seen: a cancel then counts it
                        scope.spend(used, Decimal(0))
                        spent += used
                    scope.emit(part.nested_event((scope.call.id,), part))
        finally:
            reader.close()  # ends the sub-run when the calling run's reader went away
            try:
                outcome = reader.result()
            except RunError as exc:
                outcome = exc
            if scope is not None:  # what no part showed (a step a runner replayed), and the cost
                scope.spend(_less(outcome.usage, spent), reader.cost)
        if isinstance(outcome, RunResult):
            if outcome.finish_reason is not FinishReason.STOP:
                why = (
                    f"{outcome.limit}"
                    if outcome.limit is not None
                    else f"finish reason {outcome.finish_reason.value}"
                )
                said = f"; its text: {outcome.text}" if outcome.text else ""
                raise AgentcoreError(f"agent {self.agent.name!r} did not finish: {why}{said}")
            return _answer(outcome)
        ctx.check()  # the calling run's cancel or deadline: it ends as cancelled
        what = "was cancelled" if isinstance(outcome.err, Canceled) else "failed"
        raise AgentcoreError(f"agent {self.agent.name!r} {what}: {outcome.err}") from outcome


def _used(part: StreamPart) -> Usage | None:
    """The usage a sub-run's part reports at any depth: a step's, or a history
    policy's summary call's; None for the others."""
    inner = part.nested if part.nested is not None else part
    if inner.kind is StreamPartKind.STEP_FINISH:
        return inner.usage
    if inner.kind is StreamPartKind.COMPACTION and inner.compaction is not None:
        return inner.compaction.usage
    return None


def _less(total: Usage, spent: Usage) -> Usage:
    """``total`` less ``spent``, field by field (never below 0)."""
    return Usage(
        **{name: max(getattr(total, name) - getattr(spent, name), 0) for name in attrs.fields_dict(Usage)}
    )


def _answer(result: RunResult) -> str:
    """A sub-run's answer as the text of a tool result."""
    if result.output is None:
        return result.text
    for call in reversed(result.steps[-1].tool_calls if result.steps else ()):
        if call.name == OUTPUT_TOOL:
            return call.input
    return result.text.strip()


@attrs.frozen
class HandoffTool:
    """The tool :func:`handoff` makes (no input).

    Attributes:
        target: the agent, or a function giving it (an agent made later).
        definition: the tool's name and description.
    """

    target: Agent | Callable[[], Agent]
    definition: ToolDefinition

    @property
    def agent(self) -> Agent:
        """The agent the tool hands the run to.

        Raises:
            ConfigError: ``target``'s function raised or did not give an Agent.
        """
        if isinstance(self.target, Agent):
            return self.target
        try:
            agent = self.target()
        except Exception as exc:  # a developer's bug: told to the developer as a ConfigError
            raise ConfigError(
                f"the handoff {self.definition.name!r} needs an Agent, its function raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(agent, Agent):
            raise ConfigError(
                f"the handoff {self.definition.name!r} needs an Agent, "
                f"its function gave {type(agent).__name__}"
            )
        return agent

    def execute(self, arguments: dict[str, Any], ctx: Context) -> str:
        """Hand the run to :attr:`agent` once this step's calls are answered.

        Raises:
            AgentcoreError: the call runs outside a run, or a handoff was
                already made in this step (an error result the model reads).
        """
        scope = current()
        if scope is None:
            raise AgentcoreError("a handoff works only inside a run (as one of LoopOptions.tools)")
        agent = self.agent
        refused = scope.hand_off(agent.name, agent.switched(scope.options))
        if refused is not None:
            raise AgentcoreError(f"not handed off to {agent.name!r}: {refused}")
        return f"Handed off to {agent.name}."


def handoff(
    agent: Agent | Callable[[], Agent], *, description: str = "", name: str | None = None
) -> HandoffTool:
    """A tool the model calls to move the rest of the run to ``agent``.

    Once every call of the step has its result, the run goes on with
    ``agent`` in charge (:meth:`Agent.switched`: its model, system prompt,
    tools, settings, output type, middleware and guardrails; the run's
    history, usage, steps, limits and history policy go on), and the stream
    gets a ``handoff`` part naming it; ``RunResult.agent`` names the agent
    that finished. Other calls of the same step run as usual; a second
    handoff in one step gets an error result (the first one wins). The
    history goes to the new agent's model as it is: each adapter sends
    reasoning, server-tool and provider blocks only to the provider that
    made them (``docs/agents.md``, "History across providers").

    Args:
        agent: the agent to hand the run to.
        description: the tool's description for the model; "": the agent's
            ``description`` (or a line naming it).
        name: the tool's name; None: ``transfer_to_<agent name>``, each
            character a tool name cannot hold replaced by ``_``, cut to 64
            characters (an explicit ``name`` must be valid as it is).

    An agent cannot hold a handoff to an agent made after it, and agents are
    frozen: for a cycle (billing hands back to triage), give a function that
    returns the agent, with ``name``
    (``handoff(lambda: triage, name="transfer_to_triage")``). It is called
    when a run of an agent that reaches the handoff starts (a function that
    raises or gives no Agent is a ``ConfigError`` of :meth:`Agent.run`), and
    when the model calls the tool.

    Raises:
        ConfigError: ``agent`` is not an :class:`Agent` or a function, a
            function without ``name``, or the name is not a valid tool name.
    """
    if isinstance(agent, Agent):
        tool_name = name or _tool_name(f"transfer_to_{agent.name}")
        text = description or agent.description or f"Hand the conversation over to the {agent.name} agent."
    elif callable(agent):
        if name is None:
            raise ConfigError("handoff(function) needs name=: the agent is not known before the call")
        tool_name = name
        text = description or f"Hand the conversation over ({name})."
    else:
        raise ConfigError(f"handoff() needs an Agent or a function giving one, got {type(agent).__name__}")
    try:
        definition = ToolDefinition(tool_name, text)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"handoff(): {exc}") from exc
    return HandoffTool(agent, definition)
