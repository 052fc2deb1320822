"""A subscription's TenantRateLimitPolicy on its pushes
(docs/control-plane.md#tenantratelimitpolicy).

Each push of a limited subscription takes one from the second's count just before it is sent
(:func:`take_push`: the atomic count of :func:`gateway.store.sql.control_sql.take_allowance`,
shared by every worker and replica); one that finds nothing left is handed back untried, due at
the start of the next second, so it waits and none is dropped. So that workers do not lease
more than can go out, a claim keeps of each limited subscription only what the second still
leaves (:func:`within_push_limits`), handing the others back the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.delivery.records import DeliveryJob
from gateway.store.sql import control_sql
from gateway.store.sql.connection import Connection, placeholders

RESOURCE = "subscription"


def resource_of(job: DeliveryJob) -> str:
    return control_sql.subscription_resource(job.message.topic_name, job.subscription.name)


def within_push_limits(
    conn: Connection, jobs: Sequence[DeliveryJob], now_ms: int
) -> list[DeliveryJob]:
    """``jobs`` less those beyond what their subscription's limit leaves this second, which are
    postponed to the next."""
    if not jobs:
        return list(jobs)
    limited = set(control_sql.limited(conn, RESOURCE))
    if not limited:
        return list(jobs)
    groups: dict[str, list[DeliveryJob]] = {}
    for job in jobs:
        if (resource := resource_of(job)) in limited:
            groups.setdefault(resource, []).append(job)
    second = now_ms // 1000
    held: list[str] = []
    for resource, group in groups.items():
        left = control_sql.room(conn, RESOURCE, resource, second)
        if left is not None:
            held.extend(job.delivery_id for job in group[left:])
    postpone(conn, held, (second + 1) * 1000)
    return [job for job in jobs if job.delivery_id not in set(held)]


def take_push(conn: Connection, job: DeliveryJob, now_ms: int) -> bool:
    """Whether ``job`` may be pushed now; if not, it is postponed to the next second."""
    taken = control_sql.take_allowance(conn, RESOURCE, resource_of(job), 1, now_ms // 1000)
    if taken is None or taken[0] == 1:
        return True
    postpone(conn, [job.delivery_id], (taken[1] + 1) * 1000)
    return False


def postpone(conn: Connection, delivery_ids: Sequence[str], due_ms: int) -> None:
    """Hand deliveries back untried, due at ``due_ms``."""
    if delivery_ids:
        conn.execute(
            "UPDATE deliveries SET lease_owner = NULL, lease_expires_at = NULL,"
            f" next_attempt_at = ? WHERE id IN ({placeholders(len(delivery_ids))})",
            (due_ms, *delivery_ids),
        )
