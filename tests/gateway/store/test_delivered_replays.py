"""Replaying what was delivered (gateway/store/delivered_replays.py) on each backend: what a
window queues again and in which order, what it skips (still pending, no longer kept by the
topic), the dry run, page after page, and the not-found errors."""

from __future__ import annotations

import pytest

from gateway.delivery.records import Attempt, Settlement
from gateway.delivery.replays import ReplayCount, ReplayWindow
from gateway.errors.mns import MNSError
from gateway.store.base import Store, compose_store
from gateway.store.delivered_replays import Target, replay_delivered
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock

HOUR_S = 3600


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> Store:
    made = compose_store(open_database(), clock=clock)
    made.topics.create_topic("t", 65536, False)
    for name in ("a", "b"):
        made.topics.subscribe(Subscription("t", name, f"http://{name}.test/"))
    return made


def publish(store: Store) -> str:
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", "body", "X", store.now_ms()))
    return message_id


def deliver_all(store: Store) -> list[tuple[str, str, str | None]]:
    """Claim every due delivery and settle it as a success now; (MessageId, subscription,
    replay request id) of each, in the order claimed."""
    jobs = store.deliveries.claim("w", 60, 1000, frozenset())
    success = [Settlement(j, Attempt(1, store.now_ms(), "success", 204, None, 1.0)) for j in jobs]
    store.deliveries.settle("w", success)
    return [(j.message.id, j.subscription.name, j.replay_request_id) for j in jobs]


def delivered_one_a_second(store: Store, clock: Clock, count: int) -> list[tuple[str, int]]:
    """``count`` messages, each published and delivered to both subscriptions a second apart;
    (MessageId, delivery time in ms) of each."""
    done = []
    for _ in range(count):
        message_id = publish(store)
        deliver_all(store)
        done.append((message_id, store.now_ms()))
        clock.advance(1)
    return done


def target(store: Store, since_ms: int, until_ms: int, **options: object) -> Target:
    return Target("t", "a", ReplayWindow(since_ms, until_ms), "replay-1", **options)  # type: ignore[arg-type]


def test_the_windows_messages_are_queued_again_in_publish_order(store: Store, clock: Clock) -> None:
    done = delivered_one_a_second(store, clock, 5)
    since, until = done[1][1], done[4][1]  # since inclusive, until exclusive: #1, #2, #3
    count = replay_delivered(store.deliveries, target(store, since, until))
    assert count == ReplayCount(queued=3)
    clock.advance(1)  # their due times are a millisecond apart from the replay on
    replayed = deliver_all(store)
    assert replayed == [(m, "a", "replay-1") for m, _ in done[1:4]]
    # Pushed again and delivered: the history has the replay's delivery too.
    assert len(store.deliveries.message_deliveries(done[1][0]).delivered) == 3


def test_a_dry_run_counts_and_queues_nothing(store: Store, clock: Clock) -> None:
    done = delivered_one_a_second(store, clock, 3)
    dry = target(store, done[0][1], store.now_ms(), dry_run=True)
    assert replay_delivered(store.deliveries, dry) == ReplayCount(queued=3)
    clock.advance(1)
    assert deliver_all(store) == []


def test_page_after_page_in_publish_order(store: Store, clock: Clock) -> None:
    done = delivered_one_a_second(store, clock, 5)
    count = replay_delivered(store.deliveries, target(store, done[0][1], store.now_ms(), page=2))
    assert count == ReplayCount(queued=5)
    clock.advance(1)
    assert [m for m, _, _ in deliver_all(store)] == [m for m, _ in done]


def test_a_message_still_pending_is_skipped(store: Store, clock: Clock) -> None:
    """Delivered, then queued again (a replay or "deliver again") and not yet pushed: a replay
    does not queue it a second time, as it will be pushed anyway."""
    done = delivered_one_a_second(store, clock, 2)
    store.deliveries.deliver_again(done[0][0], "a")
    count = replay_delivered(store.deliveries, target(store, done[0][1], store.now_ms()))
    assert count == ReplayCount(queued=1, pending=1)
    # The same replay again at once: everything it queued is still pending.
    again = replay_delivered(store.deliveries, target(store, done[0][1], store.now_ms()))
    assert again == ReplayCount(queued=0, pending=2)
    clock.advance(1)
    assert sorted(m for m, _, _ in deliver_all(store)) == sorted(m for m, _ in done)


def test_a_message_the_topic_no_longer_keeps_is_skipped(store: Store, clock: Clock) -> None:
    """Published, delivered 23 hours later (after retries), replayed two hours after that: the
    history still has the push, the topic no longer has the message."""
    late = publish(store)
    clock.advance(23 * HOUR_S)
    deliver_all(store)
    delivered_at = store.now_ms()
    clock.advance(1)
    fresh = delivered_one_a_second(store, clock, 1)[0][0]
    clock.advance(2 * HOUR_S)
    store.deliveries.expire()  # the topic's message is gone (its retention is a day)
    count = replay_delivered(store.deliveries, target(store, delivered_at, store.now_ms()))
    assert count == ReplayCount(queued=1, not_kept=1)
    clock.advance(1)
    assert [m for m, _, _ in deliver_all(store)] == [fresh]
    assert late != fresh


def test_a_replayed_message_gets_a_new_day(store: Store, clock: Clock) -> None:
    """Queued an hour before the topic would drop it, its retries are not cut short: the
    expiry does not dead-letter it as expired."""
    message_id = publish(store)
    clock.advance(23 * HOUR_S)
    deliver_all(store)
    delivered_at = store.now_ms()
    clock.advance(1)
    count = replay_delivered(store.deliveries, target(store, delivered_at, store.now_ms()))
    assert count == ReplayCount(queued=1)
    clock.advance(2 * HOUR_S)
    assert store.deliveries.expire() == []
    assert [m for m, _, _ in deliver_all(store)] == [message_id]


@pytest.mark.parametrize(
    ("topic", "subscription", "code"),
    [("nope", "a", "TopicNotExist"), ("t", "nope", "SubscriptionNotExist")],
)
def test_an_unknown_topic_or_subscription(
    store: Store, topic: str, subscription: str, code: str
) -> None:
    window = ReplayWindow(store.now_ms() - 1000, store.now_ms())
    for dry_run in (False, True):
        with pytest.raises(MNSError) as refused:
            replay_delivered(
                store.deliveries, Target(topic, subscription, window, "r", dry_run=dry_run)
            )
        assert refused.value.code == code


def test_other_subscriptions_and_topics_are_left_alone(store: Store, clock: Clock) -> None:
    store.topics.create_topic("other", 65536, False)
    store.topics.subscribe(Subscription("other", "a", "http://other.test/"))
    since = store.now_ms()
    publish(store)
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "other", "body", "X", store.now_ms()))
    deliver_all(store)
    clock.advance(1)
    count = replay_delivered(store.deliveries, target(store, since, store.now_ms()))
    assert count == ReplayCount(queued=1)
    clock.advance(1)
    assert [(s, r) for _, s, r in deliver_all(store)] == [("a", "replay-1")]
