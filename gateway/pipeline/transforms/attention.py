"""The messages that need someone's attention, whose traces the page shows: the latest dead
letters, and the latest failed messages of each endpoint that is failing now."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from gateway.pipeline.transforms.deliveries import SUBSCRIPTION_KEYS

DEAD_LETTER: Final = "dead letter"
FAILING_ENDPOINT: Final = "failing endpoint"
COLUMNS: Final = (
    "reason",
    "topic_name",
    "subscription_name",
    "endpoint",
    "queue_name",
    "message_id",
    "at_ms",
)


def attention_messages(
    deliveries: DataFrame,
    lifecycles: DataFrame,
    failing: Sequence[Mapping[str, object]],
    *,
    dead_letters: int,
    per_endpoint: int,
) -> DataFrame:
    """(reason, keys, message_id, at_ms): the ``dead_letters`` latest dead-lettered deliveries
    and queue messages, and for each ``failing`` endpoint (rows of the endpoint-health table)
    its ``per_endpoint`` latest messages that failed since it started failing."""
    latest_dead = _latest_dead_letters(deliveries, lifecycles, dead_letters)
    if not failing:
        return latest_dead
    recent = Window.partitionBy(*SUBSCRIPTION_KEYS).orderBy(F.desc("last_failure_ms"))
    failed = (
        deliveries.where(_failed_since(failing))
        .withColumn("_rank", F.row_number().over(recent))
        .where(F.col("_rank") <= per_endpoint)
        .select(
            F.lit(FAILING_ENDPOINT).alias("reason"),
            *SUBSCRIPTION_KEYS,
            F.lit(None).cast("string").alias("queue_name"),
            "message_id",
            F.col("last_failure_ms").alias("at_ms"),
        )
    )
    return latest_dead.unionByName(failed)


def _latest_dead_letters(deliveries: DataFrame, lifecycles: DataFrame, count: int) -> DataFrame:
    topic_dead = deliveries.where("dead_lettered").select(
        F.lit(DEAD_LETTER).alias("reason"),
        *SUBSCRIPTION_KEYS,
        F.lit(None).cast("string").alias("queue_name"),
        "message_id",
        F.col("dead_letter_ms").alias("at_ms"),
    )
    queue_dead = lifecycles.where("dead_lettered").select(
        F.lit(DEAD_LETTER).alias("reason"),
        *[F.lit(None).cast("string").alias(key) for key in SUBSCRIPTION_KEYS],
        "queue_name",
        "message_id",
        F.coalesce("dead_letter_ms", "sent_ms").alias("at_ms"),
    )
    return topic_dead.unionByName(queue_dead).orderBy(F.desc_nulls_last("at_ms")).limit(count)


def _failed_since(failing: Sequence[Mapping[str, object]]) -> Column:
    condition = F.lit(False)
    for endpoint in failing:
        same = F.lit(True)
        for key in SUBSCRIPTION_KEYS:
            same &= F.col(key).eqNullSafe(F.lit(endpoint[key]))
        since = endpoint.get("failing_since_ms") or 0
        condition |= same & (F.col("last_failure_ms") >= F.lit(since))
    return condition
