"""The TLS context https pushes use: the system's CAs, a private CA, a client certificate.

``MNS_GATEWAY_PUSH_CA_FILE`` (a PEM bundle) is trusted in addition to the system's CAs;
``MNS_GATEWAY_PUSH_CLIENT_CERT`` and ``MNS_GATEWAY_PUSH_CLIENT_KEY`` are presented to endpoints
that ask for a client certificate. The files are watched as the signing key ring is refreshed:
at most every ``check_seconds`` a push asks whether one changed (its inode or mtime: a
Kubernetes Secret swaps a symlink, an operator rewrites the file), and :meth:`PushTls.reload`
(SIGHUP) asks at the next push. A changed set is loaded into a new context and the generation
moves on, which makes the transport drop the connections opened with the old one. Files that
cannot be loaded then (a rotation half written) leave the old context in use, logged once, until
they change again. Without any of the three files nothing is watched: the default context.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

from gateway.config.settings import Settings, env_name
from gateway.errors.commands import SettingsError

log = logging.getLogger(__name__)
Clock = Callable[[], float]
#: What identifies one version of a file: its inode and mtime (``None``: it is missing).
Signature = tuple[tuple[int, int] | None, ...]


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The configured files; ``cert`` and ``key`` come together or not at all."""

    ca_file: Path | None = None
    cert: Path | None = None
    key: Path | None = None

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(path for path in (self.ca_file, self.cert, self.key) if path is not None)


def tls_files(settings: Settings) -> TlsFiles:
    files = TlsFiles(settings.push_ca_file, settings.push_client_cert, settings.push_client_key)
    if (files.cert is None) != (files.key is None):
        given, missing = ("cert", "key") if files.key is None else ("key", "cert")
        raise SettingsError(
            f"{env_name(f'push_client_{given}')} is set but {env_name(f'push_client_{missing}')} "
            "is not: a client certificate needs its private key"
        )
    return files


def build_context(files: TlsFiles) -> ssl.SSLContext:
    """The system's CAs with hostnames checked, plus the configured files; a
    :class:`SettingsError` names the setting whose file cannot be read or used."""
    context = ssl.create_default_context()
    if files.ca_file is not None:
        try:
            context.load_verify_locations(cafile=str(files.ca_file))
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise _unusable("push_ca_file", files.ca_file, exc) from exc
    if files.cert is not None and files.key is not None:
        _load_client_certificate(context, files.cert, files.key)
    return context


def _load_client_certificate(context: ssl.SSLContext, cert: Path, key: Path) -> None:
    """Each file parsed on its own first, so an error names the right one (and an encrypted
    key is refused instead of OpenSSL asking for its password on the terminal)."""
    _parse("push_client_cert", cert, x509.load_pem_x509_certificates)
    _parse("push_client_key", key, lambda data: serialization.load_pem_private_key(data, None))
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise SettingsError(
            f"{env_name('push_client_key')}={str(key)!r} cannot be used with "
            f"{env_name('push_client_cert')}={str(cert)!r}: {_reason(exc)}"
        ) from exc


def _parse(name: str, path: Path, parse: Callable[[bytes], object]) -> None:
    try:
        parse(path.read_bytes())
    except (OSError, ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise _unusable(name, path, exc) from exc


def _unusable(name: str, path: Path, exc: Exception) -> SettingsError:
    return SettingsError(f"{env_name(name)}={str(path)!r} cannot be used: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return exc.reason.replace("_", " ").lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _signature(paths: tuple[Path, ...]) -> Signature:
    versions: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            versions.append(None)
        else:
            versions.append((stat.st_ino, stat.st_mtime_ns))
    return tuple(versions)


class PushTls:
    """The current TLS context for https pushes and its generation (see the module docstring).

    Thread-safe. ``clock`` is monotonic seconds (injected: tests move it instead of waiting).
    """

    def __init__(
        self,
        files: TlsFiles = TlsFiles(),
        *,
        check_seconds: float = 1.0,
        clock: Clock = time.monotonic,
        context: ssl.SSLContext | None = None,
    ) -> None:
        self._files = files
        self._watched = bool(files.paths)
        self._check_seconds = check_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._signature = _signature(files.paths)
        # Configured files are loaded now, so that one that cannot be used stops the start.
        # The system's CAs alone cannot fail, and many gateways never push over https: they
        # wait for the first https push
        # (docs/benchmarks.md#a-gateways-stop-and-what-a-command-imports).
        self._context: ssl.SSLContext | None = context or (
            build_context(files) if self._watched else None
        )
        self._generation = 0
        self._next_check = clock() + check_seconds
        self._reload_asked = False
        self._failed: Signature | None = None

    def current(self) -> tuple[int, ssl.SSLContext]:
        """(generation, context); cheap unless a check is due."""
        if self._watched and (self._reload_asked or self._clock() >= self._next_check):
            self._check()
        return self._generation, self.latest

    @property
    def latest(self) -> ssl.SSLContext:
        """The context :meth:`current` last returned or loaded, without looking at the files."""
        if self._context is None:
            with self._lock:
                if self._context is None:
                    self._context = build_context(self._files)
        return self._context

    def reload(self) -> None:
        """Load the files again at the next push, changed or not (SIGHUP). Only sets a flag:
        safe in a signal handler."""
        self._reload_asked = True

    def _check(self) -> None:
        with self._lock:
            asked, self._reload_asked = self._reload_asked, False
            self._next_check = self._clock() + self._check_seconds
            signature = _signature(self._files.paths)
            if signature == self._signature and not asked:
                return
            if signature == self._failed and not asked:
                return
            try:
                context = build_context(self._files)
            except SettingsError as error:
                self._failed = signature
                log.warning("push TLS files not reloaded, the previous ones stay: %s", error)
                return
            self._signature, self._failed = signature, None
            self._context, self._generation = context, self._generation + 1
        log.info("push TLS files reloaded (generation %d)", self._generation)
