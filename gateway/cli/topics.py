"""``mns-gateway topics``: list topics, show one with its subscriptions; and
``mns-gateway subscriptions list TOPIC`` (docs/delivery.md). Also what every command that names
a topic or a subscription uses to say one is not there, in the same words as ``queues``."""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING, Any

from gateway.cli.common import (
    Commands,
    does_not_exist,
    emit,
    existing_settings,
    iso_utc,
    on_store,
    with_data_dir,
    with_json,
)
from gateway.config.settings import Settings
from gateway.errors import ExitCode
from gateway.errors.mns import ErrorCode, MNSError

if TYPE_CHECKING:
    from gateway.store import Store
    from gateway.topics.records import Subscription, Topic

LIST_LIMIT = 1000


def existing_topic(store: Store, name: str) -> tuple[Topic, int]:
    """The topic and its message count; "topic NAME does not exist" if there is none."""
    try:
        return store.topics.get_topic(name)
    except MNSError as error:
        if error.code is ErrorCode.TOPIC_NOT_EXIST:
            raise does_not_exist("topic", name) from None
        raise


def existing_subscription(store: Store, topic: str, name: str) -> Subscription:
    """The subscription; its topic or itself not there is one line naming which."""
    existing_topic(store, topic)
    try:
        return store.topics.get_subscription(topic, name)
    except MNSError as error:
        if error.code is ErrorCode.SUBSCRIPTION_NOT_EXIST:
            raise does_not_exist("subscription", f"{topic}/{name}") from None
        raise


def topic_document(topic: Topic, messages: int | None = None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "TopicName": topic.name,
        "CreateTime": topic.create_time,
        "LastModifyTime": topic.last_modify_time,
        "MaximumMessageSize": topic.maximum_message_size,
        "LoggingEnabled": topic.logging_enabled,
    }
    if messages is not None:
        document["MessageCount"] = messages
    return document


def subscription_row(subscription: Subscription) -> dict[str, Any]:
    return {
        "TopicName": subscription.topic_name,
        "SubscriptionName": subscription.name,
        "Endpoint": subscription.endpoint,
        "NotifyStrategy": subscription.notify_strategy.value,
        "NotifyContentFormat": subscription.notify_content_format.value,
        "FilterTag": subscription.filter_tag,
    }


def subscriptions_of(store: Store, topic: str) -> list[dict[str, Any]]:
    existing_topic(store, topic)
    page = store.topics.list_subscriptions(topic, "", "", LIST_LIMIT)
    return [subscription_row(subscription) for subscription in page.items]


def run(args: argparse.Namespace, store: Store, settings: Settings) -> dict[str, Any]:
    """One ``topics`` action; the document to print."""
    if args.action == "list":
        page = store.topics.list_topics(args.name or "", "", LIST_LIMIT)
        return {"Topics": [topic_document(topic) for topic in page.items]}
    topic, messages = existing_topic(store, args.name)
    return {
        **topic_document(topic, messages),
        "Subscriptions": subscriptions_of(store, args.name),
    }


def describe_topics(document: dict[str, Any]) -> str:
    if "Topics" in document:
        rows = [
            f"{t['TopicName']}  created {iso_utc(t['CreateTime'] * 1000)}"
            + ("  logging on" if t["LoggingEnabled"] else "")
            for t in document["Topics"]
        ]
        return "\n".join(rows) or "no topics"
    head = [
        f"TopicName: {document['TopicName']}",
        f"CreateTime: {iso_utc(document['CreateTime'] * 1000)}",
        f"LastModifyTime: {iso_utc(document['LastModifyTime'] * 1000)}",
        f"MaximumMessageSize: {document['MaximumMessageSize']}",
        f"LoggingEnabled: {str(document['LoggingEnabled']).lower()}",
        f"MessageCount: {document['MessageCount']}",
        f"Subscriptions: {len(document['Subscriptions'])}",
    ]
    return "\n".join([*head, describe_subscriptions(document)])


def describe_subscriptions(document: dict[str, Any]) -> str:
    rows = [
        f"{s['SubscriptionName']}  {s['Endpoint']}  {s['NotifyStrategy']}"
        f"  {s['NotifyContentFormat']}" + (f"  tag {s['FilterTag']}" if s["FilterTag"] else "")
        for s in document["Subscriptions"]
    ]
    return "\n".join(rows) or "no subscriptions"


def topics(args: argparse.Namespace) -> int:
    emit(args, on_store(existing_settings, args, partial(run, args)), describe_topics)
    return ExitCode.OK


def list_subscriptions(args: argparse.Namespace) -> int:
    """``subscriptions list TOPIC``: the topic's subscriptions."""

    def work(store: Store, settings: Settings) -> dict[str, Any]:
        return {"TopicName": args.topic, "Subscriptions": subscriptions_of(store, args.topic)}

    emit(args, on_store(existing_settings, args, work), describe_subscriptions)
    return ExitCode.OK


def add_command(commands: Commands) -> None:
    parser = commands.add_parser("topics", help="list topics; show one with its subscriptions")
    parser.add_argument(
        "action",
        choices=("list", "show"),
        help="list (NAME: a prefix), show a topic with its subscriptions",
    )
    parser.add_argument("name", nargs="?", help="the topic (for list: only names starting so)")
    with_json(parser)
    with_data_dir(parser)
    parser.set_defaults(handler=topics, needs={"show": ("name", "a topic name")})
