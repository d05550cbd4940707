"""The ``agentcore`` command: run the tool-use loop from a shell. This module
handles the command's arguments and environment (the only part of agentcore
that reads the environment) and runs the loop; which model runs is
:mod:`agentcore.integrations.cli_model`'s, what is printed
:mod:`agentcore.integrations.cli_output`'s.

Usage::

    agentcore [--model PROVIDER:MODEL] [--base-url URL] [--system TEXT]
              [--max-steps N] [--max-output-tokens N] [--temperature T]
              [--reasoning-effort LEVEL] [--thinking-budget N | --no-thinking]
              [--hide-reasoning] [--mcp COMMAND [--mcp-prefix PREFIX]]...
              [--mcp-url URL [--mcp-prefix PREFIX]]... [--json]
              [--file PATH [--file-type MEDIA/TYPE]]... [--output-schema FILE]
              [--history-policy SPEC]... [--context-window N]
              [--server-tool NAME]... [--timeout SECONDS] [--version] PROMPT...

The words of PROMPT are joined with spaces; ``-`` reads the prompt from
standard input. Each ``--file PATH`` attaches a file to the prompt (an
image, a PDF, a text file: :func:`agentcore.file_part_from_path`), its type
from the extension, or from a ``--file-type MEDIA/TYPE`` after it; a
file that cannot be read or whose type cannot be told is a usage error (exit
status 2), and one the provider does not take is refused before any request
(``docs/files.md``). The model may call four built-in demo tools
(:mod:`agentcore.integrations.demo_tools`): ``calculator``, ``utc_now``,
``word_count`` and ``color_swatch`` (which returns a small PNG). ``--mcp
COMMAND`` (split like a shell) and ``--mcp-url URL`` add the tools of an MCP
server (:class:`agentcore.integrations.mcp.MCPTools`), each with the tool
name prefix of a ``--mcp-prefix PREFIX`` after it (each of these applies to
the last ``--file``, or ``--mcp`` or ``--mcp-url``, before it).

Environment: ``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``
and ``OPENAI_BASE_URL`` choose the model (:func:`agentcore.integrations.cli_model.choose_model`);
``NO_COLOR`` (and ``TERM=dumb``) keep the reasoning plain on a terminal; an
MCP stdio server gets the locale variables
(:func:`agentcore.integrations.mcp.servers.server_environment`).

Model settings (each maps to a field of :class:`agentcore.ModelSettings`,
passed as the run's ``LoopOptions(settings=...)``; a flag not given leaves the
field unset, so the provider's default applies): ``--temperature T``,
``--reasoning-effort LEVEL`` (one of
:data:`agentcore.settings.REASONING_EFFORTS`), ``--thinking-budget N``
(``thinking=True, thinking_budget=N``: reason with at most N tokens a step)
and ``--no-thinking`` (``thinking=False``). ``--max-output-tokens N`` caps
each step's output (``LoopOptions.max_output_tokens``; a thinking budget
counts inside it on Anthropic). A setting the chosen provider's API does not
support is a usage error naming it (exit status 2), raised before any
request is sent.

``--output-schema FILE`` asks for a structured final answer matching the
JSON Schema in FILE (``LoopOptions(output_type=schema)``, see
``docs/structured-output.md``): the answer's text is not streamed, and
standard output carries only the validated answer, as indented JSON (with
``--json``, a last line ``{"kind": "output", "output": ...}``). An answer
that still fails validation after the retry ends the run in error (exit
status 1); a file that cannot be read or is not a JSON object, or a schema
that is not valid, is a usage error (exit status 2). The offline TestModel
answers with JSON generated from the schema.

``--history-policy SPEC`` keeps a long run's history inside the model's
context window (``LoopOptions(history_policy=...)``, ``docs/long-runs.md``);
repeated, the policies apply in the order given (:func:`build_policies`):
``clear-tool-results[:KEEP]`` (:class:`~agentcore.compaction.ClearOldToolResults`,
the last KEEP results stay, default 3), ``window[:MAX]``
(:class:`~agentcore.compaction.SlidingWindow`, default 0.8),
``summarize[:TRIGGER[:KEEP]]`` (:class:`~agentcore.compaction.Summarize` with
the run's model, default 0.8 and 10) and ``provider:TRIGGER``
(:class:`~agentcore.compaction.ProviderCompaction`: the provider compacts
itself past TRIGGER input tokens). A token figure with a decimal point
(``0.8``) is a share of the context window, in (0, 1]: of ``--context-window
N`` when given, else of the model's own; a whole number is tokens.
``--context-window N`` is also given to the model the command builds (the
adapters' ``context_window=``), so the policies and the step refused as too
long see that window; the offline TestModel has none (the shares are still
converted with N, and it never refuses a prompt as too long), and a model
given to :func:`main` keeps its own. Each time a
policy (or the provider's compaction) acts, one line on standard error says
so (``compaction: before step 12 · SlidingWindow removed 6 of 25 messages ·
...``); with ``--json`` it is a ``compaction`` object. A spec that cannot be
read is a usage error (exit status 2).

``--server-tool NAME`` (repeatable) asks the provider to run one of its own
tools (``docs/server-tools.md``): ``web_search``, ``web_fetch``,
``code_execution`` (:mod:`agentcore.server_tools`, their defaults), or
``file_search:ID[,ID...]`` with the vector store ids to search
(:func:`server_tool`). A tool the chosen provider's API lacks ends the run
before any request, as a usage error (exit status 2); the offline TestModel
runs none. The run asks the model for its tool calls' arguments as they
stream (``LoopOptions(stream_tool_input=True)``): a tool's name shows as
soon as the model starts the call. The sources the answer cited follow it on
standard error (``sources:``, then ``[1] Title https://...``).

``--timeout SECONDS`` bounds the whole run, retries, their waits and tool
calls included (``run(options, Context(timeout=SECONDS))``, counted from the
start of the run): when it passes the run is cancelled, as Ctrl-C cancels
it. Without it, the adapters' own timeouts bound each wait but not the run.

Exit status: 0 when the run finished (any finish reason: ``stop``,
``length``, ``step-limit``); 1 when it ended in error, with one line on
stderr (``agentcore: error: authentication failed: ... (HTTP 401)``); 2 for
usage errors (bad options, a missing API key for the chosen provider, a
setting the provider does not support); 124 (:data:`EXIT_TIMEOUT`, as
``timeout(1)`` uses) when ``--timeout`` passed, with one line on stderr
(``agentcore: timed out after 30 s (--timeout)``; with ``--json`` the last
object is the ``error`` part, ``"error_type": "DeadlineExceeded"``); 130
on Ctrl-C, which closes the reader (cancelling the run and its HTTP request)
and prints ``agentcore: interrupted``.

Seams for tests and embedding: :func:`main` takes ``argv``, a ready ``model``
(skipping provider selection), the ``env`` mapping to read, and the output
streams.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from agentcore import __version__
from agentcore.compaction import (
    ClearOldToolResults,
    HistoryPolicy,
    ProviderCompaction,
    SlidingWindow,
    Summarize,
)
from agentcore.context import Context
from agentcore.engine.channel import RunReader
from agentcore.engine.loop import run
from agentcore.errors import AgentcoreError, ConfigError, DeadlineExceeded
from agentcore.integrations.cli_model import (
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    build_model,
    choose_model,
)
from agentcore.integrations.cli_output import (
    Discard,
    JsonPrinter,
    TextPrinter,
    describe_error,
    one_line,
    open_or_discard,
    output_text,
    silence_stdout,
    tolerate_unencodable,
    write_line,
)
from agentcore.integrations.demo_tools import demo_tools
from agentcore.model import Model, window_of
from agentcore.options import LoopOptions
from agentcore.server_tools import CodeExecution, FileSearch, ServerTool, WebFetch, WebSearch
from agentcore.settings import REASONING_EFFORTS, ModelSettings
from agentcore.tools import Tool, ToolSet
from agentcore.types import StreamPart, StreamPartKind, file_part_from_path, user_message

if TYPE_CHECKING:
    from agentcore.integrations.mcp import MCPTools

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
"""The run passed ``--timeout`` (the status GNU ``timeout`` exits with)."""
EXIT_INTERRUPTED = 130

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "Attachment",
    "MCPServerOption",
    "UsageError",
    "build_parser",
    "build_policies",
    "build_settings",
    "main",
    "open_mcp_servers",
    "server_tool",
]


class UsageError(AgentcoreError):
    """The command line cannot be run as given (exit status 2)."""


@attrs.frozen
class Attachment:
    """A ``--file`` option: the path, and the media type a ``--file-type``
    after it gave (None: guessed from the extension)."""

    path: str
    media_type: str | None = None


@attrs.frozen
class MCPServerOption:
    """An ``--mcp`` (``kind`` ``"stdio"``, ``target`` a command line) or
    ``--mcp-url`` (``kind`` ``"http"``, ``target`` a URL) option, and the
    tool name prefix a ``--mcp-prefix`` after it gave (None: no prefix)."""

    kind: str
    target: str
    prefix: str | None = None


class _SetOnLast(argparse.Action):
    """An option that completes the last of another option given before it: sets
    ``field`` of the last entry of the list ``dest`` (``--file-type`` of a
    ``--file``, ``--mcp-prefix`` of an ``--mcp`` or ``--mcp-url``)."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, field: str, after: str, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, default=[], **kwargs)
        self.field = field
        self.after = after

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        entries = list(getattr(namespace, self.dest))
        if not entries:
            parser.error(f"{option_string} must follow {self.after}")
        last = entries[-1]
        if getattr(last, self.field) is not None:
            parser.error(f"{option_string} given twice for {self.after} {_target(last)}")
        entries[-1] = attrs.evolve(last, **{self.field: values})
        setattr(namespace, self.dest, entries)


def _target(entry: Attachment | MCPServerOption) -> str:
    return entry.path if isinstance(entry, Attachment) else entry.target


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None


def _timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def build_settings(args: argparse.Namespace) -> ModelSettings | None:
    """The run's :class:`ModelSettings` from the parsed options; None when no
    settings flag was given.

    Raises:
        ConfigError: a value :class:`ModelSettings` refuses (naming the field).
    """
    settings = ModelSettings(
        temperature=args.temperature,
        reasoning_effort=args.reasoning_effort,
        thinking=True if args.thinking_budget else args.thinking,
        thinking_budget=args.thinking_budget,
    )
    return settings if settings.set_fields() else None


SERVER_TOOL_FORMS = "web_search, web_fetch, code_execution or file_search:ID[,ID...]"
"""The names ``--server-tool`` takes."""


def server_tool(spec: str) -> ServerTool:
    """The server tool ``--server-tool`` names, with its defaults:
    ``web_search`` (:class:`~agentcore.server_tools.WebSearch`),
    ``web_fetch``, ``code_execution``, or ``file_search:ID[,ID...]``
    (:class:`~agentcore.server_tools.FileSearch` of those vector stores).

    Raises:
        argparse.ArgumentTypeError: another name, or ``file_search`` without ids.
    """
    name, _, ids = spec.partition(":")
    simple: dict[str, type[WebSearch | WebFetch | CodeExecution]] = {
        "web_search": WebSearch,
        "web_fetch": WebFetch,
        "code_execution": CodeExecution,
    }
    if name in simple and not ids:
        return simple[name]()
    stores = [store.strip() for store in ids.split(",") if store.strip()]
    if name == "file_search" and stores:
        return FileSearch(stores)
    raise argparse.ArgumentTypeError(f"{spec!r} is not one of {SERVER_TOOL_FORMS}")


POLICY_FORMS = "clear-tool-results[:KEEP], window[:MAX], summarize[:TRIGGER[:KEEP]] or provider:TRIGGER"
"""The short forms ``--history-policy`` takes."""


def build_policies(specs: Sequence[str], model: Model, context_window: int | None) -> list[HistoryPolicy]:
    """The history policies of ``--history-policy`` specs, in the order given.

    Args:
        specs: each spec, in one of the forms of :data:`POLICY_FORMS`.
        model: the run's model (``summarize`` writes its summary with it).
        context_window: ``--context-window``: a share (a figure with a
            decimal point, in (0, 1]) is of it; None: of the model's own window.

    Raises:
        UsageError: a spec that cannot be read, naming it and the forms.
        ConfigError: a value a policy refuses (naming the field): a share
            outside (0, 1] too, with or without ``context_window``.
    """

    window = context_window or window_of(model)

    def figure(text: str, spec: str) -> int | float:
        try:
            value: int | float = float(text) if "." in text else int(text)
        except ValueError:
            raise UsageError(
                f"--history-policy {spec}: {text!r} is not a number of tokens or a share"
            ) from None
        if isinstance(value, float) and window is None:
            raise UsageError(
                f"--history-policy {spec}: {text} is a share of the context window, which is not known for "
                f"{model.model_id}: give --context-window N, or a number of tokens"
            )
        if isinstance(value, float) and context_window is not None and 0 < value <= 1:
            return int(value * context_window)
        return value  # tokens, a share of the model's own window, or a figure the policy refuses

    policies: list[HistoryPolicy] = []
    for spec in specs:
        name, *values = spec.split(":")
        if name in _SHARE_DEFAULTS and not values:  # the policy's default share, of the window given
            values = [str(_SHARE_DEFAULTS[name])]
        counts = all(value.isdigit() for value in values)
        if name == "clear-tool-results" and len(values) <= 1 and counts:
            policies.append(ClearOldToolResults(*(int(value) for value in values)))
        elif name == "window" and len(values) == 1:
            policies.append(SlidingWindow(figure(values[0], spec)))
        elif name == "summarize" and 1 <= len(values) <= 2 and all(value.isdigit() for value in values[1:]):
            trigger = figure(values[0], spec)
            summarize = (
                Summarize(model, trigger) if len(values) == 1 else Summarize(model, trigger, int(values[1]))
            )
            policies.append(summarize)
        elif name == "provider" and len(values) == 1 and counts:
            policies.append(ProviderCompaction(trigger_tokens=int(values[0])))
        else:
            raise UsageError(f"--history-policy {spec!r} is not one of {POLICY_FORMS}")
    return policies


_SHARE_DEFAULTS = {
    "window": attrs.fields(SlidingWindow).max_tokens.default,
    "summarize": attrs.fields(Summarize).trigger_tokens.default,
}
"""The default shares of the context window of the policies whose first figure is one."""


def build_parser() -> argparse.ArgumentParser:
    """The command's argument parser."""
    parser = argparse.ArgumentParser(
        prog="agentcore",
        description=(
            "Run a streaming tool-use loop with built-in demo tools "
            "(calculator, utc_now, word_count, color_swatch). "
            "Without an API key it runs the offline TestModel."
        ),
        epilog=(
            "environment: ANTHROPIC_API_KEY, OPENAI_API_KEY (and ANTHROPIC_BASE_URL, OPENAI_BASE_URL); "
            "NO_COLOR=1 keeps the reasoning plain on a terminal. "
            "Model text goes to stdout; reasoning ('thinking: ...', dimmed on a terminal), tool calls, "
            "results and the final usage line go to stderr. "
            "Exit status: 0 finished, 1 run error, 2 usage error, 124 --timeout passed, 130 interrupted."
        ),
    )
    parser.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help=(
            "anthropic:NAME, openai:NAME (Chat Completions), openai-responses:NAME (the Responses API: "
            "OpenAI's reasoning models, reasoning kept across tool calls), azure:DEPLOYMENT or "
            "azure-responses:DEPLOYMENT (Azure OpenAI, with AZURE_OPENAI_API_KEY and "
            "AZURE_OPENAI_ENDPOINT), gemini:NAME (the Gemini API, with GOOGLE_API_KEY or "
            "GEMINI_API_KEY), vertex:NAME or vertex-anthropic:NAME (Gemini or Claude on Vertex AI, with "
            "Application Default Credentials, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), "
            "bedrock:MODEL_ID or bedrock-anthropic:MODEL_ID (Amazon Bedrock: Converse, or Claude through "
            "InvokeModel; AWS_REGION, with AWS_BEARER_TOKEN_BEDROCK or AWS credentials) or test "
            f"(default: anthropic:{DEFAULT_ANTHROPIC_MODEL} with "
            f"ANTHROPIC_API_KEY, else openai:{DEFAULT_OPENAI_MODEL} with OPENAI_API_KEY, else test)"
        ),
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="API root of a compatible server or gateway (e.g. http://localhost:11434/v1); "
        "the API key is then optional",
    )
    parser.add_argument("--system", metavar="TEXT", default="", help="system prompt")
    parser.add_argument(
        "--max-steps",
        metavar="N",
        type=_positive_int,
        default=None,
        help="most model steps (default: 20)",
    )
    parser.add_argument(
        "--max-output-tokens",
        metavar="N",
        type=_positive_int,
        default=None,
        help="most output tokens per step, reasoning included (default: the provider adapter's)",
    )
    parser.add_argument("--temperature", metavar="T", type=_number, help="sampling temperature")
    parser.add_argument(
        "--reasoning-effort",
        metavar="LEVEL",
        choices=REASONING_EFFORTS,
        help=f"how hard a reasoning model thinks: {', '.join(REASONING_EFFORTS)} "
        "(each provider takes some of them)",
    )
    thinking = parser.add_mutually_exclusive_group()
    thinking.add_argument(
        "--thinking-budget",
        metavar="N",
        type=_positive_int,
        help="turn the model's thinking on, with at most N tokens of it per step",
    )
    thinking.add_argument(
        "--no-thinking",
        dest="thinking",
        action="store_const",
        const=False,
        help="ask the model not to think (for models that think by default)",
    )
    parser.add_argument(
        "--hide-reasoning",
        action="store_true",
        help="do not show the model's reasoning (on stderr, or as --json objects); the model still reasons",
    )
    parser.add_argument(
        "--mcp",
        metavar="COMMAND",
        action="append",
        type=lambda line: MCPServerOption("stdio", line),
        default=[],
        dest="mcp_servers",
        help="also offer the tools of the MCP server this command line starts, over stdio (split like a "
        "shell: --mcp 'npx -y @modelcontextprotocol/server-everything'); repeatable; needs agentcore[mcp]",
    )
    parser.add_argument(
        "--mcp-url",
        metavar="URL",
        action="append",
        type=lambda url: MCPServerOption("http", url),
        default=[],
        dest="mcp_servers",
        help="also offer the tools of the MCP server at this streamable HTTP URL; repeatable; "
        "needs agentcore[mcp]",
    )
    parser.add_argument(
        "--mcp-prefix",
        metavar="PREFIX",
        action=_SetOnLast,
        dest="mcp_servers",
        field="prefix",
        after="--mcp or --mcp-url",
        help="put PREFIX before the tool names of the last --mcp or --mcp-url server before it "
        "(up to 63 letters, digits, '_' or '-'), to tell servers apart or avoid a clash",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per stream part (JSON Lines)"
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        action="append",
        type=Attachment,
        default=[],
        dest="files",
        help="attach a file to the prompt (an image, a PDF, a text file; the type from its extension); "
        "repeatable",
    )
    parser.add_argument(
        "--file-type",
        metavar="MEDIA/TYPE",
        action=_SetOnLast,
        dest="files",
        field="media_type",
        after="--file",
        help="the media type of the last --file before it (e.g. application/pdf), "
        "for a name whose extension does not tell it",
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE",
        help="ask for a final answer matching the JSON Schema in FILE; standard output then carries only "
        "the validated answer, as JSON",
    )
    parser.add_argument(
        "--history-policy",
        metavar="SPEC",
        action="append",
        default=[],
        dest="history_policies",
        help=f"keep a long run's history inside the context window: {POLICY_FORMS}; a figure with a decimal "
        "point is a share of the context window, a whole number tokens; repeatable (applied in order)",
    )
    parser.add_argument(
        "--context-window",
        metavar="N",
        type=_positive_int,
        help="the model's context window in tokens, given to the model and which the --history-policy "
        "shares are of (default: the model's own, when agentcore knows it)",
    )
    parser.add_argument(
        "--server-tool",
        metavar="NAME",
        action="append",
        type=server_tool,
        default=[],
        dest="server_tools",
        help=f"ask the provider to run one of its own tools: {SERVER_TOOL_FORMS}; repeatable "
        "(a tool the provider lacks is a usage error)",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=_timeout_seconds,
        help="end the run after SECONDS, retries and tool calls included (exit status 124); "
        "default: no limit on the whole run",
    )
    parser.add_argument("--version", action="version", version=f"agentcore {__version__}")
    parser.add_argument("prompt", nargs="+", metavar="PROMPT", help="the prompt; '-' reads it from stdin")
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    model: Model | None = None,
    tools: Sequence[Tool] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command and return its exit status.

    Args:
        argv: the arguments (without the program name); ``sys.argv[1:]`` by default.
        model: a model to run instead of the one the options and environment
            choose (for tests and embedding); ``--model`` is then ignored,
            and the model keeps its own context window (``--context-window``
            still converts the shares).
        tools: the tools to offer instead of the demo tools (for tests and
            embedding); the tools of ``--mcp`` servers are added to them.
        env: the environment; ``os.environ`` by default.
        stdin, stdout, stderr: the streams; ``sys``'s by default.

    Returns:
        0 finished, 1 run error, 2 usage error, 124 timed out, 130 interrupted.
    """
    out = open_or_discard(stdout if stdout is not None else sys.stdout)
    err = open_or_discard(stderr if stderr is not None else sys.stderr)
    tolerate_unencodable(out, err)
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    environ = env if env is not None else os.environ
    ctx = Context()  # cancelled on Ctrl-C even when it lands before run() returned its reader
    reader: RunReader | None = None
    servers: list[MCPTools] = []
    terminal: StreamPart | None = None
    show = not args.hide_reasoning
    structured = args.output_schema is not None
    printer = (
        JsonPrinter(out, reasoning=show)
        if args.json
        else TextPrinter(Discard() if structured else out, err, reasoning=show, color=_color(err, environ))
    )
    try:
        prompt = " ".join(args.prompt)
        if prompt == "-":
            prompt = (stdin if stdin is not None else sys.stdin).read()
        if not prompt.strip():
            raise UsageError("the prompt is empty")
        for name, text in (("prompt", prompt), ("--system text", args.system)):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(f"the {name} is not valid UTF-8 text") from None
        attached = []
        for file in args.files:
            try:
                attached.append(file_part_from_path(file.path, file.media_type))
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot attach {file.path}: {exc}") from None
        schema = _read_schema(args.output_schema) if structured else None
        if model is None:
            choice = choose_model(args.model, args.base_url, environ)
            if choice.notice:
                write_line(err, choice.notice)
            model = build_model(attrs.evolve(choice, context_window=args.context_window))
        policies = build_policies(args.history_policies, model, args.context_window)
        servers = open_mcp_servers(args.mcp_servers, environ)
        options = LoopOptions(
            model=model,
            messages=[user_message(prompt, *attached)],
            system=args.system,
            tools=_with_servers([*(demo_tools() if tools is None else tools), *args.server_tools], servers),
            step_limit=args.max_steps,
            max_output_tokens=args.max_output_tokens,
            settings=build_settings(args),
            output_type=schema,
            history_policy=policies,
            stream_tool_input=True,
        )
        reader = run(options, ctx if args.timeout is None else Context(timeout=args.timeout, parent=ctx))
        for part in reader:
            if part.terminal:
                terminal = part
                printer.cost = reader.cost
            printer.part(part)
        printer.end()
        if structured and terminal is not None and terminal.kind is StreamPartKind.FINISH:
            write_line(out, output_text(reader.result().output, json_lines=args.json))
    except KeyboardInterrupt:
        ctx.cancel()
        if reader is not None:
            reader.close()
        printer.interrupted()
        write_line(err, "agentcore: interrupted")
        return EXIT_INTERRUPTED
    except UsageError as exc:
        write_line(err, f"agentcore: error: {one_line(str(exc))}")
        return EXIT_USAGE
    except BrokenPipeError:
        if reader is not None:
            reader.close()
        silence_stdout(out)
        return EXIT_ERROR
    except ConfigError as exc:  # a bad option value: the model choice, a model's constructor, ModelSettings,
        # LoopOptions, an MCP server's prefix or URL
        write_line(err, f"agentcore: error: {one_line(str(exc))}")
        return EXIT_USAGE
    except AgentcoreError as exc:  # MCPServerError: an MCP server cannot be started or reached
        write_line(err, f"agentcore: error: {one_line(str(exc))}")
        return EXIT_ERROR
    except OSError as exc:  # the output cannot be written (a full disk, a closed file)
        if reader is not None:
            reader.close()
        with contextlib.suppress(OSError, ValueError):
            write_line(err, f"agentcore: error: cannot write the output: {one_line(str(exc))}")
        silence_stdout(out)
        return EXIT_ERROR
    finally:
        if reader is not None:
            reader.close()
        for server in servers:
            server.close()
    if terminal is None:
        write_line(err, "agentcore: error: the run ended without a finish or error part")
        return EXIT_ERROR
    if terminal.kind is StreamPartKind.FINISH:
        return EXIT_OK
    failure = terminal.err
    if args.timeout is not None and isinstance(failure, DeadlineExceeded):
        write_line(err, f"agentcore: timed out after {args.timeout:g} s (--timeout)")
        return EXIT_TIMEOUT
    if isinstance(failure, KeyboardInterrupt):
        write_line(err, "agentcore: interrupted")
        return EXIT_INTERRUPTED
    write_line(err, f"agentcore: error: {describe_error(failure)}")
    # A ConfigError ending the run is the model refusing an option (a setting its API lacks).
    return EXIT_USAGE if isinstance(failure, ConfigError) else EXIT_ERROR


def _read_schema(path: str) -> dict[str, object]:
    """The JSON Schema in ``path`` (``--output-schema``).

    Raises:
        UsageError: the file cannot be read, is not JSON, or is not a JSON object.
    """
    try:
        with open(path, encoding="utf-8") as file:
            schema = json.load(file)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the output schema {path}: {exc}") from None
    if not isinstance(schema, dict):
        raise UsageError(f"the output schema in {path} must be a JSON object, got {type(schema).__name__}")
    return schema


def open_mcp_servers(servers: Sequence[MCPServerOption], env: Mapping[str, str]) -> list[MCPTools]:
    """The MCP servers of ``--mcp`` and ``--mcp-url``, opened in the order
    given: a command line is split as a POSIX shell would (:func:`shlex.split`)
    and started with :meth:`~agentcore.integrations.mcp.MCPTools.stdio`, with
    the SDK's allowlist and, from ``env``, the locale
    (:func:`~agentcore.integrations.mcp.servers.server_environment`); a URL is
    connected with :meth:`~agentcore.integrations.mcp.MCPTools.http`. The MCP
    package, and with it the SDK, is imported only when a server is given.
    The SDK's own log records (it logs failures that it then raises, and the
    command reports those on one line) are kept off the terminal unless its
    ``mcp`` logger was given a handler.

    Raises:
        UsageError: the MCP SDK is not installed, or a command line is empty
            or cannot be split (an unclosed quote).
        ConfigError: a URL is not http(s), or a prefix is not valid.
        MCPServerError: a server cannot be started or reached; the ones
            opened before it are closed first.
    """
    if not servers:
        return []
    try:
        from agentcore.integrations.mcp import MCPTools
        from agentcore.integrations.mcp.servers import server_environment
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    sdk_log = logging.getLogger("mcp")
    if not sdk_log.handlers:
        sdk_log.addHandler(logging.NullHandler())
        sdk_log.propagate = False
    stdio_env = server_environment(env)
    opened: list[MCPTools] = []
    try:
        for server in servers:
            prefix = server.prefix or ""
            if server.kind == "http":
                opened.append(MCPTools.http(server.target, prefix=prefix))
                continue
            try:
                words = shlex.split(server.target)
            except ValueError as exc:
                raise UsageError(
                    f"cannot split the MCP server command line {server.target!r}: {exc}"
                ) from None
            if not words:
                raise UsageError("an MCP server command line is empty")
            opened.append(MCPTools.stdio(words[0], words[1:], env=stdio_env, prefix=prefix))
    except BaseException:
        for tools in opened:
            tools.close()
        raise
    return opened


def _with_servers(tools: list[Tool | ServerTool], servers: list[MCPTools]) -> ToolSet:
    """The tools (server tools among them) joined with the MCP servers'
    tools (a name clash is a ConfigError naming both)."""
    if not servers:
        return ToolSet(tools)
    from agentcore.integrations.mcp import combine

    return combine(tools, *servers)


def _color(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Whether to dim the reasoning: ``stream`` is a terminal, ``NO_COLOR`` is
    unset or empty (https://no-color.org/) and ``TERM`` is not ``dumb``."""
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # a closed stream
        return False
