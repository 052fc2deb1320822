"""What a ``mail:directmail:{address}`` subscription means and the mail composed for it.

The endpoint names the recipient; the publisher's ``DirectMail`` message attribute
(docs/protocol.md#publishing) picks the subject, the sender, HTML or plain text and the Reply-To.
Turning a delivery into that mail is kept here, pure and free of IO, apart from the SMTP shell in
:mod:`gateway.delivery.mail` that sends it, so what a publisher gets can be decided and tested
without a relay.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate
from typing import Any, Final

from gateway.delivery.records import DeliveryJob
from gateway.delivery.senders import PermanentDeliveryError
from gateway.protocol.endpoints import MailEndpoint, parse_endpoint
from gateway.protocol.errors import MNSError

DEFAULT_SUBJECT: Final = "MNS message"
#: A sender must be a bare address: it becomes the envelope sender and the From header, so
#: anything else (a display name, a line break smuggling in headers) is refused up front.
ADDRESS: Final = re.compile(r"[^@\s<>,;:\"]+@[^@\s<>,;:\"]+\.[^@\s<>,;:\"]+")
_TRUE_FLAGS: Final = frozenset({"1", "true"})
_MAIL_POLICY: Final = SMTP.clone(cte_type="7bit")


@dataclass(frozen=True, slots=True)
class DirectMail:
    """The ``DirectMail`` attribute's fields that matter over SMTP.

    ``AddressType`` is accepted and ignored: it chooses among DirectMail's own sender accounts.
    """

    account_name: str = ""
    subject: str = DEFAULT_SUBJECT
    is_html: bool = False
    reply_to_sender: bool = False


def _flag(value: object) -> bool:
    """MNS documents these as 0/1 numbers or booleans; publishers also send "1" or "true".
    ``bool("0")`` would be true, so strings are compared, not cast."""
    return str(value).strip().lower() in _TRUE_FLAGS


def _text_field(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PermanentDeliveryError(f"DirectMail {name} must be a string, got {value!r}")
    return value.strip()


def parse_direct_mail(raw: str | None) -> DirectMail:
    """The ``DirectMail`` JSON as published; ``None`` (no attribute) gives the defaults."""
    if raw is None:
        return DirectMail()
    try:
        fields = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise PermanentDeliveryError(f"DirectMail is not valid JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise PermanentDeliveryError("DirectMail must be a JSON object")
    return DirectMail(
        account_name=_text_field(fields, "AccountName"),
        subject=_text_field(fields, "Subject") or DEFAULT_SUBJECT,
        is_html=_flag(fields.get("IsHtml")),
        reply_to_sender=_flag(fields.get("ReplyToAddress")),
    )


@dataclass(frozen=True, slots=True)
class OutgoingMail:
    """A composed mail and its envelope."""

    sender: str
    recipient: str
    message: EmailMessage


def _recipient_of(job: DeliveryJob) -> str:
    try:
        endpoint = parse_endpoint(job.subscription.endpoint)
    except MNSError as exc:
        raise PermanentDeliveryError(f"not a mail endpoint: {job.subscription.endpoint}") from exc
    if not isinstance(endpoint, MailEndpoint):
        raise PermanentDeliveryError(f"not a mail endpoint: {job.subscription.endpoint}")
    return endpoint.address


def _direct_mail_of(job: DeliveryJob) -> DirectMail:
    attributes = job.message.attributes.get("MessageAttributes") or {}
    return parse_direct_mail(attributes.get("DirectMail"))


def prepare_mail(job: DeliveryJob, default_sender: str) -> OutgoingMail:
    """The mail for one delivery. Raises :class:`PermanentDeliveryError` for a message that can
    never be mailed (malformed DirectMail, no usable sender, a line break in the subject)."""
    direct = _direct_mail_of(job)
    recipient = _recipient_of(job)
    sender = direct.account_name or default_sender
    if not ADDRESS.fullmatch(sender):
        raise PermanentDeliveryError(
            f"no usable sender address ({sender!r}): set DirectMail AccountName "
            "or MNS_GATEWAY_MAIL_FROM"
        )
    try:
        mail = _compose(job, direct, sender, recipient)
    except ValueError as exc:  # the email package refuses header values that would inject
        raise PermanentDeliveryError(f"cannot compose the mail: {exc}") from exc
    return OutgoingMail(sender, recipient, mail)


def _compose(job: DeliveryJob, direct: DirectMail, sender: str, recipient: str) -> EmailMessage:
    """``Date`` is the publish time and ``Message-ID`` derives from the message and the
    subscription, so a mail sent again after an unrecorded success is recognisably the same.
    Bodies are 7-bit encoded (quoted-printable or base64 when needed): not every relay
    accepts 8BITMIME."""
    message, subscription = job.message, job.subscription
    mail = EmailMessage(policy=_MAIL_POLICY)
    mail["Subject"] = direct.subject
    mail["From"] = sender
    mail["To"] = recipient
    if direct.reply_to_sender:
        mail["Reply-To"] = sender
    mail["Date"] = formatdate(message.publish_time_ms / 1000, usegmt=True)
    mail["Message-ID"] = f"<{message.id}.{subscription.name}@{sender.rsplit('@', 1)[1]}>"
    mail["X-MNS-Message-Id"] = message.id
    mail["X-MNS-Topic-Name"] = message.topic_name
    mail["X-MNS-Subscription-Name"] = subscription.name
    if message.tag:
        mail["X-MNS-Message-Tag"] = message.tag
    mail.set_content(message.body, subtype="html" if direct.is_html else "plain")
    return mail
