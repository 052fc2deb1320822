"""Versioned schema migrations, in SQL both SQLite and PostgreSQL accept.

Each :class:`Migration` has a version; ``schema_migrations`` records the ones applied. A database
is brought up to date at start-up (every process opening it) and by ``mns-gateway migrate``, inside
one write transaction that only one process can hold at a time: SQLite's write lock (taken
together with the gateway's writer lock file) or, on PostgreSQL, a transaction-scoped advisory
lock. Whoever gets it second finds nothing left to do.

Times are integers: resource times in epoch seconds (as MNS reports them), message and delivery
times in epoch milliseconds. Leases (``lease_owner``, ``lease_expires_at``) rather than locks mark
claimed work, so a worker that dies simply lets its lease lapse. Migrations are never edited once
released: a change is a new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.store.sql.connection import Connection


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]
    #: The dialects (:attr:`Dialect.name`) whose databases run the statements; the others only
    #: record the version.
    dialects: frozenset[str] = frozenset({"sqlite", "postgresql"})


#: Version 1 is the schema data dirs were created with before migrations were versioned (their
#: ``PRAGMA user_version`` was 1): every statement is idempotent, so such a data dir adopts it.
INITIAL = Migration(
    1,
    "topics, subscriptions, deliveries, dead letters, queues",
    (
        """
    CREATE TABLE IF NOT EXISTS topics (
        name TEXT PRIMARY KEY,
        create_time BIGINT NOT NULL,
        last_modify_time BIGINT NOT NULL,
        maximum_message_size INTEGER NOT NULL,
        logging_enabled INTEGER NOT NULL
    )
    """,
        """
    CREATE TABLE IF NOT EXISTS subscriptions (
        topic_name TEXT NOT NULL,
        name TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        filter_tag TEXT,
        notify_strategy TEXT NOT NULL,
        notify_content_format TEXT NOT NULL,
        route TEXT NOT NULL,
        create_time BIGINT NOT NULL,
        last_modify_time BIGINT NOT NULL,
        PRIMARY KEY (topic_name, name)
    )
    """,
        """
    CREATE TABLE IF NOT EXISTS topic_messages (
        id TEXT PRIMARY KEY,
        topic_name TEXT NOT NULL,
        body TEXT NOT NULL,
        body_md5 TEXT NOT NULL,
        tag TEXT,
        attributes TEXT NOT NULL,
        publish_time BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
    )
    """,
        "CREATE INDEX IF NOT EXISTS topic_messages_topic"
        " ON topic_messages (topic_name, expires_at)",
        """
    CREATE TABLE IF NOT EXISTS deliveries (
        id TEXT PRIMARY KEY,
        message_id TEXT NOT NULL,
        topic_name TEXT NOT NULL,
        subscription_name TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        created_at BIGINT NOT NULL
    )
    """,
        "CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_attempt_at)",
        # No index on message_id: only the daily purge asks by it, and every publish and every
        # finished push would pay for one more B-tree (docs/benchmarks.md#where-the-time-goes).
        # Data dirs made before lose it here; dropping an index loses no data.
        "DROP INDEX IF EXISTS deliveries_message",
        """
    CREATE INDEX IF NOT EXISTS deliveries_subscription
        ON deliveries (topic_name, subscription_name)
    """,
        """
    CREATE TABLE IF NOT EXISTS delivery_attempts (
        delivery_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        attempted_at BIGINT NOT NULL,
        status_code INTEGER,
        outcome TEXT NOT NULL,
        error TEXT,
        latency_ms DOUBLE PRECISION,
        PRIMARY KEY (delivery_id, attempt)
    )
    """,
        """
    CREATE TABLE IF NOT EXISTS dead_letters (
        id TEXT PRIMARY KEY,
        message_id TEXT NOT NULL,
        topic_name TEXT NOT NULL,
        subscription_name TEXT NOT NULL,
        endpoint TEXT NOT NULL,
        notify_strategy TEXT NOT NULL,
        notify_content_format TEXT NOT NULL,
        body TEXT NOT NULL,
        body_md5 TEXT NOT NULL,
        tag TEXT,
        attributes TEXT NOT NULL,
        publish_time BIGINT NOT NULL,
        attempts TEXT NOT NULL,
        reason TEXT NOT NULL,
        dead_at BIGINT NOT NULL,
        replayed_at BIGINT
    )
    """,
        "CREATE INDEX IF NOT EXISTS dead_letters_time ON dead_letters (dead_at)",
        # queues: message states are derived from visible_at/expires_at, never stored;
        # queue_messages_ready serves receive (one range per priority), queue_messages_expiry the
        # purge of expired messages.
        """
    CREATE TABLE IF NOT EXISTS queues (
        name TEXT PRIMARY KEY,
        create_time BIGINT NOT NULL,
        last_modify_time BIGINT NOT NULL,
        delay_seconds INTEGER NOT NULL,
        maximum_message_size INTEGER NOT NULL,
        message_retention_period INTEGER NOT NULL,
        visibility_timeout INTEGER NOT NULL,
        polling_wait_seconds INTEGER NOT NULL,
        logging_enabled INTEGER NOT NULL
    )
    """,
        """
    CREATE TABLE IF NOT EXISTS queue_messages (
        id TEXT PRIMARY KEY,
        queue_name TEXT NOT NULL,
        body TEXT NOT NULL,
        body_md5 TEXT NOT NULL,
        priority INTEGER NOT NULL,
        enqueue_time BIGINT NOT NULL,
        visible_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        dequeue_count INTEGER NOT NULL,
        first_dequeue_time BIGINT,
        receipt_nonce BIGINT NOT NULL,
        properties TEXT
    )
    """,
        """
    CREATE INDEX IF NOT EXISTS queue_messages_ready
        ON queue_messages (queue_name, priority, visible_at, id)
    """,
        "CREATE INDEX IF NOT EXISTS queue_messages_expiry ON queue_messages (expires_at)",
        """
    CREATE TABLE IF NOT EXISTS queue_secrets (
        name TEXT PRIMARY KEY,
        secret TEXT NOT NULL
    )
    """,
    ),
)

#: What replicas sharing one database must agree on, kept in it: the push-signing keys with their
#: certificates, and small named values (the signing key in use, the generated access key pair).
SHARED_SETTINGS = Migration(
    2,
    "signing keys and shared settings",
    (
        """
        CREATE TABLE IF NOT EXISTS signing_keys (
            key_id TEXT PRIMARY KEY,
            private_key TEXT,
            certificate TEXT NOT NULL,
            created_at BIGINT NOT NULL
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS shared_settings (
            name TEXT PRIMARY KEY,
            value TEXT NOT NULL
        )
        """,
    ),
)

#: SMS and mail kept instead of sent (``MNS_GATEWAY_INBOX``), for development and CI: one row per
#: text message or mail, ``entry`` the JSON of what the provider would have been given.
INBOX = Migration(
    3,
    "inbox",
    (
        """
        CREATE TABLE IF NOT EXISTS inbox (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            recipient TEXT NOT NULL,
            topic_name TEXT NOT NULL,
            subscription_name TEXT NOT NULL,
            message_id TEXT NOT NULL,
            stored_at BIGINT NOT NULL,
            entry TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS inbox_kind_time ON inbox (kind, stored_at, id)",
    ),
)

#: Temporary credentials the gateway issues (``mns-gateway credentials issue``): the pair and
#: when it stops working; the token is an HMAC and needs no row
#: (docs/protocol.md#temporary-credentials).
TEMPORARY_CREDENTIALS = Migration(
    4,
    "temporary credentials",
    (
        """
        CREATE TABLE IF NOT EXISTS temporary_credentials (
            access_key_id TEXT PRIMARY KEY,
            access_key_secret TEXT NOT NULL,
            expires_at BIGINT NOT NULL,
            created_at BIGINT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS temporary_credentials_expiry"
        " ON temporary_credentials (expires_at)",
    ),
)

#: Ordered queues and dead-letter queues. ``queue_groups`` holds one row per
#: MessageGroupId of an ordered queue that has messages: the sequence its sends draw from and
#: when its oldest message (the only one it may have in flight) can next be received; claims
#: find receivable groups through ``queue_groups_ready`` instead of scanning messages
#: (docs/queues.md#ordered-queues). ``group_id``/``group_seq`` are set on ordered queues'
#: messages only, so the partial index costs standard queues nothing.
ORDERED_AND_DEAD_LETTER_QUEUES = Migration(
    5,
    "ordered queues, dead-letter queues",
    (
        "ALTER TABLE queues ADD COLUMN queue_type TEXT NOT NULL DEFAULT 'normal'",
        "ALTER TABLE queues ADD COLUMN dlq_target TEXT",
        "ALTER TABLE queues ADD COLUMN dlq_max_receive_count INTEGER",
        "ALTER TABLE queues ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE queue_messages ADD COLUMN group_id TEXT",
        "ALTER TABLE queue_messages ADD COLUMN group_seq BIGINT",
        """
        CREATE INDEX IF NOT EXISTS queue_messages_group
            ON queue_messages (queue_name, group_id, group_seq) WHERE group_id IS NOT NULL
        """,
        """
        CREATE TABLE IF NOT EXISTS queue_groups (
            queue_name TEXT NOT NULL,
            group_id TEXT NOT NULL,
            next_seq BIGINT NOT NULL,
            head_visible_at BIGINT NOT NULL,
            PRIMARY KEY (queue_name, group_id)
        )
        """,
        "CREATE INDEX IF NOT EXISTS queue_groups_ready"
        " ON queue_groups (queue_name, head_visible_at)",
        "ALTER TABLE subscriptions ADD COLUMN dlq_target TEXT",
        "ALTER TABLE subscriptions ADD COLUMN dlq_enabled INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE dead_letters ADD COLUMN dlq_queue TEXT",
        "ALTER TABLE dead_letters ADD COLUMN dlq_message_id TEXT",
    ),
)

#: The control-plane API (Mns-open 2022-01-19, docs/control-plane.md): tags on queues and topics
#: (``resource_type`` ``queue`` or ``topic``), the TenantRateLimitPolicy of queues and
#: subscriptions (``resource_name`` of a subscription: ``topic/subscription``) with the count
#: used in the current second (``window_*``: docs/control-plane.md#tenantratelimitpolicy), and the
#: signature nonces seen within the replay window, so a replayed call is refused on every replica.
CONTROL_PLANE = Migration(
    6,
    "control plane: tags, rate-limit policies, signature nonces",
    (
        """
        CREATE TABLE IF NOT EXISTS resource_tags (
            resource_type TEXT NOT NULL,
            resource_name TEXT NOT NULL,
            tag_key TEXT NOT NULL,
            tag_value TEXT NOT NULL,
            PRIMARY KEY (resource_type, resource_name, tag_key)
        )
        """,
        "CREATE INDEX IF NOT EXISTS resource_tags_by_key ON resource_tags (tag_key, tag_value)",
        """
        CREATE TABLE IF NOT EXISTS rate_limit_policies (
            resource_type TEXT NOT NULL,
            resource_name TEXT NOT NULL,
            enabled INTEGER NOT NULL,
            max_per_second INTEGER,
            window_second BIGINT NOT NULL DEFAULT 0,
            window_used INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (resource_type, resource_name)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS signature_nonces (
            access_key_id TEXT NOT NULL,
            nonce TEXT NOT NULL,
            seen_at BIGINT NOT NULL,
            PRIMARY KEY (access_key_id, nonce)
        )
        """,
        "CREATE INDEX IF NOT EXISTS signature_nonces_seen ON signature_nonces (seen_at)",
    ),
)

#: The web console's live figures, shared by every replica (docs/console.md#live-figures):
#: pushes per minute by outcome, kept for two hours, and each subscription's push health (last
#: success, failures in a row since), both updated in the transaction that settles the pushes;
#: and dead letters found by MessageId (the Deliveries page).
CONSOLE_FIGURES = Migration(
    7,
    "per-minute push rates, subscription health",
    (
        """
        CREATE TABLE IF NOT EXISTS minute_rates (
            minute BIGINT NOT NULL,
            name TEXT NOT NULL,
            count BIGINT NOT NULL,
            PRIMARY KEY (minute, name)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS subscription_health (
            topic_name TEXT NOT NULL,
            subscription_name TEXT NOT NULL,
            last_success_at BIGINT,
            last_failure_at BIGINT,
            failures_in_row INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            PRIMARY KEY (topic_name, subscription_name)
        )
        """,
        # The Deliveries page finds a message's dead letters by MessageId; dead letters are
        # rare, so the index costs nothing on the paths that matter.
        "CREATE INDEX IF NOT EXISTS dead_letters_message ON dead_letters (message_id)",
    ),
)

#: A replayed dead letter's delivery carries the replay's request id: the delivery worker that
#: makes its first attempt writes the ``Replay`` operation-log record, so the record comes from
#: the gateway that pushes, whatever shell or replica asked for the replay.
REPLAYED_DELIVERIES = Migration(
    8,
    "replayed deliveries",
    ("ALTER TABLE deliveries ADD COLUMN replay_request_id TEXT",),
)

#: Successful pushes, kept a day after they succeeded for the console's Deliveries page (a
#: delivery and its attempts are deleted when it succeeds): one row per delivery, written by the
#: settle that completes it, with the failed attempts before it as JSON (``earlier``, NULL for
#: the common first-try success). The primary key is the table's only index and starts with the
#: MessageId: the page finds a message's rows by it, and since MessageIds start with the publish
#: time (gateway/queues/message_ids.py) the purge walks the same index from its oldest end. A
#: second index on the time of delivery would cost every push one more B-tree
#: (docs/benchmarks.md#delivered-history).
DELIVERED_HISTORY = Migration(
    9,
    "delivered history",
    (
        """
        CREATE TABLE IF NOT EXISTS delivered (
            message_id TEXT NOT NULL,
            delivery_id TEXT NOT NULL,
            topic_name TEXT NOT NULL,
            subscription_name TEXT NOT NULL,
            delivered_at BIGINT NOT NULL,
            attempt INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            status_code INTEGER,
            latency_ms DOUBLE PRECISION,
            earlier TEXT,
            PRIMARY KEY (message_id, delivery_id)
        )
        """,
    ),
)

#: The overview's counts that read every message or push, kept by whichever replica holds the
#: refresh lease (gateway/store/sql/console_counts_sql.py): one row, read by every page view.
CONSOLE_COUNTS = Migration(
    10,
    "console overview counts",
    (
        """
        CREATE TABLE IF NOT EXISTS console_counts (
            name TEXT PRIMARY KEY,
            active BIGINT NOT NULL DEFAULT 0,
            inactive BIGINT NOT NULL DEFAULT 0,
            delayed BIGINT NOT NULL DEFAULT 0,
            dead_letters BIGINT NOT NULL DEFAULT 0,
            deliveries_pending BIGINT NOT NULL DEFAULT 0,
            counted_at BIGINT,
            refresh_owner TEXT,
            refresh_until BIGINT NOT NULL DEFAULT 0
        )
        """,
    ),
)

#: The console's sign-in attempts per client address, shared by every replica
#: (:mod:`gateway.store.sql.sign_in_sql`); old windows are purged as attempts come in.
CONSOLE_SIGN_IN_ATTEMPTS = Migration(
    11,
    "console sign-in attempts",
    (
        """
        CREATE TABLE IF NOT EXISTS console_sign_in_attempts (
            client TEXT PRIMARY KEY,
            window_start BIGINT NOT NULL,
            attempts INTEGER NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS console_sign_in_attempts_window"
        " ON console_sign_in_attempts (window_start)",
    ),
)

#: A signature nonce is remembered until its call's timestamp can no longer be accepted (the
#: timestamp plus the 15-minute window), not for 15 minutes from when it was seen: a call
#: stamped ahead would otherwise be replayable once its nonce was forgotten. The rows there are
#: kept for their old 15 minutes from being seen.
NONCES_UNTIL_EXPIRY = Migration(
    12,
    "signature nonces remembered until their timestamp expires",
    (
        "ALTER TABLE signature_nonces RENAME COLUMN seen_at TO forget_after",
        "UPDATE signature_nonces SET forget_after = forget_after + 900",
        "DROP INDEX IF EXISTS signature_nonces_seen",
        "CREATE INDEX IF NOT EXISTS signature_nonces_forget ON signature_nonces (forget_after)",
    ),
)

#: The console's sessions, kept server-side so that signing out ends them on every replica
#: (:mod:`gateway.store.sql.console_session_sql`); ended ones are purged as sessions are saved.
CONSOLE_SESSIONS = Migration(
    13,
    "console sessions",
    (
        """
        CREATE TABLE IF NOT EXISTS console_sessions (
            id_hash TEXT PRIMARY KEY,
            data TEXT NOT NULL,
            signed_in INTEGER NOT NULL,
            expires_at BIGINT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS console_sessions_expiry"
        " ON console_sessions (signed_in, expires_at)",
    ),
)

#: Each subscription endpoint's circuit breaker, shared by every replica
#: (:mod:`gateway.store.sql.breaker_sql`); a healthy endpoint has no row.
PUSH_BREAKERS = Migration(
    14,
    "push endpoints' circuit breakers",
    (
        """
        CREATE TABLE IF NOT EXISTS push_breakers (
            resource TEXT PRIMARY KEY,
            state TEXT NOT NULL,
            window_start BIGINT NOT NULL,
            attempts INTEGER NOT NULL,
            failures INTEGER NOT NULL,
            open_until BIGINT NOT NULL,
            cool_down BIGINT NOT NULL,
            probes_out INTEGER NOT NULL,
            probe_until BIGINT NOT NULL,
            held BIGINT NOT NULL,
            changed_at BIGINT NOT NULL,
            override TEXT
        )
        """,
    ),
)

#: A subscription's deliveries by due time: holding an open circuit's due deliveries out of the
#: claims' way, and giving them back, reads one range each
#: (:func:`gateway.store.sql.held_sql.hold`); it serves every lookup by topic or
#: subscription the narrower index did, so it replaces it rather than adding a third B-tree for
#: every publish to write.
SUBSCRIPTION_DUE_INDEX = Migration(
    15,
    "deliveries by subscription and due time",
    (
        "DROP INDEX IF EXISTS deliveries_subscription",
        "CREATE INDEX IF NOT EXISTS deliveries_subscription_due"
        " ON deliveries (topic_name, subscription_name, next_attempt_at)",
    ),
)


def _partitioned(table: str, key: str, primary_key: str, indexes: dict[str, str]) -> str:
    """PL/pgSQL turning ``table`` into one range-partitioned by ``key`` (MessageId): the table
    as it is becomes its ``_legacy`` partition, from MINVALUE to the MessageIds of now (its
    indexes, ``indexes`` by name with their columns, are adopted as the new table's, not built
    again; attaching it reads it once to check its ids), and a ``_default`` partition takes
    what no range holds. The gateway makes the ranges from now on
    (:mod:`gateway.store.sql.partitions_sql`)."""
    renames = "".join(
        f" ALTER INDEX {name} RENAME TO {table}_legacy{name.removeprefix(table)};"
        for name in (f"{table}_pkey", *indexes)
    )
    creates = "".join(f" CREATE INDEX {name} ON {table} ({on});" for name, on in indexes.items())
    return f"""
    DO $$
    DECLARE
        now_id TEXT := upper(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::BIGINT),
                                  11, '0'));
    BEGIN
        ALTER TABLE {table} RENAME TO {table}_legacy;{renames}
        CREATE TABLE {table} (LIKE {table}_legacy INCLUDING DEFAULTS,
            PRIMARY KEY ({primary_key})) PARTITION BY RANGE ({key});{creates}
        EXECUTE format('ALTER TABLE {table} ATTACH PARTITION {table}_legacy'
                       ' FOR VALUES FROM (MINVALUE) TO (%L)', now_id);
        CREATE TABLE {table}_default PARTITION OF {table} DEFAULT;
    END $$
    """


#: PostgreSQL: the topic messages and the delivered history partitioned by MessageId (whose
#: prefix is the publish time), so that retention drops whole partitions instead of deleting rows
#: (:mod:`gateway.store.sql.partitions_sql`; docs/deploy.md#retention). SQLite keeps its tables:
#: it deletes in batches and reuses the pages.
PARTITIONED_HISTORY = Migration(
    16,
    "topic messages and delivered history partitioned by MessageId (PostgreSQL)",
    (
        _partitioned(
            "topic_messages", "id", "id", {"topic_messages_topic": "topic_name, expires_at"}
        ),
        _partitioned("delivered", "message_id", "message_id, delivery_id", {}),
    ),
    dialects=frozenset({"postgresql"}),
)

#: Standard Webhooks signatures per subscription (docs/delivery.md#standard-webhooks-signatures):
#: its ``whsec_`` secret (NULL: off) and, for a day after a rotation, the one before it and when
#: that stops signing. On the subscription's own row, so the claim's join already reads them and
#: unsubscribing forgets them; no listing or answer selects them.
STANDARD_WEBHOOKS = Migration(
    20,
    "Standard Webhooks secrets of subscriptions",
    (
        "ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT",
        "ALTER TABLE subscriptions ADD COLUMN webhook_previous_secret TEXT",
        "ALTER TABLE subscriptions ADD COLUMN webhook_previous_until BIGINT",
    ),
)

MIGRATIONS: tuple[Migration, ...] = (
    INITIAL,
    SHARED_SETTINGS,
    INBOX,
    TEMPORARY_CREDENTIALS,
    ORDERED_AND_DEAD_LETTER_QUEUES,
    CONTROL_PLANE,
    CONSOLE_FIGURES,
    REPLAYED_DELIVERIES,
    DELIVERED_HISTORY,
    CONSOLE_COUNTS,
    CONSOLE_SIGN_IN_ATTEMPTS,
    NONCES_UNTIL_EXPIRY,
    CONSOLE_SESSIONS,
    PUSH_BREAKERS,
    SUBSCRIPTION_DUE_INDEX,
    PARTITIONED_HISTORY,
    STANDARD_WEBHOOKS,
)

_LEDGER = """
    CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        description TEXT NOT NULL,
        applied_at BIGINT NOT NULL
    )
"""


def applied_versions(conn: Connection) -> set[int]:
    return {row["version"] for row in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: Connection, now_ms: int) -> list[int]:
    """Apply every migration not yet applied, in order, in the caller's transaction; the
    versions applied now (empty when the schema was up to date)."""
    if conn.dialect.migration_lock is not None:
        conn.execute(conn.dialect.migration_lock)
    conn.execute(_LEDGER)
    done = applied_versions(conn)
    applied = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for statement in migration.statements:
            if conn.dialect.name in migration.dialects:
                conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.description, now_ms),
        )
        applied.append(migration.version)
    return applied


def latest_version() -> int:
    return MIGRATIONS[-1].version
