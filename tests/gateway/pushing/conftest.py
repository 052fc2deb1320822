"""Real push receivers on 127.0.0.1: a recording HTTP/1.1 server and a raw-socket one."""

from __future__ import annotations

import http.server
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
from tests.http_wire import read_message
from tests.local_server import local_server

#: Upper bound for anything a test waits on, so a broken test fails instead of hanging.
WAIT_SECONDS = 10


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes


@dataclass
class Endpoint:
    """What the receiver should answer and what it has seen."""

    url: str = ""
    status: int = 204
    response_body: bytes = b""
    #: While cleared, requests wait (bounded) for it: a receiver that is slow to answer.
    release: threading.Event = field(default_factory=threading.Event)
    #: Set when a request has arrived, so a test can act while the receiver is busy.
    arrived: threading.Event = field(default_factory=threading.Event)
    requests: list[ReceivedRequest] = field(default_factory=list)
    #: Answer with ``Connection: close`` and hang up, as servers with short keep-alives do.
    close_after_response: bool = False
    #: Hang up right after answering, without saying so: a keep-alive that timed out while idle.
    hang_up_silently: bool = False
    hung_up: threading.Event = field(default_factory=threading.Event)
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.release.set()


def _handler_for(endpoint: Endpoint) -> type[http.server.BaseHTTPRequestHandler]:
    class RecordingHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            with endpoint.lock:
                endpoint.connections += 1  # one handler instance per TCP connection

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            endpoint.requests.append(
                ReceivedRequest(self.command, self.path, list(self.headers.items()), body)
            )
            endpoint.arrived.set()
            endpoint.release.wait(WAIT_SECONDS)
            self.send_response(endpoint.status)
            self.send_header("Content-Length", str(len(endpoint.response_body)))
            if 300 <= endpoint.status < 400:
                self.send_header("Location", "/redirected")
            if endpoint.close_after_response:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(endpoint.response_body)
            if endpoint.hang_up_silently:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                endpoint.hung_up.set()

        def log_message(self, format: str, *args: object) -> None:
            """Keep test output clean."""

    return RecordingHandler


def _serve(endpoint: Endpoint, tls: ssl.SSLContext | None = None) -> Iterator[Endpoint]:
    with local_server(_handler_for(endpoint), tls=tls) as endpoint.url:
        try:
            yield endpoint
        finally:
            endpoint.release.set()  # a held request ends before the server stops


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    yield from _serve(Endpoint())


@pytest.fixture()
def second_endpoint() -> Iterator[Endpoint]:
    yield from _serve(Endpoint())


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
def tls_endpoint(tls_files: TlsFiles) -> Iterator[Endpoint]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files.certificate, tls_files.private_key)
    yield from _serve(Endpoint(), tls=context)


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
