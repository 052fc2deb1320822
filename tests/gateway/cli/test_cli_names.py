"""``mns-gateway queues create`` stores only names the API accepts (issue 33, finding 4): the
name is checked where the model builds the queue, so a name the SDK could list but not open
never reaches the store, and the command says why (exit 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mns.account import Account

from gateway.cli.commands import main
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, start_gateway

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REFUSED = {
    "bad_name!": "InvalidQueueName",
    "a/b": "InvalidQueueName",
    "_under": "InvalidQueueName",
    "caf\u00e9": "InvalidQueueName",
    "nul\x00": "InvalidQueueName",
    "x" * 257: "QueueNameLengthError",
    "y" * 300: "QueueNameLengthError",
}


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> tuple[int, str]:
    code = main([*args, "--data-dir", str(data_dir), "--json"])
    out, err = capsys.readouterr()
    return code, out if code == 0 else err


def test_queues_create_refuses_names_the_api_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, tmp_path, "migrate")[0] == 0
    for name, code in REFUSED.items():
        status, error = run(capsys, tmp_path, "queues", "create", name)
        assert (status, code in error) == (1, True), (name, error)
    # Letters or digits first, then letters, digits and '-', up to 256 (the API's own rule).
    accepted = ["1digit", "a-b", "z" * 256]
    for name in accepted:
        assert run(capsys, tmp_path, "queues", "create", name)[0] == 0, name
    status, listed = run(capsys, tmp_path, "queues", "list")
    assert sorted(q["QueueName"] for q in json.loads(listed)["Queues"]) == sorted(accepted)

    gateway = start_gateway(tmp_path)
    try:
        account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
        # ListQueue gives each queue's URL.
        listed_by_sdk = [url.rsplit("/", 1)[1] for url in account.list_queue()[0]]
        assert sorted(listed_by_sdk) == sorted(accepted)
        for name in listed_by_sdk:  # every queue the SDK lists, it can open
            assert account.get_queue(name).get_attributes().queue_name == name
    finally:
        gateway.stop()
