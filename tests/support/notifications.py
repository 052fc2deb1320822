"""One push notification to sign, render or send: account 1234567890's topic ``orders`` to its
subscription ``billing``; the tests vary the message, its tag, id and time."""

from __future__ import annotations

from gateway.delivery.formats import PushNotification, message_md5


def billing_notification(
    message: str = "hello",
    *,
    tag: str | None = None,
    message_id: str = "MID-1",
    publish_time_ms: int = 1_700_000_000_000,
) -> PushNotification:
    return PushNotification(
        topic_owner="1234567890",
        topic_name="orders",
        subscriber="1234567890",
        subscription_name="billing",
        message_id=message_id,
        message=message,
        message_md5=message_md5(message),
        message_tag=tag,
        publish_time_ms=publish_time_ms,
    )
