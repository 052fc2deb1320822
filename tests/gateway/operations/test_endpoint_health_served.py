"""Endpoint health through a running ``mns-gateway serve``: a subscription whose endpoint keeps
failing opens its breaker, seen through the admin API, ``mns-gateway subscriptions health``
and ``/metrics``; an operator holds it open and closes it again, and its backlog is delivered
(docs/delivery.md#endpoint-health)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mns.account import Account
from mns.subscription import SubscriptionMeta
from mns.topic import TopicMessage, TopicMeta

from gateway.cli.commands import main
from tests.conftest import (
    ACCESS_KEY_ID,
    ACCESS_KEY_SECRET,
    FAST_RETRIES,
    RunningGateway,
    start_gateway,
)
from tests.support.pushes import pushes_to

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def admin(gateway: RunningGateway, method: str, path: str, status: int = 200) -> Any:
    response = gateway.raw().send(method, path)
    assert response.status == status, response.body
    return json.loads(response.body) if status == 200 else response.body


def cli(capsys: pytest.CaptureFixture[str], data_dir: Path, *args: str) -> Any:
    code = main(["subscriptions", *args, "--data-dir", str(data_dir), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def eventually(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(what)


def test_an_open_breaker_seen_held_and_closed_by_an_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "data"
    # Slow probes (the breaker's times scale with the retry scale: 50 s is 0.5 s here): the
    # test sees it open between them.
    gateway = start_gateway(data_dir, {**FAST_RETRIES, "MNS_GATEWAY_BREAKER_COOL_DOWN": "50"})
    try:
        with pushes_to(gateway.url) as endpoint:
            endpoint.status = 500
            account = Account(gateway.url, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
            topic = account.get_topic("alerts")
            topic.create(TopicMeta())
            meta = SubscriptionMeta(endpoint.url, notify_strategy="EXPONENTIAL_DECAY_RETRY")
            topic.get_subscription("hook").subscribe(meta)
            ids = [topic.publish_message(TopicMessage(f"m{n}")).message_id for n in range(15)]

            def state() -> str:
                return admin(gateway, "GET", "/admin/topics/alerts/subscriptions/hook/health")[
                    "State"
                ]

            eventually(lambda: state() == "open", "the breaker never opened")
            listed = admin(gateway, "GET", "/admin/subscriptions/health?topic=alerts")
            (entry,) = listed["Subscriptions"]
            assert entry["SubscriptionName"] == "hook" and entry["FailureRate"] >= 0.7
            assert entry["NextProbeTime"] is not None

            # Held open for maintenance, from the admin API; the CLI sees the same.
            held = admin(
                gateway, "POST", "/admin/topics/alerts/subscriptions/hook/circuit?override=open"
            )
            assert (held["State"], held["Override"]) == ("open", "open")
            assert held["NextProbeTime"] is None  # issue 47: no probe goes out while held
            (seen,) = cli(capsys, data_dir, "health")["Subscriptions"]
            assert (seen["State"], seen["Override"]) == ("open", "open")
            metrics = gateway.raw().send("GET", "/metrics").body.decode()
            assert (
                'mns_endpoint_circuit_state{state="open",subscription="hook",topic="alerts"} 1.0'
                in metrics
            )
            assert "mns_endpoint_circuit_transitions_total" in metrics
            requests_before = len(endpoint.received)
            time.sleep(1)  # two cool-downs: no probe while held open
            assert len(endpoint.received) == requests_before

            # The endpoint is back; the operator closes the breaker from the command line.
            endpoint.status = 204
            closed = cli(capsys, data_dir, "circuit", "alerts", "hook", "--override", "closed")
            assert (closed["State"], closed["Override"]) == ("closed", "closed")
            eventually(
                lambda: all(
                    any(i.encode() in r.body for r in endpoint.received[requests_before:])
                    for i in ids
                ),
                "the backlog was not delivered",
            )
            assert admin(gateway, "GET", "/admin/dead-letters?topic=alerts")["DeadLetters"] == []
            auto = cli(capsys, data_dir, "circuit", "alerts", "hook", "--override", "auto")
            assert (auto["State"], auto["Override"]) == ("closed", None)

            refused = admin(
                gateway, "POST", "/admin/topics/alerts/subscriptions/hook/circuit?override=x", 400
            )
            assert b"InvalidArgument" in refused
            admin(gateway, "GET", "/admin/topics/alerts/subscriptions/nope/health", 404)
    finally:
        gateway.stop()


def test_the_breaker_settings() -> None:
    from gateway.breaker.state import BreakerPolicy
    from gateway.config.settings import settings_from_env
    from gateway.errors.commands import SettingsError
    from gateway.store.opening import breaker_policy

    assert breaker_policy(settings_from_env({})) == BreakerPolicy()
    settings = settings_from_env(
        {
            "MNS_GATEWAY_BREAKER": "0",
            "MNS_GATEWAY_BREAKER_FAILURE_RATE": "0.5",
            "MNS_GATEWAY_BREAKER_MIN_ATTEMPTS": "20",
            "MNS_GATEWAY_BREAKER_WINDOW": "60",
            "MNS_GATEWAY_BREAKER_COOL_DOWN": "10",
            "MNS_GATEWAY_BREAKER_MAX_COOL_DOWN": "120",
            "MNS_GATEWAY_RETRY_SCALE": "0.5",
        }
    )
    assert breaker_policy(settings) == BreakerPolicy(
        enabled=False,
        failure_rate=0.5,
        min_attempts=20,
        window_ms=30_000,
        cool_down_ms=5_000,
        max_cool_down_ms=60_000,
    )
    for name, value in (
        ("FAILURE_RATE", "1.5"),
        ("FAILURE_RATE", "0"),
        ("MIN_ATTEMPTS", "0"),
        ("WINDOW", "-1"),
        ("COOL_DOWN", "x"),
    ):
        with pytest.raises(SettingsError, match=f"MNS_GATEWAY_BREAKER_{name}"):
            settings_from_env({f"MNS_GATEWAY_BREAKER_{name}": value})
