"""Request authentication, checked against the official SDK's own signing code."""

from __future__ import annotations

import base64
import hashlib
from email.utils import formatdate

import pytest
from mns.auth import Credentials
from mns.mns_client import MNSClient

from gateway.auth.signatures import (
    IncomingRequest,
    authenticate,
    content_md5_matches,
    string_to_sign,
)
from gateway.auth.temporary_credentials import AccessKeys
from gateway.errors.mns import MNSError

NOW = 1_800_000_000.0
SECRETS = AccessKeys({"ak": "sk"})


def sdk_signed(method: str, uri: str, body: bytes, extra: dict[str, str]) -> IncomingRequest:
    """Sign as ``mns.mns_client.MNSClient.get_signature`` does, headers spelled as the SDK does."""
    headers = {"x-mns-version": "2015-06-06", "date": formatdate(NOW, usegmt=True), **extra}
    if body:
        headers["content-md5"] = base64.b64encode(hashlib.md5(body).hexdigest().encode()).decode()
        headers["content-type"] = "text/xml;charset=UTF-8"
    client = MNSClient("http://127.0.0.1:1", "ak", "sk")
    headers["Authorization"] = client.get_signature(method, headers, uri, Credentials("ak", "sk"))
    return IncomingRequest.from_pairs(method, uri, headers.items(), body)


@pytest.mark.parametrize(
    "uri",
    [
        "/topics/t/messages",
        "/queues/q/messages?numOfMessages=16&waitseconds=3",
        "/queues/q/messages?ReceiptHandle=a+b/c==&VisibilityTimeout=10",
    ],
)
def test_sdk_signatures_verify(uri: str) -> None:
    request = sdk_signed("POST", uri, b"<Message/>", {"x-mns-user-request-id": "r1"})
    assert authenticate(request, SECRETS, NOW) == "ak"


def test_header_names_compare_case_insensitively() -> None:
    request = sdk_signed("GET", "/topics", b"", {"x-mns-prefix": "p"})
    shouted = IncomingRequest.from_pairs(
        request.method,
        request.raw_uri,
        [(k.upper() if not k.startswith("x-mns") else k, v) for k, v in request.headers.items()],
        request.body,
    )
    assert authenticate(shouted, SECRETS, NOW) == "ak"


def test_a_security_token_with_a_permanent_key_is_refused() -> None:
    """docs/protocol.md#temporary-credentials: a token belongs to a temporary key only."""
    request = sdk_signed("GET", "/topics", b"", {})
    with_token = IncomingRequest(
        request.method, request.raw_uri, {**request.headers, "security-token": "sts"}, request.body
    )
    with pytest.raises(MNSError) as caught:
        authenticate(with_token, SECRETS, NOW)
    assert (caught.value.code, caught.value.status) == ("InvalidAccessKeyId", 403)


def test_string_to_sign_layout() -> None:
    request = IncomingRequest.from_pairs(
        "put",
        "/q?x=1",
        (("Content-Type", "text/xml"), ("Date", "D"), ("X-MNS-B", "2"), ("x-mns-a", "1")),
        b"",
    )
    assert string_to_sign(request) == "PUT\n\ntext/xml\nD\nx-mns-a:1\nx-mns-b:2\n/q?x=1"


def test_tampered_uri_fails() -> None:
    request = sdk_signed("GET", "/topics/a", b"", {})
    forged = IncomingRequest("GET", "/topics/b", request.headers, b"")
    with pytest.raises(MNSError) as caught:
        authenticate(forged, SECRETS, NOW)
    assert caught.value.code == "SignatureDoesNotMatch"


def test_tampered_body_fails_on_digest() -> None:
    request = sdk_signed("POST", "/topics/a/messages", b"<Message>1</Message>", {})
    forged = IncomingRequest("POST", request.raw_uri, request.headers, b"<Message>2</Message>")
    with pytest.raises(MNSError) as caught:
        authenticate(forged, SECRETS, NOW)
    assert (caught.value.code, caught.value.status) == ("InvalidDigest", 400)


def test_content_md5_forms() -> None:
    body = b"payload"
    assert content_md5_matches(base64.b64encode(hashlib.md5(body).digest()).decode(), body)
    assert content_md5_matches(
        base64.b64encode(hashlib.md5(body).hexdigest().encode()).decode(), body
    )
    assert not content_md5_matches(base64.b64encode(b"x" * 16).decode(), body)
    assert not content_md5_matches(hashlib.md5(body).hexdigest(), body)  # bare hex is not MNS form


@pytest.mark.parametrize("skew,code", [(901, "TimeExpired"), (-901, "TimeExpired")])
def test_date_window(skew: float, code: str) -> None:
    request = sdk_signed("GET", "/topics", b"", {})
    with pytest.raises(MNSError) as caught:
        authenticate(request, SECRETS, NOW + skew)
    assert (caught.value.code, caught.value.status) == (code, 408)
    assert authenticate(request, SECRETS, NOW + 899) == "ak"
