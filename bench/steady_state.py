"""A compressed soak: does the database reach a steady size under retention (issue 50;
docs/deploy.md#retention, figures in docs/benchmarks.md#steady-state-under-retention)?

One ``mns-gateway serve`` with ``MNS_GATEWAY_HISTORY_RETENTION`` set short (60 s by default, so a
day is compressed into minutes) runs for ``--windows`` retention windows under a steady load from
this process, through the official SDK, against 127.0.0.1 only: ``--rate`` publishes a second to
a topic with ``--subscriptions`` HTTP subscriptions (pushed to ``bench/endpoint.py``), and
``--queue-rate`` queue messages a second sent, received and deleted. Every ``--sample`` seconds
it prints the size on disk (SQLite: every file of the data dir; PostgreSQL: the total relation
size of the database's tables, and the WAL written per push since the last sample, from
``pg_current_wal_lsn()``), the pushes a second and the p99 latency of the requests of that
interval. At the end: the plateau (the median size of the last two windows), when the size came
within 15 % of it and the largest departure from it after the third window, the p99 of the first
window (before anything is old enough to forget) against the later ones (retention running),
errors, and pushes lost (published x subscriptions, less what the endpoint received).

``--unpartitioned`` (PostgreSQL): the history tables are made plain tables again before the
gateway starts, so retention deletes in batches instead of dropping ranges: the WAL per push
before partitioning, with the same code and settings.

    .venv/bin/python bench/steady_state.py [--retention 60] [--windows 6] [--rate 50]
        [--queue-rate 10] [--subscriptions 2] [--sample 10] [--unpartitioned]
        [--checkpoint-timeout 30] [--only SQLite|PostgreSQL]
        [--database-url auto|postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from backends import Backend, add_database_arguments, backends
from fanout import endpoint, stats
from harness import KEY_ID, SECRET, running_gateway
from mns.account import Account
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

#: Within this share of the plateau counts as on it (the issue's criterion).
BAND = 0.15
#: The largest unmeasured wait for the last pushes once the load stops.
DRAIN_SECONDS = 120.0


@dataclass
class Load:
    """What the clients did: (start offset s, latency ms) per request, errors by kind."""

    started: float = field(default_factory=time.monotonic)
    latencies: list[tuple[float, float]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    published: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, kind: str, request: Callable[[], object]) -> object | None:
        begun = time.monotonic()
        try:
            answer = request()
        except Exception as error:  # an error is counted, not fatal: the soak goes on
            with self.lock:
                name = f"{kind}: {type(error).__name__}"
                self.errors[name] = self.errors.get(name, 0) + 1
            return None
        with self.lock:
            self.latencies.append((begun - self.started, (time.monotonic() - begun) * 1000))
        return answer

    def p99(self, since: float, until: float) -> float:
        with self.lock:
            found = [ms for at, ms in self.latencies if since <= at < until]
        return statistics.quantiles(found, n=100)[98] if len(found) >= 2 else float("nan")


def paced(load: Load, per_second: float, step: Callable[[], None]) -> None:
    """``step`` ``per_second`` times a second on a fixed schedule (late steps are not made up
    by bursts beyond the schedule), until the load stops."""
    next_at = time.monotonic()
    while not load.stop.is_set():
        step()
        next_at = max(next_at + 1 / per_second, time.monotonic() - 1)
        load.stop.wait(max(0.0, next_at - time.monotonic()))


def publisher(account: Account, load: Load, per_second: float) -> None:
    topic = account.get_topic("soak")

    def step() -> None:
        if load.timed("publish", lambda: topic.publish_message(TopicMessage("x" * 256))):
            with load.lock:
                load.published += 1

    paced(load, per_second, step)


def queue_user(account: Account, load: Load, per_second: float) -> None:
    """Send one, receive it, delete it: three requests a message."""
    queue = account.get_queue("soak")

    def step() -> None:
        load.timed("send", lambda: queue.send_message(Message("y" * 256)))
        received = load.timed("receive", lambda: queue.receive_message(1))
        if received is not None:
            handle = received.receipt_handle  # type: ignore[attr-defined]
            load.timed("delete", lambda: queue.delete_message(handle))

    paced(load, per_second, step)


@contextmanager
def loaded(url: str, args: argparse.Namespace) -> Iterator[Load]:
    load = Load()
    accounts = [Account(url, KEY_ID, SECRET) for _ in range(6)]
    threads = [
        threading.Thread(target=publisher, args=(a, load, args.rate / 4)) for a in accounts[:4]
    ] + [
        threading.Thread(target=queue_user, args=(a, load, args.queue_rate / 2))
        for a in accounts[4:]
    ]
    for thread in threads:
        thread.start()
    try:
        yield load
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(30)


def set_up(url: str, push_port: int, subscriptions: int) -> None:
    account = Account(url, KEY_ID, SECRET)
    account.get_queue("soak").create(QueueMeta())
    topic = account.get_topic("soak")
    topic.create(TopicMeta())
    for n in range(subscriptions):
        endpoint_url = f"http://127.0.0.1:{push_port}/s{n}"
        topic.get_subscription(f"s{n}").subscribe(SubscriptionMeta(endpoint_url))


# sizes -----------------------------------------------------------------------------------------


def files_size(data_dir: Path) -> tuple[int, str]:
    """Every file of the data dir; the database and its WAL named."""
    sizes = {p.name: p.stat().st_size for p in data_dir.rglob("*") if p.is_file()}
    db, wal = sizes.get("gateway.sqlite3", 0), sizes.get("gateway.sqlite3-wal", 0)
    return sum(sizes.values()), f"db {db / 2**20:.1f} + wal {wal / 2**20:.1f} MiB"


_TABLES = (
    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS size FROM pg_class c"
    " JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = current_schema() AND c.relkind = 'r'"
)


def postgres_size(url: str) -> tuple[int, int]:
    """The tables' total relation size (partitions included), and the WAL position in bytes."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        size = connection.execute(_TABLES).fetchone()[0]  # type: ignore[index]
        lsn = connection.execute("SELECT pg_current_wal_lsn() - '0/0'").fetchone()[0]  # type: ignore[index]
    return int(size), int(lsn)


def compress_checkpoints(server_url: str, seconds: int | None) -> None:
    """``checkpoint_timeout`` set (``ALTER SYSTEM``, so on a throwaway server only) or reset.
    A DELETE's first change to a page after a checkpoint writes the whole page to the WAL: a
    day-old row's page has always been checkpointed since, a 60-s-old one rarely under the
    default 5 minutes, so a compressed soak compresses the checkpoints too."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as connection:
        if seconds is None:
            connection.execute("ALTER SYSTEM RESET checkpoint_timeout")
        else:
            connection.execute(f"ALTER SYSTEM SET checkpoint_timeout = {int(seconds)}")
        connection.execute("SELECT pg_reload_conf()")


def unpartition(url: str) -> None:
    """The database migrated, then its history tables made plain (indexes alike)."""
    import psycopg

    from gateway.store.backends.postgres import PostgresDatabase

    PostgresDatabase(url, pool_size=1).close()
    with psycopg.connect(url, autocommit=True) as connection:
        for table in ("topic_messages", "delivered"):
            connection.execute(f"CREATE TABLE {table}_plain (LIKE {table} INCLUDING ALL)")
            connection.execute(f"DROP TABLE {table}")
            connection.execute(f"ALTER TABLE {table}_plain RENAME TO {table}")


# the run ---------------------------------------------------------------------------------------


@dataclass
class Sample:
    at: float
    size: int
    pushes: int
    wal: int | None = None


def sample(data_dir: Path, url: str | None, push_port: int, started: float) -> Sample:
    pushes = stats(push_port, "/count")["count"]
    if url is None:
        return Sample(time.monotonic() - started, files_size(data_dir)[0], pushes)
    size, wal = postgres_size(url)
    return Sample(time.monotonic() - started, size, pushes, wal)


def line(now: Sample, before: Sample, p99: float, detail: str) -> str:
    pushes = now.pushes - before.pushes
    rate = pushes / max(1e-9, now.at - before.at)
    text = f"  {now.at:5.0f} s  {now.size / 2**20:7.1f} MiB{detail}  {rate:5.0f} pushes/s"
    if now.wal is not None and before.wal is not None:
        text += f"  WAL {(now.wal - before.wal) / max(1, pushes):6.0f} B/push"
    return text + f"  p99 {p99:6.1f} ms"


def soak(backend: Backend, args: argparse.Namespace, *, partitioned: bool = True) -> None:
    with endpoint() as push_port, tempfile.TemporaryDirectory(prefix="mns-soak-") as tmp:
        url = backend.new_database()
        if backend.server_url is not None and args.checkpoint_timeout:
            compress_checkpoints(backend.server_url, args.checkpoint_timeout)
        if url is not None and not partitioned:
            unpartition(url)
        env = {"MNS_GATEWAY_DATA_DIR": tmp, "MNS_GATEWAY_HISTORY_RETENTION": str(args.retention)}
        try:
            with running_gateway("serve", **env, **backend.env(url)) as server:
                gateway_url = f"http://127.0.0.1:{server.client.port}"
                set_up(gateway_url, push_port, args.subscriptions)
                samples, load = measure(Path(tmp), url, push_port, gateway_url, args)
                received = drained(push_port, load.published * args.subscriptions)
        finally:
            backend.drop_database(url)
    summary(samples, load, received, args)


def measure(
    data_dir: Path, url: str | None, push_port: int, gateway_url: str, args: argparse.Namespace
) -> tuple[list[Sample], Load]:
    duration = args.duration or args.windows * args.retention
    with loaded(gateway_url, args) as load:
        samples = [sample(data_dir, url, push_port, load.started)]
        while samples[-1].at < duration:
            load.stop.wait(max(0.0, len(samples) * args.sample - samples[-1].at))
            samples.append(sample(data_dir, url, push_port, load.started))
            detail = "" if url else f" ({files_size(data_dir)[1]})"
            p99 = load.p99(samples[-2].at, samples[-1].at)
            print(line(samples[-1], samples[-2], p99, detail), flush=True)
    return samples, load


def drained(push_port: int, expected: int) -> int:
    deadline = time.monotonic() + DRAIN_SECONDS
    while stats(push_port, "/count")["count"] < expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return int(stats(push_port, "/count")["count"])


def summary(samples: list[Sample], load: Load, received: int, args: argparse.Namespace) -> None:
    # A control run (retention longer than the run) compares its first minute with the rest.
    window = args.retention if args.retention < samples[-1].at else 60
    last = [s.size for s in samples if s.at >= samples[-1].at - 2 * window]
    plateau = statistics.median(last)
    near = [abs(s.size - plateau) <= BAND * plateau for s in samples]
    settled = next((s.at for i, s in enumerate(samples) if all(near[i:])), float("nan"))
    after = [abs(s.size / plateau - 1) for s in samples if s.at >= 3 * window]
    expected = load.published * args.subscriptions
    print(
        f"  plateau {plateau / 2**20:.1f} MiB: within {BAND:.0%} of it from {settled:.0f} s"
        f" ({settled / window:.1f} windows) on; largest departure after 3 windows"
        f" {max(after, default=float('nan')):.1%}",
        flush=True,
    )
    wal = [s for s in samples if s.wal is not None and s.at >= 2 * window]
    if len(wal) >= 2:
        per_push = (wal[-1].wal - wal[0].wal) / max(1, wal[-1].pushes - wal[0].pushes)  # type: ignore[operator]
        print(f"  WAL per push from the second window on: {per_push:.0f} bytes", flush=True)
    end = samples[-1].at
    print(
        f"  p99 {load.p99(0, window):.1f} ms in the first window (nothing to forget yet),"
        f" {load.p99(window, end):.1f} ms after (retention running); errors"
        f" {sum(load.errors.values())} {load.errors or ''}; published {load.published},"
        f" pushes {received} of {expected} received, lost {max(0, expected - received)}"
        f" [{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load"
        f" {os.getloadavg()[0]:.1f}]",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--retention", type=int, default=60)
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument(
        "--duration",
        type=float,
        help="seconds to run (default: the windows); a control run"
        " sets it with a retention longer than the run, so that nothing is forgotten",
    )
    parser.add_argument("--rate", type=float, default=50.0, help="publishes a second")
    parser.add_argument("--queue-rate", type=float, default=10.0, help="queue messages a second")
    parser.add_argument("--subscriptions", type=int, default=2)
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument(
        "--unpartitioned", action="store_true", help="PostgreSQL: history tables left plain"
    )
    parser.add_argument(
        "--checkpoint-timeout",
        type=int,
        help="PostgreSQL: seconds between checkpoints (ALTER SYSTEM: a throwaway server only),"
        " compressed with the retention (see compress_checkpoints)",
    )
    add_database_arguments(parser, only=True)
    args = parser.parse_args()
    with backends(args) as databases:
        for backend in databases:
            plain = args.unpartitioned and backend.server_url is not None
            print(
                f"{backend.label}{' (unpartitioned: DELETEs)' if plain else ''}: retention"
                f" {args.retention} s, {args.duration or args.windows * args.retention:g} s,"
                f" {args.rate:g} publishes/s to"
                f" {args.subscriptions} subscriptions, {args.queue_rate:g} queue messages/s",
                flush=True,
            )
            soak(backend, args, partitioned=not plain)


if __name__ == "__main__":
    main()
