"""Assembling a gateway process (``gateway/composition.py``): what its liveness probe asks.

``serve`` runs a delivery worker in every process beside the API. A process whose dispatcher
died answers requests but pushes nothing, so its ``/healthz`` must fail like
``mns-gateway worker``'s does (tests/gateway/pushing/test_worker_process.py has the stuck case).
"""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.composition import Runtime, build_app, build_runtime
from gateway.config.settings import Settings


@pytest.fixture()
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    runtime = build_runtime(Settings(data_dir=tmp_path), with_worker=True)
    yield runtime
    atexit.unregister(runtime.close)  # build_app registers it for the process's exit
    runtime.close()


def test_the_api_is_alive_while_its_delivery_worker_runs(runtime: Runtime) -> None:
    client = build_app(runtime.settings, runtime).test_client()
    assert client.get("/healthz").status_code == 200
    assert runtime.worker is not None
    runtime.worker.stop(timeout=5)
    assert (client.get("/healthz").status_code, client.get("/healthz").data) == (
        503,
        b"not running\n",
    )


def test_a_process_without_a_delivery_worker_is_alive_while_it_answers(tmp_path: Path) -> None:
    runtime = build_runtime(Settings(data_dir=tmp_path), with_worker=False)
    try:
        assert runtime.worker is None
        assert runtime.alive()
    finally:
        runtime.close()
