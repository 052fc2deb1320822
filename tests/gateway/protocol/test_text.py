"""gateway.protocol.text against XML 1.0's Char production, character by character, for short
texts (the regular expression) and long ones (the scans), property-based."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.errors.mns import MNSError
from gateway.protocol.text import is_storable, storable, unstorable


def xml_char(c: str) -> bool:
    """XML 1.0: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]."""
    n = ord(c)
    return n in (0x9, 0xA, 0xD) or 0x20 <= n <= 0xD7FF or 0xE000 <= n <= 0xFFFD or n >= 0x10000


ANY = st.characters(codec=None, categories=None)
PADDING = st.sampled_from(["", "x" * 300, "\u00e9" * 300, "\u4e2d" * 300, "\U0001f600" * 300])


@settings(max_examples=400)
@given(text=st.text(ANY, max_size=30), before=PADDING, after=PADDING)
def test_storable_is_xml_chars(text: str, before: str, after: str) -> None:
    whole = before + text + after
    expected = all(xml_char(c) for c in whole)
    assert is_storable(whole) is expected
    found = unstorable(whole)
    assert (found is None) is expected
    assert found is None or not xml_char(found)


def test_the_error_names_the_character() -> None:
    with pytest.raises(MNSError) as caught:
        storable("a\x00b", "MessageBody")
    assert (caught.value.code, caught.value.status) == ("InvalidArgument", 400)
    assert "U+0000" in caught.value.message and "MessageBody" in caught.value.message
