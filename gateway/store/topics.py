"""Topic, subscription and publish operations over a :class:`~gateway.store.base.Database`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from gateway.errors.mns import MNSError
from gateway.protocol.listing import Page
from gateway.protocol.notify import NotifyStrategy
from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.message_ids import MessageIdFactory
from gateway.store.backends.database import Database
from gateway.store.control import RateLimitPolicy, Tags, change_rate_limit, give_created
from gateway.store.notify.notifier import Wakeups
from gateway.store.sql import topic_sql as sql
from gateway.store.sql.connection import Connection
from gateway.topics.records import (
    PolicyChange,
    PublishDraft,
    Published,
    Subscription,
    Topic,
    TopicMessage,
    subscription_resource,
)


class TopicStore:
    def __init__(
        self,
        database: Database,
        clock: Callable[[], float],
        *,
        wakeups: Wakeups,
        ids: MessageIdFactory,
    ) -> None:
        self.database = database
        self.clock = clock
        self.wakeups = wakeups
        self._ids = ids

    def now_seconds(self) -> int:
        return int(self.clock())

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    def new_message_id(self, now_ms: int) -> str:
        """A MessageId that sorts by publish time and is unique across processes and hosts."""
        return self._ids.new_id(now_ms)

    # topics -----------------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        maximum_message_size: int,
        logging_enabled: bool,
        *,
        tags: Tags = (),
    ) -> bool:
        """True when created, False for an identical one (409 for a different one). Its
        ``tags`` (the control plane's) are written in the same transaction, also onto an
        identical topic: a refused tag leaves no topic."""
        now = self.now_seconds()
        topic = Topic.new(name, now, maximum_message_size, logging_enabled)

        def work(conn: Connection) -> bool:
            created = sql.create_topic(conn, topic)
            give_created(conn, "topic", name, tags)
            return created

        return self.database.write(work)

    def set_topic_attributes(
        self, name: str, maximum_message_size: int | None, logging_enabled: bool | None
    ) -> None:
        now = self.now_seconds()
        self.database.write(
            lambda c: sql.set_topic_attributes(c, name, maximum_message_size, logging_enabled, now)
        )

    def get_topic(self, name: str) -> tuple[Topic, int]:
        """The topic and its current message count."""
        now_ms = self.now_ms()

        def work(conn: Connection) -> tuple[Topic, int]:
            return sql.require_topic(conn, name), sql.message_count(conn, name, now_ms)

        return self.database.read(work)

    def delete_topic(self, name: str) -> None:
        self.database.write(partial(sql.delete_topic, name=name))

    def list_topics(self, prefix: str, marker: str, limit: int) -> Page[Topic]:
        return self.database.read(lambda c: sql.list_topics(c, prefix, marker, limit))

    # subscriptions ----------------------------------------------------------------------------
    def subscribe(
        self, subscription: Subscription, *, rate_limit: RateLimitPolicy | None = None
    ) -> bool:
        """As :meth:`create_topic`, for a subscription and its TenantRateLimitPolicy (the
        control plane's)."""
        resource = subscription_resource(subscription.topic_name, subscription.name)

        def work(conn: Connection) -> bool:
            created = sql.subscribe(conn, subscription)
            give_created(conn, "subscription", resource, (), rate_limit)
            return created

        return self.database.write(work)

    def set_subscription_attributes(
        self,
        topic_name: str,
        name: str,
        *,
        strategy: NotifyStrategy | None = None,
        policy: PolicyChange | None = None,
        rate_limit: RateLimitPolicy | None = None,
    ) -> None:
        """SetSubscriptionAttributes' changes in one transaction: the NotifyStrategy, the
        dead-letter policy (``policy``, when it changes: its new value, ``None`` inside for
        none), the TenantRateLimitPolicy (the control plane's); ``None``: unchanged."""
        now = self.now_seconds()
        resource = subscription_resource(topic_name, name)

        def work(conn: Connection) -> None:
            if strategy is not None:
                sql.set_notify_strategy(conn, topic_name, name, strategy, now)
            if policy is not None:
                sql.set_dead_letter_policy(conn, topic_name, name, policy.policy, now)
            change_rate_limit(conn, "subscription", resource, rate_limit)

        self.database.write(work)

    def set_notify_strategy(self, topic_name: str, name: str, strategy: NotifyStrategy) -> None:
        now = self.now_seconds()
        self.database.write(lambda c: sql.set_notify_strategy(c, topic_name, name, strategy, now))

    def set_dead_letter_policy(
        self, topic_name: str, name: str, policy: DeadLetterPolicy | None
    ) -> None:
        now = self.now_seconds()
        self.database.write(lambda c: sql.set_dead_letter_policy(c, topic_name, name, policy, now))

    def get_subscription(self, topic_name: str, name: str) -> Subscription:
        found = self.database.read(lambda c: sql.get_subscription(c, topic_name, name))
        if found is None:
            raise MNSError("SubscriptionNotExist")
        return found

    def unsubscribe(self, topic_name: str, name: str) -> None:
        self.database.write(lambda c: sql.unsubscribe(c, topic_name, name))

    def list_subscriptions(
        self, topic_name: str, prefix: str, marker: str, limit: int
    ) -> Page[Subscription]:
        return self.database.read(
            lambda c: sql.list_subscriptions(c, topic_name, prefix, marker, limit)
        )

    # messages ---------------------------------------------------------------------------------
    def publish(self, message: TopicMessage) -> Published:
        """Store the message with its deliveries, then wake delivery workers everywhere."""
        published = self.database.write(sql.publishing(message))
        if published.deliveries:
            self.wakeups.announce_deliveries()
        return published

    def publish_draft(self, draft: PublishDraft) -> tuple[TopicMessage, Published]:
        """Give ``draft`` its MessageId and publish time, then publish it (:meth:`publish`)."""
        now_ms = self.now_ms()
        message = draft.stamped(self.new_message_id(now_ms), now_ms)
        return message, self.publish(message)

    def publish_all(self, messages: Sequence[TopicMessage]) -> list[Published]:
        """Publish ``messages`` in one transaction (all or, if one fails, none)."""
        published = self.database.write(lambda c: [sql.publish(c, m) for m in messages])
        if any(p.deliveries for p in published):
            self.wakeups.announce_deliveries()
        return published
