"""ListSubscriptionByTopic's EndpointType and EndpointValue filters through both SDKs, on each
backend: the kind read from the stored endpoint, the value compared whole (docs/control-plane.md
#listsubscriptionbytopic-filters), numbered pages and Total over what the filters leave."""

from __future__ import annotations

import pytest
from alibabacloud_mns_open20220119 import models as m
from alibabacloud_mns_open20220119.client import Client
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from aliyunsdkmns_open.request.v20220119.ListSubscriptionByTopicRequest import (
    ListSubscriptionByTopicRequest,
)

from tests.conftest import RunningGateway
from tests.gateway.api.control.clients import Classic, darabonba

#: name -> (PushType, endpoint); the queue endpoints' queues are made by the fixture.
ENDPOINTS = {
    "h1": ("http", "http://127.0.0.1:9/a"),
    "h2": ("http", "https://127.0.0.1:9/a"),
    "h3": ("http", "http://127.0.0.1:9/a/b"),
    "m1": ("email", "mail:directmail:ops@example.com"),
    "q1": ("queue", "acs:mns:local:1234567890:queues/{unique}-q1"),
    "q2": ("queue", "acs:mns:local:1234567890:queues/{unique}-q2"),
    "s1": ("alisms", "sms:directsms:anonymous"),
}


@pytest.fixture()
def sdk(control_gateway: RunningGateway) -> Client:
    return darabonba(control_gateway.port)


@pytest.fixture()
def topic(sdk: Client, unique: str) -> str:
    """A topic with a subscription of every kind, and one on another topic (never listed)."""
    name = f"{unique}-t"
    for queue in ("q1", "q2"):
        sdk.create_queue(m.CreateQueueRequest(queue_name=f"{unique}-{queue}"))
    for topic_name in (name, f"{unique}-other"):
        sdk.create_topic(m.CreateTopicRequest(topic_name=topic_name))
    for subscription, (push_type, endpoint) in ENDPOINTS.items():
        sdk.subscribe(
            m.SubscribeRequest(
                topic_name=name,
                subscription_name=subscription,
                push_type=push_type,
                endpoint=endpoint.format(unique=unique),
            )
        )
    sdk.subscribe(
        m.SubscribeRequest(
            topic_name=f"{unique}-other",
            subscription_name="h1",
            push_type="http",
            endpoint="http://127.0.0.1:9/a",
        )
    )
    return name


def names(sdk: Client, topic: str, **filters: object) -> list[str]:
    request = m.ListSubscriptionByTopicRequest(topic_name=topic, **filters)
    data = sdk.list_subscription_by_topic(request).body.data
    assert data.total == len(data.page_data)
    return [s.subscription_name for s in data.page_data]


def test_endpoint_type_is_the_kind_of_endpoint(sdk: Client, topic: str) -> None:
    assert names(sdk, topic) == sorted(ENDPOINTS)
    assert names(sdk, topic, endpoint_type="http") == ["h1", "h2", "h3"]  # HTTPS too
    assert names(sdk, topic, endpoint_type="QUEUE") == ["q1", "q2"]
    assert names(sdk, topic, endpoint_type="email") == ["m1"]
    assert names(sdk, topic, endpoint_type="alisms") == ["s1"]
    # The service's other push types exist there; no subscription here has one.
    assert names(sdk, topic, endpoint_type="dm") == []
    assert names(sdk, topic, endpoint_type="fc", subscription_name="h") == []


def test_endpoint_value_is_compared_whole(sdk: Client, topic: str, unique: str) -> None:
    assert names(sdk, topic, endpoint_value="http://127.0.0.1:9/a") == ["h1"]
    assert names(sdk, topic, endpoint_value="http://127.0.0.1:9/") == []  # not a prefix
    assert names(sdk, topic, endpoint_value="https://127.0.0.1:9/A") == []  # case counts
    # A queue by its name or by its whole endpoint.
    assert names(sdk, topic, endpoint_value=f"{unique}-q2") == ["q2"]
    assert names(sdk, topic, endpoint_value="-q2") == []
    whole = ENDPOINTS["q1"][1].format(unique=unique)
    assert names(sdk, topic, endpoint_value=whole) == ["q1"]
    assert names(sdk, topic, endpoint_value="ops@example.com") == ["m1"]
    assert names(sdk, topic, endpoint_value="anonymous", endpoint_type="alisms") == ["s1"]
    assert names(sdk, topic, endpoint_value=f"{unique}-q1", endpoint_type="http") == []
    assert names(sdk, topic, endpoint_value="%", endpoint_type="http") == []  # no LIKE


def test_pages_and_total_count_what_the_filters_leave(sdk: Client, topic: str) -> None:
    request = m.ListSubscriptionByTopicRequest(
        topic_name=topic, endpoint_type="http", page_size=10, page_num=1
    )
    data = sdk.list_subscription_by_topic(request).body.data
    assert (data.total, data.pages, data.page_num, data.size) == (3, 1, 1, 3)
    assert [s.subscription_name for s in data.page_data] == ["h1", "h2", "h3"]
    request.page_num = 2
    data = sdk.list_subscription_by_topic(request).body.data
    assert (data.total, data.pages, data.page_num, data.size) == (3, 1, 2, 0)


def test_the_classic_sdk_filters_too(
    control_gateway: RunningGateway, topic: str, unique: str
) -> None:
    # Its request class has no setter for the filters: they are added as the query parameters
    # the Darabonba SDK sends.
    request = ListSubscriptionByTopicRequest()
    request.set_TopicName(topic)
    request.add_query_param("EndpointType", "queue")
    request.add_query_param("EndpointValue", f"{unique}-q2")
    data = Classic(control_gateway.port).call(request)["Data"]
    assert [s["SubscriptionName"] for s in data["PageData"]] == ["q2"]


def test_an_unknown_endpoint_type_is_refused(sdk: Client, topic: str) -> None:
    with pytest.raises(AlibabaCloudException) as caught:
        names(sdk, topic, endpoint_type="carrier-pigeon")
    assert (caught.value.status_code, caught.value.code) == (400, "InvalidParameter")
