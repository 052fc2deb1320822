"""The control-plane tests run against one gateway per database backend, with a second access
key that ``MNS_GATEWAY_ADMIN_ACCESS_KEYS`` leaves without admin rights."""

from __future__ import annotations

import pytest

from tests.conftest import ACCESS_KEY_ID, BACKENDS, GatewayPool, RunningGateway

APP_KEY_ID = "app-key-id"
APP_KEY_SECRET = "app-key-secret"


@pytest.fixture(scope="session", params=BACKENDS)
def control_gateway(request: pytest.FixtureRequest, gateway_pool: GatewayPool) -> RunningGateway:
    settings = {
        "MNS_GATEWAY_ACCESS_KEYS": f"{APP_KEY_ID}:{APP_KEY_SECRET}",
        "MNS_GATEWAY_ADMIN_ACCESS_KEYS": ACCESS_KEY_ID,
    }
    return gateway_pool.get("control", request.param, settings)
