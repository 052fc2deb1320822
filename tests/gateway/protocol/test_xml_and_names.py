"""Hardened XML parsing, response rendering, name and endpoint rules."""

from __future__ import annotations

from xml.sax.saxutils import escape

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors.mns import ERROR_TABLE, MNSError
from gateway.protocol.endpoints import (
    HttpEndpoint,
    MailEndpoint,
    QueueEndpoint,
    SmsEndpoint,
    parse_endpoint,
)
from gateway.protocol.names import validate_name
from gateway.protocol.text import unstorable
from gateway.protocol.xml import child_text, escape_text, parse_document, render_document


def test_render_escapes_and_namespaces() -> None:
    document = render_document("Message", [("MessageBody", "<a & b>"), ("List", [("X", "1")])])
    assert document.endswith(
        b'<Message xmlns="http://mns.aliyuncs.com/doc/v1/">\n'
        b"  <MessageBody>&lt;a &amp; b&gt;</MessageBody>\n"
        b"  <List>\n"
        b"    <X>1</X>\n"
        b"  </List>\n"
        b"</Message>"
    )
    root = parse_document(document, "Message")
    assert child_text(root, "MessageBody") == "<a & b>"


@given(st.text(alphabet=st.sampled_from("ab&<>\r\n\t ;#13\u00e9\u4e2d\U0001f600\"'")))
def test_element_text_is_read_back_as_written(text: str) -> None:
    """The written-out escape is the standard library's, with CR as a reference, and a parser
    hands back exactly the text that was rendered."""
    assert escape_text(text) == escape(text, {"\r": "&#13;"})
    assert unstorable(text) is None
    root = parse_document(render_document("Message", [("MessageBody", text)]), "Message")
    assert (child_text(root, "MessageBody") or "") == text


def test_parse_rejects_unexpected_root() -> None:
    with pytest.raises(MNSError) as caught:
        parse_document(b"<Queue/>", "Topic")
    assert caught.value.code == "InvalidArgument"


@pytest.mark.parametrize(
    "kind,codes",
    [
        ("queue", ("QueueNameLengthError", "InvalidQueueName")),
        ("topic", ("TopicNameLengthError", "TopicNameInvalid")),
        ("subscription", ("SubscriptionNameLengthError", "SubscriptionNameInvalid")),
    ],
)
def test_name_rules(kind: str, codes: tuple[str, str]) -> None:
    assert validate_name(kind, "a" * 256) == "a" * 256
    assert validate_name(kind, "9-x") == "9-x"
    for name, code in (("", codes[0]), ("a" * 257, codes[0]), ("-a", codes[1]), ("a_b", codes[1])):
        with pytest.raises(MNSError) as caught:
            validate_name(kind, name)
        assert caught.value.code == code


def test_endpoint_forms() -> None:
    assert parse_endpoint("http://h/p") == HttpEndpoint("http://h/p")
    assert parse_endpoint("acs:mns:cn-hangzhou:123:queues/q-1") == QueueEndpoint(
        "cn-hangzhou", "123", "q-1"
    )
    assert parse_endpoint("mail:directmail:a@b.test") == MailEndpoint("a@b.test")
    assert parse_endpoint("sms:directsms:anonymous") == SmsEndpoint("anonymous")
    for bad in ("http://h:99999/", "http://h/mns-reserved-x", "https://", "queue:x"):
        with pytest.raises(MNSError):
            parse_endpoint(bad)


def test_error_table_statuses_match_the_api_reference() -> None:
    expected = {
        "TimeExpired": 408,
        "MessageNotExist": 404,
        "QueueAlreadyExist": 409,
        "SignatureDoesNotMatch": 403,
        "InvalidDigest": 400,
        "TopicNotExist": 404,
    }
    assert {code: ERROR_TABLE[code][0] for code in expected} == expected
    with pytest.raises(ValueError):
        MNSError("NoSuchCode")
