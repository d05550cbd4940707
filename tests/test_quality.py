"""The package passes mypy --strict and ruff, as part of the suite so CI checks them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    # The tests too: a helper with the wrong signature, or a test that passes
    # a value of the wrong type without saying so, is found here.
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "agentcore", "agentcore_command.py", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_ruff_is_clean() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "agentcore",
            "agentcore_command.py",
            "tests",
            "bench",
            "examples",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "agentcore", "agentcore_command.py", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[a-z, -]+\])?(?P<rest>.*)$")


def test_every_type_ignore_in_the_tests_names_its_code_and_a_reason() -> None:
    # A test that passes a wrong type on purpose says so, so that a stray
    # ignore hiding a real mistake stands out.
    offenders = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = IGNORE.search(line)
            if found and not (found["code"] and found["rest"].strip().startswith("#")):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []


def test_only_the_cli_reads_the_environment() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "agentcore").rglob("*.py")
        if path != ROOT / "agentcore" / "cli.py"
        and ("os.environ" in path.read_text() or "os.getenv" in path.read_text())
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "script", sorted(p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))
)
def test_every_benchmark_takes_quick_and_help(script: str) -> None:
    # bench/README.md: "Every script takes --quick (fewer rounds or runs) and --help".
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout
