"""The whole report job on operation logs written by a real gateway run, numbers checked
against what the test made happen: a flaky endpoint that needs retries, one that ends in dead
letters, a healthy one, and a queue with a redelivered message."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.pipeline.report import add_report_arguments, run_report
from gateway.testing import PushRecorder
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, free_port, start_gateway
from tests.support.pushes import pushes_to


def wait_until(condition: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the gateway never got there"
        time.sleep(0.1)


def drive_topic(account: Account, flaky: PushRecorder, healthy: PushRecorder) -> None:
    topic = account.get_topic("orders")
    topic.create(TopicMeta(logging_enabled=True))
    for name, url in (
        ("flaky", flaky.url),
        ("healthy", healthy.url),
        ("dead", f"http://127.0.0.1:{free_port()}/gone"),
    ):
        topic.get_subscription(name).subscribe(SubscriptionMeta(url))
    for body in ("first", "second"):
        topic.publish_message(TopicMessage(body))


def drive_queue(account: Account) -> None:
    """Two messages; one is received, left to become visible again, received and deleted."""
    queue = account.get_queue("jobs")
    meta = QueueMeta(vis_timeout=1)
    meta.set_logging_enabled(True)
    queue.create(meta)
    queue.set_encoding(False)
    for body in ("a", "b"):
        queue.send_message(Message(body))
    abandoned = queue.receive_message()
    done = queue.receive_message()
    queue.delete_message(done.receipt_handle)
    again = None
    deadline = time.monotonic() + 10
    while again is None and time.monotonic() < deadline:
        try:
            again = queue.receive_message(wait_seconds=1)
        except MNSServerException:
            continue
    assert again is not None and again.message_id == abandoned.message_id
    assert again.dequeue_count == 2
    queue.delete_message(again.receipt_handle)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("gateway-run")
    gateway = start_gateway(
        root / "data",
        {"MNS_GATEWAY_LOG_DIR": str(root / "logs"), "MNS_GATEWAY_RETRY_SCALE": "0.01"},
    )
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        with (
            pushes_to(gateway.url, 500, 500) as flaky,
            pushes_to(gateway.url) as healthy,
        ):
            drive_topic(account, flaky, healthy)
            drive_queue(account)
            flaky.wait_for(4, timeout=15)
            healthy.wait_for(2, timeout=15)

            def both_dead() -> bool:
                answer = json.loads(gateway.raw().send("GET", "/admin/dead-letters").body)
                return [letter["Attempts"] for letter in answer["DeadLetters"]] == [4, 4]

            wait_until(both_dead)
    finally:
        gateway.stop()  # graceful: the operation log is flushed on exit
    yield root / "logs"


@pytest.fixture(scope="module")
def report(
    logs: Path, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict]]:
    out = tmp_path_factory.mktemp("report")
    parser = argparse.ArgumentParser()
    add_report_arguments(parser)
    args = parser.parse_args(["--logs", str(logs), "--out", str(out)])
    assert run_report(args, session_factory=lambda options: spark) == 0
    assert (out / "report.html").stat().st_size > 1000
    tables = {}
    for name in ("subscription_summary", "queue_summary", "endpoint_health", "input_summary"):
        tables[name] = [row.asDict() for row in spark.read.parquet(str(out / name)).collect()]
    return tables


def by(rows: list[dict], key: str) -> dict[str, dict]:
    return {row[key]: row for row in rows}


def test_subscription_figures_match_the_run(report: dict[str, list[dict]]) -> None:
    summary = by(report["subscription_summary"], "subscription_name")
    assert {row["published"] for row in summary.values()} == {2}
    flaky, healthy, dead = summary["flaky"], summary["healthy"], summary["dead"]
    assert (flaky["messages"], flaky["delivered"], flaky["attempts"], flaky["failed_attempts"]) == (
        2,
        2,
        4,
        2,
    )
    assert flaky["first_attempt_success_ratio"] == 0.0 and flaky["success_ratio"] == 1.0
    assert (healthy["delivered"], healthy["attempts"], healthy["first_attempt_success_ratio"]) == (
        2,
        2,
        1.0,
    )
    assert (dead["delivered"], dead["attempts"], dead["dead_letters"]) == (0, 8, 2)
    assert flaky["latency_p50_ms"] > healthy["latency_p50_ms"] >= 0


def test_failing_endpoint_is_reported_with_its_start(report: dict[str, list[dict]]) -> None:
    health = by(report["endpoint_health"], "subscription_name")
    assert health["dead"]["currently_failing"] is True
    assert health["dead"]["consecutive_failures"] == 8
    assert health["dead"]["failing_since_ms"] <= health["dead"]["last_attempt_ms"]
    # The facts keep no text: the last outcome and error come from the traces of the page.
    assert health["dead"]["last_outcome"] == "connection_error"
    assert health["dead"]["last_error"]
    assert health["flaky"]["currently_failing"] is False
    assert health["healthy"]["currently_failing"] is False


def test_queue_figures_match_the_run(report: dict[str, list[dict]]) -> None:
    (jobs,) = [row for row in report["queue_summary"] if row["queue_name"] == "jobs"]
    assert (jobs["sent"], jobs["received"], jobs["deleted"]) == (2, 3, 2)
    assert (jobs["redelivered"], jobs["never_consumed"]) == (1, 0)
    assert jobs["send_to_delete_p99_ms"] >= 1000  # the abandoned one waited out its visibility


def test_nothing_malformed_in_the_gateways_own_logs(report: dict[str, list[dict]]) -> None:
    (summary,) = report["input_summary"]
    assert summary.get("malformed_lines", summary.get("malformed", 0)) == 0
