"""The ``Data`` of the control plane's answers, from the store's records: pure, no IO.

Field names and types are those of ``alibabacloud-mns-open20220119``'s response models (what
the Terraform provider reads too): times in epoch seconds, booleans as JSON booleans,
``DlqPolicy.MaxReceiveCount`` as text, tags as ``[{TagKey, TagValue}]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from gateway.queues.dlq_policy import DeadLetterPolicy
from gateway.queues.records import MessageCounts, Queue
from gateway.store import RateLimitPolicy
from gateway.topics.records import TOPIC_MESSAGE_RETENTION_SECONDS, Subscription, Topic

#: What Create*, Set*, Delete* and Unsubscribe answer as ``Data``.
DONE: Final = {"Code": 200, "Message": "operation success", "Success": True}


def tag_list(tags: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"TagKey": key, "TagValue": value} for key, value in tags]


def dead_letter_policy(policy: DeadLetterPolicy | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    document: dict[str, Any] = {
        "DeadLetterTargetQueue": policy.target_queue,
        "Enabled": policy.enabled,
    }
    if policy.max_receive_count is not None:
        document["MaxReceiveCount"] = str(policy.max_receive_count)
    return document


def rate_limit(policy: RateLimitPolicy | None) -> dict[str, Any] | None:
    if policy is None:
        return None
    document: dict[str, Any] = {"Enabled": policy.enabled}
    if policy.max_per_second is not None:
        document["MaxReceivesPerSecond"] = policy.max_per_second
    return document


def _without_none(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if value is not None}


def queue(
    q: Queue,
    counts: MessageCounts | None,
    tags: Sequence[tuple[str, str]],
    policy: RateLimitPolicy | None,
) -> dict[str, Any]:
    """GetQueueAttributes' Data, and a ListQueue entry (with counts as the service has them)."""
    a = q.attributes
    counts = counts or MessageCounts()
    return _without_none(
        {
            "QueueName": q.name,
            "CreateTime": q.create_time,
            "LastModifyTime": q.last_modify_time,
            "DelaySeconds": a.delay_seconds,
            "MaximumMessageSize": a.maximum_message_size,
            "MessageRetentionPeriod": a.message_retention_period,
            "VisibilityTimeout": a.visibility_timeout,
            "PollingWaitSeconds": a.polling_wait_seconds,
            "ActiveMessages": counts.active,
            "InactiveMessages": counts.inactive,
            "DelayMessages": counts.delayed,
            "LoggingEnabled": a.logging_enabled,
            "QueueType": a.queue_type.value,
            "DlqPolicy": dead_letter_policy(a.dead_letter_policy),
            "TenantRateLimitPolicy": rate_limit(policy),
            "EnableSSE": False,
            "Tags": tag_list(tags),
        }
    )


def topic(
    t: Topic, message_count: int, tags: Sequence[tuple[str, str]], base_url: str
) -> dict[str, Any]:
    return {
        "TopicName": t.name,
        "CreateTime": t.create_time,
        "LastModifyTime": t.last_modify_time,
        "MaxMessageSize": t.maximum_message_size,
        "MessageRetentionPeriod": TOPIC_MESSAGE_RETENTION_SECONDS,
        "MessageCount": message_count,
        "LoggingEnabled": t.logging_enabled,
        "TopicType": "normal",
        "TopicUrl": f"{base_url}/topics/{t.name}",
        "TopicInnerUrl": f"{base_url}/topics/{t.name}",
        "EnableSSE": False,
        "Tags": tag_list(tags),
    }


def subscription(
    s: Subscription, account_id: str, policy: RateLimitPolicy | None
) -> dict[str, Any]:
    return _without_none(
        {
            "SubscriptionName": s.name,
            "TopicName": s.topic_name,
            "TopicOwner": account_id,
            "Endpoint": s.endpoint,
            "FilterTag": s.filter_tag,
            "NotifyStrategy": s.notify_strategy.value,
            "NotifyContentFormat": s.notify_content_format.value,
            "CreateTime": s.create_time,
            "LastModifyTime": s.last_modify_time,
            "DlqPolicy": dead_letter_policy(s.dead_letter_policy),
            "TenantRateLimitPolicy": rate_limit(policy),
        }
    )
