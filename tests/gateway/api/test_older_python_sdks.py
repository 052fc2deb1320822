"""The older official Python SDKs, ``aliyun-mns-sdk`` 1.2.2 and ``aliyun-mns`` 1.1.5 (the
package before the rename), through the response-shape and PHP-reading tests and the queue and
topic SDK tests: the same test files, run in a child pytest with the older ``mns`` package
first on the path (docs/compatibility.md#official-python-sdk).

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
OLDER = {"aliyun-mns-sdk": "1.2.2", "aliyun-mns": "1.1.5"}
FILES = (
    "tests/gateway/api/test_response_shape.py",
    "tests/gateway/api/test_php_sdk_parsing.py",
    "tests/gateway/api/test_queues_sdk.py",
    "tests/gateway/api/test_topics_sdk.py",
)


def installed(package: str, version: str) -> Path:
    target = Path(sys.prefix) / "older-sdks" / f"{package}-{version}"
    if not (target / "mns" / "__init__.py").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--target", str(target), f"{package}=={version}"],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    return target


@pytest.mark.parametrize(("package", "version"), OLDER.items())
def test_the_sdk_tests_pass_with_an_older_sdk(package: str, version: str) -> None:
    path = installed(package, version)
    env = {**os.environ, "PYTHONPATH": str(path), "MNS_GATEWAY_TEST_BACKENDS": "sqlite"}
    check = [sys.executable, "-c", "import mns, sys; print(mns.__file__)"]
    found = subprocess.run(check, env=env, capture_output=True, text=True, timeout=60).stdout
    assert found.startswith(str(path)), found
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         *FILES],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:]
