"""Queue side of the pipeline on a small scripted history with known answers.

Queue "jobs": q1 is received, left to become visible again, received again and deleted; q2 is
never received; q3 is received and deleted; q4 is received, its visibility changed, never
deleted. Queue "other" has a single message dead-lettered after two receives. Two more
histories have queues of their own: "redelivered" and "fed" (by a topic). The queue table is
computed once for all three.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pyspark.sql import DataFrame, Row

from gateway.pipeline.transforms import queues, tables
from gateway.pipeline.transforms.partials import Kind
from tests.gateway.pipeline.conftest import Records, message_rows, partials_of
from tests.gateway.pipeline.frames import assert_frames_equal

EventFactory = Callable[[Records], DataFrame]

T0 = 1_704_067_200_000


def operation(
    at: int, action: str, message: str, dequeue_count: int | None = None, queue: str = "jobs"
) -> dict[str, object]:
    return {
        "time_ms": T0 + at,
        "action": action,
        "queue_name": queue,
        "message_id": message,
        "dequeue_count": dequeue_count,
    }


HISTORY: Records = [
    operation(100, "SendMessage", "q1"),
    operation(200, "ReceiveMessage", "q1", 1),
    operation(30_200, "ReceiveMessage", "q1", 2),
    operation(30_300, "DeleteMessage", "q1"),
    operation(150, "BatchSendMessage", "q2"),
    operation(160, "SendMessage", "q3"),
    operation(260, "BatchReceiveMessage", "q3", 1),
    operation(400, "BatchDeleteMessage", "q3"),
    operation(170, "SendMessage", "q4"),
    operation(270, "ReceiveMessage", "q4", 1),
    operation(280, "ChangeMessageVisibility", "q4"),
    operation(10, "SendMessage", "z1", queue="other"),
    operation(20, "ReceiveMessage", "z1", 1, queue="other"),
    operation(30, "ReceiveMessage", "z1", 2, queue="other"),
    operation(40, "DeadLetter", "z1", queue="other"),
]


@pytest.fixture
def lifecycles(make_events: EventFactory) -> DataFrame:
    rows = message_rows(make_events(HISTORY), Kind.QUEUE)
    return rows.select("queue_name", "message_id", *queues.lifecycle_columns())


def test_queue_message_lifecycles(lifecycles: DataFrame) -> None:
    assert_frames_equal(
        lifecycles.where("queue_name = 'jobs'").drop(
            "queue_name", "dead_lettered", "dead_letter_ms"
        ),
        [
            Row(
                message_id="q1",
                sends=1,
                sent_ms=T0 + 100,
                receives=2,
                max_dequeue_count=2,
                deleted_ms=T0 + 30_300,
            ),
            Row(
                message_id="q2",
                sends=1,
                sent_ms=T0 + 150,
                receives=0,
                max_dequeue_count=None,
                deleted_ms=None,
            ),
            Row(
                message_id="q3",
                sends=1,
                sent_ms=T0 + 160,
                receives=1,
                max_dequeue_count=1,
                deleted_ms=T0 + 400,
            ),
            Row(
                message_id="q4",
                sends=1,
                sent_ms=T0 + 170,
                receives=1,
                max_dequeue_count=1,
                deleted_ms=None,
            ),
        ],
    )


def queue_table(events: DataFrame) -> DataFrame:
    summed = partials_of(events)
    return tables.queue_summary(summed, tables.subscriptions(summed))


def pushed_into(at: int, message: str, queue: str) -> dict[str, object]:
    """A topic's successful push into a queue endpoint."""
    return {
        "time_ms": T0 + at,
        "action": "PushMessage",
        "topic_name": "orders",
        "subscription_name": f"to-{queue}",
        "endpoint": f"acs:mns:local:1234567890:queues/{queue}",
        "message_id": message,
        "attempt": 1,
        "outcome": "success",
        "status_code": 201,
    }


#: Received twice, never with a DequeueCount.
REDELIVERED: Records = [
    operation(1, "SendMessage", "m", queue="redelivered"),
    operation(2, "ReceiveMessage", "m", queue="redelivered"),
    operation(3, "ReceiveMessage", "m", queue="redelivered"),
]
#: Four messages pushed in by a topic, one received and deleted, one received only.
FED: Records = [
    *(pushed_into(10 * n, f"t{n}", "fed") for n in range(4)),
    operation(100, "ReceiveMessage", "f1", 1, queue="fed"),
    operation(110, "DeleteMessage", "f1", queue="fed"),
    operation(120, "ReceiveMessage", "f2", 1, queue="fed"),
]


@pytest.fixture(scope="module")
def queue_summary(make_events: EventFactory) -> DataFrame:
    """The queue table of the module's histories, each in queues of its own, computed once:
    each computation costs seconds of Spark's planning, however few its rows."""
    return queue_table(make_events(HISTORY + REDELIVERED + FED)).localCheckpoint()


def test_queue_summary(queue_summary: DataFrame) -> None:
    assert_frames_equal(
        queue_summary.where("queue_name IN ('jobs', 'other')"),
        [
            Row(
                queue_name="jobs",
                sent=4,
                from_topics=0,
                received=4,
                deleted=2,
                redelivered=1,
                never_consumed=1,
                not_deleted=2,
                dead_letters=0,
                send_to_delete_p50_ms=240,
                send_to_delete_p99_ms=30_079,  # 30,200 ms, from its bucket (29,952-30,207)
            ),
            Row(
                queue_name="other",
                sent=1,
                from_topics=0,
                received=2,
                deleted=0,
                redelivered=1,
                never_consumed=0,
                not_deleted=1,
                dead_letters=1,
                send_to_delete_p50_ms=None,
                send_to_delete_p99_ms=None,
            ),
        ],
    )


def test_repeated_receives_count_as_redelivery_without_dequeue_count(
    queue_summary: DataFrame,
) -> None:
    assert_frames_equal(
        queue_summary.where("queue_name = 'redelivered'").select("redelivered"),
        [Row(redelivered=1)],
    )


def test_a_queue_fed_by_a_topic_counts_what_waits_in_it(queue_summary: DataFrame) -> None:
    """Two never consumed, three not deleted (failed before: both 0, the queue's log having no
    send)."""
    (row,) = queue_summary.where("queue_name = 'fed'").collect()
    assert (row["sent"], row["from_topics"], row["received"], row["deleted"]) == (4, 4, 2, 1)
    assert (row["never_consumed"], row["not_deleted"]) == (2, 3)
