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
    rows = with_publications(merged, join_publications=join_publications)
    return rows.where(F.col("subscription_name").isNotNull()).select(
        *SUBSCRIPTION_KEYS, "message_id", *_aliased(delivery_columns()), *_home(merged)
    )


def _aliased(columns: dict[str, Column]) -> list[Column]:
    return [column.alias(name) for name, column in columns.items()]


def with_publications(merged: DataFrame, *, join_publications: bool) -> DataFrame:
    """The merged facts with ``_publication_ms``, the PublishMessage time of their message
    (null without ``join_publications``), for :func:`delivery_columns`."""
    if not join_publications:
        return merged.withColumn("_publication_ms", F.lit(None).cast("long"))
    found = publications(merged).select(
        "topic_name", "message_id", F.col("published_ms").alias("_publication_ms")
    )
    return merged.join(found, ["topic_name", "message_id"], "left")


def delivery_columns() -> dict[str, Column]:
    """What :func:`message_deliveries` tells of a delivery, by column name, from a row of
    :func:`with_publications`; meaningless (but harmless) on other rows."""
    published = F.coalesce(F.col("publish_time_ms"), F.col("_publication_ms"))
    return {
        "attempts": F.col("attempts"),
        "failed_attempts": F.col("failed_attempts"),
        "delivered": F.col("first_success_ms").isNotNull(),
        "delivered_ms": F.col("first_success_ms"),
        "first_attempt_succeeded": F.coalesce(F.col("first_attempt_key") % 2 == 0, F.lit(False)),
        "dead_lettered": F.col("dead_letter_ms").isNotNull(),
        "replays": F.col("replays"),
        "published_ms": published,
        "delivery_latency_ms": F.col("first_success_ms") - published,
        "first_attempt_ms": F.floor(F.col("first_attempt_key") / 2).cast("long"),
        **{name: F.col(name) for name in TIMES[1:]},
    }


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
