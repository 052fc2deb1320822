"""Run the official PHP SDK's own PHPUnit suite against a gateway started here, by hand.

    python -m tests.php.php_sdk_suite SDK_DIR [PHPUNIT_ARGS...]

``SDK_DIR`` is a checkout of ``aliyun/aliyun-mns-php-sdk`` (1.4.0). Nothing of it is changed: it
is copied to a temporary directory and configured the way its README says, with
``Tests/aliyun-mns.ini`` naming the endpoint and key. The endpoint has the service's form
(``http://1234567890.mns.cn-hangzhou.aliyuncs.com``: the SDK builds QueueEndpoints from it),
resolved to a gateway inside a private network namespace (tests/netns.py). PHP, PHPUnit, Guzzle
and psr/http-message come from Debian's packages (``php-cli php-xml php-curl php-mbstring
php-guzzlehttp-guzzle php-psr-http-message phpunit``), loaded by Debian's autoloaders: there is
no Composer here. CI does not run this (the SDK is on neither PyPI, npm nor Debian);
``tests/gateway/api/test_php_sdk_parsing.py`` holds what CI checks of it, and
docs/compatibility.md the results of the last run.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.netns import private_network

#: Debian's autoloaders for the SDK's dependencies, and a PSR-4 loader for the SDK itself.
BOOTSTRAP = """<?php
require_once '/usr/share/php/GuzzleHttp/autoload.php';
require_once '/usr/share/php/Psr/Http/Message/autoload.php';
spl_autoload_register(function ($class) {
    $file = __DIR__ . '/' . str_replace('\\\\', '/', $class) . '.php';
    if (str_starts_with($class, 'AliyunMNS\\\\') && file_exists($file)) {
        require_once $file;
    }
});
"""


ACCOUNT_ID = "1234567890"
REGION = "cn-hangzhou"
#: The service's form of endpoint: the SDK derives QueueEndpoints' region and account from it.
HOST = f"{ACCOUNT_ID}.mns.{REGION}.aliyuncs.com"


def run(sdk_dir: Path, phpunit_args: list[str]) -> int:
    """The suite inside a private network namespace where :data:`HOST` is the gateway."""
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_PUBLIC_URL": f"http://{HOST}",
        "MNS_GATEWAY_ACCOUNT_ID": ACCOUNT_ID,
        "MNS_GATEWAY_REGION": REGION,
    }
    with tempfile.TemporaryDirectory(prefix="php-sdk-") as work:
        copy = Path(work) / "sdk"
        shutil.copytree(sdk_dir, copy, ignore=shutil.ignore_patterns(".git"))
        (copy / "mns-push-bootstrap.php").write_text(BOOTSTRAP)
        ini = f"endpoint = http://{HOST}\naccessid = {ACCESS_KEY_ID}\n"
        (copy / "Tests" / "aliyun-mns.ini").write_text(f"{ini}accesskey = {ACCESS_KEY_SECRET}\n")
        with private_network({HOST: "127.0.0.1"}) as network:
            gateway = network.start_gateway(Path(work) / "data", env)
            try:
                command = ["phpunit", "--bootstrap", "mns-push-bootstrap.php", *phpunit_args]
                return network.run([*command, "Tests"], cwd=copy, env=env, timeout=900).returncode
            finally:
                gateway.stop()


if __name__ == "__main__":
    if len(sys.argv) < 2 or not Path(sys.argv[1], "AliyunMNS").is_dir():
        sys.exit(__doc__)
    sys.exit(run(Path(sys.argv[1]), sys.argv[2:]))
