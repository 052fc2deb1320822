"""Signature V4 (``MNS4-HMAC-SHA256``): the canonical request, the string to sign, the signing key.

What Java SDK 2.0 and the Darabonba gateway package ``alibabacloud-gateway-mns`` send
(docs/protocol.md#signature-v4)::

    Authorization: MNS4-HMAC-SHA256
        Credential=<AccessKeyId>/<yyyyMMdd>/<region>/mns/aliyun_v4_request,Signature=<hex>

(one line on the wire).

The string to sign is ``MNS4-HMAC-SHA256``, the request time in ISO 8601 basic form, the scope
and the canonical request, one per line; the canonical request is the method, the encoded path,
the sorted query with lowercased names, the signed headers (``content-md5``, ``content-type``
and every ``x-mns-*``, lowercased, sorted, values trimmed) and an empty line. The signature is the
hex HMAC-SHA256 of it under a key derived from ``"aliyun_v4" + secret`` over the scope's parts.

Pure: callers hand in the request and the time its Date header names; the Date window and the
key lookup stay in :func:`gateway.auth.signatures.authenticate`, shared with V2.
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Final
from urllib.parse import quote, unquote

from gateway.errors.mns import MNSError
from gateway.protocol.request_target import query_parameters

if TYPE_CHECKING:
    from gateway.auth.incoming import IncomingRequest

SCHEME: Final = "MNS4-HMAC-SHA256"
SERVICE: Final = "mns"
TERMINATOR: Final = "aliyun_v4_request"
KEY_PREFIX: Final = "aliyun_v4"


@dataclass(frozen=True, slots=True)
class V4Credential:
    """The parts of a V4 Authorization header."""

    key_id: str
    date: str
    region: str
    service: str
    terminator: str
    signature: str

    @property
    def scope(self) -> str:
        return f"{self.date}/{self.region}/{self.service}/{self.terminator}"


def is_v4(authorization: str) -> bool:
    return authorization.lstrip().startswith(SCHEME + " ")


_AUTHORIZATION = re.compile(
    rf"{SCHEME} +Credential=([^,/\s]+)/([^,/\s]+)/([^,/\s]+)/([^,/\s]+)/([^,/\s]+)"
    r" *, *Signature=([0-9A-Fa-f]+)"
)
#: Characters percent-encoding keeps (RFC 3986's unreserved): a value made of these alone is
#: its own encoding, the common case, which skips ``quote``.
_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")
_PATH_SAFE = re.compile(r"[A-Za-z0-9_.~/-]*")


def parse_authorization(value: str) -> V4Credential:
    """Split ``MNS4-HMAC-SHA256 Credential=AK/date/region/mns/aliyun_v4_request,Signature=hex``
    (the order the SDKs write); anything else is ``InvalidAuthorizationHeader``."""
    match = _AUTHORIZATION.fullmatch(value.strip())
    if match is None:
        raise MNSError("InvalidAuthorizationHeader")
    return V4Credential(*match.groups())


@lru_cache(maxsize=64)
def iso_basic(epoch: int) -> str:
    """``yyyyMMddTHHmmssZ`` of ``epoch``, in UTC (the SDK rewrites its Date header so)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch))


def check_scope(credential: V4Credential, request_time: str, region: str | None) -> None:
    """The scope must name this service, its terminator, the gateway's region (any region when
    ``region`` is ``None``: a gateway nobody gave a region) and the day of the request's Date: a
    signature made for another day or region is not valid here even when its HMAC is (the key
    is derived from both)."""
    if credential.service != SERVICE or credential.terminator != TERMINATOR:
        raise MNSError(
            "InvalidAuthorizationHeader",
            f"The credential scope should end with /{SERVICE}/{TERMINATOR}.",
        )
    if region is not None and credential.region != region:
        raise MNSError(
            "SignatureDoesNotMatch",
            f"The region {credential.region!r} in the credential scope is wrong; "
            f"this endpoint is {region!r}.",
        )
    if credential.date != request_time[:8]:
        raise MNSError(
            "SignatureDoesNotMatch",
            f"The date {credential.date!r} in the credential scope is not the day of the "
            f"request's Date header ({request_time[:8]}).",
        )


@lru_cache(maxsize=256)
def signing_key(secret: str, date: str, region: str) -> bytes:
    """HMAC-SHA256 chain from ``"aliyun_v4" + secret`` over date, region, ``mns`` and the
    terminator. Cached: one key serves every request of a key, day and region."""
    key = (KEY_PREFIX + secret).encode("utf-8")
    for part in (date, region, SERVICE, TERMINATOR):
        key = hmac.digest(key, part.encode("utf-8"), "sha256")
    return key


_RESERVED = re.compile(r"[^A-Za-z0-9_.~-]")


def _percent(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8"))


def _encode(value: str) -> str:
    """``quote(value, safe="~")``, without its per-character loop over the unreserved ones (a
    receipt handle is 90 characters, a handful of them ``+``, ``/`` or ``=``)."""
    return value if _UNRESERVED.fullmatch(value) else _RESERVED.sub(_percent, value)


def canonical_path(raw_path: str) -> str:
    """The path as the SDK encodes it before sending: decoded, then percent-encoded with ``/``
    and ``~`` kept (so an encoded or a raw path sign alike)."""
    if raw_path.startswith("/") and _PATH_SAFE.fullmatch(raw_path):
        return raw_path
    path = unquote(raw_path) or "/"
    if not path.startswith("/"):
        path = "/" + path
    return quote(path, safe="/~")


def canonical_query(raw_query: str) -> str:
    """``name=value`` pairs of :func:`query_parameters` (names trimmed and lowercased, values
    trimmed: the parse the views read too), both percent-encoded (``~`` kept), sorted by name;
    a parameter without a value is its name alone."""
    pairs = sorted(
        (_encode(name), _encode(value)) for name, value in query_parameters(raw_query).items()
    )
    return "&".join(f"{name}={value}" if value else name for name, value in pairs)


def canonical_headers(headers: Mapping[str, str]) -> str:
    """``name:value`` lines of content-md5, content-type and every x-mns-* (names lowercase)."""
    signed = sorted(
        (name, value.strip())
        for name, value in headers.items()
        if name in ("content-md5", "content-type") or name.startswith("x-mns-")
    )
    return "".join(f"{name}:{value}\n" for name, value in signed)


def canonical_request(request: IncomingRequest) -> str:
    path, _, query = request.raw_uri.partition("?")
    return (
        f"{request.method.upper()}\n{canonical_path(path)}\n{canonical_query(query)}\n"
        f"{canonical_headers(request.headers)}\n"
    )


def string_to_sign(request: IncomingRequest, request_time: str, scope: str) -> str:
    return f"{SCHEME}\n{request_time}\n{scope}\n{canonical_request(request)}"


def signature(request: IncomingRequest, secret: str, request_time: str, region: str) -> str:
    """The hex signature ``request`` carries when signed by ``secret`` at ``request_time``."""
    date = request_time[:8]
    scope = f"{date}/{region}/{SERVICE}/{TERMINATOR}"
    key = signing_key(secret, date, region)
    text = string_to_sign(request, request_time, scope)
    # hmac.digest: OpenSSL's one-shot HMAC, without hmac.new's Python object per request.
    return hmac.digest(key, text.encode("utf-8"), "sha256").hex()


def verify(
    request: IncomingRequest, credential: V4Credential, secret: str, sent: int, region: str | None
) -> None:
    """Raise ``SignatureDoesNotMatch`` unless ``credential`` signs ``request`` sent at ``sent``
    (epoch seconds of its Date) for ``region`` (``None``: for the region its scope names)."""
    request_time = iso_basic(sent)
    check_scope(credential, request_time, region)
    # The scope's region, which check_scope has just required to be ``region`` when one is set.
    expected = signature(request, secret, request_time, credential.region)
    given = credential.signature.lower().encode("utf-8", "replace")
    if not hmac.compare_digest(expected.encode("ascii"), given):
        raise MNSError("SignatureDoesNotMatch")
