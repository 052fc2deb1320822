"""What a subscription's dead-letter queue receives for a push whose retries ran out: the push
as its queue would have received it (the notification in the subscription's
NotifyContentFormat, or the body alone for SIMPLIFIED), the message's MessageGroupId,
UserProperties and SystemProperties, and the DLQ system properties naming the subscription
(docs/delivery.md#subscription-dead-letter-queues). Pure: no IO, no clock."""

from __future__ import annotations

from gateway.delivery.notifications import queue_message_body
from gateway.delivery.records import DeliveryJob
from gateway.protocol.properties import carried_properties
from gateway.queues import dlq_policy as dead_letters
from gateway.queues.records import NewMessage


def dead_letter_message(job: DeliveryJob, *, region: str, account_id: str) -> NewMessage:
    message, subscription = job.message, job.subscription
    try:
        body = queue_message_body(job, account_id)
    except ValueError:  # a body no format can carry: the dead-letter queue gets it as it is
        body = message.body
    properties = dead_letters.dead_lettered_properties(
        carried_properties(message.attributes),
        kind=dead_letters.FROM_SUBSCRIPTION,
        source_arn=dead_letters.subscription_arn(
            region, account_id, message.topic_name, subscription.name
        ),
        origin_message_id=message.id,
    )
    return NewMessage(body, properties=properties)
