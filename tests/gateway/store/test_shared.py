"""What replicas share through the database: one generated access key pair, one signing key at a
time, every certificate served by each, a rotation on one followed by all."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives import serialization

from gateway.auth.generated_keys import load_or_create
from gateway.pushing.keyring import KeyRing
from gateway.store.shared import DatabaseKeyStorage, SharedSettings
from tests.conftest import OpenDatabase

TEST_BITS = 1024


def test_the_first_value_set_wins(open_database: OpenDatabase) -> None:
    a, b = SharedSettings(open_database()), SharedSettings(open_database())
    assert a.get("x") is None
    assert a.get_or_create("x", "first") == "first"
    assert b.get_or_create("x", "second") == "first"
    b.put("x", "third")
    assert a.get("x") == "third"


def test_replicas_agree_on_one_generated_access_key(
    open_database: OpenDatabase, tmp_path: Path
) -> None:
    first, created = load_or_create(tmp_path / "a", SharedSettings(open_database()))
    second, created_again = load_or_create(tmp_path / "b", SharedSettings(open_database()))
    assert first == second
    assert (created, created_again) == (True, False)
    assert not (tmp_path / "a" / "credentials.json").exists()


def ring(open_database: OpenDatabase) -> KeyRing:
    return KeyRing(DatabaseKeyStorage(open_database()), bits=TEST_BITS)


def test_replicas_start_on_one_key_and_follow_a_rotation(open_database: OpenDatabase) -> None:
    a, b = ring(open_database), ring(open_database)
    first = a.current.key_id
    assert b.current.key_id == first
    rotated = b.rotate().key_id
    assert rotated != first
    assert a.refresh().key_id == rotated
    assert a.current.sign("x") == b.current.sign("x")
    for replica in (a, b):  # every replica serves both certificates
        assert replica.certificate_pem(first) is not None
        assert replica.certificate_pem(rotated) is not None
    assert ring(open_database).current.key_id == rotated  # a new replica starts on it


def test_a_configured_key_wins_and_its_certificate_is_shared(
    open_database: OpenDatabase, tmp_path: Path
) -> None:
    generated = ring(open_database)
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(
        generated.current.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    other = ring(open_database).rotate()  # the shared pointer moves on; the file still wins
    configured = KeyRing(
        DatabaseKeyStorage(open_database()), bits=TEST_BITS, private_key_file=key_file
    )
    assert configured.current.key_id == generated.current.key_id != other.key_id
    assert configured.refresh().key_id == generated.current.key_id
