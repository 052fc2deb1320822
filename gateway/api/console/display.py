"""How the console writes values on its pages: endpoint URLs that wrap only after a separator,
and the one page size of its lists."""

from __future__ import annotations

import re
from typing import Final

from markupsafe import Markup, escape

from gateway.api.console.web import blueprint

#: Rows per page of the queue, topic and dead-letter lists (the queues page had 25, the
#: topics page 50: one size, so paging reads the same everywhere).
LIST_PAGE_SIZE: Final = 50

#: Where a URL may wrap: after its separators, never inside a host name or a word.
_URL_BREAKS: Final = re.compile(r"(?<=[/?&=.:,_-])")


@blueprint.app_template_filter("url")
def breakable_url(text: str) -> Markup:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each separator, so a
    long endpoint wraps at ``/`` or ``.``, not mid-word (the pages' ``.url`` class stops
    breaking anywhere else)."""
    return Markup("<wbr>").join(escape(part) for part in _URL_BREAKS.split(text) if part)
