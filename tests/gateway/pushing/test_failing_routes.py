"""A failed push pauses its route until the failure is recorded (docs/delivery.md#endpoint-health):
the rule on its own (:mod:`gateway.breaker.failing_routes`), then in a stub worker on the memory
store, with the clock standing still so that no retry falls due."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from gateway.breaker.failing_routes import FailingRoutes, pauses_route, waits_for_wave
from gateway.breaker.state import BreakerPolicy, State
from gateway.delivery.records import Attempt, DeliveryJob, Filed, Settlement
from gateway.protocol.notify import NotifyStrategy
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.base import Store
from gateway.store.deliveries import DeliveryStore
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock
from tests.support.stub import ScriptedSender, failed, ok, routed_job, stub_worker

DOWN, UP = "http://down.test/", "http://up.test/"


def settlement(outcome: str, status: int | None) -> Settlement:
    attempt = Attempt(1, 0, outcome, status, None, 1.0)
    return Settlement(None, attempt, retry_at_ms=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcome", "status", "pauses"),
    [
        ("timeout", None, True),
        ("connection_error", None, True),
        ("http_error", 500, True),
        ("http_error", 429, True),
        ("http_error", 404, False),  # the endpoint answered: the message is the problem
        ("success", 204, False),
        ("refused_by_policy", None, False),  # never sent
        ("rejected", None, False),
    ],
)
def test_what_the_breaker_counts_as_a_failure_pauses_its_route(
    outcome: str, status: int | None, pauses: bool
) -> None:
    assert pauses_route(settlement(outcome, status)) is pauses


def test_a_route_is_paused_until_each_of_its_failures_is_settled() -> None:
    routes = FailingRoutes()
    a1, a2, b1 = routed_job("1", "a"), routed_job("2", "a"), routed_job("3", "b")
    before = routes.epoch
    routes.failed(a1)
    routes.failed(a2)
    routes.failed(b1)
    assert routes.paused({}) == {"a", "b"}
    assert not routes.settled(a1)
    assert routes.paused({}) == {"a", "b"}
    assert routes.settled(a2)
    assert not routes.settled(a2)  # settled once only
    assert not routes.settled(routed_job("9", "c"))  # paused nothing
    assert routes.paused({}) == {"b"}
    # A claim that read the epoch before these failures hands back what it got for a and b;
    # one that read it after, only for b (still paused).
    assert routes.failed_since("a", before) and routes.failed_since("b", before)
    assert not routes.failed_since("a", routes.epoch) and routes.failed_since("b", routes.epoch)
    assert not routes.failed_since("c", before)


# The stub worker: threads=4, max_per_route=2, so a route holds 2 in flight and 2 claimed behind.


def publish(store: Store, endpoint: str, count: int, subscription: str) -> None:
    topic = f"t-{subscription}"
    strategy = NotifyStrategy.EXPONENTIAL_DECAY_RETRY
    store.topics.create_topic(topic, 65536, False)
    store.topics.subscribe(Subscription(topic, subscription, endpoint, notify_strategy=strategy))
    for i in range(count):
        message = TopicMessage(f"M{subscription}{i}", topic, f"body {i}", "X", store.now_ms())
        store.topics.publish(message)


class RoutedSender:
    """Fails every push to DOWN with ``result``, answers the others; records each push."""

    def __init__(self, result: PushResult) -> None:
        self.result = result
        self.routes: list[str] = []

    def send(self, job: DeliveryJob) -> PushResult:
        self.routes.append(job.subscription.endpoint)
        return self.result if job.subscription.endpoint == DOWN else ok()


def leased(store: Store) -> int:
    return int(
        store.deliveries.database.read(
            lambda c: c.execute(
                "SELECT COUNT(*) AS n FROM deliveries WHERE lease_owner IS NOT NULL"
            ).fetchone()["n"]
        )
    )


@pytest.mark.parametrize(
    "result",
    [failed(500), PushResult(None, PushOutcome.TIMEOUT, "timed out", 5000.0)],
    ids=["500", "timeout"],
)
def test_attempts_stop_at_the_breakers_threshold(
    memory_store: Store, clock: Clock, result: PushResult
) -> None:
    """Without the pause, the two deliveries claimed behind the tenth failure (admitted while
    the breaker was closed) were pushed as well: 12 attempts where 10 open it."""
    store = memory_store
    publish(store, DOWN, 20, "down")
    sender = RoutedSender(result)
    worker = stub_worker(store, sender)
    try:
        for _ in range(20):  # the clock stands still: only first attempts are due
            worker.dispatch_once()
            worker.drain()
            # Nothing claimed waits behind a failure: handed back, not leased.
            assert leased(store) == 0
        assert store.deliveries.breakers()[0]["t-down/down"].state is State.OPEN
        assert len(sender.routes) == BreakerPolicy().min_attempts
    finally:
        worker.stop(1)


def test_the_healthy_route_is_not_paused(memory_store: Store, clock: Clock) -> None:
    store = memory_store
    publish(store, DOWN, 20, "down")
    publish(store, UP, 20, "up")
    sender = RoutedSender(failed(500))
    worker = stub_worker(store, sender)
    try:
        for _ in range(30):
            worker.dispatch_once()
            worker.drain()
        assert sender.routes.count(UP) == 20
        assert sender.routes.count(DOWN) == BreakerPolicy().min_attempts
    finally:
        worker.stop(1)


class SettleGate:
    """The delivery store, its settles held until the test opens the gate (the worker takes
    any object with the store's methods)."""

    def __init__(self, inner: DeliveryStore) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def settle(self, owner: str, settlements: Sequence[Settlement]) -> list[Filed | None]:
        self.waiting.set()
        self.gate.wait(10)
        return self.inner.settle(owner, settlements)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_route_is_not_claimed_again_until_its_failures_are_recorded(
    memory_store: Store, clock: Clock
) -> None:
    store = memory_store
    publish(store, DOWN, 6, "down")
    publish(store, UP, 6, "up")
    sender = RoutedSender(failed(500))
    gated = SettleGate(store.deliveries)
    options = WorkerOptions(threads=4, max_per_route=2, lease_seconds=30)
    worker = DeliveryWorker(gated, SenderRegistry(sender), options)  # type: ignore[arg-type]
    try:
        worker.dispatch_once()  # 2 pushes to DOWN, 2 claimed behind them
        assert gated.waiting.wait(5)
        # The failures are not recorded yet: DOWN's claimed deliveries were handed back, and
        # claims leave the route out; UP goes on (its own outcomes wait behind the gate too).
        for _ in range(200):
            worker.dispatch_once()
            if sender.routes.count(UP) == 6:
                break
            # The pool's threads finishing their pushes: real time, not the clock's.
            threading.Event().wait(0.01)
        assert sender.routes.count(DOWN) == 2
        assert sender.routes.count(UP) == 6
        gated.gate.set()
        worker.drain()
        worker.dispatch_once()  # recorded: the breaker (2 failures, closed) lets it go on
        worker.drain()
        assert sender.routes.count(DOWN) == 4
    finally:
        gated.gate.set()
        worker.stop(1)


def test_with_the_breaker_off_nothing_is_paused(memory_store: Store, clock: Clock) -> None:
    store = memory_store
    store.deliveries.breaker = BreakerPolicy(enabled=False)
    publish(store, DOWN, 20, "down")
    sender = ScriptedSender(then=failed(500))
    worker = stub_worker(store, sender)
    try:
        worker.dispatch_once()
        worker.drain()
        assert leased(store) == 2  # claimed behind the failures and kept, as always
    finally:
        worker.stop(1)


def test_after_a_timeout_a_route_waits_for_the_pushes_it_had_in_flight_then() -> None:
    """A hanging endpoint's first pushes time out together but come back a few at a time:
    resumed once the first few were settled, the route took as many more before the rest came
    back and opened the breaker (bench/endpoint_health.py, hang)."""
    routes = FailingRoutes()
    first = routed_job("1", "a")
    routes.failed(first, wave=True)
    assert routes.settled(first)
    assert routes.paused({"a": 3, "b": 1}) == {"a"}  # three from before still out
    assert routes.paused({"a": 1}) == {"a"}
    assert routes.paused({}) == frozenset()  # all back, and no failure among them unsettled
    assert routes.paused({"a": 2}) == frozenset()  # what it takes now pauses nothing


def test_a_failure_answered_at_once_does_not_wait_for_its_wave() -> None:
    routes = FailingRoutes()
    first = routed_job("1", "a")
    routes.failed(first)
    assert routes.paused({"a": 3}) == {"a"}
    assert routes.settled(first)
    assert routes.paused({"a": 3}) == frozenset()


@pytest.mark.parametrize(
    ("outcome", "waits"),
    [("timeout", True), ("connection_error", False), ("http_error", False)],
)
def test_only_a_timeout_waits_for_its_wave(outcome: str, waits: bool) -> None:
    assert waits_for_wave(settlement(outcome, 500 if outcome == "http_error" else None)) is waits


class SlowSecond(RoutedSender):
    """Fails every push to DOWN with ``result``; the second one comes back only once the test
    lets it go (the rest of a first wave, still out)."""

    def __init__(self, result: PushResult) -> None:
        super().__init__(result)
        self.second_started = threading.Event()
        self.release = threading.Event()

    def send(self, job: DeliveryJob) -> PushResult:
        result = super().send(job)
        if self.routes.count(DOWN) == 2 and job.subscription.endpoint == DOWN:
            self.second_started.set()
            self.release.wait(10)
        return result


@pytest.mark.parametrize(
    ("result", "while_out"),
    [(PushResult(None, PushOutcome.TIMEOUT, "timed out", 5000.0), 2), (failed(500), 8)],
    ids=["timeout: nothing more", "500: goes on"],
)
def test_after_a_timeout_a_route_is_not_claimed_again_while_pushes_from_before_are_out(
    memory_store: Store, clock: Clock, result: PushResult, while_out: int
) -> None:
    """After a 500 the route resumes once the failure is recorded (the breaker, under its
    threshold, lets it go on: all 8 pushed while the second is out); after a timeout it waits
    for the second to come back (2)."""
    store = memory_store
    publish(store, DOWN, 8, "down")
    sender = SlowSecond(result)
    worker = stub_worker(store, sender)
    try:
        worker.dispatch_once()  # 2 pushes to DOWN: the first fails at once, the second is held
        assert sender.second_started.wait(5)
        # The first failure gets recorded meanwhile: 0.5 s at least, up to 5 s for the 500's 8.
        for n in range(500):
            worker.dispatch_once()
            threading.Event().wait(0.01)  # the pool's threads: real time, not the clock's
            if n >= 49 and sender.routes.count(DOWN) >= while_out:
                break
        assert sender.routes.count(DOWN) == while_out
        sender.release.set()
        worker.drain()
        worker.dispatch_once()  # both back and recorded: the breaker (closed) lets it go on
        worker.drain()
        assert sender.routes.count(DOWN) > 2
    finally:
        sender.release.set()
        worker.stop(1)


class Holding(RoutedSender):
    """Holds every push to DOWN until the test lets them go (an endpoint that hangs), answers
    the others at once."""

    def __init__(self) -> None:
        super().__init__(PushResult(None, PushOutcome.TIMEOUT, "timed out", 5000.0))
        self.release = threading.Event()

    def send(self, job: DeliveryJob) -> PushResult:
        result = super().send(job)
        if job.subscription.endpoint == DOWN:
            self.release.wait(10)
        return result


@pytest.mark.parametrize(("breaker", "at_once"), [(True, 2), (False, 4)], ids=["on", "off"])
def test_a_route_not_yet_heard_from_starts_with_its_first_share(
    memory_store: Store, clock: Clock, breaker: bool, at_once: int
) -> None:
    """An endpoint that hangs from the start ties up its first share of threads (2 here), not
    its full share (4); one that answers has its full share after its first answer."""
    store = memory_store
    store.deliveries.breaker = BreakerPolicy(enabled=breaker)
    publish(store, DOWN, 8, "down")
    publish(store, UP, 8, "up")
    sender = Holding()
    worker = stub_worker(store, sender, threads=8, max_per_route=4, first_per_route=2)
    try:
        for _ in range(500):  # UP answers; DOWN's pushes stay out (bounded: 5 s at most)
            worker.dispatch_once()
            if sender.routes.count(UP) == 8:
                break
            threading.Event().wait(0.01)  # the pool's threads: real time, not the clock's
        for _ in range(10):  # and DOWN is offered its deliveries again meanwhile
            worker.dispatch_once()
        assert sender.routes.count(UP) == 8
        assert sender.routes.count(DOWN) == at_once
    finally:
        sender.release.set()
        worker.stop(1)
