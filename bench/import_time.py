"""Import time: ``import agentcore`` against ``import openai`` and ``import anthropic``.

Each import runs in a fresh interpreter under ``python -X importtime -c
"import NAME"``, several times in alternating order (after one warm-up run
each, so every ``.pyc`` is cached); the figure is the median of the
cumulative microseconds that ``-X importtime`` reports for the top-level
module. The provider modules are timed too (what a user of one adapter pays).
Then, from one more run of ``import agentcore``: the heaviest packages it
pulls in (self time summed per top-level package) and a check that nothing
heavy is imported before it is used (``jsonschema``, tenacity and the
asyncio it imports, the provider adapters, the vendor SDKs).

The vendor SDKs come from the ``bench`` extra: ``pip install -e '.[bench]'``.

Run: ``python bench/import_time.py [--runs 9] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._streams import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("agentcore", "agentcore.providers.anthropic", "agentcore.providers.openai", "openai", "anthropic")
LAZY = (
    "jsonschema",
    "tenacity",
    "asyncio",
    "agentcore.providers.anthropic",
    "agentcore.providers.openai",
    "openai",
    "anthropic",
)
"""Modules that ``import agentcore`` must not import (issue 5: nothing heavy until used)."""

_LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|( *)(\S+)\s*$")


def import_profile(module: str) -> list[tuple[str, int, int, int]]:
    """``(name, depth, self_us, cumulative_us)`` for every module a fresh
    interpreter imports for ``import module``, in ``-X importtime`` order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    code = f"import {module}"
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    rows = []
    for line in proc.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            own, total, indent, name = match.groups()
            rows.append((name, (len(indent) - 1) // 2, int(own), int(total)))
    return rows


def cumulative_us(rows: list[tuple[str, int, int, int]], module: str) -> int:
    """The cumulative time of ``module``'s own top-level line (0 if it was already loaded)."""
    totals = [total for name, depth, _own, total in rows if name == module and depth == 0]
    return totals[-1] if totals else 0


def parent(rows: list[tuple[str, int, int, int]], index: int) -> str:
    """The module whose import directly loaded ``rows[index]`` ("" at the top)."""
    depth = rows[index][1]
    for name, parent_depth, _own, _total in rows[index + 1 :]:
        if parent_depth < depth:
            return name
    return ""


def importer(rows: list[tuple[str, int, int, int]], index: int) -> str:
    """The agentcore module whose import (directly or not) loaded ``rows[index]``."""
    depth = rows[index][1]
    for name, parent_depth, _own, _total in rows[index + 1 :]:
        if parent_depth < depth:
            if name.startswith("agentcore"):
                return name
            depth = parent_depth
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="interpreters per module (9; --quick: 3)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--top", type=int, default=12, help="heaviest packages to list")
    parser.add_argument("--breakdown", default="agentcore", help="module whose imports to list (agentcore)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 9)
    print(machine())
    targets = list(TARGETS)
    for module in targets:  # warm-up: compile and cache every .pyc
        import_profile(module)
    times: dict[str, list[int]] = {module: [] for module in targets}
    for number in range(runs):
        order = targets[number % len(targets) :] + targets[: number % len(targets)]
        for module in order:
            times[module].append(cumulative_us(import_profile(module), module))

    print(f"\npython -X importtime -c 'import NAME', {runs} fresh interpreters each, median cumulative time")
    base = statistics.median(times["openai"])
    print(f"  {'module':32s} {'median ms':>10s} {'min ms':>8s} {'/ openai':>9s}")
    for module in targets:
        median = statistics.median(times[module])
        print(f"  {module:32s} {median / 1000:10.1f} {min(times[module]) / 1000:8.1f} {median / base:9.2f}")
    ratio = statistics.median(times["agentcore"]) / base
    verdict = "met" if ratio <= 0.5 else "MISSED"
    print(f"  import agentcore / import openai = {ratio:.2f}   target <= 0.5: {verdict}")
    anthropic_ratio = statistics.median(times["agentcore"]) / statistics.median(times["anthropic"])
    print(f"  import agentcore / import anthropic = {anthropic_ratio:.2f}")

    rows = import_profile(args.breakdown)
    loaded = {name for name, *_ in rows}
    per_package: Counter[str] = Counter()
    via: dict[str, set[str]] = {}
    for index, (name, _depth, own, _total) in enumerate(rows):
        package = name if name.startswith("agentcore") else name.split(".")[0]
        per_package[package] += own
        via.setdefault(package, set()).add(importer(rows, index))
    total = cumulative_us(rows, args.breakdown)
    print(f"\nheaviest of 'import {args.breakdown}' ({total / 1000:.1f} ms, self time per package)")
    for package, own in per_package.most_common(args.top):
        importers = ", ".join(sorted(via[package] - {package, ""}))
        print(f"  {package:32s} {own / 1000:7.1f} ms  {own / total * 100:5.1f}%  {importers}")
    direct: Counter[str] = Counter()
    for index, (name, _depth, _own, cumulative) in enumerate(rows):
        if not name.startswith("agentcore") and parent(rows, index).startswith("agentcore"):
            direct[name.split(".")[0]] += cumulative
    print("\nwhat agentcore imports directly, by cumulative time (all it pulls in)")
    for package, cumulative in direct.most_common(8):
        print(f"  {package:32s} {cumulative / 1000:7.1f} ms  {cumulative / total * 100:5.1f}%")
    print(f"\nnot imported by 'import {args.breakdown}' until used (issue 5):")
    for module in LAZY:
        if module == args.breakdown:
            continue
        print(f"  {module:32s} {'IMPORTED' if module in loaded else 'not imported'}")


if __name__ == "__main__":
    main()
