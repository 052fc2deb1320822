"""The messages that need someone's attention, whose traces the page shows: the latest dead
letters, and the latest failed messages of each endpoint that is failing now. Both come from
the partial summaries (:mod:`.partials`): every home keeps its latest dead letters and the
failures that can belong to a failing streak."""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from gateway.pipeline.transforms.columns import join_null_safe
from gateway.pipeline.transforms.deliveries import SUBSCRIPTION_KEYS
from gateway.pipeline.transforms.partials import Kind, latest_first, of_kind
from gateway.pipeline.transforms.tables import failures

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
    partials: DataFrame, health: DataFrame, *, dead_letters: int, per_endpoint: int
) -> DataFrame:
    """(reason, keys, message_id, at_ms): the ``dead_letters`` latest dead-lettered deliveries
    and queue messages, and for each endpoint failing now (``health``: the endpoint-health
    table, :func:`.tables.endpoint_health`) its ``per_endpoint`` latest messages that failed
    since it started failing."""
    latest_dead = (
        of_kind(partials, Kind.DEAD_LETTER)
        .orderBy(*latest_first())
        .limit(dead_letters)
        .select(F.lit(DEAD_LETTER).alias("reason"), *COLUMNS[1:])
    )
    failing = health.where("currently_failing").select(*SUBSCRIPTION_KEYS, "failing_since_ms")
    # A null queue_name and at_ms as for the dead letters: the order below reads both.
    failed = join_null_safe(failures(partials), failing, SUBSCRIPTION_KEYS, "inner").select(
        "*",
        F.lit(None).cast("string").alias("queue_name"),
        F.col("last_failure_ms").alias("at_ms"),
    )
    since = F.col("last_failure_ms") >= F.coalesce(F.col("failing_since_ms"), F.lit(0))
    recent = Window.partitionBy(*SUBSCRIPTION_KEYS).orderBy(*latest_first())
    chosen = (
        failed.where(since)
        .withColumn("_rank", F.row_number().over(recent))
        .where(F.col("_rank") <= per_endpoint)
        .select(F.lit(FAILING_ENDPOINT).alias("reason"), *COLUMNS[1:])
    )
    return latest_dead.unionByName(chosen)
