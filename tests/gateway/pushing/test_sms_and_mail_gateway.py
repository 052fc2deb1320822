"""SMS through each provider and mail through the inbox, end to end: the official SDK publishes to a
real ``mns-gateway serve``, which texts through the local SMS API, a webhook or the inbox, with
retries, dead letters, metrics and operation-log records as for HTTP endpoints."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import DirectMailInfo, DirectSMSInfo, TopicMessage, TopicMeta

from gateway.testing import PushRecorder
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    RunningGateway,
    gateway_fixture,
    start_gateway,
)
from tests.dysmsapi import ACCESS_KEY_ID as SMS_KEY_ID
from tests.dysmsapi import ACCESS_KEY_SECRET as SMS_KEY_SECRET
from tests.dysmsapi import SmsApi, sms_api
from tests.support import oplog

FAST = {"MNS_GATEWAY_RETRY_SCALE": "0.01", "MNS_GATEWAY_PUSH_TIMEOUT": "2"}
T = TypeVar("T")


def eventually(probe: Callable[[], T | None], seconds: float = 20) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if (found := probe()) is not None:
            return found
        time.sleep(0.05)
    raise AssertionError("the expected state never came")


def signed_json(gateway: RunningGateway, method: str, path: str) -> Any:
    response = gateway.raw().send(method, path)
    assert response.status == 200, response.body
    return json.loads(response.body)


def sms_topic(account: Account, topic: str, *endpoints: str, logging: bool = False) -> Any:
    account.get_topic(topic).create(TopicMeta(logging_enabled=logging))
    for number, endpoint in enumerate(endpoints):
        meta = SubscriptionMeta(endpoint, notify_content_format="SIMPLIFIED")
        account.get_topic(topic).get_subscription(f"s{number}").subscribe(meta)
    return account.get_topic(topic)


def single(*receivers: str, **params: str) -> DirectSMSInfo:
    info = DirectSMSInfo("Shop", "SMS_100", True)
    for phone in receivers:
        info.add_receiver(phone)
    info.set_params(params)
    return info


def dead_letters(gateway: RunningGateway, topic: str, count: int) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | None:
        letters = signed_json(gateway, "GET", f"/admin/dead-letters?topic={topic}")["DeadLetters"]
        return letters if len(letters) >= count else None

    return eventually(probe)


def metric(gateway: RunningGateway, line_start: str) -> float:
    body = gateway.raw().send("GET", "/metrics", sign_request=False).body.decode()
    values = [
        float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith(line_start)
    ]
    return sum(values)


# the Alibaba Cloud SMS API ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def aliyun(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[RunningGateway, SmsApi, Path]]:
    logs = tmp_path_factory.mktemp("sms-oplog")
    with sms_api() as api:
        env = {
            **FAST,
            "MNS_GATEWAY_SMS_PROVIDER": "aliyun",
            "MNS_GATEWAY_SMS_ENDPOINT": api.url,
            "MNS_GATEWAY_SMS_ACCESS_KEY_ID": SMS_KEY_ID,
            "MNS_GATEWAY_SMS_ACCESS_KEY_SECRET": SMS_KEY_SECRET,
            "MNS_GATEWAY_LOG_DIR": str(logs),
        }
        gateway = start_gateway(tmp_path_factory.mktemp("sms-gateway"), env)
        yield gateway, api, logs
        gateway.stop()


def test_sms_through_the_alibaba_cloud_api(
    aliyun: tuple[RunningGateway, SmsApi, Path], unique: str
) -> None:
    gateway, api, _ = aliyun
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = sms_topic(account, unique, "sms:directsms:13800000000", "sms:directsms:anonymous")
    batch = DirectSMSInfo("Shop", "SMS_200", False)
    batch.add_receiver("13900000001", {"name": "Ann"})
    batch.add_receiver("13900000002", {"name": "Bo"})

    first = topic.publish_message(
        TopicMessage("ignored", direct_sms=single("13700000000", code="7"))
    )
    second = topic.publish_message(TopicMessage("ignored", direct_sms=batch))

    calls = api.wait_for(3)
    by_target = {
        (c.action, c.params.get("PhoneNumbers") or c.params["PhoneNumberJson"]): c for c in calls
    }
    to_phone = by_target["SendSms", "13800000000"]
    assert (to_phone.params["OutId"], to_phone.params["TemplateParam"]) == (
        first.message_id,
        '{"code":"7"}',
    )
    assert by_target["SendSms", "13700000000"].params["SignName"] == "Shop"
    batched = by_target["SendBatchSms", '["13900000001","13900000002"]']
    assert batched.params["OutId"] == second.message_id
    assert json.loads(batched.params["TemplateParamJson"]) == [{"name": "Ann"}, {"name": "Bo"}]
    time.sleep(0.3)  # the phone subscription must never get the multiContent message
    assert len(api.calls) == 3


def test_sms_retries_dead_letters_metrics_and_operation_log(
    aliyun: tuple[RunningGateway, SmsApi, Path], unique: str
) -> None:
    gateway, api, logs = aliyun
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = sms_topic(account, unique, "sms:directsms:13800000000", logging=True)
    failed_before = metric(
        gateway, 'mns_delivery_attempts_total{outcome="http_error",result="failed"}'
    )
    dead_before = metric(gateway, 'mns_dead_letters_total{reason="the SMS API refused the message')
    calls_before = len(api.calls)

    api.answers += [(500, "isp.SYSTEM_ERROR"), (200, "isv.BUSINESS_LIMIT_CONTROL")]
    retried = topic.publish_message(TopicMessage("x", direct_sms=single(code="1")))
    api.wait_for(calls_before + 3)
    api.answers.append((200, "isv.MOBILE_NUMBER_ILLEGAL"))
    refused = topic.publish_message(TopicMessage("x", direct_sms=single(code="2")))

    (letter,) = dead_letters(gateway, unique, 1)
    assert letter["MessageId"] == refused.message_id
    assert letter["Reason"].startswith("the SMS API refused the message: isv.MOBILE_NUMBER_ILLEGAL")
    assert (
        metric(gateway, 'mns_delivery_attempts_total{outcome="http_error",result="failed"}')
        >= failed_before + 2
    )
    assert (
        metric(gateway, 'mns_dead_letters_total{reason="the SMS API refused the message')
        == dead_before + 1
    )

    def records() -> list[dict[str, Any]] | None:
        mine = [
            r
            for r in oplog.records(logs)
            if r.get("TopicName") == unique and r["Action"] != "PublishMessage"
        ]
        return mine if len(mine) >= 5 else None

    found = eventually(records)
    pushes = [
        (r["MessageId"], r["Attempt"], r["Outcome"]) for r in found if r["Action"] == "PushMessage"
    ]
    # In order per message; across messages the worker may log the refused message's only
    # attempt before the retried one's last (each is written when its push settles).
    assert sorted(pushes, key=lambda push: push[0] != retried.message_id) == [
        (retried.message_id, 1, "http_error"),
        (retried.message_id, 2, "http_error"),
        (retried.message_id, 3, "success"),
        (refused.message_id, 1, "rejected"),
    ]
    assert {r["Endpoint"] for r in found} == {"sms:directsms:13800000000"}
    assert [r["MessageId"] for r in found if r["Action"] == "DeadLetter"] == [refused.message_id]


def test_publish_refuses_a_malformed_direct_sms(
    aliyun: tuple[RunningGateway, SmsApi, Path], unique: str
) -> None:
    gateway, _, _ = aliyun
    gateway.raw().send("PUT", f"/topics/{unique}", b"<Topic/>")
    body = (
        b"<Message><MessageBody>x</MessageBody><MessageAttributes><DirectSMS>"
        b'{"FreeSignName": "Shop", "TemplateCode": "T", "Type": "both", "SmsParams": "{}"}'
        b"</DirectSMS></MessageAttributes></Message>"
    )
    response = gateway.raw().send("POST", f"/topics/{unique}/messages", body)
    assert (response.status, response.error_code()) == (400, "InvalidArgument")
    assert b"Type must be singleContent or multiContent" in response.body


# a webhook --------------------------------------------------------------------------------------
def test_sms_through_a_webhook(tmp_path: Path, endpoint: PushRecorder, unique: str) -> None:
    env = {
        **FAST,
        "MNS_GATEWAY_SMS_PROVIDER": "webhook",
        "MNS_GATEWAY_SMS_WEBHOOK_URL": f"{endpoint.url}/texts",
    }
    endpoint.status = 500  # the first attempt fails and is retried
    gateway = start_gateway(tmp_path, env)
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        topic = sms_topic(account, unique, "sms:directsms:anonymous")
        published = topic.publish_message(
            TopicMessage("x", direct_sms=single("13800000001", code="9"))
        )
        endpoint.wait_for(1, timeout=20)
        endpoint.status = 204
        endpoint.wait_for(2, timeout=20)
    finally:
        gateway.stop()
    first, second = (json.loads(r.body) for r in endpoint.received[:2])
    assert first == second
    assert first["MessageId"] == published.message_id and first["Messages"] == [
        {"PhoneNumber": "13800000001", "TemplateParam": {"code": "9"}}
    ]


# the inbox --------------------------------------------------------------------------------------
inbox_gateway = gateway_fixture(
    "inbox-gateway",
    {**FAST, "MNS_GATEWAY_INBOX": "1", "MNS_GATEWAY_MAIL_FROM": "gateway@example.test"},
)


def inbox(
    gateway: RunningGateway, kind: str, query: str = "", count: int = 0
) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | None:
        messages = signed_json(gateway, "GET", f"/dev/inbox/{kind}{query}")["Messages"]
        return messages if len(messages) >= count else None

    return eventually(probe)


def test_sms_and_mail_land_in_the_inbox(inbox_gateway: RunningGateway, unique: str) -> None:
    account = Account(inbox_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = sms_topic(
        account, unique, "sms:directsms:anonymous", "mail:directmail:you@example.test"
    )
    direct_mail = DirectMailInfo("shop@example.test", "Your code", 0, 1, 1)
    published = topic.publish_message(
        TopicMessage(
            "<b>4242</b>",
            "vip",
            direct_mail=direct_mail,
            direct_sms=single("13800000001", "13800000002", code="4242"),
        )
    )

    texts = inbox(inbox_gateway, "sms", f"?topic={unique}", count=2)
    assert sorted(t["PhoneNumber"] for t in texts) == ["13800000001", "13800000002"]  # SDK: a set
    text = texts[0]
    assert (text["SignName"], text["TemplateCode"], text["TemplateParam"]) == (
        "Shop",
        "SMS_100",
        {"code": "4242"},
    )
    assert (text["MessageId"], text["TopicName"], text["SubscriptionName"]) == (
        published.message_id,
        unique,
        "s0",
    )
    (mail,) = inbox(inbox_gateway, "mail", f"?topic={unique}", count=1)
    assert {k: mail[k] for k in ("From", "To", "Subject", "Body", "IsHtml", "ReplyTo")} == {
        "From": "shop@example.test",
        "To": "you@example.test",
        "Subject": "Your code",
        "Body": "<b>4242</b>",
        "IsHtml": True,
        "ReplyTo": "shop@example.test",
    }
    assert (mail["MessageId"], mail["SubscriptionName"], mail["MessageTag"]) == (
        published.message_id,
        "s1",
        "vip",
    )


def test_inbox_filters_by_recipient_topic_and_time(
    inbox_gateway: RunningGateway, unique: str
) -> None:
    account = Account(inbox_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = sms_topic(account, unique, "sms:directsms:anonymous")
    topic.publish_message(TopicMessage("x", direct_sms=single("13800000011", code="1")))
    (early,) = inbox(inbox_gateway, "sms", f"?topic={unique}", count=1)
    time.sleep(0.01)
    topic.publish_message(TopicMessage("x", direct_sms=single("13800000012", code="2")))
    both = inbox(inbox_gateway, "sms", f"?topic={unique}", count=2)
    late = both[1]

    assert inbox(inbox_gateway, "sms", "?recipient=13800000012") == [late]
    assert inbox(inbox_gateway, "sms", f"?topic={unique}&since={late['Time']}") == [late]
    assert inbox(inbox_gateway, "sms", f"?topic={unique}&until={early['Time']}") == [early]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(early["Time"] // 1000 - 1)) + "Z"
    assert len(inbox(inbox_gateway, "sms", f"?topic={unique}&since={iso}")) == 2
    assert inbox(inbox_gateway, "sms", f"?topic={unique}-other") == []
    response = inbox_gateway.raw().send("GET", "/dev/inbox/sms?since=yesterday")
    assert (response.status, response.error_code()) == (400, "InvalidArgument")


def test_the_inbox_command_and_emptying(inbox_gateway: RunningGateway, unique: str) -> None:
    account = Account(inbox_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    topic = sms_topic(account, unique, "mail:directmail:cli@example.test")
    topic.publish_message(TopicMessage("hello from the cli"))
    inbox(inbox_gateway, "mail", f"?topic={unique}", count=1)

    def cli(*args: str) -> str:
        command = [
            sys.executable,
            "-m",
            "gateway.cli",
            "inbox",
            *args,
            "--data-dir",
            str(inbox_gateway.data_dir),
        ]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=True, env=inbox_gateway.env
        ).stdout

    (mail,) = json.loads(cli("mail", "--topic", unique, "--json"))["Messages"]
    assert (mail["From"], mail["Subject"], mail["Body"]) == (
        "gateway@example.test",
        "MNS message",
        "hello from the cli",
    )
    human = cli("mail", "--recipient", "cli@example.test")
    assert "To: cli@example.test" in human and "Body: hello from the cli" in human

    assert signed_json(inbox_gateway, "DELETE", "/dev/inbox/mail")["Deleted"] >= 1
    assert inbox(inbox_gateway, "mail") == []
    assert "the mail inbox is empty" in cli("mail")


def test_dev_endpoints_are_signed_and_reset_empties_the_gateway(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path, {**FAST, "MNS_GATEWAY_INBOX": "1"})
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        sms_topic(account, "kept-not", "sms:directsms:anonymous").publish_message(
            TopicMessage("x", direct_sms=single("13800000001", code="1"))
        )
        inbox(gateway, "sms", count=1)
        unsigned = gateway.raw().send("GET", "/dev/inbox/sms", sign_request=False)
        assert (unsigned.status, unsigned.error_code()) == (400, "MissingAuthorizationHeader")

        emptied = signed_json(gateway, "POST", "/dev/reset")["Emptied"]
        assert {"topics", "subscriptions", "inbox", "queues", "dead_letters"} <= set(emptied)
        assert account.list_topic()[0] == [] and inbox(gateway, "sms") == []
        assert "signing_keys" not in emptied
        account.get_topic("after").create(TopicMeta())  # still the same credentials
    finally:
        gateway.stop()


def test_without_the_inbox_there_are_no_dev_endpoints(
    aliyun: tuple[RunningGateway, SmsApi, Path],
) -> None:
    gateway, _, _ = aliyun
    for method, path in (
        ("GET", "/dev/inbox/sms"),
        ("DELETE", "/dev/inbox/mail"),
        ("POST", "/dev/reset"),
    ):
        response = gateway.raw().send(method, path)
        assert (response.status, response.error_code()) == (400, "InvalidRequestURL")


#: DirectSMS and DirectMail exactly as the official PHP SDK 1.4.0's writeXML encodes them, from
#: its own tests (TopicTest::testPublishDirectSmsMessage, ::testPublishMailMessage), which
#: expect 201: SmsAttributes writes no Type; MailAttributes writes AddressType, ReplyToAddress
#: and IsHtml as strings, and its test's AccountName is no address.
PHP_SMS = (
    '{"FreeSignName":"Shop","TemplateCode":"SMS_15535414","Receiver":"13735576932",'
    '"SmsParams":"{\\"name\\":\\"phpsdk\\"}"}'
)
PHP_MAIL = (
    '{"Subject":"TestSubject","AccountName":"TestAccountName","AddressType":0,'
    '"ReplyToAddress":"0","IsHtml":"0"}'
)


def _publish_raw(gateway: RunningGateway, topic: str, attribute: str, value: str) -> int:
    body = (
        f"<Message><MessageBody>test</MessageBody><MessageAttributes><{attribute}>{value}"
        f"</{attribute}></MessageAttributes></Message>"
    )
    return gateway.raw().send("POST", f"/topics/{topic}/messages", body.encode()).status


def test_the_php_sdks_sms_and_mail_are_published_and_judged_at_delivery(
    inbox_gateway: RunningGateway, unique: str
) -> None:
    """docs/delivery.md#validating-directmail-and-directsms: Type defaults to singleContent,
    the SMS is sent; the mail from ``TestAccountName`` cannot be, and its dead letter says why."""
    account = Account(inbox_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    sms_topic(account, unique, "sms:directsms:anonymous")
    assert _publish_raw(inbox_gateway, unique, "DirectSMS", PHP_SMS) == 201
    (text,) = inbox(inbox_gateway, "sms", f"?topic={unique}", count=1)
    assert (text["PhoneNumber"], text["TemplateParam"]) == ("13735576932", {"name": "phpsdk"})
    sms_topic(account, f"{unique}m", "mail:directmail:you@example.test")
    assert _publish_raw(inbox_gateway, f"{unique}m", "DirectMail", PHP_MAIL) == 201
    (letter,) = dead_letters(inbox_gateway, f"{unique}m", 1)
    assert "AccountName must be a bare e-mail address" in letter["Reason"]
    assert inbox(inbox_gateway, "mail", f"?topic={unique}m") == []


def test_a_mail_without_flags_is_plain_text_without_reply_to(
    inbox_gateway: RunningGateway, unique: str
) -> None:
    account = Account(inbox_gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    sms_topic(account, unique, "mail:directmail:you@example.test")
    mail = json.dumps({"AccountName": "shop@example.test", "Subject": "Hi"})
    assert _publish_raw(inbox_gateway, unique, "DirectMail", mail) == 201
    (sent,) = inbox(inbox_gateway, "mail", f"?topic={unique}", count=1)
    assert (sent["From"], sent["Subject"], sent["IsHtml"], sent["ReplyTo"]) == (
        "shop@example.test",
        "Hi",
        False,
        None,
    )
