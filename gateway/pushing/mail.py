"""Mail endpoints (``mail:directmail:{address}``): the published message as an e-mail over SMTP.

The real service hands a MailEndpoint push to DirectMail. A self-hosted gateway has no
DirectMail, so it speaks SMTP to a relay the operator names in ``MNS_GATEWAY_SMTP_URL`` and
keeps everything else the publisher controls: the ``DirectMail`` message attribute
(docs/protocol.md#publishing) still picks the subject, the sender, HTML or plain text and the
Reply-To.

What the mail looks like is decided by pure functions
(:func:`~gateway.topics.direct.parse_direct_mail`,
:func:`~gateway.delivery.directmail.prepare_mail`); :class:`MailSender` is the thin IO shell
around one kept SMTP connection.
Its verdicts follow the SMTP reply classes: a 2xx is a success; a 4xx is transient and retried on
the subscription's schedule like an HTTP error (the reply code goes in ``status``); a 5xx to this
message (sender, recipient or content refused) is permanent and goes straight to the dead
letters. Failing to reach or log in to the relay is a connection error, retried: it is the
deployment that is broken, not the message, and dead letters can be replayed once it is fixed.
The mail body is the message body unchanged, the only format MNS allows for mail (SIMPLIFIED).
"""

from __future__ import annotations

import contextlib
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.message import EmailMessage
from enum import StrEnum
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from gateway.config.settings import Settings
from gateway.delivery.directmail import ADDRESS, OutgoingMail, prepare_mail
from gateway.delivery.records import DeliveryJob, PushOutcome
from gateway.errors import DeliveryError, PermanentDeliveryError
from gateway.errors.delivery import SmtpConfigError
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.pushing.transport import PushResult

#: smtplib re-raises a read timeout as SMTPServerDisconnected; how far to look for the cause.
_MAX_CAUSE_DEPTH: Final = 5

Clock = Callable[[], float]


class _RelayUnavailableError(DeliveryError):
    """The relay could not be reached, greeted or logged in to: a retryable failed attempt."""

    def __init__(self, outcome: PushOutcome, status: int | None, error: str) -> None:
        super().__init__(error)
        self.outcome = outcome
        self.status = status


class SmtpSecurity(StrEnum):
    """The URL scheme says how the connection is protected."""

    PLAIN = "smtp"
    STARTTLS = "smtp+starttls"
    TLS = "smtps"


_DEFAULT_PORTS: Final = {SmtpSecurity.PLAIN: 25, SmtpSecurity.STARTTLS: 587, SmtpSecurity.TLS: 465}


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    """Where the relay is and how to log in; the password is kept out of ``repr``."""

    host: str
    port: int
    security: SmtpSecurity = SmtpSecurity.PLAIN
    username: str = ""
    password: str = field(default="", repr=False)

    @classmethod
    def from_url(cls, url: str) -> SmtpSettings:
        """``smtp://``, ``smtps://`` or ``smtp+starttls://``, optionally ``user:password@``
        (percent-encoded). Errors never echo the URL, which may hold the password."""
        parts = urlsplit(url.strip())
        try:
            security = SmtpSecurity(parts.scheme.lower())
        except ValueError:
            raise SmtpConfigError(
                "MNS_GATEWAY_SMTP_URL must start with smtp://, smtps:// or smtp+starttls://"
            ) from None
        try:
            port = parts.port
        except ValueError:
            raise SmtpConfigError("MNS_GATEWAY_SMTP_URL has an invalid port") from None
        if not parts.hostname:
            raise SmtpConfigError("MNS_GATEWAY_SMTP_URL has no host")
        return cls(
            host=parts.hostname,
            port=port or _DEFAULT_PORTS[security],
            security=security,
            username=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
        )


class SmtpClient(Protocol):
    """The part of :class:`smtplib.SMTP` the sender uses."""

    def send_message(
        self, msg: EmailMessage, from_addr: str | None = None, to_addrs: Sequence[str] | None = None
    ) -> Any: ...

    def quit(self) -> Any: ...

    def close(self) -> None: ...


#: ``connect(settings, timeout)`` -> a connected, logged-in client.
SmtpConnect = Callable[[SmtpSettings, float], SmtpClient]


def open_smtp(
    settings: SmtpSettings,
    timeout: float,
    *,
    ssl_context: ssl.SSLContext | None = None,
    local_hostname: str | None = None,
) -> smtplib.SMTP:
    """Connect, secure and log in. ``timeout`` bounds each socket operation, not the whole.

    The EHLO name defaults to the host name: smtplib's own default is a reverse DNS lookup,
    which can stall a container for seconds.
    """
    context = ssl_context or ssl.create_default_context()
    name = local_hostname or socket.gethostname()
    client: smtplib.SMTP
    if settings.security is SmtpSecurity.TLS:
        client = smtplib.SMTP_SSL(
            settings.host, settings.port, local_hostname=name, timeout=timeout, context=context
        )
    else:
        client = smtplib.SMTP(settings.host, settings.port, local_hostname=name, timeout=timeout)
    try:
        if settings.security is SmtpSecurity.STARTTLS:
            client.starttls(context=context)
        if settings.username:
            client.login(settings.username, settings.password)
    except BaseException:
        client.close()
        raise
    return client


def _is_timeout(exc: BaseException) -> bool:
    cause: BaseException | None = exc
    for _ in range(_MAX_CAUSE_DEPTH):
        if cause is None:
            return False
        if isinstance(cause, TimeoutError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _reply_text(reply: bytes | str) -> str:
    return reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)


class MailSender:
    """Sends mail deliveries through one kept SMTP connection; thread-safe.

    Pushes come from several worker threads; they take turns on the connection under a lock
    (waiting for it counts against ``timeout``, as waiting for a pooled HTTP connection does).
    A kept connection the relay has dropped meanwhile, as relays do with idle ones, is replaced
    once within the same attempt.
    """

    def __init__(
        self,
        smtp: SmtpSettings,
        *,
        mail_from: str = "",
        connect: SmtpConnect = open_smtp,
        timeout: float = 5.0,
        clock: Clock = time.perf_counter,
        tracing: Tracing = NO_TRACING,
    ) -> None:
        if mail_from and not ADDRESS.fullmatch(mail_from):
            raise SmtpConfigError(
                f"MNS_GATEWAY_MAIL_FROM must be a bare address, got {mail_from!r}"
            )
        self.smtp = smtp
        self.mail_from = mail_from
        self.connect = connect
        self.timeout = timeout
        self.clock = clock
        self.tracing = tracing
        self._lock = threading.Lock()
        self._client: SmtpClient | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, *, connect: SmtpConnect = open_smtp, tracing: Tracing = NO_TRACING
    ) -> MailSender:
        return cls(
            SmtpSettings.from_url(settings.smtp_url),
            tracing=tracing,
            mail_from=settings.mail_from,
            connect=connect,
            timeout=settings.push_timeout,
        )

    def send(self, job: DeliveryJob) -> PushResult:
        outgoing = prepare_mail(job, self.mail_from)
        # The attempt's trace context as mail headers (W3C names; relays pass unknown headers
        # on), for a mail pipeline that traces: the attempt span is the worker's, current here.
        for name, value in self.tracing.current_carrier().items():
            outgoing.message[name] = value
        started = self.clock()
        if not self._lock.acquire(timeout=self.timeout):
            error = f"the SMTP connection stayed busy for over {self.timeout:g} s"
            return self._result(started, None, PushOutcome.TIMEOUT, error)
        try:
            return self._send_locked(outgoing, started)
        finally:
            self._lock.release()

    def close(self) -> None:
        """Say goodbye to the relay; the next send opens a new connection."""
        with self._lock:
            self._discard(polite=True)

    def _send_locked(self, outgoing: OutgoingMail, started: float) -> PushResult:
        try:
            self._transmit(outgoing)
        except _RelayUnavailableError as exc:
            return self._result(started, exc.status, exc.outcome, str(exc))
        except smtplib.SMTPRecipientsRefused as exc:
            code, reply = exc.recipients.get(outgoing.recipient, (-1, b"recipient refused"))
            return self._refused(started, code, reply)
        except smtplib.SMTPResponseException as exc:
            return self._refused(started, exc.smtp_code, exc.smtp_error)
        except smtplib.SMTPNotSupportedError as exc:  # e.g. a non-ASCII address without SMTPUTF8
            raise PermanentDeliveryError(f"the SMTP relay cannot take this mail: {exc}") from exc
        except OSError as exc:  # smtplib.SMTPException derives from OSError
            outcome = PushOutcome.TIMEOUT if _is_timeout(exc) else PushOutcome.CONNECTION_ERROR
            return self._result(started, None, outcome, f"{type(exc).__name__}: {exc}")
        return self._result(started, 250, PushOutcome.SUCCESS, None)

    def _transmit(self, outgoing: OutgoingMail) -> None:
        """Send on the kept connection, replacing it once if the relay had dropped it.

        Refusals leave the connection usable (smtplib resets the transaction); anything else
        may have left it mid-transaction, so it is dropped.
        """
        for _ in range(2):
            fresh = self._client is None
            client = self._connection()
            try:
                client.send_message(outgoing.message, outgoing.sender, [outgoing.recipient])
                return
            except (
                smtplib.SMTPResponseException,
                smtplib.SMTPRecipientsRefused,
                smtplib.SMTPNotSupportedError,
            ):
                raise
            except (smtplib.SMTPServerDisconnected, ConnectionError) as exc:
                self._discard(polite=False)
                if fresh or _is_timeout(exc):
                    raise
            except BaseException:
                self._discard(polite=False)
                raise

    def _connection(self) -> SmtpClient:
        if self._client is None:
            self._client = self._open()
        return self._client

    def _open(self) -> SmtpClient:
        where = f"SMTP relay {self.smtp.host}:{self.smtp.port}"
        try:
            return self.connect(self.smtp, self.timeout)
        except smtplib.SMTPResponseException as exc:  # greeting, EHLO, STARTTLS or AUTH refused
            reply = _reply_text(exc.smtp_error)
            error = f"{where} refused the session: {exc.smtp_code} {reply}"
            raise _RelayUnavailableError(
                PushOutcome.CONNECTION_ERROR, exc.smtp_code, error
            ) from exc
        except OSError as exc:  # refused, unreachable, TLS failure, STARTTLS/AUTH unsupported
            outcome = PushOutcome.TIMEOUT if _is_timeout(exc) else PushOutcome.CONNECTION_ERROR
            error = f"{where}: {type(exc).__name__}: {exc}"
            raise _RelayUnavailableError(outcome, None, error) from exc

    def _discard(self, *, polite: bool) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        with contextlib.suppress(OSError):  # the relay may already be gone; close regardless
            if polite:
                client.quit()
        client.close()

    def _refused(self, started: float, code: int, reply: bytes | str) -> PushResult:
        """A 5xx is final for this mail; a 4xx (or an unparseable reply) is worth retrying.
        The closest push outcome to an SMTP refusal is an HTTP endpoint's error status."""
        error = f"SMTP {code} {_reply_text(reply)}"
        if 500 <= code < 600:
            raise PermanentDeliveryError(f"the SMTP relay refused the mail: {error}")
        return self._result(started, code if code > 0 else None, PushOutcome.HTTP_ERROR, error)

    def _result(
        self, started: float, status: int | None, outcome: PushOutcome, error: str | None
    ) -> PushResult:
        return PushResult(status, outcome, error, (self.clock() - started) * 1000)
