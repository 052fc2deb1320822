"""The breaker's state machine, pure (docs/delivery.md#endpoint-health).

Closed, the endpoint is pushed as usual and its attempts are counted over a window; when at
least ``min_attempts`` attempts in it failed at a rate of ``failure_rate`` or more, it opens.
Open, nothing is pushed to it: its deliveries wait where they are, untried, so no attempt is
spent and nothing is dead-lettered for it. After ``cool_down_ms`` it goes half-open: ``probes``
deliveries go out; the first outcome back decides: a success closes it, a failure opens it
again for twice as long (at most ``max_cool_down_ms``).

The store keeps one :class:`Breaker` per subscription (shared by every replica), locks it and
applies :func:`record` in the transaction that settles the attempts, and :func:`admit` in the
one that claims deliveries (:mod:`gateway.breaker` says why there). A subscription whose
breaker is closed with no failure in its window keeps no row at all
(:meth:`Breaker.is_default`), so a healthy endpoint costs nothing.

The window is a fixed one starting at the first attempt counted into it (a failure, since a
closed breaker without failures is not kept), so its figures are exact and a few integers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum

from gateway.delivery.records import PushOutcome


class State(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class Override(StrEnum):
    """An operator's word on a subscription: pushed whatever its health (``closed``), or not
    pushed at all, for maintenance (``open``)."""

    CLOSED = "closed"
    OPEN = "open"


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """When a breaker opens and for how long (the settings ``breaker_*``).

    The defaults follow Convoy's (open at >= 70 % failures with >= 10 attempts, half-open after
    30 s) with a 5-minute window. The longest cool-down (300 s) is below EXPONENTIAL_DECAY_RETRY's
    512 s interval and the window is shorter than the 511 s its first ten attempts take, so one
    message retried alone never opens a breaker nor waits behind one.
    """

    enabled: bool = True
    failure_rate: float = 0.7
    min_attempts: int = 10
    window_ms: int = 300_000
    cool_down_ms: int = 30_000
    max_cool_down_ms: int = 300_000
    probes: int = 1

    def scaled(self, scale: float) -> BreakerPolicy:
        """Times multiplied by ``scale``, as the retry schedules are by ``retry_scale``."""
        return dataclasses.replace(
            self,
            window_ms=max(1, int(self.window_ms * scale)),
            cool_down_ms=max(1, int(self.cool_down_ms * scale)),
            max_cool_down_ms=max(1, int(self.max_cool_down_ms * scale)),
        )


@dataclass(frozen=True, slots=True)
class Breaker:
    """One subscription's breaker. ``attempts``/``failures`` count the window that started at
    ``window_start_ms``; ``open_until_ms`` is when an open breaker lets probes out;
    ``cool_down_ms`` the cool-down it opened with (doubled on each failed probe);
    ``probes_out`` the probes sent and not yet back, ``probe_until_ms`` when an unanswered probe
    (its pusher died) no longer holds its place; ``held`` the deliveries handed back untried
    while it was not closed; ``changed_ms`` the last transition."""

    state: State = State.CLOSED
    window_start_ms: int = 0
    attempts: int = 0
    failures: int = 0
    open_until_ms: int = 0
    cool_down_ms: int = 0
    probes_out: int = 0
    probe_until_ms: int = 0
    held: int = 0
    changed_ms: int = 0
    override: Override | None = None

    def is_default(self) -> bool:
        """Closed, with no failure counted and no override: the store keeps no row."""
        return (
            self.state is State.CLOSED
            and self.failures == 0
            and self.override is None
            and self.held == 0
        )

    def failure_rate(self) -> float:
        return self.failures / self.attempts if self.attempts else 0.0

    def next_probe_ms(self) -> int | None:
        """When probes go out next: an open breaker's end of cool-down."""
        return self.open_until_ms if self.state is State.OPEN else None

    def effective(self) -> State:
        """What claims obey: the override if any, else the state."""
        if self.override is Override.OPEN:
            return State.OPEN
        if self.override is Override.CLOSED:
            return State.CLOSED
        return self.state


@dataclass(frozen=True, slots=True)
class Transition:
    """A breaker changed state (for metrics, the operation log and operator events);
    ``operator`` the override (closed, open or auto) when an operator's made it."""

    resource: str
    before: State
    after: State
    at_ms: int
    breaker: Breaker
    operator: str | None = None


#: Outcomes the breaker counts as failures whatever the status, and those it does not count.
_FAILED = frozenset({PushOutcome.TIMEOUT, PushOutcome.CONNECTION_ERROR})
_NOT_COUNTED = frozenset({PushOutcome.REFUSED_BY_POLICY, PushOutcome.REJECTED})


def counts_as_failure(outcome: PushOutcome, status_code: int | None) -> bool | None:
    """How an attempt counts: ``True`` a failure (a 5xx, a 429, no connection, a timeout),
    ``False`` an endpoint that answered, ``None`` not at all (refused before it was sent:
    an egress policy, or a :class:`~gateway.delivery.PermanentDeliveryError`)."""
    if outcome in _FAILED:
        return True
    if outcome in _NOT_COUNTED:
        return None
    return status_code is not None and (status_code >= 500 or status_code == 429)


def _count(breaker: Breaker, policy: BreakerPolicy, failed: bool, now_ms: int) -> Breaker:
    start, attempts, failures = breaker.window_start_ms, breaker.attempts, breaker.failures
    if attempts == 0 or now_ms - start >= policy.window_ms or now_ms < start:
        start, attempts, failures = now_ms, 0, 0
    if failures == 0 and not failed:
        # A window starts at a failure: successes alone keep nothing (no row, no write).
        if breaker.window_start_ms == breaker.attempts == breaker.failures == 0:
            return breaker  # a healthy endpoint's, the common case: nothing to copy
        return dataclasses.replace(breaker, window_start_ms=0, attempts=0, failures=0)
    return dataclasses.replace(
        breaker, window_start_ms=start, attempts=attempts + 1, failures=failures + int(failed)
    )


def _open(breaker: Breaker, cool_down_ms: int, now_ms: int) -> Breaker:
    return dataclasses.replace(
        breaker,
        state=State.OPEN,
        open_until_ms=now_ms + cool_down_ms,
        cool_down_ms=cool_down_ms,
        probes_out=0,
        probe_until_ms=0,
        changed_ms=now_ms,
    )


def _close(breaker: Breaker, now_ms: int) -> Breaker:
    return Breaker(changed_ms=now_ms, override=breaker.override)


def record(breaker: Breaker, policy: BreakerPolicy, failed: bool, now_ms: int) -> Breaker:
    """``breaker`` after an attempt that ``failed`` (or not) settled at ``now_ms``.

    Closed: counted; opens when the window's figures reach the threshold. Half-open: the
    outcome decides (closes, or opens again for twice the cool-down). Open: an attempt that
    was in flight when it opened changes nothing. Turned off (``policy.enabled`` false), one
    left open or half-open closes at its next attempt, so that its health says what happens.
    """
    if not policy.enabled and breaker.state is not State.CLOSED:
        return _close(breaker, now_ms)
    if breaker.state is State.OPEN:
        return breaker
    if breaker.state is State.HALF_OPEN:
        if not failed:
            return _close(breaker, now_ms)
        longer = min(policy.max_cool_down_ms, max(policy.cool_down_ms, 2 * breaker.cool_down_ms))
        return _open(breaker, longer, now_ms)
    counted = _count(breaker, policy, failed, now_ms)
    if (
        policy.enabled
        and counted.attempts >= policy.min_attempts
        and counted.failures >= policy.failure_rate * counted.attempts
    ):
        return _open(counted, policy.cool_down_ms, now_ms)
    return counted


@dataclass(frozen=True, slots=True)
class Admission:
    """What a claim may push of a subscription's claimed deliveries: the first ``granted``;
    the others are handed back untried (``breaker.held`` counts them)."""

    granted: int
    breaker: Breaker


def admit(
    breaker: Breaker, policy: BreakerPolicy, wanted: int, now_ms: int, probe_ms: int
) -> Admission:
    """How many of ``wanted`` claimed deliveries may go out at ``now_ms`` (:func:`admissible`).
    An open breaker whose cool-down is over turns half-open and lets ``policy.probes`` out (each
    holding its place for ``probe_ms``, a lease); a half-open one lets out what probes are not
    already out."""
    slots = admissible(breaker, policy, now_ms)
    if slots is None:
        return Admission(wanted, breaker)
    if breaker.state is State.OPEN and now_ms >= breaker.open_until_ms:
        breaker = dataclasses.replace(
            breaker, state=State.HALF_OPEN, probes_out=0, probe_until_ms=0, changed_ms=now_ms
        )
    granted = min(wanted, slots)
    if granted:
        breaker = dataclasses.replace(
            breaker,
            probes_out=_probes_out(breaker, now_ms) + granted,
            probe_until_ms=now_ms + probe_ms,
        )
    return _hold(breaker, granted, wanted)


def admissible(breaker: Breaker, policy: BreakerPolicy, now_ms: int) -> int | None:
    """How many of a subscription's deliveries a claim may push at ``now_ms``: ``None`` for
    all (closed, forced closed, or breakers turned off and no override); none while held open
    or cooling down; else ``policy.probes`` less those out. A claim gives back that many of a
    held backlog, the earliest, and no more: the rest waits for the breaker to close
    (docs/delivery.md#endpoint-health)."""
    if breaker.effective() is State.CLOSED or (not policy.enabled and breaker.override is None):
        return None
    if breaker.override is Override.OPEN:
        return 0
    if breaker.state is State.OPEN:
        return policy.probes if now_ms >= breaker.open_until_ms else 0
    return max(0, policy.probes - _probes_out(breaker, now_ms))


def _probes_out(breaker: Breaker, now_ms: int) -> int:
    """Probes out and not back; an unanswered one's place lapses at ``probe_until_ms``."""
    return breaker.probes_out if now_ms < breaker.probe_until_ms else 0


def _hold(breaker: Breaker, granted: int, wanted: int) -> Admission:
    held = wanted - granted
    if held:
        breaker = dataclasses.replace(breaker, held=breaker.held + held)
    return Admission(granted, breaker)


def blocks_claims(breaker: Breaker, policy: BreakerPolicy, now_ms: int) -> bool:
    """Whether claims should leave the subscription's deliveries out altogether at ``now_ms``:
    held open, open in its cool-down, or half-open with its probes out: when
    :func:`admissible` lets none out."""
    return admissible(breaker, policy, now_ms) == 0


def overridden(breaker: Breaker, override: Override | None, now_ms: int) -> Breaker:
    """``breaker`` with an operator's override set (``None`` clears it). Forcing it closed also
    closes it, so that it starts counting afresh once the override is cleared."""
    if override is Override.CLOSED:
        return dataclasses.replace(_close(breaker, now_ms), override=override)
    return dataclasses.replace(breaker, override=override)
