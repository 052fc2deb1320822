"""What decides a control-plane call is covered by its signature (issue 33 findings 6, 8 and 9):
the operation comes from what the signature signs, a header that selects how a signed body is
read is signed itself, and a nonce is remembered as long as its call's timestamp is accepted.

Signed by the official clients' own signers (``aliyun-python-sdk-core``'s request classes and
classic composer, ``alibabacloud-tea-openapi``'s ACS3 ``get_authorization``), sent to a real
gateway on each backend, or (the nonce, which needs a clock moved by 15 minutes) to the Flask
app with an injected clock.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import time
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from alibabacloud_tea_openapi.utils import Utils as TeaUtils
from aliyunsdkcore.acs_exception.exceptions import ServerException
from aliyunsdkcore.auth.composer import rpc_signature_composer
from aliyunsdkmns_open.request.v20220119 import (
    CreateQueueRequest,
    GetQueueAttributesRequest,
)

from gateway.api.app import create_app
from gateway.api.control.authentication import parse_timestamp
from gateway.config.settings import Settings
from gateway.store.base import compose_store
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, OpenDatabase, RunningGateway
from tests.gateway.api.control.clients import Classic
from tests.support.clock import Clock


@pytest.fixture()
def classic(control_gateway: RunningGateway) -> Classic:
    return Classic(control_gateway.port)


def _create_queue(classic: Classic, name: str) -> None:
    create = CreateQueueRequest.CreateQueueRequest()
    create.set_QueueName(name)
    create.set_VisibilityTimeout(40)
    classic.call(create)


def _attributes(classic: Classic, name: str) -> dict[str, object]:
    get = GetQueueAttributesRequest.GetQueueAttributesRequest()
    get.set_QueueName(name)
    return classic.call(get)["Data"]


# finding 6: the operation ---------------------------------------------------------------------
def test_an_unsigned_action_header_does_not_choose_a_classic_calls_operation(
    classic: Classic, unique: str
) -> None:
    """The classic signature covers no header: an ``x-acs-action`` added to a signed
    GetQueueAttributes must not turn it into DeleteQueue (it did: the queue was deleted)."""
    name = f"{unique}-q"
    _create_queue(classic, name)
    get = GetQueueAttributesRequest.GetQueueAttributesRequest()
    get.set_QueueName(name)
    get.add_header("x-acs-action", "DeleteQueue")
    with pytest.raises(ServerException) as caught:
        classic.call(get)
    assert (caught.value.get_http_status(), caught.value.get_error_code()) == (
        400,
        "InvalidParameter",
    )
    assert "x-acs-action" in caught.value.get_error_msg()
    assert _attributes(classic, name)["QueueName"] == name


def test_the_sdk_action_header_that_agrees_with_action_is_accepted(
    classic: Classic, unique: str
) -> None:
    """``aliyun-python-sdk-core`` sends ``x-acs-action`` beside ``Action``, the same value."""
    name = f"{unique}-q"
    _create_queue(classic, name)
    get = GetQueueAttributesRequest.GetQueueAttributesRequest()
    get.set_QueueName(name)
    assert get.get_headers()["x-acs-action"] == "GetQueueAttributes"
    assert classic.call(get)["Data"]["QueueName"] == name


# finding 8: the body's type -------------------------------------------------------------------
def _acs3_post(
    port: int,
    action: str,
    query: dict[str, str],
    form: dict[str, str],
    *,
    content_type: str,
    sign_content_type: bool,
) -> tuple[int, dict[str, object]]:
    """A call signed by tea-openapi's ACS3 signer, its form body sent as ``content_type``;
    ``sign_content_type=False`` signs the headers without it (as a client may: SignedHeaders
    is the client's choice), then sends it."""
    body = urlencode(form, quote_via=quote).encode()
    headers = {
        "host": f"127.0.0.1:{port}",
        "x-acs-action": action,
        "x-acs-version": "2022-01-19",
        "x-acs-date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "x-acs-signature-nonce": f"nonce-{time.time_ns()}",
        "x-acs-content-sha256": hashlib.sha256(body).hexdigest(),
    }
    if sign_content_type:
        headers["content-type"] = content_type
    request = SimpleNamespace(pathname="/", query=query, headers=headers, method="POST")
    authorization = TeaUtils.get_authorization(
        request, "ACS3-HMAC-SHA256", headers["x-acs-content-sha256"], ACCESS_KEY_ID,
        ACCESS_KEY_SECRET,
    )  # fmt: skip
    sent = {**headers, "content-type": content_type, "authorization": authorization}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/?" + urlencode(query, quote_via=quote), body, sent)
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_a_body_read_by_an_unsigned_content_type_is_refused(
    classic: Classic, control_gateway: RunningGateway, unique: str
) -> None:
    """An ACS3 call whose body's parameters are signed (by its hash) but whose Content-Type is
    not: a changed Content-Type made the gateway drop the signed VisibilityTimeout and answer
    success. A call with a body must sign the header that says how to read it."""
    name = f"{unique}-q"
    _create_queue(classic, name)
    query, form = {"QueueName": name}, {"VisibilityTimeout": "100"}
    for content_type in ("text/plain", "application/x-www-form-urlencoded"):
        status, answer = _acs3_post(
            control_gateway.port, "SetQueueAttributes", query, form,
            content_type=content_type, sign_content_type=False,
        )  # fmt: skip
        assert (status, answer["Code"]) == (400, "IncompleteSignature")
    assert _attributes(classic, name)["VisibilityTimeout"] == 40
    status, answer = _acs3_post(
        control_gateway.port, "SetQueueAttributes", query, form,
        content_type="application/x-www-form-urlencoded", sign_content_type=True,
    )  # fmt: skip
    assert (status, answer["Code"]) == (200, 200)
    assert _attributes(classic, name)["VisibilityTimeout"] == 100


# finding 9: the nonce -------------------------------------------------------------------------
def test_a_future_stamped_call_cannot_be_replayed_while_its_timestamp_is_accepted(
    open_database: OpenDatabase, tmp_path: Path
) -> None:
    """A call stamped 15 minutes ahead is accepted; 901 seconds later its timestamp is still
    within the window, so its nonce must still be remembered (it was forgotten 900 s after it
    was seen, and the replay went through)."""
    url, _ = rpc_signature_composer.get_signed_url(
        {"Action": "ListQueue", "Version": "2022-01-19"}, ACCESS_KEY_ID, ACCESS_KEY_SECRET,
        "JSON", "POST", {},
    )  # fmt: skip
    stamped = parse_timestamp(dict(parse_qsl(url[2:]))["Timestamp"])
    clock = Clock(stamped - 900)
    store = compose_store(open_database(), clock)
    app = create_app(
        Settings(data_dir=tmp_path, console=False),
        store,
        {ACCESS_KEY_ID: ACCESS_KEY_SECRET},
        clock=clock,
    )
    client = app.test_client()
    first = client.post(url)
    assert (first.status_code, first.json["Code"]) == (200, 200)
    for later in (stamped + 1, stamped + 900):
        clock.now = later
        replay = client.post(url)
        assert (replay.status_code, replay.json["Code"]) == (400, "SignatureNonceUsed")
    clock.now = stamped + 901
    expired = client.post(url)
    assert (expired.status_code, expired.json["Code"]) == (400, "InvalidTimeStamp.Expired")
    # Only now, with its timestamp refused, is the nonce forgotten.
    nonce = dict(parse_qsl(url[2:]))["SignatureNonce"]
    assert store.control.remember_nonce(ACCESS_KEY_ID, nonce, int(clock.now) + 900)
