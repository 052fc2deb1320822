"""MNS integers are ASCII digits: what ``int()`` would also accept is refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors.mns import MNSError
from gateway.protocol.integers import integer_in_range, parse_integer
from gateway.protocol.names import int_attribute
from gateway.queues.records import DELAY_SECONDS, WAIT_SECONDS

#: What Python's int() reads as 3 or 10 and MNS does not.
LENIENT_SPELLINGS = ["1_0", "+3", "-0", "\u0663", "\uff13", "3\u00a0", "\u2003" + "3", "0x3", "3.0"]


@pytest.mark.parametrize("text,value", [("0", 0), ("42", 42), ("007", 7), (" 5\n", 5)])
def test_ascii_digits_are_integers(text: str, value: int) -> None:
    assert parse_integer(text) == value


@pytest.mark.parametrize("text", [*LENIENT_SPELLINGS, "", " ", "1 0", "9" * 19])
def test_anything_else_is_not(text: str) -> None:
    assert parse_integer(text) is None


@given(st.text(max_size=30))
def test_exactly_the_ascii_digit_strings_are_integers(text: str) -> None:
    digits = text.strip(" \t\r\n")
    expected = int(digits) if re.fullmatch(r"[0-9]{1,18}", digits, re.ASCII) else None
    assert parse_integer(text) == expected


def test_range_is_inclusive() -> None:
    assert [integer_in_range(t, 1, 16) for t in ("0", "1", "16", "17")] == [None, 1, 16, None]


@pytest.mark.parametrize("text", LENIENT_SPELLINGS)
def test_every_integer_reader_refuses_lenient_spellings(text: str) -> None:
    for parse in (
        lambda: DELAY_SECONDS.parse(text, None),
        lambda: WAIT_SECONDS.parse(text, None),
        lambda: int_attribute(text, "MaximumMessageSize", 0, 65536, None),
    ):
        with pytest.raises(MNSError) as caught:
            parse()
        assert caught.value.code == "InvalidArgument"
        assert "should between" in caught.value.message
