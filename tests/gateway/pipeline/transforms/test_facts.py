"""Per-message facts: one aggregation per batch of log partitions, merged across partitions,
and the input summary they carry."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from gateway.pipeline.transforms import facts, parsing
from tests.gateway.pipeline.conftest import Records
from tests.gateway.pipeline.frames import assert_frames_equal

RawFactory = Callable[[Records], DataFrame]
EventFactory = Callable[[Records], DataFrame]

T0 = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC


def in_partition(events: DataFrame, partition: str) -> DataFrame:
    return events.withColumn("is_malformed", F.lit(False)).withColumn(
        facts.PARTITION, F.lit(partition)
    )


def partials(*batches: tuple[str, DataFrame], with_handles: bool = True) -> DataFrame:
    frames = [
        facts.partition_facts(in_partition(events, label), None, None, with_handles=with_handles)
        for label, events in batches
    ]
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame)
    return combined


def test_input_summary_counts_what_was_skipped_and_the_window(make_raw: RawFactory) -> None:
    raw = make_raw(
        [
            {"Time": str(T0), "Action": "SendMessage", "MessageId": "early"},
            {"Time": str(T0 + 1000), "Action": "DeleteMessage", "ReceiptHandleInRequest": "h"},
            {"Time": str(T0 + 2000), "Action": "PushMessage", "MessageId": "m"},
            {"Time": str(T0 + 9000), "Action": "SendMessage", "MessageId": "late"},
            {"_corrupt_record": "[1, 2]"},
            {"Time": "", "Action": "SendMessage"},
        ]
    )
    parsed = parsing.parse_records(raw).withColumn(facts.PARTITION, F.lit("p"))
    partial = facts.partition_facts(parsed, T0 + 1000, T0 + 9000, with_handles=False)
    assert_frames_equal(
        facts.partition_inputs(partial).drop(facts.HANDLE_ONLY_ROWS),
        [
            Row(
                log_partition="p",
                lines=6,
                malformed_lines=1,
                unusable_records=1,
                events_in_window=2,
                events_without_message_id=1,
                pushes_without_publish_time=1,
                first_time_ms=T0 + 1000,
                last_time_ms=T0 + 2000,
            )
        ],
    )


def push(at: int, message: str, outcome: str) -> dict[str, object]:
    return {
        "time_ms": T0 + at,
        "action": "PushMessage",
        "topic_name": "t",
        "subscription_name": "s",
        "endpoint": "http://e",
        "message_id": message,
        "outcome": outcome,
        "status_code": 200 if outcome == "success" else 503,
        "publish_time_ms": T0,
    }


def test_a_message_across_partitions_merges_into_one_row(make_events: EventFactory) -> None:
    first_hour = [push(10, "m", "http_error"), push(20, "m", "http_error")]
    next_hour = [push(3_600_010, "m", "success")]
    merged = facts.merge_facts(
        partials(("h0", make_events(first_hour)), ("h1", make_events(next_hour))),
        resolve_handles=False,
    )
    assert_frames_equal(
        merged.select(
            "message_id",
            "attempts",
            "failed_attempts",
            "first_attempt_key",
            "first_success_ms",
            "last_failure_ms",
            "last_status_code",
        ),
        [
            Row(
                message_id="m",
                attempts=3,
                failed_attempts=2,
                first_attempt_key=(T0 + 10) * 2 + 1,
                first_success_ms=T0 + 3_600_010,
                last_failure_ms=T0 + 20,
                last_status_code=200,
            )
        ],
    )


def test_id_less_deletes_resolve_through_a_receive_in_an_earlier_partition(
    make_events: EventFactory,
) -> None:
    received = [
        {"time_ms": T0, "action": "SendMessage", "queue_name": "q", "message_id": "a"},
        {
            "time_ms": T0 + 5,
            "action": "ReceiveMessage",
            "queue_name": "q",
            "message_id": "a",
            "receipt_handle_in_response": "h1",
        },
    ]
    deleted = [
        {
            "time_ms": T0 + 3_600_000,
            "action": "DeleteMessage",
            "queue_name": "q",
            "receipt_handle_in_request": "h1",
        }
    ]
    batches = (("h0", make_events(received)), ("h1", make_events(deleted)))
    merged = facts.merge_facts(partials(*batches), resolve_handles=True)
    assert_frames_equal(
        merged.select("message_id", "sends", "receives", "deletes", "deleted_ms"),
        [Row(message_id="a", sends=1, receives=1, deletes=1, deleted_ms=T0 + 3_600_000)],
    )
    without = facts.merge_facts(partials(*batches, with_handles=False), resolve_handles=False)
    assert without.select("deletes").first() == Row(deletes=0)
