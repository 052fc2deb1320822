"""Two Node.js MNS SDKs nobody here wrote, from the npm registry (pinned in tests/node):
``@alicloud/mns``, the official one, through every queue and topic operation it implements,
and ``ali-mns`` with the gateway as its HTTP proxy (absolute-form targets). ``node`` and ``npm``
are prerequisites of the suite (tests/prerequisites.py: never skipped); ``.ci/run`` installs the
packages, and so does this module if they are missing
(docs/protocol.md#absolute-form-request-targets, docs/protocol.md#temporary-credentials).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway

NODE_DIR = Path(__file__).resolve().parents[2] / "node"


@pytest.fixture(scope="session")
def node_packages() -> Path:
    """``npm ci`` into tests/node/node_modules unless the lockfile's packages are there; one
    xdist worker at a time (``npm ci`` first deletes node_modules, under another's feet)."""
    installed = NODE_DIR / "node_modules" / ".package-lock.json"
    lockfile = NODE_DIR / "package-lock.json"
    directory = os.open(NODE_DIR, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX)
        if not installed.exists() or installed.stat().st_mtime < lockfile.stat().st_mtime:
            subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=NODE_DIR, check=True, capture_output=True, timeout=600,
            )  # fmt: skip
    finally:
        os.close(directory)  # and with it the lock
    return NODE_DIR


def run_node(script: str, scenario: str | None, env: dict[str, str]) -> dict[str, object]:
    command = ["node", str(NODE_DIR / script), *([scenario] if scenario else [])]
    done = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def sdk_env(gateway: RunningGateway, name: str, **extra: str) -> dict[str, str]:
    return {
        "GATEWAY_URL": gateway.url,
        "ACCESS_KEY_ID": ACCESS_KEY_ID,
        "ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "NAME": name,
        **extra,
    }


@pytest.mark.parametrize(
    "scenario, answered",
    [
        ("queues", {"errors": "MNSQueueNotExistError"}),
        ("messages", {"empty": "MNSMessageNotExistError"}),
        ("batches", {"refused": ["MessageNotExist"] * 3}),
        ("topics", {"empty": "MNSInvalidArgumentError"}),
    ],
)
def test_alicloud_mns_operations(
    node_packages: Path,
    gateway_process: RunningGateway,
    unique: str,
    scenario: str,
    answered: dict[str, object],
) -> None:
    assert run_node("alicloud_mns.js", scenario, sdk_env(gateway_process, unique)) == answered


def test_alicloud_mns_with_issued_temporary_credentials(
    node_packages: Path, gateway_process: RunningGateway, unique: str
) -> None:
    issued = json.loads(
        subprocess.run(
            [sys.executable, "-m", "gateway.cli", "credentials", "issue", "--ttl", "600",
             "--json", "--data-dir", str(gateway_process.data_dir)],
            env=gateway_process.env, capture_output=True, text=True, timeout=60, check=True,
        ).stdout
    )  # fmt: skip
    env = sdk_env(
        gateway_process,
        unique,
        ACCESS_KEY_ID=issued["AccessKeyId"],
        ACCESS_KEY_SECRET=issued["AccessKeySecret"],
        SECURITY_TOKEN=issued["SecurityToken"],
    )
    assert run_node("alicloud_mns.js", "messages", env) == {"empty": "MNSMessageNotExistError"}
    command = ["node", str(NODE_DIR / "alicloud_mns.js"), "account"]
    without_token = {**os.environ, **env, "SECURITY_TOKEN": ""}
    done = subprocess.run(command, env=without_token, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "MNSInvalidAccessKeyIdError" in done.stderr


def test_ali_mns_through_the_gateway_as_its_http_proxy(
    node_packages: Path, gateway_process: RunningGateway, unique: str
) -> None:
    env = sdk_env(gateway_process, unique, HTTP_PROXY=gateway_process.url, NO_PROXY="")
    env["http_proxy"] = gateway_process.url
    env["no_proxy"] = ""
    assert run_node("ali_mns_proxy.js", None, env) == {"queue": unique, "body": "through a proxy"}
