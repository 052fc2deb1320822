"""MNS integers: ASCII digits, and nothing else.

Python's ``int()`` reads far more than MNS clients write: ``1_0`` is 10, ``+3`` is 3, and so are
``٣`` (U+0663) and ``３`` (U+FF13), because it accepts digit separators, signs and every Unicode
decimal digit. A value that one reader takes for a number and another refuses is how requests
get smuggled past checks, so every integer the gateway reads from a client — XML elements, query
parameters, headers — goes through :func:`parse_integer` (see docs/http.md#integers).

Surrounding XML whitespace (space, tab, CR, LF) is not part of the number and is ignored, as an
XML reader would; anything else makes the value invalid, and the caller answers with its own
MNS error.
"""

from __future__ import annotations

import re
from typing import Final

#: More digits than any MNS value needs (the largest is a 13-digit millisecond time), and few
#: enough that a hostile value never becomes a big-integer conversion.
MAX_DIGITS: Final = 18
_DIGITS: Final = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_XML_WHITESPACE: Final = " \t\r\n"


def parse_integer(text: str) -> int | None:
    """The value of ``text`` if it is 1-18 ASCII digits (surrounding XML whitespace aside)."""
    digits = text.strip(_XML_WHITESPACE)
    if _DIGITS.fullmatch(digits) is None:
        return None
    return int(digits)


def integer_in_range(text: str, low: int, high: int) -> int | None:
    """The value of ``text`` if :func:`parse_integer` reads it and it lies in ``[low, high]``."""
    number = parse_integer(text)
    if number is None or not low <= number <= high:
        return None
    return number
