"""Which sender takes the ``mail`` and ``sms`` routes, from configuration
(docs/delivery.md#sms-providers):

- ``MNS_GATEWAY_INBOX=1``: the inbox takes both; nothing is sent.
- mail: SMTP to ``MNS_GATEWAY_SMTP_URL`` when it is set.
- SMS: ``MNS_GATEWAY_SMS_PROVIDER=aliyun`` (the Alibaba Cloud SMS API) or ``webhook``.

A route without a sender dead-letters its deliveries, saying that nothing is configured.
"""

from __future__ import annotations

from gateway.config.settings import Settings
from gateway.errors.delivery import SmsConfigError
from gateway.inbox.records import InboxKind
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.pushing.inbox_sender import InboxSender
from gateway.pushing.mail import MailSender
from gateway.pushing.senders import Sender
from gateway.pushing.sms_providers import AliyunSmsSender, WebhookSmsSender
from gateway.pushing.transport import PushTransport
from gateway.store.inbox import InboxStore

SMS_PROVIDERS = ("aliyun", "webhook")


def sms_sender(
    settings: Settings, transport: PushTransport, tracing: Tracing = NO_TRACING
) -> Sender | None:
    provider = settings.sms_provider
    if provider == "aliyun":
        return AliyunSmsSender(
            transport,
            endpoint=settings.sms_endpoint,
            access_key_id=settings.sms_access_key_id,
            access_key_secret=settings.sms_access_key_secret,
            timeout=settings.push_timeout,
        )
    if provider == "webhook":
        return WebhookSmsSender(
            transport,
            url=settings.sms_webhook_url,
            secret=settings.sms_webhook_secret,
            timeout=settings.push_timeout,
            tracing=tracing,
        )
    if provider:
        raise SmsConfigError(
            f"MNS_GATEWAY_SMS_PROVIDER must be one of {', '.join(SMS_PROVIDERS)}, got {provider!r}"
        )
    return None


def message_senders(
    settings: Settings, inbox: InboxStore, transport: PushTransport, tracing: Tracing = NO_TRACING
) -> dict[str, Sender]:
    """Senders for the ``mail`` and ``sms`` routes, by route kind. The SMS provider's settings
    are checked even when the inbox takes its place, so a typo fails at start-up either way."""
    sms = sms_sender(settings, transport, tracing)
    if settings.inbox:
        return {
            "mail": InboxSender(inbox, InboxKind.MAIL, mail_from=settings.mail_from),
            "sms": InboxSender(inbox, InboxKind.SMS),
        }
    senders: dict[str, Sender] = {}
    if settings.smtp_url:
        senders["mail"] = MailSender.from_settings(settings, tracing=tracing)
    if sms is not None:
        senders["sms"] = sms
    return senders
