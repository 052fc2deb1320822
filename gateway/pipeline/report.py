"""``mns-gateway report``: read operation logs, write Parquet tables and one HTML report.

This module is the IO shell around :mod:`gateway.pipeline.transforms`: it owns the
SparkSession, the reading of JSON lines, the writing of tables and the HTML file. PySpark is
imported inside functions only, so ``gateway.cli`` can register the sub-command on a gateway
installed without the ``pipeline`` extra.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.pipeline import PipelineError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, DataFrameWriter, SparkSession

    from gateway.pipeline.html_report import ReportData

EVENTS_TABLE: Final = "message_traces"
HTML_NAME: Final = "report.html"
#: Candidate widths of the delivery-timeline buckets; the smallest giving at most
#: MAX_TIMELINE_BUCKETS points over the logs' span is used.
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


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """The command line, validated: what one report run needs to know."""

    logs: Path | None
    out: Path | None
    since_ms: int | None
    until_ms: int | None
    master: str | None
    timezone: str
    trace: str | None
    spark_conf: Mapping[str, str]


SessionFactory = Callable[[ReportOptions], "SparkSession"]


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``report`` sub-command's options; shared by ``mns-gateway report`` and spark-submit."""
    parser.add_argument("--logs", help="directory of JSON-lines operation logs (read recursively)")
    parser.add_argument("--out", help="directory for the Parquet tables and report.html")
    parser.add_argument("--since", help="first instant included: epoch ms or ISO-8601")
    parser.add_argument("--until", help="first instant excluded: epoch ms or ISO-8601")
    parser.add_argument(
        "--master", help="Spark master, e.g. local[*]; default: spark-submit's, else local[*]"
    )
    parser.add_argument(
        "--timezone",
        default="UTC",
        help="zone of Time strings without an offset, and of --since/--until (default UTC)",
    )
    parser.add_argument(
        "--trace", metavar="MESSAGE_ID", help="print every operation of one message and exit"
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting, repeatable (e.g. spark.driver.memory=4g)",
    )


def run_report(args: argparse.Namespace, *, session_factory: SessionFactory | None = None) -> int:
    """Run the report (or ``--trace``) for parsed arguments; returns the process exit code.

    ``session_factory`` lets a caller that already has a SparkSession (tests, notebooks) reuse
    it; without one a session is built from the options and stopped at the end.
    """
    try:
        options = options_from_arguments(args)
    except PipelineError as error:
        print(f"mns-gateway report: {error}", file=sys.stderr)
        return 2
    owns_session = session_factory is None
    spark = (session_factory or build_session)(options)
    try:
        if options.trace is not None:
            return print_trace(spark, options, sys.stdout)
        summary = write_report(spark, options)
    except PipelineError as error:
        print(f"mns-gateway report: {error}", file=sys.stderr)
        return 2
    finally:
        if owns_session:
            spark.stop()
    print(
        f"read {summary['lines']} lines: {summary['events_in_window']} events reported, "
        f"{summary['malformed_lines']} malformed and {summary['unusable_records']} unusable "
        f"lines skipped; wrote {options.out}",
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for ``spark-submit gateway/pipeline/job.py`` and ``python -m``."""
    parser = argparse.ArgumentParser(
        prog="mns-gateway report", description="Delivery report over MNS operation logs."
    )
    add_report_arguments(parser)
    return run_report(parser.parse_args(argv))


def options_from_arguments(args: argparse.Namespace) -> ReportOptions:
    """Validate the command line without touching Spark or the file system."""
    try:
        zone = ZoneInfo(args.timezone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise PipelineError(f"unknown --timezone {args.timezone!r}") from error
    if args.trace is None and (args.logs is None or args.out is None):
        raise PipelineError("--logs and --out are required (or --trace with --logs or --out)")
    if args.trace is not None and args.logs is None and args.out is None:
        raise PipelineError("--trace needs --logs (read the logs) or --out (read its traces)")
    options = ReportOptions(
        logs=Path(args.logs) if args.logs else None,
        out=Path(args.out) if args.out else None,
        since_ms=parse_instant(args.since, zone) if args.since else None,
        until_ms=parse_instant(args.until, zone) if args.until else None,
        master=args.master,
        timezone=args.timezone,
        trace=args.trace,
        spark_conf=dict(_split_setting(setting) for setting in args.conf),
    )
    since, until = options.since_ms, options.until_ms
    if since is not None and until is not None and since >= until:
        raise PipelineError("--since must be before --until")
    return options


def parse_instant(text: str, zone: ZoneInfo) -> int:
    """Epoch milliseconds from ``1700000000000`` or an ISO-8601 date/time (naive = ``zone``)."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError as error:
        raise PipelineError(f"cannot read {text!r} as epoch ms or ISO-8601") from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return int(moment.timestamp() * 1000)


def timeline_bucket_ms(first_ms: int | None, last_ms: int | None) -> int:
    """The narrowest bucket that keeps the success-over-time chart readable."""
    span = (last_ms - first_ms) if first_ms is not None and last_ms is not None else 0
    for width in TIMELINE_BUCKET_CHOICES_MS:
        if span // width < MAX_TIMELINE_BUCKETS:
            return width
    return TIMELINE_BUCKET_CHOICES_MS[-1] * (span // (TIMELINE_BUCKET_CHOICES_MS[-1] * 100) + 1)


def build_session(options: ReportOptions) -> SparkSession:
    """A session for one report run. Without --master, spark-submit's master applies, and a
    plain ``mns-gateway report`` falls back to PySpark's own default, local[*]."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("mns-delivery-report").config(
        "spark.sql.session.timeZone", options.timezone
    )
    if options.master:
        builder = builder.master(options.master)
    for key, value in options.spark_conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def read_logs(spark: SparkSession, logs: Path) -> DataFrame:
    """Every file under ``logs``, as JSON lines with the explicit schema; bad lines kept aside."""
    from gateway.pipeline.schema import CORRUPT_RECORD, raw_log_schema

    if not logs.is_dir():
        raise PipelineError(f"--logs {logs} is not a directory")
    return (
        spark.read.schema(raw_log_schema())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "*.json*")
        .json(str(logs))
    )


def build_tables(
    events: DataFrame, summary: Mapping[str, int | None], deliveries: DataFrame | None = None
) -> dict[str, DataFrame]:
    """The aggregate tables as lazy DataFrames, keyed by their directory name under --out.
    ``deliveries`` lets the caller pass a persisted :func:`transforms.message_deliveries`."""
    from gateway.pipeline import transforms

    if summary["events_without_message_id"]:
        events = transforms.attach_message_ids_by_receipt_handle(events)
    if deliveries is None:
        deliveries = transforms.message_deliveries(events)
    bucket = timeline_bucket_ms(summary["first_time_ms"], summary["last_time_ms"])
    return {
        "subscription_summary": transforms.subscription_summary(deliveries, events),
        "attempts_histogram": transforms.attempts_histogram(deliveries),
        "endpoint_health": transforms.endpoint_health(events),
        "delivery_timeline": transforms.delivery_timeline(events, bucket),
        "queue_summary": transforms.queue_summary(transforms.queue_message_lifecycles(events)),
    }


def write_report(spark: SparkSession, options: ReportOptions) -> dict[str, int | None]:
    """Read the logs once, write every table and the HTML; returns the input summary.

    The JSON is parsed exactly once: that pass writes the normalised events (the message-trace
    table) and, through ``observe``, counts lines, malformed and unusable records on the way.
    The aggregates then read only the columns they need from that Parquet table, which is
    cheaper than caching the parsed rows in memory and then writing them out as well.
    """
    from pyspark.sql import Observation

    from gateway.pipeline import transforms
    from gateway.pipeline.html_report import render_report

    assert options.logs is not None and options.out is not None
    observation = Observation("input_summary")
    parsed = transforms.parse_records(read_logs(spark, options.logs)).observe(
        observation, *transforms.input_summary_columns(options.since_ms, options.until_ms)
    )
    events = transforms.within_time_window(
        transforms.usable_events(parsed), options.since_ms, options.until_ms
    )
    _events_writer(events).parquet(str(options.out / EVENTS_TABLE))
    summary: dict[str, int | None] = dict(observation.get)
    stored = spark.read.parquet(str(options.out / EVENTS_TABLE))
    if summary["events_without_message_id"]:
        stored = transforms.attach_message_ids_by_receipt_handle(stored)
        summary = {**summary, "events_without_message_id": 0}
    deliveries = transforms.message_deliveries(stored).persist()
    try:
        _write_tables(build_tables(stored, summary, deliveries), options.out)
    finally:
        deliveries.unpersist()
    spark.createDataFrame([summary]).coalesce(1).write.mode("overwrite").parquet(
        str(options.out / "input_summary")
    )
    data = _collect_report_data(spark, options, summary)
    (options.out / HTML_NAME).write_text(render_report(data), encoding="utf-8")
    return summary


#: Columns whose values are (nearly) all distinct: dictionary encoding and min/max statistics
#: only cost time there. A Bloom filter on message_id lets a trace lookup skip row groups.
UNIQUE_COLUMNS: Final = (
    "message_id",
    "request_id",
    "receipt_handle_in_request",
    "receipt_handle_in_response",
)


def _events_writer(events: DataFrame) -> DataFrameWriter:
    writer = events.write.mode("overwrite").option(
        "parquet.bloom.filter.enabled#message_id", "true"
    )
    for column in UNIQUE_COLUMNS:
        writer = writer.option(f"parquet.enable.dictionary#{column}", "false")
        writer = writer.option(f"parquet.column.statistics.enabled#{column}", "false")
    return writer


#: Tables written one after another in one thread; the threads run at the same time. The first
#: chain shares the persisted deliveries, so it is computed once, by its first table.
WRITE_CHAINS: Final = (
    ("subscription_summary", "attempts_histogram"),
    ("endpoint_health",),
    ("delivery_timeline", "queue_summary"),
)


def _write_tables(tables: Mapping[str, DataFrame], out: Path) -> None:
    """Each table is a Spark job whose last stages run one task (the result is tiny); running
    the jobs from a few threads keeps every core busy meanwhile."""
    from concurrent.futures import ThreadPoolExecutor

    def write_chain(names: Sequence[str]) -> None:
        for name in names:
            tables[name].coalesce(1).write.mode("overwrite").parquet(str(out / name))

    with ThreadPoolExecutor(max_workers=len(WRITE_CHAINS)) as pool:
        for finished in [pool.submit(write_chain, chain) for chain in WRITE_CHAINS]:
            finished.result()


def _collect_report_data(
    spark: SparkSession, options: ReportOptions, summary: Mapping[str, int | None]
) -> ReportData:
    """The small tables, read back from Parquet (cheap), as plain Python rows for the HTML."""
    from gateway.pipeline.html_report import ReportData

    assert options.out is not None

    def rows(name: str) -> list[dict[str, object]]:
        frame = spark.read.parquet(str(options.out / name))
        return [row.asDict() for row in frame.collect()]

    return ReportData(
        generated_at_ms=int(datetime.now(tz=UTC).timestamp() * 1000),
        logs=str(options.logs),
        since_ms=options.since_ms,
        until_ms=options.until_ms,
        summary=dict(summary),
        subscriptions=rows("subscription_summary"),
        histogram=rows("attempts_histogram"),
        endpoints=rows("endpoint_health"),
        timeline=rows("delivery_timeline"),
        queues=rows("queue_summary"),
    )


def print_trace(spark: SparkSession, options: ReportOptions, stream: TextIO) -> int:
    """Print one message's operations in order; 1 when the message does not appear. Reads the
    logs when --logs is given, else the message-trace table of an earlier report in --out."""
    from gateway.pipeline import transforms

    assert options.trace is not None
    if options.logs is not None:
        parsed = transforms.parse_records(read_logs(spark, options.logs))
        events = transforms.within_time_window(
            transforms.usable_events(parsed), options.since_ms, options.until_ms
        )
    else:
        assert options.out is not None
        table = options.out / EVENTS_TABLE
        if not table.is_dir():
            raise PipelineError(f"no {EVENTS_TABLE} table under --out {options.out}")
        events = spark.read.parquet(str(table))
    found = transforms.message_trace(events, options.trace).collect()
    if not found:
        print(f"no operations logged for MessageId {options.trace}", file=stream)
        return 1
    for row in found:
        print(format_trace_line(row.asDict()), file=stream)
    return 0


def format_trace_line(event: Mapping[str, object]) -> str:
    """One operation as ``<UTC time>  <Action>  field=value ...`` with empty fields left out."""
    when = datetime.fromtimestamp(int(event["time_ms"]) / 1000, tz=UTC)  # type: ignore[call-overload]
    shown = (
        "queue_name",
        "topic_name",
        "subscription_name",
        "endpoint",
        "attempt",
        "outcome",
        "status_code",
        "latency_ms",
        "dequeue_count",
        "error",
        "remote_address",
        "request_id",
    )
    details = " ".join(f"{key}={event[key]}" for key in shown if event.get(key) is not None)
    return f"{when:%Y-%m-%d %H:%M:%S.%f}"[:-3] + f"Z  {event['action']:<24} {details}".rstrip()


def _split_setting(setting: str) -> tuple[str, str]:
    key, separator, value = setting.partition("=")
    if not separator or not key.strip():
        raise PipelineError(f"--conf expects KEY=VALUE, got {setting!r}")
    return key.strip(), value.strip()
