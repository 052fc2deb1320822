"""The queue operations over the stub store: no HTTP, no Flask; one rule per test, which every
front end (the XML API, the control plane, the console, the command line) then gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.control import TagLimitError
from gateway.errors.mns import MNSError
from gateway.observability.operations import Field
from gateway.operations import Caller, Operations, queues
from gateway.protocol.listing import PageQuery
from gateway.queues.dlq_policy import DeadLetterPolicy, PolicyUpdate
from gateway.queues.records import NewMessage, QueueAttributes, QueueChanges, QueueType
from gateway.store import ListQuery
from gateway.store.base import Store
from gateway.store.control import RateLimitPolicy
from tests.gateway.operations.recording import Calls
from tests.support.clock import Clock
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def create(ops: Operations, name: str = "q", **attributes: object) -> bool:
    return queues.create_queue(ops, Caller(), name, QueueAttributes(**attributes))  # type: ignore[arg-type]


def code(error: pytest.ExceptionInfo[MNSError]) -> str:
    return error.value.code


def test_create_is_new_then_identical_then_a_conflict(ops: Operations) -> None:
    assert create(ops) is True
    assert create(ops) is False
    with pytest.raises(MNSError) as refused:
        create(ops, visibility_timeout=99)
    assert code(refused) == "QueueAlreadyExist"


def test_a_queue_name_is_checked_before_anything(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        create(ops, "-bad")
    assert code(refused) == "InvalidQueueName"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("delay_seconds", 604801),
        ("maximum_message_size", 1023),
        ("message_retention_period", 59),
        ("visibility_timeout", 0),
        ("polling_wait_seconds", 31),
    ],
)
def test_attributes_are_within_their_ranges_whoever_built_them(
    ops: Operations, field: str, value: int
) -> None:
    with pytest.raises(MNSError, match="should between") as refused:
        create(ops, **{field: value})
    assert code(refused) == "InvalidArgument"
    assert not ops.store.queues.queue_exists("q")
    create(ops)
    with pytest.raises(MNSError, match="should between"):
        queues.set_queue_attributes(ops, Caller(), "q", QueueChanges({field: value}))


def test_a_queue_is_not_its_own_dead_letter_queue(ops: Operations) -> None:
    with pytest.raises(MNSError, match="its own dead-letter queue"):
        create(ops, dead_letter_policy=DeadLetterPolicy("q", 3))
    assert not ops.store.queues.queue_exists("q")
    create(ops)
    own = QueueChanges(dead_letter_policy=PolicyUpdate("q", 3))
    with pytest.raises(MNSError, match="its own dead-letter queue"):
        queues.set_queue_attributes(ops, Caller(), "q", own)


def test_a_dead_letter_queue_must_exist(ops: Operations) -> None:
    with pytest.raises(MNSError, match="does not exist"):
        create(ops, dead_letter_policy=DeadLetterPolicy("dlq", 3))
    create(ops, "dlq")
    assert create(ops, dead_letter_policy=DeadLetterPolicy("dlq", 3))


def test_tags_and_rate_limit_come_with_the_queue_or_not_at_all(ops: Operations) -> None:
    policy = RateLimitPolicy(True, 5)
    too_many = [(f"k{i}", "v") for i in range(21)]
    with pytest.raises(TagLimitError):
        queues.create_queue(ops, Caller(), "q", QueueAttributes(), tags=too_many)
    assert not ops.store.queues.queue_exists("q")
    queues.create_queue(ops, Caller(), "q", QueueAttributes(), tags=[("k", "v")], rate_limit=policy)
    assert ops.store.control.tags("queue", "q") == [("k", "v")]
    assert ops.store.control.rate_limit("queue", "q") == policy


def test_set_changes_only_what_was_sent_with_the_rate_limit(ops: Operations, clock: Clock) -> None:
    create(ops, delay_seconds=5)
    clock.advance(10)
    changes = QueueChanges({"visibility_timeout": 45})
    queue = queues.set_queue_attributes(
        ops, Caller(), "q", changes, rate_limit=RateLimitPolicy(False)
    )
    assert (queue.attributes.delay_seconds, queue.attributes.visibility_timeout) == (5, 45)
    assert queue.last_modify_time == queue.create_time + 10
    assert ops.store.control.rate_limit("queue", "q") == RateLimitPolicy(False)


def test_the_queue_type_is_set_at_creation_only(ops: Operations) -> None:
    create(ops, queue_type=QueueType.FIFO)
    same = QueueChanges(queue_type=QueueType.FIFO)
    assert queues.set_queue_attributes(ops, Caller(), "q", same).attributes.ordered
    with pytest.raises(MNSError, match="QueueType"):
        queues.set_queue_attributes(ops, Caller(), "q", QueueChanges(queue_type=QueueType.NORMAL))


def test_a_missing_queue_is_404_but_deleting_it_is_not_an_error(ops: Operations) -> None:
    for operation in (
        lambda: queues.get_queue(ops, Caller(), "q"),
        lambda: queues.set_queue_attributes(ops, Caller(), "q", QueueChanges()),
    ):
        with pytest.raises(MNSError) as refused:
            operation()
        assert code(refused) == "QueueNotExist"
    queues.delete_queue(ops, Caller(), "q")


def test_get_counts_the_messages_and_delete_takes_them(ops: Operations) -> None:
    create(ops)
    ops.store.queues.send("q", [NewMessage("a"), NewMessage("b", delay_seconds=60)])
    queue, counts = queues.get_queue(ops, Caller(), "q")
    assert (queue.name, counts.active, counts.delayed) == ("q", 1, 1)
    queues.delete_queue(ops, Caller(), "q")
    assert not ops.store.queues.queue_exists("q")


def test_listing_by_marker_pages_through_the_prefix(ops: Operations) -> None:
    for name in ("a-1", "a-2", "a-3", "b-1"):
        create(ops, name)
    first = queues.list_queues(ops, Caller(), PageQuery("a-", "", 2))
    assert [q.name for q in first.items] == ["a-1", "a-2"] and first.next_marker == "a-3"
    last = queues.list_queues(ops, Caller(), PageQuery("a-", "a-3", 2))
    assert [q.name for q in last.items] == ["a-3"] and last.next_marker is None


def test_numbered_listing_filters_by_tag_and_queue_type(ops: Operations) -> None:
    queues.create_queue(ops, Caller(), "a", QueueAttributes(), tags=[("env", "prod")])
    create(ops, "b", queue_type=QueueType.FIFO)
    create(ops, "c")
    tagged = queues.list_queues(ops, Caller(), ListQuery(tags=[("env", "")]))
    assert ([q.name for q in tagged.items], tagged.total) == (["a"], 1)
    fifo = queues.list_queues(ops, Caller(), ListQuery(), queue_type=QueueType.FIFO)
    assert [q.name for q in fifo.items] == ["b"]
    page = queues.list_queues(ops, Caller(), ListQuery(offset=1, limit=1))
    assert ([q.name for q in page.items], page.total) == (["b"], 3)


def test_the_hooks_see_each_queue_operation_by_its_mns_name(ops: Operations) -> None:
    seen = Calls()
    ops = Operations.over(ops.settings, ops.store, [seen])
    create(ops)
    queues.set_queue_attributes(ops, Caller(), "q", QueueChanges())
    queues.get_queue(ops, Caller(), "q")
    queues.list_queues(ops, Caller(), PageQuery())
    queues.delete_queue(ops, Caller(), "q")
    assert [(c.action, c.resource, c.name, c.kind) for c in seen.calls] == [
        ("CreateQueue", Field.QUEUE_NAME, "q", ""),
        ("SetQueueAttributes", Field.QUEUE_NAME, "q", ""),
        ("GetQueueAttributes", Field.QUEUE_NAME, "q", ""),
        ("ListQueue", Field.QUEUE_NAME, "", ""),
        ("DeleteQueue", Field.QUEUE_NAME, "q", ""),
    ]
