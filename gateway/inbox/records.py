"""Inbox entries: one per text message or mail, carrying what the provider would have been given
plus where it came from (MessageId, topic, subscription), and the filters that read them.

Entries are stored as the JSON document the API answers with, so what ``GET /dev/inbox/sms``
returns is exactly what was decided at delivery time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from gateway.errors.mns import MNSError

if TYPE_CHECKING:
    from gateway.delivery.directmail import OutgoingMail
    from gateway.delivery.records import DeliveryJob
    from gateway.delivery.sms import OutgoingSms

DEFAULT_LIMIT: Final = 1000


class InboxKind(StrEnum):
    SMS = "sms"
    MAIL = "mail"


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """One stored entry; ``document`` is its JSON (see :func:`sms_entries`, :func:`mail_entry`)."""

    id: str
    kind: InboxKind
    recipient: str
    topic_name: str
    subscription_name: str
    message_id: str
    stored_at_ms: int
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class InboxQuery:
    """Which entries to read: all the given filters hold (time bounds in epoch ms, inclusive)."""

    recipient: str | None = None
    topic_name: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    limit: int = DEFAULT_LIMIT


def _origin(job: DeliveryJob, entry_id: str, now_ms: int) -> dict[str, Any]:
    message = job.message
    return {
        "Id": entry_id,
        "Time": now_ms,
        "MessageId": message.id,
        "TopicName": message.topic_name,
        "SubscriptionName": job.subscription.name,
        "Endpoint": job.subscription.endpoint,
        "MessageTag": message.tag,
        "PublishTime": message.publish_time_ms,
    }


def _entry(
    kind: InboxKind, job: DeliveryJob, number: int, recipient: str, now_ms: int, **fields: Any
) -> InboxEntry:
    """Entry ids derive from the delivery, so storing the same delivery twice (a lease that
    lapsed mid-attempt) keeps one copy."""
    entry_id = f"{job.delivery_id}.{number}"
    document = {**_origin(job, entry_id, now_ms), **fields}
    return InboxEntry(
        entry_id,
        kind,
        recipient,
        job.message.topic_name,
        job.subscription.name,
        job.message.id,
        now_ms,
        document,
    )


def sms_entries(job: DeliveryJob, sms: OutgoingSms, now_ms: int) -> list[InboxEntry]:
    """One entry per phone number, with the SMS API's names for what it would have been sent."""
    return [
        _entry(
            InboxKind.SMS,
            job,
            number,
            message.phone_number,
            now_ms,
            PhoneNumber=message.phone_number,
            SignName=message.sign_name,
            TemplateCode=message.template_code,
            TemplateParam=dict(message.template_param),
            Type=sms.type.value,
        )
        for number, message in enumerate(sms.messages)
    ]


def mail_entry(job: DeliveryJob, mail: OutgoingMail, now_ms: int) -> InboxEntry:
    """The mail's envelope and content as composed for the SMTP relay."""
    return _entry(
        InboxKind.MAIL,
        job,
        0,
        mail.recipient,
        now_ms,
        From=mail.sender,
        To=mail.recipient,
        Subject=mail.direct.subject,
        Body=mail.body,
        IsHtml=mail.direct.is_html,
        ReplyTo=mail.sender if mail.direct.reply_to_sender else None,
    )


# reading ----------------------------------------------------------------------------------------
def parse_time_ms(value: str, name: str) -> int:
    """A time filter: epoch milliseconds, or ISO 8601 (a time without a zone is UTC)."""
    text = value.strip()
    if text.isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise MNSError(
            "InvalidArgument", f"{name} must be epoch milliseconds or an ISO 8601 time."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def query_from(params: Mapping[str, str]) -> InboxQuery:
    """``recipient``, ``topic``, ``since``, ``until`` and ``limit`` (1-1000) as given in a query
    string or on the command line; empty values are no filter."""
    try:
        limit = int(params.get("limit") or DEFAULT_LIMIT)
    except ValueError:
        raise MNSError("InvalidArgument", "limit must be an integer.") from None
    if not 1 <= limit <= DEFAULT_LIMIT:
        raise MNSError(
            "InvalidArgument", f"The value of limit should between 1 and {DEFAULT_LIMIT}."
        )
    since, until = params.get("since"), params.get("until")
    return InboxQuery(
        recipient=params.get("recipient") or None,
        topic_name=params.get("topic") or None,
        since_ms=parse_time_ms(since, "since") if since else None,
        until_ms=parse_time_ms(until, "until") if until else None,
        limit=limit,
    )
