"""The fault tests' figures, printed at the end of the run (docs/deploy.md#database-and-disk-faults
quotes them)."""

from __future__ import annotations

import pytest

from tests.faults.harness import TALLIES


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TALLIES:
        terminalreporter.section("faults: acknowledged / delivered / lost / duplicated, recovery")
        for tally in TALLIES:
            terminalreporter.write_line(tally.line())
        terminalreporter.write_line("as docs/deploy.md#database-and-disk-faults tabulates them:")
        for tally in TALLIES:
            terminalreporter.write_line(tally.row())
