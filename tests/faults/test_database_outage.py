"""PostgreSQL stopped hard under load and started again a few seconds later, with no restart of
the gateway: requests fail fast with 503 ServiceUnavailable meanwhile, ``/readyz`` fails and
``/healthz`` does not, and afterwards the same processes serve and push again; every
acknowledged send is receivable and every acknowledged publish pushed.

Three topologies: ``serve`` with in-process delivery, ``serve`` with a separate ``mns-gateway
worker``, and two ``serve`` replicas sharing the database.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RunningGateway
from tests.faults.harness import (
    DATABASE_TIMEOUT,
    WorkerProcess,
    assert_quiet_log,
    http_get,
    log_text,
    push_endpoint,
    set_up,
    settle,
    start_serve,
    start_worker,
    traffic,
    until,
)
from tests.postgres import PostgresServer, postgres_server

OUTAGE_SECONDS = 4.0


@pytest.fixture()
def database_server() -> Iterator[PostgresServer]:
    """A server of this test's own: it is stopped and started again."""
    with postgres_server() as server:
        yield server


def probe(port: int, path: str) -> tuple[int, float]:
    status, _, seconds = http_get(port, path)
    return status, seconds


def start_topology(
    topology: str, url: str, tmp_path: Path
) -> tuple[list[RunningGateway], WorkerProcess | None]:
    env = {"MNS_GATEWAY_DATABASE_URL": url}
    if topology == "serve":
        return [start_serve(tmp_path / "a", env)], None
    if topology == "serve+worker":
        api = start_serve(tmp_path / "a", {**env, "MNS_GATEWAY_DELIVERY_THREADS": "0"})
        return [api], start_worker(api, tmp_path / "worker.log")
    return [start_serve(tmp_path / "a", env), start_serve(tmp_path / "b", env)], None


@pytest.mark.parametrize("topology", ["serve", "serve+worker", "two-replicas"])
def test_a_postgresql_outage_is_survived_without_a_restart(
    topology: str, database_server: PostgresServer, tmp_path: Path
) -> None:
    gateways, worker = start_topology(topology, database_server.new_database(), tmp_path)
    pids = [gateway.process.pid for gateway in gateways]
    # Every process's probes: the API's, and the separate worker's.
    ports = [gateway.port for gateway in gateways] + ([worker.port] if worker else [])
    try:
        with push_endpoint() as endpoint:
            set_up(gateways[0].url, endpoint)
            with traffic([gateway.url for gateway in gateways]) as state:
                time.sleep(1.0)
                database_server.stop("immediate")
                down_at = time.monotonic()
                # While it is down: not ready (answered quickly), still alive.
                assert until(lambda: all(probe(p, "/readyz")[0] == 503 for p in ports), 10)
                for port in ports:
                    status, seconds = probe(port, "/readyz")
                    assert (status, seconds < DATABASE_TIMEOUT) == (503, True)
                    assert probe(port, "/healthz")[0] == 200
                    assert probe(port, "/metrics")[0] == 200  # the due gauge is NaN meanwhile
                time.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.monotonic()))
                database_server.start()
                repaired_at = time.monotonic()
                assert until(lambda: all(probe(p, "/readyz")[0] == 200 for p in ports), 15)
                time.sleep(2.0)
            tally = settle(f"PostgreSQL outage ({topology})", gateways[0].url, state,
                           endpoint, repaired_at)  # fmt: skip
        assert [g.process.poll() for g in gateways] == [None] * len(gateways)
        assert [g.process.pid for g in gateways] == pids
        assert all(probe(port, "/healthz")[0] == 200 for port in ports)
        if worker is not None:
            assert worker.process.poll() is None
    finally:
        for gateway in gateways:
            gateway.stop()
        if worker is not None:
            worker.stop()
    assert tally.sends.lost == 0 and tally.publishes.lost == 0, tally.line()
    assert tally.failed_requests > 0, "the outage was not felt: the test tests nothing"
    assert {failure.code for failure in state.failures} == {"ServiceUnavailable"}
    # Refused within the database timeout, not after psycopg's own waits: those that waited
    # for the database at all took about the timeout (the quickest of them, which a busy
    # machine can only slow down, never speed up; 5 s if the setting went unheard), and none
    # hung (the slowest, allowed the seconds a loaded CI machine has been seen to add).
    waited = [failure.seconds for failure in state.failures if failure.seconds >= 1.0]
    assert not waited or min(waited) < DATABASE_TIMEOUT + 1.0, tally.line()
    assert tally.slowest_failure < 3 * DATABASE_TIMEOUT + 2.0, tally.line()
    assert tally.recovery_seconds < 10.0, tally.line()
    logs = log_text(*(g.log_file for g in gateways), worker.log if worker else None)
    assert_quiet_log(logs)
    assert "database unavailable:" in logs and "database available again after" in logs
    # Gunicorn's arbiter did not replace a worker that died meanwhile: no restart at all.
    assert logs.count("Booting worker") == len(gateways)
