"""The report page on a phone (390 px) and a desktop (1,400 px), in headless Chromium.

One minute of traffic with a 20-second gap in the middle: five subscriptions that deliver
everything, two that deliver nothing, long endpoint URLs, and messages that are both dead
letters and their endpoint's latest failures. Each check failed on the page before this
change: tables wider than a phone's screen with no scroll box of their own, chart labels
shrunk to about 5 px, seven lines drawn on top of each other in two places, lines across the
gap, URLs broken mid-word, and the same message listed twice under "Traces of their latest
failed messages".

The failing endpoints' circuits open (one recovers after a failed probe, one never does, and
an operator holds a healthy one open for ten seconds): the endpoint-circuit section must fit
both screens too; its screenshots are kept in ``$MNS_TEST_ARTIFACTS/report``
(``report-circuits-390.png``, ``report-circuits-1400.png``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from selenium import webdriver

from tests.chromium import BAD_BREAKS_JS, artifacts_dir
from tests.gateway.pipeline.test_report import run

T0 = 1_717_200_000_000
HEALTHY = ("billing", "audit", "search", "mailer", "ledger")
FAILING = ("crm-sync", "legacy-webhook")
SECONDS = [*range(0, 20), *range(40, 60)]  # nothing published from 0:20 to 0:40
WIDTHS = (390, 1400)


def endpoint(name: str) -> str:
    return f"https://{name}-receiver.internal.example.com:8443/hooks/mns/notifications?tenant=acme"


def push(at: int, message: str, name: str, attempt: int, ok: bool) -> dict[str, object]:
    retry = {"NextAttemptTime": at + 30} if not ok and attempt == 1 else {}
    return {
        **retry,
        "Time": at,
        "Action": "PushMessage",
        "TopicName": "orders",
        "SubscriptionName": name,
        "Endpoint": endpoint(name),
        "MessageId": message,
        "PublishTime": at - 20,
        "Attempt": attempt,
        "Outcome": "success" if ok else "http_error",
        "StatusCode": 200 if ok else 503,
        "LatencyMs": 15,
        "Error": None if ok else "HTTP 503: unavailable",
    }


def traffic() -> Iterator[dict[str, object]]:
    for second in SECONDS:
        at, message = T0 + second * 1000, f"M{second:03d}"
        yield {"Time": at, "Action": "PublishMessage", "TopicName": "orders", "MessageId": message}
        for name in HEALTHY:
            yield push(at + 20, message, name, 1, True)
        for name in FAILING:
            yield push(at + 30, message, name, 1, False)
            yield push(at + 60, message, name, 2, False)
            dead = {"Action": "DeadLetter", "Error": "retries exhausted"}
            yield {**push(at + 90, message, name, 2, False), **dead}
    yield from circuits()


def circuit(second: float, name: str, state: str, **extra: object) -> dict[str, object]:
    return {
        "Time": T0 + int(second * 1000),
        "Action": "EndpointCircuit",
        "TopicName": "orders",
        "SubscriptionName": name,
        "CircuitState": state,
        "FailureRate": 1.0,
        **extra,
    }


def circuits() -> Iterator[dict[str, object]]:
    """crm-sync: open, a failed probe, open again, closed by a probe; legacy-webhook: open to
    the end; ledger: held open by an operator for ten seconds."""
    yield circuit(5, "crm-sync", "open", PreviousCircuitState="closed", NextProbeTime=T0 + 35_000)
    yield circuit(35, "crm-sync", "half-open", PreviousCircuitState="open")
    yield circuit(35.2, "crm-sync", "open", PreviousCircuitState="half-open")
    yield circuit(50, "crm-sync", "half-open", PreviousCircuitState="open")
    yield circuit(50.1, "crm-sync", "closed", PreviousCircuitState="half-open")
    yield circuit(8, "legacy-webhook", "open", PreviousCircuitState="closed")
    yield circuit(2, "ledger", "open", PreviousCircuitState="closed", CircuitOverride="open")
    yield circuit(12, "ledger", "closed", PreviousCircuitState="open", CircuitOverride="auto")


@pytest.fixture(scope="module")
def report_html(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("screens")
    hour = root / "logs" / "dt=2024-06-01" / "hour=00"
    hour.mkdir(parents=True)
    (hour / "oplog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in traffic()))
    assert run(spark, "--logs", str(root / "logs"), "--out", str(root / "out")) == 0
    return root / "out" / "report.html"


@pytest.fixture(scope="module", params=WIDTHS, ids=lambda width: f"{width}px")
def page(
    request: pytest.FixtureRequest,
    browser: webdriver.Chrome,
    report_html: Path,
) -> webdriver.Chrome:
    width = request.param
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 800},
    )
    browser.get(report_html.as_uri())
    browser.width = width  # type: ignore[attr-defined]
    return browser


def test_the_page_never_scrolls_sideways_and_every_table_scrolls_in_its_own_box(
    page: webdriver.Chrome,
) -> None:
    # A phone widens its layout viewport to fit a page wider than the screen.
    assert page.execute_script("return window.innerWidth") == page.width  # type: ignore[attr-defined]
    found = page.execute_script(
        """const width = window.innerWidth;
           const problems = [];
           if (document.documentElement.scrollWidth > width) problems.push('page is wider');
           for (const table of document.querySelectorAll('table')) {
             const box = table.parentElement;
             const name = table.innerText.slice(0, 40);
             if (!box.classList.contains('scroll')) problems.push('no scroll box: ' + name);
             else if (getComputedStyle(box).overflowX !== 'auto') problems.push('fixed: ' + name);
             if (box.getBoundingClientRect().right > width + 1) problems.push('box: ' + name);
           }
           return problems;"""
    )
    assert found == []


def test_chart_text_is_at_least_10_px(page: webdriver.Chrome) -> None:
    smallest = page.execute_script(
        """let smallest = 1000;
           const shown = [...document.querySelectorAll('svg')]
             .filter(svg => svg.getClientRects().length);
           for (const svg of shown) {
             const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
             for (const text of svg.querySelectorAll('text'))
               smallest = Math.min(smallest, parseFloat(text.getAttribute('font-size')) * scale);
           }
           return smallest;"""
    )
    assert 10 <= smallest < 1000


def test_no_two_lines_lie_on_top_of_each_other(page: webdriver.Chrome) -> None:
    drawn = page.execute_script(
        """const svg = document.querySelector('svg');
           const series = {};
           for (const mark of svg.querySelectorAll('polyline, circle')) {
             const key = mark.getAttribute('stroke') || mark.getAttribute('fill');
             const at = mark.tagName === 'circle'
               ? mark.getAttribute('cx') + ',' + mark.getAttribute('cy')
               : mark.getAttribute('points');
             (series[key] = series[key] || []).push(at);
           }
           return Object.values(series).map(marks => marks.sort().join(' '));"""
    )
    assert len(drawn) >= 2 and len(set(drawn)) == len(drawn)
    legend = page.find_element("css selector", ".legend").text
    assert ", ".join(f"orders / {name}" for name in sorted(HEALTHY)) in legend


def test_no_line_crosses_the_gap(page: webdriver.Chrome) -> None:
    steps = page.execute_script(
        """const svg = document.querySelector('svg');
           const xs = [...new Set([...svg.querySelectorAll('circle')]
             .map(c => parseFloat(c.getAttribute('cx'))))].sort((a, b) => a - b);
           const bucket = Math.min(...xs.slice(1).map((x, i) => x - xs[i]));
           const widest = [...svg.querySelectorAll('polyline')].map(line => {
             const x = line.getAttribute('points').split(' ').map(p => parseFloat(p));
             return Math.max(...x.slice(1).map((v, i) => v - x[i]));
           });
           return {bucket: bucket, widest: Math.max(...widest), lines: widest.length};"""
    )
    assert steps["lines"] >= 2  # each series is drawn, in two runs
    # Coordinates are written to 0.1 px: two roundings in a step, and in the smallest bucket.
    assert steps["widest"] <= steps["bucket"] * 1.01 + 0.2, steps


def test_urls_break_only_after_a_separator(page: webdriver.Chrome) -> None:
    bad = page.execute_script(
        BAD_BREAKS_JS
        + """const bad = [];
           for (const cell of document.querySelectorAll('td.u'))
             for (const pair of badBreaks(cell)) bad.push(cell.innerText);
           return bad;"""
    )
    assert bad == []


def test_each_failed_message_is_listed_once(page: webdriver.Chrome) -> None:
    items = page.find_elements("css selector", "ul li")
    assert items
    for item in items:
        links = [link.text for link in item.find_elements("tag name", "a")]
        assert links and len(links) == len(set(links)), item.text


def test_the_endpoint_circuits_fit_and_are_kept_on_screen(
    page: webdriver.Chrome, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A block per subscription whose circuit opened, nothing wider than the screen outside a
    scroll box (the first test checks the tables), and a screenshot of the section kept."""
    width = page.width  # type: ignore[attr-defined]
    found = page.execute_script(
        """const heading = [...document.querySelectorAll('h2')]
             .find(h => h.textContent === 'Endpoint circuits');
           const blocks = [], wide = [];
           for (let node = heading.nextElementSibling; node && node.tagName !== 'H2';
                node = node.nextElementSibling) {
             if (node.tagName === 'H3') blocks.push(node.textContent);
             if (node.getBoundingClientRect().right > window.innerWidth + 1)
               wide.push(node.tagName + ' ' + node.textContent.slice(0, 40));
           }
           heading.scrollIntoView({block: 'start'});
           return {blocks: blocks, wide: wide};"""
    )
    assert found["blocks"] == ["orders / crm-sync", "orders / ledger", "orders / legacy-webhook"]
    assert found["wide"] == []
    text = page.find_element("tag name", "body").text
    assert "2 probes" in text and "operator (open) / operator (auto)" in text
    assert "still not closed at the end of the logs" in text
    target = artifacts_dir(tmp_path_factory, "report") / f"report-circuits-{width}.png"
    assert page.save_screenshot(str(target))
