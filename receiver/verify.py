"""The pure core of push verification: no network, no clock, no Flask.

An MNS push is signed by the sender with RSA PKCS#1 v1.5 over SHA-1
(docs/protocol.md#push-signature). The string to sign is::

    POST\\n{Content-md5}\\n{Content-Type}\\n{Date}\\n{x-mns-* headers}{path?query}

where the ``x-mns-*`` headers are lowercased, sorted and written ``name:value\\n`` each. The
signature does **not** cover the body: only the signed Content-MD5 header ties the body to it,
which is why :func:`check_content_md5` matters as much as :func:`check_signature`.

Everything here takes its inputs as arguments (the current time, the public key lookup), so the
whole verification can be tested without a server, and the I/O shells stay thin.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from functools import lru_cache

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from receiver.exceptions import (
    CertificateURLError,
    ContentMD5MismatchError,
    DateError,
    InvalidCertificateError,
    MissingHeaderError,
    SignatureMismatchError,
)

__all__ = [
    "AUTHORIZATION",
    "CONTENT_MD5",
    "CONTENT_TYPE",
    "DATE",
    "SIGNING_CERT_URL",
    "PublicKeyLookup",
    "SignedPush",
    "canonicalized_mns_headers",
    "check_content_md5",
    "check_date",
    "check_signature",
    "content_md5_matches",
    "lowercase_headers",
    "public_key_from_pem",
    "required_header",
    "signing_cert_url",
    "string_to_sign",
    "verify_push",
]

# Header names as keys of SignedPush.headers (always lowercase; the real service sends
# "Content-md5", others "Content-MD5", HTTP says they are the same header).
AUTHORIZATION = "authorization"
CONTENT_MD5 = "content-md5"
CONTENT_TYPE = "content-type"
DATE = "date"
SIGNING_CERT_URL = "x-mns-signing-cert-url"
_MNS_HEADER_PREFIX = "x-mns-"

PublicKeyLookup = Callable[[str], rsa.RSAPublicKey]
"""Certificate URL -> public key. Must refuse URLs off the allowlist before doing any I/O."""


@dataclass(frozen=True, slots=True)
class SignedPush:
    """One push request exactly as received: the only input verification needs.

    ``resource`` is the request URI as the sender wrote it (path and query, still
    percent-encoded). ``headers`` maps lowercased names to values; build it with
    :func:`lowercase_headers` so lookups are case-insensitive by construction.
    """

    method: str
    resource: str
    headers: Mapping[str, str]
    body: bytes


def lowercase_headers(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Key headers by lowercased name; a repeated header keeps its last value.

    The signature and the certificate URL are both read from this one mapping, so even a
    request that repeats a header is judged consistently.
    """
    return {name.lower(): value for name, value in items}


def required_header(headers: Mapping[str, str], name: str) -> str:
    """Return a header verification cannot do without; absent and empty are the same failure."""
    value = headers.get(name, "")
    if not value:
        raise MissingHeaderError(name)
    return value


def signing_cert_url(headers: Mapping[str, str]) -> str:
    """Decode ``x-mns-signing-cert-url``, which carries the certificate URL base64-encoded."""
    encoded = required_header(headers, SIGNING_CERT_URL)
    try:
        return base64.b64decode(encoded, validate=True).decode("ascii")
    except ValueError as exc:  # binascii.Error, UnicodeDecodeError, or non-ASCII text
        raise CertificateURLError("x-mns-signing-cert-url is not base64 of an ASCII URL") from exc


def canonicalized_mns_headers(headers: Mapping[str, str]) -> str:
    """The ``x-mns-*`` block of the string to sign: ``name:value\n`` per header, sorted."""
    lowered = ((name.lower(), value) for name, value in headers.items())
    mns_headers = sorted(pair for pair in lowered if pair[0].startswith(_MNS_HEADER_PREFIX))
    return "".join(f"{name}:{value}\n" for name, value in mns_headers)


def string_to_sign(push: SignedPush) -> str:
    """Build the text the sender signed. Header values are used verbatim, never normalised.

    Content-MD5 in particular comes in several encodings (docs/protocol.md#receiving-a-push);
    re-encoding it would break signatures made over the form the sender actually sent.
    """
    headers = push.headers
    return (
        f"{push.method.upper()}\n"
        f"{headers.get(CONTENT_MD5, '')}\n"
        f"{headers.get(CONTENT_TYPE, '')}\n"
        f"{headers.get(DATE, '')}\n"
        f"{canonicalized_mns_headers(headers)}"
        f"{push.resource}"
    )


def public_key_from_pem(pem: bytes) -> rsa.RSAPublicKey:
    """Extract the RSA public key of a PEM X.509 certificate.

    Deliberately checks neither validity dates, key size nor chain: the real service signs
    with a self-signed 512-bit certificate that expired in 2016. Trust comes from the URL
    allowlist the certificate was fetched under, not from the certificate itself.
    """
    try:
        certificate = x509.load_pem_x509_certificate(pem)
        public_key = certificate.public_key()
    except ValueError as exc:
        raise InvalidCertificateError("certificate is not a parseable PEM X.509") from exc
    if not isinstance(public_key, rsa.RSAPublicKey):
        raise InvalidCertificateError("certificate does not hold an RSA public key")
    return public_key


def check_signature(public_key: rsa.RSAPublicKey, text: str, authorization: str) -> None:
    """Verify ``authorization`` (base64, no ``MNS`` prefix) as PKCS#1 v1.5 SHA-1 of ``text``."""
    try:
        signature = base64.b64decode(authorization, validate=True)
    except ValueError as exc:  # binascii.Error, or non-ASCII text
        raise SignatureMismatchError("Authorization is not base64") from exc
    try:
        public_key.verify(signature, text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA1())
    except InvalidSignature as exc:
        raise SignatureMismatchError("signature does not match the string to sign") from exc


def content_md5_matches(header_value: str, body: bytes) -> bool:
    """Whether ``header_value`` is the MD5 of ``body`` in any encoding senders use.

    Accepted: hex in any case (what SIMPLIFIED pushes carry), base64 of the hex digest (the
    documentation's XML examples) and base64 of the raw 16-byte digest (RFC 1864).
    """
    digest = hashlib.md5(body, usedforsecurity=False).digest()
    if header_value.lower() == digest.hex():
        return True
    try:
        decoded = base64.b64decode(header_value, validate=True)
    except ValueError:  # binascii.Error, or non-ASCII text
        return False
    return decoded == digest or decoded.lower() == digest.hex().encode("ascii")


def check_content_md5(header_value: str, body: bytes) -> None:
    """Raise unless the signed Content-MD5 header describes this body."""
    if not content_md5_matches(header_value, body):
        raise ContentMD5MismatchError("body does not match Content-MD5")


def check_date(header_value: str, now: float, max_skew: float) -> None:
    """Reject a Date more than ``max_skew`` seconds before or after ``now`` (epoch seconds).

    Bounds how long a captured push can be replayed. A future Date is as suspect as a stale
    one: it would stretch the replay window by however far ahead it was set.
    """
    skew = _epoch_seconds(header_value) - now
    if abs(skew) > max_skew:
        raise DateError(f"Date {header_value!r} is {skew:+.0f}s from now (limit {max_skew:g}s)")


@lru_cache(maxsize=1024)
def _epoch_seconds(date: str) -> float:
    """Parse an RFC 1123 date. Memoised: Date has one-second resolution, so under load most
    pushes repeat a recent value; failures raise, and exceptions are never memoised."""
    try:
        sent = parsedate_to_datetime(date)
    except (TypeError, ValueError) as exc:
        raise DateError(f"Date {date!r} is not an RFC 1123 date") from exc
    if sent.tzinfo is None:  # "-0000" means UTC with no claim about local time
        sent = sent.replace(tzinfo=UTC)
    return sent.timestamp()


def verify_push(
    push: SignedPush,
    *,
    public_key_for: PublicKeyLookup,
    now: float,
    max_clock_skew: float | None,
    require_content_md5: bool,
) -> None:
    """Run every check in the documented order; return quietly only for a genuine push.

    Order: required headers, certificate URL (allowlist, then fetch, both inside
    ``public_key_for``), signature, Content-MD5, Date. Raises a
    :class:`~receiver.exceptions.VerificationError` subclass naming the first failed check.
    """
    authorization = required_header(push.headers, AUTHORIZATION)
    required_header(push.headers, DATE)
    content_md5 = required_header(push.headers, CONTENT_MD5) if require_content_md5 else None
    public_key = public_key_for(signing_cert_url(push.headers))
    check_signature(public_key, string_to_sign(push), authorization)
    if content_md5 is not None:
        check_content_md5(content_md5, push.body)
    if max_clock_skew is not None:
        check_date(push.headers[DATE], now, max_clock_skew)
