"""Push signatures (RSA PKCS#1 v1.5 over SHA-1) and the ring of keys that make them.

Receivers verify a push with the certificate found at ``x-mns-signing-cert-url``, so a key is only
useful while its certificate is served. The ring therefore never forgets a certificate: rotation
adds a key and moves the ``current`` pointer, and pushes signed a moment before still verify.

Everything lives in one directory (``data_dir/keys/``)::

    <key_id>.key.pem   private key, PKCS#8, mode 0600 (generated keys only)
    <key_id>.pem       self-signed X.509 certificate, served as /certs/<key_id>.pem
    current            id of the key new pushes are signed with (generated keys only)
    .lock              flock(2) target serialising first start and rotation

gunicorn starts its workers at the same moment; the lock makes exactly one of them generate the
first key while the others wait and load it. Files are written to a temporary name and renamed,
so a reader without the lock never sees half a certificate.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from gateway.delivery import DeliveryError
from gateway.delivery.formats import (
    ContentFormat,
    PushNotification,
    push_headers,
    push_path,
    render,
    string_to_sign,
)

#: Key ids are the first 16 hex digits of SHA-256 over the public key's DER encoding.
KEY_ID_PATTERN: Final = re.compile(r"[0-9a-f]{16}")
DEFAULT_KEY_BITS: Final = 2048
DEFAULT_VALIDITY_DAYS: Final = 3650
_CLOCK_SKEW: Final = timedelta(minutes=5)

Clock = Callable[[], datetime]


class KeyRingError(DeliveryError):
    """The key directory or a configured PEM file cannot be used."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


def key_id_of(public_key: rsa.RSAPublicKey) -> str:
    """A stable id: the same key always gets the same certificate URL, in every process."""
    der = public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()[:16]


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
        signature = self.private_key.sign(text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA1())
        return base64.b64encode(signature).decode("ascii")


def sign_headers(
    key: SigningKey, headers: Sequence[tuple[str, str]], path_and_query: str
) -> list[tuple[str, str]]:
    """``headers`` with ``Authorization`` (the bare signature, no ``MNS`` prefix) after ``Date``."""
    authorization = ("Authorization", key.sign(string_to_sign("POST", headers, path_and_query)))
    names = [name.lower() for name, _ in headers]
    position = names.index("date") + 1 if "date" in names else len(headers)
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
) -> SignedPush:
    """Render, add headers and sign in one step, so the signed path is the one that is sent."""
    rendered = render(notification, fmt)
    headers = push_headers(
        notification,
        rendered,
        date=date,
        request_id=request_id,
        signing_cert_url=cert_url(public_url, key.key_id),
    )
    path = push_path(endpoint_url)
    return SignedPush(path=path, headers=sign_headers(key, headers, path), body=rendered.body)


def _self_signed_certificate(
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


def _load_private_key(pem: bytes, source: str) -> rsa.RSAPrivateKey:
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyRingError(f"{source}: not an unencrypted PEM private key") from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise KeyRingError(f"{source}: push signatures need an RSA key")
    return key


def _checked_certificate(pem: bytes, private_key: rsa.RSAPrivateKey, source: str) -> bytes:
    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError as exc:
        raise KeyRingError(f"{source}: not a PEM X.509 certificate") from exc
    if certificate.public_key() != private_key.public_key():
        raise KeyRingError(f"{source}: the certificate does not belong to the private key")
    return certificate.public_bytes(serialization.Encoding.PEM)


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class KeyRing:
    """The signing keys of one gateway: the current one and every certificate it ever served.

    With ``private_key_file`` the operator owns the key (rotation means configuring a new file and
    restarting); its certificate is still copied into the directory so that it stays served after
    the next key replaces it. Without it, keys are generated here and :meth:`rotate` makes new ones.
    The constructor does the IO (and may wait for another process holding the lock).
    """

    def __init__(
        self,
        directory: Path,
        *,
        bits: int = DEFAULT_KEY_BITS,
        private_key_file: Path | None = None,
        certificate_file: Path | None = None,
        clock: Clock = _utc_now,
        validity_days: int = DEFAULT_VALIDITY_DAYS,
    ) -> None:
        if bits < 1024:
            raise KeyRingError(f"RSA keys need at least 1024 bits, got {bits}")
        if certificate_file is not None and private_key_file is None:
            raise KeyRingError("a signing certificate file needs its private key file")
        self._directory = Path(directory)
        self._bits = bits
        self._clock = clock
        self._validity_days = validity_days
        self._configured = private_key_file is not None
        self._certificates: dict[str, bytes] = {}
        self._directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with self._locked():
            if private_key_file is not None:
                self._current = self._adopt_configured(private_key_file, certificate_file)
            else:
                self._current = self._load_current() or self._create_key()

    @property
    def current(self) -> SigningKey:
        """The key new pushes are signed with."""
        return self._current

    def rotate(self) -> SigningKey:
        """Make a new key current; earlier certificates stay served."""
        if self._configured:
            raise KeyRingError("the signing key comes from a configured file; replace the file")
        with self._locked():
            self._current = self._create_key()
        return self._current

    def refresh(self) -> SigningKey:
        """Follow a rotation made by another process sharing the directory (cheap: one read)."""
        if not self._configured and self._read_pointer() not in (None, self._current.key_id):
            with self._locked():
                self._current = self._load_current() or self._current
        return self._current

    def certificate_pem(self, key_id: str) -> bytes | None:
        """The PEM certificate of any current or earlier key, ``None`` for an unknown id.

        Read from the directory rather than memory, so every worker process serves keys that
        another one created; found certificates never change and are cached.
        """
        if not KEY_ID_PATTERN.fullmatch(key_id):
            return None
        pem = self._certificates.get(key_id)
        if pem is None:
            try:
                pem = (self._directory / f"{key_id}.pem").read_bytes()
            except FileNotFoundError:
                return None
            self._certificates[key_id] = pem
        return pem

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self._directory / ".lock", "a+b") as lock_file:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def _read_pointer(self) -> str | None:
        try:
            key_id = (self._directory / "current").read_text("ascii").strip()
        except FileNotFoundError:
            return None
        if not KEY_ID_PATTERN.fullmatch(key_id):
            raise KeyRingError(f"{self._directory / 'current'}: not a key id: {key_id!r}")
        return key_id

    def _load_current(self) -> SigningKey | None:
        key_id = self._read_pointer()
        if key_id is None:
            return None
        key_path = self._directory / f"{key_id}.key.pem"
        try:
            private_key = _load_private_key(key_path.read_bytes(), str(key_path))
        except FileNotFoundError as exc:
            raise KeyRingError(f"{key_path} is missing") from exc
        if key_id_of(private_key.public_key()) != key_id:
            raise KeyRingError(f"{key_path} does not hold key {key_id}")
        return SigningKey(key_id, private_key, self._ensure_certificate(private_key, key_id))

    def _create_key(self) -> SigningKey:
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=self._bits)
        key_id = key_id_of(private_key.public_key())
        pem = private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        _write_atomically(self._directory / f"{key_id}.key.pem", pem, 0o600)
        certificate = self._ensure_certificate(private_key, key_id)
        _write_atomically(self._directory / "current", key_id.encode("ascii"), 0o644)
        return SigningKey(key_id, private_key, certificate)

    def _ensure_certificate(self, private_key: rsa.RSAPrivateKey, key_id: str) -> bytes:
        path = self._directory / f"{key_id}.pem"
        if path.exists():
            return path.read_bytes()
        pem = _self_signed_certificate(private_key, key_id, self._clock(), self._validity_days)
        _write_atomically(path, pem, 0o644)
        return pem

    def _adopt_configured(self, key_file: Path, certificate_file: Path | None) -> SigningKey:
        try:
            private_key = _load_private_key(key_file.read_bytes(), str(key_file))
            certificate = (
                None
                if certificate_file is None
                else _checked_certificate(
                    certificate_file.read_bytes(), private_key, str(certificate_file)
                )
            )
        except OSError as exc:
            raise KeyRingError(f"cannot read the configured signing key: {exc}") from exc
        key_id = key_id_of(private_key.public_key())
        if certificate is None:
            certificate = self._ensure_certificate(private_key, key_id)
        else:
            path = self._directory / f"{key_id}.pem"
            if not path.exists() or path.read_bytes() != certificate:
                _write_atomically(path, certificate, 0o644)
        return SigningKey(key_id, private_key, certificate)
