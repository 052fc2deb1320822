"""The control plane's writes beside a create, on each backend: a queue, topic or subscription
and the tags and policy the create gives it are one transaction, so a failure between the two
(a refused tag, a crash) leaves neither (docs/control-plane.md#tags)."""

from __future__ import annotations

import pytest

from gateway.errors.control import TagLimitError
from gateway.queues.records import QueueAttributes
from gateway.store.base import Store, compose_store
from gateway.store.control import RateLimitPolicy
from gateway.store.sql.connection import Connection
from gateway.store.sql.control_sql import subscription_resource
from gateway.topics.records import Subscription
from tests.conftest import OpenDatabase
from tests.gateway.store.queue_helpers import error_code
from tests.support.clock import Clock

POLICY = RateLimitPolicy(enabled=True, max_per_second=5)


class Crash(Exception):
    """Stands for the process dying after the resource's row is written."""


@pytest.fixture()
def store(open_database: OpenDatabase) -> Store:
    return compose_store(open_database(), clock=Clock())


def crash_after(store: Store, resource_type: str, name: str) -> object:
    """Writes the tags and policy of a create, then fails inside its transaction."""
    write = store.control.beside_create(resource_type, name, [("k", "v")], POLICY, 20)

    def work(conn: Connection) -> None:
        write(conn)
        raise Crash

    return work


def test_a_queue_and_what_its_create_gives_it_are_one_transaction(store: Store) -> None:
    with pytest.raises(Crash):
        store.queues.create_queue("q", QueueAttributes(), beside=crash_after(store, "queue", "q"))
    assert error_code(lambda: store.queues.get_queue("q")) == "QueueNotExist"
    assert store.control.tags("queue", "q") == []
    assert store.control.rate_limit("queue", "q") is None
    beside = store.control.beside_create("queue", "q", [("k", "v")], POLICY, 20)
    assert store.queues.create_queue("q", QueueAttributes(), beside=beside) is True
    assert store.control.tags("queue", "q") == [("k", "v")]
    assert store.control.rate_limit("queue", "q") == POLICY


def test_a_topic_and_a_subscription_too(store: Store) -> None:
    topics = store.topics
    with pytest.raises(Crash):
        topics.create_topic("t", 65536, False, beside=crash_after(store, "topic", "t"))
    assert error_code(lambda: topics.get_topic("t")) == "TopicNotExist"
    assert store.control.tags("topic", "t") == []
    topics.create_topic("t", 65536, False)
    subscription = Subscription("t", "s", "http://127.0.0.1:9/", create_time=1, last_modify_time=1)
    resource = subscription_resource("t", "s")
    write = store.control.beside_create("subscription", resource, (), POLICY, 20)

    def crash(conn: Connection) -> None:
        write(conn)
        raise Crash

    with pytest.raises(Crash):
        topics.subscribe(subscription, beside=crash)
    assert error_code(lambda: topics.get_subscription("t", "s")) == "SubscriptionNotExist"
    assert store.control.rate_limit("subscription", resource) is None


def test_a_create_again_over_the_tag_limit_changes_nothing(store: Store) -> None:
    tags = [(f"k{i}", "v") for i in range(15)]
    beside = store.control.beside_create("queue", "q", tags, None, 20)
    store.queues.create_queue("q", QueueAttributes(), beside=beside)
    more = [(f"n{i}", "v") for i in range(6)]
    beside = store.control.beside_create("queue", "q", more, POLICY, 20)
    with pytest.raises(TagLimitError):
        store.queues.create_queue("q", QueueAttributes(), beside=beside)
    assert len(store.control.tags("queue", "q")) == 15
    assert store.control.rate_limit("queue", "q") is None


def test_tagging_several_resources_is_all_or_none(store: Store) -> None:
    store.queues.create_queue("a", QueueAttributes())
    assert error_code(lambda: store.control.tag("queue", ["a", "gone"], [("k", "v")], 20)) == (
        "QueueNotExist"
    )
    assert store.control.tags("queue", "a") == []
    store.control.tag("queue", ["a"], [(f"k{i}", "v") for i in range(20)], 20)
    with pytest.raises(TagLimitError):
        store.control.tag("queue", ["a"], [("one-more", "v")], 20)
    store.control.tag("queue", ["a"], [("k0", "again")], 20)  # a key it has: not one more
    assert ("k0", "again") in store.control.tags("queue", "a")
