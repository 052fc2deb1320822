"""The control plane's signature checks against the official clients' own signers: the classic
RPC signature of ``aliyun-python-sdk-core`` and ACS3 of ``alibabacloud-tea-openapi``."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest
from alibabacloud_tea_openapi.utils import Utils as TeaUtils
from aliyunsdkcore.auth.composer import rpc_signature_composer

from gateway.api.control.authentication import parse_timestamp, verify
from gateway.api.control.requests import parse_call
from gateway.auth import rpc_signatures as signing
from gateway.errors.control import ControlError

SECRET = "s3cret"
#: Values that percent-encoding treats differently: space, +, *, ~, /, =, &, non-ASCII.
TRICKY = {"QueueName": "q-1", "Note": "a b+c*d~e/f=g&h", "Tag.1.Value": "värde ☃"}


def secret_for(key_id: str, token: str | None) -> str:
    if key_id != "id":
        raise ControlError("InvalidAccessKeyId.NotFound")
    return SECRET


def test_classic_string_to_sign_and_signature_are_the_sdks() -> None:
    url, expected = rpc_signature_composer.get_signed_url(
        dict(TRICKY), "id", SECRET, "JSON", "POST", {"Body": "x y"}
    )
    query = dict(parse_call("POST", url[2:], {}, b"").query)
    signature = query.pop("Signature")
    assert signing.classic_string_to_sign("POST", {**query, "Body": "x y"}) == expected
    assert signing.classic_signature(SECRET, expected) == signature


def test_a_classic_call_signed_by_the_sdk_verifies_with_its_form_body() -> None:
    url, _ = rpc_signature_composer.get_signed_url(
        {"Action": "GetQueueAttributes"}, "id", SECRET, "JSON", "POST", dict(TRICKY)
    )
    body = "&".join(f"{k}={v}" for k, v in _form_encoded(TRICKY).items()).encode()
    headers = {"content-type": "application/x-www-form-urlencoded"}
    call = parse_call("POST", url[2:], headers, body)
    now = parse_timestamp(call.query["Timestamp"])
    assert verify(call, secret_for, now).key_id == "id"
    tampered = parse_call("POST", url[2:], headers, body.replace(b"q-1", b"q-2"))
    with pytest.raises(ControlError) as caught:
        verify(tampered, secret_for, now)
    assert caught.value.code == "SignatureDoesNotMatch"


def _form_encoded(params: dict[str, str]) -> dict[str, str]:
    from urllib.parse import quote

    return {quote(k, safe=""): quote(v, safe="") for k, v in params.items()}


DATE = "2026-01-19T08:00:00Z"


def _acs3_call(query: dict[str, str], body: bytes = b"", *, date: str = DATE):
    headers = {
        "host": "127.0.0.1:8080",
        "x-acs-action": "CreateQueue",
        "x-acs-version": "2022-01-19",
        "x-acs-date": date,
        "x-acs-signature-nonce": "n-1",
        "x-acs-content-sha256": hashlib.sha256(body).hexdigest(),
        "user-agent": "AlibabaCloud (Linux) Python/3",
    }
    request = SimpleNamespace(pathname="/", query=query, headers=headers, method="POST")
    headers = {
        **headers,
        "authorization": TeaUtils.get_authorization(
            request, "ACS3-HMAC-SHA256", headers["x-acs-content-sha256"], "id", SECRET
        ),
    }
    raw_query = "&".join(f"{k}={v}" for k, v in _form_encoded(query).items())
    return parse_call("POST", raw_query, headers, body)


def test_an_acs3_call_signed_by_tea_openapi_verifies() -> None:
    call = _acs3_call(TRICKY)
    signer = verify(call, secret_for, parse_timestamp("2026-01-19T08:00:00Z"))
    assert (signer.key_id, signer.nonce) == ("id", "n-1")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda h: h.update({"x-acs-action": "DeleteQueue"}), "SignatureDoesNotMatch"),
        (lambda h: h.update({"x-acs-content-sha256": "0" * 64}), "SignatureDoesNotMatch"),
        (lambda h: h.update({"authorization": "ACS3-HMAC-SHA256 junk"}), "IncompleteSignature"),
        (lambda h: h.pop("x-acs-signature-nonce"), "IncompleteSignature"),
        (lambda h: h.update({"x-acs-date": "19 Jan 2026"}), "InvalidTimeStamp.Format"),
        (
            lambda h: h.update({"authorization": h["authorization"].replace("=id,", "=who,")}),
            "InvalidAccessKeyId.NotFound",
        ),
    ],
)
def test_a_changed_acs3_call_is_refused(change, code: str) -> None:  # type: ignore[no-untyped-def]
    call = _acs3_call(TRICKY)
    headers = dict(call.headers)
    change(headers)
    changed = parse_call("POST", "QueueName=q-1", headers, call.body)
    with pytest.raises(ControlError) as caught:
        verify(changed, secret_for, parse_timestamp("2026-01-19T08:00:00Z"))
    assert caught.value.code == code


def test_a_call_outside_the_fifteen_minute_window_is_expired() -> None:
    call = _acs3_call(TRICKY)
    sent = parse_timestamp("2026-01-19T08:00:00Z")
    verify(call, secret_for, sent + 900)
    verify(call, secret_for, sent - 900)
    for now in (sent + 901, sent - 901):
        with pytest.raises(ControlError) as caught:
            verify(call, secret_for, now)
        assert caught.value.code == "InvalidTimeStamp.Expired"


@pytest.mark.parametrize("missing", ["AccessKeyId", "Signature", "SignatureNonce", "Timestamp"])
def test_a_classic_call_without_a_signature_parameter_is_refused(missing: str) -> None:
    url, _ = rpc_signature_composer.get_signed_url({}, "id", SECRET, "JSON", "POST", {})
    query = {k: v for k, v in parse_call("POST", url[2:], {}, b"").query.items() if k != missing}
    raw = "&".join(f"{k}={v}" for k, v in _form_encoded(query).items())
    with pytest.raises(ControlError) as caught:
        verify(parse_call("POST", raw, {}, b""), secret_for, 0)
    assert (caught.value.code, caught.value.status) == ("MissingParameter", 400)
    assert missing in caught.value.message


def test_the_operation_is_read_where_the_signature_covers_it() -> None:
    """ACS3 names it in a signed header, classic in a signed parameter; the other place may
    repeat it but not contradict it."""
    acs3 = _acs3_call({"QueueName": "q-1"})
    assert acs3.action == "CreateQueue" and acs3.version == "2022-01-19"
    url, _ = rpc_signature_composer.get_signed_url(
        {"Action": "GetQueueAttributes", "Version": "2022-01-19"}, "id", SECRET, "JSON", "POST", {}
    )
    classic = parse_call("POST", url[2:], {"x-acs-action": "GetQueueAttributes"}, b"")
    assert classic.action == "GetQueueAttributes"
    contradicted = [
        parse_call("POST", url[2:], {"x-acs-action": "DeleteQueue"}, b""),
        parse_call("POST", url[2:], {"x-acs-version": "2015-06-06"}, b""),
        parse_call("POST", "Action=DeleteQueue&QueueName=q-1", acs3.headers, b""),
    ]
    for call in contradicted:
        with pytest.raises(ControlError) as caught:
            assert (call.version, call.action) is None
        assert caught.value.code == "InvalidParameter"


def test_an_acs3_call_with_a_body_must_sign_its_content_type() -> None:
    body = b"QueueName=q-1"
    call = _acs3_call({}, body)
    headers = {**call.headers, "content-type": "application/x-www-form-urlencoded"}
    with pytest.raises(ControlError) as caught:
        verify(parse_call("POST", "", headers, body), secret_for, parse_timestamp(DATE))
    assert caught.value.code == "IncompleteSignature"
