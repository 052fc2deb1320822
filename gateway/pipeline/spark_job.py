"""The Spark side of a report run: session, reading the logs, writing facts, tables and the page.

Everything here touches Spark or the file system; the computations are the pure functions of
:mod:`gateway.pipeline.transforms` and the run planning of :mod:`gateway.pipeline.increments`.
Imported by :mod:`gateway.pipeline.report` only when a report actually runs, which is what
keeps PySpark an optional dependency of the gateway.

The plan is shaped by what costs time (see docs/pipeline.md#performance). The JSON is parsed
once, straight into per-message facts by one aggregation (no full copy of the operations is
written unless ``--traces`` asks for it), and only for the log partitions that are new or
changed since the last run into the same ``--out``. Then only the partial summaries of the homes
those partitions can change are computed again (:mod:`gateway.pipeline.summaries`), and the
tables are summed from the partials of every home.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Final

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession
from pyspark.sql import functions as F

from gateway.errors.commands import PipelineError
from gateway.pipeline import circuits, phase, storage, summaries, traces
from gateway.pipeline.html_circuits import circuit_lines
from gateway.pipeline.html_report import ReportData, render_report
from gateway.pipeline.increments import (
    INPUT_COUNTS,
    INPUT_FIGURES,
    Inputs,
    Plan,
    Settings,
    State,
    homes_to_recompute,
    plan_run,
    total_inputs,
)
from gateway.pipeline.options import ReportOptions
from gateway.pipeline.reader import read_logs, read_partitions
from gateway.pipeline.storage import Listing, under
from gateway.pipeline.transforms import circuits as circuit_facts
from gateway.pipeline.transforms import facts, homes, parsing

LOG = logging.getLogger(__name__)
SHUFFLE_PARTITIONS: Final = "spark.sql.shuffle.partitions"
#: Above this many input paths Spark lists them with a Spark job; a report lists them itself.
LISTING_THRESHOLD: Final = "spark.sql.sources.parallelPartitionDiscovery.threshold"

FACTS_TABLE: Final = "message_facts"
EVENTS_TABLE: Final = "message_traces"
SUMMARY_TABLE: Final = "input_summary"
PARTIALS_TABLE: Final = "partial_summaries"
STATE_NAME: Final = "report_state.json"
HTML_NAME: Final = "report.html"
CIRCUITS_TABLE: Final = "endpoint_circuits"
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
    with phase("started Spark"):
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


def write_report(spark: SparkSession, options: ReportOptions) -> dict[str, int | None]:
    """Bring the facts up to date with the logs, then the partial summaries of the homes that
    changed, then write every table and report.html; returns the input summary."""
    assert options.logs is not None and options.out is not None
    listing = storage.list_logs(spark, options.logs)
    update = update_facts(spark, options, listing)
    summary = total_inputs(update.inputs)
    if summary.pop(facts.HANDLE_ONLY_ROWS, 0) and not update.plan.settings.with_handles:
        LOG.info("deletes with only a receipt handle: reading again, keeping the handles")
        update = update_facts(spark, replace(options, full=True), listing, with_handles=True)
        summary = total_inputs(update.inputs)
        summary.pop(facts.HANDLE_ONLY_ROWS, 0)
    summary = {
        name: summary.get(name, 0 if name in INPUT_COUNTS else None) for name in INPUT_FIGURES
    }
    all_facts = read_facts(spark, options.out)
    bucket_ms = summaries.timeline_bucket_ms(summary["first_time_ms"], summary["last_time_ms"])
    widths = _update_partials(spark, options.out, all_facts, update, summary, bucket_ms)
    if widths != update.timeline_widths or not update.plan.is_noop:
        state = State(update.plan.settings, listing.stamps, update.inputs, widths)
        storage.write_text(spark, under(options.out, STATE_NAME), state.to_json())
    all_partials = summaries.read_partials(spark, under(options.out, PARTIALS_TABLE)).persist()
    source = traces.TraceSource(listing, all_facts, update.plan.settings, read_partitions)
    try:
        with phase("wrote the tables and the page's traces"):
            rows, found = summaries.write_tables_and_traces(
                spark, all_partials, bucket_ms, options.out, source
            )
    finally:
        all_partials.unpersist()
    outages = endpoint_circuits(spark, options.out, all_facts, summary["last_time_ms"] or 0)
    with phase("wrote input_summary and report.html"):
        summaries.write_input_summary(spark, summary, under(options.out, SUMMARY_TABLE))
        data = _report_data(options, summary, rows, found, bucket_ms)
        page = render_report(replace(data, circuits=outages))
        storage.write_text(spark, under(options.out, HTML_NAME), page)
    return summary


def endpoint_circuits(
    spark: SparkSession, out: str, all_facts: DataFrame, report_end_ms: int
) -> list[dict[str, object]]:
    """Every endpoint outage from the EndpointCircuit records, with what waited behind it:
    written as the ``endpoint_circuits`` table, logged as a line per subscription, returned
    for the page (docs/pipeline.md#endpoint-circuits)."""
    with phase("found the endpoint circuits and what waited behind them"):
        texts = circuit_facts.circuit_events(all_facts)
        found = circuits.outages(e for text in texts if (e := circuits.parse_event(text)))
        waits = circuit_facts.outage_waits(spark, all_facts, found, report_end_ms)
        for index, outage in enumerate(found):
            outage.waits = waits[index]
        outages = [outage.row(report_end_ms) for outage in found]
        table = circuit_facts.table(spark, outages)
        table.write.mode("overwrite").parquet(under(out, CIRCUITS_TABLE))
    for line in circuit_lines(outages, report_end_ms):
        LOG.info("%s", line)
    return outages


@dataclass(frozen=True, slots=True)
class FactsUpdate:
    """What :func:`update_facts` did: its plan; the input figures of every partition now in
    the facts; the partitions that shared a message with the facts it replaced or dropped;
    the timeline widths of the partial summaries kept from before."""

    plan: Plan
    inputs: dict[str, Inputs]
    shared_before: tuple[str, ...]
    timeline_widths: tuple[int, ...]


def update_facts(
    spark: SparkSession, options: ReportOptions, listing: Listing, *, with_handles: bool = False
) -> FactsUpdate:
    """Read the partitions the previous run into ``--out`` has not seen (all of them the first
    time, or with ``--full``) into facts."""
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
    kept = previous if previous is not None and not plan.full else State(settings)
    inputs = {k: v for k, v in kept.inputs.items() if k not in plan.touched}
    if plan.is_noop:
        return FactsUpdate(plan, inputs, (), kept.timeline_widths)
    replaced = [label for label in plan.touched if label in kept.partitions]
    shared = _partitions_sharing(read_facts(spark, options.out), replaced) if replaced else ()
    storage.delete(spark, state_path)  # a run that dies from here on is followed by a full one
    _drop_partitions(spark, options.out, plan)
    if plan.read:
        with phase(f"parsed {len(plan.read)} log partitions into facts"):
            _store_facts(spark, options, listing, plan)
        with phase("counted their input"):
            inputs |= _partition_inputs(read_facts(spark, options.out), plan.read)
    return FactsUpdate(plan, inputs, shared, kept.timeline_widths)


def _update_partials(
    spark: SparkSession,
    out: str,
    all_facts: DataFrame,
    update: FactsUpdate,
    summary: Mapping[str, int | None],
    bucket_ms: int,
) -> tuple[int, ...]:
    """Compute the partial summaries of the homes this run changed (all of them, when the kept
    ones cannot be reused); returns the timeline widths of the partials now kept."""
    plan, widths = update.plan, update.timeline_widths
    labels = sorted(update.inputs)
    todo = homes_to_recompute(plan, labels, (), widths, bucket_ms)
    read = sorted(set(plan.read) & set(labels))
    spans = None
    if todo is not None and read:
        spans, shared = _spans_of_partitions_read(all_facts, labels, read)
        todo = homes_to_recompute(plan, labels, {*update.shared_before, *shared}, widths, bucket_ms)
    try:
        if todo == ():
            return widths
        with phase(f"summed up the messages of {'all' if todo is None else len(todo)} partitions"):
            summaries.update_partials(
                spark,
                all_facts,
                under(out, PARTIALS_TABLE),
                summaries.PartialsUpdate(
                    labels=tuple(labels),
                    homes=todo,
                    removed=plan.touched,
                    resolve_handles=plan.settings.with_handles,
                    join_publications=bool(summary["pushes_without_publish_time"]),
                    bucket_ms=bucket_ms,
                ),
                # Spans within the partitions read are the spans within the homes to compute
                # when no other home shares a message with them (the usual new hour).
                spans if set(todo or ()) == set(read) else None,
            )
    finally:
        if spans is not None:
            spans.unpersist()
    return (bucket_ms,) if todo is None else tuple(sorted({*widths, bucket_ms}))


def _spans_of_partitions_read(
    all_facts: DataFrame, labels: Sequence[str], read: Sequence[str]
) -> tuple[DataFrame, set[str]]:
    """The spans of the messages in the partitions read (kept in memory) and the partitions
    that were those messages' homes before: their partial summaries change too."""
    with phase("found the partitions sharing a message with them"):
        spans = homes.message_spans(homes.message_keys(all_facts), labels, within=read).persist()
        previous = spans.where(F.col(homes.PREVIOUS).isNotNull()).select(homes.PREVIOUS)
        shared = {labels[row[0]] for row in previous.distinct().collect()}
    return spans, shared


def _partitions_sharing(all_facts: DataFrame, labels: Sequence[str]) -> tuple[str, ...]:
    found = homes.partitions_sharing(homes.message_keys(all_facts), labels).collect()
    return tuple(sorted(str(row[0]) for row in found))


def _partition_inputs(all_facts: DataFrame, labels: Sequence[str]) -> dict[str, Inputs]:
    rows = facts.partition_inputs(all_facts.where(F.col(facts.PARTITION).isin(list(labels))))
    found: dict[str, Inputs] = {}
    for row in rows.collect():
        figures = row.asDict()
        label = str(figures.pop(facts.PARTITION))
        found[label] = {k: None if v is None else int(v) for k, v in figures.items()}
    return found


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


def _report_data(
    options: ReportOptions,
    summary: Mapping[str, int | None],
    rows: Mapping[str, summaries.Rows],
    found: Mapping[str, list[dict[str, object]]],
    bucket_ms: int,
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
        bucket_ms=bucket_ms,
    )
