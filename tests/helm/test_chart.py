"""The chart and the code it deploys agree: settings, commands, versions.

Every MNS_GATEWAY_* variable a rendered container gets (or the Dockerfile or the deploy guide
names) must be one that ``settings_from_env`` reads, and every setting it reads must be passed
by the chart in some deployment shape or be listed below as deliberately left to ``extraEnv``.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterator, Mapping

import helm_python
import pytest

from gateway.cli.commands import parser as cli_parser
from gateway.config.settings import settings_from_env
from tests.helm.chart import (
    CHART,
    MATRIX,
    REPOSITORY,
    env_of,
    render_case,
    render_strictly,
    values_of,
)

#: Settings the chart leaves to ``extraEnv`` on purpose, and why.
NOT_IN_CHART = {
    "MNS_GATEWAY_RETRY_SCALE": "shortens retry schedules for tests; never wanted in production",
    "MNS_GATEWAY_INBOX": "development and CI only: SMS and mail kept instead of sent",
    "MNS_GATEWAY_WORKER_PROBES": "the chart passes it as the worker's --probes argument",
    # SMS providers (docs/delivery.md#sms-providers) go through extraEnv until the chart has
    # an sms section of its own (the secrets from a Secret).
    "MNS_GATEWAY_SMS_PROVIDER": "an SMS provider; set through extraEnv",
    "MNS_GATEWAY_SMS_ENDPOINT": "the SMS API's URL; set through extraEnv",
    "MNS_GATEWAY_SMS_ACCESS_KEY_ID": "the SMS API's AccessKey; set through extraEnv",
    "MNS_GATEWAY_SMS_ACCESS_KEY_SECRET": "the SMS API's AccessKey; extraEnv from a Secret",
    "MNS_GATEWAY_SMS_WEBHOOK_URL": "the SMS webhook; set through extraEnv",
    "MNS_GATEWAY_SMS_WEBHOOK_SECRET": "the SMS webhook's HMAC key; extraEnv from a Secret",
    # The endpoint circuit breaker (docs/delivery.md#endpoint-health) is on with the defaults
    # chosen there; tuning it goes through extraEnv until the chart has a section for it.
    **{
        f"MNS_GATEWAY_BREAKER{suffix}": "the circuit breaker's tuning; set through extraEnv"
        for suffix in (
            "",
            "_FAILURE_RATE",
            "_MIN_ATTEMPTS",
            "_WINDOW",
            "_COOL_DOWN",
            "_MAX_COOL_DOWN",
            "_EVENTS_TOPIC",
        )
    },
}

_ENV_NAME = re.compile(r"\bMNS_GATEWAY_[A-Z0-9_]*[A-Z0-9]")


class _RecordingEnv(Mapping[str, str]):
    """An empty environment that remembers every variable looked up in it."""

    def __init__(self) -> None:
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def settings_read_by_the_gateway() -> set[str]:
    """The ``MNS_GATEWAY_*`` variables read; OpenTelemetry's ``OTEL_*`` are the chart's
    ``tracing`` values (tests/helm/test_workloads.py)."""
    env = _RecordingEnv()
    settings_from_env(env)
    return {name for name in env.read if name.startswith("MNS_GATEWAY_")}


def variables_set_by_the_chart() -> set[str]:
    return {
        name
        for case in MATRIX
        for _, container in render_case(case).gateway_containers()
        for name in env_of(container)
        if name.startswith("MNS_GATEWAY_")
    }


def test_every_variable_the_chart_sets_is_read_by_the_gateway() -> None:
    known = settings_read_by_the_gateway()
    assert "MNS_GATEWAY_SMTP_URL" in known  # the recording environment works
    named = variables_set_by_the_chart()
    for path in (REPOSITORY / "Dockerfile", REPOSITORY / "docs" / "deploy.md"):
        named |= set(_ENV_NAME.findall(path.read_text(encoding="utf-8")))
    assert named - known == set(), "not read by gateway.config.settings.settings_from_env"


def test_every_setting_the_gateway_reads_is_passed_by_the_chart() -> None:
    missing = settings_read_by_the_gateway() - variables_set_by_the_chart() - NOT_IN_CHART.keys()
    assert missing == set(), "pass these in mns-gateway.env, or list them in NOT_IN_CHART with why"


@pytest.mark.parametrize("case", MATRIX)
def test_each_variable_is_set_once_per_container(case: str) -> None:
    for workload, container in render_case(case).gateway_containers():
        names = Counter(variable["name"] for variable in container["env"])
        assert [name for name, n in names.items() if n > 1] == [], workload["kind"]


@pytest.mark.parametrize("case", MATRIX)
def test_templates_read_only_values_that_exist(case: str) -> None:
    render_strictly(values_of(case))


def test_containers_run_commands_the_gateway_has() -> None:
    commands = set(cli_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert {"serve", "worker"} <= commands
    used = {
        container["args"][0]
        for case in MATRIX
        for _, container in render_case(case).gateway_containers()
    }
    assert used == {"serve", "worker", "migrate"}
    assert used <= commands, "the chart runs a command mns-gateway does not have"


def test_chart_metadata_follows_the_package_version() -> None:
    metadata = helm_python.Chart.load(CHART).metadata
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    assert (metadata["apiVersion"], metadata["name"]) == ("v2", "mns-gateway")
    assert metadata["appVersion"] == project["version"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", metadata["version"])


def test_nothing_is_fetched_from_a_chart_repository_at_install() -> None:
    with helm_python.Chart.load(CHART) as chart:
        assert "dependencies" not in chart.metadata and chart.dependencies == []
