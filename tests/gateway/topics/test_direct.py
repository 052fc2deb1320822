"""The DirectMail and DirectSMS attributes, as publishers send them and as PublishMessage checks
them (docs/delivery.md#validating-directmail-and-directsms)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mns.topic import DirectMailInfo, DirectSMSInfo

from gateway.errors.mns import MNSError
from gateway.topics.direct import (
    DirectSms,
    SmsType,
    parse_direct_mail,
    parse_direct_sms,
    sms_type_of,
    validate_direct_attributes,
)
from gateway.topics.fanout import matching_subscriptions
from gateway.topics.records import Subscription, TopicMessage

MAIL = {
    "AccountName": "shop@example.test",
    "Subject": "Your order",
    "AddressType": 0,
    "IsHtml": 0,
    "ReplyToAddress": 0,
}


def sdk_direct_sms(single: bool, **receivers: dict[str, str] | None) -> str:
    """DirectSMS exactly as the official Python SDK writes it (SmsParams a JSON string)."""
    info = DirectSMSInfo("Shop", "SMS_0001", single)
    for phone, params in receivers.items():
        info.add_receiver(phone.removeprefix("p"), params)
    if single:
        info.set_params({"code": "1234"})
    return json.dumps(info.get())


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({"IsHtml": 0, "ReplyToAddress": 0}, (False, False)),
        ({"IsHtml": "0", "ReplyToAddress": "false"}, (False, False)),
        ({"IsHtml": "1", "ReplyToAddress": True}, (True, True)),
        ({"IsHtml": 1, "ReplyToAddress": "True"}, (True, True)),
    ],
)
def test_direct_mail_flags_accept_numbers_strings_and_booleans(
    flags: dict[str, Any], expected: tuple[bool, bool]
) -> None:
    parsed = parse_direct_mail(json.dumps({**MAIL, **flags}))
    assert (parsed.is_html, parsed.reply_to_sender) == expected


def test_direct_mail_as_the_sdk_writes_it() -> None:
    info = DirectMailInfo("shop@example.test", "Greetings", 1, 1, 0)
    parsed = parse_direct_mail(json.dumps(info.get()))
    assert (parsed.account_name, parsed.subject, parsed.address_type) == (
        "shop@example.test",
        "Greetings",
        1,
    )
    assert (parsed.is_html, parsed.reply_to_sender) == (True, False)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"AccountName": None}, "AccountName is required"),
        ({"AccountName": "Shop <shop@example.test>"}, "bare e-mail address"),
        ({"AccountName": "TestAccountName"}, "bare e-mail address"),
        ({"Subject": ""}, "Subject is required"),
        ({"Subject": "a\r\nBcc: victim@example.test"}, "one line"),
        ({"AddressType": 2}, "AddressType must be 0 or 1"),
        ({"IsHtml": "yes"}, "IsHtml"),
    ],
)
def test_an_unsendable_direct_mail_is_invalid_argument(
    change: dict[str, Any], problem: str
) -> None:
    fields = {k: v for k, v in {**MAIL, **change}.items() if v is not None}
    with pytest.raises(MNSError, match=problem) as refused:
        parse_direct_mail(json.dumps(fields))
    assert (refused.value.code, refused.value.status) == ("InvalidArgument", 400)


def test_direct_mail_flags_default_to_zero() -> None:
    """What the PHP SDK leaves out when it is told nothing (MailAttributes writes AddressType
    always, the flags only when set); the service's defaults stand in."""
    fields = {"AccountName": "shop@example.test", "Subject": "Hi"}
    parsed = parse_direct_mail(json.dumps(fields))
    assert (parsed.address_type, parsed.is_html, parsed.reply_to_sender) == (0, False, False)


@pytest.mark.parametrize(
    "direct",
    [
        # The official PHP SDK's own TopicTest::testPublishMailMessage, which expects 201:
        # MailAttributes("TestSubject", "TestAccountName") as its writeXML encodes it.
        {"DirectMail": '{"Subject":"TestSubject","AccountName":"TestAccountName",'
         '"AddressType":0,"ReplyToAddress":"0","IsHtml":"0"}'},
        {"DirectMail": json.dumps({"Subject": "Hi"})},
        # Its testPublishDirectSmsMessage: SmsAttributes writes no Type.
        {"DirectSMS": '{"FreeSignName":"Shop","TemplateCode":"SMS_15535414",'
         '"Receiver":"13735576932","SmsParams":"{\\"name\\":\\"phpsdk\\"}"}'},
        {"DirectSMS": json.dumps({"SmsParams": "{oops"})},
    ],
)  # fmt: skip
def test_publish_leaves_deliverability_to_the_delivery(direct: dict[str, str]) -> None:
    validate_direct_attributes(direct)


@pytest.mark.parametrize(
    ("direct", "problem"),
    [
        ({"DirectMail": "[1]"}, "DirectMail must be a JSON object"),
        ({"DirectMail": json.dumps({"IsHtml": "yes"})}, "IsHtml must be 0 or 1"),
        ({"DirectMail": json.dumps({"AddressType": 2})}, "AddressType must be 0 or 1"),
        ({"DirectSMS": json.dumps({"Type": "single"})}, "Type must be singleContent"),
        ({"DirectSMS": '"text"'}, "DirectSMS must be a JSON object"),
    ],
)
def test_publish_refuses_what_it_cannot_read(direct: dict[str, str], problem: str) -> None:
    with pytest.raises(MNSError, match=problem) as refused:
        validate_direct_attributes(direct)
    assert (refused.value.code, refused.value.status) == ("InvalidArgument", 400)


def test_a_single_sms_without_type_is_single_content() -> None:
    raw = json.dumps({"FreeSignName": "Shop", "TemplateCode": "T", "SmsParams": '{"a":"1"}'})
    assert parse_direct_sms(raw).type is SmsType.SINGLE
    assert sms_type_of({"MessageAttributes": {"DirectSMS": raw}}) is SmsType.SINGLE


def test_single_content_from_the_sdk() -> None:
    parsed = parse_direct_sms(sdk_direct_sms(True, p13800000001=None, p13800000002=None))
    assert parsed.sign_name == "Shop" and parsed.template_code == "SMS_0001"
    assert parsed.type is SmsType.SINGLE
    assert sorted(parsed.receivers) == ["13800000001", "13800000002"]
    assert parsed.params == {"code": "1234"}


def test_multi_content_from_the_sdk() -> None:
    raw = sdk_direct_sms(False, p13800000001={"name": "Ann"}, p13800000002={"name": "Bo"})
    parsed = parse_direct_sms(raw)
    assert parsed == DirectSms(
        "Shop",
        "SMS_0001",
        SmsType.MULTI,
        params_by_phone={"13800000001": {"name": "Ann"}, "13800000002": {"name": "Bo"}},
    )


def test_sms_params_may_be_an_object_too() -> None:
    raw = json.dumps(
        {
            "FreeSignName": "Shop",
            "TemplateCode": "T",
            "Type": "singleContent",
            "SmsParams": {"code": 42},
        }
    )
    assert parse_direct_sms(raw).params == {"code": 42}


SMS = {"FreeSignName": "Shop", "TemplateCode": "T", "Type": "singleContent", "SmsParams": "{}"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"FreeSignName": ""}, "FreeSignName is required"),
        ({"TemplateCode": None}, "TemplateCode is required"),
        ({"Type": "single"}, "Type must be singleContent or multiContent"),
        ({"Receiver": "138000,abc"}, "'abc' is not a phone number"),
        ({"Receiver": 13800000000}, "Receiver must be phone numbers"),
        ({"Receiver": ",".join(["13800000000"] * 1001)}, "more than 1000"),
        ({"SmsParams": None}, "SmsParams is required"),
        ({"SmsParams": "[1]"}, "SmsParams is required and must be a JSON object"),
        ({"SmsParams": "{oops"}, "SmsParams must be a JSON object"),
        ({"SmsParams": {"code": {"nested": 1}}}, "strings or numbers"),
        ({"Type": "multiContent"}, "names no phone number"),
        ({"Type": "multiContent", "SmsParams": {"abc": {}}}, "'abc' is not a phone number"),
        ({"Type": "multiContent", "SmsParams": {"13800000000": "x"}}, "strings or numbers"),
        (
            {"Type": "multiContent", "SmsParams": {f"1380000{n:04}": {} for n in range(101)}},
            "more than 100",
        ),
    ],
)
def test_a_malformed_direct_sms_is_invalid_argument(change: dict[str, Any], problem: str) -> None:
    fields = {k: v for k, v in {**SMS, **change}.items() if v is not None}
    with pytest.raises(MNSError, match=problem) as refused:
        parse_direct_sms(json.dumps(fields))
    assert (refused.value.code, refused.value.status) == ("InvalidArgument", 400)


def test_publish_checks_only_the_attributes_it_knows() -> None:
    validate_direct_attributes({"Other": "{}", "DirectSMS": json.dumps(SMS)})
    with pytest.raises(MNSError, match="DirectMail must be JSON"):
        validate_direct_attributes({"DirectMail": "{not json"})


def _message(direct_sms: str | None) -> TopicMessage:
    attributes = {"MessageAttributes": {"DirectSMS": direct_sms}} if direct_sms else {}
    return TopicMessage("M1", "t", "body", "", 0, attributes=attributes)


def test_multi_content_reaches_only_anonymous_sms_subscriptions() -> None:
    subscriptions = [
        Subscription("t", "http", "http://127.0.0.1:9/"),
        Subscription("t", "anonymous", "sms:directsms:anonymous"),
        Subscription("t", "phone", "sms:directsms:13800000000"),
    ]
    multi = sdk_direct_sms(False, p13800000001={"name": "Ann"})
    single = sdk_direct_sms(True, p13800000001=None)

    assert sms_type_of(_message(multi).attributes) is SmsType.MULTI
    names = [s.name for s in matching_subscriptions(subscriptions, _message(multi))]
    assert names == ["http", "anonymous"]
    names = [s.name for s in matching_subscriptions(subscriptions, _message(single))]
    assert names == ["http", "anonymous", "phone"]
    assert len(matching_subscriptions(subscriptions, _message(None))) == 3
