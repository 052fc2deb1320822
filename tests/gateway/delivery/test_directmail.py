"""The ``DirectMail`` attribute as publishers send it, parsed without any SMTP relay."""

from __future__ import annotations

import pytest

from gateway.delivery.directmail import parse_direct_mail


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"IsHtml": 0, "ReplyToAddress": 0}', (False, False)),
        ('{"IsHtml": "0", "ReplyToAddress": "false"}', (False, False)),
        ('{"IsHtml": "1", "ReplyToAddress": true}', (True, True)),
        ('{"IsHtml": 1, "ReplyToAddress": "True"}', (True, True)),
        ("{}", (False, False)),
    ],
)
def test_direct_mail_flags_accept_numbers_strings_and_booleans(
    raw: str, expected: tuple[bool, bool]
) -> None:
    parsed = parse_direct_mail(raw)
    assert (parsed.is_html, parsed.reply_to_sender) == expected
