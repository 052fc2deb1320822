"""Bad input on the JSON message API: raw V4-signed requests carrying what the SDK would never
send. Each gets the service's error as JSON (400 InvalidArgument, or the authentication error),
never a 500, and leaves the queue or topic as it was."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from gateway.api import jsonapi
from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import compose_store
from tests.gateway.api.sdk import NS
from tests.mns_http import RawClient, RawResponse
from tests.support.app import raw_on_the_app  # noqa: F401 - the fixture `raw`
from tests.v4_signer import V4RawClient

JSON_HEADERS = {"x-mns-version": "2026-04-09", "Content-Type": "application/json"}


@pytest.fixture()
def client(raw: RawClient) -> V4RawClient:
    """The app over the stub store, in this process (tests/support/app.py): what it answers
    does not depend on the database."""
    return V4RawClient(
        raw.host, raw.port, raw.key_id, raw.secret, dict(JSON_HEADERS), raw.transport
    )


@pytest.fixture()
def queue(client: V4RawClient, unique: str) -> str:
    xml = V4RawClient(client.host, client.port, client.key_id, client.secret, {}, client.transport)
    assert xml.send("PUT", f"/queues/{unique}", f"<Queue {NS}/>".encode()).status == 201
    assert xml.send("PUT", f"/topics/{unique}", f"<Topic {NS}/>".encode()).status == 201
    return unique


def json_error(response: RawResponse) -> tuple[int, str]:
    assert response.headers["Content-Type"].startswith("application/json"), response.headers
    document = json.loads(response.body)
    assert set(document) >= {"Code", "Message", "RequestId", "HostId"}
    return response.status, document["Code"]


def nothing_stored(client: V4RawClient, queue: str) -> bool:
    peeked = client.send("GET", f"/queues/{queue}/messages?peekonly=true&numOfMessages=16")
    return json_error(peeked) == (404, "MessageNotExist")


SEND_BODIES = [
    b"{not json",
    b"",
    b"\xff\xfe",
    b"[]",
    b'"text"',
    b'{"MessageBody": 5}',
    b'{"MessageBody": "x", "DelaySeconds": "5"}',
    b'{"MessageBody": "x", "Priority": true}',
    b'{"MessageBody": "x", "Priority": 1.5}',
    b'{"MessageBody": "x", "DelaySeconds": 604801}',
    b'{"MessageBody": "x", "UserProperties": []}',
    b'{"MessageBody": "x", "UserProperties": {"a": "b"}}',
    b'{"MessageBody": "x", "UserProperties": {"a": {"DataType": "COLOUR", "StringValue": "b"}}}',
    b'{"MessageBody": "x", "UserProperties": {"a": {"DataType": 1}}}',
    b'{"MessageBody": "x", "MessageGroupId": 7}',
    b'{"Messages": {}}',
    b'{"Messages": []}',
    b'{"Messages": ["x"]}',
    json.dumps({"Messages": [{"MessageBody": "x"}] * 17}).encode(),
    json.dumps({"Messages": [{"MessageBody": "x" * 40000}] * 2}).encode(),
    b"[" * 100000 + b"]" * 100000,
]


@pytest.mark.parametrize("body", SEND_BODIES, ids=range(len(SEND_BODIES)))
def test_bad_sends_are_invalid_arguments(client: V4RawClient, queue: str, body: bytes) -> None:
    response = client.send("POST", f"/queues/{queue}/messages", body)
    assert json_error(response) == (400, "InvalidArgument")
    assert nothing_stored(client, queue)


@pytest.mark.parametrize(
    "body",
    [
        b'{"ReceiptHandles": "h"}',
        b'{"ReceiptHandles": []}',
        b'{"ReceiptHandles": [1]}',
        json.dumps({"ReceiptHandles": ["h"] * 17}).encode(),
        b"{",
    ],
)
def test_bad_batch_deletes_are_invalid_arguments(
    client: V4RawClient, queue: str, body: bytes
) -> None:
    assert client.send("POST", f"/queues/{queue}/messages", b'{"MessageBody":"kept"}').status == 201
    response = client.send("DELETE", f"/queues/{queue}/messages", body)
    assert json_error(response) == (400, "InvalidArgument")
    peeked = client.send("GET", f"/queues/{queue}/messages?peekonly=true")
    assert json.loads(peeked.body)["Messages"][0]["MessageBody"] == "kept"


@pytest.mark.parametrize(
    "body",
    [
        b'{"MessageBody": ""}',
        b'{"MessageBody": "x", "MessageTag": 3}',
        b'{"MessageBody": "x", "MessageTag": "' + b"t" * 65 + b'"}',
        b'{"MessageBody": "x", "MessageAttributes": "mail"}',
        b'{"MessageBody": "x", "MessageAttributes": {"DirectMail": {"Subject": "s"}}}',
        b'{"MessageBody": "x", "MessageAttributes": {"DirectMail": "{not json"}}',
        b"not json",
    ],
)
def test_bad_publishes_are_invalid_arguments(client: V4RawClient, queue: str, body: bytes) -> None:
    response = client.send("POST", f"/topics/{queue}/messages", body)
    assert json_error(response) == (400, "InvalidArgument")


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("numOfMessages=17", 400, "InvalidArgument"),
        ("numOfMessages=x", 400, "InvalidArgument"),
        ("waitseconds=31", 400, "InvalidArgument"),
        ("peekonly=true&numOfMessages=0", 400, "InvalidArgument"),
    ],
)
def test_bad_receive_parameters(
    client: V4RawClient, queue: str, query: str, status: int, code: str
) -> None:
    response = client.send("GET", f"/queues/{queue}/messages?{query}")
    assert json_error(response) == (status, code)


@pytest.mark.parametrize(
    "query",
    ["peekonly=%20true", "peekonly=true%09", "peekonly%20=true", "%20PeekOnly=TRUE%0A"],
)
def test_a_peek_reads_the_query_as_it_was_signed(
    client: V4RawClient, queue: str, query: str
) -> None:
    """The V4 signature trims the query's names and values (as the SDK's signer does), so a
    signed ``peekonly=%20true`` says ``peekonly=true``: the view reads that, and peeks. It read
    the untrimmed value and ran a receive, hiding the message and counting a dequeue."""
    assert (
        client.send("POST", f"/queues/{queue}/messages", b'{"MessageBody": "kept"}').status == 201
    )
    for _ in range(2):
        peeked = client.send("GET", f"/queues/{queue}/messages?{query}")
        assert peeked.status == 200, peeked.body
        (message,) = json.loads(peeked.body)["Messages"]
        assert "ReceiptHandle" not in message
        assert (message["MessageBody"], message["DequeueCount"]) == ("kept", 0)


def test_bad_visibility_changes(client: V4RawClient, queue: str) -> None:
    uri = f"/queues/{queue}/messages"
    assert json_error(client.send("PUT", uri)) == (400, "MissingReceiptHandle")
    assert json_error(client.send("PUT", f"{uri}?receiptHandle=h")) == (
        400,
        "MissingVisibilityTimeout",
    )
    bad = client.send("PUT", f"{uri}?receiptHandle=h&visibilityTimeout=-1")
    assert json_error(bad) == (400, "InvalidArgument")


def test_authentication_errors_are_json_too(client: V4RawClient, queue: str) -> None:
    body = b'{"MessageBody": "x"}'
    uri = f"/queues/{queue}/messages"
    unsigned = client.send("POST", uri, body, dict(JSON_HEADERS), sign_request=False)
    assert json_error(unsigned) == (400, "MissingAuthorizationHeader")
    stale = client.send("POST", uri, body, date=time.time() - 3600)
    assert json_error(stale) == (408, "TimeExpired")
    forged = V4RawClient(
        client.host, client.port, client.key_id, "not-the-secret", JSON_HEADERS, client.transport
    )
    assert json_error(forged.send("POST", uri, body)) == (403, "SignatureDoesNotMatch")
    yesterday = client.send("POST", uri, body, scope_day="20200101")
    assert json_error(yesterday) == (403, "SignatureDoesNotMatch")
    assert nothing_stored(client, queue)


def test_every_json_view_answers_for_an_endpoint_of_the_app(tmp_path: Path) -> None:
    """The JSON views are keyed by the XML views' endpoint names: a renamed endpoint would
    silently serve XML to the JSON API's clients."""
    store = compose_store(SQLiteDatabase(tmp_path / "db"))
    app = create_app(Settings(data_dir=tmp_path), store, {})
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert set(jsonapi.VIEWS) <= endpoints
    assert (
        len(jsonapi.VIEWS) == 5
    )  # four on /queues/<name>/messages, one on /topics/<name>/messages
