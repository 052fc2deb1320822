"""What the SDK cannot send: forged, stale, damaged and hostile requests.

Each must get the right MNS error code and status and leave the stored data untouched.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import time

import pytest

from tests.mns_http import RawClient
from tests.support.app import raw_on_the_app  # noqa: F401 - the fixture `raw`

# Bad input gets its answer from the application, whichever the database: these tests run on the
# app in this process (tests/support/app.py), but for the few, on ``served_raw``, of what the
# HTTP front does with a request's bytes.

TOPIC_XML = (
    b'<?xml version="1.0" encoding="UTF-8"?><Topic xmlns="http://mns.aliyuncs.com/doc/v1/"/>'
)


def message_xml(body: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?><Message xmlns="http://mns.aliyuncs.com/doc/v1/">'
        f"<MessageBody>{body}</MessageBody></Message>"
    ).encode()


def make_topic(raw: RawClient, unique: str) -> str:
    assert raw.send("PUT", f"/topics/{unique}", TOPIC_XML).status == 201
    assert raw.send("POST", f"/topics/{unique}/messages", message_xml("first")).status == 201
    return unique


@pytest.fixture()
def topic(raw: RawClient, unique: str) -> str:
    return make_topic(raw, unique)


def message_count(raw: RawClient, topic: str) -> bytes:
    response = raw.send("GET", f"/topics/{topic}")
    assert response.status == 200
    return response.body.split(b"<MessageCount>")[1].split(b"<")[0]


def assert_error(response, status: int, code: str) -> None:  # type: ignore[no-untyped-def]
    assert (response.status, response.error_code()) == (status, code), response.body
    assert response.headers["x-mns-request-id"]
    assert response.headers["x-mns-version"] == "2015-06-06"
    for element in (b"<Code>", b"<Message>", b"<RequestId>", b"<HostId>"):
        assert element in response.body


def test_every_response_has_lowercase_mns_headers(served_raw: RawClient, unique: str) -> None:
    raw, topic = served_raw, make_topic(served_raw, unique)
    response = raw.send("GET", f"/topics/{topic}")
    assert "x-mns-request-id" in response.headers and "x-mns-version" in response.headers


def test_missing_authorization(raw: RawClient, topic: str) -> None:
    response = raw.send(
        "POST",
        f"/topics/{topic}/messages",
        message_xml("x"),
        sign_request=False,
        headers={"Date": "Sat, 21 Nov 2026 00:00:00 GMT"},
    )
    assert_error(response, 400, "MissingAuthorizationHeader")
    assert message_count(raw, topic) == b"1"


def test_bad_signature(raw: RawClient, topic: str) -> None:
    headers = raw.headers_for("POST", f"/topics/{topic}/messages", message_xml("x"))
    headers["Authorization"] = headers["Authorization"][:-4] + "AAA="
    response = raw.send(
        "POST", f"/topics/{topic}/messages", message_xml("x"), headers, sign_request=False
    )
    assert_error(response, 403, "SignatureDoesNotMatch")
    assert message_count(raw, topic) == b"1"


def test_signature_covers_raw_uri(raw: RawClient, topic: str) -> None:
    headers = raw.headers_for("GET", f"/topics/{topic}?metaoverride=true", b"")
    response = raw.send("GET", f"/topics/{topic}", headers=headers, sign_request=False)
    assert_error(response, 403, "SignatureDoesNotMatch")


def test_unknown_access_key(raw: RawClient, topic: str) -> None:
    stranger = dataclasses.replace(raw, key_id="nobody", secret="secret")
    assert_error(stranger.send("GET", f"/topics/{topic}"), 403, "InvalidAccessKeyId")


def test_wrong_secret(raw: RawClient, topic: str) -> None:
    wrong = dataclasses.replace(raw, secret="not-the-secret")
    assert_error(wrong.send("GET", f"/topics/{topic}"), 403, "SignatureDoesNotMatch")


@pytest.mark.parametrize("value", ["Basic abc", "MNS nocolon", "MNS :sig", "MNS id:"])
def test_malformed_authorization(raw: RawClient, topic: str, value: str) -> None:
    headers = raw.headers_for("GET", f"/topics/{topic}", b"")
    headers["Authorization"] = value
    response = raw.send("GET", f"/topics/{topic}", headers=headers, sign_request=False)
    assert_error(response, 400, "InvalidAuthorizationHeader")


@pytest.mark.parametrize("offset", [-16 * 60, 16 * 60])
def test_stale_or_future_date(raw: RawClient, topic: str, offset: int) -> None:
    response = raw.send(
        "POST", f"/topics/{topic}/messages", message_xml("x"), date=time.time() + offset
    )
    assert_error(response, 408, "TimeExpired")
    assert message_count(raw, topic) == b"1"


def test_date_within_window_is_accepted(raw: RawClient, topic: str) -> None:
    response = raw.send("GET", f"/topics/{topic}", date=time.time() - 14 * 60)
    assert response.status == 200


def test_missing_and_invalid_date(raw: RawClient, topic: str) -> None:
    no_date = raw.headers_for("GET", f"/topics/{topic}", b"")
    del no_date["Date"]
    response = raw.send("GET", f"/topics/{topic}", headers=no_date, sign_request=False)
    assert_error(response, 400, "MissingDateHeader")
    response = raw.send("GET", f"/topics/{topic}", headers={"Date": "yesterday"})
    assert_error(response, 400, "InvalidDateHeader")


def test_x_mns_date_replaces_date(raw: RawClient, topic: str) -> None:
    from email.utils import formatdate

    headers = {"x-mns-date": formatdate(time.time(), usegmt=True), "Date": "garbage"}
    assert raw.send("GET", f"/topics/{topic}", headers=headers).status == 200


def test_content_md5_both_encodings(raw: RawClient, topic: str) -> None:
    body = message_xml("md5")
    rfc1864 = base64.b64encode(hashlib.md5(body).digest()).decode()
    assert raw.send("POST", f"/topics/{topic}/messages", body, content_md5=rfc1864).status == 201
    assert raw.send("POST", f"/topics/{topic}/messages", body).status == 201  # SDK form
    assert message_count(raw, topic) == b"3"


def test_wrong_content_md5(raw: RawClient, topic: str) -> None:
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    response = raw.send("POST", f"/topics/{topic}/messages", message_xml("x"), content_md5=wrong)
    assert_error(response, 400, "InvalidDigest")
    response = raw.send("POST", f"/topics/{topic}/messages", message_xml("x"), content_md5="%%%")
    assert_error(response, 400, "InvalidDigest")
    assert message_count(raw, topic) == b"1"


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Message><MessageBody>&lol3;</MessageBody></Message>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE m [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Message><MessageBody>&xxe;</MessageBody></Message>"""


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["billion-laughs", "xxe"])
def test_hostile_xml_is_refused(raw: RawClient, topic: str, body: bytes) -> None:
    response = raw.send("POST", f"/topics/{topic}/messages", body)
    assert_error(response, 400, "MalformedXML")
    assert b"root:" not in response.body and b"lollol" not in response.body
    assert message_count(raw, topic) == b"1"


@pytest.mark.parametrize("body", [b"<Message><MessageBody>x</Message>", b"not xml", b"   "])
def test_malformed_xml(raw: RawClient, topic: str, body: bytes) -> None:
    assert_error(raw.send("POST", f"/topics/{topic}/messages", body), 400, "MalformedXML")


def test_wrong_root_element(raw: RawClient, topic: str) -> None:
    response = raw.send(
        "POST", f"/topics/{topic}/messages", b"<Topic><MessageBody>x</MessageBody></Topic>"
    )
    assert_error(response, 400, "InvalidArgument")


def test_missing_message_body(raw: RawClient, topic: str) -> None:
    response = raw.send(
        "POST", f"/topics/{topic}/messages", b"<Message><MessageTag>a</MessageTag></Message>"
    )
    assert_error(response, 400, "InvalidArgument")


def test_namespace_variants_are_accepted(raw: RawClient, topic: str) -> None:
    for xmlns in (
        "",
        ' xmlns="http://mns.aliyuncs.com/doc/v1"',
        ' xmlns="http://mns.aliyuncs.com/doc/v1/"',
    ):
        body = f"<Message{xmlns}><MessageBody>ns</MessageBody></Message>".encode()
        assert raw.send("POST", f"/topics/{topic}/messages", body).status == 201
    assert message_count(raw, topic) == b"4"


def test_oversized_body_is_refused_before_parsing(served_raw: RawClient, unique: str) -> None:
    raw, topic = served_raw, make_topic(served_raw, unique)
    body = message_xml("x" * (600 * 1024))
    response = raw.send("POST", f"/topics/{topic}/messages", body)
    assert_error(response, 400, "InvalidArgument")
    assert b"larger than 524288 bytes" in response.body
    assert message_count(raw, topic) == b"1"


def test_message_over_maximum_size(raw: RawClient, unique: str) -> None:
    topic_xml = b"<Topic><MaximumMessageSize>1024</MaximumMessageSize></Topic>"
    assert raw.send("PUT", f"/topics/{unique}", topic_xml).status == 201
    body = message_xml("\u00e9" * 513)  # 1026 UTF-8 bytes, 513 characters
    assert_error(raw.send("POST", f"/topics/{unique}/messages", body), 400, "InvalidArgument")


@pytest.mark.parametrize("size", ["1023", "65537", "big", "-1"])
def test_topic_attribute_ranges(raw: RawClient, unique: str, size: str) -> None:
    body = f"<Topic><MaximumMessageSize>{size}</MaximumMessageSize></Topic>".encode()
    assert_error(raw.send("PUT", f"/topics/{unique}", body), 400, "InvalidArgument")
    assert_error(raw.send("GET", f"/topics/{unique}"), 404, "TopicNotExist")


def test_logging_enabled_must_be_boolean(raw: RawClient, unique: str) -> None:
    body = b"<Topic><LoggingEnabled>maybe</LoggingEnabled></Topic>"
    assert_error(raw.send("PUT", f"/topics/{unique}", body), 400, "InvalidArgument")
    body = b"<Topic><LoggingEnabled>TRUE</LoggingEnabled></Topic>"
    assert raw.send("PUT", f"/topics/{unique}", body).status == 201


def test_names_at_and_beyond_the_limits(raw: RawClient) -> None:
    longest = "n" + "a" * 255
    assert raw.send("PUT", f"/topics/{longest}", TOPIC_XML).status in (201, 204)
    assert_error(raw.send("PUT", f"/topics/{longest}a", TOPIC_XML), 400, "TopicNameLengthError")
    assert_error(raw.send("PUT", "/topics/-starts-with-dash", TOPIC_XML), 400, "TopicNameInvalid")
    assert_error(raw.send("PUT", "/topics/has_underscore", TOPIC_XML), 400, "TopicNameInvalid")
    sub = b"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint></Subscription>"
    assert_error(
        raw.send("PUT", f"/topics/{longest}/subscriptions/{'s' * 257}", sub),
        400,
        "SubscriptionNameLengthError",
    )
    assert_error(
        raw.send("PUT", f"/topics/{longest}/subscriptions/bad.name", sub),
        400,
        "SubscriptionNameInvalid",
    )


@pytest.mark.parametrize("tag", ["", "x" * 17])
def test_filter_tag_length(raw: RawClient, topic: str, tag: str) -> None:
    body = (
        f"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint>"
        f"<FilterTag>{tag}</FilterTag></Subscription>"
    ).encode()
    assert_error(raw.send("PUT", f"/topics/{topic}/subscriptions/s", body), 400, "InvalidArgument")


@pytest.mark.parametrize(
    "element,value", [("NotifyStrategy", "NEVER"), ("NotifyContentFormat", "YAML")]
)
def test_unknown_strategy_or_format(raw: RawClient, topic: str, element: str, value: str) -> None:
    body = (
        f"<Subscription><Endpoint>http://127.0.0.1:9/</Endpoint>"
        f"<{element}>{value}</{element}></Subscription>"
    ).encode()
    assert_error(raw.send("PUT", f"/topics/{topic}/subscriptions/s", body), 400, "InvalidArgument")


def test_message_tag_too_long(raw: RawClient, topic: str) -> None:
    body = (
        b"<Message><MessageBody>x</MessageBody><MessageTag>"
        + b"t" * 17
        + b"</MessageTag></Message>"
    )
    assert_error(raw.send("POST", f"/topics/{topic}/messages", body), 400, "InvalidArgument")
    assert message_count(raw, topic) == b"1"


def test_direct_mail_must_be_json(raw: RawClient, topic: str) -> None:
    body = (
        b"<Message><MessageBody>x</MessageBody><MessageAttributes>"
        b"<DirectMail>{not json</DirectMail></MessageAttributes></Message>"
    )
    assert_error(raw.send("POST", f"/topics/{topic}/messages", body), 400, "InvalidArgument")


def test_unknown_path_and_method(raw: RawClient) -> None:
    assert_error(raw.send("GET", "/nothing-here"), 400, "InvalidRequestURL")
    assert_error(raw.send("PATCH", "/topics/x"), 400, "InvalidRequestURL")


def test_health_probes_need_no_auth(raw: RawClient) -> None:
    assert raw.send("GET", "/healthz", sign_request=False).status == 200
    assert raw.send("GET", "/readyz", sign_request=False).status == 200


def test_oversized_chunked_body_is_refused(served_raw: RawClient, unique: str) -> None:
    """No Content-Length to check up front: the limit is enforced while the body is read."""
    raw, topic = served_raw, make_topic(served_raw, unique)
    import http.client

    body = message_xml("x" * (600 * 1024))
    headers = raw.headers_for("POST", f"/topics/{topic}/messages", body)
    connection = http.client.HTTPConnection(raw.host, raw.port, timeout=30)
    try:
        chunks = (body[i : i + 65536] for i in range(0, len(body), 65536))
        connection.request(
            "POST", f"/topics/{topic}/messages", body=chunks, headers=headers, encode_chunked=True
        )
        response = connection.getresponse()
        status, payload = response.status, response.read()
    finally:
        connection.close()
    assert status == 400 and b"<Code>InvalidArgument</Code>" in payload
    assert message_count(raw, topic) == b"1"
