"""Responses shaped as the service's (docs/protocol.md#response-shape): one element per line
and indented as the API reference's examples, the service's reason phrases, no Content-Type on
an empty body, HostId naming the host addressed, names beside the URLs of a listing."""

from __future__ import annotations

import pytest
from mns.account import Account

from gateway.protocol.xml import render_document
from tests.mns_http import RawClient

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: The API reference's error-format example ("错误响应格式"), as printed.
REFERENCE_ERROR = """<?xml version="1.0" encoding="UTF-8"?>
<Error xmlns="http://mns.aliyuncs.com/doc/v1/">
  <Code>InvalidArgument</Code>
  <Message>Authorization header is invalid or missing.</Message>
  <RequestId>04bb60e3-28aa-4706-99b0-9345d834f266</RequestId>
  <HostId>mns.cn-hangzhou.aliyuncs.com</HostId>
</Error>"""
#: Its ListQueue response example, without the blanks it prints inside QueueURL and NextMarker.
REFERENCE_LIST = """<?xml version="1.0" encoding="UTF-8"?>
<Queues xmlns="http://mns.aliyuncs.com/doc/v1/">
  <Queue>
    <QueueURL>http://$AccountId.mns.cn-hangzhou.aliyuncs.com/queues/queueName1</QueueURL>
  </Queue>
  <Queue>
    <QueueURL>http://$AccountId.mns.cn-hangzhou.aliyuncs.com/queues/queueName2</QueueURL>
  </Queue>
  <NextMarker>Base64 Encoded Result</NextMarker>
</Queues>"""
#: Its ReceiveMessage response example, which puts the root's children flush left (and writes
#: ``</FirstDequeueTime >`` and ``</DequeueCount >``, blanks dropped here).
REFERENCE_MESSAGE = """<?xml version="1.0" encoding="UTF-8"?>
<Message xmlns="http://mns.aliyuncs.com/doc/v1/">
<MessageId>5F290C926D472878-2-14D9529A8FA-200000001</MessageId>
<ReceiptHandle>1-ODU4OTkzNDU5My0xNDMyNzI3ODI3LTItOA==</ReceiptHandle>
<MessageBodyMD5>C5DD56A39F5F7BB8B3337C6D11B6D8C7</MessageBodyMD5>
<MessageBody>This is a test message</MessageBody>
<EnqueueTime>1250700979248</EnqueueTime>
<NextVisibleTime>1250700799348</NextVisibleTime>
<FirstDequeueTime>1250700779318</FirstDequeueTime>
<DequeueCount>1</DequeueCount>
<Priority>8</Priority>
</Message>"""


def _nodes_of(reference: str) -> list[tuple[str, str]]:
    """The (element, text) lines of a flat example's body."""
    lines = reference.splitlines()[2:-1]
    return [
        (line[1 : line.index(">")], line[line.index(">") + 1 : line.rindex("<")]) for line in lines
    ]


def test_the_error_and_listing_examples_byte_for_byte() -> None:
    error = [
        ("Code", "InvalidArgument"),
        ("Message", "Authorization header is invalid or missing."),
        ("RequestId", "04bb60e3-28aa-4706-99b0-9345d834f266"),
        ("HostId", "mns.cn-hangzhou.aliyuncs.com"),
    ]
    assert render_document("Error", error).decode() == REFERENCE_ERROR
    url = "http://$AccountId.mns.cn-hangzhou.aliyuncs.com/queues/"
    queues = [("Queue", [("QueueURL", f"{url}queueName{n}")]) for n in (1, 2)]
    listing = [*queues, ("NextMarker", "Base64 Encoded Result")]
    assert render_document("Queues", listing).decode() == REFERENCE_LIST  # type: ignore[arg-type]


def test_a_flat_example_line_for_line() -> None:
    """The same lines; the root's children indented as in the examples that nest."""
    ours = render_document("Message", _nodes_of(REFERENCE_MESSAGE)).decode().splitlines()
    assert [line.strip() for line in ours] == REFERENCE_MESSAGE.splitlines()
    assert all(line.startswith("  <") for line in ours[2:-1])


def test_status_lines_and_content_types(raw: RawClient, unique: str) -> None:
    created = raw.send("PUT", f"/queues/{unique}", b"<Queue/>")
    assert (created.status, created.reason) == (201, "Created")
    assert "Content-Type" not in created.headers and created.body == b""
    same = raw.send("PUT", f"/queues/{unique}", b"<Queue/>")
    assert (same.status, same.reason, same.headers.get("Content-Type")) == (204, "No Content", None)
    sent = raw.send(
        "POST", f"/queues/{unique}/messages", b"<Message><MessageBody>m</MessageBody></Message>"
    )
    assert (sent.status, sent.reason) == (201, "Created")
    assert sent.headers["Content-Type"] == "text/xml;charset=utf-8"
    listed = raw.send("GET", "/queues")
    assert (listed.status, listed.reason) == (200, "OK")
    missing = raw.send("GET", f"/queues/{unique}-none")
    assert (missing.status, missing.reason) == (404, "Not Found")
    assert missing.headers["Content-Type"] == "text/xml;charset=utf-8"
    refused = raw.send("GET", "/queues", sign_request=False)
    assert (refused.status, refused.reason) == (400, "Bad Request")


@pytest.mark.parametrize(
    ("host", "host_id"),
    [
        (
            "1234567890.mns.cn-hangzhou.aliyuncs.com",
            "http://1234567890.mns.cn-hangzhou.aliyuncs.com",
        ),
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("[::1]:80", "http://[::1]:80"),
        ("bad host<>", None),  # not a host: the public URL
    ],
)
def test_host_id_is_the_host_addressed(raw: RawClient, host: str, host_id: str | None) -> None:
    response = raw.send("GET", "/queues/none-such-queue", headers={"Host": host})
    assert response.status == 404
    expected = host_id or f"http://127.0.0.1:{raw.port}"
    assert f"<HostId>{expected}</HostId>".encode() in response.body


def test_listings_carry_the_name_beside_the_url(
    raw: RawClient, account: Account, unique: str
) -> None:
    raw.send("PUT", f"/queues/{unique}", b"<Queue/>")
    raw.send("PUT", f"/topics/{unique}", b"<Topic/>")
    for kind, root in (("queues", "Queue"), ("topics", "Topic")):
        listed = raw.send("GET", f"/{kind}", headers={"x-mns-prefix": unique}).body.decode()
        entry = (
            f"  <{root}>\n    <{root}URL>http://127.0.0.1:{raw.port}/{kind}/{unique}</{root}URL>\n"
            f"    <{root}Name>{unique}</{root}Name>\n  </{root}>\n"
        )
        assert entry in listed
        meta = raw.send(
            "GET", f"/{kind}", headers={"x-mns-prefix": unique, "x-mns-with-meta": "true"}
        )
        assert meta.body.decode().count(f"<{root}Name>") == 1
    # The official Python SDK reads both listings as before.
    assert account.list_queue(prefix=unique)[0] == [f"http://127.0.0.1:{raw.port}/queues/{unique}"]
    assert account.list_topic(prefix=unique)[0] == [f"http://127.0.0.1:{raw.port}/topics/{unique}"]


def test_system_properties_come_before_user_properties(raw: RawClient, unique: str) -> None:
    raw.send("PUT", f"/queues/{unique}", b"<Queue/>")
    body = (
        "<Message><MessageBody>m</MessageBody><UserProperties><PropertyValue><Name>u</Name>"
        "<Value>v</Value><Type>STRING</Type></PropertyValue></UserProperties><SystemProperties>"
        "<SystemPropertyValue><Name>baggage</Name><Value>k=v</Value><Type>STRING</Type>"
        "</SystemPropertyValue></SystemProperties></Message>"
    )
    assert raw.send("POST", f"/queues/{unique}/messages", body.encode()).status == 201
    document = raw.send("GET", f"/queues/{unique}/messages?peekonly=true").body.decode()
    assert document.index("<SystemProperties>") < document.index("<UserProperties>")
    assert document.rstrip().endswith("  </UserProperties>\n</Message>")
