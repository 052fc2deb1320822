"""Standard Webhooks signatures on real pushes from ``mns-gateway serve``, on each backend,
verified by the official library (PyPI ``standardwebhooks``) beside the MNS signature: turned
on with ``mns-gateway subscriptions standard-webhooks``, the same ``webhook-id`` on a retry,
both secrets verifying during a rotation made through the admin API, only the new one once the
rotation's day is over (the store's clock), nothing once off; and the secret nowhere it should
not be (GetSubscriptionAttributes, ListSubscriptionByTopic, the status, the operation log)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from gateway.cli.commands import main
from gateway.config.settings import settings_from_env
from gateway.store.opening import open_database
from gateway.store.standard_webhooks import StandardWebhookStore
from gateway.testing import PushRecorder, ReceivedPush
from receiver.exceptions import VerificationError
from receiver.standard_webhooks import secret_keys, verify_standard_webhook
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    BACKENDS,
    FAST_RETRIES,
    RunningGateway,
    start_gateway,
)
from tests.support.pushes import pushes_to

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SWITCH = "/admin/topics/orders/subscriptions/hook/standard-webhooks"


@dataclass
class Setup:
    gateway: RunningGateway
    data_dir: Path
    log_dir: Path
    endpoint: PushRecorder


@pytest.fixture(params=BACKENDS)
def setup(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    log_dir = tmp_path / "oplog"
    env = {**FAST_RETRIES, "MNS_GATEWAY_LOG_DIR": str(log_dir)}
    monkeypatch.delenv("MNS_GATEWAY_DATABASE_URL", raising=False)
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres").new_database()
        env["MNS_GATEWAY_DATABASE_URL"] = url
        monkeypatch.setenv("MNS_GATEWAY_DATABASE_URL", url)  # for the command, as operators do
    data_dir = tmp_path / "data"
    gateway = start_gateway(data_dir, env)
    try:
        with pushes_to(gateway.url) as endpoint:
            topic = gateway.account().get_topic("orders")
            topic.create(TopicMeta(logging_enabled=True))
            topic.get_subscription("hook").subscribe(SubscriptionMeta(endpoint.url))
            yield Setup(gateway, data_dir, log_dir, endpoint)
    finally:
        gateway.stop()


def cli(capsys: pytest.CaptureFixture[str], setup: Setup, *args: str) -> Any:
    code = main(["subscriptions", "standard-webhooks", "orders", "hook", *args, "--data-dir",
                 str(setup.data_dir), "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def admin(setup: Setup, method: str, path: str) -> Any:
    response = setup.gateway.raw().send(method, path)
    assert response.status == 200, response.body
    return json.loads(response.body)


def publish(setup: Setup, body: str) -> str:
    topic = setup.gateway.account().get_topic("orders")
    return str(topic.publish_message(TopicMessage(body)).message_id)


def pushes_of(setup: Setup, message_id: str, count: int = 1) -> list[ReceivedPush]:
    """The verified pushes (MNS signature and Content-MD5 checked) of one message."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        found = [p for p in setup.endpoint.wait_for(1) if p.message_id == message_id]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{count} pushes of {message_id} did not arrive")


def verifies(secret: str, push: ReceivedPush) -> bool:
    """The official library's verdict, which the receiver package's must match."""
    try:
        verify_standard_webhook(secret_keys(secret), push.headers, push.body, now=time.time())
        by_receiver = True
    except VerificationError:
        by_receiver = False
    try:
        Webhook(secret).verify(push.body, dict(push.headers), json_parse=False)
    except WebhookVerificationError:
        assert not by_receiver
        return False
    assert by_receiver
    return True


def test_pushes_verified_by_the_official_library_across_a_retry_and_a_rotation(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    turned_on = cli(capsys, setup, "on")
    secret = turned_on["Secret"]
    assert secret.startswith("whsec_") and turned_on["StandardWebhooks"] == "on"

    # A retry: the endpoint fails the first attempt; both carry the same webhook-id.
    setup.endpoint.answer(500)
    first, retry = pushes_of(setup, publish(setup, "retried"), 2)
    assert first.headers["webhook-id"] == retry.headers["webhook-id"]
    assert first.headers["webhook-id"].startswith("msg_")
    assert verifies(secret, first) and verifies(secret, retry)
    assert not verifies("whsec_" + "A" * 43 + "=", first)

    # A rotation through the admin API: both secrets sign for a day.
    rotated = admin(setup, "POST", f"{SWITCH}?action=rotate")
    new = rotated["Secret"]
    assert new != secret
    assert rotated["PreviousSecretExpires"] > (time.time() + 23 * 3600) * 1000
    (during,) = pushes_of(setup, publish(setup, "during the rotation"))
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    assert verifies(new, during) and verifies(secret, during)

    # The day over (a rotation made by a store whose clock says 25 hours ago): only the new.
    settings = settings_from_env().with_overrides(data_dir=setup.data_dir)
    database = open_database(settings)
    try:
        old_clock = StandardWebhookStore(database, lambda: time.time() - 25 * 3600)
        newest, _ = old_clock.rotate("orders", "hook")
    finally:
        database.close()
    (after,) = pushes_of(setup, publish(setup, "after the rotation"))
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    assert verifies(newest, after) and not verifies(new, after)

    # Off: the MNS headers alone.
    assert cli(capsys, setup, "off") == {
        "TopicName": "orders",
        "SubscriptionName": "hook",
        "StandardWebhooks": "off",
        "PreviousSecretExpires": None,
    }
    (plain,) = pushes_of(setup, publish(setup, "off again"))
    assert not any(name.startswith("webhook-") for name in plain.headers)
    assert plain.headers["x-mns-message-id"] and plain.verified


def test_the_secret_is_shown_only_by_on_and_rotate(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = cli(capsys, setup, "on")["Secret"]
    assert cli(capsys, setup, "on")["Secret"] == secret  # on again shows it again
    rotated = admin(setup, "POST", f"{SWITCH}?action=rotate")["Secret"]
    status = admin(setup, "GET", SWITCH)
    assert status["StandardWebhooks"] == "on" and "Secret" not in status
    assert "Secret" not in cli(capsys, setup)
    raw = setup.gateway.raw()
    for path in ("/topics/orders/subscriptions/hook", "/topics/orders/subscriptions"):
        answer = raw.send("GET", path)
        assert answer.status == 200
        assert b"whsec_" not in answer.body
    message_id = publish(setup, "logged")
    pushes_of(setup, message_id)
    setup.gateway.stop()  # flushes the operation log
    logged = "".join(p.read_text() for p in setup.log_dir.rglob("*") if p.is_file())
    assert message_id in logged  # the push's records are there to search
    for shown in (secret, rotated):
        assert shown.removeprefix("whsec_") not in logged


def test_refusals_are_one_line(setup: Setup, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["subscriptions", "standard-webhooks", "orders"]
    for args, expected in (
        (["hook", "rotate"], "turn them on first"),
        (["nobody", "on"], "SubscriptionNotExist"),
        (["hook", "maybe"], "on, off or rotate"),
    ):
        code = main([*base, *args, "--data-dir", str(setup.data_dir)])
        out, err = capsys.readouterr()
        assert code == 1 and out == ""
        assert expected in err and len(err.strip().splitlines()) == 1, err
    # A subscription left out is a usage error, as for every command (status 2).
    with pytest.raises(SystemExit) as stopped:
        main([*base, "--data-dir", str(setup.data_dir)])
    assert stopped.value.code == 2
    assert "standard-webhooks needs a topic and a subscription" in capsys.readouterr().err
    response = setup.gateway.raw().send("POST", f"{SWITCH}?action=maybe")
    assert response.status == 400 and b"on, off or rotate" in response.body


def test_the_admin_command_switches_them_on_a_gateway_elsewhere(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    admin_command = ["admin", "--url", setup.gateway.url, "--access-key-id", ACCESS_KEY_ID,
                     "--access-key-secret", ACCESS_KEY_SECRET, "standard-webhooks"]  # fmt: skip
    remote = [*admin_command, "orders", "hook"]
    assert main([*remote, "on"]) == 0
    secret, state = capsys.readouterr().out.splitlines()
    assert secret.startswith("whsec_") and state == "orders/hook  standard webhooks on"
    (push,) = pushes_of(setup, publish(setup, "remote"))
    assert verifies(secret, push)
    assert main([*remote, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["StandardWebhooks"] == "on"
    assert main([*remote, "rotate", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["Secret"] != secret
    assert main([*admin_command, "orders", "nobody", "on"]) == 1
    err = capsys.readouterr().err
    assert "SubscriptionNotExist" in err and len(err.strip().splitlines()) == 1
