"""Real push receivers on 127.0.0.1: the shipped push recorder (raw mode) and a raw-socket one."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from gateway.pushing.transport import PushTransport
from gateway.testing import PushRecorder
from tests.http_wire import read_message

#: Upper bound for anything a test waits on, so a broken test fails instead of hanging.
WAIT_SECONDS = 10


def _recorder(tls: ssl.SSLContext | None = None) -> Iterator[PushRecorder]:
    """The shipped recorder in raw mode: these tests post bytes of their own through the
    transport or an in-process sender, signed with keys whose certificate is served nowhere."""
    recorder = PushRecorder.raw(max_hold=WAIT_SECONDS).start(tls=tls)
    try:
        yield recorder
    finally:
        recorder.stop()  # releases a held request first


@pytest.fixture()
def endpoint() -> Iterator[PushRecorder]:
    yield from _recorder()


@pytest.fixture()
def second_endpoint() -> Iterator[PushRecorder]:
    yield from _recorder()


@pytest.fixture()
def transport() -> Iterator[PushTransport]:
    with PushTransport() as push_transport:
        yield push_transport


@dataclass(frozen=True)
class TlsFiles:
    certificate: Path
    private_key: Path


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A self-signed server certificate for 127.0.0.1 and localhost."""
    directory = tmp_path_factory.mktemp("tls")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    alt_names = [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    files = TlsFiles(directory / "server.pem", directory / "server.key")
    files.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    files.private_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


@pytest.fixture()
def tls_endpoint(tls_files: TlsFiles) -> Iterator[PushRecorder]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files.certificate, tls_files.private_key)
    yield from _recorder(context)


@dataclass
class RawEndpoint:
    """Accepts one connection and keeps the request bytes exactly as they arrived."""

    url: str
    listener: socket.socket
    received: bytes = b""
    done: threading.Event = field(default_factory=threading.Event)

    def serve_one(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            connection.settimeout(WAIT_SECONDS)
            head, body = read_message(connection)
            self.received = head + b"\r\n\r\n" + body
            connection.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
        self.done.set()


@pytest.fixture()
def raw_endpoint() -> Iterator[RawEndpoint]:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(WAIT_SECONDS)
    raw = RawEndpoint(f"http://127.0.0.1:{listener.getsockname()[1]}", listener)
    thread = threading.Thread(target=raw.serve_one, daemon=True)
    thread.start()
    try:
        yield raw
    finally:
        listener.close()
        thread.join(WAIT_SECONDS)
