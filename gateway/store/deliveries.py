"""Delivery operations over a :class:`~gateway.store.base.Database`: claims, outcomes, dead
letters, replays and the daily expiry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.breaker.state import Breaker, BreakerPolicy, Override, State, Transition
from gateway.delivery.dead_letter_pushes import dead_letter_message
from gateway.delivery.push_limits import grant_holds
from gateway.delivery.records import Attempt, DeadLetter, DeliveryJob, Filed, Settlement
from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.store import retention
from gateway.store.backends.database import Database
from gateway.store.breakers import BreakerStore, ClaimBreakers
from gateway.store.notify.notifier import Wakeups
from gateway.store.queues import QueueStore
from gateway.store.sql import (
    dead_letter_sql,
    delivered_sql,
    delivery_sql,
    message_delivery_sql,
    partitions_sql,
    rates_sql,
    retention_sql,
)
from gateway.store.sql.connection import Connection
from gateway.store.sql.push_limit_sql import grant_claimed, take_push
from gateway.store.sql.together import together
from gateway.topics.records import subscription_resource


class DeliveryStore:
    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        wakeups: Wakeups,
        queues: QueueStore,
        region: str = "local",
        account_id: str = "1234567890",
        breaker: BreakerPolicy | None = None,
        events_topic: str = "",
        history_retention: int = retention_sql.DEFAULT_HISTORY_RETENTION,
    ) -> None:
        self.database = database
        #: ``MNS_GATEWAY_HISTORY_RETENTION`` in seconds (:func:`history_kept_since`).
        self.history_retention = history_retention
        self._passes = retention.Passes(partitions_sql.pass_interval_ms(history_retention))
        #: Subscription endpoints' breakers (docs/delivery.md#endpoint-health): all the store
        #: does for them, inside the claims' and settles' transactions.
        self.breaker_store = BreakerStore(
            breaker or BreakerPolicy(), wakeups, queues.new_message_id
        )
        self.breaker_store.events_topic = events_topic
        self.clock = clock
        self.wakeups = wakeups
        self.queues = queues
        self.region = region
        self.account_id = account_id
        # Limited subscriptions whose second is used up, and when it ends: claims leave their
        # deliveries out until then, rather than every claim for the rest of the second leasing
        # a batch of the backlog only to hand it all back
        # (docs/benchmarks.md#queue-receive-rate-limits). Per process: the count itself is in
        # the store, so a replica that has not learned it yet loses one batch's work, never a
        # grant.
        self._used_up: dict[str, int] = {}

    @property
    def breaker(self) -> BreakerPolicy:
        """When the subscriptions' breakers open and for how long (the settings')."""
        return self.breaker_store.policy

    @breaker.setter
    def breaker(self, policy: BreakerPolicy) -> None:
        self.breaker_store.policy = policy

    @property
    def events_topic(self) -> str:
        """A topic of this gateway each breaker transition is published to ("" for none)."""
        return self.breaker_store.events_topic

    @events_topic.setter
    def events_topic(self, topic: str) -> None:
        self.breaker_store.events_topic = topic

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # claims -----------------------------------------------------------------------------------
    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        now = self.now_ms()
        lease_ms = int(lease_seconds * 1000)
        used_up = {name: until for name, until in self._used_up.items() if until > now}
        views: list[ClaimBreakers] = []

        def work(conn: Connection) -> list[DeliveryJob]:
            # Endpoints whose breaker is open (or probing) are left out: their deliveries
            # wait, untried, and are claimed in due order once it closes.
            view = self.breaker_store.before_claim(conn, now)
            views[:] = [view]
            jobs = delivery_sql.claim(
                conn, owner, now, lease_ms, limit, skip_routes, set(used_up), held=view.blocked
            )
            jobs = self.breaker_store.admit_claimed(conn, owner, jobs, view, now, lease_ms)
            # Subscriptions' TenantRateLimitPolicy: the batch's grants, in the same transaction;
            # what is over the limit waits for the next second.
            granted = grant_claimed(conn, jobs, now)
            used_up.update(granted.used_up)
            return granted.jobs

        jobs = self.database.write(work, durable=False)
        self._used_up = used_up
        self.breaker_store.claimed(views[0])
        return jobs

    def take_push(self, job: DeliveryJob) -> bool:
        """Whether ``job``'s subscription may push it now: yes while the grant it was claimed
        with holds (no transaction); past it, it takes its place in this second's count again,
        or waits for the next second (:func:`~gateway.store.sql.push_limit_sql.take_push`)."""
        now = self.now_ms()
        if grant_holds(job.granted_second, now):
            return True
        return self.database.write(lambda c: take_push(c, job, now), durable=False)

    def release(self, owner: str, delivery_ids: list[str]) -> None:
        self.database.write(lambda c: delivery_sql.release(c, owner, delivery_ids), durable=False)

    def next_due_ms(self) -> int | None:
        return self.database.read(delivery_sql.next_due_ms)

    def due_count(self) -> int:
        now = self.now_ms()
        return self.database.read(lambda c: delivery_sql.due_count(c, now))

    # outcomes ---------------------------------------------------------------------------------
    def settle(self, owner: str, settlements: Sequence[Settlement]) -> list[Filed | None]:
        """Record many attempts' outcomes in one transaction; where a delivery was moved to the
        dead letters, what was filed.

        Successes, the common case, are removed together: two statements for the whole batch,
        and one more keeps them in the delivered history (:mod:`delivered_sql`); with the live
        figures' two, independent writes that PostgreSQL runs as one statement (:func:`together`).
        """
        now = self.now_ms()
        transitions: list[Transition] = []

        def work(conn: Connection) -> list[Filed | None]:
            earlier = delivered_sql.earlier_attempts(conn, settlements)
            with together(conn) as writes:
                delivered_sql.record(writes, settlements, earlier)
                delivery_sql.complete(writes, delivery_sql.completed_ids(settlements))
                rates_sql.record(writes, _outcomes(settlements, now))
            filed = [
                None
                if s.dead_reason is None
                else self._dead_letter(conn, s.job, s.attempt, s.dead_reason, now)
                for s in settlements
            ]
            delivery_sql.retry_all_later(conn, owner, _retries(settlements))
            transitions[:] = self.breaker_store.record_settled(conn, settlements, now)
            return filed

        filed = self.database.write(work, durable=False)
        self._wake_dead_letter_queues(filed)
        self.breaker_store.announce(transitions)
        return filed

    def complete_into_queue(
        self,
        delivery_id: str,
        queue_name: str,
        body: str,
        properties: Mapping[str, Any] | None = None,
    ) -> str:
        """Enqueue ``body`` into a local queue and complete the delivery in one transaction:
        neither lost nor enqueued twice. The new message's id; ``MNSError`` from the queue."""
        now_ms = self.now_ms()

        def work(conn: Connection) -> str:
            message_id = self.queues.enqueue_in(
                conn, queue_name, body, now_ms=now_ms, properties=properties
            )
            delivery_sql.complete(conn, [delivery_id])
            return message_id

        message_id = self.database.write(work)
        self.queues.notify(queue_name, 1)
        return message_id

    def expire(self, limit: int = 500) -> list[Filed]:
        """Dead-letter deliveries whose message outlived retention; purge unneeded old messages
        and old delivered history (a few bounded batches, each its own transaction)."""
        now = self.now_ms()

        def work(conn: Connection) -> list[Filed | None]:
            jobs = dead_letter_sql.expired_jobs(conn, now, limit)
            holding = self.breaker_store.holding(conn)
            letters = [
                self._dead_letter(
                    conn, job, None, self.breaker_store.expiry_reason(job, holding), now
                )
                for job in jobs
            ]
            self.breaker_store.tidy(conn, holding)
            dead_letter_sql.purge_orphans(conn, now)
            return letters

        filed = self.database.write(work)
        self._wake_dead_letter_queues(filed)
        self.retain(now)
        return [letter for letter in filed if letter]

    def history_kept_since(self, now_ms: int) -> int:
        """The oldest time (epoch ms) the delivered history reaches back to at ``now_ms``
        (:func:`retention_sql.kept_since`): what a replay of a delivered message can find."""
        return retention_sql.kept_since(now_ms, self.history_retention)

    def retain(self, now_ms: int) -> int:
        """Forget the history past :meth:`history_kept_since` (:func:`retention.retain`)."""
        self._passes.ran(now_ms)
        return retention.retain(self.database, now_ms, self.history_retention)

    def retain_if_due(self) -> int | None:
        """:meth:`retain` if a pass is due (:class:`retention.Passes`), which the delivery
        workers ask on every round; how many rows it deleted, ``None`` when none was due."""
        now = self.now_ms()
        if not self._passes.take(now):
            return None
        return retention.retain(self.database, now, self.history_retention)

    def _dead_letter(
        self,
        conn: Connection,
        job: DeliveryJob,
        attempt: Attempt | None,
        reason: str,
        now_ms: int,
    ) -> Filed | None:
        def forward(conn: Connection, job: DeliveryJob) -> tuple[str, str | None]:
            """Into the subscription's dead-letter queue; a queue that is gone or refuses
            the message leaves it in the gateway's dead letters only."""
            queue = job.subscription.dead_letter_queue or ""
            message = dead_letter_message(job, region=self.region, account_id=self.account_id)
            try:
                message_id = self.queues.enqueue_in(
                    conn, queue, message.body, now_ms=now_ms, properties=message.properties
                )
            except MNSError:
                return queue, None
            return queue, message_id

        return dead_letter_sql.dead_letter(conn, job, attempt, reason, now_ms, forward)

    def _wake_dead_letter_queues(self, filed: Sequence[Filed | None]) -> None:
        for queue in {f.dead_letter_queue for f in filed if f and f.dead_letter_queue_message_id}:
            self.queues.notify(queue)  # type: ignore[arg-type]

    # endpoint health ----------------------------------------------------------------------------
    def on_breaker_transitions(self, callback: Callable[[list[Transition]], None]) -> None:
        """Call ``callback`` with the breaker transitions this process makes, once committed."""
        self.breaker_store.on_transitions(callback)

    def remove_breaker_listener(self, callback: Callable[[list[Transition]], None]) -> None:
        self.breaker_store.remove_listener(callback)

    def breakers(self) -> tuple[dict[str, Breaker], dict[str, int]]:
        """Every kept breaker (``topic/subscription``), and how many deliveries wait, due, for
        each; a subscription not listed is closed and healthy."""
        now = self.now_ms()
        return self.database.read(lambda c: self.breaker_store.read(c, now))

    def override_breaker(
        self, topic_name: str, subscription_name: str, override: Override | None
    ) -> Breaker:
        """Force a subscription's breaker closed, hold it open, or (``None``) let it decide."""
        now = self.now_ms()
        resource = subscription_resource(topic_name, subscription_name)

        breaker, transitions = self.database.write(
            lambda c: self.breaker_store.override(c, resource, override, now)
        )
        self.breaker_store.announce(transitions)
        if breaker.effective() is State.CLOSED:
            self.wakeups.announce_deliveries()
        return breaker

    # dead letters -----------------------------------------------------------------------------
    def list_dead_letters(
        self,
        marker: str = "",
        limit: int = 100,
        topic_name: str | None = None,
        *,
        subscription_name: str | None = None,
        since_ms: int | None = None,
    ) -> Page[DeadLetter]:
        return self.database.read(
            lambda c: dead_letter_sql.list_dead_letters(
                c, marker, limit, topic_name, subscription_name=subscription_name, since_ms=since_ms
            )
        )

    def get_dead_letter(self, letter_id: str) -> DeadLetter:
        return self.database.read(lambda c: dead_letter_sql.get_dead_letter(c, letter_id))

    def replay_dead_letter(
        self, letter_id: str, request_id: str = "", *, if_replayed_at: int | None = 0
    ) -> str:
        """A new delivery of the dead letter's message, under the guard of
        :func:`gateway.store.sql.dead_letter_sql.replay`; its first attempt writes the
        ``Replay`` record."""
        now = self.now_ms()
        delivery_id = self.database.write(
            lambda c: dead_letter_sql.replay(c, letter_id, now, request_id, if_replayed_at)
        )
        self.wakeups.announce_deliveries()
        return delivery_id

    # one message's pushes (the web console's Deliveries page) ----------------------------------
    def message_deliveries(self, message_id: str) -> message_delivery_sql.MessageDeliveries:
        return self.database.read(lambda c: message_delivery_sql.message_deliveries(c, message_id))

    def deliver_again(self, message_id: str, subscription_name: str) -> str:
        """Push a message the topic still keeps to one subscription once more; the delivery's
        id. The delivery workers of every process sharing the database are woken."""
        now = self.now_ms()
        delivery_id = self.database.write(
            lambda c: message_delivery_sql.deliver_again(c, message_id, subscription_name, now)
        )
        self.wakeups.announce_deliveries()
        return delivery_id


def _retries(settlements: Sequence[Settlement]) -> list[tuple[str, Attempt, int]]:
    """The failed attempts to try again: each delivery, its attempt and when."""
    return [
        (s.job.delivery_id, s.attempt, s.retry_at_ms)
        for s in settlements
        if s.dead_reason is None and s.attempt is not None and s.retry_at_ms is not None
    ]


def _outcomes(settlements: Sequence[Settlement], now_ms: int) -> list[rates_sql.PushOutcome]:
    """The settled attempts as the live figures count them (docs/console.md#live-figures)."""
    return [
        rates_sql.PushOutcome(
            s.job.subscription.topic_name,
            s.job.subscription.name,
            s.attempt.attempted_at_ms if s.attempt is not None else now_ms,
            s.succeeded,
            None if s.succeeded or s.attempt is None else s.attempt.error,
        )
        for s in settlements
    ]
