"""A durable run in a process of its own, for the kill-and-resume tests (tests/test_durable_kill.py).

    python -m tests.durable_child DB RUN_ID LOG [--approve CALL_ID=DECISION]... [--base-url URL]

Runs (or resumes) run ``RUN_ID`` with its checkpoints in the SQLite file
``DB``: a deterministic three-step plan (:class:`PlanModel`) whose tools
append one line per execution to the file ``LOG`` (``<idempotency key>
<tag>``). At each sync point the child writes ``sync <point>`` on stdout
and waits for a line on stdin before it goes on, so the parent knows where
the child is when it kills it:

* ``stream:<step>:<n>``: inside the model's stream, after ``n`` text deltas;
* ``tool:<tag>``: inside a tool, after its execution was logged (and its
  effect made in ``LOG.effects``, unless that file has its idempotency key);
* ``saved:<revision>``: right after a checkpoint was saved.

With ``--base-url`` the model is :class:`OpenAIChatModel` at that URL (the
parent's local server plays the plan, :func:`plan_reply`) instead, and the
stream has no sync points. At the end it writes ``result <json>`` (finish reason, usage, history,
pending call ids) and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentcore import (
    Context,
    File,
    FinishReason,
    LoopOptions,
    Reasoning,
    Request,
    Role,
    StreamPart,
    ToolCall,
    Usage,
    run,
    tool,
    user_message,
)
from agentcore.durable import RunState, SQLiteCheckpoints
from agentcore.providers.openai import OpenAIChatModel

PNG = bytes(range(256)) * 3
"""The bytes the ``chart`` tool returns (every byte value: kept exactly or not)."""

_lock = threading.Lock()


def sync(point: str) -> None:
    """Tell the parent where the child is and wait for its go-ahead."""
    with _lock:
        sys.stdout.write(f"sync {point}\n")
        sys.stdout.flush()
        if not sys.stdin.readline():
            os._exit(3)  # the parent went away


def plan(step: int) -> tuple[list[str], list[ToolCall], Usage]:
    """Step ``step`` of the plan (from 0): its text in pieces, its calls, its usage."""
    words = [f"Step {step}", " is", " streaming."] if step < 2 else ["Done:", " a, b", " and c."]
    calls = {
        0: [ToolCall("c1", "record", '{"tag": "a"}'), ToolCall("c2", "chart", "{}")],
        1: [ToolCall("c1", "record", '{"tag": "b"}'), ToolCall("c2", "record", '{"tag": "c"}')],
    }.get(step, [])
    return words, calls, Usage(input=100 + 10 * step, output=7 + step, cache_read=step)


def plan_reply(step: int) -> list[bytes]:
    """Step ``step`` of the plan as Chat Completions stream events (one ``bytes`` each)."""
    words, calls, usage = plan(step)
    chunks: list[dict[str, Any]] = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": f"thinking {step}"}}]}
    ]
    chunks += [{"choices": [{"index": 0, "delta": {"content": word}}]} for word in words]
    chunks += [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.input},
                            }
                        ]
                    },
                }
            ]
        }
        for index, call in enumerate(calls)
    ]
    chunks.append(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]}
    )
    chunks.append(
        {
            "choices": [],
            "usage": {
                "prompt_tokens": usage.input,
                "completion_tokens": usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read},
            },
        }
    )
    return [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks] + [b"data: [DONE]\n\n"]


class PlanModel:
    """Step k of the run is the k-th entry of the plan, whatever process asks."""

    model_id = "plan"

    def stream(self, request: Request, ctx: Context) -> Iterator[StreamPart]:
        step = sum(1 for message in request.messages if message.role is Role.ASSISTANT)
        words, calls, usage = plan(step)
        yield StreamPart.reasoning_event(
            Reasoning(text=f"thinking {step}", signature=f"sig-{step}==", format="plan", origin="local")
        )
        for index, word in enumerate(words):
            if index:
                sync(f"stream:{step}:{index}")
            yield StreamPart.text_delta(word)
        for call in calls:
            yield StreamPart.tool_call_event(call)
        yield StreamPart.step_finish(FinishReason.TOOL_CALLS if calls else FinishReason.STOP, usage)


def log_execution(ctx: Context, tag: str, path: str) -> None:
    """Log the execution in ``path``; make its effect, once per idempotency key, in ``path.effects``."""
    line = f"{ctx.idempotency_key} {tag}\n"
    append(path, line)
    effects = path + ".effects"
    done = Path(effects).read_text(encoding="utf-8") if os.path.exists(effects) else ""
    if line not in done.splitlines(keepends=True):
        append(effects, line)
    sync(f"tool:{tag}")


def append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


class SyncedCheckpoints(SQLiteCheckpoints):
    """The SQLite store, with a sync point after each save."""

    def save(self, state: RunState) -> None:
        super().save(state)
        sync(f"saved:{state.revision}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("log")
    parser.add_argument("--approve", action="append", default=[])
    parser.add_argument("--base-url")
    args = parser.parse_args()

    approval = os.environ.get("DURABLE_CHILD_APPROVAL") == "1"

    @tool
    def record(tag: str, ctx: Context) -> str:
        """Record a tag."""
        log_execution(ctx, tag, args.log)
        return f"recorded {tag}"

    @tool(requires_approval=lambda arguments: bool(approval))
    def chart(ctx: Context) -> File:
        """Draw a chart."""
        log_execution(ctx, "chart", args.log)
        return File("image/png", PNG, filename="chart.png")

    decisions: dict[str, bool | str] = {}
    for item in args.approve:
        call_id, _, decision = item.partition("=")
        decisions[call_id] = True if decision == "yes" else decision
    store = SyncedCheckpoints(args.db)
    options = LoopOptions(
        model=PlanModel() if args.base_url is None else OpenAIChatModel("plan", base_url=args.base_url),
        messages=[user_message("Record a, b and c, and draw a chart.")],
        tools=[record, chart],
        run_id=args.run_id,
        checkpoints=store,
        approvals=decisions or None,
    )
    result = run(options).result()
    summary = {
        "finish_reason": result.finish_reason.value,
        "usage": result.usage.to_dict(),
        "messages": [message.to_dict() for message in result.messages],
        "steps": [step.to_dict() for step in result.steps],
        "pending": [call.id for call in result.pending],
    }
    sys.stdout.write("result " + json.dumps(summary) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
