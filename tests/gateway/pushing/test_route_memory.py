"""What a worker remembers per route is bounded (issue 47): the dispatch buffer's answered routes
and the failing routes' last failures (:mod:`gateway.breaker.dispatch_buffer`,
:mod:`gateway.breaker.failing_routes`). Only idle routes are forgotten: nothing in flight,
nothing waiting, nothing paused; the pause, first-share and wave rules hold for the rest."""

from __future__ import annotations

from gateway.breaker.dispatch_buffer import ClaimRequest, DispatchBuffer
from gateway.breaker.failing_routes import MAX_ROUTES, FailingRoutes
from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from tests.support.stub import routed_job


def job(route: str, n: int = 0) -> DeliveryJob:
    return routed_job(f"{route}#{n}", route)


def answered(route_job: DeliveryJob) -> Settlement:
    return Settlement(route_job, Attempt(1, 0, "success", 204, None, 1.0))


def failure(route_job: DeliveryJob, outcome: str = "http_error") -> Settlement:
    status = 500 if outcome == "http_error" else None
    return Settlement(route_job, Attempt(1, 0, outcome, status, None, 1.0), retry_at_ms=1)


def test_failing_routes_remember_at_most_their_bound() -> None:
    routes = FailingRoutes(max_routes=3)
    for n in range(100):
        failed = job(f"http://r{n}.test:80")
        routes.failed(failed)
        routes.settled(failed)
        assert routes.remembered() <= 3
    assert routes.remembered() == 3


def test_an_idle_route_is_forgotten_and_a_paused_one_is_not() -> None:
    routes = FailingRoutes(max_routes=2)
    paused, idle, recent = job("http://paused.test:80"), job("http://idle.test:80"), job("c")
    routes.failed(paused)  # the oldest, and never settled: paused
    routes.failed(idle)
    routes.settled(idle)
    routes.failed(recent)
    routes.settled(recent)
    assert routes.remembered() == 2
    assert routes.paused({}) == {paused.route}  # still paused, still remembered
    assert routes.failed_since(paused.route, 0)
    assert routes.failed_since(recent.route, routes.epoch - 1)


def test_a_route_in_use_or_waiting_for_its_wave_is_not_forgotten() -> None:
    routes = FailingRoutes(max_routes=1)
    waving, busy = job("http://wave.test:80"), job("http://busy.test:80")
    routes.failed(waving, wave=True)
    routes.settled(waving)  # settled, but its wave is out: paused while pushes are in flight
    routes.failed(busy)
    routes.settled(busy)
    routes.failed(job("http://third.test:80"), busy={busy.route})
    assert routes.remembered() == 3  # each of them is in use: none forgotten
    assert waving.route in routes.paused({waving.route: 1})


def test_a_claim_under_way_when_a_failure_was_forgotten_hands_back_what_it_brought() -> None:
    routes = FailingRoutes(max_routes=1)
    epoch = routes.epoch  # a claim begins
    first, second = job("http://first.test:80"), job("http://second.test:80")
    for failed in (first, second):
        routes.failed(failed)
        routes.settled(failed)
    assert routes.remembered() == 1
    # ``first``'s failure came after the claim began and is forgotten: what the claim brought
    # for a route it knows nothing of goes back (to be claimed again), never pushed unpaused.
    assert routes.failed_since(first.route, epoch)
    assert routes.failed_since("http://never.test:80", epoch)
    # A claim begun after every forgotten failure is not held back.
    assert not routes.failed_since("http://never.test:80", routes.epoch)


def test_the_buffer_remembers_at_most_its_bound_of_answered_routes() -> None:
    buffer = DispatchBuffer(threads=4, max_per_route=16, first_per_route=4, max_routes=5)
    for n in range(200):
        pushed = job(f"http://r{n}.test:80")
        buffer.accept(ClaimRequest(8, frozenset(), 0), [pushed])
        buffer.start()
        buffer.finished(pushed)
        buffer.pushed(answered(pushed))
        assert len(buffer.answered) <= 5
        failed = job(f"http://f{n}.test:80")
        buffer.pushed(failure(failed))
        buffer.settled([failure(failed)])
        assert buffer.failing.remembered() <= 5


def test_an_idle_answered_route_is_forgotten_and_a_busy_one_keeps_its_full_share() -> None:
    buffer = DispatchBuffer(threads=8, max_per_route=16, first_per_route=4, max_routes=2)
    busy, idle = job("http://busy.test:80"), job("http://idle.test:80")
    for route_job in (busy, idle):
        buffer.accept(ClaimRequest(8, frozenset(), 0), [route_job])
    buffer.start()
    buffer.finished(idle)
    buffer.pushed(answered(busy))  # answered once, and one of its pushes is still in flight
    buffer.pushed(answered(idle))
    later = job("http://later.test:80")
    buffer.pushed(answered(later))  # past the bound: the oldest idle one goes
    assert list(buffer.answered) == [busy.route, later.route]
    assert buffer.limit(busy.route) == 16  # its full share, as before
    assert buffer.limit(idle.route) == 4  # starts again with its first share


def test_a_worker_remembers_at_most_ten_thousand_routes_by_default() -> None:
    # 100,000 routes took about 20 MB for a worker's life; the bound keeps about 2 MB at most.
    assert DispatchBuffer(threads=1, max_per_route=1).max_routes == MAX_ROUTES == 10_000
