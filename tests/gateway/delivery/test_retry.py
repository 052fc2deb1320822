"""The retry schedules of docs/protocol.md#retry-schedules, pinned interval by interval."""

from __future__ import annotations

import random

import pytest

from gateway.delivery.records import Attempt, DeliveryJob, PushOutcome
from gateway.delivery.retry import after_attempt, max_retries, retry_delay
from gateway.protocol.notify import NotifyStrategy
from gateway.topics.records import Subscription, TopicMessage

BACKOFF = NotifyStrategy.BACKOFF_RETRY
EXPONENTIAL = NotifyStrategy.EXPONENTIAL_DECAY_RETRY


def schedule(strategy: NotifyStrategy, *, seed: int = 7, scale: float = 1.0) -> list[float]:
    """Every delay until the schedule says stop (bounded well above the longest schedule)."""
    rng = random.Random(seed)
    delays: list[float] = []
    for retries_done in range(1000):
        delay = retry_delay(strategy, retries_done, rng=rng, scale=scale)
        if delay is None:
            return delays
        delays.append(delay)
    raise AssertionError("the schedule never ended")


def test_exponential_decay_intervals_are_exactly_the_documented_ones() -> None:
    delays = schedule(EXPONENTIAL)

    assert delays[:10] == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert delays == [2**n for n in range(9)] + [512] * 167
    assert len(delays) == 176
    assert sum(delays) == 86_015


def test_exponential_decay_is_exhausted_after_176_retries() -> None:
    rng = random.Random(0)
    assert retry_delay(EXPONENTIAL, 175, rng=rng) == 512
    assert retry_delay(EXPONENTIAL, 176, rng=rng) is None
    assert retry_delay(EXPONENTIAL, 10_000, rng=rng) is None
    assert max_retries(EXPONENTIAL) == 176


def test_scale_multiplies_every_exponential_interval() -> None:
    delays = schedule(EXPONENTIAL, scale=0.01)

    assert delays[:3] == pytest.approx([0.01, 0.02, 0.04])
    assert delays[-1] == pytest.approx(5.12)
    assert sum(delays) == pytest.approx(860.15)


def test_backoff_retries_three_times_between_10_and_20_seconds() -> None:
    delays = schedule(BACKOFF, seed=42)

    assert len(delays) == 3 == max_retries(BACKOFF)
    reference = random.Random(42)
    assert delays == [reference.uniform(10, 20) for _ in range(3)]


def test_backoff_stays_within_its_bounds_for_many_random_draws() -> None:
    delays = [delay for seed in range(300) for delay in schedule(BACKOFF, seed=seed)]

    assert len(delays) == 900
    assert all(10 <= delay <= 20 for delay in delays)
    assert min(delays) < 10.5 and max(delays) > 19.5  # the whole range is used, not a constant


def test_backoff_scale_shrinks_the_bounds() -> None:
    delays = [d for seed in range(50) for d in schedule(BACKOFF, seed=seed, scale=0.01)]

    assert all(0.1 <= delay <= 0.2 for delay in delays)


def test_backoff_is_exhausted_after_three_retries() -> None:
    assert retry_delay(BACKOFF, 3, rng=random.Random(1)) is None


@pytest.mark.parametrize(("retries_done", "scale"), [(-1, 1.0), (0, -0.5), (0, float("nan"))])
def test_nonsense_arguments_are_rejected(retries_done: int, scale: float) -> None:
    with pytest.raises(ValueError):
        retry_delay(EXPONENTIAL, retries_done, rng=random.Random(0), scale=scale)


def job(strategy: NotifyStrategy, attempts: int) -> DeliveryJob:
    message = TopicMessage("m", "orders", "body", "MD5", 0)
    subscription = Subscription("orders", "s", "http://e/", notify_strategy=strategy)
    return DeliveryJob("d", attempts, message, subscription, "http://e/")


def test_after_an_attempt_a_delivery_is_done_due_again_or_a_dead_letter() -> None:
    rng = random.Random(0)
    ok = Attempt(1, 0, PushOutcome.SUCCESS, 204)
    refused = Attempt(1, 0, PushOutcome.HTTP_ERROR, 503)

    done = after_attempt(job(EXPONENTIAL, 0), ok, now_ms=5_000, rng=rng)
    assert (done.succeeded, done.retry_at_ms, done.dead_reason) == (True, None, None)
    # The first retry of EXPONENTIAL_DECAY_RETRY is due 1 s after the attempt's end, scaled.
    again = after_attempt(job(EXPONENTIAL, 0), refused, now_ms=5_000, rng=rng, scale=0.5)
    assert (again.retry_at_ms, again.dead_reason) == (5_500, None)
    # A failed last try (three retries done on BACKOFF_RETRY) is not retried.
    dead = after_attempt(job(BACKOFF, 3), refused, now_ms=5_000, rng=rng)
    assert (dead.retry_at_ms, dead.dead_reason) == (None, "retries exhausted")
