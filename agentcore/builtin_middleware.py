"""The middleware agentcore ships (:mod:`agentcore.middleware` has the protocol).

* :class:`RedactionMiddleware` takes patterns out of what the model is sent
  and out of tool results.
* :class:`LoggingMiddleware` logs one line per model call and per tool call,
  with its duration, on the ``agentcore.middleware`` logger; never the
  content unless asked.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from agentcore.context import Context
from agentcore.errors import ConfigError, ModelError
from agentcore.middleware import Middleware, ModelNext, ToolNext
from agentcore.types import (
    ContentPart,
    ContentPartKind,
    Message,
    Request,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolResult,
)

REDACTED = "[REDACTED]"
"""What :class:`RedactionMiddleware` puts in place of a match by default."""

_log = logging.getLogger("agentcore.middleware")


class RedactionMiddleware(Middleware):
    """Take patterns out of every prompt and every tool result.

    Before each model call (each attempt) the request's system prompt and the
    text of its messages (text parts and tool results; reasoning blocks,
    which the provider signs, and tool call arguments stay as they are) are
    redacted: the model never sees a match. Each tool result is redacted as
    it comes from the tool (before a ``tool_result`` guardrail, the reader and
    the history see it), so the run's history keeps the redacted text and a
    later run sends nothing the pattern matched. The caller's own messages
    stay in the history as given (design.md, loop rule 9: a run never edits
    the caller's data) and are redacted in each request.

    Args:
        *patterns: regular expressions (a ``str`` or a compiled pattern):
            each match becomes ``replacement``; or callables taking a text
            and returning it redacted. Applied in order.
        replacement: what a regular expression's match becomes (``\\1``
            references work as in ``re.sub``).

    Raises:
        TypeError: a pattern is neither a string, a compiled pattern nor a callable.
        re.error: a string is not a valid regular expression.
    """

    def __init__(
        self, *patterns: str | re.Pattern[str] | Callable[[str], str], replacement: str = REDACTED
    ) -> None:
        self.rules: list[Callable[[str], str]] = []
        for pattern in patterns:
            if isinstance(pattern, (str, re.Pattern)):
                self.rules.append(functools.partial(re.compile(pattern).sub, replacement))
            elif callable(pattern):
                self.rules.append(pattern)
            else:
                raise TypeError(
                    f"RedactionMiddleware takes regular expressions or callables, got {pattern!r}"
                )

    def redact(self, text: str) -> str:
        """``text`` with every pattern taken out."""
        for rule in self.rules:
            text = rule(text)
        return text

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        messages = tuple(self._message(message) for message in request.messages)
        system = self.redact(request.system)
        changed = system != request.system or any(
            new is not old for new, old in zip(messages, request.messages, strict=True)
        )
        return call_next(attrs.evolve(request, system=system, messages=messages) if changed else request, ctx)

    def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
        return self._result(call_next(call, ctx))

    def _result(self, result: ToolResult) -> ToolResult:
        content = self.redact(result.content)
        return result if content == result.content else attrs.evolve(result, content=content)

    def _message(self, message: Message) -> Message:
        parts = tuple(self._part(part) for part in message.content)
        if all(new is old for new, old in zip(parts, message.content, strict=True)):
            return message
        return attrs.evolve(message, content=parts)

    def _part(self, part: ContentPart) -> ContentPart:
        if part.kind is ContentPartKind.TEXT and part.text:
            text = self.redact(part.text)
            return part if text == part.text else attrs.evolve(part, text=text)
        if part.tool_result is not None:
            result = self._result(part.tool_result)
            return part if result is part.tool_result else attrs.evolve(part, tool_result=result)
        return part


class LoggingMiddleware(Middleware):
    """Log each model call and each tool call, one line each, with its duration.

    A model call's line (when its ``step-finish`` arrives, or when it fails)
    gives the number of messages sent, the seconds from the request to the end of its stream,
    the finish reason and the input and output tokens; a tool call's gives
    the tool, the call id, the seconds it took and whether it failed. The
    content (the step's text, the call's arguments and result) is logged
    only with ``content=True``: it may hold what a log must not.

    Args:
        logger: where the lines go: a ``logging.Logger`` or a logger's name;
            None: ``logging.getLogger("agentcore.middleware")``
            (a child of the ``agentcore`` logger).
        level: the level of a successful call's line (a failed call's is WARNING).
        content: log the content too.
    """

    def __init__(
        self, *, logger: logging.Logger | str | None = None, level: int = logging.INFO, content: bool = False
    ) -> None:
        if isinstance(logger, str):
            logger = logging.getLogger(logger)
        elif logger is not None and not isinstance(logger, logging.Logger):
            raise ConfigError(f"logger must be a logging.Logger, a logger's name or None, got {logger!r}")
        self.logger = logger or _log
        self.level = level
        self.content = content

    def wrap_model(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterable[StreamPart]:
        return self._logged(request, ctx, call_next)

    def _logged(self, request: Request, ctx: Context, call_next: ModelNext) -> Iterator[StreamPart]:
        start = time.monotonic()
        texts: list[str] = []
        try:
            for part in call_next(request, ctx):
                if part.kind is StreamPartKind.TEXT_DELTA and self.content:
                    texts.append(part.text)
                elif part.kind is StreamPartKind.STEP_FINISH:
                    usage = part.usage
                    reason = part.finish_reason.value if part.finish_reason else "?"
                    extra: tuple[Any, ...] = ()
                    line = "agentcore: model call (%s): %.3f s, finish %s, %d input, %d output tokens"
                    if self.content:
                        line += ", text %r"
                        extra = ("".join(texts),)
                    self.logger.log(
                        self.level,
                        line,
                        _messages(request),
                        time.monotonic() - start,
                        reason,
                        usage.input,
                        usage.output,
                        *extra,
                    )
                yield part
        except Exception as exc:
            self.logger.warning(
                "agentcore: model call (%s) failed after %.3f s: %s",
                _messages(request),
                time.monotonic() - start,
                exc if isinstance(exc, ModelError) else type(exc).__name__,  # its class and status
            )
            raise

    def wrap_tool(self, call: ToolCall, ctx: Context, call_next: ToolNext) -> ToolResult:
        start = time.monotonic()
        try:
            result = call_next(call, ctx)
        except Exception as exc:
            self.logger.warning(
                "agentcore: tool %s (call %s) raised after %.3f s: %s",
                call.name,
                call.id,
                time.monotonic() - start,
                type(exc).__name__,
            )
            raise
        line = "agentcore: tool %s (call %s): %.3f s, %s"
        extra: tuple[Any, ...] = ()
        if self.content:
            line += ", arguments %s, result %r"
            extra = (call.input, result.content)
        self.logger.log(
            self.level if not result.is_error else logging.WARNING,
            line,
            call.name,
            call.id,
            time.monotonic() - start,
            "error" if result.is_error else "ok",
            *extra,
        )
        return result


def _messages(request: Request) -> str:
    """``1 message``, ``3 messages``: the size of a request's history."""
    count = len(request.messages)
    return f"{count} message" + ("" if count == 1 else "s")
