"""The official PHP SDK 1.4.0's own PHPUnit suite and its headless samples, unchanged, against
a gateway (issue 36 item 3; how: tests/php/php_sdk.py, docs/compatibility.md#php-sdk-140).

One gateway in one network namespace serves them all, once per session (``php_run``): the suite
first, then the four samples at once. Each PHPUnit test is a test here, so a failure names the PHP
test and carries PHPUnit's message; each sample is one too.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.netns import private_network
from tests.php import php_sdk

#: One worker runs them all under ``--dist loadgroup``: the session's one PHP run serves every
#: test here, and a second worker would start a second one.
pytestmark = [pytest.mark.php, pytest.mark.xdist_group("php")]

#: Every test of the SDK's suite, read from its sources; where they cannot be read, one case that
#: fails saying why (an empty list would make pytest skip, and this suite skips nothing).
CASES = php_sdk.suite_cases(php_sdk.sdk_dir()) if php_sdk.missing() is None else ["unreadable"]


@dataclass(frozen=True)
class PhpRun:
    cases: dict[str, php_sdk.Case]
    suite_output: str
    samples: dict[str, str]


@pytest.fixture(scope="session")
def php_run() -> Iterator[PhpRun]:
    why = php_sdk.missing()
    if why is not None:
        pytest.fail(f"the PHP SDK cannot run here: {why}")
    with tempfile.TemporaryDirectory(prefix="php-sdk-") as temporary:
        work = Path(temporary)
        copy = php_sdk.configured_copy(php_sdk.sdk_dir(), work)
        with private_network({php_sdk.HOST: "127.0.0.1"}) as network:
            gateway = network.start_gateway(work / "data", php_sdk.environment())
            try:
                cases, output = php_sdk.run_suite(network, copy, work / "junit.xml")
                started = php_sdk.start_samples(network, copy, work / "samples")
                samples = php_sdk.finish(started)
            finally:
                gateway.stop()
        yield PhpRun(cases, output, samples)


def test_the_sdk_and_its_suite_are_here() -> None:
    """Fails, rather than leaving the suite out, where the SDK or PHP is missing."""
    assert php_sdk.missing() is None
    assert len(CASES) == 30  # the count docs/compatibility.md gives


def test_phpunit_ran_every_test_of_the_suite(php_run: PhpRun) -> None:
    assert sorted(php_run.cases) == sorted(CASES), php_run.suite_output


@pytest.mark.parametrize("case", CASES)
def test_phpunit(php_run: PhpRun, case: str) -> None:
    outcome = php_run.cases.get(case)
    assert outcome is not None, f"PHPUnit did not report {case}:\n{php_run.suite_output}"
    assert outcome.failure is None, outcome.failure


def sample_output(php_run: PhpRun, sample: str) -> str:
    output = php_run.samples[sample]
    assert "Must Provide" not in output and "Must Set" not in output, output  # configured
    return output


@pytest.mark.parametrize(
    ("sample", "milestones"),
    [
        (
            "Queue/CreateQueueAndSendMessage.php",
            # the peeked and the received message's MD5 is the sent one's; properties come back
            ["You got the message sent by yourself!", "UserProperties:", "SystemProperties:",
             "BatchDeleteMessage Succeed!", "DeleteQueue Succeed!"],
        ),
        (
            "Topic/CreateTopicAndPushMessageToQueue.php",
            ["Receive Message success, MessageBody: ", "Key: test-key1, Value: string property",
             "DeleteMessage Succeed!", "DeleteQueue Succeed!"],
        ),
        (
            "Topic/CreateTopicAndPublishMessage.php",
            ["Subscribed!", "MessagePublished!", "Unsubscribe Succeed!", "DeleteTopic Succeed!"],
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)  # fmt: skip
def test_the_sample_runs_to_its_end(php_run: PhpRun, sample: str, milestones: list[str]) -> None:
    output = sample_output(php_run, sample)
    assert "Failed" not in output, output
    assert all(line in output for line in milestones), output
    assert output.rstrip().endswith(milestones[-1]), output


def test_the_publish_sample_s_push_reaches_the_sdk_s_push_endpoint(php_run: PhpRun) -> None:
    """CreateTopicAndPublishMessage subscribes http://127.0.0.1:8000, where the SDK's own
    http_server_sample.php logs each push it accepts (its Content-MD5 check passed)."""
    log = php_run.samples["push endpoint"]
    assert "<TopicName>CreateTopicAndPublishMessageExample</TopicName>" in log, log
    assert "md5 mismatch" not in log, log


def test_the_topic_subscribe_sample_fails_on_its_own_filter_tag(php_run: PhpRun) -> None:
    """The sample's own failure, not the gateway's: it subscribes with the 19-character FilterTag
    ``php-sdk-test-filter``, and the API reference and the official Python SDK allow 16 at most
    (docs/compatibility.md#php-sdk-140). The gateway keeps the documented limit and says so with
    the service's error; the sample prints it and stops."""
    output = sample_output(php_run, "Topic/TopicSubscribe.php")
    assert "TopicCreated!" in output and "QueueCreated!" in output, output
    assert "subscribe failed: " in output, output
    refusal = "Code: 400 Message: The length of filter tag should be between 1 and 16."
    assert refusal in output and "MnsErrorCode: InvalidArgument" in output, output
    assert "subscribe done" not in output, output
