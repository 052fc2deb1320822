"""When a delivery dispatcher looks for work again (pure): after a quiet round, after a failed one.

The dispatcher itself is :class:`gateway.pushing.worker.DeliveryWorker`; these are its waits.
"""

from __future__ import annotations

#: The longest a dispatcher waits between attempts while the store keeps failing.
MAX_FAILURE_BACKOFF = 2.0


def quiet_backoff(
    until_due: float | None, quiet: float, poll: float, quiet_max: float
) -> tuple[float, float]:
    """How long a dispatcher that started nothing sleeps, and its quiet wait for the next round.

    ``until_due`` is the seconds until the earliest delivery falls due (``None``: there is none),
    ``quiet`` the current quiet wait, ``poll`` the short poll. A delivery already due that was
    not claimed keeps the short poll; otherwise the quiet wait is slept (a retry's due time cuts
    it short) and doubles, at most ``quiet_max``.
    """
    if until_due is not None and until_due <= 0:
        return poll, quiet
    wait = quiet if until_due is None else min(quiet, until_due)
    return wait, min(quiet_max, quiet * 2)


def failure_backoff(failures: int, idle_wait: float) -> float:
    """Seconds before the dispatcher's next attempt after ``failures`` failed rounds in a row:
    ``idle_wait`` doubled per failure, at most :data:`MAX_FAILURE_BACKOFF`, so it asks a database
    that is back within about two seconds and one that is not at most every two seconds."""
    return float(min(MAX_FAILURE_BACKOFF, idle_wait * 2 ** max(0, failures - 1)))
