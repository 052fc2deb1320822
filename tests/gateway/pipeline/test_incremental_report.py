"""Incremental reports: a report kept in one --out reads only new or changed log partitions,
and its tables equal those of a full run over the same logs, whatever arrived late, grew or
disappeared in between; the page of an incremental run names what needs attention."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.gateway.pipeline.frames import assert_frames_equal
from tests.gateway.pipeline.test_report import run

HOUR = 3_600_000
T0 = 1_717_200_000_000  # 2024-06-01 00:00:00 UTC
TABLES = (
    "subscription_summary",
    "attempts_histogram",
    "endpoint_health",
    "delivery_timeline",
    "queue_summary",
    "input_summary",
)


def push(at: int, message: str, attempt: int, ok: bool, subscription: str = "s") -> dict:
    return {
        "Time": at,
        "Action": "PushMessage",
        "TopicName": "t",
        "SubscriptionName": subscription,
        "Endpoint": f"http://{subscription}.example/notify",
        "MessageId": message,
        "PublishTime": T0,
        "Attempt": attempt,
        "Outcome": "success" if ok else "http_error",
        "StatusCode": 200 if ok else 503,
        "Error": None if ok else "<html><body>503 busy</body></html>",
    }


def queue(at: int, action: str, message: str, **fields: object) -> dict:
    return {"Time": at, "Action": action, "QueueName": "q", "MessageId": message, **fields}


#: Hour 00: m1 fails, m2 is delivered, q1 is sent and received. Hour 01: m1 is retried and
#: delivered, q1 deleted, m3 published and dead-lettered.
HOUR_00 = [
    {"Time": T0 + 10, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m1"},
    push(T0 + 20, "m1", 1, False),
    {"Time": T0 + 30, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m2"},
    push(T0 + 40, "m2", 1, True),
    queue(T0 + 50, "SendMessage", "q1"),
    queue(T0 + 60, "ReceiveMessage", "q1", DequeueCount=1, ReceiptHandleInResponse="h1"),
]
HOUR_01 = [
    push(T0 + HOUR + 20, "m1", 2, True),
    queue(T0 + HOUR + 30, "DeleteMessage", "q1", ReceiptHandleInRequest="h1"),
    {"Time": T0 + HOUR + 40, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m3"},
    push(T0 + HOUR + 50, "m3", 1, False, "other"),
    {
        "Time": T0 + HOUR + 60,
        "Action": "DeadLetter",
        "TopicName": "t",
        "SubscriptionName": "other",
        "Endpoint": "http://other.example/notify",
        "MessageId": "m3",
        "Error": "retries exhausted",
    },
]
#: Written late into hour 00, after the report has seen it: m4 and a second receive of q1.
LATE_00 = [
    {"Time": T0 + 70, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m4"},
    push(T0 + 80, "m4", 1, True),
    queue(T0 + 90, "ReceiveMessage", "q1", DequeueCount=2, ReceiptHandleInResponse="h2"),
]


def write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as lines:
        lines.writelines(json.dumps(record) + "\n" for record in records)


def hour(logs: Path, index: int) -> Path:
    return logs / "dt=2024-06-01" / f"hour={index:02d}"


#: Hour 02 is there from the start and never changes: no run after the first reads it again.
HOUR_02 = [
    {"Time": T0 + 2 * HOUR, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m6"},
    push(T0 + 2 * HOUR + 10, "m6", 1, True),
]


def fact_files(out: Path, table: str = "message_facts") -> dict[str, int]:
    """Every file of a table partitioned by log partition (the facts) or by home (the partial
    summaries), by directory and name, with its modification time: a partition that was
    computed again has new files."""
    return {
        str(path.relative_to(out)): path.stat().st_mtime_ns
        for path in (out / table).glob("*=*/*.parquet")
    }


def homes_recomputed(out: Path, before: dict[str, int]) -> set[str]:
    return partitions_rewritten(before, fact_files(out, "partial_summaries"))


def partitions_rewritten(before: dict[str, int], after: dict[str, int]) -> set[str]:
    changed = {name for name in after if before.get(name) != after[name]}
    changed |= {name for name in before if name not in after}
    return {name.split("/")[1].split("%2F")[-1] for name in changed}


def assert_same_tables(spark: SparkSession, incremental: Path, full: Path) -> None:
    for name in TABLES:
        assert_frames_equal(
            spark.read.parquet(str(incremental / name)),
            spark.read.parquet(str(full / name)),
            rtol=1e-9,
        )


@pytest.mark.timeout(900)  # five report runs: minutes when the machine is shared
def test_incremental_runs_equal_full_runs(spark: SparkSession, tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "out"
    write(hour(logs, 0) / "oplog-a.jsonl", HOUR_00)
    write(hour(logs, 2) / "oplog-a.jsonl", HOUR_02)
    assert run(spark, "--logs", str(logs), "--out", str(out)) == 0
    first = fact_files(out)
    assert partitions_rewritten({}, first) == {"hour%3D00", "hour%3D02"}
    first_partials = fact_files(out, "partial_summaries")
    assert partitions_rewritten({}, first_partials) == {"hour%3D00", "hour%3D02"}

    # A new hour arrives, and a late file for an hour already read. Hour 02 shares no message
    # with either: its partial summaries are kept as they are.
    write(hour(logs, 1) / "oplog-a.jsonl", HOUR_01)
    write(hour(logs, 0) / "oplog-b.jsonl", LATE_00)
    assert run(spark, "--logs", str(logs), "--out", str(out)) == 0
    second = fact_files(out)
    assert partitions_rewritten(first, second) == {"hour%3D00", "hour%3D01"}
    # Hour 00 was read again, and m1 and q1, in hours 00 and 01, are homed in 01 now.
    assert homes_recomputed(out, first_partials) == {"hour%3D00", "hour%3D01"}
    assert_the_page_names_what_needs_attention(out / "report.html")
    assert run(spark, "--logs", str(logs), "--out", str(tmp_path / "full1"), "--full") == 0
    assert_same_tables(spark, out, tmp_path / "full1")

    # Hour 01 grows and hour 00 is purged from the logs.
    write(hour(logs, 1) / "oplog-a.jsonl", [push(T0 + HOUR + 90, "m5", 1, True)])
    shutil.rmtree(hour(logs, 0))
    assert run(spark, "--logs", str(logs), "--out", str(out)) == 0
    assert partitions_rewritten(second, fact_files(out)) == {"hour%3D00", "hour%3D01"}
    assert not any("hour%3D00" in name for name in fact_files(out))
    assert run(spark, "--logs", str(logs), "--out", str(tmp_path / "full2"), "--full") == 0
    assert_same_tables(spark, out, tmp_path / "full2")


def assert_the_page_names_what_needs_attention(page_path: Path) -> None:
    """m3, dead-lettered in hour 01 after its endpoint answered with an HTML error page: the
    page links its trace, names the dead letter, and shows the error page as short text."""
    page = page_path.read_text()
    assert '<details id="trace-m3">' in page
    assert '<a href="#trace-m3">m3</a>' in page
    assert "dead letter — t / other" in page
    assert "503 busy" in page and "&lt;html&gt;" not in page
