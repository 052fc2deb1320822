"""Settings that are derived rather than given."""

from __future__ import annotations

from gateway.config import GEVENT_WAITERS, settings_from_env


def test_long_poll_limit_follows_the_worker_class() -> None:
    assert settings_from_env({}).waiter_limit == GEVENT_WAITERS
    small = {"MNS_GATEWAY_MAX_CONNECTIONS": "500"}  # long polls never take the last 100
    assert settings_from_env(small).waiter_limit == 400
    gthread = {"MNS_GATEWAY_WORKER_CLASS": "gthread", "MNS_GATEWAY_THREADS": "64"}
    assert settings_from_env(gthread).waiter_limit == 48
    assert settings_from_env({**gthread, "MNS_GATEWAY_THREADS": "8"}).waiter_limit == 1


def test_an_explicit_long_poll_limit_wins() -> None:
    assert settings_from_env({"MNS_GATEWAY_MAX_WAITERS": "7"}).waiter_limit == 7
    assert settings_from_env({"MNS_GATEWAY_MAX_WAITERS": " "}).waiter_limit == 900
