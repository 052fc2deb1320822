"""Temporary credentials the gateway issues itself, and the keys a request may be signed with.

``mns-gateway credentials issue --ttl SECONDS`` mints an access key pair that signs requests
until its Expiration, and only together with its SecurityToken in a ``security-token`` header,
as the SDKs send STS credentials (docs/protocol.md#temporary-credentials).

The token needs no lookup to judge: it is an HMAC-SHA256, keyed with a secret kept in the store
(replicas share it), over the key id and the expiry. A forged token, or one for another key, is
refused before the store is asked anything, and an expired one is told apart from an unknown
one even after the pair itself was deleted. The pair lives in the store
(:mod:`gateway.store.temporary_credentials`), where every replica finds it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol

from cachetools import LRUCache

from gateway.errors.mns import MNSError

#: Temporary key ids look like Alibaba Cloud STS ones, so logs and people can tell them apart.
KEY_ID_PREFIX: Final = "STS."
#: The token's own prefix names its format, should it ever change.
TOKEN_PREFIX: Final = "MNSGW1"
#: Lifetimes: at most 12 hours, the longest Alibaba Cloud STS grants.
MIN_TTL_SECONDS: Final = 1
MAX_TTL_SECONDS: Final = 43200


@dataclass(frozen=True, slots=True)
class TokenClaims:
    access_key_id: str
    expires_at: int  # epoch seconds


@dataclass(frozen=True, slots=True)
class TemporaryCredential:
    access_key_id: str
    access_key_secret: str
    security_token: str
    expires_at: int  # epoch seconds

    @property
    def expiration(self) -> str:
        """ISO-8601 UTC, as STS writes Expiration: ``2026-01-02T03:04:05Z``."""
        return datetime.fromtimestamp(self.expires_at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def document(self) -> dict[str, str]:
        return {
            "AccessKeyId": self.access_key_id,
            "AccessKeySecret": self.access_key_secret,
            "SecurityToken": self.security_token,
            "Expiration": self.expiration,
        }


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(token_key: bytes, payload: bytes) -> bytes:
    return hmac.new(token_key, payload, hashlib.sha256).digest()


def security_token(token_key: bytes, claims: TokenClaims) -> str:
    payload = f"{claims.access_key_id}:{claims.expires_at}".encode()
    return f"{TOKEN_PREFIX}.{_b64(payload)}.{_b64(_mac(token_key, payload))}"


def read_security_token(token_key: bytes, token: str) -> TokenClaims | None:
    """The claims of a token this gateway issued, ``None`` for anything else."""
    prefix, _, rest = token.strip().partition(".")
    encoded, _, mac = rest.partition(".")
    try:
        payload, signature = _unb64(encoded), _unb64(mac)
    except (binascii.Error, ValueError):
        return None
    if prefix != TOKEN_PREFIX or not hmac.compare_digest(signature, _mac(token_key, payload)):
        return None
    key_id, _, expires_at = payload.decode("utf-8", "replace").rpartition(":")
    return TokenClaims(key_id, int(expires_at)) if expires_at.isdigit() else None


def check_ttl(ttl: int) -> None:
    if not MIN_TTL_SECONDS <= ttl <= MAX_TTL_SECONDS:
        raise ValueError(f"a lifetime is {MIN_TTL_SECONDS} to {MAX_TTL_SECONDS} seconds, not {ttl}")


def mint(token_key: bytes, now: float, ttl: int) -> TemporaryCredential:
    """A new pair valid for ``ttl`` seconds from ``now``, with its token."""
    check_ttl(ttl)
    claims = TokenClaims(KEY_ID_PREFIX + secrets.token_hex(12).upper(), int(now) + ttl)
    return TemporaryCredential(
        access_key_id=claims.access_key_id,
        access_key_secret=secrets.token_urlsafe(24),
        security_token=security_token(token_key, claims),
        expires_at=claims.expires_at,
    )


class IssuedCredentials(Protocol):
    """Where issued pairs are kept (:class:`~gateway.store.temporary_credentials.
    TemporaryCredentialStore`)."""

    def token_key(self) -> bytes: ...

    def secret(self, access_key_id: str) -> str | None: ...


class AccessKeys:
    """The keys requests are signed with: the configured permanent ones and, when ``issued`` is
    given, the temporary ones this gateway issued (a
    :class:`~gateway.auth.signatures.SecretSource`).

    Issued secrets are cached once found (LRU, ``cache_size`` of them): a pair never changes,
    and its token, checked on every request, says when it stops working. Misses are never
    cached, so a pair issued a moment ago on another replica works at once.
    """

    def __init__(
        self,
        permanent: Mapping[str, str],
        issued: IssuedCredentials | None = None,
        *,
        cache_size: int = 4096,
    ) -> None:
        self.permanent = dict(permanent)
        self.issued = issued
        self._found: LRUCache[str, str] = LRUCache(cache_size)
        self._lock = threading.Lock()
        self._token_key: bytes | None = None

    def secret_for(self, key_id: str, token: str | None, now: float) -> str:
        """The secret ``key_id`` signs with, or the error its request gets
        (docs/protocol.md#temporary-credentials)."""
        secret = self.permanent.get(key_id)
        if secret is not None:
            if token:
                raise MNSError(
                    "InvalidAccessKeyId",
                    "A security-token was sent with a permanent AccessKey Id; send it only "
                    "with the temporary AccessKey Id it was issued with.",
                )
            return secret
        if self.issued is None:
            raise MNSError("InvalidAccessKeyId")
        if not token:
            if self._issued_secret(key_id) is not None:
                raise MNSError(
                    "InvalidAccessKeyId",
                    "A temporary AccessKey Id is valid only with its security-token header.",
                )
            raise MNSError("InvalidAccessKeyId")
        return self._temporary_secret(key_id, token, now)

    def _temporary_secret(self, key_id: str, token: str, now: float) -> str:
        claims = read_security_token(self._key(), token)
        if claims is None or claims.access_key_id != key_id:
            raise MNSError("InvalidSecurityToken")
        if claims.expires_at <= now:
            raise MNSError("SecurityTokenExpired")
        secret = self._issued_secret(key_id)
        if secret is None:
            raise MNSError("InvalidAccessKeyId")
        return secret

    def _key(self) -> bytes:
        if self._token_key is None:
            assert self.issued is not None
            self._token_key = self.issued.token_key()
        return self._token_key

    def _issued_secret(self, key_id: str) -> str | None:
        with self._lock:
            secret = self._found.get(key_id)
        if secret is not None or self.issued is None:
            return secret
        secret = self.issued.secret(key_id)
        if secret is not None:
            with self._lock:
                self._found[key_id] = secret
        return secret
