"""What waited behind an endpoint outage, from operation-log records written by hand: a delivery
whose last retry is the probe that finds the endpoint still down, and is dead-lettered there,
waited behind the outage from that retry's due time (docs/pipeline.md#endpoint-circuits).

The records go through the report's own steps from the input rows on (parsing, the facts, the
endpoint circuits and their table), on the shared session; the report's whole run on a gateway's
logs is tests/gateway/pipeline/test_report_circuits_from_gateway.py's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from gateway.pipeline.spark_job import endpoint_circuits
from gateway.pipeline.transforms import facts, parsing
from tests.gateway.pipeline.conftest import Records
from tests.gateway.pipeline.test_report import table

T0 = 1_717_200_000_000


def push(at: int, message: str, attempt: int, retry_at: int | None) -> dict[str, object]:
    record: dict[str, object] = {
        "Time": T0 + at,
        "Action": "PushMessage",
        "TopicName": "orders",
        "SubscriptionName": "down",
        "Endpoint": "http://down.example/notify",
        "MessageId": message,
        "PublishTime": T0,
        "Attempt": attempt,
        "Outcome": "connection_error",
        "LatencyMs": 3,
        "Error": "ConnectionRefusedError: [Errno 111] Connection refused",
    }
    if retry_at is not None:
        record["NextAttemptTime"] = T0 + retry_at
    return record


def circuit(at: int, state: str, previous: str) -> dict[str, object]:
    return {
        "Time": T0 + at,
        "Action": "EndpointCircuit",
        "TopicName": "orders",
        "SubscriptionName": "down",
        "CircuitState": state,
        "PreviousCircuitState": previous,
        "FailureRate": 1.0,
    }


def records() -> list[dict[str, object]]:
    """M1 fails twice, its circuit opens with its last retry due, and that retry is the probe:
    it fails, and M1, out of retries, is a dead letter. M2's retry is held to the end."""
    return [
        {"Time": T0, "Action": "PublishMessage", "TopicName": "orders", "MessageId": "M1"},
        {"Time": T0 + 50, "Action": "PublishMessage", "TopicName": "orders", "MessageId": "M2"},
        push(100, "M1", 1, retry_at=1_000),
        push(150, "M2", 1, retry_at=2_500),
        push(1_000, "M1", 2, retry_at=3_000),
        circuit(2_000, "open", "closed"),
        circuit(5_000, "half-open", "open"),
        push(5_000, "M1", 3, retry_at=None),
        {**push(5_001, "M1", 3, retry_at=None), "Action": "DeadLetter", "Error": "retries spent"},
        circuit(5_002, "open", "half-open"),
    ]


@pytest.fixture(scope="module")
def outage(
    spark: SparkSession,
    make_raw: Callable[[Records], DataFrame],
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    # The facts as a report keeps them, per log partition: one partition here. Cut from the
    # plan that made them, as a report reads them back from Parquet: each of the circuits'
    # queries would otherwise plan and run the whole chain from the input rows again.
    parsed = parsing.parse_records(make_raw(records())).withColumn(facts.PARTITION, F.lit("p"))
    all_facts = facts.partition_facts(parsed, None, None, with_handles=False).localCheckpoint()
    out: Path = tmp_path_factory.mktemp("circuit-waits") / "out"
    # The report ends at its latest record, as a report's run does (its summary's last time).
    (shown,) = endpoint_circuits(spark, str(out), all_facts, report_end_ms=T0 + 5_002)
    (row,) = table(spark, out, "endpoint_circuits")
    assert shown["waited"] == row["waited"]  # the page is given what the table holds
    return row


def test_a_retry_spent_on_a_failed_probe_waited_behind_the_outage(outage: dict[str, Any]) -> None:
    assert outage["closed_ms"] is None
    # M1 waited from its last retry's due time (3 s) to the probe (5 s); M2 from 2.5 s on.
    assert (outage["waited"], outage["dead_lettered"], outage["still_waiting"]) == (2, 1, 1)
    assert outage["delivered"] == 0
