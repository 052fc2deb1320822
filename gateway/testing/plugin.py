"""The pytest plugin (entry point ``pytest11``): a real MNS gateway as a fixture (docs/testing.md).

- ``mns_gateway``: an :class:`~gateway.testing.EmbeddedGateway`, started once per session.
- ``mns_gateway_clean``: the same gateway, emptied before the test (``reset()``).
- ``mns_gateway_settings``: more ``MNS_GATEWAY_*`` settings for it; override it in a
  ``conftest.py`` (session scope) to change them.

A failed test that used the gateway gets the end of the gateway's log in its report.

pytest loads this module in every project where mns-push is installed, so it imports nothing
but pytest until a test asks for a fixture: a suite that never uses it pays nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from gateway.testing import EmbeddedGateway


@pytest.fixture(scope="session")
def mns_gateway_settings() -> dict[str, str]:
    """Extra ``MNS_GATEWAY_*`` settings for the session's gateway (none by default)."""
    return {}


@pytest.fixture(scope="session")
def mns_gateway(mns_gateway_settings: dict[str, str]) -> Iterator[EmbeddedGateway]:
    """A real gateway for the whole session: ``url``, ``access_key_id``,
    ``access_key_secret``, ``account()``, ``pushes``, ``inbox``, ``reset()``."""
    from gateway.testing import EmbeddedGateway

    with EmbeddedGateway(settings=mns_gateway_settings) as gateway:
        yield gateway


@pytest.fixture()
def mns_gateway_clean(mns_gateway: EmbeddedGateway) -> EmbeddedGateway:
    """The session's gateway, emptied first: no topic, queue, push or inbox entry of an earlier
    test is left."""
    mns_gateway.reset()
    return mns_gateway


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, None]:
    """The end of the gateway's log in the report of a failed test that used it: when a push or
    a message did not come, what the gateway did meanwhile is usually why."""
    outcome = yield
    report = outcome.get_result()
    gateway = getattr(item, "funcargs", {}).get("mns_gateway")
    if report.failed and gateway is not None and (tail := gateway.log_tail()):
        report.sections.append(("mns-gateway log (its end)", tail))
