"""Endpoint health (gateway/operations/endpoint_health.py) over the stub store: the breakers
listed, one subscription's, and the operator's override."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.breaker.state import Override, State
from gateway.config.settings import Settings
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, endpoint_health
from gateway.store.base import Store
from gateway.topics.records import Subscription
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    for topic in ("t", "u"):
        memory_store.topics.create_topic(topic, 65536, False)
        memory_store.topics.subscribe(Subscription(topic, "a", "http://a.test/"))
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def test_a_healthy_subscription_is_closed_and_not_listed(ops: Operations) -> None:
    health = endpoint_health.subscription_health(ops, Caller(), "t", "a")
    assert (health.breaker.effective(), health.waiting) == (State.CLOSED, 0)
    assert endpoint_health.endpoint_health(ops, Caller()) == []


def test_an_override_is_listed_for_its_topic_only(ops: Operations) -> None:
    held = endpoint_health.override_circuit(ops, Caller(), "t", "a", "open")
    assert (held.topic_name, held.subscription_name) == ("t", "a")
    assert held.breaker.override is Override.OPEN
    listed = endpoint_health.endpoint_health(ops, Caller(), "t")
    assert [(h.topic_name, h.subscription_name) for h in listed] == [("t", "a")]
    assert endpoint_health.endpoint_health(ops, Caller(), "u") == []
    auto = endpoint_health.override_circuit(ops, Caller(), "t", "a", "auto")
    assert auto.breaker.override is None


def test_an_override_is_closed_open_or_auto(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        endpoint_health.override_circuit(ops, Caller(), "t", "a", "half")
    assert refused.value.code == "InvalidArgument"


@pytest.mark.parametrize("topic", ["t", "missing"])
def test_a_subscription_that_is_not_there(ops: Operations, topic: str) -> None:
    with pytest.raises(MNSError) as missing:
        endpoint_health.override_circuit(ops, Caller(), topic, "nope", "open")
    assert missing.value.code in ("SubscriptionNotExist", "TopicNotExist")
    with pytest.raises(MNSError):
        endpoint_health.subscription_health(ops, Caller(), topic, "nope")
