"""The public endpoint's switch and ACL (gateway/operations/endpoints.py) over the stub store."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.operations import Caller, Operations, endpoints
from gateway.store.base import Store
from tests.support.clock import Clock
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def test_on_by_default_and_switched_keeping_the_acl(ops: Operations) -> None:
    assert endpoints.get_endpoint(ops, Caller()).enabled
    endpoints.authorize_cidrs(ops, Caller(), ["10.0.0.0/8"], "allow")
    off = endpoints.switch_endpoint(ops, Caller(), False)
    assert not off.enabled and [r.cidr for r in off.rules] == ["10.0.0.0/8"]
    assert not endpoints.get_endpoint(ops, Caller()).allows("10.1.2.3")
    assert endpoints.switch_endpoint(ops, Caller(), True).allows("10.1.2.3")


def test_authorized_cidrs_are_stamped_with_the_stores_time(ops: Operations, clock: Clock) -> None:
    (rule,) = endpoints.authorize_cidrs(ops, Caller(), ["10.0.0.0/8"], "allow").rules
    assert rule.create_time == int(clock())


def test_revoke(ops: Operations) -> None:
    endpoints.authorize_cidrs(ops, Caller(), ["10.0.0.0/8", "192.0.2.0/24"], "allow")
    left = endpoints.revoke_cidrs(ops, Caller(), ["10.0.0.0/8"])
    assert [r.cidr for r in left.rules] == ["192.0.2.0/24"]
    assert not left.allows("10.1.2.3") and left.allows("192.0.2.7")
