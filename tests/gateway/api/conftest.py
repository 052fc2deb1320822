"""The API tests run against a gateway on each database backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import BACKENDS, RunningGateway, start_gateway


@pytest.fixture(scope="session", params=BACKENDS)
def gateway_process(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    env = {}
    if request.param == "postgresql":
        env["MNS_GATEWAY_DATABASE_URL"] = request.getfixturevalue("postgres").new_database()
    gateway = start_gateway(tmp_path_factory.mktemp(f"gateway-{request.param}"), env)
    yield gateway
    gateway.stop()


#: The region ``regional_gateway`` is started with (``MNS_GATEWAY_REGION``).
GATEWAY_REGION = "cn-shanghai"


@pytest.fixture(scope="session")
def regional_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    """A gateway told its region: V4 scopes naming another one are refused (SQLite only: the
    region check happens before the store is reached)."""
    env = {"MNS_GATEWAY_REGION": GATEWAY_REGION}
    gateway = start_gateway(tmp_path_factory.mktemp("gateway-regional"), env)
    yield gateway
    gateway.stop()
