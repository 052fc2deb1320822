"""The HTML page: self-contained, escaped, and showing what the tables say."""

from __future__ import annotations

import re

import defusedxml.ElementTree as ElementTree

from gateway.pipeline.html_report import ReportData, render_report
from gateway.pipeline.html_tables import MAX_TABLE_ROWS

T0 = 1_704_067_200_000
HOSTILE = "<script>alert(1)</script>"


def subscription(name: str, topic: str = "orders", messages: int = 10) -> dict[str, object]:
    return {
        "topic_name": topic,
        "subscription_name": name,
        "endpoint": f"http://{name}.example/notify",
        "published": 10,
        "messages": messages,
        "delivered": 9,
        "attempts": 14,
        "failed_attempts": 5,
        "success_ratio": 0.9,
        "first_attempt_success_ratio": 0.7,
        "latency_p50_ms": 40,
        "latency_p95_ms": 900,
        "latency_p99_ms": 2500,
        "dead_letters": 1,
        "replays": 0,
    }


FAILING_ENDPOINT = {
    "topic_name": "orders",
    "subscription_name": "billing",
    "endpoint": "http://billing.example/notify",
    "currently_failing": True,
    "failing_since_ms": T0 + 60_000,
    "consecutive_failures": 4,
    "last_success_ms": T0,
    "last_outcome": "timeout",
    "last_status_code": None,
    "last_error": "read timeout",
}
QUEUE = {
    "queue_name": "jobs",
    "sent": 5,
    "received": 6,
    "deleted": 4,
    "redelivered": 1,
    "never_consumed": 1,
    "not_deleted": 1,
    "send_to_delete_p50_ms": 1200,
    "send_to_delete_p99_ms": 31_000,
    "dead_letters": 0,
}
SUMMARY = {
    "lines": 120,
    "malformed_lines": 3,
    "unusable_records": 1,
    "events_in_window": 116,
    "first_time_ms": T0,
    "last_time_ms": T0 + 3_600_000,
}


def timeline_point(
    minute: int, subscription: str = "billing", delivered: int | None = None
) -> dict[str, object]:
    return {
        "bucket_start_ms": T0 + minute * 60_000,
        "topic_name": "orders",
        "subscription_name": subscription,
        "messages": 10,
        "delivered": 10 - minute if delivered is None else delivered,
        "attempts": 40,
    }


def report_data(**overrides: object) -> ReportData:
    fields: dict[str, object] = {
        "generated_at_ms": T0,
        "logs": "/var/log/mns",
        "since_ms": None,
        "until_ms": None,
        "summary": SUMMARY,
        "subscriptions": [subscription("billing"), subscription(HOSTILE, topic=HOSTILE)],
        "histogram": [
            {"topic_name": "orders", "subscription_name": "billing", "attempts": 1, "messages": 7},
            {"topic_name": "orders", "subscription_name": "billing", "attempts": 6, "messages": 3},
        ],
        "endpoints": [FAILING_ENDPOINT],
        "timeline": [timeline_point(minute) for minute in range(5)],
        "queues": [QUEUE],
    }
    fields.update(overrides)
    return ReportData(**fields)  # type: ignore[arg-type]


def test_page_is_self_contained_with_three_wellformed_charts() -> None:
    page = render_report(report_data())
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page
    assert not re.search(r'(src|href)="(?!#)', page)  # links only within the page
    charts = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert len(charts) == 6  # each chart drawn for a phone and for a wider screen
    for chart in charts:
        ElementTree.fromstring(chart)


def test_names_from_the_logs_are_escaped() -> None:
    page = render_report(report_data())
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_summary_figures_and_failing_endpoint_are_shown() -> None:
    page = render_report(report_data())
    assert "Malformed lines skipped</th><td>3<" in page
    assert '<td class="t">2024-01-01 00:01:00</td>' in page  # failing since, never wrapped
    assert "Times shown in</th><td>UTC<" in page
    assert "read timeout" in page
    assert "31 s" in page  # send-to-delete p99 of the queue


def test_no_failing_endpoint_says_so() -> None:
    page = render_report(report_data(endpoints=[]))
    assert "every endpoint" in page


def test_empty_logs_render_without_charts() -> None:
    page = render_report(
        report_data(subscriptions=[], histogram=[], endpoints=[], timeline=[], queues=[])
    )
    assert "<svg" not in page
    assert "no push attempts in the logs" in page


def test_long_tables_are_cut_with_a_note() -> None:
    many = [subscription(f"s{index}", messages=index) for index in range(MAX_TABLE_ROWS + 5)]
    page = render_report(report_data(subscriptions=many))
    assert f"First {MAX_TABLE_ROWS} of {MAX_TABLE_ROWS + 5} rows" in page
    assert "s204" in page  # the busiest come first
    assert ">s0<" not in page


def test_success_over_time_counts_messages_and_every_subscription_is_in_the_legend() -> None:
    """Three subscriptions deliver everything; three deliver nothing after many attempts.
    By message that is half, whatever the attempts."""
    timeline = [
        timeline_point(minute, name, delivered=10 if name.startswith("ok") else 0)
        for minute in range(3)
        for name in ("ok-a", "ok-b", "ok-c", "bad-a", "bad-b", "bad-c")
    ]
    page = render_report(report_data(timeline=timeline))
    legend = re.search(r'<div class="legend">(.*?)</div>', page).group(1)  # type: ignore[union-attr]
    assert "all subscriptions 50.0%" in legend
    for name in ("ok-a", "ok-b", "ok-c", "bad-a", "bad-b", "bad-c"):
        assert f"orders / {name}" in legend


def test_subscriptions_without_delivery_say_so_instead_of_zero() -> None:
    silent = {
        **subscription("silent"),
        "delivered": 0,
        "latency_p50_ms": None,
        "latency_p95_ms": None,
        "latency_p99_ms": None,
    }
    page = render_report(report_data(subscriptions=[subscription("billing"), silent]))
    assert page.count("no delivery") >= 4  # in the chart, and in the table's p50/p95/p99
    assert ">0 ms<" not in page


def test_replays_column() -> None:
    page = render_report(report_data(subscriptions=[{**subscription("billing"), "replays": 7}]))
    assert "<th>Replays</th>" in page
    assert '<td class="n">7</td></tr>' in page


def test_an_endpoint_error_page_is_shown_as_short_text() -> None:
    error = "HTTP 502: <html><head><title>x</title></head><body><h1>Bad Gateway</h1>" + (
        "<p>" + "details " * 100 + "</p></body></html>"
    )
    page = render_report(report_data(endpoints=[{**FAILING_ENDPOINT, "last_error": error}]))
    cell = re.search(r'<td class="e">(.*?)</td>', page).group(1)  # type: ignore[union-attr]
    cell = cell.replace("<wbr>", "")  # where it may wrap: after a separator (issue 47)
    assert cell.startswith("HTTP 502: Bad Gateway details")
    assert cell.endswith("…") and len(cell) <= 170
    assert "&lt;" not in cell and "<h1>Bad" not in page


def test_times_are_shown_in_the_chosen_zone() -> None:
    page = render_report(report_data(timezone="Asia/Shanghai"))
    assert "Times shown in</th><td>Asia/Shanghai (UTC+08:00)<" in page
    assert '<td class="t">2024-01-01 08:01:00</td>' in page


def test_messages_that_need_attention_carry_their_trace() -> None:
    attention = [
        {
            "reason": "failing endpoint",
            "topic_name": "orders",
            "subscription_name": "billing",
            "endpoint": "http://billing.example/notify",
            "queue_name": None,
            "message_id": "4B3C",
            "at_ms": T0 + 120_000,
        }
    ]
    trace = [
        {"time_ms": T0, "action": "PublishMessage", "topic_name": "orders"},
        {
            "time_ms": T0 + 120_000,
            "action": "PushMessage",
            "topic_name": "orders",
            "subscription_name": "billing",
            "endpoint": "http://billing.example/notify",
            "attempt": 3,
            "outcome": "timeout",
            "error": "read timeout",
        },
    ]
    page = render_report(report_data(attention=attention, traces={"4B3C": trace}))
    assert '<a href="#trace-4B3C">4B3C</a>' in page  # from the failing endpoint
    section = page[page.index('<details id="trace-4B3C">') :]
    assert "failing endpoint — orders / billing — 2024-01-01 00:02:00 — 4B3C" in section
    assert section.index("PublishMessage") < section.index("PushMessage")
