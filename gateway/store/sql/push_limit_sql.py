"""A subscription's TenantRateLimitPolicy on its pushes
(docs/control-plane.md#tenantratelimitpolicy).

The count is the subscription's row in ``rate_limit_policies`` (the second it counts in, and how
many pushes that second has granted). A claim takes the grants for its whole batch in its own
transaction (:func:`grant_claimed`): the rows of the batch's limited subscriptions are locked
(PostgreSQL; SQLite has one writer at a time), :func:`gateway.delivery.push_limits.grant_batch`
decides, and what the second cannot take is handed back untried, due at the start of the next.
So every worker and replica shares one count, and a push costs the limit no transaction of its
own. Only a push whose grant lapsed before it started takes its place again
(:func:`take_push`). The claim itself says which of its deliveries' subscriptions have a limit
(:data:`LIMITED`), so a claim of none reads no count: most subscriptions have no limit, and on
PostgreSQL that read is a wait for the server per claim.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gateway.delivery.push_limits import PushCount, grant_batch
from gateway.delivery.records import DeliveryJob
from gateway.store.sql.connection import Connection, placeholders
from gateway.store.sql.control_sql import ENFORCED, resource_column
from gateway.topics.records import subscription_resource

RESOURCE = "subscription"
#: A claimed row's column: whether its subscription (``s``) has an enabled limit, read in the
#: claim's statement (:attr:`DeliveryJob.rate_limited`). One turned on after that statement is
#: as one turned on just after the claim: it counts from the next.
LIMITED = (
    "EXISTS (SELECT 1 FROM rate_limit_policies r"
    f" WHERE r.resource_type = '{RESOURCE}' AND r.resource_name ="
    f" {resource_column('s.topic_name', 's.name')} AND {ENFORCED}) AS rate_limited"
)


def resource_of(job: DeliveryJob) -> str:
    return subscription_resource(job.message.topic_name, job.subscription.name)


@dataclasses.dataclass(frozen=True, slots=True)
class Granted:
    """A claim's jobs that may go out, and the subscriptions whose second is used up: until
    the time given, the claimer leaves their deliveries out of its claims
    (:meth:`~gateway.store.deliveries.DeliveryStore.claim`)."""

    jobs: list[DeliveryJob]
    used_up: dict[str, int]


def grant_claimed(conn: Connection, jobs: Sequence[DeliveryJob], now_ms: int) -> Granted:
    """``jobs``, just claimed, less those their subscription's limit has no room for this
    second (handed back for the next); the limited ones carry the second they were granted in.
    Each batch's deliveries are granted in claim order (oldest due first)."""
    groups: dict[str, list[DeliveryJob]] = {}
    for job in jobs:
        if job.rate_limited:
            groups.setdefault(resource_of(job), []).append(job)
    counts = locked_counts(conn, list(groups))
    if not counts:
        return Granted(list(jobs), {})
    granted: dict[str, int] = {}
    used_up: dict[str, int] = {}
    for resource, count in counts.items():
        group = groups[resource]
        batch = grant_batch(count, len(group), now_ms)
        keep(conn, resource, count, batch.count)
        granted.update((job.delivery_id, batch.second) for job in group[: batch.granted])
        postpone(conn, [job.delivery_id for job in group[batch.granted :]], batch.next_due_ms)
        if batch.granted < len(group):
            used_up[resource] = batch.next_due_ms
    kept = []
    for job in jobs:
        if job.delivery_id in granted:
            kept.append(dataclasses.replace(job, granted_second=granted[job.delivery_id]))
        elif resource_of(job) not in counts:
            kept.append(job)
    return Granted(kept, used_up)


def take_push(conn: Connection, job: DeliveryJob, now_ms: int) -> bool:
    """Whether ``job`` may be pushed at ``now_ms``, its place taken in that second's count; if
    not, it is handed back for the next second. For a push whose claim-time grant lapsed: a
    batch of one (a limit turned off meanwhile lets it go)."""
    return bool(grant_claimed(conn, [job], now_ms).jobs)


def locked_counts(conn: Connection, resources: Sequence[str]) -> dict[str, PushCount]:
    """The counts of those of ``resources`` with an enabled limit, their rows locked until the
    transaction ends. Locked in name order, so that claims locking several never deadlock."""
    if not resources:
        return {}
    rows = conn.execute(
        "SELECT resource_name, max_per_second, window_second, window_used"
        f" FROM rate_limit_policies WHERE resource_type = ? AND {ENFORCED}"
        f" AND resource_name IN ({placeholders(len(resources))})"
        f" ORDER BY resource_name{conn.dialect.lock_row}",
        (RESOURCE, *resources),
    ).fetchall()
    return {
        row["resource_name"]: PushCount(
            row["max_per_second"], row["window_second"], row["window_used"]
        )
        for row in rows
    }


def keep(conn: Connection, resource: str, read: PushCount, count: PushCount) -> None:
    """Store ``count``, read as ``read`` (a count that did not change is not written)."""
    if count != read:
        conn.execute(
            "UPDATE rate_limit_policies SET window_second = ?, window_used = ?"
            " WHERE resource_type = ? AND resource_name = ?",
            (count.second, count.used, RESOURCE, resource),
        )


def postpone(conn: Connection, delivery_ids: Sequence[str], due_ms: int) -> None:
    """Hand deliveries back untried, due at ``due_ms``."""
    if delivery_ids:
        conn.execute(
            "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL,"
            f" next_attempt_at = ? WHERE id IN ({placeholders(len(delivery_ids))})",
            (due_ms, *delivery_ids),
        )
