"""Store operations with an injected clock: times, retention, fan-out by FilterTag."""

from __future__ import annotations

import pytest

from gateway.errors.mns import MNSError
from gateway.store.base import Store, compose_store
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase
from tests.support.clock import Clock

CLOCK_START = 1_700_000_000.0


@pytest.fixture()
def store(open_database: OpenDatabase, clock: Clock) -> Store:
    return compose_store(open_database(), clock=clock)


def message(topic: str, tag: str | None, now_ms: int) -> TopicMessage:
    return TopicMessage(
        id=f"m-{tag}-{now_ms}",
        topic_name=topic,
        body="b",
        body_md5="X",
        publish_time_ms=now_ms,
        tag=tag,
    )


def test_times_come_from_the_clock(store: Store, clock: Clock) -> None:
    assert store.topics.create_topic("t", 65536, False) is True
    clock.now += 60
    store.topics.set_topic_attributes("t", 2048, None)
    topic, count = store.topics.get_topic("t")
    assert (topic.create_time, topic.last_modify_time) == (1_700_000_000, 1_700_000_060)
    assert (topic.maximum_message_size, topic.logging_enabled, count) == (2048, False, 0)


def test_fan_out_follows_filter_tags(store: Store, clock: Clock) -> None:
    store.topics.create_topic("t", 65536, False)
    for name, tag in (("all", None), ("red", "red"), ("blue", "blue")):
        store.topics.subscribe(Subscription("t", name, "http://127.0.0.1:9/", filter_tag=tag))
    assert store.topics.publish(message("t", "red", store.now_ms())).deliveries == 2
    assert store.topics.publish(message("t", None, store.now_ms() + 1)).deliveries == 1
    assert store.topics.publish(message("t", "green", store.now_ms() + 2)).deliveries == 1


def test_message_count_drops_after_one_day(store: Store, clock: Clock) -> None:
    store.topics.create_topic("t", 65536, False)
    store.topics.publish(message("t", None, store.now_ms()))
    assert store.topics.get_topic("t")[1] == 1
    clock.now += 86400 + 1
    assert store.topics.get_topic("t")[1] == 0


def test_publish_checks_size_in_utf8_bytes(store: Store) -> None:
    store.topics.create_topic("t", 1024, False)
    big = TopicMessage(id="m", topic_name="t", body="é" * 513, body_md5="X", publish_time_ms=1)
    with pytest.raises(MNSError) as caught:
        store.topics.publish(big)
    assert caught.value.code == "InvalidArgument"
    assert store.topics.get_topic("t")[1] == 0


def test_new_subscription_gets_only_later_messages(store: Store, clock: Clock) -> None:
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "early", "http://127.0.0.1:9/"))
    assert store.topics.publish(message("t", None, store.now_ms())).deliveries == 1
    clock.now += 1
    store.topics.subscribe(Subscription("t", "late", "http://127.0.0.1:9/"))
    assert store.topics.publish(message("t", None, store.now_ms())).deliveries == 2
    pending = store.database.read(
        lambda c: c.execute(
            "SELECT subscription_name AS name, COUNT(*) AS n FROM deliveries"
            " GROUP BY subscription_name"
        ).fetchall()
    )
    assert {row["name"]: row["n"] for row in pending} == {"early": 2, "late": 1}


def test_message_ids_are_unique_and_sort_by_publish_time(store: Store, clock: Clock) -> None:
    ids = []
    for _ in range(3):
        ids += [store.topics.new_message_id(store.now_ms()) for _ in range(100)]
        clock.now += 0.001
    assert len(set(ids)) == 300
    assert ids == sorted(ids)


def test_a_delivery_whose_subscription_vanished_is_purged_after_retention(
    store: Store, clock: Clock
) -> None:
    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "http://a.test/"))
    store.topics.publish(message("t", None, store.now_ms()))
    # As a publish racing an Unsubscribe could leave it: the subscription row gone, not its work.
    store.database.write(lambda c: c.execute("DELETE FROM subscriptions"))
    clock.now += 86400 + 1
    assert store.deliveries.expire() == []
    left = store.database.read(
        lambda c: c.execute("SELECT COUNT(*) AS n FROM deliveries").fetchone()["n"]
    )
    assert left == 0


def test_a_publish_s_deliveries_get_ids_after_the_last_ones(store: Store, clock: Clock) -> None:
    """The deliveries' primary key takes new rows on its last pages: a fan-out of ten random
    ids changed ten pages of it per publish (gateway/delivery/delivery_ids.py)."""
    store.topics.create_topic("t", 65536, False)
    for index in range(10):
        store.topics.subscribe(Subscription("t", f"s{index}", "http://127.0.0.1:9/"))
    batches = []
    for _ in range(3):
        store.topics.publish(message("t", None, store.now_ms()))
        known = set().union(*batches)
        rows = store.database.read(lambda c: c.execute("SELECT id FROM deliveries").fetchall())
        batches.append({row["id"] for row in rows} - known)
        clock.now += 1
    assert [len(batch) for batch in batches] == [10, 10, 10]
    assert max(batches[0]) < min(batches[1]) and max(batches[1]) < min(batches[2])
