"""The store acts on a message by a receipt exactly when the pure model's rule says so
(:func:`gateway.queues.receipts.matches`), on each backend: the SQL condition renders that rule
(issue 36 item 2: the handle ChangeMessageVisibility replaced still works)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from gateway.queues import receipts
from gateway.queues.receipts import Receipt, ReceiptMatch
from gateway.store.queues import QueueStore
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql.connection import Connection
from tests.gateway.store.queue_helpers import make_queue

NOW = 1_700_000_000_000
NONCE = 2**62 + 7
HANDLE_TIME = NOW + 30_000
#: Stored messages (nonce, visible_at, expires_at, dequeue_count), each met by a handle
#: (NONCE, HANDLE_TIME) of its own id.
CASES = list(
    itertools.product(
        (NONCE, NONCE + 1),
        (NOW - 1, NOW, NOW + 1, HANDLE_TIME, HANDLE_TIME + 60_000),
        (NOW, NOW + 86_400_000),
        (0, 1),
    )
)
Operation = Callable[[Connection, ReceiptMatch], bool]
OPERATIONS: dict[str, tuple[Callable[[Receipt, int], ReceiptMatch], Operation]] = {
    "delete": (receipts.of_its_receive, lambda c, m: message_sql.delete_by_receipt(c, "q", m)),
    "change": (
        receipts.of_its_receive,
        lambda c, m: message_sql.change_visibility(c, "q", m, NOW + 5000),
    ),
    "release": (receipts.exactly, lambda c, m: message_sql.release(c, "q", m, NOW - 5, 1)),
}


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_store_acts_where_the_rule_says(store: QueueStore, operation: str) -> None:
    make_queue(store)
    rule, act = OPERATIONS[operation]

    def work(conn: Connection) -> list[bool]:
        done = []
        for index, (nonce, visible_at, expires_at, dequeues) in enumerate(CASES):
            row = message_sql.StoredMessage(
                f"m{index}", "q", "x", "", 8, NOW - 1000, visible_at, expires_at, nonce, {}
            )
            message_sql.insert_messages(conn, [row])
            conn.execute(
                "UPDATE queue_messages SET dequeue_count = ? WHERE id = ?", (dequeues, row.id)
            )
            done.append(act(conn, rule(Receipt(row.id, NONCE, HANDLE_TIME), NOW)))
        return done

    done = store.database.write(work)
    expected = [
        receipts.matches(
            rule(Receipt(f"m{index}", NONCE, HANDLE_TIME), NOW),
            message_id=f"m{index}",
            nonce=nonce,
            visible_at=visible_at,
            expires_at=expires_at,
            dequeue_count=dequeues,
        )
        for index, (nonce, visible_at, expires_at, dequeues) in enumerate(CASES)
    ]
    assert done == expected
    assert any(expected) and not all(expected)
