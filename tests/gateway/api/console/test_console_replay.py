"""The topic page's "Replay what was delivered" form, on each backend: the admin API's replay
(gateway/admin/delivered_replays.py) with its window in the form's words, behind the CSRF check;
the flash says what was queued (or, dry, would be) and what was skipped."""

from __future__ import annotations

from gateway.delivery.records import Attempt, Settlement
from gateway.delivery.replays import iso_utc_ms
from gateway.store.base import Store
from gateway.topics.records import Subscription, TopicMessage
from tests.gateway.api.console.conftest import Console, flash_text

PAGE = "/console/topics/orders"
FORM = "/console/topics/orders/replay"


def delivered(store: Store, count: int) -> list[str]:
    """``count`` messages published and pushed to ``orders/web`` successfully now."""
    ids = []
    for n in range(count):
        now = store.now_ms()
        message = TopicMessage(store.topics.new_message_id(now), "orders", f"m{n}", "MD5", now)
        store.topics.publish(message)
        ids.append(message.id)
    jobs = store.deliveries.claim("w", 60, 100, frozenset())
    store.deliveries.settle(
        "w", [Settlement(j, Attempt(1, store.now_ms(), "success", 204)) for j in jobs]
    )
    return ids


def orders(console: Console) -> Store:
    store = console.store
    store.topics.create_topic("orders", 65536, False)
    store.topics.subscribe(Subscription("orders", "web", "http://127.0.0.1:9/hook"))
    return store


def test_replay_and_dry_run_from_the_topic_page(signed_in: Console) -> None:
    store = orders(signed_in)
    since = iso_utc_ms(store.now_ms())
    ids = delivered(store, 2)
    signed_in.clock.advance(1)
    page = signed_in.client.get(PAGE).text
    assert "Replay what was delivered" in page and "86400 s" in page and f'action="{FORM}"' in page

    signed_in.post(FORM, subscription="web", since=since, dry_run="on", back=PAGE)
    assert "would queue 2 of the messages delivered to orders/web" in signed_in.flashes(PAGE)
    assert store.deliveries.due_count() == 0

    signed_in.post(FORM, subscription="web", since=since, back=PAGE)
    assert "queued 2 of the messages delivered to orders/web" in signed_in.flashes(PAGE)
    signed_in.clock.advance(1)
    jobs = store.deliveries.claim("w", 60, 100, frozenset())
    assert [j.message.id for j in jobs] == ids and all(j.replay_request_id for j in jobs)
    store.deliveries.release("w", [j.delivery_id for j in jobs])

    # Once more at once: both are still pending, so nothing more is queued.
    signed_in.post(FORM, subscription="web", since=since, back=PAGE)
    flashed = signed_in.flashes(PAGE)
    assert "queued 0" in flashed and "skipped 2 still pending" in flashed


def test_a_bad_window_comes_back_with_what_was_typed(signed_in: Console) -> None:
    store = orders(signed_in)
    refused = signed_in.post(FORM, subscription="web", since="last tuesday", back=PAGE)
    assert refused.status_code == 400
    assert "InvalidArgument: Since &#39;last tuesday&#39; is not an ISO 8601 time" in flash_text(
        refused.text
    )
    assert 'value="last tuesday"' in refused.text
    too_old = signed_in.refused(FORM, subscription="web", since="2020-01-01T00:00:00Z", back=PAGE)
    assert "the gateway keeps delivered history for 86400 s: Since must be at or after" in too_old
    since = iso_utc_ms(store.now_ms() - 1000)
    unknown = signed_in.refused(FORM, subscription="nope", since=since, back=PAGE)
    assert "SubscriptionNotExist" in unknown


def test_the_form_needs_the_csrf_token(signed_in: Console) -> None:
    store = orders(signed_in)
    since = iso_utc_ms(store.now_ms())
    delivered(store, 1)
    signed_in.clock.advance(1)
    forged = signed_in.client.post(FORM, data={"subscription": "web", "since": since})
    assert forged.status_code == 403
    signed_in.clock.advance(1)
    assert store.deliveries.claim("w", 60, 100, frozenset()) == []
