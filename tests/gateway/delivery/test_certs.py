"""GET /certs/<key_id>.pem (gateway/api/certs.py; tested here beside the key ring it serves)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography import x509
from flask import Flask
from flask.testing import FlaskClient

from gateway.api.certs import create_certs_blueprint
from gateway.pushing.keyring import KeyRing


@pytest.fixture()
def ring(tmp_path: Path) -> KeyRing:
    return KeyRing(tmp_path / "keys", bits=1024)


@pytest.fixture()
def client(ring: KeyRing) -> FlaskClient:
    app = Flask(__name__)
    app.register_blueprint(create_certs_blueprint(ring))
    return app.test_client()


def test_the_current_certificate_is_served_without_authentication(
    ring: KeyRing, client: FlaskClient
) -> None:
    response = client.get(f"/certs/{ring.current.key_id}.pem")

    assert response.status_code == 200
    assert response.mimetype == "application/x-pem-file"
    assert response.data == ring.current.certificate_pem
    assert "max-age" in response.headers["Cache-Control"]
    x509.load_pem_x509_certificate(response.data)


def test_certificates_of_rotated_keys_stay_served(ring: KeyRing, client: FlaskClient) -> None:
    old = ring.current
    ring.rotate()

    assert client.get(f"/certs/{old.key_id}.pem").data == old.certificate_pem
    assert client.get(f"/certs/{ring.current.key_id}.pem").data == ring.current.certificate_pem


@pytest.mark.parametrize(
    "path",
    [
        "/certs/0123456789abcdef.pem",  # well-formed, unknown
        "/certs/0123456789ABCDEF.pem",
        "/certs/current.pem",
        "/certs/..%2Fcurrent.pem",
        "/certs/0123456789abcdef.key.pem",
        "/certs/0123456789abcdef",
    ],
)
def test_unknown_or_malformed_ids_are_404(client: FlaskClient, path: str) -> None:
    assert client.get(path).status_code == 404


def test_a_private_key_file_is_never_served(ring: KeyRing, client: FlaskClient) -> None:
    response = client.get(f"/certs/{ring.current.key_id}.key.pem")

    assert response.status_code == 404
    assert b"PRIVATE KEY" not in response.data
