"""ACS3-HMAC-SHA256, the SMS API's signature (docs/delivery.md#the-alibaba-cloud-sms-api): the
documentation's published example, and the tests' local SMS API checked against the official
Python SDK, so that the gateway's requests are judged by a verifier known to be right."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alibabacloud_dysmsapi20170525 import models
from alibabacloud_dysmsapi20170525.client import Client
from alibabacloud_tea_openapi.models import Config
from Tea.exceptions import TeaException

from gateway.auth.acs3 import sign_rpc
from tests.dysmsapi import ACCESS_KEY_ID, ACCESS_KEY_SECRET, SmsApi, sms_api


def test_the_documented_example_signature() -> None:
    _, headers = sign_rpc(
        host="ecs.cn-shanghai.aliyuncs.com",
        action="RunInstances",
        version="2014-05-26",
        params={
            "ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
            "RegionId": "cn-shanghai",
        },
        key_id="YourAccessKeyId",
        secret="YourAccessKeySecret",
        date="2023-10-26T10:22:32Z",
        nonce="3156853299f313e23d1673dc12e1703d",
    )
    assert headers["authorization"] == (
        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;"
        "x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,"
        "Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0"
    )


@pytest.fixture()
def api() -> Iterator[SmsApi]:
    with sms_api() as running:
        yield running


def sdk_client(api: SmsApi, secret: str = ACCESS_KEY_SECRET) -> Client:
    config = Config(
        access_key_id=ACCESS_KEY_ID,
        access_key_secret=secret,
        endpoint=api.url.removeprefix("http://"),
        protocol="http",
    )
    return Client(config)


def test_the_local_sms_api_accepts_the_official_sdk(api: SmsApi) -> None:
    client = sdk_client(api)
    single = client.send_sms(
        models.SendSmsRequest(
            phone_numbers="13800000000",
            sign_name="阿里云短信测试",
            template_code="SMS_154950909",
            template_param='{"code": "1234 56"}',
        )
    )
    batch = client.send_batch_sms(
        models.SendBatchSmsRequest(
            phone_number_json='["13800000001","13800000002"]',
            sign_name_json='["Shop","Shop"]',
            template_code="SMS_1",
            template_param_json='[{"name":"Ann"},{"name":"Bo"}]',
        )
    )

    assert (single.body.code, batch.body.code) == ("OK", "OK")
    first, second = api.calls
    assert (first.action, first.params["TemplateParam"]) == ("SendSms", '{"code": "1234 56"}')
    assert first.params["SignName"] == "阿里云短信测试"
    assert (second.action, second.params["SignNameJson"]) == ("SendBatchSms", '["Shop","Shop"]')


def test_the_local_sms_api_refuses_a_wrong_secret(api: SmsApi) -> None:
    with pytest.raises(TeaException) as refused:
        sdk_client(api, secret="not-the-secret").send_sms(
            models.SendSmsRequest(phone_numbers="13800000000", sign_name="s", template_code="t")
        )
    assert refused.value.code == "SignatureDoesNotMatch"
    assert api.calls == [] and api.refused == ["SignatureDoesNotMatch"]
