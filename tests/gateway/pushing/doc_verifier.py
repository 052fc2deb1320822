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

from gateway.testing import ReceivedPush

from .conftest import WAIT_SECONDS


def received_value(request: ReceivedPush, name: str) -> str:
    """The header as the receiver got it (the recorder keys headers by lowercased name and
    reads their bytes as UTF-8, which is what the signature covers)."""
    return request.headers[name.lower()]


def verify_as_a_receiver(request: ReceivedPush, trusted_prefix: str) -> bool:
    cert_url = base64.b64decode(received_value(request, "x-mns-signing-cert-url")).decode()
    assert cert_url.startswith(trusted_prefix)
    with urllib.request.urlopen(cert_url, timeout=WAIT_SECONDS) as response:
        public_key = x509.load_pem_x509_certificate(response.read()).public_key()
    assert isinstance(public_key, rsa.RSAPublicKey)

    mns_headers = sorted(
        (key, value) for key, value in request.headers.items() if key.startswith("x-mns-")
    )
    text = (
        "POST\n"
        f"{received_value(request, 'Content-md5')}\n"
        f"{received_value(request, 'Content-Type')}\n"
        f"{received_value(request, 'Date')}\n"
        + "".join(f"{key}:{value}\n" for key, value in mns_headers)
        + request.path
    )
    signature = base64.b64decode(received_value(request, "Authorization"))
    try:
        public_key.verify(signature, text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA1())
    except InvalidSignature:
        return False
    return True
