"""receiver.testing builds pushes the way the service sends them (docs/protocol.md#push-headers)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from defusedxml.ElementTree import fromstring

from receiver.exceptions import CertificateFetchError
from receiver.testing import SigningIdentity, content_md5, sign_notification, sign_request
from receiver.verify import (
    SignedPush,
    check_signature,
    lowercase_headers,
    public_key_from_pem,
    string_to_sign,
)

NAMESPACE = "{http://mns.aliyuncs.com/doc/v1/}"


def test_headers_are_spelled_as_the_real_service_spells_them(identity: SigningIdentity) -> None:
    signed = sign_notification(identity, message_tag="vip", date=0)
    assert set(signed.headers) == {
        "Content-md5", "Content-Type", "Date", "Authorization", "User-Agent",
        "x-mns-request-id", "x-mns-version", "x-mns-signing-cert-url", "x-mns-message-id",
        "x-mns-publish-time", "x-mns-topic-owner", "x-mns-topic-name", "x-mns-subscriber",
        "x-mns-subscription-name", "x-mns-message-tag",
    }  # fmt: skip
    assert signed.headers["Date"] == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert signed.headers["User-Agent"] == "Aliyun Notification Service Agent"
    assert base64.b64decode(signed.headers["x-mns-signing-cert-url"]) == identity.cert_url.encode()
    assert signed.method == "POST"


def test_untagged_messages_carry_no_tag_anywhere(identity: SigningIdentity) -> None:
    signed = sign_notification(identity, format="JSON")
    assert "x-mns-message-tag" not in signed.headers
    assert "MessageTag" not in json.loads(signed.body)


@pytest.mark.parametrize(
    ("fmt", "content_type", "md5_length"),
    [
        ("XML", "text/xml;charset=utf-8", 44),
        ("JSON", "application/json;charset=utf-8", 44),
        ("SIMPLIFIED", "text/plain;charset=utf-8", 32),
    ],
)
def test_content_type_and_default_content_md5_per_format(
    identity: SigningIdentity, fmt: str, content_type: str, md5_length: int
) -> None:
    signed = sign_notification(identity, "hi", format=fmt)  # type: ignore[arg-type]
    assert signed.headers["Content-Type"] == content_type
    assert len(signed.headers["Content-md5"]) == md5_length
    if fmt == "SIMPLIFIED":
        assert signed.body == b"hi"
        assert signed.headers["Content-md5"] == hashlib.md5(b"hi").hexdigest().upper()


def test_xml_body_is_well_formed_and_namespaced(identity: SigningIdentity) -> None:
    signed = sign_notification(identity, "a < b & c", message_id="m", publish_time=5)
    root = fromstring(signed.body)
    assert root.tag == f"{NAMESPACE}Notification"
    children = {child.tag.removeprefix(NAMESPACE): child.text for child in root}
    assert children["Message"] == "a < b & c"
    assert children["MessageId"] == "m"
    assert children["PublishTime"] == "5"
    assert children["MessageMD5"] == hashlib.md5(b"a < b & c").hexdigest().upper()


def test_json_body_is_a_flat_object_of_strings(identity: SigningIdentity) -> None:
    document = json.loads(sign_notification(identity, format="JSON", publish_time=7).body)
    assert all(isinstance(value, str) for value in document.values())
    assert document["PublishTime"] == "7"


def test_the_signature_verifies_over_the_documented_string(identity: SigningIdentity) -> None:
    signed = sign_notification(identity, path="/p?q=%2F")
    push = SignedPush("POST", "/p?q=%2F", lowercase_headers(signed.headers.items()), signed.body)
    key = public_key_from_pem(identity.certificate_pem)
    check_signature(key, string_to_sign(push), signed.headers["Authorization"])


def test_sign_request_replaces_any_given_authorization(identity: SigningIdentity) -> None:
    headers = {"authorization": "stale", "Date": "D", "Content-md5": content_md5(b"x")}
    signed = sign_request(identity, "/n", headers, b"x")
    assert "authorization" not in signed.headers
    push = SignedPush("POST", "/n", lowercase_headers(signed.headers.items()), b"x")
    key = public_key_from_pem(identity.certificate_pem)
    check_signature(key, string_to_sign(push), signed.headers["Authorization"])


def test_replace_headers_is_case_insensitive_and_does_not_resign(
    identity: SigningIdentity,
) -> None:
    signed = sign_notification(identity)
    changed = signed.replace_headers({"CONTENT-MD5": None, "X-Extra": "1"})
    assert "Content-md5" not in changed.headers
    assert changed.headers["X-Extra"] == "1"
    assert changed.headers["Authorization"] == signed.headers["Authorization"]
    assert signed.headers["Content-md5"]  # the original is untouched


def test_cert_fetcher_serves_only_its_own_url(identity: SigningIdentity) -> None:
    assert identity.cert_fetcher(identity.cert_url) == identity.certificate_pem
    with pytest.raises(CertificateFetchError):
        identity.cert_fetcher(identity.cert_url + "?other")


def test_from_private_key_accepts_a_512_bit_key(legacy: SigningIdentity) -> None:
    wrapped = SigningIdentity.from_private_key(legacy.private_key, "https://x.test/k.pem")
    key = public_key_from_pem(wrapped.certificate_pem)
    assert key.key_size == 512
    check_signature(key, "text", wrapped.sign("text"))
