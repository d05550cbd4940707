"""Tools the model may call: the ``Tool`` protocol, ``ToolSet``, and function tools.

A tool receives a call's arguments as a dict (the loop parses the JSON text
the model sent once, with :func:`parse_arguments`; a call whose arguments are
not a JSON object gets an error result and no tool runs) and returns what is
fed back to the model: text, files, or both (:data:`ToolOutput`,
:func:`tool_output`). An ``Exception`` it raises becomes an error tool result
that the model sees (design.md, loop rule 6), never a failed run.

Function tools (:func:`tool`, :class:`FunctionTool`) turn a typed Python
function into a ``Tool``: the name comes from the function, the description
and per-argument descriptions from its Google-style docstring, the input JSON
Schema from its signature and type hints (see :mod:`agentcore.schema.signature` for the
mapping and its decisions). Each call's arguments are validated against that
schema with ``jsonschema`` (:mod:`agentcore.schema.validation`, which imports it on
first use) before the function runs; a mismatch raises
:class:`ToolInputError`, whose message names each bad field and why, and
which the loop feeds back to the model as an error result. The
validated JSON is then converted to the annotated types (Enum members, attrs,
dataclass and pydantic instances, datetimes, dates, times, UUIDs, Decimals,
paths, tuples, sets) and the function is called; a value that does not
convert is a :class:`ToolInputError` too. A ``str`` result is sent as it is;
a file as a file; anything else as JSON text
(:func:`agentcore.schema.validation.json_default`). A parameter named ``ctx`` or
annotated :class:`~agentcore.Context` receives the run's context and is not
part of the schema; with ``LoopOptions(deps=...)`` it carries the run's
dependencies as ``ctx.deps`` (annotate it ``Context[MyDeps]`` to type them).

An ``async def`` function is a tool too: each call's coroutine runs on the
event loop agentcore keeps for async tools (:func:`agentcore.background.tool_loop`,
one daemon thread for the process) while the calling thread waits; a cancel
or deadline of the run's context cancels the coroutine's task at once (the
coroutine sees ``asyncio.CancelledError``). ``timeout=seconds`` gives a
function tool a time limit per call: the call's context is cancelled at the
limit and the call fails with a ``TimeoutError`` naming it (an error result
the model sees); a synchronous function with a limit runs on a thread of its
own, which is left running if it ignores its context (its late result is
dropped).
"""

from __future__ import annotations

import functools
import inspect
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, ParamSpec, Protocol, TypeAlias, TypeVar, overload, runtime_checkable

from agentcore.background import start_thread, tool_loop, wait
from agentcore.context import Context
from agentcore.errors import AgentcoreError, Canceled, ConfigError
from agentcore.files import File
from agentcore.schema import signature, validation
from agentcore.server_tools import SERVER_TOOL_TYPES, ServerTool, check_server_names
from agentcore.types import TOOL_NAME, ContentPart, ContentPartKind, ToolDefinition

P = ParamSpec("P")
R = TypeVar("R")

ToolOutput: TypeAlias = "str | File | ContentPart | Sequence[str | File | ContentPart]"
"""What a tool's ``execute`` returns: text, a file (a :class:`~agentcore.types.File`
or a ``file`` part), or a list mixing text and files (see :func:`tool_output`)."""

Approval: TypeAlias = bool | Callable[[Mapping[str, Any]], bool]
"""``requires_approval``: True, False, or a function of a call's arguments."""


@runtime_checkable
class Tool(Protocol):
    """An executable capability the model may invoke."""

    @property
    def definition(self) -> ToolDefinition:
        """The model-facing name, description and JSON Schema."""
        ...

    def execute(self, arguments: dict[str, Any], ctx: Context) -> ToolOutput:
        """Run the tool.

        Args:
            arguments: the call's arguments: the JSON object the model sent,
                parsed (:func:`parse_arguments`; ``{}`` for a call without
                arguments). The tool may keep or change it: each call gets
                its own.
            ctx: the run's context; a long-running tool should watch it
                (``ctx.wait``, ``ctx.check``) and stop when it is cancelled.

        Returns:
            The text result for the model; or a file (a screenshot, a chart:
            :func:`agentcore.file_part`), or a list mixing text and files
            (see :func:`tool_output`).

        Raises:
            Exception: any exception becomes an error result the model sees.
        """
        ...


class ToolSet(Mapping[str, Tool]):
    """The tools available to a run, keyed by their definition's name.

    Tools the provider runs itself (:mod:`agentcore.server_tools`:
    ``WebSearch()``, ``WebFetch()``, ...) may be given among them: they are
    kept apart in :attr:`server_tools`, in the order given, and are not
    items of the mapping (the loop never runs them; each step's request
    carries them, ``Request.server_tools``).

    Args:
        tools: tools (their names are taken from their definitions) and
            server tools, or a mapping from name to tool (each key must equal
            its tool's name).

    Raises:
        ConfigError: two tools share a name (a function or MCP tool named as
            a server tool given with it included), a key differs from its
            tool's name, an object is not a :class:`Tool`, or a tool's
            ``execute`` takes JSON text (its first parameter is annotated
            ``str``: the spelling from before tools got their arguments as a
            dict).
    """

    _server_tools: tuple[ServerTool, ...] = ()

    def __init__(self, tools: Iterable[Tool | ServerTool] | Mapping[str, Tool | ServerTool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        server: dict[str, ServerTool] = {}
        items = tools.items() if isinstance(tools, Mapping) else ((None, t) for t in tools)
        for key, tool in items:
            if isinstance(tool, SERVER_TOOL_TYPES):
                name = tool.name
                if name in server:
                    raise ConfigError(f"{type(tool).__name__} is given twice; give each server tool once")
                server[name] = tool
            elif not isinstance(tool, Tool):
                raise ConfigError(
                    f"{tool!r} is not a Tool (it needs .definition and .execute(arguments, ctx)) "
                    "nor a server tool (agentcore.server_tools)"
                )
            else:
                name = tool.definition.name
                _check_execute(tool, name)
                if name in self._tools:
                    raise ConfigError(f"two tools are named {name!r}; tool names must be unique")
                self._tools[name] = tool
            if key is not None and key != name:
                raise ConfigError(f"tool set key {key!r} differs from the tool's name {name!r}")
        self._server_tools = tuple(server.values())
        check_server_names(self._server_tools, self._tools)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        names = [*self._tools, *(tool.name for tool in self._server_tools)]
        return f"ToolSet({names!r})"

    @property
    def server_tools(self) -> tuple[ServerTool, ...]:
        """The tools the provider runs itself, in the order given; () for none."""
        return self._server_tools

    def definitions(self) -> list[ToolDefinition]:
        """The tools' definitions, in the order the tools were given (server
        tools have none: they are in :attr:`server_tools`)."""
        return [tool.definition for tool in self._tools.values()]


def _check_execute(tool: Tool, name: str) -> None:
    """Refuse a tool whose ``execute`` takes JSON text: its first parameter
    annotated ``str`` (or ``"str"``). Such a tool would get a dict, fail at
    every call with a ``TypeError`` that only the model sees, and the run
    would succeed. An unannotated parameter, or a callable whose signature
    cannot be read, is taken as it is.

    Raises:
        ConfigError: the new spelling, naming the tool.
    """
    try:
        parameters = list(inspect.signature(tool.execute).parameters.values())
    except (TypeError, ValueError):
        return
    annotation = parameters[0].annotation if parameters else None
    if annotation is str or (isinstance(annotation, str) and annotation == "str"):
        raise ConfigError(
            f"tool {name!r}: execute's first parameter is annotated str (JSON text), but a tool now "
            "gets the call's arguments parsed, as a dict: write execute(self, arguments: dict[str, Any], "
            "ctx) and use arguments where it did json.loads(input)"
        )


class ToolInputError(AgentcoreError, ValueError):
    """A function tool's arguments did not match its input schema (or could
    not be converted to the annotated types); the function was not run.

    The message is written for the model: it names the tool and, per problem,
    the path of the bad value (``city``, ``stops[1].name``) and the reason.
    """


class FunctionTool(Generic[P, R]):
    """A :class:`Tool` made from a typed Python function.

    Calling the object calls the function unchanged, so a decorated function
    can still be used (and unit-tested) directly.

    Args:
        func: a function, ``async def`` function or other callable whose
            parameters all have type hints; see the module docstring for
            what they may be and how a coroutine is run.
        name: the tool's name; defaults to ``func.__name__``. 1 to 64
            letters, digits, ``_`` or ``-`` (what Anthropic and OpenAI accept).
        description: the tool's description; defaults to the docstring's
            summary (the text before its sections).
        requires_approval: True: every call waits for a human's decision
            before it runs (the run ends with ``approval-required``, see
            :mod:`agentcore.durable`); or a function of the call's arguments
            (a dict, before conversion) returning True for the calls that
            must wait. Default False.
        timeout: seconds one call may take, > 0: at the limit the call's
            context is cancelled and the call fails with ``TimeoutError``
            (the model gets an error result naming the limit); a
            synchronous function then runs on a thread of its own, left
            running if it ignores its context. None (default): no limit
            but the run's.

    Raises:
        ConfigError: the function is a generator (async or not), has ``*args``, a
            parameter without a type hint or with a hint that has no JSON
            Schema, or the name is not a valid tool name.
    """

    __name__: str  # these four are copied from the function, as functools.wraps does
    __qualname__: str
    __module__: str
    __wrapped__: Callable[..., Any]
    _params: tuple[signature.Param, ...] | None  # None: a raw-schema tool, called with the dict
    _extra: bool
    _extra_convert: signature.Convert | None
    _pass_ctx: bool
    _approval: Approval
    _coroutine: bool
    _timeout: float | None

    def __init__(
        self,
        func: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_approval: Approval = False,
        timeout: float | None = None,
    ) -> None:
        if isinstance(func, FunctionTool):
            func = func.func
        name = _tool_name(func, name)
        plan = signature.function_plan(func, f"tool {name!r}")
        self._setup(func, name, plan.summary if description is None else description, plan.schema, timeout)
        self._approval = _approval(requires_approval, name)
        self._params = plan.params
        self._extra = plan.extra
        self._extra_convert = plan.extra_convert

    @classmethod
    def from_schema(
        cls,
        name: str,
        description: str,
        schema: Mapping[str, Any] | str,
        func: Callable[..., Any],
        *,
        requires_approval: Approval = False,
        timeout: float | None = None,
    ) -> FunctionTool[..., Any]:
        """A tool defined by a raw JSON Schema.

        Args:
            name: the tool's name (1 to 64 letters, digits, ``_`` or ``-``).
            description: the tool's description for the model.
            schema: the input JSON Schema, as a mapping or as JSON text; its
                ``type`` must be ``"object"``. Draft 2020-12 unless its
                ``$schema`` names another draft.
            func: called as ``func(arguments)``, or ``func(arguments, ctx)``
                when it takes a second parameter, with the validated
                arguments as a dict (an ``async def`` function is run as a
                function tool's); its return value is encoded like a
                function tool's.
            requires_approval: as for :class:`FunctionTool`.
            timeout: as for :class:`FunctionTool`.

        Raises:
            ConfigError: the name, the schema or the timeout is not valid.
        """
        name = _tool_name(func, name)
        owner = f"tool {name!r}"
        try:
            parsed: Any = json.loads(schema if isinstance(schema, str) else json.dumps(schema))
        except (TypeError, ValueError) as exc:  # a private copy, and proof that it is JSON
            raise ConfigError(f"{owner}: the schema is not JSON: {exc}") from exc
        if not isinstance(parsed, dict) or parsed.get("type") != "object":
            raise ConfigError(f'{owner}: the input schema must be a JSON Schema object with "type": "object"')
        validation.check_schema(parsed, owner)
        tool: FunctionTool[..., Any] = cls.__new__(cls)
        tool._setup(func, name, description, parsed, timeout)
        tool._params = None
        tool._extra = False
        tool._extra_convert = None
        tool._pass_ctx = takes_context(func)
        tool._approval = _approval(requires_approval, name)
        return tool

    def _setup(
        self,
        func: Callable[..., Any],
        name: str,
        description: str,
        schema: dict[str, Any],
        timeout: float | None,
    ) -> None:
        self._timeout = None if timeout is None else positive_seconds(f"tool {name!r}: timeout", timeout)
        self._coroutine = signature.is_coroutine_function(func)
        functools.update_wrapper(self, func, updated=())
        self._func = func
        self._owner = f"tool {name!r}"
        self._definition = ToolDefinition(name, description, json.dumps(schema, ensure_ascii=False))
        self._validator = validation.SchemaValidator(schema)
        self._pass_ctx = False

    @property
    def definition(self) -> ToolDefinition:
        """The model-facing name, description and JSON Schema (as JSON text)."""
        return self._definition

    @property
    def func(self) -> Callable[..., Any]:
        """The wrapped function."""
        return self._func

    @property
    def timeout(self) -> float | None:
        """Seconds one call may take, or None for no limit of its own."""
        return self._timeout

    @property
    def requires_approval(self) -> Approval:
        """What the tool was made with: True, False, or the function of a
        call's arguments that decides."""
        return self._approval

    def needs_approval(self, arguments: Mapping[str, Any]) -> bool:
        """True when a call with these arguments (the JSON object the model
        sent, as a dict) must wait for a human's decision before it runs.
        Arguments that fail the tool's schema need none: the call becomes an
        error result without running, and the model can try again."""
        approval = self._approval
        if approval is False or self._validator.problems(arguments):
            return False
        return bool(approval(arguments)) if callable(approval) else approval

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._func(*args, **kwargs)
        return result

    def __repr__(self) -> str:
        return f"FunctionTool({self._definition.name!r})"

    def execute(self, arguments: dict[str, Any], ctx: Context) -> ToolOutput:
        """Validate the arguments, convert them, call the function, encode its result.

        Args:
            arguments: the call's arguments (the JSON object the model sent).
            ctx: the run's context; a ``ctx`` parameter gets it (with a
                ``timeout``: a child of it, cancelled at the limit).

        Returns:
            The function's result: a ``str`` as it is; a file part, a
            :class:`~agentcore.File`, or a list holding one (with text) as it
            is (:func:`is_tool_content`); anything else as JSON text.

        Raises:
            ToolInputError: the arguments do not match the schema, or could
                not be converted; the function did not run.
            TypeError: the result cannot be encoded as JSON.
            TimeoutError: the call took longer than the tool's ``timeout``.
            Canceled: ``ctx`` was cancelled while the call ran (an async
                function's task is cancelled, as is the call's context).
            RuntimeError: an async function tool was called on the event
                loop of async tools itself (await the function instead).
            Exception: whatever the function raised.
        """
        problems = self._validator.problems(arguments)
        if problems:
            lines = "\n".join(f"- {p}" for p in problems)
            raise ToolInputError(
                f"invalid arguments for {self._owner}; it was not run:\n{lines}\n"
                "Call it again with arguments that match its input schema."
            )
        if self._timeout is None:
            result = self._call(arguments, ctx)
        else:
            call_ctx: Context = Context(self._timeout, parent=ctx)
            try:
                result = self._call(arguments, call_ctx)
            except Canceled:
                if ctx.cancelled or not call_ctx.cancelled:
                    raise
                raise TimeoutError(
                    f"{self._owner} did not finish within its time limit of {self._timeout:g} s; "
                    + (
                        "it was cancelled"
                        if self._coroutine
                        else "it was told to stop but may still be running"
                    )
                ) from None
            finally:
                call_ctx.detach()
        if is_tool_content(result):
            return result  # type: ignore[no-any-return]  # checked: content the loop splits
        return validation.encode_result(result, self._owner)

    def _call(self, arguments: dict[str, Any], ctx: Context) -> Any:
        """Call the function with ``arguments`` and ``ctx``; a coroutine on
        the loop of async tools, a function with a time limit on a thread of
        its own, both waited for under ``ctx``."""
        if self._params is None:
            args: list[Any] = [arguments, ctx] if self._pass_ctx else [arguments]
            kwargs: dict[str, Any] = {}
        else:
            args, kwargs = self._bind(arguments, ctx)
        if self._coroutine:
            loop = tool_loop()
            if loop.on_loop:
                raise RuntimeError(
                    f"{self._owner} is async and was called on the async tools' loop: await it"
                )
            return wait(loop.submit(self._func(*args, **kwargs)), ctx)
        if self._timeout is None:
            return self._func(*args, **kwargs)
        return wait(start_thread(functools.partial(self._func, *args, **kwargs), "agentcore-tool-call"), ctx)

    def _bind(self, arguments: dict[str, Any], ctx: Context) -> tuple[list[Any], dict[str, Any]]:
        assert self._params is not None
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for param in self._params:
            if param.context:
                value: Any = ctx
            elif param.name in arguments:
                value = self._convert(param.name, param.convert, arguments[param.name])
            elif param.positional:
                value = param.default  # the schema made every parameter without a default required
            else:
                continue
            if param.positional:
                args.append(value)
            else:
                kwargs[param.name] = value
        if self._extra:
            declared = {param.name for param in self._params}
            for key, raw in arguments.items():
                if key not in declared:
                    kwargs[key] = self._convert(key, self._extra_convert, raw)
        return args, kwargs

    def _convert(self, name: str, convert: signature.Convert | None, value: Any) -> Any:
        if convert is None:
            return value
        try:
            return convert(value)
        except signature.ConversionError as exc:  # a pydantic, attrs or dataclass validator refused it
            problems = "\n".join(f"- {line}" for line in exc.lines(name))
            raise ToolInputError(f"invalid arguments for {self._owner}; it was not run:\n{problems}") from exc


@overload
def tool(
    func: Callable[P, R],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: Approval = False,
    timeout: float | None = None,
) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: Approval = False,
    timeout: float | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    requires_approval: Approval = False,
    timeout: float | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Turn a typed function into a :class:`FunctionTool`.

    Use it bare (``@tool``) or with arguments
    (``@tool(name="lookup", description="...")``,
    ``@tool(requires_approval=True)``, ``@tool(timeout=10)``), on a plain or
    an ``async def`` function; see :class:`FunctionTool`.

    Example::

        @agentcore.tool
        def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, float]:
            '''Current weather for a city.

            Args:
                city: the city's name, e.g. "Paris".
                unit: the temperature unit.
            '''

    Raises:
        ConfigError: see :class:`FunctionTool`.
    """
    if func is not None:
        return FunctionTool(
            func, name=name, description=description, requires_approval=requires_approval, timeout=timeout
        )

    def decorate(f: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(
            f, name=name, description=description, requires_approval=requires_approval, timeout=timeout
        )

    return decorate


def positive_seconds(option: str, value: object) -> float:
    """``value`` as a float number of seconds, checked: > 0 and finite.

    Raises:
        ConfigError: ``value`` is not such a number (the message names ``option``).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise ConfigError(f"{option} must be a number of seconds > 0, got {value!r}")
    return float(value)


def _approval(value: object, name: str) -> Approval:
    if isinstance(value, bool) or callable(value):
        return value
    raise ConfigError(
        f"tool {name!r}: requires_approval must be True, False or a function of the arguments, got {value!r}"
    )


def _tool_name(func: Callable[..., Any], name: str | None) -> str:
    if name is None:
        name = getattr(func, "__name__", None)
        if not isinstance(name, str):
            raise ConfigError(f"{func!r} has no __name__; pass name=...")
    if not TOOL_NAME.fullmatch(name):
        raise ConfigError(
            f"invalid tool name {name!r}: use 1 to 64 letters, digits, '_' or '-' (pass name=...)"
        )
    return name


def parse_arguments(text: str) -> dict[str, Any]:
    """A tool call's arguments (``ToolCall.input``, JSON text; blank means
    ``{}``, design.md fault 1) as a dict: the one parse the loop makes of
    them, which the approval check, the command's display and tracing share.

    Raises:
        ToolInputError: ``text`` is not valid JSON, is nested too deeply to
            decode, or is not a JSON object; the message is the error result
            the model gets (the tool is not run).
    """
    try:
        arguments = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise ToolInputError(
            f"the arguments are not valid JSON ({exc}); the tool was not run. "
            "Call it again with one JSON object."
        ) from None
    except RecursionError:
        raise ToolInputError("the arguments are nested too deeply to decode; the tool was not run.") from None
    if not isinstance(arguments, dict):
        raise ToolInputError(
            f"the arguments must be a JSON object, got {type(arguments).__name__}; the tool was not run."
        )
    return arguments


def is_tool_content(value: object) -> bool:
    """True when a tool's return value is content for :func:`tool_output`
    rather than data to encode as JSON: a :class:`~agentcore.types.File`, a
    :class:`~agentcore.types.ContentPart`, or a list or tuple holding at
    least one of them."""
    if isinstance(value, (File, ContentPart)):
        return True
    return isinstance(value, (list, tuple)) and any(isinstance(item, (File, ContentPart)) for item in value)


def tool_output(value: object) -> tuple[str, tuple[File, ...]]:
    """Split what a tool returned (:data:`ToolOutput`) into the result's text and files.

    A ``str`` is the text; a :class:`~agentcore.types.File` or a ``file``
    part is a file; a ``text`` part is text; a list or tuple of those gives
    its texts joined by newlines, and its files in order.

    Raises:
        TypeError: anything else (the message names the type); the loop
            turns it into an error result.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    texts: list[str] = []
    files: list[File] = []
    for item in items:
        if isinstance(item, ContentPart) and item.kind in (ContentPartKind.TEXT, ContentPartKind.FILE):
            item = item.file or item.text
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, File):
            files.append(item)
        else:
            what = type(item).__name__ + (" in a list" if item is not value else "")
            raise TypeError(f"the tool returned {what}, not str, a file part or a list of them.")
    return "\n".join(texts), tuple(files)


def takes_context(func: Callable[..., Any]) -> bool:
    """True when ``func`` can be called with two positional arguments (the
    second is then the run's :class:`Context`); also used by ``testing``."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)
