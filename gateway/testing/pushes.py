"""An HTTP endpoint on 127.0.0.1 that receives an embedded gateway's pushes, verifies each one
with the receiver package's verification (signature from the certificate the gateway serves,
Content-MD5, Date), and records it for a test to look at.

Subscribe :attr:`PushRecorder.url` (pushes land at ``/notifications``) or
``recorder.url_for("/orders")`` to tell subscriptions apart by path. A verified push is answered
with :attr:`PushRecorder.status` (204; set 500 to make the gateway retry), or from a script
(:meth:`PushRecorder.answer`), a forged one with 403. :meth:`PushRecorder.hold` keeps answers
until :meth:`PushRecorder.release` (bounded). ``PushRecorder.raw()`` verifies nothing: it records
whatever is posted (a test posting its own bytes, or a gateway whose certificate URL is not
reachable) and answers every request.
"""

from __future__ import annotations

import dataclasses
import http.server
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gateway.testing.answers import MAX_HOLD_SECONDS, Answer, Answers
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
    """One request as received; ``notification`` is set when it verified and parsed.
    ``headers`` are keyed by lowercased name."""

    path: str
    headers: Mapping[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    verified: bool
    error: str | None
    notification: Notification | None
    #: The headers as they arrived, names spelled as the sender spelled them.
    raw_headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    #: When it arrived, by ``time.monotonic()``.
    arrived: float = field(default=0.0, repr=False)

    @property
    def message_id(self) -> str:
        """The ``x-mns-message-id`` header (empty when there is none)."""
        return self.headers.get("x-mns-message-id", "")

    @property
    def message(self) -> str:
        """The published message body (from a verified push, or a raw recorder's parsed one)."""
        if self.notification is None:
            raise AssertionError(f"push to {self.path} was not verified: {self.error}")
        return self.notification.message


class PushRecorder:
    """Records what it receives; thread-safe. Start with :meth:`start`, end with :meth:`stop`
    (or use it as a context manager).

    ``trusted_cert_prefix`` is where signing certificates may be fetched from; ``None`` (what
    :meth:`raw` makes) verifies nothing.
    """

    def __init__(
        self,
        trusted_cert_prefix: str | None,
        *,
        status: int = 204,
        max_hold: float = MAX_HOLD_SECONDS,
    ) -> None:
        self.answers = Answers(status, max_hold=max_hold)
        self._certificates = (
            None
            if trusted_cert_prefix is None
            else CertificateCache(
                RequestsCertificateFetcher(), policy=CertificateURLPolicy([trusted_cert_prefix])
            )
        )
        self._received: list[ReceivedPush] = []
        self._connections = 0
        self._closed = 0
        self._hung_up = 0
        self._changed = threading.Condition()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    @classmethod
    def raw(cls, *, status: int = 204, max_hold: float = MAX_HOLD_SECONDS) -> PushRecorder:
        """A recorder that verifies nothing: every request is recorded (``verified=False``,
        its notification parsed when it parses) and answered as scripted."""
        return cls(None, status=status, max_hold=max_hold)

    @property
    def status(self) -> int:
        """The status a push is answered once the script is used up (204)."""
        return self.answers.default.status

    @status.setter
    def status(self, value: int) -> None:
        self.answers.default = Answer(value)

    @property
    def default(self) -> Answer:
        """The whole answer once the script is used up (a status with a body, say)."""
        return self.answers.default

    @default.setter
    def default(self, answer: Answer) -> None:
        self.answers.default = answer

    def answer(self, *answers: int | Answer) -> None:
        """Answer the next pushes with these (statuses or :class:`Answer`), then :attr:`status`."""
        self.answers.script(answers)

    def hold(self) -> None:
        """Keep every answer from now on until :meth:`release` (at most ``max_hold`` seconds)."""
        self.answers.hold()

    def release(self) -> None:
        """Answer what is held, and stop holding."""
        self.answers.release()

    @property
    def connections(self) -> int:
        """How many TCP connections were opened to the endpoint (keep-alive reuses one)."""
        with self._changed:
            return self._connections

    @property
    def hung_up(self) -> int:
        """How many answers found their pusher gone: it hung up first (its push timeout passed
        while the answer was held, say). Not an error of the endpoint's: nothing is printed."""
        with self._changed:
            return self._hung_up

    def wait_closed(self, count: int = 1, *, timeout: float = DEFAULT_WAIT) -> None:
        """Wait until ``count`` connections have ended (either side closed them)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._closed >= count, timeout):
                raise AssertionError(f"{self._closed} of {count} connections closed")

    def url_for(self, path: str) -> str:
        return self.url + "/" + path.lstrip("/")

    @property
    def received(self) -> list[ReceivedPush]:
        with self._changed:
            return list(self._received)

    def clear(self) -> None:
        """Forget what was received; answer 204 again, without a script or a hold."""
        with self._changed:
            self._received.clear()
        self.answers.reset()

    def wait_for(
        self,
        count: int = 1,
        *,
        timeout: float = DEFAULT_WAIT,
        topic: str | None = None,
        subscription: str | None = None,
        path: str | None = None,
    ) -> list[ReceivedPush]:
        """Wait until at least ``count`` verified pushes (any request, for a raw recorder) match
        the filters; return them all."""
        raw = self._certificates is None

        def matching() -> list[ReceivedPush]:
            return [
                push
                for push in self._received
                if (raw or push.verified) and _matches(push, topic, subscription, path)
            ]

        with self._changed:
            self._changed.wait_for(lambda: len(matching()) >= count, timeout)
            found = matching()
        if len(found) < count:
            forged = [push.error for push in self.received if push.error]
            raise AssertionError(
                f"{len(found)} of {count} {'' if raw else 'verified '}pushes arrived"
                f" within {timeout:g} s" + (f" (refused: {forged})" if forged else "")
            )
        return found

    # the server -------------------------------------------------------------------------------
    def start(self, *, port: int = 0, tls: ssl.SSLContext | None = None) -> PushRecorder:
        """Listen on 127.0.0.1 (``port``, or one the OS picks), over HTTPS with ``tls``."""
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"
        # A short poll interval keeps shutdown() (which waits for the next poll) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="mns-pushes", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.answers.release()  # a held request ends before the server stops
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(DEFAULT_WAIT)

    def __enter__(self) -> PushRecorder:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def receive(self, path: str, headers: Mapping[str, str], body: bytes) -> tuple[Answer, int]:
        """Verify and record one request; the answer, and the releases it waits past if held
        (:meth:`Answers.next`)."""
        push = SignedPush("POST", path, lowercase_headers(headers.items()), body)
        record = dataclasses.replace(
            self._judge(push), raw_headers=tuple(headers.items()), arrived=time.monotonic()
        )
        with self._changed:
            self._received.append(record)
            self._changed.notify_all()
        if record.verified or self._certificates is None:
            return self.answers.next()
        return Answer(403), 0

    def _judge(self, push: SignedPush) -> ReceivedPush:
        if self._certificates is None:
            try:
                parsed: Notification | None = parse_notification(push.body, push.headers)
            except ReceiverError:
                parsed = None
            return ReceivedPush(push.resource, push.headers, push.body, False, None, parsed)
        try:
            verify_push(
                push,
                public_key_for=self._certificates.public_key,
                now=time.time(),
                max_clock_skew=MAX_CLOCK_SKEW,
                require_content_md5=True,
            )
            notification = parse_notification(push.body, push.headers)
        except ReceiverError as exc:
            error = f"{type(exc).__name__}: {exc}"
            return ReceivedPush(push.resource, push.headers, push.body, False, error, None)
        return ReceivedPush(push.resource, push.headers, push.body, True, None, notification)

    def _connected(self, opened: int = 1, closed: int = 0, hung_up: int = 0) -> None:
        with self._changed:
            self._connections += opened
            self._closed += closed
            self._hung_up += hung_up
            self._changed.notify_all()


def _matches(
    push: ReceivedPush, topic: str | None, subscription: str | None, path: str | None
) -> bool:
    notification = push.notification
    if path not in (None, push.path.partition("?")[0]):
        return False
    if topic is None and subscription is None:
        return True
    return (
        notification is not None
        and topic in (None, notification.topic_name)
        and subscription in (None, notification.subscription_name)
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

        def setup(self) -> None:
            super().setup()
            recorder._connected()  # one handler instance per TCP connection

        def finish(self) -> None:
            super().finish()
            recorder._connected(opened=0, closed=1)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(min(length, _MAX_BODY_BYTES))
            headers = {name: _utf8(value) for name, value in self.headers.items()}
            answer, releases = recorder.receive(self.path, headers, body)
            if answer.held:
                recorder.answers.wait_released(releases)
            try:
                self._answer(answer)
            except ConnectionError:  # a broken pipe or a reset
                # The pusher hung up first: counted, not printed as the server's error.
                recorder._connected(opened=0, hung_up=1)
                self.close_connection = True

        def _answer(self, answer: Answer) -> None:
            self.send_response(answer.status)
            if answer.body:
                self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers:
                self.send_header(name, value)
            if answer.connection == "close":
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(answer.body)
            if answer.connection != "keep-alive":
                self.close_connection = True
            if answer.connection == "drop":
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)

        def log_message(self, format: str, *args: object) -> None:
            """Pushes are recorded, not logged."""

    return PushHandler
