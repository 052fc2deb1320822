"""The queue side of the report, per message: the lifecycle of every queue message, from merged
facts (:func:`.facts.merge_facts`). The queue table is summed up from these by way of
:mod:`.partials` (:func:`.tables.queue_summary`)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms.homes import HOME


def queue_message_lifecycles(merged: DataFrame) -> DataFrame:
    """One row per queue message: when sent, how often received, highest DequeueCount seen,
    when deleted and how long after the send, whether it was dead-lettered."""
    home = [HOME] if HOME in merged.columns else []
    return merged.where(F.col("queue_name").isNotNull()).select(
        "queue_name",
        "message_id",
        *[column.alias(name) for name, column in lifecycle_columns().items()],
        *home,
    )


def lifecycle_columns() -> dict[str, Column]:
    """What :func:`queue_message_lifecycles` tells of a queue message, by column name, from its
    merged facts."""
    return {
        "sends": F.col("sends"),
        "sent_ms": F.col("sent_ms"),
        "receives": F.col("receives"),
        "max_dequeue_count": F.col("max_dequeue_count"),
        "deleted_ms": F.col("deleted_ms"),
        "send_to_delete_ms": F.col("deleted_ms") - F.col("sent_ms"),
        "dead_letter_ms": F.col("dead_letter_ms"),
        "dead_lettered": F.col("dead_letter_ms").isNotNull(),
    }
