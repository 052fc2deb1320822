"""The report as a person sees it: report.html from a real run, opened in headless Chromium.

One minute of traffic like a new user's first try (six subscriptions, three healthy and three
failing with an HTML error page, a queue fed by a topic and by senders), then the page is
checked where it renders: the charts are drawn, no table is wider than the page or has a
cell whose content spills out, the "Failing since" times stay on one line. A screenshot of the
whole page is kept: in ``$MNS_TEST_ARTIFACTS`` when set (CI keeps that directory), else in the
test's temporary directory; the path is printed either way.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from selenium import webdriver

from tests.gateway.pipeline.test_report import run

T0 = 1_717_200_000_000
QUEUE_ENDPOINT = "acs:mns:cn-hangzhou:1234567890:queues/jobs"
ERROR_PAGE = (
    "HTTP 502: <html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n"
    "</body>\r\n</html>\r\n" + "<!-- a padding comment -->" * 20
)


def one_minute_of_traffic() -> list[dict[str, object]]:
    healthy = ("billing", "audit", QUEUE_ENDPOINT)
    failing = ("search-indexer", "crm-sync", "legacy-webhook")
    records: list[dict[str, object]] = []
    for second in range(0, 60, 2):
        at, message = T0 + second * 1000, f"M{second:04d}"
        records.append(
            {"Time": at, "Action": "PublishMessage", "TopicName": "orders", "MessageId": message}
        )
        for name in healthy:
            records.append(_push(at + 30, message, name, 1, ok=True))
        for name in failing:
            for attempt in (1, 2, 3):
                records.append(_push(at + 40 + attempt * 300, message, name, attempt, ok=False))
            if second < 20:
                records.append(_dead_letter(at + 2000, message, name))
        records.append(
            {
                "Time": at + 5,
                "Action": "SendMessage",
                "QueueName": "jobs",
                "MessageId": f"Q{second}",
            }
        )
    return records


def _endpoint(name: str) -> str:
    if name.startswith("acs:"):
        return name
    return f"https://{name}.internal.example.com:8443/hooks/mns/notifications?tenant=acme-corp"


def _push(at: int, message: str, name: str, attempt: int, *, ok: bool) -> dict[str, object]:
    return {
        "Time": at,
        "Action": "PushMessage",
        "TopicName": "orders",
        "SubscriptionName": name.rsplit("/", 1)[-1],
        "Endpoint": _endpoint(name),
        "MessageId": message,
        "PublishTime": at - 30,
        "Attempt": attempt,
        "Outcome": "success" if ok else "http_error",
        "StatusCode": 201 if ok else 502,
        "LatencyMs": 12,
        "Error": None if ok else ERROR_PAGE,
    }


def _dead_letter(at: int, message: str, name: str) -> dict[str, object]:
    return {
        "Time": at,
        "Action": "DeadLetter",
        "TopicName": "orders",
        "SubscriptionName": name,
        "Endpoint": _endpoint(name),
        "MessageId": message,
        "Error": "retries exhausted",
    }


#: The report is read at a laptop's width (tests/chromium.py's browser fixture).
BROWSER_WIDTH = 1280


@pytest.fixture(scope="module")
def report_html(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    hour = root / "logs" / "dt=2024-06-01" / "hour=00"
    hour.mkdir(parents=True)
    lines = (json.dumps(record) for record in one_minute_of_traffic())
    (hour / "oplog-host-1-abc-000001.jsonl").write_text("\n".join(lines) + "\n")
    assert run(spark, "--logs", str(root / "logs"), "--out", str(root / "out")) == 0
    return root / "out" / "report.html"


@pytest.fixture(scope="module")
def page(browser: webdriver.Chrome, report_html: Path) -> webdriver.Chrome:
    browser.get(report_html.as_uri())
    return browser


def test_the_three_charts_are_drawn(page: webdriver.Chrome) -> None:
    charts = page.execute_script(
        """return [...document.querySelectorAll('svg')].filter(s => s.getClientRects().length)
             .map(svg => {
             const box = svg.getBoundingClientRect();
             return {width: box.width, height: box.height,
                     marks: svg.querySelectorAll('polyline, rect, circle').length};
           });"""
    )
    assert len(charts) == 3
    for chart in charts:
        assert chart["width"] > 300 and chart["height"] > 50 and chart["marks"] > 0, chart


def test_no_table_overflows_its_column(page: webdriver.Chrome) -> None:
    overflowing = page.execute_script(
        """const column = document.body.getBoundingClientRect();
           const style = getComputedStyle(document.body);
           const right = column.right - parseFloat(style.paddingRight) + 1;
           const found = [];
           for (const table of document.querySelectorAll('table')) {
             const name = table.innerText.slice(0, 60);
             if (table.getBoundingClientRect().right > right) found.push(name);
             for (const cell of table.querySelectorAll('td, th'))
               if (cell.scrollWidth > cell.clientWidth + 1) found.push(cell.innerText);
           }
           return found;"""
    )
    assert overflowing == []


def test_failing_since_stays_on_one_line(page: webdriver.Chrome) -> None:
    lines = page.execute_script(
        """return [...document.querySelectorAll('td.t')].map(cell => {
             const range = document.createRange();
             range.selectNodeContents(cell);
             return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
           });"""
    )
    assert lines and max(lines) == 1


def test_the_page_reads_as_the_issue_asked(page: webdriver.Chrome) -> None:
    text = page.find_element("tag name", "body").text
    assert "all subscriptions 50.0%" in text  # three of six deliver every message
    # Subscriptions with the same line are drawn once and named together ("a, b 100.0% each").
    assert re.search(r"orders / billing(, [^\n]+)? 100\.0%", text)
    assert re.search(r"orders / crm-sync(, [^\n]+)? 0\.0%", text)
    assert "no delivery" in text
    assert "HTTP 502: 502 Bad Gateway nginx/1.25.3" in text and "<html>" not in text
    assert "Messages that need attention" in text


def test_screenshot_is_kept(page: webdriver.Chrome, tmp_path: Path) -> None:
    height = page.execute_script("return document.documentElement.scrollHeight")
    page.set_window_size(1280, min(int(height) + 40, 16_000))
    target = Path(os.environ.get("MNS_TEST_ARTIFACTS") or tmp_path) / "report.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    assert page.save_screenshot(str(target))
    assert target.stat().st_size > 10_000
    print(f"screenshot of report.html: {target}")
