"""Inline SVG charts for the HTML report, as plain strings.

The report must open from a file on a machine without internet, so no charting library or CDN:
two small chart shapes cover what the report shows, and every label is escaped because topic,
subscription and endpoint names come from the logs.

Each chart is drawn twice, for a phone and for a wider screen (:data:`LAYOUTS`), and the page's
CSS shows the one that fits. Either is drawn at its own size (one SVG unit, one CSS pixel), so
its text is as large as its ``font-size`` on every screen: a single drawing scaled to the page
was unreadable on a phone and small on a desktop, or scrolled sideways to show its first points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

PALETTE: Final = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#ad494a",
)
#: Dash patterns cycled with the colours, so that lines lying on top of each other (several
#: subscriptions at 100 %) stay apart where they can, and colours repeat only with a new dash.
DASHES: Final = ("", "6 3", "2 3")
ROW_HEIGHT: Final = 22
#: How much wider each series' line and dots are than those of the series drawn after it: where
#: two series pass through the same point, the one below shows as a rim around the one on top.
LAYER_STEP: Final = 1.0


@dataclass(frozen=True, slots=True)
class Layout:
    """One drawing of the charts: its width in CSS pixels, its text size, its margins, and
    where bar charts write their categories (left of the bars, or above them on a phone)."""

    name: str
    width: int
    font: int
    plot_left: int
    plot_right: int
    label_width: int
    labels_above: bool = False
    #: Characters of a category shown before it is shortened with "…".
    label_chars: int = 36


#: A phone's (the page's CSS shows it below 800 px) and a wider screen's drawing.
NARROW: Final = Layout("narrow", 340, 12, 42, 14, 0, labels_above=True, label_chars=44)
WIDE: Final = Layout("wide", 740, 13, 64, 24, 240)
LAYOUTS: Final = (NARROW, WIDE)
#: The page's CSS for the two drawings.
CHART_CSS: Final = (
    ".chart{overflow-x:auto;max-width:100%}.chart svg{display:block;max-width:none}"
    ".chart svg.wide{display:none}"
    "@media (min-width:800px){.chart svg.narrow{display:none}.chart svg.wide{display:block}}"
)


@dataclass(frozen=True, slots=True)
class LineSeries:
    label: str
    points: Sequence[tuple[int, float]]  # (epoch ms, value)
    note: str = ""  # shown after the label in the legend, e.g. the overall value


@dataclass(frozen=True, slots=True)
class BarGroup:
    """One colour of bars: a value per category, in the categories' order."""

    label: str
    values: Sequence[float | None]


@dataclass(frozen=True, slots=True)
class _TimeFrame:
    """Maps (epoch ms, value) to SVG coordinates inside the plot area of a line chart."""

    layout: Layout
    x_min: int
    x_span: int
    y_max: float
    top: float = 20
    height: float = 220

    def place(self, x: int, y: float) -> tuple[float, float]:
        width = self.layout.width - self.layout.plot_left - self.layout.plot_right
        left = self.layout.plot_left + (x - self.x_min) / self.x_span * width
        up = self.top + self.height - min(y, self.y_max) / self.y_max * self.height
        return left, up


@dataclass(frozen=True, slots=True)
class _Labels:
    value: Callable[[float], str]
    clock: Callable[[int], str]


def line_chart(
    series: Sequence[LineSeries],
    *,
    y_max: float,
    y_label: Callable[[float], str],
    clock: Callable[[int], str],
    gap_ms: int | None = None,
) -> str:
    """Lines over time with a shared y axis from 0 to ``y_max``; ``clock`` writes a time.
    Points more than ``gap_ms`` apart are not joined: no line claims traffic in a gap."""
    if not any(line.points for line in series):
        return _empty("no push attempts in the logs")
    labels = _Labels(y_label, clock)
    drawings = [_line_drawing(layout, series, y_max, labels, gap_ms) for layout in LAYOUTS]
    legend_labels = [f"{line.label} {line.note}".rstrip() for line in series]
    return _chart_box(drawings) + legend(legend_labels, dashed=True)


def _line_drawing(
    layout: Layout,
    series: Sequence[LineSeries],
    y_max: float,
    labels: _Labels,
    gap_ms: int | None,
) -> str:
    points = [point for line in series for point in line.points]
    x_min = min(x for x, _ in points)
    frame = _TimeFrame(layout, x_min, max(max(x for x, _ in points) - x_min, 1), y_max)
    svg_height = int(frame.top + frame.height + 40)
    parts = [_svg_open(layout, svg_height)]
    right = layout.width - layout.plot_right
    for tick in range(5):
        _, y = frame.place(x_min, y_max * tick / 4)
        parts.append(_hline(y, layout.plot_left, right))
        parts.append(_text(layout, layout.plot_left - 6, y + 4, labels.value(y_max * tick / 4)))
    for x, anchor in ((x_min, "start"), (x_min + frame.x_span, "end")):
        left, _ = frame.place(x, 0)
        parts.append(_text(layout, left, svg_height - 22, labels.clock(x), anchor))
    for index, line in enumerate(series):
        layer = len(series) - 1 - index  # how many series are drawn on top of this one
        parts.append(_line(frame, line, (index, layer), labels, gap_ms))
    parts.append("</svg>")
    return "".join(parts)


def _line(
    frame: _TimeFrame,
    line: LineSeries,
    place: tuple[int, int],
    labels: _Labels,
    gap_ms: int | None,
) -> str:
    """A polyline per run of adjacent points plus a dot per point: dots keep single buckets
    visible, and a gap in the traffic is a gap in the line. ``place`` is the series' index and
    its layer: a series with others drawn over it is drawn wider, so it shows beside them."""
    index, layer = place
    colour, dash = _style(index)
    placed = [(x, y, *frame.place(x, y)) for x, y in sorted(line.points)]
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    stroke, radius = 1.5 + layer * LAYER_STEP, 2 + layer * LAYER_STEP
    parts = []
    for run in split_at_gaps(placed, gap_ms):
        if len(run) < 2:
            continue
        path = " ".join(f"{left:.1f},{up:.1f}" for _, _, left, up in run)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="{stroke:g}"{dashes}'
            f' stroke-linejoin="round" points="{path}"><title>{escape(line.label)}</title>'
            "</polyline>"
        )
    for x, y, left, up in placed:
        tip = f"{line.label} at {labels.clock(x)}: {labels.value(y)}"
        parts.append(
            f'<circle cx="{left:.1f}" cy="{up:.1f}" r="{radius:g}" fill="{colour}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    return "".join(parts)


def split_at_gaps(
    points: Sequence[tuple[int, float, float, float]], gap_ms: int | None
) -> list[list[tuple[int, float, float, float]]]:
    """Runs of points (sorted by time) whose neighbours are at most ``gap_ms`` apart; one run
    when ``gap_ms`` is None."""
    runs: list[list[tuple[int, float, float, float]]] = []
    for point in points:
        if runs and (gap_ms is None or point[0] - runs[-1][-1][0] <= gap_ms):
            runs[-1].append(point)
        else:
            runs.append([point])
    return runs


@dataclass(frozen=True, slots=True)
class _Bars:
    categories: Sequence[str]
    groups: Sequence[BarGroup]
    stacked: bool
    value_label: Callable[[float], str]
    missing_label: str


def bar_chart(
    categories: Sequence[str],
    groups: Sequence[BarGroup],
    *,
    stacked: bool,
    value_label: Callable[[float], str],
    missing_label: str = "",
) -> str:
    """Horizontal bars, one row per category: side by side (grouped) or stacked. A category
    without any value gets ``missing_label`` written instead of bars (not a 0)."""
    if not categories or not groups:
        return _empty("nothing to show")
    bars = _Bars(categories, groups, stacked, value_label, missing_label)
    drawings = [_bar_drawing(layout, bars) for layout in LAYOUTS]
    return _chart_box(drawings) + legend([group.label for group in groups])


#: Room kept right of the longest bar for its value ("12.5 s", "1,444").
VALUE_ROOM: Final = 70


def _bar_drawing(layout: Layout, bars: _Bars) -> str:
    groups = bars.groups
    rows = [[group.values[row] or 0.0 for group in groups] for row in range(len(bars.categories))]
    ends = [sum(values) if bars.stacked else max(values) for values in rows]
    left = 4 if layout.labels_above else layout.label_width
    scale = (layout.width - left - VALUE_ROOM) / (max(ends) or 1)
    bars_height = ROW_HEIGHT if bars.stacked else ROW_HEIGHT * len(groups) // 2 + 8
    above = layout.font + 6 if layout.labels_above else 0
    row_height = bars_height + above
    parts = [_svg_open(layout, 20 + row_height * len(bars.categories))]
    for row, (category, values) in enumerate(zip(bars.categories, rows, strict=True)):
        top = 10 + row * row_height + above
        middle = top + bars_height / 2 + 4
        name = _shorten(category, layout.label_chars)
        if layout.labels_above:
            parts.append(_text(layout, left, top - 5, name, "start"))
        else:
            parts.append(_text(layout, left - 6, middle, name))
        if bars.missing_label and all(group.values[row] is None for group in groups):
            parts.append(_text(layout, left + 4, middle, bars.missing_label, "start", "missing"))
            continue
        bar_height = (bars_height - 6) / (1 if bars.stacked else len(groups))
        offset = 0.0
        for index, (group, value) in enumerate(zip(groups, values, strict=True)):
            bar_top = top if bars.stacked else top + index * bar_height
            tip = f"{category} — {group.label}: {bars.value_label(value)}"
            parts.append(
                f'<rect x="{left + offset:.1f}" y="{bar_top:.1f}"'
                f' width="{value * scale:.1f}" height="{bar_height:.1f}"'
                f' fill="{PALETTE[index % len(PALETTE)]}"><title>{escape(tip)}</title></rect>'
            )
            offset += value * scale if bars.stacked else 0.0
        end = ends[row]
        parts.append(_text(layout, left + end * scale + 4, middle, bars.value_label(end), "start"))
    parts.append("</svg>")
    return "".join(parts)


def legend(labels: Sequence[str], *, dashed: bool = False) -> str:
    """One key per label, in the colours (and, for lines, the dashes) of the chart."""
    items = []
    for index, label in enumerate(labels):
        colour, dash = _style(index) if dashed else (PALETTE[index % len(PALETTE)], "")
        swatch = f"background:{colour}" if not dash else f"border-top:3px dashed {colour}"
        items.append(f'<span class="key"><i style="{swatch}"></i>{escape(label)}</span>')
    return f'<div class="legend">{"".join(items)}</div>'


def _style(index: int) -> tuple[str, str]:
    return PALETTE[index % len(PALETTE)], DASHES[index // len(PALETTE) % len(DASHES)]


def _chart_box(drawings: Sequence[str]) -> str:
    return f'<div class="chart">{"".join(drawings)}</div>'


def _svg_open(layout: Layout, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{layout.name}"'
        f' viewBox="0 0 {layout.width} {height}" width="{layout.width}" height="{height}"'
        ' role="img">'
    )


def _hline(y: float, left: float, right: float) -> str:
    return f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'


def _text(layout: Layout, x: float, y: float, text: str, anchor: str = "end", css: str = "") -> str:
    styled = f' class="{css}"' if css else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{layout.font}"'
        f"{styled}>{escape(text)}</text>"
    )


def _empty(message: str) -> str:
    return f'<p class="empty">{escape(message)}</p>'


def _shorten(text: str, limit: int = 36) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
