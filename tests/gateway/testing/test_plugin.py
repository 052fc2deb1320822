"""The pytest plugin tested the way a user uses it: a project of their own in a temporary
directory, with its own tests, run by pytest in a subprocess (docs/testing.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

DOC = Path(__file__).parents[3] / "docs" / "testing.md"
EXAMPLE = re.compile(r"<!-- example: (?P<name>\S+) -->\n```python\n(?P<code>.*?)```", re.S)


def examples() -> dict[str, str]:
    """The code blocks docs/testing.md marks as examples, by file name."""
    return {m["name"]: m["code"] for m in EXAMPLE.finditer(DOC.read_text(encoding="utf-8"))}


def user_environment() -> dict[str, str]:
    """A user's shell: nothing of this project's test settings."""
    drop = ("PYTHONPATH", "PYTEST_ADDOPTS", "MNS_GATEWAY_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *command],
        cwd=project,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args)


def write(project: Path, files: dict[str, str]) -> Path:
    for name, code in files.items():
        (project / name).write_text(textwrap.dedent(code), encoding="utf-8")
    return project


def test_the_documented_example_passes(tmp_path: Path) -> None:
    project = write(tmp_path, {"test_orders.py": examples()["test_orders.py"]})
    completed = run_pytest(project)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "3 passed" in completed.stdout


def test_a_failed_test_that_used_the_gateway_reports_the_end_of_its_log(tmp_path: Path) -> None:
    project = write(
        tmp_path,
        {
            "test_failing.py": """
                def test_uses_it(mns_gateway):
                    assert mns_gateway.log_tail()
                    assert False, "the user's assertion"

                def test_does_not(mns_gateway):
                    pass

                def test_fails_without_it():
                    assert False
            """
        },
    )
    completed = run_pytest(project, "-p", "no:randomly")
    assert "2 failed, 1 passed" in completed.stdout, completed.stdout + completed.stderr
    report = completed.stdout
    assert report.count("mns-gateway log (its end)") == 1, report
    section = report.split("mns-gateway log (its end)", 1)[1].split("test_fails_without_it")[0]
    assert "mns-gateway" in section.lower() or "listening" in section.lower(), section


def test_the_context_manager_example_runs(tmp_path: Path) -> None:
    project = write(tmp_path, {"embedded.py": examples()["embedded.py"]})
    completed = run(project, "embedded.py")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "pushed and verified: hello"


def test_a_suite_that_never_uses_the_fixture_pays_nothing(tmp_path: Path) -> None:
    project = write(
        tmp_path,
        {
            "test_plain.py": """
                import sys

                def test_the_plugin_loaded_nothing_heavy():
                    assert "gateway.testing.plugin" in sys.modules
                    loaded = [m for m in sys.modules if m.startswith(
                        ("gateway.composition", "gateway.testing.embedded", "gevent", "flask",
                        "mns")
                    )]
                    assert loaded == []
            """
        },
    )
    completed = run_pytest(project)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 passed" in completed.stdout

    listed = run_pytest(project, "--fixtures")
    for fixture in ("mns_gateway ", "mns_gateway_clean", "mns_gateway_settings"):
        assert fixture in listed.stdout


def test_session_scope_clean_state_settings_and_forged_pushes(tmp_path: Path) -> None:
    project = write(
        tmp_path,
        {
            "conftest.py": """
                import pytest

                @pytest.fixture(scope="session")
                def mns_gateway_settings():
                    return {"MNS_GATEWAY_ACCOUNT_ID": "1470000000000000"}
            """,
            "test_scope.py": """
                import requests
                from mns.subscription import SubscriptionMeta
                from mns.topic import TopicMeta

                seen = []

                def test_first(mns_gateway):
                    seen.append(mns_gateway.url)
                    topic = mns_gateway.account().get_topic("left-over")
                    topic.create(TopicMeta())
                    topic.get_subscription("s").subscribe(SubscriptionMeta(mns_gateway.pushes.url))
                    attributes = topic.get_subscription("s").get_attributes()
                    assert attributes.topic_owner == "1470000000000000"

                def test_second_shares_the_gateway(mns_gateway):
                    assert seen == [mns_gateway.url]
                    assert mns_gateway.account().list_topic()[0]

                def test_clean_starts_empty(mns_gateway_clean):
                    assert mns_gateway_clean.account().list_topic()[0] == []
                    inbox = mns_gateway_clean.inbox
                    assert inbox.sms() == [] and inbox.mail() == []

                def test_a_forged_push_is_refused_and_recorded(mns_gateway):
                    answer = requests.post(mns_gateway.pushes.url + "/notifications", data=b"x",
                                           headers={"Authorization": "forged", "Date": "now"})
                    assert answer.status_code == 403
                    (forged,) = mns_gateway.pushes.received
                    assert not forged.verified and "MissingHeaderError" in forged.error
            """,
        },
    )
    completed = run_pytest(project)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "4 passed" in completed.stdout


def test_a_gateway_that_cannot_start_says_why(tmp_path: Path) -> None:
    from gateway.testing import EmbeddedGateway, GatewayStartError

    bad = EmbeddedGateway(settings={"MNS_GATEWAY_SMS_PROVIDER": "carrier-pigeon"}, start_timeout=30)
    with pytest.raises(GatewayStartError, match="carrier-pigeon"):
        bad.start()
    bad.stop()
