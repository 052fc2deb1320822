"""Partial summaries: the report's tables cut by *home partition*, in a form that adds up.

A message's home is the newest log partition holding any of its facts (:mod:`.homes`). Every
figure the tables show is computed from the merged facts of the messages homed in one
partition and stored as one row kind of the ``partial_summaries`` table, partitioned by home:
counts and sums, latest times, latency histograms (:mod:`.histograms`), the top few dead
letters, and the failures that can still belong to an endpoint's current failing streak. The
tables are these rows summed over all homes (:func:`.deliveries.subscription_summary` and its
siblings).

An incremental run recomputes only the homes the new logs can change, the partitions that share
a message with them, and sums the rest as they are: the cost follows what is new, not the day.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from gateway.pipeline.transforms import facts, histograms
from gateway.pipeline.transforms.columns import join_null_safe
from gateway.pipeline.transforms.deliveries import SUBSCRIPTION_KEYS, timeline_start
from gateway.pipeline.transforms.homes import HOME


class Kind(StrEnum):
    """What a row of the partial summaries is about, and the table it feeds."""

    SUBSCRIPTION = "subscription"  # delivery counts and latest times per subscription endpoint
    PUBLICATION = "publication"  # PublishMessage records per topic
    DELIVERY_LATENCY = "delivery_latency"  # publish -> first success, per bucket
    ATTEMPTS = "attempts"  # messages by number of push attempts (``bucket``)
    TIMELINE = "timeline"  # messages by publish-time bucket (``bucket``, ``bucket_width_ms``)
    FAILURE = "failure"  # a message that may belong to its endpoint's failing streak
    DEAD_LETTER = "dead_letter"  # one of the latest dead letters of the home
    QUEUE = "queue"  # queue traffic counts
    QUEUE_LATENCY = "queue_latency"  # send -> delete, per bucket


KIND: Final = "kind"
#: Columns identifying a row within its kind (a fact's keys and a bucket); null where they do
#: not apply.
KEYS: Final = (*facts.KEYS, "bucket", "bucket_width_ms")
#: The counts of a subscription endpoint's row, which add up over homes.
SUBSCRIPTION_COUNTS: Final = (
    "messages",
    "delivered",
    "attempts",
    "failed_attempts",
    "first_attempt_successes",
    "dead_letters",
    "replays",
)
#: Figures; all longs except the status code.
FIGURES: Final = (
    *SUBSCRIPTION_COUNTS,
    "published",
    "last_attempt_ms",
    "last_success_ms",
    "last_status_code",
    "first_failure_ms",
    "last_failure_ms",
    "at_ms",
    "sent",
    "received",
    "deleted",
    "redelivered",
    "never_consumed",
    "not_deleted",
)
#: Dead letters each home keeps: the page shows the latest ones overall.
DEAD_LETTERS_PER_HOME: Final = 10


def schema() -> StructType:
    """The partial-summary table's columns, ``home_partition`` last as Spark writes it."""
    texts = ("topic_name", "subscription_name", "endpoint", "queue_name", "message_id")
    fields = [StructField(KIND, StringType())]
    fields += [StructField(name, _type(name, texts)) for name in (*KEYS, *FIGURES)]
    return StructType([*fields, StructField(HOME, StringType())])


def _type(name: str, texts: tuple[str, ...]) -> DataType:
    if name in texts:
        return StringType()
    return IntegerType() if name == "last_status_code" else LongType()


def partial_summaries(
    per_message: DataFrame, publications: DataFrame, lifecycles: DataFrame, bucket_ms: int
) -> DataFrame:
    """Every kind of partial summary, by home, from the messages' deliveries
    (:func:`.deliveries.message_deliveries`), publications and queue lifecycles, each carrying
    its message's ``home_partition``. ``bucket_ms``: the delivery timeline's bucket width."""
    subscriptions = _subscriptions(per_message)
    parts = [
        subscriptions,
        _publications(publications),
        _histogram(Kind.DELIVERY_LATENCY, per_message, SUBSCRIPTION_KEYS, "delivery_latency_ms"),
        _attempts(per_message),
        _timeline(per_message, bucket_ms),
        _failures(per_message, subscriptions),
        _dead_letters(per_message, lifecycles),
        _queues(lifecycles),
        _histogram(Kind.QUEUE_LATENCY, lifecycles, ("queue_name",), "send_to_delete_ms"),
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def of_kind(partials: DataFrame, kind: Kind) -> DataFrame:
    return partials.where(F.col(KIND) == F.lit(kind.value))


def _conform(rows: DataFrame, kind: Kind) -> DataFrame:
    """Rows of one kind with every column of the table, null where the kind has none."""
    present = set(rows.columns)
    columns: list[Column] = [F.lit(kind.value).alias(KIND)]
    for field in schema().fields[1:]:
        column = F.col(field.name) if field.name in present else F.lit(None)
        columns.append(column.cast(field.dataType).alias(field.name))
    return rows.select(*columns)


def _subscriptions(per_message: DataFrame) -> DataFrame:
    rows = per_message.groupBy(HOME, *SUBSCRIPTION_KEYS).agg(
        F.count(F.lit(1)).alias("messages"),
        F.count_if("delivered").alias("delivered"),
        F.sum("attempts").alias("attempts"),
        F.sum("failed_attempts").alias("failed_attempts"),
        F.count_if("first_attempt_succeeded").alias("first_attempt_successes"),
        F.count_if("dead_lettered").alias("dead_letters"),
        F.sum("replays").alias("replays"),
        F.max("last_attempt_ms").alias("last_attempt_ms"),
        F.max("last_success_ms").alias("last_success_ms"),
        F.max_by("last_status_code", "last_attempt_ms").alias("last_status_code"),
    )
    return _conform(rows, Kind.SUBSCRIPTION)


def _publications(publications: DataFrame) -> DataFrame:
    rows = publications.groupBy(HOME, "topic_name").agg(F.sum("publishes").alias("published"))
    return _conform(rows, Kind.PUBLICATION)


def _histogram(kind: Kind, rows: DataFrame, keys: tuple[str, ...], duration: str) -> DataFrame:
    counted = (
        rows.where(F.col(duration).isNotNull())
        .groupBy(HOME, *keys, histograms.bucket(F.col(duration)).alias("bucket"))
        .agg(F.count(F.lit(1)).alias("messages"))
    )
    return _conform(counted, kind)


def _attempts(per_message: DataFrame) -> DataFrame:
    rows = (
        per_message.where(F.col("attempts") > 0)
        .groupBy(HOME, *SUBSCRIPTION_KEYS, F.col("attempts").alias("bucket"))
        .agg(F.count(F.lit(1)).alias("messages"))
    )
    return _conform(rows, Kind.ATTEMPTS)


def _timeline(per_message: DataFrame, bucket_ms: int) -> DataFrame:
    started = timeline_start()
    bucket = (started - F.pmod(started, F.lit(bucket_ms))).alias("bucket")
    rows = (
        per_message.where(started.isNotNull())
        .groupBy(HOME, *SUBSCRIPTION_KEYS, bucket)
        .agg(
            F.count(F.lit(1)).alias("messages"),
            F.count_if("delivered").alias("delivered"),
            F.sum("attempts").alias("attempts"),
        )
        .withColumn("bucket_width_ms", F.lit(bucket_ms))
    )
    return _conform(rows, Kind.TIMELINE)


def _failures(per_message: DataFrame, subscriptions: DataFrame) -> DataFrame:
    """Messages with a failure after the latest success among the messages of their home and
    endpoint. The endpoint's latest success over all homes is no earlier, so a failure at or
    before this one cannot be in the endpoint's current failing streak: only these rows are
    kept for it (:func:`.deliveries.endpoint_health`)."""
    local = subscriptions.select(
        HOME, *SUBSCRIPTION_KEYS, F.col("last_success_ms").alias("_home_success")
    )
    failed = per_message.where(F.col("failed_attempts") > 0)
    joined = join_null_safe(failed, F.broadcast(local), (HOME, *SUBSCRIPTION_KEYS))
    after = F.col("_home_success").isNull() | (F.col("last_failure_ms") > F.col("_home_success"))
    rows = joined.where(after).select(
        HOME,
        *SUBSCRIPTION_KEYS,
        "message_id",
        "first_failure_ms",
        "last_failure_ms",
        "failed_attempts",
    )
    return _conform(rows, Kind.FAILURE)


def _dead_letters(per_message: DataFrame, lifecycles: DataFrame) -> DataFrame:
    """The latest dead letters of every home, topic deliveries and queue messages alike."""
    topic_dead = per_message.where("dead_lettered").select(
        HOME, *SUBSCRIPTION_KEYS, "message_id", F.col("dead_letter_ms").alias("at_ms")
    )
    queue_dead = lifecycles.where("dead_lettered").select(
        HOME,
        "queue_name",
        "message_id",
        F.coalesce("dead_letter_ms", "sent_ms").alias("at_ms"),
    )
    both = topic_dead.unionByName(queue_dead, allowMissingColumns=True)
    latest = Window.partitionBy(HOME).orderBy(*latest_first())
    rows = (
        both.withColumn("_rank", F.row_number().over(latest))
        .where(F.col("_rank") <= DEAD_LETTERS_PER_HOME)
        .drop("_rank")
    )
    return _conform(rows, Kind.DEAD_LETTER)


def latest_first() -> list[Column]:
    """The order of the page's dead letters and failures: latest first, ties by name, so that
    a report picks the same rows whichever homes it recomputed."""
    return [
        F.desc_nulls_last("at_ms"),
        *[F.asc_nulls_first(key) for key in (*SUBSCRIPTION_KEYS, "queue_name", "message_id")],
    ]


def _queues(lifecycles: DataFrame) -> DataFrame:
    redelivered = F.coalesce(F.col("max_dequeue_count"), F.col("receives")) > 1
    was_sent = F.col("sent_ms").isNotNull()
    rows = lifecycles.groupBy(HOME, "queue_name").agg(
        F.sum("sends").alias("sent"),
        F.sum("receives").alias("received"),
        F.count_if(F.col("deleted_ms").isNotNull()).alias("deleted"),
        F.count_if(redelivered).alias("redelivered"),
        F.count_if(was_sent & (F.col("receives") == 0)).alias("never_consumed"),
        F.count_if(was_sent & F.col("deleted_ms").isNull()).alias("not_deleted"),
        F.count_if("dead_lettered").alias("dead_letters"),
    )
    return _conform(rows, Kind.QUEUE)
