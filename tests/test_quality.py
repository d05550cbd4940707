"""The package passes mypy --strict and ruff, as part of the suite so CI checks them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "agentcore"],
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
        [sys.executable, "-m", "ruff", "check", "agentcore", "tests", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_the_cli_reads_the_environment() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "agentcore").rglob("*.py")
        if path.name != "cli.py" and ("os.environ" in path.read_text() or "os.getenv" in path.read_text())
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
