"""The report's charts and failing endpoints on a phone (390 px) and a desktop (1,400 px), in
headless Chromium: the page rendered from rows (no Spark), so this runs in seconds.

Each check failed on the page of 8db9520: at 390 px the timeline was a 700 px drawing in a box
scrolled to its first points, with the bars' values cut off at the box's edge; at 1,400 px the
charts' text was 11 px drawn over a 760 px chart, a series passing through another's points
vanished under it, and "Last success" was an empty cell for an endpoint that never took a push.

Screenshots: ``$MNS_TEST_ARTIFACTS/report/report-layout-390.png`` and ``-1400.png`` (else the
test's temporary directory); the path is printed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from gateway.pipeline.html_report import ReportData, render_report
from tests.chromium import artifacts_dir

T0 = 1_717_200_000_000
WIDTHS = (390, 1400)
SUBSCRIPTIONS = ("billing", "audit", "crm-sync", "legacy-webhook")
#: Messages delivered of 10 in each minute, per subscription: audit is at 100 % (where billing
#: always is) every third minute, so its points lie under or over billing's there.
DELIVERED = {"billing": (10, 10, 10), "audit": (10, 9, 9), "crm-sync": (5, 3, 3)}


#: An error as proxies write them (under the excerpt's 160 characters): identifiers and ids
#: that must not break inside.
LONG_ERROR = (
    "HTTP 503: upstream_connect_error_or_disconnect/reset_before_headers "
    "reset_reason=connection_termination RequestId=5F3A9C0B7E2D4A1C9B8E7F6A"
)
#: The characters after which a line may break in an error: a separator or a space.
_BREAKS_AFTER = "/?&=.:,_- "


def _endpoint(name: str) -> str:
    return f"https://{name}-receiver.internal.example.com:8443/hooks/mns/notifications"


def _report() -> ReportData:
    timeline = [
        {
            "bucket_start_ms": T0 + minute * 60_000,
            "topic_name": "orders",
            "subscription_name": name,
            "messages": 10,
            "delivered": DELIVERED.get(name, (0, 0, 0))[minute % 3],
            "attempts": 20,
        }
        for minute in range(30)
        for name in SUBSCRIPTIONS
    ]
    subscriptions = [
        {
            "topic_name": "orders",
            "subscription_name": name,
            "endpoint": _endpoint(name),
            "published": 300,
            "messages": 300,
            "delivered": 300 - index * 90,
            "latency_p50_ms": 40 * (index + 1) if index < 3 else None,
            "latency_p95_ms": 900 * (index + 1) if index < 3 else None,
            "latency_p99_ms": 25_000 * (index + 1) if index < 3 else None,
        }
        for index, name in enumerate(SUBSCRIPTIONS)
    ]
    histogram = [
        {"topic_name": "orders", "subscription_name": name, "attempts": a, "messages": 1000 * a}
        for name in SUBSCRIPTIONS
        for a in (1, 2, 3, 4)
    ]
    endpoints = [
        {
            "topic_name": "orders",
            "subscription_name": name,
            "endpoint": _endpoint(name),
            "currently_failing": True,
            "failing_since_ms": T0 + 60_000,
            "consecutive_failures": 40,
            "last_success_ms": T0 if name == "crm-sync" else None,
            "last_outcome": "http_error",
            "last_status_code": 503,
            "last_error": LONG_ERROR if name == "legacy-webhook" else "HTTP 503: unavailable",
        }
        for name in ("crm-sync", "legacy-webhook")
    ]
    summary = {"lines": 600, "events_in_window": 600, "first_time_ms": T0}
    return ReportData(
        generated_at_ms=T0 + 3_600_000,
        logs="/logs",
        since_ms=None,
        until_ms=None,
        summary={**summary, "last_time_ms": T0 + 1_800_000},
        subscriptions=subscriptions,
        histogram=histogram,
        endpoints=endpoints,
        timeline=timeline,
        queues=[],
        bucket_ms=60_000,
    )


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("report-layout") / "report.html"
    target.write_text(render_report(_report()))
    return target


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return artifacts_dir(tmp_path_factory, "report")


@pytest.fixture(scope="module", params=WIDTHS, ids=lambda width: f"{width}px")
def page(
    request: pytest.FixtureRequest, browser: webdriver.Chrome, report_file: Path, artifacts: Path
) -> Iterator[webdriver.Chrome]:
    width = request.param
    metrics = {"width": width, "deviceScaleFactor": 1, "mobile": width < 800}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": 900})
    browser.get(report_file.as_uri())
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": height})
    browser.save_screenshot(str(artifacts / f"report-layout-{width}.png"))
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {**metrics, "height": 900})
    browser.width = width  # type: ignore[attr-defined]
    yield browser
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


#: The charts a person sees (the page draws each twice and shows the one that fits).
_VISIBLE = (
    "const shown = [...document.querySelectorAll('svg')].filter(s => s.getClientRects().length);"
)


def test_every_chart_is_whole_on_the_screen_with_its_last_point_and_every_label(
    page: webdriver.Chrome,
) -> None:
    found = page.execute_script(
        _VISIBLE
        + """const width = window.innerWidth, problems = [];
           for (const svg of shown) {
             const box = svg.parentElement.getBoundingClientRect();
             for (const mark of svg.querySelectorAll('text, circle, rect')) {
               const r = mark.getBoundingClientRect();
               if (r.width === 0) continue;
               if (r.left < box.left - 1 || r.right > Math.min(box.right, width) + 1)
                 problems.push(mark.tagName + ' ' + (mark.textContent || '').slice(0, 30)
                               + ' at ' + Math.round(r.left) + '-' + Math.round(r.right));
             }
           }
           return [shown.length, problems];"""
    )
    assert found[0] == 3
    assert found[1] == []


def test_chart_text_reads_at_the_size_of_the_page_text(page: webdriver.Chrome) -> None:
    """Between 12 and 16 px on screen at both widths, as the tables' text (12-14 px)."""
    sizes = page.execute_script(
        _VISIBLE
        + """const sizes = [];
           for (const svg of shown) {
             const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
             for (const text of svg.querySelectorAll('text'))
               sizes.push(parseFloat(getComputedStyle(text).fontSize) * scale);
           }
           return sizes;"""
    )
    assert sizes and min(sizes) >= 12 and max(sizes) <= 16, (min(sizes), max(sizes))


def test_a_series_under_another_still_shows_where_they_meet(page: webdriver.Chrome) -> None:
    """Where two series pass through the same point, the one drawn first is the wider (its dot
    and its line), so it shows as a rim around the other instead of vanishing under it."""
    hidden = page.execute_script(
        _VISIBLE
        + """const svg = shown[0], drawn = {}, hidden = [];
           for (const dot of svg.querySelectorAll('circle')) {
             const at = dot.getAttribute('cx') + ',' + dot.getAttribute('cy');
             const r = parseFloat(dot.getAttribute('r'));
             if (at in drawn && drawn[at] <= r) hidden.push(at);
             drawn[at] = Math.min(drawn[at] || 1000, r);
           }
           const widths = [...svg.querySelectorAll('polyline')]
             .map(line => [line.getAttribute('stroke'),
                           parseFloat(line.getAttribute('stroke-width'))]);
           for (let i = 1; i < widths.length; i++)
             if (widths[i][0] !== widths[i - 1][0] && widths[i][1] >= widths[i - 1][1])
               hidden.push('line ' + widths[i][0]);
           return hidden;"""
    )
    assert hidden == []
    shared = page.execute_script(
        _VISIBLE
        + """const seen = {};
           for (const dot of shown[0].querySelectorAll('circle')) {
             const at = dot.getAttribute('cx') + ',' + dot.getAttribute('cy');
             seen[at] = (seen[at] || 0) + 1;
           }
           return Object.values(seen).filter(n => n > 1).length;"""
    )
    assert shared >= 10  # audit meets billing at 100 % every third minute


def test_an_endpoint_that_never_succeeded_says_never(page: webdriver.Chrome) -> None:
    table = page.find_element(By.XPATH, "//h2[.='Endpoints currently failing']/following::table")
    headings = [cell.text for cell in table.find_elements(By.TAG_NAME, "th")]
    column = headings.index("Last success")
    cells = {}
    for row in table.find_elements(By.TAG_NAME, "tr")[1:]:
        values = [
            cell.get_attribute("textContent") for cell in row.find_elements(By.TAG_NAME, "td")
        ]
        cells[values[0]] = values[column]
    assert cells == {"orders / crm-sync": "2024-06-01 00:00:00", "orders / legacy-webhook": "never"}


def test_errors_break_only_after_a_separator(page: webdriver.Chrome) -> None:
    """Issue 47: at 1,400 px an error broke inside its identifiers (``overflow-wrap:
    anywhere``); now it wraps after a space or a separator, as the endpoints do."""
    bad = page.execute_script(
        """const bad = [];
           for (const cell of document.querySelectorAll('td.e')) {
             const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
             let previous = null, node;
             while ((node = walker.nextNode()))
               for (let i = 0; i < node.length; i++) {
                 const range = document.createRange();
                 range.setStart(node, i); range.setEnd(node, i + 1);
                 const top = Math.round(range.getBoundingClientRect().top);
                 if (previous && top > previous.top && !arguments[0].includes(previous.char))
                   bad.push(previous.char + node.data[i]);
                 previous = {top: top, char: node.data[i]};
               }
           }
           return bad;""",
        _BREAKS_AFTER,
    )
    assert bad == []
    cell = page.find_element(By.XPATH, "//td[@class='e'][contains(., 'RequestId')]")
    assert cell.get_attribute("textContent") == LONG_ERROR
    assert cell.size["height"] > 20  # it does wrap (over several lines), only where it may


def test_a_table_wider_than_the_screen_shows_it_scrolls(
    page: webdriver.Chrome, artifacts: Path
) -> None:
    """Issue 47: at 390 px the wide tables carried no hint that they scroll. The page has no
    script: each table's box draws a shadow on the side that hides columns (CSS backgrounds that
    scroll with the box over covers that scroll with the content) and keeps its scrollbar."""
    boxes = page.execute_script(
        """return [...document.querySelectorAll('.scroll')].map(box => {
             const style = getComputedStyle(box);
             return {scrolls: box.scrollWidth > box.clientWidth + 1,
                     image: style.backgroundImage, attachment: style.backgroundAttachment};
           });"""
    )
    assert boxes
    for box in boxes:
        assert box["image"].count("radial-gradient") == 2, box
        assert box["attachment"].startswith("local, local, scroll, scroll"), box
    if page.width == 390:  # type: ignore[attr-defined]
        assert any(box["scrolls"] for box in boxes)
    table = page.find_element(By.XPATH, "//h2[.='Endpoints currently failing']/following::div")
    page.execute_script("arguments[0].scrollIntoView({block: 'start'})", table)
    width = page.width  # type: ignore[attr-defined]
    assert page.save_screenshot(str(artifacts / f"report-failing-endpoints-{width}.png"))
