"""Replaying what was delivered (gateway/operations/delivered_replays.py) over the stub store:
the window checked against the history the settings keep, in the front end's words."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.delivery.records import Attempt, Settlement
from gateway.delivery.replays import iso_utc_ms
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, delivered_replays
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage
from tests.support.clock import Clock
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    memory_store.topics.create_topic("t", 65536, False)
    memory_store.topics.subscribe(Subscription("t", "a", "http://a.test/"))
    return Operations.over(Settings(data_dir=tmp_path, history_retention=3600), memory_store)


def delivered(store: Store) -> None:
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", "body", "X", store.now_ms()))
    (job,) = store.deliveries.claim("w", 60, 100, frozenset())
    done = Attempt(1, store.now_ms(), "success", 204, None, 10.0)
    store.deliveries.settle("w", [Settlement(job, done)])


def test_what_was_delivered_is_queued_again(ops: Operations, clock: Clock) -> None:
    since = iso_utc_ms(ops.store.now_ms())
    delivered(ops.store)
    clock.advance(1)
    dry = delivered_replays.replay_delivered_window(
        ops, Caller(), "t", "a", since, None, dry_run=True
    )
    assert (dry.count.queued, dry.dry_run) == (1, True)
    done = delivered_replays.replay_delivered_window(
        ops, Caller(request_id="R"), "t", "a", since, None
    )
    assert (done.count.queued, done.request_id) == (1, "R")
    assert done.window.until_ms == ops.store.now_ms()


def test_a_window_past_the_history_kept_is_refused_naming_the_settings_figure(
    ops: Operations,
) -> None:
    long_ago = iso_utc_ms(ops.store.now_ms() - 7200_000)
    with pytest.raises(MNSError) as refused:
        delivered_replays.replay_delivered_window(
            ops, Caller(), "t", "a", long_ago, None, labels=("since", "until")
        )
    assert "keeps delivered history for 3600 s: since must be" in refused.value.message


def test_the_window_is_named_as_the_front_end_names_it(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        delivered_replays.replay_delivered_window(
            ops, Caller(), "t", "a", "yesterday", None, labels=("Since", "Until")
        )
    assert refused.value.message.startswith("Since 'yesterday' is not")


def test_what_no_subscription_can_be_named_is_not_looked_up(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        delivered_replays.replay_delivered_window(ops, Caller(), "t", "a/b", "x", None)
    assert refused.value.code in ("InvalidArgument", "SubscriptionNameInvalid")


def test_a_missing_subscription(ops: Operations) -> None:
    since = iso_utc_ms(ops.store.now_ms() - 1000)
    with pytest.raises(MNSError) as missing:
        delivered_replays.replay_delivered_window(ops, Caller(), "t", "nope", since, None)
    assert missing.value.code == "SubscriptionNotExist"
