"""Prometheus metrics of the gateway, on a registry of its own per app.

A registry per app (rather than the process-global default) lets tests run several gateways in
one process. Under gunicorn each worker process serves its own figures; scrape each worker or set
up prometheus_client's multiprocess mode if you run several.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class GatewayMetrics:
    """The delivery figures operators alert on."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.attempts = Counter(
            "mns_delivery_attempts",
            "Delivery attempts by result (succeeded/failed) and outcome.",
            ["result", "outcome"],
            registry=self.registry,
        )
        self.dead_letters = Counter(
            "mns_dead_letters",
            "Deliveries moved to the dead letters, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.dead_letter_queue_messages = Counter(
            "mns_dead_letter_queue_messages",
            "Messages put into a dead-letter queue: queue messages received past MaxReceiveCount"
            " (source=queue) and pushes whose retries ran out (source=subscription).",
            ["source", "dead_letter_queue"],
            registry=self.registry,
        )
        self.push_latency = Histogram(
            "mns_push_latency_seconds",
            "Time from sending a push to its answer.",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.due = Gauge(
            "mns_deliveries_due",
            "Deliveries whose next attempt is due now.",
            registry=self.registry,
        )

    def track_due(self, count: Callable[[], int]) -> None:
        """Compute the due-deliveries gauge at scrape time from the store."""
        self.due.set_function(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)
