"""The settings the 2015-06-06 XML API has no element of its own for, from the command line:
a queue's QueueType and dead-letter policy, a subscription's dead-letter queue: the operations
and documents that ``mns-gateway queues`` and ``mns-gateway subscriptions`` share
(:mod:`gateway.cli.queues`, :mod:`gateway.cli.subscriptions`;
docs/queues.md#from-the-command-line).

The same rules as the XML API apply, because the same operations run
(:mod:`gateway.operations`): a queue is typed at creation only, a policy names an existing queue
other than its own, and a queue subscription's dead-letter queue is not the queue it pushes to.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli.common import with_data_dir, with_json
from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate, parse_policy_fields
from gateway.queues.records import Queue, QueueAttributes, QueueChanges, QueueType
from gateway.topics.records import Subscription

if TYPE_CHECKING:
    from gateway.operations import Operations


def _policy(policy: DeadLetterPolicy | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    document: dict[str, Any] = {"DeadLetterTargetQueue": policy.target_queue}
    if policy.max_receive_count is not None:
        document["MaxReceiveCount"] = policy.max_receive_count
    return {**document, "Enabled": policy.enabled}


def queue_document(queue: Queue) -> dict[str, Any]:
    a = queue.attributes
    return {
        "QueueName": queue.name,
        "QueueType": a.queue_type.value,
        "VisibilityTimeout": a.visibility_timeout,
        "DlqPolicy": _policy(a.dead_letter_policy),
    }


def subscription_document(subscription: Subscription) -> dict[str, Any]:
    return {
        "TopicName": subscription.topic_name,
        "SubscriptionName": subscription.name,
        "Endpoint": subscription.endpoint,
        "DlqPolicy": _policy(subscription.dead_letter_policy),
    }


def describe(document: dict[str, Any]) -> str:
    """One ``Key: value`` line each, the policy's fields on one line."""
    lines = []
    for key, value in document.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        lines.append(f"{key}: {'-' if value is None else value}")
    return "\n".join(lines)


def create_queue(
    ops: Operations, name: str, queue_type: QueueType, update: PolicyUpdate | None
) -> Queue:
    """CreateQueue with the service's defaults, typed and with a policy (201 or 204 rules)."""
    from gateway.operations import queues
    from gateway.operations.calls import local_caller

    policy = update.apply(None, receive_count=True) if update else None
    attributes = QueueAttributes(queue_type=queue_type, dead_letter_policy=policy)
    queues.create_queue(ops, local_caller(), name, attributes)
    return queues.get_queue(ops, local_caller(), name)[0]


def set_queue(ops: Operations, name: str, update: PolicyUpdate) -> Queue:
    from gateway.operations import queues
    from gateway.operations.calls import local_caller

    changes = QueueChanges(dead_letter_policy=update)
    return queues.set_queue_attributes(ops, local_caller(), name, changes)


def set_subscription(
    ops: Operations, topic_name: str, name: str, update: PolicyUpdate
) -> Subscription:
    """SetSubscriptionAttributes' DlqPolicy, with Subscribe's checks of the queues it names."""
    from gateway.operations import subscriptions
    from gateway.operations.calls import local_caller

    subscriptions.set_subscription_attributes(ops, local_caller(), topic_name, name, None, update)
    return subscriptions.get_subscription(ops, local_caller(), topic_name, name)


def policy_update(
    target: str | None, max_receive_count: str | None, enabled: str | None
) -> PolicyUpdate | None:
    """The policy fields given on the command line, checked as the XML API checks them."""
    if target is None and max_receive_count is None and enabled is None:
        return None
    return parse_policy_fields(target, max_receive_count, enabled)


def add_policy_options(parser: argparse.ArgumentParser) -> None:
    """The dead-letter options both commands take, and where they work."""
    parser.add_argument("--dlq-target", help="the dead-letter queue's name")
    parser.add_argument(
        "--dlq-enabled", choices=("true", "false"), help="turn the dead-letter policy on or off"
    )
    with_data_dir(parser)
    with_json(parser)
