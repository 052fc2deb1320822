"""Queue operations: CreateQueue, SetQueueAttributes, GetQueueAttributes, DeleteQueue and
ListQueue, for every front end (the XML API, the control plane, the console, the command line).

Each takes typed values a front end parsed and applies the operation's rules once: the
attributes' ranges here, whoever built the values; the dead-letter policy's targets (not the
queue itself, a queue that exists) in the store, inside the create's or change's transaction,
the one place that sees the policy as it will be stored.
"""

from __future__ import annotations

from typing import overload

from gateway.observability.operations import Field
from gateway.operations.calls import Call, Caller
from gateway.operations.wiring import Operations
from gateway.protocol.listing import Page, PageQuery
from gateway.protocol.names import validate_name
from gateway.queues.records import (
    MessageCounts,
    Queue,
    QueueAttributes,
    QueueChanges,
    QueueType,
    check_ranges,
)
from gateway.store import Listing, ListQuery
from gateway.store.control import RateLimitPolicy, Tags


def _call(action: str, name: str, caller: Caller) -> Call:
    validate_name("queue", name)
    return Call(action, Field.QUEUE_NAME, name, caller)


def create_queue(
    ops: Operations,
    caller: Caller,
    name: str,
    attributes: QueueAttributes,
    *,
    tags: Tags = (),
    rate_limit: RateLimitPolicy | None = None,
) -> bool:
    """CreateQueue: whether the queue is new (``False``: an identical one exists; a different
    one is 409 ``QueueAlreadyExist``). Its tags and TenantRateLimitPolicy (the control plane's)
    are stored in the same transaction."""

    def work(call: Call) -> bool:
        check_ranges(attributes.values())
        return ops.store.queues.create_queue(name, attributes, tags=tags, rate_limit=rate_limit)

    return ops.hooks.run(_call("CreateQueue", name, caller), work)


def set_queue_attributes(
    ops: Operations,
    caller: Caller,
    name: str,
    changes: QueueChanges,
    *,
    rate_limit: RateLimitPolicy | None = None,
) -> Queue:
    """SetQueueAttributes: only what ``changes`` holds changes (QueueType only to what it is,
    the dead-letter policy field by field), with the TenantRateLimitPolicy, in one
    transaction; the queue as it is now."""

    def work(call: Call) -> Queue:
        check_ranges(changes.values)
        return ops.store.queues.set_queue_attributes(
            name,
            changes.values,
            queue_type=changes.queue_type,
            dead_letter_policy=changes.dead_letter_policy,
            rate_limit=rate_limit,
        )

    return ops.hooks.run(_call("SetQueueAttributes", name, caller), work)


def get_queue(ops: Operations, caller: Caller, name: str) -> tuple[Queue, MessageCounts]:
    """GetQueueAttributes: the queue and its message counts (404 ``QueueNotExist``)."""
    return ops.hooks.run(
        _call("GetQueueAttributes", name, caller), lambda call: ops.store.queues.get_queue(name)
    )


def delete_queue(ops: Operations, caller: Caller, name: str) -> None:
    """DeleteQueue, with all its messages; a missing queue is not an error."""
    ops.hooks.run(
        _call("DeleteQueue", name, caller), lambda call: ops.store.queues.delete_queue(name)
    )


@overload
def list_queues(ops: Operations, caller: Caller, query: PageQuery) -> Page[Queue]: ...


@overload
def list_queues(
    ops: Operations, caller: Caller, query: ListQuery, *, queue_type: QueueType | None = None
) -> Listing[Queue]: ...


def list_queues(
    ops: Operations,
    caller: Caller,
    query: PageQuery | ListQuery,
    *,
    queue_type: QueueType | None = None,
) -> Page[Queue] | Listing[Queue]:
    """ListQueue: a page by marker (:class:`PageQuery`: the XML API, the console), or a
    numbered page filtered by tags and QueueType (:class:`ListQuery`: the control plane)."""

    def work(call: Call) -> Page[Queue] | Listing[Queue]:
        if isinstance(query, PageQuery):
            return ops.store.queues.list_queues(query.prefix, query.marker, query.limit)
        return ops.store.control.list_queues(query, queue_type)

    return ops.hooks.run(Call("ListQueue", Field.QUEUE_NAME, query.prefix, caller), work)
