"""How operators' commands show times and endpoint errors as text: ISO-8601 UTC, to the
millisecond; an endpoint's error (often a whole HTML error page) reduced to one line of its text,
as the report's page and ``--trace`` show it too.

Shared by the dead-letter views (:mod:`gateway.admin.dead_letters`, local or remote) and the
command line (:mod:`gateway.cli.common`), which sits above them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Final


def iso_utc(epoch_ms: int | None) -> str:
    """``2026-11-22T20:21:53.123Z``; ``-`` for a time that has not happened."""
    if epoch_ms is None:
        return "-"
    moment = datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
