"""The queue side of the report: per-message lifecycles on queues and the per-queue summary
built from them."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gateway.oplog import Action
from gateway.pipeline.schema import DELETED_ACTIONS, RECEIVED_ACTIONS, SENT_ACTIONS
from gateway.pipeline.transforms.columns import PERCENTILE_ACCURACY, action_is, present


def queue_message_lifecycles(events: DataFrame) -> DataFrame:
    """One row per queue message: when sent, how often received, highest DequeueCount seen,
    when deleted."""
    sent = F.col("action").isin(*SENT_ACTIONS)
    received = F.col("action").isin(*RECEIVED_ACTIONS)
    deleted = F.col("action").isin(*DELETED_ACTIONS)
    return (
        events.where(present("queue_name", "message_id"))
        .groupBy("queue_name", "message_id")
        .agg(
            F.count_if(sent).alias("sends"),
            F.min(F.when(sent, F.col("time_ms"))).alias("sent_ms"),
            F.count_if(received).alias("receives"),
            F.max(F.when(received, F.col("dequeue_count"))).alias("max_dequeue_count"),
            F.min(F.when(deleted, F.col("time_ms"))).alias("deleted_ms"),
            F.bool_or(action_is(Action.DEAD_LETTER)).alias("dead_lettered"),
        )
    )


def queue_summary(lifecycles: DataFrame) -> DataFrame:
    """Per queue: traffic counts, redeliveries, send-to-delete latency, messages nobody took."""
    redelivered = F.coalesce(F.col("max_dequeue_count"), F.col("receives")) > 1
    to_delete = F.col("deleted_ms") - F.col("sent_ms")
    was_sent = F.col("sent_ms").isNotNull()
    return lifecycles.groupBy("queue_name").agg(
        F.sum("sends").alias("sent"),
        F.sum("receives").alias("received"),
        F.count_if(F.col("deleted_ms").isNotNull()).alias("deleted"),
        F.count_if(redelivered).alias("redelivered"),
        F.count_if(was_sent & (F.col("receives") == 0)).alias("never_consumed"),
        F.count_if(was_sent & F.col("deleted_ms").isNull()).alias("not_deleted"),
        F.count_if("dead_lettered").alias("dead_letters"),
        F.percentile_approx(to_delete, 0.5, PERCENTILE_ACCURACY).alias("send_to_delete_p50_ms"),
        F.percentile_approx(to_delete, 0.99, PERCENTILE_ACCURACY).alias("send_to_delete_p99_ms"),
    )
