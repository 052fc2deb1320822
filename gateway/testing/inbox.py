"""The inbox of an embedded gateway, read over ``/dev/inbox`` (docs/delivery.md#the-inbox): the SMS
and mail it would have sent, as typed entries, with waits for deliveries still on their way."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from gateway.admin_client import AdminClient

DEFAULT_WAIT = 10.0
_POLL_SECONDS = 0.05
Moment = datetime | int | str
E = TypeVar("E", "SmsEntry", "MailEntry")


@dataclass(frozen=True)
class SmsEntry:
    """One text message the gateway would have sent."""

    phone_number: str
    sign_name: str
    template_code: str
    template_param: dict[str, Any]
    type: str
    message_id: str
    topic_name: str
    subscription_name: str
    time_ms: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SmsEntry:
        return cls(
            raw["PhoneNumber"],
            raw["SignName"],
            raw["TemplateCode"],
            dict(raw["TemplateParam"]),
            raw["Type"],
            raw["MessageId"],
            raw["TopicName"],
            raw["SubscriptionName"],
            raw["Time"],
            raw,
        )


@dataclass(frozen=True)
class MailEntry:
    """One mail the gateway would have sent (``sender`` is its From)."""

    sender: str
    to: str
    subject: str
    body: str
    is_html: bool
    reply_to: str | None
    message_id: str
    topic_name: str
    subscription_name: str
    time_ms: int
    raw: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> MailEntry:
        return cls(
            raw["From"],
            raw["To"],
            raw["Subject"],
            raw["Body"],
            raw["IsHtml"],
            raw["ReplyTo"],
            raw["MessageId"],
            raw["TopicName"],
            raw["SubscriptionName"],
            raw["Time"],
            raw,
        )


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

    def _read(self, kind: str, filters: Mapping[str, Moment | None]) -> list[Mapping[str, Any]]:
        query = {name: _moment(value) for name, value in filters.items() if value is not None}
        return list(self._client.call("GET", f"/dev/inbox/{kind}", query)["Messages"])

    def sms(
        self,
        *,
        recipient: str | None = None,
        topic: str | None = None,
        since: Moment | None = None,
        until: Moment | None = None,
    ) -> list[SmsEntry]:
        filters = {"recipient": recipient, "topic": topic, "since": since, "until": until}
        return [SmsEntry.from_json(raw) for raw in self._read("sms", filters)]

    def mail(
        self,
        *,
        recipient: str | None = None,
        topic: str | None = None,
        since: Moment | None = None,
        until: Moment | None = None,
    ) -> list[MailEntry]:
        filters = {"recipient": recipient, "topic": topic, "since": since, "until": until}
        return [MailEntry.from_json(raw) for raw in self._read("mail", filters)]

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
        for kind in ("sms", "mail"):
            self._client.call("DELETE", f"/dev/inbox/{kind}")


def _wait(read: Callable[[], list[E]], count: int, timeout: float, what: str) -> list[E]:
    deadline = time.monotonic() + timeout
    while True:
        entries = read()
        if len(entries) >= count:
            return entries
        if time.monotonic() >= deadline:
            raise AssertionError(f"{len(entries)} of {count} {what} arrived within {timeout:g} s")
        time.sleep(_POLL_SECONDS)
