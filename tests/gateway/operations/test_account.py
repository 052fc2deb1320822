"""The account's attributes (gateway/operations/account.py) over the stub store."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config.settings import Settings
from gateway.errors.control import ControlError
from gateway.operations import Caller, Operations, account
from gateway.operations.account import AccountAttributes, AccountChanges
from gateway.store.base import Store
from tests.support.stub import memory_store  # noqa: F401 (fixture)


@pytest.fixture()
def ops(tmp_path: Path, memory_store: Store) -> Operations:  # noqa: F811
    return Operations.over(Settings(data_dir=tmp_path), memory_store)


def test_the_defaults_until_set(ops: Operations) -> None:
    assert account.get_account_attributes(ops, Caller()) == AccountAttributes()


def test_only_what_is_given_changes(ops: Operations) -> None:
    account.set_account_attributes(ops, Caller(), AccountChanges(project_name="p"))
    account.set_account_attributes(ops, Caller(), AccountChanges(log_enabled=True))
    found = account.get_account_attributes(ops, Caller())
    assert found == AccountAttributes(log_enabled=True, project_name="p")


def test_a_name_of_at_most_128_characters(ops: Operations) -> None:
    with pytest.raises(ControlError) as refused:
        account.set_account_attributes(
            ops, Caller(), AccountChanges(log_enabled=True, log_store_name="x" * 129)
        )
    assert "LogStoreName" in refused.value.message
    assert account.get_account_attributes(ops, Caller()) == AccountAttributes()
