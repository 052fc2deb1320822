"""What waited behind each endpoint outage (:mod:`gateway.pipeline.circuits`), from the facts.

A delivery (a message to one subscription) *waits* from when it is due until its next attempt:
its first wait from its publication to its first attempt, its last from its latest retry's
due time (the latest NextAttemptTime of its failed attempts) to the attempt after it, or to its
dead letter: a last retry spent on a probe that failed waited until that probe. It waited
behind an outage when one of those waits overlaps the time the circuit was not closed; it
counts once, in the first such outage. How it ended is its final state:
delivered (its latest attempt succeeded), dead-lettered, or still waiting at the report's end.
Messages of the topic published with no record at all for the subscription yet (held from the
start and never tried) wait from their publication.

Facts keep a delivery's first and last attempts, not every one, so a wait between two failed
retries of the middle is not seen; the report's circuit section counts the deliveries that
waited at their start or at their end, which is where an outage leaves them.

Runs over the facts of the subscriptions that had an outage only, after the other tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from gateway.pipeline.circuits import Outage
from gateway.pipeline.transforms import facts

#: A wait with no end yet.
NEVER: Final = 2**62
_SPANS: Final = StructType(
    [
        StructField("topic_name", StringType()),
        StructField("subscription_name", StringType()),
        StructField("outage", IntegerType()),
        StructField("start_ms", LongType()),
        StructField("end_ms", LongType()),
    ]
)


def circuit_events(all_facts: DataFrame) -> list[str]:
    """The ``circuit`` JSON of every EndpointCircuit record the facts hold."""
    rows = all_facts.where(F.col(facts.CIRCUIT).isNotNull()).select(facts.CIRCUIT).collect()
    return [str(row[0]) for row in rows]


def outage_waits(
    spark: SparkSession, all_facts: DataFrame, found: Sequence[Outage], report_end_ms: int
) -> dict[int, dict[str, int | None]]:
    """Per outage (its index in ``found``): ``waited``, ``oldest_wait_ms``, ``delivered``,
    ``dead_lettered``, ``still_waiting``."""
    if not found:
        return {}
    ends = [report_end_ms + 1 if o.end_ms is None else o.end_ms for o in found]
    spans = spark.createDataFrame(
        [(o.topic, o.subscription, i, o.start_ms, ends[i]) for i, o in enumerate(found)], _SPANS
    )
    subscriptions = spans.select("topic_name", "subscription_name").distinct()
    waits = _delivery_waits(all_facts, subscriptions)
    overlapping = waits.join(F.broadcast(spans), ["topic_name", "subscription_name"]).where(
        _overlaps("a1", "b1") | _overlaps("a2", "b2")
    )
    end = F.lit(report_end_ms)
    waited = F.greatest(
        F.when(_overlaps("a1", "b1"), F.least("b1", end) - F.col("a1")),
        F.when(_overlaps("a2", "b2"), F.least("b2", end) - F.col("a2")),
    )
    first = Window.partitionBy("topic_name", "subscription_name", "message_id").orderBy("outage")
    counted = (
        overlapping.withColumn("_wait", waited)
        .withColumn("_rank", F.row_number().over(first))
        .where(F.col("_rank") == 1)
        .groupBy("outage")
        .agg(
            F.count(F.lit(1)).alias("waited"),
            F.max("_wait").alias("oldest_wait_ms"),
            F.count_if(F.col("fate") == "delivered").alias("delivered"),
            F.count_if(F.col("fate") == "dead_lettered").alias("dead_lettered"),
            F.count_if(F.col("fate") == "still_waiting").alias("still_waiting"),
        )
    )
    result: dict[int, dict[str, int | None]] = {i: _nothing() for i in range(len(found))}
    for row in counted.collect():
        figures = row.asDict()
        result[int(figures.pop("outage"))] = {k: _int(v) for k, v in figures.items()}
    return result


def _overlaps(start: str, end: str) -> Column:
    return (
        F.col(start).isNotNull()
        & (F.col(start) < F.col("end_ms"))
        & (F.col(end) > F.col("start_ms"))
    )


def _delivery_waits(all_facts: DataFrame, subscriptions: DataFrame) -> DataFrame:
    """(topic_name, subscription_name, message_id, a1, b1, a2, b2, fate): each delivery of
    ``subscriptions``' first and last waits, and how it ended."""
    rows = all_facts.where(F.col("subscription_name").isNotNull()).join(
        F.broadcast(subscriptions), ["topic_name", "subscription_name"], "left_semi"
    )
    merged = facts.merge_facts(rows, resolve_handles=False)
    first_attempt = F.floor(F.col("first_attempt_key") / 2).cast("long")
    delivered = F.col("last_success_ms").isNotNull() & (
        F.col("last_failure_ms").isNull() | (F.col("last_success_ms") > F.col("last_failure_ms"))
    )
    attempted = merged.select(
        "topic_name",
        "subscription_name",
        "message_id",
        F.coalesce("publish_time_ms", first_attempt, "dead_letter_ms").alias("a1"),
        F.coalesce(first_attempt, "dead_letter_ms", F.lit(NEVER)).alias("b1"),
        F.col("retry_due_ms").alias("a2"),
        F.when(delivered, F.col("last_success_ms"))
        .when(F.col("dead_letter_ms").isNotNull(), F.col("dead_letter_ms"))
        .otherwise(F.lit(NEVER))
        .alias("b2"),
        F.when(delivered, "delivered")
        .when(F.col("dead_letter_ms").isNotNull(), "dead_lettered")
        .otherwise("still_waiting")
        .alias("fate"),
    )
    return attempted.unionByName(_never_tried(all_facts, subscriptions, attempted))


def _never_tried(all_facts: DataFrame, subscriptions: DataFrame, attempted: DataFrame) -> DataFrame:
    """Messages of the topics published with no record yet for the subscription: waiting since
    their publication. Only those published once the subscription had a record (its first
    delivery's), so that one created later is not charged with its topic's older messages."""
    topics = subscriptions.select("topic_name").distinct()
    published = (
        all_facts.where(
            F.col("subscription_name").isNull()
            & F.col("message_id").isNotNull()
            & (F.col("publishes") > 0)
        )
        .join(F.broadcast(topics), "topic_name", "left_semi")
        .groupBy("topic_name", "message_id")
        .agg(F.min("published_ms").alias("a1"))
    )
    since = attempted.groupBy("topic_name", "subscription_name").agg(F.min("a1").alias("_since"))
    candidates = published.join(
        F.broadcast(subscriptions.join(since, ["topic_name", "subscription_name"], "left")),
        "topic_name",
    ).where(F.col("_since").isNotNull() & (F.col("a1") >= F.col("_since")))
    keys = ["topic_name", "subscription_name", "message_id"]
    return candidates.join(attempted.select(*keys), keys, "left_anti").select(
        *keys,
        "a1",
        F.lit(NEVER).alias("b1"),
        F.lit(None).cast("long").alias("a2"),
        F.lit(None).cast("long").alias("b2"),
        F.lit("still_waiting").alias("fate"),
    )


def _nothing() -> dict[str, int | None]:
    return {
        "waited": 0,
        "oldest_wait_ms": None,
        "delivered": 0,
        "dead_lettered": 0,
        "still_waiting": 0,
    }


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None


#: The ``endpoint_circuits`` table: a row per outage (:meth:`Outage.row`), its intervals as JSON.
TABLE_SCHEMA: Final = StructType(
    [
        StructField("topic_name", StringType()),
        StructField("subscription_name", StringType()),
        *[
            StructField(name, LongType())
            for name in ("opened_ms", "closed_ms", "open_ms", "half_open_ms", "probes")
        ],
        StructField("opened_by", StringType()),
        StructField("closed_by", StringType()),
        StructField("failure_rate", DoubleType()),
        StructField("intervals", StringType()),
        *[
            StructField(name, LongType())
            for name in ("waited", "oldest_wait_ms", "delivered", "dead_lettered", "still_waiting")
        ],
    ]
)


def table(spark: SparkSession, rows: Sequence[Mapping[str, object]]) -> DataFrame:
    """The ``endpoint_circuits`` table of the outages' rows."""
    names = TABLE_SCHEMA.fieldNames()
    values = [
        tuple(json.dumps(row[n]) if n == "intervals" else row.get(n) for n in names) for row in rows
    ]
    return spark.createDataFrame(values, TABLE_SCHEMA)
