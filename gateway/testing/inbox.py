"""The inbox of an embedded gateway, read over ``/dev/inbox`` (docs/delivery.md#the-inbox): the SMS
and mail it would have sent, as typed entries, with waits for deliveries still on their way."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Self, TypeVar

from gateway.cli.admin_client import AdminClient

DEFAULT_WAIT = 10.0
_POLL_SECONDS = 0.05
Moment = datetime | int | str
E = TypeVar("E", bound="_Entry")

#: Where every entry came from and when: attribute name -> its key in the JSON.
_ORIGIN: Mapping[str, str] = {
    "message_id": "MessageId",
    "topic_name": "TopicName",
    "subscription_name": "SubscriptionName",
    "time_ms": "Time",
}


@dataclass(frozen=True, kw_only=True)
class _Entry:
    """What SMS and mail entries share: the inbox they are read from, where they came from, and
    their JSON (``raw``, as ``GET /dev/inbox/...`` answers it)."""

    #: ``sms`` or ``mail``: the path under ``/dev/inbox/``.
    kind: ClassVar[str]
    #: The entry's own attributes -> their keys in the JSON.
    content: ClassVar[Mapping[str, str]]

    message_id: str
    topic_name: str
    subscription_name: str
    time_ms: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Self:
        names = {**cls.content, **_ORIGIN}
        return cls(raw=raw, **{attribute: raw[key] for attribute, key in names.items()})


@dataclass(frozen=True, kw_only=True)
class SmsEntry(_Entry):
    """One text message the gateway would have sent."""

    kind: ClassVar[str] = "sms"
    content: ClassVar[Mapping[str, str]] = {
        "phone_number": "PhoneNumber",
        "sign_name": "SignName",
        "template_code": "TemplateCode",
        "template_param": "TemplateParam",
        "type": "Type",
    }

    phone_number: str
    sign_name: str
    template_code: str
    template_param: dict[str, Any]
    type: str


@dataclass(frozen=True, kw_only=True)
class MailEntry(_Entry):
    """One mail the gateway would have sent (``sender`` is its From)."""

    kind: ClassVar[str] = "mail"
    content: ClassVar[Mapping[str, str]] = {
        "sender": "From",
        "to": "To",
        "subject": "Subject",
        "body": "Body",
        "is_html": "IsHtml",
        "reply_to": "ReplyTo",
    }

    sender: str
    to: str
    subject: str
    body: str
    is_html: bool
    reply_to: str | None


def _moment(value: Moment) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


class Inbox:
    """``sms()`` and ``mail()`` read what is there now, oldest first, filtered by recipient (a
    phone number or an address), topic and time (a datetime, epoch ms or ISO 8601);
    ``wait_for_sms()`` and ``wait_for_mail()`` wait until at least ``count`` match."""

    def __init__(self, client: AdminClient) -> None:
        self._client = client

    def _read(
        self,
        entry: type[E],
        recipient: str | None,
        topic: str | None,
        since: Moment | None,
        until: Moment | None,
    ) -> list[E]:
        filters = {"recipient": recipient, "topic": topic, "since": since, "until": until}
        query = {name: _moment(value) for name, value in filters.items() if value is not None}
        answer = self._client.call("GET", f"/dev/inbox/{entry.kind}", query)
        return [entry.from_json(raw) for raw in answer["Messages"]]

    def sms(
        self,
        *,
        recipient: str | None = None,
        topic: str | None = None,
        since: Moment | None = None,
        until: Moment | None = None,
    ) -> list[SmsEntry]:
        return self._read(SmsEntry, recipient, topic, since, until)

    def mail(
        self,
        *,
        recipient: str | None = None,
        topic: str | None = None,
        since: Moment | None = None,
        until: Moment | None = None,
    ) -> list[MailEntry]:
        return self._read(MailEntry, recipient, topic, since, until)

    def wait_for_sms(
        self, count: int = 1, *, timeout: float = DEFAULT_WAIT, **filters: Any
    ) -> list[SmsEntry]:
        return _wait(lambda: self.sms(**filters), count, timeout, "SMS")

    def wait_for_mail(
        self, count: int = 1, *, timeout: float = DEFAULT_WAIT, **filters: Any
    ) -> list[MailEntry]:
        return _wait(lambda: self.mail(**filters), count, timeout, "mails")

    def clear(self) -> None:
        """Empty both inboxes."""
        for entry in (SmsEntry, MailEntry):
            self._client.call("DELETE", f"/dev/inbox/{entry.kind}")


def _wait(read: Callable[[], list[E]], count: int, timeout: float, what: str) -> list[E]:
    deadline = time.monotonic() + timeout
    while True:
        entries = read()
        if len(entries) >= count:
            return entries
        if time.monotonic() >= deadline:
            raise AssertionError(f"{len(entries)} of {count} {what} arrived within {timeout:g} s")
        time.sleep(_POLL_SECONDS)
