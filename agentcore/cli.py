"""The ``agentcore`` command: run the tool-use loop from a shell.

Usage::

    agentcore [--model PROVIDER:MODEL] [--base-url URL] [--system TEXT]
              [--max-steps N] [--max-output-tokens N] [--temperature T]
              [--reasoning-effort LEVEL] [--thinking-budget N | --no-thinking]
              [--hide-reasoning] [--mcp COMMAND]... [--mcp-url URL]...
              [--json] [--file PATH]... [--output-schema FILE]
              [--timeout SECONDS] [--version] PROMPT...

The words of PROMPT are joined with spaces; ``-`` reads the prompt from
standard input. Each ``--file PATH`` attaches a file to the prompt (an
image, a PDF, a text file: :func:`agentcore.file_part_from_path`, its type
from the extension); a file that cannot be read or whose type cannot be told
is a usage error (exit status 2), and one the provider does not take is
refused before any request (``docs/files.md``). The model may call four
built-in demo tools (:mod:`agentcore.integrations.demo_tools`): ``calculator``, ``utc_now``,
``word_count`` and ``color_swatch`` (which returns a small PNG).

Choosing the model (this module is the only part of agentcore that reads the
environment):

* ``--model anthropic:NAME`` uses the Anthropic Messages API and needs
  ``ANTHROPIC_API_KEY``; ``--model openai:NAME`` uses OpenAI Chat Completions
  and ``--model openai-responses:NAME`` the OpenAI Responses API (for OpenAI's
  reasoning models: their reasoning is kept across tool calls), both with
  ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. A bare provider name means its
  default model (:data:`DEFAULT_ANTHROPIC_MODEL`, :data:`DEFAULT_OPENAI_MODEL`,
  :data:`DEFAULT_OPENAI_RESPONSES_MODEL`).
* With ``--base-url`` the key is optional (sent when set): point ``openai:``
  at any compatible server (``--model openai:llama3.2 --base-url
  http://localhost:11434/v1`` for Ollama), or ``anthropic:`` at a gateway.
  Without it, ``ANTHROPIC_BASE_URL`` / ``OPENAI_BASE_URL`` are used when set,
  as the vendor SDKs do.
* Without ``--model``: Anthropic's default model when ``ANTHROPIC_API_KEY`` is
  set, else OpenAI's when ``OPENAI_API_KEY`` is set, else (and with no
  ``--base-url``) the offline :class:`agentcore.testing.TestModel` (with
  ``reasoning=True``: it thinks one sentence before each step), which is
  announced in one line on stderr. ``--model test`` always picks TestModel.
* An empty variable counts as unset.

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

Output: standard output carries only the model's text, streamed as it
arrives (a line break is added where a step's text is followed by tool calls,
and at the end), so it can be piped. Everything else goes to standard error:
the TestModel notice, the model's reasoning as it streams (each block
starting with ``thinking: ``, dimmed with ANSI escapes when standard error is
a terminal, plain when it is not or when ``NO_COLOR`` is set; a block with no
visible text, redacted or encrypted by the provider, shows as ``thinking:
(not shown by the provider)``), each tool call (``→ calculator({"expression":
"6 * 7"})``), each tool result (``← 42``; shown on one line, long results
cut), and a last line with the finish reason and the total usage (``finish:
stop · usage: input 120, output 30, cache read 0, cache write 0``).
``--hide-reasoning`` leaves the reasoning out (of ``--json`` too); the model
still reasons (``--no-thinking`` asks it not to).

``--output-schema FILE`` asks for a structured final answer matching the
JSON Schema in FILE (``LoopOptions(output_type=schema)``, see
``docs/structured-output.md``): the answer's text is not streamed, and
standard output carries only the validated answer, as indented JSON (with
``--json``, a last line ``{"kind": "output", "output": ...}``). An answer
that still fails validation after the retry ends the run in error (exit
status 1); a file that cannot be read or is not a JSON object, or a schema
that is not valid, is a usage error (exit status 2). The offline TestModel
answers with JSON generated from the schema.

``--json`` prints one JSON object per stream part on standard output (JSON
Lines) and nothing else there:

* ``{"kind": "text-delta", "text": ...}``
* ``{"kind": "reasoning-delta", "text": ...}`` (reasoning as it streams)
* ``{"kind": "reasoning", "reasoning": {"text", "signature", "data", "id",
  "format", "origin", "provider_data"}}`` (one whole block, as
  :meth:`agentcore.Reasoning.to_dict` writes it: ``text`` always, the other
  fields when set)
* ``{"kind": "tool-call", "tool_call": {"id", "name", "input"}}`` (``input``
  is the arguments' JSON text, as the model sent it; ``provider_data`` and
  ``origin`` are added when set)
* ``{"kind": "tool-result", "tool_result": {"tool_call_id", "name",
  "content", "is_error"}}`` (and ``files``, a description of each file, when
  the tool returned files)
* ``{"kind": "step-finish", "finish_reason": ..., "usage": {...}}``
* ``{"kind": "finish", "finish_reason": ..., "total_usage": {...}}``
* ``{"kind": "error", "finish_reason": "error" | "canceled", "total_usage":
  {...}, "err": str(err), "error_type": "ModelError", "error_class":
  "auth" | ... | null, "status": HTTP status or null, "retry_after": seconds
  or null}`` (the objects of :func:`agentcore.integrations.web.part_to_dict`)

Usage dicts are ``{"input", "output", "cache_read", "cache_write"}`` token
counts (normalized as design.md, "Usage", says). The TestModel notice and error lines
still go to standard error.

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
streams; :func:`choose_model` is the pure provider decision and
:func:`build_model` constructs the adapter. The output formats above are
written by :mod:`agentcore.integrations.cli_output`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import attrs

from agentcore import __version__
from agentcore.context import Context
from agentcore.engine.loop import run
from agentcore.errors import AgentcoreError, ConfigError, DeadlineExceeded
from agentcore.integrations.cli_output import (
    JsonPrinter,
    TextPrinter,
    describe_error,
    one_line,
    write_line,
)
from agentcore.integrations.demo_tools import demo_tools
from agentcore.model import Model
from agentcore.options import LoopOptions
from agentcore.result import RunReader
from agentcore.settings import REASONING_EFFORTS, ModelSettings
from agentcore.types import StreamPart, StreamPartKind, file_part_from_path, user_message

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
"""The model ``anthropic`` (without a name), or no ``--model`` with ``ANTHROPIC_API_KEY``, uses."""
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""The model ``openai`` (without a name), or no ``--model`` with only ``OPENAI_API_KEY``, uses."""

DEFAULT_OPENAI_RESPONSES_MODEL = "gpt-5-mini"
"""The model ``openai-responses`` (without a name) uses."""

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 124
"""The run passed ``--timeout`` (the status GNU ``timeout`` exits with)."""
EXIT_INTERRUPTED = 130

PROVIDERS = ("anthropic", "openai", "openai-responses", "test")
_KEY_VARS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}
_BASE_URL_VARS = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "openai-responses": "OPENAI_BASE_URL",
}
_DEFAULT_MODELS = {
    "anthropic": DEFAULT_ANTHROPIC_MODEL,
    "openai": DEFAULT_OPENAI_MODEL,
    "openai-responses": DEFAULT_OPENAI_RESPONSES_MODEL,
    "test": "test-model",
}

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_OPENAI_RESPONSES_MODEL",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "PROVIDERS",
    "ModelChoice",
    "UsageError",
    "build_model",
    "build_parser",
    "build_settings",
    "choose_model",
    "main",
]


class UsageError(AgentcoreError):
    """The command line cannot be run as given (exit status 2)."""


@attrs.frozen
class ModelChoice:
    """Which model the command runs, as decided by :func:`choose_model`.

    Attributes:
        provider: ``"anthropic"``, ``"openai"``, ``"openai-responses"`` or ``"test"``.
        model: the model id.
        base_url: the API root, or None for the provider's default.
        api_key: the key to send ("" for none); never shown in ``repr``.
        notice: a line for stderr about the choice (the TestModel notice), or "".
    """

    provider: str
    model: str
    base_url: str | None = None
    api_key: str = attrs.field(default="", repr=False)
    notice: str = ""


def _env(env: Mapping[str, str], name: str) -> str:
    return env.get(name, "").strip()


def choose_model(spec: str | None, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    """Decide the provider, model, base URL and key (see the module docstring).

    Args:
        spec: the ``--model`` value, or None.
        base_url: the ``--base-url`` value, or None.
        env: the environment to read the keys (and base URLs) from.

    Returns:
        The choice; nothing is constructed and no network is touched.

    Raises:
        UsageError: an unknown provider, an empty model name, or a missing key
            for an explicitly chosen provider.
    """
    if spec is None:
        for provider in ("anthropic", "openai"):
            if _env(env, _KEY_VARS[provider]):
                return _provider_choice(provider, _DEFAULT_MODELS[provider], base_url, env)
        if base_url:
            raise UsageError(
                "--base-url needs --model anthropic:NAME or openai:NAME to say which API the server speaks"
            )
        return ModelChoice(
            provider="test",
            model=_DEFAULT_MODELS["test"],
            notice=(
                "agentcore: no ANTHROPIC_API_KEY or OPENAI_API_KEY set; using the offline TestModel "
                "(see --help to use a real model)"
            ),
        )
    provider, _, name = spec.partition(":")
    provider = provider.strip().lower()
    name = name.strip()
    if provider not in PROVIDERS:
        raise UsageError(
            f"--model must be anthropic:MODEL, openai:MODEL, openai-responses:MODEL or test, got {spec!r} "
            f"(unknown provider {provider!r})"
        )
    if provider == "test":
        if base_url:
            raise UsageError("--base-url does not apply to the offline test model")
        return ModelChoice(provider="test", model=name or _DEFAULT_MODELS["test"])
    if ":" in spec and not name:
        raise UsageError(f"--model {spec!r} names no model; use {provider}:MODEL or just {provider}")
    return _provider_choice(provider, name or _DEFAULT_MODELS[provider], base_url, env)


def _provider_choice(provider: str, model: str, base_url: str | None, env: Mapping[str, str]) -> ModelChoice:
    key_var = _KEY_VARS[provider]
    key = _env(env, key_var)
    if base_url is None:
        base_url = _env(env, _BASE_URL_VARS[provider]) or None
    if not key and not base_url:
        raise UsageError(
            f"--model {provider}:{model} needs the {key_var} environment variable "
            f"(or --base-url for a server that needs no key)"
        )
    return ModelChoice(provider=provider, model=model, base_url=base_url, api_key=key)


def build_model(choice: ModelChoice) -> Model:
    """Construct the model a :class:`ModelChoice` names (no network is touched).

    The provider modules are imported here, so the offline path needs neither.
    """
    if choice.provider == "anthropic":
        from agentcore.providers.anthropic import AnthropicModel

        if choice.base_url:
            return AnthropicModel(choice.model, api_key=choice.api_key, base_url=choice.base_url)
        return AnthropicModel(choice.model, api_key=choice.api_key)
    if choice.provider == "openai":
        from agentcore.providers.openai import OpenAIChatModel

        key = choice.api_key or None
        if choice.base_url:
            return OpenAIChatModel(choice.model, api_key=key, base_url=choice.base_url)
        return OpenAIChatModel(choice.model, api_key=key)
    if choice.provider == "openai-responses":
        from agentcore.providers.openai import OpenAIResponsesModel

        key = choice.api_key or None
        if choice.base_url:
            return OpenAIResponsesModel(choice.model, api_key=key, base_url=choice.base_url)
        return OpenAIResponsesModel(choice.model, api_key=key)
    from agentcore.testing import TestModel

    return TestModel(model_id=choice.model, reasoning=True)


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
            "OpenAI's reasoning models, reasoning kept across tool calls) or test "
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
        default=0,
        help="most model steps (default: 20)",
    )
    parser.add_argument(
        "--max-output-tokens",
        metavar="N",
        type=_positive_int,
        default=0,
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
        default=[],
        help="also offer the tools of the MCP server this command line starts, over stdio (split like a "
        "shell: --mcp 'npx -y @modelcontextprotocol/server-everything'); repeatable; needs agentcore[mcp]",
    )
    parser.add_argument(
        "--mcp-url",
        metavar="URL",
        action="append",
        default=[],
        help="also offer the tools of the MCP server at this streamable HTTP URL; repeatable; "
        "needs agentcore[mcp]",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per stream part (JSON Lines)"
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        action="append",
        default=[],
        dest="files",
        help="attach a file to the prompt (an image, a PDF, a text file; the type from its extension); "
        "repeatable",
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE",
        help="ask for a final answer matching the JSON Schema in FILE; standard output then carries only "
        "the validated answer, as JSON",
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
    env: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run the command and return its exit status.

    Args:
        argv: the arguments (without the program name); ``sys.argv[1:]`` by default.
        model: a model to run instead of the one the options and environment
            choose (for tests and embedding); ``--model`` is then ignored.
        env: the environment; ``os.environ`` by default.
        stdin, stdout, stderr: the streams; ``sys``'s by default.

    Returns:
        0 finished, 1 run error, 2 usage error, 124 timed out, 130 interrupted.
    """
    out = _open_or_devnull(stdout if stdout is not None else sys.stdout)
    err = _open_or_devnull(stderr if stderr is not None else sys.stderr)
    _tolerate_unencodable(out, err)
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    environ = env if env is not None else os.environ
    ctx = Context()  # cancelled on Ctrl-C even when it lands before run() returned its reader
    reader: RunReader | None = None
    servers: list[Any] = []  # agentcore.integrations.mcp.MCPTools, when --mcp or --mcp-url is given
    terminal: StreamPart | None = None
    show = not args.hide_reasoning
    structured = args.output_schema is not None
    printer = (
        JsonPrinter(out, reasoning=show)
        if args.json
        else TextPrinter(_Discard() if structured else out, err, reasoning=show, color=_color(err, environ))
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
        for path in args.files:
            try:
                attached.append(file_part_from_path(path))
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot attach {path}: {exc}") from None
        schema = _read_schema(args.output_schema) if structured else None
        if model is None:
            choice = choose_model(args.model, args.base_url, environ)
            if choice.notice:
                write_line(err, choice.notice)
            model = build_model(choice)
        servers = open_mcp_servers(args.mcp, args.mcp_url, environ)
        options = LoopOptions(
            model=model,
            messages=[user_message(prompt, *attached)],
            system=args.system,
            tools=_with_servers(demo_tools(), servers),
            step_limit=args.max_steps,
            max_output_tokens=args.max_output_tokens,
            settings=build_settings(args),
            output_type=schema,
        )
        reader = run(options, ctx if args.timeout is None else Context(timeout=args.timeout, parent=ctx))
        for part in reader:
            printer.part(part)
            if part.terminal:
                terminal = part
        printer.end()
        if structured and terminal is not None and terminal.kind is StreamPartKind.FINISH:
            answer = reader.result().output
            line = (
                json.dumps({"kind": "output", "output": answer}, ensure_ascii=False)
                if args.json
                else json.dumps(answer, ensure_ascii=False, indent=2)
            )
            write_line(out, line)
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
        _silence_stdout(out)
        return EXIT_ERROR
    except ConfigError as exc:  # from a model's constructor, ModelSettings or LoopOptions: a bad option value
        write_line(err, f"agentcore: error: {one_line(str(exc))}")
        return EXIT_USAGE
    except AgentcoreError as exc:  # mcp.MCPServerError: an MCP server cannot be started or reached
        write_line(err, f"agentcore: error: {one_line(str(exc))}")
        return EXIT_ERROR
    except OSError as exc:  # the output cannot be written (a full disk, a closed file)
        if reader is not None:
            reader.close()
        with contextlib.suppress(OSError, ValueError):
            write_line(err, f"agentcore: error: cannot write the output: {one_line(str(exc))}")
        _silence_stdout(out)
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


def open_mcp_servers(commands: Sequence[str], urls: Sequence[str], env: Mapping[str, str]) -> list[Any]:
    """The MCP servers of ``--mcp`` and ``--mcp-url``, opened
    (:func:`agentcore.integrations.mcp.open_servers`); a stdio server gets the SDK's
    allowlist and, from ``env``, the locale (:func:`agentcore.integrations.mcp.server_environment`).
    ``agentcore.integrations.mcp``, and with it the MCP SDK, is imported only when one is given.
    The SDK's own log records (it logs failures that it then raises, and the
    command reports those on one line) are kept off the terminal unless its
    ``mcp`` logger was given a handler.

    Raises:
        UsageError: the MCP SDK is not installed.
        ConfigError: a command line cannot be split, or a URL is not http(s).
        MCPServerError: a server cannot be started or reached.
    """
    if not commands and not urls:
        return []
    try:
        from agentcore.integrations import mcp
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    sdk_log = logging.getLogger("mcp")
    if not sdk_log.handlers:
        sdk_log.addHandler(logging.NullHandler())
        sdk_log.propagate = False
    return mcp.open_servers(commands, urls, env=mcp.server_environment(env))


def _with_servers(tools: Any, servers: list[Any]) -> Any:
    """The demo tools joined with the servers' tools (a name clash is a ConfigError naming both)."""
    if not servers:
        return tools
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


class _Discard(io.StringIO):
    """Where output goes when the process was started with that stream closed."""

    def write(self, text: str) -> int:
        return len(text)


def _open_or_devnull(stream: TextIO | None) -> TextIO:
    """The stream, or a sink that discards, when the process was started with it closed."""
    return stream if stream is not None else _Discard()


def _tolerate_unencodable(*streams: TextIO) -> None:
    """Print characters the terminal's encoding lacks as escapes instead of failing."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot change it
                reconfigure(errors="backslashreplace")


def _silence_stdout(out: TextIO) -> None:
    """After a broken pipe, point stdout at devnull so the exit flush does not fail again."""
    if out is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)
