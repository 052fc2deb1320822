"""``mns-gateway`` as a new user meets it (issue 28), through its real entry point (the
``mns-gateway`` script of this virtualenv) in a subprocess.

Every test here failed on the code before the change, as its docstring says.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.commands import main as cli_main
from gateway.cli.commands import parser as cli_parser
from gateway.inbox.records import InboxEntry, InboxKind
from gateway.pushing.transport import PushOutcome, PushResult
from gateway.store.backends.sqlite import SQLiteDatabase
from gateway.store.base import Store, compose_store
from gateway.topics.records import TopicMessage
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.support.clock import Clock
from tests.support.stub import ScriptedSender, run_until_idle
from tests.support.stub import stub_worker as make_worker

MNS_GATEWAY = Path(sys.executable).parent / "mns-gateway"
ERROR_PAGE = (
    "HTTP 502: <html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad "
    "Gateway</h1></center><hr><center>nginx</center></body></html>"
)


def shell() -> dict[str, str]:
    """A new user's shell: no MNS_GATEWAY_* exported."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MNS_GATEWAY_")}


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MNS_GATEWAY), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=shell(),
        cwd=cwd,
    )


@pytest.fixture()
def data_dir(tmp_path: Path) -> Iterator[tuple[Path, Store, Clock]]:
    """A gateway's data dir with its SQLite database, as ``serve`` leaves it."""
    clock = Clock()
    store = compose_store(SQLiteDatabase(tmp_path / "data" / "gateway.sqlite3"), clock=clock)
    yield tmp_path / "data", store, clock
    store.close()


def dead_letter(store: Store, clock: Clock, body: str = "lost") -> str:
    """A dead letter whose every attempt got an nginx HTML error page."""
    from gateway.topics.records import Subscription

    store.topics.create_topic("orders", max(65536, len(body)), False)
    store.topics.subscribe(Subscription("orders", "billing", "http://billing.test/"))
    store.topics.publish(TopicMessage("M1", "orders", body, "X", store.now_ms()))
    failure = PushResult(502, PushOutcome.HTTP_ERROR, ERROR_PAGE, 3.0)
    run_until_idle(make_worker(store, ScriptedSender(then=failure)), clock, store)
    return store.deliveries.list_dead_letters().items[0].id


# -- item 2: commands on a gateway's data never create it -------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("dead-letters", "list"),
        ("dead-letters", "show", "x"),
        ("keys", "show"),
        ("queues", "list"),
        ("queues", "show", "q"),
        ("subscriptions", "show", "t", "s"),
        ("inbox", "mail"),
        ("credentials", "issue", "--ttl", "60"),
    ],
)
def test_run_from_the_wrong_directory_a_command_creates_nothing(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """Failed before: ``dead-letters list`` printed "no dead letters" and created
    ./mns-data/gateway.sqlite3; ``keys show`` generated a signing key."""
    done = run(*command, cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert done.stderr.splitlines() == [
        f"mns-gateway {command[0]}: no gateway data in {tmp_path / 'mns-data'} (no "
        "gateway.sqlite3 there): pass --data-dir, the directory `mns-gateway serve` uses (or "
        "set MNS_GATEWAY_DATA_DIR)"
    ]
    assert list(tmp_path.iterdir()) == []


# -- item 7: what dead-letters show and credentials issue print --------------------------------


def test_dead_letters_show_reduces_an_error_page_to_its_text(
    data_dir: tuple[Path, Store, Clock],
) -> None:
    """Failed before: every attempt printed the endpoint's raw HTML, and "DeadLetterQueue:-"
    had no space after its colon."""
    path, store, clock = data_dir
    letter = dead_letter(store, clock)
    done = run("dead-letters", "show", letter, "--data-dir", str(path))
    assert done.returncode == 0, done.stderr
    assert "<html>" not in done.stdout and "HTTP 502: 502 Bad Gateway nginx" in done.stdout
    fields = [line for line in done.stdout.splitlines() if not line.startswith(" ")]
    assert all(": " in line or line == "Attempts:" for line in fields), fields
    assert "DeadLetterQueue: -" in done.stdout


def test_dead_letters_json_names_every_field_alike_with_epoch_ms(
    data_dir: tuple[Path, Store, Clock],
) -> None:
    """Failed before: AttemptHistory mixed attempted_at_ms and friends with DeadAt."""
    path, store, clock = data_dir
    letter = dead_letter(store, clock)
    done = run("dead-letters", "show", letter, "--data-dir", str(path), "--json")
    document = json.loads(done.stdout)
    attempt = document["AttemptHistory"][0]
    assert set(attempt) == {"Attempt", "AttemptedAt", "Outcome", "StatusCode", "LatencyMs", "Error"}
    assert isinstance(attempt["AttemptedAt"], int) and attempt["Error"] == ERROR_PAGE
    assert all(key[0].isupper() for key in document)


def test_credentials_issue_json_gives_expiration_in_epoch_ms(
    data_dir: tuple[Path, Store, Clock],
) -> None:
    """Failed before: --json gave an ISO Expiration, where the README promises epoch ms."""
    path, _, _ = data_dir
    done = run("credentials", "issue", "--ttl", "600", "--data-dir", str(path), "--json")
    assert done.returncode == 0, done.stderr
    expiration = json.loads(done.stdout)["Expiration"]
    assert isinstance(expiration, int) and expiration > 1_700_000_000_000
    shown = run("credentials", "issue", "--ttl", "600", "--data-dir", str(path))
    assert any(
        line.startswith("Expiration:") and line.endswith("Z") for line in shown.stdout.splitlines()
    )


# -- item 9: paper cuts -------------------------------------------------------------------------


def test_version() -> None:
    """Failed before: no --version."""
    done = run("--version")
    assert done.returncode == 0 and done.stdout.startswith("mns-gateway ")


def test_a_wrong_option_after_a_command_shows_that_commands_usage() -> None:
    """Failed before: the top-level usage ("mns-gateway [-h] {serve,...}")."""
    done = run("dead-letters", "list", "--bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: mns-gateway dead-letters ")
    assert done.stderr.splitlines()[-1] == (
        "mns-gateway dead-letters: error: unrecognized arguments: --bogus"
    )


def test_a_ttl_that_is_not_a_number_says_so() -> None:
    """Failed before: "invalid literal for int() with base 10"."""
    done = run("credentials", "issue", "--ttl", "abc")
    assert done.stderr.splitlines()[-1].endswith("argument --ttl: 'abc' is not a number of seconds")


def test_migrate_says_what_it_did(tmp_path: Path) -> None:
    """Failed before: a second migrate printed "applied []"."""
    first = run("migrate", "--data-dir", str(tmp_path / "d"))
    assert first.returncode == 0 and "applied migrations 1, " in first.stdout, first.stdout
    again = run("migrate", "--data-dir", str(tmp_path / "d"))
    assert again.stdout.strip().endswith(": already up to date") and "[]" not in again.stdout


def test_mail_without_reply_to_prints_no_reply_to(data_dir: tuple[Path, Store, Clock]) -> None:
    """Failed before: "ReplyTo: None"."""
    path, store, _ = data_dir
    document = {
        "MessageId": "M1",
        "TopicName": "t",
        "SubscriptionName": "s",
        "Time": 1_800_000_000_000,
        "From": "noreply@example.com",
        "To": "ada@example.com",
        "Subject": "hi",
        "IsHtml": False,
        "ReplyTo": None,
        "Body": "hello",
    }
    entry = InboxEntry("e1", InboxKind.MAIL, "ada@example.com", "t", "s", "M1", 1, document)
    store.inbox.deliver(_delivery(store), [entry])
    done = run("inbox", "mail", "--data-dir", str(path))
    assert done.returncode == 0, done.stderr
    assert "Subject: hi" in done.stdout and "ReplyTo" not in done.stdout


def _delivery(store: Store) -> str:
    """A delivery for the inbox to complete (the inbox keeps what a delivery would send)."""
    from gateway.topics.records import Subscription

    store.topics.create_topic("t", 65536, False)
    store.topics.subscribe(Subscription("t", "s", "mail:directmail:ada@example.com"))
    store.topics.publish(TopicMessage("M1", "t", "hello", "X", store.now_ms()))
    (job,) = store.deliveries.claim("test", 60, 1, frozenset())
    return job.delivery_id


def test_queues_list_and_delete(data_dir: tuple[Path, Store, Clock]) -> None:
    """Failed before: ``queues`` had no list and no delete."""
    path = data_dir[0]
    for name in ("jobs", "jobs-dlq"):
        assert run("queues", "create", name, "--data-dir", str(path)).returncode == 0
    listed = run("queues", "list", "--data-dir", str(path), "--json")
    assert [q["QueueName"] for q in json.loads(listed.stdout)["Queues"]] == ["jobs", "jobs-dlq"]
    deleted = run("queues", "delete", "jobs-dlq", "--data-dir", str(path))
    assert deleted.returncode == 0 and deleted.stdout.strip() == "deleted queue jobs-dlq"
    assert run("queues", "list", "--data-dir", str(path)).stdout.split() == ["jobs", "normal"]
    again = run("queues", "delete", "jobs-dlq", "--data-dir", str(path))
    assert again.returncode == 1 and "queue jobs-dlq does not exist" in again.stderr


def test_worker_says_it_started(tmp_path: Path) -> None:
    """Failed before: ``mns-gateway worker`` printed nothing until it stopped."""
    process = subprocess.Popen(
        [str(MNS_GATEWAY), "worker", "--data-dir", str(tmp_path / "d")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=shell(),
    )
    try:
        first = process.stdout.readline()  # type: ignore[union-attr]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    assert first.startswith("mns-gateway worker: pushing with 32 greenlets"), first
    assert process.returncode == 0


def test_a_reader_that_stops_early_gets_no_traceback(data_dir: tuple[Path, Store, Clock]) -> None:
    """Failed before: ``dead-letters show ... | head -1`` printed a BrokenPipeError traceback."""
    path, store, clock = data_dir
    letter = dead_letter(store, clock, body="x" * 400_000)  # more than a pipe holds
    process = subprocess.Popen(
        [str(MNS_GATEWAY), "dead-letters", "show", letter, "--data-dir", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=shell(),
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().strip() == b"{"
    process.stdout.close()  # as head -1 does
    stderr = process.stderr.read().decode()
    process.wait(timeout=60)
    assert stderr == "" and process.returncode == 0


def test_every_command_action_and_option_has_help_text(capsys: pytest.CaptureFixture[str]) -> None:
    """Failed before: ``dead-letters``' action and --limit, ``queues``' name, ``keys``' action
    and others had none. Each command's ``--help`` goes through the command's own ``main`` in
    this process (19 commands: 19 Python start-ups were 90 s of a shared machine's CPU);
    ``mns-gateway --help`` as a process is the one end-to-end case."""
    done = run("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: mns-gateway")
    missing = []
    for path, command in _commands(cli_parser(), ()):
        with pytest.raises(SystemExit) as exited:
            cli_main([*path, "--help"])
        assert exited.value.code == 0, path
        assert capsys.readouterr().out.startswith("usage: mns-gateway"), path
        for action in command._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if isinstance(action, argparse._SubParsersAction):  # its commands' help
                named = action._choices_actions
                missing += [f"{' '.join(path)} {a.dest}" for a in named if not a.help]
            elif not action.help:
                missing.append(f"{' '.join(path)} {action.option_strings or action.dest}")
    assert missing == []


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


# -- item 1: credentials and admin against the running gateway ---------------------------------


@pytest.fixture(scope="module")
def served_with_my_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """The quickstart's gateway (its own key in its environment) on a data dir where an earlier
    ``serve`` without the export generated a pair and served with it."""
    from gateway.auth.generated_keys import load_or_create
    from gateway.auth.served_keys import record_served_keys
    from tests.conftest import start_gateway

    data = tmp_path_factory.mktemp("served") / "data"
    data.mkdir()
    ((generated_id, _),) = load_or_create(data)[0].items()
    record_served_keys(data, "http://127.0.0.1:8080", [generated_id])
    running = start_gateway(data)
    yield running, generated_id
    running.stop()


def test_serve_says_when_the_keys_clients_used_change(served_with_my_key: tuple[Any, str]) -> None:
    """Failed before: restarting serve with other keys broke ~/.mnscredentials without a word.
    The earlier pair was the generated one (the README's run command, then its quickstart):
    issue 36 item 8, it is said so, without "set ... as before" (nothing was set before)."""
    gateway, generated_id = served_with_my_key
    log = gateway.log_file.read_text()  # type: ignore[union-attr]
    assert (
        f"note: this data dir was last served with its generated access key {generated_id}; "
        f"now with {ACCESS_KEY_ID} from MNS_GATEWAY_ACCESS_KEY_ID" in log
    )
    assert "will be refused" in log and "as before" not in log


def test_credentials_show_says_the_gateway_refuses_the_generated_pair(
    served_with_my_key: tuple[Any, str],
) -> None:
    """Failed before: a shell without the export printed the generated pair as the gateway's."""
    gateway, generated_id = served_with_my_key
    done = run("credentials", "show", "--data-dir", str(gateway.data_dir), "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["Gateway"] == gateway.url
    assert document["ServedAccessKeyIds"] == [ACCESS_KEY_ID]
    (pair,) = document["AccessKeys"]
    assert pair["AccessKeyId"] == generated_id and pair["Accepted"] is False
    assert f"refuses {generated_id} from the pair generated in" in done.stderr
    assert f"serves with access key {ACCESS_KEY_ID}, whose secret this shell" in done.stderr


def test_credentials_show_with_the_export_says_which_key_is_accepted(
    served_with_my_key: tuple[Any, str],
) -> None:
    gateway, generated_id = served_with_my_key
    exported = {
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
    }
    done = subprocess.run(
        [
            str(MNS_GATEWAY),
            "credentials",
            "show",
            "--url",
            gateway.url,
            "--data-dir",
            str(gateway.data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**shell(), **exported},
    )
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("\n\n")
    assert f"AccessKeyId:     {ACCESS_KEY_ID}" in blocks[1] and "Accepted:        yes" in blocks[1]
    assert f"AccessKeyId:     {generated_id}" in blocks[2] and "Accepted:        NO" in blocks[2]


def test_admin_without_a_key_says_which_key_it_used(served_with_my_key: tuple[Any, str]) -> None:
    """Failed before: "The AccessKey Id you provided is not exist", with no word of which key."""
    gateway, generated_id = served_with_my_key
    data = str(gateway.data_dir)
    done = run("admin", "--url", gateway.url, "--data-dir", data, "dead-letters", "list")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "InvalidAccessKeyId" in done.stderr
    assert f"signed with access key {generated_id} from the pair generated in {data}" in done.stderr
    assert f"`mns-gateway credentials show --url {gateway.url}`" in done.stderr
