"""What a ``mail:directmail:{address}`` subscription means and the mail composed for it.

The endpoint names the recipient; the publisher's ``DirectMail`` message attribute
(docs/protocol.md#publishing) picks the subject, the sender, HTML or plain text and the Reply-To.
Turning a delivery into that mail is kept here, pure and free of IO, apart from the SMTP shell in
:mod:`gateway.pushing.mail` that sends it, so what a publisher gets can be decided and tested
without a relay.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import formatdate
from typing import Final

from gateway.delivery.records import DeliveryJob
from gateway.errors import PermanentDeliveryError
from gateway.errors.mns import MNSError
from gateway.protocol.endpoints import MailEndpoint, parse_endpoint
from gateway.topics.direct import (
    ADDRESS,
    DIRECT_MAIL,
    DirectMail,
    direct_attribute,
    parse_direct_mail,
)

__all__ = ["ADDRESS", "DEFAULT_SUBJECT", "OutgoingMail", "direct_mail_of", "prepare_mail"]

DEFAULT_SUBJECT: Final = "MNS message"
_MAIL_POLICY: Final = SMTP.clone(cte_type="7bit")


@dataclass(frozen=True, slots=True)
class OutgoingMail:
    """A composed mail and its envelope, with what it was composed from (what the inbox
    keeps: docs/delivery.md#the-inbox)."""

    sender: str
    recipient: str
    message: EmailMessage
    direct: DirectMail
    body: str


def _recipient_of(job: DeliveryJob) -> str:
    try:
        endpoint = parse_endpoint(job.subscription.endpoint)
    except MNSError as exc:
        raise PermanentDeliveryError(f"not a mail endpoint: {job.subscription.endpoint}") from exc
    if not isinstance(endpoint, MailEndpoint):
        raise PermanentDeliveryError(f"not a mail endpoint: {job.subscription.endpoint}")
    return endpoint.address


def direct_mail_of(job: DeliveryJob, default_sender: str) -> DirectMail:
    """The message's DirectMail; without one, plain text from ``default_sender`` under
    :data:`DEFAULT_SUBJECT` (docs/delivery.md#mail-endpoints)."""
    raw = direct_attribute(job.message.attributes, DIRECT_MAIL)
    if raw is None:
        return DirectMail(account_name=default_sender, subject=DEFAULT_SUBJECT)
    try:
        return parse_direct_mail(raw)
    except MNSError as exc:  # stored before PublishMessage checked it
        raise PermanentDeliveryError(exc.message) from exc


def prepare_mail(job: DeliveryJob, default_sender: str) -> OutgoingMail:
    """The mail for one delivery. Raises :class:`PermanentDeliveryError` for a message that can
    never be mailed (malformed DirectMail, no usable sender, a line break in the subject)."""
    direct = direct_mail_of(job, default_sender)
    recipient = _recipient_of(job)
    sender = direct.account_name
    if not ADDRESS.fullmatch(sender):
        raise PermanentDeliveryError(
            f"no usable sender address ({sender!r}): set DirectMail AccountName "
            "or MNS_GATEWAY_MAIL_FROM"
        )
    try:
        mail = _compose(job, direct, sender, recipient)
    except ValueError as exc:  # the email package refuses header values that would inject
        raise PermanentDeliveryError(f"cannot compose the mail: {exc}") from exc
    return OutgoingMail(sender, recipient, mail, direct, job.message.body)


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
