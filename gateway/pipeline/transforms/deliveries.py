"""The topic side of the report: per-message deliveries and the subscription, histogram,
endpoint-health and timeline tables derived from them and from one pass of topic activity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.oplog import Action, Outcome
from gateway.pipeline.transforms.columns import PERCENTILE_ACCURACY, action_is, present

SUBSCRIPTION_KEYS: Final = ("topic_name", "subscription_name", "endpoint")
LATENCY_PERCENTILES: Final = (0.5, 0.95, 0.99)


def topic_publications(events: DataFrame) -> DataFrame:
    """(topic_name, message_id, published_ms): when each message was published."""
    return (
        events.where(action_is(Action.PUBLISH_MESSAGE) & present("topic_name", "message_id"))
        .groupBy("topic_name", "message_id")
        .agg(F.min("time_ms").alias("published_ms"))
    )


def message_deliveries(events: DataFrame, *, join_publications: bool = True) -> DataFrame:
    """One row per message and subscription endpoint: attempts, whether and when it was
    delivered, whether the first attempt succeeded, dead-lettering, replays, and
    publish-to-delivery latency. DeadLetter and Replay records carry the subscription's Endpoint.

    The publish time comes from the push records' PublishTime, else from the PublishMessage
    record; ``join_publications=False`` skips looking for the latter, for logs where every push
    record has a PublishTime (the gateway's own), saving a join over all push records.
    Otherwise push records are joined with their publication first (one shuffle by topic and
    MessageId, hash join, no sort) and the per-message aggregation reuses that partitioning.
    Every aggregate keeps a fixed-width buffer (counts, longs, booleans), because a string or
    struct min/max would force a sort of all push records.
    """
    relevant = events.where(
        F.col("action").isin(
            Action.PUSH_MESSAGE.value, Action.DEAD_LETTER.value, Action.REPLAY.value
        )
        & present("topic_name", "subscription_name", "message_id")
    )
    if join_publications:
        publications = topic_publications(events).hint("shuffle_hash")
        relevant = relevant.join(publications, ["topic_name", "message_id"], "left")
    else:
        relevant = relevant.withColumn("published_ms", F.lit(None).cast("long"))
    return (
        relevant.groupBy("topic_name", "message_id", "subscription_name", "endpoint")
        .agg(*_delivery_aggregates())
        .withColumn(
            "first_attempt_succeeded", F.coalesce(F.col("_first_key") % 2 == 0, F.lit(False))
        )
        .withColumn("delivery_latency_ms", F.col("delivered_ms") - F.col("published_ms"))
        .select(*SUBSCRIPTION_KEYS, "message_id", *DELIVERY_FIGURES)
    )


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


def _delivery_aggregates() -> list[Column]:
    is_push = action_is(Action.PUSH_MESSAGE)
    succeeded = is_push & _push_succeeded()
    # Orders attempts by time; the lowest bit of the smallest key says whether the first failed.
    attempt_key = F.col("time_ms") * 2 + F.when(succeeded, 0).otherwise(1)
    return [
        F.count_if(is_push).alias("attempts"),
        F.count_if(is_push & ~succeeded).alias("failed_attempts"),
        F.bool_or(succeeded).alias("delivered"),
        F.min(F.when(succeeded, F.col("time_ms"))).alias("delivered_ms"),
        F.min(F.when(is_push, attempt_key)).alias("_first_key"),
        F.bool_or(action_is(Action.DEAD_LETTER)).alias("dead_lettered"),
        F.count_if(action_is(Action.REPLAY)).alias("replays"),
        F.coalesce(F.min("publish_time_ms"), F.min("published_ms")).alias("published_ms"),
    ]


def subscription_summary(deliveries: DataFrame, activity: DataFrame) -> DataFrame:
    """Per topic, subscription and endpoint: the delivery figures of the report's main table.
    ``published`` counts the topic's PublishMessage records (from :func:`topic_activity`),
    shared by its subscriptions."""
    published = activity.groupBy("topic_name").agg(F.sum("published").alias("published"))
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
    return summary.join(F.broadcast(published), "topic_name", "left").select(
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


def topic_activity(events: DataFrame, bucket_ms: int) -> DataFrame:
    """Push attempts, successes, the latest attempt and success, and PublishMessage records per
    topic, subscription, endpoint and time bucket. A small table from one pass over the topic
    records; the timeline, the per-endpoint figures of the endpoint health and the published
    counts are all derived from it instead of each scanning every push record again."""
    is_push = action_is(Action.PUSH_MESSAGE)
    succeeded = is_push & _push_succeeded()
    topic_records = events.where(
        F.col("action").isin(Action.PUSH_MESSAGE.value, Action.PUBLISH_MESSAGE.value)
        & present("topic_name")
    )
    return (
        topic_records.withColumn(
            "bucket_start_ms", F.col("time_ms") - F.pmod("time_ms", F.lit(bucket_ms))
        )
        .groupBy(*SUBSCRIPTION_KEYS, "bucket_start_ms")
        .agg(
            F.count_if(is_push).alias("attempts"),
            F.count_if(succeeded).alias("successes"),
            F.max(F.when(is_push, F.col("time_ms"))).alias("last_attempt_ms"),
            F.max(F.when(succeeded, F.col("time_ms"))).alias("last_success_ms"),
            F.count_if(action_is(Action.PUBLISH_MESSAGE)).alias("published"),
        )
    )


def endpoint_health(events: DataFrame, activity: DataFrame) -> DataFrame:
    """Per subscription endpoint: last attempt and its outcome and, when every attempt since the
    last success failed, since when and how many times in a row. "Currently" means at the end
    of the logs read. The per-endpoint figures come from :func:`topic_activity` of ``events``
    and are few, so they are broadcast back onto the attempts instead of sorting all attempts
    by endpoint and time."""
    succeeded = _push_succeeded()
    attempts = events.where(
        action_is(Action.PUSH_MESSAGE) & present("topic_name", "subscription_name")
    )
    per_endpoint = (
        activity.where(present("subscription_name") & (F.col("attempts") > 0))
        .groupBy(*SUBSCRIPTION_KEYS)
        .agg(
            F.sum("attempts").alias("attempts"),
            F.max("last_attempt_ms").alias("last_attempt_ms"),
            F.max("last_success_ms").alias("last_success_ms"),
        )
    )
    failing = ~succeeded & (
        F.col("last_success_ms").isNull() | (F.col("time_ms") > F.col("last_success_ms"))
    )
    is_last = F.col("time_ms") == F.col("last_attempt_ms")
    return (
        _join_on_keys(attempts, F.broadcast(per_endpoint), SUBSCRIPTION_KEYS)
        .where(failing | is_last)
        .groupBy(*SUBSCRIPTION_KEYS)
        .agg(
            F.max("attempts").alias("attempts"),
            F.max("last_attempt_ms").alias("last_attempt_ms"),
            F.max("last_success_ms").alias("last_success_ms"),
            F.min(F.when(failing, F.col("time_ms"))).alias("failing_since_ms"),
            F.count_if(failing).alias("consecutive_failures"),
            F.max(F.when(is_last, F.col("outcome"))).alias("last_outcome"),
            F.max(F.when(is_last, F.col("status_code"))).alias("last_status_code"),
            F.max(F.when(is_last, F.col("error"))).alias("last_error"),
        )
        .withColumn("currently_failing", F.col("consecutive_failures") > 0)
    )


def delivery_timeline(activity: DataFrame) -> DataFrame:
    """Push attempts and successes per time bucket and subscription, for the success chart,
    from :func:`topic_activity` (whose buckets it keeps)."""
    return (
        activity.where(F.col("attempts") > 0)
        .groupBy("bucket_start_ms", "topic_name", "subscription_name")
        .agg(F.sum("attempts").alias("attempts"), F.sum("successes").alias("successes"))
        .withColumn("success_ratio", F.col("successes") / F.col("attempts"))
    )


def _push_succeeded() -> Column:
    """Success is ``Outcome == "success"``; records without an Outcome (other producers) fall
    back to a 2xx StatusCode."""
    by_status = F.col("status_code").between(200, 299)
    return F.coalesce(F.col("outcome") == F.lit(Outcome.SUCCESS.value), by_status, F.lit(False))


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
