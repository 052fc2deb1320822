"""What replaying what was delivered costs (docs/delivery.md#replaying-what-was-delivered).

One topic with 10 subscriptions and ``--messages`` messages, each delivered to all 10 (the
delivered history holds 10 x messages rows, one a millisecond of delivery time per message);
then one subscription's window is replayed through the store, as the CLI does: all of it (dry,
then queued), its first 1 % and its last 1 % (queued). The history's only index starts with the
MessageId, so a window's read walks the history from its oldest rows up to the window's end: the
last 1 % reads the whole history, the first 1 % its front. Printed: CPU ms of this process
(SQLite runs in it) plus the database server's (PostgreSQL), and wall ms, per replayed message
and in all. The set-up writes the history's rows directly (what the settles of the pushes would
have written), so that it takes seconds, not the minutes of real pushes.

    .venv/bin/python bench/delivered_replay.py [--messages 10000] [--repeats 3]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from backends import Backend, add_database_arguments, backends

from gateway.composition import open_store
from gateway.config.settings import Settings
from gateway.delivery.replays import ReplayWindow
from gateway.store.base import Store
from gateway.store.delivered_replays import Target, replay_delivered
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, TopicMessage

SUBSCRIPTIONS = 10


def delivered(store: Store, messages: int) -> list[int]:
    """The topic, its subscriptions, the messages (kept by the topic, nothing pending) and the
    delivered history; each message's delivery time."""
    store.topics.create_topic("fanout", 65536, False)
    for i in range(SUBSCRIPTIONS):
        store.topics.subscribe(Subscription("fanout", f"s{i:03d}", f"http://s{i}.test/"))
    start = store.now_ms() - messages - 1000
    batch = []
    for n in range(messages):
        message_id = store.topics.new_message_id(start + n)
        batch.append(TopicMessage(message_id, "fanout", "b", "X", start + n))
    for first in range(0, len(batch), 500):
        store.topics.publish_all(batch[first : first + 500])

    def history(conn: Connection) -> None:
        conn.execute("DELETE FROM deliveries")  # every push made
        conn.executemany(
            "INSERT INTO delivered (message_id, delivery_id, topic_name, subscription_name,"
            " delivered_at, attempt, outcome, status_code, latency_ms, earlier)"
            " VALUES (?, ?, ?, ?, ?, 1, 'success', 204, 1.0, NULL)",
            [
                (m.id, uuid.uuid4().hex, "fanout", f"s{i:03d}", m.publish_time_ms + 1)
                for m in batch
                for i in range(SUBSCRIPTIONS)
            ],
        )

    store.database.write(history)
    return [m.publish_time_ms + 1 for m in batch]


def replayed(
    backend: Backend, store: Store, window: ReplayWindow, dry_run: bool
) -> tuple[float, float, int]:
    """CPU ms (here + the server) and wall ms of one replay, and how many it replayed."""
    target = Target("fanout", "s000", window, "bench", dry_run)
    s0 = backend.database_cpu_seconds() or 0.0
    c0, w0 = time.process_time(), time.perf_counter()
    count = replay_delivered(store.deliveries, target)
    cpu = time.process_time() - c0 + (backend.database_cpu_seconds() or 0.0) - s0
    return cpu * 1000, (time.perf_counter() - w0) * 1000, count.queued


def run(backend: Backend, messages: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = backend.new_database()
        store = open_store(Settings(data_dir=Path(tmp), database_url=url or ""))
        try:
            times = delivered(store, messages)
            hundredth = max(1, messages // 100)
            windows = [
                ("all, dry", ReplayWindow(times[0], times[-1] + 1), True),
                ("first 1%", ReplayWindow(times[0], times[hundredth]), False),
                ("last 1%", ReplayWindow(times[-hundredth], times[-1] + 1), False),
                ("all", ReplayWindow(times[0], times[-1] + 1), False),
            ]
            figures = []
            for label, window, dry in windows:
                cpu, wall, count = replayed(backend, store, window, dry)
                # Nothing the replays queue is left pending for the next one's count.
                store.database.write(lambda c: c.execute("DELETE FROM deliveries"))
                figures.append(
                    f"{label}: {count} in {cpu:.0f} ms CPU ({cpu / count * 1000:.0f} µs each),"
                    f" {wall:.0f} ms wall"
                )
            print(
                f"{backend.label}, {messages} x {SUBSCRIPTIONS} delivered rows, replaying s000: "
                + "; ".join(figures),
                flush=True,
            )
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    add_database_arguments(parser)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            for _ in range(args.repeats):
                run(backend, args.messages)


if __name__ == "__main__":
    main()
