"""Helpers for testing an application that mounts the receiver, without Alibaba Cloud.

A :class:`SigningIdentity` is a throwaway key pair with a self-signed certificate; give its
:meth:`~SigningIdentity.cert_fetcher` to the receiver so no test touches the network. Then
:func:`sign_notification` builds pushes exactly as MNS sends them, in any format, and
:func:`post_notification` posts one to a Flask test client::

    import pytest
    from receiver.testing import SigningIdentity, post_notification, sign_notification

    @pytest.fixture(scope="session")
    def mns_identity():
        return SigningIdentity.generate()  # key generation is slow-ish: once per session

    @pytest.fixture
    def client(mns_identity):
        app = create_app(cert_fetcher=mns_identity.cert_fetcher)
        return app.test_client()

    def test_order_created(client, mns_identity):
        push = sign_notification(mns_identity, '{"order": 1}', topic_name="orders")
        assert post_notification(client, push).status_code == 204

:meth:`SignedRequest.replace_headers` changes headers *without* re-signing, to check that your
application rejects tampered pushes.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from email.utils import formatdate
from typing import TYPE_CHECKING, Literal
from xml.sax.saxutils import escape

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

from receiver.exceptions import CertificateFetchError
from receiver.notification import NotificationFormat
from receiver.standard_webhooks import secret_keys, signature
from receiver.verify import SignedPush, lowercase_headers, string_to_sign

if TYPE_CHECKING:
    from werkzeug.test import Client, TestResponse

    from receiver.tracing import SpanRecorder

__all__ = [
    "DEFAULT_TEST_CERT_URL",
    "ContentMD5Style",
    "SignedRequest",
    "SigningIdentity",
    "content_md5",
    "post_notification",
    "sign_notification",
    "sign_request",
    "span_recorder",
]

DEFAULT_TEST_CERT_URL = "https://mns-cert.oss-cn-hangzhou.aliyuncs.com/receiver-testing.pem"
"""On the default allowlist, so tests run the receiver with its production settings."""

ContentMD5Style = Literal["hex", "base64-hex", "base64"]
"""Uppercase hex (SIMPLIFIED pushes), base64 of lowercase hex (XML), base64 of the digest."""

_CONTENT_TYPES: Mapping[NotificationFormat, str] = {
    "XML": "text/xml;charset=utf-8",
    "JSON": "application/json;charset=utf-8",
    "SIMPLIFIED": "text/plain;charset=utf-8",
}
_XML_NAMESPACE = "http://mns.aliyuncs.com/doc/v1/"
_XML_EXTRA_ESCAPES = {"\r": "&#13;"}  # XML parsers turn a literal CR LF into LF


@dataclass(frozen=True)
class SigningIdentity:
    """A private key, its self-signed PEM certificate, and the URL it is "published" at."""

    private_key: rsa.RSAPrivateKey
    certificate_pem: bytes
    cert_url: str = DEFAULT_TEST_CERT_URL

    @classmethod
    def generate(
        cls, cert_url: str = DEFAULT_TEST_CERT_URL, *, key_size: int = 2048
    ) -> SigningIdentity:
        """A fresh RSA key pair (``cryptography`` refuses sizes under 1024 bits)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)
        return cls.from_private_key(key, cert_url)

    @classmethod
    def from_private_key(cls, private_key: rsa.RSAPrivateKey, cert_url: str) -> SigningIdentity:
        """Wrap an existing key in a self-signed certificate valid for a day from now."""
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "receiver.testing")])
        not_before = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(private_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_before + datetime.timedelta(days=1))
            .sign(private_key, hashes.SHA256())
        )
        pem = certificate.public_bytes(serialization.Encoding.PEM)
        return cls(private_key=private_key, certificate_pem=pem, cert_url=cert_url)

    def cert_fetcher(self, url: str) -> bytes:
        """A ``cert_fetcher`` for the receiver: this certificate at :attr:`cert_url`, else 404."""
        if url != self.cert_url:
            raise CertificateFetchError(f"no test certificate at {url!r}")
        return self.certificate_pem

    def sign(self, text: str) -> str:
        """Base64 PKCS#1 v1.5 SHA-1 signature of ``text``, as in the Authorization header."""
        signature = self.private_key.sign(text.encode("utf-8"), padding.PKCS1v15(), hashes.SHA1())
        return base64.b64encode(signature).decode("ascii")


@dataclass(frozen=True)
class SignedRequest:
    """A push ready to send: POST ``body`` to ``path`` (path and query) with ``headers``."""

    path: str
    headers: Mapping[str, str]
    body: bytes
    method: str = "POST"

    def replace_headers(self, changes: Mapping[str, str | None]) -> SignedRequest:
        """Set headers (``None`` removes one), names case-insensitive, **without** re-signing."""
        lowered = {name.lower() for name in changes}
        kept = {k: v for k, v in self.headers.items() if k.lower() not in lowered}
        added = {k: v for k, v in changes.items() if v is not None}
        return replace(self, headers={**kept, **added})


def sign_notification(
    identity: SigningIdentity,
    message: str | bytes = "hello",
    *,
    format: NotificationFormat = "XML",
    path: str = "/notifications",
    message_id: str | None = None,
    topic_owner: str = "1234567890123456",
    topic_name: str = "test-topic",
    subscriber: str = "1234567890123456",
    subscription_name: str = "test-subscription",
    message_tag: str | None = None,
    publish_time: int | None = None,
    date: float | None = None,
    content_md5_style: ContentMD5Style | None = None,
    request_id: str | None = None,
    standard_webhooks_secret: str | Iterable[str] | None = None,
) -> SignedRequest:
    """Build a push as MNS sends it (docs/protocol.md#push-headers) and sign it with ``identity``.

    ``path`` is posted to and signed as given: include any blueprint prefix and percent-escape
    it as you will send it. ``date`` (epoch s) and ``publish_time`` (epoch ms) default to now;
    ``content_md5_style`` to the service's: hex for SIMPLIFIED, base64 of hex otherwise.
    ``standard_webhooks_secret`` (one ``whsec_`` secret or several) adds the Standard Webhooks
    headers an mns-push gateway sends when they are on, signed at ``date`` by each secret.
    """
    text = message.decode("utf-8") if isinstance(message, bytes) else message
    sent_at = time.time() if date is None else date
    fields = {
        "TopicOwner": topic_owner,
        "TopicName": topic_name,
        "Subscriber": subscriber,
        "SubscriptionName": subscription_name,
        "MessageId": message_id or uuid.uuid4().hex.upper(),
        "Message": text,
        "MessageMD5": hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest().upper(),
        "MessageTag": message_tag,
        "PublishTime": str(int(sent_at * 1000) if publish_time is None else publish_time),
    }
    body = _notification_body(format, {k: v for k, v in fields.items() if v is not None})
    style = content_md5_style or ("hex" if format == "SIMPLIFIED" else "base64-hex")
    headers = {
        "Content-md5": content_md5(body, style),
        "Content-Type": _CONTENT_TYPES[format],
        "Date": formatdate(sent_at, usegmt=True),
        **_push_headers(fields, identity.cert_url, request_id),
    }
    if standard_webhooks_secret is not None:
        headers.update(_webhook_headers(standard_webhooks_secret, fields, int(sent_at), body))
    return sign_request(identity, path, headers, body)


def _webhook_headers(
    secrets: str | Iterable[str], fields: Mapping[str, str | None], timestamp: int, body: bytes
) -> dict[str, str]:
    webhook_id = f"msg_{fields['MessageId']}"
    signatures = [signature(key, webhook_id, timestamp, body) for key in secret_keys(secrets)]
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signatures),
    }


def sign_request(
    identity: SigningIdentity, path: str, headers: Mapping[str, str], body: bytes
) -> SignedRequest:
    """Sign any POST as a push: ``headers`` are kept as given, plus ``Authorization``.

    For bodies :func:`sign_notification` would not produce, such as a malformed one to check
    that your application answers 400. Include Content-md5, Content-Type, Date and
    x-mns-signing-cert-url yourself; see :func:`content_md5` for the first.
    """
    unsigned = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    push = SignedPush("POST", path, lowercase_headers(unsigned.items()), body)
    signed = {**unsigned, "Authorization": identity.sign(string_to_sign(push))}
    return SignedRequest(path=path, headers=signed, body=body)


def post_notification(client: Client, signed: SignedRequest) -> TestResponse:
    """Send ``signed`` through a Flask (or any werkzeug) test client, byte for byte."""
    return client.open(
        signed.path, method=signed.method, data=signed.body, headers=dict(signed.headers)
    )


def _notification_body(fmt: NotificationFormat, fields: Mapping[str, str]) -> bytes:
    if fmt == "SIMPLIFIED":
        return fields["Message"].encode("utf-8")
    if fmt == "JSON":
        return json.dumps(dict(fields), ensure_ascii=False).encode("utf-8")
    elements = "".join(f"<{k}>{escape(v, _XML_EXTRA_ESCAPES)}</{k}>" for k, v in fields.items())
    document = f'<?xml version="1.0" encoding="utf-8"?>\n<Notification xmlns="{_XML_NAMESPACE}">'
    return f"{document}{elements}</Notification>".encode()


def content_md5(body: bytes, style: ContentMD5Style = "base64-hex") -> str:
    """The Content-MD5 header value for ``body`` in the given style."""
    digest = hashlib.md5(body, usedforsecurity=False)
    if style == "hex":
        return digest.hexdigest().upper()
    raw = digest.hexdigest().encode("ascii") if style == "base64-hex" else digest.digest()
    return base64.b64encode(raw).decode("ascii")


def _push_headers(
    fields: Mapping[str, str | None], cert_url: str, request_id: str | None
) -> dict[str, str]:
    """The headers after Date, in the order and spelling the real service uses."""
    headers = {
        "User-Agent": "Aliyun Notification Service Agent",
        "x-mns-request-id": request_id or uuid.uuid4().hex[:24].upper(),
        "x-mns-version": "2015-06-06",
        "x-mns-signing-cert-url": base64.b64encode(cert_url.encode("ascii")).decode("ascii"),
        "x-mns-message-id": fields["MessageId"],
        "x-mns-publish-time": fields["PublishTime"],
        "x-mns-topic-owner": fields["TopicOwner"],
        "x-mns-topic-name": fields["TopicName"],
        "x-mns-subscriber": fields["Subscriber"],
        "x-mns-subscription-name": fields["SubscriptionName"],
        "x-mns-message-tag": fields["MessageTag"],
    }
    return {name: value for name, value in headers.items() if value is not None}


def span_recorder() -> SpanRecorder:
    """Spans kept in memory, to assert on a receiver's ``process`` spans::

        recorder = span_recorder()
        receiver = MNSReceiver(tracing=True, tracer_provider=recorder.provider, ...)
        ...
        (span,) = recorder.attributes()
        assert span["messaging.operation.type"] == "process"

    Needs ``opentelemetry-sdk`` (the receiver's ``otel`` extra brings only the API)."""
    from receiver.tracing import SpanRecorder  # only now: the optional extra

    return SpanRecorder()
