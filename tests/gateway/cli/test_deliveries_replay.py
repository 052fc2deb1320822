"""``mns-gateway deliveries replay`` as an operator runs it, against real gateways on each backend:
what was delivered in the window is pushed again to the same endpoint, with the same MessageIds
and in publish order, logged as replays; a dry run counts without pushing; a replay queued while
the gateway is down is pushed once it is back; and bad windows are one-line usage errors saying
what the gateway keeps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.cli.commands import main as cli_main
from gateway.delivery.replays import iso_utc_ms
from gateway.testing import PushRecorder
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    BACKENDS,
    free_port,
    start_gateway,
)
from tests.support.oplog import records
from tests.support.pushes import pushes_to

#: One delivery worker pushing one at a time to an endpoint: the order the endpoint sees is the
#: order the deliveries were claimed in.
IN_ORDER = {
    "MNS_GATEWAY_RETRY_SCALE": "0.01",
    "MNS_GATEWAY_WORKERS": "1",
    "MNS_GATEWAY_MAX_PUSHES_PER_ROUTE": "1",
}


class Replaying:
    """A gateway of the test's own (restartable), the recording endpoint subscribed to it, and
    the operator's shell: no MNS_GATEWAY_* but the database's URL."""

    def __init__(
        self, data_dir: Path, env: dict[str, str], endpoint: PushRecorder, port: int
    ) -> None:
        self.data_dir = data_dir
        self.env = env
        self.endpoint = endpoint
        self.gateway = start_gateway(data_dir, env, port=port)
        self.account = Account(self.gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        self.account.get_topic("orders").create(TopicMeta(logging_enabled=True))
        meta = SubscriptionMeta(endpoint.url_for("/orders"))
        self.account.get_topic("orders").get_subscription("web").subscribe(meta)

    def restart(self) -> None:
        self.gateway = start_gateway(self.data_dir, self.env, port=self.gateway.port)

    def publish(self, count: int) -> list[str]:
        """``count`` messages, each pushed before the next is published: their MessageIds."""
        ids = []
        for n in range(count):
            seen = len(self.endpoint.received)
            sent = self.account.get_topic("orders").publish_message(TopicMessage(f"order {n}"))
            self.endpoint.wait_for(seen + 1, timeout=15)
            ids.append(sent.message_id)
        return ids

    def cli(
        self, *args: str, data_dir: str = "flag", **run: Any
    ) -> subprocess.CompletedProcess[str]:
        """The command with the data dir from ``--data-dir`` (``data_dir="flag"``), from
        ``MNS_GATEWAY_DATA_DIR`` (``"env"``), or from the current directory (``"cwd"``)."""
        shell = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
        if "MNS_GATEWAY_DATABASE_URL" in self.env:
            shell["MNS_GATEWAY_DATABASE_URL"] = self.env["MNS_GATEWAY_DATABASE_URL"]
        command = [sys.executable, "-m", "gateway.cli", *args]
        if data_dir == "flag":
            command += ["--data-dir", str(self.data_dir)]
        elif data_dir == "env":
            shell["MNS_GATEWAY_DATA_DIR"] = str(self.data_dir)
        else:  # ./mns-data
            run["cwd"] = self.data_dir.parent
        return subprocess.run(
            command, capture_output=True, text=True, timeout=60, check=False, env=shell, **run
        )

    def replay(self, *args: str, data_dir: str = "flag") -> dict[str, Any]:
        done = self.cli("deliveries", "replay", "orders", "web", *args, "--json", data_dir=data_dir)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.fixture(params=BACKENDS)
def replaying(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Replaying]:
    env = dict(IN_ORDER, MNS_GATEWAY_LOG_DIR=str(tmp_path / "oplog"))
    if request.param == "postgresql":
        env["MNS_GATEWAY_DATABASE_URL"] = request.getfixturevalue("postgres").new_database()
    port = free_port()
    with pushes_to(f"http://127.0.0.1:{port}") as endpoint:
        made = Replaying(tmp_path / "mns-data", env, endpoint, port)
        try:
            yield made
        finally:
            made.gateway.stop()


def now_iso() -> str:
    """The time now, to the millisecond, once a millisecond has passed since anything before."""
    start = int(time.time() * 1000)
    while int(time.time() * 1000) <= start:  # bounded: the next millisecond
        pass
    return iso_utc_ms(int(time.time() * 1000))


def test_the_window_is_pushed_again_in_publish_order(replaying: Replaying) -> None:
    before = replaying.publish(2)
    since = now_iso()
    window = replaying.publish(4)
    until = now_iso()
    replaying.publish(1)
    pushed = len(replaying.endpoint.received)

    dry = replaying.replay("--since", since, "--until", until, "--dry-run")
    assert (dry["DryRun"], dry["Queued"], dry["SkippedPending"], dry["SkippedNotKept"]) == (
        True, 4, 0, 0,
    )  # fmt: skip
    done = replaying.replay("--since", since, "--until", until)
    assert (done["DryRun"], done["Queued"]) == (False, 4)

    again = replaying.endpoint.wait_for(pushed + 4, timeout=20)[pushed:]
    assert [p.message_id for p in again] == window  # the dry run pushed nothing
    assert before[0] not in [p.message_id for p in again]
    assert all(p.path == "/orders" and p.verified for p in again)
    # Nothing more comes (the dry run queued nothing, the replay each message once).
    with pytest.raises(AssertionError):
        replaying.endpoint.wait_for(pushed + 5, timeout=1)
    logged = [
        r for r in records(Path(replaying.env["MNS_GATEWAY_LOG_DIR"])) if r["Action"] == "Replay"
    ]
    assert sorted(r["MessageId"] for r in logged) == sorted(window)
    assert {(r["RequestId"], r["SubscriptionName"]) for r in logged} == {(done["RequestId"], "web")}


def test_a_replay_queued_while_the_gateway_is_down_is_pushed_when_it_is_back(
    replaying: Replaying,
) -> None:
    since = now_iso()
    window = replaying.publish(3)
    replaying.gateway.stop()
    pushed = len(replaying.endpoint.received)
    # The data dir found the other two ways: MNS_GATEWAY_DATA_DIR, then ./mns-data.
    dry = replaying.replay("--since", since, "--dry-run", data_dir="env")
    assert (dry["DryRun"], dry["Queued"]) == (True, 3)
    done = replaying.replay("--since", since, data_dir="cwd")
    assert done["Queued"] == 3
    replaying.restart()
    again = replaying.endpoint.wait_for(pushed + 3, timeout=30)[pushed:]
    assert [p.message_id for p in again] == window


def test_what_the_people_read(replaying: Replaying) -> None:
    since = now_iso()
    replaying.publish(2)
    done = replaying.cli("deliveries", "replay", "orders", "web", "--since", since, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"would queue 2 of the messages delivered to orders/web from {since} to "
    )
    unknown = replaying.cli("deliveries", "replay", "orders", "nope", "--since", since)
    assert unknown.returncode == 1 and unknown.stdout == ""
    (line,) = unknown.stderr.splitlines()
    assert line.startswith("mns-gateway deliveries: orders/nope: SubscriptionNotExist: ")


#: Windows that cannot be replayed, and what the one line says.
BAD_WINDOWS = [
    (("--since", "yesterday"), "--since 'yesterday' is not an ISO 8601 time in UTC"),
    (("--since", "2999-01-01T00:00:00Z"), "--since 2999-01-01T00:00:00Z is in the future"),
    (("--since", "2026-01-01T00:00:00Z"), "the gateway keeps delivered history for 86400 s:"),
    (
        ("--since", "2026-01-01T00:00:00Z", "--until", "2025-01-01T00:00:00Z"),
        "--until must be after --since",
    ),
]


def test_a_window_that_cannot_be_replayed_is_a_usage_error(
    replaying: Replaying, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first window through the command as a process; the others through its ``main`` in
    this process, with the operator's shell (six CLI start-ups a backend were most of this
    test's time)."""
    (window, says), *others = BAD_WINDOWS
    done = replaying.cli("deliveries", "replay", "orders", "web", *window)
    assert done.returncode == 2 and done.stdout == "", window
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"mns-gateway deliveries: {says}"), line
    for name in [name for name in os.environ if name.startswith("MNS_GATEWAY_")]:
        monkeypatch.delenv(name)
    if "MNS_GATEWAY_DATABASE_URL" in replaying.env:
        monkeypatch.setenv("MNS_GATEWAY_DATABASE_URL", replaying.env["MNS_GATEWAY_DATABASE_URL"])
    data_dir = ("--data-dir", str(replaying.data_dir))
    for window, says in others:
        status = cli_main(["deliveries", "replay", "orders", "web", *window, *data_dir])
        out, err = capsys.readouterr()
        assert status == 2 and out == "", window
        (line,) = err.splitlines()
        assert line.startswith(f"mns-gateway deliveries: {says}"), line


def remote(replaying: Replaying, *args: str) -> subprocess.CompletedProcess[str]:
    """``mns-gateway admin … deliveries``, from a shell with nothing of the gateway's."""
    key = ("--access-key-id", ACCESS_KEY_ID, "--access-key-secret", ACCESS_KEY_SECRET)
    shell = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    command = [sys.executable, "-m", "gateway.cli", "admin", "--url", replaying.gateway.url]
    return subprocess.run(
        [*command, *key, "deliveries", "replay", "orders", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=shell,
    )


def test_the_admin_api_and_its_remote_command(replaying: Replaying) -> None:
    since = now_iso()
    window = replaying.publish(2)
    pushed = len(replaying.endpoint.received)
    dry = remote(replaying, "web", "--since", since, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert (json.loads(dry.stdout)["DryRun"], json.loads(dry.stdout)["Queued"]) == (True, 2)
    done = remote(replaying, "web", "--since", since, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["Queued"] == 2
    again = replaying.endpoint.wait_for(pushed + 2, timeout=20)[pushed:]
    assert [p.message_id for p in again] == window
    # A bad window: the gateway's refusal, one line, a usage error here too.
    bad = remote(replaying, "web", "--since", "2026-01-01T00:00:00Z")
    assert bad.returncode == 2, bad.stderr
    (line,) = bad.stderr.splitlines()
    assert "the gateway keeps delivered history for 86400 s: since must be at or after" in line
    unknown = remote(replaying, "nope", "--since", since)
    assert unknown.returncode == 1 and "SubscriptionNotExist" in unknown.stderr
    # The API itself: 400 InvalidArgument for a time it cannot read, 404 for a topic it lacks.
    raw = replaying.gateway.raw()
    path = "/admin/topics/orders/subscriptions/web/replay"
    refused = raw.send("POST", f"{path}?since=soon")
    assert refused.status == 400 and b"InvalidArgument" in refused.body
    assert (
        b"since &apos;soon&apos; is not" in refused.body or b"since 'soon' is not" in refused.body
    )
    assert raw.send("POST", f"{path}?since={since}&dryRun=maybe").status == 400
    missing = raw.send("POST", f"/admin/topics/nope/subscriptions/web/replay?since={since}")
    assert missing.status == 404 and b"TopicNotExist" in missing.body
    # A name no topic can have is refused as the API refuses it, on either backend.
    bad_name = raw.send("POST", f"/admin/topics/no%00pe/subscriptions/web/replay?since={since}")
    assert bad_name.status == 400 and b"TopicNameInvalid" in bad_name.body
