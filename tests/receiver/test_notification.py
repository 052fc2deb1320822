"""Parsing verified bodies into Notification, for all three formats and their failures."""

from __future__ import annotations

import json

import pytest

from receiver.exceptions import MalformedNotificationError
from receiver.notification import notification_format, parse_notification

XML_HEADERS = {"content-type": "text/xml;charset=utf-8"}
JSON_HEADERS = {"content-type": "application/json;charset=utf-8"}

# Shaped like the MNS documentation's example, but well-formed (that one closes PublishTime
# wrongly: docs/protocol.md#push-bodies).
SEED_XML = b"""<?xml version="1.0" encoding="utf-8"?>
<Notification xmlns="http://mns.aliyuncs.com/doc/v1/">
<TopicOwner>1234</TopicOwner>
<TopicName>orders</TopicName>
<Subscriber>5678</Subscriber>
<SubscriptionName>billing</SubscriptionName>
<MessageId>6CC4D900CA59A2CD-1-15180534A8F-200000002</MessageId>
<Message>{1:"a", 2:"b"} &lt;&amp;&gt;</Message>
<MessageMD5>F1E92841751D795AB325861034B5CB55</MessageMD5>
<MessageTag>important</MessageTag>
<PublishTime>1449556920975</PublishTime>
</Notification>"""


class TestXML:
    def test_reads_every_field(self) -> None:
        notification = parse_notification(SEED_XML, XML_HEADERS)
        assert notification.format == "XML"
        assert notification.topic_owner == "1234"
        assert notification.topic_name == "orders"
        assert notification.subscriber == "5678"
        assert notification.subscription_name == "billing"
        assert notification.message_id == "6CC4D900CA59A2CD-1-15180534A8F-200000002"
        assert notification.message == '{1:"a", 2:"b"} <&>'
        assert notification.message_md5 == "F1E92841751D795AB325861034B5CB55"
        assert notification.message_tag == "important"
        assert notification.publish_time == 1449556920975
        assert notification.body == SEED_XML
        assert notification.headers == XML_HEADERS

    def test_namespace_is_optional_and_so_are_tag_and_owner(self) -> None:
        body = b"<Notification><MessageId>m1</MessageId><Message>hi</Message></Notification>"
        notification = parse_notification(body, XML_HEADERS)
        assert (notification.message_id, notification.message) == ("m1", "hi")
        assert notification.message_tag is None
        assert notification.publish_time is None
        assert notification.topic_owner == ""

    def test_an_empty_message_is_still_a_message(self) -> None:
        body = b"<Notification><MessageId>m1</MessageId><Message/></Notification>"
        assert parse_notification(body, XML_HEADERS).message == ""

    @pytest.mark.parametrize(
        "body",
        [
            b"<Notification><MessageId>m1</MessageId><Message>hi</Message>",
            b"not xml at all",
            b"<Other><MessageId>m1</MessageId><Message>hi</Message></Other>",
            b"<Notification><Message>hi</Message></Notification>",
            b"<Notification><MessageId>m1</MessageId></Notification>",
            b"<Notification><MessageId/><Message>hi</Message></Notification>",
            b"<Notification><MessageId>m</MessageId><Message>x</Message>"
            b"<PublishTime>yesterday</PublishTime></Notification>",
            *(
                f'<?xml version="1.0" encoding="{name}"?>'.encode()
                + b"<Notification><MessageId>m</MessageId><Message>x</Message></Notification>"
                for name in ("bogus", "rot13", "utf-32", "shift_jis", "idna")
            ),
        ],
        ids=[
            *("unclosed", "garbage", "wrong-root", "no-id", "no-message", "empty-id", "bad-time"),
            *("unknown-encoding", "not-a-text-codec", "multi-byte", "shift-jis", "idna"),
        ],
    )
    def test_refuses_what_it_cannot_use(self, body: bytes) -> None:
        with pytest.raises(MalformedNotificationError):
            parse_notification(body, XML_HEADERS)

    @pytest.mark.parametrize(
        "body",
        [
            b'<?xml version="1.0"?><!DOCTYPE n [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
            b"<Notification><MessageId>m</MessageId><Message>&b;</Message></Notification>",
            b'<?xml version="1.0"?><!DOCTYPE n [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b"<Notification><MessageId>m</MessageId><Message>&x;</Message></Notification>",
        ],
        ids=["entity-expansion", "external-entity"],
    )
    def test_refuses_entity_tricks(self, body: bytes) -> None:
        with pytest.raises(MalformedNotificationError):
            parse_notification(body, XML_HEADERS)


JSON_FIELDS = {
    "TopicOwner": "1234",
    "TopicName": "orders",
    "Subscriber": "5678",
    "SubscriptionName": "billing",
    "MessageId": "m-1",
    "Message": "héllo",
    "MessageMD5": "ABC",
    "MessageTag": "t",
    "PublishTime": "1449556920975",
}


class TestJSON:
    def test_reads_every_field(self) -> None:
        body = json.dumps(JSON_FIELDS).encode()
        notification = parse_notification(body, JSON_HEADERS)
        assert notification.format == "JSON"
        assert notification.message == "héllo"
        assert notification.subscription_name == "billing"
        assert notification.publish_time == 1449556920975
        assert notification.message_tag == "t"

    def test_tolerates_a_numeric_publish_time_and_null_tag(self) -> None:
        body = json.dumps({**JSON_FIELDS, "PublishTime": 1449556920975, "MessageTag": None})
        notification = parse_notification(body.encode(), JSON_HEADERS)
        assert notification.publish_time == 1449556920975
        assert notification.message_tag is None

    @pytest.mark.parametrize(
        "body",
        [
            b"[1, 2]",
            b"{not json",
            json.dumps({"MessageId": "m", "Message": {"nested": 1}}).encode(),
            json.dumps({"MessageId": "m", "Message": "x", "PublishTime": True}).encode(),
            json.dumps({"MessageId": "m", "Message": "x", "PublishTime": "-5"}).encode(),
            json.dumps({"Message": "x"}).encode(),
            b"\xff\xfe\x00garbage",
            b"[" * 100_000 + b"]" * 100_000,
            b'{"MessageId": "m", "Message": ' + b'{"a":' * 100_000 + b"1" + b"}" * 100_001,
        ],
        ids=[
            *("array", "broken", "nested", "bool-time", "negative-time", "no-id", "bad-bytes"),
            *("nested-100000-arrays", "nested-100000-objects"),
        ],
    )
    def test_refuses_what_it_cannot_use(self, body: bytes) -> None:
        with pytest.raises(MalformedNotificationError):
            parse_notification(body, JSON_HEADERS)


SIMPLIFIED_HEADERS = {
    "content-type": "text/plain;charset=utf-8",
    "x-mns-message-id": "m-9",
    "x-mns-message-tag": "urgent",
    "x-mns-publish-time": "1449556920975",
    "x-mns-topic-owner": "1234",
    "x-mns-topic-name": "orders",
    "x-mns-subscriber": "5678",
    "x-mns-subscription-name": "billing",
}


class TestSimplified:
    def test_body_is_the_message_and_headers_the_metadata(self) -> None:
        notification = parse_notification("{1:'a'} ünïcode".encode(), SIMPLIFIED_HEADERS)
        assert notification.format == "SIMPLIFIED"
        assert notification.message == "{1:'a'} ünïcode"
        assert notification.message_id == "m-9"
        assert notification.message_tag == "urgent"
        assert notification.topic_name == "orders"
        assert notification.subscription_name == "billing"
        assert notification.publish_time == 1449556920975

    def test_message_md5_is_computed_like_the_service_does(self) -> None:
        notification = parse_notification(b"hello", SIMPLIFIED_HEADERS)
        assert notification.message_md5 == "5D41402ABC4B2A76B9719D911017C592"

    def test_honours_the_declared_charset(self) -> None:
        headers = {**SIMPLIFIED_HEADERS, "content-type": "text/plain; charset=GBK"}
        assert parse_notification("中文".encode("gbk"), headers).message == "中文"

    def test_only_the_message_id_header_is_required(self) -> None:
        headers = {"content-type": "text/plain", "x-mns-message-id": "m"}
        notification = parse_notification(b"x", headers)
        assert (notification.topic_name, notification.publish_time) == ("", None)
        with pytest.raises(MalformedNotificationError, match="MessageId"):
            parse_notification(b"x", {"content-type": "text/plain"})

    @pytest.mark.parametrize(
        "content_type", ["text/plain;charset=utf-8", "text/plain;charset=nope"]
    )
    def test_refuses_undecodable_bodies(self, content_type: str) -> None:
        with pytest.raises(MalformedNotificationError):
            parse_notification(
                b"\xff\xfe\xfa", {**SIMPLIFIED_HEADERS, "content-type": content_type}
            )


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/xml;charset=utf-8", "XML"),
        ("TEXT/XML", "XML"),
        ("application/xml", "XML"),
        ("application/json; charset=utf-8", "JSON"),
        ("text/plain;charset=utf-8", "SIMPLIFIED"),
    ],
)
def test_format_follows_the_content_type(content_type: str, expected: str) -> None:
    assert notification_format(content_type) == expected


@pytest.mark.parametrize("content_type", ["", "application/octet-stream", "text/html"])
def test_unknown_content_types_are_malformed(content_type: str) -> None:
    with pytest.raises(MalformedNotificationError):
        parse_notification(b"x", {"content-type": content_type})
