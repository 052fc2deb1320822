"""The calls the Terraform provider (terraform-provider-alicloud) makes for
``alicloud_message_service_queue``, ``_topic`` and ``_subscription``, in its order and with its
parameters, replayed with the classic signature and every parameter in the form body, as its
``client.RpcPost("Mns-open", "2022-01-19", action, query, request, true)`` sends them.

Taken from the provider's ``resource_alicloud_message_service_{queue,topic,subscription}.go`` and
``service_alicloud_message_service_v2.go``: Create then Read; Update (Set*Attributes, then
``SetResourceTags``: UntagResources of the removed or changed keys, TagResources of the added or
changed ones, ``ResourceId`` as a one-item list), then Read; import is a Read by id; Delete, where
not found is success, then the Read that must say not found. A resource without a ``dlq_policy``
block sends ``DlqPolicy={}``. The provider retries a call that failed with a retryable error, so
every create and delete is sent twice here: the second must succeed and change nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from aliyunsdkcore.acs_exception.exceptions import ServerException

from tests.conftest import RunningGateway
from tests.gateway.api.control.clients import REGION, Classic


@pytest.fixture()
def provider(control_gateway: RunningGateway) -> Classic:
    return Classic(control_gateway.port)


def tags_to_map(tags: Any) -> dict[str, str]:
    """The provider's ``tagsToMap`` over ``Data.Tags``."""
    return {tag["TagKey"]: tag["TagValue"] for tag in tags or []}


def set_resource_tags(
    provider: Classic, kind: str, resource_id: str, old: dict[str, str], new: dict[str, str]
) -> None:
    """``MessageServiceServiceV2.SetResourceTags``: removed and changed keys untagged, added
    and changed ones tagged."""
    removed = [k for k in old if k not in new or old[k] != new[k]]
    added = {k: v for k, v in new.items() if k not in old or old[k] != v}
    if removed:
        request: dict[str, Any] = {"RegionId": REGION, "ResourceType": kind}
        request.update({f"TagKey.{i}": key for i, key in enumerate(removed, 1)})
        provider.common("UntagResources", {**request, "ResourceId.1": resource_id})
    if added:
        request = {"RegionId": REGION, "ResourceType": kind}
        for i, (key, value) in enumerate(added.items(), 1):
            request[f"Tag.{i}.Key"], request[f"Tag.{i}.Value"] = key, value
        provider.common("TagResources", {**request, "ResourceId.1": resource_id})


def not_found(provider: Classic, action: str, params: dict[str, str]) -> str:
    with pytest.raises(ServerException) as caught:
        provider.common(action, params)
    assert caught.value.http_status == 404
    return caught.value.error_code


def test_queue_lifecycle(provider: Classic, unique: str) -> None:
    name, dlq = f"{unique}-q", f"{unique}-dlq"
    provider.common("CreateQueue", {"QueueName": dlq, "EnableLogging": "false", "DlqPolicy": "{}"})
    create = {
        "QueueName": name,
        "MessageRetentionPeriod": "86400",
        "PollingWaitSeconds": "5",
        "VisibilityTimeout": "30",
        "DelaySeconds": "0",
        "MaximumMessageSize": "4096",
        "EnableLogging": "false",
        "QueueType": "normal",
        "Tag.1.Key": "env",
        "Tag.1.Value": "dev",
        "Tag.2.Key": "team",
        "Tag.2.Value": "a",
        "DlqPolicy": "{}",
    }
    provider.common("CreateQueue", create)
    provider.common("CreateQueue", create)  # retried
    read = {"QueueName": name, "RegionId": REGION}
    data = provider.common("GetQueueAttributes", read)["Data"]
    assert (data["QueueName"], data["MessageRetentionPeriod"], data["PollingWaitSeconds"]) == (
        name,
        86400,
        5,
    )
    assert (data["MaximumMessageSize"], data["QueueType"], data["LoggingEnabled"]) == (
        4096,
        "normal",
        False,
    )
    assert data.get("DlqPolicy") is None and isinstance(data["CreateTime"], int)
    assert tags_to_map(data["Tags"]) == {"env": "dev", "team": "a"}

    # terraform apply with visibility_timeout = 60, a dlq_policy block and new tags
    provider.common(
        "SetQueueAttributes",
        {
            "QueueName": name,
            "VisibilityTimeout": "60",
            "EnableLogging": "false",
            "DlqPolicy": f'{{"Enabled":true,"DeadLetterTargetQueue":"{dlq}","MaxReceiveCount":5}}',
        },
    )
    new_tags = {"env": "prod", "owner": "ops"}
    set_resource_tags(provider, "queue", name, tags_to_map(data["Tags"]), new_tags)
    data = provider.common("GetQueueAttributes", read)["Data"]
    assert data["VisibilityTimeout"] == 60
    assert data["DlqPolicy"] == {
        "DeadLetterTargetQueue": dlq,
        "Enabled": True,
        "MaxReceiveCount": "5",
    }
    assert tags_to_map(data["Tags"]) == new_tags

    # terraform import alicloud_message_service_queue.q <name>: a Read by id
    imported = provider.common("GetQueueAttributes", {"QueueName": name, "RegionId": REGION})
    assert imported["Data"] == data

    provider.common("DeleteQueue", {"QueueName": name})
    provider.common("DeleteQueue", {"QueueName": name})  # retried
    assert not_found(provider, "GetQueueAttributes", read) == "QueueNotExist"
    # Tags went with the queue: a queue of the same name starts without them.
    provider.common("CreateQueue", {"QueueName": name, "DlqPolicy": "{}"})
    assert provider.common("GetQueueAttributes", read)["Data"]["Tags"] == []


def test_topic_lifecycle(provider: Classic, unique: str) -> None:
    name = f"{unique}-t"
    create = {
        "TopicName": name,
        "EnableLogging": "true",
        "MaxMessageSize": "65536",
        "Tag.1.Key": "env",
        "Tag.1.Value": "dev",
    }
    provider.common("CreateTopic", create)
    provider.common("CreateTopic", create)  # retried
    data = provider.common("GetTopicAttributes", {"TopicName": name})["Data"]
    assert (data["TopicName"], data["LoggingEnabled"], data["MaxMessageSize"]) == (
        name,
        True,
        65536,
    )
    assert data["TopicType"] == "normal" and tags_to_map(data["Tags"]) == {"env": "dev"}
    provider.common(
        "SetTopicAttributes",
        {"TopicName": name, "EnableLogging": "false", "MaxMessageSize": "1024"},
    )
    set_resource_tags(provider, "topic", name, {"env": "dev"}, {"env": "dev", "cost": "7"})
    data = provider.common("GetTopicAttributes", {"TopicName": name})["Data"]
    assert (data["LoggingEnabled"], data["MaxMessageSize"]) == (False, 1024)
    assert tags_to_map(data["Tags"]) == {"env": "dev", "cost": "7"}
    assert provider.common("GetTopicAttributes", {"TopicName": name})["Data"] == data  # import
    provider.common("DeleteTopic", {"TopicName": name})
    provider.common("DeleteTopic", {"TopicName": name})  # retried
    assert not_found(provider, "GetTopicAttributes", {"TopicName": name}) == "TopicNotExist"


def test_subscription_lifecycle(provider: Classic, unique: str) -> None:
    topic, dlq = f"{unique}-t", f"{unique}-dlq"
    provider.common("CreateTopic", {"TopicName": topic, "EnableLogging": "false"})
    provider.common("CreateQueue", {"QueueName": dlq, "DlqPolicy": "{}"})
    create = {
        "TopicName": topic,
        "SubscriptionName": "orders",
        "NotifyStrategy": "BACKOFF_RETRY",
        "NotifyContentFormat": "XML",
        "MessageTag": "paid",
        "Endpoint": "http://127.0.0.1:9/hook",
        "PushType": "http",
        "DlqPolicy": "{}",
    }
    provider.common("Subscribe", create)
    provider.common("Subscribe", create)  # retried
    resource_id = f"{topic}:orders"  # the provider's id; Read splits it on ":"
    topic_name, subscription_name = resource_id.split(":")
    read = {"SubscriptionName": subscription_name, "TopicName": topic_name, "RegionId": REGION}
    data = provider.common("GetSubscriptionAttributes", read)["Data"]
    assert (data["Endpoint"], data["FilterTag"], data["NotifyStrategy"]) == (
        "http://127.0.0.1:9/hook",
        "paid",
        "BACKOFF_RETRY",
    )
    assert (data["NotifyContentFormat"], data["TopicName"]) == ("XML", topic)
    provider.common(
        "SetSubscriptionAttributes",
        {
            "TopicName": topic,
            "SubscriptionName": "orders",
            "NotifyStrategy": "EXPONENTIAL_DECAY_RETRY",
            "DlqPolicy": f'{{"Enabled":true,"DeadLetterTargetQueue":"{dlq}"}}',
        },
    )
    data = provider.common("GetSubscriptionAttributes", read)["Data"]
    assert data["NotifyStrategy"] == "EXPONENTIAL_DECAY_RETRY"
    assert data["DlqPolicy"] == {"DeadLetterTargetQueue": dlq, "Enabled": True}
    # dlq_policy { enabled = false }: the provider sends Enabled alone
    provider.common(
        "SetSubscriptionAttributes",
        {"TopicName": topic, "SubscriptionName": "orders", "DlqPolicy": '{"Enabled":false}'},
    )
    data = provider.common("GetSubscriptionAttributes", read)["Data"]
    assert data["DlqPolicy"] == {"DeadLetterTargetQueue": dlq, "Enabled": False}
    provider.common("Unsubscribe", {"SubscriptionName": "orders", "TopicName": topic})
    provider.common("Unsubscribe", {"SubscriptionName": "orders", "TopicName": topic})  # retried
    assert not_found(provider, "GetSubscriptionAttributes", read) == "SubscriptionNotExist"
