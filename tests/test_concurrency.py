"""Concurrency: one model instance serves many runs at once.

For each adapter, 50 runs start together in 50 threads and share one model
instance, hence one ``requests`` session and its connection pool. The fault
server (in its own process) answers each run from what that run sent: step 1
calls ``lookup`` with the run's token, step 2 answers with the token and the
tool's result, in deltas 1 ms apart so the runs interleave, with usage made
from the run's number. Every run must get exactly its own answer, tool call,
tool result, usage and history.
"""

from __future__ import annotations

import pytest

from tests.faults import DIALECTS
from tests.faults.measure import concurrency


@pytest.mark.parametrize("dialect", [d.name for d in DIALECTS])
def test_50_parallel_runs_sharing_one_model_get_their_own_results(dialect: str) -> None:
    figures = concurrency(dialect, runs=50)
    assert figures.problems == ()
    assert figures.correct == 50
