"""The dead-letter operations (gateway/operations/dead_letters.py) over the stub store: list,
show and replay, the rules every front end (the admin API, the CLI, the console) gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.delivery.records import Attempt, Settlement
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, dead_letters
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    memory_store.topics.create_topic("t", 65536, False)
    memory_store.topics.subscribe(Subscription("t", "a", "http://a.test/"))
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def dead_letter(store: Store) -> str:
    """A message published to ``t`` whose one push to ``a`` died: the dead letter's id."""
    message_id = store.topics.new_message_id(store.now_ms())
    store.topics.publish(TopicMessage(message_id, "t", "body", "X", store.now_ms()))
    (job,) = store.deliveries.claim("w", 60, 100, frozenset())
    failed = Attempt(1, store.now_ms(), "http_error", 500, "boom", 10.0)
    store.deliveries.settle("w", [Settlement(job, failed, dead_reason="retries exhausted")])
    (letter,) = store.deliveries.list_dead_letters().items
    return letter.id


def replayed_request_id(store: Store) -> str | None:
    (job,) = store.deliveries.claim("w", 60, 100, frozenset())
    return job.replay_request_id


@pytest.mark.parametrize("limit", [0, 1001])
def test_a_listing_asks_for_1_to_1000(ops: Operations, limit: int) -> None:
    with pytest.raises(MNSError) as refused:
        dead_letters.list_dead_letters(ops, Caller(), "", limit)
    assert refused.value.code == "InvalidArgument"


def test_a_filter_no_store_can_compare_is_refused(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        dead_letters.list_dead_letters(ops, Caller(), "", 10, "t\x00")
    assert refused.value.code == "InvalidArgument" and "topic" in refused.value.message


def test_list_and_show(ops: Operations) -> None:
    letter_id = dead_letter(ops.store)
    page = dead_letters.list_dead_letters(ops, Caller(), "", 10, "t", subscription="a")
    assert [letter.id for letter in page.items] == [letter_id]
    assert dead_letters.list_dead_letters(ops, Caller(), "", 10, "other").items == []
    letter = dead_letters.get_dead_letter(ops, Caller(), letter_id)
    assert (letter.reason, len(letter.attempts)) == ("retries exhausted", 1)


def test_a_replay_carries_the_callers_request_id(ops: Operations) -> None:
    letter_id = dead_letter(ops.store)
    dead_letters.replay_dead_letter(ops, Caller(request_id="REQ-1"), letter_id)
    assert replayed_request_id(ops.store) == "REQ-1"


def test_a_caller_without_a_request_gets_a_new_request_id(ops: Operations) -> None:
    letter_id = dead_letter(ops.store)
    dead_letters.replay_dead_letter(ops, Caller(), letter_id)
    assert replayed_request_id(ops.store)


def test_a_second_replay_needs_force(ops: Operations) -> None:
    letter_id = dead_letter(ops.store)
    first = dead_letters.replay_dead_letter(ops, Caller(), letter_id)
    with pytest.raises(MNSError) as refused:
        dead_letters.replay_dead_letter(ops, Caller(), letter_id)
    assert refused.value.code == "DeadLetterAlreadyReplayed"
    again = dead_letters.replay_dead_letter(ops, Caller(), letter_id, force=True)
    assert again != first


def test_a_replay_of_what_the_page_showed_only(ops: Operations) -> None:
    """The console's guard: a replay again names the last replay its page showed."""
    letter_id = dead_letter(ops.store)
    dead_letters.replay_dead_letter(ops, Caller(), letter_id)
    shown = dead_letters.get_dead_letter(ops, Caller(), letter_id).replayed_at_ms
    with pytest.raises(MNSError):
        dead_letters.replay_dead_letter(ops, Caller(), letter_id, seen_replayed_at=1)
    dead_letters.replay_dead_letter(ops, Caller(), letter_id, seen_replayed_at=shown)


def test_a_missing_dead_letter(ops: Operations) -> None:
    with pytest.raises(MNSError) as missing:
        dead_letters.get_dead_letter(ops, Caller(), "nope")
    assert missing.value.code == "DeadLetterNotExist"
