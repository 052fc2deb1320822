"""The topic operations over the stub store: no HTTP, no Flask; one rule per test, which every
front end (the XML API, the control plane, the console, the command line) then gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.control import TagLimitError
from gateway.errors.mns import MNSError
from gateway.observability.operations import Field
from gateway.operations import Caller, Operations, topics
from gateway.protocol.listing import PageQuery
from gateway.store import ListQuery
from gateway.store.base import Store
from gateway.topics.records import PublishDraft
from tests.gateway.operations.recording import Calls
from tests.support.clock import Clock
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def create(ops: Operations, name: str = "t", size: int = 65536, logging: bool = False) -> bool:
    return topics.create_topic(ops, Caller(), name, size, logging)


def test_create_is_new_then_identical_then_a_conflict(ops: Operations) -> None:
    assert create(ops) is True
    assert create(ops) is False
    with pytest.raises(MNSError) as refused:
        create(ops, size=2048)
    assert refused.value.code == "TopicAlreadyExist"


def test_a_topic_name_is_checked_before_anything(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        create(ops, "a_b")
    assert refused.value.code == "TopicNameInvalid"


@pytest.mark.parametrize("size", [1023, 65537])
def test_the_maximum_message_size_is_within_its_range(ops: Operations, size: int) -> None:
    with pytest.raises(MNSError, match="MaximumMessageSize should between 1024 and 65536"):
        create(ops, size=size)
    create(ops)
    with pytest.raises(MNSError, match="MaximumMessageSize should between 1024 and 65536"):
        topics.set_topic_attributes(ops, Caller(), "t", size, None)


def test_tags_come_with_the_topic_or_not_at_all(ops: Operations) -> None:
    with pytest.raises(TagLimitError):
        topics.create_topic(
            ops, Caller(), "t", 65536, False, tags=[(f"k{i}", "") for i in range(21)]
        )
    assert ops.store.control.list_topics(ListQuery()).total == 0
    topics.create_topic(ops, Caller(), "t", 65536, False, tags=[("k", "v")])
    assert ops.store.control.tags("topic", "t") == [("k", "v")]


def test_set_changes_only_what_was_given(ops: Operations, clock: Clock) -> None:
    create(ops, size=2048)
    clock.advance(7)
    topics.set_topic_attributes(ops, Caller(), "t", None, True)
    topic, _ = topics.get_topic(ops, Caller(), "t")
    assert (topic.maximum_message_size, topic.logging_enabled) == (2048, True)
    assert topic.last_modify_time == topic.create_time + 7


def test_a_missing_topic_is_404_but_deleting_it_is_not_an_error(ops: Operations) -> None:
    for operation in (
        lambda: topics.get_topic(ops, Caller(), "t"),
        lambda: topics.set_topic_attributes(ops, Caller(), "t", None, True),
    ):
        with pytest.raises(MNSError) as refused:
            operation()
        assert refused.value.code == "TopicNotExist"
    topics.delete_topic(ops, Caller(), "t")


def test_get_counts_the_messages_and_delete_takes_them(ops: Operations) -> None:
    create(ops)
    ops.store.topics.publish_draft(PublishDraft("t", "body"))
    topic, count = topics.get_topic(ops, Caller(), "t")
    assert (topic.name, count) == ("t", 1)
    topics.delete_topic(ops, Caller(), "t")
    with pytest.raises(MNSError, match="TopicNotExist"):
        topics.get_topic(ops, Caller(), "t")


def test_listing_by_marker_pages_through_the_prefix(ops: Operations) -> None:
    for name in ("a-1", "a-2", "a-3", "b-1"):
        create(ops, name)
    first = topics.list_topics(ops, Caller(), PageQuery("a-", "", 2))
    assert [t.name for t in first.items] == ["a-1", "a-2"] and first.next_marker == "a-3"
    last = topics.list_topics(ops, Caller(), PageQuery("a-", "a-3", 2))
    assert [t.name for t in last.items] == ["a-3"] and last.next_marker is None


def test_numbered_listing_filters_by_tag(ops: Operations) -> None:
    topics.create_topic(ops, Caller(), "a", 65536, False, tags=[("env", "prod")])
    create(ops, "b")
    tagged = topics.list_topics(ops, Caller(), ListQuery(tags=[("env", "prod")]))
    assert ([t.name for t in tagged.items], tagged.total) == (["a"], 1)
    page = topics.list_topics(ops, Caller(), ListQuery(offset=1, limit=1))
    assert ([t.name for t in page.items], page.total) == (["b"], 2)


def test_the_hooks_see_each_topic_operation_by_its_mns_name(ops: Operations) -> None:
    seen = Calls()
    ops = Operations.over(ops.settings, ops.store, [seen])
    create(ops)
    topics.set_topic_attributes(ops, Caller(), "t", None, None)
    topics.get_topic(ops, Caller(), "t")
    topics.list_topics(ops, Caller(), PageQuery("t"))
    topics.delete_topic(ops, Caller(), "t")
    assert [(c.action, c.resource, c.name) for c in seen.calls] == [
        ("CreateTopic", Field.TOPIC_NAME, "t"),
        ("SetTopicAttributes", Field.TOPIC_NAME, "t"),
        ("GetTopicAttributes", Field.TOPIC_NAME, "t"),
        ("ListTopic", Field.TOPIC_NAME, "t"),
        ("DeleteTopic", Field.TOPIC_NAME, "t"),
    ]
