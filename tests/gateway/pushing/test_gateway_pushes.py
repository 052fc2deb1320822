"""Pushes from a real ``mns-gateway serve`` to real endpoints on 127.0.0.1.

Formats are checked byte for byte against docs/protocol.md#push-headers, signatures with a verifier
written from the documentation using the certificate fetched from the gateway's own URL; retries,
dead letters, replay, and a SIGKILL in the middle of a delivery.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    FAST_RETRIES,
    RunningGateway,
    free_port,
    gateway_fixture,
    start_gateway,
)
from tests.support.pushes import HANG, pushes_to

from .doc_verifier import received_value, verify_as_a_receiver

gateway = gateway_fixture("push-gateway", FAST_RETRIES)


@pytest.fixture()
def account(gateway: RunningGateway) -> Account:
    return gateway.account()  # type: ignore[no-any-return]


def subscribe(account: Account, topic: str, name: str, endpoint: str, **meta: str) -> None:
    account.get_topic(topic).get_subscription(name).subscribe(SubscriptionMeta(endpoint, **meta))


def gateway_cli(gateway: RunningGateway, *args: str) -> dict:  # type: ignore[type-arg]
    """Run an ``mns-gateway`` operator command on the gateway's data dir; its JSON answer."""
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        *args,
        "--json",
        "--data-dir",
        str(gateway.data_dir),
    ]
    completed = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=True, env=gateway.env
    )
    return json.loads(completed.stdout)


def admin(gateway: RunningGateway, method: str, path: str) -> dict:  # type: ignore[type-arg]
    response = gateway.raw().send(method, path)
    assert response.status == 200, response.body
    return json.loads(response.body)


def wait_for_dead_letters(gateway: RunningGateway, topic: str, count: int) -> list[dict]:  # type: ignore[type-arg]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        letters = admin(gateway, "GET", f"/admin/dead-letters?topic={topic}")["DeadLetters"]
        if len(letters) >= count:
            return letters
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} dead letters for {topic}")


EXPECTED_CONTENT_TYPES = {
    "XML": "text/xml;charset=utf-8",
    "JSON": "application/json;charset=utf-8",
    "SIMPLIFIED": "text/plain;charset=utf-8",
}


@pytest.mark.parametrize("fmt", ["XML", "JSON", "SIMPLIFIED"])
def test_each_format_byte_for_byte_and_signed(
    gateway: RunningGateway, account: Account, unique: str, fmt: str
) -> None:
    account.get_topic(unique).create(TopicMeta())
    body = 'order <42> & "done"'
    with pushes_to(gateway.url) as endpoint:
        subscribe(
            account, unique, "sub", endpoint.url + "/hooks/mns?tenant=a", notify_content_format=fmt
        )
        published = account.get_topic(unique).publish_message(TopicMessage(body, "vip"))
        (push,) = endpoint.wait_for(1, timeout=15)

    headers = dict(push.raw_headers)
    assert push.path == "/hooks/mns?tenant=a"
    for name in (
        "Content-md5",
        "Content-Type",
        "Date",
        "Authorization",
        "User-Agent",
        "x-mns-request-id",
        "x-mns-version",
        "x-mns-signing-cert-url",
        "x-mns-message-id",
        "x-mns-publish-time",
        "x-mns-topic-owner",
        "x-mns-topic-name",
        "x-mns-subscriber",
        "x-mns-subscription-name",
        "x-mns-message-tag",
    ):
        assert name in headers, name  # exact spelling, as the real service sends it
    assert headers["User-Agent"] == "Aliyun Notification Service Agent"
    assert headers["Content-Type"] == EXPECTED_CONTENT_TYPES[fmt]
    assert headers["x-mns-version"] == "2015-06-06"
    assert headers["x-mns-message-id"] == published.message_id
    assert headers["x-mns-message-tag"] == "vip"
    assert not headers["Authorization"].startswith("MNS ")
    md5 = hashlib.md5(body.encode()).hexdigest().upper()
    publish_time = headers["x-mns-publish-time"]
    fields = [
        ("TopicOwner", "1234567890"),
        ("TopicName", unique),
        ("Subscriber", "1234567890"),
        ("SubscriptionName", "sub"),
        ("MessageId", published.message_id),
        ("Message", body),
        ("MessageMD5", md5),
        ("MessageTag", "vip"),
        ("PublishTime", publish_time),
    ]
    if fmt == "XML":
        escaped = body.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        inner = "".join(f"<{k}>{escaped if k == 'Message' else v}</{k}>" for k, v in fields)
        expected = (
            '<?xml version="1.0" encoding="utf-8"?>'
            f'<Notification xmlns="http://mns.aliyuncs.com/doc/v1/">{inner}</Notification>'
        )
        assert push.body == expected.encode()
    elif fmt == "JSON":
        assert json.loads(push.body) == dict(fields)
    else:
        assert push.body == body.encode()
    assert base64.b64decode(headers["Content-md5"]).decode() == hashlib.md5(push.body).hexdigest()
    cert_url = base64.b64decode(received_value(push, "x-mns-signing-cert-url")).decode()
    assert cert_url.startswith(f"{gateway.url}/certs/")
    assert verify_as_a_receiver(push, trusted_prefix=f"{gateway.url}/certs/")


def test_no_path_means_notifications(
    gateway: RunningGateway, account: Account, unique: str
) -> None:
    account.get_topic(unique).create(TopicMeta())
    with pushes_to(gateway.url) as endpoint:
        subscribe(account, unique, "s", endpoint.url)
        account.get_topic(unique).publish_message(TopicMessage("x"))
        assert endpoint.wait_for(1, timeout=15)[0].path == "/notifications"


def test_tag_filtering_across_subscriptions(
    gateway: RunningGateway, account: Account, unique: str
) -> None:
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    with pushes_to(gateway.url) as endpoint:
        for name, tag in (("all", ""), ("red", "red"), ("blue", "blue")):
            subscribe(
                account,
                unique,
                name,
                f"{endpoint.url}/{name}",
                filter_tag=tag,
                notify_content_format="SIMPLIFIED",
            )
        for tag in ("red", "blue", "", "green"):
            topic.publish_message(TopicMessage(f"m-{tag or 'none'}", tag))
        endpoint.wait_for(6, timeout=15)
        time.sleep(0.3)  # a wrongly fanned-out seventh push would arrive within this
        pushes = endpoint.received
    by_path: dict[str, list[str]] = {}
    for push in pushes:
        by_path.setdefault(push.path, []).append(push.body.decode())
    assert sorted(by_path["/all"]) == ["m-blue", "m-green", "m-none", "m-red"]
    assert by_path["/red"] == ["m-red"]
    assert by_path["/blue"] == ["m-blue"]
    assert len(pushes) == 6


@pytest.mark.parametrize("strategy", ["BACKOFF_RETRY", "EXPONENTIAL_DECAY_RETRY"])
def test_retries_after_5xx_and_timeout_then_success(
    gateway: RunningGateway, account: Account, unique: str, strategy: str
) -> None:
    account.get_topic(unique).create(TopicMeta())
    with pushes_to(gateway.url, 500, 503, HANG) as endpoint:
        subscribe(account, unique, "s", endpoint.url, notify_strategy=strategy)
        published = account.get_topic(unique).publish_message(TopicMessage("retry me"))
        pushes = endpoint.wait_for(4, timeout=15)
    ids = {received_value(p, "x-mns-message-id") for p in pushes}
    assert ids == {published.message_id}


def test_refused_connections_end_in_a_dead_letter_and_replay(
    gateway: RunningGateway, account: Account, unique: str
) -> None:
    account.get_topic(unique).create(TopicMeta())
    port = free_port()  # nothing listens here yet: every attempt is refused
    subscribe(account, unique, "s", f"http://127.0.0.1:{port}/late")
    published = account.get_topic(unique).publish_message(TopicMessage("eventually"))
    (summary,) = wait_for_dead_letters(gateway, unique, 1)
    detail = admin(gateway, "GET", f"/admin/dead-letters/{summary['Id']}")
    assert detail["MessageId"] == published.message_id and detail["Reason"] == "retries exhausted"
    assert [a["Outcome"] for a in detail["AttemptHistory"]] == ["connection_error"] * 4
    assert detail["MessageBody"] == "eventually"

    with pushes_to(gateway.url).start(port=port) as endpoint:
        replayed = admin(gateway, "POST", f"/admin/dead-letters/{summary['Id']}/replay")
        assert replayed["DeliveryId"]
        (push,) = endpoint.wait_for(1, timeout=15)
    assert received_value(push, "x-mns-message-id") == published.message_id
    assert admin(gateway, "GET", f"/admin/dead-letters/{summary['Id']}")["ReplayedAt"]


def test_dead_letters_cli(gateway: RunningGateway, account: Account, unique: str) -> None:
    account.get_topic(unique).create(TopicMeta())
    subscribe(account, unique, "s", f"http://127.0.0.1:{free_port()}/")
    account.get_topic(unique).publish_message(TopicMessage("cli"))
    (summary,) = wait_for_dead_letters(gateway, unique, 1)

    def cli(*args: str) -> dict:  # type: ignore[type-arg]
        return gateway_cli(gateway, "dead-letters", *args)

    listed = cli("list", "--topic", unique)["DeadLetters"]
    assert [d["Id"] for d in listed] == [summary["Id"]]
    assert cli("show", summary["Id"])["MessageBody"] == "cli"
    assert cli("replay", summary["Id"])["DeliveryId"]
    assert cli("show", summary["Id"])["ReplayedAt"]


def test_admin_errors_use_mns_error_bodies(gateway: RunningGateway) -> None:
    response = gateway.raw().send("GET", "/admin/dead-letters/nope")
    assert (response.status, response.error_code()) == (404, "DeadLetterNotExist")
    response = gateway.raw().send("GET", "/admin/dead-letters", sign_request=False)
    assert response.status == 400  # unsigned: MissingAuthorizationHeader


def test_metrics_count_attempts(gateway: RunningGateway) -> None:
    response = gateway.raw().send("GET", "/metrics", sign_request=False)
    assert response.status == 200
    assert b"mns_delivery_attempts_total" in response.body
    assert b"mns_push_latency_seconds_bucket" in response.body
    assert b"mns_deliveries_due" in response.body


def test_sigkill_mid_delivery_loses_nothing(tmp_path: Path) -> None:
    first = start_gateway(tmp_path, FAST_RETRIES)
    account = Account(first.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    account.get_topic("crash").create(TopicMeta())
    with pushes_to(first.url, HANG) as endpoint:
        subscribe(account, "crash", "s", endpoint.url)
        published = account.get_topic("crash").publish_message(TopicMessage("survive"))
        endpoint.wait_for(1, timeout=15)  # the push is in flight, its answer held back
        first.kill()
        second = start_gateway(tmp_path, FAST_RETRIES, port=first.port)
        try:
            pushes = endpoint.wait_for(2, timeout=15)
        finally:
            second.stop()
    assert {received_value(p, "x-mns-message-id") for p in pushes} == {published.message_id}


def test_key_rotated_by_the_cli_is_used_without_restart(
    gateway: RunningGateway, account: Account, unique: str
) -> None:
    account.get_topic(unique).create(TopicMeta())
    with pushes_to(gateway.url) as endpoint:
        subscribe(account, unique, "s", endpoint.url)
        account.get_topic(unique).publish_message(TopicMessage("before"))
        (before,) = endpoint.wait_for(1, timeout=15)
        new_key = gateway_cli(gateway, "keys", "rotate")["CurrentKeyId"]
        deadline = time.monotonic() + 30  # the sender re-reads the key ring every 10 s
        while time.monotonic() < deadline:
            seen = len(endpoint.received)
            account.get_topic(unique).publish_message(TopicMessage("after"))
            latest = endpoint.wait_for(seen + 1, timeout=15)[-1]
            if (
                new_key
                in base64.b64decode(received_value(latest, "x-mns-signing-cert-url")).decode()
            ):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the rotated key was never used")
    trusted = f"{gateway.url}/certs/"
    assert verify_as_a_receiver(latest, trusted_prefix=trusted)
    assert verify_as_a_receiver(before, trusted_prefix=trusted)  # old certificate still served
