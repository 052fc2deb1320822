"""Input a lenient reader would take and MNS refuses, against a real gateway process: integers
that are not ASCII digits, XML in encodings nobody can read, methods a path does not document,
empty path segments, and bodies sent in chunks (which must mean what they say)."""

from __future__ import annotations

import json
import re

import pytest

from gateway.errors.mns import MNSError
from gateway.topics.direct import parse_direct_sms
from tests.gateway.api.sdk import NS
from tests.mns_http import RawClient, RawResponse
from tests.support.app import raw_on_the_app  # noqa: F401 - the fixture `raw`

# What the application accepts is the same on either database: these tests run on the app in
# this process (tests/support/app.py), but for the chunked body, on ``served_raw``.

#: What Python's int() reads as a number and MNS does not.
LENIENT_INTEGERS = ["1_0", "+3", "\u0663", "\uff13", "\uff11\uff16"]


def element(response: RawResponse, name: str) -> str:
    match = re.search(rf"<{name}>([^<]*)</{name}>", response.body.decode())
    assert match, response.body
    return match.group(1)


def assert_error(response: RawResponse, status: int, code: str) -> None:
    assert (response.status, response.error_code()) == (status, code), response.body
    assert response.headers["Content-Type"].startswith("text/xml")


@pytest.fixture()
def queue(raw: RawClient, unique: str) -> str:
    body = f"<Queue {NS}><VisibilityTimeout>60</VisibilityTimeout></Queue>".encode()
    assert raw.send("PUT", f"/queues/{unique}", body).status == 201
    return unique


def queue_attribute(raw: RawClient, queue: str, name: str) -> str:
    response = raw.send("GET", f"/queues/{queue}")
    assert response.status == 200, response.body
    return element(response, name)


# integers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", LENIENT_INTEGERS)
def test_integers_in_xml_bodies_are_ascii_digits(raw: RawClient, queue: str, text: str) -> None:
    message = f"<Message {NS}><MessageBody>m</MessageBody><DelaySeconds>{text}</DelaySeconds>"
    response = raw.send("POST", f"/queues/{queue}/messages", f"{message}</Message>".encode())
    assert_error(response, 400, "InvalidArgument")
    assert queue_attribute(raw, queue, "DelayMessages") == "0"
    attributes = f"<Queue {NS}><VisibilityTimeout>{text}</VisibilityTimeout></Queue>".encode()
    response = raw.send("PUT", f"/queues/{queue}?metaoverride=true", attributes)
    assert_error(response, 400, "InvalidArgument")
    assert queue_attribute(raw, queue, "VisibilityTimeout") == "60"


@pytest.mark.parametrize("text", LENIENT_INTEGERS)
def test_integers_in_query_strings_are_ascii_digits(raw: RawClient, queue: str, text: str) -> None:
    from urllib.parse import quote

    raw.send(
        "POST", f"/queues/{queue}/messages", b"<Message><MessageBody>m</MessageBody></Message>"
    )
    for query in (f"numOfMessages={quote(text)}", f"waitseconds={quote(text)}"):
        response = raw.send("GET", f"/queues/{queue}/messages?{query}")
        assert_error(response, 400, "InvalidArgument")
    assert queue_attribute(raw, queue, "ActiveMessages") == "1"  # nothing was received


@pytest.mark.parametrize("text", ["1_0", "+3", "+10", " 1_0"])
def test_integers_in_headers_are_ascii_digits(raw: RawClient, text: str) -> None:
    response = raw.send("GET", "/queues", headers={"x-mns-ret-number": text})
    assert_error(response, 400, "InvalidArgument")


def test_integers_of_topics_are_ascii_digits(raw: RawClient, unique: str) -> None:
    size = "\uff12\uff10\uff14\uff18"  # 2048 in fullwidth digits
    body = f"<Topic><MaximumMessageSize>{size}</MaximumMessageSize></Topic>".encode()
    assert_error(raw.send("PUT", f"/topics/{unique}", body), 400, "InvalidArgument")
    assert_error(raw.send("GET", f"/topics/{unique}"), 404, "TopicNotExist")


# XML ------------------------------------------------------------------------------------------
UNREADABLE_ENCODINGS = ["bogus", "rot13", "utf-32", "shift_jis", "idna", "undefined"]


@pytest.mark.parametrize("encoding", UNREADABLE_ENCODINGS)
def test_an_unreadable_encoding_is_malformed_xml_on_every_xml_endpoint(
    raw: RawClient, queue: str, unique: str, encoding: str
) -> None:
    declaration = f'<?xml version="1.0" encoding="{encoding}"?>'
    requests = [
        ("PUT", f"/queues/{unique}-new", "<Queue/>"),
        ("PUT", f"/queues/{queue}?metaoverride=true", "<Queue/>"),
        ("POST", f"/queues/{queue}/messages", "<Message><MessageBody>m</MessageBody></Message>"),
        ("POST", f"/queues/{queue}/messages", "<Messages><Message/></Messages>"),
        (
            "DELETE",
            f"/queues/{queue}/messages",
            "<ReceiptHandles><ReceiptHandle/></ReceiptHandles>",
        ),
        ("PUT", f"/topics/{unique}", "<Topic/>"),
        ("PUT", f"/topics/{unique}/subscriptions/s", "<Subscription/>"),
        ("POST", f"/topics/{unique}/messages", "<Message><MessageBody>m</MessageBody></Message>"),
    ]
    for method, uri, document in requests:
        response = raw.send(method, uri, (declaration + document).encode())
        assert_error(response, 400, "MalformedXML")
    assert_error(raw.send("GET", f"/queues/{unique}-new"), 404, "QueueNotExist")
    assert queue_attribute(raw, queue, "ActiveMessages") == "0"


def test_json_attributes_nested_too_deep_are_invalid(raw: RawClient, unique: str) -> None:
    assert raw.send("PUT", f"/topics/{unique}", b"<Topic/>").status == 201
    nested = "[" * 100_000 + "]" * 100_000
    body = (
        "<Message><MessageBody>m</MessageBody><MessageAttributes>"
        f"<DirectMail>{nested}</DirectMail></MessageAttributes></Message>"
    ).encode()
    assert_error(raw.send("POST", f"/topics/{unique}/messages", body), 400, "InvalidArgument")
    # JSON inside a JSON string: DirectSMS's SmsParams, as the official SDK writes it. Publish
    # leaves it to the delivery (docs/delivery.md#validating-directmail-and-directsms), whose
    # parse names the field instead of failing.
    fields = {"FreeSignName": "S", "TemplateCode": "T", "Type": "singleContent"}
    params = json.dumps({**fields, "SmsParams": nested})
    body = (
        "<Message><MessageBody>m</MessageBody><MessageAttributes>"
        f"<DirectSMS>{params}</DirectSMS></MessageAttributes></Message>"
    ).encode()
    assert raw.send("POST", f"/topics/{unique}/messages", body).status == 201
    with pytest.raises(MNSError, match="SmsParams must be a JSON object"):
        parse_direct_sms(params)


# methods and paths ----------------------------------------------------------------------------
def test_head_does_not_receive(raw: RawClient, queue: str) -> None:
    raw.send(
        "POST", f"/queues/{queue}/messages", b"<Message><MessageBody>m</MessageBody></Message>"
    )
    response = raw.send("HEAD", f"/queues/{queue}/messages")
    assert (response.status, response.body) == (400, b"")  # HEAD: the error's head, no body
    assert response.headers["Content-Type"].startswith("text/xml")
    assert queue_attribute(raw, queue, "ActiveMessages") == "1"
    received = raw.send("GET", f"/queues/{queue}/messages")
    assert element(received, "DequeueCount") == "1"


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PATCH", "TRACE"])
@pytest.mark.parametrize(
    "path",
    [
        "/queues",
        "/queues/{q}",
        "/queues/{q}/messages",
        "/topics",
        "/healthz",
        "/admin/dead-letters",
    ],
)
def test_only_documented_methods(raw: RawClient, queue: str, method: str, path: str) -> None:
    response = raw.send(method, path.format(q=queue))
    assert response.status == 400, response.body
    if method != "HEAD":
        assert_error(response, 400, "InvalidRequestURL")
    assert "Allow" not in response.headers
    assert queue_attribute(raw, queue, "InactiveMessages") == "0"


@pytest.mark.parametrize(
    "path",
    [
        "/queues//messages",
        "/admin//dead-letters",
        "/topics//subscriptions",
        "//queues",
        "/queues/{q}//messages",
        "/topics/t//subscriptions/s",
    ],
)
def test_empty_path_segments_are_an_mns_error_not_a_redirect(
    raw: RawClient, queue: str, path: str
) -> None:
    response = raw.send("GET", path.format(q=queue), headers={"Host": "elsewhere.example"})
    assert_error(response, 400, "InvalidRequestURL")
    assert "Location" not in response.headers
    # Only HostId names the host, as the service's does (docs/protocol.md#error-responses).
    assert response.body.count(b"elsewhere.example") == 1
    assert b"<HostId>http://elsewhere.example</HostId>" in response.body


# chunked bodies -------------------------------------------------------------------------------
def test_a_chunked_body_means_what_it_says(served_raw: RawClient, unique: str) -> None:
    raw = served_raw  # what the HTTP front makes of a chunked body: a real server
    body = f"<Queue {NS}><VisibilityTimeout>5</VisibilityTimeout></Queue>".encode()
    assert raw.send("PUT", f"/queues/{unique}", body, chunked=True).status == 201
    assert queue_attribute(raw, unique, "VisibilityTimeout") == "5"
    message = b"<Message><MessageBody>sent in chunks</MessageBody></Message>"
    sent = raw.send("POST", f"/queues/{unique}/messages", message, chunked=True)
    assert sent.status == 201, sent.body
    received = raw.send("GET", f"/queues/{unique}/messages")
    assert element(received, "MessageBody") == "sent in chunks"
