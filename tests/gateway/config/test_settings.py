"""Settings: read from their variables, documented in the README, and derived."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gateway.config.settings import GEVENT_WAITERS, READERS, Settings, env_name, settings_from_env
from gateway.errors.commands import SettingsError
from gateway.queues.waiters import DEFAULT_RECHECK_SECONDS
from gateway.store.opening import open_store
from tests.readme import section


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


def test_every_setting_is_read_from_its_variable() -> None:
    """A field without a reader could never be configured: every one has one (access keys
    come from three variables of their own, tracing from OpenTelemetry's ``OTEL_*``;
    ``region_set`` says whether MNS_GATEWAY_REGION was given)."""
    fields = {field.name for field in dataclasses.fields(Settings)}
    assert fields - set(READERS) == {"access_keys", "region_set", "tracing"}
    assert set(READERS) <= fields


def documented_variables() -> set[str]:
    """The variables the README's configuration table names. A row may abbreviate a sibling of
    the variable before it: `MNS_GATEWAY_ACCESS_KEY_ID`, `_SECRET` (the last segment replaced)."""
    table = section("Configuration").split("\n| --- |", 1)[1].split("\n\n", 1)[0]
    names: set[str] = set()
    for row in table.strip().splitlines():
        first = None
        for token in re.findall(r"`([A-Z_]+)`", row.split("|")[1]):
            if token.startswith("_") and first is not None:
                kept = first.split("_")[: -(token.count("_"))]
                names.add("_".join(kept) + token)
            else:
                first = token
                names.add(token)
    return names


def test_the_readme_documents_exactly_the_variables_read() -> None:
    read = {env_name(name) for name in READERS} | {
        "MNS_GATEWAY_ACCESS_KEY_ID",
        "MNS_GATEWAY_ACCESS_KEY_SECRET",
        "MNS_GATEWAY_ACCESS_KEYS",
    }
    assert documented_variables() == read


def test_a_region_is_required_of_v4_scopes_only_when_set() -> None:
    assert settings_from_env({}).signing_region is None
    assert settings_from_env({"MNS_GATEWAY_REGION": " "}).signing_region is None
    assert settings_from_env({}).region == "local"
    assert settings_from_env({"MNS_GATEWAY_REGION": "local"}).signing_region == "local"
    assert settings_from_env({"MNS_GATEWAY_REGION": "cn-shanghai"}).signing_region == "cn-shanghai"


def test_the_long_polls_recheck_is_the_stores(tmp_path: Path) -> None:
    """Unset, a long poll re-checks as a store built without settings does; set, the queues the
    gateway opens re-check that often."""
    assert settings_from_env({}).long_poll_recheck == DEFAULT_RECHECK_SECONDS
    settings = settings_from_env(
        {"MNS_GATEWAY_DATA_DIR": str(tmp_path), "MNS_GATEWAY_LONG_POLL_RECHECK": "2.5"}
    )
    store = open_store(settings)
    try:
        assert store.queues.recheck_seconds == 2.5
    finally:
        store.database.close()
    with pytest.raises(SettingsError, match="MNS_GATEWAY_LONG_POLL_RECHECK"):
        settings_from_env({"MNS_GATEWAY_LONG_POLL_RECHECK": "31"})


def test_retention_settings_default_to_a_day_and_forever_and_refuse_too_little() -> None:
    assert settings_from_env({}).history_retention == 86400
    assert settings_from_env({}).log_retention is None
    given = {"MNS_GATEWAY_HISTORY_RETENTION": "60", "MNS_GATEWAY_LOG_RETENTION": "604800"}
    assert (settings_from_env(given).history_retention, settings_from_env(given).log_retention) == (
        60,
        604800,
    )
    for name, value in (
        ("MNS_GATEWAY_HISTORY_RETENTION", "59"),
        ("MNS_GATEWAY_HISTORY_RETENTION", "a day"),
        ("MNS_GATEWAY_LOG_RETENTION", "60"),
    ):
        with pytest.raises(SettingsError, match=f"^{name}=.* is not valid: must be"):
            settings_from_env({name: value})
