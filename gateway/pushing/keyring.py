"""The ring of keys a gateway signs pushes with, and where it keeps them.

Receivers verify a push with the certificate found at ``x-mns-signing-cert-url``, so a key is only
useful while its certificate is served. The ring therefore never forgets a certificate: rotation
adds a key and moves the ``current`` pointer, and pushes signed a moment before still verify.

Where the keys live is a :class:`KeyStorage`:

- :class:`FileKeyStorage`, one directory (``data_dir/keys/``), for SQLite deployments on one
  host::

      <key_id>.key.pem   private key, PKCS#8, mode 0600 (generated keys only)
      <key_id>.pem       self-signed X.509 certificate, served as /certs/<key_id>.pem
      current            id of the key new pushes are signed with (generated keys only)
      .lock              flock(2) target serialising first start and rotation

  Files are written to a temporary name and renamed, so a reader never sees half a certificate.
- the database (:class:`gateway.store.keys.DatabaseKeyStorage`), for replicas sharing PostgreSQL:
  a rotation on one replica is followed by all within ``HttpSender.key_refresh_seconds``, and
  every replica serves every certificate.

Processes starting together agree on one first key: with files the lock lets one generate it;
with the database each may generate one, and the first to set the pointer wins.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from gateway.config.settings import Settings
from gateway.delivery.signing import (
    DEFAULT_KEY_BITS,
    DEFAULT_VALIDITY_DAYS,
    KEY_ID_PATTERN,
    Clock,
    SigningKey,
    checked_certificate,
    key_id_of,
    load_private_key,
    self_signed_certificate,
    utc_now,
)
from gateway.errors.delivery import KeyRingError
from gateway.store.base import Database
from gateway.store.shared import DatabaseKeyStorage


class KeyStorage(Protocol):
    def locked(self) -> AbstractContextManager[None]:
        """Held while the ring picks or makes its first key, and while it rotates."""

    def current_id(self) -> str | None:
        """The id new pushes are signed with (cheap: asked every few seconds)."""

    def private_key(self, key_id: str) -> bytes | None: ...

    def certificate(self, key_id: str) -> bytes | None: ...

    def save(self, key_id: str, private_key: bytes | None, certificate: bytes) -> None:
        """Keep a key (``private_key`` ``None``: a configured key, only its certificate)."""

    def make_current(self, key_id: str, *, if_none: bool) -> str:
        """Point at ``key_id`` (with ``if_none``, only if nothing is current yet); the id
        current afterwards."""


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


class FileKeyStorage:
    """Keys as files in one directory (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)

    @contextmanager
    def locked(self) -> Iterator[None]:
        with open(self.directory / ".lock", "a+b") as lock_file:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def current_id(self) -> str | None:
        try:
            key_id = (self.directory / "current").read_text("ascii").strip()
        except FileNotFoundError:
            return None
        if not KEY_ID_PATTERN.fullmatch(key_id):
            raise KeyRingError(f"{self.directory / 'current'}: not a key id: {key_id!r}")
        return key_id

    def private_key(self, key_id: str) -> bytes | None:
        try:
            return (self.directory / f"{key_id}.key.pem").read_bytes()
        except FileNotFoundError:
            return None

    def certificate(self, key_id: str) -> bytes | None:
        try:
            return (self.directory / f"{key_id}.pem").read_bytes()
        except FileNotFoundError:
            return None

    def save(self, key_id: str, private_key: bytes | None, certificate: bytes) -> None:
        if private_key is not None:
            _write_atomically(self.directory / f"{key_id}.key.pem", private_key, 0o600)
        if self.certificate(key_id) != certificate:
            _write_atomically(self.directory / f"{key_id}.pem", certificate, 0o644)

    def make_current(self, key_id: str, *, if_none: bool) -> str:
        current = self.current_id() if if_none else None
        if current is None:
            _write_atomically(self.directory / "current", key_id.encode("ascii"), 0o644)
        return current or key_id


def check_configured_files(key_file: Path | None, certificate_file: Path | None) -> None:
    """Raise what :class:`KeyRing` would about configured key and certificate files, without
    touching its storage (``mns-gateway serve`` asks before its workers open the key ring)."""
    if certificate_file is not None and key_file is None:
        raise KeyRingError(
            "MNS_GATEWAY_SIGNING_CERT_FILE needs its private key file in "
            "MNS_GATEWAY_SIGNING_KEY_FILE"
        )
    if key_file is None:
        return
    try:
        private_key = load_private_key(key_file.read_bytes(), str(key_file))
        if certificate_file is not None:
            checked_certificate(certificate_file.read_bytes(), private_key, str(certificate_file))
    except OSError as exc:
        which = "KEY" if exc.filename == str(key_file) else "CERT"
        raise KeyRingError(
            f"cannot read MNS_GATEWAY_SIGNING_{which}_FILE: {exc.strerror or exc}: {exc.filename}"
        ) from exc


class KeyRing:
    """The signing keys of one gateway: the current one and every certificate it ever served.

    With ``private_key_file`` the operator owns the key (rotation means configuring a new file and
    restarting); its certificate is still kept in the storage so that it stays served after the
    next key replaces it. Without it, keys are generated and :meth:`rotate` makes new ones.
    ``storage`` is a :class:`KeyStorage` or a directory for :class:`FileKeyStorage`. The
    constructor does the IO (and may wait for another process holding the lock).
    """

    def __init__(
        self,
        storage: KeyStorage | Path,
        *,
        bits: int = DEFAULT_KEY_BITS,
        private_key_file: Path | None = None,
        certificate_file: Path | None = None,
        clock: Clock = utc_now,
        validity_days: int = DEFAULT_VALIDITY_DAYS,
    ) -> None:
        if bits < 1024:
            raise KeyRingError(f"RSA keys need at least 1024 bits, got {bits}")
        if certificate_file is not None and private_key_file is None:
            raise KeyRingError("a signing certificate file needs its private key file")
        self.storage = FileKeyStorage(storage) if isinstance(storage, Path) else storage
        self._bits = bits
        self._clock = clock
        self._validity_days = validity_days
        self._configured = private_key_file is not None
        self._certificates: dict[str, bytes] = {}
        with self.storage.locked():
            if private_key_file is not None:
                self._current = self._adopt_configured(private_key_file, certificate_file)
            else:
                self._current = self._load_current() or self._first_key()

    @property
    def current(self) -> SigningKey:
        """The key new pushes are signed with."""
        return self._current

    def rotate(self) -> SigningKey:
        """Make a new key current; earlier certificates stay served."""
        if self._configured:
            raise KeyRingError("the signing key comes from a configured file; replace the file")
        with self.storage.locked():
            key = self._create_key()
            self.storage.make_current(key.key_id, if_none=False)
            self._current = key
        return self._current

    def refresh(self) -> SigningKey:
        """Follow a rotation made by another process or replica (cheap: one read)."""
        if not self._configured and self.storage.current_id() not in (None, self._current.key_id):
            self._current = self._load_current() or self._current
        return self._current

    def certificate_pem(self, key_id: str) -> bytes | None:
        """The PEM certificate of any current or earlier key, ``None`` for an unknown id.

        Read from the storage rather than memory, so every process serves keys that another one
        created; found certificates never change and are cached.
        """
        if not KEY_ID_PATTERN.fullmatch(key_id):
            return None
        pem = self._certificates.get(key_id)
        if pem is None:
            pem = self.storage.certificate(key_id)
            if pem is None:
                return None
            self._certificates[key_id] = pem
        return pem

    def _load_current(self) -> SigningKey | None:
        key_id = self.storage.current_id()
        if key_id is None:
            return None
        pem = self.storage.private_key(key_id)
        if pem is None:
            raise KeyRingError(f"the private key of the current signing key {key_id} is missing")
        private_key = load_private_key(pem, f"signing key {key_id}")
        if key_id_of(private_key.public_key()) != key_id:
            raise KeyRingError(f"the stored signing key {key_id} is another key")
        return SigningKey(key_id, private_key, self._ensure_certificate(private_key, key_id))

    def _first_key(self) -> SigningKey:
        """A new key made current, unless another process made one current first: then that."""
        key = self._create_key()
        if self.storage.make_current(key.key_id, if_none=True) == key.key_id:
            return key
        loaded = self._load_current()
        assert loaded is not None
        return loaded

    def _create_key(self) -> SigningKey:
        private_key = rsa.generate_private_key(public_exponent=65537, key_size=self._bits)
        key_id = key_id_of(private_key.public_key())
        pem = private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        certificate = self_signed_certificate(
            private_key, key_id, self._clock(), self._validity_days
        )
        self.storage.save(key_id, pem, certificate)
        return SigningKey(key_id, private_key, certificate)

    def _ensure_certificate(self, private_key: rsa.RSAPrivateKey, key_id: str) -> bytes:
        pem = self.storage.certificate(key_id)
        if pem is None:
            pem = self_signed_certificate(private_key, key_id, self._clock(), self._validity_days)
            self.storage.save(key_id, None, pem)
        return pem

    def _adopt_configured(self, key_file: Path, certificate_file: Path | None) -> SigningKey:
        try:
            private_key = load_private_key(key_file.read_bytes(), str(key_file))
            certificate = (
                None
                if certificate_file is None
                else checked_certificate(
                    certificate_file.read_bytes(), private_key, str(certificate_file)
                )
            )
        except OSError as exc:
            raise KeyRingError(f"cannot read the configured signing key: {exc}") from exc
        key_id = key_id_of(private_key.public_key())
        if certificate is None:
            certificate = self._ensure_certificate(private_key, key_id)
        else:
            self.storage.save(key_id, None, certificate)
        return SigningKey(key_id, private_key, certificate)


def open_keyring(settings: Settings, database: Database) -> KeyRing:
    """The signing keys: in the database shared by replicas, else in ``data_dir/keys``.
    Configured key and certificate files win either way."""
    storage: KeyStorage | Path = (
        DatabaseKeyStorage(database) if settings.database_url else settings.data_dir / "keys"
    )
    return KeyRing(
        storage,
        private_key_file=settings.signing_key_file,
        certificate_file=settings.signing_cert_file,
    )
