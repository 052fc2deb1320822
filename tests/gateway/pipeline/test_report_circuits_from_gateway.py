"""The report's endpoint circuits on operation logs written by a real gateway (``mns-gateway
serve``, its breaker's times scaled down by ``MNS_GATEWAY_RETRY_SCALE``): an endpoint that
fails twelve pushes and then recovers (its circuit opens, a probe closes it, its backlog is
delivered), one that never answers (open at the end, with messages published behind it never
tried), and one an operator holds open and hands back. Checked in the ``endpoint_circuits``
table, on the page and in the lines the report prints."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.pipeline.report import add_report_arguments, run_report
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    RunningGateway,
    free_port,
    start_gateway,
)
from tests.support import oplog
from tests.support.pushes import pushes_to

FIRST, SECOND = 15, 5


def wait_until(condition: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the gateway never got there"
        time.sleep(0.1)


def health_of(gateway: RunningGateway, name: str) -> dict[str, Any]:
    answer = gateway.raw().send("GET", f"/admin/topics/orders/subscriptions/{name}/health")
    return dict(json.loads(answer.body))


def state_of(gateway: RunningGateway, name: str) -> str:
    return str(health_of(gateway, name)["State"])


def override(gateway: RunningGateway, name: str, mode: str) -> None:
    path = f"/admin/topics/orders/subscriptions/{name}/circuit?override={mode}"
    assert gateway.raw().send("POST", path).status == 200


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("circuits-run")
    gateway = start_gateway(root / "data", {"MNS_GATEWAY_LOG_DIR": str(root / "logs")})
    try:
        with pushes_to(gateway.url, *[500] * 12) as flaky, pushes_to(gateway.url) as held:
            topic = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_topic("orders")
            topic.create(TopicMeta(logging_enabled=True))
            for name, url, strategy in (
                ("flaky", flaky.url, ""),
                ("held", held.url, ""),
                # Retried for as long as the test runs, so every message is still waiting at
                # the end: under the default three retries, how many a busy machine lets spend
                # their last one (on a probe, dead-lettered) depends on its timing.
                # tests/gateway/pipeline/test_circuit_waits.py counts those.
                ("down", f"http://127.0.0.1:{free_port()}/gone", "EXPONENTIAL_DECAY_RETRY"),
            ):
                meta = SubscriptionMeta(url, notify_strategy=strategy)
                topic.get_subscription(name).subscribe(meta)
            # The report charges a subscription with never-tried messages only from the first
            # message it has a record for (docs/pipeline.md#endpoint-circuits): the first is
            # tried before the rest are published, which a busy machine may push out of order.
            topic.publish_message(TopicMessage("first 0"))
            wait_until(lambda: health_of(gateway, "down")["Failures"] >= 1)
            for n in range(1, FIRST):
                topic.publish_message(TopicMessage(f"first {n}"))
            # flaky: twelve 500s open its circuit; a probe finds it back and closes it.
            wait_until(
                lambda: len(flaky.received) >= 12 + FIRST and state_of(gateway, "flaky") == "closed"
            )
            wait_until(lambda: state_of(gateway, "down") == "open")
            held.wait_for(FIRST)
            override(gateway, "held", "open")  # maintenance: nothing is pushed to it
            for n in range(SECOND):
                topic.publish_message(TopicMessage(f"second {n}"))
            flaky.wait_for(12 + FIRST + SECOND)
            time.sleep(0.5)  # held's deliveries wait behind the override
            assert len(held.received) == FIRST
            override(gateway, "held", "auto")
            held.wait_for(FIRST + SECOND)
    finally:
        gateway.stop()  # graceful: the operation log is flushed on exit
    yield root / "logs"


@pytest.fixture(scope="module")
def report(logs: Path, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("report")
    parser = argparse.ArgumentParser()
    add_report_arguments(parser)
    args = parser.parse_args(["--logs", str(logs), "--out", str(out)])
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert run_report(args, session_factory=lambda options: spark) == 0
    rows = [row.asDict() for row in spark.read.parquet(str(out / "endpoint_circuits")).collect()]
    return {
        "outages": {row["subscription_name"]: row for row in rows},
        "count": len(rows),
        "page": (out / "report.html").read_text(),
        "printed": printed.getvalue().splitlines(),
    }


def test_a_recovered_endpoint_has_one_outage_closed_by_its_probe(report: dict[str, Any]) -> None:
    flaky = report["outages"]["flaky"]
    assert flaky["closed_ms"] > flaky["opened_ms"] and flaky["probes"] >= 1
    assert (flaky["opened_by"], flaky["closed_by"]) == (None, None)
    assert flaky["open_ms"] > 0 and flaky["failure_rate"] >= 0.7
    # What failed, or was published while it was open, waited behind it (a push retried
    # before it opened did not); all delivered once it closed.
    assert 1 <= flaky["waited"] <= FIRST
    assert (flaky["delivered"], flaky["dead_lettered"], flaky["still_waiting"]) == (
        flaky["waited"],
        0,
        0,
    )
    assert flaky["oldest_wait_ms"] > 0


@pytest.fixture(scope="module")
def seen_waiting(logs: Path) -> int:
    """How many of ``down``'s deliveries the logs show waiting behind its outage: all of both
    batches but one whose wait they cannot show. That is a delivery first tried before the
    circuit opened, then spent on a probe so near the end of the run that the retry its failure
    scheduled is due after the last record: the report sees a delivery's first wait and the
    one after its latest failure, not those between (docs/pipeline.md#endpoint-circuits), and
    when the run ends is the machine's timing (once in a suite under load, 19 of 20)."""
    records = oplog.records(logs)
    end = max(record["Time"] for record in records)
    down = [record for record in records if record.get("SubscriptionName") == "down"]
    opened = min(r["Time"] for r in down if r.get("CircuitState") == "open")
    first_try: dict[str, int] = {}
    next_due: dict[str, int] = {}
    for push in (r for r in down if r["Action"] == "PushMessage"):
        message = push["MessageId"]
        first_try[message] = min(first_try.get(message, push["Time"]), push["Time"])
        next_due[message] = max(next_due.get(message, 0), push.get("NextAttemptTime") or 0)
    unseen = [m for m, at in first_try.items() if at < opened and next_due[m] > end]
    assert len(unseen) <= 1, unseen  # the latest probe's delivery, if any
    return FIRST + SECOND - len(unseen)


def test_an_endpoint_still_down_holds_everything_including_what_was_never_tried(
    report: dict[str, Any], seen_waiting: int
) -> None:
    down = report["outages"]["down"]
    assert down["closed_ms"] is None and down["open_ms"] > 0
    # Every delivery of both batches waited behind it; none was delivered, none ran out of
    # retries: all are still waiting (untried, or tried only as a probe).
    assert down["waited"] == seen_waiting
    assert (down["delivered"], down["dead_lettered"]) == (0, 0)
    assert down["still_waiting"] == seen_waiting


def test_an_operators_hold_is_an_outage_opened_and_closed_by_the_operator(
    report: dict[str, Any],
) -> None:
    held = report["outages"]["held"]
    assert (held["opened_by"], held["closed_by"], held["probes"]) == ("open", "auto", 0)
    assert (held["waited"], held["delivered"], held["still_waiting"]) == (SECOND, SECOND, 0)
    assert report["count"] == 3  # one outage each, none for anything else


def test_the_page_has_a_block_per_subscription(report: dict[str, Any], seen_waiting: int) -> None:
    page = report["page"]
    section = page.split("<h2>Endpoint circuits</h2>", 1)[1].split("<h2>", 1)[0]
    for name in ("down", "flaky", "held"):
        assert f"orders / {name}</h3>" in section
    assert "operator (open) / operator (auto)" in section
    assert "still not closed at the end of the logs" in section
    assert f"{seen_waiting} deliveries waited" in section


def test_the_report_prints_a_line_per_subscription(report: dict[str, Any]) -> None:
    printed = [line for line in report["printed"] if line.startswith("endpoint circuit")]
    assert [line.split(":", 1)[0] for line in printed] == [
        "endpoint circuit orders/down",
        "endpoint circuit orders/flaky",
        "endpoint circuit orders/held",
    ]
