"""Prometheus metrics of the gateway, on a registry of its own per app.

A registry per app (rather than the process-global default) lets tests run several gateways in
one process. Under gunicorn each worker process serves its own figures; scrape each worker or set
up prometheus_client's multiprocess mode if you run several.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

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

        self.circuit_transitions = Counter(
            "mns_endpoint_circuit_transitions",
            "Push endpoints' circuit breaker transitions this process made, by the state entered"
            " (docs/delivery.md#endpoint-health).",
            ["state"],
            registry=self.registry,
        )

    def track_breakers(self, read: Callable[[], Iterable[CircuitFigures]]) -> None:
        """Read every subscription's breaker from the store at scrape time (its state is shared
        by every replica, so each reports the same)."""
        self.registry.register(_CircuitCollector(read))

    def track_due(self, count: Callable[[], int]) -> None:
        """Compute the due-deliveries gauge at scrape time from the store."""
        self.due.set_function(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)


@dataclass(frozen=True, slots=True)
class CircuitFigures:
    """One subscription's breaker as ``/metrics`` shows it."""

    topic: str
    subscription: str
    state: str
    failure_rate: float
    waiting: int


CIRCUIT_STATES = ("closed", "half-open", "open")


class _CircuitCollector(Collector):
    """``mns_endpoint_circuit_state`` (1 for the state it is in), ``..._failure_rate`` and
    ``..._waiting`` (deliveries due and not attempted: the attempts skipped while it is open),
    per subscription whose breaker is not simply closed and healthy."""

    def __init__(self, read: Callable[[], Iterable[CircuitFigures]]) -> None:
        self.read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["topic", "subscription"]
        state = GaugeMetricFamily(
            "mns_endpoint_circuit_state",
            "Push endpoints' circuit breaker state (1 for the one it is in).",
            labels=[*labels, "state"],
        )
        rate = GaugeMetricFamily(
            "mns_endpoint_circuit_failure_rate",
            "Failed share of the attempts in the breaker's current window.",
            labels=labels,
        )
        waiting = GaugeMetricFamily(
            "mns_endpoint_circuit_waiting",
            "Deliveries due and not attempted (skipped) while the breaker is not closed.",
            labels=labels,
        )
        for figures in self.read():
            names = [figures.topic, figures.subscription]
            for name in CIRCUIT_STATES:
                state.add_metric([*names, name], 1.0 if figures.state == name else 0.0)
            rate.add_metric(names, figures.failure_rate)
            waiting.add_metric(names, figures.waiting)
        yield state
        yield rate
        yield waiting
