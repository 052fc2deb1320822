"""The ``@alicloud/mns`` SDK's own test suite (tests/node/alicloud_mns_suite.test.js, reproduced
from its repository because the npm package ships no tests), run with mocha against a gateway.

The suite addresses ``http://{ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com`` (and, for its error
cases, ``http://accountid.mns.cn-shanghai.aliyuncs.com``) on port 80, with no option to say
otherwise, so the gateway and mocha run inside a private network namespace whose hosts file maps
both names to 127.0.0.1 (tests/netns.py). What it checks of the gateway: Location and QueueURL /
TopicURL under the public URL, the entries of ListQueue and ListTopic found by QueueName and
TopicName, HostId naming the host the request addressed, and the service's texts for
InvalidAccessKeyId and SignatureDoesNotMatch (docs/compatibility.md#alicloudmns-120).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests import netns
from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.gateway.api.test_node_sdks import NODE_DIR, node_packages  # noqa: F401 (fixture)

ACCOUNT_ID = "1234567890"
REGION = "cn-shanghai"
PUBLIC_URL = f"http://{ACCOUNT_ID}.mns.{REGION}.aliyuncs.com"
#: Every case of the suite, by its full title: the count docs/compatibility.md gives.
SUITE_CASES = 21

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed"),
    pytest.mark.skipif(not netns.available(), reason="network namespaces need ip and root"),
]


def test_the_alicloud_mns_suite_passes_whole(
    node_packages: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    hosts = {f"{ACCOUNT_ID}.mns.{REGION}.aliyuncs.com": "127.0.0.1"}
    hosts["accountid.mns.cn-shanghai.aliyuncs.com"] = "127.0.0.1"
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_PUBLIC_URL": PUBLIC_URL,
        "MNS_GATEWAY_ACCOUNT_ID": ACCOUNT_ID,
        "MNS_GATEWAY_REGION": REGION,
    }
    with netns.private_network(hosts) as network:
        gateway = network.start_gateway(tmp_path / "data", env)
        try:
            mocha = [str(NODE_DIR / "node_modules" / ".bin" / "mocha"), "-t", "30000"]
            done = network.run(
                [*mocha, "--reporter", "json", "alicloud_mns_suite.test.js"],
                cwd=NODE_DIR,
                env={**env, "ACCOUNT_ID": ACCOUNT_ID, "ACCESS_KEY_ID": ACCESS_KEY_ID,
                     "ACCESS_KEY_SECRET": ACCESS_KEY_SECRET},
                capture_output=True,
                timeout=300,
            )  # fmt: skip
        finally:
            gateway.stop()
    report = json.loads(done.stdout)
    failures = {test["fullTitle"]: test["err"].get("message") for test in report["failures"]}
    assert failures == {}, done.stderr
    assert report["stats"]["passes"] == SUITE_CASES
    assert report["stats"]["pending"] == 0
