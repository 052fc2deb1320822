"""Standard Webhooks signatures, pure: the specification's test vector, the official library
(PyPI ``standardwebhooks``) verifying what the gateway signs, and a signed push carrying them
beside unchanged MNS headers."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.delivery.formats import ContentFormat, string_to_sign
from gateway.delivery.signing import build_signed_push
from gateway.delivery.standard_webhooks import (
    ROTATION_OVERLAP_MS,
    WebhookSecrets,
    secret_key,
    secret_of,
    signature,
    standard_webhook,
    webhook_headers,
    webhook_id,
)
from gateway.errors.delivery import UnrenderableMessageError
from gateway.pushing.keyring import KeyRing
from tests.support.notifications import billing_notification

# The specification's published test vector (its libraries' tests use the same one).
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TIMESTAMP = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_specifications_test_vector() -> None:
    assert signature(VECTOR_SECRET, VECTOR_ID, VECTOR_TIMESTAMP, VECTOR_BODY) == VECTOR_SIGNATURE


def test_the_official_library_signs_alike() -> None:
    at = datetime.fromtimestamp(VECTOR_TIMESTAMP, UTC)
    expected = Webhook(VECTOR_SECRET).sign(VECTOR_ID, at, VECTOR_BODY.decode())
    assert expected == VECTOR_SIGNATURE


@given(
    key=st.binary(min_size=24, max_size=64),
    body=st.text(max_size=200).map(str.encode),
    topic=st.text(min_size=1, max_size=20),
    message_id=st.text(alphabet="0123456789ABCDEF", min_size=32, max_size=32),
)
def test_the_official_library_verifies_what_is_signed(
    key: bytes, body: bytes, topic: str, message_id: str
) -> None:
    secret = secret_of(key)
    now = int(time.time())
    headers = dict(webhook_headers([secret], webhook_id(topic, "s", message_id), now, body))
    Webhook(secret).verify(body, headers, json_parse=False)


def test_a_secret_is_whsec_and_base64_of_its_key() -> None:
    secret = secret_of(bytes(range(32)))
    assert secret.startswith("whsec_")
    assert secret_key(secret) == bytes(range(32))
    with pytest.raises(ValueError, match="24 to 64"):
        secret_of(b"short")
    for bad in ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!"):
        with pytest.raises(ValueError):
            secret_key(bad)


def test_the_id_is_stable_per_delivery_and_differs_per_subscription() -> None:
    first = webhook_id("orders", "billing", "0123456789ABCDEF0123456789ABCDEF")
    assert first == webhook_id("orders", "billing", "0123456789ABCDEF0123456789ABCDEF")
    assert first.startswith("msg_") and len(first) == 36
    assert first != webhook_id("orders", "audit", "0123456789ABCDEF0123456789ABCDEF")
    assert first != webhook_id("orders", "billing", "0123456789ABCDEF0123456789ABCDEE")


def test_a_rotation_signs_with_both_secrets_until_it_ends() -> None:
    new, old = secret_of(b"n" * 32), secret_of(b"o" * 32)
    secrets = WebhookSecrets(new, old, previous_until_ms=ROTATION_OVERLAP_MS)
    assert secrets.signing(ROTATION_OVERLAP_MS - 1) == (new, old)
    assert secrets.signing(ROTATION_OVERLAP_MS) == (new,)
    assert WebhookSecrets(new).signing(0) == (new,)
    webhook = standard_webhook(secrets, "t", "s", "M", now=100.9)
    assert webhook is not None and webhook.timestamp == 100
    header = dict(webhook.headers(b"body"))["webhook-signature"]
    first, second = header.split(" ")
    assert first == signature(new, webhook.message_id, 100, b"body")
    assert second == signature(old, webhook.message_id, 100, b"body")
    # Either secret verifies the push with the official library (a receiver mid-rotation).
    headers = {**dict(webhook.headers(b"body")), "webhook-timestamp": str(int(time.time()))}
    headers["webhook-signature"] = " ".join(
        signature(s, webhook.message_id, int(time.time()), b"body") for s in (new, old)
    )
    for secret in (new, old):
        Webhook(secret).verify(b"body", headers, json_parse=False)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret_of(b"x" * 32)).verify(b"body", headers, json_parse=False)
    assert standard_webhook(None, "t", "s", "M", now=1.0) is None


def test_secrets_never_show_in_a_repr() -> None:
    secrets = WebhookSecrets(secret_of(b"n" * 32), secret_of(b"o" * 32), 5)
    webhook = standard_webhook(secrets, "t", "s", "M", now=1.0)
    for text in (repr(secrets), repr(webhook)):
        assert "whsec_" not in text


def test_a_signed_push_carries_them_beside_unchanged_mns_headers(tmp_path: Path) -> None:
    key = KeyRing(tmp_path, bits=1024).current
    secret = secret_of(b"k" * 32)
    arguments = {
        "key": key,
        "public_url": "http://gateway.local/",
        "date": "Thu, 01 Jan 1970 00:00:00 GMT",
        "request_id": "REQ",
    }
    notification = billing_notification("héllo")
    plain = build_signed_push(notification, ContentFormat.JSON, "http://h/x", **arguments)
    webhook = standard_webhook(WebhookSecrets(secret), "t", "s", "MID", now=time.time())
    signed = build_signed_push(
        notification, ContentFormat.JSON, "http://h/x", webhook=webhook, **arguments
    )
    assert signed.headers[: len(plain.headers)] == plain.headers  # the MNS headers, as they were
    added = dict(signed.headers[len(plain.headers) :])
    assert list(added) == ["webhook-id", "webhook-timestamp", "webhook-signature"]
    assert string_to_sign("POST", signed.headers, "/x") == string_to_sign(
        "POST", plain.headers, "/x"
    )
    # It covers exactly the bytes sent.
    Webhook(secret).verify(signed.body, added, json_parse=False)


def test_the_headers_go_through_the_push_headers_check(tmp_path: Path) -> None:
    key = KeyRing(tmp_path, bits=1024).current
    secret = secret_of(b"k" * 32)
    webhook = standard_webhook(WebhookSecrets(secret), "t", "s", "M", now=1.0)
    assert webhook is not None
    broken = type(webhook)(message_id="msg_\r\nX-Evil: 1", timestamp=1, secrets=webhook.secrets)
    with pytest.raises(UnrenderableMessageError, match="webhook-id"):
        build_signed_push(
            billing_notification("x"),
            ContentFormat.XML,
            "http://h/x",
            key=key,
            public_url="http://g/",
            date="d",
            request_id="r",
            webhook=broken,
        )
