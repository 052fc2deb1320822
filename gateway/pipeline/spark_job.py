"""The Spark side of a report run: session, reading the logs, writing facts, tables and the page.

Everything here touches Spark or the file system; the computations are the pure functions of
:mod:`gateway.pipeline.transforms` and the run planning of :mod:`gateway.pipeline.increments`.
Imported by :mod:`gateway.pipeline.report` only when a report actually runs, which is what
keeps PySpark an optional dependency of the gateway.

The plan is shaped by what costs time (see docs/pipeline.md#performance). The JSON is parsed
once, straight into per-message facts by one aggregation (no full copy of the operations is
written unless ``--traces`` asks for it), and only for the log partitions that are new or
changed since the last run into the same ``--out``. The tables are computed from the facts of
all partitions, merged once and kept in memory while the tables are written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession

from gateway.pipeline import PipelineError, storage, summaries, traces
from gateway.pipeline.html_report import ReportData, render_report
from gateway.pipeline.increments import Plan, Settings, State, plan_run
from gateway.pipeline.report import ReportOptions
from gateway.pipeline.schema import CORRUPT_RECORD, raw_log_schema
from gateway.pipeline.storage import Listing, under
from gateway.pipeline.transforms import facts, parsing

LOG = logging.getLogger(__name__)
SHUFFLE_PARTITIONS: Final = "spark.sql.shuffle.partitions"
#: Above this many input paths Spark lists them with a Spark job; a report lists them itself.
LISTING_THRESHOLD: Final = "spark.sql.sources.parallelPartitionDiscovery.threshold"

FACTS_TABLE: Final = "message_facts"
EVENTS_TABLE: Final = "message_traces"
SUMMARY_TABLE: Final = "input_summary"
STATE_NAME: Final = "report_state.json"
HTML_NAME: Final = "report.html"
#: Columns whose values are (nearly) all distinct: dictionary encoding and min/max statistics
#: only cost time there. A Bloom filter on message_id lets a trace lookup skip row groups.
UNIQUE_COLUMNS: Final = (
    "message_id",
    "request_id",
    "receipt_handle_in_request",
    "receipt_handle_in_response",
)


def build_session(options: ReportOptions) -> SparkSession:
    """A session for one report run. Without --master, spark-submit's master applies, and a
    plain ``mns-gateway report`` falls back to PySpark's own default, local[*]."""
    builder = SparkSession.builder.appName("mns-delivery-report").config(
        "spark.sql.session.timeZone", options.timezone
    )
    if options.master:
        builder = builder.master(options.master)
    for key, value in options.spark_conf.items():
        builder = builder.config(key, value)
    # py4j logs every closed connection at INFO, which buries the report's own progress lines.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    with _phase("started Spark"):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    if SHUFFLE_PARTITIONS not in options.spark_conf and spark.conf.get(SHUFFLE_PARTITIONS) == "200":
        # Spark's stock 200 is sized for clusters; on a laptop the fixed cost of 200 tiny tasks
        # per shuffle dominates a report (13 s instead of 5 s for the aggregates on 1,000
        # records). Twice the available cores suits both; a value set by the user is kept.
        parallelism = spark.sparkContext.defaultParallelism
        spark.conf.set(SHUFFLE_PARTITIONS, str(max(2, 2 * parallelism)))
    if LISTING_THRESHOLD not in options.spark_conf:
        spark.conf.set(LISTING_THRESHOLD, "100000")
    return spark


def read_logs(spark: SparkSession, logs: str | Sequence[str]) -> DataFrame:
    """Log files (a directory is read recursively; compressed files too) as JSON lines with the
    explicit schema; lines that are not JSON objects land in the corrupt-record column."""
    reader = (
        spark.read.schema(raw_log_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .option("recursiveFileLookup", "true")
    )
    try:
        return reader.json(logs if isinstance(logs, str) else list(logs))
    except AnalysisException as error:
        raise PipelineError(f"cannot read --logs {logs}: {error.getMessage()}") from error


def read_partitions(spark: SparkSession, listing: Listing, labels: Sequence[str]) -> DataFrame:
    """The parsed lines of some log partitions, each with its ``log_partition``."""
    files = [path for label in labels for path in listing.paths[label]]
    raw = facts.label_partitions(read_logs(spark, files), listing.root_path)
    return parsing.parse_records(raw)


def write_report(spark: SparkSession, options: ReportOptions) -> dict[str, int | None]:
    """Bring the facts up to date with the logs, then write every table and report.html;
    returns the input summary."""
    assert options.logs is not None and options.out is not None
    listing = storage.list_logs(spark, options.logs)
    plan = update_facts(spark, options, listing)
    all_facts = read_facts(spark, options.out)
    with _phase("summed up the input"):
        summary = _input_summary(all_facts)
    if summary.pop(facts.HANDLE_ONLY_ROWS) and not plan.settings.with_handles:
        LOG.info("deletes with only a receipt handle: reading again, keeping the handles")
        plan = update_facts(spark, replace(options, full=True), listing, with_handles=True)
        all_facts = read_facts(spark, options.out)
        summary = _input_summary(all_facts)
        summary.pop(facts.HANDLE_ONLY_ROWS)
    merged = facts.merge_facts(all_facts, resolve_handles=plan.settings.with_handles).persist()
    inputs = summaries.Inputs(all_facts, merged, summary)
    try:
        with _phase("wrote the aggregate tables and read the traces"):
            rows, found = summaries.write_tables_and_traces(
                spark, inputs, options.out, listing, plan.settings, read_partitions
            )
    finally:
        merged.unpersist()
    with _phase("wrote input_summary and report.html"):
        summaries.write_input_summary(spark, summary, under(options.out, SUMMARY_TABLE))
        page = render_report(_report_data(options, summary, rows, found))
        storage.write_text(spark, under(options.out, HTML_NAME), page)
    return summary


def update_facts(
    spark: SparkSession, options: ReportOptions, listing: Listing, *, with_handles: bool = False
) -> Plan:
    """Read the partitions the previous run into ``--out`` has not seen (all of them the first
    time, or with ``--full``) into facts; record what was read."""
    assert options.out is not None
    state_path = under(options.out, STATE_NAME)
    previous = None if options.full else State.from_json(storage.read_text(spark, state_path) or "")
    settings = Settings(
        listing.root_uri,
        options.since_ms,
        options.until_ms,
        options.timezone,
        traces=options.traces,
        with_handles=with_handles,
    )
    plan = plan_run(listing.stamps, previous, settings)
    LOG.info(
        "%s run: %d of %d log partitions to read, %d removed",
        "full" if plan.full else "incremental",
        len(plan.read),
        len(listing.stamps),
        len(plan.removed),
    )
    if plan.is_noop:
        return plan
    storage.delete(spark, state_path)  # a run that dies from here on is followed by a full one
    _drop_partitions(spark, options.out, plan)
    if plan.read:
        with _phase(f"parsed {len(plan.read)} log partitions into facts"):
            _store_facts(spark, options, listing, plan)
    storage.write_text(spark, state_path, State(plan.settings, listing.stamps).to_json())
    return plan


def read_facts(spark: SparkSession, out: str) -> DataFrame:
    try:
        return spark.read.schema(facts.schema()).parquet(under(out, FACTS_TABLE))
    except AnalysisException:  # no partition was ever read: empty logs
        return facts.empty(spark)


def find_trace(spark: SparkSession, options: ReportOptions) -> list[dict[str, object]]:
    """One message's operations in order: from the logs when --logs is given, else from the
    message-trace table of an earlier ``--traces`` report, else from the log partitions the
    facts under --out say the message appears in."""
    assert options.trace is not None
    if options.logs is not None:
        parsed = parsing.parse_records(read_logs(spark, options.logs))
        events = parsing.within_time_window(
            parsing.usable_events(parsed), options.since_ms, options.until_ms
        )
        return traces.collect_trace(events, options.trace)
    assert options.out is not None
    if storage.exists(spark, under(options.out, EVENTS_TABLE)):
        events = spark.read.parquet(under(options.out, EVENTS_TABLE))
        return traces.collect_trace(events, options.trace)
    state = State.from_json(storage.read_text(spark, under(options.out, STATE_NAME)) or "")
    if state is None:
        raise PipelineError(f"no report under --out {options.out}")
    listing = storage.list_logs(spark, state.settings.logs)
    labels = traces.partitions_of(read_facts(spark, options.out), [options.trace], listing)
    if not labels:
        return []
    events = traces.events_of(spark, listing, labels, state.settings, reader=read_partitions)
    return traces.collect_trace(events, options.trace)


def _drop_partitions(spark: SparkSession, out: str, plan: Plan) -> None:
    for table in (FACTS_TABLE, EVENTS_TABLE):
        if plan.full:
            storage.delete(spark, under(out, table))
            continue
        for label in plan.touched:
            name = storage.partition_directory(spark, facts.PARTITION, label)
            storage.delete(spark, under(under(out, table), name))


def _store_facts(spark: SparkSession, options: ReportOptions, listing: Listing, plan: Plan) -> None:
    """Write the facts of ``plan.read`` (and their operations, with --traces)."""
    assert options.out is not None
    parsed = read_partitions(spark, listing, plan.read)
    if options.traces:  # a second pass over the JSON: only when the operations are asked for
        events = parsing.within_time_window(
            parsing.usable_events(parsed), options.since_ms, options.until_ms
        )
        _events_writer(events).parquet(under(options.out, EVENTS_TABLE))
    batch = facts.partition_facts(
        parsed, options.since_ms, options.until_ms, with_handles=plan.settings.with_handles
    )
    _facts_writer(batch).parquet(under(options.out, FACTS_TABLE))


def _input_summary(all_facts: DataFrame) -> dict[str, int | None]:
    row = facts.input_summary(all_facts).first()
    assert row is not None
    return {name: None if value is None else int(value) for name, value in row.asDict().items()}


def _events_writer(events: DataFrame) -> DataFrameWriter:
    writer = (
        events.write.mode("append")
        .partitionBy(facts.PARTITION)
        .option("parquet.bloom.filter.enabled#message_id", "true")
    )
    for column in UNIQUE_COLUMNS:
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
        writer = writer.option(f"parquet.column.statistics.enabled#{column}", "false")
    return writer


def _facts_writer(batch: DataFrame) -> DataFrameWriter:
    return (
        batch.write.mode("append")
        .partitionBy(facts.PARTITION)
        .option("parquet.bloom.filter.enabled#message_id", "true")
        .option("parquet.enable.dictionary#message_id", "false")
    )


@contextmanager
def _phase(description: str) -> Iterator[None]:
    """Log how long a step took: the figures that tell where a slow report spends its time."""
    started = time.perf_counter()
    yield
    LOG.info("%s in %.1f s", description, time.perf_counter() - started)


def _report_data(
    options: ReportOptions,
    summary: Mapping[str, int | None],
    rows: Mapping[str, summaries.Rows],
    found: Mapping[str, list[dict[str, object]]],
) -> ReportData:
    return ReportData(
        generated_at_ms=int(datetime.now(tz=UTC).timestamp() * 1000),
        logs=str(options.logs),
        since_ms=options.since_ms,
        until_ms=options.until_ms,
        timezone=options.timezone,
        summary=dict(summary),
        subscriptions=rows["subscription_summary"],
        histogram=rows["attempts_histogram"],
        endpoints=rows["endpoint_health"],
        timeline=rows["delivery_timeline"],
        queues=rows["queue_summary"],
        attention=rows["attention"],
        traces=found,
    )
