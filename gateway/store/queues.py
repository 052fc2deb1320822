"""Queue and queue-message operations: the queue model's domain methods over a Database.

Every mutation is one :meth:`Database.write` job; a receive's claim re-checks in its UPDATE that
each message is still Active (:mod:`gateway.store.sql.queue_message_sql`), so no Active message is
ever handed to two receivers, whether the database has one writer at a time (SQLite) or many
(PostgreSQL). Reads go through :meth:`Database.read` snapshots. Wake-ups for long-polling
receivers are sent only after the commit that made a message receivable, here and, through the
database's notifier, in every other process sharing it.

For topic subscriptions that deliver into a local queue (QueueEndpoint bridging):
:meth:`QueueStore.enqueue_in` adds a message using the caller's connection, *inside* the
caller's own write job, so "delivery done" and "message enqueued" commit together; after that
job returns, :meth:`QueueStore.notify` wakes the queue's receivers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.queues import dlq_policy as dead_letters
from gateway.queues import receipts
from gateway.queues.dlq_policy import PolicyUpdate
from gateway.queues.message_ids import MessageIdFactory
from gateway.queues.receipts import ReceiptSigner
from gateway.queues.records import (
    MessageCounts,
    NewMessage,
    Queue,
    QueueAttributes,
    QueueMessage,
    QueueType,
    SentMessage,
    VisibilityChange,
)
from gateway.queues.waiters import DEFAULT_RECHECK_SECONDS, WaiterHub
from gateway.store.control import RateLimitPolicy, Tags, change_rate_limit, give_created
from gateway.store.notify.notifier import Wakeups
from gateway.store.queue_receipts import QueueReceipts
from gateway.store.queue_receiving import QueueReceiving, Received
from gateway.store.queue_sending import QueueSending
from gateway.store.sql import fifo_sql, queue_claims
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql import queue_sql as sql
from gateway.store.sql.connection import Connection, SelfContained

if TYPE_CHECKING:
    from gateway.store.backends.database import Database

T = TypeVar("T")

#: The service's default limit on queues per account (CreateQueue: "队列实例默认上限为1000个").
DEFAULT_MAX_QUEUES: Final = 1000
PURGE_INTERVAL_SECONDS: Final = 60.0


class QueueStore:
    """Queue operations over a :class:`~gateway.store.backends.database.Database`.

    ``wakeups`` holds this process's long-polling receivers and reaches other processes' through
    the database's notifier; ``ids`` draws MessageIds (shared with topics); ``max_queues`` caps
    the number of queues (``None``: no limit). ``receipt_secret`` overrides the secret otherwise
    kept in the database.
    """

    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        wakeups: Wakeups,
        ids: MessageIdFactory,
        max_queues: int | None = DEFAULT_MAX_QUEUES,
        recheck_seconds: float = DEFAULT_RECHECK_SECONDS,
        receipt_secret: bytes | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        region: str = "local",
        account_id: str = "1234567890",
    ) -> None:
        self.database = database
        self.region = region
        self.account_id = account_id
        self.clock = clock
        self.max_queues = max_queues
        self.wakeups = wakeups
        self.monotonic = monotonic
        self._ids = ids
        self._signer = ReceiptSigner(receipt_secret) if receipt_secret else None
        self._last_purge = monotonic()
        self._receiving = QueueReceiving(self, recheck_seconds=recheck_seconds)
        self._sending = QueueSending(self)
        #: Ordered queues seen here: their sends, deletes and visibility changes need a
        #: transaction (:meth:`write`).
        self.ordered: set[str] = set()
        self._receipts = QueueReceipts(self)

    @property
    def recheck_seconds(self) -> float:
        """The longest a long poll here sleeps without looking at its queue again."""
        return self._receiving.recheck_seconds

    @property
    def waiters(self) -> WaiterHub:
        return self.wakeups.waiters

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # queues -------------------------------------------------------------------------------
    def create_queue(
        self,
        name: str,
        attributes: QueueAttributes,
        *,
        tags: Tags = (),
        rate_limit: RateLimitPolicy | None = None,
    ) -> bool:
        """True when created, False when an identical queue exists (409 for a different one).
        Its ``tags`` and TenantRateLimitPolicy (the control plane's) are written in the same
        transaction, also onto an identical queue: a refused tag leaves no queue."""
        now = int(self.clock())
        queue = Queue.new(name, now, attributes)

        def work(conn: Connection) -> bool:
            _check_dead_letter_target(conn, name, attributes.dead_letter_policy)
            created = sql.create_queue(conn, queue, self.max_queues)
            give_created(conn, "queue", name, tags, rate_limit)
            return created

        return self.database.write(work)

    def set_queue_attributes(
        self,
        name: str,
        changes: Mapping[str, int | bool],
        *,
        queue_type: QueueType | None = None,
        dead_letter_policy: PolicyUpdate | None = None,
        rate_limit: RateLimitPolicy | None = None,
    ) -> Queue:
        """Change the attributes sent; QueueType only to what it is (it is set at creation), the
        dead-letter policy field by field (docs/queues.md#the-dlqpolicy-element), and the
        TenantRateLimitPolicy (the control plane's), all in one transaction."""
        now = int(self.clock())

        def work(conn: Connection) -> Queue:
            current = sql.require_queue(conn, name).attributes
            if queue_type is not None and queue_type is not current.queue_type:
                raise MNSError("InvalidArgument", "The QueueType of a queue cannot be changed.")
            policy = current.dead_letter_policy
            if dead_letter_policy is not None:
                policy = dead_letter_policy.apply(policy, receive_count=True)
                _check_dead_letter_target(conn, name, policy)
            changed = replace(current, **changes, dead_letter_policy=policy)  # type: ignore[arg-type]
            sql.update_queue(conn, name, changed, now)
            change_rate_limit(conn, "queue", name, rate_limit)
            return sql.require_queue(conn, name)

        queue = self.database.write(work)
        self.notify(name)  # a shorter PollingWaitSeconds or delay concerns sleeping receivers
        return queue

    def get_queue(self, name: str) -> tuple[Queue, MessageCounts]:
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Queue, MessageCounts]:
            return sql.require_queue(conn, name), sql.message_counts(conn, name, now_ms)

        return self.database.read(work)

    def queue_exists(self, name: str) -> bool:
        return self.database.read(lambda c: sql.get_queue(c, name)) is not None

    def delete_queue(self, name: str) -> None:
        self.database.write(partial(sql.delete_queue, name=name))
        self.notify(name)  # sleeping receivers answer QueueNotExist now rather than later

    def list_queues(self, prefix: str, marker: str, limit: int) -> Page[Queue]:
        return self.database.read(lambda c: sql.list_queues(c, prefix, marker, limit))

    # sending ------------------------------------------------------------------------------
    def send(
        self, name: str, messages: Sequence[NewMessage]
    ) -> tuple[Queue, list[SentMessage | MNSError]]:
        """Store ``messages``; a message over MaximumMessageSize fails alone (batch partial
        failure), anything else fails the request: :class:`~gateway.store.queue_sending.
        QueueSending`."""
        return self._sending.send(name, messages)

    def enqueue_in(
        self,
        conn: Connection,
        queue_name: str,
        body: str,
        *,
        delay_seconds: int | None = None,
        priority: int = 8,
        now_ms: int,
        properties: Mapping[str, Any] | None = None,
    ) -> str:
        """Add a message with ``conn`` inside the caller's write job; its MessageId
        (:meth:`~gateway.store.queue_sending.QueueSending.enqueue_in`). Call :meth:`notify`
        after the job has committed."""
        message = NewMessage(body, priority, delay_seconds, dict(properties or {}))
        return self._sending.enqueue_in(conn, queue_name, message, now_ms=now_ms)

    def new_message_id(self, now_ms: int) -> str:
        return self._ids.new_id(now_ms)

    def notify(self, queue_name: str, count: int | None = None) -> None:
        """Wake ``count`` long-polling receivers of ``queue_name`` (all when ``None``), here and
        in every other process sharing the database. Never raises, never blocks."""
        self.wakeups.announce_queue(queue_name, count)

    # receiving ----------------------------------------------------------------------------
    def receive(
        self,
        name: str,
        count: int,
        wait_seconds: int | None,
        *,
        client_connected: Callable[[], bool] = lambda: True,
    ) -> Received:
        """Claim up to ``count`` receivable messages, long-polling for ``wait_seconds``
        (``None``: the queue's PollingWaitSeconds); ``client_connected()`` is asked before
        every claim (docs/queues.md#clients-that-go-away): :class:`~gateway.store.
        queue_receiving.QueueReceiving`."""
        return self._receiving.receive(name, count, wait_seconds, client_connected)

    def peek(self, name: str, count: int) -> tuple[Queue, list[QueueMessage]]:
        """What a receive would get now, state unchanged."""
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Queue, list[QueueMessage]]:
            queue = sql.require_queue(conn, name)
            return queue, queue_claims.peek(conn, queue, now_ms, count)

        return self.database.read(work)

    def release(self, name: str, messages: Sequence[QueueMessage]) -> int:
        """Undo the receive that handed out ``messages``, for a response that could not be
        written: each message whose handle is still current is Active again as it was before,
        its DequeueCount (and a first FirstDequeueTime) restored. How many were released."""
        now_ms = self.now_ms()
        undo = [
            (self.signer().verify(name, m.receipt_handle), m.claimed_from)
            for m in messages
            if m.receipt_handle is not None and m.claimed_from is not None
        ]
        if not undo:
            return 0

        def work(conn: Connection) -> int:
            queue = sql.get_queue(conn, name)
            if queue is None:
                return 0
            # An ordered queue's group is free again with its head (docs/queues.md#ordered-queues).
            groups = fifo_sql.lock_groups_of(conn, queue, (r.message_id for r, _ in undo))
            released = sum(
                message_sql.release(
                    conn, name, receipts.exactly(receipt, now_ms), before, receipts.new_nonce()
                )
                for receipt, before in undo
            )
            fifo_sql.refresh_groups(conn, name, groups, now_ms)
            return released

        released = self.database.write(work, durable=False)
        if released:
            self.notify(name, released)
        return released

    # receipts -----------------------------------------------------------------------------
    def delete_message(self, name: str, handle: str) -> tuple[Queue, str]:
        """Delete the message ``handle`` names; its MessageId: :class:`~gateway.store.
        queue_receipts.QueueReceipts`, as the batch and visibility changes are."""
        return self._receipts.delete_message(name, handle)

    def delete_messages(
        self, name: str, handles: Sequence[str]
    ) -> tuple[Queue, list[str | MNSError]]:
        """(Batch)DeleteMessage: per handle, the deleted MessageId or why it failed."""
        return self._receipts.delete_messages(name, handles)

    def change_visibility(
        self, name: str, handle: str, seconds: int
    ) -> tuple[Queue, VisibilityChange]:
        return self._receipts.change_visibility(name, handle, seconds)

    # writes with or without a transaction --------------------------------------------------
    def write(self, name: str, work: Callable[[Connection, bool], T]) -> T:
        """Run a send, delete or visibility change. A standard queue's needs no transaction
        around its statements (a look, then one change in one statement: ``SelfContained``); an
        ordered queue's does, as its group rows change with its messages. Which queues are
        ordered is remembered; ``work(conn, atomic)`` looks the queue up with :meth:`require`,
        which stops it when it finds an ordered queue without a transaction, and it runs again
        in one."""
        atomic = name in self.ordered
        try:
            if atomic:
                return self.database.write(partial(work, atomic=True))
            return self.database.write(SelfContained(partial(work, atomic=False)))
        except _NeedsTransaction:
            self.ordered.add(name)
            return self.database.write(partial(work, atomic=True))

    def require(self, conn: Connection, name: str, atomic: bool) -> Queue:
        queue = sql.require_queue(conn, name)
        if not queue.attributes.ordered:
            self.ordered.discard(name)
        elif not atomic:
            raise _NeedsTransaction
        return queue

    def signer(self) -> ReceiptSigner:
        """The receipt signer, its secret created in the database on first use. Never call it
        from inside a write job (it may submit one of its own)."""
        if self._signer is None:
            candidate = receipts.new_secret().hex()
            secret = self.database.write(partial(message_sql.receipt_secret, candidate=candidate))
            self._signer = ReceiptSigner(bytes.fromhex(secret))
        return self._signer

    # housekeeping -------------------------------------------------------------------------
    def purge_due(self) -> bool:
        """Whether this request should also delete a batch of expired messages (about once a
        minute per process: messages nobody receives expire without anyone touching them)."""
        now = self.monotonic()
        if now - self._last_purge < PURGE_INTERVAL_SECONDS:
            return False
        self._last_purge = now
        return True


class _NeedsTransaction(Exception):
    """An ordered queue's write found running without a transaction (raised before it changed
    anything): run it again in one."""


def _check_dead_letter_target(
    conn: Connection, name: str, policy: dead_letters.DeadLetterPolicy | None
) -> None:
    """A policy may name neither the queue itself nor a queue that does not exist."""
    dead_letters.check_not_own(name, policy)
    if policy is not None and sql.get_queue(conn, policy.target_queue) is None:
        raise MNSError(
            "InvalidArgument",
            f"The DeadLetterTargetQueue {policy.target_queue} does not exist.",
        )
