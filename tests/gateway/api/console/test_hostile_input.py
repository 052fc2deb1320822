"""The console's filters and forms with text no store or document can carry (issue 33,
finding 3): a NUL in a filter was a 500 on PostgreSQL; now every page answers, on both
backends, and a message the JSON API may store (awkward but valid text) is shown."""

from __future__ import annotations

import pytest

from gateway.queues.records import NewMessage, QueueAttributes
from tests.gateway.api.console.conftest import Console

HOSTILE = ["\x00", "a\x00b", "\x01", "\ufffe"]
PAGES = [
    "/console/queues?prefix={v}",
    "/console/queues?marker={v}",
    "/console/topics?prefix={v}",
    "/console/topics?marker={v}",
    "/console/dead-letters?topic={v}",
    "/console/dead-letters?subscription={v}",
    "/console/dead-letters?marker={v}",
    "/console/deliveries?message_id={v}",
]


@pytest.mark.parametrize("value", HOSTILE, ids=ascii)
@pytest.mark.parametrize("page", PAGES)
def test_filters_with_text_no_store_carries_never_fail(
    signed_in: Console, page: str, value: str
) -> None:
    signed_in.store.queues.create_queue("jobs", QueueAttributes())
    response = signed_in.client.get(page.format(v=value))
    assert response.status_code in (200, 400), (response.status_code, response.text[:300])
    assert signed_in.client.get("/console/queues").status_code == 200


def test_a_message_with_awkward_text_is_shown(signed_in: Console) -> None:
    awkward = "tab\tcr\r c1\x85 <&> \U0001f600"
    signed_in.store.queues.create_queue("jobs", QueueAttributes())
    signed_in.store.queues.send("jobs", [NewMessage(awkward)])
    page = signed_in.client.get("/console/queues/jobs?peek=1")
    assert page.status_code == 200
    assert "c1\x85 &lt;&amp;&gt; \U0001f600" in page.text
