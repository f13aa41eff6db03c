"""Prints the perfmodel validation table (predicted vs published MFU) at the end of the test run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

_TABLES: list[str] = []


@pytest.fixture
def record_table() -> Callable[[str], None]:
    """A function the validation test calls with its table; the table is printed in the terminal summary."""
    return _TABLES.append


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook signature
    for text in _TABLES:
        terminalreporter.write_sep("=", "perfmodel: predicted vs published MFU")
        terminalreporter.write_line(text)
