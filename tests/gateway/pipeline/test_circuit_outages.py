"""The report's endpoint circuits, pure: EndpointCircuit records into outages (open and
half-open intervals, operators' overrides), and the section and lines that show them."""

from __future__ import annotations

import json
from zoneinfo import ZoneInfo

from gateway.breaker.events import circuit_record
from gateway.breaker.state import Breaker, State, Transition
from gateway.pipeline.circuits import CircuitEvent, outages, parse_event
from gateway.pipeline.html_circuits import circuit_lines, circuit_section

T = 1_800_000_000_000
UTC = ZoneInfo("UTC")


def event(at_s: float, state: str, **extra: object) -> CircuitEvent:
    return CircuitEvent(int(T + at_s * 1000), "orders", "billing", state, **extra)  # type: ignore[arg-type]


def test_the_breakers_own_record_reads_back_as_an_event() -> None:
    """What the worker writes (the record), as the facts keep it (the JSON of its columns)."""
    opened = Breaker(state=State.OPEN, attempts=10, failures=9, open_until_ms=T + 30_000)
    record = circuit_record(
        Transition("orders/billing", State.HALF_OPEN, State.OPEN, T, opened, operator="open"),
        "acct",
    )
    kept = {
        "time_ms": record["Time"],
        "topic_name": record["TopicName"],
        "subscription_name": record["SubscriptionName"],
        "circuit_state": record["CircuitState"],
        "previous_circuit_state": record["PreviousCircuitState"],
        "failure_rate": str(record["FailureRate"]),
        "next_probe_time_ms": record["NextProbeTime"],
        "circuit_override": record["CircuitOverride"],
    }
    assert parse_event(json.dumps(kept)) == CircuitEvent(
        T, "orders", "billing", "open", "half-open", 0.9, T + 30_000, "open"
    )
    assert parse_event("not json") is None
    assert parse_event(json.dumps({"time_ms": T, "topic_name": "orders"})) is None


def test_an_outage_runs_from_leaving_closed_to_coming_back() -> None:
    events = [
        event(0, "open", failure_rate=1.0),
        event(30, "half-open"),
        event(31, "open"),  # the probe failed: open again for twice as long
        event(91, "half-open"),
        event(92, "closed"),
        event(200, "open"),  # a second outage, not over when the logs end
    ]
    first, second = outages(reversed(events))  # the order records are read in does not matter
    assert (first.start_ms, first.end_ms, first.closed_by, first.failure_rate) == (
        T,
        T + 92_000,
        None,
        1.0,
    )
    assert [(i.state, i.start_ms - T, i.end_ms - T) for i in first.intervals] == [  # type: ignore[operator]
        ("open", 0, 30_000),
        ("half-open", 30_000, 31_000),
        ("open", 31_000, 91_000),
        ("half-open", 91_000, 92_000),
    ]
    end = T + 260_000
    assert (first.time_in("open", end), first.time_in("half-open", end), first.probes()) == (
        90_000,
        2_000,
        2,
    )
    assert second.end_ms is None and second.time_in("open", end) == 60_000
    row = second.row(end)
    assert (row["closed_ms"], row["open_ms"], row["waited"]) == (None, 60_000, None)


def test_an_operator_who_holds_it_open_and_hands_it_back_is_named() -> None:
    found = outages([event(0, "open", operator="open"), event(60, "closed", operator="auto")])
    assert [(o.opened_by, o.closed_by) for o in found] == [("open", "auto")]


def test_a_lone_closed_record_or_a_repeated_state_derails_nothing() -> None:
    found = outages([event(0, "closed"), event(5, "open"), event(6, "open"), event(9, "closed")])
    assert len(found) == 1
    assert [(i.state, i.start_ms - T) for i in found[0].intervals] == [
        ("open", 5000),
        ("open", 6000),
    ]
    assert found[0].time_in("open", T + 10_000) == 4000


def _rows() -> list[dict[str, object]]:
    found = outages(
        [
            event(0, "open"),
            event(30, "half-open"),
            event(31, "closed"),
            event(100, "open", operator="open"),
        ]
    )
    found[0].waits = {
        "waited": 120,
        "oldest_wait_ms": 31_000,
        "delivered": 118,
        "dead_lettered": 2,
        "still_waiting": 0,
    }
    found[1].waits = {"waited": 5, "oldest_wait_ms": 20_000, "delivered": 0, "dead_lettered": 0}
    found[1].waits = {**found[1].waits, "still_waiting": 5}
    end = T + 120_000
    return [o.row(end) for o in found]


def test_the_section_shows_each_outage_and_what_waited_behind_it() -> None:
    page = circuit_section(_rows(), UTC, T + 120_000)
    assert "<h3" in page and "orders / billing" in page
    assert "2 outages, 51 s in all (still not closed at the end of the logs)" in page
    assert "open 50 s, half-open 1.0 s, 1 probe; 125 deliveries waited" in page
    assert "(the oldest 31 s): 118 delivered, 2 dead-lettered, 5 still waiting" in page
    assert '<td class="w">breaker / probe</td>' in page
    assert '<td class="w">operator (open) / -</td>' in page
    assert "not yet" in page  # the second is not closed
    assert "half-open from 2027-01-15 08:00:30 to 2027-01-15 08:00:31 (1.0 s)" in page
    assert circuit_section([], UTC, None) == '<p class="empty">No endpoint circuit opened.</p>'


def test_names_from_the_logs_are_escaped() -> None:
    rows = _rows()
    for row in rows:
        row["subscription_name"] = "<script>x</script>"
    page = circuit_section(rows, UTC, T + 120_000)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_line_of_text_per_subscription() -> None:
    assert circuit_lines(_rows(), T + 120_000) == [
        "endpoint circuit orders/billing: 2 outages, 51 s in all (still not closed at the end"
        " of the logs): open 50 s, half-open 1.0 s, 1 probe; 125 deliveries waited (the oldest"
        " 31 s): 118 delivered, 2 dead-lettered, 5 still waiting"
    ]
