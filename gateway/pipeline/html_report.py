"""The report as one self-contained HTML file: summary, three charts, the main tables, and the
traces of the messages that need attention.

Input is plain Python rows (already aggregated by Spark), so this module is pure and testable
without Spark. Charts show the subscriptions by how badly they deliver; tables the busiest
subscriptions and queues first and say when rows were left out; the Parquet tables next to the
file hold everything. No scripts and no external resources: the file opens anywhere, offline.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Final
from zoneinfo import ZoneInfo

from gateway.pipeline import html_tables as tables
from gateway.pipeline.charts import CHART_CSS, BarGroup, LineSeries, bar_chart, line_chart
from gateway.pipeline.formatting import format_duration, format_time, zone_name
from gateway.pipeline.html_circuits import circuit_section
from gateway.pipeline.html_tables import Row, busiest, subscription_label

#: Lines of the success chart besides "all subscriptions": with more subscriptions, the ones
#: that deliver worst are drawn and the legend says how the others did.
MAX_TIMELINE_SERIES: Final = 11
MAX_CHART_ROWS: Final = 15
HISTOGRAM_BINS: Final = ("1", "2", "3", "4+")

_STYLE: Final = (
    """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;color:#222;max-width:1200px;
padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:20px 0 4px;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:8px 0}
.scroll{overflow-x:auto;max-width:100%;scrollbar-width:auto;scrollbar-color:#8a94a0 #eceef1;
background:linear-gradient(to right,#fff 40%,rgba(255,255,255,0)) left center/28px 100%
no-repeat local,linear-gradient(to left,#fff 40%,rgba(255,255,255,0)) right center/28px 100%
no-repeat local,radial-gradient(farthest-side at 0 50%,rgba(0,0,0,.25),rgba(0,0,0,0)) left
center/14px 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,rgba(0,0,0,.25),
rgba(0,0,0,0)) right center/14px 100% no-repeat scroll,#fff}
td,th{padding:3px 6px;border-bottom:1px solid #eee;vertical-align:top}
th{text-align:left;background:#f6f6f6;font-weight:600;font-size:13px}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.t{white-space:nowrap;font-variant-numeric:tabular-nums}
td.w{overflow-wrap:anywhere;min-width:7em}td.u{min-width:12em;font-size:12px}
td.e{min-width:14em;color:#700}
.legend{margin:4px 0 12px}.key{margin-right:14px;display:inline-block;max-width:100%}
.key i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle}
.bad{color:#b00}.empty,.note,.missing{color:#777}
details{margin:6px 0}summary{cursor:pointer;overflow-wrap:anywhere}details table{margin-left:16px}
"""
    + CHART_CSS
)


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything the page shows; the rows are the Parquet tables' rows as dicts."""

    generated_at_ms: int
    logs: str
    since_ms: int | None
    until_ms: int | None
    summary: Mapping[str, int | None]
    subscriptions: Sequence[Row]
    histogram: Sequence[Row]
    endpoints: Sequence[Row]
    timeline: Sequence[Row]
    queues: Sequence[Row]
    timezone: str = "UTC"
    attention: Sequence[Row] = field(default_factory=list)
    traces: Mapping[str, Sequence[Row]] = field(default_factory=dict)
    #: The timeline's bucket width: points further apart than this have a gap between them.
    bucket_ms: int | None = None
    #: Endpoint outages (the ``endpoint_circuits`` table's rows, with their intervals).
    circuits: Sequence[Row] = field(default_factory=list)


def render_report(data: ReportData) -> str:
    zone = ZoneInfo(data.timezone)
    last = data.summary.get("last_time_ms")
    sections = [
        f"<h1>MNS delivery report</h1>{_header(data, zone)}",
        "<h2>Delivery success over time</h2>"
        + success_over_time_chart(data.timeline, zone, data.bucket_ms),
        "<h2>Publish-to-delivery latency</h2>" + latency_chart(data.subscriptions),
        "<h2>Push attempts per message</h2>" + retries_chart(data.histogram),
        "<h2>Subscriptions</h2>" + tables.subscription_table(data.subscriptions),
        "<h2>Endpoints currently failing</h2>"
        + tables.failing_endpoint_table(data.endpoints, zone, last, data.attention),
        "<h2>Endpoint circuits</h2>" + circuit_section(data.circuits, zone, last),
        "<h2>Queues</h2>" + tables.queue_table(data.queues),
        "<h2>Messages that need attention</h2>"
        + tables.attention_section(data.attention, data.traces, zone),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>MNS delivery report</title><style>{_STYLE}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def success_over_time_chart(
    timeline: Sequence[Row], zone: ZoneInfo, bucket_ms: int | None = None
) -> str:
    """Share of messages delivered, by the time they were published: all subscriptions
    together, and each subscription (the worst ones when there are many). Subscriptions whose
    lines would be the same are drawn once, their names together in the legend."""
    overall: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    per_subscription: dict[str, dict[int, list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    for row in timeline:
        bucket = _int(row["bucket_start_ms"])
        messages, delivered = _int(row["messages"]), _int(row["delivered"])
        for target in (overall[bucket], per_subscription[subscription_label(row)][bucket]):
            target[0] += messages
            target[1] += delivered
    totals = {name: _total(buckets) for name, buckets in per_subscription.items()}
    ordered = sorted(per_subscription, key=lambda name: (totals[name], name))
    shown, hidden = ordered[:MAX_TIMELINE_SERIES], ordered[MAX_TIMELINE_SERIES:]
    series = [LineSeries("all subscriptions", _ratios(overall), f"{_total(overall):.1%}")]
    series += [
        LineSeries(name, _ratios(per_subscription[name]), f"{totals[name]:.1%}") for name in shown
    ]
    chart = line_chart(
        merge_identical(series),
        y_max=1.0,
        y_label=lambda v: f"{v:.0%}",
        clock=lambda ms: _clock(ms, zone),
        gap_ms=bucket_ms,
    )
    if hidden:
        lowest = min(totals[name] for name in hidden)
        chart += (
            f'<p class="note">{len(hidden)} more subscriptions not drawn, each delivering at'
            f" least {lowest:.1%} of its messages.</p>"
        )
    return chart


def merge_identical(series: Sequence[LineSeries]) -> list[LineSeries]:
    """One line for series with the same points (several subscriptions all at 100 %), labelled
    with every name: lines drawn on top of each other could not be told apart."""
    merged: dict[tuple[tuple[int, float], ...], list[LineSeries]] = {}
    for line in series:
        merged.setdefault(tuple(sorted(line.points)), []).append(line)
    result = []
    for same in merged.values():
        if len(same) == 1:
            result.append(same[0])
            continue
        names = ", ".join(line.label for line in same)
        result.append(LineSeries(names, same[0].points, f"{same[0].note} each".strip()))
    return result


def latency_chart(subscriptions: Sequence[Row]) -> str:
    shown = busiest(subscriptions, "messages")[:MAX_CHART_ROWS]
    groups = [
        BarGroup(f"p{q}", [_optional_float(row[f"latency_p{q}_ms"]) for row in shown])
        for q in (50, 95, 99)
    ]
    return bar_chart(
        [subscription_label(row) for row in shown],
        groups,
        stacked=False,
        value_label=format_duration,
        missing_label="no delivery",
    )


def retries_chart(histogram: Sequence[Row]) -> str:
    """Messages by number of push attempts, stacked per subscription (1, 2, 3, 4 or more)."""
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(HISTOGRAM_BINS))
    for row in histogram:
        bin_index = min(_int(row["attempts"]), len(HISTOGRAM_BINS)) - 1
        counts[subscription_label(row)][bin_index] += _int(row["messages"])
    shown = sorted(counts, key=lambda k: -sum(counts[k]))[:MAX_CHART_ROWS]
    groups = [
        BarGroup(f"{label} attempt{'s' if label != '1' else ''}", [counts[k][i] for k in shown])
        for i, label in enumerate(HISTOGRAM_BINS)
    ]
    return bar_chart(shown, groups, stacked=True, value_label=lambda v: f"{v:,.0f}")


def _header(data: ReportData, zone: ZoneInfo) -> str:
    summary = data.summary
    since = "start" if data.since_ms is None else format_time(data.since_ms, zone)
    until = "end" if data.until_ms is None else format_time(data.until_ms, zone)
    first, last = summary.get("first_time_ms"), summary.get("last_time_ms")
    span = (last - first) if isinstance(first, int) and isinstance(last, int) else None
    facts = (
        ("Logs", data.logs),
        ("Window", f"{since} to {until} (end excluded)"),
        ("Times shown in", zone_name(zone, last)),
        ("First / last event", f"{format_time(first, zone)} / {format_time(last, zone)}"),
        ("Span", format_duration(span)),
        ("Events reported", tables.count(summary.get("events_in_window"))),
        ("Lines read", tables.count(summary.get("lines"))),
        ("Malformed lines skipped", tables.count(summary.get("malformed_lines"))),
        ("Lines without a readable Time or Action", tables.count(summary.get("unusable_records"))),
        ("Generated", format_time(data.generated_at_ms, zone)),
    )
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    return f'<div class="scroll"><table>{rows}</table></div>'


def _clock(epoch_ms: int, zone: ZoneInfo) -> str:
    return format_time(epoch_ms, zone)


def _ratios(buckets: Mapping[int, list[int]]) -> list[tuple[int, float]]:
    return [(bucket, d / m) for bucket, (m, d) in sorted(buckets.items()) if m]


def _total(buckets: Mapping[int, list[int]]) -> float:
    messages = sum(m for m, _ in buckets.values())
    return sum(d for _, d in buckets.values()) / messages if messages else 0.0


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _optional_float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None
