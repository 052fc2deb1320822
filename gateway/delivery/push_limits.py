"""A subscription's TenantRateLimitPolicy on its pushes, pure: how many of a claimed batch the
second's count grants, what the count becomes, and whether a grant still holds when its push
starts (docs/control-plane.md#tenantratelimitpolicy).

The count is one row per limited subscription in the store (the second it counts in, and how
many pushes that second has granted); the store locks it, applies :func:`grant_batch` and
writes the result back in the transaction that claims the batch, so every worker and replica
shares it. A batch's first ``granted`` deliveries go out in ``second``; the rest are handed back
untried, due at :attr:`BatchGrant.next_due_ms`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PushCount:
    """A limited subscription's count: ``used`` of ``limit`` pushes granted in ``second``."""

    limit: int
    second: int
    used: int


@dataclass(frozen=True, slots=True)
class BatchGrant:
    """What a batch got: its first ``granted`` pushes count in ``second``; ``count`` is what the
    store keeps."""

    granted: int
    second: int
    count: PushCount

    @property
    def next_due_ms(self) -> int:
        """When the batch's other deliveries fall due again: the start of the next second."""
        return (self.second + 1) * 1000


def grant_batch(count: PushCount, wanted: int, now_ms: int) -> BatchGrant:
    """Grant up to ``wanted`` pushes at ``now_ms`` from ``count``.

    A count from an earlier second no longer counts. One from a later second (a replica whose
    clock reads ahead of ours moved it on) is the current one: the batch counts there, so a
    late clock never restarts a window and never grants a second ``limit``. A limit lowered
    within a second grants nothing more in it (``used`` may exceed the new limit).
    """
    second, used = count.second, count.used
    if second < now_ms // 1000:
        second, used = now_ms // 1000, 0
    granted = max(0, min(wanted, count.limit - used))
    return BatchGrant(granted, second, PushCount(count.limit, second, used + granted))


def grant_holds(granted_second: int | None, now_ms: int) -> bool:
    """Whether a push granted in ``granted_second`` may start at ``now_ms``: until that second
    is over (``None``: the subscription had no limit when claimed). One that waited longer for
    a thread must take its place in the current second's count again, or that second would see
    more than its limit."""
    return granted_second is None or now_ms // 1000 <= granted_second


def until_next_second(now: float) -> float:
    """Seconds from ``now`` to the start of the next second, when every limit grants anew: the
    longest a dispatcher may wait before claiming again without losing part of that second."""
    return 1.0 - now % 1.0
