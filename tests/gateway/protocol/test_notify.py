"""NotifyStrategy and NotifyContentFormat: parsed in any case, anything else a 400."""

from __future__ import annotations

import pytest

from gateway.errors.mns import MNSError
from gateway.protocol.notify import ContentFormat, NotifyStrategy

BACKOFF = NotifyStrategy.BACKOFF_RETRY
EXPONENTIAL = NotifyStrategy.EXPONENTIAL_DECAY_RETRY


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("BACKOFF_RETRY", BACKOFF),
        ("backoff_retry", BACKOFF),
        ("EXponential_Decay_Retry", EXPONENTIAL),  # the API reference's own spelling
        (" exponential_decay_retry ", EXPONENTIAL),
    ],
)
def test_strategy_parses_in_any_case(text: str, expected: NotifyStrategy) -> None:
    assert NotifyStrategy.parse(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("XML", ContentFormat.XML),
        ("json", ContentFormat.JSON),
        ("Simplified", ContentFormat.SIMPLIFIED),
    ],
)
def test_format_parses_in_any_case(text: str, expected: ContentFormat) -> None:
    assert ContentFormat.parse(text) is expected


@pytest.mark.parametrize(
    ("parse", "text"), [(NotifyStrategy.parse, "LINEAR_RETRY"), (ContentFormat.parse, "YAML")]
)
def test_unknown_values_are_invalid_arguments(parse, text: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(MNSError) as caught:
        parse(text)
    assert (caught.value.code, caught.value.status) == ("InvalidArgument", 400)
    assert text in caught.value.message
