"""Write docs/reliability.md from the fault table and the measurements.

    python -m tests.faults.report            # the whole document (about a minute)

It runs every row of :data:`tests.faults.ROWS` and the workloads of
:mod:`tests.faults.measure` (the same code the tests assert on) and writes
the figures it got. Regenerate the document whenever the catalogue changes;
``tests/test_reliability_faults.py`` checks that it lists the current rows.
"""

from __future__ import annotations

import logging
import platform
import sys
import time
from pathlib import Path

from agentcore import ErrorClass, Usage
from tests.faults import (
    DIALECTS,
    FAULTS,
    MAX_RETRIES,
    READ_TIMEOUT,
    RETRY_BASE_DELAY,
    RETRY_MAX_DELAY,
    ROWS,
    U1,
    U2,
    U3,
    Expect,
    Observed,
    Row,
    measure,
    run_row,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
FIXED = (
    "The retry warning passed the exception itself as a log argument, so a handler that keeps records "
    "kept its traceback, and through it the HTTP response, its connection pool and an idle socket "
    "(`tests/test_hygiene.py::test_a_kept_retry_log_record_does_not_keep_a_socket_open`).",
    "`Request` and `LoopOptions` printed `Authorization` / `x-api-key` header values in their repr "
    "(`tests/test_secrets.py::test_request_and_options_repr_redact_credential_headers`).",
    "A key given as a header (the model's `headers`, for gateways) rather than as `api_key` was not "
    "redacted when a server echoed it in an error "
    "(`tests/test_secrets.py::test_a_key_given_as_a_header_is_redacted_when_echoed`).",
    "`AnthropicModel` failed a complete step as `TRANSIENT` when the connection broke after "
    "`message_delta` carried the stop reason, losing the step's usage (the `*-after-stop-reason` rows).",
    "The Anthropic state machine let a `TypeError` out for a list or object `index` "
    "(`tests/test_fuzz.py::test_anthropic_state_machine_takes_an_unhashable_index`).",
)
MB = 1024 * 1024


def _usage(usage: Usage) -> str:
    names = {
        U1: "step 1",
        U1 + U2: "steps 1 + 2",
        U1 + U2 + U3: "steps 1 to 3",
        Usage(): "none (no step ran)",
    }
    return names.get(usage, str(usage))


def _attempts(expect: Expect) -> str:
    if expect.attempts == 1:
        return "1 (not retried)"
    if expect.error is None:
        return f"{expect.attempts} (retried)"
    return f"{expect.attempts} (retried, then gave up)"


def _text(text: str) -> str:
    if not text:
        return "none"
    if len(text) > 12:
        return f"{len(text):,} characters"
    return f'"{text}"'


def _outcome(expect: Expect) -> str:
    return "finishes (`stop`)" if expect.error is None else f"`{ErrorClass(expect.error).name}`"


def _row_line(row: Row, observed: Observed) -> tuple[str, bool]:
    expect = row.fault.expect(row.dialect)
    mismatches = observed.mismatches(expect)
    if not mismatches:
        result = f"pass ({observed.seconds:.2f} s)"
    else:
        why = " (known bug, see below)" if row.known_bug else ""
        result = f"**FAIL**{why}: {'; '.join(mismatches)}."
    wait = ""
    if expect.wait is not None:
        wait = f"; waited {observed.wait:.2f} s" if observed.wait is not None else "; no retry seen"
    cells = [
        f"`{row.id}`",
        row.dialect.label,
        row.fault.what,
        _outcome(expect),
        _attempts(expect) + wait,
        _text(expect.text),
        _usage(expect.usage),
        result,
    ]
    return "| " + " | ".join(cells) + " |", not mismatches


def fault_section() -> tuple[list[str], int, list[Row]]:
    lines = [
        "| row | adapter | fault (server side) | expected outcome | model calls for the step "
        "| text delivered (once) | usage kept | result |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    passed = 0
    failed: list[Row] = []
    for row in ROWS:
        observed = run_row(row)
        line, ok = _row_line(row, observed)
        lines.append(line)
        passed += ok
        if not ok:
            failed.append(row)
        print(f"{row.id}: {'pass' if ok else 'FAIL'}", file=sys.stderr, flush=True)
    return lines, passed, failed


def main() -> None:
    logging.getLogger("agentcore").setLevel(logging.ERROR)  # retries are expected here
    began = time.monotonic()
    table, passed, failed = fault_section()
    table_seconds = time.monotonic() - began
    hygiene = measure.hygiene(1000)
    runs = {d.name: measure.concurrency(d.name) for d in DIALECTS}
    pressure = measure.back_pressure()
    memory = measure.million_parts()
    from tests import test_fuzz, test_properties

    # Strict xfails outside the table; a constant that is gone means the bug was fixed.
    candidates = {
        "test_fuzz.py::test_anthropic_state_machine_takes_an_unhashable_index": (
            test_fuzz,
            "UNHASHABLE_INDEX_BUG",
        ),
    }
    other_bugs = {
        test: str(getattr(module, name))
        for test, (module, name) in candidates.items()
        if hasattr(module, name)
    }

    total = len(ROWS)
    known = [row for row in ROWS if row.known_bug]
    out: list[str] = []
    w = out.append
    w("# Reliability: what was tried, and what held")
    w("")
    w(
        "This page is generated by `python -m tests.faults.report`, which runs the same fault table "
        "and measurements that the test suite asserts (`tests/test_reliability*.py`, "
        "`tests/test_hygiene.py`, `tests/test_concurrency.py`, `tests/test_properties.py`, "
        "`tests/test_fuzz.py`, `tests/test_secrets.py`). Every figure below is from its last run "
        f"(Python {platform.python_version()}, {platform.system()}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())})."
    )
    w("")
    w("## In figures")
    w("")
    w(
        f"* **Faults:** {len(FAULTS)} faults, each through both adapters: {total} rows; "
        f"**{total - len(known)} of {total} rows pass**"
        + (f", {len(known)} fail on a known library bug (listed below)." if known else ".")
    )
    unexpected = [row.id for row in failed if not row.known_bug]
    if unexpected or len(failed) != len(known):
        w(f"  In this run {passed} rows passed; unexpected failures: {unexpected}.")
    w(
        f"* **Runs:** {hygiene.runs:,} runs against a local server in another process, "
        f"each closed at a random point ({', '.join(f'{n} {s}' for s, n in hygiene.by_scenario.items())}), "
        f"in {hygiene.seconds:.0f} s. `close()` returned within {hygiene.close_max * 1000:.1f} ms at worst."
    )
    w(
        f"* **Threads:** {hygiene.threads_before} before, {hygiene.threads_after} after "
        f"(the main thread and agentcore's one shared deadline thread); "
        f"{len(hygiene.threads_new)} new threads left at the end, "
        + (
            "none at any of the samples taken every 100 runs."
            if max(s.threads for s in hygiene.samples) == 0
            else f"at most {max(s.threads for s in hygiene.samples)} at the samples taken every 100 runs."
        )
    )
    w(
        f"* **Sockets** (entries of `/proc/self/fd` that are sockets): {hygiene.sockets_before} before, "
        f"{hygiene.sockets_after} after closing the {hygiene.models} models' sessions; at most "
        f"{hygiene.sockets_peak} open at any sample during the runs (idle keep-alive connections in "
        f"the pools, at most one per model); {hygiene.resource_warnings} `ResourceWarning`s."
    )
    growth = (hygiene.rss_after - hygiene.rss_before) / 1024
    w(
        f"* **Memory:** resident set {hygiene.rss_before / MB:.1f} MB after a warm-up of 60 runs, "
        f"{hygiene.rss_after / MB:.1f} MB after the {hygiene.runs:,} runs ({growth:+.0f} KB); "
        "samples every 100 runs: " + ", ".join(f"{s.rss / MB:.1f}" for s in hygiene.samples) + " MB."
    )
    w(
        "* **Concurrency:** "
        + "; ".join(
            f"{c.dialect}: {c.runs} runs in parallel threads sharing one model instance, "
            f"{c.correct} of {c.runs} correct and unmixed ({c.seconds:.1f} s)"
            for c in runs.values()
        )
        + "."
    )
    w(
        f"* **Back-pressure:** a reader that takes one part and stops holds the model at "
        f"{pressure.offered_after_stop} parts offered (queue bound {pressure.queue_size}: a full queue, "
        f"the batch the reader took with the part it read, and one part waiting in `send`), "
        f"and {pressure.offered_later} after another 0.3 s. "
        f"A model offering {memory.parts:,} parts: resident memory "
        f"{memory.rss_start / MB:.1f} MB at the start, {memory.rss_peak / MB:.1f} MB at the peak, "
        f"{memory.rss_end / MB:.1f} MB at the end ({memory.seconds:.1f} s); the growth is the step's text, "
        "which the history keeps (the deltas collected, about 9 bytes a part), not parts waiting in a queue."
    )
    w(
        f"* **Properties and fuzzing:** {test_properties.RECHUNK_EXAMPLES} random re-chunkings of the "
        f"{len(test_properties.RECORDINGS)} recorded streams plus every stream one byte per read with LF, "
        f"CRLF and CR line ends; {test_properties.RUN_EXAMPLES} random scripted runs checked against an "
        f"oracle; {len(test_fuzz.TARGETS)} fuzz targets, {test_fuzz.EXAMPLES} generated inputs for each "
        f"pure one and {test_fuzz.ADAPTER_EXAMPLES} generated bodies sent over HTTP for each adapter."
    )
    w("")
    w("## The fault table")
    w("")
    w(
        "Each row is one `agentcore.run()` against a real HTTP server on 127.0.0.1 "
        "(`tests/faults/__init__.py`). Step 1 is a healthy tool call (usage "
        f"{U1.input} in / {U1.output} out / {U1.cache_read} cache read) and the tool runs; step 2 meets "
        f'the fault; when the loop retries, the next reply is the healthy answer "Done." (usage '
        f"{U2.input} / {U2.output} / {U2.cache_read}). Settings: read and idle timeout {READ_TIMEOUT} s, "
        f"`max_retries={MAX_RETRIES}`, backoff {RETRY_BASE_DELAY * 1000:.0f} to "
        f"{RETRY_MAX_DELAY * 1000:.0f} ms; "
        "server Retry-After hints are honoured verbatim. A row passes when the error class (or the "
        "normal finish), the number of model calls for the step, the text (every delta exactly once), "
        "the total usage (on error: the completed steps'), and the invariants (one terminal part, each "
        "tool call answered once, a history valid to send again, one request per model call) are all "
        "as expected."
    )
    w("")
    out.extend(table)
    w("")
    w(f"The table ran in {table_seconds:.0f} s.")
    w("")
    w("## Known bugs")
    w("")
    w(
        "Found by these tests and not fixed yet; each is a strict xfail in the suite, so the test "
        "fails (XPASS) once the bug is fixed and the mark must go."
    )
    w("")
    for row in known:
        w(f"* Fault row `{row.id}`: {row.known_bug}.")
    for test, reason in other_bugs.items():
        w(f"* `tests/{test}`: {reason.removeprefix('bug: ')}.")
    w("")
    w("Found by these tests and fixed since:")
    w("")
    for fixed in FIXED:
        w(f"* {fixed}")
    w("")
    w("## Beyond the table")
    w("")
    w(
        "* `tests/test_reliability.py`: the idle timeout ends a ping-only stream as `TRANSIENT` in both "
        "adapters; `Context(timeout=...)` bounds a whole run (several steps, retry waits, a stalled read, "
        "a slow tool); `retry_after_limit` refuses a long hint in each Retry-After form at once, with the "
        "error; the producer waits at the queue bound."
    )
    w(
        "* `tests/test_hygiene.py`: the runs above, and a reader dropped without `close()` (blocked in a "
        "network read, or with its producer blocked on a full queue) releases its worker thread and its "
        "socket once collected: its finalizer closes the channel and cancels the run's context."
    )
    w(
        "* `tests/test_secrets.py`: an API key never appears in `repr`, `str`, exception "
        "messages, `traceback.format_exception` of `ModelError` and `RunError`, or any log record "
        "(DEBUG, urllib3 included), for errors of every kind, including a server that echoes the key."
    )
    w(
        "* `tests/test_fuzz.py`: generated bytes and JSON through the SSE reader, both adapters' event "
        "mappers and both adapters' whole streaming path: only `ModelError` or a clean step comes out."
    )
    w("")
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text("\n".join(out), encoding="utf-8")
    print(f"wrote {DOC}: {passed} of {total} rows passed", file=sys.stderr)


if __name__ == "__main__":
    main()
