"""How pytest-xdist hands tests to its workers (``.venv/bin/pytest -n 6``).

A test module goes whole to one worker, so that a module-scoped gateway starts once rather than
once on each worker its tests would be spread over; and every test that uses the ``spark``
fixture (tests/gateway/pipeline/conftest.py) goes to the same worker, so that the suite starts
one local Spark session, not one per worker: four sessions on a 2-core machine time out and leave
py4j's connections unusable. The pipeline's modules that use no session (pure code, or
``mns-gateway report`` in a child process with its own Spark) are ordinary modules:
:data:`WITHOUT_SESSION`, checked by that conftest at collection. (A second session on another
worker for the longest module was tried: the two JVMs, with the report tests' own, took each
other's CPU, the shared session's modules ran 2-3 times slower, and the suite took longer.)

The longest scopes start first. xdist's own order (most tests first) started the modules of a
few long tests last: the 3-test database-outage module (about 2 minutes) began when the others
were done and ran alone at the end. :data:`SECONDS` holds what the longest modules took in one
run of the suite; the others are estimated from their number of tests. A stale figure costs
only balance, never a test.

``--dist loadgroup`` with ``xdist_group`` marks would say the same, but with pytest 9 it groups
nothing: pytest-xdist 3.8 renames a grouped test's ``_nodeid``, which pytest 9 no longer reads.
"""

from __future__ import annotations

from typing import Final

from xdist.scheduler import LoadScopeScheduling

PIPELINE: Final = "tests/gateway/pipeline/"
SPARK: Final = "spark"
WITHOUT_SESSION: Final = frozenset(
    PIPELINE + name
    for name in (
        "test_html_report.py",
        "test_increments.py",
        "test_kept_traces.py",
        "test_report_layout.py",
        "test_report_progress.py",
        "test_report_requirements.py",
    )
)
#: Seconds per scope in runs of ``pytest -n 4`` and ``-n 6`` (2026-11-27, a 2-core machine):
#: only their order matters.
SECONDS: Final = {
    SPARK: 540,
    PIPELINE + "test_report_progress.py": 160,
    "tests/faults/test_database_outage.py": 127,
    "tests/gateway/serving/http1/test_fuzz.py": 122,
    "tests/gateway/api/console/test_console_in_browser.py": 97,
    "tests/gateway/api/test_older_python_sdks.py": 80,
    "tests/gateway/api/test_node_sdks.py": 56,
    "tests/gateway/cli/test_cli_first_day.py": 53,
    "tests/e2e/test_replicas.py": 52,
    "tests/gateway/pushing/test_worker_process.py": 51,
    "tests/faults/test_front_end_outage.py": 42,
    "tests/gateway/cli/test_cli.py": 40,
    "tests/php/test_php_sdk.py": 40,
    "tests/gateway/serving/test_graceful_shutdown.py": 40,
    "tests/gateway/api/console/test_console_on_screens.py": 39,
    "tests/gateway/testing/test_plugin.py": 39,
    "tests/gateway/pushing/test_worker_breaker.py": 39,
    "tests/gateway/cli/test_replays.py": 39,
    "tests/gateway/store/test_publish_atomicity.py": 36,
    "tests/faults/test_full_disk.py": 36,
    "tests/gateway/api/test_mnscmd.py": 34,
    "tests/e2e/test_ordered_replicas.py": 33,
    "tests/test_docs_examples.py": 29,
    "tests/faults/test_failover.py": 27,
    "tests/receiver/test_fuzz.py": 25,
    "tests/gateway/cli/test_cli_names.py": 23,
    "tests/gateway/serving/http1/test_connections.py": 23,
    "tests/gateway/api/test_temporary_credentials_sdk.py": 22,
    "tests/test_import_graph.py": 21,
    "tests/gateway/api/control/test_endpoint_acl.py": 21,
}
#: The estimate for a scope not in :data:`SECONDS`, per test: the mean of those scopes in that run.
SECONDS_PER_TEST: Final = 0.35


def scope_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    if module.startswith(PIPELINE) and module not in WITHOUT_SESSION:
        return SPARK
    return module


def expected_seconds(scope: str, tests: int) -> float:
    return SECONDS.get(scope, tests * SECONDS_PER_TEST)


class ModulesAndSpark(LoadScopeScheduling):
    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid)

    def _assign_work_unit(self, node: object) -> None:
        # The queue is complete when the first unit is handed out (LoadScopeScheduling.schedule):
        # order it once, longest first.
        if not self._ordered:
            self._ordered = True
            queue = sorted(
                self.workqueue.items(), key=lambda unit: -expected_seconds(unit[0], len(unit[1]))
            )
            self.workqueue.clear()
            self.workqueue.update(queue)
        super()._assign_work_unit(node)  # type: ignore[arg-type]
