"""The xdist scheduler's rules (tests/support/scheduling.py): what shares the Spark worker, and
that the figures it orders by still name modules of this tree."""

from __future__ import annotations

from pathlib import Path

from tests.support.scheduling import (
    SECONDS,
    SPARK,
    WITHOUT_SESSION,
    expected_seconds,
    scope_of,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_session_users_share_one_scope_and_the_rest_go_by_module() -> None:
    assert scope_of("tests/gateway/pipeline/test_report.py::test_time_window") == SPARK
    assert scope_of("tests/gateway/pipeline/transforms/test_homes.py::test_x[a]") == SPARK
    progress = "tests/gateway/pipeline/test_report_progress.py"
    assert scope_of(f"{progress}::test_steps") == progress
    incremental = "tests/gateway/pipeline/test_incremental_report.py"
    assert scope_of(f"{incremental}::test_incremental_runs_equal_full_runs") == SPARK
    assert scope_of("tests/faults/test_full_disk.py::test_y") == "tests/faults/test_full_disk.py"


def test_a_measured_scope_outranks_a_crowd_of_quick_tests() -> None:
    outage = "tests/faults/test_database_outage.py"
    assert expected_seconds(outage, 3) > expected_seconds("tests/x/test_many.py", 200)


def test_every_module_named_exists() -> None:
    named = (set(SECONDS) - {SPARK}) | WITHOUT_SESSION
    assert sorted(name for name in named if not (ROOT / name).is_file()) == []
