"""Bad calls get the service's JSON error with its status, never a 500, and change nothing:
unknown action, wrong version, missing or malformed parameters, a wrong signature or key, a
timestamp out of the window, a replayed nonce, a key without admin rights. The requests are
signed by the official clients' own signers and sent as raw HTTP, so they can be altered or sent
twice."""

from __future__ import annotations

import hashlib
import http.client
import json
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from alibabacloud_tea_openapi.utils import Utils as TeaUtils
from aliyunsdkcore.auth.composer import rpc_signature_composer

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.control.conftest import APP_KEY_ID, APP_KEY_SECRET

VERSION = "2022-01-19"


def send(
    gateway: RunningGateway, target: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=10)
    try:
        sent = {"Content-Type": "application/x-www-form-urlencoded", **(headers or {})}
        connection.request("POST", target, body, sent)
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    if response.getheader("Content-Type", "").startswith("application/json"):
        return response.status, json.loads(raw)
    return response.status, {"raw": raw.decode()}


def classic_target(
    action: str,
    params: dict[str, str],
    *,
    key: str = ACCESS_KEY_ID,
    secret: str = ACCESS_KEY_SECRET,
    version: str = VERSION,
    form: dict[str, str] | None = None,
) -> str:
    query = {"Action": action, "Version": version, "RegionId": "cn-hangzhou", **params}
    url, _ = rpc_signature_composer.get_signed_url(query, key, secret, "JSON", "POST", form or {})
    return url


def classic(gateway: RunningGateway, action: str, params: dict[str, str], **options: Any):  # type: ignore[no-untyped-def]
    return send(gateway, classic_target(action, params, **options))


def acs3_headers(gateway: RunningGateway, action: str, query: dict[str, str], date: str):  # type: ignore[no-untyped-def]
    headers = {
        "host": f"127.0.0.1:{gateway.port}",
        "x-acs-action": action,
        "x-acs-version": VERSION,
        "x-acs-date": date,
        "x-acs-signature-nonce": f"nonce-{date}-{action}",
        "x-acs-content-sha256": hashlib.sha256(b"").hexdigest(),
    }
    request = SimpleNamespace(pathname="/", query=query, headers=headers, method="POST")
    authorization = TeaUtils.get_authorization(
        request,
        "ACS3-HMAC-SHA256",
        headers["x-acs-content-sha256"],
        ACCESS_KEY_ID,
        ACCESS_KEY_SECRET,
    )
    return {**headers, "authorization": authorization}


def queue_exists(gateway: RunningGateway, name: str) -> bool:
    status, _ = classic(gateway, "GetQueueAttributes", {"QueueName": name})
    return status == 200


def assert_error(answer: tuple[int, dict[str, Any]], status: int, code: str) -> None:
    assert (answer[0], answer[1].get("Code")) == (status, code), answer
    assert answer[1]["Message"] and answer[1]["RequestId"]


def test_unknown_action_and_wrong_version(control_gateway: RunningGateway) -> None:
    assert_error(classic(control_gateway, "CreateQueues", {}), 404, "InvalidAction.NotFound")
    answer = classic(control_gateway, "CreateQueue", {"QueueName": "v"}, version="2021-01-01")
    assert_error(answer, 400, "InvalidVersion")


@pytest.mark.parametrize(
    ("action", "params", "code"),
    [
        ("CreateQueue", {}, "MissingParameter"),
        ("Subscribe", {"TopicName": "t"}, "MissingParameter"),
        ("ListQueue", {"PageSize": "abc"}, "InvalidParameter"),
        ("ListQueue", {"PageNum": "1.5"}, "InvalidParameter"),
        ("CreateQueue", {"QueueName": "{name}", "DlqPolicy": "{not json"}, "InvalidParameter"),
        (
            "CreateQueue",
            {"QueueName": "{name}", "TenantRateLimitPolicy": '{"Enabled": true}'},
            "InvalidParameter",
        ),
        ("CreateQueue", {"QueueName": "{name}", "VisibilityTimeout": "0"}, "InvalidArgument"),
        ("CreateQueue", {"QueueName": "{name}", "EnableLogging": "maybe"}, "InvalidParameter"),
        ("CreateQueue", {"QueueName": "-bad_name"}, "InvalidQueueName"),
        ("CreateQueue", {"QueueName": "{name}", "Tag.1.Key": "k"}, "MissingParameter"),
        ("TagResources", {"ResourceType": "bucket", "ResourceId.1": "x"}, "InvalidParameter"),
    ],
)
def test_missing_or_malformed_parameters_change_nothing(
    control_gateway: RunningGateway, unique: str, action: str, params: dict[str, str], code: str
) -> None:
    filled = {k: v.replace("{name}", unique) for k, v in params.items()}
    answer = classic(control_gateway, action, filled)
    assert_error(answer, 400, code)
    assert not queue_exists(control_gateway, unique)


def test_a_wrong_signature_or_key_changes_nothing(
    control_gateway: RunningGateway, unique: str
) -> None:
    answer = classic(control_gateway, "CreateQueue", {"QueueName": unique}, secret="wrong")
    assert_error(answer, 400, "SignatureDoesNotMatch")
    answer = classic(control_gateway, "CreateQueue", {"QueueName": unique}, key="nobody")
    assert_error(answer, 404, "InvalidAccessKeyId.NotFound")
    # The form body is signed too: changing it after signing breaks the signature.
    target = classic_target("CreateQueue", {}, form={"QueueName": unique})
    answer = send(control_gateway, target, urlencode({"QueueName": f"{unique}x"}).encode())
    assert_error(answer, 400, "SignatureDoesNotMatch")
    assert not queue_exists(control_gateway, unique)
    assert not queue_exists(control_gateway, f"{unique}x")


def test_a_timestamp_out_of_the_window_is_refused(
    control_gateway: RunningGateway, unique: str
) -> None:
    query = {"QueueName": unique}
    target = "/?" + "&".join(f"{k}={quote(v)}" for k, v in query.items())
    headers = acs3_headers(control_gateway, "CreateQueue", query, "2020-01-19T08:00:00Z")
    answer = send(control_gateway, target, headers=headers)
    assert_error(answer, 400, "InvalidTimeStamp.Expired")
    headers = acs3_headers(control_gateway, "CreateQueue", query, "yesterday")
    assert_error(send(control_gateway, target, headers=headers), 400, "InvalidTimeStamp.Format")
    assert not queue_exists(control_gateway, unique)


def test_a_replayed_nonce_is_refused(control_gateway: RunningGateway, unique: str) -> None:
    target = classic_target("CreateQueue", {"QueueName": unique})
    assert send(control_gateway, target)[0] == 200
    assert classic(control_gateway, "DeleteQueue", {"QueueName": unique})[0] == 200
    assert_error(send(control_gateway, target), 400, "SignatureNonceUsed")
    assert not queue_exists(control_gateway, unique)


def test_a_key_without_admin_rights_is_forbidden(
    control_gateway: RunningGateway, unique: str
) -> None:
    answer = classic(
        control_gateway, "CreateQueue", {"QueueName": unique}, key=APP_KEY_ID, secret=APP_KEY_SECRET
    )
    assert_error(answer, 403, "Forbidden.RAM")
    assert not queue_exists(control_gateway, unique)


def test_bytes_that_are_not_utf8_are_a_client_error(control_gateway: RunningGateway) -> None:
    target = classic_target("ListQueue", {}) + "&QueueName=%FF"
    assert_error(send(control_gateway, target), 400, "InvalidParameter")


def test_the_xml_api_still_answers_post_slash_without_an_rpc_version(
    control_gateway: RunningGateway,
) -> None:
    status, body = send(control_gateway, "/", b"")
    assert status in (400, 403)
    assert "<Error" in body["raw"]
