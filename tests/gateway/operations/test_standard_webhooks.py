"""A subscription's Standard Webhooks switch (gateway/operations/standard_webhooks.py) over the
stub store: the secret only in what on and rotate return."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.mns import MNSError
from gateway.operations import Caller, Operations, standard_webhooks
from gateway.store.base import Store
from gateway.topics.records import Subscription
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    memory_store.topics.create_topic("t", 65536, False)
    memory_store.topics.subscribe(Subscription("t", "a", "http://a.test/"))
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def test_off_until_turned_on_and_the_secret_only_then(ops: Operations) -> None:
    status = standard_webhooks.webhook_status(ops, Caller(), "t", "a")
    assert (status.state.enabled, status.secret) == (False, None)
    on = standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "on")
    assert on.state.enabled and on.secret
    status = standard_webhooks.webhook_status(ops, Caller(), "t", "a")
    assert (status.state.enabled, status.secret) == (True, None)
    again = standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "on")
    assert again.secret == on.secret  # asked for again, not replaced


def test_rotate_keeps_the_previous_secret_signing_for_a_while(ops: Operations) -> None:
    on = standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "on")
    rotated = standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "rotate")
    assert rotated.secret and rotated.secret != on.secret
    assert rotated.state.previous_until_ms is not None


def test_off_forgets_every_secret(ops: Operations) -> None:
    standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "on")
    off = standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "off")
    assert (off.state.enabled, off.secret) == (False, None)


def test_the_switch_is_on_off_or_rotate(ops: Operations) -> None:
    with pytest.raises(MNSError) as refused:
        standard_webhooks.switch_webhooks(ops, Caller(), "t", "a", "flip")
    assert refused.value.code == "InvalidArgument"
