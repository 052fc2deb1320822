"""A push verifier written from the MNS documentation ("Endpoint签名认证"), not from the
gateway's signing code: decode ``x-mns-signing-cert-url``, fetch the certificate, rebuild the
string to sign from what arrived, check the RSA-SHA1 signature."""

from __future__ import annotations

import base64
import urllib.request

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .conftest import WAIT_SECONDS, ReceivedRequest


def received_value(request: ReceivedRequest, name: str) -> str:
    """The header as the receiver got it. http.server decodes header bytes as Latin-1; the
    bytes are UTF-8, which is what the signature covers."""
    value = next(value for key, value in request.headers if key == name)
    return value.encode("latin-1").decode("utf-8")


def verify_as_a_receiver(request: ReceivedRequest, trusted_prefix: str) -> bool:
    cert_url = base64.b64decode(received_value(request, "x-mns-signing-cert-url")).decode()
    assert cert_url.startswith(trusted_prefix)
    with urllib.request.urlopen(cert_url, timeout=WAIT_SECONDS) as response:
        public_key = x509.load_pem_x509_certificate(response.read()).public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)

    mns_headers = sorted(
        (key.lower(), received_value(request, key))
        for key, _ in request.headers
        if key.lower().startswith("x-mns-")
    )
    text = (
        f"{request.method}\n"
        f"{received_value(request, 'Content-md5')}\n"
        f"{received_value(request, 'Content-Type')}\n"
        f"{received_value(request, 'Date')}\n"
        + "".join(f"{key}:{value}\n" for key, value in mns_headers)
        + request.target
    )
    signature = base64.b64decode(received_value(request, "Authorization"))
    try:
        public_key.verify(signature, text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA1())
    except InvalidSignature:
        return False
    return True
