"""A signed push travels to a real receiver, which verifies it the way MNS tells receivers to
(docs/protocol.md#receiving-a-push):
decode ``x-mns-signing-cert-url``, fetch the certificate from the gateway's /certs endpoint over
HTTP, rebuild the string to sign from what arrived (not with the gateway's code) and check the
RSA-SHA1 signature. The rotation case checks that a push signed just before still verifies."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.serving import make_server

from gateway.api.certs import create_certs_blueprint
from gateway.delivery.formats import ContentFormat, http_date
from gateway.delivery.signing import build_signed_push
from gateway.pushing.keyring import KeyRing
from gateway.pushing.transport import PushTransport
from gateway.testing import PushRecorder
from tests.support.notifications import billing_notification

from .conftest import WAIT_SECONDS
from .doc_verifier import received_value, verify_as_a_receiver

MESSAGE = "订单 <42> & done\r\n"
NOTIFICATION = billing_notification(
    MESSAGE,
    tag="标签",
    message_id="5F6A7B8C9D0E1F20-1-18C0A1B2C3D-200000001",
    publish_time_ms=1_700_000_000_123,
)


@dataclasses.dataclass(frozen=True)
class CertificateServer:
    public_url: str
    ring: KeyRing


@pytest.fixture()
def cert_server(tmp_path: Path) -> Iterator[CertificateServer]:
    """Just the certificate-serving part of the gateway, on a real HTTP server."""
    ring = KeyRing(tmp_path / "keys", bits=1024)
    app = Flask(__name__)
    app.register_blueprint(create_certs_blueprint(ring))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield CertificateServer(f"http://127.0.0.1:{server.server_port}", ring)
    finally:
        server.shutdown()
        thread.join(WAIT_SECONDS)


def push(cert_server: CertificateServer, endpoint_url: str, fmt: ContentFormat) -> None:
    signed = build_signed_push(
        NOTIFICATION,
        fmt,
        endpoint_url,
        key=cert_server.ring.current,
        public_url=cert_server.public_url,
        date=http_date(1_700_000_000),
        request_id="656A1B2C3D4E5F6071829304",
    )
    with PushTransport() as transport:
        assert transport.send(endpoint_url, signed.headers, signed.body).ok


@pytest.mark.parametrize("fmt", list(ContentFormat))
def test_every_format_verifies_with_the_served_certificate(
    cert_server: CertificateServer, endpoint: PushRecorder, fmt: ContentFormat
) -> None:
    push(cert_server, endpoint.url + "/mns/push?token=a b", fmt)

    [request] = endpoint.received
    assert request.path == "/mns/push?token=a%20b"
    assert verify_as_a_receiver(request, f"{cert_server.public_url}/certs/")
    content_md5 = base64.b64decode(received_value(request, "Content-md5")).decode()
    assert content_md5 == hashlib.md5(request.body).hexdigest()


def test_a_tampered_push_does_not_verify(
    cert_server: CertificateServer, endpoint: PushRecorder
) -> None:
    push(cert_server, endpoint.url, ContentFormat.SIMPLIFIED)
    [request] = endpoint.received
    assert "x-mns-topic-name" in request.headers
    tampered = dataclasses.replace(
        request, headers={**request.headers, "x-mns-topic-name": "other-topic"}
    )

    assert verify_as_a_receiver(request, cert_server.public_url)
    assert not verify_as_a_receiver(tampered, cert_server.public_url)


def test_a_push_signed_before_a_rotation_still_verifies(
    cert_server: CertificateServer, endpoint: PushRecorder
) -> None:
    push(cert_server, endpoint.url, ContentFormat.XML)
    cert_server.ring.rotate()
    push(cert_server, endpoint.url, ContentFormat.XML)

    before, after = endpoint.received
    assert received_value(before, "x-mns-signing-cert-url") != received_value(
        after, "x-mns-signing-cert-url"
    )
    assert verify_as_a_receiver(before, cert_server.public_url)
    assert verify_as_a_receiver(after, cert_server.public_url)
