"""``mns-gateway`` as a tool: one clear line and a non-zero exit for what the user got wrong,
ISO-8601 times for people and ``--json`` for scripts, the same dead-letter operations locally
and against a remote gateway's ``/admin/``, and a start that prints no warnings."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.auth.generated_keys import load_or_create
from gateway.cli.commands import main
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    FAST_RETRIES,
    RunningGateway,
    free_port,
    gateway_fixture,
    wait_until_ready,
)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def assert_one_line_failure(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stdout
    for fragment in fragments:
        assert fragment in done.stderr


# -- failures: one line, exit 1 -------------------------------------------------------------


@pytest.mark.parametrize("action", ["show", "replay"])
def test_unknown_dead_letter(tmp_path: Path, action: str) -> None:
    assert cli("migrate", "--data-dir", str(tmp_path)).returncode == 0
    done = cli("dead-letters", action, "no-such-id", "--data-dir", str(tmp_path))
    assert_one_line_failure(done, "dead letter no-such-id", "does not exist")


def test_data_dir_that_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    done = cli("serve", "--port", str(free_port()), "--data-dir", str(tmp_path / "file" / "data"))
    assert_one_line_failure(done, "data dir", "is not usable", "Not a directory")


def test_read_only_data_dir_with_keys_configured(read_only_dir: Path) -> None:
    env = {
        **os.environ,
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
    }
    done = cli("serve", "--port", str(free_port()), "--data-dir", str(read_only_dir), env=env)
    assert_one_line_failure(done, "is not usable", "Read-only file system")
    assert "Worker failed to boot" not in done.stderr


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = cli("serve", "--port", str(port), "--data-dir", str(tmp_path))
    assert_one_line_failure(done, f"127.0.0.1:{port}", "in use")


def test_dead_letters_show_needs_an_id(tmp_path: Path) -> None:
    done = cli("dead-letters", "show", "--data-dir", str(tmp_path))
    assert done.returncode == 2 and "needs a dead letter id" in done.stderr


# -- credentials --------------------------------------------------------------------------


def test_generated_credentials_can_be_shown_again(tmp_path: Path) -> None:
    keys, created = load_or_create(tmp_path)
    assert created
    ((key_id, secret),) = keys.items()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    shown = cli("credentials", "show", "--data-dir", str(tmp_path), env=env)
    assert shown.returncode == 0
    lines = dict(line.split(":", 1) for line in shown.stdout.splitlines() if ":" in line)
    assert lines["AccessKeyId"].strip() == key_id and lines["AccessKeySecret"].strip() == secret
    assert "no gateway URL known" in shown.stderr  # no gateway has served this data dir yet
    as_json = json.loads(
        cli("credentials", "show", "--json", "--data-dir", str(tmp_path), env=env).stdout
    )
    assert as_json["AccessKeys"] == [
        {
            "AccessKeyId": key_id,
            "AccessKeySecret": secret,
            "Source": f"the pair generated in {tmp_path}",
            "Accepted": None,
        }
    ]


def test_no_credentials_yet(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    done = cli("credentials", "show", "--data-dir", str(tmp_path / "empty"), env=env)
    assert_one_line_failure(done, "no credentials known here")
    assert not (tmp_path / "empty").exists()


def test_issued_credentials_for_people_and_for_scripts(tmp_path: Path) -> None:
    """docs/protocol.md#temporary-credentials: four fields; Expiration ISO-8601 UTC for people,
    epoch ms with --json."""
    assert cli("migrate", "--data-dir", str(tmp_path)).returncode == 0
    before = time.time()
    text = cli("credentials", "issue", "--ttl", "900", "--data-dir", str(tmp_path))
    assert text.returncode == 0, text.stderr
    names = [line.split(":", 1)[0] for line in text.stdout.splitlines()]
    assert names == ["AccessKeyId", "AccessKeySecret", "SecurityToken", "Expiration"]
    done = cli("credentials", "issue", "--ttl", "60", "--json", "--data-dir", str(tmp_path))
    issued = json.loads(done.stdout)
    assert issued["AccessKeyId"].startswith("STS.") and issued["SecurityToken"]
    expiration = issued["Expiration"] / 1000
    assert before + 59 <= expiration <= time.time() + 61


@pytest.mark.parametrize("ttl", ["0", "43201", "soon"])
def test_issue_needs_a_lifetime_in_range(tmp_path: Path, ttl: str) -> None:
    done = cli("credentials", "issue", "--ttl", ttl, "--data-dir", str(tmp_path))
    assert done.returncode == 2 and "--ttl" in done.stderr


# -- a start as a newcomer makes it ---------------------------------------------------------


def test_first_start_prints_no_warning_and_says_how_to_see_the_key_again(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    port = free_port()
    log = tmp_path / "log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "serve", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until_ready(port, process)
        finally:
            process.terminate()
            process.wait(timeout=20)
    text = log.read_text()
    assert "Generated an access key pair" in text and "mns-gateway credentials show" in text
    assert "only this once" not in text
    assert "Warning" not in text and "Traceback" not in text, text
    assert (tmp_path / "mns-data" / "credentials.json").is_file()


def test_serve_help_says_threads_are_for_gthread() -> None:
    assert "gthread only" in " ".join(cli("serve", "--help").stdout.split())


# -- dead letters: local and remote, people and scripts ----------------------------------------


logged_gateway = gateway_fixture("cli-gateway", FAST_RETRIES, oplog=True)


def dead_letter(gateway: RunningGateway, topic: str) -> str:
    """Publish to a subscription whose endpoint refuses connections; the dead letter's id."""
    account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    account.get_topic(topic).create(TopicMeta())
    meta = SubscriptionMeta(f"http://127.0.0.1:{free_port()}/")
    account.get_topic(topic).get_subscription("s").subscribe(meta)
    account.get_topic(topic).publish_message(TopicMessage("lost"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        listed = local(gateway, "list", "--topic", topic, "--json")
        if listed["DeadLetters"]:
            return str(listed["DeadLetters"][0]["Id"])
        time.sleep(0.1)
    raise AssertionError(f"no dead letter for {topic}")


def local(gateway: RunningGateway, *args: str) -> dict:  # type: ignore[type-arg]
    done = cli("dead-letters", *args, "--data-dir", str(gateway.data_dir), env=gateway.env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def remote(gateway: RunningGateway, *args: str) -> subprocess.CompletedProcess[str]:
    """``mns-gateway admin`` from "another machine": no data dir, only a URL and a key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}
    return cli(
        "admin",
        "--url",
        gateway.url,
        "--access-key-id",
        ACCESS_KEY_ID,
        "--access-key-secret",
        ACCESS_KEY_SECRET,
        "dead-letters",
        *args,
        env=env,
    )


def test_remote_admin_answers_what_the_local_command_answers(
    logged_gateway: RunningGateway, unique: str
) -> None:
    letter_id = dead_letter(logged_gateway, unique)
    for args in (("list", "--topic", unique), ("show", letter_id)):
        done = remote(logged_gateway, *args, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == local(logged_gateway, *args, "--json")


def test_remote_admin_with_a_wrong_key_is_one_line(logged_gateway: RunningGateway) -> None:
    done = cli(
        "admin",
        "--url",
        logged_gateway.url,
        "--access-key-id",
        ACCESS_KEY_ID,
        "--access-key-secret",
        "wrong",
        "dead-letters",
        "list",
    )
    assert_one_line_failure(done, "SignatureDoesNotMatch")
    assert_one_line_failure(remote(logged_gateway, "show", "nope"), "dead letter nope")


def test_times_are_iso_8601_utc_for_people(logged_gateway: RunningGateway, unique: str) -> None:
    letter_id = dead_letter(logged_gateway, unique)
    detail = local(logged_gateway, "show", letter_id, "--json")
    shown = cli("dead-letters", "show", letter_id, "--data-dir", str(logged_gateway.data_dir))
    dead_at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(detail["DeadAt"] / 1000))
    lines = dict(line.split(":", 1) for line in shown.stdout.splitlines() if ": " in line)
    assert lines["Dead"].strip() == f"{dead_at}.{detail['DeadAt'] % 1000:03d}Z"
    assert lines["Replayed"].strip() == "-"
    listed = cli(
        "dead-letters", "list", "--topic", unique, "--data-dir", str(logged_gateway.data_dir)
    )
    assert listed.stdout.startswith(letter_id) and "Z" in listed.stdout


def test_main_returns_the_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--data-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["dead-letters", "show", "x", "--data-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("mns-gateway dead-letters: dead letter x")
