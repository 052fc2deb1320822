"""The Spark side of a report run: session, reading the logs, writing tables and the HTML.

Everything here touches Spark or the file system; the computations are the pure functions of
:mod:`gateway.pipeline.transforms`. Imported by :mod:`gateway.pipeline.report` only when a
report actually runs, which is what keeps PySpark an optional dependency of the gateway.

The plan is shaped by what costs time (see docs/pipeline.md, "Performance"): the JSON is parsed
exactly once, and that pass both writes the normalised events as the message-trace table and
counts lines, malformed and unusable records through ``DataFrame.observe``. The aggregates then
read only the columns they need from that Parquet table, which is cheaper than caching all
parsed rows in memory and writing them out as well.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, DataFrameWriter, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from gateway.pipeline import PipelineError
from gateway.pipeline.html_report import ReportData, render_report
from gateway.pipeline.report import ReportOptions
from gateway.pipeline.schema import CORRUPT_RECORD, raw_log_schema
from gateway.pipeline.transforms import deliveries, parsing, queues

LOG = logging.getLogger(__name__)
SHUFFLE_PARTITIONS: Final = "spark.sql.shuffle.partitions"

EVENTS_TABLE: Final = "message_traces"
SUMMARY_TABLE: Final = "input_summary"
HTML_NAME: Final = "report.html"
#: Columns whose values are (nearly) all distinct: dictionary encoding and min/max statistics
#: only cost time there. A Bloom filter on message_id lets a trace lookup skip row groups.
UNIQUE_COLUMNS: Final = (
    "message_id",
    "request_id",
    "receipt_handle_in_request",
    "receipt_handle_in_response",
)
#: Aggregate tables written one after another in one thread; the threads run at the same time.
#: The first chain shares the persisted per-message deliveries: its first table computes them.
WRITE_CHAINS: Final = (
    ("subscription_summary", "attempts_histogram"),
    ("endpoint_health",),
    ("delivery_timeline", "queue_summary"),
)
#: Candidate widths of the delivery-timeline buckets: the narrowest giving at most
#: MAX_TIMELINE_BUCKETS points over the reported span is used.
TIMELINE_BUCKET_CHOICES_MS: Final = (
    60_000,
    5 * 60_000,
    15 * 60_000,
    3_600_000,
    6 * 3_600_000,
    86_400_000,
    7 * 86_400_000,
)
MAX_TIMELINE_BUCKETS: Final = 200


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
    return spark


def read_logs(spark: SparkSession, logs: str) -> DataFrame:
    """Every file under ``logs`` (compressed ones too) as JSON lines with the explicit schema;
    lines that are not JSON objects land in the corrupt-record column instead of failing."""
    reader = (
        spark.read.schema(raw_log_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .option("recursiveFileLookup", "true")
    )
    try:
        return reader.json(logs)
    except AnalysisException as error:
        raise PipelineError(f"cannot read --logs {logs}: {error.getMessage()}") from error


def under(directory: str, name: str) -> str:
    """``directory/name`` for local paths and URIs alike (``pathlib`` would fold ``s3a://``)."""
    return f"{directory.rstrip('/')}/{name}"


def timeline_bucket_ms(first_ms: int | None, last_ms: int | None) -> int:
    """The narrowest bucket that keeps the success-over-time chart readable."""
    span = (last_ms - first_ms) if first_ms is not None and last_ms is not None else 0
    for width in TIMELINE_BUCKET_CHOICES_MS:
        if span // width < MAX_TIMELINE_BUCKETS:
            return width
    widest = TIMELINE_BUCKET_CHOICES_MS[-1]
    return widest * (span // (widest * MAX_TIMELINE_BUCKETS) + 1)


def build_tables(
    events: DataFrame, per_message: DataFrame, activity: DataFrame
) -> dict[str, DataFrame]:
    """The aggregate tables as lazy DataFrames, keyed by their directory name under --out.
    ``per_message`` and ``activity`` are :func:`deliveries.message_deliveries` and
    :func:`deliveries.topic_activity` of ``events``, usually persisted."""
    return {
        "subscription_summary": deliveries.subscription_summary(per_message, activity),
        "attempts_histogram": deliveries.attempts_histogram(per_message),
        "endpoint_health": deliveries.endpoint_health(events, activity),
        "delivery_timeline": deliveries.delivery_timeline(activity),
        "queue_summary": queues.queue_summary(queues.queue_message_lifecycles(events)),
    }


def write_report(spark: SparkSession, options: ReportOptions) -> dict[str, int | None]:
    """Read the logs once, write every table and report.html; returns the input summary."""
    assert options.logs is not None and options.out is not None
    with _phase("parsed the logs and wrote message_traces"):
        summary = store_events(spark, options.logs, options.out, options.since_ms, options.until_ms)
    events = spark.read.parquet(under(options.out, EVENTS_TABLE))
    if summary["events_without_message_id"]:
        events = parsing.attach_message_ids_by_receipt_handle(events)
    per_message = deliveries.message_deliveries(
        events, join_publications=bool(summary["pushes_without_publish_time"])
    ).persist()
    bucket_ms = timeline_bucket_ms(summary["first_time_ms"], summary["last_time_ms"])
    activity = deliveries.topic_activity(events, bucket_ms).persist()
    try:
        with _phase("wrote the aggregate tables"):
            activity.count()  # three tables read it: computed once, before the threads start
            rows = _write_tables(build_tables(events, per_message, activity), options.out)
    finally:
        per_message.unpersist()
        activity.unpersist()
    with _phase("wrote input_summary and report.html"):
        _write_summary(spark, summary, under(options.out, SUMMARY_TABLE))
        page = render_report(_report_data(options, summary, rows))
        write_text(spark, under(options.out, HTML_NAME), page)
    return summary


def store_events(
    spark: SparkSession, logs: str, out: str, since_ms: int | None, until_ms: int | None
) -> dict[str, int | None]:
    """The single pass over the JSON: writes the events in the window as the message-trace
    table and returns :func:`parsing.input_summary_columns` observed on the way."""
    observation = Observation(SUMMARY_TABLE)
    parsed = parsing.parse_records(read_logs(spark, logs)).observe(
        observation, *parsing.input_summary_columns(since_ms, until_ms)
    )
    events = parsing.within_time_window(parsing.usable_events(parsed), since_ms, until_ms)
    _events_writer(events).parquet(under(out, EVENTS_TABLE))
    return dict(observation.get)


def find_trace(spark: SparkSession, options: ReportOptions) -> list[dict[str, object]]:
    """One message's operations in order: from the logs when --logs is given, else from the
    message-trace table an earlier report wrote under --out."""
    assert options.trace is not None
    if options.logs is not None:
        parsed = parsing.parse_records(read_logs(spark, options.logs))
        events = parsing.within_time_window(
            parsing.usable_events(parsed), options.since_ms, options.until_ms
        )
    else:
        assert options.out is not None
        try:
            events = spark.read.parquet(under(options.out, EVENTS_TABLE))
        except AnalysisException as error:
            raise PipelineError(f"no {EVENTS_TABLE} table under --out {options.out}") from error
    return [row.asDict() for row in parsing.message_trace(events, options.trace).collect()]


def _events_writer(events: DataFrame) -> DataFrameWriter:
    writer = events.write.mode("overwrite").option(
        "parquet.bloom.filter.enabled#message_id", "true"
    )
    for column in UNIQUE_COLUMNS:
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
        writer = writer.option(f"parquet.column.statistics.enabled#{column}", "false")
    return writer


def write_text(spark: SparkSession, target: str, text: str) -> None:
    """Write report.html where the tables went: a local file directly, any other URI through
    Hadoop's FileSystem, so a cluster run can write to HDFS or object storage too."""
    scheme = urlsplit(target).scheme
    if scheme in ("", "file"):
        Path(urlsplit(target).path if scheme else target).write_text(text, encoding="utf-8")
        return
    jvm = spark.sparkContext._jvm  # no public API for Hadoop's FileSystem in PySpark
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(target)
    stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(path, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


@contextmanager
def _phase(description: str) -> Iterator[None]:
    """Log how long a step took: the figures that tell where a slow report spends its time."""
    started = time.perf_counter()
    yield
    LOG.info("%s in %.1f s", description, time.perf_counter() - started)


def _write_summary(spark: SparkSession, summary: Mapping[str, int | None], target: str) -> None:
    # Built in the JVM: createDataFrame of Python rows would start Python workers (over a
    # second, and executors are otherwise Python-free). Explicit types: with empty logs the
    # first/last times are None.
    row = [F.lit(value).cast(LongType()).alias(name) for name, value in summary.items()]
    spark.range(1).select(*row).coalesce(1).write.mode("overwrite").parquet(target)


Rows = list[dict[str, object]]


def _write_tables(tables: Mapping[str, DataFrame], out: str) -> dict[str, Rows]:
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


def _report_data(
    options: ReportOptions, summary: Mapping[str, int | None], rows: Mapping[str, Rows]
) -> ReportData:
    return ReportData(
        generated_at_ms=int(datetime.now(tz=UTC).timestamp() * 1000),
        logs=str(options.logs),
        since_ms=options.since_ms,
        until_ms=options.until_ms,
        summary=dict(summary),
        subscriptions=rows["subscription_summary"],
        histogram=rows["attempts_histogram"],
        endpoints=rows["endpoint_health"],
        timeline=rows["delivery_timeline"],
        queues=rows["queue_summary"],
    )
