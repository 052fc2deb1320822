"""The operation-log writer: layout, rotation by time and size, and dropping instead of failing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from gateway.observability.oplog import (
    Action,
    DropReason,
    Field,
    JsonLinesOperationLog,
    NullOperationLog,
    Outcome,
    expired_hours,
    open_operation_log,
    partition_path,
)
from tests.support.clock import Clock

# 2024-03-05 10:59:58 UTC
START = 1_709_636_398.0
CLOCK_START = START


def lines_under(directory: Path) -> dict[str, list[dict[str, object]]]:
    """Relative file path -> parsed records, for every log file under ``directory``."""
    return {
        str(path.relative_to(directory)): [
            json.loads(line) for line in path.read_text().splitlines()
        ]
        for path in sorted(directory.rglob("*.jsonl"))
    }


def dropped(registry: CollectorRegistry, reason: DropReason) -> float:
    value = registry.get_sample_value("mns_oplog_dropped_total", {"reason": reason.value})
    assert value is not None
    return value


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def oplog(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> Iterator[JsonLinesOperationLog]:
    log = JsonLinesOperationLog(tmp_path / "logs", clock=clock, registry=registry)
    yield log
    log.close()


def test_partition_path_is_utc_date_and_hour() -> None:
    assert partition_path(START) == "dt=2024-03-05/hour=10"


def test_record_is_written_as_one_json_line_in_its_hour_partition(
    oplog: JsonLinesOperationLog, tmp_path: Path
) -> None:
    oplog.write(
        {
            Field.ACTION: Action.PUSH_MESSAGE,
            Field.MESSAGE_ID: "m-1",
            Field.TOPIC_NAME: "orders",
            Field.OUTCOME: Outcome.TIMEOUT,
            Field.ATTEMPT: 2,
        }
    )
    assert oplog.flush()

    files = lines_under(tmp_path / "logs")
    assert len(files) == 1
    ((name, records),) = files.items()
    assert name.startswith("dt=2024-03-05/hour=10/oplog-")
    assert records == [
        {
            "Action": "PushMessage",
            "MessageId": "m-1",
            "TopicName": "orders",
            "Outcome": "timeout",
            "Attempt": 2,
            "Time": int(START * 1000),
        }
    ]


def test_caller_supplied_time_is_kept(oplog: JsonLinesOperationLog, tmp_path: Path) -> None:
    oplog.write({"Action": "SendMessage", "Time": 1234})
    assert oplog.flush()
    [records] = lines_under(tmp_path / "logs").values()
    assert records[0]["Time"] == 1234


def test_new_hour_rotates_into_a_new_partition(
    oplog: JsonLinesOperationLog, clock: Clock, tmp_path: Path
) -> None:
    oplog.write({"MessageId": "before"})
    clock.now += 5  # crosses 11:00:00
    oplog.write({"MessageId": "after"})
    assert oplog.flush()

    files = lines_under(tmp_path / "logs")
    by_hour = {
        name.split("/oplog-")[0]: [r["MessageId"] for r in recs] for name, recs in files.items()
    }
    assert by_hour == {"dt=2024-03-05/hour=10": ["before"], "dt=2024-03-05/hour=11": ["after"]}


def test_rotate_seconds_starts_a_new_file_within_the_hour(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    clock.now = START - 1000  # 10:43:18, the whole test stays inside hour 10
    log = JsonLinesOperationLog(tmp_path, clock=clock, rotate_seconds=60, registry=registry)
    try:
        for _ in range(3):
            log.write({"MessageId": "x"})
        clock.now += 60
        log.write({"MessageId": "y"})
        assert log.flush()
    finally:
        log.close()

    contents = [[r["MessageId"] for r in recs] for recs in lines_under(tmp_path).values()]
    assert contents == [["x", "x", "x"], ["y"]]


def test_size_limit_rotates_files_without_splitting_lines(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    record = {"MessageId": "0123456789", "Time": 1}
    line_size = len(json.dumps(record, separators=(",", ":"))) + 1
    log = JsonLinesOperationLog(
        tmp_path, clock=clock, max_file_bytes=line_size * 2, registry=registry
    )
    try:
        for _ in range(5):
            log.write(record)
        assert log.flush()
    finally:
        log.close()

    files = lines_under(tmp_path)
    assert [len(records) for records in files.values()] == [2, 2, 1]
    assert all(path.stat().st_size <= line_size * 2 for path in tmp_path.rglob("*.jsonl"))


def test_two_writers_in_one_process_use_distinct_files(tmp_path: Path, clock: Clock) -> None:
    first = JsonLinesOperationLog(tmp_path, clock=clock, registry=CollectorRegistry())
    second = JsonLinesOperationLog(tmp_path, clock=clock, registry=CollectorRegistry())
    try:
        first.write({"MessageId": "a"})
        second.write({"MessageId": "b"})
        assert first.flush()
        assert second.flush()
    finally:
        first.close()
        second.close()

    contents = sorted(r["MessageId"] for recs in lines_under(tmp_path).values() for r in recs)
    assert contents == ["a", "b"]
    assert len(lines_under(tmp_path)) == 2


def test_unwritable_directory_drops_with_metric_and_never_raises(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the log directory should be")
    log = JsonLinesOperationLog(blocker, clock=clock, registry=registry)
    try:
        for _ in range(3):
            log.write({"MessageId": "lost"})
        assert log.flush()
    finally:
        log.close()

    assert dropped(registry, DropReason.IO_ERROR) == 3
    assert registry.get_sample_value("mns_oplog_written_total") == 0


def test_write_after_close_is_dropped_with_metric(
    oplog: JsonLinesOperationLog, registry: CollectorRegistry
) -> None:
    oplog.close()
    oplog.write({"MessageId": "after close"})
    assert dropped(registry, DropReason.CLOSED) == 1


def test_records_beyond_max_pending_are_dropped_then_the_rest_written(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    log = JsonLinesOperationLog(
        tmp_path, clock=clock, max_pending=2, registry=registry, start_writer=False
    )
    for index in range(3):
        log.write({"MessageId": f"m{index}"})
    assert dropped(registry, DropReason.QUEUE_FULL) == 1

    log.start()
    assert log.flush()
    log.close()
    assert registry.get_sample_value("mns_oplog_written_total") == 2
    [records] = lines_under(tmp_path).values()
    assert [r["MessageId"] for r in records] == ["m0", "m1"]


def test_unserializable_value_is_written_as_text(
    oplog: JsonLinesOperationLog, tmp_path: Path
) -> None:
    oplog.write({"MessageId": "m", "Error": ValueError("boom")})
    assert oplog.flush()
    [records] = lines_under(tmp_path / "logs").values()
    assert records[0]["Error"] == "boom"


def test_non_mapping_is_dropped_not_raised(
    oplog: JsonLinesOperationLog, registry: CollectorRegistry
) -> None:
    oplog.write(42)  # type: ignore[arg-type]
    assert dropped(registry, DropReason.UNSERIALIZABLE) == 1


def test_close_writes_what_was_queued(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    log = JsonLinesOperationLog(tmp_path, clock=clock, registry=registry)
    for index in range(100):
        log.write({"MessageId": f"m{index}"})
    log.close()
    [records] = lines_under(tmp_path).values()
    assert [r["MessageId"] for r in records] == [f"m{index}" for index in range(100)]


def test_open_operation_log_without_directory_is_a_no_op() -> None:
    log = open_operation_log(None)
    assert isinstance(log, NullOperationLog)
    log.write({"MessageId": "ignored"})


def test_open_operation_log_with_directory_writes(tmp_path: Path) -> None:
    log = open_operation_log(str(tmp_path), registry=CollectorRegistry())
    assert isinstance(log, JsonLinesOperationLog)
    log.write({"MessageId": "kept"})
    log.close()
    [records] = lines_under(tmp_path).values()
    assert records[0]["MessageId"] == "kept"


def test_expired_hours_are_whole_hours_past_the_retention() -> None:
    paths = ["dt=2024-03-05/hour=08", "dt=2024-03-05/hour=09", "dt=2024-03-05/hour=10", "x/y"]
    ten_thirty = 1_709_634_600  # 2024-03-05 10:30 UTC
    # Kept an hour: 09:00-10:00 ended 30 minutes ago, within it; 08:00-09:00 is past it.
    assert expired_hours(paths, ten_thirty, 3600) == ["dt=2024-03-05/hour=08"]
    assert expired_hours(paths, ten_thirty + 1800, 3600) == paths[:2]


def test_log_retention_removes_expired_hours_when_a_file_starts(
    tmp_path: Path, clock: Clock, registry: CollectorRegistry
) -> None:
    """``MNS_GATEWAY_LOG_RETENTION``: the hours older than it go, every process's files in them
    (here one left by another writer), and the day's folder once empty."""
    stale = tmp_path / "dt=2024-03-04" / "hour=05"
    stale.mkdir(parents=True)
    (stale / "oplog-other-1-abcd-000001.jsonl").write_text("{}\n")
    log = JsonLinesOperationLog(tmp_path, clock=clock, registry=registry, retention_seconds=3600)
    try:
        log.write({"MessageId": "first"})  # 2024-03-05 10:59:58: a file starts
        assert log.flush()
        assert not (tmp_path / "dt=2024-03-04").exists()
        clock.now += 3600  # 11:59:58: the next hour's file starts; 10:00-11:00 ended just now
        log.write({"MessageId": "later"})
        assert log.flush()
        assert (tmp_path / "dt=2024-03-05/hour=10").exists()
        clock.now += 3600  # 12:59:58: 10:00-11:00 ended more than an hour ago
        log.write({"MessageId": "last"})
        assert log.flush()
        assert not (tmp_path / "dt=2024-03-05/hour=10").exists()
        assert [name.split("/oplog-")[0] for name in sorted(lines_under(tmp_path))] == [
            "dt=2024-03-05/hour=11",
            "dt=2024-03-05/hour=12",
        ]
    finally:
        log.close()
