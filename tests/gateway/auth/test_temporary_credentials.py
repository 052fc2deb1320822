"""Temporary credentials and the keys requests are signed with: the pure rules
(docs/protocol.md#temporary-credentials), checked with the official SDK's own signing."""

from __future__ import annotations

from email.utils import formatdate

import pytest
from mns.auth import Credentials
from mns.mns_client import MNSClient

from gateway.auth.signatures import IncomingRequest, authenticate
from gateway.auth.temporary_credentials import (
    AccessKeys,
    TemporaryCredential,
    TokenClaims,
    mint,
    read_security_token,
    security_token,
)
from gateway.errors.mns import MNSError

NOW = 1_800_000_000.0
TOKEN_KEY = b"k" * 32


class IssuedPairs:
    """An in-memory :class:`~gateway.auth.temporary_credentials.IssuedCredentials`."""

    def __init__(self, *credentials: TemporaryCredential) -> None:
        self.pairs = {c.access_key_id: c.access_key_secret for c in credentials}
        self.lookups = 0

    def token_key(self) -> bytes:
        return TOKEN_KEY

    def secret(self, access_key_id: str) -> str | None:
        self.lookups += 1
        return self.pairs.get(access_key_id)


def signed(key_id: str, secret: str, token: str | None, *, at: float = NOW) -> IncomingRequest:
    """A GET signed as the official SDK signs it, with its ``security-token`` header."""
    headers = {"x-mns-version": "2015-06-06", "date": formatdate(at, usegmt=True)}
    client = MNSClient("http://127.0.0.1:1", key_id, secret)
    headers["Authorization"] = client.get_signature(
        "GET", headers, "/queues", Credentials(key_id, secret)
    )
    if token is not None:
        headers["security-token"] = token
    return IncomingRequest.from_pairs("GET", "/queues", headers.items(), b"")


def error_of(request: IncomingRequest, keys: AccessKeys, now: float = NOW) -> tuple[str, int]:
    with pytest.raises(MNSError) as caught:
        authenticate(request, keys, now)
    return caught.value.code, caught.value.status


@pytest.fixture()
def credential() -> TemporaryCredential:
    return mint(TOKEN_KEY, NOW, 3600)


@pytest.fixture()
def keys(credential: TemporaryCredential) -> AccessKeys:
    return AccessKeys({"ak": "sk"}, IssuedPairs(credential))


def test_a_minted_credential_describes_itself(credential: TemporaryCredential) -> None:
    assert credential.access_key_id.startswith("STS.")
    assert credential.expires_at == NOW + 3600
    assert credential.expiration == "2027-01-15T09:00:00Z"
    assert set(credential.document()) == {
        "AccessKeyId",
        "AccessKeySecret",
        "SecurityToken",
        "Expiration",
    }
    claims = read_security_token(TOKEN_KEY, credential.security_token)
    assert claims == TokenClaims(credential.access_key_id, credential.expires_at)


@pytest.mark.parametrize("ttl", [0, -1, 43201])
def test_lifetimes_are_bounded(ttl: int) -> None:
    with pytest.raises(ValueError):
        mint(TOKEN_KEY, NOW, ttl)


def test_tokens_cannot_be_forged_or_moved(credential: TemporaryCredential) -> None:
    token = credential.security_token
    prefix, payload, mac = token.split(".")
    assert read_security_token(b"x" * 32, token) is None  # another gateway's key
    assert read_security_token(TOKEN_KEY, f"{prefix}.{payload}.{mac[:-2]}AA") is None
    assert read_security_token(TOKEN_KEY, "garbage") is None
    assert read_security_token(TOKEN_KEY, f"{prefix}.!!.{mac}") is None
    longer = security_token(b"x" * 32, TokenClaims(credential.access_key_id, 2**40))
    assert read_security_token(TOKEN_KEY, longer) is None


def test_issued_credentials_authenticate_until_expiration(
    credential: TemporaryCredential, keys: AccessKeys
) -> None:
    c = credential
    request = signed(c.access_key_id, c.access_key_secret, c.security_token)
    assert authenticate(request, keys, NOW) == c.access_key_id
    late = signed(c.access_key_id, c.access_key_secret, c.security_token, at=c.expires_at - 1)
    assert authenticate(late, keys, c.expires_at - 1) == c.access_key_id
    expired = signed(c.access_key_id, c.access_key_secret, c.security_token, at=c.expires_at)
    assert error_of(expired, keys, c.expires_at) == ("SecurityTokenExpired", 403)


def test_each_fault_gets_its_code(credential: TemporaryCredential, keys: AccessKeys) -> None:
    c = credential
    other = mint(TOKEN_KEY, NOW, 60)
    faults = {
        "missing token": signed(c.access_key_id, c.access_key_secret, None),
        "forged token": signed(c.access_key_id, c.access_key_secret, "MNSGW1.x.y"),
        "another key's token": signed(c.access_key_id, c.access_key_secret, other.security_token),
        "token with a permanent key": signed("ak", "sk", c.security_token),
        "unknown key": signed("nobody", "x", None),
        "wrong secret": signed(c.access_key_id, "wrong", c.security_token),
    }
    assert {fault: error_of(request, keys) for fault, request in faults.items()} == {
        "missing token": ("InvalidAccessKeyId", 403),
        "forged token": ("InvalidSecurityToken", 403),
        "another key's token": ("InvalidSecurityToken", 403),
        "token with a permanent key": ("InvalidAccessKeyId", 403),
        "unknown key": ("InvalidAccessKeyId", 403),
        "wrong secret": ("SignatureDoesNotMatch", 403),
    }


def test_a_valid_token_for_a_pair_the_store_lost_is_an_unknown_key(
    credential: TemporaryCredential,
) -> None:
    keys = AccessKeys({}, IssuedPairs())
    c = credential
    request = signed(c.access_key_id, c.access_key_secret, c.security_token)
    assert error_of(request, keys) == ("InvalidAccessKeyId", 403)


def test_found_secrets_are_cached_and_misses_are_not(credential: TemporaryCredential) -> None:
    issued = IssuedPairs()
    keys = AccessKeys({}, issued)
    c = credential
    request = signed(c.access_key_id, c.access_key_secret, c.security_token)
    error_of(request, keys)
    issued.pairs[c.access_key_id] = c.access_key_secret  # issued meanwhile, on another replica
    for _ in range(3):
        assert authenticate(request, keys, NOW) == c.access_key_id
    assert issued.lookups == 2


def test_without_issued_credentials_only_permanent_keys_work(
    credential: TemporaryCredential,
) -> None:
    keys = AccessKeys({"ak": "sk"})
    assert authenticate(signed("ak", "sk", None), keys, NOW) == "ak"
    c = credential
    request = signed(c.access_key_id, c.access_key_secret, c.security_token)
    assert error_of(request, keys) == ("InvalidAccessKeyId", 403)
