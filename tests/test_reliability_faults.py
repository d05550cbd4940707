"""The fault table: every fault of ``tests/faults`` through both adapters.

Each row drives :func:`agentcore.run` against the real local HTTP server: a
healthy tool step, then the fault (see :mod:`tests.faults`). The row passes
when the outcome is the contract's: the error class (or a normal finish),
retried or not, the text delivered exactly once, the completed steps' usage
kept, one terminal part, each tool call answered once, a valid history.
Rows that a known library bug breaks are strict xfails. ``docs/reliability.md``
holds the same table, written by ``python -m tests.faults.report``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.faults import FAULTS, ROWS, Row, run_row

DOC = Path(__file__).resolve().parent.parent / "docs" / "reliability.md"


def _param(row: Row) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=row.known_bug)] if row.known_bug else []
    if row.fault.slow:
        marks.append(pytest.mark.slow)
    return pytest.param(row, id=row.id, marks=marks)


@pytest.mark.parametrize("row", [_param(row) for row in ROWS])
def test_fault_row(row: Row) -> None:
    observed = run_row(row)
    assert observed.mismatches(row.fault.expect(row.dialect)) == []


def test_every_fault_runs_through_both_adapters() -> None:
    assert len(ROWS) == 2 * len(FAULTS)
    assert len({row.id for row in ROWS}) == len(ROWS)
    assert len(FAULTS) >= 35


def test_the_document_holds_the_current_table() -> None:
    # docs/reliability.md is generated from the same rows; regenerate it
    # (python -m tests.faults.report) whenever the catalogue changes.
    text = DOC.read_text(encoding="utf-8")
    ids = re.findall(r"^\| `([a-z0-9-]+)` \|", text, flags=re.MULTILINE)
    assert sorted(ids) == sorted(row.id for row in ROWS)
    known = sum(1 for row in ROWS if row.known_bug)
    assert f"**{len(ROWS) - known} of {len(ROWS)} rows pass**" in text
