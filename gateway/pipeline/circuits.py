"""Endpoint circuits in the report, pure: from a subscription's EndpointCircuit records (one
per breaker transition: docs/delivery.md#endpoint-health) the *outages* of its endpoint, each
from the moment its circuit left ``closed`` to the moment it came back (or the report's end),
with the intervals it spent open and half-open and whether an operator's override made a
transition. What waited behind each outage is counted by Spark
(:mod:`gateway.pipeline.transforms.circuits`) and added to its row here.

A transition's record names the state entered and the one left; the outages are rebuilt from
the states entered, in time order, so a record lost or out of order does not derail the rest:
a ``closed`` record ends the outage in progress, any other state starts one or begins its next
interval.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

CLOSED: Final = "closed"
OPEN: Final = "open"
HALF_OPEN: Final = "half-open"


@dataclass(frozen=True, slots=True)
class CircuitEvent:
    """One EndpointCircuit record: ``operator`` is the override (closed, open, auto) when an
    operator's made the transition."""

    time_ms: int
    topic: str
    subscription: str
    state: str
    previous: str | None = None
    failure_rate: float | None = None
    next_probe_ms: int | None = None
    operator: str | None = None


def parse_event(text: str) -> CircuitEvent | None:
    """A fact row's ``circuit`` JSON (:data:`gateway.pipeline.transforms.facts.CIRCUIT`) as an
    event; ``None`` if it lacks a time, names or state."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    time_ms, state = data.get("time_ms"), data.get("circuit_state")
    topic, name = data.get("topic_name"), data.get("subscription_name")
    if not isinstance(time_ms, int) or not topic or not name or not state:
        return None
    return CircuitEvent(
        time_ms=time_ms,
        topic=str(topic),
        subscription=str(name),
        state=str(state),
        previous=data.get("previous_circuit_state"),
        failure_rate=_float(data.get("failure_rate")),
        next_probe_ms=data.get("next_probe_time_ms"),
        operator=data.get("circuit_override"),
    )


@dataclass(frozen=True, slots=True)
class Interval:
    """A stretch in one state (open or half-open); ``end_ms`` ``None``: still so at the end."""

    state: str
    start_ms: int
    end_ms: int | None
    operator: str | None = None

    def length_ms(self, report_end_ms: int) -> int:
        return max(0, (self.end_ms if self.end_ms is not None else report_end_ms) - self.start_ms)


@dataclass(slots=True)
class Outage:
    """A subscription endpoint's circuit from leaving ``closed`` to coming back; ``end_ms``
    ``None``: not closed when the logs end. ``closed_by`` is the operator's override that closed
    it, if one did. The counts of what waited are set by Spark (:meth:`with_waits`)."""

    topic: str
    subscription: str
    start_ms: int
    intervals: list[Interval] = field(default_factory=list)
    end_ms: int | None = None
    closed_by: str | None = None
    failure_rate: float | None = None
    waits: Mapping[str, int | None] = field(default_factory=dict)

    @property
    def opened_by(self) -> str | None:
        return self.intervals[0].operator if self.intervals else None

    def time_in(self, state: str, report_end_ms: int) -> int:
        return sum(i.length_ms(report_end_ms) for i in self.intervals if i.state == state)

    def probes(self) -> int:
        """Probes sent: the half-open intervals."""
        return sum(1 for i in self.intervals if i.state == HALF_OPEN)

    def row(self, report_end_ms: int) -> dict[str, object]:
        """The outage as a row of the ``endpoint_circuits`` table."""
        return {
            "topic_name": self.topic,
            "subscription_name": self.subscription,
            "opened_ms": self.start_ms,
            "closed_ms": self.end_ms,
            "open_ms": self.time_in(OPEN, report_end_ms),
            "half_open_ms": self.time_in(HALF_OPEN, report_end_ms),
            "probes": self.probes(),
            "opened_by": self.opened_by,
            "closed_by": self.closed_by,
            "failure_rate": self.failure_rate,
            "intervals": [
                {"state": i.state, "start_ms": i.start_ms, "end_ms": i.end_ms}
                for i in self.intervals
            ],
            **{name: self.waits.get(name) for name in WAIT_FIGURES},
        }


#: What waited behind an outage (set by Spark): deliveries due while it was not closed, the
#: longest any of them waited, and how they ended.
WAIT_FIGURES: Final = ("waited", "oldest_wait_ms", "delivered", "dead_lettered", "still_waiting")


def outages(events: Iterable[CircuitEvent]) -> list[Outage]:
    """Every subscription's outages, oldest first within a subscription, subscriptions by name."""
    by_subscription: dict[tuple[str, str], list[CircuitEvent]] = {}
    for event in events:
        by_subscription.setdefault((event.topic, event.subscription), []).append(event)
    found: list[Outage] = []
    for key in sorted(by_subscription):
        found += _outages_of(sorted(by_subscription[key], key=lambda e: e.time_ms))
    return found


def _outages_of(events: Sequence[CircuitEvent]) -> list[Outage]:
    found: list[Outage] = []
    current: Outage | None = None
    for event in events:
        if event.state == CLOSED:
            if current is not None:
                _end_interval(current, event.time_ms)
                current.end_ms, current.closed_by = event.time_ms, event.operator
                current = None
            continue
        if current is None:
            current = Outage(event.topic, event.subscription, event.time_ms)
            found.append(current)
        else:
            _end_interval(current, event.time_ms)
        if event.state == OPEN and event.failure_rate is not None and current.failure_rate is None:
            current.failure_rate = event.failure_rate
        current.intervals.append(Interval(event.state, event.time_ms, None, event.operator))
    return found


def _end_interval(outage: Outage, at_ms: int) -> None:
    if outage.intervals and outage.intervals[-1].end_ms is None:
        last = outage.intervals[-1]
        outage.intervals[-1] = Interval(last.state, last.start_ms, at_ms, last.operator)


def _float(value: object) -> float | None:
    try:
        return float(value) if value is not None else None  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
