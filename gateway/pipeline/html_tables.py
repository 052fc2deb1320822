"""The page's tables and the traces of messages that need attention, as HTML strings.

Every value is escaped: topic, subscription, queue and endpoint names and endpoint errors come
from the logs. Errors are reduced to their text first (:func:`~.formatting.error_excerpt`), so
an endpoint's HTML error page shows as one short line of text. Times are in the page's zone and
never wrap; long names wrap anywhere, endpoints and errors after a separator (never inside a
host name or an identifier), and each table sits in its own box that scrolls sideways on a
screen narrower than the table, with a shadow on the side that hides columns (CSS only: the page
has no script).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final
from zoneinfo import ZoneInfo

from gateway.pipeline.formatting import error_excerpt, format_duration, format_time

Row = Mapping[str, object]
MAX_TABLE_ROWS: Final = 200


@dataclass(frozen=True, slots=True)
class Column:
    """A table column: heading, how a row's value is written, and its CSS class (``n`` numbers,
    ``t`` times, ``w`` names that may wrap, ``u`` endpoints, ``e`` errors)."""

    title: str
    render: Callable[[Row], str]
    css: str = ""


def field(key: str, render: Callable[[object], str] = str) -> Callable[[Row], str]:
    """A column reading one key of the row; empty where the value is missing."""

    def read(row: Row) -> str:
        value = row.get(key)
        return "" if value is None else render(value)

    return read


def count(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else "—"


def percent(value: object) -> str:
    return f"{value:.1%}" if isinstance(value, int | float) else "—"


def subscription_label(row: Row) -> str:
    return f"{row.get('topic_name') or '?'} / {row.get('subscription_name') or '?'}"


def busiest(rows: Sequence[Row], key: str) -> list[Row]:
    return sorted(rows, key=lambda row: -_number(row.get(key)))


def subscription_table(subscriptions: Sequence[Row]) -> str:
    columns = (
        Column("Topic / subscription", subscription_label, "w"),
        Column("Endpoint", field("endpoint"), "u"),
        Column("Published", field("published", count), "n"),
        Column("Messages", field("messages", count), "n"),
        Column("Delivered", field("delivered", count), "n"),
        Column("Success", field("success_ratio", percent), "n"),
        Column("First-attempt success", field("first_attempt_success_ratio", percent), "n"),
        Column("Failed attempts", field("failed_attempts", count), "n"),
        Column("p50", _latency("latency_p50_ms"), "n"),
        Column("p95", _latency("latency_p95_ms"), "n"),
        Column("p99", _latency("latency_p99_ms"), "n"),
        Column("Dead letters", field("dead_letters", count), "n"),
        Column("Replays", field("replays", count), "n"),
    )
    return render_table(columns, busiest(subscriptions, "messages"))


def failing_endpoint_table(
    endpoints: Sequence[Row], zone: ZoneInfo, last_event_ms: object, attention: Sequence[Row]
) -> str:
    failing = sorted(
        (row for row in endpoints if row.get("currently_failing")),
        key=lambda row: _number(row.get("failing_since_ms")),
    )
    if not failing:
        return '<p class="empty">None: every endpoint\'s latest push attempt succeeded.</p>'
    traced: dict[tuple[object, ...], dict[str, None]] = {}
    for row in attention:  # a message is listed once, however many reasons it is there for
        traced.setdefault(_endpoint_key(row), {})[str(row["message_id"])] = None
    columns = (
        Column("Topic / subscription", subscription_label, "w"),
        Column("Endpoint", field("endpoint"), "u"),
        Column("Failing since", field("failing_since_ms", lambda v: format_time(v, zone)), "t"),
        Column("For", lambda row: _failing_for(row, last_event_ms), "t"),
        Column("Failures in a row", field("consecutive_failures", count), "n"),
        Column("Last success", _last_success(zone), "t"),
        Column("Last outcome", _last_outcome),
        Column("Last error", field("last_error", error_excerpt), "e"),
    )
    table = render_table(columns, failing)
    links = [
        f"<li>{escape(subscription_label(row))}: "
        + ", ".join(_trace_link(message_id) for message_id in traced[_endpoint_key(row)])
        + "</li>"
        for row in failing
        if _endpoint_key(row) in traced
    ]
    if links:
        table += f"<p>Traces of their latest failed messages:</p><ul>{''.join(links)}</ul>"
    return table


def queue_table(queues: Sequence[Row]) -> str:
    columns = (
        Column("Queue", field("queue_name"), "w"),
        Column("Sent", field("sent", count), "n"),
        Column("From topics", field("from_topics", count), "n"),
        Column("Received", field("received", count), "n"),
        Column("Deleted", field("deleted", count), "n"),
        Column("Redelivered", field("redelivered", count), "n"),
        Column("Never consumed", field("never_consumed", count), "n"),
        Column("Not deleted", field("not_deleted", count), "n"),
        Column("Send→delete p50", _latency("send_to_delete_p50_ms"), "n"),
        Column("Send→delete p99", _latency("send_to_delete_p99_ms"), "n"),
        Column("Dead letters", field("dead_letters", count), "n"),
    )
    return render_table(columns, busiest(queues, "sent"))


def attention_section(
    attention: Sequence[Row], traces: Mapping[str, Sequence[Row]], zone: ZoneInfo
) -> str:
    """One collapsible trace per message: the latest dead letters and the latest failures of
    each failing endpoint."""
    if not attention:
        return '<p class="empty">None: no dead letters and no failing endpoint.</p>'
    seen: set[str] = set()
    parts = []
    for row in attention:
        message_id = str(row["message_id"])
        if message_id in seen:
            continue
        seen.add(message_id)
        where = row.get("queue_name") or subscription_label(row)
        heading = (
            f"{row['reason']} — {where} — {format_time(row.get('at_ms'), zone)} — {message_id}"
        )
        parts.append(
            f'<details id="{_anchor(message_id)}"><summary>{escape(heading)}</summary>'
            f"{trace_table(traces.get(message_id, []), zone)}</details>"
        )
    return "".join(parts)


def trace_table(events: Sequence[Row], zone: ZoneInfo) -> str:
    if not events:
        return '<p class="empty">Its records are no longer in the logs.</p>'
    columns = (
        Column("Time", field("time_ms", lambda v: format_time(v, zone)), "t"),
        Column("Action", field("action")),
        Column("Where", _where, "w"),
        Column("Attempt", field("attempt", count), "n"),
        Column("Outcome", field("outcome")),
        Column("Status", field("status_code")),
        Column("Latency", field("latency_ms", format_duration), "n"),
        Column("Error", field("error", error_excerpt), "e"),
    )
    return render_table(columns, events)


def render_table(columns: Sequence[Column], rows: Sequence[Row]) -> str:
    if not rows:
        return '<p class="empty">No records.</p>'
    head = "".join(f"<th>{escape(column.title)}</th>" for column in columns)
    body = []
    for row in rows[:MAX_TABLE_ROWS]:
        cells = []
        for column in columns:
            css = f' class="{column.css}"' if column.css else ""
            text = column.render(row)
            # Endpoints and errors wrap after a separator, never inside a name (issue 47: an
            # error broke inside its identifiers at 1,400 px).
            shown = breakable_url(text) if column.css in ("u", "e") else escape(text)
            cells.append(f"<td{css}>{shown}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    note = ""
    if len(rows) > MAX_TABLE_ROWS:
        note = f'<p class="note">First {MAX_TABLE_ROWS} of {len(rows)} rows; Parquet has all.</p>'
    return f'<div class="scroll"><table><tr>{head}</tr>{"".join(body)}</table></div>{note}'


#: Where a URL may break across lines: after its separators, never inside a word.
_URL_BREAKS: Final = re.compile(r"(?<=[/?&=.:,_-])")


def breakable_url(text: str) -> str:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each URL separator, so
    a long endpoint (or an error naming hosts, paths and identifiers) wraps at ``/``, ``?`` or
    ``_``, not mid-word."""
    return "<wbr>".join(escape(part) for part in _URL_BREAKS.split(text) if part)


def _latency(key: str) -> Callable[[Row], str]:
    """A latency; a subscription that delivered nothing has none, which is not 0 ms."""

    def read(row: Row) -> str:
        value = row.get(key)
        return "no delivery" if value is None else format_duration(value)

    return read


def _last_success(zone: ZoneInfo) -> Callable[[Row], str]:
    """When the endpoint last took a push; "never" for one that took none in these logs (an
    empty cell read as a value missing from the report)."""

    def read(row: Row) -> str:
        value = row.get("last_success_ms")
        return "never" if value is None else format_time(value, zone)

    return read


def _failing_for(row: Row, last_event_ms: object) -> str:
    since = row.get("failing_since_ms")
    if not isinstance(since, int) or not isinstance(last_event_ms, int):
        return "—"
    return format_duration(max(0, last_event_ms - since))


def _last_outcome(row: Row) -> str:
    outcome = str(row.get("last_outcome") or "—")
    status = row.get("last_status_code")
    return f"{outcome} ({status})" if status is not None else outcome


def _where(row: Row) -> str:
    if row.get("queue_name"):
        return str(row["queue_name"])
    if row.get("subscription_name"):
        return f"{subscription_label(row)} → {row.get('endpoint') or '?'}"
    return str(row.get("topic_name") or "")


def _endpoint_key(row: Row) -> tuple[object, ...]:
    return (row.get("topic_name"), row.get("subscription_name"), row.get("endpoint"))


def _trace_link(message_id: str) -> str:
    return f'<a href="#{escape(_anchor(message_id))}">{escape(message_id)}</a>'


def _anchor(message_id: str) -> str:
    return "trace-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in message_id)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
