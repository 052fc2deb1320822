"""The official PHP SDK (``aliyun/aliyun-mns-php-sdk`` 1.4.0) against a gateway: its own PHPUnit
suite and its headless samples, unchanged, configured the way its README and the samples say.

The SDK is read from ``../shared/clients/aliyun-mns-php-sdk`` beside the checkout (``MNS_PHP_SDK``
names another) and copied to a temporary directory: the suite gets ``Tests/aliyun-mns.ini``
(endpoint and key), each sample has its blanks filled in (``$endPoint = "";`` and the like, which
it refuses to run without) and reads the key from the environment as it asks. The endpoint has
the service's form (``http://1234567890.mns.cn-hangzhou.aliyuncs.com``: the SDK builds
QueueEndpoints from it), resolved to a gateway inside a private network namespace
(tests/netns.py). PHP, PHPUnit, Guzzle and psr/http-message are Debian's (``php-cli php-xml
php-curl php-mbstring php-guzzlehttp-guzzle php-psr-http-message phpunit``, which .ci/run
installs), loaded by Debian's autoloaders: there is no Composer here.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET
from tests.netns import PrivateNetwork

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_PACKAGES = (
    "php-cli php-xml php-curl php-mbstring php-guzzlehttp-guzzle php-psr-http-message phpunit"
)
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
#: Where CreateTopicAndPublishMessage's subscription pushes: the SDK's own http_server_sample.php
#: under ``php -S``, inside the namespace.
PUSH_PORT = 8000


def sdk_dir() -> Path:
    return Path(os.environ.get("MNS_PHP_SDK", ROOT.parent / "shared/clients/aliyun-mns-php-sdk"))


def missing() -> str | None:
    """Why the PHP run cannot happen here, or ``None``."""
    if not (sdk_dir() / "AliyunMNS").is_dir():
        return f"the PHP SDK is not at {sdk_dir()} (set MNS_PHP_SDK to a copy of it)"
    absent = [p for p in ("php", "phpunit", "ip") if shutil.which(p) is None]
    if absent or not Path("/usr/share/php/GuzzleHttp/autoload.php").is_file():
        return f"{', '.join(absent) or 'Guzzle'} missing: apt-get install {DEBIAN_PACKAGES}"
    if os.geteuid() != 0:
        return "the PHP SDK runs in a network namespace, which needs root (tests/netns.py)"
    return None


def suite_cases(sdk: Path) -> list[str]:
    """``Class::testMethod`` of every test in the SDK's ``Tests/``, read from its sources (each
    test is a ``public function test…`` of a class; none has a data provider)."""
    cases = []
    for source in sorted((sdk / "Tests").rglob("*Test.php")):
        text = source.read_text()
        found = re.search(r"^class (\w+)", text, re.MULTILINE)
        assert found, source
        cases += [f"{found[1]}::{m}" for m in re.findall(r"public function (test\w+)", text)]
    return cases


def environment() -> dict[str, str]:
    """The gateway's and the PHP processes' environment: the gateway's public URL is the
    service-shaped endpoint; the samples read the key from ALIBABA_CLOUD_ACCESS_KEY_*."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),  # this checkout's gateway, whatever is installed
        "MNS_GATEWAY_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "MNS_GATEWAY_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
        "MNS_GATEWAY_PUBLIC_URL": f"http://{HOST}",
        "MNS_GATEWAY_ACCOUNT_ID": ACCOUNT_ID,
        "MNS_GATEWAY_REGION": REGION,
        "ALIBABA_CLOUD_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET": ACCESS_KEY_SECRET,
    }


def configured_copy(sdk: Path, work: Path) -> Path:
    """A copy of the SDK with the bootstrap, the suite's ini and the samples' blanks filled in."""
    copy = work / "sdk"
    shutil.copytree(sdk, copy, ignore=shutil.ignore_patterns(".git"))
    for path in (copy, *copy.rglob("*")):  # the original may be read-only, the copy is written
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    (copy / "mns-push-bootstrap.php").write_text(BOOTSTRAP)
    ini = f"endpoint = http://{HOST}\naccessid = {ACCESS_KEY_ID}\naccesskey = {ACCESS_KEY_SECRET}\n"
    (copy / "Tests" / "aliyun-mns.ini").write_text(ini)
    blanks = {
        "endPoint": f"http://{HOST}",
        "region": REGION,
        "accountId": ACCOUNT_ID,
        "ip": "127.0.0.1",
        "port": str(PUSH_PORT),
    }
    for sample in (copy / "Samples").rglob("*.php"):
        text = sample.read_text()
        for name, value in blanks.items():
            text = re.sub(rf'^\${name}\s*=\s*"[^"]*";', f'${name} = "{value}";', text, flags=re.M)
        sample.write_text(text)
    return copy


@dataclass(frozen=True)
class Case:
    """One PHPUnit test's outcome: ``None`` when it passed, else PHPUnit's failure text."""

    name: str
    failure: str | None


def run_suite(network: PrivateNetwork, copy: Path, report: Path) -> tuple[dict[str, Case], str]:
    """PHPUnit over ``Tests/`` with a JUnit report: each test case's outcome, and the output."""
    command = ["phpunit", "--bootstrap", "mns-push-bootstrap.php", "--log-junit", str(report)]
    done = network.run(
        [*command, "Tests"], cwd=copy, env=environment(), capture_output=True, timeout=300
    )
    output = done.stdout + done.stderr
    if not report.is_file():
        raise AssertionError(f"PHPUnit wrote no report:\n{output}")
    cases = {}
    for element in ET.parse(report).iter("testcase"):
        name = f"{element.get('class', '').rsplit(chr(92), 1)[-1]}::{element.get('name')}"
        problems = [child.text or child.tag for child in element if child.tag != "system-out"]
        cases[name] = Case(name, "\n".join(problems) or None)
    return cases, output


#: The samples that run without a person: all but http_server_sample.php, which is the page a
#: push endpoint serves (CreateTopicAndPublishMessage's pushes go to it under ``php -S``).
SAMPLES = (
    "Queue/CreateQueueAndSendMessage.php",
    "Topic/CreateTopicAndPublishMessage.php",
    "Topic/CreateTopicAndPushMessageToQueue.php",
    "Topic/TopicSubscribe.php",
)


def start_samples(network: PrivateNetwork, copy: Path, logs: Path) -> dict[str, Started]:
    """Every sample started at once (each uses its own queue and topic names; one of them waits
    20 s for a push), with the push endpoint; wait for them with :func:`finish`."""
    env = environment()
    logs.mkdir(parents=True, exist_ok=True)
    endpoint = ["php", "-S", f"127.0.0.1:{PUSH_PORT}", "http_server_sample.php"]
    started = {"push endpoint": Started.of(network, endpoint, copy / "Samples/Topic", env, logs)}
    # The samples' Common.php loads a Composer autoloader there is none of: Debian's and the
    # SDK's are prepended instead, as PHPUnit's --bootstrap does for the suite.
    php = ["php", "-d", f"auto_prepend_file={copy / 'mns-push-bootstrap.php'}"]
    for sample in SAMPLES:
        command = [*php, str(copy / "Samples" / sample)]
        started[sample] = Started.of(network, command, copy, env, logs)
    return started


@dataclass(frozen=True)
class Started:
    """A PHP process in the namespace, its output going to a file (no pipe to fill up)."""

    process: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def of(
        cls, network: PrivateNetwork, argv: list[str], cwd: Path, env: dict[str, str], logs: Path
    ) -> Started:
        log = logs / (Path(argv[-1]).stem + ".log")
        with log.open("wb") as out:
            process = subprocess.Popen(
                network.command(argv), cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        return cls(process, log)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def finish(started: dict[str, Started]) -> dict[str, str]:
    """Each sample's output once it exits, then the push endpoint's log once it is stopped
    (``ip netns exec`` execs php, so each PID is the PHP process's own)."""
    try:
        for name, each in started.items():
            if name != "push endpoint":
                each.process.wait(timeout=120)
    finally:
        for each in started.values():
            if each.process.poll() is None:
                each.process.terminate()
                each.process.wait(timeout=30)
    return {name: each.output() for name, each in started.items()}
