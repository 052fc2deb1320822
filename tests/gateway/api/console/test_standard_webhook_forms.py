"""Standard Webhooks signatures on the topic's page: on, rotate and off through the form,
CSRF-guarded; the secret shown once, on the answer to on or rotate, never on the topic's page or
in the session; on each backend (docs/delivery.md#standard-webhooks-signatures)."""

from __future__ import annotations

import html
import re

from gateway.delivery.standard_webhooks import ROTATION_OVERLAP_MS
from gateway.topics.records import Subscription
from tests.gateway.api.console.conftest import Console

TOPIC_PAGE = "/console/topics/orders"
FORM = "/console/topics/orders/standard-webhooks"


def _topic(console: Console) -> None:
    topics = console.store.topics
    topics.create_topic("orders", 65536, True)
    for name in ("audit", "billing"):
        topics.subscribe(Subscription("orders", name, f"http://127.0.0.1:9/{name}"))


def _row(page: str, name: str) -> str:
    section = page.split('id="webhooks-title"', 1)[1]
    match = re.search(rf"<tr[^>]*>\s*<td class=\"wrap\"[^>]*>{name}</td>(.*?)</tr>", section, re.S)
    assert match, f"no Standard Webhooks row for {name}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip()


def _secret(page: str) -> str:
    match = re.search(r'id="webhook-secret">(whsec_[^<]+)<', page)
    assert match, "no secret on the page"
    return html.unescape(match.group(1))


def test_on_shows_the_secret_once_and_the_topic_page_only_the_state(signed_in: Console) -> None:
    _topic(signed_in)
    assert _row(signed_in.client.get(TOPIC_PAGE).text, "billing") == "off -"
    answer = signed_in.post(FORM, subscription="billing", action="on", back=TOPIC_PAGE)
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-store"
    secret = _secret(answer.text)
    assert signed_in.store.standard_webhooks.turn_on("orders", "billing")[0] == secret
    page = signed_in.client.get(TOPIC_PAGE).text
    assert _row(page, "billing") == "on -" and _row(page, "audit") == "off -"
    assert "whsec_" not in page

    rotated = signed_in.post(FORM, subscription="billing", action="rotate", back=TOPIC_PAGE)
    new = _secret(rotated.text)
    assert new != secret and "keeps signing beside it" in rotated.text
    until = signed_in.store.now_ms() + ROTATION_OVERLAP_MS
    page = signed_in.client.get(TOPIC_PAGE).text
    assert _row(page, "billing") == "on " + _utc(until)
    assert secret not in page and new not in page

    off = signed_in.post(FORM, subscription="billing", action="off", back=TOPIC_PAGE)
    assert off.status_code == 302 and off.headers["Location"] == TOPIC_PAGE
    assert "are off" in html.unescape(signed_in.flashes(TOPIC_PAGE))
    assert _row(signed_in.client.get(TOPIC_PAGE).text, "billing") == "off -"


def _utc(epoch_ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_refusals_show_the_page_again(signed_in: Console) -> None:
    _topic(signed_in)
    refused = signed_in.refused(FORM, subscription="audit", action="rotate", back=TOPIC_PAGE)
    assert "turn them on first" in html.unescape(refused)
    refused = signed_in.refused(FORM, subscription="audit", action="x", back=TOPIC_PAGE)
    assert "on, off or rotate" in html.unescape(refused)
    refused = signed_in.refused(FORM, subscription="nope", action="on", back=TOPIC_PAGE)
    assert "SubscriptionNotExist" in html.unescape(refused)
    assert signed_in.store.standard_webhooks.states("orders") == {}


def test_the_form_needs_its_csrf_token(signed_in: Console) -> None:
    _topic(signed_in)
    response = signed_in.client.post(FORM, data={"subscription": "audit", "action": "on"})
    assert response.status_code == 403
    assert signed_in.store.standard_webhooks.states("orders") == {}
