"""The report's tables: the partial summaries of every home (:mod:`.partials`) summed up.

Each function reads the rows of the kinds it needs from the partials of all homes; counts add
up, latest times take the maximum, percentiles come from the summed histograms
(:mod:`.histograms`), and an endpoint's failing streak is found among the failures the homes
kept for it.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from gateway.pipeline.transforms import histograms
from gateway.pipeline.transforms.columns import join_null_safe
from gateway.pipeline.transforms.deliveries import SUBSCRIPTION_KEYS, pushed_into_queues
from gateway.pipeline.transforms.partials import SUBSCRIPTION_COUNTS, Kind, of_kind

LATENCY_PERCENTILES: Final = (0.5, 0.95, 0.99)
SENT_TO_DELETE_PERCENTILES: Final = (0.5, 0.99)


def subscriptions(partials: DataFrame) -> DataFrame:
    """Per topic, subscription and endpoint, the subscription partials of all homes summed."""
    return (
        of_kind(partials, Kind.SUBSCRIPTION)
        .groupBy(*SUBSCRIPTION_KEYS)
        .agg(
            *[F.sum(name).alias(name) for name in SUBSCRIPTION_COUNTS],
            F.max("last_attempt_ms").alias("last_attempt_ms"),
            F.max("last_success_ms").alias("last_success_ms"),
            F.max_by("last_status_code", "last_attempt_ms").alias("last_status_code"),
        )
    )


def subscription_summary(partials: DataFrame, summed: DataFrame) -> DataFrame:
    """Per topic, subscription and endpoint: the delivery figures of the report's main table.
    ``summed``: :func:`subscriptions`. ``published`` counts the topic's PublishMessage records,
    shared by its subscriptions."""
    per_topic = (
        of_kind(partials, Kind.PUBLICATION)
        .groupBy("topic_name")
        .agg(F.sum("published").alias("published"))
    )
    names = [f"latency_p{round(q * 100)}_ms" for q in LATENCY_PERCENTILES]
    latency = histograms.percentiles(
        of_kind(partials, Kind.DELIVERY_LATENCY), SUBSCRIPTION_KEYS, LATENCY_PERCENTILES, names
    )
    joined = join_null_safe(summed, latency, SUBSCRIPTION_KEYS).join(
        F.broadcast(per_topic), "topic_name", "left"
    )
    return joined.select(
        *SUBSCRIPTION_KEYS,
        F.coalesce("published", F.lit(0)).cast("long").alias("published"),
        "messages",
        "delivered",
        "attempts",
        "failed_attempts",
        (F.col("delivered") / F.col("messages")).alias("success_ratio"),
        (F.col("first_attempt_successes") / F.col("messages")).alias("first_attempt_success_ratio"),
        *names,
        "dead_letters",
        "replays",
    )


def attempts_histogram(partials: DataFrame) -> DataFrame:
    """How many messages took 1, 2, 3... push attempts, per subscription and endpoint."""
    return (
        of_kind(partials, Kind.ATTEMPTS)
        .groupBy(*SUBSCRIPTION_KEYS, F.col("bucket").alias("attempts"))
        .agg(F.sum("messages").alias("messages"))
    )


def delivery_timeline(partials: DataFrame, bucket_ms: int) -> DataFrame:
    """Per time bucket and subscription: the messages published (first pushed, when the publish
    time is unknown) in the bucket, how many of them were delivered, and the push attempts they
    took. ``success_ratio`` is by message: a subscription that delivers every message after a
    retry is at 100 %, however many attempts failed on the way. Homes keep narrower buckets
    whose width divides ``bucket_ms``
    (:func:`gateway.pipeline.increments.timeline_width_fits`)."""
    start = F.col("bucket") - F.pmod(F.col("bucket"), F.lit(bucket_ms))
    return (
        of_kind(partials, Kind.TIMELINE)
        .groupBy(start.alias("bucket_start_ms"), *SUBSCRIPTION_KEYS)
        .agg(
            F.sum("messages").alias("messages"),
            F.sum("delivered").alias("delivered"),
            F.sum("attempts").alias("attempts"),
        )
        .withColumn("success_ratio", F.col("delivered") / F.col("messages"))
    )


def endpoint_health(partials: DataFrame, summed: DataFrame) -> DataFrame:
    """Per subscription endpoint: the last attempt and, when it failed, since when the endpoint
    has been failing (its first failed attempt after its last success) and how many attempts
    failed since. "Currently" means at the end of the logs read. ``summed``:
    :func:`subscriptions`.

    Built from per-message facts, which keep a message's first and last failure but not every
    attempt: a message whose retries straddle the endpoint's last success counts with its last
    failure and as one failure. The last outcome and error of a failing endpoint come from the
    traces the report reads for the page (:mod:`.attention`).
    """
    per_endpoint = summed.where(F.col("attempts") > 0)
    streak = _failures_since_last_success(partials, per_endpoint)
    failing = F.col("last_success_ms").isNull() | (
        F.col("last_attempt_ms") > F.col("last_success_ms")
    )
    return (
        join_null_safe(per_endpoint, streak, SUBSCRIPTION_KEYS)
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


#: What the traces tell of a failing endpoint's last attempt (:func:`with_last_outcomes`).
LAST_OUTCOME: Final = ("last_outcome", "last_status_code", "last_error")


def with_last_outcomes(health: DataFrame, outcomes: DataFrame) -> DataFrame:
    """The endpoint health with the last outcome, status code and error of the endpoints in
    ``outcomes`` (subscription keys and :data:`LAST_OUTCOME`) taken from there, nulls included:
    the facts keep no text, the traces of the endpoints' latest failures do."""
    found = outcomes.select(
        *SUBSCRIPTION_KEYS,
        F.lit(True).alias("_found"),
        *[F.col(name).alias(f"_found_{name}") for name in LAST_OUTCOME],
    )
    joined = join_null_safe(health, F.broadcast(found), SUBSCRIPTION_KEYS)
    replaced = {
        name: F.when(F.col("_found"), F.col(f"_found_{name}")).otherwise(F.col(name)).alias(name)
        for name in LAST_OUTCOME
    }
    return joined.select(*[replaced.get(name, F.col(name)) for name in health.columns])


def _failures_since_last_success(partials: DataFrame, per_endpoint: DataFrame) -> DataFrame:
    """Per endpoint, the first failure after its last success and how many failed since."""
    since_success = F.col("last_success_ms")
    all_after = since_success.isNull() | (F.col("first_failure_ms") > since_success)
    straddles = F.col("last_failure_ms") > since_success
    last_success = F.broadcast(per_endpoint.select(*SUBSCRIPTION_KEYS, "last_success_ms"))
    first_after = F.when(all_after, F.col("first_failure_ms")).when(
        straddles, F.col("last_failure_ms")
    )
    counted = F.when(all_after, F.col("failed_attempts")).when(straddles, 1)
    return (
        join_null_safe(failures(partials), last_success, SUBSCRIPTION_KEYS)
        .groupBy(*SUBSCRIPTION_KEYS)
        .agg(
            F.min(first_after).alias("failing_since_ms"),
            F.sum(counted).alias("consecutive_failures"),
        )
    )


def failures(partials: DataFrame) -> DataFrame:
    """The failed deliveries the homes kept: every one that can be in a failing streak."""
    return of_kind(partials, Kind.FAILURE).select(
        *SUBSCRIPTION_KEYS, "message_id", "first_failure_ms", "last_failure_ms", "failed_attempts"
    )


def queue_summary(partials: DataFrame, summed: DataFrame) -> DataFrame:
    """Per queue: traffic counts, redeliveries, send-to-delete latency, messages nobody took.
    Messages topics pushed into the queue (``summed``: :func:`subscriptions`) count as sent,
    in ``sent`` and on their own in ``from_topics``; those of them no receive (delete) of the
    logs accounts for count as never consumed (not deleted), as sent messages do."""
    counts = ("received", "deleted", "redelivered", "never_consumed", "not_deleted")
    unsent = ("received_unsent", "deleted_unsent")
    per_queue = (
        of_kind(partials, Kind.QUEUE)
        .groupBy("queue_name")
        .agg(
            F.sum("sent").alias("api_sent"),
            *[F.sum(name).alias(name) for name in (*counts, *unsent, "dead_letters")],
        )
    )
    names = [f"send_to_delete_p{round(q * 100)}_ms" for q in SENT_TO_DELETE_PERCENTILES]
    latency = histograms.percentiles(
        of_kind(partials, Kind.QUEUE_LATENCY), ("queue_name",), SENT_TO_DELETE_PERCENTILES, names
    )
    summary = (
        per_queue.join(latency, "queue_name", "left")
        .join(pushed_into_queues(summed), "queue_name", "full")
        .withColumn("from_topics", F.coalesce("from_topics", F.lit(0)).cast("long"))
    )
    for total, unsent_count in (
        ("never_consumed", "received_unsent"),
        ("not_deleted", "deleted_unsent"),
    ):
        waiting = F.greatest(F.col("from_topics") - F.coalesce(unsent_count, F.lit(0)), F.lit(0))
        summary = summary.withColumn(total, F.coalesce(total, F.lit(0)) + waiting)
    return summary.select(
        "queue_name",
        (F.coalesce("api_sent", F.lit(0)) + F.col("from_topics")).alias("sent"),
        "from_topics",
        *[F.coalesce(name, F.lit(0)).cast("long").alias(name) for name in counts],
        F.coalesce("dead_letters", F.lit(0)).cast("long").alias("dead_letters"),
        *names,
    )
