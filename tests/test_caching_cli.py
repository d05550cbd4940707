"""The command's cache line: each step's cache reads as a share of its
prompt, and the miss reason, on stderr (``agentcore.integrations.cli_output``)."""

from __future__ import annotations

import io

import pytest

from agentcore import FinishReason, LoopOptions, StreamPart, Usage, run, user_message
from agentcore.caching import CacheCause, CacheReport
from agentcore.integrations.cli_output import TextPrinter, cache_text
from agentcore.testing import ScriptedModel

MISS = CacheReport(
    messages=3,
    shared_messages=1,
    previous_messages=3,
    cache_read=0,
    expected_read=2012,
    cause=CacheCause.PREFIX_CHANGED,
    reason="read 0 of the 2,012 cached tokens: "
    "message 1 changed (edited or replaced since the earlier request)",
)


@pytest.mark.parametrize(
    ("step", "usage", "report", "line"),
    [
        (
            1,
            Usage(input=12, output=5, cache_write=2000),
            CacheReport(1),
            "cache: step 1 · read 0 of 2,012 prompt tokens (0%) · wrote 2,000",
        ),
        (
            2,
            Usage(input=2042, output=5, cache_read=2012, cache_write=40),
            CacheReport(3, cache_read=2012, expected_read=2012),
            "cache: step 2 · read 2,012 of 2,082 prompt tokens (96%) · wrote 40",
        ),
        (
            3,
            Usage(input=10, output=5, cache_write=2100),
            MISS,
            "cache: step 3 · read 0 of 2,110 prompt tokens (0%) · wrote 2,100 · miss: "
            "read 0 of the 2,012 cached tokens: "
            "message 1 changed (edited or replaced since the earlier request)",
        ),
        (1, Usage(input=770, output=130), None, None),
        (1, Usage(input=770, output=130), CacheReport(1), None),
    ],
)
def test_cache_text(step: int, usage: Usage, report: CacheReport | None, line: str | None) -> None:
    assert cache_text(step, usage, report) == line


def test_the_printer_shows_a_line_per_step_with_cache_activity() -> None:
    model = ScriptedModel(
        [
            [
                StreamPart.text_delta("Let me look."),
                StreamPart.step_finish(FinishReason.STOP, Usage(12, 5, 0, 2000), CacheReport(1)),
            ]
        ]
    )
    out, err = io.StringIO(), io.StringIO()
    printer = TextPrinter(out, err)
    for part in run(LoopOptions(model=model, messages=[user_message("Hi")])):
        printer.part(part)
    printer.end()
    assert out.getvalue() == "Let me look.\n"
    assert err.getvalue() == (
        "cache: step 1 · read 0 of 2,012 prompt tokens (0%) · wrote 2,000\n"
        "finish: stop · usage: input 12, output 5, cache read 0, cache write 2000\n"
    )
