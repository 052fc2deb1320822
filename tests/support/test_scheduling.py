"""The xdist scheduler's rules (tests/support/scheduling.py): what shares the Spark worker, and
that the figures it orders by still name modules of this tree."""

from __future__ import annotations

from pathlib import Path

from tests.support.scheduling import (
    POOL,
    SECONDS,
    SPARK,
    WITHOUT_SESSION,
    expected_seconds,
    is_pool_worker,
    next_scope,
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


def test_the_pools_modules_go_to_the_pool_workers_while_there_is_other_work() -> None:
    api, control = "tests/gateway/api/test_queues_sdk.py", "tests/gateway/api/control/test_tags.py"
    console = "tests/gateway/api/console/test_console_actions.py"
    queue = [SPARK, console, api, "tests/faults/test_full_disk.py", control]
    assert [is_pool_worker(f"gw{n}") for n in range(4)] == [True, True, False, False]
    assert next_scope(queue, pool_worker=True) == api
    assert next_scope(queue, pool_worker=False) == SPARK
    assert next_scope([console, control], pool_worker=False) == console
    # Only one kind left: whoever asks takes it, rather than waiting.
    assert next_scope([api, control], pool_worker=False) == api
    assert next_scope([SPARK], pool_worker=True) == SPARK


def test_the_pools_modules_are_where_it_says() -> None:
    """The modules that use the pool's gateways (the API's and the control plane's fixtures,
    tests/gateway/api/conftest.py and control/conftest.py) are under :data:`POOL`."""
    users = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if path != Path(__file__)
        and any(name in path.read_text() for name in ("control_gateway", "regional_gateway"))
    }
    assert users and all(user.startswith(POOL) for user in users)
