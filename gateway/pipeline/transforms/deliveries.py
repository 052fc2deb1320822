"""The topic side of the report, per message: from merged facts (:func:`.facts.merge_facts`)
the deliveries of each message to each subscription endpoint, and the publications. The tables
are summed up from these by way of :mod:`.partials` (:mod:`.tables`).

Rows keep the ``home_partition`` of their message when the merged facts have one."""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms.homes import HOME

SUBSCRIPTION_KEYS: Final = ("topic_name", "subscription_name", "endpoint")

DELIVERY_FIGURES: Final = (
    "attempts",
    "failed_attempts",
    "delivered",
    "delivered_ms",
    "first_attempt_succeeded",
    "dead_lettered",
    "replays",
    "published_ms",
    "delivery_latency_ms",
)
#: Further columns of :func:`message_deliveries` that the endpoint health and timeline use.
TIMES: Final = (
    "first_attempt_ms",
    "last_attempt_ms",
    "last_success_ms",
    "first_failure_ms",
    "last_failure_ms",
    "dead_letter_ms",
    "last_status_code",
)


def publications(merged: DataFrame) -> DataFrame:
    """(topic_name, message_id, published_ms, publishes): the topic messages published."""
    return merged.where(
        F.col("topic_name").isNotNull()
        & F.col("subscription_name").isNull()
        & (F.col("publishes") > 0)
    ).select("topic_name", "message_id", "published_ms", "publishes", *_home(merged))


def message_deliveries(merged: DataFrame, *, join_publications: bool = True) -> DataFrame:
    """One row per message and subscription endpoint: attempts, whether and when it was
    delivered, whether the first attempt succeeded, dead-lettering, replays, and
    publish-to-delivery latency.

    The publish time comes from the push records' PublishTime, else from the PublishMessage
    record; ``join_publications=False`` skips looking for the latter, for logs where every push
    record has a PublishTime (the gateway's own), saving a join over all deliveries.
    """
    rows = merged.where(F.col("subscription_name").isNotNull())
    published = F.col("publish_time_ms")
    if join_publications:
        found = publications(merged).select("topic_name", "message_id", "published_ms")
        rows = rows.drop("published_ms").join(found, ["topic_name", "message_id"], "left")
        published = F.coalesce(published, F.col("published_ms"))
    return rows.select(
        *SUBSCRIPTION_KEYS,
        "message_id",
        "attempts",
        "failed_attempts",
        F.col("first_success_ms").isNotNull().alias("delivered"),
        F.col("first_success_ms").alias("delivered_ms"),
        F.coalesce(F.col("first_attempt_key") % 2 == 0, F.lit(False)).alias(
            "first_attempt_succeeded"
        ),
        F.col("dead_letter_ms").isNotNull().alias("dead_lettered"),
        "replays",
        published.alias("published_ms"),
        (F.col("first_success_ms") - published).alias("delivery_latency_ms"),
        F.floor(F.col("first_attempt_key") / 2).cast("long").alias("first_attempt_ms"),
        *TIMES[1:],
        *_home(merged),
    )


def timeline_start() -> Column:
    """When a delivery counts in the timeline: its message's publication, else its first push."""
    return F.coalesce("published_ms", "first_attempt_ms")


def _home(rows: DataFrame) -> list[str]:
    return [HOME] if HOME in rows.columns else []


def pushed_into_queues(deliveries: DataFrame) -> DataFrame:
    """(queue_name, from_topics): messages delivered into a queue endpoint
    (``acs:mns:region:account:queues/name``), which the queue table counts as sent; from rows
    with an ``endpoint`` and a ``delivered`` count (the subscription partials)."""
    queue = F.regexp_extract("endpoint", r"^acs:mns:[^:]*:[^:]*:queues/([^/?#]+)$", 1)
    per_endpoint = deliveries.groupBy("endpoint").agg(F.sum("delivered").alias("n"))
    return (
        per_endpoint.withColumn("queue_name", queue)
        .where(F.col("queue_name") != "")
        .groupBy("queue_name")
        .agg(F.sum("n").alias("from_topics"))
    )
