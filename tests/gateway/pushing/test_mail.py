"""Mail endpoints against a real SMTP server (aiosmtpd on 127.0.0.1) and through a gateway."""

from __future__ import annotations

import email
import functools
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, LoginPassword, Session
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import DirectMailInfo, TopicMessage, TopicMeta

from gateway.delivery.directmail import DEFAULT_SUBJECT
from gateway.delivery.records import DeliveryJob
from gateway.errors import PermanentDeliveryError
from gateway.errors.delivery import SmtpConfigError
from gateway.pushing.mail import MailSender, SmtpSecurity, SmtpSettings, open_smtp
from gateway.pushing.transport import PushOutcome
from gateway.topics.records import Subscription
from gateway.topics.records import TopicMessage as StoredMessage
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    RunningGateway,
    free_port,
    start_gateway,
)

from .conftest import WAIT_SECONDS, TlsFiles

GATEWAY_SENDER = "gateway@example.test"
PUBLISHED_AT_MS = 1_700_000_000_000
FULL_DIRECT_MAIL = {
    "AccountName": "shop@example.test",
    "Subject": "Your order",
    "AddressType": 0,
    "IsHtml": 0,
    "ReplyToAddress": 0,
}


@dataclass(frozen=True)
class ReceivedMail:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    peer: Any
    tls: bool
    authenticated: bool


@dataclass
class Mailbox:
    """An aiosmtpd handler that records accepted mail and refuses on request."""

    #: Recipient -> replies to give its RCPT, one per attempt, before accepting it.
    rcpt_replies: dict[str, list[str]] = field(default_factory=dict)
    #: Replies to give DATA, one per message, before accepting.
    data_replies: list[str] = field(default_factory=list)
    received: list[ReceivedMail] = field(default_factory=list)
    #: The SMTP session objects that delivered mail, so a test can hang up on one.
    servers: list[SMTP] = field(default_factory=list)
    changed: threading.Condition = field(default_factory=threading.Condition)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        if replies := self.rcpt_replies.get(address):
            return replies.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        if self.data_replies:
            return self.data_replies.pop(0)
        content = envelope.content if isinstance(envelope.content, bytes) else b""
        mail = email.message_from_bytes(content, policy=default_policy)
        assert isinstance(mail, EmailMessage)
        received = ReceivedMail(
            str(envelope.mail_from),
            list(envelope.rcpt_tos),
            mail,
            session.peer,
            session.ssl is not None,
            bool(session.authenticated),
        )
        with self.changed:
            self.received.append(received)
            self.servers.append(server)
            self.changed.notify_all()
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, to: str | None = None) -> list[ReceivedMail]:
        def matching() -> list[ReceivedMail]:
            return [m for m in self.received if to is None or to in m.rcpt_tos]

        with self.changed:
            self.changed.wait_for(lambda: len(matching()) >= count, WAIT_SECONDS)
            mails = matching()
        assert len(mails) >= count, f"{len(mails)} of {count} mails arrived"
        return mails


@dataclass
class Relay:
    mailbox: Mailbox
    controller: Controller
    port: int

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def hang_up_on_last_session(self) -> None:
        """Close the relay's end of the connection the last mail came over, as idle relays do."""
        closed = threading.Event()
        transport = self.mailbox.servers[-1].transport

        def close() -> None:
            transport.close()
            closed.set()

        self.controller.loop.call_soon_threadsafe(close)
        assert closed.wait(WAIT_SECONDS)


def start_relay(mailbox: Mailbox, **smtp_options: Any) -> Relay:
    port = free_port()
    controller = Controller(
        mailbox,
        hostname="127.0.0.1",
        port=port,
        server_hostname="relay.test",
        ready_timeout=WAIT_SECONDS,
        **smtp_options,
    )
    controller.start()
    return Relay(mailbox, controller, port)


@pytest.fixture()
def relay() -> Iterator[Relay]:
    running = start_relay(Mailbox())
    yield running
    running.controller.stop()


@pytest.fixture()
def sender(relay: Relay) -> Iterator[MailSender]:
    mail_sender = MailSender(
        SmtpSettings("127.0.0.1", relay.port), mail_from=GATEWAY_SENDER, timeout=WAIT_SECONDS
    )
    yield mail_sender
    mail_sender.close()


def delivery(
    address: str = "you@example.test",
    *,
    body: str = "hello",
    tag: str | None = None,
    direct_mail: dict[str, Any] | str | None = None,
    message_id: str = "0A1B2C3D",
) -> DeliveryJob:
    attributes: dict[str, Any] = {}
    if direct_mail is not None:
        raw = direct_mail if isinstance(direct_mail, str) else json.dumps(direct_mail)
        attributes["MessageAttributes"] = {"DirectMail": raw}
    message = StoredMessage(
        message_id, "orders", body, "", PUBLISHED_AT_MS, tag=tag, attributes=attributes
    )
    subscription = Subscription("orders", "mailsub", f"mail:directmail:{address}")
    return DeliveryJob("delivery-1", 0, message, subscription, "mail")


def never_connect(settings: SmtpSettings, timeout: float) -> Any:
    raise AssertionError("a message that can never be mailed must not reach the relay")


# composing ---------------------------------------------------------------------------------


def test_direct_mail_picks_subject_sender_html_and_reply_to(
    relay: Relay, sender: MailSender
) -> None:
    direct = {
        "AccountName": "shop@example.test",
        "Subject": "Your order",
        "AddressType": 1,
        "IsHtml": 1,
        "ReplyToAddress": 1,
    }
    job = delivery(body="<p>shipped</p>", tag="vip", direct_mail=direct)

    result = sender.send(job)

    assert (result.outcome, result.status, result.error) == (PushOutcome.SUCCESS, 250, None)
    (mail,) = relay.mailbox.wait_for(1)
    assert (mail.mail_from, mail.rcpt_tos) == ("shop@example.test", ["you@example.test"])
    message = mail.message
    assert message["Subject"] == "Your order"
    assert message["From"] == "shop@example.test"
    assert message["To"] == "you@example.test"
    assert message["Reply-To"] == "shop@example.test"
    assert message.get_content_type() == "text/html"
    assert message.get_content().strip() == "<p>shipped</p>"
    assert message["X-MNS-Message-Id"] == "0A1B2C3D"
    assert message["X-MNS-Topic-Name"] == "orders"
    assert message["X-MNS-Subscription-Name"] == "mailsub"
    assert message["X-MNS-Message-Tag"] == "vip"
    assert message["Message-ID"] == "<0A1B2C3D.mailsub@example.test>"
    assert message["Date"].datetime.timestamp() == PUBLISHED_AT_MS / 1000


def test_without_direct_mail_plain_text_from_the_configured_sender(
    relay: Relay, sender: MailSender
) -> None:
    assert sender.send(delivery(body="<p>not html</p>")).ok

    (mail,) = relay.mailbox.wait_for(1)
    assert mail.mail_from == GATEWAY_SENDER
    assert mail.message["From"] == GATEWAY_SENDER
    assert mail.message["Subject"] == DEFAULT_SUBJECT
    assert mail.message["Reply-To"] is None
    assert mail.message["X-MNS-Message-Tag"] is None
    assert mail.message.get_content_type() == "text/plain"
    assert mail.message.get_content().strip() == "<p>not html</p>"


def test_non_ascii_subject_and_body_arrive_intact_over_7bit(
    relay: Relay, sender: MailSender
) -> None:
    body = "订单已发货 — " + "x" * 1200  # non-ASCII and longer than an SMTP line
    direct = {**FULL_DIRECT_MAIL, "Subject": "订单通知"}
    assert sender.send(delivery(body=body, direct_mail=direct)).ok

    (mail,) = relay.mailbox.wait_for(1)
    assert mail.message["Subject"] == "订单通知"
    assert mail.message["Content-Transfer-Encoding"] in ("quoted-printable", "base64")
    assert mail.message.get_content().rstrip("\r\n") == body  # CRLF: canonical text form


@pytest.mark.parametrize(
    ("direct_mail", "mail_from", "reason"),
    [
        ("{not json", GATEWAY_SENDER, "must be JSON"),
        ("[1, 2]", GATEWAY_SENDER, "JSON object"),
        ('{"AccountName": 42}', GATEWAY_SENDER, "AccountName is required"),
        ('{"AccountName": "Shop <shop@example.test>"}', GATEWAY_SENDER, "bare e-mail address"),
        (
            '{"AccountName": "a@example.test", "Subject": "a\\r\\nBcc: victim@example.test"}',
            GATEWAY_SENDER,
            "one line",
        ),
        (None, "", "MNS_GATEWAY_MAIL_FROM"),
    ],
)
def test_a_message_that_can_never_be_mailed_is_permanent_without_connecting(
    direct_mail: str | None, mail_from: str, reason: str
) -> None:
    sender = MailSender(SmtpSettings("127.0.0.1", 25), mail_from=mail_from, connect=never_connect)
    with pytest.raises(PermanentDeliveryError, match=reason):
        sender.send(delivery(direct_mail=direct_mail))


# relay verdicts ----------------------------------------------------------------------------


def refuse_at(relay: Relay, stage: str, reply: str) -> None:
    """The relay answers ``reply`` to the recipient (``rcpt``) or to the message (``data``)."""
    if stage == "rcpt":
        relay.mailbox.rcpt_replies["you@example.test"] = [reply]
    else:
        relay.mailbox.data_replies.append(reply)


@pytest.mark.parametrize(
    ("stage", "reply"), [("rcpt", "550 5.1.1 no such user"), ("data", "554 5.7.1 rejected")]
)
def test_a_5xx_refusal_is_permanent(
    relay: Relay, sender: MailSender, stage: str, reply: str
) -> None:
    refuse_at(relay, stage, reply)

    with pytest.raises(PermanentDeliveryError, match=reply.split()[0]):
        sender.send(delivery())


@pytest.mark.parametrize(
    ("stage", "reply"), [("rcpt", "451 4.3.0 try later"), ("data", "452 4.3.1 disk full")]
)
def test_a_4xx_refusal_is_retryable_and_keeps_the_connection(
    relay: Relay, sender: MailSender, stage: str, reply: str
) -> None:
    refuse_at(relay, stage, reply)

    refused = sender.send(delivery())
    retried = sender.send(delivery())

    code = int(reply.split()[0])
    assert (refused.outcome, refused.status) == (PushOutcome.HTTP_ERROR, code)
    assert refused.error is not None and reply.split(" ", 1)[1] in refused.error
    assert retried.ok
    assert len(relay.mailbox.wait_for(1)) == 1


def test_relay_down_is_a_retryable_connection_error() -> None:
    sender = MailSender(SmtpSettings("127.0.0.1", free_port()), mail_from=GATEWAY_SENDER)

    result = sender.send(delivery())

    assert (result.outcome, result.status) == (PushOutcome.CONNECTION_ERROR, None)
    assert result.error is not None and "ConnectionRefusedError" in result.error


def test_relay_that_never_greets_is_a_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        settings = SmtpSettings("127.0.0.1", silent.getsockname()[1])
        sender = MailSender(settings, mail_from=GATEWAY_SENDER, timeout=0.2)
        result = sender.send(delivery())

    assert (result.outcome, result.status) == (PushOutcome.TIMEOUT, None)


# the kept connection -----------------------------------------------------------------------


def test_pushes_from_many_threads_share_one_connection(relay: Relay, sender: MailSender) -> None:
    jobs = [delivery(f"user{n}@example.test", message_id=f"M{n}") for n in range(24)]

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(sender.send, jobs))

    assert all(result.ok for result in results)
    mails = relay.mailbox.wait_for(24)
    assert {mail.message["X-MNS-Message-Id"] for mail in mails} == {f"M{n}" for n in range(24)}
    assert len({mail.peer for mail in mails}) == 1


def test_a_connection_the_relay_dropped_is_replaced_within_the_attempt(
    relay: Relay, sender: MailSender
) -> None:
    assert sender.send(delivery(message_id="FIRST")).ok
    relay.mailbox.wait_for(1)
    relay.hang_up_on_last_session()

    result = sender.send(delivery(message_id="SECOND"))

    assert result.ok
    first, second = relay.mailbox.wait_for(2)
    assert second.message["X-MNS-Message-Id"] == "SECOND"
    assert first.peer != second.peer


# TLS and login -----------------------------------------------------------------------------


def _authenticator(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
) -> AuthResult:
    valid = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
        b"mailer",
        b"s@cret:1",
    )
    return AuthResult(success=valid, handled=False)  # unhandled: the server answers 535


@pytest.fixture()
def tls_relay(tls_files: TlsFiles) -> Iterator[Relay]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files.certificate, tls_files.private_key)
    running = start_relay(
        Mailbox(),
        tls_context=context,
        require_starttls=True,
        authenticator=_authenticator,
        auth_required=True,
    )
    yield running
    running.controller.stop()


def _trusting_connect(tls_files: TlsFiles) -> Any:
    return functools.partial(
        open_smtp, ssl_context=ssl.create_default_context(cafile=str(tls_files.certificate))
    )


def test_starttls_and_login_from_the_url(tls_relay: Relay, tls_files: TlsFiles) -> None:
    settings = SmtpSettings.from_url(
        f"smtp+starttls://mailer:s%40cret%3A1@127.0.0.1:{tls_relay.port}"
    )
    sender = MailSender(settings, mail_from=GATEWAY_SENDER, connect=_trusting_connect(tls_files))

    assert sender.send(delivery()).ok
    sender.close()

    (mail,) = tls_relay.mailbox.wait_for(1)
    assert (mail.tls, mail.authenticated) == (True, True)


def test_a_rejected_login_is_a_retryable_connection_error(
    tls_relay: Relay, tls_files: TlsFiles
) -> None:
    settings = SmtpSettings("127.0.0.1", tls_relay.port, SmtpSecurity.STARTTLS, "mailer", "wrong")
    sender = MailSender(settings, mail_from=GATEWAY_SENDER, connect=_trusting_connect(tls_files))

    result = sender.send(delivery())

    assert (result.outcome, result.status) == (PushOutcome.CONNECTION_ERROR, 535)


# configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("smtp://127.0.0.1:2525", SmtpSettings("127.0.0.1", 2525)),
        ("smtp://relay.test", SmtpSettings("relay.test", 25)),
        ("smtps://relay.test", SmtpSettings("relay.test", 465, SmtpSecurity.TLS)),
        ("SMTP+STARTTLS://relay.test", SmtpSettings("relay.test", 587, SmtpSecurity.STARTTLS)),
        (
            "smtps://u%40x.test:p%2Fw@[::1]:2465",
            SmtpSettings("::1", 2465, SmtpSecurity.TLS, "u@x.test", "p/w"),
        ),
    ],
)
def test_smtp_url_forms(url: str, expected: SmtpSettings) -> None:
    assert SmtpSettings.from_url(url) == expected


@pytest.mark.parametrize(
    "url", ["http://relay.test", "smtp://user:hunter2@relay.test:99999", "smtp://:hunter2@/"]
)
def test_unusable_smtp_url_is_refused_without_echoing_the_password(url: str) -> None:
    with pytest.raises(SmtpConfigError) as refused:
        SmtpSettings.from_url(url)
    assert "hunter2" not in str(refused.value)


def test_a_malformed_mail_from_is_refused_at_start() -> None:
    with pytest.raises(SmtpConfigError, match="MAIL_FROM"):
        MailSender(SmtpSettings("127.0.0.1", 25), mail_from="gateway")


# through a real gateway --------------------------------------------------------------------


@pytest.fixture(scope="module")
def mail_gateway(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningGateway, Relay]]:
    relay = start_relay(Mailbox())
    env = {
        "MNS_GATEWAY_SMTP_URL": relay.url,
        "MNS_GATEWAY_MAIL_FROM": GATEWAY_SENDER,
        "MNS_GATEWAY_RETRY_SCALE": "0.01",
    }
    gateway = start_gateway(Path(tmp_path_factory.mktemp("mail-gateway")), env)
    yield gateway, relay
    gateway.stop()
    relay.controller.stop()


def _mail_topic(gateway: RunningGateway, topic: str, address: str) -> Any:
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    account.get_topic(topic).create(TopicMeta())
    meta = SubscriptionMeta(f"mail:directmail:{address}", notify_content_format="SIMPLIFIED")
    account.get_topic(topic).get_subscription("mail").subscribe(meta)
    return account.get_topic(topic)


def test_published_messages_arrive_as_mail(mail_gateway: tuple[RunningGateway, Relay]) -> None:
    gateway, relay = mail_gateway
    topic = _mail_topic(gateway, "mailtopic", "you@example.test")
    info = DirectMailInfo("shop@example.test", "Greetings", 0, 1, 1)

    published = topic.publish_message(TopicMessage("<b>hi</b>", "vip", direct_mail=info))
    topic.publish_message(TopicMessage("plain words"))

    mails = relay.mailbox.wait_for(2, to="you@example.test")
    by_subject = {mail.message["Subject"]: mail for mail in mails}
    html = by_subject["Greetings"]
    assert html.mail_from == "shop@example.test"
    assert html.message["Reply-To"] == "shop@example.test"
    assert html.message["X-MNS-Message-Id"] == published.message_id
    assert html.message["X-MNS-Topic-Name"] == "mailtopic"
    assert html.message.get_content_type() == "text/html"
    assert html.message.get_content().strip() == "<b>hi</b>"
    plain = by_subject[DEFAULT_SUBJECT]
    assert plain.mail_from == GATEWAY_SENDER
    assert plain.message.get_content().strip() == "plain words"


def test_a_transient_refusal_is_retried_by_the_gateway(
    mail_gateway: tuple[RunningGateway, Relay],
) -> None:
    gateway, relay = mail_gateway
    relay.mailbox.rcpt_replies["later@example.test"] = ["451 4.3.0 greylisted", "421 4.3.2 busy"]
    topic = _mail_topic(gateway, "greylisted", "later@example.test")

    topic.publish_message(TopicMessage("eventually"))

    (mail,) = relay.mailbox.wait_for(1, to="later@example.test")
    assert mail.message.get_content().strip() == "eventually"
    assert relay.mailbox.rcpt_replies["later@example.test"] == []


def test_a_traced_attempt_puts_its_trace_context_in_the_mail(relay: Relay) -> None:
    """With tracing on, the attempt's span (current on the pushing thread) is in the mail's
    ``traceparent`` header; off, the mail has none (as before)."""
    from opentelemetry.sdk.trace import TracerProvider

    from gateway.observability.otel import OtelTracing
    from gateway.observability.tracing import SpanKind

    tracing = OtelTracing(TracerProvider())
    traced = MailSender(
        SmtpSettings("127.0.0.1", relay.port), mail_from=GATEWAY_SENDER, tracing=tracing
    )
    plain = MailSender(SmtpSettings("127.0.0.1", relay.port), mail_from=GATEWAY_SENDER)
    span = tracing.start("push mailsub", SpanKind.CLIENT, activate=True)
    try:
        assert traced.send(delivery(message_id="T1")).ok
    finally:
        span.end()
    assert plain.send(delivery(message_id="P1")).ok
    traced.close()
    plain.close()
    first, second = relay.mailbox.wait_for(2)
    assert first.message["traceparent"] == span.carrier()["traceparent"]
    assert second.message["traceparent"] is None
