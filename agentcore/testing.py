"""Test doubles that need no network, and a conformance check for any ``Model``.

* :class:`ScriptedModel` answers call N with ``steps[N]``:
  an iterable of :class:`StreamPart` of any kind a model emits, reasoning
  parts included, replayed as given (an exception instance inside it is
  raised at that point), an exception instance to raise, or a callable taking
  the :class:`Request` (and, if it accepts two arguments, the context) and
  returning such an iterable. It records every request in ``.requests``.
* :class:`TestModel` plays a model offline: it calls every offered tool once
  with arguments generated from the tool's JSON Schema (streaming them as
  ``tool-call-delta`` parts first when the request asks,
  ``Request.stream_tool_input``), then answers with
  text built from the tool results (or, when the request asks for
  structured output, JSON generated from its schema), reporting plausible
  usage; with ``reasoning=True`` it first reasons one sentence per step.
* :func:`check_model` runs a model against the ``Model`` MUST rules.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from agentcore.context import Context
from agentcore.engine.step import STEP_REASONS
from agentcore.errors import Canceled, ModelError
from agentcore.files import File
from agentcore.history import check_history
from agentcore.tools import ToolInputError, parse_arguments, takes_context
from agentcore.types import (
    FinishReason,
    Reasoning,
    Request,
    Role,
    StreamPart,
    StreamPartKind,
    ToolCall,
    ToolDefinition,
    Usage,
)

ScriptStep = (
    Iterable[StreamPart | BaseException] | BaseException | Callable[..., Iterable[StreamPart | BaseException]]
)
"""What :class:`ScriptedModel` answers one call with."""


class ScriptExhausted(AssertionError):
    """A :class:`ScriptedModel` was called more often than it has steps."""


class ScriptedModel:
    """A ``Model`` that replays canned steps; call N gets ``steps[N]``.

    Args:
        steps: one entry per expected call (see the module docstring).
        model_id: what :attr:`model_id` reports.
        base_url: the API root the model stands for (``"https://api.anthropic.com"``),
            so that its steps are priced as that provider's ``model_id``
            (:mod:`agentcore.cost`); None: its steps have no price.

    Attributes:
        requests: every :class:`Request` received, in call order.

    Raises (from ``stream``):
        ScriptExhausted: more calls than steps.
        Canceled: the context was cancelled between parts.
    """

    def __init__(
        self, steps: Sequence[ScriptStep], *, model_id: str = "scripted", base_url: str | None = None
    ) -> None:
        self.steps = list(steps)
        self.requests: list[Request] = []
        self._model_id = model_id
        self.base_url = base_url
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self.steps)} steps, {len(self.requests)} calls)"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
        if index >= len(self.steps):
            steps = f"{len(self.steps)} step" + ("" if len(self.steps) == 1 else "s")
            raise ScriptExhausted(f"ScriptedModel got call {index + 1} but has only {steps}")
        entry = self.steps[index]
        if isinstance(entry, BaseException):
            raise entry
        if callable(entry):
            entry = entry(request, ctx) if takes_context(entry) else entry(request)
        items = iter(entry)
        try:
            for item in items:
                ctx.check()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            # Release a scripted generator at once (its ``finally`` runs), even
            # when an exception's traceback keeps this frame alive.
            close = getattr(items, "close", None)
            if close is not None:
                close()


DELTA_CHARS = 16
"""The longest fragment of a call's arguments in :class:`TestModel`'s
``tool-call-delta`` parts."""


def _tokens(text: str) -> int:
    """A rough token count: one token per four characters, at least one."""
    return max(1, (len(text) + 3) // 4)


class TestModel:
    """An offline model for demos and tests.

    Step 1 (when tools are offered and the conversation does not end with tool
    results): one call to each tool, arguments generated from its JSON Schema
    (``examples``, ``default``, ``const`` or ``enum`` first, then a value of the
    schema's type; arrays follow ``prefixItems``, ``items``, ``minItems`` and
    ``maxItems``, so tuple parameters work), finish reason ``tool-calls``.
    Otherwise: a text answer that quotes the last tool results (or the last
    user message), with the count, types and sizes of the files a tool
    returned or the last user message holds (``(You attached 1 file:
    image/png, 1,234 bytes.)``), streamed word by word, finish reason
    ``stop``; when the request asks for structured output
    (``Request.output``), the answer is instead a value generated from that
    schema (:func:`example_value`), as JSON text. Usage
    counts about four characters a token.
    Stateless, so one instance may serve concurrent runs. A history every
    provider would refuse (a tool call without its result, a result with no
    call, ...) is a :class:`~agentcore.ConfigError` before any part, as the
    adapters raise it (:func:`agentcore.history.check_history`),
    so a test with ``TestModel`` catches it. A history holding another
    model's provider items (compaction blocks, :class:`~agentcore.ProviderItem`)
    is taken as it is: they are not the answer, nor quoted in it. It runs
    no server tool (``Request.server_tools`` is not looked at). With
    ``Request.stream_tool_input`` each call's arguments come first as
    ``tool-call-delta`` parts of up to :data:`DELTA_CHARS` characters,
    which joined are the call's ``input``.

    Args:
        model_id: what :attr:`model_id` reports.
        reasoning: think before each step, as a reasoning model does: one
            short sentence saying what the step will do, streamed word by word
            as ``reasoning-delta`` parts, then one ``reasoning`` part holding
            it (``Reasoning(text=..., format="test")``), before the step's tool
            calls or text. A request whose settings turn thinking off
            (``ModelSettings(thinking=False)`` or ``reasoning_effort="none"``)
            gets no reasoning. Its tokens count as output.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, *, model_id: str = "test-model", reasoning: bool = False) -> None:
        self._model_id = model_id
        self._reasoning = reasoning

    @property
    def model_id(self) -> str:
        return self._model_id

    def __repr__(self) -> str:
        reasoning = ", reasoning=True" if self._reasoning else ""
        return f"TestModel(model_id={self._model_id!r}{reasoning})"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        ctx.check()
        check_history(request.messages)  # what every provider would refuse, refused here too
        prompt = json.dumps([m.to_dict() for m in request.messages]) + request.system
        usage_in = _tokens(prompt) + sum(_tokens(t.input_schema) for t in request.tools)
        last = request.messages[-1] if request.messages else None
        calling = bool(request.tools) and (last is None or last.role is not Role.TOOL)
        thought = _thought(request, calling) if self._thinks(request) else ""
        thinking = _tokens(thought) if thought else 0
        if thought:
            for piece in _words(thought):
                ctx.check()
                yield StreamPart.reasoning_delta(piece)
            yield StreamPart.reasoning_event(Reasoning(text=thought, format="test"))
        if calling:
            calls = [
                ToolCall(id=f"call_{i + 1}", name=t.name, input=json.dumps(example_input(t)))
                for i, t in enumerate(request.tools)
            ]
            for call in calls:
                ctx.check()
                if request.stream_tool_input:
                    for start in range(0, len(call.input), DELTA_CHARS):
                        yield StreamPart.tool_call_delta(
                            call.id, call.name, call.input[start : start + DELTA_CHARS]
                        )
                yield StreamPart.tool_call_event(call)
            out = thinking + sum(_tokens(c.name + c.input) for c in calls)
            yield StreamPart.step_finish(FinishReason.TOOL_CALLS, Usage(input=usage_in, output=out))
            return
        if request.output is not None:
            text = json.dumps(example_value(json.loads(request.output.schema)), ensure_ascii=False)
        else:
            text = _answer(request)
        for piece in _words(text):
            ctx.check()
            yield StreamPart.text_delta(piece)
        yield StreamPart.step_finish(
            FinishReason.STOP, Usage(input=usage_in, output=thinking + _tokens(text))
        )

    def _thinks(self, request: Request) -> bool:
        settings = request.settings
        off = settings is not None and (settings.thinking is False or settings.reasoning_effort == "none")
        return self._reasoning and not off


def _words(text: str) -> list[str]:
    """``text`` in word-sized pieces (each after the first keeps its leading space)."""
    words = text.split(" ")
    return words[:1] + [" " + word for word in words[1:]]


def _thought(request: Request, calling: bool) -> str:
    """The one sentence :class:`TestModel` reasons before a step."""
    if calling:
        names = [t.name for t in request.tools]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        each = "it once" if len(names) == 1 else "each of them once"
        return f"I can use {listed}; I will call {each} and answer from the results."
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role is Role.TOOL:
        return "The tools have answered; I will report what they said."
    return "No tool is needed; I will repeat the message."


def _answer(request: Request) -> str:
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role is Role.TOOL:
        lines = [
            f"{r.name} {'failed' if r.is_error else 'returned'}: {r.content}{_files_note(r.files, ' with ')}"
            for r in last.tool_results
        ]
        answer = "Here is what the tools said. " + " ".join(lines)
    else:
        said = last.text if last is not None else ""
        answer = f"(TestModel, offline) You said: {said}" if said else "(TestModel, offline) Hello."
    asked = next((m for m in reversed(request.messages) if m.role is Role.USER), None)
    return answer + (
        f" ({_files_note(asked.files, 'You attached ')}.)" if asked is not None and asked.files else ""
    )


def _files_note(files: Sequence[File], lead: str) -> str:
    """``lead`` then the files' count, types and sizes (``2 files: image/png,
    1,234 bytes; application/pdf by URL``); "" for no files."""
    if not files:
        return ""
    each = [f"{f.media_type} by URL" if f.url else f"{f.media_type}, {f.size:,} bytes" for f in files]
    count = "1 file" if len(files) == 1 else f"{len(files)} files"
    return f"{lead}{count}: {'; '.join(each)}"


def example_input(definition: ToolDefinition) -> dict[str, Any]:
    """Arguments for ``definition`` generated from its JSON Schema."""
    value = example_value(json.loads(definition.input_schema))
    return value if isinstance(value, dict) else {}


def example_value(schema: Any) -> Any:
    """A value that satisfies simple JSON Schemas (no ``$ref``).

    An array gets one value per ``prefixItems`` entry (each from its own
    subschema; a tuple's schema), else one item, more to reach ``minItems``
    (from ``items``), cut to ``maxItems`` and, with ``items: false``, to the
    prefix. A string with a ``format`` agentcore's types use (``date-time``,
    ``date``, ``time``, ``uuid``) or another common one (``email``, ``uri``)
    is a valid one of that format; with a ``pattern``, the first of a few
    short candidates that matches it.
    """
    if not isinstance(schema, dict):
        return None
    for key in ("examples", "enum"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return options[0]
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return example_value(options[0])
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: example_value(sub) for name, sub in props.items()}
    if kind == "array":
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        rest = schema.get("items", {})
        count = max(len(prefix) or 1, int(schema.get("minItems", 0)))
        if rest is False:
            count = min(count, len(prefix))
        longest = schema.get("maxItems")
        if isinstance(longest, int):
            count = min(count, longest)
        return [example_value(prefix[i] if i < len(prefix) else rest) for i in range(count)]
    if kind in ("integer", "number"):
        return _example_number(schema, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    known = _FORMAT_EXAMPLES.get(schema.get("format", ""))
    if known is not None:
        return known
    word = "example"
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        word = next((c for c in _PATTERN_CANDIDATES if _matches(pattern, c)), word)
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    if isinstance(shortest, int) and shortest > len(word):
        word = word + "x" * (shortest - len(word))
    if isinstance(longest, int) and longest < len(word):
        word = word[: max(longest, 0)]
    return word


_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}
_PATTERN_CANDIDATES = ("example", "1", "0", "a", "A", "1.5", "abc123", "")


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


def _example_number(schema: dict[str, Any], *, integer: bool) -> int | float:
    """1 (integer) or 1.5 (number), moved into ``minimum``/``maximum`` and
    their exclusive forms when the schema has them."""
    value: float = 1 if integer else 1.5
    low, high = schema.get("minimum"), schema.get("maximum")
    low_x, high_x = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low_x, (int, float)) and not isinstance(low_x, bool):
        value = max(value, math.floor(low_x) + 1 if integer else low_x + 0.5)
    if isinstance(low, (int, float)) and not isinstance(low, bool):
        value = max(value, math.ceil(low) if integer else low)
    if isinstance(high_x, (int, float)) and not isinstance(high_x, bool):
        value = min(value, math.ceil(high_x) - 1 if integer else high_x - 0.5)
    if isinstance(high, (int, float)) and not isinstance(high, bool):
        value = min(value, math.floor(high) if integer else high)
    return int(value) if integer else float(value)


def check_model(model: Any, request: Request | None = None) -> None:
    """Check ``model`` against the ``Model`` seam's MUST rules.

    Runs one step of ``request`` (default: a one-line user message) and checks
    that it yields only :class:`StreamPart` objects, exactly one
    ``step-finish`` as the last part with a step reason (stop, tool-calls,
    length, content-filter or paused), only ``text-delta``,
    ``reasoning-delta``, ``reasoning``, ``tool-call``, ``tool-call-delta``,
    ``citation`` and ``provider-item`` parts before it; whole tool calls with
    an id, a name and JSON-object arguments; ``tool-call-delta`` parts only
    when the request asks (``Request.stream_tool_input``), each before the
    ``tool-call`` part of its call (same id and name), whose ``input`` its
    fragments joined are exactly; ``reasoning`` parts that carry a non-empty
    :class:`Reasoning`; ``provider_data`` (of a reasoning block or a tool call)
    that is JSON text when set; no ``reasoning-delta`` after the step's last
    ``reasoning`` part (streamed reasoning must reach the history as a block);
    that nothing but ``ModelError`` or ``Canceled`` escapes; that closing the
    stream after its first part works; and that a cancelled context stops it
    with ``Canceled``.

    It calls ``model.stream`` three times (a whole step, a step closed after
    its first part, a cancelled context): a :class:`ScriptedModel` needs three
    steps for it.

    Raises:
        AssertionError: listing every rule broken.
    """
    from agentcore.types import user_message

    req = request or Request(messages=(user_message("Say hello."),))
    problems: list[str] = []
    for attr in ("model_id", "stream"):
        if not hasattr(model, attr):
            problems.append(f"missing {attr}")
    if problems:
        raise AssertionError("; ".join(problems))
    try:
        problems.extend(_check_parts(list(model.stream(req, Context())), req))
    except (ModelError, Canceled) as exc:
        problems.append(f"the step failed: {exc}")
    except Exception as exc:  # noqa: BLE001 - reporting what escaped is the point
        problems.append(f"a {type(exc).__name__} escaped (only ModelError may): {exc}")
    stream = model.stream(req, Context())
    try:
        next(iter(stream), None)
    except (ModelError, Canceled):
        pass
    except Exception as exc:  # noqa: BLE001 - reporting what escaped is the point
        problems.append(f"a {type(exc).__name__} escaped (only ModelError may): {exc}")
    finally:
        close = getattr(stream, "close", None)
        if close is None:
            problems.append("the stream has no close(); make stream() a generator")
        else:
            close()
    cancelled = Context()
    cancelled.cancel()
    try:
        list(model.stream(req, cancelled))
        problems.append("a cancelled context did not stop the stream with Canceled")
    except Canceled:
        pass
    except Exception as exc:  # noqa: BLE001
        problems.append(f"a cancelled context raised {type(exc).__name__}, not Canceled")
    if problems:
        raise AssertionError("model breaks the Model contract: " + "; ".join(problems))


def _check_parts(parts: list[Any], request: Request) -> list[str]:
    if not parts:
        return ["the stream yielded no parts"]
    problems: list[str] = []
    if any(not isinstance(p, StreamPart) for p in parts):
        problems.append("yielded something that is not a StreamPart")
        return problems
    finishes = [p for p in parts if p.kind is StreamPartKind.STEP_FINISH]
    if len(finishes) != 1 or parts[-1].kind is not StreamPartKind.STEP_FINISH:
        problems.append(f"{len(finishes)} step-finish parts; exactly one, last, is required")
    elif finishes[0].finish_reason not in STEP_REASONS:
        reason = finishes[0].finish_reason
        problems.append(f"step-finish reason {reason.value if reason else None!r} is not a step reason")
    unfinished = False  # reasoning-delta parts not yet followed by a reasoning part
    streaming: dict[str, tuple[str, list[str]]] = {}  # call id: name, fragments so far
    for part in parts[:-1]:
        kind = part.kind
        if kind not in _MODEL_KINDS:
            problems.append(f"a model may not emit {kind.value!r} parts")
        if kind is StreamPartKind.TOOL_CALL_DELTA:
            problems.extend(_check_delta(part, request, streaming))
            continue
        if kind is StreamPartKind.REASONING_DELTA:
            unfinished = True
        elif kind is StreamPartKind.REASONING:
            unfinished = False
            problems.extend(_check_reasoning(part.reasoning))
        if part.tool_call is not None:
            call = part.tool_call
            if not call.id or not call.name:
                problems.append(f"tool call without id or name: {call!r}")
            try:
                parse_arguments(call.input)
            except ToolInputError as exc:
                problems.append(f"tool call {call.id!r}: {str(exc).partition(';')[0]}: {call.input[:80]!r}")
            problems.extend(_check_provider_data("tool call", call.provider_data))
            if call.id in streaming:
                name, fragments = streaming.pop(call.id)
                if name != call.name or "".join(fragments) != call.input:
                    problems.append(
                        f"tool call {call.id!r}: its tool-call-delta parts (name {name!r}, "
                        f"{''.join(fragments)[:80]!r}) are not its name and input"
                    )
    if streaming:
        problems.append(f"tool-call-delta parts of calls that never came whole: {sorted(streaming)}")
    if unfinished:
        problems.append(
            "reasoning-delta parts after the last reasoning part (that reasoning never reaches the history)"
        )
    return problems


_MODEL_KINDS = (
    StreamPartKind.TEXT_DELTA,
    StreamPartKind.REASONING_DELTA,
    StreamPartKind.REASONING,
    StreamPartKind.TOOL_CALL,
    StreamPartKind.TOOL_CALL_DELTA,
    StreamPartKind.CITATION,
    StreamPartKind.PROVIDER_ITEM,
)
"""The part kinds a model emits before its ``step-finish``."""


def _check_delta(
    part: StreamPart, request: Request, streaming: dict[str, tuple[str, list[str]]]
) -> list[str]:
    """Record a ``tool-call-delta`` part; the rules it breaks."""
    call = part.tool_call
    assert call is not None
    if not request.stream_tool_input:
        return [f"a tool-call-delta part (call {call.id!r}) for a request that did not ask for them"]
    name, fragments = streaming.setdefault(call.id, (call.name, []))
    fragments.append(call.input)
    if not call.id:
        return ["a tool-call-delta part without a call id"]
    return [] if name == call.name else [f"tool call {call.id!r}: its tool-call-delta parts name two tools"]


def _check_reasoning(reasoning: object) -> list[str]:
    if not isinstance(reasoning, Reasoning):
        return [f"a reasoning part carries {type(reasoning).__name__}, not a Reasoning"]
    r = reasoning
    if not (r.text or r.signature or r.data or r.id or r.provider_data):
        return ["a reasoning part carries an empty Reasoning (no text, signature, data, id or provider_data)"]
    return _check_provider_data("reasoning", reasoning.provider_data)


def _check_provider_data(owner: str, data: str) -> list[str]:
    if not data:
        return []
    try:
        json.loads(data)
    except ValueError:
        return [f"{owner} provider_data is not JSON text: {data[:80]!r}"]
    return []
