"""SQL of the control plane's own state (migration 6): tags, rate-limit policies, signature
nonces, the numbered pages ListQueue, ListTopic and ListSubscriptionByTopic answer with, and the
positioned pages of ListTagResources.

Plain functions over a :class:`~gateway.store.sql.connection.Connection`, SQL both SQLite and
PostgreSQL accept, run inside the store's read or write jobs (:mod:`gateway.store.control`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from gateway.store.sql.connection import Connection, Row, placeholders
from gateway.topics.records import subscription_resource

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Listing(Generic[T]):
    """One numbered page and how many items match in all."""

    items: list[T]
    total: int


@dataclass(frozen=True, slots=True)
class ListQuery:
    """What a numbered listing asks for: names starting with ``prefix``, carrying every tag of
    ``tags`` (a key with an empty value: any value), page ``offset``/``limit``."""

    prefix: str = ""
    tags: Sequence[tuple[str, str]] = ()
    offset: int = 0
    limit: int = 20


@dataclass(frozen=True, slots=True)
class EndpointShape:
    """Endpoints that start with ``prefix`` and end with ``suffix``; ``exact``: the endpoint is
    ``prefix`` itself."""

    prefix: str
    suffix: str = ""
    exact: bool = False


@dataclass(frozen=True, slots=True)
class EndpointFilter:
    """Subscriptions whose endpoint has one of the shapes of ``kinds`` and one of ``values``
    (``None``: either unfiltered; an empty tuple matches nothing)."""

    kinds: Sequence[EndpointShape] | None = None
    values: Sequence[EndpointShape] | None = None


# tags -----------------------------------------------------------------------------------------
_RESOURCE_TABLES: Final = {"queue": "queues", "topic": "topics"}


def lock_resource(conn: Connection, resource_type: str, name: str) -> bool:
    """Whether the queue or topic exists, holding its row until the transaction ends (so tag
    changes of one resource take turns and a tag never outlives a concurrent delete)."""
    table = _RESOURCE_TABLES[resource_type]
    row = conn.execute(
        f"SELECT name FROM {table} WHERE name = ?{conn.dialect.lock_row}", (name,)
    ).fetchone()
    return row is not None


def tags_of(conn: Connection, resource_type: str, name: str) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT tag_key, tag_value FROM resource_tags"
        " WHERE resource_type = ? AND resource_name = ? ORDER BY tag_key",
        (resource_type, name),
    ).fetchall()
    return [(row["tag_key"], row["tag_value"]) for row in rows]


def set_tags(
    conn: Connection, resource_type: str, name: str, tags: Sequence[tuple[str, str]]
) -> None:
    """Add ``tags``, replacing the value of a key the resource already has."""
    for key, value in tags:
        conn.execute(
            "DELETE FROM resource_tags"
            " WHERE resource_type = ? AND resource_name = ? AND tag_key = ?",
            (resource_type, name, key),
        )
        conn.execute(
            "INSERT INTO resource_tags (resource_type, resource_name, tag_key, tag_value)"
            " VALUES (?, ?, ?, ?)",
            (resource_type, name, key, value),
        )


def remove_tags(
    conn: Connection, resource_type: str, name: str, keys: Sequence[str] | None
) -> None:
    """Remove the tags named by ``keys``; ``None``: all of them."""
    if keys is None:
        conn.execute(
            "DELETE FROM resource_tags WHERE resource_type = ? AND resource_name = ?",
            (resource_type, name),
        )
        return
    for key in keys:
        conn.execute(
            "DELETE FROM resource_tags"
            " WHERE resource_type = ? AND resource_name = ? AND tag_key = ?",
            (resource_type, name, key),
        )


def tagged(
    conn: Connection,
    resource_type: str,
    names: Sequence[str],
    tags: Sequence[tuple[str, str]],
    *,
    after: tuple[str, str] | None = None,
    limit: int | None = None,
) -> list[tuple[str, str, str]]:
    """(name, key, value) of every tag of the named resources (all resources of the type when
    ``names`` is empty) that carry all of ``tags``, ordered by name and key; with ``after``
    (name, key), only those after it, at most ``limit`` of them.

    A position rather than an offset: tags added or removed before it between two pages shift
    nothing, so a listing walked page by page returns every tag that stayed, once."""
    sql = "SELECT resource_name, tag_key, tag_value FROM resource_tags r WHERE resource_type = ?"
    params: list[object] = [resource_type]
    if names:
        sql += f" AND resource_name IN ({', '.join('?' for _ in names)})"
        params += names
    if after is not None:
        sql += " AND (resource_name > ? OR (resource_name = ? AND tag_key > ?))"
        params += [after[0], after[0], after[1]]
    condition, extra = _tag_condition("r.resource_name", resource_type, tags)
    sql += f"{condition} ORDER BY resource_name, tag_key"
    params += extra
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    rows = conn.execute(sql, params)
    return [(row["resource_name"], row["tag_key"], row["tag_value"]) for row in rows]


def _tag_condition(
    name_column: str, resource_type: str, tags: Sequence[tuple[str, str]]
) -> tuple[str, list[object]]:
    sql, params = "", []
    for key, value in tags:
        sql += (
            " AND EXISTS (SELECT 1 FROM resource_tags t WHERE t.resource_type = ?"
            f" AND t.resource_name = {name_column} AND t.tag_key = ?"
        )
        params += [resource_type, key]
        if value:
            sql += " AND t.tag_value = ?"
            params.append(value)
        sql += ")"
    return sql, params


# numbered pages -------------------------------------------------------------------------------
def numbered_page(
    conn: Connection,
    table: str,
    query: ListQuery,
    of_row: Callable[[Row], T],
    *,
    resource_type: str = "",
    scope: tuple[str, str] | None = None,
    endpoints: EndpointFilter | None = None,
) -> Listing[T]:
    """Rows of ``table`` (``queues``, ``topics`` or ``subscriptions``, named by ``name``) as
    one numbered page; ``scope`` (column, value) narrows them (a topic's subscriptions), as
    ``endpoints`` does subscriptions (the total counts what they leave)."""
    where = f" WHERE substr({table}.name, 1, ?) = ?"
    params: list[object] = [len(query.prefix), query.prefix]
    if scope is not None:
        where += f" AND {table}.{scope[0]} = ?"
        params.append(scope[1])
    for condition, extra in (
        _tag_condition(f"{table}.name", resource_type, query.tags),
        _endpoint_condition(f"{table}.endpoint", endpoints),
    ):
        where += condition
        params += extra
    total = conn.execute(f"SELECT COUNT(*) AS n FROM {table}{where}", params).fetchone()["n"]
    rows = conn.execute(
        f"SELECT * FROM {table}{where} ORDER BY {table}.name LIMIT ? OFFSET ?",
        [*params, query.limit, query.offset],
    ).fetchall()
    return Listing([of_row(row) for row in rows], int(total))


def _endpoint_condition(column: str, endpoints: EndpointFilter | None) -> tuple[str, list[object]]:
    sql, params = "", []
    if endpoints is not None:
        for shapes in (endpoints.kinds, endpoints.values):
            if shapes is not None:
                condition, extra = _any_shape(column, shapes)
                sql += f" AND {condition}"
                params += extra
    return sql, params


def _any_shape(column: str, shapes: Sequence[EndpointShape]) -> tuple[str, list[object]]:
    """One condition true for an endpoint of any of ``shapes`` (none: false). Prefixes and
    suffixes are compared with substr, not LIKE, so ``%`` and ``_`` in them are plain."""
    alternatives, params = [], []
    for shape in shapes:
        if shape.exact:
            alternatives.append(f"{column} = ?")
            params.append(shape.prefix)
            continue
        condition = f"substr({column}, 1, ?) = ?"
        params += [len(shape.prefix), shape.prefix]
        if shape.suffix:
            condition += (
                f" AND length({column}) >= ? AND substr({column}, length({column}) - ?) = ?"
            )
            params += [len(shape.prefix) + len(shape.suffix), len(shape.suffix) - 1, shape.suffix]
        alternatives.append(f"({condition})")
    return f"({' OR '.join(alternatives) or '1 = 0'})", params


# rate-limit policies --------------------------------------------------------------------------
#: The condition on a ``rate_limit_policies`` row under which its limit counts: enabled, with a
#: rate (a policy may be stored off, or without one).
ENFORCED = "enabled = 1 AND max_per_second IS NOT NULL"


def rate_limit_of(
    conn: Connection, resource_type: str, name: str
) -> tuple[bool, int | None] | None:
    row = conn.execute(
        "SELECT enabled, max_per_second FROM rate_limit_policies"
        " WHERE resource_type = ? AND resource_name = ?",
        (resource_type, name),
    ).fetchone()
    return None if row is None else (bool(row["enabled"]), row["max_per_second"])


def rate_limits_of(
    conn: Connection, resource_type: str, names: Sequence[str]
) -> dict[str, tuple[bool, int | None]]:
    """The policies of those of ``names`` that have one, in one statement (a page of them)."""
    if not names:
        return {}
    rows = conn.execute(
        "SELECT resource_name, enabled, max_per_second FROM rate_limit_policies"
        f" WHERE resource_type = ? AND resource_name IN ({placeholders(len(names))})",
        (resource_type, *names),
    )
    return {row["resource_name"]: (bool(row["enabled"]), row["max_per_second"]) for row in rows}


def set_rate_limit(
    conn: Connection, resource_type: str, name: str, enabled: bool, max_per_second: int | None
) -> None:
    conn.execute(
        "DELETE FROM rate_limit_policies WHERE resource_type = ? AND resource_name = ?",
        (resource_type, name),
    )
    conn.execute(
        "INSERT INTO rate_limit_policies (resource_type, resource_name, enabled, max_per_second)"
        " VALUES (?, ?, ?, ?)",
        (resource_type, name, int(enabled), max_per_second),
    )


def grant(
    max_per_second: int, window_second: int, used: int, wanted: int, second: int
) -> tuple[int, int]:
    """(how many of ``wanted`` a limit of ``max_per_second`` leaves, the second they count in),
    having used ``used`` in ``window_second``. A count from an earlier second no longer counts;
    one from a later second (a caller whose clock read came before another's) is the current
    one, so a late caller never restarts a window that has moved on."""
    if window_second < second:
        window_second, used = second, 0
    return max(0, min(wanted, max_per_second - used)), window_second


def take_allowance(
    conn: Connection, resource_type: str, name: str, wanted: int, second: int
) -> tuple[int, int] | None:
    """Take up to ``wanted`` of what the resource's enabled limit leaves at ``second``: (how
    many were granted, the second they count in), ``None`` when it has no enabled limit. The
    row is locked while it is read and changed (PostgreSQL; SQLite has one writer at a time),
    so replicas taking at once never grant more than the limit between them."""
    row = conn.execute(
        "SELECT max_per_second, window_second, window_used FROM rate_limit_policies"
        f" WHERE resource_type = ? AND resource_name = ? AND {ENFORCED}{conn.dialect.lock_row}",
        (resource_type, name),
    ).fetchone()
    if row is None:
        return None
    stored = row["window_second"]
    granted, window = grant(row["max_per_second"], stored, row["window_used"], wanted, second)
    used = granted + (row["window_used"] if window == stored else 0)
    conn.execute(
        "UPDATE rate_limit_policies SET window_second = ?, window_used = ?"
        " WHERE resource_type = ? AND resource_name = ?",
        (window, used, resource_type, name),
    )
    return granted, window


def give_back(conn: Connection, resource_type: str, name: str, unused: int, second: int) -> None:
    """Return ``unused`` of a grant taken in ``second``, if that second is still current."""
    conn.execute(
        "UPDATE rate_limit_policies SET window_used = window_used - ?"
        " WHERE resource_type = ? AND resource_name = ? AND window_second = ?"
        " AND window_used >= ?",
        (unused, resource_type, name, second, unused),
    )


def limited(conn: Connection, resource_type: str) -> list[str]:
    """The resources of the type with an enabled limit."""
    rows = conn.execute(
        f"SELECT resource_name FROM rate_limit_policies WHERE resource_type = ? AND {ENFORCED}",
        (resource_type,),
    )
    return [row["resource_name"] for row in rows]


def forget_resource(conn: Connection, resource_type: str, name: str) -> None:
    """Drop the tags and policy of a deleted resource, in the transaction that deletes it."""
    remove_tags(conn, resource_type, name, None)
    conn.execute(
        "DELETE FROM rate_limit_policies WHERE resource_type = ? AND resource_name = ?",
        (resource_type, name),
    )


# nonces ---------------------------------------------------------------------------------------
def remember_nonce(conn: Connection, key_id: str, nonce: str, now: int, until: int) -> bool:
    """Record ``nonce`` until ``until``; ``False`` when it is recorded already. The nonces whose
    time has passed are forgotten first, so the table holds only those still needed."""
    conn.execute("DELETE FROM signature_nonces WHERE forget_after < ?", (now,))
    inserted = conn.execute(
        "INSERT INTO signature_nonces (access_key_id, nonce, forget_after) VALUES (?, ?, ?)"
        " ON CONFLICT DO NOTHING",
        (key_id, nonce, until),
    )
    return inserted.rowcount == 1


def resource_column(topic_column: str, name_column: str) -> str:
    """:func:`~gateway.topics.records.subscription_resource` in SQL, over two columns: to compare
    stored names with resource names (breakers, rate limits) in a statement."""
    return f"({topic_column} || '/' || {name_column})"


def forget_topic(conn: Connection, name: str) -> None:
    """Drop a deleted topic's tags and the policies of all its subscriptions."""
    forget_resource(conn, "topic", name)
    prefix = subscription_resource(name, "")
    conn.execute(
        "DELETE FROM rate_limit_policies WHERE resource_type = 'subscription'"
        " AND substr(resource_name, 1, ?) = ?",
        (len(prefix), prefix),
    )
