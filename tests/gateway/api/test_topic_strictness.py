"""Where the gateway was looser than the service on topics: MailEndpoint formats, empty publish
bodies, SetSubscriptionAttributes' fixed elements, and ListSubscriptionByTopic with meta
(docs/protocol.md#subscriptions, docs/protocol.md#publishing, docs/protocol.md#listing)."""

from __future__ import annotations

import pytest
from defusedxml.ElementTree import fromstring
from mns.account import Account
from mns.mns_request import RequestBase
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.protocol.xml import local_name
from tests.gateway.api.sdk import server_error
from tests.mns_http import RawClient

MAIL = "mail:directmail:someone@example.test"
NS = '<?xml version="1.0" encoding="UTF-8"?>'


@pytest.fixture()
def topic(account: Account, unique: str):  # type: ignore[no-untyped-def]
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    return topic


# MailEndpoint: SIMPLIFIED only -----------------------------------------------------------------
@pytest.mark.parametrize("content_format", ["XML", "JSON", "json"])
def test_a_mail_endpoint_refuses_xml_and_json(topic, content_format: str) -> None:  # type: ignore[no-untyped-def]
    meta = SubscriptionMeta(MAIL, notify_content_format=content_format)
    error = server_error(lambda: topic.get_subscription("m").subscribe(meta))
    assert error.type == "InvalidArgument"
    assert server_error(topic.get_subscription("m").get_attributes).type == "SubscriptionNotExist"


def test_a_mail_endpoint_takes_simplified_which_is_also_its_default(topic) -> None:  # type: ignore[no-untyped-def]
    topic.get_subscription("given").subscribe(
        SubscriptionMeta(MAIL, notify_content_format="SIMPLIFIED")
    )
    topic.get_subscription("default").subscribe(SubscriptionMeta(MAIL))
    for name in ("given", "default"):
        assert topic.get_subscription(name).get_attributes().notify_content_format == "SIMPLIFIED"


# PublishMessage: an empty body is refused as SendMessage refuses one ------------------------------
def test_an_empty_publish_body_is_refused(raw: RawClient, topic) -> None:  # type: ignore[no-untyped-def]
    for body in ("<MessageBody></MessageBody>", "<MessageBody/>", ""):
        xml = f'{NS}<Message xmlns="http://mns.aliyuncs.com/doc/v1/">{body}</Message>'.encode()
        response = raw.send("POST", f"/topics/{topic.topic_name}/messages", xml)
        assert (response.status, response.error_code()) == (400, "InvalidArgument")
    assert topic.get_attributes().message_count == 0
    assert topic.publish_message(TopicMessage("x")).message_id  # a body of one character is fine


# SetSubscriptionAttributes: NotifyStrategy only --------------------------------------------------
def set_attributes(raw: RawClient, topic_name: str, inner: str):  # type: ignore[no-untyped-def]
    xml = f'{NS}<Subscription xmlns="http://mns.aliyuncs.com/doc/v1/">{inner}</Subscription>'
    uri = f"/topics/{topic_name}/subscriptions/s?metaoverride=true"
    return raw.send("PUT", uri, xml.encode())


def test_set_subscription_attributes_changes_the_strategy(topic) -> None:  # type: ignore[no-untyped-def]
    subscription = topic.get_subscription("s")
    subscription.subscribe(SubscriptionMeta("http://127.0.0.1:9/", filter_tag="a"))
    subscription.set_attributes(SubscriptionMeta(notify_strategy="EXPONENTIAL_DECAY_RETRY"))
    assert subscription.get_attributes().notify_strategy == "EXPONENTIAL_DECAY_RETRY"


def test_fixed_elements_may_be_resent_unchanged(raw: RawClient, topic) -> None:  # type: ignore[no-untyped-def]
    """What the Java SDK sends (NotifyStrategy and FilterTag), with the values it read."""
    topic.get_subscription("s").subscribe(SubscriptionMeta("http://127.0.0.1:9/", filter_tag="a"))
    inner = (
        "<NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy><FilterTag>a</FilterTag>"
        "<Endpoint>http://127.0.0.1:9/</Endpoint><NotifyContentFormat>xml</NotifyContentFormat>"
    )
    assert set_attributes(raw, topic.topic_name, inner).status == 204
    assert topic.get_subscription("s").get_attributes().notify_strategy == "EXPONENTIAL_DECAY_RETRY"


@pytest.mark.parametrize(
    "inner",
    [
        "<FilterTag>b</FilterTag>",
        "<Endpoint>http://127.0.0.1:10/</Endpoint>",
        "<NotifyContentFormat>JSON</NotifyContentFormat>",
        "<NotifyStrategy>EXPONENTIAL_DECAY_RETRY</NotifyStrategy><FilterTag>b</FilterTag>",
        "<Unknown>1</Unknown>",
    ],
)
def test_what_cannot_change_is_refused_and_nothing_changes(
    raw: RawClient,
    topic,
    inner: str,  # type: ignore[no-untyped-def]
) -> None:
    topic.get_subscription("s").subscribe(SubscriptionMeta("http://127.0.0.1:9/", filter_tag="a"))
    response = set_attributes(raw, topic.topic_name, inner)
    assert (response.status, response.error_code()) == (400, "InvalidArgument")
    attributes = topic.get_subscription("s").get_attributes()
    assert (attributes.notify_strategy, attributes.filter_tag) == ("BACKOFF_RETRY", "a")


def test_set_attributes_of_a_missing_subscription(raw: RawClient, topic) -> None:  # type: ignore[no-untyped-def]
    response = set_attributes(raw, topic.topic_name, "<FilterTag>b</FilterTag>")
    assert (response.status, response.error_code()) == (404, "SubscriptionNotExist")


# ListSubscriptionByTopic with x-mns-with-meta ----------------------------------------------------
def list_with_meta(account: Account, topic_name: str) -> bytes:
    """The request the Go SDK's ListSubscriptionDetailByTopic sends, through the official Python
    SDK's own signing and transport (its Topic has no with-meta listing)."""
    from mns.mns_client import RequestInternal

    client = account.get_client()
    internal = RequestInternal("GET", f"/topics/{topic_name}/subscriptions")
    internal.header["x-mns-with-meta"] = "true"
    client.build_header(RequestBase(), internal)
    response = client.http.send_request(internal)
    assert response.status == 200, response.data
    return response.data


def test_list_subscriptions_with_meta_returns_each_subscriptions_attributes(
    account: Account,
    topic,  # type: ignore[no-untyped-def]
) -> None:
    topic.get_subscription("a").subscribe(SubscriptionMeta("http://127.0.0.1:9/a", filter_tag="t"))
    topic.get_subscription("b").subscribe(SubscriptionMeta(MAIL))
    root = fromstring(list_with_meta(account, topic.topic_name))
    entries = [{local_name(c): c.text for c in entry} for entry in root]
    assert [e["SubscriptionName"] for e in entries] == ["a", "b"]
    expected = {  # the fields of the Go SDK's SubscriptionAttribute
        "SubscriptionURL", "SubscriptionName", "Subscriber", "TopicOwner", "TopicName",
        "Endpoint", "NotifyStrategy", "NotifyContentFormat", "CreateTime", "LastModifyTime",
    }  # fmt: skip
    assert set(entries[0]) == expected | {"FilterTag"}
    assert set(entries[1]) == expected
    assert entries[0]["FilterTag"] == "t" and entries[1]["NotifyContentFormat"] == "SIMPLIFIED"
    assert entries[0]["SubscriptionURL"].endswith(f"/topics/{topic.topic_name}/subscriptions/a")
    # Without the header, only the URLs, as before.
    urls, _ = topic.list_subscription()
    assert len(urls) == 2
