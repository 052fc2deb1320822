"""Synthetic operation logs for the report benchmark: N records shaped and sized like the gateway's.

The traffic mimics a gateway with 20 topics of 3 HTTP subscriptions (about 90 % of pushes
succeed first time, some need retries, 1 % end in a dead letter) and 20 queues (send, one or two
receives, usually a delete), written as JSON lines into hourly partitions by several processes
from pre-formatted strings, so that generating 5 million records takes seconds, not minutes.
Like the gateway's writer, every process writes a record into the file of the UTC hour it
happened in, so a day of logs has 24 hour partitions (what an incremental report reads one at a
time) and a message whose retries or receives cross an hour has records in both. A share of the
queue messages (``late_share``) is received and deleted one to three hours after it was sent,
by a consumer that fell behind: an hour of logs then changes the figures of earlier ones.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from pathlib import Path

START_MS = 1_717_200_000_000  # 2024-06-01 00:00:00 UTC
HOUR_MS = 3_600_000
SPAN_MS = 24 * HOUR_MS
RECORDS_PER_FILE = 500_000
#: Records a message makes on average (topic 4.51, queue 3.05), so the day is 24 hours long.
RECORDS_PER_MESSAGE = 3.78

PUBLISH = (
    '{"Time":%d,"Action":"PublishMessage","TopicName":"topic-%d","MessageId":"%s",'
    '"AccountId":"1234567890123456","RemoteAddress":"10.0.%d.%d","RequestId":"%s",'
    '"ProcessTime":%d}\n'
)
PUSH = (
    '{"Time":%d,"Action":"PushMessage","TopicName":"topic-%d","SubscriptionName":"sub-%d",'
    '"MessageId":"%s","AccountId":"1234567890123456","Endpoint":"http://10.1.%d.%d:8080/notify",'
    '"PublishTime":%d,"Attempt":%d,"Outcome":"%s","StatusCode":%s,"LatencyMs":%d,"Error":%s}\n'
)
DEAD_LETTER = (
    '{"Time":%d,"Action":"DeadLetter","TopicName":"topic-%d","SubscriptionName":"sub-%d",'
    '"MessageId":"%s","AccountId":"1234567890123456","Endpoint":"http://10.1.%d.%d:8080/notify",'
    '"PublishTime":%d,"Attempt":%d,"Error":"retries exhausted"}\n'
)
QUEUE_OPERATION = (
    '{"Time":%d,"Action":"%s","QueueName":"queue-%d","MessageId":"%s",'
    '"AccountId":"1234567890123456","RemoteAddress":"10.2.%d.%d","RequestId":"%s",'
    '"ProcessTime":%d%s}\n'
)


def generate(logs: Path, records: int, workers: int, late_share: float = 0.0) -> int:
    shares = [records // workers + (1 if i < records % workers else 0) for i in range(workers)]
    jobs = [(logs, worker, share, late_share) for worker, share in enumerate(shares)]
    with multiprocessing.Pool(workers) as pool:
        return sum(pool.starmap(generate_share, jobs))


def generate_share(logs: Path, worker: int, records: int, late_share: float) -> int:
    """Write ``records`` lines into hourly partitions; each worker owns its own files."""
    rng = random.Random(worker)
    hours = HourFiles(logs, worker)
    sequence = 0
    step = SPAN_MS / max(records / RECORDS_PER_MESSAGE, 1)
    while hours.lines < records:
        sequence += 1
        now = START_MS + int(sequence * step)
        hours.close_before(now)  # every record still to come is from now on
        message_id = f"{worker:02X}{sequence:030X}"
        if sequence % 2:
            hours.add(topic_message(rng, now, message_id))
        else:
            hours.add(queue_message(rng, now, message_id, late_share))
    hours.cut(hours.lines - records)  # a message's last lines may overshoot
    hours.close_before(None)
    return hours.lines


class HourFiles:
    """A worker's records by the UTC hour they happened in, written out as files once no record
    of that hour can come any more (or a file is full)."""

    def __init__(self, logs: Path, worker: int) -> None:
        self.logs, self.worker = logs, worker
        self.open: dict[int, list[str]] = {}
        self.lines = self.files = 0

    def add(self, timed: list[tuple[int, str]]) -> None:
        for at, line in timed:
            hour = at // HOUR_MS
            lines = self.open.setdefault(hour, [])
            lines.append(line)
            if len(lines) >= RECORDS_PER_FILE:
                self._write(hour, self.open.pop(hour))
        self.lines += len(timed)

    def close_before(self, now: int | None) -> None:
        """Write the hours that ended before ``now`` (all of them when None)."""
        for hour in sorted(self.open):
            if now is None or (hour + 1) * HOUR_MS <= now:
                self._write(hour, self.open.pop(hour))

    def cut(self, count: int) -> None:
        """Drop the last ``count`` lines of the newest hours."""
        for hour in sorted(self.open, reverse=True):
            lines = self.open[hour]
            dropped = min(count, len(lines))
            del lines[len(lines) - dropped :]
            count -= dropped
            self.lines -= dropped

    def _write(self, hour: int, lines: list[str]) -> None:
        if not lines:
            return
        folder = self.logs / time.strftime("dt=%Y-%m-%d/hour=%H", time.gmtime(hour * 3600))
        folder.mkdir(parents=True, exist_ok=True)
        name = f"oplog-bench-{self.worker}-{self.files:05d}.jsonl"
        (folder / name).write_text("".join(lines))
        self.files += 1


def topic_message(rng: random.Random, now: int, message_id: str) -> list[tuple[int, str]]:
    """A publication and its pushes to three subscriptions, each line with its time."""
    topic = rng.randrange(20)
    request = f"{rng.getrandbits(96):024X}"
    lines = [(now, PUBLISH % (now, topic, message_id, topic, rng.randrange(256), request, 2))]
    for subscription in range(3):
        roll = rng.random()
        attempts = 1 if roll < 0.9 else 2 if roll < 0.96 else 3 if roll < 0.99 else 5
        at = now + 5 + rng.randrange(40)
        for attempt in range(1, attempts + 1):
            ok = attempt == attempts and attempts < 5
            outcome, status, error = ("success", "200", "null") if ok else _failure(rng)
            latency = 5 + rng.randrange(60)
            fields = (topic, subscription, message_id, topic, subscription, now, attempt)
            lines.append((at, PUSH % (at, *fields, outcome, status, latency, error)))
            at += latency + 1000 * 2**attempt
        if attempts == 5:
            fields = (topic, subscription, message_id, topic, subscription, now, attempts)
            lines.append((at, DEAD_LETTER % (at, *fields)))
    return lines


def _failure(rng: random.Random) -> tuple[str, str, str]:
    if rng.random() < 0.5:
        return "http_error", "503", '"503 Service Unavailable"'
    return "timeout", "null", '"read timeout after 5 s"'


def queue_message(
    rng: random.Random, now: int, message_id: str, late_share: float
) -> list[tuple[int, str]]:
    """A send, one or two receives and usually a delete, each line with its time; with
    probability ``late_share`` the receives start one to three hours after the send."""
    queue = rng.randrange(20)
    send = "SendMessage" if rng.random() < 0.7 else "BatchSendMessage"
    lines = [(now, _queue_line(rng, now, send, queue, message_id, ""))]
    receives = 2 if rng.random() < 0.1 else 1
    at = now + 20 + rng.randrange(500)
    if late_share and rng.random() < late_share:
        at += rng.randrange(HOUR_MS, 3 * HOUR_MS)
    handle = ""
    for dequeue in range(1, receives + 1):
        handle = f"{rng.getrandbits(128):032X}"
        extra = (
            f',"DequeueCount":{dequeue},"NextVisibleTime":{at + 30_000},'
            f'"ReceiptHandleInResponse":"{handle}"'
        )
        lines.append((at, _queue_line(rng, at, "ReceiveMessage", queue, message_id, extra)))
        at += 30_000 if dequeue < receives else 50 + rng.randrange(200)
    if rng.random() < 0.95:
        extra = f',"ReceiptHandleInRequest":"{handle}"'
        lines.append((at, _queue_line(rng, at, "DeleteMessage", queue, message_id, extra)))
    return lines


def _queue_line(
    rng: random.Random, at: int, action: str, queue: int, message_id: str, extra: str
) -> str:
    request = f"{rng.getrandbits(96):024X}"
    octets = (rng.randrange(256), rng.randrange(256))
    return QUEUE_OPERATION % (at, action, queue, message_id, *octets, request, 1, extra)
