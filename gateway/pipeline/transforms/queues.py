"""The queue side of the report, per message: what a queue message's merged facts
(:func:`.facts.merge_facts`) tell of its lifecycle. The partial summaries are computed from
these (:func:`.partials.message_rows`) and summed into the queue table
(:func:`.tables.queue_summary`)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def lifecycle_columns() -> dict[str, Column]:
    """What a queue message's merged facts tell, by column name: when sent, how often received,
    the highest DequeueCount seen, when deleted and how long after the send, whether it was
    dead-lettered."""
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
