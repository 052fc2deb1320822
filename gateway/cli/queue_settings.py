"""The settings the 2015-06-06 XML API has no element of its own for, from the command line:
a queue's QueueType and dead-letter policy, a subscription's dead-letter queue
(``mns-gateway queues`` and ``mns-gateway subscriptions``; docs/queues.md#from-the-command-line).

The same rules as the XML API apply, because the same store operations and checks run: a queue
is typed at creation only, a policy names an existing queue other than its own, and a queue
subscription's dead-letter queue is not the queue it pushes to.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.cli.common import SettingsFor, emit, on_store, with_data_dir, with_json
from gateway.config.settings import Settings
from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate, parse_policy_fields
from gateway.queues.records import Queue, QueueAttributes, QueueType
from gateway.topics.queue_targets import check_queue_targets
from gateway.topics.records import Subscription

if TYPE_CHECKING:
    from gateway.store.base import Store


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
    store: Store, name: str, queue_type: QueueType, update: PolicyUpdate | None
) -> Queue:
    """CreateQueue with the service's defaults, typed and with a policy (201 or 204 rules)."""
    policy = update.apply(None, receive_count=True) if update else None
    attributes = QueueAttributes(queue_type=queue_type, dead_letter_policy=policy)
    store.queues.create_queue(name, attributes)
    return store.queues.get_queue(name)[0]


def set_queue(store: Store, name: str, update: PolicyUpdate) -> Queue:
    return store.queues.set_queue_attributes(name, {}, dead_letter_policy=update)


def set_subscription(
    store: Store, settings: Settings, topic_name: str, name: str, update: PolicyUpdate
) -> Subscription:
    """SetSubscriptionAttributes' DlqPolicy, with Subscribe's checks of the queues it names."""
    current = store.topics.get_subscription(topic_name, name)
    changed = replace(
        current, dead_letter_policy=update.apply(current.dead_letter_policy, receive_count=False)
    )
    check_queue_targets(changed, settings, store.queues.queue_exists)
    store.topics.set_dead_letter_policy(topic_name, name, changed.dead_letter_policy)
    return store.topics.get_subscription(topic_name, name)


def policy_update(
    target: str | None, max_receive_count: str | None, enabled: str | None
) -> PolicyUpdate | None:
    """The policy fields given on the command line, checked as the XML API checks them."""
    if target is None and max_receive_count is None and enabled is None:
        return None
    return parse_policy_fields(target, max_receive_count, enabled)


def run(args: argparse.Namespace, store: Store, settings: Settings) -> dict[str, Any]:
    """One ``queues`` or ``subscriptions`` command; the document to print."""
    count = getattr(args, "max_receive_count", None)
    update = policy_update(args.dlq_target, count, args.dlq_enabled)
    if args.command == "subscriptions":
        if args.action == "set" and update is not None:
            changed = set_subscription(store, settings, args.topic, args.name, update)
            return subscription_document(changed)
        return subscription_document(store.topics.get_subscription(args.topic, args.name))
    if args.action == "create":
        queue = create_queue(store, args.name, QueueType.parse(args.type), update)
    elif args.action == "set" and update is not None:
        queue = set_queue(store, args.name, update)
    else:
        queue = store.queues.get_queue(args.name)[0]
    return queue_document(queue)


def run_command(settings_for: SettingsFor, args: argparse.Namespace) -> int:
    """A ``queues`` or ``subscriptions`` command on the store of this data dir or database."""
    emit(args, on_store(settings_for, args, partial(run, args)), describe)
    return 0


def add_queue_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], settings_for: SettingsFor
) -> None:
    """``settings_for(args)``: the command line's settings (flags over the environment)."""
    queues = commands.add_parser(
        "queues", help="create a typed queue, show or set its dead-letter policy"
    )
    queues.add_argument("action", choices=("create", "set", "show"))
    queues.add_argument("name")
    queues.add_argument("--type", default="normal", help="create: normal (default) or fifo")
    queues.add_argument("--max-receive-count", help="receives before a message is dead-lettered")
    subscriptions = commands.add_parser(
        "subscriptions", help="show or set a subscription's dead-letter queue"
    )
    subscriptions.add_argument("action", choices=("set", "show"))
    subscriptions.add_argument("topic")
    subscriptions.add_argument("name")
    for parser in (queues, subscriptions):
        parser.add_argument("--dlq-target", help="the dead-letter queue's name")
        parser.add_argument("--dlq-enabled", choices=("true", "false"))
        with_data_dir(parser)
        with_json(parser)
        parser.set_defaults(handler=partial(run_command, settings_for))
