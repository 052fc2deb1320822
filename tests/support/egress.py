"""Real components for the egress tests on 127.0.0.1: a certificate authority the test makes
(server and client certificates from it, with ``cryptography``) and Debian's ``tinyproxy`` as
the forward proxy, started with a configuration in the test's directory on a free port."""

from __future__ import annotations

import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gateway.testing.process import free_port

TINYPROXY = "/usr/bin/tinyproxy"
#: Upper bound for anything waited on here.
WAIT_SECONDS = 10.0


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


class CertificateAuthority:
    """A private CA: its certificate as a PEM file, and certificates it signs."""

    def __init__(self, directory: Path, name: str = "Test Private CA") -> None:
        self.directory = directory
        self.name = name
        directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.now(UTC)
        self._subject = subject
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert_file = directory / f"{_slug(name)}-ca.pem"
        self.cert_file.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def issue(self, file_name: str, *, client: bool = False, common_name: str = "") -> Issued:
        """A leaf certificate: a server one for localhost and 127.0.0.1, or a client one."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        cn = common_name or ("gateway-client" if client else "localhost")
        usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
            .issuer_name(self._subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=7))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if not client:
            names = [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        issued = Issued(self.directory / f"{file_name}.pem", self.directory / f"{file_name}.key")
        issued.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return issued

    def server_context(
        self, *, require_client_from: CertificateAuthority | None = None
    ) -> ssl.SSLContext:
        """A server context with a certificate from this CA; asking for a client certificate
        from ``require_client_from``'s when given (``ssl.CERT_REQUIRED``)."""
        issued = self.issue(f"server-{_slug(self.name)}")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(issued.cert, issued.key)
        if require_client_from is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(cafile=str(require_client_from.cert_file))
        return context


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower())


@dataclass(frozen=True)
class TinyProxy:
    port: int
    log_file: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url_with(self, user: str, password: str) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_file.read_text("utf-8", "replace") if self.log_file.exists() else ""

    def requests(self) -> list[str]:
        """The request lines the proxy received, in order (from its log)."""
        return [
            line.split("): ", 1)[1]
            for line in self.log().splitlines()
            if "Request (file descriptor" in line
        ]


def tinyproxy_config(
    port: int, log_file: Path, connect_ports: Sequence[int], basic_auth: tuple[str, str] | None
) -> str:
    lines = [
        f"Port {port}",
        "Listen 127.0.0.1",
        "Timeout 30",
        "MaxClients 64",
        "Allow 127.0.0.1",
        "DisableViaHeader Yes",
        "LogLevel Connect",
        f'LogFile "{log_file}"',
        *(f"ConnectPort {connect_port}" for connect_port in connect_ports),
    ]
    if basic_auth is not None:
        lines.append(f"BasicAuth {basic_auth[0]} {basic_auth[1]}")
    return "\n".join(lines) + "\n"


@contextmanager
def tinyproxy(
    directory: Path,
    *,
    connect_ports: Sequence[int] = (),
    basic_auth: tuple[str, str] | None = None,
) -> Iterator[TinyProxy]:
    """tinyproxy in the foreground on a free port of 127.0.0.1, stopped (by its PID) after the
    block. Without ``connect_ports`` CONNECT is refused to every port (tinyproxy allows any when
    none is listed, so one nothing listens on is listed)."""
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proxy = TinyProxy(port, directory / "tinyproxy.log")
    config = directory / "tinyproxy.conf"
    config.write_text(tinyproxy_config(port, proxy.log_file, connect_ports or [1], basic_auth))
    executable = shutil.which("tinyproxy") or TINYPROXY
    process = subprocess.Popen(
        [executable, "-d", "-c", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_listening(port, process)
        yield proxy
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(WAIT_SECONDS)


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"tinyproxy exited with {process.returncode}")
        with suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.02)
    raise RuntimeError(f"tinyproxy did not listen on {port} within {WAIT_SECONDS:g} s")
