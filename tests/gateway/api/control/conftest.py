"""The control-plane tests run against one gateway per database backend, with a second access
key that ``MNS_GATEWAY_ADMIN_ACCESS_KEYS`` leaves without admin rights."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import ACCESS_KEY_ID, BACKENDS, RunningGateway, start_gateway

APP_KEY_ID = "app-key-id"
APP_KEY_SECRET = "app-key-secret"


@pytest.fixture(scope="session", params=BACKENDS)
def control_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    env = {
        "MNS_GATEWAY_ACCESS_KEYS": f"{APP_KEY_ID}:{APP_KEY_SECRET}",
        "MNS_GATEWAY_ADMIN_ACCESS_KEYS": ACCESS_KEY_ID,
    }
    if request.param == "postgresql":
        env["MNS_GATEWAY_DATABASE_URL"] = request.getfixturevalue("postgres").new_database()
    gateway = start_gateway(tmp_path_factory.mktemp(f"control-{request.param}"), env)
    yield gateway
    gateway.stop()
