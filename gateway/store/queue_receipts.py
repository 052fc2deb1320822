"""Deleting queue messages and changing their visibility by receipt handle: DeleteMessage,
BatchDeleteMessage, ChangeMessageVisibility.

Part of :class:`~gateway.store.queues.QueueStore`, kept apart for its size, as its sends and
receives are (:mod:`gateway.store.queue_sending`, :mod:`gateway.store.queue_receiving`). A handle
is verified before the database is asked anything (:mod:`gateway.queues.receipts`); the change
then matches the receive that issued it, so a handle that a later receive replaced changes
nothing. In an ordered queue the group's head moves with it (:mod:`gateway.store.sql.fifo_sql`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol, TypeVar

from gateway.errors.mns import MNSError
from gateway.queues import receipts
from gateway.queues.receipts import Receipt, ReceiptSigner
from gateway.queues.records import Queue, VisibilityChange
from gateway.queues.states import visible_after
from gateway.store.sql import fifo_sql
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql.connection import Connection, SelfContained

if TYPE_CHECKING:
    from gateway.store.backends.database import Database

T = TypeVar("T")


class ReceiptsStore(Protocol):
    """What the receipt operations use of their :class:`~gateway.store.queues.QueueStore`
    (which imports this module: a protocol here rather than an import back)."""

    database: Database
    #: Ordered queues seen so far: their changes need a transaction.
    ordered: set[str]

    def now_ms(self) -> int: ...

    def signer(self) -> ReceiptSigner: ...

    def notify(self, queue_name: str, count: int | None = None) -> None: ...

    def write(self, name: str, work: Callable[[Connection, bool], T]) -> T: ...

    def require(self, conn: Connection, name: str, atomic: bool) -> Queue: ...


class QueueReceipts:
    """The receipt-handle operations of one :class:`~gateway.store.queues.QueueStore`."""

    def __init__(self, store: ReceiptsStore) -> None:
        self.store = store

    def delete_message(self, name: str, handle: str) -> tuple[Queue, str]:
        """Delete the message ``handle`` names; its MessageId."""
        store = self.store
        queue, (result,) = self._delete_single(name, store.signer().verify(name, handle))
        if isinstance(result, MNSError):
            raise result
        return queue, result

    def delete_messages(
        self, name: str, handles: Sequence[str]
    ) -> tuple[Queue, list[str | MNSError]]:
        """(Batch)DeleteMessage: per handle, the deleted MessageId or why it failed. In an
        ordered queue a deleted head lets its group's next message be received. A batch of one
        valid handle costs what a DeleteMessage costs (the JSON API has no other delete)."""
        store = self.store
        checked = [_verified(store.signer(), name, handle) for handle in handles]
        if len(checked) == 1 and isinstance(checked[0], Receipt):
            return self._delete_single(name, checked[0])
        return self._delete(name, checked)

    def _delete_single(self, name: str, receipt: Receipt) -> tuple[Queue, list[str | MNSError]]:
        store = self.store
        if name not in store.ordered:  # a standard queue's: one statement on PostgreSQL
            now_ms = store.now_ms()
            work = partial(
                message_sql.delete_in_standard_queue,
                queue_name=name,
                match=receipts.of_its_receive(receipt, now_ms),
            )
            queue, deleted = store.database.write(SelfContained(work))
            if not queue.attributes.ordered:
                return queue, [receipt.message_id if deleted else MNSError("MessageNotExist")]
            store.ordered.add(name)
        return self._delete(name, [receipt])

    def _delete(
        self, name: str, checked: Sequence[Receipt | MNSError]
    ) -> tuple[Queue, list[str | MNSError]]:
        store = self.store
        now_ms = store.now_ms()
        receipts_ = [item for item in checked if isinstance(item, Receipt)]

        def work(conn: Connection, atomic: bool) -> tuple[Queue, list[str | MNSError], int]:
            queue = store.require(conn, name, atomic)
            groups = fifo_sql.lock_groups_of(conn, queue, (r.message_id for r in receipts_))
            results = [_delete_one(conn, name, item, now_ms) for item in checked]
            fifo_sql.refresh_groups(conn, name, groups, now_ms)
            return queue, results, len(groups)

        # Each handle succeeds or fails alone (BatchDeleteMessage reports them one by one).
        queue, results, groups = store.write(name, work)
        if groups and any(isinstance(r, str) for r in results):
            store.notify(name, groups)  # each group's next message may be receivable now
        return queue, results

    def change_visibility(
        self, name: str, handle: str, seconds: int
    ) -> tuple[Queue, VisibilityChange]:
        store = self.store
        receipt = store.signer().verify(name, handle)
        now_ms = store.now_ms()
        until, match = visible_after(now_ms, seconds), receipts.of_its_receive(receipt, now_ms)

        def work(conn: Connection, atomic: bool) -> Queue:
            queue = store.require(conn, name, atomic)
            groups = fifo_sql.lock_groups_of(conn, queue, [receipt.message_id])
            if not message_sql.change_visibility(conn, name, match, until):
                raise MNSError("MessageNotExist")
            fifo_sql.refresh_groups(conn, name, groups, now_ms)
            return queue

        queue = store.write(name, work)
        if seconds == 0:
            store.notify(name, 1)
        new_handle = store.signer().issue(name, receipt.moved_to(until))
        return queue, VisibilityChange(receipt.message_id, new_handle, until)


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
    if message_sql.delete_by_receipt(conn, name, receipts.of_its_receive(item, now_ms)):
        return item.message_id
    return MNSError("MessageNotExist")
