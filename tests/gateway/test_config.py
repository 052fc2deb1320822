"""Settings that are derived rather than given."""

from __future__ import annotations

from gateway.config import WORKER_CONNECTIONS, settings_from_env


def test_long_poll_limit_follows_the_worker_class() -> None:
    assert settings_from_env({}).waiter_limit == WORKER_CONNECTIONS - 100
    gthread = {"MNS_GATEWAY_WORKER_CLASS": "gthread", "MNS_GATEWAY_THREADS": "64"}
    assert settings_from_env(gthread).waiter_limit == 48
    assert settings_from_env({**gthread, "MNS_GATEWAY_THREADS": "8"}).waiter_limit == 1


def test_an_explicit_long_poll_limit_wins() -> None:
    assert settings_from_env({"MNS_GATEWAY_MAX_WAITERS": "7"}).waiter_limit == 7
    assert settings_from_env({"MNS_GATEWAY_MAX_WAITERS": " "}).waiter_limit == 900
