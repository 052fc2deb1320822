"""The delivery worker on the in-memory store with an injected clock and in-process senders.

Time never passes for real here: the test moves the clock to each scheduled attempt, so both
retry schedules run to exhaustion (EXPONENTIAL_DECAY_RETRY spans a day) in well under a second.
"""

from __future__ import annotations

import itertools
import random
import threading

import pytest

from gateway.delivery.polling import quiet_backoff
from gateway.delivery.records import DeliveryJob
from gateway.errors import PermanentDeliveryError
from gateway.errors.mns import MNSError
from gateway.protocol.notify import ContentFormat, NotifyStrategy
from gateway.pushing.senders import SenderRegistry
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.records import QueueAttributes
from gateway.store.base import Store
from gateway.store.deliveries import DeliveryStore
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock
from tests.support.stub import ScriptedSender, failed, run_until_idle, stub_worker

T0 = 1_800_000_000.0


@pytest.fixture()
def store(memory_store: Store) -> Store:
    return memory_store


make_worker = stub_worker


def publish(
    store: Store,
    strategy: NotifyStrategy = NotifyStrategy.BACKOFF_RETRY,
    endpoint: str = "http://a.test/",
    count: int = 1,
    subscription: str = "s",
) -> list[str]:
    """``count`` messages on a topic of their own with one subscription, ``subscription``."""
    topic = f"t-{subscription}"
    store.topics.create_topic(topic, 65536, False)
    store.topics.subscribe(Subscription(topic, subscription, endpoint, notify_strategy=strategy))
    ids = []
    for i in range(count):
        message_id = f"M{subscription}{i}"
        store.topics.publish(TopicMessage(message_id, topic, f"body {i}", "X", store.now_ms()))
        ids.append(message_id)
    return ids


def test_success_removes_the_delivery(store: Store, clock: Clock) -> None:
    sender = ScriptedSender()
    publish(store)
    worker = make_worker(store, sender)
    assert run_until_idle(worker, clock, store) == 1
    assert store.deliveries.due_count() == 0 and store.deliveries.list_dead_letters().items == []
    assert sender.jobs[0].message.body == "body 0" and sender.jobs[0].attempts == 0


def test_backoff_retry_three_retries_then_dead_letter(store: Store, clock: Clock) -> None:
    sender = ScriptedSender(then=failed(503))
    publish(store, NotifyStrategy.BACKOFF_RETRY)
    worker = make_worker(store, sender)
    assert run_until_idle(worker, clock, store) == 4
    gaps = [
        b.attempted_at_ms - a.attempted_at_ms for a, b in itertools.pairwise(letter_attempts(store))
    ]
    assert len(gaps) == 3 and all(10_000 <= gap <= 20_000 for gap in gaps)
    (letter,) = store.deliveries.list_dead_letters().items
    assert letter.reason == "retries exhausted"
    assert [a.status_code for a in letter.attempts] == [503] * 4


def letter_attempts(store: Store) -> list:  # type: ignore[type-arg]
    return list(store.deliveries.list_dead_letters().items[0].attempts)


def test_exponential_decay_retry_runs_a_day_then_dead_letter(store: Store, clock: Clock) -> None:
    sender = ScriptedSender(then=PushResult(None, PushOutcome.CONNECTION_ERROR, "refused", 0.1))
    publish(store, NotifyStrategy.EXPONENTIAL_DECAY_RETRY)
    worker = make_worker(store, sender)
    assert run_until_idle(worker, clock, store) == 177
    attempts = letter_attempts(store)
    assert len(attempts) == 177
    assert attempts[-1].attempted_at_ms - attempts[0].attempted_at_ms == 86_015_000
    gaps = [b.attempted_at_ms - a.attempted_at_ms for a, b in itertools.pairwise(attempts)]
    assert gaps[:10] == [1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000]


def test_retry_then_success_keeps_no_dead_letter(store: Store, clock: Clock) -> None:
    sender = ScriptedSender(failed(500), PushResult(None, PushOutcome.TIMEOUT, "timed out", 5000))
    publish(store, NotifyStrategy.EXPONENTIAL_DECAY_RETRY)
    assert run_until_idle(make_worker(store, sender), clock, store) == 3
    assert [job.attempts for job in sender.jobs] == [0, 1, 2]
    assert store.deliveries.list_dead_letters().items == []


def test_retry_scale_shrinks_intervals(store: Store, clock: Clock) -> None:
    sender = ScriptedSender(failed())
    publish(store, NotifyStrategy.EXPONENTIAL_DECAY_RETRY)
    worker = make_worker(store, sender, retry_scale=0.01)
    worker.dispatch_once()
    worker.drain()
    assert store.deliveries.next_due_ms() == int(T0 * 1000) + 10  # 1 s x 0.01


def test_permanent_error_is_dead_lettered_at_once(store: Store, clock: Clock) -> None:
    class Unreachable:
        def send(self, job: DeliveryJob) -> PushResult:
            raise PermanentDeliveryError("no sms here")

    publish(store)
    assert run_until_idle(make_worker(store, Unreachable()), clock, store) == 1
    (letter,) = store.deliveries.list_dead_letters().items
    assert letter.reason == "no sms here" and len(letter.attempts) == 1


def test_replay_redelivers_with_the_same_message_id(store: Store, clock: Clock) -> None:
    sender = ScriptedSender(failed(), failed(), failed(), failed())
    (message_id,) = publish(store)
    worker = make_worker(store, sender)
    run_until_idle(worker, clock, store)
    (letter,) = store.deliveries.list_dead_letters().items
    store.deliveries.replay_dead_letter(letter.id)
    run_until_idle(worker, clock, store)
    assert sender.jobs[-1].message.id == message_id and sender.jobs[-1].attempts == 0
    assert store.deliveries.get_dead_letter(letter.id).replayed_at_ms == int(clock.now * 1000)
    assert store.deliveries.due_count() == 0


def test_a_second_replay_needs_force(store: Store, clock: Clock) -> None:
    """Failed before: a second replay silently queued a second delivery of the message."""
    sender = ScriptedSender(*[failed()] * 8)
    publish(store)
    run_until_idle(make_worker(store, sender), clock, store)
    (letter,) = store.deliveries.list_dead_letters().items
    first = store.deliveries.replay_dead_letter(letter.id, "r1")
    with pytest.raises(MNSError) as refused:
        store.deliveries.replay_dead_letter(letter.id, "r2")
    assert refused.value.code == "DeadLetterAlreadyReplayed" and refused.value.status == 409
    assert store.deliveries.due_count() == 1
    assert store.deliveries.replay_dead_letter(letter.id, "r3", if_replayed_at=None) != first
    assert store.deliveries.due_count() == 2


def test_slow_route_cannot_take_every_thread(store: Store, clock: Clock) -> None:
    slow, fast = ScriptedSender(), ScriptedSender()
    slow.gate = threading.Event()

    class ByRoute:
        def send(self, job: DeliveryJob) -> PushResult:
            return (slow if "slow" in job.route else fast).send(job)

    publish(store, endpoint="http://slow.test/", count=6, subscription="slow")
    publish(store, endpoint="http://fast.test/", count=6, subscription="fast")
    worker = make_worker(store, ByRoute(), threads=4, max_per_route=2)
    try:
        for _ in range(50):  # each round starts what fits, then waits for the fast route to move
            fast.progress.clear()
            worker.dispatch_once()
            if len(fast.jobs) == 6:
                break
            fast.progress.wait(2)
        assert len(fast.jobs) == 6
        assert len(slow.jobs) == 2  # never more than max_per_route on the stuck route
    finally:
        slow.gate.set()
        worker.drain()
    run_until_idle(worker, clock, store)
    assert len(slow.jobs) == 6


def test_lapsed_lease_is_claimed_by_another_worker(store: Store, clock: Clock) -> None:
    publish(store)
    crashed = store.deliveries.claim(
        "dead-worker", lease_seconds=30, limit=10, skip_routes=frozenset()
    )
    assert len(crashed) == 1
    sender = ScriptedSender()
    worker = make_worker(store, sender)
    assert worker.dispatch_once() == 0  # still leased
    clock.now += 31
    assert run_until_idle(worker, clock, store) == 1
    assert sender.jobs[0].message.id == crashed[0].message.id


def test_expired_messages_become_dead_letters(store: Store, clock: Clock) -> None:
    publish(store)
    clock.now += 86_400 + 1
    assert len(store.deliveries.expire()) == 1
    assert store.deliveries.list_dead_letters().items[0].reason == "expired"
    assert store.topics.get_topic("t-s")[1] == 0


class ClaimCountingStore(DeliveryStore):
    """The real delivery store, noting how many deliveries each claim returned."""

    def __init__(self, store: Store) -> None:
        super().__init__(store.database, store.clock, wakeups=store.wakeups, queues=store.queues)
        self.claims: list[int] = []

    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        jobs = super().claim(owner, lease_seconds, limit, skip_routes)
        self.claims.append(len(jobs))
        return jobs


def test_a_busy_route_is_claimed_in_batches(store: Store, clock: Clock) -> None:
    counting = ClaimCountingStore(store)
    publish(store, count=96)
    sender = ScriptedSender()
    options = WorkerOptions(threads=8, max_per_route=8, lease_seconds=30)
    worker = DeliveryWorker(counting, SenderRegistry(sender), options, rng=random.Random(7))
    worker.start()
    try:
        for _ in range(200):  # bounded: 10 s at most
            if counting.due_count() == 0:
                break
            sender.progress.wait(0.05)
            sender.progress.clear()
    finally:
        worker.stop()
    assert len(sender.jobs) == 96
    # Refilled at half of what the route may hold (16): batches of 8, not one per push, and
    # no stream of empty claims while the route is full.
    assert sum(1 for n in counting.claims if n) <= 96 // 8 + 2
    assert sum(1 for n in counting.claims if not n) <= 5


def _claim_all(store: Store, owner: str) -> list[str]:
    return [job.delivery_id for job in store.deliveries.claim(owner, 30, 100, frozenset())]


def test_stop_lets_pushes_in_flight_finish_and_hands_back_unstarted_ones(
    store: Store, clock: Clock
) -> None:
    sender = ScriptedSender()
    sender.gate = threading.Event()
    publish(store, count=3)
    worker = make_worker(store, sender)  # two pushes per route: the third waits, claimed
    assert worker.dispatch_once() == 2
    stopper = threading.Thread(target=worker.stop, args=(10.0,))
    stopper.start()
    try:
        handed_back: list[str] = []
        for _ in range(500):  # bounded: 5 s at most
            handed_back = _claim_all(store, "another-process")
            if handed_back or not stopper.is_alive():
                break
            stopper.join(0.01)
        assert len(handed_back) == 1  # at once, not when its lease lapses
        assert stopper.is_alive()  # still waiting for the two pushes in flight
    finally:
        sender.gate.set()
        stopper.join(10)
    assert not stopper.is_alive() and len(sender.jobs) == 2
    clock.now += 31  # every lease lapses: only the handed-back delivery is left to do
    assert store.deliveries.due_count() == 1


def test_stop_gives_up_at_its_deadline_and_the_push_keeps_its_lease(
    store: Store, clock: Clock
) -> None:
    sender = ScriptedSender()
    sender.gate = threading.Event()
    publish(store)
    worker = make_worker(store, sender)
    assert worker.dispatch_once() == 1
    try:
        worker.stop(timeout=0.05)
        assert _claim_all(store, "another-process") == []
        clock.now += 31
        assert len(_claim_all(store, "another-process")) == 1  # made again, not lost
    finally:
        sender.gate.set()


# subscription dead-letter queues --------------------------------------------------------------
class RecordingLog:
    def __init__(self) -> None:
        self.records: list[dict[str, object]] = []

    def write(self, record: dict[str, object]) -> None:
        self.records.append(dict(record))

    def close(self) -> None:
        return None


def with_dead_letter_queue(store: Store, queue: str = "dlq") -> None:
    store.queues.create_queue(queue, QueueAttributes())
    store.topics.create_topic("t", 65536, True)
    policy = DeadLetterPolicy(queue)
    store.topics.subscribe(
        Subscription(
            "t",
            "s",
            "http://a.test/",
            notify_content_format=ContentFormat.SIMPLIFIED,
            dead_letter_policy=policy,
        )
    )


def test_exhausted_pushes_also_go_to_the_dead_letter_queue(store: Store, clock: Clock) -> None:
    with_dead_letter_queue(store)
    attributes = {"MessageGroupId": "g", "UserProperties": [{"Name": "k", "Value": "v"}]}
    store.topics.publish(TopicMessage("M1", "t", "lost", "X", store.now_ms(), None, attributes))
    log = RecordingLog()
    worker = DeliveryWorker(
        store.deliveries,
        SenderRegistry(ScriptedSender(then=failed())),
        WorkerOptions(threads=2, max_per_route=2, lease_seconds=30),
        rng=random.Random(7),
        oplog=log,
    )
    run_until_idle(worker, clock, store)
    (letter,) = store.deliveries.list_dead_letters().items
    (dead,) = store.queues.receive("dlq", 16, 0).messages
    assert (letter.dead_letter_queue, letter.dead_letter_queue_message_id) == (
        "dlq",
        dead.message_id,
    )
    assert (dead.body, dead.properties["MessageGroupId"]) == ("lost", "g")
    assert dead.properties["UserProperties"] == [{"Name": "k", "Value": "v"}]
    system = {p["Name"]: p["Value"] for p in dead.properties["SystemProperties"]}
    assert system["DLQSourceArn"] == "acs:mns:local:1234567890:/topics/t/subscriptions/s"
    assert (
        worker.metrics.registry.get_sample_value(
            "mns_dead_letter_queue_messages_total",
            {"source": "subscription", "dead_letter_queue": "dlq"},
        )
        == 1
    )
    (record,) = [r for r in log.records if r["Action"] == "DeadLetter"]
    assert (record["DeadLetterQueue"], record["DeadLetterMessageId"]) == ("dlq", dead.message_id)


def test_expired_deliveries_go_there_too_and_a_missing_queue_is_noted(
    store: Store, clock: Clock
) -> None:
    with_dead_letter_queue(store)
    store.topics.publish(TopicMessage("M1", "t", "old", "X", store.now_ms()))
    clock.now += 86_400 + 1
    (filed,) = store.deliveries.expire()
    (dead,) = store.queues.receive("dlq", 16, 0).messages
    assert (filed.dead_letter_queue, filed.dead_letter_queue_message_id) == ("dlq", dead.message_id)
    store.queues.delete_queue("dlq")  # gone since the subscription named it
    store.topics.publish(TopicMessage("M2", "t", "older", "X", store.now_ms()))
    clock.now += 86_400 + 1
    (filed,) = store.deliveries.expire()
    assert (filed.dead_letter_queue, filed.dead_letter_queue_message_id) == ("dlq", None)
    assert len(store.deliveries.list_dead_letters().items) == 2  # both kept here all the same


class HangingClaims(DeliveryStore):
    """The store's deliveries, whose claims hang once ``hang`` is set until ``resume`` is:
    a database that stopped answering. ``claiming`` is set whenever a claim starts and
    ``hanging`` when one hangs."""

    def __init__(self, deliveries: DeliveryStore) -> None:
        super().__init__(
            deliveries.database,
            deliveries.clock,
            wakeups=deliveries.wakeups,
            queues=deliveries.queues,
        )
        self.hang, self.resume = threading.Event(), threading.Event()
        self.claiming, self.hanging = threading.Event(), threading.Event()

    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        self.claiming.set()
        if self.hang.is_set():
            self.hanging.set()
            self.resume.wait(10)
        return super().claim(owner, lease_seconds, limit, skip_routes)


def test_a_dispatcher_stuck_in_a_store_call_is_not_running(store: Store) -> None:
    """A worker whose database stopped answering mid-claim pushes nothing: after
    ``stall_seconds`` its liveness probe says so, and once the call returns it is alive again."""
    ticks = Clock()
    deliveries = HangingClaims(store.deliveries)
    options = WorkerOptions(threads=4, max_per_route=2, stall_seconds=60)
    sender = SenderRegistry(ScriptedSender())  # type: ignore[arg-type]
    worker = DeliveryWorker(deliveries, sender, options, monotonic=ticks)
    worker.start()
    try:
        deliveries.hang.set()
        worker.wake()
        assert deliveries.hanging.wait(5)
        ticks.now += 59
        assert worker.running()  # a slow store call, not yet a stuck one
        ticks.now += 2
        assert not worker.running()
        # Nothing else claims while the dispatcher hangs: the next claim is its next round.
        deliveries.hang.clear()
        deliveries.claiming.clear()
        deliveries.resume.set()
        assert deliveries.claiming.wait(5)
        assert worker.running()
    finally:
        deliveries.resume.set()
        worker.stop(5.0)


def test_running_is_whether_the_dispatcher_lives(store: Store) -> None:
    """What ``mns-gateway worker``'s liveness probe reports (docs/deploy.md#delivery-workers)."""
    worker = make_worker(store, ScriptedSender())
    assert not worker.running()  # not started yet
    worker.start()
    try:
        assert worker.running()
    finally:
        worker.stop(5.0)
    assert not worker.running()


def test_an_idle_dispatcher_polls_less_and_less_but_never_past_a_due_retry() -> None:
    """With nothing due, the poll only backs up a lost wake-up: it doubles up to the quiet
    wait. A retry due sooner is slept to exactly; something due but not claimed (leased by
    another process, rate-limited) keeps the short poll and leaves the quiet wait as it was."""
    waits, quiet = [], 0.25
    for _ in range(6):
        wait, quiet = quiet_backoff(None, quiet, poll=0.25, quiet_max=2.0)
        waits.append(wait)
    assert waits == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    assert quiet_backoff(0.3, 2.0, poll=0.25, quiet_max=2.0) == (0.3, 2.0)
    assert quiet_backoff(5.0, 1.0, poll=0.25, quiet_max=2.0) == (1.0, 2.0)
    assert quiet_backoff(0.0, 2.0, poll=0.1, quiet_max=2.0) == (0.1, 2.0)
    assert quiet_backoff(-3.0, 0.5, poll=0.25, quiet_max=2.0) == (0.25, 0.5)
