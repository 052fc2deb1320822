"""The subscription operations over the stub store: no HTTP, no Flask; one rule per test, which
every front end (the XML API, the control plane, the console, the command line) then gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, subscriptions
from gateway.protocol.listing import PageQuery
from gateway.protocol.notify import NotifyStrategy
from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate
from gateway.queues.records import QueueAttributes
from gateway.store import EndpointFilter, EndpointShape, ListQuery
from gateway.store.base import Store
from gateway.store.control import RateLimitPolicy
from gateway.topics.records import Subscription, subscription_resource
from tests.support.clock import Clock
from tests.support.stub import memory_store  # noqa: F401 (fixture)

HTTP = "http://127.0.0.1:9/push"


def queue_endpoint(queue: str, account: str = "1234567890") -> str:
    return f"acs:mns:local:{account}:queues/{queue}"


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    memory_store.topics.create_topic("t", 65536, logging_enabled=False)
    for queue in ("jobs", "dlq"):
        memory_store.queues.create_queue(queue, QueueAttributes())
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def subscribe(
    ops: Operations,
    name: str = "s",
    endpoint: str = HTTP,
    policy: DeadLetterPolicy | None = None,
    **fields: object,
) -> bool:
    subscription = Subscription("t", name, endpoint, dead_letter_policy=policy, **fields)  # type: ignore[arg-type]
    return subscriptions.subscribe(ops, Caller(), subscription)


def refused_code(operation: object) -> str:
    with pytest.raises(MNSError) as refused:
        operation()  # type: ignore[operator]
    return refused.value.code


def test_subscribe_is_new_then_identical_then_a_conflict(ops: Operations) -> None:
    assert subscribe(ops) is True
    assert subscribe(ops) is False
    assert refused_code(
        lambda: subscribe(ops, notify_strategy=NotifyStrategy.EXPONENTIAL_DECAY_RETRY)
    ) == ("SubscriptionAlreadyExist")


def test_names_are_checked_before_anything(ops: Operations) -> None:
    assert refused_code(lambda: subscribe(ops, "a_b")) == "SubscriptionNameInvalid"
    assert refused_code(lambda: subscriptions.get_subscription(ops, Caller(), "a_b", "s")) == (
        "TopicNameInvalid"
    )


def test_a_subscription_is_created_on_the_stores_clock(ops: Operations, clock: Clock) -> None:
    subscription = Subscription("t", "s", HTTP, create_time=1, last_modify_time=1)
    subscriptions.subscribe(ops, Caller(), subscription)
    stored = subscriptions.get_subscription(ops, Caller(), "t", "s")
    assert stored.create_time == stored.last_modify_time == int(clock())


def test_a_subscription_needs_its_topic(ops: Operations) -> None:
    missing = Subscription("nosuch", "s", HTTP)
    assert refused_code(lambda: subscriptions.subscribe(ops, Caller(), missing)) == "TopicNotExist"


def test_a_queue_endpoint_needs_its_queue(ops: Operations) -> None:
    assert refused_code(lambda: subscribe(ops, endpoint=queue_endpoint("nosuch"))) == (
        "EndpointInvalid"
    )
    assert subscribe(ops, endpoint=queue_endpoint("jobs"))


def test_a_queue_of_another_account_needs_a_bridge(ops: Operations) -> None:
    elsewhere = queue_endpoint("jobs", account="999")
    assert refused_code(lambda: subscribe(ops, endpoint=elsewhere)) == "EndpointInvalid"


def test_a_dead_letter_queue_must_exist(ops: Operations) -> None:
    policy = DeadLetterPolicy("nosuch")
    assert refused_code(lambda: subscribe(ops, policy=policy)) == "InvalidArgument"
    assert subscribe(ops, policy=DeadLetterPolicy("dlq"))


def test_a_queue_subscriptions_dead_letter_queue_is_not_its_own_queue(ops: Operations) -> None:
    own = DeadLetterPolicy("jobs")
    with pytest.raises(MNSError, match="its own dead-letter queue"):
        subscribe(ops, endpoint=queue_endpoint("jobs"), policy=own)


def test_the_rate_limit_comes_with_the_subscription(ops: Operations) -> None:
    policy = RateLimitPolicy(True, 3)
    subscriptions.subscribe(ops, Caller(), Subscription("t", "s", HTTP), rate_limit=policy)
    assert ops.store.control.rate_limit("subscription", subscription_resource("t", "s")) == policy


def test_set_changes_the_strategy_and_the_policy_field_by_field(
    ops: Operations, clock: Clock
) -> None:
    subscribe(ops)
    clock.advance(5)
    decay = NotifyStrategy.EXPONENTIAL_DECAY_RETRY
    subscriptions.set_subscription_attributes(ops, Caller(), "t", "s", decay, PolicyUpdate("dlq"))
    disabled = PolicyUpdate(enabled=False)
    subscriptions.set_subscription_attributes(ops, Caller(), "t", "s", None, disabled)
    stored = subscriptions.get_subscription(ops, Caller(), "t", "s")
    assert stored.notify_strategy is decay
    assert stored.dead_letter_policy == DeadLetterPolicy("dlq", None, enabled=False)
    assert stored.last_modify_time == stored.create_time + 5


def test_a_refused_policy_changes_nothing(ops: Operations) -> None:
    subscribe(ops)
    decay = NotifyStrategy.EXPONENTIAL_DECAY_RETRY
    set_missing = lambda: subscriptions.set_subscription_attributes(  # noqa: E731
        ops, Caller(), "t", "s", decay, PolicyUpdate("nosuch")
    )
    assert refused_code(set_missing) == "InvalidArgument"
    stored = subscriptions.get_subscription(ops, Caller(), "t", "s")
    assert stored.notify_strategy is NotifyStrategy.BACKOFF_RETRY
    assert stored.dead_letter_policy is None


def test_set_with_nothing_to_change_changes_nothing(ops: Operations, clock: Clock) -> None:
    subscribe(ops, policy=DeadLetterPolicy("dlq"))
    clock.advance(5)
    same = PolicyUpdate("dlq")
    subscriptions.set_subscription_attributes(ops, Caller(), "t", "s", None, same)
    stored = subscriptions.get_subscription(ops, Caller(), "t", "s")
    assert stored.last_modify_time == stored.create_time


def test_set_changes_the_rate_limit_of_an_existing_subscription(ops: Operations) -> None:
    policy = RateLimitPolicy(False)
    set_limit = lambda name: subscriptions.set_subscription_attributes(  # noqa: E731
        ops, Caller(), "t", name, None, None, rate_limit=policy
    )
    assert refused_code(lambda: set_limit("s")) == "SubscriptionNotExist"
    subscribe(ops)
    set_limit("s")
    assert ops.store.control.rate_limit("subscription", subscription_resource("t", "s")) == policy


def test_a_missing_subscription_is_404_but_unsubscribing_it_is_not_an_error(
    ops: Operations,
) -> None:
    get = lambda: subscriptions.get_subscription(ops, Caller(), "t", "s")  # noqa: E731
    assert refused_code(get) == "SubscriptionNotExist"
    subscriptions.unsubscribe(ops, Caller(), "t", "s")
    subscribe(ops)
    subscriptions.unsubscribe(ops, Caller(), "t", "s")
    assert refused_code(get) == "SubscriptionNotExist"


def test_listing_by_marker_pages_through_the_prefix(ops: Operations) -> None:
    for name in ("a-1", "a-2", "a-3", "b-1"):
        subscribe(ops, name)
    first = subscriptions.list_subscriptions(ops, Caller(), "t", PageQuery("a-", "", 2))
    assert [s.name for s in first.items] == ["a-1", "a-2"] and first.next_marker == "a-3"
    last = subscriptions.list_subscriptions(ops, Caller(), "t", PageQuery("a-", "a-3", 2))
    assert [s.name for s in last.items] == ["a-3"] and last.next_marker is None


def test_numbered_listing_filters_by_endpoint(ops: Operations) -> None:
    subscribe(ops, "http")
    subscribe(ops, "queue", endpoint=queue_endpoint("jobs"))
    to_queues = EndpointFilter(kinds=[EndpointShape("acs:mns:")])
    listing = subscriptions.list_subscriptions(ops, Caller(), "t", ListQuery(), endpoints=to_queues)
    assert ([s.name for s in listing.items], listing.total) == (["queue"], 1)


def test_either_listing_of_a_missing_topic_is_404(ops: Operations) -> None:
    for query in (PageQuery(), ListQuery()):
        list_missing = lambda q=query: subscriptions.list_subscriptions(  # noqa: E731
            ops, Caller(), "nosuch", q
        )
        assert refused_code(list_missing) == "TopicNotExist"
