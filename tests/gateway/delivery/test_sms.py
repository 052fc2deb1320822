"""Who an SmsEndpoint subscription texts, and with which parameters
(docs/delivery.md#sms-endpoints)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.delivery.records import DeliveryJob
from gateway.delivery.sms import SmsMessage, prepare_sms
from gateway.errors import PermanentDeliveryError
from gateway.topics.direct import SmsType
from gateway.topics.records import Subscription, TopicMessage


def sms_job(
    endpoint: str, direct_sms: dict[str, Any] | None, delivery_id: str = "d1"
) -> DeliveryJob:
    attributes = {"MessageAttributes": {"DirectSMS": json.dumps(direct_sms)}} if direct_sms else {}
    message = TopicMessage("M1", "orders", "body", "", 1_700_000_000_000, attributes=attributes)
    return DeliveryJob(delivery_id, 0, message, Subscription("orders", "texts", endpoint), "sms")


def direct(
    sms_type: str = "singleContent", receiver: str = "", params: Any = None
) -> dict[str, Any]:
    return {
        "FreeSignName": "Shop",
        "TemplateCode": "SMS_1",
        "Type": sms_type,
        "Receiver": receiver,
        "SmsParams": json.dumps(params if params is not None else {"code": "42"}),
    }


def test_a_phone_endpoint_texts_its_number_whatever_receiver_says() -> None:
    sms = prepare_sms(sms_job("sms:directsms:13800000000", direct(receiver="13900000000")))
    assert sms.type is SmsType.SINGLE
    assert sms.messages == (SmsMessage("13800000000", "Shop", "SMS_1", {"code": "42"}),)


def test_anonymous_single_content_texts_every_receiver_the_same() -> None:
    job = sms_job("sms:directsms:anonymous", direct(receiver="13800000001, +8613800000002"))
    sms = prepare_sms(job)
    assert [m.phone_number for m in sms.messages] == ["13800000001", "+8613800000002"]
    assert {json.dumps(dict(m.template_param)) for m in sms.messages} == {'{"code": "42"}'}


def test_anonymous_multi_content_texts_each_number_its_own_parameters() -> None:
    params = {"13800000001": {"name": "Ann"}, "13800000002": {"name": "Bo"}}
    sms = prepare_sms(sms_job("sms:directsms:anonymous", direct("multiContent", params=params)))
    assert sms.type is SmsType.MULTI
    assert [(m.phone_number, m.template_param) for m in sms.messages] == list(params.items())


@pytest.mark.parametrize(
    ("endpoint", "direct_sms", "reason"),
    [
        ("sms:directsms:anonymous", None, "no DirectSMS attribute"),
        ("sms:directsms:anonymous", direct(), "Receiver is required"),
        (
            "sms:directsms:13800000000",
            direct("multiContent", params={"13800000001": {}}),
            "only for sms:directsms:anonymous",
        ),
        ("sms:directsms:anonymous", {**direct(), "Type": "x"}, "Type must be"),
        ("http://127.0.0.1:9/", direct(receiver="13800000000"), "not an SMS endpoint"),
    ],
)
def test_a_message_that_can_never_be_texted_is_permanent(
    endpoint: str, direct_sms: dict[str, Any] | None, reason: str
) -> None:
    with pytest.raises(PermanentDeliveryError, match=reason):
        prepare_sms(sms_job(endpoint, direct_sms))
