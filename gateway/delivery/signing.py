"""Push signatures (RSA PKCS#1 v1.5 over SHA-1): signing keys, their certificates, signed pushes.

The ring of keys a gateway signs with, kept in files or in the database, is
:mod:`gateway.pushing.keyring`.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from gateway.delivery.formats import (
    ContentFormat,
    PushNotification,
    checked_extra_headers,
    content_md5,
    push_path,
    push_template,
    render,
    string_to_sign,
)
from gateway.delivery.standard_webhooks import StandardWebhook
from gateway.errors.delivery import KeyRingError

#: Key ids are the first 16 hex digits of SHA-256 over the public key's DER encoding.
KEY_ID_PATTERN: Final = re.compile(r"[0-9a-f]{16}")
DEFAULT_KEY_BITS: Final = 2048
DEFAULT_VALIDITY_DAYS: Final = 3650
_CLOCK_SKEW: Final = timedelta(minutes=5)
#: Immutable, so made once rather than for every signature.
_PADDING: Final = padding.PKCS1v15()
_SHA1: Final = hashes.SHA1()

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def key_id_of(public_key: rsa.RSAPublicKey) -> str:
    """A stable id: the same key always gets the same certificate URL, in every process."""
    der = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


@lru_cache(maxsize=64)
def cert_url(public_url: str, key_id: str) -> str:
    """Where the gateway serves a key's certificate (``MNS_GATEWAY_PUBLIC_URL`` + ``/certs``)."""
    return f"{public_url.rstrip('/')}/certs/{key_id}.pem"


@dataclass(frozen=True, slots=True)
class SigningKey:
    """A private key together with the certificate receivers fetch to verify its signatures."""

    key_id: str
    private_key: rsa.RSAPrivateKey = field(repr=False)
    certificate_pem: bytes = field(repr=False)

    def sign(self, text: str) -> str:
        """Base64 of the PKCS#1 v1.5 SHA-1 signature of the UTF-8 text, as MNS sends it."""
        signature = self.private_key.sign(text.encode("utf-8"), _PADDING, _SHA1)
        return base64.b64encode(signature).decode("ascii")


def sign_headers(
    key: SigningKey, headers: Sequence[tuple[str, str]], path_and_query: str
) -> list[tuple[str, str]]:
    """``headers`` with ``Authorization`` (the bare signature, no ``MNS`` prefix) after ``Date``."""
    authorization = ("Authorization", key.sign(string_to_sign("POST", headers, path_and_query)))
    position = next(
        (at + 1 for at, (name, _) in enumerate(headers) if name.lower() == "date"), len(headers)
    )
    return [*headers[:position], authorization, *headers[position:]]


@dataclass(frozen=True, slots=True)
class SignedPush:
    """A complete request: POST ``path`` with exactly these headers and body."""

    path: str
    headers: list[tuple[str, str]]
    body: bytes


def build_signed_push(
    notification: PushNotification,
    fmt: ContentFormat,
    endpoint_url: str,
    *,
    key: SigningKey,
    public_url: str,
    date: str,
    request_id: str,
    unsigned: Sequence[tuple[str, str]] = (),
    webhook: StandardWebhook | None = None,
) -> SignedPush:
    """Render, add headers and sign in one step, so the signed path is the one that is sent
    (and a Standard Webhooks signature covers the body that is sent). ``unsigned`` (trace
    context) and the webhook's headers are sent after the signed headers, checked as they are.

    The headers and the string to sign come from the subscription's
    :class:`~gateway.delivery.formats.PushTemplate`: a push fills in its own values only."""
    rendered = render(notification, fmt)
    template = push_template(notification, rendered.content_type, cert_url(public_url, key.key_id))
    extra = checked_extra_headers(
        unsigned if webhook is None else [*unsigned, *webhook.headers(rendered.body)]
    )
    own = template.own_values(notification, content_md5(rendered.body), date, request_id)
    path = push_path(endpoint_url)
    headers = template.headers(own, key.sign(template.string_to_sign(own, path)))
    return SignedPush(path=path, headers=headers + extra if extra else headers, body=rendered.body)


def self_signed_certificate(
    private_key: rsa.RSAPrivateKey, key_id: str, now: datetime, validity_days: int
) -> bytes:
    """A certificate whose only job is to carry the public key: receivers must not check age."""
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mns-push"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"mns-push push signing key {key_id}"),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + timedelta(days=validity_days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(private_key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


def load_private_key(pem: bytes, source: str) -> rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyRingError(f"{source}: not an unencrypted PEM private key") from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyRingError(f"{source}: push signatures need an RSA key")
    return key


def checked_certificate(pem: bytes, private_key: rsa.RSAPrivateKey, source: str) -> bytes:
    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise KeyRingError(f"{source}: not a PEM X.509 certificate") from exc
    if certificate.public_key() != private_key.public_key():
        raise KeyRingError(f"{source}: the certificate does not belong to the private key")
    return certificate.public_bytes(serialization.Encoding.PEM)
