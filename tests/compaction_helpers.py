"""What the compaction tests of both APIs share (tests/test_compaction_anthropic.py,
tests/test_compaction_responses.py): the recorded cases of ``tests/fixtures/compaction``,
the parts a step streamed, and the long run both fake APIs compact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import (
    ErrorClass,
    LoopOptions,
    Model,
    ModelError,
    ProviderItem,
    RunError,
    StreamPart,
    StreamPartKind,
    run,
    tool,
    user_message,
)

FIXTURES = Path(__file__).parent / "fixtures" / "compaction"
WINDOW = 80_000
"""The context window of both fake APIs, in tokens."""
REPORT = "Quarterly figures, line by line. " * 8_000
"""About 66,000 tokens by the fake APIs' count (4 characters a token): over a
50,000-token compaction trigger, under :data:`WINDOW`."""


@tool
def read_report() -> str:
    """Read the rest of the report."""
    return "More figures. " * 10_000  # about 35,000 tokens: with REPORT, over WINDOW


def fixture(api: str, name: str) -> bytes:
    """The bytes of a recorded case's file (``api``: its folder)."""
    return (FIXTURES / api / name).read_bytes()


def fixture_json(api: str, name: str) -> Any:
    return json.loads(fixture(api, name))


def items(parts: list[StreamPart]) -> list[ProviderItem]:
    """The provider items among a step's parts, in order."""
    return [part.provider_item for part in parts if part.provider_item is not None]


def answer_text(parts: list[StreamPart]) -> str:
    return "".join(part.text for part in parts if part.kind is StreamPartKind.TEXT_DELTA)


def compact(value: Any) -> str:
    """``value`` as compact JSON text, non-ASCII kept: how a provider item holds a block."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def refused_elsewhere(compacting: Model, elsewhere: Model) -> ModelError:
    """Run :data:`REPORT` one step on ``compacting`` (its API compacts, then
    :func:`read_report` runs), then go on with that history on ``elsewhere``,
    where the compaction cannot go: the error that ends that run, which must
    be the API's context-length error."""
    first = run(
        LoopOptions(model=compacting, messages=[user_message(REPORT)], tools=[read_report], step_limit=1)
    ).result()
    assert first.messages[1].provider_items
    assert first.messages[-1].tool_results  # the tool ran: the next step is the one over the window
    with pytest.raises(RunError) as caught:
        run(LoopOptions(model=elsewhere, messages=first.messages, tools=[read_report])).result()
    error = caught.value.err
    assert isinstance(error, ModelError)
    assert error.error_class is ErrorClass.CONTEXT_LENGTH
    return error
