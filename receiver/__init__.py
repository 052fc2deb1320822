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
)
from receiver.notification import Notification, NotificationFormat
from receiver.verify import SignedPush

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
]
