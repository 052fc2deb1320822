"""The Node.js SDKs' own test suites, run with mocha against a gateway: ``@alicloud/mns``'s
(tests/node/alicloud_mns_suite.test.js) and ``ali-mns``'s (tests/node/ali_mns_suite.test.js),
reproduced from their repositories because neither npm package ships its tests.

Both suites address the service by its real names (``http://{account}.mns.{region}
.aliyuncs.com``, port 80) with no option to say otherwise, so the gateway and mocha run inside a
private network namespace whose hosts file maps those names to 127.0.0.1 (tests/netns.py). What
``@alicloud/mns``'s checks of the gateway: Location and QueueURL / TopicURL under the public URL,
ListQueue and ListTopic entries found by QueueName and TopicName, HostId naming the host the
request addressed, the service's texts for InvalidAccessKeyId and SignatureDoesNotMatch
(docs/compatibility.md#alicloudmns-120).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests import netns
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.gateway.api.test_node_sdks import NODE_DIR, node_packages  # noqa: F401 (fixture)

ACCOUNT_ID = "1234567890"

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not netns.available(), reason="network namespaces need ip and root"),
]


def run_suite(
    suite: list[str], region: str, tmp_path: Path, hosts: list[str], mocha_env: dict[str, str]
) -> dict[str, Any]:
    """Mocha's JSON report of ``suite`` (the file and the options of the SDK's own ``npm
    test``) run against a gateway whose public URL is ``http://{ACCOUNT_ID}.mns.{region}
    .aliyuncs.com``, that name and ``hosts`` resolving to it."""
    public_host = f"{ACCOUNT_ID}.mns.{region}.aliyuncs.com"
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_PUBLIC_URL": f"http://{public_host}",
        "MNS_GATEWAY_ACCOUNT_ID": ACCOUNT_ID,
        "MNS_GATEWAY_REGION": region,
    }
    names = dict.fromkeys([public_host, *hosts], "127.0.0.1")
    with netns.private_network(names) as network:
        gateway = network.start_gateway(tmp_path / "data", env)
        try:
            # The report to a file: the SDKs print to stdout too.
            report_file = tmp_path / "mocha.json"
            mocha = [str(NODE_DIR / "node_modules" / ".bin" / "mocha"), "--reporter", "json"]
            mocha += ["--reporter-option", f"output={report_file}"]
            done = network.run(
                [*mocha, *suite],
                cwd=NODE_DIR,
                env={**env, **mocha_env},
                capture_output=True,
                timeout=300,
            )
        finally:
            gateway.stop()
    assert report_file.exists(), done.stdout + done.stderr
    report: dict[str, Any] = json.loads(report_file.read_text())
    failures = {test["fullTitle"]: test["err"].get("message") for test in report["failures"]}
    assert failures == {}, done.stdout + done.stderr
    assert report["stats"]["pending"] == 0
    return report


def test_the_alicloud_mns_suite_passes_whole(
    node_packages: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    report = run_suite(
        ["-t", "30000", "alicloud_mns_suite.test.js"],
        "cn-shanghai",
        tmp_path,
        ["accountid.mns.cn-shanghai.aliyuncs.com"],  # its error cases' account
        {"ACCOUNT_ID": ACCOUNT_ID, "ACCESS_KEY_ID": ACCESS_KEY_ID,
         "ACCESS_KEY_SECRET": ACCESS_KEY_SECRET},
    )  # fmt: skip
    assert report["stats"]["passes"] == 21  # every case: docs/compatibility.md's count


def test_the_ali_mns_suite_passes_whole(
    node_packages: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    report = run_suite(
        ["ali_mns_suite.test.js"],
        "cn-hangzhou",
        tmp_path,
        [],
        {"aliyun_accountId": ACCOUNT_ID, "aliyun_keyId": ACCESS_KEY_ID,
         "aliyun_keySecret": ACCESS_KEY_SECRET},
    )  # fmt: skip
    assert report["stats"]["passes"] == 14  # every case: docs/compatibility.md's count
