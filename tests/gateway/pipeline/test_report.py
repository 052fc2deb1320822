"""The whole job and its command line, on a directory of JSON lines built here: records shaped
like the gateway's, records exported from the real service (numbers as strings, date-string
times, unknown fields, a delete with only a receipt handle), a gzip file, malformed lines."""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from gateway.errors.commands import PipelineError
from gateway.pipeline import reader, storage
from gateway.pipeline.report import (
    add_report_arguments,
    format_trace_line,
    options_from_arguments,
    parse_instant,
    run_report,
)
from gateway.pipeline.summaries import timeline_bucket_ms

REPO = Path(__file__).resolve().parents[3]
T0 = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"  # what a gateway with tracing on logs (TraceId)

GATEWAY_RECORDS: list[dict[str, object]] = [
    {"Time": T0, "Action": "PublishMessage", "TopicName": "t", "MessageId": "m1", "TraceId": TRACE},
    {
        "Time": T0 + 100,
        "Action": "PushMessage",
        "TopicName": "t",
        "SubscriptionName": "s1",
        "Endpoint": "http://e1",
        "MessageId": "m1",
        "PublishTime": T0,
        "Attempt": 1,
        "TraceId": TRACE,
        "Outcome": "http_error",
        "StatusCode": 500,
        "LatencyMs": 3.5,
        "Error": "500 Internal Server Error",
    },
    {
        "Time": T0 + 1100,
        "Action": "PushMessage",
        "TopicName": "t",
        "SubscriptionName": "s1",
        "Endpoint": "http://e1",
        "MessageId": "m1",
        "PublishTime": T0,
        "Attempt": 2,
        "Outcome": "success",
        "StatusCode": 204,
        "LatencyMs": 2,
    },
    {"Time": T0, "Action": "SendMessage", "QueueName": "q", "MessageId": "a"},
    {
        "Time": T0 + 10,
        "Action": "ReceiveMessage",
        "QueueName": "q",
        "MessageId": "a",
        "DequeueCount": 1,
        "ReceiptHandleInResponse": "ha",
        "RemoteAddress": "127.0.0.1",
    },
    {
        "Time": T0 + 20,
        "Action": "DeleteMessage",
        "QueueName": "q",
        "MessageId": "a",
        "ReceiptHandleInRequest": "ha",
    },
]
MALFORMED_LINES = ["not json at all", '{"Time": 1, "Action": ', "[1, 2, 3]"]
EXPORTED_LINES = [
    '{"Time":"2024-01-01 00:00:05","Action":"SendMessage","QueueName":"q","MessageId":"b",'
    '"Unknown":"ignored","Nested":{"k":[1,2]}}',
    '{"Time":"1704067206000","Action":"ReceiveMessage","QueueName":"q","MessageId":"b",'
    '"DequeueCount":"1","ReceiptHandleInResponse":"hb1"}',
    '{"Time":"1704067207000","Action":"ReceiveMessage","QueueName":"q","MessageId":"b",'
    '"DequeueCount":"2","ReceiptHandleInResponse":"hb2"}',
    '{"Time":"2024-01-01 00:00:08.000","Action":"DeleteMessage","QueueName":"q",'
    '"ReceiptHandleInRequest":"hb2"}',
    '{"Time":"1704067200050","Action":"PushMessage","TopicName":"t","SubscriptionName":"s2",'
    '"Endpoint":"http://e2","MessageId":"m1","Attempt":"1","Outcome":"success","StatusCode":"200"}',
]
COMPRESSED_RECORD = {"Time": T0 + 9000, "Action": "SendMessage", "QueueName": "q", "MessageId": "c"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("logs")
    hour = root / "dt=2024-01-01" / "hour=00"
    hour.mkdir(parents=True)
    lines = [json.dumps(record) for record in GATEWAY_RECORDS] + ["", *MALFORMED_LINES]
    (hour / "oplog-host-1-abc-000001.jsonl").write_text("\n".join(lines) + "\n")
    export = root / "export"
    export.mkdir()
    (export / "part-0.json").write_text("\n".join(EXPORTED_LINES) + "\n")
    with gzip.open(export / "part-1.json.gz", "wt") as compressed:
        compressed.write(json.dumps(COMPRESSED_RECORD) + "\n")
    return root


def arguments(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_report_arguments(parser)
    return parser.parse_args(list(argv))


def run(spark: SparkSession, *argv: str) -> int:
    return run_report(arguments(*argv), session_factory=lambda options: spark)


def table(spark: SparkSession, out: Path, name: str) -> list[dict[str, object]]:
    return [row.asDict() for row in spark.read.parquet(str(out / name)).collect()]


@pytest.fixture(scope="module")
def out(spark: SparkSession, logs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One report run, with ``--traces``, for the tests that read what it wrote (a run costs
    seconds of Spark's planning, however few the records)."""
    target = tmp_path_factory.mktemp("report")
    assert run(spark, "--logs", str(logs), "--out", str(target), "--traces") == 0
    return target


@pytest.fixture(scope="module")
def facts_only(out: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``out`` without its message_traces table, as a run without ``--traces`` leaves it: a
    trace is then told from the facts."""
    target = tmp_path_factory.mktemp("facts-only") / "out"
    shutil.copytree(out, target, ignore=shutil.ignore_patterns("message_traces"))
    return target


def test_input_summary_counts_malformed_lines(spark: SparkSession, out: Path) -> None:
    [summary] = table(spark, out, "input_summary")
    assert summary["lines"] == len(GATEWAY_RECORDS) + len(MALFORMED_LINES) + len(EXPORTED_LINES) + 1
    assert summary["malformed_lines"] == len(MALFORMED_LINES)
    assert summary["unusable_records"] == 0
    assert summary["events_in_window"] == len(GATEWAY_RECORDS) + len(EXPORTED_LINES) + 1


def test_subscription_figures(spark: SparkSession, out: Path) -> None:
    rows = {row["subscription_name"]: row for row in table(spark, out, "subscription_summary")}
    assert rows["s1"] | {"latency_p95_ms": None, "latency_p99_ms": None} == {
        "topic_name": "t",
        "subscription_name": "s1",
        "endpoint": "http://e1",
        "published": 1,
        "messages": 1,
        "delivered": 1,
        "attempts": 2,
        "failed_attempts": 1,
        "success_ratio": 1.0,
        "first_attempt_success_ratio": 0.0,
        "latency_p50_ms": 1095,  # 1,100 ms, read from its histogram bucket (1,088-1,103)
        "latency_p95_ms": None,
        "latency_p99_ms": None,
        "dead_letters": 0,
        "replays": 0,
    }
    # s2's record came without PublishTime: the publish record supplies it.
    assert (rows["s2"]["delivered"], rows["s2"]["latency_p50_ms"]) == (1, 50)


def test_queue_figures(spark: SparkSession, out: Path) -> None:
    [queue] = table(spark, out, "queue_summary")
    assert queue == {
        "queue_name": "q",
        "sent": 3,
        "from_topics": 0,
        "received": 3,
        "deleted": 2,
        "redelivered": 1,
        "never_consumed": 1,
        "not_deleted": 1,
        "dead_letters": 0,
        "send_to_delete_p50_ms": 20,
        "send_to_delete_p99_ms": 2991,  # 3,000 ms, read from its histogram bucket (2,976-3,007)
    }


def test_other_tables_and_the_html_are_written(spark: SparkSession, out: Path) -> None:
    health = {row["subscription_name"]: row for row in table(spark, out, "endpoint_health")}
    assert not health["s1"]["currently_failing"]
    assert sum(row["messages"] for row in table(spark, out, "attempts_histogram")) == 2
    timeline = table(spark, out, "delivery_timeline")
    assert sum(row["attempts"] for row in timeline) == 3
    assert sum(row["messages"] for row in timeline) == 2  # m1 to s1 and to s2
    page = (out / "report.html").read_text()
    assert page.count("<svg") == 6  # three charts, each for a phone and a wider screen
    assert "Malformed lines skipped</th><td>3<" in page


def test_empty_logs_give_an_empty_report(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    assert run(spark, "--logs", str(tmp_path / "logs"), "--out", str(tmp_path / "out")) == 0
    [summary] = table(spark, tmp_path / "out", "input_summary")
    assert (summary["lines"], summary["first_time_ms"]) == (0, None)
    assert table(spark, tmp_path / "out", "queue_summary") == []
    assert "No records." in (tmp_path / "out" / "report.html").read_text()


def test_time_window(spark: SparkSession, logs: Path, tmp_path: Path) -> None:
    argv = ["--logs", str(logs), "--out", str(tmp_path), "--since", "2024-01-01T00:00:05"]
    assert run(spark, *argv, "--until", str(T0 + 9000)) == 0
    [queue] = table(spark, tmp_path, "queue_summary")
    assert (queue["sent"], queue["received"], queue["deleted"], queue["never_consumed"]) == (
        1,
        2,
        1,
        0,
    )
    assert table(spark, tmp_path, "subscription_summary") == []
    assert not (tmp_path / "message_traces").exists()  # only with --traces


def test_trace_from_the_facts_under_out(
    facts_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a message_traces table the facts tell the story, one line per kind of
    operation, with the delete logged with only a receipt handle included; no Spark, no logs
    (failed before: the logs were parsed again, 13-31 s for one message)."""

    def no_spark(options: object) -> SparkSession:
        raise AssertionError("--trace with --out must not start Spark")

    code = run_report(arguments("--out", str(facts_only), "--trace", "b"), session_factory=no_spark)
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in lines] == ["SendMessage", "ReceiveMessage", "DeleteMessage"]
    assert lines[0].startswith("2024-01-01 00:00:05.000Z")
    assert "receives=2 dequeue_count=2" in lines[1]
    assert lines[2].startswith("2024-01-01 00:00:08.000Z")


def test_trace_from_the_written_table(
    spark: SparkSession, out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert len(table(spark, out, "message_traces")) == len(GATEWAY_RECORDS) + 6
    capsys.readouterr()
    assert run(spark, "--out", str(out), "--trace", "b") == 0
    lines = capsys.readouterr().out.splitlines()
    actions = [line.split()[2] for line in lines]
    assert actions == ["SendMessage", "ReceiveMessage", "ReceiveMessage", "DeleteMessage"]


def test_trace_from_the_logs(
    spark: SparkSession, logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(spark, "--logs", str(logs), "--trace", "m1") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2] for line in lines] == ["PublishMessage", *["PushMessage"] * 3]
    assert "outcome=http_error status_code=500" in lines[2]
    # The trace a tracing UI shows, beside each step it covers (failed before: not printed).
    assert lines[0].endswith(f"trace_id={TRACE}")
    assert f"trace_id={TRACE}" in lines[1] or f"trace_id={TRACE}" in lines[2]


@pytest.mark.parametrize("kept", ["out", "facts_only"])
def test_unknown_message_exits_1(
    spark: SparkSession,
    kept: str,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Looked up in the message_traces table, and in the facts where there is none."""
    out: Path = request.getfixturevalue(kept)
    assert run(spark, "--out", str(out), "--trace", "nope") == 1
    assert "no operations logged" in capsys.readouterr().out


def test_missing_logs_directory_exits_2(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(spark, "--logs", str(tmp_path / "absent"), "--out", str(tmp_path)) == 2
    assert "cannot read --logs" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--logs", "l"], "--logs and --out are required"),
        (["--trace", "m"], "--trace needs --logs"),
        (["--logs", "l", "--out", "o", "--since", "last tuesday"], "cannot read"),
        (["--logs", "l", "--out", "o", "--since", "2000", "--until", "1000"], "before --until"),
        (["--logs", "l", "--out", "o", "--timezone", "Mars/Olympus"], "unknown --timezone"),
        (["--logs", "l", "--out", "o", "--conf", "novalue"], "KEY=VALUE"),
    ],
)
def test_bad_arguments_exit_2_before_spark_starts(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_spark(options: object) -> SparkSession:
        raise AssertionError("Spark must not start for bad arguments")

    assert run_report(arguments(*argv), session_factory=no_spark) == 2
    assert message in capsys.readouterr().err


def test_options_from_arguments() -> None:
    argv = ["--logs", "l", "--out", "o", "--timezone", "Asia/Shanghai", "--since", "2024-01-01"]
    options = options_from_arguments(arguments(*argv, "--conf", "spark.driver.memory = 2g"))
    assert options.since_ms == T0 - 8 * 3_600_000
    assert options.spark_conf == {"spark.driver.memory": "2g"}
    assert options.master is None


def test_parse_instant_accepts_epoch_ms_and_offsets() -> None:
    from zoneinfo import ZoneInfo

    utc = ZoneInfo("UTC")
    assert parse_instant(str(T0), utc) == T0
    assert parse_instant("2024-01-01T08:00:00+08:00", utc) == T0
    with pytest.raises(PipelineError):
        parse_instant("soon", utc)


def test_timeline_bucket_grows_with_the_span() -> None:
    assert timeline_bucket_ms(None, None) == 1_000
    assert timeline_bucket_ms(T0, T0 + 60_000) == 1_000  # a one-minute run: 60 points
    assert timeline_bucket_ms(T0, T0 + 3_600_000) == 60_000
    assert timeline_bucket_ms(T0, T0 + 86_400_000) == 15 * 60_000
    assert timeline_bucket_ms(T0, T0 + 400 * 86_400_000) == 7 * 86_400_000


def test_format_trace_line_leaves_out_empty_fields() -> None:
    line = format_trace_line(
        {"time_ms": T0 + 5, "action": "ReceiveMessage", "queue_name": "q", "error": None}
    )
    assert line == "2024-01-01 00:00:00.005Z  ReceiveMessage           queue_name=q"


def test_format_trace_line_shows_the_trace_id() -> None:
    line = format_trace_line(
        {"time_ms": T0, "action": "PublishMessage", "topic_name": "t", "trace_id": TRACE}
    )
    assert line.endswith(f"topic_name=t trace_id={TRACE}")


def test_format_trace_line_shows_an_error_page_as_short_text_in_the_zone() -> None:
    from zoneinfo import ZoneInfo

    page = "HTTP 502: <html><head><title>502</title></head><body><h1>Bad\r\nGateway</h1>"
    event = {"time_ms": T0, "action": "PushMessage", "error": page + "x" * 400 + "</body>"}
    line = format_trace_line(event, ZoneInfo("Asia/Shanghai"))
    assert line.startswith("2024-01-01 08:00:00.000+08:00  PushMessage")
    assert "<" not in line and "\r" not in line
    assert "error='HTTP 502: Bad Gateway xxx" in line and line.endswith("…'")


def test_report_command_line_imports_no_pyspark() -> None:
    probe = "import sys, gateway.pipeline.report; print('pyspark' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False", result.stderr


def test_job_script_runs_as_spark_submit_would_run_it() -> None:
    """spark-submit runs job.py as a script, with its directory first on sys.path."""
    script = REPO / "gateway" / "pipeline" / "job.py"
    result = subprocess.run(
        [sys.executable, str(script), "--help"], cwd="/", capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "--logs" in result.stdout


def test_lines_found_by_their_text_parse_as_when_every_line_is_parsed(
    spark: SparkSession, logs: Path
) -> None:
    """The page's traces read only the lines mentioning their messages; those lines, from text
    and gzip files alike, come out as the full parse gives them, and a malformed line that
    mentions one is still counted malformed."""
    listing = storage.list_logs(spark, str(logs))
    labels = sorted(listing.paths)

    def parsed(mentioning: list[str]) -> list[dict[str, object]]:
        rows = reader.read_partitions(spark, listing, labels, mentioning=mentioning)
        wanted = rows.where(F.col("message_id").isin("m1", "c"))
        return sorted((row.asDict() for row in wanted.collect()), key=repr)

    everything = parsed([])
    assert len(everything) == 5
    assert parsed(["m1", "c"]) == everything
    malformed = reader.read_partitions(spark, listing, labels, mentioning=["Action"])
    assert malformed.where("is_malformed").count() == 1  # '{"Time": 1, "Action": '
