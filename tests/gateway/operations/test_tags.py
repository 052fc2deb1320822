"""Tags and rate limits beside resources (gateway/operations/tags.py) over the stub store."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors import RefusedError
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, tags
from gateway.queues.records import QueueAttributes
from gateway.store.base import Store
from gateway.store.control import MAX_TAGS, RateLimitPolicy
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    for name in ("a", "b"):
        memory_store.queues.create_queue(name, QueueAttributes())
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def test_tag_list_and_untag(ops: Operations) -> None:
    tags.tag_resources(ops, Caller(), "queue", ["a", "b"], [("env", "prod"), ("team", "x")])
    page = tags.list_tag_resources(ops, Caller(), "queue", ["a"], (), after=None, size=10)
    assert (page.rows, page.more) == ([("a", "env", "prod"), ("a", "team", "x")], False)
    tags.untag_resources(ops, Caller(), "queue", ["a"], ["env"])
    tags.untag_resources(ops, Caller(), "queue", ["b"], None)
    found = tags.extras(ops, Caller(), "queue", ["a", "b"])
    assert found.tags == {"a": [("team", "x")]}


def test_pages_resume_after_a_position(ops: Operations) -> None:
    tags.tag_resources(ops, Caller(), "queue", ["a", "b"], [("env", "prod")])
    first = tags.list_tag_resources(ops, Caller(), "queue", [], [("env", "")], after=None, size=1)
    assert (first.rows, first.more) == ([("a", "env", "prod")], True)
    after = first.rows[-1][:2]
    second = tags.list_tag_resources(ops, Caller(), "queue", [], [("env", "")], after=after, size=1)
    assert (second.rows, second.more) == ([("b", "env", "prod")], False)


def test_a_missing_resource_changes_nothing(ops: Operations) -> None:
    with pytest.raises(MNSError) as missing:
        tags.tag_resources(ops, Caller(), "queue", ["a", "nope"], [("env", "prod")])
    assert missing.value.code == "QueueNotExist"
    assert tags.extras(ops, Caller(), "queue", ["a"]).tags == {}


def test_at_most_max_tags_per_resource(ops: Operations) -> None:
    many = [(f"k{i}", "v") for i in range(MAX_TAGS + 1)]
    with pytest.raises(RefusedError):
        tags.tag_resources(ops, Caller(), "queue", ["a"], many)


def test_untagging_a_deleted_resource_is_no_error(ops: Operations) -> None:
    tags.untag_resources(ops, Caller(), "queue", ["gone"], None)


def test_rate_limits_beside_resources(ops: Operations) -> None:
    ops.store.queues.create_queue("c", QueueAttributes(), rate_limit=RateLimitPolicy(True, 5))
    found = tags.extras(ops, Caller(), "queue", ["a", "c"])
    assert found.rate_limits == {"c": RateLimitPolicy(True, 5)}
