"""A create takes its tags and rate-limit policy as arguments, on each backend: a queue, topic
or subscription and the tags and policy the create gives it are one write transaction, so a
failure between the two (a refused tag, a crash) leaves neither (docs/control-plane.md#tags)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from gateway.errors.control import TagLimitError
from gateway.queues.records import QueueAttributes
from gateway.store.backends.database import Database
from gateway.store.base import Store, compose_store
from gateway.store.control import MAX_TAGS, RateLimitPolicy
from gateway.store.sql.connection import Connection
from gateway.topics.records import Subscription, subscription_resource
from tests.conftest import OpenDatabase
from tests.gateway.store.queue_helpers import error_code
from tests.support.clock import Clock

POLICY = RateLimitPolicy(enabled=True, max_per_second=5)
T = TypeVar("T")


class Crash(Exception):
    """Stands for the process dying after everything a write's work wrote."""


class Watched:
    """The test's database, counting write transactions; with ``crash`` set, a write fails
    inside its transaction after its work ran, so everything the work wrote is rolled back."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.writes = 0
        self.crash = False

    def write(self, work: Callable[[Connection], T], *, durable: bool = True) -> T:
        self.writes += 1

        def then_crash(conn: Connection) -> T:
            done = work(conn)
            if self.crash:
                raise Crash
            return done

        return self.database.write(then_crash, durable=durable)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.database, name)


@pytest.fixture()
def watched(open_database: OpenDatabase) -> Watched:
    return Watched(open_database())


@pytest.fixture()
def store(watched: Watched) -> Store:
    return compose_store(watched, clock=Clock())  # type: ignore[arg-type]


def test_a_queue_and_what_its_create_gives_it_are_one_transaction(
    store: Store, watched: Watched
) -> None:
    watched.crash = True
    with pytest.raises(Crash):
        store.queues.create_queue("q", QueueAttributes(), tags=[("k", "v")], rate_limit=POLICY)
    watched.crash = False
    assert error_code(lambda: store.queues.get_queue("q")) == "QueueNotExist"
    assert store.control.tags("queue", "q") == []
    assert store.control.rate_limit("queue", "q") is None
    before = watched.writes
    created = store.queues.create_queue(
        "q", QueueAttributes(), tags=[("k", "v")], rate_limit=POLICY
    )
    assert created is True
    assert watched.writes == before + 1  # the queue, its tags and its policy: one write
    assert store.control.tags("queue", "q") == [("k", "v")]
    assert store.control.rate_limit("queue", "q") == POLICY


def test_a_refused_tag_leaves_no_queue_and_no_topic(store: Store) -> None:
    too_many = [(f"k{i}", "v") for i in range(MAX_TAGS + 1)]
    with pytest.raises(TagLimitError):
        store.queues.create_queue("q", QueueAttributes(), tags=too_many, rate_limit=POLICY)
    assert error_code(lambda: store.queues.get_queue("q")) == "QueueNotExist"
    assert store.control.rate_limit("queue", "q") is None
    with pytest.raises(TagLimitError):
        store.topics.create_topic("t", 65536, False, tags=too_many)
    assert error_code(lambda: store.topics.get_topic("t")) == "TopicNotExist"
    assert store.control.tags("topic", "t") == []


def test_a_topic_and_a_subscription_too(store: Store, watched: Watched) -> None:
    topics = store.topics
    watched.crash = True
    with pytest.raises(Crash):
        topics.create_topic("t", 65536, False, tags=[("k", "v")])
    watched.crash = False
    assert error_code(lambda: topics.get_topic("t")) == "TopicNotExist"
    assert store.control.tags("topic", "t") == []
    before = watched.writes
    topics.create_topic("t", 65536, False, tags=[("k", "v")])
    assert watched.writes == before + 1
    assert store.control.tags("topic", "t") == [("k", "v")]
    subscription = Subscription("t", "s", "http://127.0.0.1:9/", create_time=1, last_modify_time=1)
    resource = subscription_resource("t", "s")
    watched.crash = True
    with pytest.raises(Crash):
        topics.subscribe(subscription, rate_limit=POLICY)
    watched.crash = False
    assert error_code(lambda: topics.get_subscription("t", "s")) == "SubscriptionNotExist"
    assert store.control.rate_limit("subscription", resource) is None
    before = watched.writes
    assert topics.subscribe(subscription, rate_limit=POLICY) is True
    assert watched.writes == before + 1
    assert store.control.rate_limit("subscription", resource) == POLICY


def test_a_create_again_over_the_tag_limit_changes_nothing(store: Store) -> None:
    tags = [(f"k{i}", "v") for i in range(15)]
    store.queues.create_queue("q", QueueAttributes(), tags=tags)
    more = [(f"n{i}", "v") for i in range(6)]
    with pytest.raises(TagLimitError):
        store.queues.create_queue("q", QueueAttributes(), tags=more, rate_limit=POLICY)
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
