"""The HTML page: self-contained, escaped, and showing what the tables say."""

from __future__ import annotations

import re

import defusedxml.ElementTree as ElementTree

from gateway.pipeline.html_report import MAX_TABLE_ROWS, ReportData, render_report

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


def timeline_point(minute: int) -> dict[str, object]:
    return {
        "bucket_start_ms": T0 + minute * 60_000,
        "topic_name": "orders",
        "subscription_name": "billing",
        "attempts": 10,
        "successes": 10 - minute,
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
    assert not re.search(r"(src|href)=", page)
    charts = re.findall(r"<svg.*?</svg>", page, flags=re.S)
    assert len(charts) == 3
    for chart in charts:
        ElementTree.fromstring(chart)


def test_names_from_the_logs_are_escaped() -> None:
    page = render_report(report_data())
    assert HOSTILE not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_summary_figures_and_failing_endpoint_are_shown() -> None:
    page = render_report(report_data())
    assert "Malformed lines skipped</th><td>3<" in page
    assert "2024-01-01 00:01:00 UTC" in page  # failing since
    assert "read timeout" in page
    assert "31.00 s" in page  # send-to-delete p99 of the queue


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
