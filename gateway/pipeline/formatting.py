"""How the report writes values for people: times in the chosen zone, durations, and the text
of an endpoint's error. Pure functions, shared by the page and ``--trace``.

Endpoints answer failures with whatever their server sends, often a whole HTML error page. The
gateway keeps the start of it in the ``Error`` field; shown as is, it is markup nobody reads,
and on a page it must never become markup. :func:`error_excerpt` reduces it to its text on one
line and cuts it short; the page escapes the result like every other value.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from html.parser import HTMLParser
from typing import Final

ERROR_EXCERPT_CHARS: Final = 160
_MARKUP: Final = re.compile(r"<\s*/?\s*[a-zA-Z!][^>]*>")
_SPACE: Final = re.compile(r"\s+")
_INVISIBLE: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")


class _TextOnly(HTMLParser):
    """Collects the text of a document, without scripts, styles and the head's metadata."""

    SKIPPED: Final = frozenset({"script", "style", "head"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self.SKIPPED:
            self._skipping.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def error_excerpt(text: str, limit: int = ERROR_EXCERPT_CHARS) -> str:
    """The readable text of an error on one line, at most ``limit`` characters (``…`` marks a
    cut). Markup is reduced to the text a browser would show of it."""
    if _MARKUP.search(text):
        parser = _TextOnly()
        parser.feed(text)
        parser.close()
        text = "".join(parser.parts)
    flat = _SPACE.sub(" ", _INVISIBLE.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def format_offset(moment: datetime) -> str:
    """``Z`` for UTC, else ``+08:00``."""
    offset = moment.utcoffset() or timedelta(0)
    if not offset:
        return "Z"
    sign = "-" if offset < timedelta(0) else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def format_time(epoch_ms: object, zone: tzinfo, *, with_date: bool = True) -> str:
    """``2024-06-01 14:03:07`` in ``zone`` (the page says which zone once), ``—`` for none."""
    if not isinstance(epoch_ms, int) or isinstance(epoch_ms, bool):
        return "—"
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=zone)
    return f"{moment:%Y-%m-%d %H:%M:%S}" if with_date else f"{moment:%H:%M:%S}"


def zone_name(zone: tzinfo, at_ms: int | None = None) -> str:
    """``UTC`` or ``Asia/Shanghai (UTC+08:00)``."""
    key = getattr(zone, "key", None) or str(zone)
    if key in ("UTC", "Etc/UTC"):
        return "UTC"
    moment = datetime.fromtimestamp((at_ms or 0) / 1000, tz=zone)
    return f"{key} (UTC{format_offset(moment)})"


def format_duration(milliseconds: object) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``, ``3 h 20 min``, ``2 d 4 h``; ``—`` for none."""
    if not isinstance(milliseconds, int | float) or isinstance(milliseconds, bool):
        return "—"
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    whole = int(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    if whole < 86_400:
        return f"{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{whole // 86_400} d {whole % 86_400 // 3600} h"
