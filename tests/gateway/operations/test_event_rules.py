"""Event rules (gateway/operations/event_rules.py) over the stub store: kept, listed, never
delivered by."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.config.settings import Settings
from gateway.errors.control import ControlError
from gateway.operations import Caller, Operations, event_rules
from gateway.store.base import Store
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def rule(name: str, mode: str = "BROADCAST") -> dict[str, Any]:
    return {"RuleName": name, "DeliveryMode": mode, "EventTypes": ["ObjectCreated:PutObject"]}


def test_the_same_rule_again_is_accepted_another_is_not(ops: Operations) -> None:
    assert event_rules.create_event_rule(ops, Caller(), "oss", rule("r1")) == "r1"
    assert event_rules.create_event_rule(ops, Caller(), "oss", rule("r1")) == "r1"
    with pytest.raises(ControlError) as refused:
        event_rules.create_event_rule(ops, Caller(), "oss", rule("r1", "DIRECT"))
    assert refused.value.code == "EventRuleAlreadyExist"
    assert event_rules.get_event_rule(ops, Caller(), "oss", "r1") == rule("r1")


def test_a_missing_rule(ops: Operations) -> None:
    with pytest.raises(ControlError) as missing:
        event_rules.get_event_rule(ops, Caller(), "oss", "nope")
    assert missing.value.code == "EventRuleNotExist"
    event_rules.delete_event_rule(ops, Caller(), "oss", "nope")  # no error


def test_listed_by_prefix_in_pages(ops: Operations) -> None:
    for name in ("a1", "a2", "a3", "b1"):
        event_rules.create_event_rule(ops, Caller(), "oss", rule(name))
    page = event_rules.list_event_rules(ops, Caller(), "oss", "a", 2, 2)
    assert ([r["RuleName"] for r in page.rules], page.total) == (["a3"], 3)
    event_rules.delete_event_rule(ops, Caller(), "oss", "a1")
    assert event_rules.list_event_rules(ops, Caller(), "oss", "", 0, 10).total == 3
