"""Delivery operations over a :class:`~gateway.store.base.Database`: claims, outcomes, dead
letters, replays and the daily expiry."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.delivery.breaker import Breaker, BreakerPolicy, Override, State, Transition
from gateway.delivery.dead_letter_pushes import dead_letter_message
from gateway.delivery.push_limits import grant_holds
from gateway.delivery.records import Attempt, DeadLetter, DeliveryJob, Filed, Settlement
from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.store import retention
from gateway.store.backends.database import Database
from gateway.store.notify.notifier import Wakeups
from gateway.store.queues import QueueStore
from gateway.store.sql import (
    breaker_sql,
    dead_letter_sql,
    delivered_sql,
    delivery_sql,
    held_sql,
    message_delivery_sql,
    partitions_sql,
    rates_sql,
    retention_sql,
)
from gateway.store.sql.connection import Connection
from gateway.store.sql.push_limit_sql import grant_claimed, take_push
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
        history_retention: int = retention_sql.DEFAULT_HISTORY_RETENTION,
    ) -> None:
        self.database = database
        #: ``MNS_GATEWAY_HISTORY_RETENTION`` in seconds (:func:`history_kept_since`).
        self.history_retention = history_retention
        self._passes = retention.Passes(partitions_sql.pass_interval_ms(history_retention))
        #: Subscription endpoints' circuit breakers (docs/delivery.md#endpoint-health).
        self.breaker = breaker or BreakerPolicy()
        #: A topic of this gateway each transition is published to ("" for none).
        self.events_topic = ""
        self._breaker_listeners: list[Callable[[list[Transition]], None]] = []
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
        # Where the next hold's read of each held subscription starts (held_sql.read_past),
        # past the dead index entries its earlier holds left. Per process, like _used_up: a
        # replica without it reads from the subscription's first delivery, as before.
        self._read_past: dict[str, int] = {}

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # claims -----------------------------------------------------------------------------------
    def claim(
        self, owner: str, lease_seconds: float, limit: int, skip_routes: frozenset[str]
    ) -> list[DeliveryJob]:
        now = self.now_ms()
        lease_ms = int(lease_seconds * 1000)

        used_up = {name: until for name, until in self._used_up.items() if until > now}
        read_past: dict[str, int] = {}

        transitions: list[Transition] = []

        def work(conn: Connection) -> list[DeliveryJob]:
            # Endpoints whose breaker is open (or probing) are left out: their deliveries
            # wait, untried, and are claimed in due order once it closes.
            breakers = breaker_sql.not_closed(conn)
            blocked = self._hold(conn, breakers, now, read_past)
            if turns := breaker_sql.probe_turns(conn, breakers, blocked, self.breaker, now):
                # A probe's turn (rare): as many of the held backlog as probes go out.
                held_sql.give_back(conn, turns)
            jobs = delivery_sql.claim(
                conn, owner, now, lease_ms, limit, skip_routes, set(used_up), held=blocked
            )
            admitted = breaker_sql.admit_claimed(
                conn, owner, jobs, self.breaker, now, lease_ms, seen=breakers
            )
            transitions[:] = admitted.transitions
            self._publish_events(conn, transitions)
            # Subscriptions' TenantRateLimitPolicy: the batch's grants, in the same transaction;
            # what is over the limit waits for the next second.
            granted = grant_claimed(conn, admitted.jobs, now)
            used_up.update(granted.used_up)
            return granted.jobs

        jobs = self.database.write(work, durable=False)
        self._used_up = used_up
        self._read_past = read_past
        self._announce(transitions)
        return jobs

    def _hold(
        self, conn: Connection, breakers: dict[str, Breaker], now: int, read_past: dict[str, int]
    ) -> set[str]:
        """The subscriptions a claim leaves out now, their due deliveries held out of the due
        range (held_sql.hold), so that this claim and the next do not walk past them; where the
        next claim's read for them starts, in ``read_past``."""
        blocked = breaker_sql.blocked(breakers, self.breaker, now)
        found = held_sql.due_to_hold(conn, blocked, now, self._read_past)
        held = blocked
        if found and conn.dialect.lock_row:
            # Read again under a share lock before holding: a settle that closes one (and
            # gives its deliveries back) has either committed, and it reads closed, or waits
            # for this claim. Else, on PostgreSQL, a claim that read it blocked just before
            # could hold the whole backlog again just after. Only to move something: else, or
            # if it has closed since, the claim merely leaves the subscription out this once.
            # SQLite's writers take turns.
            locked = breaker_sql.breakers(conn, sorted(found), lock=True, share=True)
            still = breaker_sql.blocked(locked, self.breaker, now)
            held = blocked - (found.keys() - still)
            found = {r: ids for r, ids in found.items() if r in still}
        held_sql.hold(conn, found, now)
        read_past.clear()  # a retried transaction starts again from self._read_past
        read_past.update(held_sql.read_past(held, found, now))
        return blocked

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
        and one more keeps them in the delivered history (:mod:`delivered_sql`).
        """
        now = self.now_ms()
        transitions: list[Transition] = []

        def work(conn: Connection) -> list[Filed | None]:
            delivered_sql.record(conn, settlements)
            delivery_sql.complete(conn, delivery_sql.completed_ids(settlements))
            rates_sql.record(conn, _outcomes(settlements, now))
            filed = [
                None if s.succeeded else self._settle_failure(conn, owner, s, now)
                for s in settlements
            ]
            # Last, as a claim locks its deliveries before their breakers: never the reverse.
            transitions[:] = breaker_sql.record_settled(conn, settlements, self.breaker, now)
            held_sql.unhold(conn, _closed(transitions))
            self._publish_events(conn, transitions)
            return filed

        filed = self.database.write(work, durable=False)
        self._wake_dead_letter_queues(filed)
        self._announce(transitions)
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
            held = {
                r
                for r, b in breaker_sql.not_closed(conn).items()
                if b.effective() is not State.CLOSED
            }
            letters = [
                self._dead_letter(conn, job, None, _expiry_reason(job, held), now) for job in jobs
            ]
            # Held deliveries whose breaker no longer holds them (closed without this replica's
            # knowing how, or gone): given back here at the latest.
            held_sql.unhold(conn, held_sql.holding(conn) - held)
            dead_letter_sql.purge_orphans(conn, now)
            breaker_sql.purge_orphans(conn)
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

    def _settle_failure(
        self, conn: Connection, owner: str, settlement: Settlement, now_ms: int
    ) -> Filed | None:
        job = settlement.job
        if settlement.dead_reason is not None:
            return self._dead_letter(conn, job, settlement.attempt, settlement.dead_reason, now_ms)
        assert settlement.retry_at_ms is not None and settlement.attempt is not None
        delivery_sql.retry_later(
            conn, job.delivery_id, owner, settlement.attempt, settlement.retry_at_ms
        )
        return None

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
        self._breaker_listeners.append(callback)

    def remove_breaker_listener(self, callback: Callable[[list[Transition]], None]) -> None:
        if callback in self._breaker_listeners:
            self._breaker_listeners.remove(callback)

    def _publish_events(self, conn: Connection, transitions: list[Transition]) -> None:
        """Operator events (docs/delivery.md#operator-events), in the transaction that made the
        transitions; the workers are woken once it is committed (:meth:`_announce`)."""
        if transitions and self.events_topic:
            new_id = self.queues.new_message_id
            breaker_sql.publish_events(conn, transitions, self.events_topic, new_id)

    def _announce(self, transitions: list[Transition]) -> None:
        if transitions and self.events_topic:
            self.wakeups.announce_deliveries()
        if transitions:
            for callback in list(self._breaker_listeners):
                callback(transitions)

    def breakers(self) -> tuple[dict[str, Breaker], dict[str, int]]:
        """Every kept breaker (``topic/subscription``), and how many deliveries wait, due, for
        each; a subscription not listed is closed and healthy."""
        now = self.now_ms()
        return self.database.read(
            lambda c: (breaker_sql.all_breakers(c), breaker_sql.waiting(c, now))
        )

    def override_breaker(
        self, topic_name: str, subscription_name: str, override: Override | None
    ) -> Breaker:
        """Force a subscription's breaker closed, hold it open, or (``None``) let it decide."""
        now = self.now_ms()
        resource = subscription_resource(topic_name, subscription_name)

        def work(conn: Connection) -> tuple[Breaker, Transition | None]:
            breaker, transition = breaker_sql.set_override(conn, resource, override, now)
            if breaker.effective() is State.CLOSED:
                held_sql.unhold(conn, [resource])
            self._publish_events(conn, [transition] if transition else [])
            return breaker, transition

        breaker, transition = self.database.write(work)
        self._announce([transition] if transition else [])
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


#: A delivery whose message outlived the topic's retention while its endpoint's breaker was
#: open is dead-lettered with this reason, not "expired" (docs/delivery.md#endpoint-health).
CIRCUIT_OPEN_REASON = "endpoint circuit open"


def _closed(transitions: Sequence[Transition]) -> set[str]:
    """The subscriptions whose breaker ``transitions`` closed: their held deliveries come back."""
    return {t.resource for t in transitions if t.after is State.CLOSED}


def _expiry_reason(job: DeliveryJob, held: set[str]) -> str:
    return CIRCUIT_OPEN_REASON if breaker_sql.resource_of(job) in held else "expired"


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
