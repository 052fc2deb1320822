"""The worker's dispatch buffer: what it has claimed and what it is pushing, per route.

Claimed deliveries wait here (still leased) until a thread and a slot on their route are free.
Claiming a batch at a time keeps claims to one write per batch; capping what each route may
hold (in flight plus waiting) at twice ``max_per_route`` keeps a stuck route from filling the
buffer. A route paused by a failed push (:mod:`gateway.breaker.failing_routes`) takes nothing
more until that failure is recorded (after a timeout, also until its pushes in flight then are
back).

**A route not yet heard from starts slowly.** Until one of its pushes is answered (any HTTP
status the breaker does not count as a failure), and again after a failure the breaker counts,
a route has at most ``first_per_route`` pushes in flight (and twice that held) instead of
``max_per_route``: an endpoint that hangs from the start then ties up 4 threads per worker for a
push timeout, not 16, and its first failures reach the breaker after 8 attempts, not 32
(bench/endpoint_health.py, hang: 16-17 attempts with the breaker on, two waves of 8 and a probe,
where the first wave and a probe made 33). A healthy endpoint answers its first push within a
round trip and has its full share from then on, as with a TCP connection's slow start or Envoy's
for a new host. With the breaker off (``first_per_route=None``) every route has its full share
at once.

**What it remembers of routes not in use is bounded.** Which routes have answered is kept for
at most ``max_routes`` routes (the least recently answered forgotten first, like the transport's
pools per host; with :class:`~gateway.breaker.failing_routes.FailingRoutes` bounded alike):
only a route with nothing in flight, nothing waiting and nothing paused is forgotten, and it
starts with its first share again when it next has work, as a route not yet heard from.

Pure bookkeeping, no IO and no lock of its own: :class:`~gateway.pushing.worker.DeliveryWorker`
calls it under its lock, and does the claiming, handing back and pushing it decides.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, OrderedDict

from gateway.breaker.failing_routes import (
    MAX_ROUTES,
    FailingRoutes,
    pauses_route,
    waits_for_wave,
)
from gateway.breaker.state import counts_as_failure
from gateway.delivery.records import DeliveryJob, Settlement


@dataclasses.dataclass(frozen=True, slots=True)
class ClaimRequest:
    """What the next claim should ask the store for: at most ``limit`` deliveries, none on the
    routes ``skip``; ``epoch`` dates it among failed pushes (:meth:`FailingRoutes.failed_since`)."""

    limit: int
    skip: frozenset[str]
    epoch: int


#: A route's pushes in flight until it answers one (per worker): see the module's docstring.
FIRST_PER_ROUTE = 4


class DispatchBuffer:
    def __init__(
        self,
        threads: int,
        max_per_route: int,
        first_per_route: int | None = None,
        max_routes: int = MAX_ROUTES,
    ) -> None:
        self.threads = threads
        self.max_per_route = max_per_route
        self.first_per_route = min(first_per_route or max_per_route, max_per_route)
        self.max_routes = max_routes
        #: What a route that has answered may hold, in flight and waiting together.
        self.cap = 2 * max_per_route
        self.inflight: Counter[str] = Counter()
        self.ready: list[DeliveryJob] = []
        self.failing = FailingRoutes(max_routes)
        #: Routes whose last push the breaker counted was answered: they have their full share.
        #: Least recently answered first (a set with an order: the values mean nothing).
        self.answered: OrderedDict[str, None] = OrderedDict()

    def limit(self, route: str) -> int:
        """The pushes ``route`` may have in flight now."""
        return self.max_per_route if route in self.answered else self.first_per_route

    def in_flight(self) -> int:
        return sum(self.inflight.values())

    def held(self) -> Counter[str]:
        """Per route, its pushes in flight and its claimed deliveries waiting."""
        held = Counter(self.inflight)
        held.update(job.route for job in self.ready)
        return held

    def claim_request(self) -> ClaimRequest | None:
        """What to claim now; ``None``: nothing (enough is waiting, or there is no room).

        A route is topped up only once it has drained to half its cap, and a claim asks for at
        most what the fullest route left in it can still take. So a busy route is refilled in
        batches of half a cap rather than one delivery per finished push (each claim is a write
        transaction), and nothing claimed has to be handed back. Paused routes are skipped.
        """
        room = 2 * self.threads - self.in_flight() - len(self.ready)
        if len(self.ready) >= self.threads or room <= 0:
            return None
        held = self.held()
        skip = frozenset(route for route, n in held.items() if n > self.limit(route))
        fullest = max((n for route, n in held.items() if route not in skip), default=0)
        return ClaimRequest(
            limit=min(room, self.cap - fullest),
            skip=skip | self.failing.paused(self.inflight),
            epoch=self.failing.epoch,
        )

    def accept(self, request: ClaimRequest, jobs: list[DeliveryJob]) -> list[DeliveryJob]:
        """Take what a claim made for ``request`` brought; what does not fit is returned, to be
        handed back: beyond its route's cap, or for a route that failed since the claim began
        (its admission may have read the breaker before that failure was recorded)."""
        held, handed_back = self.held(), []
        for job in jobs:
            full = held[job.route] >= 2 * self.limit(job.route)
            if full or self.failing.failed_since(job.route, request.epoch):
                handed_back.append(job)
                continue
            held[job.route] += 1
            self.ready.append(job)
        return handed_back

    def start(self) -> list[DeliveryJob]:
        """The waiting deliveries that have a thread and a slot on their route now, oldest
        claimed first, counted in flight."""
        free = self.threads - self.in_flight()
        if free <= 0 or not self.ready:
            return []
        # Called at every dispatch (a push that ends wakes the dispatcher), over every waiting
        # delivery: a route found full is passed over by a set lookup after that.
        full: set[str] = set()
        started: list[DeliveryJob] = []
        waiting: list[DeliveryJob] = []
        for job in self.ready:
            route = job.route
            if route in full or len(started) >= free:
                waiting.append(job)
            elif self.inflight[route] < self.limit(route):
                self.inflight[route] += 1
                started.append(job)
            else:
                full.add(route)
                waiting.append(job)
        self.ready = waiting
        return started

    def finished(self, job: DeliveryJob) -> None:
        """``job``'s push is over (whatever its outcome)."""
        self.inflight[job.route] -= 1
        if self.inflight[job.route] <= 0:
            del self.inflight[job.route]

    def pushed(self, settlement: Settlement) -> list[DeliveryJob]:
        """A push's outcome, before it is recorded. An answer gives its route its full share;
        a failure the breaker counts takes it away and pauses the route until settled: that
        route's waiting deliveries are returned, to be handed back untried."""
        route = settlement.job.route
        attempt = settlement.attempt
        if attempt is not None and counts_as_failure(attempt.outcome, attempt.status_code) is False:
            self._answered(route)
        if not pauses_route(settlement):
            return []
        self.answered.pop(route, None)
        self.failing.failed(settlement.job, wave=waits_for_wave(settlement), busy=self.held())
        unstarted = [job for job in self.ready if job.route == route]
        if unstarted:
            self.ready = [job for job in self.ready if job.route != route]
        return unstarted

    def _answered(self, route: str) -> None:
        if route in self.answered:
            self.answered.move_to_end(route)
            return
        self.answered[route] = None
        if len(self.answered) <= self.max_routes:
            return
        # Past the bound: forget the least recently answered idle routes (a failed one is not
        # in ``answered`` at all, so nothing in it is paused).
        busy, excess = self.held(), len(self.answered) - self.max_routes
        idle: list[str] = []
        for known in self.answered:  # oldest first; stops at the first ``excess`` idle ones
            if len(idle) == excess:
                break
            if known not in busy:
                idle.append(known)
        for forgotten in idle:
            del self.answered[forgotten]

    def settled(self, settlements: list[Settlement]) -> bool:
        """Their outcomes are recorded: whether that ended a route's pause."""
        # A list, not a generator: every settlement must be counted, not only those up to the
        # first that ends a pause.
        return any([self.failing.settled(settlement.job) for settlement in settlements])

    def take_waiting(self) -> list[DeliveryJob]:
        """Every waiting delivery, removed (the worker stops: they are handed back)."""
        waiting, self.ready = self.ready, []
        return waiting
