"""Subscription endpoints' circuit breakers in the store, on each backend: two stores over one
database are two replicas, and what one settles decides what the other claims."""

from __future__ import annotations

import json

import pytest

from gateway.breaker.state import Override, State, Transition
from gateway.delivery.records import Attempt, DeliveryJob, Settlement
from gateway.store.base import Store, compose_store
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock


@pytest.fixture()
def stores(open_database: OpenDatabase, clock: Clock) -> tuple[Store, Store]:
    return compose_store(open_database(), clock), compose_store(open_database(), clock)


def published(store: Store, count: int, names: tuple[str, ...] = ("down", "up")) -> None:
    store.topics.create_topic("t", 65536, False)
    for name in names:
        store.topics.subscribe(Subscription("t", name, f"http://{name}.test/"))
    now = store.now_ms()
    store.topics.publish_all([TopicMessage(f"M{n:04d}", "t", "b", "X", now) for n in range(count)])


def failed(store: Store, job: DeliveryJob, status: int = 500, after_ms: int = 1) -> Settlement:
    attempt = Attempt(job.attempts + 1, store.now_ms(), "http_error", status)
    return Settlement(job, attempt, retry_at_ms=store.now_ms() + after_ms)


def succeeded(store: Store, job: DeliveryJob) -> Settlement:
    return Settlement(job, Attempt(job.attempts + 1, store.now_ms(), "success", 204))


def claim(store: Store, owner: str, limit: int = 100) -> list[DeliveryJob]:
    return store.deliveries.claim(owner, 60, limit, frozenset())


def of(jobs: list[DeliveryJob], name: str) -> list[DeliveryJob]:
    return [job for job in jobs if job.subscription.name == name]


def trip(a: Store, clock: Clock) -> list[DeliveryJob]:
    """Ten failures of ``down`` settled through ``a``: its breaker opens."""
    jobs = claim(a, "a")
    down = sorted(of(jobs, "down"), key=lambda job: job.message.id)
    up = of(jobs, "up")
    retries = [failed(a, job, after_ms=1 + n) for n, job in enumerate(down)]
    a.deliveries.settle("a", retries + [succeeded(a, job) for job in up])
    clock.now += 0.01
    return down


def opened(a: Store, clock: Clock, watcher: Store | None = None) -> list[Transition]:
    """Ten messages to ``down`` and ``up`` published through ``a``, then :func:`trip`; the
    transitions ``watcher`` reports from just before the trip on."""
    published(a, 10)
    seen: list[Transition] = []
    if watcher is not None:
        watcher.deliveries.on_breaker_transitions(seen.extend)
    trip(a, clock)
    return seen


def test_failures_through_one_replica_open_it_for_every_replica(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    seen = opened(a, clock, watcher=a)
    assert [(t.resource, t.before, t.after) for t in seen] == [("t/down", State.CLOSED, State.OPEN)]
    a.topics.publish_all([TopicMessage("N0001", "t", "b", "X", a.now_ms())])
    # Replica b leaves the open endpoint's deliveries (due, untried) where they are.
    jobs = claim(b, "b")
    assert [(j.subscription.name, j.message.id) for j in jobs] == [("up", "N0001")]
    breakers, waiting = b.deliveries.breakers()
    assert breakers["t/down"].state is State.OPEN
    assert breakers["t/down"].failure_rate() == 1.0
    assert waiting["t/down"] == 11
    assert "t/up" not in breakers


def test_healthy_endpoints_keep_no_breaker(stores: tuple[Store, Store], clock: Clock) -> None:
    a, _ = stores
    published(a, 20, names=("up",))
    jobs = claim(a, "a")
    a.deliveries.settle("a", [succeeded(a, job) for job in jobs])
    assert a.deliveries.breakers() == ({}, {})


def test_a_4xx_does_not_open_it(stores: tuple[Store, Store], clock: Clock) -> None:
    a, _ = stores
    published(a, 20, names=("down",))
    jobs = claim(a, "a")
    a.deliveries.settle("a", [failed(a, job, status=404) for job in jobs])
    assert a.deliveries.breakers() == ({}, {})


def test_half_open_lets_one_probe_out_and_its_success_drains_the_backlog_in_order(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    seen = opened(a, clock, watcher=b)
    clock.now += 30
    (probe,) = claim(b, "b")
    assert probe.subscription.name == "down" and probe.message.id == "M0000"
    assert probe.attempts == 1
    assert [(t.before, t.after) for t in seen] == [(State.OPEN, State.HALF_OPEN)]
    # Its probe out, nobody else pushes to it.
    assert claim(a, "a") == []
    b.deliveries.settle("b", [succeeded(b, probe)])
    assert seen[-1].after is State.CLOSED
    rest = claim(a, "a")
    assert [job.message.id for job in rest] == [f"M{n:04d}" for n in range(1, 10)]
    # Attempts skipped while open did not count against the strategy.
    assert {job.attempts for job in rest} == {1}


def test_a_failed_probe_opens_it_again_for_longer(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    opened(a, clock)
    clock.now += 30
    (probe,) = claim(b, "b")
    b.deliveries.settle("b", [failed(b, probe)])
    breaker = a.deliveries.breakers()[0]["t/down"]
    assert breaker.state is State.OPEN
    assert breaker.open_until_ms == b.now_ms() + 60_000
    clock.now += 59
    assert claim(a, "a") == []
    clock.now += 1
    assert len(claim(a, "a")) == 1


def test_held_open_and_forced_closed(stores: tuple[Store, Store], clock: Clock) -> None:
    a, b = stores
    published(a, 3, names=("down",))
    seen: list[Transition] = []
    a.deliveries.on_breaker_transitions(seen.extend)
    held = a.deliveries.override_breaker("t", "down", Override.OPEN)
    assert [(t.before, t.after) for t in seen] == [(State.CLOSED, State.OPEN)]
    assert held.effective() is State.OPEN
    clock.now += 3600
    assert claim(b, "b") == []
    a.deliveries.override_breaker("t", "down", None)
    assert [(t.before, t.after) for t in seen][-1] == (State.OPEN, State.CLOSED)
    assert len(claim(b, "b")) == 3


def test_forced_closed_pushes_an_open_endpoint(stores: tuple[Store, Store], clock: Clock) -> None:
    a, b = stores
    seen = opened(a, clock, watcher=a)
    a.deliveries.override_breaker("t", "down", Override.CLOSED)
    assert seen[-1].after is State.CLOSED
    assert len(of(claim(b, "b"), "down")) == 10


def test_retention_over_while_open_dead_letters_as_circuit_open(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    opened(a, clock)
    a.deliveries.override_breaker("t", "down", Override.OPEN)
    clock.now += 86_400 + 1
    b.deliveries.expire()
    reasons = {(d.subscription.name, d.reason) for d in b.deliveries.list_dead_letters().items}
    assert reasons == {("down", "endpoint circuit open")}


def test_transitions_are_published_to_the_events_topic_once_and_never_loop(
    stores: tuple[Store, Store], clock: Clock
) -> None:
    a, b = stores
    published(a, 10)
    a.topics.create_topic("ops", 65536, False)
    a.topics.subscribe(Subscription("ops", "alert", "http://alert.test/"))
    for store in stores:
        store.deliveries.events_topic = "ops"
    trip(a, clock)
    clock.now += 30
    first = claim(b, "b")  # the probe (half-open, published by b) and the first event
    assert len(of(first, "down")) == 1
    events = of(first, "alert") + of(claim(a, "a"), "alert")
    bodies = [json.loads(job.message.body) for job in events]
    assert [(e["PreviousState"], e["State"]) for e in bodies] == [
        ("closed", "open"),
        ("open", "half-open"),
    ]
    opened = bodies[0]
    assert opened["Event"] == "EndpointCircuit" and events[0].message.tag == "EndpointCircuit"
    assert (opened["TopicName"], opened["SubscriptionName"]) == ("t", "down")
    assert opened["FailureRate"] == 1.0 and opened["Attempts"] == opened["Failures"] == 10
    assert opened["NextProbeTime"] == opened["Time"] + 30_000
    # The alert endpoint itself fails: its breaker opens, and nothing is published about it.
    a.deliveries.settle("a", [failed(a, job) for job in events])
    more = [f"O{n}" for n in range(10)]
    a.topics.publish_all([TopicMessage(m, "ops", "b", "X", a.now_ms()) for m in more])
    jobs = claim(a, "a")
    a.deliveries.settle("a", [failed(a, job) for job in jobs])
    assert a.deliveries.breakers()[0]["ops/alert"].state is State.OPEN
    clock.now += 1
    assert claim(b, "b") == []


def test_no_events_topic_no_events(stores: tuple[Store, Store], clock: Clock) -> None:
    a, b = stores
    published(a, 10)
    a.topics.create_topic("ops", 65536, False)
    a.topics.subscribe(Subscription("ops", "alert", "http://alert.test/"))
    a.deliveries.events_topic = "missing"  # a topic that is not there: the transition stands
    trip(a, clock)
    assert a.deliveries.breakers()[0]["t/down"].state is State.OPEN
    assert claim(b, "b") == []
