"""Sending to a queue: SendMessage and BatchSendMessage, and messages a topic's QueueEndpoint
subscription enqueues inside its own write job.

Part of :class:`~gateway.store.queues.QueueStore`, kept apart for its size, as its receives are
(:mod:`gateway.store.queue_receiving`). A message becomes a row here: its size checked against
MaximumMessageSize (body and UserProperties together), its times computed by the rules of
:mod:`gateway.queues.states`, an ordered queue's messages numbered within their group
(:mod:`gateway.store.sql.fifo_sql`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from gateway.errors.mns import MNSError
from gateway.protocol.properties import size_error
from gateway.queues import receipts
from gateway.queues.receipts import Receipt
from gateway.queues.records import NewMessage, Queue, SentMessage
from gateway.queues.states import body_md5, body_size, effective_delay, visible_after
from gateway.store.queue_receiving import PURGE_BATCH
from gateway.store.sql import fifo_sql
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql import queue_sql as sql
from gateway.store.sql.connection import Connection
from gateway.store.sql.queue_message_sql import StoredMessage

if TYPE_CHECKING:
    from gateway.queues.receipts import ReceiptSigner


class SendingStore(Protocol):
    """What the sends use of their :class:`~gateway.store.queues.QueueStore` (which imports this
    module: a protocol here rather than an import back)."""

    def new_message_id(self, now_ms: int) -> str: ...

    def signer(self) -> ReceiptSigner: ...


class QueueSending:
    """The sends of one :class:`~gateway.store.queues.QueueStore`."""

    def __init__(self, store: SendingStore) -> None:
        self.store = store

    def send(
        self, name: str, messages: Sequence[NewMessage]
    ) -> tuple[Queue, list[SentMessage | MNSError]]:
        """Store ``messages``; a message over MaximumMessageSize fails alone (batch partial
        failure), anything else fails the request."""
        store = self.store
        now_ms = store.now_ms()
        purge = store.purge_due()

        def work(conn: Connection, atomic: bool) -> tuple[Queue, list[StoredMessage | MNSError]]:
            queue = store.require(conn, name, atomic)
            results = [self._prepare(queue, message, now_ms) for message in messages]
            stored = [r for r in results if isinstance(r, StoredMessage)]
            message_sql.insert_messages(conn, fifo_sql.grouped(conn, queue, stored))
            if purge:  # on its own: a purge that failed would lose nothing
                message_sql.purge_expired(conn, now_ms, PURGE_BATCH)
            return queue, results

        # A look, then one INSERT of every message: no transaction needed around them.
        queue, results = store.write(name, work)
        stored = [r for r in results if isinstance(r, StoredMessage)]
        active = sum(1 for message in stored if message.visible_at <= now_ms)
        if stored:
            store.notify(name, None if active < len(stored) else active)
        return queue, [r if isinstance(r, MNSError) else self._sent(r, now_ms) for r in results]

    def enqueue_in(
        self, conn: Connection, queue_name: str, message: NewMessage, *, now_ms: int
    ) -> str:
        """Add ``message`` with ``conn`` inside the caller's write job; its MessageId.

        Raises ``MNSError`` ``QueueNotExist``, or ``InvalidArgument`` for a body over the
        queue's MaximumMessageSize; the caller's job decides what a failure means.
        """
        queue = sql.require_queue(conn, queue_name)
        prepared = self._prepare(queue, message, now_ms, require_group=False)
        if isinstance(prepared, MNSError):
            raise prepared
        message_sql.insert_messages(conn, fifo_sql.grouped(conn, queue, [prepared]))
        return prepared.id

    def _prepare(
        self, queue: Queue, message: NewMessage, now_ms: int, *, require_group: bool = True
    ) -> StoredMessage | MNSError:
        """The row for ``message``, or why it is refused: too large (the body with its
        UserProperties), or an ordered queue's message without MessageGroupId (only a producer
        must give one: docs/queues.md#ordered-queues)."""
        attributes = queue.attributes
        too_large = size_error(
            body_size(message.body), message.properties, attributes.maximum_message_size
        )
        if too_large is not None:
            return too_large
        if require_group and attributes.ordered and not message.properties.get("MessageGroupId"):
            return MNSError("FifoMissingMessageGroupId")
        delay = effective_delay(message.delay_seconds, attributes.delay_seconds)
        return StoredMessage(
            id=self.store.new_message_id(now_ms),
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

    def _sent(self, stored: StoredMessage, now_ms: int) -> SentMessage:
        handle = None
        # Delayed: SendMessage returns a handle (docs/protocol.md#message-states).
        if stored.visible_at > now_ms:
            receipt = Receipt(stored.id, stored.receipt_nonce, stored.visible_at)
            handle = self.store.signer().issue(stored.queue_name, receipt)
        return SentMessage(
            stored.id, stored.body_md5, stored.visible_at, handle, dict(stored.properties)
        )
