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

The modules that use the session's pool of gateways (tests/conftest.py's ``GatewayPool``: the
API's and the control plane's) go to the first :data:`POOL_WORKERS` workers, and the other
modules to the other workers: each worker that runs one starts the pool's gateways it asks
for, up to five of them (1.25 s of CPU each to start and stop), and with the modules spread
over all six, nearly every worker started nearly every one. A worker whose own kind is used
up takes whatever comes next, so no worker waits.

``--dist loadgroup`` with ``xdist_group`` marks would say the same, but with pytest 9 it groups
nothing: pytest-xdist 3.8 renames a grouped test's ``_nodeid``, which pytest 9 no longer reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from xdist.scheduler import LoadScopeScheduling

PIPELINE: Final = "tests/gateway/pipeline/"
SPARK: Final = "spark"
WITHOUT_SESSION: Final = frozenset(
    PIPELINE + name
    for name in (
        "test_circuit_outages.py",
        "test_html_report.py",
        "test_increments.py",
        "test_kept_traces.py",
        "test_report_layout.py",
        "test_report_progress.py",
        "test_report_requirements.py",
    )
)
#: Seconds per scope, summed from ``--durations=200`` of one ``pytest -n 6`` run on a shared
#: 2-core machine (2026-12-02, 56 min beside another suite: every figure about 2.5 times a
#: quiet run's). Only their order matters; the tests the last session added (the replay
#: CLI's 10 tests took 820 s) were estimated at 0.35 s a test and started last.
SECONDS: Final = {
    SPARK: 2540,
    "tests/gateway/cli/test_deliveries_replay.py": 820,
    "tests/gateway/pipeline/test_report_progress.py": 511,
    "tests/gateway/serving/http1/test_fuzz.py": 474,
    "tests/gateway/store/test_pg_waiting.py": 290,
    "tests/gateway/pushing/test_gateway_egress.py": 257,
    "tests/receiver/test_fuzz.py": 240,
    "tests/gateway/observability/test_otlp_wire.py": 239,
    "tests/test_readme_gunicorn.py": 237,
    "tests/test_docs_standard_webhooks.py": 212,
    "tests/faults/test_retention_crash.py": 178,
    "tests/gateway/cli/test_second_serve.py": 168,
    "tests/helm/test_docs.py": 167,
    "tests/gateway/testing/test_plugin.py": 167,
    "tests/gateway/cli/test_cli_listings.py": 166,
    "tests/gateway/operations/test_endpoint_health_served.py": 159,
    "tests/gateway/store/test_durability.py": 150,
    "tests/gateway/api/console/test_console_in_browser.py": 149,
    "tests/gateway/cli/test_cli.py": 149,
    "tests/gateway/api/test_older_python_sdks.py": 144,
    "tests/gateway/pushing/test_worker_breaker.py": 140,
    "tests/gateway/api/test_mnscmd.py": 140,
    "tests/gateway/store/test_publish_atomicity.py": 133,
    "tests/gateway/cli/test_replays.py": 130,
    "tests/gateway/observability/test_stopping_with_a_slow_collector.py": 126,
    "tests/gateway/api/console/test_circuits_in_browser.py": 124,
    "tests/e2e/test_replicas.py": 119,
    "tests/gateway/api/console/test_console_rules_in_browser.py": 117,
    "tests/faults/test_database_outage.py": 117,
    "tests/gateway/api/console/test_replay_in_browser.py": 112,
    "tests/gateway/cli/test_cli_errors.py": 112,
    "tests/gateway/api/test_node_sdks.py": 105,
    "tests/test_readme.py": 102,
    "tests/faults/test_front_end_outage.py": 99,
    "tests/gateway/pushing/test_gateway_pushes.py": 96,
    "tests/gateway/test_errors.py": 84,
    "tests/test_import_graph.py": 83,
    "tests/gateway/queues/test_states_agree.py": 78,
    "tests/gateway/api/console/test_console_on_screens.py": 67,
    "tests/gateway/observability/test_tracing.py": 65,
    "tests/gateway/store/test_held_backlog.py": 64,
    "tests/gateway/pushing/test_worker_process.py": 63,
    "tests/test_prerequisites.py": 61,
    "tests/gateway/pushing/test_standard_webhooks_pushes.py": 57,
    "tests/gateway/api/test_temporary_credentials_sdk.py": 49,
    "tests/e2e/test_tracing.py": 49,
    "tests/faults/test_full_disk.py": 48,
    "tests/faults/test_failover.py": 48,
    "tests/gateway/store/test_postgres_gevent.py": 44,
    "tests/gateway/pushing/test_sms_and_mail_gateway.py": 43,
    "tests/test_citations.py": 41,
    # Not measured in that run (the PHP SDK was missing there, so it failed at once): 2.5
    # times its figure of 2026-11-27.
    "tests/php/test_php_sdk.py": 100,
}
#: The pool's modules: the API's, but the console's, which start gateways of their own.
POOL: Final = "tests/gateway/api/"
NOT_POOL: Final = "tests/gateway/api/console/"
POOL_WORKERS: Final = 2
#: The estimate for a scope not in :data:`SECONDS`, per test: the mean of those scopes in that run.
SECONDS_PER_TEST: Final = 0.35


def scope_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    if module.startswith(PIPELINE) and module not in WITHOUT_SESSION:
        return SPARK
    return module


def expected_seconds(scope: str, tests: int) -> float:
    return SECONDS.get(scope, tests * SECONDS_PER_TEST)


def uses_the_pool(scope: str) -> bool:
    return scope.startswith(POOL) and not scope.startswith(NOT_POOL)


def next_scope(queue: Iterable[str], pool_worker: bool) -> str:
    """The scope a worker takes next from ``queue`` (in the order they are handed out): the
    first of its own kind, the pool's modules on a pool worker and the others elsewhere, or the
    first of all when none of its kind is left."""
    scopes = list(queue)
    return next((s for s in scopes if uses_the_pool(s) == pool_worker), scopes[0])


def is_pool_worker(worker_id: str) -> bool:
    """``gw0``, ``gw1``...: the first :data:`POOL_WORKERS` of them."""
    return int(worker_id.removeprefix("gw")) < POOL_WORKERS


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
        worker_id: str = node.gateway.id  # type: ignore[attr-defined]
        chosen = next_scope(self.workqueue, is_pool_worker(worker_id))
        self.workqueue.move_to_end(chosen, last=False)
        super()._assign_work_unit(node)  # type: ignore[arg-type]
