"""Signature V4: the tests' signer (tests/v4_signer.py, written from the description) against the
SDK's own signer (``alibabacloud-gateway-mns``), and the gateway's verification of both."""

from __future__ import annotations

import base64
import hashlib
import time
from email.utils import formatdate
from urllib.parse import quote, urlencode

import pytest
from alibabacloud_gateway_spi import models as spi
from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.auth import signatures_v4 as auth_v4
from gateway.auth.signatures import IncomingRequest, authenticate
from gateway.auth.temporary_credentials import AccessKeys
from gateway.errors.mns import MNSError
from gateway.protocol.request_target import query_parameters
from tests import v4_signer
from tests.smq_sdk import gateway_mns_client

NOW = 1_800_000_000  # 2027-01-15T08:00:00Z
SECRETS = AccessKeys({"ak": "sk"})
HANDLE = "AQ9kbKHZ3yf1AAAB+hUn8iAx/TIx=="
CASES = [
    ("GET", "/queues/q1/messages", {"numOfMessages": "16", "peekonly": "true"}, b""),
    ("PUT", "/queues/q1/messages", {"receiptHandle": HANDLE, "visibilityTimeout": "10"}, b""),
    ("POST", "/topics/t-1/messages", {}, b'{"MessageBody":"h\\u00e9"}'),
    ("DELETE", "/queues/q1/messages", {}, b'{"ReceiptHandles":["a+b"]}'),
    ("GET", "/queues", {"empty": ""}, b""),
    # The SDK trims names and values when it signs, not when it sends (issue 33 finding 7); a
    # space would travel as ``+`` (its transport form-encodes), which MNS reads literally.
    ("GET", "/queues/q1/messages", {"\tPeekOnly": "true\t", "numOfMessages\n": "\t2"}, b""),
]


def _headers(body: bytes) -> dict[str, str]:
    headers = {"x-mns-version": "2026-04-09", "x-mns-user-request-id": "  r1 "}
    if body:
        headers["content-type"] = "application/json"
        headers["content-md5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
    return headers


def sdk_authorization(method: str, path: str, query: dict[str, str], body: bytes) -> str:
    """What ``alibabacloud-gateway-mns`` puts in Authorization for this request at NOW."""
    context = spi.InterceptorContext(
        request=spi.InterceptorContextRequest(
            headers=_headers(body), query=dict(query), pathname=path, method=method
        ),
        configuration=spi.InterceptorContextConfiguration(region_id="local"),
    )
    iso = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(NOW))
    return gateway_mns_client().get_authorization_v4(context, iso, "ak", "sk")


def arrived(
    method: str, path: str, query: dict[str, str], body: bytes, authorization: str
) -> IncomingRequest:
    """The request as the gateway receives it from the SDK (its transport urlencodes the query)."""
    uri = f"{path}?{urlencode(query)}" if query else path
    headers = {**_headers(body), "date": formatdate(NOW, usegmt=True)}
    headers["authorization"] = authorization
    return IncomingRequest.from_pairs(method, uri, headers.items(), body)


@pytest.mark.parametrize(("method", "path", "query", "body"), CASES)
def test_the_test_signer_signs_as_the_sdk_does(
    method: str, path: str, query: dict[str, str], body: bytes
) -> None:
    ours = v4_signer.authorization(
        method, path, query, _headers(body), key_id="ak", secret="sk", region="local", when=NOW
    )
    assert ours == sdk_authorization(method, path, query, body)


@pytest.mark.parametrize(("method", "path", "query", "body"), CASES)
def test_the_gateway_verifies_sdk_signatures(
    method: str, path: str, query: dict[str, str], body: bytes
) -> None:
    request = arrived(method, path, query, body, sdk_authorization(method, path, query, body))
    assert authenticate(request, SECRETS, NOW, "local") == "ak"


def _refusal(request: IncomingRequest, now: float = NOW, region: str | None = "local") -> MNSError:
    with pytest.raises(MNSError) as caught:
        authenticate(request, SECRETS, now, region)
    return caught.value


def signed(**options: object) -> IncomingRequest:
    headers = v4_signer.signed_headers(
        "GET", "/queues/q1/messages", {}, _headers(b""), key_id="ak", secret="sk", when=NOW,
        **options,  # type: ignore[arg-type]
    )  # fmt: skip
    return IncomingRequest.from_pairs("GET", "/queues/q1/messages", headers.items(), b"")


def test_a_scope_for_another_region_day_or_service_is_refused() -> None:
    assert authenticate(signed(), SECRETS, NOW, "local") == "ak"
    wrong_region = _refusal(signed(scope_region="cn-hangzhou"))
    assert (wrong_region.code, wrong_region.status) == ("SignatureDoesNotMatch", 403)
    assert "region" in wrong_region.message
    wrong_day = _refusal(signed(scope_day="20270114"))
    assert wrong_day.code == "SignatureDoesNotMatch" and "date" in wrong_day.message
    assert _refusal(signed(), region="cn-shanghai").code == "SignatureDoesNotMatch"
    request = signed()
    other = request.headers["authorization"].replace("/mns/", "/oss/")
    tampered = IncomingRequest.from_pairs(
        "GET", request.raw_uri, {**request.headers, "authorization": other}.items(), b""
    )
    assert _refusal(tampered).code == "InvalidAuthorizationHeader"


@pytest.mark.parametrize(
    "header",
    [
        "MNS4-HMAC-SHA256",
        "MNS4-HMAC-SHA256 Credential=ak/20270115/local/mns/aliyun_v4_request",
        "MNS4-HMAC-SHA256 Credential=ak/20270115/local/mns,Signature=00",
        "MNS4-HMAC-SHA256 Credential=/20270115/local/mns/aliyun_v4_request,Signature=00",
        "MNS4-HMAC-SHA256 Credential=ak/20270115/local/mns/aliyun_v4_request,Signature=",
        "MNS4-HMAC-SHA256 Signature=00,Credential=a/b/c/d/e,Signature=00",
        "MNS4-HMAC-SHA256 Credential=ak/20270115/local/mns/aliyun_v4_request,Signature=00,X=1",
    ],
)
def test_malformed_v4_headers_are_invalid_authorization_headers(header: str) -> None:
    request = signed()
    broken = IncomingRequest.from_pairs(
        "GET", request.raw_uri, {**request.headers, "authorization": header}.items(), b""
    )
    assert _refusal(broken).code == "InvalidAuthorizationHeader"


def test_the_date_window_is_v2s() -> None:
    request = signed()
    assert authenticate(request, SECRETS, NOW + 900, "local") == "ak"
    assert authenticate(request, SECRETS, NOW - 900, "local") == "ak"
    assert _refusal(request, now=NOW + 901).code == "TimeExpired"
    assert _refusal(request, now=NOW - 901).code == "TimeExpired"


def test_every_signed_part_is_covered() -> None:
    request = signed()
    for name, value in [
        ("x-mns-version", "2015-06-06"),
        ("date", formatdate(NOW + 1, usegmt=True)),
        ("content-type", "text/xml"),
    ]:
        changed = {**request.headers, name: value}
        forged = IncomingRequest.from_pairs("GET", request.raw_uri, changed.items(), b"")
        assert _refusal(forged).code == "SignatureDoesNotMatch", name
    for uri in ["/queues/q2/messages", "/queues/q1/messages?peekonly=true"]:
        forged = IncomingRequest.from_pairs("GET", uri, request.headers.items(), b"")
        assert _refusal(forged).code == "SignatureDoesNotMatch", uri
    unknown = request.headers["authorization"].replace("Credential=ak/", "Credential=nobody/")
    forged = IncomingRequest.from_pairs(
        "GET", request.raw_uri, {**request.headers, "authorization": unknown}.items(), b""
    )
    assert _refusal(forged).code == "InvalidAccessKeyId"


def test_the_signing_key_is_the_hmac_chain() -> None:
    assert auth_v4.signing_key("sk", "20270115", "local") == v4_signer.derive_key(
        "sk", "20270115", "local"
    )
    assert auth_v4.signing_key("sk", "20270115", "local") != auth_v4.signing_key(
        "sk", "20270116", "local"
    )


_names = st.text(min_size=1).filter(lambda n: n.strip() != "")


@given(st.dictionaries(_names, st.text(), max_size=5))
def test_the_canonical_query_is_the_signers_for_any_parameters(query: dict[str, str]) -> None:
    lowered = {name.strip().lower() for name in query}
    assume(len(lowered) == len(query))
    raw = urlencode(query, quote_via=quote)
    signer_lines = v4_signer.canonical_request("GET", "/", query, {}).split("\n")
    assert auth_v4.canonical_query(raw) == signer_lines[2]


@given(st.text())
def test_the_canonical_path_is_the_signers_for_any_path(path: str) -> None:
    path = "/" + path
    signer_lines = v4_signer.canonical_request("GET", path, {}, {}).split("\n")
    assert auth_v4.canonical_path(quote(path, safe="/")) == signer_lines[1]


def test_a_view_reads_the_query_the_sdk_signed() -> None:
    """What the views read (:func:`query_parameters`) is the canonical query's content, for
    what the SDK sends when given values with white space around them."""
    method, path, query, body = CASES[-1]
    request = arrived(method, path, query, body, sdk_authorization(method, path, query, body))
    assert authenticate(request, SECRETS, NOW, "local") == "ak"
    read = query_parameters(request.raw_uri.partition("?")[2])
    assert read == {"peekonly": "true", "numofmessages": "2"}
    assert auth_v4.canonical_query(request.raw_uri.partition("?")[2]) == (
        "numofmessages=2&peekonly=true"
    )


def test_without_a_region_of_its_own_the_gateway_accepts_the_scopes() -> None:
    """``region=None``: a gateway nobody gave a region verifies with the scope's region; the
    key is derived from it, so a signature for one region still fails when the scope names
    another."""
    hangzhou = signed(region="cn-hangzhou")
    assert authenticate(hangzhou, SECRETS, NOW, None) == "ak"
    assert _refusal(hangzhou, region="local").code == "SignatureDoesNotMatch"
    renamed = IncomingRequest.from_pairs(
        "GET",
        "/queues/q1/messages",
        {
            **hangzhou.headers,
            "authorization": hangzhou.headers["authorization"].replace(
                "/cn-hangzhou/", "/cn-shanghai/"
            ),
        }.items(),
        b"",
    )
    assert _refusal(renamed, region=None).code == "SignatureDoesNotMatch"
