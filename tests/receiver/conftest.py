"""Fixtures for the receiver tests: signing identities, a settable clock, a counting fetcher,
and a real certificate server on 127.0.0.1."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID
from flask import Flask

from receiver import MNSReceiver, Notification
from receiver.exceptions import CertificateFetchError
from receiver.testing import DEFAULT_TEST_CERT_URL, SigningIdentity
from tests.support.clock import Clock

# A fixed 512-bit RSA key: `cryptography` refuses to generate keys this small, but the real
# service signs with one, so we build it from its primes (made once with `openssl genrsa 512`).
LEGACY_P = 0xFF953A106C90705F6520BC88D51F5634923EA820795A6CA99024414EBC9E9147
LEGACY_Q = 0xF6FDB2EE3C3BAF88A6D2CCC5C212CFAD24A93303550B8F69EE3EF52EDD573139
LEGACY_CERT_URL = "https://mnstest.oss-cn-hangzhou.aliyuncs.com/x509_public_certificate.pem"

_SHA256_WITH_RSA = bytes.fromhex("300d06092a864886f70d01010b0500")
_SHA1_WITH_RSA = bytes.fromhex("300d06092a864886f70d0101050500")


@dataclass
class CountingFetcher:
    """A cert_fetcher over fixed PEMs that records every URL it is asked for."""

    pems: dict[str, bytes]
    calls: list[str] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)

    def __call__(self, url: str) -> bytes:
        self.calls.append(url)
        if url in self.failing or url not in self.pems:
            raise CertificateFetchError(f"test fetcher has nothing for {url!r}")
        return self.pems[url]


@dataclass
class Recorder:
    """A handler that remembers what it was given."""

    received: list[Notification] = field(default_factory=list)

    def __call__(self, notification: Notification) -> None:
        self.received.append(notification)


def legacy_identity() -> SigningIdentity:
    """An identity like the real service's: 512-bit, SHA-1-signed, self-signed, expired 2016.

    ``cryptography`` will not sign certificates with SHA-1 any more, so the certificate is
    signed with SHA-256 and then rewritten: the two algorithm identifiers have the same DER
    length, and so do the two signatures, so swapping them keeps every length field valid.
    """
    e = 65537
    d = pow(e, -1, (LEGACY_P - 1) * (LEGACY_Q - 1))
    key = rsa.RSAPrivateNumbers(
        LEGACY_P, LEGACY_Q, d,
        rsa.rsa_crt_dmp1(d, LEGACY_P), rsa.rsa_crt_dmq1(d, LEGACY_Q),
        rsa.rsa_crt_iqmp(LEGACY_P, LEGACY_Q),
        rsa.RSAPublicNumbers(e, LEGACY_P * LEGACY_Q),
    ).private_key()  # fmt: skip
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mns legacy")])
    start = datetime.datetime(2015, 6, 1, tzinfo=datetime.UTC)
    modern = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    der = modern.public_bytes(serialization.Encoding.DER)
    assert der.count(_SHA256_WITH_RSA) == 2, "expected the algorithm id in TBS and outside"
    tbs = modern.tbs_certificate_bytes.replace(_SHA256_WITH_RSA, _SHA1_WITH_RSA)
    signature = key.sign(tbs, padding.PKCS1v15(), hashes.SHA1())
    der = der.replace(modern.tbs_certificate_bytes, tbs).replace(_SHA256_WITH_RSA, _SHA1_WITH_RSA)
    der = der[: -len(modern.signature)] + signature
    certificate = x509.load_der_x509_certificate(der)
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    return SigningIdentity(private_key=key, certificate_pem=pem, cert_url=LEGACY_CERT_URL)


@pytest.fixture(scope="session")
def identity() -> SigningIdentity:
    return SigningIdentity.generate(DEFAULT_TEST_CERT_URL)


@pytest.fixture(scope="session")
def impostor() -> SigningIdentity:
    """A different key that claims the genuine certificate URL."""
    return SigningIdentity.generate(DEFAULT_TEST_CERT_URL)


@pytest.fixture(scope="session")
def legacy() -> SigningIdentity:
    return legacy_identity()


@pytest.fixture
def fetcher(identity: SigningIdentity, legacy: SigningIdentity) -> CountingFetcher:
    return CountingFetcher(
        {identity.cert_url: identity.certificate_pem, legacy.cert_url: legacy.certificate_pem}
    )


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


AppFactory = Callable[..., tuple[Flask, MNSReceiver]]


@pytest.fixture
def make_app(fetcher: CountingFetcher, clock: Clock) -> AppFactory:
    """Build an app around a receiver; keyword arguments go to MNSReceiver."""

    def build(url_prefix: str | None = None, **options: object) -> tuple[Flask, MNSReceiver]:
        options = {"cert_fetcher": fetcher, "clock": clock, **options}
        receiver = MNSReceiver(**options)  # type: ignore[arg-type]
        app = Flask(__name__)
        receiver.init_app(app, url_prefix=url_prefix)
        return app, receiver

    return build


@dataclass
class Route:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FileServer:
    """A real HTTP server on 127.0.0.1 serving fixed answers and counting requests."""

    routes: dict[str, Route]
    hits: list[str]
    port: int

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def file_server() -> Iterator[FileServer]:
    routes: dict[str, Route] = {}
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            route = routes.get(self.path, Route(404))
            self.send_response(route.status)
            for name, value in route.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield FileServer(routes, hits, server.server_address[1])
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
