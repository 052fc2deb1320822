"""The overview's message and push counts: kept in the store, counted again at most once a
minute by one replica at a time, right after sends, receives, deletes, delays ending and
visibility timeouts lapsing (the injected clock), the same on every replica; on both backends."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from gateway.queues.records import MessageCounts, NewMessage, QueueAttributes
from gateway.store.base import Store, compose_store
from gateway.store.console import ConsoleReads
from gateway.store.sql import console_counts_sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.console_counts_sql import KeptCounts
from gateway.store.sql.console_sql import queue_counts
from tests.conftest import OpenDatabase
from tests.gateway.api.console.conftest import T0, Console, make_console
from tests.gateway.api.console.test_console_actions import dead_letter
from tests.support.clock import Clock
from tests.support.plans import Recording, plan_of


def run_now(work: Callable[[], object]) -> None:
    work()


class Later:
    """A background that keeps the refreshes it was given, to run when the test says."""

    def __init__(self) -> None:
        self.kept: list[Callable[[], object]] = []

    def __call__(self, work: Callable[[], object]) -> None:
        self.kept.append(work)

    def run(self) -> None:
        kept, self.kept = self.kept, []
        for work in kept:
            work()


def reads_of(store: Store, background: Callable[[Callable[[], object]], None]) -> ConsoleReads:
    return ConsoleReads(store.database, store.clock, background=background)


def counts(reads: ConsoleReads) -> KeptCounts:
    kept = reads.overview().kept.counts
    assert kept is not None
    return kept


def test_counts_follow_sends_receives_deletes_and_the_clock(
    open_database: OpenDatabase,
) -> None:
    database = open_database()
    clock = Clock(T0)
    store = compose_store(database, clock)
    reads = reads_of(store, run_now)
    store.queues.create_queue("jobs", QueueAttributes(visibility_timeout=150))
    store.queues.create_queue("other", QueueAttributes())
    store.queues.send("jobs", [NewMessage(f"m{i}", priority=1 + i % 16) for i in range(10)])
    store.queues.send("jobs", [NewMessage("later", delay_seconds=90)])
    store.queues.send("other", [NewMessage("o")])
    assert counts(reads).messages == MessageCounts(11, 0, 1)

    received = store.queues.receive("jobs", 4, 0).messages
    store.queues.delete_message("jobs", str(received[0].receipt_handle))
    clock.now += 59  # not yet a minute: the kept counts are shown, not counted again
    assert counts(reads).messages == MessageCounts(11, 0, 1)
    clock.now += 1
    assert counts(reads).messages == MessageCounts(7, 3, 1)

    clock.now += 30  # the delay (90 s) ends
    assert counts(reads).messages == MessageCounts(7, 3, 1)  # counted 30 s ago
    clock.now += 30
    assert counts(reads).messages == MessageCounts(8, 3, 0)
    clock.now += 60  # the visibility timeouts (150 s) lapse
    kept = counts(reads)
    assert kept.messages == MessageCounts(11, 0, 0)
    assert kept.counted_at_ms == int(clock.now * 1000)
    for queue in ("jobs", "other"):
        assert store.queues.get_queue(queue)[1].delayed == 0


def test_pushes_pending_and_dead_letters_are_counted(open_database: OpenDatabase) -> None:
    database = open_database()
    clock = Clock(T0)
    store = compose_store(database, clock)
    reads = reads_of(store, run_now)
    dead_letter(store)
    kept = counts(reads)
    assert (kept.dead_letters, kept.deliveries_pending) == (1, 0)
    assert reads.overview().subscriptions == 1


def test_a_view_does_not_count_but_starts_a_refresh(open_database: OpenDatabase) -> None:
    store = compose_store(open_database(), Clock(T0))
    later = Later()
    reads = reads_of(store, later)
    store.queues.create_queue("jobs", QueueAttributes())
    store.queues.send("jobs", [NewMessage("a")])
    first = reads.overview()
    assert first.kept.counts is None and first.queues == 1  # never counted: not waited for
    assert len(later.kept) == 1
    later.run()
    assert counts(reads).messages == MessageCounts(1, 0, 0)
    assert later.kept == []  # counted a moment ago: no refresh started


def test_one_replica_counts_at_a_time_and_every_replica_shows_its_counts(
    open_database: OpenDatabase,
) -> None:
    clock = Clock(T0)
    first_store = compose_store(open_database(), clock)
    second_store = compose_store(open_database(), clock)
    first_later, second_later = Later(), Later()
    first = reads_of(first_store, first_later)
    second = reads_of(second_store, second_later)
    first_store.queues.create_queue("jobs", QueueAttributes())
    first_store.queues.send("jobs", [NewMessage("a"), NewMessage("b")])
    # Both replicas find the counts due; the first to claim the lease counts, the other not.
    first.overview()
    second.overview()
    assert first.refresh_counts() is True
    assert second.refresh_counts() is False
    assert counts(second).messages == MessageCounts(2, 0, 0)
    assert first.overview() == second.overview()
    # A lease held by a replica that died lapses, then another replica counts.
    clock.now += 60
    now_ms = int(clock.now * 1000)
    lease_until = now_ms + 1000
    assert second_store.database.write(
        lambda c: console_counts_sql.claim_refresh(c, "dead-replica", now_ms, 60_000, lease_until)
    )
    assert first.refresh_counts() is False
    clock.now += 1
    first_store.queues.send("jobs", [NewMessage("c")])
    assert first.refresh_counts() is True
    assert counts(second).messages == MessageCounts(3, 0, 0)


def test_a_refresh_that_fails_gives_the_lease_back(open_database: OpenDatabase) -> None:
    store = compose_store(open_database(), Clock(T0))

    def broken() -> None:
        raise RuntimeError("the database went away")

    reads = ConsoleReads(store.database, store.clock, between_reads=broken)
    store.queues.create_queue("jobs", QueueAttributes())
    try:
        reads.refresh_counts()
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
    state = store.database.read(console_counts_sql.kept)
    assert state.counts is None and state.due(store.now_ms(), 60_000)


def test_two_apps_over_one_database_show_the_same_overview(
    open_database: OpenDatabase, tmp_path: Path
) -> None:
    one = make_console(open_database, tmp_path / "one")
    two = make_console(open_database, tmp_path / "two")
    two.clock.now = one.clock.now
    for console in (one, two):
        assert console.sign_in().status_code == 302
    one.store.queues.create_queue("jobs", QueueAttributes())
    one.store.queues.send("jobs", [NewMessage(f"m{i}") for i in range(5)])
    one.store.queues.receive("jobs", 2, 0)
    shown = [figures(console) for console in (one, two)]
    assert shown[0] == shown[1]
    assert shown[0]["Messages waiting"] == "3" and shown[0]["In flight"] == "2"
    two.store.queues.send("jobs", [NewMessage("more")])
    assert figures(one)["Messages waiting"] == "3"  # kept for a minute, on both
    for console in (one, two):
        console.clock.now += 60
    # One more sent, and the two received wait again (VisibilityTimeout 30 s).
    assert figures(two)["Messages waiting"] == "6"
    assert figures(one) == figures(two)
    live = one.client.get("/console/overview/live").text
    assert "Messages waiting</dt><dd>6<" in live and "In flight</dt><dd>0<" in live
    assert "as of" in live


def figures(console: Console) -> dict[str, str]:
    return figures_of(console.client.get("/console/").text)


def figures_of(page: str) -> dict[str, str]:
    pairs = re.findall(r"<dt>([^<]+)</dt><dd>(?:<a [^>]*>)?([^<]*)<", page)
    return dict(pairs)


def test_listed_queues_are_counted_by_index_ranges(open_database: OpenDatabase) -> None:
    """The queue list's (and the background count's) statements seek the ready index per
    listed queue: their cost follows the listed queues' messages, never the whole table."""
    database = open_database()
    store = compose_store(database, Clock(T0))
    for name in ("a", "b", "c"):
        store.queues.create_queue(name, QueueAttributes())
        store.queues.send(name, [NewMessage("m"), NewMessage("later", delay_seconds=60)])
    now_ms = store.now_ms()

    def explained(conn: Connection) -> list[str]:
        recording = Recording(conn)
        assert queue_counts(recording, ["a", "b"], now_ms)["a"] == MessageCounts(1, 0, 1)
        assert len(recording.statements) == 2
        return [plan_of(conn, sql, params) for sql, params in recording.statements]

    for plan in database.write(explained):
        assert "queue_messages_ready" in plan, plan
        if database.read(lambda c: c.dialect.name) == "sqlite":
            assert "SEARCH queue_messages" in plan and "SCAN queue_messages" not in plan, plan
        else:
            assert "Index Cond" in plan and "queue_name" in plan and "Seq Scan" not in plan, plan
