"""MNS request authentication: the string to sign, the HMAC check, the Date window, Content-MD5.

Everything here is pure: callers hand in the request as sent (method, raw URI, headers, body) and
the current time, and get back the access key id that signed it or an :class:`MNSError`.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import hashlib
import hmac
from collections.abc import Mapping
from email.utils import parsedate_tz
from functools import lru_cache
from typing import Protocol

from gateway.auth import signatures_v4 as auth_v4
from gateway.auth.incoming import IncomingRequest
from gateway.errors.mns import MNSError

#: The real service rejects requests whose Date is more than 15 minutes away from its clock.
MAX_CLOCK_SKEW_SECONDS = 15 * 60


def canonical_mns_headers(headers: Mapping[str, str]) -> str:
    """``name:value`` lines for every ``x-mns-*`` header (names already lowercase), sorted."""
    pairs = sorted(
        (name, value.strip()) for name, value in headers.items() if name.startswith("x-mns-")
    )
    return "".join(f"{name}:{value}\n" for name, value in pairs)


def string_to_sign(request: IncomingRequest) -> str:
    """The MNS StringToSign; ``x-mns-date`` stands in for Date when present
    (docs/protocol.md#string-to-sign)."""
    date = request.header("x-mns-date") or request.header("date") or ""
    return (
        f"{request.method.upper()}\n"
        f"{request.header('content-md5') or ''}\n"
        f"{request.header('content-type') or ''}\n"
        f"{date}\n"
        f"{canonical_mns_headers(request.headers)}"
        f"{request.raw_uri}"
    )


def sign(secret: str, text: str) -> str:
    """base64(HMAC-SHA1(secret, text)), the signature part of ``MNS id:signature``."""
    digest = hmac.new(secret.encode("utf-8"), text.encode("utf-8"), hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def parse_authorization(value: str) -> tuple[str, str]:
    """Split ``MNS <AccessKeyId>:<Signature>`` into its two parts."""
    scheme, _, credential = value.strip().partition(" ")
    key_id, sep, signature = credential.strip().partition(":")
    if scheme != "MNS" or not sep or not key_id or not signature:
        raise MNSError("InvalidAuthorizationHeader")
    return key_id, signature


@lru_cache(maxsize=1024)
def parse_http_date(value: str) -> int | None:
    """Epoch seconds of an RFC 1123 date with a zone, ``None`` if it is not one.

    Cached: every request signed within the same second carries the same string.
    """
    parsed = parsedate_tz(value)
    if parsed is None or parsed[9] is None:
        return None
    try:
        return calendar.timegm((*parsed[:6], 0, 1, 0)) - parsed[9]
    except (OverflowError, ValueError):
        return None


def check_date(request: IncomingRequest, now: float) -> int:
    """Reject a missing, unparseable or stale Date (or x-mns-date); return its epoch seconds."""
    value = request.header("x-mns-date") or request.header("date")
    if not value:
        raise MNSError("MissingDateHeader")
    sent = parse_http_date(value)
    if sent is None:
        raise MNSError("InvalidDateHeader")
    if abs(sent - now) > MAX_CLOCK_SKEW_SECONDS:
        raise MNSError("TimeExpired")
    return sent


def content_md5_matches(header_value: str, body: bytes) -> bool:
    """Whether Content-MD5 describes ``body`` in either encoding clients use.

    The official SDKs send base64 of the 32-char lowercase hex digest (44 chars); RFC 1864
    clients send base64 of the 16 raw bytes (24 chars).
    """
    digest = hashlib.md5(body)
    try:
        decoded = base64.b64decode(header_value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(decoded) == 16:
        return hmac.compare_digest(decoded, digest.digest())
    if len(decoded) == 32:
        return hmac.compare_digest(decoded.lower(), digest.hexdigest().encode("ascii"))
    return False


class SecretSource(Protocol):
    """The keys requests may be signed with
    (:class:`gateway.auth.temporary_credentials.AccessKeys`)."""

    def secret_for(self, key_id: str, token: str | None, now: float) -> str:
        """The secret ``key_id`` signs with, given the request's ``security-token`` (if any), or
        the :class:`MNSError` the service answers: an unknown key, a token that does not belong
        to the key, an expired token (docs/protocol.md#temporary-credentials)."""
        ...


def authenticate(
    request: IncomingRequest, keys: SecretSource, now: float, region: str | None = None
) -> str:
    """Return the access key id that signed ``request``, or raise the MNS error the service would.

    The order mirrors the service: Authorization present, Date sane, key (and its security
    token) known, signature right, then the body digest, which is only meaningful once the
    headers are trusted. Both signature versions share every step but the signature itself:
    V2 (``MNS id:signature``) and V4 (``MNS4-HMAC-SHA256``, scoped to ``region``, or to the
    region its scope names when ``region`` is ``None``; :mod:`gateway.auth.signatures_v4`).
    """
    authorization = request.header("authorization")
    if not authorization:
        raise MNSError("MissingAuthorizationHeader")
    sent = check_date(request, now)
    if auth_v4.is_v4(authorization):
        credential = auth_v4.parse_authorization(authorization)
        key_id = credential.key_id
        secret = keys.secret_for(key_id, request.header("security-token"), now)
        auth_v4.verify(request, credential, secret, sent, region)
    else:
        key_id, signature = parse_authorization(authorization)
        secret = keys.secret_for(key_id, request.header("security-token"), now)
        expected = sign(secret, string_to_sign(request))
        if not hmac.compare_digest(expected.encode("ascii"), signature.encode("utf-8", "replace")):
            raise MNSError("SignatureDoesNotMatch")
    content_md5 = request.header("content-md5")
    if content_md5 and not content_md5_matches(content_md5, request.body):
        raise MNSError("InvalidDigest")
    return key_id
