"""Pure DataFrame -> DataFrame steps of the delivery report; no reads, writes or actions here.

Every function takes and returns lazy DataFrames, so the report runs them as one Spark plan per
output and the tests can feed each a handful of rows with a known answer. Column names of the
normalised events are in :data:`gateway.pipeline.schema.COLUMN_FOR_FIELD`.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from gateway.oplog import Action, Field, Outcome
from gateway.pipeline.schema import (
    ACTION_ORDER,
    COLUMN_FOR_FIELD,
    CORRUPT_RECORD,
    DELETED_ACTIONS,
    HANDLE_ISSUING_ACTIONS,
    INT_FIELDS,
    LONG_FIELDS,
    RECEIVED_ACTIONS,
    SENT_ACTIONS,
    TIME_FIELDS,
)

SUBSCRIPTION_KEYS: Final = ("topic_name", "subscription_name", "endpoint")
LATENCY_PERCENTILES: Final = (0.5, 0.95, 0.99)
PERCENTILE_ACCURACY: Final = 10_000


def parse_records(raw: DataFrame) -> DataFrame:
    """Typed columns for every input line, plus ``is_malformed`` for lines that were not JSON
    objects. Nothing is dropped here, so the input summary can count what gets dropped later."""
    typed = [_typed_column(field).alias(column) for field, column in COLUMN_FOR_FIELD.items()]
    return raw.select(*typed, F.col(CORRUPT_RECORD).isNotNull().alias("is_malformed"))


def usable_events(parsed: DataFrame) -> DataFrame:
    """The events every report is built from: well-formed lines with a readable Time and Action."""
    return parsed.where(_usable()).drop("is_malformed")


def input_summary_columns(since_ms: int | None, until_ms: int | None) -> list[Column]:
    """Aggregate columns over parsed records: lines read, skipped as malformed (not a JSON
    object) or unusable (no readable Time or Action), events inside the time window, and the
    window's actual first and last event. Separate from :func:`input_summary` so the report can
    compute them with ``DataFrame.observe`` during its single pass over the input."""
    in_window = _usable() & _in_window(since_ms, until_ms)
    return [
        F.count(F.lit(1)).alias("lines"),
        F.count_if(F.col("is_malformed")).alias("malformed_lines"),
        F.count_if(~F.col("is_malformed") & ~_usable()).alias("unusable_records"),
        F.count_if(in_window).alias("events_in_window"),
        F.count_if(in_window & F.col("message_id").isNull()).alias("events_without_message_id"),
        F.count_if(
            in_window & _action_is(Action.PUSH_MESSAGE) & F.col("publish_time_ms").isNull()
        ).alias("pushes_without_publish_time"),
        F.min(F.when(in_window, F.col("time_ms"))).alias("first_time_ms"),
        F.max(F.when(in_window, F.col("time_ms"))).alias("last_time_ms"),
    ]


def input_summary(parsed: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """One row of :func:`input_summary_columns`."""
    return parsed.agg(*input_summary_columns(since_ms, until_ms))


def within_time_window(events: DataFrame, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """Events with ``since_ms <= time_ms < until_ms``; a missing bound is open."""
    return events.where(_in_window(since_ms, until_ms))


def attach_message_ids_by_receipt_handle(events: DataFrame) -> DataFrame:
    """Fill ``message_id`` of deletes and visibility changes that only carry a receipt handle
    (the real service logs some operations that way) from the receive or visibility change
    that handed it out."""
    needs_id = F.col("message_id").isNull() & F.col("receipt_handle_in_request").isNotNull()
    handles = (
        events.where(
            F.col("action").isin(*HANDLE_ISSUING_ACTIONS)
            & F.col("receipt_handle_in_response").isNotNull()
            & F.col("message_id").isNotNull()
        )
        .select(
            F.col("queue_name").alias("_queue"),
            F.col("receipt_handle_in_response").alias("_handle"),
            F.col("message_id").alias("_resolved_id"),
        )
        .dropDuplicates(["_queue", "_handle"])
    )
    matched = F.col("queue_name").eqNullSafe(F.col("_queue")) & (
        F.col("receipt_handle_in_request") == F.col("_handle")
    )
    resolved = (
        events.where(needs_id)
        .join(handles, matched, "left")
        .withColumn("message_id", F.col("_resolved_id"))
        .select(*events.columns)
    )
    return events.where(~needs_id).unionByName(resolved)


def topic_publications(events: DataFrame) -> DataFrame:
    """(topic_name, message_id, published_ms): when each message was published."""
    return (
        events.where(_action_is(Action.PUBLISH_MESSAGE) & _present("topic_name", "message_id"))
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
        & _present("topic_name", "subscription_name", "message_id")
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
    is_push = _action_is(Action.PUSH_MESSAGE)
    succeeded = is_push & _push_succeeded()
    # Orders attempts by time; the lowest bit of the smallest key says whether the first failed.
    attempt_key = F.col("time_ms") * 2 + F.when(succeeded, 0).otherwise(1)
    return [
        F.count_if(is_push).alias("attempts"),
        F.count_if(is_push & ~succeeded).alias("failed_attempts"),
        F.bool_or(succeeded).alias("delivered"),
        F.min(F.when(succeeded, F.col("time_ms"))).alias("delivered_ms"),
        F.min(F.when(is_push, attempt_key)).alias("_first_key"),
        F.bool_or(_action_is(Action.DEAD_LETTER)).alias("dead_lettered"),
        F.count_if(_action_is(Action.REPLAY)).alias("replays"),
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
    is_push = _action_is(Action.PUSH_MESSAGE)
    succeeded = is_push & _push_succeeded()
    topic_records = events.where(
        F.col("action").isin(Action.PUSH_MESSAGE.value, Action.PUBLISH_MESSAGE.value)
        & _present("topic_name")
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
            F.count_if(_action_is(Action.PUBLISH_MESSAGE)).alias("published"),
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
        _action_is(Action.PUSH_MESSAGE) & _present("topic_name", "subscription_name")
    )
    per_endpoint = (
        activity.where(_present("subscription_name") & (F.col("attempts") > 0))
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


def queue_message_lifecycles(events: DataFrame) -> DataFrame:
    """One row per queue message: when sent, how often received, highest DequeueCount seen,
    when deleted."""
    sent = F.col("action").isin(*SENT_ACTIONS)
    received = F.col("action").isin(*RECEIVED_ACTIONS)
    deleted = F.col("action").isin(*DELETED_ACTIONS)
    return (
        events.where(_present("queue_name", "message_id"))
        .groupBy("queue_name", "message_id")
        .agg(
            F.count_if(sent).alias("sends"),
            F.min(F.when(sent, F.col("time_ms"))).alias("sent_ms"),
            F.count_if(received).alias("receives"),
            F.max(F.when(received, F.col("dequeue_count"))).alias("max_dequeue_count"),
            F.min(F.when(deleted, F.col("time_ms"))).alias("deleted_ms"),
            F.bool_or(_action_is(Action.DEAD_LETTER)).alias("dead_lettered"),
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


def message_trace(events: DataFrame, message_id: str) -> DataFrame:
    """Every operation of one message in the order they happened, including deletes and
    visibility changes logged with only a receipt handle that one of its operations returned."""
    own = events.where(F.col("message_id") == F.lit(message_id))
    handles = own.where(
        F.col("action").isin(*HANDLE_ISSUING_ACTIONS)
        & F.col("receipt_handle_in_response").isNotNull()
    ).select(F.col("receipt_handle_in_response").alias("receipt_handle_in_request"))
    by_handle = (
        events.where(F.col("message_id").isNull())
        .join(handles, "receipt_handle_in_request", "left_semi")
        .withColumn("message_id", F.lit(message_id))
        .select(*events.columns)
    )
    ranks = F.create_map(*[F.lit(value) for pair in ACTION_ORDER.items() for value in pair])
    return (
        own.unionByName(by_handle)
        .withColumn("action_rank", F.coalesce(ranks[F.col("action")], F.lit(99)))
        .orderBy("time_ms", "action_rank", "attempt")
        .drop("action_rank")
    )


def _typed_column(field: Field) -> Column:
    name = field.value
    text = F.nullif(F.col(name), F.lit(""))
    if field in TIME_FIELDS:
        return F.coalesce(_lenient_integer(name, "BIGINT"), F.unix_millis(F.try_to_timestamp(text)))
    if field in LONG_FIELDS:
        return _lenient_integer(name, "BIGINT")
    if field in INT_FIELDS:
        return _lenient_integer(name, "INT")
    if field is Field.OUTCOME:
        return _ascii_lower(text)
    return text


def _ascii_lower(text: Column) -> Column:
    """Outcomes are ASCII words. ``lower`` applies Spark 4's ICU case mapping to every row and
    loads and compiles ICU on the way, about a CPU-second per report for nothing."""
    return F.translate(text, string.ascii_uppercase, string.ascii_lowercase)


def _lenient_integer(name: str, sql_type: str) -> Column:
    """``"12"``, ``12``, ``"12.0"`` and ``"1.2e1"`` all read as 12; anything else as null.
    SQL ``try_cast`` because ANSI mode (Spark 4's default) makes a plain cast raise."""
    return F.expr(
        f"coalesce(try_cast(`{name}` AS {sql_type}),"
        f" try_cast(try_cast(`{name}` AS DOUBLE) AS {sql_type}))"
    )


def _usable() -> Column:
    return ~F.col("is_malformed") & F.col("time_ms").isNotNull() & F.col("action").isNotNull()


def _in_window(since_ms: int | None, until_ms: int | None) -> Column:
    condition = F.lit(True)
    if since_ms is not None:
        condition &= F.col("time_ms") >= F.lit(since_ms)
    if until_ms is not None:
        condition &= F.col("time_ms") < F.lit(until_ms)
    return condition


def _push_succeeded() -> Column:
    """Success is ``Outcome == "success"``; records without an Outcome (other producers) fall
    back to a 2xx StatusCode."""
    by_status = F.col("status_code").between(200, 299)
    return F.coalesce(F.col("outcome") == F.lit(Outcome.SUCCESS.value), by_status, F.lit(False))


def _action_is(action: Action) -> Column:
    return F.col("action") == F.lit(action.value)


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


def _present(*columns: str) -> Column:
    condition = F.lit(True)
    for column in columns:
        condition &= F.col(column).isNotNull()
    return condition
