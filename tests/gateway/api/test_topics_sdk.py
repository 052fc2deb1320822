"""Every topic operation driven through the official SDK against a gateway started like a user's."""

from __future__ import annotations

import hashlib

import pytest
from mns.account import Account
from mns.queue import QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import DirectMailInfo, DirectSMSInfo, TopicMessage, TopicMeta

from tests.gateway.api.sdk import server_error


def test_create_get_set_delete_topic(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    url = topic.create(TopicMeta(maximum_message_size=2048, logging_enabled=True))
    assert url.endswith(f"/topics/{unique}")

    attributes = topic.get_attributes()
    assert attributes.topic_name == unique
    assert attributes.maximum_message_size == 2048
    assert attributes.logging_enabled is True
    assert attributes.message_retention_period == 86400
    assert attributes.message_count == 0
    assert attributes.create_time > 0

    topic.set_attributes(TopicMeta(maximum_message_size=4096, logging_enabled=False))
    changed = topic.get_attributes()
    assert (changed.maximum_message_size, changed.logging_enabled) == (4096, False)

    topic.delete()
    assert server_error(topic.get_attributes).type == "TopicNotExist"
    topic.delete()  # deleting a missing topic succeeds, as on the service


def test_recreate_topic_same_attributes_is_204_different_is_409(
    account: Account, unique: str
) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta(maximum_message_size=1024))
    topic.create(TopicMeta(maximum_message_size=1024))  # identical: 204, no error
    error = server_error(lambda: topic.create(TopicMeta(maximum_message_size=2048)))
    assert error.type == "TopicAlreadyExist"


def test_set_attributes_of_missing_topic(account: Account, unique: str) -> None:
    error = server_error(lambda: account.get_topic(unique).set_attributes(TopicMeta(1024)))
    assert error.type == "TopicNotExist"


def test_list_topics_with_prefix_and_paging(account: Account, unique: str) -> None:
    names = [f"{unique}-{i:02d}" for i in range(7)]
    for name in names:
        account.get_topic(name).create(TopicMeta())
    account.get_topic(f"other{unique}").create(TopicMeta())

    seen: list[str] = []
    marker = ""
    for _ in range(10):
        urls, marker = account.list_topic(prefix=unique, ret_number=3, marker=marker)
        seen += [url.rsplit("/", 1)[1] for url in urls]
        if not marker:
            break
    assert seen == names

    urls, marker = account.list_topic(prefix=unique)
    assert marker == "" and len(urls) == 7


def test_list_topics_with_meta(raw, unique: str) -> None:  # type: ignore[no-untyped-def]
    assert raw.send("PUT", f"/topics/{unique}", b"<Topic/>").status == 201
    response = raw.send(
        "GET", "/topics", headers={"x-mns-prefix": unique, "x-mns-with-meta": "true"}
    )
    assert response.status == 200
    assert f"<TopicName>{unique}</TopicName>".encode() in response.body
    assert b"<MaximumMessageSize>65536</MaximumMessageSize>" in response.body


@pytest.mark.parametrize("ret_number", ["0", "1001", "ten"])
def test_list_topics_bad_ret_number(raw, ret_number: str) -> None:  # type: ignore[no-untyped-def]
    response = raw.send("GET", "/topics", headers={"x-mns-ret-number": ret_number})
    assert (response.status, response.error_code()) == (400, "InvalidArgument")


def test_subscription_lifecycle(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    subscription = topic.get_subscription("sub-1")
    meta = SubscriptionMeta(
        "http://127.0.0.1:9/hook",
        notify_strategy="EXPONENTIAL_DECAY_RETRY",
        notify_content_format="SIMPLIFIED",
        filter_tag="important",
    )
    url = subscription.subscribe(meta)
    assert url.endswith(f"/topics/{unique}/subscriptions/sub-1")
    subscription.subscribe(meta)  # identical: 204

    attributes = subscription.get_attributes()
    assert attributes.endpoint == "http://127.0.0.1:9/hook"
    assert attributes.filter_tag == "important"
    assert attributes.notify_strategy == "EXPONENTIAL_DECAY_RETRY"
    assert attributes.notify_content_format == "SIMPLIFIED"
    assert attributes.topic_name == unique
    assert attributes.topic_owner and attributes.create_time > 0

    subscription.set_attributes(SubscriptionMeta(notify_strategy="BACKOFF_RETRY"))
    assert subscription.get_attributes().notify_strategy == "BACKOFF_RETRY"

    different = SubscriptionMeta("http://127.0.0.1:9/other")
    assert (
        server_error(lambda: subscription.subscribe(different)).type == "SubscriptionAlreadyExist"
    )

    subscription.unsubscribe()
    assert server_error(subscription.get_attributes).type == "SubscriptionNotExist"
    subscription.unsubscribe()  # missing: still 204


def test_subscription_defaults_and_any_case(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    sub = topic.get_subscription("plain")
    sub.subscribe(
        SubscriptionMeta("http://127.0.0.1:9/", notify_strategy="exponential_decay_retry")
    )
    attributes = sub.get_attributes()
    assert attributes.notify_strategy == "EXPONENTIAL_DECAY_RETRY"
    assert attributes.notify_content_format == "XML"
    assert attributes.filter_tag == ""


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://example.test",
        "https://example.test:8443/path?x=1",
        "acs:mns:local:1234567890:queues/my-queue",
        "mail:directmail:someone@example.test",
        "sms:directsms:anonymous",
        "sms:directsms:13800000000",
    ],
)
def test_every_endpoint_form_is_accepted(account: Account, unique: str, endpoint: str) -> None:
    account.get_queue("my-queue").create(QueueMeta())  # a QueueEndpoint's queue must exist
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint))
    assert topic.get_subscription("s").get_attributes().endpoint == endpoint


@pytest.mark.parametrize(
    "endpoint",
    [
        "ftp://example.test/",
        "http://",
        "http://host/mns-reserved-x",
        "acs:mns:r:1:queues/-bad",
        "mail:directmail:not-an-address",
        "sms:directsms:abc",
        "tcp://127.0.0.1:1",
    ],
)
def test_unknown_endpoint_forms_are_endpoint_invalid(
    account: Account, unique: str, endpoint: str
) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    error = server_error(lambda: topic.get_subscription("s").subscribe(SubscriptionMeta(endpoint)))
    assert error.type == "EndpointInvalid"
    assert topic.list_subscription()[0] == []


def test_subscribe_to_missing_topic(account: Account, unique: str) -> None:
    sub = account.get_topic(unique).get_subscription("s")
    assert (
        server_error(lambda: sub.subscribe(SubscriptionMeta("http://x.test/"))).type
        == "TopicNotExist"
    )


def test_list_subscriptions_paging(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    for i in range(5):
        topic.get_subscription(f"s-{i}").subscribe(SubscriptionMeta(f"http://127.0.0.1:9/{i}"))
    first, marker = topic.list_subscription(ret_number=2)
    assert [u.rsplit("/", 1)[1] for u in first] == ["s-0", "s-1"] and marker
    rest, last_marker = topic.list_subscription(ret_number=10, marker=marker)
    assert [u.rsplit("/", 1)[1] for u in rest] == ["s-2", "s-3", "s-4"] and last_marker == ""
    prefixed, _ = topic.list_subscription(prefix="s-4")
    assert len(prefixed) == 1
    missing = account.get_topic(f"{unique}-missing")
    assert server_error(missing.list_subscription).type == "TopicNotExist"


def test_publish_counts_and_md5(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta("http://127.0.0.1:9/"))
    published = topic.publish_message(TopicMessage("你好, MNS", "tag-a"))
    assert published.message_body_md5 == hashlib.md5("你好, MNS".encode()).hexdigest().upper()
    assert published.message_id
    assert topic.get_attributes().message_count == 1


def test_publish_with_direct_mail_sms_and_properties(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    mail = DirectMailInfo(
        account_name="a@example.test", subject="s", address_type=0, is_html=0, reply_to_address=0
    )
    message = TopicMessage("body", direct_mail=mail)
    assert topic.publish_message(message).message_id
    sms = DirectSMSInfo(free_sign_name="sign", template_code="T1", single=True)
    sms.add_receiver("13800000000", params={"k": "v"})
    assert topic.publish_message(TopicMessage("body", direct_sms=sms)).message_id


def test_publish_accepts_group_id_and_properties(raw, unique: str) -> None:  # type: ignore[no-untyped-def]
    assert raw.send("PUT", f"/topics/{unique}", b"<Topic/>").status == 201
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
        b"<MessageBody>hi</MessageBody><MessageGroupId>group-1</MessageGroupId>"
        b"<UserProperties><PropertyValue><Name>k</Name><Value>v</Value><Type>STRING</Type>"
        b"</PropertyValue></UserProperties>"
        b"<SystemProperties><SystemPropertyValue><Name>traceparent</Name><Value>1</Value>"
        b"<Type>STRING</Type></SystemPropertyValue></SystemProperties></Message>"
    )
    response = raw.send("POST", f"/topics/{unique}/messages", body)
    assert response.status == 201
    assert b"<MessageGroupId>group-1</MessageGroupId>" in response.body


def test_publish_over_maximum_message_size(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta(maximum_message_size=1024))
    error = server_error(lambda: topic.publish_message(TopicMessage("x" * 1025)))
    assert error.type == "InvalidArgument"
    topic.publish_message(TopicMessage("x" * 1024))
    assert topic.get_attributes().message_count == 1


def test_publish_to_missing_topic(account: Account, unique: str) -> None:
    error = server_error(lambda: account.get_topic(unique).publish_message(TopicMessage("x")))
    assert error.type == "TopicNotExist"


def test_delete_topic_removes_subscriptions(account: Account, unique: str) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta("http://127.0.0.1:9/"))
    topic.publish_message(TopicMessage("pending"))
    topic.delete()
    topic.create(TopicMeta())
    assert topic.list_subscription()[0] == []
    assert topic.get_attributes().message_count == 0
