"""A few commands through ``mnscmd``, the official CLI, as an operator would type them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway


def mnscmd(gateway: RunningGateway, config: Path, *args: str) -> str:
    executable = shutil.which("mnscmd", path=str(Path(sys.executable).parent))
    assert executable, "mnscmd is installed with the dev extra"
    completed = subprocess.run(
        [sys.executable, executable, *args, f"--configfile={config}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return completed.stdout + completed.stderr


def test_mnscmd_topic_commands(
    gateway_process: RunningGateway, tmp_path: Path, unique: str
) -> None:
    config = tmp_path / "mnscredentials"
    out = mnscmd(
        gateway_process,
        config,
        "config",
        f"--mnsendpoint={gateway_process.url}",
        f"--accesskeyid={ACCESS_KEY_ID}",
        f"--accesskeysecret={ACCESS_KEY_SECRET}",
    )
    assert "configuration is saved" in out

    out = mnscmd(gateway_process, config, "createtopic", f"--topicname={unique}")
    assert "createtopic succeed" in out and f"/topics/{unique}" in out

    out = mnscmd(
        gateway_process,
        config,
        "subscribe",
        f"--topicname={unique}",
        "--subname=cli",
        "--endpoint=http://127.0.0.1:9/cli",
        "--notifycontentformat=JSON",
    )
    assert "subscribe succeed" in out

    out = mnscmd(gateway_process, config, "publishmessage", f"--topicname={unique}", "--body=hello")
    assert "publishmessage succeed" in out

    out = mnscmd(gateway_process, config, "gettopicattr", f"--topicname={unique}")
    assert "gettopicattr succeed" in out
    count_line = next(line for line in out.splitlines() if line.startswith("MessageCount"))
    assert count_line.split(":")[1].strip() == "1"

    out = mnscmd(gateway_process, config, "listtopic", f"--prefix={unique}")
    assert "listtopic succeed" in out and unique in out

    out = mnscmd(gateway_process, config, "listsub", f"--topicname={unique}")
    assert "listsub succeed" in out and "cli" in out

    out = mnscmd(gateway_process, config, "gettopicattr", f"--topicname={unique}-missing")
    assert "gettopicattr fail" in out and "TopicNotExist" in out

    out = mnscmd(gateway_process, config, "deletetopic", f"--topicname={unique}")
    assert "deletetopic succeed" in out


def configure(gateway: RunningGateway, config: Path, key_id: str, secret: str, *extra: str) -> None:
    out = mnscmd(
        gateway,
        config,
        "config",
        f"--mnsendpoint={gateway.url}",
        f"--accesskeyid={key_id}",
        f"--accesskeysecret={secret}",
        *extra,
    )
    assert "configuration is saved" in out


def test_mnscmd_account_attributes(gateway_process: RunningGateway, tmp_path: Path) -> None:
    config = tmp_path / "mnscredentials"
    configure(gateway_process, config, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    mnscmd(gateway_process, config, "setaccountattr", "--loggingbucket=from-mnscmd")
    assert "from-mnscmd" in mnscmd(gateway_process, config, "getaccountattr")


def test_mnscmd_with_issued_temporary_credentials(
    gateway_process: RunningGateway, tmp_path: Path, unique: str
) -> None:
    """``credentials issue`` for people, pasted into ``mnscmd config --token``."""
    issued = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "credentials", "issue", "--ttl", "600",
         "--data-dir", str(gateway_process.data_dir)],
        env=gateway_process.env, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    fields = dict(line.split(":", 1) for line in issued.splitlines())
    config = tmp_path / "mnscredentials"
    key_id, secret, token = (
        fields[k].strip() for k in ("AccessKeyId", "AccessKeySecret", "SecurityToken")
    )
    configure(gateway_process, config, key_id, secret, f"--token={token}")
    out = mnscmd(gateway_process, config, "createtopic", f"--topicname={unique}")
    assert "createtopic succeed" in out, out
    configure(gateway_process, config, key_id, secret)  # the same key without its token
    out = mnscmd(gateway_process, config, "gettopicattr", f"--topicname={unique}")
    assert "InvalidAccessKeyId" in out
