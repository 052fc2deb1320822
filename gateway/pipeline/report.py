"""``mns-gateway report``: the command line of the delivery report.

``gateway.cli`` imports this module to register the sub-command, on gateways installed without
the ``pipeline`` extra too, so it imports nothing from PySpark: the Spark side lives in
:mod:`gateway.pipeline.spark_job`, imported only when a report actually runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gateway.errors import ExitCode
from gateway.errors.commands import PipelineError
from gateway.pipeline import OVERLAP_NOTE
from gateway.pipeline.formatting import error_excerpt, format_offset
from gateway.pipeline.options import ReportOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


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
        help="zone the page shows times in, and of Time strings without an offset and of"
        " --since/--until (default UTC)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="read every log partition again, not only those new or changed since the last"
        " report into --out",
    )
    parser.add_argument(
        "--traces",
        action="store_true",
        help="also keep every operation in the message_traces table (costs a second pass)",
    )
    parser.add_argument(
        "--trace", metavar="MESSAGE_ID", help="print every operation of one message and exit"
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's own output (warnings, stage progress) instead of logging it to a file",
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

    Bad arguments and missing inputs fail before Spark starts. Each step prints one line with
    its time; Spark's own output (its warnings, its stage bars) goes to a log file, named first,
    unless ``--verbose``. ``session_factory`` lets a caller that already has a SparkSession
    (tests, notebooks) reuse it; without one a session is built and stopped at the end.
    """
    try:
        options = options_from_arguments(args)
        check_local_inputs(options, os.path.isdir)
        if options.trace is not None and options.logs is None and _is_local(options.out):
            return trace_from_kept(options)
    except PipelineError as error:
        print(f"mns-gateway report: {error}", file=sys.stderr)
        return ExitCode.USAGE
    if session_factory is None and (missing := missing_requirement(os.environ)):
        print(f"mns-gateway report: {missing}", file=sys.stderr)
        return ExitCode.USAGE
    quiet = session_factory is None and not getattr(args, "verbose", False)
    started = time.perf_counter()
    with steps_on_stdout(), spark_output_in(spark_log_path() if quiet else None):
        return _run(options, session_factory, started)


def _run(options: ReportOptions, session_factory: SessionFactory | None, started: float) -> int:
    from gateway.pipeline import spark_job

    spark = (session_factory or spark_job.build_session)(options)
    try:
        if options.trace is not None:
            zone = ZoneInfo(options.timezone)
            return _print_trace(spark_job.find_trace(spark, options), options.trace, zone)
        summary = spark_job.write_report(spark, options)
    except PipelineError as error:
        print(f"mns-gateway report: {error}", file=sys.stderr)
        return ExitCode.USAGE
    finally:
        if session_factory is None:
            spark.stop()
    print(f"took {time.perf_counter() - started:.1f} s in all ({OVERLAP_NOTE})")
    print(
        f"read {summary['lines']} lines: {summary['events_in_window']} events reported, "
        f"{summary['malformed_lines']} malformed and {summary['unusable_records']} unusable "
        f"lines skipped; wrote {options.out}"
    )
    return ExitCode.OK


def _is_local(where: str | None) -> bool:
    return where is not None and "://" not in where


def trace_from_kept(options: ReportOptions) -> int:
    """``--trace`` with ``--out`` alone: from the tables the report keeps there, read with
    pyarrow, no Spark and no logs (:mod:`gateway.pipeline.kept_traces`)."""
    assert options.out is not None and options.trace is not None
    if importlib.util.find_spec("pyarrow") is None:
        raise PipelineError(f"--trace needs the pipeline extra: {pipeline_install_command()}")
    from gateway.pipeline import kept_traces

    out, zone = Path(options.out), ZoneInfo(options.timezone)
    if (out / kept_traces.EVENTS_TABLE).is_dir():
        events = kept_traces.operations(out / kept_traces.EVENTS_TABLE, options.trace)
        return _print_trace(events, options.trace, zone)
    if not (out / kept_traces.FACTS_TABLE).is_dir():
        raise PipelineError(f"no report under --out {options.out}")
    rows = kept_traces.facts(out / kept_traces.FACTS_TABLE, options.trace)
    lines = kept_traces.format_summary(kept_traces.summary_lines(rows, zone), zone)
    if not lines:
        print(f"no operations logged for MessageId {options.trace}")
        return ExitCode.FAILED
    print("\n".join(lines))
    print(
        "(from the report's facts: one line per kind of operation and place; "
        "--logs DIR --trace ID prints every operation)",
        file=sys.stderr,
    )
    return ExitCode.OK


def check_local_inputs(options: ReportOptions, is_dir: Callable[[str], bool]) -> None:
    """A local ``--logs`` must be a directory, and so must ``--out`` when only read (--trace):
    said at once, not after Spark's start-up. URIs (``hdfs://``, ``s3a://``) are Spark's."""
    read = [("--logs", options.logs)]
    if options.trace is not None and options.logs is None:
        read.append(("--out", options.out))
    for flag, where in read:
        if where is not None and "://" not in where and not is_dir(where):
            raise PipelineError(f"cannot read {flag} {where}: no such directory")


def spark_log_path() -> str:
    """A fresh file for one run's Spark output."""
    handle, path = tempfile.mkstemp(prefix="mns-report-", suffix=".log")
    os.close(handle)
    return path


@contextmanager
def spark_output_in(path: str | None) -> Iterator[None]:
    """Spark's JVM, launched inside, writes its stderr (log4j, stage bars) to ``path``.

    The JVM inherits file descriptor 2 when it starts; Python's own ``sys.stderr`` keeps the
    terminal (a duplicate of the original descriptor), so the report's errors still show.
    """
    if path is None:
        yield
        return
    print(f"Spark's output: {path} (--verbose shows it here)", flush=True)
    sys.stderr.flush()
    original_fd, original_stream = os.dup(2), sys.stderr
    log_fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    sys.stderr = os.fdopen(os.dup(original_fd), "w", buffering=1)
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stderr.close()
        os.dup2(original_fd, 2)
        os.close(original_fd)
        sys.stderr = original_stream


@contextmanager
def steps_on_stdout() -> Iterator[None]:
    """The pipeline's step lines (``started Spark in 6.1 s``) printed as they happen."""
    logger = logging.getLogger("gateway.pipeline")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    previous = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous[0])
        logger.propagate = previous[1]


def missing_requirement(environ: Mapping[str, str]) -> str | None:
    """What a report needs that this installation lacks, said in one line; None when complete.

    The base install has no PySpark, and PySpark without Java fails deep inside a JVM launch:
    both are checked before Spark is touched, the way PySpark itself finds ``java``.
    """
    if importlib.util.find_spec("pyspark") is None:
        return f"needs the pipeline extra: {pipeline_install_command()} (and Java 17)"
    java_home = environ.get("JAVA_HOME")
    if java_home:
        java: str | None = os.path.join(java_home, "bin", "java")
    else:
        java = shutil.which("java", path=environ.get("PATH", os.defpath))
    if java is None or not os.access(java, os.X_OK):
        return "needs Java 17: install it and put java on PATH (or set JAVA_HOME)"
    return None


#: The directory the ``gateway`` package sits in: a checkout when installed from one.
_PACKAGE_DIR: Final = Path(__file__).resolve().parents[2]


def pipeline_install_command(python: str = sys.executable, package_dir: Path = _PACKAGE_DIR) -> str:
    """How to add the pipeline extra to this very installation: mns-push is not on a package
    index, so the command names the checkout it was installed from (where this module lives in
    one, as with the README's ``pip install -e``), else says to use one."""
    checkout = str(package_dir) if (package_dir / "pyproject.toml").is_file() else "CHECKOUT"
    command = f"{python} -m pip install '{checkout}[pipeline]'"
    if checkout == "CHECKOUT":
        command += " (CHECKOUT: your clone of the mns-push repository)"
    return command


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
        logs=args.logs or None,
        out=args.out or None,
        since_ms=parse_instant(args.since, zone) if args.since else None,
        until_ms=parse_instant(args.until, zone) if args.until else None,
        master=args.master,
        timezone=args.timezone,
        trace=args.trace,
        spark_conf=dict(_split_setting(setting) for setting in args.conf),
        full=bool(args.full),
        traces=bool(args.traces),
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


def format_trace_line(event: Mapping[str, object], zone: tzinfo = UTC) -> str:
    """One operation as ``<time>  <Action>  field=value ...`` with empty fields left out; the
    time in ``zone`` with its offset, an endpoint's error as one line of at most 160
    characters of text (an HTML error page is reduced to its text)."""
    moment = datetime.fromtimestamp(int(event["time_ms"]) / 1000, tz=zone)  # type: ignore[call-overload]
    details = " ".join(
        f"{key}={_shown(key, event[key])}" for key in TRACE_FIELDS if event.get(key) is not None
    )
    stamp = f"{moment:%Y-%m-%d %H:%M:%S.%f}"[:-3] + format_offset(moment)
    return f"{stamp}  {event['action']:<24} {details}".rstrip()


TRACE_FIELDS: Final = (
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
    "trace_id",  # the OpenTelemetry trace: from a tracing UI to these lines, and back
)


def _shown(key: str, value: object) -> str:
    if key == "error":
        return repr(error_excerpt(str(value)))
    return str(value)


def _print_trace(events: Sequence[Mapping[str, object]], message_id: str, zone: tzinfo) -> int:
    if not events:
        print(f"no operations logged for MessageId {message_id}")
        return ExitCode.FAILED
    for event in events:
        print(format_trace_line(event, zone))
    return ExitCode.OK


def _split_setting(setting: str) -> tuple[str, str]:
    key, separator, value = setting.partition("=")
    if not separator or not key.strip():
        raise PipelineError(f"--conf expects KEY=VALUE, got {setting!r}")
    return key.strip(), value.strip()
