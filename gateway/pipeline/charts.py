"""Inline SVG charts for the HTML report, as plain strings.

The report must open from a file on a machine without internet, so no charting library or CDN:
three small chart shapes cover what the report shows, and every label is escaped because topic,
subscription and endpoint names come from the logs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
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
)
WIDTH: Final = 760
PLOT_LEFT: Final = 60
PLOT_RIGHT: Final = 20
ROW_HEIGHT: Final = 22
LABEL_WIDTH: Final = 230


@dataclass(frozen=True, slots=True)
class LineSeries:
    label: str
    points: Sequence[tuple[int, float]]  # (epoch ms, value)


@dataclass(frozen=True, slots=True)
class BarGroup:
    """One colour of bars: a value per category, in the categories' order."""

    label: str
    values: Sequence[float | None]


def line_chart(
    series: Sequence[LineSeries], *, y_max: float, y_label: Callable[[float], str]
) -> str:
    """Lines over time with a shared y axis from 0 to ``y_max``."""
    points = [point for line in series for point in line.points]
    if not points:
        return _empty("no push attempts in the logs")
    height, top, bottom = 280, 20, 40
    x_min = min(x for x, _ in points)
    x_span = max(max(x for x, _ in points) - x_min, 1)
    plot_width = WIDTH - PLOT_LEFT - PLOT_RIGHT
    plot_height = height - top - bottom

    def place(x: int, y: float) -> str:
        left = PLOT_LEFT + (x - x_min) / x_span * plot_width
        up = top + plot_height - min(y, y_max) / y_max * plot_height
        return f"{left:.1f},{up:.1f}"

    parts = [_svg_open(height)]
    for tick in range(5):
        value = y_max * tick / 4
        y = top + plot_height - plot_height * tick / 4
        parts.append(_hline(y, PLOT_LEFT, WIDTH - PLOT_RIGHT))
        parts.append(_text(PLOT_LEFT - 6, y + 4, y_label(value), anchor="end"))
    for fraction, x in ((0.0, x_min), (1.0, x_min + x_span)):
        left = PLOT_LEFT + fraction * plot_width
        anchor = "start" if fraction == 0 else "end"
        parts.append(_text(left, height - bottom + 16, _clock(x), anchor=anchor))
    for index, line in enumerate(series):
        colour = PALETTE[index % len(PALETTE)]
        path = " ".join(place(x, y) for x, y in sorted(line.points))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}">'
            f"<title>{escape(line.label)}</title></polyline>"
        )
    parts.append("</svg>")
    return "".join(parts) + legend([line.label for line in series])


def bar_chart(
    categories: Sequence[str],
    groups: Sequence[BarGroup],
    *,
    stacked: bool,
    value_label: Callable[[float], str],
) -> str:
    """Horizontal bars, one row per category: side by side (grouped) or stacked."""
    if not categories or not groups:
        return _empty("nothing to show")
    totals = [sum(group.values[i] or 0 for group in groups) for i in range(len(categories))]
    peaks = [max((group.values[i] or 0) for group in groups) for i in range(len(categories))]
    scale_max = max(totals if stacked else peaks) or 1
    per_row = ROW_HEIGHT if stacked else ROW_HEIGHT * len(groups) // 2 + 8
    height = 30 + per_row * len(categories)
    plot_width = WIDTH - LABEL_WIDTH - 70
    parts = [_svg_open(height)]
    for row, category in enumerate(categories):
        top = 10 + row * per_row
        parts.append(_text(LABEL_WIDTH - 6, top + per_row / 2 + 2, _shorten(category), "end"))
        offset = 0.0
        for index, group in enumerate(groups):
            value = group.values[row] or 0
            length = value / scale_max * plot_width
            colour = PALETTE[index % len(PALETTE)]
            bar_top = top if stacked else top + index * (per_row - 6) / len(groups)
            bar_height = per_row - 6 if stacked else (per_row - 6) / len(groups)
            tip = f"{category} — {group.label}: {value_label(value)}"
            parts.append(
                f'<rect x="{LABEL_WIDTH + offset:.1f}" y="{bar_top:.1f}" width="{length:.1f}"'
                f' height="{bar_height:.1f}" fill="{colour}"><title>{escape(tip)}</title></rect>'
            )
            if stacked:
                offset += length
        end = totals[row] if stacked else peaks[row]
        parts.append(
            _text(
                LABEL_WIDTH + end / scale_max * plot_width + 4,
                top + per_row / 2 + 2,
                value_label(end),
                "start",
            )
        )
    parts.append("</svg>")
    return "".join(parts) + legend([group.label for group in groups])


def legend(labels: Sequence[str]) -> str:
    items = "".join(
        f'<span class="key"><i style="background:{PALETTE[i % len(PALETTE)]}"></i>'
        f"{escape(label)}</span>"
        for i, label in enumerate(labels)
    )
    return f'<div class="legend">{items}</div>'


def _svg_open(height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img">'
    )


def _hline(y: float, left: float, right: float) -> str:
    return f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'


def _text(x: float, y: float, text: str, anchor: str) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="11">{escape(text)}</text>'
    )


def _empty(message: str) -> str:
    return f'<p class="empty">{escape(message)}</p>'


def _clock(epoch_ms: int) -> str:
    return f"{datetime.fromtimestamp(epoch_ms / 1000, tz=UTC):%Y-%m-%d %H:%M} UTC"


def _shorten(text: str, limit: int = 36) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
