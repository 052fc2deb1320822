"""Push bodies, headers, string to sign and path, byte for byte.

Against docs/protocol.md#push-headers and docs/delivery.md#the-request.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json

import pytest
from defusedxml import ElementTree
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.delivery.formats import (
    PushNotification,
    RenderedPush,
    content_md5,
    http_date,
    message_md5,
    push_headers,
    push_path,
    render,
    string_to_sign,
)
from gateway.errors import DeliveryError
from gateway.errors.delivery import UnrenderableMessageError
from gateway.protocol.notify import ContentFormat
from tests.support.notifications import billing_notification

SEED_MESSAGE = '{1:"a", 2:"b"}'
NS = "{http://mns.aliyuncs.com/doc/v1/}"

TAGGED = billing_notification(
    SEED_MESSAGE,
    tag="important",
    message_id="6CC4D900CA59A2CD-1-15180534A8F-200000002",
    publish_time_ms=1449556920975,
)
UNTAGGED = dataclasses.replace(TAGGED, message_tag=None)


def with_message(message: str) -> PushNotification:
    return dataclasses.replace(TAGGED, message=message, message_md5=message_md5(message))


def test_message_md5_is_uppercase_hex_of_the_utf8_body() -> None:
    # The MNS documentation's sample:
    assert message_md5(SEED_MESSAGE) == "F1E92841751D795AB325861034B5CB55"
    assert message_md5("") == "D41D8CD98F00B204E9800998ECF8427E"
    assert message_md5("消息") == hashlib.md5("消息".encode()).hexdigest().upper()


def test_xml_body_is_exact() -> None:
    rendered = render(TAGGED, ContentFormat.XML)

    assert rendered.content_type == "text/xml;charset=utf-8"
    assert rendered.body == (
        b'<?xml version="1.0" encoding="utf-8"?>'
        b'<Notification xmlns="http://mns.aliyuncs.com/doc/v1/">'
        b"<TopicOwner>1234567890</TopicOwner>"
        b"<TopicName>orders</TopicName>"
        b"<Subscriber>1234567890</Subscriber>"
        b"<SubscriptionName>billing</SubscriptionName>"
        b"<MessageId>6CC4D900CA59A2CD-1-15180534A8F-200000002</MessageId>"
        b'<Message>{1:"a", 2:"b"}</Message>'
        b"<MessageMD5>F1E92841751D795AB325861034B5CB55</MessageMD5>"
        b"<MessageTag>important</MessageTag>"
        b"<PublishTime>1449556920975</PublishTime>"
        b"</Notification>"
    )


def test_xml_body_leaves_out_an_absent_tag() -> None:
    root = ElementTree.fromstring(render(UNTAGGED, ContentFormat.XML).body)

    assert [child.tag.removeprefix(NS) for child in root] == [
        "TopicOwner",
        "TopicName",
        "Subscriber",
        "SubscriptionName",
        "MessageId",
        "Message",
        "MessageMD5",
        "PublishTime",
    ]


@pytest.mark.parametrize(
    "message",
    [
        "<b>bold</b> & 'quotes' \"double\"",
        "]]> end of a CDATA section",
        "line one\r\nline two\rline three\n\ttabbed  ",
        "中文消息 with emoji 🎉",
        "&amp; is already an entity",
        "",
    ],
)
def test_xml_body_is_well_formed_and_round_trips_the_message(message: str) -> None:
    notification = with_message(message)
    root = ElementTree.fromstring(render(notification, ContentFormat.XML).body)

    assert root.tag == f"{NS}Notification"
    assert (root.findtext(f"{NS}Message") or "") == message
    assert root.findtext(f"{NS}MessageMD5") == notification.message_md5


def unhashable(message: str) -> PushNotification:
    """A notification no client could have published (its MD5 does not matter here)."""
    return dataclasses.replace(TAGGED, message=message, message_md5="0" * 32)


@pytest.mark.parametrize("message", ["bell \x07", "nul \x00", "noncharacter \ufffe", "\ud800"])
def test_text_xml_cannot_carry_is_refused(message: str) -> None:
    with pytest.raises(UnrenderableMessageError) as caught:
        render(unhashable(message), ContentFormat.XML)
    assert isinstance(caught.value, DeliveryError)
    assert str(caught.value).startswith("Message holds a character")


#: What XML 1.0 cannot carry (its Char production), written out here apart from the code.
FORBIDDEN = {*map(chr, range(0x20)), "\ufffe", "\uffff", *map(chr, range(0xD800, 0xE000))} - {
    "\t",
    "\n",
    "\r",
}


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(max_codepoint=0xFFFF), max_size=40))
def test_xml_refuses_exactly_what_xml_cannot_carry(message: str) -> None:
    """Printable text skips the search for forbidden characters: nothing forbidden gets by."""
    notification = unhashable(message)
    if FORBIDDEN & set(message):
        with pytest.raises(UnrenderableMessageError):
            render(notification, ContentFormat.XML)
    else:
        root = ElementTree.fromstring(render(notification, ContentFormat.XML).body)
        assert (root.findtext(f"{NS}Message") or "") == message


def test_json_body_is_exact_and_all_strings() -> None:
    rendered = render(TAGGED, ContentFormat.JSON)

    assert rendered.content_type == "application/json;charset=utf-8"
    assert rendered.body == (
        b'{"TopicOwner":"1234567890","TopicName":"orders","Subscriber":"1234567890",'
        b'"SubscriptionName":"billing","MessageId":"6CC4D900CA59A2CD-1-15180534A8F-200000002",'
        b'"Message":"{1:\\"a\\", 2:\\"b\\"}","MessageMD5":"F1E92841751D795AB325861034B5CB55",'
        b'"MessageTag":"important","PublishTime":"1449556920975"}'
    )
    assert all(isinstance(value, str) for value in json.loads(rendered.body).values())


def test_json_body_leaves_out_an_absent_tag_and_keeps_unicode() -> None:
    notification = dataclasses.replace(with_message("订单 \u2028 \n"), message_tag=None)
    decoded = json.loads(render(notification, ContentFormat.JSON).body.decode("utf-8"))

    assert "MessageTag" not in decoded
    assert decoded["Message"] == "订单 \u2028 \n"
    assert decoded["PublishTime"] == "1449556920975"


def test_simplified_body_is_the_message_unchanged() -> None:
    notification = with_message("<not xml> 中文 \r\n")
    rendered = render(notification, ContentFormat.SIMPLIFIED)

    assert rendered == RenderedPush("<not xml> 中文 \r\n".encode(), "text/plain;charset=utf-8")


def test_a_lone_surrogate_cannot_be_rendered_in_any_format() -> None:
    for fmt in ContentFormat:
        with pytest.raises(UnrenderableMessageError):
            render(unhashable("\udfff"), fmt)


def test_content_md5_is_base64_of_the_lowercase_hex_digest() -> None:
    body = render(TAGGED, ContentFormat.XML).body
    value = content_md5(body)

    assert len(value) == 44
    assert base64.b64decode(value).decode("ascii") == hashlib.md5(body).hexdigest()


def headers_for(notification: PushNotification) -> list[tuple[str, str]]:
    return push_headers(
        notification,
        render(notification, ContentFormat.XML),
        date="Tue, 08 Dec 2015 06:42:00 GMT",
        request_id="56667BB81FD0E7D1200024A0",
        signing_cert_url="http://127.0.0.1:8080/certs/0123456789abcdef.pem",
    )


def test_push_headers_have_the_exact_spellings_values_and_order() -> None:
    body = render(TAGGED, ContentFormat.XML).body

    assert headers_for(TAGGED) == [
        ("Content-md5", content_md5(body)),
        ("Content-Type", "text/xml;charset=utf-8"),
        ("Date", "Tue, 08 Dec 2015 06:42:00 GMT"),
        ("User-Agent", "Aliyun Notification Service Agent"),
        ("x-mns-request-id", "56667BB81FD0E7D1200024A0"),
        ("x-mns-version", "2015-06-06"),
        (
            "x-mns-signing-cert-url",
            "aHR0cDovLzEyNy4wLjAuMTo4MDgwL2NlcnRzLzAxMjM0NTY3ODlhYmNkZWYucGVt",
        ),
        ("x-mns-message-id", "6CC4D900CA59A2CD-1-15180534A8F-200000002"),
        ("x-mns-publish-time", "1449556920975"),
        ("x-mns-topic-owner", "1234567890"),
        ("x-mns-topic-name", "orders"),
        ("x-mns-subscriber", "1234567890"),
        ("x-mns-subscription-name", "billing"),
        ("x-mns-message-tag", "important"),
    ]
    cert_header = dict(headers_for(TAGGED))["x-mns-signing-cert-url"]
    assert base64.b64decode(cert_header) == b"http://127.0.0.1:8080/certs/0123456789abcdef.pem"


def test_push_headers_leave_out_an_absent_tag() -> None:
    names = [name for name, _ in headers_for(UNTAGGED)]

    assert "x-mns-message-tag" not in names
    assert names[-1] == "x-mns-subscription-name"


@pytest.mark.parametrize("tag", ["two\nlines", "carriage\rreturn"])
def test_a_header_value_with_a_line_break_is_refused(tag: str) -> None:
    with pytest.raises(UnrenderableMessageError, match="'x-mns-message-tag'"):
        headers_for(dataclasses.replace(TAGGED, message_tag=tag))


@pytest.mark.parametrize(
    "unsigned",
    [
        [("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nX: 1")],
        [("mns-creation-traceparent", "a\nb")],
        [("bad\r\nname", "1")],
        [("tracestate", "nul\x00")],
    ],
)
def test_the_unsigned_headers_are_checked_with_the_signed_ones(
    unsigned: list[tuple[str, str]],
) -> None:
    with pytest.raises(UnrenderableMessageError):
        push_headers(
            TAGGED,
            render(TAGGED, ContentFormat.XML),
            date="Tue, 08 Dec 2015 06:42:00 GMT",
            request_id="56667BB81FD0E7D1200024A0",
            signing_cert_url="http://127.0.0.1:8080/certs/0123456789abcdef.pem",
            unsigned=unsigned,
        )


def test_the_unsigned_headers_follow_the_signed_ones() -> None:
    traced = ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    headers = push_headers(
        TAGGED,
        render(TAGGED, ContentFormat.XML),
        date="Tue, 08 Dec 2015 06:42:00 GMT",
        request_id="56667BB81FD0E7D1200024A0",
        signing_cert_url="http://127.0.0.1:8080/certs/0123456789abcdef.pem",
        unsigned=[traced],
    )
    assert headers == [*headers_for(TAGGED), traced]


def test_string_to_sign_reproduces_the_seed_example() -> None:
    cert_url = (
        "aHR0cDovL21uc3Rlc3Qub3NzLWNuLWhhbmd6aG91LmFsaXl1bmNzLmNvbS94NTA5X3B1YmxpY19jZXJ0aWZp"
        "Y2F0ZS5wZW0="
    )
    headers = [
        ("x-mns-version", "2015-06-06"),
        ("Date", "Wed, 25 May 2016 10:46:14 GMT"),
        ("X-MNS-Signing-Cert-Url", cert_url),
        ("content-type", "text/xml;charset=utf-8"),
        ("User-Agent", "Aliyun Notification Service Agent"),
        ("Content-MD5", "ZDgxNjY5ZjFMDQ5MGM0YWMwMWE5ODImZDVIYmQxYjI="),
        ("x-mns-request-id", "57458276F0E3D56D7C00054B"),
    ]

    assert string_to_sign("POST", headers, "/notifications") == (
        "POST\n"
        "ZDgxNjY5ZjFMDQ5MGM0YWMwMWE5ODImZDVIYmQxYjI=\n"
        "text/xml;charset=utf-8\n"
        "Wed, 25 May 2016 10:46:14 GMT\n"
        "x-mns-request-id:57458276F0E3D56D7C00054B\n"
        f"x-mns-signing-cert-url:{cert_url}\n"
        "x-mns-version:2015-06-06\n"
        "/notifications"
    )


def test_string_to_sign_with_missing_md5_and_type_keeps_empty_lines() -> None:
    headers = [("Date", "Thu, 01 Jan 1970 00:00:00 GMT")]

    assert string_to_sign("post", headers, "/p?q=1") == (
        "POST\n\n\nThu, 01 Jan 1970 00:00:00 GMT\n/p?q=1"
    )


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://receiver.example", "/notifications"),
        ("http://receiver.example:8080", "/notifications"),
        ("http://receiver.example?token=abc", "/notifications?token=abc"),
        ("http://receiver.example/", "/"),
        ("https://receiver.example/mns/push", "/mns/push"),
        ("http://receiver.example/a/b?x=1&y=2", "/a/b?x=1&y=2"),
        ("http://receiver.example/push#fragment", "/push"),
        ("http://receiver.example/a b/%7e?q=x y", "/a%20b/%7E?q=x%20y"),
        ("http://receiver.example/a/../b", "/b"),
    ],
)
def test_push_path(url: str, expected: str) -> None:
    assert push_path(url) == expected


def test_http_date_is_rfc1123_gmt() -> None:
    assert http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert http_date(1449556920.975) == "Tue, 08 Dec 2015 06:42:00 GMT"
