"""Health probes and metrics over HTTP: ``/healthz``, ``/readyz`` and ``/metrics``.

``serve`` answers them on the API's port (:func:`gateway.api.app.create_app`). ``mns-gateway
worker`` has no API, so a Deployment of delivery workers had nothing for Kubernetes to probe and its
delivery figures (pushes, dead letters, push latency: they are counted where pushes are made)
nothing to scrape; with ``--probes HOST:PORT`` it answers the same three paths, and nothing
else, from :class:`ProbeServer` (docs/deploy.md#delivery-workers).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from socketserver import TCPServer, ThreadingMixIn
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from flask import Blueprint, Flask, Response

from gateway.errors.commands import CannotListenError, InvalidProbeAddressError
from gateway.observability.metrics import GatewayMetrics

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

    from gateway.pushing.worker import DeliveryWorker
    from gateway.store import Store

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_probes_blueprint(
    *,
    ready: Callable[[], bool],
    metrics: GatewayMetrics | None,
    alive: Callable[[], bool] = lambda: True,
) -> Blueprint:
    """``/healthz`` answers 200 while ``alive()`` (the process can do its work: restart it
    otherwise), ``/readyz`` 200 while ``ready()`` (its store answers), ``/metrics`` the
    Prometheus text of ``metrics``."""
    probes = Blueprint("probes", __name__)

    @probes.get("/healthz")
    def healthz() -> Response:
        return _plain(b"ok\n" if alive() else b"not running\n", alive())

    @probes.get("/readyz")
    def readyz() -> Response:
        is_ready = ready()
        return _plain(b"ready\n" if is_ready else b"store unavailable\n", is_ready)

    @probes.get("/metrics")
    def metrics_text() -> Response:
        body = metrics.render() if metrics is not None else b""
        return Response(body, content_type=METRICS_CONTENT_TYPE)

    return probes


def _plain(body: bytes, ok: bool) -> Response:
    return Response(body, status=200 if ok else 503, content_type="text/plain")


def create_probe_app(
    *, alive: Callable[[], bool], ready: Callable[[], bool], metrics: GatewayMetrics | None
) -> Flask:
    """The probes alone, for a process without the API."""
    app = Flask("gateway.api.probes")
    app.register_blueprint(create_probes_blueprint(alive=alive, ready=ready, metrics=metrics))
    return app


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8081`` for IPv6) as a host and a port; port 0 lets the system
    choose one."""
    host, sep, port = address.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise InvalidProbeAddressError(f"probe address {address!r} is not HOST:PORT")
    return host, int(port)


class _QuietHandler(WSGIRequestHandler):
    #: Seconds a probe client may take to send its request: a stalled connection holds a thread
    #: (a greenlet under gevent) no longer than this.
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        """Kubelet probes every few seconds; a line each would drown the worker's own log."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, app: WSGIApplication) -> None:
        self.address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        super().__init__((host, port), _QuietHandler)
        self.set_app(app)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's fully qualified name, a reverse DNS
        # look-up that can stall start-up for seconds inside a cluster; the probes need none.
        TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]
        self.setup_environ()


class ProbeServer:
    """A WSGI app served on ``host:port`` from a background thread (a greenlet when gevent has
    patched the process), one thread per connection."""

    def __init__(self, app: WSGIApplication, host: str, port: int) -> None:
        try:
            self._server = _Server(host, port, app)
        except OSError as error:
            reason = error.strerror or str(error)
            raise CannotListenError(f"cannot listen on {host}:{port}: {reason}") from error
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="mns-probes", daemon=True
        )

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> ProbeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def worker_probes(
    worker: DeliveryWorker,
    store: Store,
    metrics: GatewayMetrics,
    address: tuple[str, int] | None,
) -> ProbeServer | None:
    """``mns-gateway worker``'s probes at ``address`` (none when ``None``), started and
    announced: alive while its dispatcher runs, ready while its store answers."""
    if address is None:
        return None
    app = create_probe_app(alive=worker.running, ready=store.ping, metrics=metrics)
    probes = ProbeServer(app, *address).start()
    host, port = probes.address
    print(f"mns-gateway worker: probes and metrics on http://{host}:{port}", flush=True)
    return probes
