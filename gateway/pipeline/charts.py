"""Inline SVG charts for the HTML report, as plain strings.

The report must open from a file on a machine without internet, so no charting library or CDN:
three small chart shapes cover what the report shows, and every label is escaped because topic,
subscription and endpoint names come from the logs.
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
WIDTH: Final = 760
PLOT_LEFT: Final = 60
PLOT_RIGHT: Final = 20
ROW_HEIGHT: Final = 22
LABEL_WIDTH: Final = 230


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

    x_min: int
    x_span: int
    y_max: float
    top: float = 20
    height: float = 220

    def place(self, x: int, y: float) -> tuple[float, float]:
        width = WIDTH - PLOT_LEFT - PLOT_RIGHT
        left = PLOT_LEFT + (x - self.x_min) / self.x_span * width
        up = self.top + self.height - min(y, self.y_max) / self.y_max * self.height
        return left, up


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
    points = [point for line in series for point in line.points]
    if not points:
        return _empty("no push attempts in the logs")
    x_min = min(x for x, _ in points)
    frame = _TimeFrame(x_min, max(max(x for x, _ in points) - x_min, 1), y_max)
    svg_height = int(frame.top + frame.height + 40)
    parts = [_svg_open(svg_height)]
    for tick in range(5):
        _, y = frame.place(x_min, y_max * tick / 4)
        parts.append(_hline(y, PLOT_LEFT, WIDTH - PLOT_RIGHT))
        parts.append(_text(PLOT_LEFT - 6, y + 4, y_label(y_max * tick / 4), anchor="end"))
    for x, anchor in ((x_min, "start"), (x_min + frame.x_span, "end")):
        left, _ = frame.place(x, 0)
        parts.append(_text(left, svg_height - 24, clock(x), anchor=anchor))
    for index, line in enumerate(series):
        parts.append(_line(frame, line, index, (y_label, clock), gap_ms))
    parts.append(_SVG_CLOSE)
    labels = [f"{line.label} {line.note}".rstrip() for line in series]
    return "".join(parts) + legend(labels, dashed=True)


def _line(
    frame: _TimeFrame,
    line: LineSeries,
    index: int,
    labels: tuple[Callable[[float], str], Callable[[int], str]],
    gap_ms: int | None,
) -> str:
    """A polyline per run of adjacent points plus a dot per point: dots keep single buckets
    visible, and a gap in the traffic is a gap in the line."""
    y_label, clock = labels
    colour, dash = _style(index)
    placed = [(x, y, *frame.place(x, y)) for x, y in sorted(line.points)]
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    parts = []
    for run in split_at_gaps(placed, gap_ms):
        if len(run) < 2:
            continue
        path = " ".join(f"{left:.1f},{up:.1f}" for _, _, left, up in run)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dashes} points="{path}">'
            f"<title>{escape(line.label)}</title></polyline>"
        )
    for x, y, left, up in placed:
        tip = f"{line.label} at {clock(x)}: {y_label(y)}"
        parts.append(
            f'<circle cx="{left:.1f}" cy="{up:.1f}" r="2.5" fill="{colour}">'
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
    rows = [[group.values[row] or 0.0 for group in groups] for row in range(len(categories))]
    ends = [sum(values) if stacked else max(values) for values in rows]
    scale = (WIDTH - LABEL_WIDTH - 70) / (max(ends) or 1)
    row_height = ROW_HEIGHT if stacked else ROW_HEIGHT * len(groups) // 2 + 8
    parts = [_svg_open(30 + row_height * len(categories))]
    for row, (category, values) in enumerate(zip(categories, rows, strict=True)):
        top = 10 + row * row_height
        middle = top + row_height / 2 + 2
        parts.append(_text(LABEL_WIDTH - 6, middle, _shorten(category), "end"))
        if missing_label and all(group.values[row] is None for group in groups):
            parts.append(_text(LABEL_WIDTH + 4, middle, missing_label, "start", css="missing"))
            continue
        bar_height = (row_height - 6) / (1 if stacked else len(groups))
        offset = 0.0
        for index, (group, value) in enumerate(zip(groups, values, strict=True)):
            bar_top = top if stacked else top + index * bar_height
            tip = f"{category} — {group.label}: {value_label(value)}"
            parts.append(
                f'<rect x="{LABEL_WIDTH + offset:.1f}" y="{bar_top:.1f}"'
                f' width="{value * scale:.1f}" height="{bar_height:.1f}"'
                f' fill="{PALETTE[index % len(PALETTE)]}"><title>{escape(tip)}</title></rect>'
            )
            offset += value * scale if stacked else 0.0
        end = ends[row]
        parts.append(_text(LABEL_WIDTH + end * scale + 4, middle, value_label(end), "start"))
    parts.append(_SVG_CLOSE)
    return "".join(parts) + legend([group.label for group in groups])


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


#: Charts keep a minimum width (see the page's CSS) so their 11-unit text never renders below
#: 10 px; on a narrow screen the chart scrolls sideways in its own box instead of shrinking.
_SVG_CLOSE: Final = "</svg></div>"


def _svg_open(height: int) -> str:
    return (
        '<div class="chart"><svg xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img">'
    )


def _hline(y: float, left: float, right: float) -> str:
    return f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'


def _text(x: float, y: float, text: str, anchor: str, css: str = "") -> str:
    styled = f' class="{css}"' if css else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="11"{styled}>'
        f"{escape(text)}</text>"
    )


def _empty(message: str) -> str:
    return f'<p class="empty">{escape(message)}</p>'


def _shorten(text: str, limit: int = 36) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
