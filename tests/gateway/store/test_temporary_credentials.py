"""Issued temporary credentials in the store, on each backend: shared by replicas, expired ones
deleted (docs/protocol.md#temporary-credentials)."""

from __future__ import annotations

from gateway.auth.temporary_credentials import read_security_token
from gateway.store.temporary_credentials import TemporaryCredentialStore
from tests.conftest import OpenDatabase
from tests.support.clock import Clock


def test_replicas_share_the_token_key_and_the_pairs(open_database: OpenDatabase) -> None:
    clock = Clock()
    a = TemporaryCredentialStore(open_database(), clock)
    b = TemporaryCredentialStore(open_database(), clock)
    assert a.token_key() == b.token_key()
    credential = a.issue(600)
    assert b.secret(credential.access_key_id) == credential.access_key_secret
    claims = read_security_token(b.token_key(), credential.security_token)
    assert claims is not None and claims.access_key_id == credential.access_key_id


def test_expired_pairs_are_unknown_and_deleted_at_the_next_issue(
    open_database: OpenDatabase,
) -> None:
    clock = Clock()
    store = TemporaryCredentialStore(open_database(), clock)
    short, long = store.issue(10), store.issue(1000)
    clock.now += 10
    assert store.secret(short.access_key_id) is None
    assert store.secret(long.access_key_id) == long.access_key_secret
    store.issue(60)
    count = store.database.read(
        lambda c: c.execute("SELECT COUNT(*) AS n FROM temporary_credentials").fetchone()["n"]
    )
    assert count == 2
    clock.now += 1000
    assert store.purge_expired() == 2
