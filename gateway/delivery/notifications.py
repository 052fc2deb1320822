"""The notification a delivery carries, as its endpoint gets it: pure.

An HTTP endpoint gets it signed (:mod:`gateway.pushing.senders`); a queue gets it as a message
body (:mod:`gateway.pushing.queue_bridge`, and a subscription's dead-letter queue:
:mod:`gateway.delivery.dead_letter_pushes`).
"""

from __future__ import annotations

from gateway.delivery.formats import PushNotification, render
from gateway.delivery.records import DeliveryJob


def notification_of(job: DeliveryJob, account_id: str) -> PushNotification:
    message, subscription = job.message, job.subscription
    return PushNotification(
        topic_owner=account_id,
        topic_name=message.topic_name,
        subscriber=account_id,
        subscription_name=subscription.name,
        message_id=message.id,
        message=message.body,
        message_md5=message.body_md5,
        message_tag=message.tag,
        publish_time_ms=message.publish_time_ms,
    )


def queue_message_body(job: DeliveryJob, account_id: str) -> str:
    """What a queue receives for a push, per NotifyContentFormat: the XML or JSON notification
    (MessageTag included when the message has one), or the body alone (SIMPLIFIED)."""
    fmt = job.subscription.notify_content_format
    return render(notification_of(job, account_id), fmt).body.decode("utf-8")
