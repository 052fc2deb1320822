"""Run the official PHP SDK's own PHPUnit suite against a gateway started here, by hand.

    python -m tests.php.php_sdk_suite SDK_DIR [PHPUNIT_ARGS...]

``SDK_DIR`` is a checkout of ``aliyun/aliyun-mns-php-sdk`` (1.4.0). Nothing of it is changed: it
is copied to a temporary directory and configured the way its README says, with
``Tests/aliyun-mns.ini`` naming the gateway's endpoint and key. PHP, PHPUnit, Guzzle and
psr/http-message come from Debian's packages (``php-cli php-xml php-curl php-mbstring
php-guzzlehttp-guzzle php-psr-http-message phpunit``), loaded by Debian's autoloaders: there is
no Composer here. CI does not run this (the SDK is on neither PyPI, npm nor Debian);
``tests/gateway/api/test_php_sdk_parsing.py`` holds what CI checks of it, and
docs/compatibility.md the results of the last run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, start_gateway

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


def run(sdk_dir: Path, phpunit_args: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="php-sdk-") as work:
        copy = Path(work) / "sdk"
        shutil.copytree(sdk_dir, copy, ignore=shutil.ignore_patterns(".git"))
        (copy / "mns-push-bootstrap.php").write_text(BOOTSTRAP)
        gateway = start_gateway(Path(work) / "data", {"MNS_GATEWAY_PUBLIC_URL": ""})
        try:
            (copy / "Tests" / "aliyun-mns.ini").write_text(
                f"endpoint = {gateway.url}\naccessid = {ACCESS_KEY_ID}\n"
                f"accesskey = {ACCESS_KEY_SECRET}\n"
            )
            command = ["phpunit", "--bootstrap", "mns-push-bootstrap.php", *phpunit_args]
            return subprocess.run([*command, "Tests"], cwd=copy, timeout=900).returncode
        finally:
            gateway.stop()


if __name__ == "__main__":
    if len(sys.argv) < 2 or not Path(sys.argv[1], "AliyunMNS").is_dir():
        sys.exit(__doc__)
    os.environ.setdefault("MNS_GATEWAY_TEST_BACKENDS", "sqlite")
    sys.exit(run(Path(sys.argv[1]), sys.argv[2:]))
