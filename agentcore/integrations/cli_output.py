"""What the ``agentcore`` command prints, and how it treats its output streams.

Standard output carries only the model's text, streamed as it
arrives (a line break is added where a step's text is followed by tool calls,
and at the end), so it can be piped. Everything else goes to standard error:
the TestModel notice, the model's reasoning as it streams (each block
starting with ``thinking: ``, dimmed with ANSI escapes when standard error is
a terminal, plain when it is not or when ``NO_COLOR`` is set; a block with no
visible text, redacted or encrypted by the provider, shows as ``thinking:
(not shown by the provider)``), each tool call (``→ calculator({"expression":
"6 * 7"})``: the tool's name and ``(`` as soon as the model starts the
call, the arguments once they are whole), each tool result (``← 42``;
shown on one line, long results cut), one line each time a history policy or the provider's own compaction
acted (``compaction: before step 12 · SlidingWindow removed 6 of 25
messages · 9,120 → 6,480 tokens (estimated)``, :func:`compaction_text`;
``compaction: before step 12 · Summarize changed no message · usage: ...``
when a policy's model call cost usage but changed nothing;
``compaction: the provider compacted the context in step 12``), each
server tool's call and result as the provider ran them (``server tool:
web_search {"query": "..."}``, from :attr:`agentcore.ProviderItem.text`;
further lines indented), a line when the provider paused its turn and the
loop continues it (``paused: the provider paused its turn in step 2; it
goes on``), a line when a step cut off by the output limit or the content
filter left its tool calls unrun (``the step was cut off (content-filter):
its tool calls did not run``), the sources the answer cited, after it (``sources:`` then one numbered line per
source, each once: ``[1] Example Domain https://example.com/``,
:func:`sources_text`), and a last line with the finish reason and the total
usage (``finish: stop · usage: input 120, output 30, cache read 0, cache
write 0``, then ``, web searches 2`` and the like for each server-tool
count that is not 0, then `` · cost: $0.000630`` when the run's cost is
known: :attr:`agentcore.RunResult.cost`, ``docs/controls.md``).
``--hide-reasoning`` leaves the reasoning out (of ``--json`` too); the model
still reasons (``--no-thinking`` asks it not to).

``--json`` prints one JSON object per stream part on standard output (JSON
Lines) and nothing else there:

* ``{"kind": "text-delta", "text": ...}``
* ``{"kind": "reasoning-delta", "text": ...}`` (reasoning as it streams)
* ``{"kind": "reasoning", "reasoning": {"text", "signature", "data", "id",
  "format", "origin", "provider_data"}}`` (one whole block, as
  :meth:`agentcore.Reasoning.to_dict` writes it: ``text`` always, the other
  fields when set)
* ``{"kind": "tool-call-delta", "tool_call": {"id", "name", "input"}}``
  (``input``: the next fragment of the call's arguments, as the model
  writes them; the whole ``tool-call`` follows)
* ``{"kind": "tool-call", "tool_call": {"id", "name", "input"}}`` (``input``
  is the arguments' JSON text, as the model sent it; ``provider_data`` and
  ``origin`` are added when set)
* ``{"kind": "citation", "citation": {"url", "title", "cited_text", "type",
  "data"}}`` (a source the text around it cites; a field that is "" is left
  out)
* ``{"kind": "provider-item", "provider_item": {"type", "data", "format",
  "origin", "text"}}`` (a server tool's call or result, or a compaction
  block, as the provider sent it)
* ``{"kind": "tool-result", "tool_result": {"tool_call_id", "name",
  "content", "is_error"}}`` (and ``files``, a description of each file, when
  the tool returned files)
* ``{"kind": "step-finish", "finish_reason": ..., "usage": {...}}``
* ``{"kind": "compaction", "compaction": {"policy", "removed", "messages_before",
  "messages_after", "tokens_before", "tokens_after", "summary", "usage",
  "refused"}}`` (a history policy changed the history before the next step;
  with ``removed`` empty and ``messages_after`` equal to ``messages_before``
  it changed nothing and ``usage`` is what its model call cost)
* ``{"kind": "finish", "finish_reason": ..., "total_usage": {...}}``
* ``{"kind": "error", "finish_reason": "error" | "canceled", "total_usage":
  {...}, "err": str(err), "error_type": "ModelError", "error_class":
  "auth" | ... | null, "status": HTTP status or null, "retry_after": seconds
  or null}`` (the objects of :func:`agentcore.integrations.web.part_to_dict`)

The ``finish`` and ``error`` objects carry ``"cost"`` too when the run's
cost is known: US dollars as a decimal string (``"0.000630"``: exact, which
a JSON number is not).

Usage dicts are ``{"input", "output", "cache_read", "cache_write"}`` token
counts (normalized as design.md, "Usage", says), plus each server-tool count
that is not 0 (``web_search_requests``, ``web_fetch_requests``,
``code_execution_requests``, ``file_search_requests``). The TestModel notice
and error lines still go to standard error.

With ``--output-schema``, standard output carries only the validated answer
(:func:`output_text`).

:class:`TextPrinter` writes the human-readable output and :class:`JsonPrinter`
the JSON Lines (the :func:`agentcore.integrations.web.part_to_dict` objects a
browser gets too). :func:`describe_error`, :func:`usage_text`,
:func:`cache_text`, :func:`call_text` and :func:`result_text` are the one-line
forms they share with the command's error lines. :func:`open_or_discard`,
:func:`tolerate_unencodable` and :func:`silence_stdout` keep a closed stream,
a terminal's narrow encoding and a closed pipe from failing the command.
Nothing here reads the environment or chooses a model.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from decimal import Decimal
from typing import TextIO

from agentcore.caching import CacheReport
from agentcore.errors import AgentcoreError
from agentcore.integrations.web import part_to_dict
from agentcore.tools import ToolInputError, parse_arguments
from agentcore.types import (
    Citation,
    Compaction,
    FinishReason,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
    Usage,
)

_MAX_RESULT_CHARS = 300
"""Tool results longer than this are cut in the human-readable output."""


def describe_error(err: BaseException | None) -> str:
    """One line describing a run's error: agentcore's own errors by their
    message (``authentication failed: ... (HTTP 401)``), others prefixed with
    their type."""
    if err is None:
        return "unknown error"
    message = one_line(str(err))
    if isinstance(err, AgentcoreError):
        return message or type(err).__name__
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) as one space."""
    return " ".join(text.split())


def write_line(stream: TextIO, text: str) -> None:
    """Write ``text`` and a line break, and flush."""
    stream.write(text + "\n")
    stream.flush()


def usage_text(usage: Usage) -> str:
    """``input 120, output 30, cache read 0, cache write 0`` (token counts),
    then each server-tool count that is not 0 (``, web searches 2``)."""
    line = (
        f"input {usage.input}, output {usage.output}, "
        f"cache read {usage.cache_read}, cache write {usage.cache_write}"
    )
    for label, count in (
        ("web searches", usage.web_search_requests),
        ("web fetches", usage.web_fetch_requests),
        ("code executions", usage.code_execution_requests),
        ("file searches", usage.file_search_requests),
    ):
        if count:
            line += f", {label} {count}"
    return line


def sources_text(citations: list[Citation]) -> list[str]:
    """The lines that list the sources ``citations`` name: ``sources:``,
    then ``[1] Title https://url`` per source, numbered in the order first
    cited, each once (a source is its URL, or its title when it has no URL:
    a file or a document); a citation with neither is left out. No line for
    no source."""
    seen: dict[str, Citation] = {}
    for citation in citations:
        key = citation.url or citation.title
        if key and key not in seen:
            seen[key] = citation
    if not seen:
        return []
    lines = ["sources:"]
    for number, citation in enumerate(seen.values(), 1):
        named = " ".join(one_line(field) for field in (citation.title, citation.url) if field)
        lines.append(f"[{number}] {named}")
    return lines


def cache_text(step: int, usage: Usage, report: CacheReport | None) -> str | None:
    """``cache: step 2 · read 1,800 of 2,012 prompt tokens (89%) · wrote 200``:
    a step's cache reads as a share of its prompt (input, cache reads
    included, plus the tokens written to the cache), then the cache miss
    reason when there is one (:attr:`agentcore.caching.CacheReport.reason`).
    None for a step that neither read nor wrote the cache and was no miss
    (a provider without caching, the offline models): nothing to show."""
    miss = report is not None and report.miss
    if not (usage.cache_read or usage.cache_write or miss):
        return None
    prompt = usage.input + usage.cache_write
    share = usage.cache_read * 100 // prompt if prompt else 0
    line = f"cache: step {step} · read {usage.cache_read:,} of {prompt:,} prompt tokens ({share}%)"
    if usage.cache_write:
        line += f" · wrote {usage.cache_write:,}"
    if report is not None and report.miss:
        line += f" · miss: {report.reason}"
    return line


def compaction_text(step: int, compaction: Compaction) -> str:
    """``compaction: before step 12 · SlidingWindow removed 6 of 25 messages ·
    9,120 → 6,480 tokens (estimated)``: what a history policy did before a
    step (``removed``, ``replaced ... with a summary``, or ``rewrote``); a
    summary call's usage follows, and ``after the provider refused the
    prompt as too long`` when that is why the policy ran. A record of a
    policy's usage only: ``compaction: before step 12 · Summarize changed no
    message · usage: input 160, ...``."""
    before, after = compaction.messages_before, compaction.messages_after
    if not compaction.changed:
        line = f"compaction: before step {step} · {compaction.policy} changed no message · usage: "
        line += usage_text(compaction.usage)
    else:
        if compaction.summary:
            what = f"replaced {before - after + 1} of {before} messages with a summary"
        elif after < before:
            what = f"removed {before - after} of {before} messages"
        else:
            what = f"rewrote {len(compaction.removed)} of {before} messages"
        line = (
            f"compaction: before step {step} · {compaction.policy} {what} · "
            f"{compaction.tokens_before:,} → {compaction.tokens_after:,} tokens (estimated)"
        )
        if compaction.summary:
            line += f" · summary call usage: {usage_text(compaction.usage)}"
    if compaction.refused:
        line += " · after the provider refused the prompt as too long"
    return line


def call_text(call: ToolCall) -> str:
    """``→ calculator({"expression": "6 * 7"})``: the arguments re-serialized on one line
    (as received when they are not a JSON object, or nest too deeply to encode again)."""
    try:
        arguments = json.dumps(parse_arguments(call.input), ensure_ascii=False)
    except (ToolInputError, RecursionError):
        arguments = one_line(call.input)
    return f"→ {call.name}({arguments})"


def result_text(result: ToolResult) -> str:
    """``← 42``: the result on one line (line breaks shown as ``\\n``), cut after 300 characters,
    then each file the tool returned as ``[image/png, 1,234 bytes]``."""
    content = result.content.replace("\r\n", "\n").replace("\n", "\\n")
    if len(content) > _MAX_RESULT_CHARS:
        rest = len(content) - _MAX_RESULT_CHARS
        content = f"{content[:_MAX_RESULT_CHARS]}… ({rest} more characters)"
    files = [
        f"[{f.media_type}: {f.url}]" if f.url else f"[{f.media_type}, {f.size:,} bytes]" for f in result.files
    ]
    return "← " + " ".join([content, *files] if content else files)


THINKING = "thinking: "
"""What starts each reasoning block on standard error."""
HIDDEN_REASONING = "(not shown by the provider)"
"""Shown for a reasoning block that carries no visible text (redacted or encrypted)."""
DIM, PLAIN = "\x1b[2m", "\x1b[0m"
"""The ANSI escapes around reasoning on a terminal: faint, then back to normal."""

_REASONING_KINDS = (StreamPartKind.REASONING_DELTA, StreamPartKind.REASONING)


class TextPrinter:
    """Human-readable output: text on ``out``, everything else on ``err``.

    Reasoning goes to ``err`` as it streams: each block on its own line(s)
    after :data:`THINKING`, wrapped in :data:`DIM` / :data:`PLAIN` per write
    when ``color`` is set; a block that arrives whole (no ``reasoning-delta``
    before it) is written at once, :data:`HIDDEN_REASONING` when it has no text.

    Args:
        out: where the model's text goes.
        err: where everything else goes.
        reasoning: show the model's reasoning (False: skip it).
        color: dim the reasoning with ANSI escapes (for a terminal).
    """

    def __init__(self, out: TextIO, err: TextIO, *, reasoning: bool = True, color: bool = False) -> None:
        self.out = out
        self.err = err
        self.reasoning = reasoning
        self.color = color
        self.mid_line = False
        self.thinking = False
        """A reasoning line is open on ``err``."""
        self.thinking_mid_line = False
        self.streamed = False
        """Reasoning deltas were shown since the last reasoning part: that block is on screen."""
        self.steps = 0
        self.cost: Decimal | None = None
        """The run's cost, shown on the finish line (the command sets it before the terminal part)."""
        self.citations: list[Citation] = []
        """The run's citations, listed after the answer."""
        self.call_open: str | None = None
        """The id of the call whose line (``→ name(``) is open on ``err``,
        waiting for its arguments."""
        self.announced: set[str] = set()
        """The ids of the step's calls whose name was shown from a ``tool-call-delta``."""
        self.step_calls = 0
        """The tool calls shown in the step being streamed."""

    def _break_line(self) -> None:
        self._end_call()
        self._end_thinking()
        if self.mid_line:
            self.out.write("\n")
            self.out.flush()
            self.mid_line = False

    def _end_call(self) -> None:
        """Close a call's line left open for its arguments (something else came first)."""
        if self.call_open is not None:
            self.err.write("\n")
            self.err.flush()
            self.call_open = None

    def _call_started(self, call: ToolCall) -> None:
        """A call's first ``tool-call-delta``: show its name at once."""
        if call.id in self.announced:
            return
        self.announced.add(call.id)
        self._break_line()
        self.err.write(f"→ {call.name}(")
        self.err.flush()
        self.call_open = call.id

    def _call(self, call: ToolCall) -> None:
        """A whole call: complete its open line, or write the line."""
        self.step_calls += 1
        line = call_text(call)
        head = f"→ {call.name}("
        if self.call_open == call.id and line.startswith(head):
            self.call_open = None
            write_line(self.err, line[len(head) :])
            return
        self._break_line()
        write_line(self.err, line)

    def _end_thinking(self) -> None:
        if self.thinking:
            if self.thinking_mid_line:
                self.err.write("\n")
                self.err.flush()
            self.thinking = False

    def _think(self, text: str) -> None:
        """Write reasoning ``text`` on ``err``, opening a ``thinking:`` line first if none is open."""
        if not self.thinking:
            self._break_line()
            text = THINKING + text
            self.thinking = True
        self.err.write(f"{DIM}{text}{PLAIN}" if self.color else text)
        self.err.flush()
        self.thinking_mid_line = not text.endswith("\n")

    def part(self, part: StreamPart) -> None:
        kind = part.kind
        if self.call_open is not None and (part.tool_call is None or part.tool_call.id != self.call_open):
            self._end_call()
        if kind is StreamPartKind.TEXT_DELTA:
            if part.text:
                self._end_thinking()
                self.out.write(part.text)
                self.out.flush()
                self.mid_line = not part.text.endswith("\n")
        elif kind in _REASONING_KINDS:
            if self.reasoning:
                self._reasoning(part)
        elif kind is StreamPartKind.TOOL_CALL_DELTA and part.tool_call is not None:
            self._call_started(part.tool_call)
        elif kind is StreamPartKind.TOOL_CALL and part.tool_call is not None:
            self._call(part.tool_call)
        elif kind is StreamPartKind.CITATION and part.citation is not None:
            self.citations.append(part.citation)
        elif kind is StreamPartKind.TOOL_RESULT and part.tool_result is not None:
            self._break_line()
            write_line(self.err, result_text(part.tool_result))
        elif kind is StreamPartKind.COMPACTION and part.compaction is not None:
            self._break_line()
            write_line(self.err, compaction_text(self.steps + 1, part.compaction))
        elif kind is StreamPartKind.PROVIDER_ITEM and part.provider_item is not None:
            item = part.provider_item
            if item.type == "compaction":
                self._break_line()
                step = self.steps + 1
                write_line(self.err, f"compaction: the provider compacted the context in step {step}")
            elif item.text:  # a server tool's call or result, as the provider ran it
                self._break_line()
                first, *rest = item.text.splitlines() or [""]
                write_line(self.err, "\n".join([f"server tool: {first}", *(f"  {line}" for line in rest)]))
        elif kind is StreamPartKind.STEP_FINISH:
            self._end_thinking()
            self.streamed = False
            self.announced.clear()  # a later step may use the same ids
            self.steps += 1
            cut = part.finish_reason
            if cut is FinishReason.PAUSED:
                self._break_line()
                write_line(self.err, f"paused: the provider paused its turn in step {self.steps}; it goes on")
            elif self.step_calls and cut in (FinishReason.LENGTH, FinishReason.CONTENT_FILTER):
                assert cut is not None
                self._break_line()
                write_line(self.err, f"the step was cut off ({cut.value}): its tool calls did not run")
            self.step_calls = 0
            line = cache_text(self.steps, part.usage, part.cache)
            if line is not None:
                self._break_line()
                write_line(self.err, line)
        elif kind is StreamPartKind.FINISH:
            self._break_line()
            self._sources()
            reason = part.finish_reason.value if part.finish_reason else "?"
            line = f"finish: {reason} · usage: {usage_text(part.total_usage)}"
            write_line(self.err, line if self.cost is None else f"{line} · cost: ${cost_text(self.cost)}")
        elif kind is StreamPartKind.ERROR:
            self._break_line()
            self._sources()

    def _sources(self) -> None:
        for line in sources_text(self.citations):
            write_line(self.err, line)
        self.citations = []

    def _reasoning(self, part: StreamPart) -> None:
        if part.kind is StreamPartKind.REASONING_DELTA:
            if part.text:
                self._think(part.text)
                self.streamed = True
            return
        if not self.streamed and part.reasoning is not None:  # a block that came whole
            self._think(part.reasoning.text or HIDDEN_REASONING)
        self._end_thinking()
        self.streamed = False

    def end(self) -> None:
        self._break_line()

    def interrupted(self) -> None:
        self._break_line()


class JsonPrinter:
    """``--json`` output: one JSON object per part on ``out`` (without the
    ``reasoning-delta`` and ``reasoning`` parts when ``reasoning`` is False)."""

    def __init__(self, out: TextIO, *, reasoning: bool = True) -> None:
        self.out = out
        self.reasoning = reasoning
        self.cost: Decimal | None = None
        """The run's cost, on the terminal part's object (the command sets it before that part)."""

    def part(self, part: StreamPart) -> None:
        if self.reasoning or part.kind not in _REASONING_KINDS:
            data = part_to_dict(part)
            if part.terminal and self.cost is not None:
                data["cost"] = cost_text(self.cost)
            write_line(self.out, json.dumps(data, ensure_ascii=False))

    def end(self) -> None:
        pass

    def interrupted(self) -> None:
        pass


def cost_text(cost: Decimal) -> str:
    """US dollars in plain decimal notation, every digit kept (``"0.0000045"``, never ``"4.5E-6"``)."""
    return format(cost, "f")


def output_text(output: object, *, json_lines: bool) -> str:
    """The validated structured answer as the command prints it: indented
    JSON, or with ``--json`` (``json_lines``) one more line,
    ``{"kind": "output", "output": ...}``."""
    if json_lines:
        return json.dumps({"kind": "output", "output": output}, ensure_ascii=False)
    return json.dumps(output, ensure_ascii=False, indent=2)


class Discard(io.StringIO):
    """A stream that drops what is written: for a stream the process was
    started without, or text that is not shown (``--output-schema``)."""

    def write(self, text: str) -> int:
        return len(text)


def open_or_discard(stream: TextIO | None) -> TextIO:
    """``stream``, or a :class:`Discard` when the process was started with it closed (None)."""
    return stream if stream is not None else Discard()


def tolerate_unencodable(*streams: TextIO) -> None:
    """Print characters the terminal's encoding lacks as escapes instead of failing."""
    for stream in streams:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            with contextlib.suppress(ValueError, OSError):  # a stream that cannot change it
                reconfigure(errors="backslashreplace")


def silence_stdout(out: TextIO) -> None:
    """After a broken pipe, point the process's stdout at devnull so the exit
    flush does not fail again (when ``out`` is ``sys.stdout``)."""
    if out is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        finally:
            os.close(devnull)
