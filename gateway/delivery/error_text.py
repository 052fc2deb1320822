"""An endpoint's error as text people read: the pipeline's report and the web console show it.

Endpoints answer failures with whatever their server sends, often a whole HTML error page. The
gateway keeps the start of it in the attempt's error; shown as is, it is markup nobody reads,
and on a page it must never become markup. :func:`error_excerpt` reduces it to its text on one
line and cuts it short; pages escape the result like every other value. Pure.
"""

from __future__ import annotations

import re
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
