"""The older official Python SDKs, ``aliyun-mns-sdk`` 1.2.2 and ``aliyun-mns`` 1.1.5 (the
package before the rename), through the response-shape, topic and ``mnscmd`` tests: the same
test files, run in a child pytest with the older ``mns`` package first on the path
(docs/compatibility.md#official-python-sdk). The tests of message properties and ordered
queues are left out: neither SDK has those.

The packages come from PyPI, installed with ``pip --target`` under ``.venv/older-sdks`` the
first time (as ``tests/gateway/api/test_node_sdks.py`` installs the Node.js SDKs).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FILES = (
    "tests/gateway/api/test_response_shape.py",
    "tests/gateway/api/test_topics_sdk.py",
    "tests/gateway/api/test_mnscmd.py",
)
#: What fails with each, and why: the SDK's own bugs and gaps, never the gateway's
#: (docs/compatibility.md#official-python-sdk).
KNOWN = {
    ("aliyun-mns-sdk", "1.2.2"): set(),
    ("aliyun-mns", "1.1.5"): {
        # Its GetSubscriptionAttributes decoder does not read FilterTag.
        "tests/gateway/api/test_topics_sdk.py::test_subscription_lifecycle[sqlite]",
        # Its GetAccountAttributes decoder calls dict.has_key, which Python 3 does not have.
        "tests/gateway/api/test_mnscmd.py::test_mnscmd_account_attributes[sqlite]",
    },
}


def installed(package: str, version: str) -> Path:
    target = Path(sys.prefix) / "older-sdks" / f"{package}-{version}"
    if not (target / "mns" / "__init__.py").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--target", str(target), f"{package}=={version}"],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    return target


@pytest.mark.parametrize(("package", "version"), KNOWN)
def test_the_sdk_tests_pass_with_an_older_sdk(package: str, version: str) -> None:
    path = installed(package, version)
    env = {**os.environ, "PYTHONPATH": str(path), "MNS_PUSH_TEST_BACKENDS": "sqlite"}
    check = [sys.executable, "-c", "import mns, sys; print(mns.__file__)"]
    found = subprocess.run(check, env=env, capture_output=True, text=True, timeout=60).stdout
    assert found.startswith(str(path)), found
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:randomly",
         "-p", "no:cacheprovider", *FILES],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    failed = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("FAILED ")}
    assert failed == KNOWN[package, version], done.stdout[-4000:]
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-4000:]
