"""Partial summaries: the report's tables cut by *home partition*, in a form that adds up.

A message's home is the newest log partition holding any of its facts (:mod:`.homes`). Every
figure the tables show is computed from the merged facts of the messages homed in one
partition and stored as one row kind of the ``partial_summaries`` table, partitioned by home:
counts and sums, latest times, latency histograms (:mod:`.histograms`), the top few dead
letters, and the failures that can still belong to an endpoint's current failing streak. The
tables are these rows summed over all homes (:func:`.tables.subscription_summary` and its
siblings).

An incremental run recomputes only the homes the new logs can change (the partitions read, and
those that were the home of a message found in them) and sums the rest as they are: the cost
follows what is new, not the whole day.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, LongType, StringType, StructField, StructType

from gateway.pipeline.transforms import facts, histograms
from gateway.pipeline.transforms.columns import join_null_safe
from gateway.pipeline.transforms.deliveries import (
    SUBSCRIPTION_KEYS,
    delivery_columns,
    timeline_start,
    with_publications,
)
from gateway.pipeline.transforms.homes import HOME
from gateway.pipeline.transforms.queues import lifecycle_columns


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
    # Queue messages with no send in the logs (a topic pushed them in: the queue's log has their
    # receives and deletes only); the queue table takes them off what topics delivered.
    "received_unsent",
    "deleted_unsent",
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


def partial_summaries(merged: DataFrame, *, join_publications: bool, bucket_ms: int) -> DataFrame:
    """Every kind of partial summary, by home, from merged facts carrying their message's
    ``home_partition``. ``bucket_ms``: the delivery timeline's bucket width.

    Four passes over the merged facts, whatever the number of kinds: the counts of every
    subscription endpoint, topic and queue in one aggregation, the four histograms in another,
    then the failures and the dead letters. Each pass reads the facts again (caching millions of
    wide rows costs more), so fewer passes is what makes a full report cheaper."""
    rows = message_rows(merged, join_publications=join_publications)
    counts = _counts(rows)
    return (
        counts.unionByName(_histograms(rows, bucket_ms))
        .unionByName(_failures(rows, counts))
        .unionByName(_dead_letters(rows))
    )


def message_rows(merged: DataFrame, *, join_publications: bool) -> DataFrame:
    """One row per message key and home with its ``kind`` (a delivery to a subscription
    endpoint, a publication, a queue message) and what the partials are computed from: the
    columns of :func:`.deliveries.delivery_columns` and :func:`.queues.lifecycle_columns` side
    by side, each meaningful for its kind only."""
    rows = with_publications(merged, join_publications=join_publications)
    kind = (
        F.when(F.col("subscription_name").isNotNull(), F.lit(Kind.SUBSCRIPTION.value))
        .when(F.col("queue_name").isNotNull(), F.lit(Kind.QUEUE.value))
        .otherwise(F.lit(Kind.PUBLICATION.value))
    )
    # Both sides tell of dead letters alike: one column each.
    columns = {**delivery_columns(), **lifecycle_columns()}
    return rows.select(
        HOME,
        kind.alias(KIND),
        *facts.KEYS,
        F.col("publishes"),
        *[column.alias(name) for name, column in columns.items()],
    )


def of_kind(partials: DataFrame, kind: Kind) -> DataFrame:
    return partials.where(F.col(KIND) == F.lit(kind.value))


def _conform(rows: DataFrame) -> DataFrame:
    """Rows with every column of the table, null where their kind has none."""
    present = set(rows.columns)
    columns = [
        (F.col(field.name) if field.name in present else F.lit(None))
        .cast(field.dataType)
        .alias(field.name)
        for field in schema().fields
    ]
    return rows.select(*columns)


def _counts(rows: DataFrame) -> DataFrame:
    """Per home and subscription endpoint, topic or queue: the counts and latest times."""
    redelivered = F.coalesce(F.col("max_dequeue_count"), F.col("receives")) > 1
    was_sent = F.col("sent_ms").isNotNull()
    counted = rows.groupBy(HOME, KIND, *_KEY_COLUMNS).agg(
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
        F.sum("publishes").alias("published"),
        F.sum("sends").alias("sent"),
        F.sum("receives").alias("received"),
        F.count_if(F.col("deleted_ms").isNotNull()).alias("deleted"),
        F.count_if(redelivered).alias("redelivered"),
        F.count_if(was_sent & (F.col("receives") == 0)).alias("never_consumed"),
        F.count_if(was_sent & F.col("deleted_ms").isNull()).alias("not_deleted"),
        F.count_if(~was_sent & (F.col("receives") > 0)).alias("received_unsent"),
        F.count_if(~was_sent & F.col("deleted_ms").isNotNull()).alias("deleted_unsent"),
    )
    return _conform(counted)


#: The keys a count or histogram row is about (no message id).
_KEY_COLUMNS: Final = ("topic_name", "subscription_name", "endpoint", "queue_name")


def _histograms(rows: DataFrame, bucket_ms: int) -> DataFrame:
    """The latency, attempts and timeline histograms of deliveries and the send-to-delete
    histogram of queue messages, in one aggregation: every message row counts once in each
    histogram that applies to it."""
    delivery = F.col(KIND) == F.lit(Kind.SUBSCRIPTION.value)
    queue = F.col(KIND) == F.lit(Kind.QUEUE.value)
    started = timeline_start()
    entries = [
        (Kind.DELIVERY_LATENCY, delivery, histograms.bucket(F.col("delivery_latency_ms"))),
        (Kind.ATTEMPTS, delivery & (F.col("attempts") > 0), F.col("attempts")),
        (Kind.TIMELINE, delivery, started - F.pmod(started, F.lit(bucket_ms))),
        (Kind.QUEUE_LATENCY, queue, histograms.bucket(F.col("send_to_delete_ms"))),
    ]
    structs = [
        F.struct(F.lit(kind.value).alias("kind"), F.when(applies, value).alias("bucket"))
        for kind, applies, value in entries
    ]
    entry = F.explode(F.filter(F.array(*structs), lambda item: item["bucket"].isNotNull()))
    exploded = rows.select(HOME, *_KEY_COLUMNS, "delivered", "attempts", entry.alias("_entry"))
    counted = exploded.groupBy(
        HOME,
        F.col("_entry.kind").alias(KIND),
        *_KEY_COLUMNS,
        F.col("_entry.bucket").alias("bucket"),
    ).agg(
        F.count(F.lit(1)).alias("messages"),
        F.count_if("delivered").alias("delivered"),
        F.sum("attempts").alias("attempts"),
    )
    timeline = F.col(KIND) == F.lit(Kind.TIMELINE.value)
    return _conform(counted.withColumn("bucket_width_ms", F.when(timeline, F.lit(bucket_ms))))


def _failures(rows: DataFrame, counts: DataFrame) -> DataFrame:
    """Deliveries with a failure after the latest success among the messages of their home and
    endpoint. The endpoint's latest success over all homes is no earlier, so a failure at or
    before this one cannot be in the endpoint's current failing streak: only these rows are
    kept for it (:func:`.tables.endpoint_health`)."""
    local = of_kind(counts, Kind.SUBSCRIPTION).select(
        HOME, *SUBSCRIPTION_KEYS, F.col("last_success_ms").alias("_home_success")
    )
    failed = rows.where(
        (F.col(KIND) == F.lit(Kind.SUBSCRIPTION.value)) & (F.col("failed_attempts") > 0)
    )
    joined = join_null_safe(failed, local, (HOME, *SUBSCRIPTION_KEYS))
    after = F.col("_home_success").isNull() | (F.col("last_failure_ms") > F.col("_home_success"))
    kept = joined.where(after).select(
        HOME,
        F.lit(Kind.FAILURE.value).alias(KIND),
        *SUBSCRIPTION_KEYS,
        "message_id",
        "first_failure_ms",
        "last_failure_ms",
        "failed_attempts",
    )
    return _conform(kept)


def _dead_letters(rows: DataFrame) -> DataFrame:
    """The latest dead letters of every home, topic deliveries and queue messages alike."""
    dead = rows.where("dead_lettered").select(
        HOME,
        F.lit(Kind.DEAD_LETTER.value).alias(KIND),
        *_KEY_COLUMNS,
        "message_id",
        F.col("dead_letter_ms").alias("at_ms"),
    )
    latest = Window.partitionBy(HOME).orderBy(*latest_first())
    kept = (
        dead.withColumn("_rank", F.row_number().over(latest))
        .where(F.col("_rank") <= DEAD_LETTERS_PER_HOME)
        .drop("_rank")
    )
    return _conform(kept)


def latest_first() -> list[Column]:
    """The order of the page's dead letters and failures: latest first, ties by name, so that
    a report picks the same rows whichever homes it recomputed."""
    return [
        F.desc_nulls_last("at_ms"),
        *[F.asc_nulls_first(key) for key in (*_KEY_COLUMNS, "message_id")],
    ]
