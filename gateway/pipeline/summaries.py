"""The report's partial summaries and tables: the partials of the homes a run must compute
again, from the facts of their messages (:mod:`.transforms.homes`, :mod:`.transforms.partials`);
then the tables, summed up from the partials of every home, written under ``--out`` and
collected for the page, with the traces of the messages that need attention.

IO shell around :mod:`gateway.pipeline.transforms`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructType

from gateway.pipeline import phase, storage, traces
from gateway.pipeline.storage import under
from gateway.pipeline.transforms import (
    attention,
    deliveries,
    facts,
    homes,
    partials,
    tables,
)

Rows = list[dict[str, object]]
Traces = dict[str, list[dict[str, object]]]

#: How many messages of each kind the page shows the trace of.
ATTENTION_DEAD_LETTERS: Final = 10
ATTENTION_PER_ENDPOINT: Final = 3
#: Tables written one after another in one thread, the chains at the same time, while another
#: thread writes the endpoint health, picks the messages that need attention and reads their
#: traces.
OTHER_TABLES: Final = (
    ("subscription_summary", "attempts_histogram"),
    ("queue_summary", "delivery_timeline"),
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


def timeline_bucket_ms(first_ms: int | None, last_ms: int | None) -> int:
    """The narrowest bucket that keeps the success-over-time chart readable."""
    span = (last_ms - first_ms) if first_ms is not None and last_ms is not None else 0
    for width in TIMELINE_BUCKET_CHOICES_MS:
        if span // width < MAX_TIMELINE_BUCKETS:
            return width
    widest = TIMELINE_BUCKET_CHOICES_MS[-1]
    return widest * (span // (widest * MAX_TIMELINE_BUCKETS) + 1)


@dataclass(frozen=True, slots=True)
class PartialsUpdate:
    """Which homes' partial summaries to compute again (``homes``; None: all of them) and
    whose to drop (``removed``), over the facts of the partitions ``labels``."""

    labels: tuple[str, ...]
    homes: tuple[str, ...] | None
    removed: tuple[str, ...]
    resolve_handles: bool
    join_publications: bool
    bucket_ms: int


def update_partials(
    spark: SparkSession,
    all_facts: DataFrame,
    target: str,
    update: PartialsUpdate,
    spans: DataFrame | None = None,
) -> None:
    """Compute the partial summaries of ``update.homes`` from the facts of the messages homed
    there and replace theirs under ``target``. ``spans``: :func:`.homes.message_spans` within
    ``update.homes``, when the caller has them already."""
    if update.homes is None:
        storage.delete(spark, target)
    else:
        for label in (*update.homes, *update.removed):
            name = storage.partition_directory(spark, homes.HOME, label)
            storage.delete(spark, under(target, name))
        if not update.homes:
            return
    keyed = facts.keyed_facts(all_facts, resolve_handles=update.resolve_handles)
    labels = list(update.labels)
    if spans is None:
        spans = homes.message_spans(homes.message_keys(keyed), labels, within=update.homes)
    # Facts that carry receipt handles are several rows per key and partition: merge them all.
    # Kept in memory: every partial kind joins with it, and it is small (with a full update
    # only the messages spanning several partitions, usually few).
    merging = (spans if update.resolve_handles else homes.spanning(spans)).persist()
    try:
        source = _homed_facts(keyed, merging, update)
        # The merged facts are not kept in memory: caching 3 million wide rows costs more than
        # letting each partial kind read the few columns it needs (docs/pipeline.md#performance).
        rows = partials.partial_summaries(
            facts.merge_homed(source),
            join_publications=update.join_publications,
            bucket_ms=update.bucket_ms,
        )
        # One file per home: the tables read the partials of every home, and hundreds of tiny
        # files (one per home and shuffle partition) cost more to open than to read.
        rows.repartition(homes.HOME).write.mode("append").partitionBy(homes.HOME).parquet(target)
    finally:
        merging.unpersist()


def _homed_facts(keyed: DataFrame, merging: DataFrame, update: PartialsUpdate) -> DataFrame:
    """The facts of the messages homed in ``update.homes``, each with its home; read from the
    earliest partition holding one of them on. ``merging``: the spans of the messages whose
    facts must be merged."""
    labels = list(update.labels)
    if update.homes is None:
        return homes.with_homes(keyed, merging, labels, homes=None)
    # A message in one partition only starts in its home; the others are all in ``merging``.
    earliest = merging.agg(homes.first_partition_of_homes(update.homes, labels)).first()
    starts = [sorted(labels).index(label) for label in update.homes]
    if earliest is not None and earliest[0] is not None:
        starts.append(int(earliest[0]))
    needed = sorted(labels)[min(starts) :]
    source = keyed.where(F.col(facts.PARTITION).isin(needed))
    return homes.with_homes(source, merging, labels, homes=update.homes)


def read_partials(spark: SparkSession, target: str) -> DataFrame:
    """The partial summaries of every home (none when no message was ever read)."""
    try:
        return spark.read.schema(partials.schema()).parquet(target)
    except AnalysisException:
        return rows_frame(spark, (), partials.schema())


def build_tables(
    all_partials: DataFrame, subscriptions: DataFrame, bucket_ms: int
) -> dict[str, DataFrame]:
    """The aggregate tables as lazy DataFrames, keyed by their directory name under --out.
    ``subscriptions``: :func:`.tables.subscriptions` of the partials, shared by three tables."""
    return {
        "subscription_summary": tables.subscription_summary(all_partials, subscriptions),
        "attempts_histogram": tables.attempts_histogram(all_partials),
        "endpoint_health": tables.endpoint_health(all_partials, subscriptions),
        "delivery_timeline": tables.delivery_timeline(all_partials, bucket_ms),
        "queue_summary": tables.queue_summary(all_partials, subscriptions),
    }


def write_tables_and_traces(
    spark: SparkSession,
    all_partials: DataFrame,
    bucket_ms: int,
    out: str,
    source: traces.TraceSource,
) -> tuple[dict[str, Rows], Traces]:
    """Write the tables, read the traces of the messages that need attention, and give the
    failing endpoints the last outcome and error of those traces (in the page and the table).

    Each table is a Spark job whose last stages run one task (the result is tiny): the other
    tables are written from two threads while this one writes the endpoint health, picks the
    messages that need attention (given the failing endpoints, as literals) and reads their
    traces, so that cores do not sit idle."""
    subscriptions = tables.subscriptions(all_partials).persist()
    try:
        built = build_tables(all_partials, subscriptions, bucket_ms)
        with ThreadPoolExecutor(max_workers=len(OTHER_TABLES)) as pool:
            chains = [pool.submit(_write_chain, built, chain, out) for chain in OTHER_TABLES]
            rows = _write_chain(built, ("endpoint_health",), out)
            failing = _failing_endpoints(spark, rows["endpoint_health"], built["endpoint_health"])
            chosen, found = _attention_traces(spark, all_partials, failing, source)
            for chain in chains:
                rows.update(chain.result())
    finally:
        subscriptions.unpersist()
    rows["attention"] = chosen
    completed = traces.complete_failing_endpoints(rows["endpoint_health"], found)
    if completed:
        # The few completed rows as literals, joined into the table computed again from the
        # cached partials: literals for every row would cost a py4j call per value.
        schema = built["endpoint_health"].schema
        columns = [*deliveries.SUBSCRIPTION_KEYS, *tables.LAST_OUTCOME]
        outcomes = StructType([schema[name] for name in columns])
        health = tables.with_last_outcomes(
            built["endpoint_health"], rows_frame(spark, completed, outcomes)
        )
        health.coalesce(1).write.mode("overwrite").parquet(under(out, "endpoint_health"))
    return rows, found


def _failing_endpoints(spark: SparkSession, health: Rows, table: DataFrame) -> DataFrame:
    """The endpoint-health rows of the endpoints failing now, as a small frame of literals."""
    columns = (*deliveries.SUBSCRIPTION_KEYS, "failing_since_ms", "currently_failing")
    failing = [row for row in health if row["currently_failing"]]
    return rows_frame(spark, failing, StructType([table.schema[name] for name in columns]))


def _attention_traces(
    spark: SparkSession, all_partials: DataFrame, health: DataFrame, source: traces.TraceSource
) -> tuple[Rows, Traces]:
    """The messages that need attention (given the endpoint health) and their traces."""
    with phase("picked the messages that need attention"):
        chosen = attention.attention_messages(
            all_partials,
            health,
            dead_letters=ATTENTION_DEAD_LETTERS,
            per_endpoint=ATTENTION_PER_ENDPOINT,
        ).collect()
    with phase(f"read the traces of {len(chosen)} messages"):
        found = traces.read_traces(spark, source, [row.message_id for row in chosen])
    return [row.asDict() for row in chosen], found


def _write_chain(built: Mapping[str, DataFrame], names: Sequence[str], out: str) -> dict[str, Rows]:
    """Write tables one after another and return their rows for the HTML. A table is cached
    while written, so collecting it costs nothing."""
    collected: dict[str, Rows] = {}
    for name in names:
        with phase(f"wrote {name}"):
            table = built[name].coalesce(1).persist()
            table.write.mode("overwrite").parquet(under(out, name))
            collected[name] = [row.asDict() for row in table.collect()]
            table.unpersist()
    return collected


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
