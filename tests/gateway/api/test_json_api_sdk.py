"""The JSON message API (x-mns-version 2026-04-09) through its own SDK,
``alibabacloud-smqproxy20260409`` (V4-signed), on the queues and topics the XML API serves
(docs/protocol.md#the-json-message-api). The client is built by tests/smq_sdk.py, which works
around ``alibabacloud-gateway-mns`` 0.0.3's constructor bug and says so."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from alibabacloud_smqproxy20260409 import models as m
from alibabacloud_smqproxy20260409.client import Client
from mns.account import Account
from mns.message_property import MessagePropertyValue, PropertyType
from mns.queue import Message, QueueMeta
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.conftest import GATEWAY_REGION
from tests.gateway.api.test_temporary_credentials_sdk import issue
from tests.smq_sdk import UnretryableException, smq_client

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
LOCAL = "acs:mns:local:1234567890:queues"


@pytest.fixture()
def smq(gateway_process: RunningGateway) -> Client:
    return smq_client(gateway_process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)


@pytest.fixture()
def queue(account: Account, unique: str) -> str:
    account.get_queue(unique).create(QueueMeta())
    return unique


def refused(call: Callable[[], object]) -> tuple[str, int, dict]:
    """The code, status and JSON error body the gateway answered ``call()`` with."""
    with pytest.raises(UnretryableException) as caught:
        call()
    inner = caught.value.inner_exception  # type: ignore[attr-defined]
    return inner.code, inner.data["statusCode"], inner.data


def peek_all(smq: Client, queue: str) -> list[m.BatchPeekMessageResponseBodyMessages]:
    request = m.BatchPeekMessageRequest(num_of_messages=16, peekonly=True)
    try:
        return smq.batch_peek_message(queue, request).body.messages
    except UnretryableException as error:
        assert error.inner_exception.code == "MessageNotExist"  # type: ignore[attr-defined]
        return []


def receive(
    smq: Client, queue: str, count: int = 16
) -> list[m.BatchReceiveMessageResponseBodyMessages]:
    request = m.BatchReceiveMessageRequest(num_of_messages=count, waitseconds=1)
    return smq.batch_receive_message(queue, request).body.messages


def test_every_queue_operation(smq: Client, queue: str) -> None:
    props = {"kind": m.UserPropertiesValue(data_type="STRING", string_value="order")}
    sent = smq.send_message(queue, m.SendMessageRequest(message_body="one", user_properties=props))
    assert sent.status_code == 201 and sent.body.message_id
    assert sent.body.message_body_md5 == "F97C5D29941BFB1B2FDAB0874906AB82"
    batch = smq.batch_send_message(
        queue,
        m.BatchSendMessageRequest(
            messages=[
                m.BatchSendMessageRequestMessages(message_body="two", priority=1),
                m.BatchSendMessageRequestMessages(message_body="later", delay_seconds=600),
            ]
        ),
    )
    assert batch.status_code == 201 and len(batch.body.messages) == 2
    peeked = peek_all(smq, queue)
    assert [p.message_body for p in peeked] == ["two", "one"]  # priority 1 first; one delayed
    assert (
        peeked[1].user_properties["kind"].string_value == "order" and peeked[1].dequeue_count == 0
    )
    received = receive(smq, queue)
    assert {r.message_body for r in received} == {"one", "two"}
    assert all(r.receipt_handle and r.next_visible_time and r.dequeue_count == 1 for r in received)
    changed = smq.change_message_visibility(
        queue,
        m.ChangeMessageVisibilityRequest(
            receipt_handle=received[0].receipt_handle, visibility_timeout=100
        ),
    )
    assert changed.body.receipt_handle != received[0].receipt_handle
    assert changed.body.next_visible_time > received[0].next_visible_time
    # The handle the change replaced still names the receive (issue 36 item 2).
    again = smq.change_message_visibility(
        queue,
        m.ChangeMessageVisibilityRequest(
            receipt_handle=received[0].receipt_handle, visibility_timeout=200
        ),
    )
    assert again.body.next_visible_time > changed.body.next_visible_time
    handles = [received[0].receipt_handle, received[1].receipt_handle]
    deleted = smq.batch_delete_message(queue, m.BatchDeleteMessageRequest(receipt_handles=handles))
    assert deleted.status_code == 204
    assert peek_all(smq, queue) == []  # the delayed one is not visible


def test_messages_cross_between_the_xml_and_json_apis(
    smq: Client, account: Account, queue: str
) -> None:
    xml_queue = account.get_queue(queue)
    xml_queue.set_encoding(False)
    message = Message("from-xml")
    message.add_user_property("n", MessagePropertyValue(PropertyType.NUMBER, "42"))
    xml_queue.send_message(message)
    (got,) = receive(smq, queue)
    assert got.message_body == "from-xml" and got.user_properties["n"].to_map() == {
        "DataType": "NUMBER",
        "StringValue": "42",
    }
    smq.batch_delete_message(
        queue, m.BatchDeleteMessageRequest(receipt_handles=[got.receipt_handle])
    )
    binary = {"b": m.UserPropertiesValue(data_type="BINARY", binary_value="AAEC")}
    smq.send_message(queue, m.SendMessageRequest(message_body="from-json", user_properties=binary))
    back = xml_queue.receive_message(wait_seconds=1)
    assert back.message_body == "from-json"
    assert back.get_user_properties()["b"].get_raw_value() == b"\x00\x01\x02"


def test_publish_reaches_the_topics_queue_subscribers(
    smq: Client, account: Account, queue: str
) -> None:
    topic = account.get_topic(queue)
    topic.create(TopicMeta())
    topic.get_subscription("s").subscribe(SubscriptionMeta(f"{LOCAL}/{queue}"))
    published = smq.publish_message(
        queue, m.PublishMessageRequest(message_body="news", message_tag="t1")
    )
    assert published.status_code == 201 and published.body.message_id
    assert published.body.message_body_md5 == "508C75C8507A2AE5223DFD2FAEB98122"
    request = m.BatchReceiveMessageRequest(num_of_messages=1, waitseconds=10)
    (pushed,) = smq.batch_receive_message(queue, request).body.messages
    assert "news" in pushed.message_body


def test_errors_are_the_services_in_json(smq: Client, account: Account, queue: str) -> None:
    code, status, body = refused(
        lambda: smq.send_message("nope", m.SendMessageRequest(message_body="x"))
    )
    assert (code, status) == ("QueueNotExist", 404)
    assert set(body) == {"Code", "Message", "RequestId", "HostId", "statusCode"}
    code, status, _ = refused(lambda: receive(smq, queue))
    assert (code, status) == ("MessageNotExist", 404)
    code, status, _ = refused(
        lambda: smq.publish_message("nope", m.PublishMessageRequest(message_body="x"))
    )
    assert (code, status) == ("TopicNotExist", 404)
    code, status, _ = refused(
        lambda: smq.send_message(queue, m.SendMessageRequest(message_body=""))
    )
    assert (code, status) == ("InvalidArgument", 400)
    code, _, _ = refused(
        lambda: smq.send_message(queue, m.SendMessageRequest(message_body="x", priority=17))
    )
    assert code == "InvalidArgument"
    code, _, body = refused(
        lambda: smq.change_message_visibility(
            queue, m.ChangeMessageVisibilityRequest(receipt_handle="bad", visibility_timeout=1)
        )
    )
    assert code == "ReceiptHandleError"
    account.get_topic(queue).create(TopicMeta())
    bad_mail = m.PublishMessageRequestMessageAttributes(direct_mail="{not json")
    code, _, _ = refused(
        lambda: smq.publish_message(
            queue, m.PublishMessageRequest(message_body="x", message_attributes=bad_mail)
        )
    )
    assert code == "InvalidArgument"
    assert peek_all(smq, queue) == []


def test_batches_fail_whole_or_entry_by_entry(smq: Client, account: Account, queue: str) -> None:
    def entries(*bodies: str) -> m.BatchSendMessageRequest:
        return m.BatchSendMessageRequest(
            messages=[m.BatchSendMessageRequestMessages(message_body=b) for b in bodies]
        )

    code, status, _ = refused(lambda: smq.batch_send_message(queue, entries(*["x"] * 17)))
    assert (code, status) == ("InvalidArgument", 400)
    assert peek_all(smq, queue) == []
    code, status, body = refused(lambda: smq.batch_send_message(queue, entries("ok", "")))
    assert (code, status) == ("InvalidArgument", 500)
    assert (
        body["Messages"][0]["MessageId"] and body["Messages"][1]["ErrorCode"] == "InvalidArgument"
    )
    assert [p.message_body for p in peek_all(smq, queue)] == ["ok"]  # sent once, no retry
    (got,) = receive(smq, queue)
    handles = [
        got.receipt_handle,
        "AQ9kbKHZ3yf1AAABohUn8iAxQTIxNTI3N0NFMS1ERTI3QTNDMC0wMDAwMDAwMx1zJsFnK8+cQw08RXaaUhA=",
    ]
    code, status, body = refused(
        lambda: smq.batch_delete_message(
            queue, m.BatchDeleteMessageRequest(receipt_handles=handles)
        )
    )
    assert (code, status) == ("ReceiptHandleError", 404)
    assert [e["ReceiptHandle"] for e in body["Errors"]] == handles[1:]
    code, _, _ = refused(
        lambda: smq.batch_delete_message(queue, m.BatchDeleteMessageRequest(receipt_handles=[]))
    )
    assert code == "InvalidArgument"


def test_temporary_credentials_sign_v4_too(gateway_process: RunningGateway, queue: str) -> None:
    issued = issue(gateway_process)
    client = smq_client(
        gateway_process.url,
        issued["AccessKeyId"],
        issued["AccessKeySecret"],
        security_token=issued["SecurityToken"],
    )
    assert client.send_message(queue, m.SendMessageRequest(message_body="t")).status_code == 201
    wrong = smq_client(
        gateway_process.url,
        issued["AccessKeyId"],
        issued["AccessKeySecret"],
        security_token=issued["SecurityToken"] + "x",
    )
    code, status, _ = refused(
        lambda: wrong.send_message(queue, m.SendMessageRequest(message_body="t"))
    )
    assert (code, status) == ("InvalidSecurityToken", 403)


def test_a_client_configured_for_its_production_region_works(
    gateway_process: RunningGateway, queue: str
) -> None:
    """The SDK as its users configure it for production (``region_id="cn-hangzhou"``) against
    a gateway nobody gave a region: the scope's region is accepted (issue 36 item 1)."""
    hangzhou = smq_client(
        gateway_process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET, region="cn-hangzhou"
    )
    sent = hangzhou.send_message(queue, m.SendMessageRequest(message_body="from hangzhou"))
    assert sent.status_code == 201
    (received,) = receive(hangzhou, queue)
    assert received.message_body == "from hangzhou"
    request = m.BatchDeleteMessageRequest(receipt_handles=[received.receipt_handle])
    assert hangzhou.batch_delete_message(queue, request).status_code == 204
    assert peek_all(hangzhou, queue) == []


def test_a_gateway_given_a_region_refuses_clients_of_another(
    regional_gateway: RunningGateway, unique: str
) -> None:
    """``MNS_GATEWAY_REGION`` set: a scope naming another region is refused with the service's
    error, and nothing is sent; the gateway's own region works."""
    Account(regional_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue(unique).create(
        QueueMeta()
    )
    for region in ("cn-hangzhou", "local"):
        elsewhere = smq_client(
            regional_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET, region=region
        )
        code, status, body = refused(
            lambda client=elsewhere: client.send_message(
                unique, m.SendMessageRequest(message_body="x")
            )
        )
        assert (code, status) == ("SignatureDoesNotMatch", 403)
        assert f"The region '{region}' in the credential scope is wrong" in body["Message"]
        assert "'cn-shanghai'" in body["Message"]
    shanghai = smq_client(
        regional_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET, region=GATEWAY_REGION
    )
    assert peek_all(shanghai, unique) == []
    sent = shanghai.send_message(unique, m.SendMessageRequest(message_body="y"))
    assert sent.status_code == 201


def test_a_client_with_another_secret_is_refused(
    gateway_process: RunningGateway, smq: Client, queue: str
) -> None:
    forged = smq_client(gateway_process.url, ACCESS_KEY_ID, "not-the-secret")
    code, status, _ = refused(
        lambda: forged.send_message(queue, m.SendMessageRequest(message_body="x"))
    )
    assert (code, status) == ("SignatureDoesNotMatch", 403)
    assert peek_all(smq, queue) == []
