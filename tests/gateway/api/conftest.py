"""The API tests run against a gateway on each database backend."""

from __future__ import annotations

import pytest

from tests.conftest import BACKENDS, GatewayPool, RunningGateway


@pytest.fixture(scope="session", params=BACKENDS)
def gateway_process(request: pytest.FixtureRequest, gateway_pool: GatewayPool) -> RunningGateway:
    return gateway_pool.get("gateway", request.param)


#: The region ``regional_gateway`` is started with (``MNS_GATEWAY_REGION``).
GATEWAY_REGION = "cn-shanghai"


@pytest.fixture(scope="session")
def regional_gateway(gateway_pool: GatewayPool) -> RunningGateway:
    """A gateway told its region: V4 scopes naming another one are refused (SQLite only: the
    region check happens before the store is reached)."""
    return gateway_pool.get("regional", "sqlite", {"MNS_GATEWAY_REGION": GATEWAY_REGION})
