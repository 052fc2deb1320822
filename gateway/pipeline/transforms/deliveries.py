"""The topic side of the report, from merged per-message facts (:func:`.facts.merge_facts`):
per-message deliveries and the subscription, histogram, endpoint-health and timeline tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms.columns import PERCENTILE_ACCURACY

SUBSCRIPTION_KEYS: Final = ("topic_name", "subscription_name", "endpoint")
LATENCY_PERCENTILES: Final = (0.5, 0.95, 0.99)

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
    ).select("topic_name", "message_id", "published_ms", "publishes")


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
    )


def subscription_summary(deliveries: DataFrame, published: DataFrame) -> DataFrame:
    """Per topic, subscription and endpoint: the delivery figures of the report's main table.
    ``published`` counts the topic's PublishMessage records (:func:`publications`), shared by
    its subscriptions."""
    per_topic = published.groupBy("topic_name").agg(F.sum("publishes").alias("published"))
    percentiles = F.percentile_approx(
        "delivery_latency_ms", list(LATENCY_PERCENTILES), PERCENTILE_ACCURACY
    )
    summary = deliveries.groupBy(*SUBSCRIPTION_KEYS).agg(
        F.count(F.lit(1)).alias("messages"),
        F.count_if("delivered").alias("delivered"),
        F.sum("attempts").alias("attempts"),
        F.sum("failed_attempts").alias("failed_attempts"),
        F.count_if("first_attempt_succeeded").alias("first_attempt_successes"),
        F.count_if("dead_lettered").alias("dead_letters"),
        F.sum("replays").alias("replays"),
        percentiles.alias("_latency"),
    )
    return summary.join(F.broadcast(per_topic), "topic_name", "left").select(
        *SUBSCRIPTION_KEYS,
        F.coalesce("published", F.lit(0)).alias("published"),
        "messages",
        "delivered",
        "attempts",
        "failed_attempts",
        (F.col("delivered") / F.col("messages")).alias("success_ratio"),
        (F.col("first_attempt_successes") / F.col("messages")).alias("first_attempt_success_ratio"),
        *[
            F.col("_latency")[index].alias(f"latency_p{round(q * 100)}_ms")
            for index, q in enumerate(LATENCY_PERCENTILES)
        ],
        "dead_letters",
        "replays",
    )


def attempts_histogram(deliveries: DataFrame) -> DataFrame:
    """How many messages took 1, 2, 3... push attempts, per subscription and endpoint."""
    return (
        deliveries.where(F.col("attempts") > 0)
        .groupBy(*SUBSCRIPTION_KEYS, "attempts")
        .agg(F.count(F.lit(1)).alias("messages"))
    )


def delivery_timeline(deliveries: DataFrame, bucket_ms: int) -> DataFrame:
    """Per time bucket and subscription: the messages published (first pushed, when the publish
    time is unknown) in the bucket, how many of them were delivered, and the push attempts they
    took. ``success_ratio`` is by message: a subscription that delivers every message after a
    retry is at 100 %, however many attempts failed on the way."""
    started = F.coalesce("published_ms", "first_attempt_ms")
    return (
        deliveries.where(started.isNotNull())
        .withColumn("bucket_start_ms", started - F.pmod(started, F.lit(bucket_ms)))
        .groupBy("bucket_start_ms", *SUBSCRIPTION_KEYS)
        .agg(
            F.count(F.lit(1)).alias("messages"),
            F.count_if("delivered").alias("delivered"),
            F.sum("attempts").alias("attempts"),
        )
        .withColumn("success_ratio", F.col("delivered") / F.col("messages"))
    )


def endpoint_health(deliveries: DataFrame) -> DataFrame:
    """Per subscription endpoint: the last attempt and, when it failed, since when the endpoint
    has been failing (its first failed attempt after its last success) and how many attempts
    failed since. "Currently" means at the end of the logs read.

    Built from per-message facts, which keep a message's first and last failure but not every
    attempt: a message whose retries straddle the endpoint's last success counts with its last
    failure and as one failure. The last outcome and error of a failing endpoint come from the
    traces the report reads for the page (:mod:`.attention`).
    """
    per_endpoint = deliveries.groupBy(*SUBSCRIPTION_KEYS).agg(
        F.sum("attempts").alias("attempts"),
        F.max("last_attempt_ms").alias("last_attempt_ms"),
        F.max("last_success_ms").alias("last_success_ms"),
        F.max_by("last_status_code", "last_attempt_ms").alias("last_status_code"),
    )
    streak = _failures_since_last_success(deliveries, per_endpoint)
    failing = F.col("last_success_ms").isNull() | (
        F.col("last_attempt_ms") > F.col("last_success_ms")
    )
    return (
        _join_on_keys(per_endpoint.where(F.col("attempts") > 0), streak, SUBSCRIPTION_KEYS)
        .withColumn("currently_failing", failing)
        .select(
            *SUBSCRIPTION_KEYS,
            "attempts",
            "last_attempt_ms",
            "last_success_ms",
            F.when(failing, F.col("failing_since_ms")).alias("failing_since_ms"),
            F.when(failing, F.coalesce("consecutive_failures", F.lit(0)))
            .otherwise(0)
            .cast("long")
            .alias("consecutive_failures"),
            F.when(~failing, F.lit("success")).alias("last_outcome"),
            "last_status_code",
            F.lit(None).cast("string").alias("last_error"),
            "currently_failing",
        )
    )


def _failures_since_last_success(deliveries: DataFrame, per_endpoint: DataFrame) -> DataFrame:
    """Per endpoint, the first failure after its last success and how many failed since; the
    per-endpoint last success is broadcast back onto the (many) deliveries."""
    since_success = F.col("last_success_ms")
    all_after = since_success.isNull() | (F.col("first_failure_ms") > since_success)
    straddles = F.col("last_failure_ms") > since_success
    failures = deliveries.select(
        *SUBSCRIPTION_KEYS, "first_failure_ms", "last_failure_ms", "failed_attempts"
    ).where(F.col("failed_attempts") > 0)
    last_success = F.broadcast(per_endpoint.select(*SUBSCRIPTION_KEYS, "last_success_ms"))
    first_after = F.when(all_after, F.col("first_failure_ms")).when(
        straddles, F.col("last_failure_ms")
    )
    counted = F.when(all_after, F.col("failed_attempts")).when(straddles, 1)
    return (
        _join_on_keys(failures, last_success, SUBSCRIPTION_KEYS)
        .groupBy(*SUBSCRIPTION_KEYS)
        .agg(
            F.min(first_after).alias("failing_since_ms"),
            F.sum(counted).alias("consecutive_failures"),
        )
    )


def pushed_into_queues(deliveries: DataFrame) -> DataFrame:
    """(queue_name, from_topics): messages delivered into a queue endpoint
    (``acs:mns:region:account:queues/name``), which the queue table counts as sent."""
    queue = F.regexp_extract("endpoint", r"^acs:mns:[^:]*:[^:]*:queues/([^/?#]+)$", 1)
    per_endpoint = (
        deliveries.where("delivered").groupBy("endpoint").agg(F.count(F.lit(1)).alias("n"))
    )
    return (
        per_endpoint.withColumn("queue_name", queue)
        .where(F.col("queue_name") != "")
        .groupBy("queue_name")
        .agg(F.sum("n").alias("from_topics"))
    )


def _join_on_keys(left: DataFrame, right: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Left join on ``keys`` where null matches null (a subscription without an Endpoint)."""
    renamed = right.select(
        *[F.col(key).alias(f"_key_{key}") for key in keys],
        *[column for column in right.columns if column not in keys],
    )
    condition = F.lit(True)
    for key in keys:
        condition &= F.col(key).eqNullSafe(F.col(f"_key_{key}"))
    return left.join(renamed, condition, "left").drop(*[f"_key_{key}" for key in keys])
