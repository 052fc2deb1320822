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
