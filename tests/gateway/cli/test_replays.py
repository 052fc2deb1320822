"""Replaying a dead letter, from the CLI and the admin API: the ``Replay`` record comes from the
gateway that pushes it (whatever the replaying shell's environment), and a second replay of the
same dead letter is refused unless asked for with ``--force`` / ``?force=true``.

Both tests failed on the code before this change: a CLI replay from a shell without
``MNS_GATEWAY_LOG_DIR`` wrote no ``Replay`` record, and a second replay silently started a
second delivery chain.
"""

from __future__ import annotations

import json
import os
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
)
from tests.support.oplog import wait_for_records

logged_gateway = gateway_fixture("replay-gateway", FAST_RETRIES, oplog=True)


def shell_env() -> dict[str, str]:
    """An operator's shell: none of the gateway's MNS_GATEWAY_* settings exported."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=shell_env(),
    )


def local(gateway: RunningGateway, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("dead-letters", *args, "--data-dir", str(gateway.data_dir))


def remote(gateway: RunningGateway, *args: str) -> subprocess.CompletedProcess[str]:
    key = ("--access-key-id", ACCESS_KEY_ID, "--access-key-secret", ACCESS_KEY_SECRET)
    return cli("admin", "--url", gateway.url, *key, "dead-letters", *args)


def dead_letter(gateway: RunningGateway, topic: str) -> str:
    """Publish to a logged topic whose subscriber refuses connections; the dead letter's id."""
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    account.get_topic(topic).create(TopicMeta(logging_enabled=True))
    meta = SubscriptionMeta(f"http://127.0.0.1:{free_port()}/")
    account.get_topic(topic).get_subscription("s").subscribe(meta)
    account.get_topic(topic).publish_message(TopicMessage("lost"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        listed = json.loads(local(gateway, "list", "--topic", topic, "--json").stdout)
        if listed["DeadLetters"]:
            return str(listed["DeadLetters"][0]["Id"])
        time.sleep(0.1)
    raise AssertionError(f"no dead letter for {topic}")


def records(  # type: ignore[type-arg]
    gateway: RunningGateway, topic: str, action: str, count: int, since_ms: int = 0
) -> list[dict]:
    """The gateway's operation-log records of ``action`` on ``topic`` (logged at or after
    ``since_ms``), once ``count`` are in."""
    return wait_for_records(
        Path(gateway.env["MNS_GATEWAY_LOG_DIR"]),
        lambda r: r["Action"] == action and r.get("TopicName") == topic and r["Time"] >= since_ms,
        count,
    )


@pytest.mark.parametrize("via", ["cli", "admin"])
def test_a_replay_from_a_shell_without_the_log_dir_is_in_the_gateways_log(
    logged_gateway: RunningGateway, unique: str, via: str
) -> None:
    topic = f"{unique}{via}"
    letter = dead_letter(logged_gateway, topic)
    done = (local if via == "cli" else remote)(logged_gateway, "replay", letter, "--json")
    assert done.returncode == 0, done.stderr
    (replay,) = records(logged_gateway, topic, "Replay", 1)
    assert replay["SubscriptionName"] == "s" and replay["RequestId"]
    # The replay comes before the attempts it started in the log's order of time. The dead
    # letter's own attempts are in the log already: wait for one at or after the replay (reading
    # the log at once, under load, found only those; CI, 2026-11-28).
    pushes = records(logged_gateway, topic, "PushMessage", 1, since_ms=replay["Time"])
    assert pushes and replay["MessageId"] == pushes[0]["MessageId"]


@pytest.mark.parametrize("via", ["cli", "admin"])
def test_a_second_replay_is_refused_unless_forced(
    logged_gateway: RunningGateway, unique: str, via: str
) -> None:
    letter = dead_letter(logged_gateway, f"{unique}{via}")
    run = local if via == "cli" else remote
    assert run(logged_gateway, "replay", letter).returncode == 0
    again = run(logged_gateway, "replay", letter)
    assert again.returncode == 1 and again.stdout == ""
    assert len(again.stderr.splitlines()) == 1, again.stderr
    assert "replayed already" in again.stderr and "force" in again.stderr
    forced = run(logged_gateway, "replay", letter, "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["DeliveryId"]
