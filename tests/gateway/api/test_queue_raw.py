"""Queue requests the SDK cannot send: receipt-handle edge cases, batch partial failures as they
look on the wire, bad parameters, the operation-log hook, restarts and concurrent consumers."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from mns.account import Account
from mns.mns_exception import MNSServerException
from mns.queue import Message, QueueMeta
from werkzeug.serving import make_server

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.observability.metrics import GatewayMetrics
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import compose_store
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, start_gateway
from tests.gateway.api.sdk import NS
from tests.mns_http import RawClient, RawResponse


def queue_xml(**attributes: object) -> bytes:
    inner = "".join(f"<{name}>{value}</{name}>" for name, value in attributes.items())
    return f'<?xml version="1.0" encoding="UTF-8"?><Queue {NS}>{inner}</Queue>'.encode()


def message_xml(body: str, **fields: object) -> str:
    extra = "".join(f"<{name}>{value}</{name}>" for name, value in fields.items())
    return f"<Message><MessageBody>{body}</MessageBody>{extra}</Message>"


def values(response: RawResponse, element: str) -> list[str]:
    return re.findall(rf"<{element}>([^<]*)</{element}>", response.body.decode())


def assert_error(response: RawResponse, status: int, code: str) -> None:
    assert (response.status, response.error_code()) == (status, code), response.body


@pytest.fixture()
def queue(raw: RawClient, unique: str) -> str:
    assert raw.send("PUT", f"/queues/{unique}", queue_xml(VisibilityTimeout=60)).status == 201
    return unique


def send(raw: RawClient, queue: str, *bodies: str) -> None:
    xml = f"<Messages {NS}>{''.join(message_xml(b) for b in bodies)}</Messages>"
    assert raw.send("POST", f"/queues/{queue}/messages", xml.encode()).status == 201


def receive_handles(raw: RawClient, queue: str, count: int = 16) -> list[str]:
    response = raw.send("GET", f"/queues/{queue}/messages?numOfMessages={count}")
    assert response.status == 200, response.body
    return values(response, "ReceiptHandle")


# receipt handles ------------------------------------------------------------------------------
def test_handles_with_plus_and_slash_work_unencoded(raw: RawClient, queue: str) -> None:
    for _ in range(4):
        send(raw, queue, *(f"m{i}" for i in range(16)))
    handles = receive_handles(raw, queue) + receive_handles(raw, queue)
    plus = next(h for h in handles if "+" in h)
    slash = next(h for h in handles if "/" in h and h != plus)
    assert raw.send("DELETE", f"/queues/{queue}/messages?ReceiptHandle={plus}").status == 204
    changed = raw.send("PUT", f"/queues/{queue}/messages?receiptHandle={slash}&visibilityTimeout=9")
    assert changed.status == 200 and values(changed, "NextVisibleTime")
    encoded = next(h for h in handles if h not in (plus, slash))
    uri = f"/queues/{queue}/messages?ReceiptHandle={quote(encoded, safe='')}"
    assert raw.send("DELETE", uri).status == 204  # percent-encoded works as well


def test_a_handle_is_single_use(raw: RawClient, queue: str) -> None:
    send(raw, queue, "x")
    (handle,) = receive_handles(raw, queue)
    uri = f"/queues/{queue}/messages?ReceiptHandle={handle}&VisibilityTimeout=30"
    changed = raw.send("PUT", uri)
    assert changed.status == 200
    (new_handle,) = values(changed, "ReceiptHandle")
    assert new_handle != handle
    # The handle the change replaced names the same receive: it works until the message is
    # deleted (issue 36 item 2, docs/protocol.md#receipt-handles).
    assert raw.send("PUT", uri).status == 200
    assert raw.send("DELETE", f"/queues/{queue}/messages?ReceiptHandle={handle}").status == 204
    for spent in (handle, new_handle):
        delete = f"/queues/{queue}/messages?ReceiptHandle={spent}"
        assert_error(raw.send("DELETE", delete), 404, "MessageNotExist")
        assert_error(raw.send("PUT", f"{delete}&VisibilityTimeout=30"), 404, "MessageNotExist")


def test_a_handle_expires_with_its_visibility_timeout(raw: RawClient, unique: str) -> None:
    assert raw.send("PUT", f"/queues/{unique}", queue_xml(VisibilityTimeout=1)).status == 201
    send(raw, unique, "x")
    (handle,) = receive_handles(raw, unique)
    time.sleep(1.2)  # the smallest VisibilityTimeout the service allows is one second
    assert_error(
        raw.send("DELETE", f"/queues/{unique}/messages?ReceiptHandle={handle}"),
        404,
        "MessageNotExist",
    )
    assert len(receive_handles(raw, unique)) == 1  # Active again


def test_forged_and_malformed_handles(raw: RawClient, queue: str, unique: str) -> None:
    send(raw, queue, "x")
    (handle,) = receive_handles(raw, queue)
    forged = handle[:20] + ("B" if handle[20] == "A" else "A") + handle[21:]
    other = f"{unique}-other"
    assert raw.send("PUT", f"/queues/{other}", queue_xml()).status == 201
    for target, bad in (
        (queue, forged),
        (queue, "1-ODU4OTkzNDU5My0xNDM1MTk3NjAwLTItNg=="),
        (queue, "@@@"),
        (other, handle),
    ):
        response = raw.send("DELETE", f"/queues/{target}/messages?ReceiptHandle={bad}")
        assert_error(response, 400, "ReceiptHandleError")
    assert raw.send("DELETE", f"/queues/{queue}/messages?ReceiptHandle={handle}").status == 204


def test_missing_parameters(raw: RawClient, queue: str) -> None:
    assert_error(raw.send("DELETE", f"/queues/{queue}/messages"), 400, "MissingReceiptHandle")
    assert_error(
        raw.send("PUT", f"/queues/{queue}/messages?VisibilityTimeout=3"),
        400,
        "MissingReceiptHandle",
    )
    assert_error(
        raw.send("PUT", f"/queues/{queue}/messages?ReceiptHandle=abc"),
        400,
        "MissingVisibilityTimeout",
    )
    assert_error(
        raw.send("PUT", f"/queues/{queue}/messages?ReceiptHandle=abc&VisibilityTimeout=43201"),
        400,
        "InvalidArgument",
    )


# batch partial failures on the wire -----------------------------------------------------------
def test_batch_send_partial_failure_body(raw: RawClient, unique: str) -> None:
    assert raw.send("PUT", f"/queues/{unique}", queue_xml(MaximumMessageSize=1024)).status == 201
    body = (
        f"<Messages {NS}>{message_xml('ok')}{message_xml('x' * 1100)}"
        f"{message_xml('bad priority', Priority=17)}{message_xml('fine', MessageGroupId='g')}"
        "</Messages>"
    )
    response = raw.send("POST", f"/queues/{unique}/messages", body.encode())
    assert response.status == 500
    entries = re.findall(r"<Message>(.*?)</Message>", response.body.decode(), re.DOTALL)
    shapes = [re.findall(r"<(\w+)>", entry) for entry in entries]
    assert shapes == [
        ["MessageId", "MessageBodyMD5"],
        ["ErrorCode", "ErrorMessage"],
        ["ErrorCode", "ErrorMessage"],
        ["MessageId", "MessageBodyMD5"],  # no MessageGroupId: the SDK wants exactly two keys
    ]
    assert values(response, "ErrorCode") == ["InvalidArgument", "InvalidArgument"]
    assert len(receive_handles(raw, unique)) == 2


def test_batch_delete_partial_failure_body(raw: RawClient, queue: str) -> None:
    send(raw, queue, "a", "b")
    good, spent = receive_handles(raw, queue)
    assert raw.send("DELETE", f"/queues/{queue}/messages?ReceiptHandle={spent}").status == 204
    body = (
        f"<ReceiptHandles {NS}>"
        + "".join(f"<ReceiptHandle>{h}</ReceiptHandle>" for h in (good, spent, "junk"))
        + "</ReceiptHandles>"
    )
    response = raw.send("DELETE", f"/queues/{queue}/messages", body.encode())
    assert response.status == 404
    assert values(response, "ErrorCode") == ["MessageNotExist", "ReceiptHandleError"]
    assert values(response, "ReceiptHandle") == [spent, "junk"]
    peek = raw.send("GET", f"/queues/{queue}/messages?peekonly=true")
    assert_error(peek, 404, "MessageNotExist")  # the good handle's message went too


# parameters -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "numOfMessages=0",
        "numOfMessages=17",
        "numOfMessages=x",
        "waitseconds=31",
        "waitseconds=-1",
        "peekonly=true&numOfMessages=17",
    ],
)
def test_bad_receive_parameters(raw: RawClient, queue: str, query: str) -> None:
    assert_error(raw.send("GET", f"/queues/{queue}/messages?{query}"), 400, "InvalidArgument")


def test_bad_send_bodies(raw: RawClient, queue: str) -> None:
    uri = f"/queues/{queue}/messages"
    assert_error(raw.send("POST", uri, b"<Message><MessageBody>x</Message>"), 400, "MalformedXML")
    assert_error(raw.send("POST", uri, b"<Note/>"), 400, "InvalidArgument")
    for fields in ({"Priority": 0}, {"DelaySeconds": 604801}):
        body = message_xml("x", **fields).encode()
        assert_error(raw.send("POST", uri, body), 400, "InvalidArgument")
    too_many = f"<Messages>{message_xml('x') * 17}</Messages>".encode()
    assert_error(raw.send("POST", uri, too_many), 400, "InvalidArgument")


def test_bodies_without_namespace_and_empty_create(raw: RawClient, unique: str) -> None:
    assert raw.send("PUT", f"/queues/{unique}").status == 201
    assert raw.send("PUT", f"/queues/{unique}", b"<Queue/>").status == 204
    response = raw.send("POST", f"/queues/{unique}/messages", message_xml("plain").encode())
    assert response.status == 201
    assert values(response, "MessageBodyMD5") == [hashlib.md5(b"plain").hexdigest().upper()]
    peeked = raw.send("GET", f"/queues/{unique}/messages?peekonly=true")
    assert values(peeked, "MessageBody") == ["plain"]


def test_list_queues_with_meta(raw: RawClient, unique: str) -> None:
    assert raw.send("PUT", f"/queues/{unique}", queue_xml(DelaySeconds=3)).status == 201
    response = raw.send(
        "GET", "/queues", headers={"x-mns-prefix": unique, "x-mns-with-meta": "true"}
    )
    assert values(response, "QueueName") == [unique]
    assert values(response, "DelaySeconds") == ["3"]
    assert values(response, "LoggingEnabled") == ["False"]
    plain = raw.send("GET", "/queues", headers={"x-mns-prefix": unique})
    # Without meta, the name beside the URL only (docs/protocol.md#listing).
    assert values(plain, "QueueName") == [unique] and len(values(plain, "QueueURL")) == 1
    assert values(plain, "DelaySeconds") == []


# the operation-log hook -----------------------------------------------------------------------
class RecordingLog:
    def __init__(self) -> None:
        self.records: list[dict[str, object]] = []

    def write(self, record: dict[str, object]) -> None:
        self.records.append(dict(record))


@contextmanager
def serving(tmp_path: Path, **collaborators: Any) -> Iterator[RawClient]:
    """The app in this process on a real server, with the given oplog, metrics..."""
    store = compose_store(SQLiteDatabase(tmp_path / "db.sqlite3"), account_id="42")
    app = create_app(
        Settings(data_dir=tmp_path, account_id="42"),
        store,
        {ACCESS_KEY_ID: ACCESS_KEY_SECRET},
        **collaborators,
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield RawClient("127.0.0.1", server.server_port, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    finally:
        server.shutdown()
        thread.join(timeout=10)
        store.close()


@pytest.fixture()
def logged_gateway(tmp_path: Path) -> Iterator[tuple[RawClient, RecordingLog]]:
    """The app with an operation log to look into."""
    log = RecordingLog()
    with serving(tmp_path, oplog=log) as raw:
        yield raw, log


def test_only_queues_with_logging_enabled_are_logged(
    logged_gateway: tuple[RawClient, RecordingLog],
) -> None:
    raw, log = logged_gateway
    assert raw.send("PUT", "/queues/quiet", queue_xml()).status == 201
    assert raw.send("PUT", "/queues/loud", queue_xml(LoggingEnabled="True")).status == 201
    for name in ("quiet", "loud"):
        send(raw, name, "a", "b")
        handles = receive_handles(raw, name)
        uri = f"/queues/{name}/messages?ReceiptHandle={handles[0]}&VisibilityTimeout=5"
        (changed,) = values(raw.send("PUT", uri), "ReceiptHandle")
        delete = f"/queues/{name}/messages?ReceiptHandle={changed}"
        assert raw.send("DELETE", delete).status == 204
    actions = [r["Action"] for r in log.records]
    assert actions == [
        "BatchSendMessage",
        "BatchSendMessage",
        "BatchReceiveMessage",
        "BatchReceiveMessage",
        "ChangeMessageVisibility",
        "DeleteMessage",
    ]
    assert {r["QueueName"] for r in log.records} == {"loud"}
    change, delete = log.records[4], log.records[5]
    assert change["ReceiptHandleInRequest"] == handles[0]
    assert change["ReceiptHandleInResponse"] == delete["ReceiptHandleInRequest"] == changed
    assert change["MessageId"] == delete["MessageId"]
    for record in log.records:
        assert record["AccountId"] == "42" and record["RemoteAddress"] == "127.0.0.1"
        assert record["RequestId"] and record["ProcessTime"] >= 0
    assert log.records[2]["DequeueCount"] == 1 and log.records[2]["NextVisibleTime"]


def test_dead_lettering_is_logged_and_counted(tmp_path: Path) -> None:
    log, metrics = RecordingLog(), GatewayMetrics()
    with serving(tmp_path, oplog=log, metrics=metrics) as raw:
        assert raw.send("PUT", "/queues/dlq", queue_xml()).status == 201
        policy = '{"DeadLetterTargetQueue":"dlq","MaxReceiveCount":1}'
        created = raw.send("PUT", "/queues/q", queue_xml(LoggingEnabled="True", DlqPolicy=policy))
        assert created.status == 201
        send(raw, "q", "poison")
        (handle,) = receive_handles(raw, "q")
        raw.send("PUT", f"/queues/q/messages?ReceiptHandle={handle}&VisibilityTimeout=0")
        assert_error(raw.send("GET", "/queues/q/messages"), 404, "MessageNotExist")
        (moved_id,) = values(raw.send("GET", "/queues/dlq/messages?peekonly=true"), "MessageId")
    (record,) = [r for r in log.records if r["Action"] == "DeadLetter"]
    assert (record["QueueName"], record["DequeueCount"]) == ("q", 1)
    assert (record["DeadLetterQueue"], record["DeadLetterMessageId"]) == ("dlq", moved_id)
    assert record["MessageId"] == log.records[0]["MessageId"]  # the one sent
    counted = metrics.registry.get_sample_value(
        "mns_dead_letter_queue_messages_total", {"source": "queue", "dead_letter_queue": "dlq"}
    )
    assert counted == 1


# restarts and concurrent consumers ------------------------------------------------------------
def test_messages_survive_a_killed_gateway_in_every_state(tmp_path: Path) -> None:
    first = start_gateway(tmp_path / "data")
    raw = first.raw()
    try:
        assert raw.send("PUT", "/queues/durable", queue_xml(VisibilityTimeout=300)).status == 201
        delayed = message_xml("delayed", DelaySeconds=300)
        assert raw.send("POST", "/queues/durable/messages", delayed.encode()).status == 201
        send(raw, "durable", "inactive")
        (handle,) = receive_handles(raw, "durable")
        send(raw, "durable", "active")
    finally:
        first.kill()
    second = start_gateway(tmp_path / "data")
    raw = second.raw()
    try:
        attributes = raw.send("GET", "/queues/durable")
        counts = [
            values(attributes, name)
            for name in ("ActiveMessages", "InactiveMessages", "DelayMessages")
        ]
        assert counts == [["1"], ["1"], ["1"]]
        peeked = raw.send("GET", "/queues/durable/messages?peekonly=true")
        assert values(peeked, "MessageBody") == ["active"]
        delete = f"/queues/durable/messages?ReceiptHandle={handle}"
        assert raw.send("DELETE", delete).status == 204  # handles outlive the restart
    finally:
        second.stop()


def test_concurrent_consumers_on_two_workers_never_share_a_message(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path / "data", args=("--workers", "2"))
    try:
        producer = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("shared")
        producer.create(QueueMeta(vis_timeout=300))
        for start in range(0, 128, 16):
            producer.batch_send_message([Message(str(i)) for i in range(start, start + 16)])
        received: list[str] = []
        lock = threading.Lock()

        def consume() -> None:
            queue = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("shared")
            for _ in range(200):
                try:
                    batch = queue.batch_receive_message(3)
                except MNSServerException:
                    return
                with lock:
                    received.extend(m.message_id for m in batch)

        consumers = [threading.Thread(target=consume) for _ in range(8)]
        for consumer in consumers:
            consumer.start()
        for consumer in consumers:
            consumer.join(timeout=60)
        assert len(received) == 128
        assert len(set(received)) == 128
    finally:
        gateway.stop()


def test_long_polls_on_two_workers_are_all_woken_by_one_batch(tmp_path: Path) -> None:
    """End to end with two workers (the cross-process path itself is proven in
    tests/gateway/queues/test_long_poll.py, where no re-check could stand in for it)."""
    gateway = start_gateway(tmp_path / "data", args=("--workers", "2"))
    try:
        raw = gateway.raw()
        assert raw.send("PUT", "/queues/poll", queue_xml()).status == 201
        results: list[RawResponse] = []
        pollers = [
            threading.Thread(
                target=lambda: results.append(
                    raw.send("GET", "/queues/poll/messages?waitseconds=20")
                )
            )
            for _ in range(4)  # on new connections, so both workers get some
        ]
        for poller in pollers:
            poller.start()
        time.sleep(0.5)  # let them start waiting
        send(raw, "poll", *(f"m{i}" for i in range(4)))
        for poller in pollers:
            poller.join(timeout=30)
        assert sorted(values(r, "MessageBody")[0] for r in results) == ["m0", "m1", "m2", "m3"]
    finally:
        gateway.stop()
