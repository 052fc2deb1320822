"""Subscription endpoints' circuit breakers in the store (docs/delivery.md#endpoint-health).

One ``push_breakers`` row per subscription (``topic/name``, as
:func:`gateway.topics.records.subscription_resource` names it) that is not simply
healthy: a closed breaker without failures in its window and without an override has none, so
settling a healthy endpoint's pushes reads one indexed row set and writes nothing.
:func:`record_settled` applies :func:`gateway.breaker.state.record` in the settle's
transaction; :func:`admit_claimed` applies :func:`gateway.breaker.state.admit` in the
claim's, so every worker and replica shares each breaker.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence

from gateway.breaker.events import EVENT_TAG, event_body
from gateway.breaker.state import (
    Breaker,
    BreakerPolicy,
    Override,
    State,
    Transition,
    admissible,
    admit,
    blocks_claims,
    counts_as_failure,
    overridden,
    record,
)
from gateway.delivery.records import DeliveryJob, Settlement
from gateway.errors.mns import MNSError
from gateway.store.sql import delivery_sql, topic_sql
from gateway.store.sql.connection import Connection, Row, placeholders
from gateway.store.sql.control_sql import resource_column
from gateway.topics.records import TopicMessage, subscription_names, subscription_resource

_COLUMNS = (
    "resource, state, window_start, attempts, failures, open_until, cool_down, probes_out,"
    " probe_until, held, changed_at, override"
)


def resource_of(job: DeliveryJob) -> str:
    return subscription_resource(job.message.topic_name, job.subscription.name)


def breaker_of(row: Row) -> Breaker:
    return Breaker(
        state=State(row["state"]),
        window_start_ms=row["window_start"],
        attempts=row["attempts"],
        failures=row["failures"],
        open_until_ms=row["open_until"],
        cool_down_ms=row["cool_down"],
        probes_out=row["probes_out"],
        probe_until_ms=row["probe_until"],
        held=row["held"],
        changed_ms=row["changed_at"],
        override=Override(row["override"]) if row["override"] else None,
    )


def breakers(
    conn: Connection, resources: Sequence[str], *, lock: bool = False, share: bool = False
) -> dict[str, Breaker]:
    """The kept breakers of ``resources`` (locked in name order with ``lock``; with ``share``
    too, against writers only: claims reading them do not wait for each other)."""
    if not resources:
        return {}
    locking = conn.dialect.lock_row if lock else ""
    if locking and share:
        locking = " FOR SHARE"
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM push_breakers"
        f" WHERE resource IN ({placeholders(len(resources))}) ORDER BY resource" + locking,
        tuple(resources),
    ).fetchall()
    return {row["resource"]: breaker_of(row) for row in rows}


def not_closed(conn: Connection) -> dict[str, Breaker]:
    """Every breaker a claim must look at: not closed, or overridden."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM push_breakers WHERE state <> ? OR override IS NOT NULL",
        (State.CLOSED.value,),
    ).fetchall()
    return {row["resource"]: breaker_of(row) for row in rows}


def all_breakers(conn: Connection) -> dict[str, Breaker]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM push_breakers ORDER BY resource").fetchall()
    return {row["resource"]: breaker_of(row) for row in rows}


def keep(conn: Connection, resource: str, read: Breaker | None, breaker: Breaker) -> None:
    """Store ``breaker`` (read as ``read``, ``None``: no row): a default one is no row."""
    if breaker == read:
        return
    if breaker.is_default():
        if read is not None:
            conn.execute("DELETE FROM push_breakers WHERE resource = ?", (resource,))
        return
    conn.execute(
        f"INSERT INTO push_breakers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (resource) DO UPDATE SET state = excluded.state,"
        " window_start = excluded.window_start, attempts = excluded.attempts,"
        " failures = excluded.failures, open_until = excluded.open_until,"
        " cool_down = excluded.cool_down, probes_out = excluded.probes_out,"
        " probe_until = excluded.probe_until, held = excluded.held,"
        " changed_at = excluded.changed_at, override = excluded.override",
        (
            resource,
            breaker.state.value,
            breaker.window_start_ms,
            breaker.attempts,
            breaker.failures,
            breaker.open_until_ms,
            breaker.cool_down_ms,
            breaker.probes_out,
            breaker.probe_until_ms,
            breaker.held,
            breaker.changed_ms,
            breaker.override.value if breaker.override else None,
        ),
    )


def record_settled(
    conn: Connection, settlements: Sequence[Settlement], policy: BreakerPolicy, now_ms: int
) -> list[Transition]:
    """Count the settled attempts into their subscriptions' breakers; the transitions made."""
    outcomes: dict[str, list[bool]] = {}
    for s in settlements:
        if s.attempt is None:
            continue
        failed = counts_as_failure(s.attempt.outcome, s.attempt.status_code)
        if failed is not None:
            outcomes.setdefault(resource_of(s.job), []).append(failed)
    kept = breakers(conn, sorted(outcomes), lock=True)
    transitions = []
    for resource, failures in sorted(outcomes.items()):
        read = kept.get(resource)
        breaker = read or Breaker()
        for failed in failures:
            before = breaker.state
            breaker = record(breaker, policy, failed, now_ms)
            if breaker.state is not before:
                transitions.append(Transition(resource, before, breaker.state, now_ms, breaker))
        keep(conn, resource, read, breaker)
    return transitions


@dataclasses.dataclass(frozen=True, slots=True)
class Admitted:
    """A claim's jobs its breakers let out, and the transitions (open to half-open) made."""

    jobs: list[DeliveryJob]
    transitions: list[Transition]


def blocked(breakers: dict[str, Breaker], policy: BreakerPolicy, now_ms: int) -> set[str]:
    """Of ``breakers`` (:func:`not_closed`), the subscriptions claims leave out now: held open,
    cooling down, or probing."""
    return {r for r, b in breakers.items() if blocks_claims(b, policy, now_ms)}


def probe_turns(
    conn: Connection,
    read: Mapping[str, Breaker],
    blocked: Collection[str],
    policy: BreakerPolicy,
    now_ms: int,
) -> dict[str, int | None]:
    """Of the breakers a claim read (:func:`not_closed`) and does not leave out (``blocked``),
    those that may hold a backlog, locked in name order (as a settle that closes one locks it)
    and read again: how many of each one's deliveries it lets out now
    (:func:`gateway.breaker.state.admissible`; ``None``: all). One overridden closed is not
    among them: its override gave its backlog back and no claim holds for it since."""
    turns = sorted(
        r for r, b in read.items() if r not in blocked and b.effective() is not State.CLOSED
    )
    return {r: admissible(b, policy, now_ms) for r, b in breakers(conn, turns, lock=True).items()}


def admit_claimed(
    conn: Connection,
    owner: str,
    jobs: Sequence[DeliveryJob],
    policy: BreakerPolicy,
    now_ms: int,
    probe_ms: int,
    *,
    seen: Collection[str],
) -> Admitted:
    """``jobs``, just claimed, less those a breaker that is not closed keeps back (handed back
    untouched, their due time and attempts as they were). ``seen``: the subscriptions whose
    breaker was not closed when the claim began (:func:`not_closed`); only theirs are locked
    and read again, so a claim of healthy endpoints' deliveries costs no statement here."""
    groups: dict[str, list[DeliveryJob]] = {}
    for job in jobs:
        if resource_of(job) in seen:
            groups.setdefault(resource_of(job), []).append(job)
    if not groups:
        return Admitted(list(jobs), [])
    kept = {
        resource: breaker
        for resource, breaker in breakers(conn, sorted(groups), lock=True).items()
        if breaker.state is not State.CLOSED or breaker.override is not None
    }
    if not kept:
        return Admitted(list(jobs), [])
    refused: set[str] = set()
    transitions = []
    for resource, read in kept.items():
        group = groups[resource]
        admission = admit(read, policy, len(group), now_ms, probe_ms)
        breaker = admission.breaker
        if breaker.state is not read.state:
            transitions.append(Transition(resource, read.state, breaker.state, now_ms, breaker))
        keep(conn, resource, read, breaker)
        refused.update(job.delivery_id for job in group[admission.granted :])
    delivery_sql.release(conn, owner, sorted(refused))
    return Admitted([job for job in jobs if job.delivery_id not in refused], transitions)


def set_override(
    conn: Connection, resource: str, override: Override | None, now_ms: int
) -> tuple[Breaker, Transition | None]:
    """An operator's override on a subscription's breaker; the breaker, and the transition of
    what claims obey that it made (holding a closed one open, forcing an open one closed)."""
    read = breakers(conn, [resource], lock=True).get(resource)
    before = read or Breaker()
    breaker = overridden(before, override, now_ms)
    keep(conn, resource, read, breaker)
    was, now = before.effective(), breaker.effective()
    if now is not was:
        operator = override.value if override is not None else "auto"
        return breaker, Transition(resource, was, now, now_ms, breaker, operator)
    return breaker, None


def waiting(conn: Connection, now_ms: int) -> dict[str, int]:
    """Per subscription with a kept breaker, its deliveries due and not leased, held ones
    (:func:`gateway.store.sql.held_sql.hold`) included: what waits."""
    resource = resource_column("d.topic_name", "d.subscription_name")
    rows = conn.execute(
        "SELECT d.topic_name, d.subscription_name, COUNT(*) AS n FROM deliveries d"
        " WHERE (d.next_attempt_at >= ? OR d.next_attempt_at <= ? AND (d.lease_expires_at IS NULL"
        f" OR d.lease_expires_at <= ?)) AND {resource} IN (SELECT resource FROM push_breakers)"
        " GROUP BY d.topic_name, d.subscription_name",
        (delivery_sql.HELD_OFFSET_MS, now_ms, now_ms),
    ).fetchall()
    return {
        subscription_resource(row["topic_name"], row["subscription_name"]): row["n"] for row in rows
    }


def purge_orphans(conn: Connection) -> None:
    """Forget the breakers of subscriptions that are gone (one re-created starts afresh)."""
    conn.execute(
        "DELETE FROM push_breakers WHERE resource NOT IN"
        f" (SELECT {resource_column('topic_name', 'name')} FROM subscriptions)"
    )


def publish_events(
    conn: Connection,
    transitions: Sequence[Transition],
    topic: str,
    new_id: Callable[[int], str],
) -> int:
    """Publish each transition to ``topic`` as an operator event, in the caller's transaction
    (so every replica publishes each transition once: the one that made it); the deliveries
    made. Transitions of ``topic``'s own subscriptions are not published: an alert webhook that
    fails must not feed its own topic. A topic that does not exist (or refuses the message)
    gets nothing, and the transition stands."""
    made = 0
    for transition in transitions:
        if not topic or subscription_names(transition.resource)[0] == topic:
            continue
        body = event_body(transition)
        message = TopicMessage(
            id=new_id(transition.at_ms),
            topic_name=topic,
            body=body,
            body_md5=hashlib.md5(body.encode("utf-8")).hexdigest().upper(),
            publish_time_ms=transition.at_ms,
            tag=EVENT_TAG,
        )
        try:
            made += topic_sql.publish(conn, message).deliveries
        except MNSError:
            continue
    return made
