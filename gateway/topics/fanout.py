"""Which subscriptions receive a published message, and whether it fits its topic: pure rules."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.protocol.endpoints import SMS_ANONYMOUS, SMS_PREFIX
from gateway.protocol.properties import size_error
from gateway.topics.direct import SmsType, sms_type_of
from gateway.topics.records import Subscription, Topic, TopicMessage


def accepts(subscription: Subscription, message_tag: str | None) -> bool:
    """A subscription without a FilterTag takes every message; one with a tag, only equal tags."""
    return subscription.filter_tag is None or subscription.filter_tag == message_tag


def for_phone_endpoint(subscription: Subscription) -> bool:
    """``sms:directsms:{phone}``: an SmsEndpoint naming its one receiver."""
    endpoint = subscription.endpoint
    return endpoint.startswith(SMS_PREFIX) and endpoint != SMS_ANONYMOUS


def matching_subscriptions(
    subscriptions: Iterable[Subscription], message: TopicMessage
) -> list[Subscription]:
    """The FilterTag rule, and DirectSMS's: a ``multiContent`` message (parameters per phone
    number) is processed only by ``sms:directsms:anonymous`` subscriptions, so a subscription
    to one phone number does not receive it (docs/delivery.md#sms-endpoints)."""
    matching = [sub for sub in subscriptions if accepts(sub, message.tag)]
    if sms_type_of(message.attributes) is SmsType.MULTI:
        matching = [sub for sub in matching if not for_phone_endpoint(sub)]
    return matching


def check_size(topic: Topic, message: TopicMessage) -> None:
    """400 ``InvalidArgument`` for a body over the topic's MaximumMessageSize (UTF-8 bytes, its
    UserProperties included: docs/protocol.md#message-properties)."""
    body_bytes = len(message.body.encode("utf-8"))
    if error := size_error(body_bytes, message.attributes, topic.maximum_message_size):
        raise error
