"""Topic side of the pipeline on a small scripted history with known answers.

Topic "orders", published m1 at +1000, m2 at +2000, m3 at +5000, two subscriptions:
- billing (http://b): m1 times out then succeeds; m2 fails three times and is dead-lettered;
  m3 succeeds at once; its last attempt (m2's third, at +8100) failed.
- audit (http://a): m1 and m2 succeed at once.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql import DataFrame, Row, SparkSession

from gateway.pipeline.transforms import attention, deliveries, tables
from gateway.pipeline.transforms.deliveries import SUBSCRIPTION_KEYS
from gateway.pipeline.transforms.partials import Kind
from tests.gateway.pipeline.conftest import Records, message_rows, partials_of
from tests.gateway.pipeline.frames import assert_frames_equal

EventFactory = Callable[[Records], DataFrame]

T0 = 1_704_067_200_000


def per_message(events: DataFrame, *, join_publications: bool = True) -> DataFrame:
    """Each message's delivery to each subscription endpoint."""
    rows = message_rows(events, Kind.SUBSCRIPTION, join_publications=join_publications)
    return rows.select(*SUBSCRIPTION_KEYS, "message_id", *deliveries.delivery_columns())


def summary_table(summed: DataFrame) -> DataFrame:
    return tables.subscription_summary(summed, tables.subscriptions(summed))


def health_table(summed: DataFrame) -> DataFrame:
    return tables.endpoint_health(summed, tables.subscriptions(summed))


def push(
    at: int, subscription: str, message: str, attempt: int, outcome: str, status: int | None
) -> dict[str, object]:
    endpoint = {"billing": "http://b", "audit": "http://a"}[subscription]
    return {
        "time_ms": T0 + at,
        "action": "PushMessage",
        "topic_name": "orders",
        "subscription_name": subscription,
        "endpoint": endpoint,
        "message_id": message,
        "attempt": attempt,
        "outcome": outcome,
        "status_code": status,
        "error": None if outcome == "success" else f"{outcome} {status}",
    }


def publish(at: int, message: str) -> dict[str, object]:
    return {
        "time_ms": T0 + at,
        "action": "PublishMessage",
        "topic_name": "orders",
        "message_id": message,
    }


HISTORY: Records = [
    publish(1000, "m1"),
    push(1100, "billing", "m1", 1, "timeout", None),
    push(1050, "audit", "m1", 1, "success", 200),
    push(3100, "billing", "m1", 2, "success", 204),
    publish(2000, "m2"),
    push(2040, "audit", "m2", 1, "success", 200),
    push(2100, "billing", "m2", 1, "http_error", 503),
    push(4100, "billing", "m2", 2, "http_error", 503),
    publish(5000, "m3"),
    push(5100, "billing", "m3", 1, "success", 200),
    push(8100, "billing", "m2", 3, "http_error", 503),
    {
        "time_ms": T0 + 8200,
        "action": "DeadLetter",
        "topic_name": "orders",
        "subscription_name": "billing",
        "endpoint": "http://b",
        "message_id": "m2",
    },
]

DELIVERY_COLUMNS = (
    "subscription_name",
    "message_id",
    "attempts",
    "failed_attempts",
    "delivered",
    "first_attempt_succeeded",
    "dead_lettered",
    "published_ms",
    "delivery_latency_ms",
)


def delivery(*values: object) -> Row:
    return Row(**dict(zip(DELIVERY_COLUMNS, values, strict=True)))


EXPECTED_DELIVERIES = [
    delivery("billing", "m1", 2, 1, True, False, False, T0 + 1000, 2100),
    delivery("billing", "m2", 3, 3, False, False, True, T0 + 2000, None),
    delivery("billing", "m3", 1, 0, True, True, False, T0 + 5000, 100),
    delivery("audit", "m1", 1, 0, True, True, False, T0 + 1000, 50),
    delivery("audit", "m2", 1, 0, True, True, False, T0 + 2000, 40),
]


@pytest.fixture(scope="module")
def history(make_events: EventFactory) -> DataFrame:
    return make_events(HISTORY)


#: The timeline's bucket: two seconds, so that the history's three messages fall in three.
BUCKET_MS = 2000


@pytest.fixture(scope="module")
def summed(history: DataFrame) -> DataFrame:
    """The history's partial summaries, computed once for the tests that read the tables (each
    computation costs seconds of Spark's planning, however few its rows). In the timeline's
    two-second buckets: the other tables sum over the buckets, as a report's do."""
    return partials_of(history, bucket_ms=BUCKET_MS)


def test_message_deliveries_joins_publications(history: DataFrame) -> None:
    assert_frames_equal(per_message(history).select(*DELIVERY_COLUMNS), EXPECTED_DELIVERIES)


def test_message_deliveries_uses_publish_time_on_push_records(
    make_events: EventFactory,
) -> None:
    publish_times = {"m1": T0 + 1000, "m2": T0 + 2000, "m3": T0 + 5000}
    records = [
        {**record, "publish_time_ms": publish_times[str(record["message_id"])]}
        for record in HISTORY
        if record["action"] != "PublishMessage"
    ]
    found = per_message(make_events(records), join_publications=False)
    assert_frames_equal(found.select(*DELIVERY_COLUMNS), EXPECTED_DELIVERIES)


def test_subscription_summary(summed: DataFrame) -> None:
    summary = summary_table(summed)
    assert_frames_equal(
        summary,
        [
            Row(
                topic_name="orders",
                subscription_name="billing",
                endpoint="http://b",
                published=3,
                messages=3,
                delivered=2,
                attempts=6,
                failed_attempts=4,
                success_ratio=2 / 3,
                first_attempt_success_ratio=1 / 3,
                latency_p50_ms=100,
                latency_p95_ms=2095,  # 2,100 ms, read from its histogram bucket (2,080-2,111)
                latency_p99_ms=2095,
                dead_letters=1,
                replays=0,
            ),
            Row(
                topic_name="orders",
                subscription_name="audit",
                endpoint="http://a",
                published=3,
                messages=2,
                delivered=2,
                attempts=2,
                failed_attempts=0,
                success_ratio=1.0,
                first_attempt_success_ratio=1.0,
                latency_p50_ms=40,
                latency_p95_ms=50,
                latency_p99_ms=50,
                dead_letters=0,
                replays=0,
            ),
        ],
        rtol=1e-9,
    )


def test_attempts_histogram(summed: DataFrame) -> None:
    histogram = tables.attempts_histogram(summed)
    assert_frames_equal(
        histogram.select("subscription_name", "attempts", "messages"),
        [
            Row(subscription_name="billing", attempts=1, messages=1),
            Row(subscription_name="billing", attempts=2, messages=1),
            Row(subscription_name="billing", attempts=3, messages=1),
            Row(subscription_name="audit", attempts=1, messages=2),
        ],
    )


def test_endpoint_health_reports_failing_since_the_last_success(summed: DataFrame) -> None:
    health = health_table(summed)
    assert_frames_equal(
        health.drop("topic_name"),
        [
            Row(
                subscription_name="billing",
                endpoint="http://b",
                attempts=6,
                last_attempt_ms=T0 + 8100,
                last_success_ms=T0 + 5100,
                failing_since_ms=T0 + 8100,
                consecutive_failures=1,
                last_outcome=None,  # the report fills it in from the endpoint's traces
                last_status_code=503,
                last_error=None,
                currently_failing=True,
            ),
            Row(
                subscription_name="audit",
                endpoint="http://a",
                attempts=2,
                last_attempt_ms=T0 + 2040,
                last_success_ms=T0 + 2040,
                failing_since_ms=None,
                consecutive_failures=0,
                last_outcome="success",
                last_status_code=200,
                last_error=None,
                currently_failing=False,
            ),
        ],
    )


#: audit's m1 fails before and after m2's success.
STRADDLING: Records = [
    push(10, "audit", "m1", 1, "timeout", None),
    push(20, "audit", "m2", 1, "success", 200),
    push(30, "audit", "m1", 2, "timeout", None),
    push(40, "audit", "m1", 3, "timeout", None),
    push(35, "audit", "m3", 1, "timeout", None),
]
#: billing has never succeeded.
NEVER_SUCCEEDED: Records = [
    push(at, "billing", f"m{at}", 1, "timeout", None) for at in (10, 20, 30)
]


@pytest.fixture(scope="module")
def failing_health(make_events: EventFactory) -> DataFrame:
    """The health of two failing endpoints, one history each (no message in common), summed
    once."""
    return health_table(partials_of(make_events(STRADDLING + NEVER_SUCCEEDED))).localCheckpoint()


def test_endpoint_health_counts_a_message_straddling_the_last_success_once(
    failing_health: DataFrame,
) -> None:
    """The facts keep m1's last failure only."""
    assert_frames_equal(
        failing_health.where("subscription_name = 'audit'").select(
            "failing_since_ms", "consecutive_failures", "currently_failing"
        ),
        [Row(failing_since_ms=T0 + 35, consecutive_failures=2, currently_failing=True)],
    )


def test_endpoint_that_never_succeeded_is_failing_since_its_first_attempt(
    failing_health: DataFrame,
) -> None:
    assert_frames_equal(
        failing_health.where("subscription_name = 'billing'").select(
            "failing_since_ms", "consecutive_failures", "last_success_ms"
        ),
        [Row(failing_since_ms=T0 + 10, consecutive_failures=3, last_success_ms=None)],
    )


def test_delivery_timeline_counts_messages_by_publish_time(summed: DataFrame) -> None:
    """billing: m1 (published at +1000) delivered after a retry, m2 (+2000) dead-lettered, m3
    (+5000) delivered; by message, not by attempt."""
    timeline = tables.delivery_timeline(summed, BUCKET_MS)
    assert_frames_equal(
        timeline.select(
            "bucket_start_ms", "subscription_name", "messages", "delivered", "attempts"
        ),
        [
            Row(
                bucket_start_ms=T0, subscription_name="billing", messages=1, delivered=1, attempts=2
            ),
            Row(
                bucket_start_ms=T0 + 2000,
                subscription_name="billing",
                messages=1,
                delivered=0,
                attempts=3,
            ),
            Row(
                bucket_start_ms=T0 + 4000,
                subscription_name="billing",
                messages=1,
                delivered=1,
                attempts=1,
            ),
            Row(bucket_start_ms=T0, subscription_name="audit", messages=1, delivered=1, attempts=1),
            Row(
                bucket_start_ms=T0 + 2000,
                subscription_name="audit",
                messages=1,
                delivered=1,
                attempts=1,
            ),
        ],
    )


def test_pushes_into_queue_endpoints_count_per_queue(make_events: EventFactory) -> None:
    queue = "acs:mns:cn-hangzhou:123:queues/jobs"
    records = [
        {**push(10, "audit", "m1", 1, "success", 201), "endpoint": queue},
        {**push(20, "audit", "m2", 1, "success", 201), "endpoint": queue},
        {**push(30, "audit", "m3", 1, "http_error", 404), "endpoint": queue},
        push(40, "audit", "m4", 1, "success", 200),
    ]
    pushed = deliveries.pushed_into_queues(tables.subscriptions(partials_of(make_events(records))))
    assert_frames_equal(pushed, [Row(queue_name="jobs", from_topics=2)])


def test_status_code_decides_success_when_outcome_is_missing(make_events: EventFactory) -> None:
    records = [
        {**push(10, "audit", "m1", 1, "success", 204), "outcome": None},
        {**push(20, "audit", "m2", 1, "http_error", 500), "outcome": None},
    ]
    assert_frames_equal(
        per_message(make_events(records)).select("message_id", "delivered"),
        [Row(message_id="m1", delivered=True), Row(message_id="m2", delivered=False)],
    )


def test_the_traces_complete_the_last_outcome_of_failing_endpoints(
    summed: DataFrame, spark: SparkSession
) -> None:
    """billing is failing; its trace says the last attempt timed out (no status code)."""
    outcomes = spark.createDataFrame(
        [("orders", "billing", "http://b", "timeout", None, "no answer in 5 s")],
        "topic_name string, subscription_name string, endpoint string,"
        " last_outcome string, last_status_code int, last_error string",
    )
    health = tables.with_last_outcomes(health_table(summed), outcomes)
    assert_frames_equal(
        health.select("subscription_name", *tables.LAST_OUTCOME),
        [
            Row(
                subscription_name="billing",
                last_outcome="timeout",
                last_status_code=None,
                last_error="no answer in 5 s",
            ),
            Row(
                subscription_name="audit",
                last_outcome="success",
                last_status_code=200,
                last_error=None,
            ),
        ],
    )


def test_the_messages_that_need_attention(summed: DataFrame) -> None:
    """m2 was dead-lettered; billing has been failing since m2's last attempt (+8100), so of its
    failed messages only m2 counts, not m1's earlier timeout."""
    chosen = attention.attention_messages(
        summed, health_table(summed), dead_letters=10, per_endpoint=3
    )
    assert_frames_equal(
        chosen.select("reason", "subscription_name", "message_id", "at_ms"),
        [
            Row(
                reason="dead letter", subscription_name="billing", message_id="m2", at_ms=T0 + 8200
            ),
            Row(
                reason="failing endpoint",
                subscription_name="billing",
                message_id="m2",
                at_ms=T0 + 8100,
            ),
        ],
    )
