"""Receive Alibaba Cloud MNS HTTP pushes in Flask, verified.

Mount :attr:`MNSReceiver.blueprint`, register handlers, and only genuine pushes (from Alibaba
Cloud MNS or from an mns-push gateway whose certificate URL you allow) reach them::

    from flask import Flask
    from receiver import MNSReceiver, Notification

    receiver = MNSReceiver()

    @receiver.handler(topic="orders")
    def on_order(notification: Notification) -> None:
        ...

    app = Flask(__name__)
    receiver.init_app(app, url_prefix="/mns")

See docs/receiver.md for the options, the routing rule and the testing helpers in
:mod:`receiver.testing`. This package imports nothing from the gateway.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from receiver.blueprint import DEFAULT_MAX_BODY_BYTES, Handler, MNSReceiver
    from receiver.certs import (
        OFFICIAL_CERT_URL_PREFIXES,
        CertificateCache,
        CertificateFetcher,
        CertificateURLPolicy,
        RequestsCertificateFetcher,
    )
    from receiver.dedupe import DedupeStore, InMemoryDedupeStore
    from receiver.exceptions import (
        BodyTooLargeError,
        CertificateFetchError,
        CertificateURLError,
        ContentMD5MismatchError,
        DateError,
        InvalidCertificateError,
        MalformedNotificationError,
        MissingHeaderError,
        ReceiverError,
        SignatureMismatchError,
        VerificationError,
        WebhookSignatureError,
        WebhookTimestampError,
    )
    from receiver.notification import Notification, NotificationFormat
    from receiver.verify import SignedPush

# Each name is imported from its module on first use (PEP 562), so ``import receiver.verify``
# (the pure signature check) needs neither Flask nor requests: only the blueprint imports Flask,
# only the certificate fetcher requests.
_EXPORTS = {
    "DEFAULT_MAX_BODY_BYTES": "receiver.blueprint",
    "Handler": "receiver.blueprint",
    "MNSReceiver": "receiver.blueprint",
    "OFFICIAL_CERT_URL_PREFIXES": "receiver.certs",
    "CertificateCache": "receiver.certs",
    "CertificateFetcher": "receiver.certs",
    "CertificateURLPolicy": "receiver.certs",
    "RequestsCertificateFetcher": "receiver.certs",
    "DedupeStore": "receiver.dedupe",
    "InMemoryDedupeStore": "receiver.dedupe",
    "BodyTooLargeError": "receiver.exceptions",
    "CertificateFetchError": "receiver.exceptions",
    "CertificateURLError": "receiver.exceptions",
    "ContentMD5MismatchError": "receiver.exceptions",
    "DateError": "receiver.exceptions",
    "InvalidCertificateError": "receiver.exceptions",
    "MalformedNotificationError": "receiver.exceptions",
    "MissingHeaderError": "receiver.exceptions",
    "ReceiverError": "receiver.exceptions",
    "SignatureMismatchError": "receiver.exceptions",
    "VerificationError": "receiver.exceptions",
    "WebhookSignatureError": "receiver.exceptions",
    "WebhookTimestampError": "receiver.exceptions",
    "Notification": "receiver.notification",
    "NotificationFormat": "receiver.notification",
    "SignedPush": "receiver.verify",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'receiver' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "OFFICIAL_CERT_URL_PREFIXES",
    "BodyTooLargeError",
    "CertificateCache",
    "CertificateFetchError",
    "CertificateFetcher",
    "CertificateURLError",
    "CertificateURLPolicy",
    "ContentMD5MismatchError",
    "DateError",
    "DedupeStore",
    "Handler",
    "InMemoryDedupeStore",
    "InvalidCertificateError",
    "MNSReceiver",
    "MalformedNotificationError",
    "MissingHeaderError",
    "Notification",
    "NotificationFormat",
    "ReceiverError",
    "RequestsCertificateFetcher",
    "SignatureMismatchError",
    "SignedPush",
    "VerificationError",
    "WebhookSignatureError",
    "WebhookTimestampError",
]
