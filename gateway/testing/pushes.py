"""An HTTP endpoint on 127.0.0.1 that receives an embedded gateway's pushes, verifies each one
with the receiver package's verification (signature from the certificate the gateway serves,
Content-MD5, Date), and records it for a test to look at.

Subscribe :attr:`PushRecorder.url` (pushes land at ``/notifications``) or
``recorder.url_for("/orders")`` to tell subscriptions apart by path. A verified push is answered
with :attr:`PushRecorder.status` (204; set 500 to make the gateway retry), a forged one with 403.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from receiver.certs import CertificateCache, CertificateURLPolicy, RequestsCertificateFetcher
from receiver.exceptions import ReceiverError
from receiver.notification import parse_notification
from receiver.verify import SignedPush, lowercase_headers, verify_push

if TYPE_CHECKING:
    from receiver.notification import Notification

DEFAULT_WAIT = 10.0
MAX_CLOCK_SKEW = 900.0
_MAX_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ReceivedPush:
    """One request as received; ``notification`` is set when it verified and parsed."""

    path: str
    headers: Mapping[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    verified: bool
    error: str | None
    notification: Notification | None

    @property
    def message(self) -> str:
        """The published message body (from a verified push)."""
        if self.notification is None:
            raise AssertionError(f"push to {self.path} was not verified: {self.error}")
        return self.notification.message


class PushRecorder:
    """Records what it receives; thread-safe. Start with :meth:`start`, end with :meth:`stop`."""

    def __init__(self, trusted_cert_prefix: str, *, status: int = 204) -> None:
        self.status = status
        self._certificates = CertificateCache(
            RequestsCertificateFetcher(),
            policy=CertificateURLPolicy([trusted_cert_prefix]),
        )
        self._received: list[ReceivedPush] = []
        self._changed = threading.Condition()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def url_for(self, path: str) -> str:
        return self.url + "/" + path.lstrip("/")

    @property
    def received(self) -> list[ReceivedPush]:
        with self._changed:
            return list(self._received)

    def clear(self) -> None:
        with self._changed:
            self._received.clear()
        self.status = 204

    def wait_for(
        self,
        count: int = 1,
        *,
        timeout: float = DEFAULT_WAIT,
        topic: str | None = None,
        subscription: str | None = None,
        path: str | None = None,
    ) -> list[ReceivedPush]:
        """Wait until at least ``count`` verified pushes match the filters; return them all."""

        def matching() -> list[ReceivedPush]:
            return [push for push in self._received if _matches(push, topic, subscription, path)]

        with self._changed:
            self._changed.wait_for(lambda: len(matching()) >= count, timeout)
            found = matching()
        if len(found) < count:
            forged = [push.error for push in self.received if not push.verified]
            raise AssertionError(
                f"{len(found)} of {count} verified pushes arrived within {timeout:g} s"
                + (f" (refused: {forged})" if forged else "")
            )
        return found

    # the server -------------------------------------------------------------------------------
    def start(self) -> PushRecorder:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # A short poll interval keeps shutdown() (which waits for the next poll) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="mns-pushes", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(DEFAULT_WAIT)

    def receive(self, path: str, headers: Mapping[str, str], body: bytes) -> int:
        """Verify and record one request; the status to answer."""
        push = SignedPush("POST", path, lowercase_headers(headers.items()), body)
        try:
            verify_push(
                push,
                public_key_for=self._certificates.public_key,
                now=time.time(),
                max_clock_skew=MAX_CLOCK_SKEW,
                require_content_md5=True,
            )
            notification = parse_notification(body, push.headers)
        except ReceiverError as exc:
            record = ReceivedPush(
                path, push.headers, body, False, f"{type(exc).__name__}: {exc}", None
            )
            status = 403
        else:
            record = ReceivedPush(path, push.headers, body, True, None, notification)
            status = self.status
        with self._changed:
            self._received.append(record)
            self._changed.notify_all()
        return status


def _matches(
    push: ReceivedPush, topic: str | None, subscription: str | None, path: str | None
) -> bool:
    notification = push.notification
    return (
        notification is not None
        and topic in (None, notification.topic_name)
        and subscription in (None, notification.subscription_name)
        and path in (None, push.path.partition("?")[0])
    )


def _utf8(value: str) -> str:
    """http.server decodes header bytes as Latin-1; pushes send UTF-8 (a Chinese tag)."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _handler(recorder: PushRecorder) -> type[http.server.BaseHTTPRequestHandler]:
    class PushHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, _MAX_BODY_BYTES))
            headers = {name: _utf8(value) for name, value in self.headers.items()}
            status = recorder.receive(self.path, headers, body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Pushes are recorded, not logged."""

    return PushHandler
