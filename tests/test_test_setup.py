"""The test suite's own setup (pyproject.toml): every test runs under a time limit."""

from __future__ import annotations

import pytest


def test_every_test_has_a_time_limit(pytestconfig: pytest.Config) -> None:
    # pytest-timeout: a hung test fails with every thread's stack instead of holding the run
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert float(pytestconfig.getini("timeout")) == 120.0
