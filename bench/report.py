"""Benchmark: the delivery report over N synthetic operation-log records, end to end.

    .venv/bin/python bench/report.py [--records 5000000] [--master local[2]] [--workdir DIR]

Generates the records as JSON lines (not timed; several processes, pre-formatted strings),
then times ``gateway/pipeline/job.py`` in a fresh Python process, so the figure includes
interpreter and JVM start-up, reading, every output table and the HTML. Target (issue 6):
5 million records in at most 25 s on local[2] on the 2-core build machine.

The traffic mimics a gateway with 20 topics of 3 HTTP subscriptions (about 90 % of pushes
succeed first time, some need retries, 1 % end in a dead letter) and 20 queues (send, one or two
receives, usually a delete), records shaped and sized like the gateway's own.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
START_MS = 1_717_200_000_000  # 2024-06-01 00:00:00 UTC
SPAN_MS = 24 * 3_600_000
RECORDS_PER_FILE = 500_000
TIMEOUT_SECONDS = 900

PUBLISH = (
    '{"Time":%d,"Action":"PublishMessage","TopicName":"topic-%d","MessageId":"%s",'
    '"AccountId":"1234567890123456","RemoteAddress":"10.0.%d.%d","RequestId":"%s",'
    '"ProcessTime":%d}\n'
)
PUSH = (
    '{"Time":%d,"Action":"PushMessage","TopicName":"topic-%d","SubscriptionName":"sub-%d",'
    '"MessageId":"%s","AccountId":"1234567890123456","Endpoint":"http://10.1.%d.%d:8080/notify",'
    '"Attempt":%d,"Outcome":"%s","StatusCode":%s,"LatencyMs":%d,"Error":%s}\n'
)
DEAD_LETTER = (
    '{"Time":%d,"Action":"DeadLetter","TopicName":"topic-%d","SubscriptionName":"sub-%d",'
    '"MessageId":"%s","AccountId":"1234567890123456","Attempt":%d}\n'
)
QUEUE_OPERATION = (
    '{"Time":%d,"Action":"%s","QueueName":"queue-%d","MessageId":"%s",'
    '"AccountId":"1234567890123456","RemoteAddress":"10.2.%d.%d","RequestId":"%s",'
    '"ProcessTime":%d%s}\n'
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", type=Path, help="keep data here (default: a temp dir)")
    parser.add_argument("--conf", action="append", default=[], help="extra Spark KEY=VALUE")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mns-report-bench-"))
    logs, out = workdir / "logs", workdir / "out"
    try:
        started = time.perf_counter()
        written = generate(logs, args.records, workers=2)
        generation = time.perf_counter() - started
        size = sum(path.stat().st_size for path in logs.rglob("*.jsonl"))
        print(f"generated {written:,} records ({size / 2**20:,.0f} MiB) in {generation:.1f} s")
        elapsed, output = time_report(logs, out, args.master, args.conf)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    reported = re.search(r"(\d+) events reported", output)
    print(f"report end to end ({args.master}): {elapsed:.1f} s, {written / elapsed:,.0f} rows/s")
    print(f"events reported by the job: {reported.group(1) if reported else 'unknown'}")
    return 0


def time_report(logs: Path, out: Path, master: str, conf: list[str]) -> tuple[float, str]:
    settings = [
        "spark.ui.enabled=false",
        "spark.driver.memory=4g",
        "spark.sql.shuffle.partitions=4",
        "spark.sql.files.maxPartitionBytes=256m",
        "spark.driver.extraJavaOptions=-XX:+UseParallelGC",
        *conf,
    ]
    command = [sys.executable, str(REPO / "gateway/pipeline/job.py")]
    command += ["--logs", str(logs), "--out", str(out), "--master", master]
    for setting in settings:
        command += ["--conf", setting]
    started = time.perf_counter()
    finished = subprocess.run(
        command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
    )
    elapsed = time.perf_counter() - started
    if finished.returncode != 0:
        sys.stderr.write(finished.stderr[-4000:])
        raise SystemExit(f"report failed with exit code {finished.returncode}")
    return elapsed, finished.stdout


def generate(logs: Path, records: int, workers: int) -> int:
    shares = [records // workers + (1 if i < records % workers else 0) for i in range(workers)]
    jobs = [(logs, worker, share) for worker, share in enumerate(shares)]
    with multiprocessing.Pool(workers) as pool:
        return sum(pool.starmap(generate_share, jobs))


def generate_share(logs: Path, worker: int, records: int) -> int:
    """Write ``records`` lines into hourly partitions; each worker owns its own files."""
    rng = random.Random(worker)
    lines: list[str] = []
    written = files = sequence = 0
    step = SPAN_MS / max(records / 4, 1)
    while written + len(lines) < records:
        sequence += 1
        now = START_MS + int(sequence * step)
        message_id = f"{worker:02X}{sequence:030X}"
        if sequence % 2:
            lines += topic_message(rng, now, message_id)
        else:
            lines += queue_message(rng, now, message_id)
        if len(lines) >= RECORDS_PER_FILE:
            written += flush(logs, worker, files, lines, now)
            files += 1
            lines = []
    lines = lines[: records - written]
    if lines:
        written += flush(logs, worker, files, lines, START_MS + int(sequence * step))
    return written


def flush(logs: Path, worker: int, index: int, lines: list[str], now: int) -> int:
    hour = time.gmtime(now / 1000)
    folder = logs / time.strftime("dt=%Y-%m-%d/hour=%H", hour)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"oplog-bench-{worker}-{index:05d}.jsonl").write_text("".join(lines))
    return len(lines)


def topic_message(rng: random.Random, now: int, message_id: str) -> list[str]:
    topic = rng.randrange(20)
    request = f"{rng.getrandbits(96):024X}"
    lines = [PUBLISH % (now, topic, message_id, topic, rng.randrange(256), request, 2)]
    for subscription in range(3):
        roll = rng.random()
        attempts = 1 if roll < 0.9 else 2 if roll < 0.96 else 3 if roll < 0.99 else 5
        at = now + 5 + rng.randrange(40)
        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            ok = last and attempts < 5
            outcome, status, error = ("success", "200", "null") if ok else _failure(rng)
            latency = 5 + rng.randrange(60)
            lines.append(
                PUSH
                % (
                    at,
                    topic,
                    subscription,
                    message_id,
                    topic,
                    subscription,
                    attempt,
                    outcome,
                    status,
                    latency,
                    error,
                )
            )
            at += latency + 1000 * 2**attempt
        if attempts == 5:
            lines.append(DEAD_LETTER % (at, topic, subscription, message_id, attempts))
    return lines


def _failure(rng: random.Random) -> tuple[str, str, str]:
    if rng.random() < 0.5:
        return "http_error", "503", '"503 Service Unavailable"'
    return "timeout", "null", '"read timeout after 5 s"'


def queue_message(rng: random.Random, now: int, message_id: str) -> list[str]:
    queue = rng.randrange(20)
    send = "SendMessage" if rng.random() < 0.7 else "BatchSendMessage"
    lines = [_queue_line(rng, now, send, queue, message_id, "")]
    receives = 2 if rng.random() < 0.1 else 1
    at = now + 20 + rng.randrange(500)
    handle = ""
    for dequeue in range(1, receives + 1):
        handle = f"{rng.getrandbits(128):032X}"
        extra = (
            f',"DequeueCount":{dequeue},"NextVisibleTime":{at + 30_000},'
            f'"ReceiptHandleInResponse":"{handle}"'
        )
        lines.append(_queue_line(rng, at, "ReceiveMessage", queue, message_id, extra))
        at += 30_000 if dequeue < receives else 50 + rng.randrange(200)
    if rng.random() < 0.95:
        extra = f',"ReceiptHandleInRequest":"{handle}"'
        lines.append(_queue_line(rng, at, "DeleteMessage", queue, message_id, extra))
    return lines


def _queue_line(
    rng: random.Random, at: int, action: str, queue: int, message_id: str, extra: str
) -> str:
    request = f"{rng.getrandbits(96):024X}"
    octets = (rng.randrange(256), rng.randrange(256))
    return QUEUE_OPERATION % (at, action, queue, message_id, *octets, request, 1, extra)


if __name__ == "__main__":
    sys.exit(main())
