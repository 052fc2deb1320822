"""The report's tables, from the merged facts: built, written under ``--out`` and collected for
the page, with the traces of the messages that need attention.

IO shell around :mod:`gateway.pipeline.transforms`: every table is a small Spark job over the
merged facts, which the caller keeps in memory while these run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructType

from gateway.pipeline import traces
from gateway.pipeline.increments import Settings
from gateway.pipeline.storage import Listing, under
from gateway.pipeline.transforms import attention, deliveries, queues

Rows = list[dict[str, object]]
Traces = dict[str, list[dict[str, object]]]

#: How many messages of each kind the page shows the trace of.
ATTENTION_DEAD_LETTERS: Final = 10
ATTENTION_PER_ENDPOINT: Final = 3
#: Tables written one after another in one thread; the threads run at the same time, so
#: single-task stages do not leave a core idle.
WRITE_CHAINS: Final = (
    ("subscription_summary", "attempts_histogram"),
    ("endpoint_health", "delivery_timeline"),
    ("queue_summary",),
)
#: Candidate widths of the delivery-timeline buckets: the narrowest giving fewer than
#: MAX_TIMELINE_BUCKETS points over the reported span is used, so a one-minute run gets
#: one point a second and a day one every 15 minutes.
TIMELINE_BUCKET_CHOICES_MS: Final = (
    1_000,
    5_000,
    15_000,
    60_000,
    5 * 60_000,
    15 * 60_000,
    3_600_000,
    6 * 3_600_000,
    86_400_000,
    7 * 86_400_000,
)
MAX_TIMELINE_BUCKETS: Final = 120


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the tables are computed from: the facts of every partition, merged per message
    (persisted by the caller), and the input summary."""

    all_facts: DataFrame
    merged: DataFrame
    summary: Mapping[str, int | None]


def timeline_bucket_ms(first_ms: int | None, last_ms: int | None) -> int:
    """The narrowest bucket that keeps the success-over-time chart readable."""
    span = (last_ms - first_ms) if first_ms is not None and last_ms is not None else 0
    for width in TIMELINE_BUCKET_CHOICES_MS:
        if span // width < MAX_TIMELINE_BUCKETS:
            return width
    widest = TIMELINE_BUCKET_CHOICES_MS[-1]
    return widest * (span // (widest * MAX_TIMELINE_BUCKETS) + 1)


def build_tables(inputs: Inputs) -> dict[str, DataFrame]:
    """The aggregate tables as lazy DataFrames, keyed by their directory name under --out."""
    summary, merged = inputs.summary, inputs.merged
    per_message = deliveries.message_deliveries(
        merged, join_publications=bool(summary["pushes_without_publish_time"])
    )
    bucket_ms = timeline_bucket_ms(summary["first_time_ms"], summary["last_time_ms"])
    return {
        "subscription_summary": deliveries.subscription_summary(
            per_message, deliveries.publications(merged)
        ),
        "attempts_histogram": deliveries.attempts_histogram(per_message),
        "endpoint_health": deliveries.endpoint_health(per_message),
        "delivery_timeline": deliveries.delivery_timeline(per_message, bucket_ms),
        "queue_summary": queues.queue_summary(
            queues.queue_message_lifecycles(merged), deliveries.pushed_into_queues(per_message)
        ),
    }


def write_tables_and_traces(
    spark: SparkSession,
    inputs: Inputs,
    out: str,
    listing: Listing,
    settings: Settings,
    reader: traces.PartitionReader,
) -> tuple[dict[str, Rows], Traces]:
    """Write the tables, read the traces of the messages that need attention, and give the
    failing endpoints the last outcome and error of those traces (in the page and the table)."""
    tables = build_tables(inputs)
    rows = write_tables(tables, out)
    failing = [row for row in rows["endpoint_health"] if row["currently_failing"]]
    per_message = deliveries.message_deliveries(inputs.merged, join_publications=False)
    chosen = attention.attention_messages(
        per_message,
        queues.queue_message_lifecycles(inputs.merged),
        failing,
        dead_letters=ATTENTION_DEAD_LETTERS,
        per_endpoint=ATTENTION_PER_ENDPOINT,
    ).collect()
    rows["attention"] = [row.asDict() for row in chosen]
    ids = [row.message_id for row in chosen]
    found = traces.read_traces(spark, listing, inputs.all_facts, ids, settings, reader=reader)
    if failing:
        traces.complete_failing_endpoints(rows["endpoint_health"], found)
        health = rows_frame(spark, rows["endpoint_health"], tables["endpoint_health"].schema)
        health.coalesce(1).write.mode("overwrite").parquet(under(out, "endpoint_health"))
    return rows, found


def write_tables(tables: Mapping[str, DataFrame], out: str) -> dict[str, Rows]:
    """Write each table and return its rows for the HTML. Each table is a Spark job whose last
    stages run one task (the result is tiny); running the jobs from a few threads keeps every
    core busy meanwhile. A table is cached while written, so collecting it costs nothing."""

    def write_chain(names: Sequence[str]) -> dict[str, Rows]:
        collected: dict[str, Rows] = {}
        for name in names:
            table = tables[name].coalesce(1).persist()
            table.write.mode("overwrite").parquet(under(out, name))
            collected[name] = [row.asDict() for row in table.collect()]
            table.unpersist()
        return collected

    rows: dict[str, Rows] = {}
    with ThreadPoolExecutor(max_workers=len(WRITE_CHAINS)) as pool:
        for finished in [pool.submit(write_chain, chain) for chain in WRITE_CHAINS]:
            rows.update(finished.result())
    return rows


def write_input_summary(
    spark: SparkSession, summary: Mapping[str, int | None], target: str
) -> None:
    """One row; explicit types, since with empty logs the first and last times are None."""
    row = [F.lit(value).cast(LongType()).alias(name) for name, value in summary.items()]
    spark.range(1).select(*row).coalesce(1).write.mode("overwrite").parquet(target)


def rows_frame(
    spark: SparkSession, rows: Sequence[Mapping[str, object]], schema: StructType
) -> DataFrame:
    """A small DataFrame of Python rows built in the JVM from literals: ``createDataFrame``
    would start Python workers for it (over a second), and the executors are otherwise
    Python-free."""
    if not rows:
        return spark.range(0).select(
            *[F.lit(None).cast(field.dataType).alias(field.name) for field in schema.fields]
        )
    structs = [
        F.struct(
            *[
                F.lit(row.get(field.name)).cast(field.dataType).alias(field.name)
                for field in schema.fields
            ]
        )
        for row in rows
    ]
    return spark.range(1).select(F.inline(F.array(*structs)))
