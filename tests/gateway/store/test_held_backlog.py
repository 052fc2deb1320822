"""An open circuit's backlog is held out of the claims' way (docs/delivery.md#endpoint-health),
on each backend: claims take the healthy deliveries behind it without reading it, and it comes
back intact and in its order when the breaker closes, whoever closes it."""

from __future__ import annotations

import re

import pytest

from gateway.breaker.state import BreakerPolicy, Override, State
from gateway.store.base import Store, compose_store
from gateway.store.sql import held_sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.message_delivery_sql import PendingDelivery
from gateway.topics.records import TopicMessage
from tests.conftest import OpenDatabase
from tests.gateway.store.test_breakers import (
    claim,
    failed,
    of,
    opened,
    published,
    succeeded,
)
from tests.support.clock import Clock
from tests.support.plans import Recording, plan_of

#: The ten messages the breaker opened on, then twenty published while it is open.
BACKLOG = [f"M{n:04d}" for n in range(10)] + [f"N{n:04d}" for n in range(20)]


@pytest.fixture()
def stores(open_database: OpenDatabase, clock: Clock) -> tuple[Store, Store]:
    return compose_store(open_database(), clock), compose_store(open_database(), clock)


def held_backlog(a: Store, b: Store, clock: Clock) -> dict[str, tuple[int, int]]:
    """``down``'s breaker opened through ``a``, twenty more messages to both subscriptions, and
    every healthy delivery claimed and pushed through ``b``; each held delivery's attempts and
    due time as the console shows them."""
    opened(a, clock)
    clock.now += 0.01
    for message_id in BACKLOG[10:]:  # one due time each, after the retries', in this order
        a.topics.publish_all([TopicMessage(message_id, "t", "b", "X", a.now_ms())])
        clock.now += 0.002
    clock.now += 0.01
    before = pending(a)
    up = claim(b, "b")
    assert [job.message.id for job in up] == BACKLOG[10:]
    assert {job.subscription.name for job in up} == {"up"}
    b.deliveries.settle("b", [succeeded(b, job) for job in up])
    assert claim(a, "a") == []
    return before


def due_in_range(store: Store) -> int:
    """Deliveries a claim's walk of ``deliveries_due`` reads: those due now."""
    now = store.now_ms()
    return int(
        store.database.read(
            lambda c: c.execute(
                "SELECT COUNT(*) AS n FROM deliveries WHERE next_attempt_at <= ?", (now,)
            ).fetchone()["n"]
        )
    )


def in_due_order(message_ids: list[str], due: dict[str, tuple[int, int]]) -> bool:
    """``message_ids`` are the whole backlog, earliest due first (ties in any order)."""
    times = [due[m][1] for m in message_ids]
    return sorted(message_ids) == BACKLOG and times == sorted(times)


def pending(store: Store) -> dict[str, tuple[int, int]]:
    """``down``'s pending deliveries: message, attempts and due time (as the console shows)."""
    found = {}
    for message_id in BACKLOG:
        for p in store.deliveries.message_deliveries(message_id).pending:
            if p.subscription_name == "down":
                found[message_id] = (len(p.attempts), p.next_attempt_at_ms)
    return found


def test_the_claims_take_the_healthy_deliveries_and_leave_the_held_ones_intact(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    before = held_backlog(a, b, clock)
    assert sorted(before) == BACKLOG
    # Out of the due range, so that no claim reads them...
    assert due_in_range(a) == 0
    assert a.deliveries.next_due_ms() == min(due for _, due in before.values())
    # ... yet they are there as they were, and count as waiting and as due.
    assert pending(b) == before
    assert b.deliveries.breakers()[1] == {"t/down": 30}
    assert b.deliveries.due_count() == 30


def test_a_successful_probe_brings_the_backlog_back_in_order(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    before = held_backlog(a, b, clock)
    clock.now += 30
    (probe,) = claim(b, "b", limit=5)
    assert probe.message.id == "M0000" and probe.attempts == 1
    assert claim(a, "a") == []  # its probe out: held again
    b.deliveries.settle("b", [succeeded(b, probe)])
    rest = claim(a, "a")
    assert [job.message.id for job in rest] == BACKLOG[1:]
    assert [job.attempts for job in rest] == [before[m][0] for m in BACKLOG[1:]]


def test_a_probe_s_turn_gives_back_the_probe_only(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    """The rest of the backlog stays held while the probe is out: it is not moved back into
    the due range and out of it again on every probe's turn."""
    a, b = stores
    before = held_backlog(a, b, clock)
    clock.now += 30
    (probe,) = claim(b, "b", limit=5)
    assert probe.message.id == "M0000"
    assert due_in_range(b) == 1  # the probe, leased
    assert pending(b) == before


def test_a_failed_probe_holds_the_backlog_again(stores: tuple[Store, Store], clock: Clock) -> None:
    a, b = stores
    held_backlog(a, b, clock)
    clock.now += 30
    (probe,) = claim(b, "b")
    b.deliveries.settle("b", [failed(b, probe)])
    assert b.deliveries.breakers()[0]["t/down"].state is State.OPEN
    clock.now += 0.01
    assert claim(a, "a") == []
    assert due_in_range(a) == 0
    assert b.deliveries.breakers()[1] == {"t/down": 30}
    clock.now += 60
    (second,) = claim(a, "a")
    assert second.message.id == "M0001"


@pytest.mark.parametrize("override", [Override.CLOSED, None])
def test_an_operator_brings_it_back_at_once_in_order(
    stores: tuple[Store, Store], clock: Clock, override: Override | None
) -> None:
    a, b = stores
    a.deliveries.override_breaker("t", "down", Override.OPEN)
    before = held_backlog(a, b, clock)
    a.deliveries.override_breaker("t", "down", override)
    assert in_due_order([job.message.id for job in of(claim(b, "b"), "down")], before)


def test_a_replica_with_the_breaker_off_takes_the_held_backlog(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    held_backlog(a, b, clock)
    b.deliveries.breaker = BreakerPolicy(enabled=False)
    assert [job.message.id for job in claim(b, "b")] == BACKLOG


def test_the_expiry_gives_back_what_no_breaker_holds(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    held_backlog(a, b, clock)
    # Its breaker forgotten behind the store's back (as no statement of the gateway does).
    a.database.write(lambda c: c.execute("DELETE FROM push_breakers"))
    assert claim(b, "b") == []
    b.deliveries.expire()
    assert [job.message.id for job in claim(b, "b")] == BACKLOG
    assert a.deliveries.breakers() == ({}, {})


def test_held_deliveries_keep_their_order_and_due_times_and_leases(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, _ = stores
    published(a, 4, names=("down",))
    (leased,) = claim(a, "a", limit=1)
    due = {p.delivery_id: p.next_attempt_at_ms for p in pending_of(a)}

    assert hold_down(a) == 3  # not the leased one
    assert hold_down(a) == 0
    assert a.deliveries.next_due_ms() == due[leased.delivery_id]
    assert {p.delivery_id: p.next_attempt_at_ms for p in pending_of(a)} == due
    assert a.database.write(lambda c: held_sql.unhold(c, ["t/down"])) == 3
    assert a.database.write(lambda c: held_sql.unhold(c, ["t/down"])) == 0
    a.deliveries.release("a", [leased.delivery_id])
    assert sorted(job.message.id for job in claim(a, "a")) == [f"M{n:04d}" for n in range(4)]


def test_a_hold_moves_a_backlog_larger_than_one_batch(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, _ = stores
    count = held_sql.HOLD_BATCH * 2 + 3
    published(a, count, names=("down",))
    assert hold_down(a) == count
    assert due_in_range(a) == 0
    assert a.database.write(lambda c: held_sql.unhold(c, ["t/down"])) == count


def test_a_claim_with_nothing_new_to_hold_reads_up_to_the_due_time_and_writes_nothing(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    """Every claim looks for what to hold while a circuit stays open, mostly finding nothing
    new: that costs one read of the subscription's due range, which ends where its held backlog
    begins (bounded by a row comparison, the read went on through the held ones), and no lock
    or write."""
    a, b = stores
    held_backlog(a, b, clock)

    def explained(conn: Connection) -> tuple[str, str]:
        recording = Recording(conn)
        assert held_sql.due_to_hold(recording, ["t/down"], a.now_ms()) == {}  # type: ignore[arg-type]
        (read,) = recording.statements
        return read[0], plan_of(conn, *read)

    sql, plan = a.database.write(explained)
    assert sql.startswith("SELECT") and "FOR " not in sql, sql
    assert "deliveries_subscription_due" in plan, plan
    assert re.search(r"next_attempt_at ?<", plan), plan
    assert "ROW(" not in plan, plan


def test_the_next_claim_reads_for_what_to_hold_from_where_the_last_one_read_to(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    """Moving a due time leaves the old index entry, dead, until a vacuum: a read from the
    subscription's first delivery walked the entries of every delivery held so far, on every
    claim (0.41-0.77 ms behind 10,000 on PostgreSQL, bench/endpoint_health.py). The read after a
    hold starts a second before it, where the index is searched from, not walked to."""
    a, b = stores
    held_backlog(a, b, clock)
    start = held_sql.read_past(["t/down"], {}, a.now_ms())["t/down"]

    def explained(conn: Connection) -> str:
        recording = Recording(conn)
        held_sql.due_to_hold(recording, ["t/down"], a.now_ms(), {"t/down": start})  # type: ignore[arg-type]
        ((sql, parameters),) = recording.statements
        assert start in parameters
        return plan_of(conn, sql, parameters)

    plan = a.database.write(explained)
    assert "deliveries_subscription_due" in plan, plan
    assert re.search(r"next_attempt_at ?>", plan), plan


def test_a_claim_holds_what_was_written_since_the_last_even_due_a_little_before_it(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    """On PostgreSQL a publish that took its time before the last claim may commit after that
    claim's read: its deliveries, due before it, are held by the next one all the same."""
    a, b = stores
    held_backlog(a, b, clock)  # its last claim through ``a``: nothing new to hold
    late = a.now_ms() - 500  # within READ_BACK_MS
    clock.now += 0.5
    a.topics.publish_all([TopicMessage("L0000", "t", "b", "X", late)])
    a.topics.publish_all([TopicMessage("L0001", "t", "b", "X", a.now_ms())])
    clock.now += 0.01
    up = claim(a, "a")
    assert [(job.message.id, job.subscription.name) for job in up] == [
        ("L0000", "up"),
        ("L0001", "up"),
    ]
    a.deliveries.settle("a", [succeeded(a, job) for job in up])
    assert due_in_range(a) == 0
    assert b.deliveries.breakers()[1] == {"t/down": 32}


def test_a_hold_read_to_its_end_is_read_past_and_one_cut_short_is_not() -> None:
    now = 1_000_000
    full = {"t/full": ["d"] * held_sql.HOLD_BATCH, "t/some": ["d"]}
    assert held_sql.read_past({"t/full", "t/some", "t/none"}, full, now) == {
        "t/some": now - held_sql.READ_BACK_MS,
        "t/none": now - held_sql.READ_BACK_MS,
    }


def hold_down(store: Store) -> int:
    """Hold ``down``'s due deliveries as a claim does: find them, then move them."""
    now = store.now_ms()
    return int(
        store.database.write(
            lambda c: held_sql.hold(c, held_sql.due_to_hold(c, ["t/down"], now), now)
        )
    )


def pending_of(store: Store) -> list[PendingDelivery]:
    return [p for n in range(4) for p in store.deliveries.message_deliveries(f"M{n:04d}").pending]


@pytest.mark.parametrize("skip", [frozenset(), frozenset({"http://elsewhere.test:80"})])
def test_a_claim_after_the_backlog_comes_back_leases_no_more_than_its_limit(
    stores: tuple[Store, Store], clock: Clock, skip: frozenset[str]
) -> None:
    """Statistics gathered while a backlog was held put every due time past 2**52, so the
    planner reckons almost nothing is due once it comes back. PostgreSQL then read the claim's
    ``id IN (candidates … LIMIT n FOR UPDATE SKIP LOCKED)`` once per due delivery, each
    reading skipping what the earlier ones had leased: one claim of 32 leased the whole
    backlog of 10,000 and took 112-128 s, its leases lapsed before it returned, and other
    workers pushed those deliveries again (bench/endpoint_health.py --failures refused). Either
    way of reading the candidates: in due order, or per subscription (a route skipped)."""
    a, _ = stores
    count = 300
    published(a, count, names=("down",))
    assert hold_down(a) == count
    a.database.write(lambda c: c.execute("ANALYZE deliveries"))
    assert a.database.write(lambda c: held_sql.unhold(c, ["t/down"])) == count
    assert len(a.deliveries.claim("a", 60, 5, skip)) == 5
    assert leased(a) == 5


def leased(store: Store) -> int:
    return int(
        store.database.read(
            lambda c: c.execute(
                "SELECT COUNT(*) AS n FROM deliveries WHERE lease_owner IS NOT NULL"
            ).fetchone()["n"]
        )
    )
