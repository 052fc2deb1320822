"""The queue side of the report: per-message lifecycles on queues, from merged per-message facts
(:func:`.facts.merge_facts`), and the per-queue summary built from them."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms.columns import PERCENTILE_ACCURACY


def queue_message_lifecycles(merged: DataFrame) -> DataFrame:
    """One row per queue message: when sent, how often received, highest DequeueCount seen,
    when deleted, whether it was dead-lettered."""
    return merged.where(F.col("queue_name").isNotNull()).select(
        "queue_name",
        "message_id",
        "sends",
        "sent_ms",
        "receives",
        "max_dequeue_count",
        "deleted_ms",
        "dead_letter_ms",
        F.col("dead_letter_ms").isNotNull().alias("dead_lettered"),
    )


def queue_summary(lifecycles: DataFrame, pushed: DataFrame | None = None) -> DataFrame:
    """Per queue: traffic counts, redeliveries, send-to-delete latency, messages nobody took.
    ``pushed`` (:func:`.deliveries.pushed_into_queues`) adds the messages topics pushed into
    the queue: they count as sent, in ``sent`` and on their own in ``from_topics``."""
    redelivered = F.coalesce(F.col("max_dequeue_count"), F.col("receives")) > 1
    to_delete = F.col("deleted_ms") - F.col("sent_ms")
    was_sent = F.col("sent_ms").isNotNull()
    summary = lifecycles.groupBy("queue_name").agg(
        F.sum("sends").alias("api_sent"),
        F.sum("receives").alias("received"),
        F.count_if(F.col("deleted_ms").isNotNull()).alias("deleted"),
        F.count_if(redelivered).alias("redelivered"),
        F.count_if(was_sent & (F.col("receives") == 0)).alias("never_consumed"),
        F.count_if(was_sent & F.col("deleted_ms").isNull()).alias("not_deleted"),
        F.count_if("dead_lettered").alias("dead_letters"),
        F.percentile_approx(to_delete, 0.5, PERCENTILE_ACCURACY).alias("send_to_delete_p50_ms"),
        F.percentile_approx(to_delete, 0.99, PERCENTILE_ACCURACY).alias("send_to_delete_p99_ms"),
    )
    if pushed is None:
        summary = summary.withColumn("from_topics", F.lit(0).cast("long"))
    else:
        summary = summary.join(pushed, "queue_name", "full").withColumn(
            "from_topics", F.coalesce("from_topics", F.lit(0)).cast("long")
        )
    counts = ("received", "deleted", "redelivered", "never_consumed", "not_deleted")
    return summary.select(
        "queue_name",
        (F.coalesce("api_sent", F.lit(0)) + F.col("from_topics")).alias("sent"),
        "from_topics",
        *[F.coalesce(name, F.lit(0)).cast("long").alias(name) for name in counts],
        F.coalesce("dead_letters", F.lit(0)).cast("long").alias("dead_letters"),
        "send_to_delete_p50_ms",
        "send_to_delete_p99_ms",
    )
