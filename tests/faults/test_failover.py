"""A PostgreSQL failover under load: the primary is killed and its synchronous standby promoted.
The gateway's URL names both hosts with ``target_session_attrs=read-write``; it follows the
promoted standby without a restart and loses nothing acknowledged."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.faults.harness import (
    assert_quiet_log,
    http_get,
    log_text,
    push_endpoint,
    set_up,
    settle,
    start_serve,
    traffic,
    until,
)
from tests.postgres import postgres_server, promote, standby_server


def test_the_gateway_follows_a_failover_to_the_promoted_standby(tmp_path: Path) -> None:
    with postgres_server() as primary:
        database = urlsplit(primary.new_database()).path.lstrip("/")
        with standby_server(primary) as standby, push_endpoint() as endpoint:
            hosts = f"127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
            url = f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write"
            gateway = start_serve(tmp_path / "a", {"MNS_GATEWAY_DATABASE_URL": url})
            pid = gateway.process.pid
            try:
                set_up(gateway.url, endpoint)
                with traffic([gateway.url]) as state:
                    time.sleep(1.0)
                    primary.stop("immediate")
                    time.sleep(1.0)  # what a failover manager takes to decide, at least
                    promote(standby)
                    repaired_at = time.monotonic()
                    assert until(lambda: http_get(gateway.port, "/readyz")[0] == 200, 15)
                    time.sleep(2.0)
                tally = settle("PostgreSQL failover", gateway.url, state, endpoint, repaired_at)
                assert gateway.process.poll() is None and gateway.process.pid == pid
            finally:
                gateway.stop()
    assert tally.sends.lost == 0 and tally.publishes.lost == 0, tally.line()
    assert {failure.code for failure in state.failures} <= {"ServiceUnavailable"}
    assert tally.recovery_seconds < 10.0, tally.line()
    logs = log_text(gateway.log_file)
    assert_quiet_log(logs)
    assert logs.count("Booting worker") == 1
