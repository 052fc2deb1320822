"""Every time the console shows carries its zone (issue 47): "2026-05-28 20:26:40 UTC", on every
page that shows times (the overview, topics, a topic, a queue and its peeked messages,
deliveries, dead letters and a dead letter), on each backend."""

from __future__ import annotations

import re

from gateway.queues.records import NewMessage, QueueAttributes
from gateway.topics.records import Subscription
from tests.gateway.api.console.conftest import Console
from tests.gateway.api.console.test_console_actions import dead_letter

#: A date and time as the console writes them, and what follows it.
TIME = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(.{0,4})")


def test_every_time_on_every_page_says_utc(signed_in: Console) -> None:
    store = signed_in.store
    store.queues.create_queue("jobs", QueueAttributes())
    store.queues.send("jobs", [NewMessage("hello")])
    letter = dead_letter(store)
    message_id = store.deliveries.get_dead_letter(letter).message.id
    store.topics.subscribe(Subscription("orders", "more", "http://127.0.0.1:9/more"))
    pages = [
        "/console/",
        "/console/topics",
        "/console/topics/orders",
        "/console/queues/jobs",
        "/console/queues/jobs?peek=1",
        f"/console/deliveries?message_id={message_id}",
        "/console/dead-letters",
        f"/console/dead-letters/{letter}",
    ]
    for path in pages:
        response = signed_in.client.get(path)
        assert response.status_code == 200, path
        found = TIME.findall(response.text)
        assert found, f"{path} shows no time"
        # " UTC" where a time is shown; "Z" where one is typed (the replay form's ISO 8601).
        assert all(after.startswith((" UTC", "Z")) for after in found), (path, found)
