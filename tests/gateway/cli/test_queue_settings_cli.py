"""``mns-gateway queues`` and ``mns-gateway subscriptions``: QueueType and dead-letter policies
set from the command line, with the XML API's checks, and honoured by the gateway the official
SDK talks to (docs/queues.md#from-the-command-line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mns.account import Account
from mns.message_property import SystemPropertyName
from mns.queue import Message
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMeta

from gateway.cli.commands import main
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, start_gateway

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> tuple[int, dict]:
    code = main([*args, "--data-dir", str(data_dir), "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else {"error": err}


def test_queues_created_and_set_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, tmp_path, "migrate")[0] == 0  # a gateway's data dir
    assert run(capsys, tmp_path, "queues", "create", "dlq")[0] == 0
    code, created = run(
        capsys, tmp_path, "queues", "create", "jobs", "--type", "fifo",
        "--dlq-target", "dlq", "--max-receive-count", "1",
    )  # fmt: skip
    assert code == 0
    assert created["QueueType"] == "fifo"
    assert created["DlqPolicy"] == {
        "DeadLetterTargetQueue": "dlq",
        "MaxReceiveCount": 1,
        "Enabled": True,
    }
    code, failure = run(capsys, tmp_path, "queues", "set", "jobs", "--dlq-target", "jobs")
    assert code == 1 and "cannot be its own dead-letter queue" in failure["error"]
    code, failure = run(capsys, tmp_path, "queues", "set", "jobs", "--max-receive-count", "0")
    assert code == 1 and "between 1 and 1000" in failure["error"]

    gateway = start_gateway(tmp_path)
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        jobs, dlq = account.get_queue("jobs"), account.get_queue("dlq")
        for queue in (jobs, dlq):
            queue.set_encoding(False)
        sent = jobs.send_message(Message("fails once", message_group_id="g"))
        first = jobs.receive_message()
        jobs.change_message_visibility(first.receipt_handle, 0)
        jobs.send_message(Message("behind it", message_group_id="g"))
        assert jobs.receive_message().message_body == "behind it"  # the head moved on
        dead = dlq.receive_message()
        origin = dead.get_system_properties()[SystemPropertyName.DLQ_ORIGIN_MESSAGE_ID]
        assert origin.get_raw_value() == sent.message_id
    finally:
        gateway.stop()


def test_a_subscription_dead_letter_queue_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = start_gateway(tmp_path)
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        topic = account.get_topic("t")
        topic.create(TopicMeta())
        topic.get_subscription("s").subscribe(SubscriptionMeta("http://127.0.0.1:9/x"))
    finally:
        gateway.stop()
    code, failure = run(capsys, tmp_path, "subscriptions", "set", "t", "s", "--dlq-target", "q")
    assert code == 1 and "does not exist" in failure["error"]
    assert run(capsys, tmp_path, "queues", "create", "q")[0] == 0
    code, changed = run(capsys, tmp_path, "subscriptions", "set", "t", "s", "--dlq-target", "q")
    assert code == 0
    assert changed["DlqPolicy"] == {"DeadLetterTargetQueue": "q", "Enabled": True}
    code, shown = run(capsys, tmp_path, "subscriptions", "show", "t", "s")
    assert shown == changed
