"""Queue message operations: (Batch)SendMessage, (Batch)ReceiveMessage, (Batch)PeekMessage,
(Batch)DeleteMessage and ChangeMessageVisibility, for every front end.

Each takes parsed, typed values (drafts a wire parser checked, receipt handles, counts) and
returns what happened as a typed result the front end renders: a batch's per-entry failures are
values in the result, not exceptions, because the wire formats answer them entry by entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gateway.errors.mns import MNSError
from gateway.observability.operations import Action, Field, RequestFacts
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.names import validate_name
from gateway.queues import oplog_records as oplog
from gateway.queues.dlq_policy import Moved
from gateway.queues.records import (
    MAX_BATCH,
    NewMessage,
    Queue,
    QueueMessage,
    SentMessage,
    VisibilityChange,
)


def _call(action: Action, name: str, caller: Caller, kind: str) -> Call:
    validate_name("queue", name)
    return Call(action, Field.QUEUE_NAME, name, caller, kind)


@dataclass(frozen=True)
class Sent:
    """What a send stored: per message of the request, in its order, the stored message or the
    error that kept it out (a batch's entries that failed to parse included)."""

    queue: Queue
    results: list[SentMessage | MNSError]

    @property
    def sent(self) -> list[SentMessage]:
        return [r for r in self.results if isinstance(r, SentMessage)]

    @property
    def failed(self) -> list[MNSError]:
        return [r for r in self.results if isinstance(r, MNSError)]

    @property
    def logging_enabled(self) -> bool:
        return self.queue.attributes.logging_enabled

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        return oplog.sent_records(facts, Action(action), self.sent)


def send(ops: Operations, caller: Caller, name: str, draft: NewMessage) -> SentMessage:
    """SendMessage: one message stored, or its error raised."""

    def work(call: Call) -> Sent:
        queue, results = ops.store.queues.send(name, ops.hooks.drafted(call, [draft]))
        return Sent(queue, results)

    result = ops.hooks.run(_call(Action.SEND_MESSAGE, name, caller, "send"), _unless_failed(work))
    return result.sent[0]


def _unless_failed(work: Callable[[Call], Sent]) -> Callable[[Call], Sent]:
    """A single send whose one message failed is the operation's failure (its hooks see the
    error, not a result)."""

    def checked(call: Call) -> Sent:
        result = work(call)
        if result.failed:
            raise result.failed[0]
        return result

    return checked


def send_batch(
    ops: Operations, caller: Caller, name: str, drafts: Sequence[NewMessage | MNSError]
) -> Sent:
    """BatchSendMessage: the entries that parsed are stored together; each entry's outcome is in
    the result, in the request's order."""

    def work(call: Call) -> Sent:
        valid = [d for d in drafts if not isinstance(d, MNSError)]
        queue, stored = ops.store.queues.send(name, ops.hooks.drafted(call, valid))
        outcomes = iter(stored)
        return Sent(queue, [d if isinstance(d, MNSError) else next(outcomes) for d in drafts])

    return ops.hooks.run(_call(Action.BATCH_SEND_MESSAGE, name, caller, "send"), work)


@dataclass(frozen=True)
class Received:
    """What a receive took, and what it moved to the queue's dead-letter queue instead (moved
    whether or not the response reaches the client)."""

    queue: Queue
    messages: list[QueueMessage]
    moved: list[Moved] = field(default_factory=list)

    @property
    def logging_enabled(self) -> bool:
        return self.queue.attributes.logging_enabled

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        records = oplog.received_records(facts, Action(action), self.messages)
        return records + oplog.dead_lettered_records(facts, self.moved)


def receive(
    ops: Operations,
    caller: Caller,
    name: str,
    batch: int | None,
    wait: int | None,
    connected: Callable[[], bool] = lambda: True,
) -> Received:
    """(Batch)ReceiveMessage within the queue's TenantRateLimitPolicy: a receive past this
    second's MaxReceivesPerSecond is 429 ``TooManyRequests``, one near it gets fewer messages
    (docs/control-plane.md#tenantratelimitpolicy). ``batch`` is None for a single receive."""
    action = Action.RECEIVE_MESSAGE if batch is None else Action.BATCH_RECEIVE_MESSAGE
    wanted = batch or 1

    def work(call: Call) -> Received:
        grant = ops.receive_limits.take(name, wanted)
        if grant is not None and grant.count == 0:
            raise MNSError("TooManyRequests")
        taken = 0
        try:
            count = wanted if grant is None else grant.count
            result = ops.store.queues.receive(name, count, wait, client_connected=connected)
            taken = len(result.messages)
        finally:
            ops.receive_limits.settle(grant, taken)
        return Received(result.queue, result.messages, result.moved)

    return ops.hooks.run(_call(action, name, caller, "receive"), work)


def peek(ops: Operations, caller: Caller, name: str, batch: int | None) -> list[QueueMessage]:
    """(Batch)PeekMessage: what a receive would get now, state unchanged."""
    action = "PeekMessage" if batch is None else "BatchPeekMessage"
    return ops.hooks.run(
        _call(action, name, caller, ""), lambda call: ops.store.queues.peek(name, batch or 1)[1]
    )


def release(ops: Operations, name: str, messages: Sequence[QueueMessage]) -> int:
    """Undo the receive that handed out ``messages``, for a response that was not written
    (docs/queues.md#clients-that-go-away)."""
    return ops.store.queues.release(name, messages)


@dataclass(frozen=True)
class Deleted:
    """Per receipt handle of the request, the MessageId it deleted or why it could not."""

    queue: Queue
    handles: list[str]
    results: list[str | MNSError]

    @property
    def failed(self) -> list[tuple[MNSError, str]]:
        pairs = zip(self.results, self.handles, strict=True)
        return [(r, h) for r, h in pairs if isinstance(r, MNSError)]

    @property
    def logging_enabled(self) -> bool:
        return self.queue.attributes.logging_enabled

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        pairs = zip(self.results, self.handles, strict=True)
        deleted = [(r, h) for r, h in pairs if isinstance(r, str)]
        return oplog.deleted_records(facts, Action(action), deleted)


def delete(ops: Operations, caller: Caller, name: str, handle: str | None) -> str:
    """DeleteMessage by receipt handle; the deleted MessageId."""

    def work(call: Call) -> Deleted:
        if not handle:
            raise MNSError("MissingReceiptHandle")
        queue, message_id = ops.store.queues.delete_message(name, handle)
        return Deleted(queue, [handle], [message_id])

    result = ops.hooks.run(_call(Action.DELETE_MESSAGE, name, caller, "settle"), work)
    return str(result.results[0])


def delete_batch(ops: Operations, caller: Caller, name: str, handles: list[str]) -> Deleted:
    """BatchDeleteMessage: 1 to 16 handles, each deleted or failed on its own."""

    def work(call: Call) -> Deleted:
        if not 1 <= len(handles) <= MAX_BATCH:
            raise MNSError(
                "InvalidArgument",
                f"The count of receipt handles should between 1 and {MAX_BATCH}.",
            )
        queue, results = ops.store.queues.delete_messages(name, handles)
        return Deleted(queue, handles, results)

    return ops.hooks.run(_call(Action.BATCH_DELETE_MESSAGE, name, caller, "settle"), work)


@dataclass(frozen=True)
class VisibilityChanged:
    queue: Queue
    handle: str
    change: VisibilityChange

    @property
    def logging_enabled(self) -> bool:
        return self.queue.attributes.logging_enabled

    def log_records(self, facts: RequestFacts, action: Action | str) -> list[dict]:
        return [oplog.visibility_record(facts, self.handle, self.change)]


def change_visibility(
    ops: Operations, caller: Caller, name: str, handle: str, seconds: int
) -> VisibilityChange:
    """ChangeMessageVisibility: a new handle and NextVisibleTime; the old handle is spent."""

    def work(call: Call) -> VisibilityChanged:
        queue, change = ops.store.queues.change_visibility(name, handle, seconds)
        return VisibilityChanged(queue, handle, change)

    call = _call(Action.CHANGE_MESSAGE_VISIBILITY, name, caller, "settle")
    return ops.hooks.run(call, work).change
