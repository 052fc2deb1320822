"""The overview's live figures: the last hour of pushes per minute as counts, a success rate, a
throughput, and an inline SVG chart of them. Pure: counts in, numbers and markup out.

The chart stacks failed pushes on top of successful ones in each minute's bar, so neither
series can hide behind the other; it carries no inline style (the console's Content-Security-
Policy forbids it), only presentation attributes and classes.

It is drawn once per screen width in :data:`WIDTHS` and the console's CSS shows the one that
fits, each at one SVG unit per CSS pixel: a single drawing stretched to the page had 5 px text
on a phone and 18 px text on a desktop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from gateway.store import PUSH_FAILED, PUSH_OK

MINUTES = 60
#: The drawings' widths in CSS pixels, by the class that console.css shows at which width:
#: a phone's (the chart's box is 340 px wide at 390), a tablet's and a desktop's.
WIDTHS = (("narrow", 320), ("medium", 640), ("wide", 1100))
HEIGHT = 180
LEFT = 44
BOTTOM = 24
TOP = 10


@dataclass(frozen=True, slots=True)
class Minute:
    minute: int  # epoch minute
    succeeded: int
    failed: int

    @property
    def total(self) -> int:
        return self.succeeded + self.failed


@dataclass(frozen=True, slots=True)
class HourFigures:
    minutes: Sequence[Minute]

    @property
    def succeeded(self) -> int:
        return sum(m.succeeded for m in self.minutes)

    @property
    def failed(self) -> int:
        return sum(m.failed for m in self.minutes)

    @property
    def success_rate(self) -> float | None:
        """Successful pushes as a share of all pushes in the hour; ``None`` without pushes."""
        total = self.succeeded + self.failed
        return None if total == 0 else self.succeeded / total

    @property
    def per_minute(self) -> float:
        return (self.succeeded + self.failed) / len(self.minutes) if self.minutes else 0.0

    @property
    def busiest(self) -> int:
        return max((m.total for m in self.minutes), default=0)


def last_hour(counts: Mapping[tuple[int, str], int], now_minute: int) -> HourFigures:
    """The 60 minutes ending with ``now_minute`` (inclusive), zeros where nothing was pushed."""
    first = now_minute - MINUTES + 1
    return HourFigures(
        [
            Minute(m, counts.get((m, PUSH_OK), 0), counts.get((m, PUSH_FAILED), 0))
            for m in range(first, now_minute + 1)
        ]
    )


def _nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 5 x 10^n at or above ``value`` (an axis that reads easily)."""
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= value:
                return step * factor
        step *= 10


def chart(figures: HourFigures) -> Markup:
    """Stacked bars, one per minute: successes below, failures above; a drawing per width."""
    return Markup("").join(_drawing(figures, name, width) for name, width in WIDTHS)


def _drawing(figures: HourFigures, name: str, width: int) -> Markup:
    top = _nice_ceiling(max(figures.busiest, 1))
    plot_w, plot_h = width - LEFT - 8, HEIGHT - TOP - BOTTOM
    bar_w = plot_w / MINUTES
    parts = [
        f'<svg class="chart {name}" viewBox="0 0 {width} {HEIGHT}" width="{width}"'
        f' height="{HEIGHT}" role="img" aria-labelledby="chart-title-{name}">'
        f'<title id="chart-title-{name}">Pushes per minute in the last hour: successful and'
        " failed, stacked</title>",
        _axis(top, plot_w, plot_h),
    ]
    for index, minute in enumerate(figures.minutes):
        x = LEFT + index * bar_w
        ok_h = plot_h * minute.succeeded / top
        failed_h = plot_h * minute.failed / top
        base = TOP + plot_h
        if ok_h:
            parts.append(_bar("ok", x, base - ok_h, bar_w, ok_h, minute.succeeded, "successful"))
        if failed_h:
            parts.append(
                _bar("failed", x, base - ok_h - failed_h, bar_w, failed_h, minute.failed, "failed")
            )
    parts.append(
        f'<text x="{LEFT}" y="{HEIGHT - 6}" class="tick">-60 min</text>'
        f'<text x="{width - 8}" y="{HEIGHT - 6}" class="tick"'
        ' text-anchor="end">now</text>'
        "</svg>"
    )
    return Markup("".join(parts))


def _axis(top: int, plot_w: float, plot_h: float) -> str:
    lines = []
    for share in (0, 0.5, 1):
        y = TOP + plot_h * (1 - share)
        label = f"{top * share:g}"
        lines.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w:.1f}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="tick"'
            f' text-anchor="end">{label}</text>'
        )
    return "".join(lines)


def _bar(css: str, x: float, y: float, w: float, h: float, count: int, what: str) -> str:
    return (
        f'<rect class="{css}" x="{x + 0.5:.1f}" y="{y:.1f}" width="{max(w - 1, 0.5):.1f}"'
        f' height="{h:.1f}"><title>{count} {what}</title></rect>'
    )
