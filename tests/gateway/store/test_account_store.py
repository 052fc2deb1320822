"""The account's attributes in the store, on each backend: every replica returns what any one set
(docs/protocol.md#account-operations)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gateway.account.attributes import AccountAttributes
from gateway.errors.mns import MNSError
from gateway.store.account import AccountStore
from tests.conftest import OpenDatabase


def test_replicas_share_the_attributes(open_database: OpenDatabase) -> None:
    a, b = AccountStore(open_database()), AccountStore(open_database())
    assert a.attributes() == AccountAttributes()
    a.change(lambda current: replace(current, logging_bucket="logs"))
    b.change(lambda current: replace(current, trace_enabled=True))
    assert a.attributes() == AccountAttributes("logs", True)


def test_a_refused_change_changes_nothing(open_database: OpenDatabase) -> None:
    store = AccountStore(open_database())
    store.change(lambda current: replace(current, logging_bucket="logs"))

    def refuse(current: AccountAttributes) -> AccountAttributes:
        raise MNSError("InvalidArgument")

    with pytest.raises(MNSError):
        store.change(refuse)
    assert store.attributes().logging_bucket == "logs"
