"""The fifteen queue, topic and subscription operations through ``aliyun-python-sdk-core`` with
``aliyun-python-sdk-mns-open``'s request classes (the classic HMAC-SHA1 signature, parameters in
the query), unchanged, on each backend."""

from __future__ import annotations

import pytest
from aliyunsdkcore.acs_exception.exceptions import ServerException
from aliyunsdkmns_open.request.v20220119 import (
    CreateQueueRequest,
    CreateTopicRequest,
    DeleteQueueRequest,
    DeleteTopicRequest,
    GetQueueAttributesRequest,
    GetSubscriptionAttributesRequest,
    GetTopicAttributesRequest,
    ListQueueRequest,
    ListSubscriptionByTopicRequest,
    ListTopicRequest,
    SetQueueAttributesRequest,
    SetSubscriptionAttributesRequest,
    SetTopicAttributesRequest,
    SubscribeRequest,
    UnsubscribeRequest,
)
from mns.account import Account

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.control.clients import Classic


@pytest.fixture()
def classic(control_gateway: RunningGateway) -> Classic:
    return Classic(control_gateway.port)


def test_queue_operations(classic: Classic, control_gateway: RunningGateway, unique: str) -> None:
    name = f"{unique}-q"
    create = CreateQueueRequest.CreateQueueRequest()
    create.set_QueueName(name)
    create.set_DelaySeconds(2)
    create.set_EnableLogging(True)
    create.set_VisibilityTimeout(40)
    answer = classic.call(create)
    assert (answer["Code"], answer["Success"], answer["Status"]) == (200, True, "Success")
    assert answer["RequestId"]
    change = SetQueueAttributesRequest.SetQueueAttributesRequest()
    change.set_QueueName(name)
    change.set_MaximumMessageSize(1024)
    classic.call(change)
    get = GetQueueAttributesRequest.GetQueueAttributesRequest()
    get.set_QueueName(name)
    data = classic.call(get)["Data"]
    assert (data["DelaySeconds"], data["LoggingEnabled"], data["VisibilityTimeout"]) == (
        2,
        True,
        40,
    )
    assert data["MaximumMessageSize"] == 1024
    xml = Account(control_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    assert xml.get_queue(name).get_attributes().maximum_message_size == 1024
    listing = ListQueueRequest.ListQueueRequest()
    listing.set_QueueName(name)
    listing.set_PageNum(1)
    listing.set_PageSize(10)
    page = classic.call(listing)["Data"]
    assert [q["QueueName"] for q in page["PageData"]] == [name]
    assert (page["Total"], page["Pages"], page["Size"]) == (1, 1, 1)
    delete = DeleteQueueRequest.DeleteQueueRequest()
    delete.set_QueueName(name)
    classic.call(delete)
    with pytest.raises(ServerException) as caught:
        classic.call(get)
    assert (caught.value.http_status, caught.value.error_code) == (404, "QueueNotExist")


def test_topic_and_subscription_operations(classic: Classic, unique: str) -> None:
    topic = f"{unique}-t"
    create = CreateTopicRequest.CreateTopicRequest()
    create.set_TopicName(topic)
    create.set_MaxMessageSize(2048)
    classic.call(create)
    change = SetTopicAttributesRequest.SetTopicAttributesRequest()
    change.set_TopicName(topic)
    change.set_EnableLogging(True)
    classic.call(change)
    get = GetTopicAttributesRequest.GetTopicAttributesRequest()
    get.set_TopicName(topic)
    data = classic.call(get)["Data"]
    assert (data["MaxMessageSize"], data["LoggingEnabled"]) == (2048, True)
    listing = ListTopicRequest.ListTopicRequest()
    listing.set_TopicName(topic)
    assert [t["TopicName"] for t in classic.call(listing)["Data"]["PageData"]] == [topic]

    subscribe = SubscribeRequest.SubscribeRequest()
    subscribe.set_TopicName(topic)
    subscribe.set_SubscriptionName("s1")
    subscribe.set_Endpoint("http://127.0.0.1:9/push")
    subscribe.set_PushType("http")
    subscribe.set_NotifyContentFormat("JSON")
    classic.call(subscribe)
    classic.call(subscribe)  # the same again: idempotent
    strategy = SetSubscriptionAttributesRequest.SetSubscriptionAttributesRequest()
    strategy.set_TopicName(topic)
    strategy.set_SubscriptionName("s1")
    strategy.set_NotifyStrategy("EXPONENTIAL_DECAY_RETRY")
    classic.call(strategy)
    get_sub = GetSubscriptionAttributesRequest.GetSubscriptionAttributesRequest()
    get_sub.set_TopicName(topic)
    get_sub.set_SubscriptionName("s1")
    sub = classic.call(get_sub)["Data"]
    assert (sub["NotifyStrategy"], sub["NotifyContentFormat"]) == (
        "EXPONENTIAL_DECAY_RETRY",
        "JSON",
    )
    subs = ListSubscriptionByTopicRequest.ListSubscriptionByTopicRequest()
    subs.set_TopicName(topic)
    assert [s["SubscriptionName"] for s in classic.call(subs)["Data"]["PageData"]] == ["s1"]
    unsubscribe = UnsubscribeRequest.UnsubscribeRequest()
    unsubscribe.set_TopicName(topic)
    unsubscribe.set_SubscriptionName("s1")
    classic.call(unsubscribe)
    assert classic.call(subs)["Data"]["Total"] == 0
    delete = DeleteTopicRequest.DeleteTopicRequest()
    delete.set_TopicName(topic)
    classic.call(delete)
    with pytest.raises(ServerException) as caught:
        classic.call(get)
    assert (caught.value.http_status, caught.value.error_code) == (404, "TopicNotExist")
