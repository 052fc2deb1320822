"""What text may be stored: the characters every front end can carry back out.

The XML API renders what the JSON API, the control plane, the console or the CLI stored, and
XML 1.0 carries only ``#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
[#x10000-#x10FFFF]``: no NUL or other C0 control, no U+FFFE or U+FFFF, no lone surrogate (which
is not even text: it has no UTF-8 form, and PostgreSQL stores no NUL). JSON can spell all of
these (``"\\u0000"``, ``"\\ud800"``), so a value is checked where the model builds it, with the
service's 400 ``InvalidArgument``, and nothing a client can send is stored that a later read
cannot render (docs/protocol.md#text-the-gateway-stores).

C1 controls (U+0080-U+009F) are XML 1.0 characters and pass.
"""

from __future__ import annotations

import re
from typing import Final

from gateway.protocol.errors import MNSError

#: One character XML 1.0 cannot carry.
_UNSTORABLE: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def unstorable(text: str) -> str | None:
    """The first character of ``text`` that may not be stored (``None`` when all may)."""
    found = _UNSTORABLE.search(text)
    return found.group() if found else None


def is_storable(text: str) -> bool:
    return _UNSTORABLE.search(text) is None


def describe(character: str) -> str:
    return f"U+{ord(character):04X}"


def storable(text: str, name: str, code: str = "InvalidArgument") -> str:
    """``text`` when every character may be stored; else the service's 400 (``code``,
    ``InvalidArgument`` unless the value has its own, as receipt handles do) naming ``name``."""
    bad = unstorable(text)
    if bad is not None:
        raise MNSError(
            code,
            f"The value of {name} contains a character that is not allowed: {describe(bad)}.",
        )
    return text


def storable_or_none(text: str | None, name: str) -> str | None:
    return None if text is None else storable(text, name)
