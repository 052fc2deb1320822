"""The inbox as a sender: SMS and mail deliveries stored instead of sent.

It prepares exactly what the SMS provider or the SMTP relay would have been given (the same
:func:`~gateway.delivery.sms.prepare_sms` and :func:`~gateway.delivery.directmail.prepare_mail`),
so a message that could never be sent fails here the same way: straight to the dead letters.
Storing the entries completes the delivery in the same transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gateway.delivery.directmail import prepare_mail
from gateway.delivery.records import DeliveryJob, PushOutcome
from gateway.delivery.sms import prepare_sms
from gateway.inbox.records import InboxEntry, InboxKind, mail_entry, sms_entries
from gateway.pushing.transport import PushResult
from gateway.store.inbox import InboxStore


class InboxSender:
    """Keeps the deliveries of one endpoint kind (``sms`` or ``mail``) in the inbox."""

    def __init__(
        self,
        inbox: InboxStore,
        kind: InboxKind,
        *,
        mail_from: str = "",
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.inbox = inbox
        self.kind = kind
        self.mail_from = mail_from
        self.timer = timer

    def entries(self, job: DeliveryJob) -> list[InboxEntry]:
        now_ms = self.inbox.now_ms()
        if self.kind is InboxKind.SMS:
            return sms_entries(job, prepare_sms(job), now_ms)
        return [mail_entry(job, prepare_mail(job, self.mail_from), now_ms)]

    def send(self, job: DeliveryJob) -> PushResult:
        started = self.timer()
        self.inbox.deliver(job.delivery_id, self.entries(job))
        return PushResult(None, PushOutcome.SUCCESS, None, (self.timer() - started) * 1000)
