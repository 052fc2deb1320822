"""Queue and queue-message operations: the queue model's domain methods over a Database.

Every mutation is one :meth:`Database.write` job; a receive's claim re-checks in its UPDATE that
each message is still Active (:mod:`gateway.store.queue_sql`), so no Active message is ever
handed to two receivers, whether the database has one writer at a time (SQLite) or many
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
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from gateway.protocol.errors import MNSError
from gateway.protocol.listing import Page
from gateway.queues import receipts
from gateway.queues.message_ids import MessageIdFactory
from gateway.queues.receipts import Receipt, ReceiptSigner
from gateway.queues.records import (
    MessageCounts,
    NewMessage,
    Queue,
    QueueAttributes,
    QueueMessage,
    SentMessage,
    VisibilityChange,
)
from gateway.queues.states import body_md5, body_size, effective_delay, visible_after
from gateway.queues.waiters import DEFAULT_RECHECK_SECONDS, WaiterHub, long_poll
from gateway.store import queue_sql as sql
from gateway.store.notifier import Wakeups
from gateway.store.sql import Connection

if TYPE_CHECKING:
    from gateway.store.database import Database

#: The service's default limit on queues per account (CreateQueue: "队列实例默认上限为1000个").
DEFAULT_MAX_QUEUES: Final = 1000
PURGE_INTERVAL_SECONDS: Final = 60.0
PURGE_BATCH: Final = 1000
TOO_LARGE = "The length of message should not be larger than MaximumMessageSize."


class QueueStore:
    """Queue operations over a :class:`~gateway.store.database.Database`.

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
    ) -> None:
        self.database = database
        self.clock = clock
        self.max_queues = max_queues
        self.wakeups = wakeups
        self._recheck_seconds = recheck_seconds
        self._monotonic = monotonic
        self._ids = ids
        self._signer = ReceiptSigner(receipt_secret) if receipt_secret else None
        self._last_purge = monotonic()

    @property
    def waiters(self) -> WaiterHub:
        return self.wakeups.waiters

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # queues -------------------------------------------------------------------------------
    def create_queue(self, name: str, attributes: QueueAttributes) -> bool:
        """True when created, False when an identical queue exists (409 for a different one)."""
        now = int(self.clock())
        queue = Queue(name, now, now, attributes)
        return self.database.write(lambda c: sql.create_queue(c, queue, self.max_queues))

    def set_queue_attributes(self, name: str, changes: Mapping[str, int | bool]) -> Queue:
        now = int(self.clock())
        queue = self.database.write(lambda c: sql.set_queue_attributes(c, name, changes, now))
        self.notify(name)  # a shorter PollingWaitSeconds or delay concerns sleeping receivers
        return queue

    def get_queue(self, name: str) -> tuple[Queue, MessageCounts]:
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Queue, MessageCounts]:
            return sql.require_queue(conn, name), sql.message_counts(conn, name, now_ms)

        return self.database.read(work)

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
        failure), anything else fails the request."""
        now_ms = self.now_ms()
        purge = self._purge_due()

        def work(conn: Connection) -> tuple[Queue, list[sql.StoredMessage | MNSError]]:
            queue = sql.require_queue(conn, name)
            results = [self._prepare(queue, message, now_ms) for message in messages]
            sql.insert_messages(conn, [r for r in results if isinstance(r, sql.StoredMessage)])
            if purge:  # on its own: a purge that failed would lose nothing
                sql.purge_expired(conn, now_ms, PURGE_BATCH)
            return queue, results

        # A look, then one INSERT of every message: no transaction needed around them.
        queue, results = self.database.write(work, atomic=False)
        stored = [r for r in results if isinstance(r, sql.StoredMessage)]
        active = sum(1 for message in stored if message.visible_at <= now_ms)
        if stored:
            self.notify(name, None if active < len(stored) else active)
        return queue, [r if isinstance(r, MNSError) else self._sent(r, now_ms) for r in results]

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
        """Add a message with ``conn`` inside the caller's write job; its MessageId.

        Raises ``MNSError`` ``QueueNotExist``, or ``InvalidArgument`` for a body over the
        queue's MaximumMessageSize; the caller's job decides what a failure means. Call
        :meth:`notify` after the job has committed.
        """
        queue = sql.require_queue(conn, queue_name)
        message = NewMessage(body, priority, delay_seconds, dict(properties or {}))
        prepared = self._prepare(queue, message, now_ms)
        if isinstance(prepared, MNSError):
            raise prepared
        sql.insert_messages(conn, [prepared])
        return prepared.id

    def notify(self, queue_name: str, count: int | None = None) -> None:
        """Wake ``count`` long-polling receivers of ``queue_name`` (all when ``None``), here and
        in every other process sharing the database. Never raises, never blocks."""
        self.wakeups.announce_queue(queue_name, count)

    def _prepare(
        self, queue: Queue, message: NewMessage, now_ms: int
    ) -> sql.StoredMessage | MNSError:
        attributes = queue.attributes
        if body_size(message.body) > attributes.maximum_message_size:
            return MNSError("InvalidArgument", TOO_LARGE)
        delay = effective_delay(message.delay_seconds, attributes.delay_seconds)
        return sql.StoredMessage(
            id=self._ids.new_id(now_ms),
            queue_name=queue.name,
            body=message.body,
            body_md5=body_md5(message.body),
            priority=message.priority,
            enqueue_time=now_ms,
            visible_at=visible_after(now_ms, delay),
            expires_at=visible_after(now_ms, attributes.message_retention_period),
            receipt_nonce=receipts.new_nonce(),
            properties=message.properties,
        )

    def _sent(self, stored: sql.StoredMessage, now_ms: int) -> SentMessage:
        handle = None
        # Delayed: SendMessage returns a handle (docs/protocol.md#message-states).
        if stored.visible_at > now_ms:
            receipt = Receipt(stored.id, stored.receipt_nonce, stored.visible_at)
            handle = self.signer().issue(stored.queue_name, receipt)
        return SentMessage(
            stored.id, stored.body_md5, stored.visible_at, handle, dict(stored.properties)
        )

    # receiving ----------------------------------------------------------------------------
    def receive(
        self,
        name: str,
        count: int,
        wait_seconds: int | None,
        *,
        client_connected: Callable[[], bool] = lambda: True,
    ) -> tuple[Queue, list[QueueMessage]]:
        """Claim up to ``count`` Active messages; when there are none, long-poll for
        ``wait_seconds`` (``None``: the queue's PollingWaitSeconds).

        ``client_connected()`` is asked before every claim: a receive whose client has gone
        claims nothing and its long poll ends (docs/queues.md#clients-that-go-away).
        """
        if not client_connected():
            return self._queue(name), []
        queue, messages, _ = self._claim(name, count)
        wait = queue.attributes.polling_wait_seconds if wait_seconds is None else wait_seconds
        if messages or wait <= 0:
            return queue, messages
        deadline = self._monotonic() + wait
        self.wakeups.listen_for_queues()
        with self.waiters.register(name) as waiter:
            if waiter is None:  # over the long-poll limit: MessageNotExist at once
                return queue, []
            found = long_poll(
                waiter,
                partial(self._attempt, name, count),
                deadline=deadline,
                monotonic=self._monotonic,
                recheck_seconds=self._recheck_seconds,
                wanted=client_connected,
            )
        if found is None and not client_connected():
            # It may have been woken for a message it will not take: wake another instead.
            self.waiters.notify(name, 1)
        return found or (queue, [])

    def _queue(self, name: str) -> Queue:
        return self.database.read(partial(sql.require_queue, name=name))

    def _attempt(
        self, name: str, count: int
    ) -> tuple[tuple[Queue, list[QueueMessage]] | None, float | None]:
        """One look for a long poll: a cheap read first, the writer only if something is ready."""
        now_ms = self.now_ms()

        def probe(conn: Connection) -> tuple[bool, int | None]:
            sql.require_queue(conn, name)
            ready = bool(sql.ready_rows(conn, name, now_ms, 1))
            return ready, None if ready else sql.next_due(conn, name, now_ms)

        ready, due = self.database.read(probe)
        if ready:
            queue, messages, due = self._claim(name, count)
            if messages:
                return (queue, messages), None
        return None, None if due is None else max(due - self.now_ms(), 0) / 1000

    def _claim(self, name: str, count: int) -> tuple[Queue, list[QueueMessage], int | None]:
        now_ms = self.now_ms()
        purge = self._purge_due()

        def work(conn: Connection) -> tuple[Queue, list[sql.Claimed], int | None]:
            # The look-up travels with the claim's first statement (PostgreSQL's pipeline): its
            # result is read only once the claim needs the visibility timeout.
            queue = sql.lookup_queue(conn, name)
            visibility = lambda: queue().attributes.visibility_timeout  # noqa: E731
            claimed = sql.claim(
                conn,
                name,
                count,
                now_ms=now_ms,
                invisible_until=lambda: visible_after(now_ms, visibility()),
                new_nonce=receipts.new_nonce,
            )
            if purge:
                sql.purge_expired(conn, now_ms, PURGE_BATCH)
            return queue(), claimed, None if claimed else sql.next_due(conn, name, now_ms)

        queue, claimed, due = self.database.write(work)
        return queue, [self._with_handle(name, c) for c in claimed], due

    def _with_handle(self, name: str, claimed: sql.Claimed) -> QueueMessage:
        receipt = Receipt(claimed.message_id, claimed.nonce, claimed.next_visible_time)
        return claimed.message(self.signer().issue(name, receipt))

    def peek(self, name: str, count: int) -> tuple[Queue, list[QueueMessage]]:
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Queue, list[QueueMessage]]:
            return sql.require_queue(conn, name), sql.peek(conn, name, now_ms, count)

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
            return sum(
                sql.release(conn, name, receipt, before, now_ms, receipts.new_nonce())
                for receipt, before in undo
            )

        released = self.database.write(work, durable=False)
        if released:
            self.notify(name, released)
        return released

    # receipts -----------------------------------------------------------------------------
    def delete_message(self, name: str, handle: str) -> tuple[Queue, str]:
        """Delete the message ``handle`` names; its MessageId."""
        receipt = self.signer().verify(name, handle)
        now_ms = self.now_ms()

        work = partial(sql.delete_in_queue, queue_name=name, receipt=receipt, now_ms=now_ms)
        return self.database.write(work, atomic=False), receipt.message_id

    def delete_messages(
        self, name: str, handles: Sequence[str]
    ) -> tuple[Queue, list[str | MNSError]]:
        """BatchDeleteMessage: per handle, the deleted MessageId or why it failed."""
        checked = [_verified(self.signer(), name, handle) for handle in handles]
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Queue, list[str | MNSError]]:
            queue = sql.require_queue(conn, name)
            return queue, [_delete_one(conn, name, item, now_ms) for item in checked]

        # Each handle succeeds or fails alone (BatchDeleteMessage reports them one by one).
        return self.database.write(work, atomic=False)

    def change_visibility(
        self, name: str, handle: str, seconds: int
    ) -> tuple[Queue, VisibilityChange]:
        receipt = self.signer().verify(name, handle)
        now_ms = self.now_ms()
        until, nonce = visible_after(now_ms, seconds), receipts.new_nonce()

        def work(conn: Connection) -> Queue:
            queue = sql.require_queue(conn, name)
            if not sql.change_visibility(conn, name, receipt, now_ms, until, nonce):
                raise MNSError("MessageNotExist")
            return queue

        queue = self.database.write(work, atomic=False)
        if seconds == 0:
            self.notify(name, 1)
        new_handle = self.signer().issue(name, Receipt(receipt.message_id, nonce, until))
        return queue, VisibilityChange(receipt.message_id, new_handle, until)

    def signer(self) -> ReceiptSigner:
        """The receipt signer, its secret created in the database on first use. Never call it
        from inside a write job (it may submit one of its own)."""
        if self._signer is None:
            candidate = receipts.new_secret().hex()
            secret = self.database.write(partial(sql.receipt_secret, candidate=candidate))
            self._signer = ReceiptSigner(bytes.fromhex(secret))
        return self._signer

    # housekeeping -------------------------------------------------------------------------
    def _purge_due(self) -> bool:
        """Whether this request should also delete a batch of expired messages (about once a
        minute per process: messages nobody receives expire without anyone touching them)."""
        now = self._monotonic()
        if now - self._last_purge < PURGE_INTERVAL_SECONDS:
            return False
        self._last_purge = now
        return True


def _verified(signer: ReceiptSigner, name: str, handle: str) -> Receipt | MNSError:
    try:
        return signer.verify(name, handle)
    except MNSError as error:
        return error


def _delete_one(
    conn: Connection, name: str, item: Receipt | MNSError, now_ms: int
) -> str | MNSError:
    if isinstance(item, MNSError):
        return item
    if sql.delete_by_receipt(conn, name, item, now_ms):
        return item.message_id
    return MNSError("MessageNotExist")
