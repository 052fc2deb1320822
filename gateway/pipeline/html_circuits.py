"""The report's endpoint-circuit section, and its lines of text: per subscription whose circuit
left ``closed``, when and for how long (open, half-open, in all), who made it so (the breaker or
an operator's override) and what waited behind it and how that ended. Pure: its rows are the
``endpoint_circuits`` table's (:meth:`gateway.pipeline.circuits.Outage.row`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from zoneinfo import ZoneInfo

from gateway.pipeline.formatting import format_duration, format_time
from gateway.pipeline.html_tables import Column, Row, count, field, render_table

_NOTE = (
    '<p class="note">From the EndpointCircuit records (docs/delivery.md#endpoint-health).'
    " Waited: deliveries due while the circuit was not closed, counted once, in the first"
    " outage they waited behind; the oldest wait runs from when one was due to its next attempt"
    " or the end of the logs. How they ended is where they stand at the end of the logs.</p>"
)


def circuit_section(circuits: Sequence[Row], zone: ZoneInfo, report_end_ms: int | None) -> str:
    """One block per subscription: a line of totals, a row per outage, its transitions."""
    if not circuits:
        return '<p class="empty">No endpoint circuit opened.</p>'
    blocks = [_NOTE]
    for (topic, name), outages in _by_subscription(circuits).items():
        blocks.append(
            f'<h3 class="w">{escape(topic)} / {escape(name)}</h3>'
            f"<p>{escape(totals(outages, report_end_ms))}</p>"
            + render_table(_columns(zone), outages)
            + _transitions(outages, zone, report_end_ms)
        )
    return "".join(blocks)


def circuit_lines(circuits: Sequence[Row], report_end_ms: int | None) -> list[str]:
    """The section as lines of text, one per subscription (the report prints them)."""
    return [
        f"endpoint circuit {topic}/{name}: {totals(outages, report_end_ms)}"
        for (topic, name), outages in _by_subscription(circuits).items()
    ]


def totals(outages: Sequence[Row], report_end_ms: int | None) -> str:
    """``2 outages, 3 min 10 s in all (open …, half-open …, 3 probes); 120 deliveries waited
    (the oldest 3 min 02 s): 118 delivered, 2 dead-lettered, 0 still waiting``."""
    end = report_end_ms or 0
    spent = sum(_length(o, end) for o in outages)
    opened = sum(_int(o.get("open_ms")) for o in outages)
    half = sum(_int(o.get("half_open_ms")) for o in outages)
    probes = sum(_int(o.get("probes")) for o in outages)
    figures = {k: sum(_int(o.get(k)) for o in outages) for k in _FATES}
    oldest = max((_int(o.get("oldest_wait_ms")) for o in outages), default=0)
    times = "1 outage" if len(outages) == 1 else f"{len(outages)} outages"
    open_at_end = outages[-1].get("closed_ms") is None
    still = " (still not closed at the end of the logs)" if open_at_end else ""
    text = (
        f"{times}, {format_duration(spent)} in all{still}: open {format_duration(opened)},"
        f" half-open {format_duration(half)}, {probes} probe{'s' if probes != 1 else ''};"
        f" {figures['waited']:,} deliveries waited"
    )
    if figures["waited"]:
        text += (
            f" (the oldest {format_duration(oldest)}): {figures['delivered']:,} delivered,"
            f" {figures['dead_lettered']:,} dead-lettered, {figures['still_waiting']:,} still"
            " waiting"
        )
    return text


_FATES = ("waited", "delivered", "dead_lettered", "still_waiting")


def _columns(zone: ZoneInfo) -> tuple[Column, ...]:
    return (
        Column("Opened", field("opened_ms", lambda v: format_time(v, zone)), "t"),
        Column("Closed", _closed(zone), "t"),
        Column("Open", field("open_ms", format_duration), "n"),
        Column("Half-open", field("half_open_ms", format_duration), "n"),
        Column("Probes", field("probes", count), "n"),
        Column("Waited", field("waited", count), "n"),
        Column("Oldest wait", field("oldest_wait_ms", format_duration), "n"),
        Column("Delivered", field("delivered", count), "n"),
        Column("Dead-lettered", field("dead_lettered", count), "n"),
        Column("Still waiting", field("still_waiting", count), "n"),
        Column("Opened / closed by", _who, "w"),
    )


def _closed(zone: ZoneInfo) -> Callable[[Row], str]:
    def render(row: Row) -> str:
        closed = row.get("closed_ms")
        return "not yet" if closed is None else format_time(closed, zone)

    return render


def _who(row: Row) -> str:
    """Who opened and closed it: the breaker (closed by a probe), or an operator's override:
    ``breaker / probe``, ``operator (open) / operator (auto)``, ``breaker / -`` (not closed)."""
    opened, closed = row.get("opened_by"), row.get("closed_by")
    by = f"operator ({opened})" if opened else "breaker"
    if row.get("closed_ms") is None:
        return f"{by} / -"
    return f"{by} / " + (f"operator ({closed})" if closed else "probe")


def _transitions(outages: Sequence[Row], zone: ZoneInfo, report_end_ms: int | None) -> str:
    lines = []
    for outage in outages:
        for interval in outage.get("intervals") or ():  # type: ignore[union-attr]
            start, end = interval.get("start_ms"), interval.get("end_ms")
            length = (end if end is not None else report_end_ms or start) - start
            until = "the end of the logs" if end is None else format_time(end, zone)
            lines.append(
                f"<li>{escape(str(interval.get('state')))} from {format_time(start, zone)}"
                f" to {until} ({format_duration(length)})</li>"
            )
    listed = "".join(lines)
    return f"<details><summary>Open and half-open intervals</summary><ol>{listed}</ol></details>"


def _by_subscription(circuits: Sequence[Row]) -> dict[tuple[str, str], list[Row]]:
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in circuits:
        key = (str(row.get("topic_name")), str(row.get("subscription_name")))
        grouped.setdefault(key, []).append(row)
    for rows in grouped.values():
        rows.sort(key=lambda r: _int(r.get("opened_ms")))
    return dict(sorted(grouped.items()))


def _length(outage: Mapping[str, object], report_end_ms: int) -> int:
    closed = outage.get("closed_ms")
    end = closed if isinstance(closed, int) else report_end_ms
    return max(0, end - _int(outage.get("opened_ms")))


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
