"""Receiving from a queue: a first claim, then long polling until something is receivable.

Part of :class:`~gateway.store.queues.QueueStore`, kept apart for its size: the claims themselves
are :mod:`gateway.store.sql.queue_claims`' (either kind of queue), the waiting
:mod:`gateway.queues.waiters`'. A receive reports the messages it took and those it moved to the
queue's dead-letter queue instead (docs/queues.md#dead-letter-queues).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Final, Protocol

from gateway.queues import dlq_policy as dead_letters
from gateway.queues.dlq_policy import Moved
from gateway.queues.receipts import Receipt
from gateway.queues.records import Queue, QueueMessage
from gateway.queues.waiters import long_poll
from gateway.store.sql import queue_claims
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql import queue_sql as sql
from gateway.store.sql.connection import Connection

if TYPE_CHECKING:
    from gateway.queues.receipts import ReceiptSigner
    from gateway.queues.waiters import WaiterHub
    from gateway.store.backends.database import Database
    from gateway.store.notify.notifier import Wakeups

#: Expired messages deleted by a receive that is due to purge (about once a minute).
PURGE_BATCH: Final = 1000


@dataclass(frozen=True, slots=True)
class Received:
    """What a receive did: the messages it took, and those it moved to the queue's dead-letter
    queue instead."""

    queue: Queue
    messages: list[QueueMessage]
    moved: list[Moved] = field(default_factory=list)


class ReceivingStore(Protocol):
    """What the receives use of their :class:`~gateway.store.queues.QueueStore` (which imports
    this module: a protocol here rather than an import back)."""

    database: Database
    region: str
    account_id: str
    wakeups: Wakeups
    monotonic: Callable[[], float]

    @property
    def waiters(self) -> WaiterHub: ...

    def now_ms(self) -> int: ...

    def purge_due(self) -> bool: ...

    def new_message_id(self, now_ms: int) -> str: ...

    def notify(self, queue_name: str, count: int | None = None) -> None: ...

    def signer(self) -> ReceiptSigner: ...


class QueueReceiving:
    """The receives of one :class:`~gateway.store.queues.QueueStore`."""

    def __init__(self, store: ReceivingStore, *, recheck_seconds: float) -> None:
        self.store = store
        self.recheck_seconds = recheck_seconds
        #: Ordered queues whose last claim here found nothing: look before claiming again.
        self._look_first: set[str] = set()

    def receive(
        self,
        name: str,
        count: int,
        wait_seconds: int | None,
        client_connected: Callable[[], bool] = lambda: True,
    ) -> Received:
        """Claim up to ``count`` receivable messages; when there are none, long-poll for
        ``wait_seconds`` (``None``: the queue's PollingWaitSeconds). Messages moved to the
        dead-letter queue on the way are reported with the result.

        ``client_connected()`` is asked before every claim: a receive whose client has gone
        claims nothing and its long poll ends (docs/queues.md#clients-that-go-away).
        """
        if not client_connected():
            return Received(self._queue(name), [])
        received = self._first_look(name, count)
        queue = received.queue
        wait = queue.attributes.polling_wait_seconds if wait_seconds is None else wait_seconds
        if received.messages or wait <= 0:
            return received
        moved = list(received.moved)
        deadline = self.store.monotonic() + wait
        self.store.wakeups.listen_for_queues()
        with self.store.waiters.register(name) as waiter:
            if waiter is None:  # over the long-poll limit: MessageNotExist at once
                return received
            found = long_poll(
                waiter,
                partial(self._attempt, name, count, moved),
                deadline=deadline,
                monotonic=self.store.monotonic,
                recheck_seconds=self.recheck_seconds,
                wanted=client_connected,
            )
        if found is None and not client_connected():
            # It may have been woken for a message it will not take: wake another instead.
            self.store.waiters.notify(name, 1)
        return replace(found or received, moved=moved)

    def _queue(self, name: str) -> Queue:
        return self.store.database.read(partial(sql.require_queue, name=name))

    def _first_look(self, name: str, count: int) -> Received:
        """A receive's first claim. After a claim on an ordered queue came back empty, a cheap
        read first: while every group's head is in flight (most receives, with fewer groups
        than consumers) it spares the writer claims that could only come back empty too
        (docs/benchmarks.md#ordered-queues). The claim itself always goes by the queue's
        actual type; this only decides whether to look before claiming."""
        if name in self._look_first:
            queue, ready = self._ready(name)
            if not ready:
                return Received(queue, [])
        received, _ = self._claim(name, count)
        if received.queue.attributes.ordered and not received.messages:
            self._look_first.add(name)
        else:
            self._look_first.discard(name)
        return received

    def _ready(self, name: str) -> tuple[Queue, bool]:
        """The queue, and whether a claim now might get something."""
        now_ms = self.store.now_ms()

        def probe(conn: Connection) -> tuple[Queue, bool]:
            queue = sql.require_queue(conn, name)
            return queue, queue_claims.receivable(conn, queue, now_ms)

        return self.store.database.read(probe)

    def _probe(self, name: str) -> tuple[bool, int | None]:
        """Whether a claim now might get something, and if not, when it might."""
        now_ms = self.store.now_ms()

        def probe(conn: Connection) -> tuple[bool, int | None]:
            queue = sql.require_queue(conn, name)
            ready = queue_claims.receivable(conn, queue, now_ms)
            return ready, None if ready else queue_claims.next_due(conn, queue, now_ms)

        return self.store.database.read(probe)

    def _attempt(
        self, name: str, count: int, moved: list[Moved]
    ) -> tuple[Received | None, float | None]:
        """One look for a long poll: a cheap read first, the writer only if something is ready.
        Moves to the dead-letter queue are added to ``moved``."""
        ready, due = self._probe(name)
        if ready:
            received, due = self._claim(name, count)
            moved += received.moved
            if received.messages:
                return received, None
        return None, None if due is None else max(due - self.store.now_ms(), 0) / 1000

    def _claim(self, name: str, count: int) -> tuple[Received, int | None]:
        """One claim; with nothing claimed, also when something may next be ready."""
        now_ms = self.store.now_ms()
        purge = self.store.purge_due()

        def work(
            conn: Connection,
        ) -> tuple[Queue, list[message_sql.Claimed], list[Moved], int | None]:
            queue = sql.require_queue(conn, name)
            arn = dead_letters.queue_arn(self.store.region, self.store.account_id, name)
            mover = queue_claims.mover_for(
                queue, now_ms=now_ms, source_arn=arn, new_id=self.store.new_message_id
            )
            claimed, moved = queue_claims.claim(conn, queue, count, now_ms=now_ms, mover=mover)
            if purge:
                message_sql.purge_expired(conn, now_ms, PURGE_BATCH)
            due = None if claimed else queue_claims.next_due(conn, queue, now_ms)
            return queue, claimed, moved, due

        queue, claimed, moved, due = self.store.database.write(work)
        for target in {m.dead_letter_queue for m in moved}:
            self.store.notify(target)
        messages = [self._with_handle(name, c) for c in claimed]
        return Received(queue, messages, moved), due

    def _with_handle(self, name: str, claimed: message_sql.Claimed) -> QueueMessage:
        receipt = Receipt(claimed.message_id, claimed.nonce, claimed.next_visible_time)
        return claimed.message(self.store.signer().issue(name, receipt))
