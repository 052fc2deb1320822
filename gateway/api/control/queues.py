"""Queue operations of the control plane: CreateQueue, DeleteQueue, GetQueueAttributes,
SetQueueAttributes, ListQueue.

Its parameters parsed, then the operations of every front end (:mod:`gateway.operations.queues`,
the XML API's too): a queue created here is the queue ``/queues/<name>`` answers for, checked by
the same rules.
"""

from __future__ import annotations

from typing import Any, Final

from gateway.api.control import documents, policies
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params, page_data
from gateway.operations import queues as operations
from gateway.operations import tags
from gateway.queues.records import QUEUE_RANGES, QueueAttributes, QueueChanges, QueueType
from gateway.store import ListQuery

RESOURCE: Final = "queue"
#: Parameter name -> QueueAttributes field (the ranges are the XML API's elements').
_NUMBERS: Final = {
    "DelaySeconds": "delay_seconds",
    "MaximumMessageSize": "maximum_message_size",
    "MessageRetentionPeriod": "message_retention_period",
    "VisibilityTimeout": "visibility_timeout",
    "PollingWaitSeconds": "polling_wait_seconds",
}


def attribute_changes(params: Params) -> dict[str, int | bool]:
    """The attributes sent, by QueueAttributes field, each checked against its range."""
    changes: dict[str, int | bool] = {}
    for attribute in QUEUE_RANGES:
        value = attribute.parse(params.optional(attribute.element), None)
        if value is not None:
            changes[_NUMBERS[attribute.element]] = value
    logging = params.boolean("EnableLogging")
    if logging is not None:
        changes["logging_enabled"] = logging
    return changes


def create_queue(params: Params, ctx: ControlContext) -> Any:
    name = params.name("queue", "QueueName")
    update = policies.dead_letter_update(params)
    # Not the queue itself, and a queue that exists: checked once, by the store, inside the
    # create's transaction (gateway.store.queues).
    policy = update.apply(None, receive_count=True) if update else None
    queue_type = params.optional("QueueType")
    attributes = QueueAttributes(
        **attribute_changes(params),  # type: ignore[arg-type]
        queue_type=QueueType.parse(queue_type) if queue_type else QueueType.NORMAL,
        dead_letter_policy=policy,
    )
    # Everything is checked before anything is written; the queue, its tags and its policy are
    # then one transaction (an identical queue again: its tags and policy set as asked).
    operations.create_queue(
        ctx.operations,
        ctx.caller,
        name,
        attributes,
        tags=params.tags(),
        rate_limit=policies.rate_limit(params),
    )
    return documents.DONE


def set_queue_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("queue", "QueueName")
    changes = QueueChanges(
        attribute_changes(params), dead_letter_policy=policies.dead_letter_update(params)
    )
    rate_limit = policies.rate_limit(params)
    operations.set_queue_attributes(
        ctx.operations, ctx.caller, name, changes, rate_limit=rate_limit
    )
    return documents.DONE


def get_queue_attributes(params: Params, ctx: ControlContext) -> Any:
    name = params.name("queue", "QueueName")
    queue, counts = operations.get_queue(ctx.operations, ctx.caller, name)
    extras = tags.extras(ctx.operations, ctx.caller, RESOURCE, [name])
    return documents.queue(queue, counts, extras.tags.get(name, []), extras.rate_limits.get(name))


def delete_queue(params: Params, ctx: ControlContext) -> Any:
    operations.delete_queue(ctx.operations, ctx.caller, params.name("queue", "QueueName"))
    return documents.DONE


def list_queue(params: Params, ctx: ControlContext) -> Any:
    number, size = params.page()
    queue_type = params.optional("QueueType")
    wanted = QueueType.parse(queue_type) if queue_type else None
    query = ListQuery(
        params.optional("QueueName") or "",
        params.tags(values_required=False),
        (number - 1) * size,
        size,
    )
    listing = operations.list_queues(ctx.operations, ctx.caller, query, queue_type=wanted)
    names = [q.name for q in listing.items]
    extras = tags.extras(ctx.operations, ctx.caller, RESOURCE, names)
    items = [
        documents.queue(q, None, extras.tags.get(q.name, []), extras.rate_limits.get(q.name))
        for q in listing.items
    ]
    return page_data(items, listing.total, number, size)


OPERATIONS: Final[dict[str, Operation]] = {
    "CreateQueue": create_queue,
    "DeleteQueue": delete_queue,
    "GetQueueAttributes": get_queue_attributes,
    "SetQueueAttributes": set_queue_attributes,
    "ListQueue": list_queue,
}
