"""The two retry schedules of docs/protocol.md#retry-schedules, as pure functions.

The schedule state (how many retries were made) lives in the store, not here, so a restarted
worker resumes a schedule where it stopped: it asks :func:`retry_delay` with the persisted count.
Randomness is injected so tests can pin the backoff with a seeded ``random.Random``.
"""

from __future__ import annotations

import math
import random
from typing import Final

from gateway.delivery.records import Attempt, DeliveryJob, PushOutcome, Settlement
from gateway.protocol.notify import NotifyStrategy

#: BACKOFF_RETRY: "重试 3 次，每次重试的间隔时间是 10秒 到 20秒 之间的随机值".
BACKOFF_RETRIES: Final = 3
BACKOFF_MIN_SECONDS: Final = 10.0
BACKOFF_MAX_SECONDS: Final = 20.0

#: EXPONENTIAL_DECAY_RETRY: 1, 2, 4, ..., 256 s, then 167 x 512 s — 176 retries, 86,015 s.
EXPONENTIAL_DECAY_INTERVALS: Final[tuple[int, ...]] = tuple(2**n for n in range(9)) + (512,) * 167


def max_retries(strategy: NotifyStrategy) -> int:
    """Retries after the first attempt before the message becomes a dead letter."""
    if strategy is NotifyStrategy.BACKOFF_RETRY:
        return BACKOFF_RETRIES
    return len(EXPONENTIAL_DECAY_INTERVALS)


def retry_delay(
    strategy: NotifyStrategy,
    retries_done: int,
    *,
    rng: random.Random,
    scale: float = 1.0,
) -> float | None:
    """Seconds to wait before the next attempt, or ``None`` when the schedule is exhausted.

    ``retries_done`` counts the retries already made after the first attempt, so after a failed
    first attempt the caller passes 0. ``scale`` (``MNS_GATEWAY_RETRY_SCALE``) multiplies every
    interval so that end-to-end tests can run a day-long schedule in minutes.
    """
    if retries_done < 0:
        raise ValueError(f"retries_done must be >= 0, got {retries_done}")
    if not (math.isfinite(scale) and scale >= 0):
        raise ValueError(f"scale must be a finite number >= 0, got {scale}")
    if retries_done >= max_retries(strategy):
        return None
    if strategy is NotifyStrategy.BACKOFF_RETRY:
        return rng.uniform(BACKOFF_MIN_SECONDS, BACKOFF_MAX_SECONDS) * scale
    return EXPONENTIAL_DECAY_INTERVALS[retries_done] * scale


def after_attempt(
    job: DeliveryJob, attempt: Attempt, *, now_ms: int, rng: random.Random, scale: float = 1.0
) -> Settlement:
    """What becomes of a delivery after an attempt sent at ``now_ms`` or before: done when the
    endpoint took it; otherwise due again after its strategy's next interval from ``now_ms``,
    or a dead letter once the schedule is spent."""
    if attempt.outcome is PushOutcome.SUCCESS:
        return Settlement(job, attempt)
    strategy = job.subscription.notify_strategy
    delay = retry_delay(strategy, job.attempts, rng=rng, scale=scale)
    if delay is None:
        return Settlement(job, attempt, dead_reason="retries exhausted")
    return Settlement(job, attempt, retry_at_ms=now_ms + int(delay * 1000))
