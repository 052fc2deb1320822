"""Queues, topics and subscriptions through ``alibabacloud-mns-open20220119`` (ACS3), unchanged,
on each backend; and the same resources seen through the 2015-06-06 XML API (``aliyun-mns-sdk``):
one model, two APIs."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from mns.account import Account
from mns.queue import QueueMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.control.clients import darabonba


@pytest.fixture()
def sdk(control_gateway: RunningGateway) -> Client:
    return darabonba(control_gateway.port)


@pytest.fixture()
def xml(control_gateway: RunningGateway) -> Account:
    return Account(control_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)


def refused(call: Callable[[], object]) -> AlibabaCloudException:
    with pytest.raises(AlibabaCloudException) as caught:
        call()
    return caught.value


def test_a_queue_created_here_is_the_xml_apis_queue(sdk: Client, xml: Account, unique: str) -> None:
    name = f"{unique}-q"
    sdk.create_queue(m.CreateQueueRequest(queue_name=f"{unique}-dlq"))
    answer = sdk.create_queue(
        m.CreateQueueRequest(
            queue_name=name,
            delay_seconds=5,
            maximum_message_size=2048,
            message_retention_period=3600,
            visibility_timeout=60,
            polling_wait_seconds=3,
            enable_logging=True,
            queue_type="fifo",
            dlq_policy=m.CreateQueueRequestDlqPolicy(
                dead_letter_target_queue=f"{unique}-dlq", enabled=True, max_receive_count=3
            ),
            tenant_rate_limit_policy=m.CreateQueueRequestTenantRateLimitPolicy(
                enabled=True, max_receives_per_second=50
            ),
            tag=[m.CreateQueueRequestTag(key="env", value="dev")],
        )
    )
    assert (answer.status_code, answer.body.code, answer.body.success) == (200, 200, True)
    data = sdk.get_queue_attributes(m.GetQueueAttributesRequest(queue_name=name)).body.data
    assert (data.queue_name, data.delay_seconds, data.maximum_message_size) == (name, 5, 2048)
    assert (data.message_retention_period, data.visibility_timeout) == (3600, 60)
    assert (data.polling_wait_seconds, data.logging_enabled, data.queue_type) == (3, True, "fifo")
    assert data.dlq_policy.to_map() == {
        "DeadLetterTargetQueue": f"{unique}-dlq",
        "Enabled": True,
        "MaxReceiveCount": "3",
    }
    assert data.tenant_rate_limit_policy.to_map() == {"Enabled": True, "MaxReceivesPerSecond": 50}
    assert [(t.tag_key, t.tag_value) for t in data.tags] == [("env", "dev")]
    meta = xml.get_queue(name).get_attributes()
    assert (meta.delay_seconds, meta.maximum_message_size, meta.visibility_timeout) == (5, 2048, 60)
    assert (meta.message_retention_period, meta.polling_wait_seconds) == (3600, 3)
    assert meta.logging_enabled is True


def test_set_changes_only_what_is_sent_and_the_xml_api_sees_it(
    sdk: Client, xml: Account, unique: str
) -> None:
    name = f"{unique}-q"
    xml.get_queue(name).create(QueueMeta())
    sdk.set_queue_attributes(m.SetQueueAttributesRequest(queue_name=name, visibility_timeout=90))
    data = sdk.get_queue_attributes(m.GetQueueAttributesRequest(queue_name=name)).body.data
    assert (data.visibility_timeout, data.delay_seconds, data.tags) == (90, 0, [])
    meta = xml.get_queue(name).get_attributes()
    assert meta.visibility_timeout == 90
    error = refused(
        lambda: sdk.set_queue_attributes(
            m.SetQueueAttributesRequest(queue_name=name, visibility_timeout=0)
        )
    )
    assert (error.status_code, error.code) == (400, "InvalidArgument")
    assert (
        sdk.get_queue_attributes(
            m.GetQueueAttributesRequest(queue_name=name)
        ).body.data.visibility_timeout
        == 90
    )


def test_create_is_idempotent_and_a_different_queue_conflicts(sdk: Client, unique: str) -> None:
    request = m.CreateQueueRequest(queue_name=f"{unique}-q", visibility_timeout=45)
    sdk.create_queue(request)
    sdk.create_queue(request)
    error = refused(
        lambda: sdk.create_queue(m.CreateQueueRequest(queue_name=f"{unique}-q", delay_seconds=9))
    )
    assert (error.status_code, error.code) == (409, "QueueAlreadyExist")


def test_delete_then_get_is_queue_not_exist(sdk: Client, xml: Account, unique: str) -> None:
    name = f"{unique}-q"
    sdk.create_queue(m.CreateQueueRequest(queue_name=name))
    sdk.delete_queue(m.DeleteQueueRequest(queue_name=name))
    sdk.delete_queue(m.DeleteQueueRequest(queue_name=name))  # missing: not an error
    error = refused(lambda: sdk.get_queue_attributes(m.GetQueueAttributesRequest(queue_name=name)))
    assert (error.status_code, error.code) == (404, "QueueNotExist")
    assert error.request_id


def test_list_queue_pages_and_filters_by_tag(sdk: Client, unique: str) -> None:
    for index in range(12):
        tag = [m.CreateQueueRequestTag(key="team", value="a" if index % 2 else "b")]
        sdk.create_queue(m.CreateQueueRequest(queue_name=f"{unique}-{index:02}", tag=tag))
    pages = [
        sdk.list_queue(
            m.ListQueueRequest(queue_name=unique, page_num=number, page_size=10)
        ).body.data
        for number in (1, 2, 3)
    ]
    assert [(p.total, p.pages, p.size, p.page_num, p.page_size) for p in pages] == [
        (12, 2, 10, 1, 10),
        (12, 2, 2, 2, 10),
        (12, 2, 0, 3, 10),
    ]
    names = [q.queue_name for p in pages for q in p.page_data]
    assert names == [f"{unique}-{i:02}" for i in range(12)]
    tagged = sdk.list_queue(
        m.ListQueueRequest(queue_name=unique, tag=[m.ListQueueRequestTag(key="team", value="a")])
    ).body.data
    assert [q.queue_name for q in tagged.page_data] == [f"{unique}-{i:02}" for i in range(1, 12, 2)]
    assert [t.tag_value for t in tagged.page_data[0].tags] == ["a"]


@pytest.mark.parametrize(
    ("page_num", "page_size", "used"),
    [(1, 2, (1, 10)), (1, 51, (1, 50)), (0, 10, (1, 10)), (-3, -1, (1, 10))],
)
def test_list_queue_moves_page_num_and_size_into_range(
    sdk: Client, unique: str, page_num: int, page_size: int, used: tuple[int, int]
) -> None:
    # The SDK's own documentation: "If the specified value is less than 10, the system
    # defaults to 10. If ... greater than 50, the system defaults to 50"; PageNum likewise.
    data = sdk.list_queue(
        m.ListQueueRequest(queue_name=unique, page_num=page_num, page_size=page_size)
    ).body.data
    assert (data.page_num, data.page_size) == used


def test_topics_through_the_sdk_and_the_xml_api(sdk: Client, xml: Account, unique: str) -> None:
    name = f"{unique}-t"
    sdk.create_topic(
        m.CreateTopicRequest(
            topic_name=name,
            max_message_size=4096,
            enable_logging=True,
            tag=[m.CreateTopicRequestTag(key="env", value="prod")],
        )
    )
    meta = xml.get_topic(name).get_attributes()
    assert (meta.maximum_message_size, meta.logging_enabled) == (4096, True)
    sdk.set_topic_attributes(m.SetTopicAttributesRequest(topic_name=name, max_message_size=8192))
    data = sdk.get_topic_attributes(m.GetTopicAttributesRequest(topic_name=name)).body.data
    assert (data.topic_name, data.max_message_size, data.logging_enabled) == (name, 8192, True)
    assert [(t.tag_key, t.tag_value) for t in data.tags] == [("env", "prod")]
    listed = sdk.list_topic(m.ListTopicRequest(topic_name=name)).body.data
    assert [(t.topic_name, t.max_message_size) for t in listed.page_data] == [(name, 8192)]
    sdk.delete_topic(m.DeleteTopicRequest(topic_name=name))
    error = refused(lambda: sdk.get_topic_attributes(m.GetTopicAttributesRequest(topic_name=name)))
    assert (error.status_code, error.code) == (404, "TopicNotExist")


def test_subscriptions_through_the_sdk(
    sdk: Client, xml: Account, control_gateway: RunningGateway, unique: str
) -> None:
    topic, queue, dlq = f"{unique}-t", f"{unique}-q", f"{unique}-dlq"
    sdk.create_topic(m.CreateTopicRequest(topic_name=topic))
    for name in (queue, dlq):
        sdk.create_queue(m.CreateQueueRequest(queue_name=name))
    endpoint = f"acs:mns:local:1234567890:queues/{queue}"
    url = sdk.subscribe(
        m.SubscribeRequest(
            topic_name=topic,
            subscription_name="s1",
            endpoint=endpoint,
            push_type="queue",
            notify_strategy="EXPONENTIAL_DECAY_RETRY",
            notify_content_format="SIMPLIFIED",
            message_tag="orders",
            dlq_policy=m.SubscribeRequestDlqPolicy(dead_letter_target_queue=dlq, enabled=True),
            tenant_rate_limit_policy=m.SubscribeRequestTenantRateLimitPolicy(
                enabled=True, max_receives_per_second=10
            ),
        )
    ).body.data
    assert url == f"{control_gateway.url}/topics/{topic}/subscriptions/s1"
    sdk.set_subscription_attributes(
        m.SetSubscriptionAttributesRequest(
            topic_name=topic, subscription_name="s1", notify_strategy="BACKOFF_RETRY"
        )
    )
    data = sdk.get_subscription_attributes(
        m.GetSubscriptionAttributesRequest(topic_name=topic, subscription_name="s1")
    ).body.data
    assert (data.endpoint, data.filter_tag, data.notify_strategy) == (
        endpoint,
        "orders",
        "BACKOFF_RETRY",
    )
    assert data.notify_content_format == "SIMPLIFIED"
    assert data.dlq_policy.to_map() == {"DeadLetterTargetQueue": dlq, "Enabled": True}
    assert data.tenant_rate_limit_policy.to_map() == {"Enabled": True, "MaxReceivesPerSecond": 10}
    xml_meta = xml.get_topic(topic).get_subscription("s1").get_attributes()
    assert (xml_meta.endpoint, xml_meta.notify_strategy) == (endpoint, "BACKOFF_RETRY")
    listed = sdk.list_subscription_by_topic(
        m.ListSubscriptionByTopicRequest(topic_name=topic)
    ).body.data
    assert [(s.subscription_name, s.endpoint) for s in listed.page_data] == [("s1", endpoint)]
    sdk.unsubscribe(m.UnsubscribeRequest(topic_name=topic, subscription_name="s1"))
    error = refused(
        lambda: sdk.get_subscription_attributes(
            m.GetSubscriptionAttributesRequest(topic_name=topic, subscription_name="s1")
        )
    )
    assert (error.status_code, error.code) == (404, "SubscriptionNotExist")


def test_subscribe_to_a_missing_queue_is_refused_and_nothing_is_kept(
    sdk: Client, unique: str
) -> None:
    topic = f"{unique}-t"
    sdk.create_topic(m.CreateTopicRequest(topic_name=topic))
    error = refused(
        lambda: sdk.subscribe(
            m.SubscribeRequest(
                topic_name=topic,
                subscription_name="s1",
                endpoint=f"acs:mns:local:1234567890:queues/{unique}-none",
                push_type="queue",
            )
        )
    )
    assert (error.status_code, error.code) == (400, "EndpointInvalid")
    listed = sdk.list_subscription_by_topic(
        m.ListSubscriptionByTopicRequest(topic_name=topic)
    ).body.data
    assert listed.total == 0
    assert json.loads(json.dumps(listed.to_map()))["PageData"] == []
