"""The report as one self-contained HTML file: summary, three charts, and the main tables.

Input is plain Python rows (already aggregated by Spark), so this module is pure and testable
without Spark. Tables and charts show the busiest subscriptions and queues first and say when
rows were left out; the Parquet tables next to the file hold everything.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Final

from gateway.pipeline.charts import BarGroup, LineSeries, bar_chart, line_chart

Row = Mapping[str, object]
TableColumn = tuple[str, str, Callable[[object], str]]

MAX_TABLE_ROWS: Final = 200
MAX_CHART_ROWS: Final = 15
MAX_TIMELINE_SERIES: Final = 4
HISTOGRAM_BINS: Final = ("1", "2", "3", "4+")

_STYLE: Final = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee}
th{text-align:left;background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
.legend{margin:4px 0 12px}.key{margin-right:14px}.key i{display:inline-block;width:10px;
height:10px;margin-right:4px}.bad{color:#b00}.empty,.note{color:#777}
"""


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


def render_report(data: ReportData) -> str:
    sections = [
        f"<h1>MNS delivery report</h1>{_header(data)}",
        "<h2>Delivery success over time</h2>" + success_over_time_chart(data.timeline),
        "<h2>Publish-to-delivery latency</h2>" + latency_chart(data.subscriptions),
        "<h2>Push attempts per message</h2>" + retries_chart(data.histogram),
        "<h2>Subscriptions</h2>" + subscription_table(data.subscriptions),
        "<h2>Endpoints currently failing</h2>" + failing_endpoint_table(data.endpoints),
        "<h2>Queues</h2>" + queue_table(data.queues),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>MNS delivery report</title><style>{_STYLE}</style></head><body>"
        + "".join(sections)
        + "</body></html>\n"
    )


def success_over_time_chart(timeline: Sequence[Row]) -> str:
    """All subscriptions together, plus the busiest few on their own."""
    overall: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    per_subscription: dict[str, dict[int, list[int]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0])
    )
    for row in timeline:
        bucket, attempts, successes = (
            _int(row["bucket_start_ms"]),
            _int(row["attempts"]),
            _int(row["successes"]),
        )
        for target in (overall[bucket], per_subscription[_subscription_label(row)][bucket]):
            target[0] += attempts
            target[1] += successes
    busiest = sorted(
        per_subscription, key=lambda k: -sum(a for a, _ in per_subscription[k].values())
    )
    series = [LineSeries("all subscriptions", _ratios(overall))]
    series += [
        LineSeries(name, _ratios(per_subscription[name])) for name in busiest[:MAX_TIMELINE_SERIES]
    ]
    return line_chart(series, y_max=1.0, y_label=lambda v: f"{v:.0%}")


def latency_chart(subscriptions: Sequence[Row]) -> str:
    shown = _busiest(subscriptions, "messages")[:MAX_CHART_ROWS]
    groups = [
        BarGroup(f"p{q}", [_optional_float(row[f"latency_p{q}_ms"]) for row in shown])
        for q in (50, 95, 99)
    ]
    return bar_chart(
        [_subscription_label(row) for row in shown], groups, stacked=False, value_label=_millis
    )


def retries_chart(histogram: Sequence[Row]) -> str:
    """Messages by number of push attempts, stacked per subscription (1, 2, 3, 4 or more)."""
    counts: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(HISTOGRAM_BINS))
    for row in histogram:
        bin_index = min(_int(row["attempts"]), len(HISTOGRAM_BINS)) - 1
        counts[_subscription_label(row)][bin_index] += _int(row["messages"])
    shown = sorted(counts, key=lambda k: -sum(counts[k]))[:MAX_CHART_ROWS]
    groups = [
        BarGroup(f"{label} attempt{'s' if label != '1' else ''}", [counts[k][i] for k in shown])
        for i, label in enumerate(HISTOGRAM_BINS)
    ]
    return bar_chart(shown, groups, stacked=True, value_label=lambda v: f"{v:,.0f}")


def subscription_table(subscriptions: Sequence[Row]) -> str:
    columns: tuple[TableColumn, ...] = (
        ("Topic", "topic_name", str),
        ("Subscription", "subscription_name", str),
        ("Endpoint", "endpoint", str),
        ("Published", "published", _count),
        ("Messages", "messages", _count),
        ("Delivered", "delivered", _count),
        ("Failed attempts", "failed_attempts", _count),
        ("Success", "success_ratio", _percent),
        ("First-attempt success", "first_attempt_success_ratio", _percent),
        ("p50", "latency_p50_ms", _millis),
        ("p95", "latency_p95_ms", _millis),
        ("p99", "latency_p99_ms", _millis),
        ("Dead letters", "dead_letters", _count),
    )
    return _table(columns, _busiest(subscriptions, "messages"))


def failing_endpoint_table(endpoints: Sequence[Row]) -> str:
    failing = sorted(
        (row for row in endpoints if row.get("currently_failing")),
        key=lambda row: _int(row["failing_since_ms"]),
    )
    if not failing:
        return '<p class="empty">None: every endpoint\'s latest push attempt succeeded.</p>'
    columns: tuple[TableColumn, ...] = (
        ("Topic", "topic_name", str),
        ("Subscription", "subscription_name", str),
        ("Endpoint", "endpoint", str),
        ("Failing since", "failing_since_ms", _timestamp),
        ("Failures in a row", "consecutive_failures", _count),
        ("Last success", "last_success_ms", _timestamp),
        ("Last outcome", "last_outcome", str),
        ("Last status", "last_status_code", str),
        ("Last error", "last_error", str),
    )
    return _table(columns, failing)


def queue_table(queues: Sequence[Row]) -> str:
    columns: tuple[TableColumn, ...] = (
        ("Queue", "queue_name", str),
        ("Sent", "sent", _count),
        ("Received", "received", _count),
        ("Deleted", "deleted", _count),
        ("Redelivered", "redelivered", _count),
        ("Never consumed", "never_consumed", _count),
        ("Not deleted", "not_deleted", _count),
        ("Send→delete p50", "send_to_delete_p50_ms", _millis),
        ("Send→delete p99", "send_to_delete_p99_ms", _millis),
        ("Dead letters", "dead_letters", _count),
    )
    return _table(columns, _busiest(queues, "sent"))


def _header(data: ReportData) -> str:
    summary = data.summary
    since = "start" if data.since_ms is None else _timestamp(data.since_ms)
    until = "end" if data.until_ms is None else _timestamp(data.until_ms)
    window = f"{since} to {until} (end excluded)"
    facts = (
        ("Logs", data.logs),
        ("Window", window),
        ("Events reported", _count(summary.get("events_in_window"))),
        ("Lines read", _count(summary.get("lines"))),
        ("Malformed lines skipped", _count(summary.get("malformed_lines"))),
        ("Lines without a readable Time or Action", _count(summary.get("unusable_records"))),
        (
            "First / last event",
            f"{_timestamp(summary.get('first_time_ms'))} / "
            f"{_timestamp(summary.get('last_time_ms'))}",
        ),
        ("Generated", _timestamp(data.generated_at_ms)),
    )
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    return f"<table>{rows}</table>"


def _table(columns: Sequence[TableColumn], rows: Sequence[Row]) -> str:
    if not rows:
        return '<p class="empty">No records.</p>'
    head = "".join(f"<th>{escape(title)}</th>" for title, _, _ in columns)
    body = []
    for row in rows[:MAX_TABLE_ROWS]:
        cells = []
        for _, key, render in columns:
            value = row.get(key)
            text = "" if value is None else render(value)
            numeric = ' class="n"' if render is not str else ""
            cells.append(f"<td{numeric}>{escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    note = ""
    if len(rows) > MAX_TABLE_ROWS:
        note = f'<p class="note">First {MAX_TABLE_ROWS} of {len(rows)} rows; Parquet has all.</p>'
    return f"<table><tr>{head}</tr>{''.join(body)}</table>{note}"


def _busiest(rows: Sequence[Row], key: str) -> list[Row]:
    return sorted(rows, key=lambda row: -_int(row.get(key)))


def _ratios(buckets: Mapping[int, list[int]]) -> list[tuple[int, float]]:
    return [(bucket, s / a) for bucket, (a, s) in sorted(buckets.items()) if a]


def _subscription_label(row: Row) -> str:
    return f"{row.get('topic_name') or '?'} / {row.get('subscription_name') or '?'}"


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _optional_float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "—"


def _percent(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else "—"


def _millis(value: object) -> str:
    if not isinstance(value, int | float):
        return "—"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms"


def _timestamp(value: object) -> str:
    if not isinstance(value, int):
        return "—"
    return f"{datetime.fromtimestamp(value / 1000, tz=UTC):%Y-%m-%d %H:%M:%S} UTC"
