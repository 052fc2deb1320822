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

from gateway.errors.mns import MNSError

#: The characters XML 1.0 cannot carry (a Python string holds no code point above U+10FFFF).
_UNSTORABLE: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
#: The same but lone surrogates: C0 controls but tab, LF and CR; U+FFFE; U+FFFF.
_SCANNED: Final = (
    *(chr(c) for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)),
    "\ufffe",
    "\uffff",
)
#: Above this length a text is searched for each character in turn: a C scan per character
#: (memchr on a one-byte string) costs far less than the regular expression's loop over a long
#: text (a 64 KiB body), and a string of narrower characters is not searched at all.
_SCAN_FROM: Final = 256


def unstorable(text: str) -> str | None:
    """A character of ``text`` that may not be stored (``None`` when all may)."""
    if len(text) <= _SCAN_FROM:
        found = _UNSTORABLE.search(text)
        return found.group() if found else None
    scanned = next((c for c in _SCANNED if c in text), None)
    if scanned is not None or text.isascii():
        return scanned
    try:  # a string of one-byte characters holds no surrogate: a copy tells, at memcpy speed
        text.encode("latin-1")
        return None
    except UnicodeEncodeError:
        pass
    try:  # a lone surrogate is the one character UTF-8 cannot encode
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return text[error.start]
    return None


def is_storable(text: str) -> bool:
    return unstorable(text) is None


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
