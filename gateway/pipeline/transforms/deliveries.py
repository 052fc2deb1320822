"""The topic side of the report, per message: from merged facts (:func:`.facts.merge_facts`)
what a message's delivery to one subscription endpoint tells (:func:`delivery_columns`), with
its publish time from the PublishMessage record when needed (:func:`with_publications`). The
partial summaries are computed from these (:func:`.partials.message_rows`)."""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

SUBSCRIPTION_KEYS: Final = ("topic_name", "subscription_name", "endpoint")
#: Merged figures a delivery's row keeps as they are.
KEPT_FIGURES: Final = (
    "attempts",
    "failed_attempts",
    "replays",
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
    ).select("topic_name", "message_id", "published_ms", "publishes")


def with_publications(merged: DataFrame, *, join_publications: bool) -> DataFrame:
    """The merged facts with ``_publication_ms``, the PublishMessage time of their message,
    for :func:`delivery_columns`. A delivery's publish time comes from the push records'
    PublishTime, else from the PublishMessage record; ``join_publications=False`` skips looking
    for the latter (null), for logs where every push record has a PublishTime (the gateway's
    own), saving a join over all deliveries."""
    if not join_publications:
        return merged.withColumn("_publication_ms", F.lit(None).cast("long"))
    found = publications(merged).select(
        "topic_name", "message_id", F.col("published_ms").alias("_publication_ms")
    )
    return merged.join(found, ["topic_name", "message_id"], "left")


def delivery_columns() -> dict[str, Column]:
    """What a message's delivery to a subscription endpoint tells, by column name, from a row
    of :func:`with_publications`: attempts, whether and when it was delivered, whether the
    first attempt succeeded, dead-lettering, replays, publish-to-delivery latency and the
    times the endpoint health uses. Meaningless (but harmless) on other rows."""
    published = F.coalesce(F.col("publish_time_ms"), F.col("_publication_ms"))
    return {
        "delivered": F.col("first_success_ms").isNotNull(),
        "delivered_ms": F.col("first_success_ms"),
        "first_attempt_succeeded": F.coalesce(F.col("first_attempt_key") % 2 == 0, F.lit(False)),
        "dead_lettered": F.col("dead_letter_ms").isNotNull(),
        "published_ms": published,
        "delivery_latency_ms": F.col("first_success_ms") - published,
        "first_attempt_ms": F.floor(F.col("first_attempt_key") / 2).cast("long"),
        **{name: F.col(name) for name in KEPT_FIGURES},
    }


def timeline_start() -> Column:
    """When a delivery counts in the timeline: its message's publication, else its first push."""
    return F.coalesce("published_ms", "first_attempt_ms")


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
