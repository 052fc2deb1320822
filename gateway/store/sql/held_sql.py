"""A held backlog's statements (docs/delivery.md#endpoint-health): the due deliveries of a
subscription whose circuit breaker keeps claims off it, moved out of the due range
(:data:`~gateway.store.sql.delivery_sql.HELD_OFFSET_MS` added to their due times) so that no
claim walks past them, and given back, their due times exact, when it lets them go.

Every read of a subscription's deliveries here is ordered and limited (:func:`_first_of`), so
PostgreSQL reads that subscription's range of ``deliveries_subscription_due`` from its start and
stops at its end. A single ``UPDATE … WHERE`` over the range does neither: with a plain bound
its generic plan reads every due delivery through ``deliveries_due``; bounded by a row
comparison ``(topic_name, subscription_name, next_attempt_at) <= (…)``, which PostgreSQL applies
to a scan's first column only, it reads on through every held delivery, on every claim while a
circuit stays open (docs/benchmarks.md#endpoint-health).

The ordered read would still walk the old index entries of every delivery the hold moved:
moving a due time writes a new entry and leaves the old one, dead, in the subscription's range
until a vacuum. So a claim passes the due time its last hold read past (:func:`read_past`), and
the read starts there, after them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final

from gateway.store.sql.connection import Connection, placeholders
from gateway.store.sql.delivery_sql import CLAIMABLE, HELD_OFFSET_MS
from gateway.topics.records import subscription_names, subscription_resource

#: Deliveries one statement of a hold reads and moves.
HOLD_BATCH: Final = 500
#: Batches one claim's hold moves at most per subscription (what publishes add faster than
#: that waits for the next claim; the claim leaves it out all the same).
_HOLD_BATCHES: Final = 100
#: How far before a hold's read :func:`read_past` puts the next one's start. On PostgreSQL a
#: delivery another transaction writes due at ``t`` may commit after a read at a later time has
#: taken its snapshot; the next read, starting a second before, still finds it. Missing one costs
#: only speed: it stays in the due range, where claims leave it out all the same.
READ_BACK_MS: Final = 1000
_HELD: Final = "next_attempt_at >= ?"


def due_to_hold(
    conn: Connection,
    resources: Collection[str],
    now_ms: int,
    since: Mapping[str, int] | None = None,
) -> dict[str, list[str]]:
    """Of the subscriptions ``resources`` (``topic/name``), those with due, unleased deliveries,
    each with its earliest (ids, up to :data:`HOLD_BATCH`), read from ``since[resource]`` on
    (:func:`read_past`; else from the subscription's first). One short read each, nothing
    locked or written: a claim makes it on every claim while a circuit stays open, mostly
    finding nothing new, and takes the breaker's lock only to move what it found
    (:func:`hold`)."""
    found = {}
    for resource in sorted(resources):
        if ids := _due_of(conn, resource, now_ms, (since or {}).get(resource, 0)):
            found[resource] = ids
    return found


def read_past(
    blocked: Collection[str], found: Mapping[str, Sequence[str]], now_ms: int
) -> dict[str, int]:
    """Where the next hold's read of each of ``blocked`` may start, once the claim at ``now_ms``
    has held what :func:`due_to_hold` ``found``: :data:`READ_BACK_MS` before it for those it
    read to the end (less than a batch), so that what the hold moved (and any delivery leased
    then) is behind the start. None for those it did not: what is left is read from the
    previous start. Deliveries put back before it later (a probe's turn, a claim's refusals, a
    closed breaker's backlog) come with the subscription leaving ``blocked``, which drops its
    start; the caller keeps starts only for subscriptions blocked since."""
    return {r: now_ms - READ_BACK_MS for r in blocked if len(found.get(r, ())) < HOLD_BATCH}


def hold(conn: Connection, found: Mapping[str, Sequence[str]], now_ms: int) -> int:
    """Move ``found`` (:func:`due_to_hold`) out of the due range, then the rest of those
    subscriptions' due, unleased deliveries, a batch at a time; how many. A delivery leased now
    (a probe, a push in flight) is left to its outcome. Only unleased deliveries move, and the
    rows a settle locks are the pushes it records, leased, so a hold does not wait for a
    settle that waits in turn for the breaker the claim has share-locked."""
    moved = 0
    for resource, ids in sorted(found.items()):
        for _ in range(_HOLD_BATCHES):
            moved += _shift(conn, ids, HELD_OFFSET_MS, CLAIMABLE, (now_ms, now_ms))
            if len(ids) < HOLD_BATCH or not (ids := _due_of(conn, resource, now_ms)):
                break
    return moved


def unhold(conn: Connection, resources: Collection[str]) -> int:
    """Give the held deliveries of ``resources`` their due times back (in their order, due as
    early as they were, ahead of what was published since); how many. Called with the breaker
    of each locked (:func:`gateway.store.sql.breaker_sql.breakers`), so that a claim and a
    settle giving back the same subscription's rows take their locks in one order. One
    ``UPDATE`` per subscription: it is called as a breaker closes (or is turned off), not on
    every claim, and then it moves a whole backlog."""
    moved = 0
    for resource in sorted(resources):
        moved += conn.execute(
            "UPDATE deliveries SET next_attempt_at = next_attempt_at - ?"
            f" WHERE topic_name = ? AND subscription_name = ? AND {_HELD}",
            (HELD_OFFSET_MS, *subscription_names(resource), HELD_OFFSET_MS),
        ).rowcount
    return moved


def give_back(conn: Connection, counts: Mapping[str, int | None]) -> int:
    """Give back the earliest ``counts[resource]`` held deliveries of each subscription (what
    its breaker lets out: :func:`gateway.breaker.state.admissible`; ``None``: all of them,
    :func:`unhold`), their due times as they were; how many. The rest stay held: giving back
    the whole backlog for a probe's turn would move every held delivery out and, once the probe
    is out, in again (docs/benchmarks.md#endpoint-health). Called, like :func:`unhold`, with
    each breaker locked."""
    moved = unhold(conn, [r for r, count in counts.items() if count is None])
    where = f"topic_name = ? AND subscription_name = ? AND {_HELD}"
    for resource, count in sorted(counts.items()):
        parameters = (*subscription_names(resource), HELD_OFFSET_MS)
        if count and (ids := _first_of(conn, where, parameters, count)):
            moved += _shift(conn, ids, -HELD_OFFSET_MS, _HELD, (HELD_OFFSET_MS,))
    return moved


def holding(conn: Connection) -> set[str]:
    """The subscriptions (``topic/name``) with held deliveries (reads every held delivery: for
    the expiry's check once a minute, not for claims)."""
    rows = conn.execute(
        f"SELECT DISTINCT topic_name, subscription_name FROM deliveries WHERE {_HELD}",
        (HELD_OFFSET_MS,),
    ).fetchall()
    return {subscription_resource(row["topic_name"], row["subscription_name"]) for row in rows}


def _due_of(conn: Connection, resource: str, now_ms: int, since_ms: int = 0) -> list[str]:
    """The earliest due, unleased deliveries of one subscription due at ``since_ms`` or later,
    up to :data:`HOLD_BATCH`."""
    where = f"topic_name = ? AND subscription_name = ? AND next_attempt_at >= ? AND {CLAIMABLE}"
    parameters = (*subscription_names(resource), since_ms, now_ms, now_ms)
    return _first_of(conn, where, parameters, HOLD_BATCH)


def _first_of(
    conn: Connection, where: str, parameters: tuple[object, ...], limit: int
) -> list[str]:
    """The ids of the first ``limit`` deliveries of one subscription meeting ``where``, read in
    order from its range of ``deliveries_subscription_due``. ``limit`` goes into the text, not a
    parameter: a generic plan costs ``LIMIT $n`` as a tenth of the rows it may read, and must
    see a short read to choose the index."""
    rows = conn.execute(
        f"SELECT id FROM deliveries WHERE {where}"
        f" ORDER BY topic_name, subscription_name, next_attempt_at LIMIT {int(limit)}",
        parameters,
    ).fetchall()
    return [row["id"] for row in rows]


def _shift(
    conn: Connection, delivery_ids: Sequence[str], by_ms: int, still: str, bounds: tuple[int, ...]
) -> int:
    """Add ``by_ms`` to the due times of ``delivery_ids``, just read, of those that ``still``
    meet its condition: on PostgreSQL another replica may have changed one since, and the
    ``WHERE`` is checked again on the row it waited for; how many."""
    return conn.execute(
        "UPDATE deliveries SET next_attempt_at = next_attempt_at + ?"
        f" WHERE id IN ({placeholders(len(delivery_ids))}) AND {still}",
        (by_ms, *delivery_ids, *bounds),
    ).rowcount
