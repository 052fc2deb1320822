"""The inbox in the store, on each backend: stored with the completion of its delivery, seen by
every replica sharing the database, filtered, emptied; and the reset of a development gateway."""

from __future__ import annotations

import json

from gateway.delivery.sms import prepare_sms
from gateway.inbox.records import InboxKind, InboxQuery, sms_entries
from gateway.store.base import compose_store
from gateway.topics.records import Subscription, TopicMessage
from tests.conftest import OpenDatabase

NOW_MS = 1_700_000_000_000


def test_entries_are_kept_with_their_delivery_completed_and_seen_by_a_replica(
    open_database: OpenDatabase,
) -> None:
    a, b = compose_store(open_database()), compose_store(open_database())
    a.topics.create_topic("orders", 65536, False)
    a.topics.subscribe(Subscription("orders", "texts", "sms:directsms:anonymous"))
    direct = {
        "FreeSignName": "Shop",
        "TemplateCode": "T",
        "Type": "singleContent",
        "Receiver": "13800000001,13800000002",
        "SmsParams": '{"code": "1"}',
    }
    message = TopicMessage(
        "M1",
        "orders",
        "x",
        "",
        NOW_MS,
        attributes={"MessageAttributes": {"DirectSMS": json.dumps(direct)}},
    )
    a.topics.publish(message)
    (job,) = a.deliveries.claim("worker", 60, 10, frozenset())
    entries = sms_entries(job, prepare_sms(job), NOW_MS)

    a.inbox.deliver(job.delivery_id, entries)
    a.inbox.deliver(job.delivery_id, entries)  # a lapsed lease's second attempt: kept once

    seen = b.inbox.entries(InboxKind.SMS)
    assert [e.recipient for e in seen] == ["13800000001", "13800000002"]
    assert seen[0].document["TemplateParam"] == {"code": "1"}
    assert a.deliveries.claim("worker", 60, 10, frozenset()) == []
    assert a.deliveries.due_count() == 0
    only = b.inbox.entries(InboxKind.SMS, InboxQuery(recipient="13800000002"))
    assert [e.recipient for e in only] == ["13800000002"]
    assert b.inbox.entries(InboxKind.SMS, InboxQuery(since_ms=NOW_MS + 1)) == []
    assert b.inbox.entries(InboxKind.MAIL) == []
    assert b.inbox.clear(InboxKind.SMS) == 2
    assert a.inbox.entries(InboxKind.SMS) == []


def test_reset_empties_the_data_and_keeps_what_identifies_the_gateway(
    open_database: OpenDatabase,
) -> None:
    store = compose_store(open_database())
    store.topics.create_topic("orders", 65536, False)
    issued = store.credentials.issue(600)
    emptied = store.reset()
    assert {"topics", "subscriptions", "deliveries", "dead_letters", "inbox"} <= set(emptied)
    kept = {
        "schema_migrations",
        "signing_keys",
        "shared_settings",
        "temporary_credentials",
        "console_sessions",  # a person on the console stays signed in
    }
    assert not kept & set(emptied)
    assert store.credentials.secret(issued.access_key_id) == issued.access_key_secret
    assert store.topics.list_topics("", "", 10).items == []
