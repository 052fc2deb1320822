"""Temporary credentials issued by ``mns-gateway credentials issue`` and used by the official SDK
(docs/protocol.md#temporary-credentials)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mns.account import Account
from mns.queue import Message, QueueMeta
from mns.topic import TopicMessage, TopicMeta
from werkzeug.serving import make_server

from gateway.api.app import create_app
from gateway.config.settings import Settings
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway
from tests.gateway.api.sdk import server_error
from tests.support.clock import Clock


def issue(gateway: RunningGateway, ttl: int = 600) -> dict[str, str]:
    """``mns-gateway credentials issue --json``, against the gateway's own store."""
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "credentials", "issue", "--ttl", str(ttl), "--json",
         "--data-dir", str(gateway.data_dir)],
        env=gateway.env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_issued_credentials_drive_queues_and_topics(
    gateway_process: RunningGateway, unique: str
) -> None:
    issued = issue(gateway_process)
    # --json gives times in epoch milliseconds, as every --json time (people see ISO-8601).
    assert issued["AccessKeyId"].startswith("STS.") and isinstance(issued["Expiration"], int)
    account = Account(
        gateway_process.url,
        issued["AccessKeyId"],
        issued["AccessKeySecret"],
        security_token=issued["SecurityToken"],
    )
    queue = account.get_queue(unique)
    queue.create(QueueMeta())
    queue.send_message(Message("hello"))
    received = queue.receive_message()
    queue.delete_message(received.receipt_handle)
    topic = account.get_topic(unique)
    topic.create(TopicMeta())
    assert topic.publish_message(TopicMessage("hi")).message_id
    assert account.get_attributes().logging_bucket is not None


def test_each_wrong_use_of_a_token_is_refused(gateway_process: RunningGateway, unique: str) -> None:
    issued = issue(gateway_process)
    other = issue(gateway_process)
    key_id, secret = issued["AccessKeyId"], issued["AccessKeySecret"]
    cases = {
        "missing": Account(gateway_process.url, key_id, secret),
        "wrong": Account(gateway_process.url, key_id, secret, "MNSGW1.Zm9v.YmFy"),
        "another key's": Account(gateway_process.url, key_id, secret, other["SecurityToken"]),
        "with a permanent key": Account(
            gateway_process.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET, issued["SecurityToken"]
        ),
    }
    codes = {
        case: server_error(account.get_queue(unique).get_attributes).type
        for case, account in cases.items()
    }
    assert codes == {
        "missing": "InvalidAccessKeyId",
        "wrong": "InvalidSecurityToken",
        "another key's": "InvalidSecurityToken",
        "with a permanent key": "InvalidAccessKeyId",
    }


@pytest.fixture()
def clocked_gateway(tmp_path: Path) -> Iterator[tuple[str, Clock, Store]]:
    """The app in this process on a real server, on a clock the test moves."""
    clock = Clock(time.time())
    store = compose_store(SQLiteDatabase(tmp_path / "db.sqlite3"), clock=clock)
    app = create_app(
        Settings(data_dir=tmp_path), store, {ACCESS_KEY_ID: ACCESS_KEY_SECRET}, clock=clock
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", clock, store
    finally:
        server.shutdown()
        thread.join(timeout=10)
        store.close()


def test_credentials_work_until_their_expiration(
    clocked_gateway: tuple[str, Clock, Store],
) -> None:
    url, clock, store = clocked_gateway
    credential = store.credentials.issue(60)
    account = Account(
        url, credential.access_key_id, credential.access_key_secret, credential.security_token
    )
    account.get_queue("q").create(QueueMeta())
    clock.now += 59
    account.get_queue("q").get_attributes()
    clock.now += 1
    assert server_error(account.get_queue("q").get_attributes).type == "SecurityTokenExpired"
    # The permanent key is untouched by all this.
    Account(url, ACCESS_KEY_ID, ACCESS_KEY_SECRET).get_queue("q").get_attributes()
