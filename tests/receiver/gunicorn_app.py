"""An app for gunicorn in test_request_uri: the receiver under a prefix that needs escaping.

Configured by environment, as a process started by gunicorn must be: ``RECEIVER_TEST_PEM`` is
the certificate file served for ``RECEIVER_TEST_CERT_URL``.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask

from receiver import MNSReceiver, Notification


def create_app() -> Flask:
    cert_url = os.environ["RECEIVER_TEST_CERT_URL"]
    pem = Path(os.environ["RECEIVER_TEST_PEM"]).read_bytes()

    def fetch(url: str) -> bytes:
        if url != cert_url:
            raise LookupError(url)
        return pem

    receiver = MNSReceiver(allowed_cert_url_prefixes=[cert_url], cert_fetcher=fetch)

    @receiver.handler()
    def accept(notification: Notification) -> None:
        pass

    app = Flask(__name__)
    receiver.init_app(app, url_prefix="/hooks/a b")
    return app
