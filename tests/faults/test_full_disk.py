"""A full disk, with no restart of the gateway.

SQLite's data dir: writes fail at once with 503 ServiceUnavailable while reads go on, the store's
writer survives, nothing acknowledged is lost or corrupted (``PRAGMA integrity_check``), and
writes succeed again as soon as space is freed. The operation log's directory: records are
dropped (counted in ``mns_oplog_dropped_total``) and every request goes on.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

from mns.queue import QueueMeta

from tests.faults.disks import small_disk
from tests.faults.harness import (
    assert_quiet_log,
    http_get,
    log_text,
    push_endpoint,
    sdk,
    set_up,
    settle,
    start_serve,
    traffic,
    until,
)

#: 8 KB bodies fill the disk's last free bytes within a second or two of traffic.
BODY = "x" * 8192


def integrity(database: Path) -> str:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])


def test_a_full_sqlite_disk_fails_writes_keeps_reads_and_recovers(tmp_path: Path) -> None:
    log_file = tmp_path / "gateway.log"  # off the disk that fills up
    with small_disk(tmp_path / "disk", 32) as disk, push_endpoint() as endpoint:
        gateway = start_serve(disk.path / "data", {}, log_file=log_file)
        pid = gateway.process.pid
        try:
            set_up(gateway.url, endpoint)
            queue = sdk(gateway.url).get_queue("q")
            with traffic([gateway.url], body=BODY) as state:
                time.sleep(1.0)
                disk.fill()
                assert until(lambda: len(state.failures) >= 4, 20), "the disk never filled"
                # Reads are served from the intact file while writes fail.
                peeked = queue.peek_message().message_body  # bytes: the SDK decodes base64
                assert peeked == BODY.encode()
                assert http_get(gateway.port, "/readyz")[0] == 200
                time.sleep(2.0)
                disk.repair()
                repaired_at = time.monotonic()
                assert until(lambda: state.first_ack_after(repaired_at) is not None, 10)
                time.sleep(1.5)
            tally = settle(f"SQLite full disk ({disk.kind})", gateway.url, state, endpoint,
                           repaired_at)  # fmt: skip
            assert gateway.process.poll() is None and gateway.process.pid == pid
        finally:
            gateway.stop()
        assert integrity(disk.path / "data" / "gateway.sqlite3") == "ok"
    assert tally.sends.lost == 0 and tally.publishes.lost == 0, tally.line()
    assert {failure.code for failure in state.failures} == {"ServiceUnavailable"}
    assert tally.slowest_failure < 2.0, tally.line()
    assert tally.recovery_seconds < 5.0, tally.line()
    logs = log_text(log_file)
    assert_quiet_log(logs)
    assert "database storage unavailable:" in logs and "available again after" in logs
    assert logs.count("Booting worker") == 1


def dropped_records(port: int) -> float:
    metrics = http_get(port, "/metrics")[1].decode()
    found = re.findall(r'^mns_oplog_dropped_total\{reason="io_error"\} (\S+)$', metrics, re.M)
    return float(found[0]) if found else 0.0


def test_a_full_operation_log_disk_drops_records_and_requests_go_on(tmp_path: Path) -> None:
    with small_disk(tmp_path / "logs", 4) as disk, push_endpoint() as endpoint:
        env = {"MNS_GATEWAY_LOG_DIR": str(disk.path / "oplog")}
        gateway = start_serve(tmp_path / "data", env, log_file=tmp_path / "gateway.log")
        try:
            set_up(gateway.url, endpoint)
            logged = QueueMeta()
            logged.set_logging_enabled(True)
            sdk(gateway.url).get_queue("q").set_attributes(logged)
            with traffic([gateway.url]) as state:
                time.sleep(1.0)
                disk.fill()
                assert until(lambda: dropped_records(gateway.port) > 0, 20)
                time.sleep(1.0)
                disk.repair()
                repaired_at = time.monotonic()
                written = sum(f.stat().st_size for f in (disk.path / "oplog").rglob("*.*"))
                time.sleep(1.5)
            tally = settle("operation log disk full", gateway.url, state, endpoint, repaired_at)
            # Records are written again once there is room.
            assert sum(f.stat().st_size for f in (disk.path / "oplog").rglob("*.*")) > written
        finally:
            gateway.stop()
    assert state.failures == [], "requests never fail for the operation log's sake"
    assert tally.sends.lost == 0 and tally.publishes.lost == 0, tally.line()
    assert_quiet_log(log_text(tmp_path / "gateway.log"))
