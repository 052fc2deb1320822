"""SMS providers against real local servers: the Alibaba Cloud SMS API (tests/dysmsapi.py) and
a webhook receiver (docs/delivery.md#sms-providers)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.errors import PermanentDeliveryError
from gateway.errors.delivery import SmsConfigError
from gateway.pushing.sms_providers import AliyunSmsSender, WebhookSmsSender, is_permanent_refusal
from gateway.pushing.transport import PushOutcome, PushTransport
from gateway.testing import PushRecorder
from tests.conftest import free_port
from tests.dysmsapi import ACCESS_KEY_ID, ACCESS_KEY_SECRET, SmsApi, sms_api
from tests.gateway.delivery.test_sms import direct, sms_job


@pytest.fixture()
def api() -> Iterator[SmsApi]:
    with sms_api() as running:
        yield running


def aliyun(transport: PushTransport, url: str, secret: str = ACCESS_KEY_SECRET) -> AliyunSmsSender:
    return AliyunSmsSender(
        transport, endpoint=url, access_key_id=ACCESS_KEY_ID, access_key_secret=secret
    )


def test_single_content_is_one_send_sms(api: SmsApi, transport: PushTransport) -> None:
    job = sms_job("sms:directsms:anonymous", direct(receiver="13800000001,13800000002"))

    result = aliyun(transport, api.url).send(job)

    assert (result.outcome, result.status) == (PushOutcome.SUCCESS, 200)
    (call,) = api.calls
    assert call.action == "SendSms"
    assert call.params == {
        "PhoneNumbers": "13800000001,13800000002",
        "SignName": "Shop",
        "TemplateCode": "SMS_1",
        "TemplateParam": '{"code":"42"}',
        "OutId": "M1",
    }
    assert call.headers["x-acs-version"] == "2017-05-25"


def test_multi_content_is_one_send_batch_sms(api: SmsApi, transport: PushTransport) -> None:
    params = {"13800000001": {"name": "安"}, "+8613800000002": {"name": "Bo"}}
    job = sms_job("sms:directsms:anonymous", direct("multiContent", params=params))

    assert aliyun(transport, api.url).send(job).ok

    (call,) = api.calls
    assert call.action == "SendBatchSms"
    assert json.loads(call.params["PhoneNumberJson"]) == ["13800000001", "+8613800000002"]
    assert json.loads(call.params["SignNameJson"]) == ["Shop", "Shop"]
    assert json.loads(call.params["TemplateParamJson"]) == [{"name": "安"}, {"name": "Bo"}]
    assert (call.params["TemplateCode"], call.params["OutId"]) == ("SMS_1", "M1")


@pytest.mark.parametrize(
    ("code", "permanent"),
    [
        ("isv.MOBILE_NUMBER_ILLEGAL", True),
        ("isv.SMS_TEMPLATE_ILLEGAL", True),
        ("isv.BUSINESS_LIMIT_CONTROL", False),
        ("isv.DAY_LIMIT_CONTROL", False),
        ("Throttling.User", False),
        ("isp.SYSTEM_ERROR", False),
        ("SignatureDoesNotMatch", False),
    ],
)
def test_which_refusals_are_permanent(code: str, permanent: bool) -> None:
    assert is_permanent_refusal(code) is permanent


def test_an_isv_refusal_goes_to_the_dead_letters(api: SmsApi, transport: PushTransport) -> None:
    api.answers.append((200, "isv.MOBILE_NUMBER_ILLEGAL"))
    job = sms_job("sms:directsms:13800000000", direct())
    with pytest.raises(PermanentDeliveryError, match=r"isv\.MOBILE_NUMBER_ILLEGAL"):
        aliyun(transport, api.url).send(job)


@pytest.mark.parametrize(
    ("status", "code"),
    [(200, "isv.BUSINESS_LIMIT_CONTROL"), (400, "Throttling.User"), (500, "isp.SYSTEM_ERROR")],
)
def test_limits_and_service_faults_are_retried(
    api: SmsApi, transport: PushTransport, status: int, code: str
) -> None:
    api.answers.append((status, code))
    sender = aliyun(transport, api.url)
    job = sms_job("sms:directsms:13800000000", direct())

    refused, retried = sender.send(job), sender.send(job)

    assert (refused.outcome, refused.status) == (PushOutcome.HTTP_ERROR, status)
    assert refused.error is not None and code in refused.error
    assert retried.ok


def test_a_wrong_secret_is_a_retried_failure(api: SmsApi, transport: PushTransport) -> None:
    result = aliyun(transport, api.url, secret="wrong").send(
        sms_job("sms:directsms:13800000000", direct())
    )
    assert (result.outcome, result.status) == (PushOutcome.HTTP_ERROR, 400)
    assert api.refused == ["SignatureDoesNotMatch"]


def test_an_unreachable_api_is_a_connection_error(transport: PushTransport) -> None:
    result = aliyun(transport, f"http://127.0.0.1:{free_port()}").send(
        sms_job("sms:directsms:13800000000", direct())
    )
    assert (result.outcome, result.status) == (PushOutcome.CONNECTION_ERROR, None)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"access_key_id": ""}, "SMS_ACCESS_KEY_ID"),
        ({"endpoint": "ftp://example.test"}, "SMS_ENDPOINT"),
    ],
)
def test_unusable_aliyun_settings_are_refused(options: dict[str, Any], problem: str) -> None:
    settings = {
        "endpoint": "https://dysmsapi.aliyuncs.com",
        "access_key_id": "id",
        "access_key_secret": "secret",
        **options,
    }
    with pytest.raises(SmsConfigError, match=problem):
        AliyunSmsSender(PushTransport(), **settings)


# the webhook ----------------------------------------------------------------------------------
def test_the_webhook_gets_json_signed_with_the_secret(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    sender = WebhookSmsSender(
        transport, url=f"{endpoint.url}/sms", secret="s3cret", clock=lambda: 1_700_000_000
    )
    job = sms_job("sms:directsms:anonymous", direct(receiver="13800000001,13800000002"))

    assert sender.send(job).ok

    (request,) = endpoint.received
    headers = request.headers  # keyed by lowercased name
    assert (request.path, headers["content-type"]) == ("/sms", "application/json;charset=utf-8")
    document = json.loads(request.body)
    assert document == {
        "MessageId": "M1",
        "TopicName": "orders",
        "SubscriptionName": "texts",
        "Endpoint": "sms:directsms:anonymous",
        "PublishTime": 1_700_000_000_000,
        "Type": "singleContent",
        "SignName": "Shop",
        "TemplateCode": "SMS_1",
        "Messages": [
            {"PhoneNumber": "13800000001", "TemplateParam": {"code": "42"}},
            {"PhoneNumber": "13800000002", "TemplateParam": {"code": "42"}},
        ],
    }
    assert headers["x-mns-gateway-timestamp"] == "1700000000"
    expected = hmac.new(b"s3cret", b"1700000000." + request.body, hashlib.sha256).hexdigest()
    assert headers["x-mns-gateway-signature"] == f"v1={expected}"


def test_a_webhook_error_is_a_failed_attempt(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    endpoint.status = 503
    sender = WebhookSmsSender(transport, url=endpoint.url)
    result = sender.send(sms_job("sms:directsms:13800000000", direct()))
    assert (result.outcome, result.status) == (PushOutcome.HTTP_ERROR, 503)
    assert "x-mns-gateway-signature" not in endpoint.received[0].headers


def test_a_traced_attempt_sends_its_trace_context_to_the_webhook(
    endpoint: PushRecorder, transport: PushTransport
) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from gateway.observability.otel import OtelTracing
    from gateway.observability.tracing import SpanKind

    tracing = OtelTracing(TracerProvider())
    sender = WebhookSmsSender(transport, url=endpoint.url, tracing=tracing)
    span = tracing.start("push texts", SpanKind.CLIENT, activate=True)
    try:
        assert sender.send(sms_job("sms:directsms:13800000000", direct())).ok
    finally:
        span.end()
    assert endpoint.received[0].headers["traceparent"] == span.carrier()["traceparent"]
