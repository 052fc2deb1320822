"""The probes and metrics a process answers: the blueprint's rules, addresses, and the small
server ``mns-gateway worker --probes`` runs them on."""

from __future__ import annotations

import socket

import pytest
from flask import Flask

from gateway.api.probes import ProbeServer, create_probe_app, parse_address
from gateway.errors.commands import CannotListenError, InvalidProbeAddressError
from gateway.observability.metrics import GatewayMetrics
from tests.http_wire import http_get


def probe_app(
    *, alive: bool = True, ready: bool = True, metrics: GatewayMetrics | None = None
) -> Flask:
    return create_probe_app(alive=lambda: alive, ready=lambda: ready, metrics=metrics)


@pytest.mark.parametrize(
    ("alive", "ready", "expected"),
    [(True, True, (200, 200)), (False, True, (503, 200)), (True, False, (200, 503))],
)
def test_liveness_and_readiness_answer_each_their_own_question(
    alive: bool, ready: bool, expected: tuple[int, int]
) -> None:
    client = probe_app(alive=alive, ready=ready).test_client()
    assert (client.get("/healthz").status_code, client.get("/readyz").status_code) == expected


def test_metrics_are_the_prometheus_text_of_the_registry() -> None:
    metrics = GatewayMetrics()
    metrics.dead_letters.labels(reason="retries exhausted").inc()
    response = probe_app(metrics=metrics).test_client().get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=0.0.4")
    assert b'mns_dead_letters_total{reason="retries exhausted"} 1.0' in response.data


def test_nothing_but_the_probes_is_served() -> None:
    client = probe_app().test_client()
    assert client.get("/queues").status_code == 404
    assert client.post("/healthz").status_code == 405


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("0.0.0.0:8081", ("0.0.0.0", 8081)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9000", ("::1", 9000)),
        (" localhost:1 ", ("localhost", 1)),
    ],
)
def test_addresses_are_host_and_port(address: str, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", ["8081", ":8081", "host:", "host:http", "host:65536", "h:٣"])
def test_anything_else_is_refused_in_one_line(address: str) -> None:
    with pytest.raises(InvalidProbeAddressError, match="is not HOST:PORT"):
        parse_address(address)


def test_the_server_answers_on_the_port_the_system_chose_until_stopped() -> None:
    server = ProbeServer(probe_app(), "127.0.0.1", 0).start()
    address = server.address
    try:
        assert address[1] > 0
        assert http_get(address, "/healthz") == (200, b"ok\n")
        assert http_get(address, "/readyz") == (200, b"ready\n")
    finally:
        server.stop()
    with pytest.raises(ConnectionRefusedError):
        http_get(address, "/healthz")


def test_a_taken_port_is_one_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CannotListenError, match=f"cannot listen on 127.0.0.1:{port}"):
            ProbeServer(probe_app(), "127.0.0.1", port)
