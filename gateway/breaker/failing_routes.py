"""Routes paused by a failed push until its outcome is recorded (docs/delivery.md#endpoint-health).

The circuit breaker decides in the store, from recorded outcomes; a worker that goes on pushing
to a route between a failure and its record spends attempts the breaker would have saved. With a
hanging endpoint that is most of them: a route's first pushes all time out together, and the
deliveries claimed behind them (still leased, waiting for a slot) used to start at once, before
the failures were settled and the breaker could open (bench/endpoint_health.py, hang: 65 attempts
where 32 were in flight). A push already sent cannot be recalled; one claimed and not started
can. So the rule is: **after a push the breaker counts as a failed one, its route takes nothing
more (its claimed, unstarted deliveries are handed back untried, with their due times, and claims
leave it out) until every such failure on it is settled**, so that the next claim for it reads
the breaker's shared state with those failures in it. **A push that timed out also keeps its
route paused until the pushes it had in flight then are back**: a hanging endpoint's first wave
times out together but comes back a few at a time, and a route resumed once the first few were
settled started as many more before the rest came back and opened the breaker
(bench/endpoint_health.py, hang: 36-39 attempts where 32 were in flight, 33 with this). A
failure answered at once (a 5xx, a refused connection) does not wait for its wave: the rest of
it is answered as fast. Waiting for every failure's wave cost the healthy routes beside a
500-answering endpoint on SQLite (docs/benchmarks.md#endpoint-health, 2026-11-28).

**What it remembers is bounded.** When each route last failed is kept for at most
``max_routes`` routes (:data:`MAX_ROUTES`), the least recently failed forgotten first, like the
transport's pools per host: a worker that pushed to 100,000 endpoints in its life kept about
20 MB for them (issue 47). Only an idle route is forgotten: none of its failures unsettled, no
wave waited for, nothing of it in flight or waiting in the buffer. A claim under way when a
failure it should have seen was forgotten hands back what it brought for every route it knows
no failure of (:meth:`FailingRoutes.failed_since`): a few deliveries claimed again, never a
push made that a pause should have held back.

Pure bookkeeping, no IO and no lock of its own: the worker's dispatch buffer
(:mod:`gateway.breaker.dispatch_buffer`) keeps it, under the worker's lock. With the breaker
turned off the worker does not pause routes (nothing would read the recorded failures).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Container, Mapping

from gateway.breaker.state import counts_as_failure
from gateway.delivery.records import DeliveryJob, PushOutcome, Settlement

#: Routes whose last failure a worker remembers at most (about 200 bytes each).
MAX_ROUTES = 10_000


def pauses_route(settlement: Settlement) -> bool:
    """Whether ``settlement``'s attempt is a failure the breaker counts: its route pauses."""
    attempt = settlement.attempt
    return attempt is not None and counts_as_failure(attempt.outcome, attempt.status_code) is True


def waits_for_wave(settlement: Settlement) -> bool:
    """Whether ``settlement``'s failure also keeps its route paused while the pushes it had in
    flight then are out: a timeout (its siblings, sent about when it was, hang too)."""
    attempt = settlement.attempt
    return attempt is not None and attempt.outcome is PushOutcome.TIMEOUT


class FailingRoutes:
    """Failed pushes not yet settled, per route, and when each route last failed.

    ``epoch`` numbers the failures, so that a claim that was under way when one came back can
    tell (:meth:`failed_since`): what it claimed for that route is handed back too, as its
    admission may have read the breaker before that failure was recorded.
    """

    def __init__(self, max_routes: int = MAX_ROUTES) -> None:
        self.max_routes = max_routes
        self._unsettled: Counter[str] = Counter()
        self._pausing: dict[str, str] = {}  # delivery id -> route, of the failures unsettled
        # Least recently failed first; the epoch of the latest failure forgotten beside it.
        self._last_failure: OrderedDict[str, int] = OrderedDict()
        self._forgotten = 0
        # Routes whose push timed out and that may still have pushes in flight from before (they
        # take nothing new meanwhile): paused until :meth:`paused` sees none in flight on them.
        self._waves: set[str] = set()
        self.epoch = 0

    def failed(self, job: DeliveryJob, *, wave: bool = False, busy: Container[str] = ()) -> None:
        """A push of ``job`` failed; its route pauses until :meth:`settled` says so, and with
        ``wave`` also while pushes it had in flight then are out (:meth:`paused`). Past
        ``max_routes``, idle routes are forgotten: ``busy`` are those with pushes in flight or
        waiting (the buffer's)."""
        self.epoch += 1
        self._pausing[job.delivery_id] = job.route
        self._unsettled[job.route] += 1
        self._last_failure.pop(job.route, None)
        self._last_failure[job.route] = self.epoch
        if wave:
            self._waves.add(job.route)
        if len(self._last_failure) > self.max_routes:
            self._forget_idle(busy)

    def _forget_idle(self, busy: Container[str]) -> None:
        """Forget the least recently failed idle routes until ``max_routes`` are left (or only
        busy ones are older)."""
        excess = len(self._last_failure) - self.max_routes
        idle: list[str] = []
        for route in self._last_failure:
            if len(idle) == excess:
                break
            if route not in busy and route not in self._unsettled and route not in self._waves:
                idle.append(route)
        for route in idle:
            self._forgotten = max(self._forgotten, self._last_failure.pop(route))

    def remembered(self) -> int:
        """How many routes' last failures are kept."""
        return len(self._last_failure)

    def settled(self, job: DeliveryJob) -> bool:
        """``job``'s outcome is recorded (or given up on): whether that ended its route's pause
        (false too for an outcome that paused nothing)."""
        route = self._pausing.pop(job.delivery_id, None)
        if route is None:
            return False
        self._unsettled[route] -= 1
        if self._unsettled[route] > 0:
            return False
        del self._unsettled[route]
        return True

    def paused(self, in_flight: Mapping[str, int]) -> frozenset[str]:
        """The routes that take nothing now, given the pushes ``in_flight`` per route: those
        with a failure unsettled, and those waiting for a timed-out push's wave (none of their
        pushes in flight started after it: the route took nothing since)."""
        if self._waves:
            self._waves = {r for r in self._waves if r in self._unsettled or in_flight.get(r, 0)}
        return frozenset(self._unsettled.keys() | self._waves)

    def failed_since(self, route: str, epoch: int) -> bool:
        """Whether ``route`` failed after ``epoch`` was read (or is paused still). A route it
        knows no failure of may have had one forgotten: it counts as failed when any failure
        forgotten came after ``epoch``."""
        last = self._last_failure.get(route, self._forgotten)
        return route in self._unsettled or last > epoch
