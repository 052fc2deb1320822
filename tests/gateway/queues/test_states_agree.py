"""The store's SQL and the pure rules of :mod:`gateway.queues.states` agree, on any messages.

GetQueueAttributes counts states in SQL and receive picks Active messages with an ordered index
range; both must say what ``message_state`` and ``receive_order_key`` say about the same rows.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gateway.queues.states import MessageState, message_state, receive_order_key
from gateway.store.backends.memory import MemoryDatabase
from gateway.store.sql import queue_message_sql as message_sql
from gateway.store.sql import queue_sql
from gateway.store.sql.connection import Connection

NOW = 1_000_000
#: Times around "now" so that every state, and ties, come up often.
times = st.integers(NOW - 3, NOW + 3)
messages = st.lists(
    st.tuples(
        st.integers(1, 16),  # priority
        times,  # visible_at
        times,  # expires_at
        st.integers(0, 2),  # dequeue_count
    ),
    max_size=24,
)


def store_rows(conn: Connection, rows: list[tuple[int, int, int, int]]) -> list[dict]:
    """Insert ``rows`` into queue ``q`` (ids in insertion order, as MessageIds are)."""
    conn.execute("DELETE FROM queue_messages")
    stored = []
    for n, (priority, visible_at, expires_at, dequeue_count) in enumerate(rows):
        message = message_sql.StoredMessage(
            f"{n:04d}", "q", "b", "M", priority, NOW, visible_at, expires_at, 1, {}
        )
        message_sql.insert_messages(conn, [message])
        conn.execute(
            "UPDATE queue_messages SET dequeue_count = ? WHERE id = ?", (dequeue_count, message.id)
        )
        stored.append(
            {
                "id": message.id,
                "priority": priority,
                "visible_at": visible_at,
                "expires_at": expires_at,
                "dequeue_count": dequeue_count,
            }
        )
    return stored


def state(row: dict) -> MessageState:
    return message_state(
        visible_at=row["visible_at"],
        expires_at=row["expires_at"],
        dequeue_count=row["dequeue_count"],
        now_ms=NOW,
    )


database = MemoryDatabase()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages)
def test_counts_in_sql_are_the_states_of_the_rules(rows: list[tuple[int, int, int, int]]) -> None:
    def work(conn: Connection) -> tuple[list[dict], queue_sql.MessageCounts]:
        return store_rows(conn, rows), queue_sql.message_counts(conn, "q", NOW)

    stored, counts = database.write(work)
    states = [state(row) for row in stored]
    assert (counts.active, counts.inactive, counts.delayed) == (
        states.count(MessageState.ACTIVE),
        states.count(MessageState.INACTIVE),
        states.count(MessageState.DELAYED),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, st.integers(1, 16))
def test_receive_takes_active_messages_in_the_rules_order(
    rows: list[tuple[int, int, int, int]], count: int
) -> None:
    def work(conn: Connection) -> tuple[list[dict], list[str]]:
        stored = store_rows(conn, rows)
        claimed, _ = message_sql.claim(
            conn, "q", count, now_ms=NOW, invisible_until=NOW + 10, new_nonce=lambda: 7
        )
        return stored, [c.message_id for c in claimed]

    # A receive deletes the expired messages it meets, a bounded number of rounds per request
    # (the periodic purge takes care of any rest): keep within what one request clears.
    ready_expired = [p for p, v, e, _ in rows if v <= NOW and e <= NOW]
    assume(len(ready_expired) <= 7)
    stored, received = database.write(work)
    active = [row for row in stored if state(row) is MessageState.ACTIVE]
    expected = sorted(
        active, key=lambda r: receive_order_key(r["priority"], r["visible_at"], r["id"])
    )
    assert received == [row["id"] for row in expected[:count]]
