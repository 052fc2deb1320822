"""Assembling a running gateway from settings: database, store, keys, delivery worker, app.

Gunicorn with gevent's WSGI server (:mod:`gateway.serving.pywsgi_worker`; or gthread) holds many
idle keep-alive and long-poll connections per process. Each worker process builds its own app (no
preload), so every process has its own database connections, key ring and delivery worker;
leases in the store keep their work apart, in one process, on one host or across replicas.
Gunicorn itself is configured in :mod:`gateway.serving.gunicorn_app`. Opening the store is
:mod:`gateway.store.opening`, which the store-only commands use without importing any of this.
"""

from __future__ import annotations

import atexit
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask

from gateway.api.app import create_app
from gateway.auth.generated_keys import announce_generated_keys, resolve_access_keys
from gateway.config.settings import Settings
from gateway.delivery.egress import EgressPolicy
from gateway.errors import StoreUnavailableError
from gateway.observability.metrics import CircuitFigures, GatewayMetrics
from gateway.observability.oplog import OperationLog, open_operation_log
from gateway.observability.tracers import open_tracing
from gateway.observability.tracing import NO_TRACING, Tracing
from gateway.pushing.keyring import KeyRing, open_keyring
from gateway.pushing.providers import message_senders
from gateway.pushing.push_network import push_network
from gateway.pushing.queue_bridge import QueueSender, RemoteService
from gateway.pushing.senders import HttpSender, Sender, SenderRegistry
from gateway.pushing.tls import PushTls
from gateway.pushing.transport import PushTransport
from gateway.pushing.worker import DeliveryWorker, WorkerOptions
from gateway.store.base import Store
from gateway.store.opening import open_store, shared_settings
from gateway.topics.records import subscription_names

log = logging.getLogger(__name__)
#: ``service.name`` of the gateway's spans unless ``OTEL_SERVICE_NAME`` says otherwise.
SERVICE_NAME = "mns-gateway"


@dataclass
class Runtime:
    """The long-lived parts of one gateway process."""

    settings: Settings
    store: Store
    keyring: KeyRing
    metrics: GatewayMetrics
    oplog: OperationLog
    worker: DeliveryWorker | None = None
    #: OpenTelemetry spans when ``OTEL_*`` asks for them (docs/observability.md#tracing).
    tracing: Tracing = NO_TRACING
    #: The clock :meth:`close` keeps to the graceful timeout by.
    monotonic: Callable[[], float] = time.monotonic
    #: The https pushes' TLS files, once the worker is built (docs/delivery.md#rotation).
    push_tls: PushTls | None = None

    def alive(self) -> bool:
        """What a liveness probe asks: the delivery worker, if the process has one, runs."""
        return self.worker is None or self.worker.running()

    def reload_files(self) -> None:
        """SIGHUP: the push TLS files are read again before the next https push."""
        if self.push_tls is not None:
            self.push_tls.reload()

    def begin_shutdown(self) -> None:
        """Claim no more deliveries; pushes in flight finish while requests drain."""
        if self.worker is not None:
            self.worker.stop_claiming()

    def close(self) -> None:
        """Finish in-flight pushes, flush the operation log and the spans, close the store (on
        exit), all within the graceful timeout: spans not sent by then are dropped."""
        deadline = self.monotonic() + self.settings.graceful_timeout
        if self.worker is not None:
            self.worker.stop(self.settings.graceful_timeout)
        self.oplog.close()
        # After the worker: its last attempts' spans go out too.
        self.tracing.shutdown(max(0.0, deadline - self.monotonic()))
        self.store.close()


def build_runtime(settings: Settings, *, with_worker: bool) -> Runtime:
    store = open_store(settings)
    metrics = GatewayMetrics()
    metrics.track_due(_unless_unavailable(store.deliveries.due_count))
    metrics.track_breakers(_circuit_figures(store))
    runtime = Runtime(
        settings,
        store,
        open_keyring(settings, store.database),
        metrics,
        open_operation_log(
            str(settings.log_dir) if settings.log_dir else None,
            registry=metrics.registry,
            retention_seconds=settings.log_retention,
        ),
        tracing=open_tracing(
            settings.tracing.exporter,
            settings.tracing.protocol,
            SERVICE_NAME,
            dict(settings.tracing.variables),
        ),
    )
    if with_worker and settings.delivery_threads > 0:
        runtime.worker = build_worker(runtime)
    return runtime


def build_worker(runtime: Runtime) -> DeliveryWorker:
    settings = runtime.settings
    network = push_network(settings)
    runtime.push_tls = network.tls
    transport = PushTransport(
        EgressPolicy(settings.egress_allow, settings.egress_deny),
        max_per_host=settings.max_pushes_per_route,
        default_timeout=settings.push_timeout,
        tls=network.tls,
        proxy=network.proxy,
    )
    http = HttpSender(
        transport,
        runtime.keyring,
        public_url=settings.base_url,
        account_id=settings.account_id,
        timeout=settings.push_timeout,
        clock=runtime.store.clock,
        tracing=runtime.tracing,
    )
    by_kind: dict[str, Sender] = {
        "queue": _queue_sender(runtime, transport),
        **message_senders(settings, runtime.store.inbox, transport, runtime.tracing),
    }
    options = WorkerOptions(
        threads=settings.delivery_threads,
        max_per_route=settings.max_pushes_per_route,
        lease_seconds=settings.lease_seconds,
        retry_scale=settings.retry_scale,
    )
    return DeliveryWorker(
        runtime.store.deliveries,
        SenderRegistry(http, by_kind=by_kind),
        options,
        metrics=runtime.metrics,
        oplog=runtime.oplog,
        account_id=settings.account_id,
        tracing=runtime.tracing,
    )


def _queue_sender(runtime: Runtime, transport: PushTransport) -> QueueSender:
    """Pushes to queue endpoints: this gateway's queues, or bridged to a remote service."""
    settings = runtime.settings
    return QueueSender(
        runtime.store.deliveries,
        transport,
        region=settings.region,
        account_id=settings.account_id,
        remotes={key: RemoteService(**remote) for key, remote in settings.queue_bridges.items()},
        timeout=settings.push_timeout,
        clock=runtime.store.clock,
    )


def build_app(settings: Settings, runtime: Runtime | None = None) -> Flask:
    """The WSGI app for one process, with its delivery worker running beside it. Its
    ``/healthz`` fails while that worker's dispatcher is dead or stuck, as ``mns-gateway
    worker``'s does: the process answers requests but pushes nothing."""
    runtime = runtime or build_runtime(settings, with_worker=True)
    keys, generated = resolve_access_keys(
        settings.access_keys, settings.data_dir, shared_settings(settings, runtime.store.database)
    )
    announce_generated_keys(generated)
    if runtime.worker is not None:
        runtime.worker.start()
    atexit.register(runtime.close)
    return create_app(
        settings,
        runtime.store,
        keys,
        oplog=runtime.oplog,
        metrics=runtime.metrics,
        certificates=runtime.keyring,
        alive=runtime.alive,
        tracing=runtime.tracing,
    )


def _circuit_figures(store: Store) -> Callable[[], list[CircuitFigures]]:
    """The breakers' figures for ``/metrics``; none while the database is unavailable."""

    def read() -> list[CircuitFigures]:
        try:
            kept, waiting = store.deliveries.breakers()
        except StoreUnavailableError:
            return []
        figures = []
        for resource, breaker in kept.items():
            topic, name = subscription_names(resource)
            figures.append(
                CircuitFigures(
                    topic,
                    name,
                    breaker.effective().value,
                    breaker.failure_rate(),
                    waiting.get(resource, 0),
                )
            )
        return figures

    return read


def _unless_unavailable(count: Callable[[], int]) -> Callable[[], float]:
    """``count`` for a gauge computed at scrape time: NaN while the database is unavailable, so
    ``/metrics`` still answers with everything else (the outage is in the log and on /readyz)."""

    def counted() -> float:
        try:
            return float(count())
        except StoreUnavailableError:
            return math.nan

    return counted
